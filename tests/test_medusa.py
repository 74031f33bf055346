"""Medusa-1 heads (specviz/drafters/medusa.py): the choices list -> tree shape, greedy tree speculation
token-identical to plain greedy for several choices lists, the shipped heads beat untrained ones on a
held-out prompt, and typical acceptance (verify.verify_tree_typical) is measurably LOSSY while the exact
rule is not (verify.first_token_tv)."""
import time

import pytest
import torch

from conftest import chat
from specviz.drafters.medusa import MedusaDrafter, choice_tree, tree_from_choices
from specviz.errors import SpecVizError
from specviz.medusa_choices import parse_choices
from specviz.loading import SHIPPED_DRAFT
from specviz.engine.plain import plain_steps
from specviz.sampling import SamplingConfig
from specviz.engine.loop import run_steps
from specviz.training.evaluate import evaluation_prompts
from specviz.training.medusa import greedy_states, head_accuracy, untrained_heads
from specviz.engine.tree import tree_speculative_steps
from specviz.verify import (TokenTree, first_token_distribution, first_token_tv, typical_threshold, verify_tree,
                            verify_tree_typical)

CHOICES = ((0,), (1,), (0, 0), (0, 1), (1, 0), (0, 0, 0))


# ---------------------------------------------------------------- choices -> tree (no model)
@pytest.mark.fast  # model-free
def test_choices_give_the_known_tree():
    paths = tree_from_choices(CHOICES, budget=99, depth=9)
    assert paths == [(0,), (1,), (0, 0), (0, 1), (1, 0), (0, 0, 0)]
    top_ids = torch.tensor([[10, 11, 12], [20, 21, 22], [30, 31, 32]])  # head h's k-th candidate: 10 h + k
    top_q = torch.full((3, 3), 0.5)
    tree = choice_tree(paths, top_ids, top_q)
    assert tree.tokens == (10, 11, 20, 21, 20, 30)  # depth d = head d; siblings: that head's candidates in turn
    assert tree.parents == (-1, -1, 0, 0, 1, 2)
    assert tree.depths == [1, 1, 2, 2, 2, 3]
    assert tree.q is None  # deterministic top-k picks: one-hot q for the verifier
    # node 5 = (0, 0, 0) sees the root's child 0, its child 2 and itself; nothing of the (1, ...) branch
    assert tree.ancestry()[5].tolist() == [True, False, True, False, False, True]


@pytest.mark.fast  # model-free
def test_choices_truncated_to_budget_and_depth_stay_a_tree():
    assert tree_from_choices(CHOICES, budget=3, depth=9) == [(0,), (1,), (0, 0)]
    assert tree_from_choices(CHOICES, budget=99, depth=1) == [(0,), (1,)]



@pytest.mark.fast  # model-free
def test_choices_do_not_depend_on_the_lists_order():
    """A child listed before its parent was silently dropped (kept only when its parent was already kept);
    Medusa sorts the list by (length, path) before building its tree."""
    assert tree_from_choices([(0, 0), (0,), (1,)], budget=99, depth=9) == [(0,), (1,), (0, 0)]
    assert tree_from_choices(((1,), (0, 1), (0,), (0, 0)), budget=99, depth=9) == [(0,), (1,), (0, 0), (0, 1)]
    shuffled = [CHOICES[i] for i in (5, 2, 4, 0, 3, 1)]
    assert tree_from_choices(shuffled, budget=99, depth=9) == tree_from_choices(CHOICES, budget=99, depth=9)
    # under a budget the list's order is still its priority: a child listed first brings its parent along
    assert tree_from_choices([(0, 0), (0,), (1,)], budget=2, depth=9) == [(0,), (0, 0)]
    assert tree_from_choices([(0, 0, 0), (1,)], budget=2, depth=9) == [(1,)]  # hangs from paths not listed
    assert tree_from_choices([(2, 0), (2,)], budget=1, depth=9) == [(2,)]  # the path and its parent: 2 > 1 node


# ---------------------------------------------------------------- a typed or linked medusa_choices (no model)
@pytest.mark.parametrize("text", ["[(0,), (1,), (0, 0)]", "[[0], [1], [0, 0]]", "((0,),(1,),(0,0),)",
                                  " [ ( 0 ) , (1,) ,(0 ,0 ,) ] ", "[(0, 0), (1,), (0,)]"])
def test_choices_text_in_every_bracket_style(text):
    assert sorted(parse_choices(text, 4)) == [(0,), (0, 0), (1,)]


