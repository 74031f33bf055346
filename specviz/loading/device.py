"""Where the models run: the device (CUDA, else MPS, else CPU), its dtype, and the memory free for weights there."""
from __future__ import annotations

import os

import torch

from specviz.errors import SpecVizError


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
    # fp32 everywhere by default: it keeps our decoding bit-comparable with transformers' generate() and every
    # greedy speculative run token-identical to plain greedy. On an H100 (2026-11-26, docs/performance.md) bf16 broke
    # that (both EAGLE-2 trees differed from plain greedy within 3 prompts x 32 tokens: a pass over n positions rounds
    # differently from a one-token step) and bought nothing for a small model, whose decode there is bound by kernel
    # launches, not bytes. SPECVIZ_DTYPE=bf16 halves a big model's weights on a CUDA GPU, outputs no longer exact.
    # MPS stays fp32: its bf16 support depends on the macOS version, and nobody here has run it.
    asked = os.environ.get("SPECVIZ_DTYPE", "").strip().lower()
    if asked not in ("", "fp32", "float32", "bf16", "bfloat16"):
        raise SpecVizError(f"SPECVIZ_DTYPE must be fp32 or bf16; got {asked[:20]!r}.")
    return torch.bfloat16 if device.type == "cuda" and asked in ("bf16", "bfloat16") else torch.float32


def available_memory(device: torch.device) -> int:
    """Bytes free for weights on `device`: the GPU's free memory on CUDA, else the machine's available RAM."""
    if device.type == "cuda":
        return torch.cuda.mem_get_info(device)[0]
    import psutil

    return psutil.virtual_memory().available
