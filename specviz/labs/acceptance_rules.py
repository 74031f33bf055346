"""Acceptance rules side by side (issue 38, item 5): how often each rule accepts a draft token, at real positions.

At one position the target's processed distribution is p and the draft's is q. The probability that the draft's
token is accepted, under each rule:

  exact match, sampled draft   the draft samples x ~ q, the target samples y ~ p on its own; accept when x == y.
                               P = sum_x p(x) q(x). Lossless: what is emitted is always the target's own y.
  exact match, self-draft      the same with q = p (a draft that is the target): P = sum_x p(x)^2, far below 1
                               whenever p is spread out, although the draft is perfect.
  rejection sampling           accept x ~ q with probability min(1, p(x)/q(x)), else draw from the residual:
                               P = sum_x min(p(x), q(x)) = 1 - TV(p, q). Lossless (Leviathan et al. 2023, Appendix A.1).
  greedy match                 a greedy draft against greedy verification: accepted iff argmax q == argmax p
                               (1 or 0). Lossless for greedy decoding; it says nothing about sampling.
  typical acceptance           Medusa's rule: accept x ~ q when p(x) > min(eps, delta * exp(-H(p)))
                               (specviz.verify.typical_threshold). P = sum_x q(x) [p(x) > threshold]. Not lossless:
                               the output is not distributed as p.

Why rejection sampling accepts the most among lossless rules: a lossless rule that accepts the draft's x ~ q
emits a token distributed as p, so (draft token, emitted token) is a coupling of q and p, and an acceptance
means the two are equal. For ANY coupling, P(X = Y) = sum_x P(X = Y = x) <= sum_x min(q(x), p(x)): rejection
sampling reaches that bound (it is the maximal coupling). Exact match is the independent coupling, sum p q <=
sum min(p, q) term by term (p q <= min(p, q) max(p, q) <= min(p, q))."""
from __future__ import annotations

import torch

from specviz.engine.step import token_text
from specviz.sampling import SamplingConfig, distribution
from specviz.verify import typical_threshold

# the rule's name, and whether it is lossless: True, False, or a string saying for what
RULES = {
    "exact match, sampled draft": True,
    "exact match, self-draft": True,
    "rejection sampling": True,
    "greedy match": "greedy decoding only",
    "typical acceptance": False,
}
EPSILON, DELTA = 0.09, 0.3  # Medusa's posterior_threshold and posterior_alpha defaults (the CLI's --typical)


def rule_probabilities(p: torch.Tensor, q: torch.Tensor, epsilon: float = EPSILON, delta: float = DELTA) -> dict:
    """p, q: 1-D distributions over one vocabulary. Each rule's probability of accepting the draft token, and
    TV(p, q). In float64, each renormalised to sum to 1 (a float32 softmax misses 1 by ~1e-6, enough to part
    sum min(p, q) from 1 - TV); rule_fractions gives the lossless rules in exact rationals."""
    p, q = p.double(), q.double()
    p, q = p / p.sum(), q / q.sum()
    threshold = typical_threshold(p, epsilon, delta)
    return {
        "exact match, sampled draft": float((p * q).sum()),
        "exact match, self-draft": float((p * p).sum()),
        "rejection sampling": float(torch.minimum(p, q).sum()),
        "greedy match": float(int(torch.argmax(p)) == int(torch.argmax(q))),
        "typical acceptance": float(q[p > threshold].sum()),
        "tv": float((p - q).abs().sum() / 2),
    }


def rule_fractions(p: list, q: list) -> dict:
    """The lossless rules' acceptance probabilities in exact arithmetic (p, q: lists of fractions.Fraction), for
    the tests: sum p q, sum p^2, sum min(p, q) and 1 - TV."""
    return {
        "exact match, sampled draft": sum(a * b for a, b in zip(p, q)),
        "exact match, self-draft": sum(a * a for a in p),
        "rejection sampling": sum(min(a, b) for a, b in zip(p, q)),
        "1 - tv": 1 - sum(abs(a - b) for a, b in zip(p, q)) / 2,
    }


@torch.no_grad()
def next_token_distributions(model, ids: list[int], start: int, cfg: SamplingConfig) -> torch.Tensor:
    """(len(ids) - start, vocab): the model's processed next-token distribution after ids[:i + 1] for i >= start - 1,
    i.e. at every output position from `start` on, from ONE forward pass over the whole text (teacher forcing)."""
    logits = model(torch.tensor([ids], device=model.device)).logits[0, start - 1: len(ids) - 1]
    return distribution(logits.cpu(), cfg)


def live_rules(target, draft, tokenizer, prompt: list[int], output: list[int], temperature: float,
               positions: int = 16, epsilon: float = EPSILON, delta: float = DELTA) -> dict:
    """At the first `positions` output positions of a recorded run (prompt + output), p from the target and q from
    a token draft model (both teacher-forced on the run's text, processed at `temperature`), each rule's acceptance
    probability. Returns {"rows": [{"position", "token", "text", rule: P, ..., "tv"}], "mean": {rule: mean}}."""
    cfg = SamplingConfig(temperature=temperature)
    ids = list(prompt) + list(output)
    n = min(positions, len(output))
    if n == 0:
        return {"rows": [], "mean": {}}
    start = len(prompt)
    p = next_token_distributions(target, ids[: start + n], start, cfg)
    q = next_token_distributions(draft, ids[: start + n], start, cfg)
    rows = []
    for i in range(n):
        row = {"position": i + 1, "token": output[i], "text": token_text(tokenizer, output[i])}
        row.update(rule_probabilities(p[i], q[i], epsilon, delta))
        rows.append(row)
    mean = {r: sum(row[r] for row in rows) / n for r in list(RULES) + ["tv"]}
    # where a rule that is not lossless accepts more than any lossless rule can (1 - TV): it pays in the output
    beyond = [row["position"] for row in rows if row["typical acceptance"] > row["rejection sampling"] + 1e-12]
    return {"rows": rows, "mean": mean, "temperature": temperature, "epsilon": epsilon, "delta": delta,
            "typical_beyond_bound": beyond}
