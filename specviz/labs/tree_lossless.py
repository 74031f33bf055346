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

import argparse
import datetime
import json
import math
import pathlib
import statistics
import time
from collections import Counter
from dataclasses import dataclass

import torch
from scipy.stats import chisquare

from specviz import ROOT
from specviz.drafters import make_drafter
from specviz.sampling import SamplingConfig, distribution, warpers
from specviz.engine.speculative import Run
from specviz.engine.tree import draft_tree, static_tree, tree_logits
from specviz.verify import first_token_tv, total_variation, verify_tree, verify_tree_typical
from specviz.loading import load_models
from specviz.prompting import prompt_ids
from specviz.prompting import held_out_prompts

TYPICAL_TV = ROOT / "models" / "medusa" / "typical_tv.json"


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
    variation distance between the empirical and the exact distribution, and the one an exact sampler would
    leave on average at this n (noise_tv)."""
    n = sum(counts.values())
    big = sorted((k for k, p in probs.items() if n * p >= min_expected), key=lambda k: -probs[k])
    obs = [counts.get(k, 0) for k in big]
    exp = [n * probs[k] for k in big]
    rest_obs, rest_exp = n - sum(obs), n - sum(exp)
    if rest_exp > 1e-9 or rest_obs:
        obs, exp = obs + [rest_obs], exp + [max(rest_exp, 1e-9)]
    exp = [e * n / sum(exp) for e in exp]  # float rounding: the totals must agree exactly for scipy
    stat, pvalue = chisquare(obs, exp) if len(obs) > 1 else (0.0, 1.0)
    keys = sorted(set(probs) | set(counts))
    tv = total_variation([counts.get(k, 0) / n for k in keys], [probs.get(k, 0.0) for k in keys])
    return {"statistic": float(stat), "pvalue": float(pvalue), "dof": len(obs) - 1, "bins": big,
            "observed": obs, "expected": exp, "n": n, "tv": tv, "noise_tv": noise_tv(probs, n)}


def first_token_fit(counts: Counter, t: Tables) -> dict:
    """The first emitted token alone against p0."""
    firsts: Counter = Counter()
    for (x, _), c in counts.items():
        firsts[x] += c
    return goodness_of_fit(firsts, {x: float(t.p0[x]) for x in range(len(t.tokens)) if t.p0[x] > 0})


def chi_square_run(target, draft, ids: list[int], trials: int, typical=None, seed: int = 0) -> dict:
    """The Tree page's chi-square on the real model: p and q from real forwards on this prompt (T = 1, top-k 10),
    `trials` tree cycles verified by recursive rejection sampling, the first token's and the first pair's fits; with
    typical = (epsilon, delta) the same trials under Medusa's typical acceptance too (lossy)."""
    start = time.perf_counter()
    tables = real_tables(target, draft, list(ids), SamplingConfig(1.0, 10, 1.0, 0))
    counts = sample_pairs(tables, trials, width=3, seed=seed)
    lossy = None
    if typical is not None:
        lossy = (typical, first_token_fit(sample_pairs(tables, trials, width=3, seed=seed,
                                                       verifier=typical_verifier(*typical)), tables))
    return {"tables": tables, "first": first_token_fit(counts, tables),
            "pairs": goodness_of_fit(counts, expected_pairs(tables)), "lossy": lossy,
            "seconds": time.perf_counter() - start}


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


def mean_abs_deviation(n: int, p: float) -> float:
    """E|X/n - p| for X ~ Binomial(n, p), exactly (De Moivre): 2 (m + 1) C(n, m + 1) p^(m+1) (1 - p)^(n-m) / n with
    m = floor(n p), in logs. The normal approximation sqrt(2 p (1 - p) / (pi n)) overstates it where n p << 1, and a
    chi-square's pairs are mostly such outcomes."""
    if n <= 0 or p <= 0.0 or p >= 1.0:
        return 0.0
    m = min(int(n * p), n - 1)
    log = (math.log(2 * (m + 1)) + math.lgamma(n + 1) - math.lgamma(m + 2) - math.lgamma(n - m)
           + (m + 1) * math.log(p) + (n - m) * math.log1p(-p))
    return math.exp(log) / n


def noise_tv(probs: dict, n: int) -> float:
    """The total variation an EXACT sampler's empirical distribution keeps from probs at n draws, on average:
    half the sum of each outcome's E|count/n - p|. What a lossless rule's measured TV is compared with (it is
    never 0 at finite n)."""
    return 0.5 * sum(mean_abs_deviation(n, p) for p in probs.values())