HOSTILE = [
    ("-" * 3000 + "1", "no sign"),  # ast.literal_eval: RecursionError (from ~5,000 on, "at most" first)
    ("-" * 5000 + "1", "at most"),
    ("-" * 100_000 + "1", "at most"),  # ast.literal_eval: MemoryError
    ("[" * 1500 + "]" * 1500, "numbers only"),
    ("(" * 3999, "numbers only"),
    ("[(0,), (-1,)]", "no sign"),
    ("[(0,), (+1,)]", "no sign"),
    ("[(0.5,)]", "'.'"),
    ("[(1e3,)]", "'e'"),
    ("[(0,), (99999,)]", "digits"),
    ("[(0,), (" + "9" * 3900 + ",)]", "digits"),
    ("[(0,), (1,)] + [(2,)]", "'+'"),
    ("__import__('os').system('true')", "'_'"),
    ("[(0,), ()]", "empty path"),
    ("[(0,), 1]", "outside any path"),
    ("[(0,) (1,)]", "after a path"),
    ("[(0,), (1,)", "the end"),
    ("[(0,), (1,)]]", "after the list"),
    ("[(0, 1]]", "')'"),
    ("[(0,,1)]", "expected a number"),
    ("[,]", "expected a path"),
    ("", "non-empty"),
    ("[]", "non-empty"),
    ("[(0,), (\x00,)]", "U+0000"),
    ("[(0,), (\u202e1,)]", "U+202E"),  # a right-to-left override
    ("[(0,), (\u0661,)]", "'\u0661'"),  # an Arabic-Indic one: a digit to str.isdigit, not a rank here
    ("[(0,)]" + " " * 4000, "at most"),
    ("[(0,), (0, 0), (5, 0)]", "hangs from (5,)"),  # a parent missing
    ("[(0,), (0,)]", "twice"),
    ("[(0,), (10,)]", "0..9"),
    ("[(0,), (0, 0, 0, 0, 0)]", "only 4 heads"),
    (repr([(i,) for i in range(10)] + [(i, j) for i in range(10) for j in range(6)]), "at most 64"),
]


@pytest.mark.parametrize("text, needle", HOSTILE, ids=[f"{i}-{ascii(t[:12])}" for i, (t, _) in enumerate(HOSTILE)])
def test_hostile_choices_text_is_one_line_not_a_crash(text, needle):
    with pytest.raises(SpecVizError) as e:
        parse_choices(text, 4)
    message = str(e.value)
    assert "\n" not in message and len(message) < 300
    assert needle.lower() in message.lower(), message


@pytest.mark.fast  # model-free
def test_a_long_hostile_text_is_refused_before_it_is_read():
    start = time.perf_counter()
    for n in (5_000, 100_000, 10_000_000):
        with pytest.raises(SpecVizError, match="at most"):
            parse_choices("-" * n + "1", 4)
    assert time.perf_counter() - start < 1.0


# ---------------------------------------------------------------- typical acceptance (no model)
@pytest.mark.fast  # model-free
def test_typical_accepts_a_token_the_exact_rule_rejects_with_positive_probability():
    p = torch.tensor([[0.5, 0.3, 0.2], [0.2, 0.3, 0.5]])
    tree = TokenTree((1,), (-1,))  # one drafted token, 1, deterministic (one-hot q)
    # exact rule: accepted with probability min(1, p(1)/q(1)) = 0.3, so rejected 70 % of the time
    exact = [verify_tree(tree, p, False, torch.Generator().manual_seed(s)).path for s in range(200)]
    assert 0 < sum(1 for path in exact if path) < 200
    # typical: threshold min(0.09, 0.3 exp(-H(p))) = 0.09 < 0.3: accepted on every seed
    assert typical_threshold(p[0], 0.09, 0.3) == pytest.approx(0.09)
    for s in range(20):
        v = verify_tree_typical(tree, p, False, torch.Generator().manual_seed(s), (0.09, 0.3))
        assert v.path == (0,) and v.origin == "bonus"
    # so its first token is 1 with certainty: TV from p = (0.5 + 0.7 + 0.2) / 2
    assert first_token_tv(tree, p, (0.09, 0.3)) == pytest.approx(0.7)


@pytest.mark.fast  # model-free
def test_typical_keeps_the_longest_passing_path_and_rejects_unlikely_tokens():
    # rows: the root, then nodes 0..3. Root children 1 (p 0.55) and 2 (p 0.4) both pass (threshold 0.258);
    # under 1 the child 1 has p 0.05 (fails), under 2 the child 2 has p 0.8 (passes)
    p = torch.tensor([[0.05, 0.55, 0.4], [0.9, 0.05, 0.05], [0.1, 0.1, 0.8], [0.7, 0.2, 0.1], [0.1, 0.8, 0.1]])
    tree = TokenTree((1, 2, 1, 2), (-1, -1, 0, 1))
    v = verify_tree_typical(tree, p, False, torch.Generator(), (0.3, 0.6))
    # Medusa keeps the LONGEST passing path (2, 2), not the first passing child's; then the bonus (argmax)
    assert v.path == (1, 3) and v.token == 1 and v.origin == "bonus"
    assert [r.node for r in v.rulings] == [0, 1, 3]  # the children tried along the kept path
    low = torch.tensor([[0.98, 0.01, 0.01], [1 / 3] * 3])
    assert verify_tree_typical(TokenTree((1,), (-1,)), low, False, torch.Generator(), (0.09, 0.3)).path == ()


