"""Is sampling tree verification lossless on the REAL model? The first two emitted tokens, many times over.

The target's p and the draft's q come from real forwards on a prompt: after the context (p0, q0) and after
each possible first token t (p1[t], q1[t]). Each trial then runs what tree speculation does, with these fixed
tensors: draw the draft's chain x1 ~ q0, x2 ~ q1[x1], branch it with the draft's runner-ups (static_tree:
the deterministic siblings of SpecInfer/Medusa-style trees, one-hot q), verify the tree (verify_tree:
multi-draft recursive rejection sampling), and when the cycle emitted only one token run the next cycle from
context + t1 the same way. The pairs (t1, t2) must follow p0(t1) p1[t1](t2) exactly: a chi-square test says
whether they do. What is under test is the rule; the distributions are the model's.

Every tensor is cut down to the tokens some p or q can give (top-k sampling makes that a few hundred), so
a trial is cheap; the rule does not care which ids the tokens have.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import torch
from scipy.stats import chisquare

from .sampling import SamplingConfig, distribution, warpers
from .tree import static_tree
from .verify import verify_tree, verify_tree_typical


@dataclass(frozen=True)
class Tables:
    tokens: tuple[int, ...]  # compact index -> token id
    p0: torch.Tensor  # (V',) the target after the context
    q0: torch.Tensor  # (V',) the draft after the context
    first: tuple[int, ...]  # compact indices t with a row in p1, q1 (every token p0 or q0 can give)
    p1: torch.Tensor  # (len(first), V') the target after context + t
    q1: torch.Tensor  # (len(first), V') the draft after context + t


@torch.inference_mode()
def next_distribution(model, ids: list[int], cfg: SamplingConfig) -> torch.Tensor:
    """The (processed) distribution after ids: one forward, float64."""
    logits = model(input_ids=torch.tensor([ids], device=model.device)).logits[0, -1:].float().cpu()
    return distribution(logits, cfg, warpers(cfg))[0].double()


@torch.inference_mode()
def after_each(model, ids: list[int], firsts: list[int], cfg: SamplingConfig) -> torch.Tensor:
    """(len(firsts), vocab): the distribution after ids + [t] for every t, in ONE batched forward (equal lengths)."""
    batch = torch.tensor([ids + [t] for t in firsts], device=model.device)
    logits = model(input_ids=batch).logits[:, -1].float().cpu()
    return distribution(logits, cfg, warpers(cfg)).double()


def real_tables(target, draft, ids: list[int], cfg: SamplingConfig) -> Tables:
    """p0, q0, then p1, q1 for every token p0 or q0 can give: two forwards of each model, cut to the union of
    every row's support."""
    p0, q0 = next_distribution(target, ids, cfg), next_distribution(draft, ids, cfg)
    firsts = sorted(set(torch.nonzero(p0).flatten().tolist()) | set(torch.nonzero(q0).flatten().tolist()))
    p1, q1 = after_each(target, ids, firsts, cfg), after_each(draft, ids, firsts, cfg)
    support = sorted(set(firsts) | set(torch.nonzero(p1.sum(0) + q1.sum(0)).flatten().tolist()))
    idx = torch.tensor(support)
    where = {t: i for i, t in enumerate(support)}
    return Tables(tuple(support), p0[idx], q0[idx], tuple(where[t] for t in firsts), p1[:, idx], q1[:, idx])


def one_cycle(t: Tables, prefix: int | None, width: int, gen: torch.Generator, verifier=verify_tree) -> list[int]:
    """One tree cycle with the fixed tensors, from the context (prefix None: a depth-2 chain plus runner-ups)
    or from context + prefix (depth 1 plus runner-ups). Returns the emitted compact tokens."""
    row = {x: i for i, x in enumerate(t.first)}
    if prefix is None:
        x1 = int(torch.multinomial(t.q0, 1, generator=gen))
        x2 = int(torch.multinomial(t.q1[row[x1]], 1, generator=gen))
        tree = static_tree([x1, x2], torch.stack([t.q0, t.q1[row[x1]]]), width)
        root, parent_rows = t.p0, {x: t.p1[row[x]] for x in row}
    else:
        y = int(torch.multinomial(t.q1[row[prefix]], 1, generator=gen))
        tree = static_tree([y], t.q1[row[prefix]][None], width)
        root, parent_rows = t.p1[row[prefix]], {}
    # a node's row is p after its root-to-node path; rows past the second position only feed a bonus token
    # that is never looked at, so any distribution will do there (p0)
    rows = [root] + [parent_rows.get(x, t.p0) if d == 1 else t.p0 for x, d in zip(tree.tokens, tree.depths)]
    v = verifier(tree, torch.stack(rows), False, gen)
    return [tree.tokens[i] for i in v.path] + ([v.token] if v.token is not None else [])


