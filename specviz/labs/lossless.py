"""Why speculative sampling is exact, in exact arithmetic on small distributions.

One speculative step with draft q and target p outputs token x with probability
    P(x) = q(x) * min(1, p(x)/q(x))  +  (1 - sum_y min(p(y), q(y))) * residual(x)
         = min(p(x), q(x))           +  max(0, p(x) - q(x))                        = p(x).
The lossless lab draws these pieces; the tests check the identity to 1e-9 with the engine's own
accept rule and residual, and show what the two classic mistakes produce instead.
"""
from __future__ import annotations

import torch

from dataclasses import dataclass

from specviz.errors import SpecVizError
from specviz.verify import accept_probability, residual, total_variation
from specviz.sampling import distribution, warpers


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


@dataclass(frozen=True)
class Toy:
    """The toy table's p and q (each divided by its total), the pieces of one speculative step, the exact output,
    n simulated steps, and what the two classic mistakes output instead: everything the lab's toy mode shows."""
    p: torch.Tensor
    q: torch.Tensor
    sums: tuple[float, float]  # the table's totals before normalising
    overlap: torch.Tensor  # min(p, q): the accept path
    residual: torch.Tensor
    exact: torch.Tensor
    counts: torch.Tensor
    wrong: dict  # mistake -> its output distribution
    residual_is_p: bool = False  # p == q: max(0, p - q) is all zero, and the residual falls back to p (verify.residual)

    @property
    def accepted_mass(self) -> float:
        return float(self.overlap.sum())

    @property
    def exact_error(self) -> float:
        """The exact output's largest difference from p (float rounding)."""
        return float((self.exact - self.p).abs().max())

    @property
    def simulated_tv(self) -> float:
        return total_variation(self.counts / self.counts.sum(), self.p)

    def tv(self, mistake: str) -> float:
        return total_variation(self.wrong[mistake], self.p)


def toy(p_values, q_values, n: int, seed: int = 0) -> Toy:
    """Toy mode on a table (check it with table_problem first)."""
    p, q = torch.tensor(p_values, dtype=torch.float64), torch.tensor(q_values, dtype=torch.float64)
    sums = float(p.sum()), float(q.sum())
    p, q = p / p.sum(), q / q.sum()
    r, fallback = residual(p, q)
    return Toy(p, q, sums, torch.minimum(p, q), r, output_distribution(p, q), simulate(p, q, n, seed),
               {m: output_distribution(p, q, m) for m in ("resample_p", "greedy_draft")}, fallback)


# ---------------------------------------------------------------- the toy table and the real-model test, in words
def table_problem(p_values, q_values) -> str | None:
    """Why a toy table cannot be used as two distributions, in one sentence (None when it can): every weight a
    non-negative number, each column with a positive total. Checked before anything divides by the totals."""
    for name, values in (("p", p_values), ("q", q_values)):
        vals = [float("nan") if v is None else v for v in values]
        bad = [i + 1 for i, v in enumerate(vals) if not isinstance(v, (int, float)) or v != v]
        if bad:
            return f"Row {bad[0]} of {name} is empty or not a number: give every token a weight (0 is allowed)."
        negative = [i + 1 for i, v in enumerate(vals) if v < 0]
        if negative:
            return f"Row {negative[0]} of {name} is negative: weights are probabilities (or counts), 0 or more."
        if sum(vals) <= 0:
            return (f"Every weight in {name} is 0: a distribution needs a positive total. Give at least one token a "
                    f"positive {name} (the column is divided by its total, so any scale will do).")
    return None


