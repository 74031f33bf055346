"""The hardware-sized tree (issue 48, item 2): what a smaller EAGLE-2 tree keeps of a recorded large one is what
EAGLE-2's own best_subtree keeps; on a synthetic record and cost curve, choose() picks the optimum worked out by
hand."""
import math
import random

import pytest

from specviz.drafters.eagle2 import best_subtree
from specviz.labs.tree_sizing import RecordedNode, choose, expected_tokens, feasible, kept

pytestmark = pytest.mark.fast


def random_tree(rng, n):
    """EAGLE-2-like candidates: each node's value is its parent's plus a log-probability <= 0."""
    parents, value, depth = [], [], []
    for i in range(n):
        a = rng.randrange(-1, i) if i else -1
        parents.append(a)
        value.append((value[a] if a >= 0 else 0.0) + math.log(rng.choice([1.0, 0.5, 0.25, 0.9, 0.1])))
        depth.append(1 if a < 0 else depth[a] + 1)
    return parents, value, depth


def test_kept_is_what_best_subtree_keeps():
    rng = random.Random(0)
    for _ in range(200):
        n = rng.randrange(1, 40)
        parents, value, depth = random_tree(rng, n)
        nodes = [RecordedNode(v, d, False) for v, d in zip(value, depth)]
        for budget in (1, 3, 8, n):
            tree = best_subtree(list(range(n)), parents, value, [1.0] * n, budget)
            ours = kept(nodes, budget, max(depth))
            assert sorted((value[i], depth[i]) for i in tree.tokens) == sorted((k.value, k.depth) for k in ours)


def chain_cycle():
    """A chain of 8 accepted nodes (values -0.1, -0.2, ...) and one rejected sibling at depth 1 worth -0.25."""
    return [RecordedNode(-0.1 * (d + 1), d + 1, True) for d in range(8)] + [RecordedNode(-0.25, 1, False)]


def test_choose_finds_the_optimum_worked_by_hand():
    # v(n) = 10 + 0.5 n ms up to 4 positions, then a cliff (100 ms); a draft pass costs 1 ms.
    #   (1, 1): 2 tokens / (1 + 11)    = 0.1667 per ms
    #   (2, 2): 3 tokens / (2 + 11.5)  = 0.2222   <- best: the chain's first two
    #   (3, 2): 3 tokens / (2 + 12)    = 0.2143   (the third node kept is the rejected sibling)
    #   (3, 3): 3 tokens / (3 + 12)    = 0.2      (the sibling still outranks the chain's third node)
    #   (4, 4) and larger: past the cliff
    cycles = [chain_cycle()] * 3
    verify = lambda n: 10 + 0.5 * n if n <= 4 else 100.0
    c = choose(cycles, verify, 1.0, budgets=range(1, 9), depths=range(1, 9))
    assert (c.budget, c.depth) == (2, 2) and c.tokens == 3 and c.ms == 13.5
    assert math.isclose(c.tokens_per_s, 1000 * 3 / 13.5)
    assert expected_tokens(cycles, 3, 3) == 3 and expected_tokens(cycles, 4, 4) == 4
    # with a flat cost the deepest, largest tree the record answers for wins
    c = choose(cycles, lambda n: 10.0, 0.0, budgets=range(1, 10), depths=range(1, 9))
    assert (c.budget, c.depth, c.tokens) == (9, 8, 9)
    assert [row[0] for row in c.curve] == list(range(1, 10))


def test_the_record_answers_only_for_trees_it_holds():
    cycles = [chain_cycle(), chain_cycle()[:3]]  # the second cycle recorded only 3 nodes
    assert feasible(cycles, 3, 8) and not feasible(cycles, 4, 8)
    c = choose(cycles, lambda n: 10.0, 0.0, budgets=range(1, 20), depths=range(1, 9))
    assert c.budget == 3
    with pytest.raises(ValueError):
        choose([], lambda n: 1.0, 1.0, [1], [1])


# ---------------------------------------------------------------- on the embedded model
def test_a_smaller_eagle2_tree_is_what_the_large_one_ranks_first(models):
    """The claim the sizing rests on, on the real drafter: the first cycle of a (8 nodes, depth 3) tree holds
    exactly the nodes that the (64, 8) tree's ranking puts first among depth <= 3 (its value and depth per node)."""
    from specviz.drafters import make_drafter
    from specviz.engine.tree import tree_speculative_steps
    from specviz.labs.tree_sizing import recorded_nodes, sizing_prompts

    ids = sizing_prompts(models.tokenizer, n=1)[0]

    def first_cycle(budget, depth):
        steps = tree_speculative_steps(models.target, make_drafter("eagle2", models), models.tokenizer, ids, 16,
                                       budget=budget, depth=depth)
        return recorded_nodes(next(steps))

    big, small = first_cycle(64, 8), first_cycle(8, 3)
    assert len(small) == 8 and len(big) == 64
    expected = sorted((round(n.value, 4), n.depth, n.accepted) for n in kept(big, 8, 3))
    assert sorted((round(n.value, 4), n.depth, n.accepted) for n in small) == expected


