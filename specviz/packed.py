"""Linear layers with their weights packed once for oneDNN: the CPU fast path for every model.

Why: on CPU a plain nn.Linear calls MKL sgemm, which re-packs the weight on every call and handles a
handful of rows poorly. Measured on the 2-core CI machine (SmolLM2-135M, fp32, one forward with a KV
cache): 60 ms for 1 new token, 118 ms for 3, 79 ms for 5. With the weights reordered once for oneDNN
(what torch.compile's "freezing" does on CPU) the same forwards take 26, 34 and 27 ms: one token is
2.3x cheaper, and verifying 5 tokens costs about as much as generating 1. That second property is the
whole premise of speculative decoding (on a GPU it holds anyway); without it the verify pass eats the
gain. Plain greedy, beam search and the draft use the same packed layers, so every comparison in the
app and the benchmark stays like for like.

The packed layout is oneDNN's own, so a packed layer cannot be trained or its weight read back:
`python -m specviz.distill train` loads the target unpacked. SPECVIZ_PACKED=0 turns packing off.
"""
from __future__ import annotations

import functools
import os

import torch


class PackedLinear(torch.nn.Module):
    """y = x W^T + b with W reordered for oneDNN at construction (inference only)."""

    def __init__(self, weight: torch.Tensor, bias: torch.Tensor | None = None):
        super().__init__()
        self.out_features, self.in_features = weight.shape
        # the batch-size hint only tunes the layout; 8 covers a verify pass of K+1 <= 9 rows
        self.register_buffer("packed", torch.ops.mkldnn._reorder_linear_weight(weight.detach(), 8), persistent=False)
        self.bias = None if bias is None else bias.detach()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.ops.mkldnn._linear_pointwise(x, self.packed, self.bias, "none", [], "")

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, out_features={self.out_features}, oneDNN-packed"


@functools.cache
def available() -> bool:
    """True when this torch build has the oneDNN ops and they agree with F.linear on a random case."""
    if os.environ.get("SPECVIZ_PACKED", "1") == "0" or not torch.backends.mkldnn.is_available():
        return False
    try:
        g = torch.Generator().manual_seed(0)
        w, b, x = (torch.randn(*s, generator=g) for s in ((48, 32), (48,), (1, 5, 32)))
        return torch.allclose(PackedLinear(w, b)(x), torch.nn.functional.linear(x, w, b), atol=1e-4)
    except (RuntimeError, AttributeError):  # a build without the ops: keep plain nn.Linear
        return False


def wanted(model: torch.nn.Module) -> bool:
    p = next(model.parameters(), None)
    return p is not None and p.device.type == "cpu" and p.dtype == torch.float32 and available()


@torch.inference_mode()
def pack_linears(model: torch.nn.Module) -> int:
    """Swap every nn.Linear of a CPU fp32 model for a PackedLinear, in place; returns how many."""
    if not wanted(model):
        return 0
    count = 0
    for parent in list(model.modules()):
        for name, child in list(parent.named_children()):
            if isinstance(child, torch.nn.Linear):
                setattr(parent, name, PackedLinear(child.weight, child.bias))
                count += 1
    return count
