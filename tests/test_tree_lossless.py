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
from specviz.tree_lossless import expected_pairs, first_token_fit, goodness_of_fit, real_tables, sample_pairs
from specviz.verify import TreeVerification, accept_probability, draw, residual, verify_tree

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
    return TreeVerification((), tuple(best), draw(p[best[-1] + 1 if best else 0], False, gen), "bonus", None, False)


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
