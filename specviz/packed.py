"""Linear layers with their weights packed once for oneDNN: the CPU fast path for every model.

Why: on CPU a plain nn.Linear calls MKL sgemm, which re-packs the weight on every call and handles a
handful of rows poorly. Measured on the 2-core CI machine (SmolLM2-135M, fp32, one forward with a KV
cache): 60 ms for 1 new token, 118 ms for 3, 79 ms for 5. With the weights reordered once for oneDNN
(what torch.compile's "freezing" does on CPU) the same forwards take 26, 34 and 27 ms: one token is
2.3x cheaper, and verifying 5 tokens costs about as much as generating 1. That second property is the
whole premise of speculative decoding (on a GPU it holds anyway); without it the verify pass eats the
gain. Plain greedy, beam search and the draft use the same packed layers, so every comparison in the
app and the benchmark stays like for like.

Not on every CPU, though: on the AVX-512 hosts with AMX that served this project on 2026-11-26, nn.Linear's
kernel was the faster one for few rows (the whole target: 40 ms against 54 ms for 1 token, 47 against 59 for 3,
about even at 5) and packing for many. So each process measures once which is faster at 1, 3, 5, 9 and 17 rows
(`packing_pays`: a stack of layers the size of the embedded target's, too big for the CPU's caches, ~0.8 s) and
every layer it loads follows that one choice: packed, plain, or both copies kept and chosen by row count (the
weights twice in memory, each row count at the faster kernel's speed).

The packed layout is oneDNN's own, so a packed layer cannot be trained or its weight read back:
`python -m specviz.distill train` loads the target unpacked. SPECVIZ_PACKED=0 turns packing off, =1 forces it.
"""
from __future__ import annotations

import functools
import os
import statistics
import threading
import time
from dataclasses import dataclass

import torch


class PackedLinear(torch.nn.Module):
    """y = x W^T + b with W reordered for oneDNN at construction (inference only). plain_below > 1: W is kept
    plain too, and calls of fewer rows than that multiply it with nn.Linear's kernel (where this CPU measured
    that faster: `choice`); the rest use the packed copy."""

    def __init__(self, weight: torch.Tensor, bias: torch.Tensor | None = None, plain_below: int = 1):
        super().__init__()
        self.out_features, self.in_features = weight.shape
        # the batch-size hint only tunes the layout; 8 covers a verify pass of K+1 <= 9 rows
        self.register_buffer("packed", torch.ops.mkldnn._reorder_linear_weight(weight.detach(), 8), persistent=False)
        self.bias = None if bias is None else bias.detach()
        self.plain_below = plain_below
        self.plain = weight.detach() if plain_below > 1 else None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.plain is not None and x.numel() < self.plain_below * self.in_features:
            return torch.nn.functional.linear(x, self.plain, self.bias)
        return torch.ops.mkldnn._linear_pointwise(x, self.packed, self.bias, "none", [], "")

    def extra_repr(self) -> str:
        plain = f", plain below {self.plain_below} rows" if self.plain is not None else ""
        return f"in_features={self.in_features}, out_features={self.out_features}, oneDNN-packed{plain}"


@functools.cache
def available() -> bool:
    """True when this torch build has the oneDNN ops and they agree with F.linear on a random case."""
    if os.environ.get("SPECVIZ_PACKED", "auto") == "0" or not torch.backends.mkldnn.is_available():
        return False
    try:
        g = torch.Generator().manual_seed(0)
        w, b, x = (torch.randn(*s, generator=g) for s in ((48, 32), (48,), (1, 5, 32)))
        return torch.allclose(PackedLinear(w, b)(x), torch.nn.functional.linear(x, w, b), atol=1e-4)
    except (RuntimeError, AttributeError):  # a build without the ops: keep plain nn.Linear
        return False


