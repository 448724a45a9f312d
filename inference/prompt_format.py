"""How a prompt is laid out for a model: its own chat template, or a plain layout for base models.

An instruction-tuned model ships a chat template and is prompted through it. A base model
(no ``chat_template`` in its tokenizer) gets :data:`PLAIN_TEMPLATE`, installed as its
tokenizer's template when the model loads (:func:`choose_prompt_format`), so the prompt
planner (``inference.prompting``) renders every model the same way and its shared-prefix
split holds unchanged. The plain layout, in order:

- the tokenizer's beginning-of-sequence token, when it has one (base models are trained with
  it at the start of every document);
- the system message, then a blank line;
- ``Request:`` on its own line, the user message, then a blank line (each later turn alike,
  an assistant turn as ``Answer:``);
- ``Answer:`` on its own line: the generation prompt, where the model continues.

Guarantees: a tokenizer that has a chat template is never changed (format
``chat_template``); one without gets exactly :data:`PLAIN_TEMPLATE` (format ``plain``); the
format is reported in ``/v1/models`` as ``prompt_format``.
"""

from __future__ import annotations

from typing import Any, Literal

__all__ = ["PLAIN_TEMPLATE", "PromptFormat", "choose_prompt_format"]

PromptFormat = Literal["chat_template", "plain"]

#: The plain layout as a Jinja chat template (see the module docstring).
PLAIN_TEMPLATE = (
    "{% if bos_token %}{{ bos_token }}{% endif %}"
    "{% for message in messages %}"
    "{% if message['role'] == 'system' %}{{ message['content'] }}\n\n"
    "{% elif message['role'] == 'assistant' %}Answer:\n{{ message['content'] }}\n\n"
    "{% else %}Request:\n{{ message['content'] }}\n\n"
    "{% endif %}"
    "{% endfor %}"
    "{% if add_generation_prompt %}Answer:\n{% endif %}"
)


def choose_prompt_format(tokenizer: Any) -> PromptFormat:
    """The model's prompt format, chosen once at load; a base model's tokenizer is given
    :data:`PLAIN_TEMPLATE` (see the module docstring)."""
    if getattr(tokenizer, "chat_template", None):
        return "chat_template"
    tokenizer.chat_template = PLAIN_TEMPLATE
    return "plain"
