"""A model folder read without loading it: sizes from the safetensors headers (bounded, never unpickled), the first
reason it cannot be loaded (missing, corrupt, pickle-only, an architecture transformers does not know), and whether
a pair fits in memory together, before a byte of weights is loaded."""
from __future__ import annotations

import json
import pathlib
from dataclasses import dataclass

import torch

from specviz.errors import SpecVizError
from specviz.loading.device import available_memory, pick_dtype
from specviz.loading.embedded import EMBEDDED_NAME

# ---------------------------------------------------------------- what a model folder holds, read before loading
# The bytes of one element of each safetensors dtype (the format's own names)
_ST_BYTES = {"F64": 8, "I64": 8, "U64": 8, "F32": 4, "I32": 4, "U32": 4, "F16": 2, "BF16": 2, "I16": 2, "U16": 2,
             "I8": 1, "U8": 1, "BOOL": 1, "F8_E4M3": 1, "F8_E5M2": 1, "F8_E8M0": 1}
_MAX_HEADER = 100 * 2**20  # a safetensors header is JSON of a few hundred kB at most; the format caps it at 100 MB


def short_name(name: str, n: int = 80) -> str:
    """A name for a one-line message: the first n characters of a long one."""
    return repr(name) if len(name) <= n else repr(name[:n]) + f"… ({len(name):,} characters)"


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
                               f"{short_name(str(name), 60)} is described wrongly.") from None
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
        return f"{where} has an architecture transformers does not know (model_type {short_name(str(kind), 40)})."
    if kind not in MODEL_FOR_CAUSAL_LM_MAPPING_NAMES:
        return f"{where} is a {kind} model, not a causal language model transformers can generate with."
    return None


def inspect_folder(path: pathlib.Path, name: str = "") -> ModelFiles:
    """What `path` holds: sizes from the safetensors headers, and the first reason it cannot be loaded, if any."""
    where = short_name(path.name or str(path), 60)
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
            problem = f"{where} is missing {short_name(missing[0], 60)} (one of its {len(shards)} weight files)."
    for f in files:
        try:
            params += safetensors_params(f)
        except SpecVizError as e:
            params, problem = None, problem or str(e)
            break
    if problem is None:
        problem = _architecture_problem(cfg, where)
    return ModelFiles(name, path, _weight_bytes(path), params, kind, problem)


def gib(n: float) -> str:
    return f"{n / 2**30:.1f} GiB" if n >= 2**28 else f"{n / 2**20:.0f} MiB" if n >= 2**20 else f"{n / 2**10:.0f} KiB"


def check_fits(models: list[ModelFiles], device: torch.device) -> None:
    """Refuse models that will not fit in memory together, before loading a byte of them."""
    dtype = pick_dtype(device)
    needed = sum(m.needed(dtype) for m in models)
    available = available_memory(device)
    if needed > 0.8 * available:
        what = " + ".join(f"{short_name(m.name or EMBEDDED_NAME, 40)} {gib(m.needed(dtype))}" for m in models)
        where = "GPU memory" if device.type == "cuda" else "memory"
        raise SpecVizError(
            f"{what if len(models) > 1 else short_name(models[0].path.name or models[0].name, 60)} needs about "
            f"{gib(needed)} of {where} in {str(dtype).removeprefix('torch.')}; {gib(available)} is free and the "
            "weights may take at most 80 % of it: pick a smaller model"
            + (", or set SPECVIZ_DTYPE=bf16 (half the bytes; greedy outputs no longer exact)."
               if device.type == "cuda" and dtype == torch.float32 else "."))
