"""Sampling tree verification is lossless on the REAL model: the chi-square test the lossless lab runs for
chains, for trees. The target's p and the token draft's q come from real forwards on one prompt (top-k 10,
T = 1); each trial drafts a depth-2 chain from q, branches it with the draft's runner-ups (static_tree, one-hot
siblings), verifies it with verify_tree (multi-draft recursive rejection sampling) and, when the cycle emitted
one token, runs the next cycle. The first two emitted tokens must follow p0(t1) p(t2 | t1).

The same test must catch a broken rule: "the longest accepted path" (each node judged on its own, no
residual) and siblings tried without the residual update both fail it by a wide margin."""
import pytest
import torch

from conftest import chat

from specviz import verify
from specviz.sampling import SamplingConfig
from specviz.labs.tree_lossless import expected_pairs, first_token_fit, goodness_of_fit, real_tables, sample_pairs
from specviz.verify import Verification, accept_probability, draw, residual, verify_tree

CFG = SamplingConfig(1.0, 10, 1.0, 0)
PROMPT = "Write a surreal poem about a violin made of fog and a clock that eats oranges."


@pytest.fixture(scope="module")
def tables(models):
    return real_tables(models.target, models.draft, chat(models.tokenizer, PROMPT), CFG)


def test_the_real_distributions_make_the_test_bite(tables):
    """p and q differ (rejections and residuals happen) and more than one first token is likely."""
    assert 0.5 * float((tables.p0 - tables.q0).abs().sum()) > 0.1
    assert int((tables.p0 > 0.05).sum()) >= 3


def test_tree_sampling_first_two_tokens_follow_the_target(tables):
    counts = sample_pairs(tables, 12_000, width=3, seed=0)
    first, pairs = first_token_fit(counts, tables), goodness_of_fit(counts, expected_pairs(tables))
    assert first["dof"] >= 3 and pairs["dof"] >= 10
    assert first["pvalue"] > 1e-3, first
    assert pairs["pvalue"] > 1e-3, pairs


def longest_accepted_path(tree, p, greedy, gen, stop=frozenset()):
    """The biased rule: every node judged on its own against its parent's p (no residual after a sibling's
    rejection), the longest all-accepted root-to-node path kept, the next token drawn from p after it."""
    ok = []
    for i, x in enumerate(tree.tokens):
        row = p[tree.parents[i] + 1]
        q = tree.q_of(i, row)
        ok.append(float(torch.rand((), generator=gen)) < accept_probability(float(row[x]), float(q[x])))
    best: list[int] = []
    for i in range(len(tree)):
        path = tree.path_to(i)
        if all(ok[j] for j in path) and len(path) > len(best):
            best = path
    return Verification((), tuple(best), draw(p[best[-1] + 1 if best else 0], False, gen), "bonus", None, False)


def no_residual_update(p, xs, qs):
    """Siblings all tried against the same p; the residual of the last one sampled when all fail."""
    probs = [accept_probability(float(p[x]), float(q[x])) for x, q in zip(xs, qs)]
    last, fb = residual(p, qs[-1]) if qs else (p, False)
    return probs, [p] * len(xs) + [last], fb


def test_a_broken_rule_fails_the_same_test(tables, monkeypatch):
    counts = sample_pairs(tables, 4_000, width=3, seed=1, verifier=longest_accepted_path)
    assert goodness_of_fit(counts, expected_pairs(tables))["pvalue"] < 1e-3
    monkeypatch.setattr(verify, "sibling_schedule", no_residual_update)
    counts = sample_pairs(tables, 4_000, width=3, seed=2, verifier=verify_tree)
    assert goodness_of_fit(counts, expected_pairs(tables))["pvalue"] < 1e-3


# ---------------------------------------------------------------- the page's verdict sentences (no model)
@pytest.mark.fast  # model-free
def test_noise_tv_is_what_an_exact_sampler_leaves():
    import random

    from specviz.labs.tree_lossless import mean_abs_deviation, noise_tv

    assert noise_tv({0: 0.5, 1: 0.5}, 1) == pytest.approx(0.5)  # one draw: the empirical is one-hot
    assert mean_abs_deviation(10, 0.0) == 0.0 and mean_abs_deviation(0, 0.3) == 0.0
    probs, n, rng = {0: 0.7, 1: 0.2, 2: 0.09, 3: 0.01}, 200, random.Random(0)
    sims = []
    for _ in range(3000):
        counts = [0] * 4
        for x in rng.choices(list(probs), weights=list(probs.values()), k=n):
            counts[x] += 1
        sims.append(0.5 * sum(abs(c / n - probs[k]) for k, c in enumerate(counts)))
    assert noise_tv(probs, n) == pytest.approx(sum(sims) / len(sims), rel=0.03)


@pytest.mark.fast  # model-free
def test_the_verdict_is_worded_from_the_p_value():
    """'(sampling noise alone at n = ...)' was printed whatever the p-value."""
    from specviz.labs.tree_lossless import fit_verdict

    fit = {"pvalue": 0.4, "n": 12_000, "tv": 0.004, "noise_tv": 0.0041}
    detected, text = fit_verdict(fit, 0.025)
    assert not detected and "no detectable difference" in text and "sampling noise" in text and "12,000" in text
    detected, text = fit_verdict(fit | {"pvalue": 0.003, "tv": 0.17}, 0.025)
    assert detected and "no detectable" not in text and "more than sampling noise explains" in text
    assert fit_verdict(fit | {"pvalue": 0.025}, 0.025)[0] is False  # at alpha: not below it


def test_the_typical_rule_is_detected_on_the_real_model(models):
    """The Tree page's typical-acceptance chi-square, on the app's default prompt at the page's trial count and
    default epsilon, delta, shows the loss the page describes (a learner saw p = 0.06 there with the earlier
    rule, which drew the token after the path from p)."""
    from specviz.labs.tree_lossless import fit_verdict, typical_verifier
    from ui.sidebar import CURATED

    tables = real_tables(models.target, models.draft, chat(models.tokenizer, next(iter(CURATED.values()))), CFG)
    fit = first_token_fit(sample_pairs(tables, 12_000, width=3, seed=0, verifier=typical_verifier(0.09, 0.3)), tables)
    assert fit_verdict(fit, 0.025)[0] and fit["tv"] > 5 * fit["noise_tv"]