def fit_verdict(fit: dict, alpha: float) -> tuple[bool, str]:
    """(detected, sentence) for a goodness_of_fit result: worded from its p-value against alpha, never assumed."""
    p, n, tv, noise = fit["pvalue"], fit["n"], fit["tv"], fit["noise_tv"]
    if p >= alpha:
        return False, (f"p-value {p:.3f} ≥ α = {alpha:.3g}: no detectable difference from p at n = {n:,}; the total "
                       f"variation {tv:.4f} is about what sampling noise alone leaves at this n (≈ {noise:.4f}).")
    return True, (f"p-value {p:.2g} < α = {alpha:.3g}: the counts differ from n·p by more than sampling noise explains "
                  f"at n = {n:,}; total variation {tv:.4f} against ≈ {noise:.4f} from noise alone.")


# ---------------------------------------------------------------- typical acceptance on the Medusa heads, measured
@torch.inference_mode()
def first_tree(target, drafter, tokenizer, ids: list[int], budget: int, depth: int, cfg: SamplingConfig):
    """The drafter's first tree on a prompt and the target's p over it (one verify pass), as the tree loop's
    first cycle computes them (tree.tree_speculative_steps)."""
    run = Run.start(target, drafter, tokenizer, ids, depth + 1, cfg)
    tree = draft_tree(drafter, list(ids), budget, depth, 1, cfg, run.gen)
    return tree, distribution(tree_logits(run.tstep, tree, list(ids)), cfg, run.procs).cpu().double()


def measure_typical_tv(models, prompts: list[list[int]], epsilon: float, delta: float, budget: int = 16,
                       depth: int = 4) -> dict:
    """first_token_tv of the exact rule and of typical acceptance (as verify.verify_tree_typical runs it) on the
    first Medusa tree of each prompt at T = 1: exact for that tree and p, no sampling."""
    cfg = SamplingConfig(1.0)
    exact, typical = [], []
    for ids in prompts:
        tree, p = first_tree(models.target, make_drafter("medusa", models), models.tokenizer, ids, budget, depth, cfg)
        exact.append(first_token_tv(tree, p))
        typical.append(first_token_tv(tree, p, (epsilon, delta)))
    return {"epsilon": epsilon, "delta": delta, "temperature": 1.0, "budget": budget, "depth": depth,
            "prompts": len(prompts), "typical_tv_mean": statistics.mean(typical),
            "typical_tv_median": statistics.median(typical), "exact_tv_max": max(exact),
            "typical_tv": [round(t, 4) for t in typical]}


def load_typical_tv(path: pathlib.Path = TYPICAL_TV) -> dict | None:
    """The measurement main() wrote (None when missing or unreadable: the page then quotes no figure)."""
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def main(argv=None) -> None:
    """python -m specviz.labs.tree_lossless: measure typical acceptance's distance from the target on the shipped
    Medusa heads over held-out prompts and write it where the Tree page reads it."""

    ap = argparse.ArgumentParser(prog="python -m specviz.labs.tree_lossless")
    ap.add_argument("--prompts", type=int, default=8, help="held-out prompts (chat template)")
    ap.add_argument("--stride", type=int, default=12, help="every stride-th held-out prompt (12: the model card's 8)")
    ap.add_argument("--epsilon", type=float, default=0.09)
    ap.add_argument("--delta", type=float, default=0.3)
    ap.add_argument("--budget", type=int, default=16)
    ap.add_argument("--depth", type=int, default=4)
    ap.add_argument("--out", default=str(TYPICAL_TV))
    a = ap.parse_args(argv)
    torch.set_num_threads(2)
    models = load_models()
    texts = held_out_prompts()[::a.stride][:a.prompts]
    res = measure_typical_tv(models, [prompt_ids(models.tokenizer, t) for t in texts], a.epsilon, a.delta, a.budget,
                             a.depth)
    res |= {"date": datetime.date.today().isoformat(), "stride": a.stride,
            "prompt_set": f"held_out_prompts()[::{a.stride}][:{a.prompts}] "
                          f"({len(texts)} held-out prompts, specviz.training.data), chat template",
            "heads": "models/medusa, shipped choices",
            "rule": "verify.verify_tree_typical: Medusa's evaluate_posterior (fast=True): the likeliest of the longest "
                    "passing paths, then the argmax of p",
            "command": "python -m specviz.labs.tree_lossless " + " ".join(argv if argv is not None
                                                                          else __import__("sys").argv[1:])}
    pathlib.Path(a.out).write_text(json.dumps(res, indent=1) + "\n")
    print(json.dumps({k: v for k, v in res.items() if k != "typical_tv"}, indent=1))


if __name__ == "__main__":
    main()