def sample_pairs(t: Tables, trials: int, width: int = 3, seed: int = 0, verifier=verify_tree) -> Counter:
    """Counts of the first two emitted (compact) tokens over `trials` runs of tree speculation."""
    gen = torch.Generator().manual_seed(seed)
    counts: Counter = Counter()
    for _ in range(trials):
        out = one_cycle(t, None, width, gen, verifier)
        if len(out) < 2:
            out += one_cycle(t, out[0], width, gen, verifier)
        counts[(out[0], out[1])] += 1
    return counts


def expected_pairs(t: Tables) -> dict[tuple[int, int], float]:
    """p0(t1) p1[t1](t2) for every pair with positive probability."""
    out = {}
    for i, x in enumerate(t.first):
        if t.p0[x] > 0:
            for y in torch.nonzero(t.p1[i]).flatten().tolist():
                out[(x, y)] = float(t.p0[x] * t.p1[i, y])
    return out


def goodness_of_fit(counts: Counter, probs: dict, min_expected: float = 5.0) -> dict:
    """Chi-square of observed counts against n * probs: bins with an expected count >= min_expected on their
    own, every other outcome (and anything observed outside probs) pooled into one bin. Also the total
    variation distance between the empirical and the exact distribution."""
    n = sum(counts.values())
    big = sorted((k for k, p in probs.items() if n * p >= min_expected), key=lambda k: -probs[k])
    obs = [counts.get(k, 0) for k in big]
    exp = [n * probs[k] for k in big]
    rest_obs, rest_exp = n - sum(obs), n - sum(exp)
    if rest_exp > 1e-9 or rest_obs:
        obs, exp = obs + [rest_obs], exp + [max(rest_exp, 1e-9)]
    exp = [e * n / sum(exp) for e in exp]  # float rounding: the totals must agree exactly for scipy
    stat, pvalue = chisquare(obs, exp) if len(obs) > 1 else (0.0, 1.0)
    keys = set(probs) | set(counts)
    tv = 0.5 * sum(abs(counts.get(k, 0) / n - probs.get(k, 0.0)) for k in keys)
    return {"statistic": float(stat), "pvalue": float(pvalue), "dof": len(obs) - 1, "bins": big,
            "observed": obs, "expected": exp, "n": n, "tv": tv}


def first_token_fit(counts: Counter, t: Tables) -> dict:
    """The first emitted token alone against p0."""
    firsts: Counter = Counter()
    for (x, _), c in counts.items():
        firsts[x] += c
    return goodness_of_fit(firsts, {x: float(t.p0[x]) for x in range(len(t.tokens)) if t.p0[x] > 0})


def bin_names(fit: dict, t: Tables, decode) -> list[str]:
    """A label per chi-square bin: the token (or "first · second" for a pair), "other" for the pooled bin."""
    def name(k):
        return " · ".join(decode(t.tokens[x]) for x in k) if isinstance(k, tuple) else decode(t.tokens[k])
    names = [name(k) for k in fit["bins"]]
    return names + ["other"] * (len(fit["observed"]) - len(names))


def typical_verifier(epsilon: float, delta: float):
    """Medusa's typical acceptance (verify_tree_typical, LOSSY) with the verifier signature sample_pairs takes:
    run on the same trials, it shows how far from p that rule's output lands."""
    def verifier(tree, p, greedy, gen, stop=frozenset()):
        return verify_tree_typical(tree, p, greedy, gen, (epsilon, delta), stop)
    return verifier
