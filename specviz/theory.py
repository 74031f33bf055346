"""The speedup formulas of Leviathan et al. 2023 (§3.1-3.4), used by the pages, the benchmark and the tests.

a: acceptance rate (probability a drafted token is accepted, assumed i.i.d. over positions — the
paper's simplifying assumption, not a property of real text); K: drafts per cycle; c: cost of one
draft step relative to one target step; v: cost of the target's (K+1)-token verify pass relative to
a 1-token step (1 in the paper's idealised memory-bound model).

These are *estimates* under that model, not bounds, and a real run can miss them either way. Below:
per-step overhead, a first pass that also prefills, and acceptance that clusters or rises with depth —
with a measured as accepted ÷ ruled on, that gives FEWER tokens per pass than expected_tokens(a, K)
(see pooled_acceptance). Above: acceptance that falls with depth (more tokens than expected_tokens(a, K)),
and the cost side — a verify or draft step cheaper in the run than in the isolated timing.
"""
from __future__ import annotations

DONT_SPECULATE = 0  # best_k's answer when no K beats plain decoding


def expected_tokens(a: float, k: int) -> float:
    """Expected tokens per target pass: 1 + a + a^2 + ... + a^K = (1 - a^(K+1)) / (1 - a)."""
    if a >= 1.0:
        return float(k + 1)
    return (1.0 - a ** (k + 1)) / (1.0 - a)


def walltime_improvement(a: float, k: int, c: float, v: float = 1.0) -> float:
    """Estimated speedup over plain decoding: tokens per cycle / cost per cycle (K draft steps + one
    verify). v = 1 is the paper's formula; v > 1 is the machine-aware estimate (verify not free, e.g. on CPU)."""
    return expected_tokens(a, k) / (k * c + v)


def speculation_pays(a: float, c: float) -> bool:
    """Leviathan et al. Corollary 3.9: with v = 1 some K gives an improvement > 1 if and only if a > c
    (K = 1 already does: (1 + a) / (1 + c) > 1)."""
    return a > c


def best_k(a: float, c: float, v=1.0, k_max: int = 16) -> int:
    """The K in 1..k_max with the largest estimated improvement, or DONT_SPECULATE (0) when no K gives
    an improvement above 1 (with v = 1: exactly when a <= c). v: one verify cost, or v(K) per K (v_model)."""
    v_of = v if callable(v) else (lambda k: v)
    k = max(range(1, k_max + 1), key=lambda k: walltime_improvement(a, k, c, v_of(k)))
    return k if walltime_improvement(a, k, c, v_of(k)) > 1.0 else DONT_SPECULATE


def v_model(profile=None, through: tuple[int, float] | None = None):
    """v(K), a verify pass over K + 1 positions in target steps, as the Speedup lab models it. profile: v measured
    per K in isolation (labs.measure); through = (K, v): a real run's own v at its K. Both: the profile's shape
    scaled through the run's point; the profile alone: itself; the point alone: linear in K through it (v(0) = 1);
    neither: a free verify, v = 1 (the paper's)."""
    if profile and through:
        k0, v0 = through
        return lambda k: v0 * profile(k) / profile(k0)
    if profile:
        return profile
    if through:
        k0, v0 = through
        return lambda k: 1 + (v0 - 1) * k / k0
    return lambda k: 1.0


def speedup_breakdown(tokens_per_pass: float, measured: float, k: int | None = None, c: float = 0.0,
                      v: float = 1.0) -> list[tuple[str, float]]:
    """Where a measured speedup goes, as factors that multiply to `measured` exactly: the tokens one verify pass
    commits (what the speedup would be if drafting and verifying were free), then the draft's K steps (÷ (1 + Kc),
    verify still at one step's cost), then the verify pass at its measured cost v instead of 1, then everything
    the formula leaves out (sampling, Python, cache crops, a drafter's prefill), measured as what remains. Without
    K (lookahead, trees) drafting and verifying stay inside the last factor."""
    if tokens_per_pass <= 0 or measured <= 0:
        raise ValueError("tokens_per_pass and measured must be positive")
    factors = [("tokens per verify pass (drafting and verifying free)", tokens_per_pass)]
    predicted = tokens_per_pass
    if k:
        factors += [("drafting: K draft steps, ÷ (1 + Kc)", 1.0 / (1.0 + k * c)),
                    ("verify pass at its measured cost v: (1 + Kc) ÷ (Kc + v)", (1.0 + k * c) / (k * c + v))]
        predicted = tokens_per_pass / (k * c + v)
    factors.append(("everything else: sampling, Python, cache crops, prefill (measured ÷ predicted)",
                    measured / predicted))
    return factors


def tokens_from_positions(rates, k: int) -> float:
    """Expected tokens per verify pass at K from MEASURED per-position acceptance (rates[i] = P(draft i + 1 accepted
    | reached)), not one a: 1 + r1 + r1·r2 + … + r1···rK. Equals expected_tokens(a, K) when every rate is a."""
    total, reach = 1.0, 1.0
    for r in list(rates)[:k]:
        reach *= r
        total += reach
    return total


def pooled_acceptance(rates, k: int) -> float:
    """The a a run reports from per-position acceptance rates[i] = P(draft i + 1 accepted | reached): accepted ÷
    ruled on = (r1 + r1·r2 + … + r1···rK) ÷ (1 + r1 + … + r1···r(K−1)). Why it matters: for rates that rise with
    depth (or cluster), expected_tokens(pooled a, K) overstates tokens_from_positions(rates, K) — 0.6, 0.8, 0.8,
    0.8 pool to a = 0.719, whose i.i.d. estimate is 2.87 tokens per pass, while the run gives 2.77. Falling rates
    do the opposite (0.8, 0.7, 0.6, 0.5: a = 0.691, estimate 2.73, run 2.86)."""
    accepted, ruled, reach = 0.0, 0.0, 1.0
    for r in list(rates)[:k]:
        ruled += reach
        reach *= r
        accepted += reach
    return accepted / ruled if ruled else 0.0


def best_k_from_positions(rates, c: float, v_of_k, k_max: int | None = None) -> tuple[int, float]:
    """The K (1..k_max, at most the positions measured) maximising tokens_from_positions / (K·c + v(K)), with v(K)
    the measured cost of a K + 1-token verify pass; (DONT_SPECULATE, 1.0) when none beats plain decoding."""
    ks = range(1, min(len(rates), k_max or len(rates)) + 1)
    gains = {k: tokens_from_positions(rates, k) / (k * c + v_of_k(k)) for k in ks}
    if not gains:
        return DONT_SPECULATE, 1.0
    k = max(gains, key=gains.get)
    return (k, gains[k]) if gains[k] > 1.0 else (DONT_SPECULATE, 1.0)


def acceptance_from_tokens_per_pass(tau: float, k: int) -> float:
    """The i.i.d. acceptance rate a whose expected tokens per pass (1 - a^(K+1)) / (1 - a) equals the
    measured mean tau: the a the speedup formula must be given to predict this run (bisection)."""
    tau = min(max(tau, 1.0), k + 1.0)
    lo, hi = 0.0, 1.0
    for _ in range(60):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if expected_tokens(mid, k) < tau else (lo, mid)
    return (lo + hi) / 2
