"""Model loading: the bundled GGUF, its safetensors cache, directories, identity, devices."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import torch

from inference.device import resolve_device
from inference.loader import (
    BUNDLED_MODEL_NAME,
    LoadedModel,
    bundled_gguf_path,
    file_sha256,
    load_model,
    prepare_cache,
    resolve_model_source,
)
from reasoning.errors import InvalidInput, NotFound

MODEL_CACHE = Path(
    os.environ.get("TENET_TEST_MODEL_CACHE", Path(__file__).resolve().parents[2] / "var" / "models")
)


def test_bundled_gguf_is_located_without_importing_the_package() -> None:
    path = bundled_gguf_path()
    assert path.suffix == ".gguf" and path.stat().st_size > 50_000_000
    source = resolve_model_source("bundled")
    assert source.name == BUNDLED_MODEL_NAME and source.gguf_file == path.name


@pytest.mark.parametrize(
    ("make", "error"),
    [
        (lambda tmp: tmp / "missing.gguf", NotFound),
        (lambda tmp: tmp, InvalidInput),  # a directory without config.json
        (lambda tmp: (tmp / "notes.txt").write_text("x") and tmp / "notes.txt", InvalidInput),
    ],
)
def test_unusable_model_references_are_refused(
    tmp_path: Path, make: object, error: type[Exception]
) -> None:
    reference = make(tmp_path)  # type: ignore[operator]
    with pytest.raises(error):
        resolve_model_source(str(reference))


def test_cpu_is_the_cpu() -> None:
    assert resolve_device("cpu") == torch.device("cpu")


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the no-GPU refusal")
def test_cuda_without_a_gpu_is_refused_not_ignored() -> None:
    with pytest.raises(InvalidInput, match="no CUDA"):
        resolve_device("cuda")
    assert resolve_device("auto").type == "cpu"


def test_unknown_device_is_refused() -> None:
    with pytest.raises(InvalidInput):
        resolve_device("tpu")


def _logits(loaded: LoadedModel, text: str) -> torch.Tensor:
    inputs = loaded.tokenizer(text, return_tensors="pt").to(loaded.device)
    with torch.inference_mode():
        return loaded.model(**inputs).logits[0, -1]  # logits: [V]


@pytest.mark.model
def test_cache_is_reused_not_rebuilt(loaded_model: LoadedModel) -> None:
    cached = prepare_cache("bundled", MODEL_CACHE)
    assert cached is not None and (cached / "tenet-cache.json").is_file()
    files = [cached / "tenet-cache.json", cached / "model.safetensors"]
    written = [path.stat().st_mtime_ns for path in files]
    assert prepare_cache("bundled", MODEL_CACHE) == cached
    again = load_model("bundled", device="cpu", cache_root=MODEL_CACHE)
    assert [path.stat().st_mtime_ns for path in files] == written
    gguf = bundled_gguf_path()
    assert again.identity.sha256 == file_sha256(gguf) == loaded_model.identity.sha256
    assert again.identity.source == str(gguf)
    assert (again.identity.dtype, again.identity.device) == ("float32", "cpu")
    assert again.identity.parameters > 100_000_000


@pytest.mark.model
def test_gguf_and_cache_give_the_same_model(loaded_model: LoadedModel) -> None:
    direct = load_model("bundled", device="cpu", use_cache=False)
    assert direct.identity.sha256 == loaded_model.identity.sha256
    prompt = "The capital of France is"
    assert torch.allclose(_logits(direct, prompt), _logits(loaded_model, prompt), atol=1e-4)
    assert direct.tokenizer.encode(prompt) == loaded_model.tokenizer.encode(prompt)


@pytest.mark.model
def test_a_model_directory_loads_with_its_own_identity(loaded_model: LoadedModel) -> None:
    cached = prepare_cache("bundled", MODEL_CACHE)
    assert cached is not None
    from_dir = load_model(str(cached), device="cpu")
    assert from_dir.identity.name == cached.name
    assert from_dir.identity.sha256 == file_sha256(cached / "model.safetensors")
    assert prepare_cache(str(cached), MODEL_CACHE) is None  # nothing to convert
    assert torch.allclose(_logits(from_dir, "Hello"), _logits(loaded_model, "Hello"), atol=1e-5)


@pytest.mark.model
def test_the_cache_config_carries_no_gguf_quantization(
    tmp_path: Path, loaded_model: LoadedModel
) -> None:
    """The cache holds plain float32 weights: a GGUF ``quantization_config`` left in its
    config (caches written before it was dropped) is removed on the next prepare."""
    import json

    cached = prepare_cache("bundled", MODEL_CACHE)
    assert cached is not None
    assert "quantization_config" not in json.loads((cached / "config.json").read_text())
    old = tmp_path / cached.name
    old.mkdir()
    for item in cached.iterdir():
        if item.name != "config.json":
            (old / item.name).symlink_to(item)
    config = json.loads((cached / "config.json").read_text())
    config["quantization_config"] = {"quant_method": "gguf", "dequantize": False}
    (old / "config.json").write_text(json.dumps(config))
    assert prepare_cache("bundled", tmp_path) == old
    assert json.loads((old / "config.json").read_text()) == {
        k: v for k, v in config.items() if k != "quantization_config"
    }
    reloaded = load_model("bundled", device="cpu", cache_root=tmp_path)
    # The session's model is this very load (the shared cache, on the CPU) unless the suite
    # runs on another device.
    reference = (loaded_model if loaded_model.identity.device == "cpu"
                 else load_model("bundled", device="cpu", cache_root=MODEL_CACHE))
    prompt = "The capital of France is"
    assert torch.equal(_logits(reloaded, prompt), _logits(reference, prompt))
