"""The accept/reject rule of speculative decoding, as a pure function of tensors: no model, no cache.

Given the drafts x_1..x_n, the distributions q_i they were drawn from and the target's p_1..p_{n+1}
(all from ONE verify pass):

  greedy verification:   accept x_i while x_i == argmax p_i; the first mismatch is replaced by argmax p_i
                         (the correction). Output == plain greedy, with any drafter.
  sampling verification: accept x_i with probability min(1, p_i(x)/q_i(x)); at the first rejection draw
                         from the residual normalize(max(0, p_i - q_i)). Output ~ p exactly
                         (Leviathan et al. 2023, Theorem 3.5; Chen et al. 2023).

If all n pass, p_{n+1} gives one more token for free (the bonus). An accepted end-of-sequence token ends
the output, so nothing after it is ruled on and no token is added.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch


@dataclass(frozen=True)
class Ruling:
    """The verifier's decision on one drafted token."""
    position: int
    token: int
    p: float  # p_i(x): the target's processed probability of the drafted token
    q: float  # q_i(x): the draft's
    accept_prob: float  # min(1, p/q) when sampling; 1 or 0 for a greedy match
    u: float | None  # the uniform draw (None in greedy verification)
    accepted: bool
    target_choice: int  # greedy verification: argmax p_i; -1 when sampling


@dataclass(frozen=True)
class Verification:
    rulings: tuple[Ruling, ...]  # up to and including the first rejection (or an accepted EOS)
    accepted: int  # drafted tokens accepted
    token: int | None  # the target's own token: correction, resampled or bonus; None after an accepted EOS
    origin: str  # "correction" | "resampled" | "bonus" | "target" (nothing drafted) | "none" (EOS accepted)
    residual: torch.Tensor | None  # normalize(max(0, p - q)) at the rejected position (sampling)
    residual_fallback: bool  # the residual was all zero (p == q): drew from p instead


def residual(p: torch.Tensor, q: torch.Tensor) -> tuple[torch.Tensor, bool]:
    """normalize(max(0, p - q)). All zero only when p == q, where a rejection has probability 0 in exact
    arithmetic; floating point can still land there, and p itself is then the right answer."""
    r = torch.clamp(p - q, min=0.0)
    total = r.sum()
    if total <= 0:
        return p, True
    return r / total, False


def accept_probability(p_x: float, q_x: float) -> float:
    """min(1, p(x)/q(x)): x was drawn from q, so q(x) > 0."""
    return min(1.0, p_x / q_x)


def one_hot(token: int, like: torch.Tensor) -> torch.Tensor:
    """q of a deterministic proposal (n-gram lookup, a greedy draft under greedy verification)."""
    q = torch.zeros_like(like)
    q[token] = 1.0
    return q


def draw(probs: torch.Tensor, greedy: bool, gen: torch.Generator) -> int:
    return int(torch.argmax(probs)) if greedy else int(torch.multinomial(probs, 1, generator=gen))


def verify(drafts: list[int], q: torch.Tensor | None, p: torch.Tensor, greedy: bool, gen: torch.Generator,
           stop: set[int] | frozenset = frozenset()) -> Verification:
    """drafts: n token ids; q: (n, vocab) or None (one-hot proposals); p: (n + 1, vocab) from one verify
    pass; stop: end-of-sequence ids. Draws u and any resampled token from `gen`, in position order."""
    rulings = []
    for i, x in enumerate(drafts):
        q_i = q[i] if q is not None else one_hot(x, p[i])
        if greedy:
            best = int(torch.argmax(p[i]))
            ok, prob, u = x == best, float(x == best), None
        else:
            best, prob = -1, accept_probability(float(p[i, x]), float(q_i[x]))
            u = float(torch.rand((), generator=gen))
            ok = u < prob
        rulings.append(Ruling(i, x, float(p[i, x]), float(q_i[x]), prob, u, ok, best))
        if not ok:
            if greedy:
                return Verification(tuple(rulings), i, best, "correction", None, False)
            r, fallback = residual(p[i], q_i)
            return Verification(tuple(rulings), i, draw(r, False, gen), "resampled", r, fallback)
        if x in stop:  # the output ends here, as plain decoding would end it
            return Verification(tuple(rulings), i + 1, None, "none", None, False)
    n = len(drafts)
    # every draft passed: the target's last distribution is free
    return Verification(tuple(rulings), n, draw(p[n], greedy, gen), "bonus" if n else "target", None, False)