@pytest.mark.fast  # model-free
def test_typical_breaks_ties_by_likelihood_and_ends_with_the_argmax_as_medusa_does():
    """evaluate_posterior (fast=True, medusa_generate's default): among the longest passing paths the one with
    the highest sum of log p; the next token is the base head's argmax, at every seed (no draw from p)."""
    # root children 0 (p 0.3) and 1 (p 0.6) both pass; under each, one child passes: 2 (p 0.5) under 0, 0 (p 0.4)
    # under 1. Both paths are 2 long: log(0.3 * 0.5) < log(0.6 * 0.4), so (1, 0) wins though listed second
    p = torch.tensor([[0.3, 0.6, 0.1], [0.2, 0.3, 0.5], [0.4, 0.35, 0.25], [0.1, 0.2, 0.7], [0.6, 0.3, 0.1]])
    tree = TokenTree((0, 1, 2, 0), (-1, -1, 0, 1))
    outs = {(verify_tree_typical(tree, p, False, torch.Generator().manual_seed(s), (0.2, 0.9)).path,
             verify_tree_typical(tree, p, False, torch.Generator().manual_seed(s), (0.2, 0.9)).token)
            for s in range(20)}
    assert outs == {((1, 3), 0)}  # node 3's row: argmax 0, whatever the seed
    # nothing passes: the argmax of p, not a draw from it (a draw would give 1 or 2 on some seeds)
    flat = torch.tensor([[0.4, 0.35, 0.25], [1 / 3] * 3])
    tokens = {verify_tree_typical(TokenTree((2,), (-1,)), flat, False,
                                  torch.Generator().manual_seed(s), (0.3, 1.0)).token
              for s in range(30)}
    assert tokens == {0}
    assert first_token_distribution(TokenTree((2,), (-1,)), flat, (0.3, 1.0)).tolist() == [1.0, 0.0, 0.0]


@pytest.mark.fast  # model-free
def test_typical_under_greedy_is_exact_match():
    """At temperature 0 Medusa's evaluate_posterior takes the exact-match branch: a non-argmax token that clears
    the typical threshold is NOT accepted, so greedy + typical stays plain greedy."""
    p = torch.tensor([[0.5, 0.3, 0.2], [0.2, 0.3, 0.5]])
    tree = TokenTree((1,), (-1,))  # p(1) = 0.3 clears min(0.09, ...) but is not the argmax
    v = verify_tree_typical(tree, p, True, torch.Generator(), (0.09, 0.3))
    assert v.path == () and v.token == 0 and v.origin == "correction"
    assert verify_tree_typical(TokenTree((0,), (-1,)), p, True, torch.Generator(), (0.09, 0.3)).path == (0,)


@pytest.mark.parametrize("seed", range(5))
def test_first_token_tv_is_zero_for_the_exact_rule_by_enumeration(seed):
    g = torch.Generator().manual_seed(seed)
    vocab = 6
    tree = TokenTree((0, 3, 5, 1, 2), (-1, -1, -1, 0, 1))  # three root children, one-hot q
    p = torch.softmax(torch.randn(len(tree) + 1, vocab, generator=g, dtype=torch.float64) * 2, -1)
    assert first_token_tv(tree, p) < 1e-12
    dist = first_token_distribution(tree, p)
    assert float(dist.sum()) == pytest.approx(1.0, abs=1e-12)
    assert first_token_tv(tree, p, (0.09, 0.3)) >= 0.0


# ---------------------------------------------------------------- on the embedded model
PROMPTS = ["Write a Python function that reverses a list.", "Why is the sky blue?", "List three uses of copper."]
N = 24


@pytest.fixture(scope="module")
def references(models, greedy):
    return [(chat(models.tokenizer, text), greedy(chat(models.tokenizer, text), N)) for text in PROMPTS]


def test_shipped_heads_load_with_their_default_tree(models):
    assert models.medusa is not None, "models/medusa is missing"
    heads = models.medusa
    assert heads.num_heads in (3, 4) and heads.read_layer == models.target.config.num_hidden_layers
    paths = tree_from_choices(heads.choices, 99, heads.num_heads)
    assert len(paths) == len(heads.choices) >= 8  # the shipped list is a tree, parents first


@pytest.mark.parametrize("choices", [None, CHOICES, ((0,), (0, 0), (0, 0, 0)), ((0,), (1,), (2,), (3,))],
                         ids=["shipped", "small", "chain", "wide"])