def family_verdict(pvalues: list[float], alpha: float = 0.05) -> tuple[str, str]:
    """(kind, sentence) for a family of chi-square tests, one per output position, read with the Bonferroni
    correction: each p-value against alpha / m, so that when the two samplers ARE the same, the chance that any
    of the m tests falls below its threshold is at most alpha. kind: "reject" (a p-value below alpha / m: a
    rejection at the family level), "chance" (below alpha on its own only), "consistent" (none below alpha).
    Worded from the numbers, never assumed: a rejection is said as one, with what it does and does not prove."""
    m = len(pvalues)
    threshold = alpha / m
    i = min(range(m), key=lambda j: pvalues[j])
    low = pvalues[i]
    if low < threshold:
        where = (f"below {alpha:g} / {m} = {threshold:.3g}: with the Bonferroni correction this is a **rejection at "
                 "the family level**" if m > 1 else f"below {alpha:g}: a **rejection**")
        return "reject", (
            f"Token {i + 1}'s p-value, **{low:.3g}**, is {where} — the two samplers' tokens differ "
            f"more than sampling noise usually makes them differ. It is not yet proof that the rule is wrong: when "
            f"both samplers are the same, some run still rejects up to {alpha:.0%} of the time (1 run in "
            f"{1 / alpha:.0f}: that is what the threshold allows). "
            f"The honest check is to sample again with another seed "
            "and more samples: a real difference comes back, and more clearly with more samples; a chance one "
            "does not.")
    any_chance = 1 - (1 - alpha) ** m
    if low < alpha:
        return "chance", (
            f"Token {i + 1}'s p-value, **{low:.3g}**, is below {alpha:g} on its own but not below {alpha:g} / {m} = "
            f"{threshold:.3g}. With {m} tests, at least one p-value under {alpha:g} turns up in about "
            f"{any_chance:.0%} of runs even when the two samplers are the same, so this is **not a detection**: no "
            "difference shows at this sample size. Another seed and more samples settle it.")
    return "consistent", (
        f"Every p-value is at least {alpha:g} (the smallest, token {i + 1}'s, is **{low:.3g}**): **no detectable "
        "difference** between the two samplers at this sample size, as the proof says. A test that does not reject "
        "shows no difference it could see; it does not prove there is none (its power, below, says how big a "
        "mistake it would catch).")


def detection_power(p, wrong, n: int, tests: int, alpha: float = 0.05, min_count: int = 10) -> float:
    """The chance that the chi-square test of homogeneity between n samples of p and n samples of `wrong` rejects
    at alpha / tests (a calculation: the noncentral chi-square approximation, noncentrality
    n · Σ (w − p)² / (w + p)). Tokens with fewer than min_count expected in both samples together are pooled
    into one category, as the page's test pools them."""
    from scipy.stats import chi2, ncx2

    p, w = _normalize(p), _normalize(wrong)
    big = n * (p + w) >= min_count
    cats_p = torch.cat([p[big], p[~big].sum().reshape(1)]) if (~big).any() else p[big]
    cats_w = torch.cat([w[big], w[~big].sum().reshape(1)]) if (~big).any() else w[big]
    keep = (cats_p + cats_w) > 0
    cats_p, cats_w = cats_p[keep], cats_w[keep]
    df = len(cats_p) - 1
    if df < 1:
        return 0.0
    lam = n * float(((cats_w - cats_p) ** 2 / (cats_w + cats_p)).sum())
    return float(1 - ncx2.cdf(chi2.ppf(1 - alpha / tests, df), df, lam))


@torch.inference_mode()
def mistake_power(p, q, samples, tests: int) -> dict[str, list[float]]:
    """Per classic mistake, the chance the real-model test (tests at 0.05 / tests) catches it at each sample count.
    Each mistake's output distribution is computed once (a pass over the whole vocabulary, ~60 ms)."""
    wrong = {mistake: output_distribution(p, q, mistake) for mistake in ("resample_p", "greedy_draft")}
    return {mistake: [detection_power(p, w, n, tests) for n in samples] for mistake, w in wrong.items()}


def first_token_distributions(target, drafter, ids: list[int], cfg) -> tuple[torch.Tensor, torch.Tensor]:
    """p and q of the first output position as speculative sampling uses them: the target's and a model
    drafter's next-token distributions on `ids`, both processed by the same sampling config."""
    logits = target(input_ids=torch.tensor([ids], device=target.device)).logits[:, -1]
    p = distribution(logits, cfg, warpers(cfg))[0].cpu()
    _, q = drafter.propose(list(ids), 1, cfg, torch.Generator().manual_seed(0))
    return p, q[0].cpu()
