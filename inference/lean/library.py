"""The library's model over our tree's modules: its forward and ``generate`` without a second copy.

Some callers need transformers' own forward on a model that decodes through
the lean forward: the benchmarks' library-forward comparisons
(``packed_forward=False``), their ``generate`` baselines, and a load with
``TENET_PACKED_FORWARD=false``. :func:`library_view` builds the library's
``AutoModelForCausalLM`` on the meta device from the model directory's
``config.json`` and installs our modules in it (the same kernel objects,
norm parameters and embedding), with the library's own rotary embedding.

Guarantees: forward hooks registered on ``model`` hear every forward of the
view (``generate``'s steps), once each; no weight is copied (every parameter and buffer of the view is
one of ``model``'s, the rotary table excepted); one view per model object,
built on first use and kept with it; the view runs the grouped attention
when it runs SDPA, so a merged micro-batch step routes each decode's rows
to its own slab as with any library model; the import of transformers'
modelling code happens here, never on the lean path.
"""

from __future__ import annotations

import threading
from typing import Any

import torch
from torch import nn

from inference.decoder.grouped_attention import use_grouped_attention
from reasoning.errors import InvalidInput

__all__ = ["library_view"]

_LOCK = threading.Lock()
_ATTENTION = ("q_proj", "k_proj", "v_proj", "o_proj")
_MLP = ("gate_proj", "up_proj", "down_proj")


def library_view(model: nn.Module) -> Any:
    """The library's causal LM over ``model``'s modules (see the module docstring).

    ``model`` is our tree (:class:`inference.lean.model.LeanCausalLM`, which calls
    this for its cached forward and ``generate``): the view reads its ``directory``,
    ``model`` (embedding, layers, final norm) and ``lm_head``.
    """
    with _LOCK:
        view = model.__dict__.get("_library_view")
        if view is None:
            view = _build(model)
            # Kept outside the module tree: its modules are ours, counted once.
            model.__dict__["_library_view"] = view
        return view


def _build(tree: nn.Module) -> Any:
    from transformers import AutoConfig, AutoModelForCausalLM, GenerationConfig

    model: Any = tree
    weight = next(model.parameters())
    config = AutoConfig.from_pretrained(model.directory)
    config.dtype = weight.dtype
    with torch.device("meta"):
        view: Any = AutoModelForCausalLM.from_config(  # type: ignore[no-untyped-call]
            config, dtype=weight.dtype
        )
    ours: Any = model.model
    theirs = view.model
    theirs.embed_tokens = ours.embed_tokens
    for mine, layer in zip(ours.layers, theirs.layers):
        for name in _ATTENTION:
            setattr(layer.self_attn, name, getattr(mine.self_attn, name))
        for name in _MLP:
            setattr(layer.mlp, name, getattr(mine.mlp, name))
        # Every norm by its name (Gemma's q / k and sandwich norms too): the same parameters.
        for name, param in mine.named_parameters():
            if name.endswith("norm.weight"):
                owner, _, child = name.rpartition(".")
                setattr(layer.get_submodule(owner), child, param)
    theirs.norm.weight = ours.norm.weight
    view.lm_head = model.lm_head
    rotary = type(theirs.rotary_emb)(config.get_text_config(decoder=True))
    theirs.rotary_emb = rotary.to(weight.device)
    if (model.directory / "generation_config.json").is_file():
        view.generation_config = GenerationConfig.from_pretrained(model.directory)
    view.eval()
    left = [n for n, t in [*view.named_parameters(), *view.named_buffers()] if t.is_meta]
    if left:
        raise InvalidInput(f"the library model over {model.directory} lacks {', '.join(left[:5])}")
    use_grouped_attention(view)

    def relay(_: Any, args: Any, kwargs: Any, output: Any) -> None:
        # Forward hooks registered on the tree hear the view's forwards (generate's steps).
        for key, hook in list(model._forward_hooks.items()):
            if model._forward_hooks_with_kwargs.get(key, False):
                hook(model, args, kwargs, output)
            else:
                hook(model, args, output)

    view.register_forward_hook(relay, with_kwargs=True)
    return view
