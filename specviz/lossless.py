"""Why speculative sampling is exact, in exact arithmetic on small distributions.

One speculative step with draft q and target p outputs token x with probability
    P(x) = q(x) * min(1, p(x)/q(x))  +  (1 - sum_y min(p(y), q(y))) * residual(x)
         = min(p(x), q(x))           +  max(0, p(x) - q(x))                        = p(x).
The lossless lab draws these pieces; the tests check the identity to 1e-9 with the engine's own
accept rule and residual, and show what the two classic mistakes produce instead.
"""
from __future__ import annotations

import torch

from .errors import SpecVizError
from .verify import accept_probability, residual


def _normalize(v: torch.Tensor) -> torch.Tensor:
    v = torch.as_tensor(v, dtype=torch.float64)
    if (v < 0).any() or v.sum() <= 0:
        raise SpecVizError("A distribution needs non-negative weights with a positive total.")
    return v / v.sum()


def output_distribution(p, q, mistake: str = "none") -> torch.Tensor:
    """The exact distribution of the token one speculative step emits.

    mistake: "none" (residual, correct); "resample_p" (on rejection draw from p instead of the
    residual); "greedy_draft" (the draft proposes argmax q deterministically but the verifier still
    uses min(1, p/q) with the unprocessed q)."""
    p, q = _normalize(p), _normalize(q)
    out = torch.zeros_like(p)
    if mistake == "greedy_draft":
        x = int(torch.argmax(q))
        a = accept_probability(float(p[x]), float(q[x]))
        out[x] += a
        out += (1 - a) * residual(p, q)[0]
        return out
    for x in range(len(p)):  # the draft proposes x with probability q(x)
        if q[x] > 0:
            out[x] += q[x] * accept_probability(float(p[x]), float(q[x]))
    rejected = 1.0 - float(torch.minimum(p, q).sum())
    out += rejected * (p if mistake == "resample_p" else residual(p, q)[0])
    return out


def simulate(p, q, n: int, seed: int = 0) -> torch.Tensor:
    """Counts of n simulated speculative steps (draft from q, accept or resample from the residual)."""
    p, q = _normalize(p), _normalize(q)
    g = torch.Generator().manual_seed(seed)
    x = torch.multinomial(q, n, replacement=True, generator=g)
    u = torch.rand(n, generator=g, dtype=torch.float64)
    accept = u < torch.clamp(p[x] / q[x], max=1.0)
    r = residual(p, q)[0]
    resampled = torch.multinomial(r, n, replacement=True, generator=g)
    tokens = torch.where(accept, x, resampled)
    return torch.bincount(tokens, minlength=len(p))
