"""The speedup formulas (Leviathan et al. 2023), used by the pages, the benchmark and the tests.

a: acceptance rate (probability a drafted token is accepted, assumed i.i.d.); K: drafts per cycle;
c: cost of one draft step relative to one target step; v: cost of the target's (K+1)-token verify
pass relative to a 1-token step (1 in the paper's idealised memory-bound model).
"""
from __future__ import annotations


def expected_tokens(a: float, k: int) -> float:
    """Expected tokens per target pass: 1 + a + a^2 + ... + a^K = (1 - a^(K+1)) / (1 - a)."""
    if a >= 1.0:
        return float(k + 1)
    return (1.0 - a ** (k + 1)) / (1.0 - a)


def walltime_improvement(a: float, k: int, c: float, v: float = 1.0) -> float:
    """Speedup over plain decoding: tokens per cycle / cost per cycle (K draft steps + one verify).
    v = 1 is the paper's formula; v > 1 is the machine-aware bound (verify not free, e.g. on CPU)."""
    return expected_tokens(a, k) / (k * c + v)


def best_k(a: float, c: float, v: float = 1.0, k_max: int = 16) -> int:
    return max(range(1, k_max + 1), key=lambda k: walltime_improvement(a, k, c, v))
