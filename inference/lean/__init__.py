"""Our own Llama-family model: its configuration, rotary tables, module tree and tokenizer load.

The lean forward (:mod:`inference.decoder.packed_llama`) needs a model
object only as a place that holds the weights' kernels, the norms and the
rotary table. Building transformers' ``LlamaForCausalLM`` for that imports
its modelling stack (configuration, masking, generation, accelerate, sympy,
``torch.distributed``: about 125 MB resident before one weight is read);
this package builds the same tree from ``config.json`` without it. The
library model stays available as a view over the same modules for the
callers that need its forward or ``generate`` (:mod:`inference.lean.library`).
"""

from __future__ import annotations

__all__: list[str] = []