@dataclass(frozen=True)
class Choice:
    """How this process multiplies by a linear layer's weight: packed_from = the fewest rows for which the packed
    copy runs (1: always; None: never, plain nn.Linear only); the probe's medians (ms per row count, None where
    the environment decided)."""
    packed_from: int | None
    packed_ms: dict | None = None
    plain_ms: dict | None = None

    @property
    def packed(self) -> bool:
        return self.packed_from is not None

    def as_dict(self) -> dict:
        return {"packed_from": self.packed_from, "packed_ms": self.packed_ms, "plain_ms": self.plain_ms}


PLAIN_MARGIN = 1.05
PROBE_ROWS = (1, 3, 5, 9, 17)  # a decode step; verify passes at K = 2, 4, 8; a tree of 16 (beams reach them too)


@torch.inference_mode()
def packing_pays(pairs: int = 12, rows=PROBE_ROWS, repeats: int = 7) -> Choice:
    """Time a stack of `pairs` distinct MLP-shaped layer pairs, 576 -> 1536 -> 576, chained (85 MB: out of cache,
    as a model's layers are when a forward reaches them), at each row count, packed and plain, interleaved.
    Packed from the first row count where it is faster and stays faster (the kernels cross once: plain's cost
    per row grows faster); never packed where plain wins at every count."""
    g = torch.Generator().manual_seed(0)
    weights = [torch.randn(*shape, generator=g) * 0.02 for _ in range(pairs) for shape in ((1536, 576), (576, 1536))]
    ways = {"packed": [PackedLinear(w) for w in weights],
            "plain": [functools.partial(torch.nn.functional.linear, weight=w) for w in weights]}
    ms = {k: {} for k in ways}
    for n in rows:
        x0 = torch.randn(1, n, 576, generator=g)
        times = {k: [] for k in ways}
        for r in range(repeats + 1):  # the first round sets oneDNN up: untimed
            for k, stack in ways.items():
                x, t0 = x0, time.perf_counter()
                for f in stack:
                    x = f(x)
                if r:
                    times[k].append(1000 * (time.perf_counter() - t0))
        for k in ways:
            ms[k][n] = statistics.median(times[k])
    # packed stays the default unless plain is clearly faster (5 %): a near tie is noise, and one noisy median
    # should not give up packing for the life of the process
    wins = [n for n in rows if ms["packed"][n] < PLAIN_MARGIN * ms["plain"][n]]
    packed_from = next((n for n in rows if all(m in wins for m in rows if m >= n)), None)
    return Choice(packed_from, ms["packed"], ms["plain"])


def decide() -> Choice:
    """SPECVIZ_PACKED=0 (never) or 1 (always) decides; unset (auto), the measurement."""
    setting = os.environ.get("SPECVIZ_PACKED", "auto")
    if setting == "0" or not available():
        return Choice(None)
    return Choice(1) if setting == "1" else packing_pays()


_choosing = threading.Lock()  # two sessions of a fresh server must not probe at once (nor disagree)


@functools.cache
def _decided() -> Choice:
    return decide()


def choice() -> Choice:
    """This process's one choice, decided once (every model it loads follows it: like for like)."""
    with _choosing:
        return _decided()


def wanted(model: torch.nn.Module, force: bool = False) -> bool:
    p = next(model.parameters(), None)
    return (p is not None and p.device.type == "cpu" and p.dtype == torch.float32 and available()
            and (force or choice().packed))


@torch.inference_mode()
def pack_linears(model: torch.nn.Module, force: bool = False) -> int:
    """Swap every nn.Linear of a CPU fp32 model for a PackedLinear, in place, when this process packs (force: even
    when it measured plain layers faster); returns how many."""
    if not wanted(model, force):
        return 0
    count = 0
    for parent in list(model.modules()):
        for name, child in list(parent.named_children()):
            if isinstance(child, torch.nn.Linear):
                setattr(parent, name, PackedLinear(child.weight, child.bias, choice().packed_from or 1))
                count += 1
    return count