@pytest.fixture(scope="module")
def sized(models):
    """size_and_measure on one prompt, 24 tokens, v(n) at four sizes, one timed round: a quicker real run."""
    import specviz.labs.tree_sizing as TS

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(TS, "sizing_prompts", lambda tok, n=3, max_new=32: [TS.encode_prompt(
            tok, "Explain how a hash table works and why lookups are fast.", True, 8192, max_new)])
        mp.setattr(TS, "V_SIZES", (1, 4, 16, 65))  # interpolated between
        return TS.size_and_measure(models, max_new=24, rounds=1)


def test_size_and_measure_on_the_embedded_model(sized):
    """A choice inside the grid with a curve for every budget the record holds, and the chosen and default trees
    decode plain greedy's tokens exactly."""
    import specviz.labs.tree_sizing as TS

    out = sized
    c = out["choice"]
    assert 1 <= c.budget <= TS.RECORD_BUDGET and 1 <= c.depth <= min(c.budget, TS.RECORD_DEPTH)
    assert out["cycles"] >= 2 and out["draft_pass_ms"] > 0 and c.tokens >= 1
    assert c.tokens_per_s == max(row[4] for row in c.curve)
    assert [r["run"] for r in out["measured"]] == ["plain greedy", f"sized N={c.budget} D={c.depth}",
                                                   "default N=16 D=6"]
    assert all(r["identical"] and r["tokens"] == 24 for r in out["measured"])
    fig = TS_figure(c, out["measured"])
    assert any(t.name.startswith(f"chosen: N = {c.budget}") for t in fig.data)
    assert sum(t.name.endswith(", measured") for t in fig.data) == 2  # the two trees; plain greedy is a line
    top = max([row[4] for row in c.curve] + [r["tokens_per_s"] for r in out["measured"]])
    assert fig.layout.yaxis.range[1] >= 1.1 * top  # room over the highest point for the chosen point's label


def test_the_tree_page_sizes_on_its_button(sized, monkeypatch):
    """The Tree page opens without measuring; its button draws the curve, the chosen star and the measured table
    (the work is the fixture's real run, handed to the page instead of running it a second time)."""
    import json
    from pathlib import Path

    from streamlit.testing.v1 import AppTest

    import specviz.labs.tree_sizing as TS

    monkeypatch.setattr(TS, "size_and_measure", lambda models, **kw: sized)
    at = AppTest.from_file(str(Path(__file__).resolve().parent.parent / "app.py"), default_timeout=600).run()
    at.switch_page("pages/7_Tree_speculation.py").run()
    assert not at.exception, at.exception
    assert not any("sized for this machine" in json.loads(e.proto.spec)["layout"]["title"]["text"]
                   for e in at.get("plotly_chart") if json.loads(e.proto.spec)["layout"].get("title"))
    at.button(key="tr_sized").click().run()
    assert not at.exception, at.exception
    titles = [json.loads(e.proto.spec)["layout"].get("title", {}).get("text", "") for e in at.get("plotly_chart")]
    assert any("sized for this machine" in t for t in titles)
    c = sized["choice"]
    assert any(f"Chosen here: N = {c.budget}, depth {c.depth}" in m.value for m in at.markdown)
    assert at.button(key="tr_sized").label == "Measure again"


def TS_figure(c, rows):
    from specviz.figures.tree import sized_tree_figure

    return sized_tree_figure(c.curve, c.budget, rows)


def test_auto_budget_is_for_the_eagle2_tree_only():
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-m", "specviz", "decode", "--method", "speculative", "--tree", "chain",
                          "--tree-budget", "auto", "--prompt", "hi"], capture_output=True, text=True)
    assert out.returncode == 2 and "--tree-budget auto sizes the EAGLE-2 tree" in out.stderr
    assert "Traceback" not in out.stderr
    out = subprocess.run([sys.executable, "-m", "specviz", "decode", "--tree-budget", "many", "--prompt", "hi"],
                         capture_output=True, text=True)
    assert out.returncode == 2 and "a whole number or 'auto'" in out.stderr
