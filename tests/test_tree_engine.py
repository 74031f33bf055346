"""Tree speculation on the embedded model: greedy output token-identical to plain greedy for several tree
shapes, budgets and depths (EAGLE-2 dynamic trees, static trees from chain drafters), and the trace holds
what a viewer needs (mask, position ids, the path, cache lengths before/after the gather)."""
import math

import pytest

from conftest import chat
from specviz.drafters import make_drafter
from specviz.sampling import SamplingConfig
from specviz.engine.loop import run_steps
from specviz.engine.tree import tree_speculative_steps

PROMPT = "Write a Python function that reverses a list."
N = 24


@pytest.fixture(scope="module")
def reference(models, greedy):
    ids = chat(models.tokenizer, PROMPT)
    return ids, greedy(ids, N)


CASES = [("eagle2", 16, 6, 1), ("eagle2", 8, 3, 1), ("eagle2", 4, 1, 1), ("feature", 99, 1, 2),
         ("feature", 99, 6, 2), ("token", 99, 2, 3), ("ngram", 99, 4, 1)]


@pytest.mark.parametrize("kind,budget,depth,width", CASES, ids=[f"{c[0]}-N{c[1]}-D{c[2]}-W{c[3]}" for c in CASES])
def test_tree_greedy_equals_plain_greedy(models, reference, kind, budget, depth, width):
    ids, ref = reference
    events, result = run_steps(tree_speculative_steps(models.target, make_drafter(kind, models), models.tokenizer,
                                                      ids, N, budget=budget, depth=depth, width=width))
    assert result.token_ids == ref
    assert [t for e in events for t in e.emitted] == result.token_ids  # the trace replays to the run
    c = result.counters
    assert c.verify_passes == len(events) and c.tokens == len(ref)
    for e in events:
        assert len(e.nodes) <= (budget if kind == "eagle2" else depth * width)
        assert max((n.depth for n in e.nodes), default=0) <= depth
        assert e.accepted == len(e.path) and all(e.nodes[i].verdict == "accepted" for i in e.path)
        # the gather keeps the context and the accepted path; the verify pass filled context + every node
        assert e.target_cache.after == e.context_len + len(e.path)
        assert e.target_cache.before == e.context_len + len(e.nodes)
        assert e.position_ids == tuple(e.context_len - 1 + n.depth for n in e.nodes)
        assert all(e.mask[i][i] and (n.parent < 0 or e.mask[i][n.parent]) for i, n in enumerate(e.nodes))


def test_eagle2_tree_sampling_runs_and_stays_consistent(models, reference):
    ids, _ = reference
    cfg = SamplingConfig(temperature=0.8, seed=3)
    events, result = run_steps(tree_speculative_steps(models.target, make_drafter("eagle2", models), models.tokenizer,
                                                      ids, 16, budget=8, depth=3, cfg=cfg))
    assert len(result.token_ids) <= 16 and [t for e in events for t in e.emitted] == result.token_ids
    assert all(e.verify_mode == "sampling" for e in events)
    for e in events:
        tried = [n for n in e.nodes if n.verdict != "not reached"]
        assert all(n.u is not None for n in tried)


@pytest.mark.parametrize("budget,depth", [(2, 2), (4, 3), (5, 4)])
def test_eagle2_under_its_top_k_expands_only_its_budget_and_drafts_the_same_tree(models, budget, depth):
    """A budget under top_k (6) expands at most `budget` nodes per depth; the tree is the same as the best `budget`
    of the full top_k expansion (ranked by value, shallower first on ties: best_subtree), what a larger budget
    drafts and tree sizing reads off its record."""
    from specviz.drafters.eagle2 import best_subtree
    from specviz.engine.speculative import prefill_states
    from specviz.stepper import Stepper

    ids = chat(models.tokenizer, PROMPT)

    def drafted(b):
        drafter, rows = make_drafter("eagle2", models), []
        expand = drafter.expand
        drafter.expand = lambda nodes, *a: rows.append(len(nodes)) or expand(nodes, *a)
        prefill_states(Stepper(models.target, read_layers=drafter.read_layers), drafter, ids)
        before = drafter.passes
        tree = drafter.propose_tree(ids, b, depth, SamplingConfig(), None)
        return tree, drafter.passes - before, rows

    small, passes, rows = drafted(budget)
    large, _, rows_large = drafted(64)
    assert passes == depth  # the context, then one expansion per further depth
    assert rows == [min(6, budget)] * (depth - 1) and rows_large == [6] * (depth - 1)
    assert len(small) == budget and max(small.depths) <= depth
    value = []
    for a, q in zip(large.parents, large.q_token):  # EAGLE-2's value: log q summed down the path
        value.append((value[a] if a >= 0 else 0.0) + math.log(q))
    ref = best_subtree(list(large.tokens), list(large.parents), value, list(large.q_token), budget)
    if (small.tokens, small.parents) != (ref.tokens, ref.parents):
        # the same tree in exact arithmetic; drafted over fewer rows, the last bits may differ, which can only
        # matter where two candidates tie at the cut
        ranked = sorted(value, reverse=True)
        assert ranked[budget - 1] - ranked[budget] < 1e-4, (small.tokens, ref.tokens)