def test_medusa_tree_greedy_equals_plain_greedy(models, references, choices):
    for ids, ref in references:
        drafter = MedusaDrafter(models.medusa, choices)
        events, result = run_steps(tree_speculative_steps(models.target, drafter, models.tokenizer, ids, N,
                                                          budget=16, depth=4))
        assert result.token_ids == ref
        assert [t for e in events for t in e.emitted] == ref
        done = 0
        for e in events:  # the first cycle too drafts: the prefill pass brought the states
            # none when 1 token is left
            assert (1 if done < N - 1 else 0) <= len(e.nodes) <= min(16, len(drafter.choices))
            done += len(e.emitted)
        assert result.counters.tokens / result.counters.verify_passes > 1.0


def test_untrained_heads_are_still_exact(models, references):
    ids, ref = references[0]
    fresh = untrained_heads(models.target, SHIPPED_DRAFT, 4)
    _, result = run_steps(tree_speculative_steps(models.target, MedusaDrafter(fresh), models.tokenizer, ids, N))
    assert result.token_ids == ref


def test_shipped_heads_beat_untrained_heads_on_a_held_out_prompt(models):
    """Fails if untrained (zero-block) heads were shipped: each would predict the NEXT token, not k ahead."""
    ids = evaluation_prompts(models.tokenizer, 1)[0]  # a held-out subject, never trained on
    seq, states = greedy_states(models.target, ids, 48)
    fresh = untrained_heads(models.target, SHIPPED_DRAFT, models.medusa.num_heads)
    trained, untrained = (head_accuracy(models.medusa, states, len(ids), seq),
                          head_accuracy(fresh, states, len(ids), seq))
    # measured on this (hard) prompt, deterministic (greedy): head 1 top-1 0.17 vs 0.00 untrained; top-5
    # over the four heads 0.16 vs 0.07 (12 held-out prompts, models/README.md: head 1 top-1 0.31)
    top1, top1_fresh = trained[:, 0] / trained[:, -1], untrained[:, 0] / untrained[:, -1]
    assert float(top1[0]) > float(top1_fresh[0]) + 0.1  # head 1: the next drafted token
    top5, top5_fresh = trained[:, :5].sum(-1) / trained[:, -1], untrained[:, :5].sum(-1) / untrained[:, -1]
    assert float(top5.mean()) > float(top5_fresh.mean()) + 0.05


def test_typical_acceptance_runs_in_the_engine_and_is_marked(models, references):
    ids, _ = references[1]
    events, result = run_steps(tree_speculative_steps(models.target, MedusaDrafter(models.medusa), models.tokenizer,
                                                      ids, 16, cfg=SamplingConfig(1.0, seed=3), typical=(0.09, 0.3)))
    assert events and all(e.verify_mode == "typical" for e in events)
    assert [t for e in events for t in e.emitted] == result.token_ids and len(result.token_ids) <= 16


def test_greedy_with_typical_acceptance_equals_plain_greedy(models):
    """Issue 35: with the T = 1 softmax as p, typical acceptance under greedy accepted non-argmax tokens and this
    prompt's output left greedy at token 7; Medusa verifies by exact match at temperature 0."""
    ids = chat(models.tokenizer, "Explain why the sky is blue in two sentences.")
    ref = run_steps(plain_steps(models.target, models.tokenizer, ids, 32))[1].token_ids
    events, result = run_steps(tree_speculative_steps(models.target, MedusaDrafter(models.medusa), models.tokenizer,
                                                      ids, 32, budget=16, depth=4, typical=(0.09, 0.3)))
    assert result.token_ids == ref
    assert all(e.verify_mode == "greedy" for e in events)


def test_the_quoted_typical_tv_is_measured_for_the_rule_run_now(models):
    """models/medusa/typical_tv.json (quoted on the Tree page and in the model card) must be the distance of the
    rule verify_tree_typical runs today: recompute its first prompts and compare."""
    from specviz.prompting import prompt_ids
    from specviz.prompting import held_out_prompts
    from specviz.labs.tree_lossless import load_typical_tv, measure_typical_tv

    saved = load_typical_tv()
    assert saved is not None and saved["prompts"] == len(saved["typical_tv"])
    texts = held_out_prompts()[::saved["stride"]][:3]
    now = measure_typical_tv(models, [prompt_ids(models.tokenizer, t) for t in texts], saved["epsilon"], saved["delta"],
                             saved["budget"], saved["depth"])
    assert now["typical_tv"] == pytest.approx(saved["typical_tv"][:3], abs=2e-3)
    assert now["exact_tv_max"] < 1e-4 and saved["typical_tv_mean"] == pytest.approx(
        sum(saved["typical_tv"]) / saved["prompts"], abs=1e-3)
