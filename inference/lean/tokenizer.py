"""Load a model directory's tokenizer without loading its model configuration.

``AutoTokenizer.from_pretrained`` reads ``config.json`` through
``AutoConfig`` to pick the tokenizer class, which imports the model's
configuration module and with it much of transformers' modelling stack
(about 55 MB resident for a Llama). The class is named in
``tokenizer_config.json`` (``tokenizer_class``); resolving that name
directly gives the same tokenizer without the detour.

Guarantees: the tokenizer returned is the one ``AutoTokenizer`` returns for
the directory whenever the directory names a class the library knows;
otherwise (no ``tokenizer_config.json``, no class named, a class it cannot
resolve, a tokenizer defined by remote code) it *is* ``AutoTokenizer``'s.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

__all__ = ["load_tokenizer"]


def load_tokenizer(directory: Path) -> Any:
    """The tokenizer of the model in ``directory`` (see the module docstring)."""
    from transformers.models.auto.tokenization_auto import tokenizer_class_from_name

    named = _named_class(directory)
    cls = None if named is None else tokenizer_class_from_name(named)
    if cls is None:
        from transformers import AutoTokenizer

        return AutoTokenizer.from_pretrained(directory)
    return cls.from_pretrained(directory)


def _named_class(directory: Path) -> str | None:
    try:
        config = json.loads((directory / "tokenizer_config.json").read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(config, dict) or "auto_map" in config:
        return None
    name = config.get("tokenizer_class")
    return name if isinstance(name, str) and name else None
