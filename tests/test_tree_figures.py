"""Tree figures on a synthetic TreeCycle: the tree has one marker per node coloured by verdict and the
accepted path's edges drawn thick; the mask heatmap's rows carry the position ids."""
import pytest

from specviz.figures.tree import (break_even_figure, chain_vs_tree_figure, fit_figure, mask_figure, tree_figure,
                                  verify_cost_figure)
from specviz.trace import CacheState, DepthVerdict, TreeCycle, TreeNode

pytestmark = pytest.mark.fast


def cycle():
    parents, tokens, verdicts = (-1, -1, 0, 0), ("a", "b", "c", "d"), ("accepted", "rejected", "rejected", "accepted")
    depth = (1, 1, 2, 2)
    nodes = tuple(TreeNode(i, 100 + i, t, a, d, 9 + d, 0.5, 0.4, v, None, None)
                  for i, (t, a, d, v) in enumerate(zip(tokens, parents, depth, verdicts)))
    mask = ((True, False, False, False), (False, True, False, False),
            (True, False, True, False), (True, False, False, True))
    return TreeCycle(cycle=0, context_len=10, drafter="x", nodes=nodes, mask=mask, position_ids=(10, 10, 11, 11),
                     verify_positions=5, path=(0, 3), accepted=2, new_token=7, new_text="z", new_origin="bonus",
                     residual_top=(), residual_fallback=False, target_cache=CacheState(14, 12), draft_cache=None,
                     emitted=(100, 103, 7), origins=("accepted", "accepted", "bonus"), verify_mode="greedy",
                     draft_passes=2, verdicts=(DepthVerdict(0, True), DepthVerdict(1, True)))


def test_tree_figure_colours_and_path():
    fig = tree_figure(cycle())
    markers = {t.name: list(t.text) for t in fig.data if t.mode == "markers+text"}
    assert markers["accepted"] == ["a", "d"] and markers["rejected"] == ["b", "c"]
    thick = [t for t in fig.data if t.mode == "lines" and t.line.width == 4]
    assert len(thick) == 1 and list(thick[0].x).count(None) == 2  # one trace, two segments: root -> a, a -> d
    thin = [t for t in fig.data if t.mode == "lines" and t.line.color == "#cccccc"]
    assert len(thin) == 1 and list(thin[0].x).count(None) == 2  # b and c
    # the bonus token the target adds after the path is drawn too (not a node of the tree), past d's depth
    assert markers["bonus (the target's own token)"] == ["z"]
    star = next(t for t in fig.data if t.name and t.name.startswith("bonus"))
    assert star.x[0] == 3 and star.marker.symbol == "star"
    # the accepted path's labels sit above its thick line, the others beside their node
    assert list(next(t for t in fig.data if t.name == "accepted").textposition) == ["top right", "top right"]
    # the legend above the plot: Plotly's default place for a horizontal one is over the axis title
    assert fig.layout.legend.y >= 1 and fig.layout.legend.yanchor == "bottom" and fig.layout.xaxis.title.text


def test_mask_figure_rows_carry_position_ids():
    fig = mask_figure(cycle(), context_tail=2)
    hm = fig.data[0]
    assert list(hm.y) == ["0:a (pos 10)", "1:b (pos 10)", "2:c (pos 11)", "3:d (pos 11)"]
    assert [list(r) for r in hm.z] == [[1, 1, 1, 0, 0, 0], [1, 1, 0, 1, 0, 0], [1, 1, 1, 0, 1, 0], [1, 1, 1, 0, 0, 1]]


def test_hovering_a_node_shows_its_ancestors_p_q_and_verdict():
    fig = tree_figure(cycle(), root_text="ctx")
    hover = {t.name: list(t.hovertext) for t in fig.data if t.mode == "markers+text" and t.hovertext}
    d = hover["accepted"][1]
    assert "path: ctx → a → d" in d and "p 0.400, q 0.500" in d and "<b>accepted</b>" in d
    b = hover["rejected"][0]
    assert "path: ctx → b" in b and "<b>rejected</b>" in b and "position id 10" in b


def test_mask_columns_carry_position_ids_under_the_heatmap():
    fig = mask_figure(cycle(), context_tail=2)
    assert list(fig.data[0].x) == ["ctx<br>pos 8", "ctx<br>pos 9", "0:a<br>pos 10", "1:b<br>pos 10",
                                   "2:c<br>pos 11", "3:d<br>pos 11"]


CURVE = {1: {"median": 20.0, "lo": 19.0, "hi": 22.0}, 2: {"median": 21.0, "lo": 20.0, "hi": 25.0},
         4: {"median": 24.0, "lo": 23.0, "hi": 24.0}}


def test_verify_cost_figure_measured_with_spread_and_the_flat_line():
    fig = verify_cost_figure(CURVE)
    measured, flat = fig.data
    assert list(measured.x) == [1, 2, 4] and list(measured.y) == [20.0, 21.0, 24.0]
    assert list(measured.error_y.array) == [2.0, 4.0, 0.0] and list(measured.error_y.arrayminus) == [1.0, 1.0, 1.0]
    assert list(flat.y) == [20.0, 20.0, 20.0]


def test_chain_vs_tree_figure_puts_each_measure_side_by_side():
    rows = [{"name": "chain", "tokens per verify pass": 2.0, "target passes": 10, "verify ms per token": 12.0,
             "flat-v verify ms per token": 10.0, "seconds": 1.5, "seconds range": (1.4, 1.7)},
            {"name": "tree", "tokens per verify pass": 3.0, "target passes": 7, "verify ms per token": 15.0,
             "flat-v verify ms per token": 6.7, "seconds": 1.8, "seconds range": (1.8, 1.9)}]
    fig = chain_vs_tree_figure(rows)
    ys = [list(t.y) for t in fig.data]
    assert ys == [[2.0, 3.0], [10, 7], [12.0, 15.0], [10.0, 6.7], [1.5, 1.8]]
    assert list(fig.data[0].x) == ["chain", "tree"]
    assert [round(v, 6) for v in fig.data[4].error_y.array] == [0.2, 0.1]


def test_break_even_and_fit_figures():
    needed = [{"budget": 4, "needed tau here": 2.5, "needed tau, flat v": 2.0},
              {"budget": 8, "needed tau here": 3.1, "needed tau, flat v": 2.0}]
    fig = break_even_figure(needed, [("tree N=8", 8, 2.8)])
    assert list(fig.data[0].y) == [2.5, 3.1] and list(fig.data[1].y) == [2.0, 2.0]
    assert list(fig.data[2].x) == [8] and list(fig.data[2].y) == [2.8]
    fit = fit_figure(["a", "other"], [30, 70], [33.0, 67.0], "t")
    assert list(fit.data[0].y) == [30, 70] and list(fit.data[1].y) == [33.0, 67.0]
    assert fit.layout.yaxis.type != "log" and fit.layout.legend.y >= 1.0  # the legend above the plot, clear of labels
    tail = fit_figure(["a", "b", "other"], [7600, 60, 40], [7580.0, 70.0, 50.0], "t")
    assert tail.layout.yaxis.type == "log"  # one big bin and a tail: counts on a log axis, the tail's fit readable


def test_mask_columns_stay_readable_with_many_nodes():
    """Past a dozen columns the labels under them are the node index over its position id (no token text to
    run into the next column); the hover still names both ends."""
    import dataclasses
    base = cycle()
    nodes = tuple(dataclasses.replace(base.nodes[0], index=i, parent=-1, text=f"tok{i}") for i in range(12))
    big = dataclasses.replace(base, nodes=nodes, mask=tuple(tuple(i == j for j in range(12)) for i in range(12)),
                              position_ids=(10,) * 12, path=(0,))
    hm = mask_figure(big, context_tail=2).data[0]
    assert list(hm.x[:3]) == ["ctx<br>8", "ctx<br>9", "0<br>10"] and all("tok" not in x for x in hm.x)
    assert hm.customdata[0][2] == "0:tok0 (pos 10) sees 0:tok0 (pos 10)" and "does not see" in hm.customdata[0][3]


def test_sibling_tokens_that_differ_only_by_a_space_are_told_apart():
    import dataclasses
    c = cycle()
    c = dataclasses.replace(c, nodes=(dataclasses.replace(c.nodes[0], text=" hash"),
                                      dataclasses.replace(c.nodes[1], text="hash"))
                            + c.nodes[2:])
    markers = {t.name: list(t.text) for t in tree_figure(c).data if t.mode == "markers+text"}
    assert markers["accepted"] == ["␣hash", "d"] and markers["rejected"] == ["hash", "c"]


def crowded_cycle():
    """Node 0 (accepted) has two rejected children, node 1 one: node 0 sits between its children, so the
    target's token half a row below node 0 would land on its second child (as at N = 32, depth 8)."""
    parents, tokens = (-1, -1, 0, 0, 1), ("a", "b", "c", "d", "e")
    verdicts = ("accepted", "rejected", "rejected", "rejected", "not reached")
    depth = (1, 1, 2, 2, 2)
    nodes = tuple(TreeNode(i, 100 + i, t, a, d, 9 + d, 0.5, 0.4, v, None, None)
                  for i, (t, a, d, v) in enumerate(zip(tokens, parents, depth, verdicts)))
    mask = tuple(tuple(j == i or j == parents[i] for j in range(5)) for i in range(5))
    return TreeCycle(cycle=0, context_len=10, drafter="x", nodes=nodes, mask=mask, position_ids=(10, 10, 11, 11, 11),
                     verify_positions=6, path=(0,), accepted=1, new_token=7, new_text="z", new_origin="correction",
                     residual_top=(), residual_fallback=False, target_cache=CacheState(15, 11), draft_cache=None,
                     emitted=(100, 7), origins=("accepted", "correction"), verify_mode="greedy",
                     draft_passes=2, verdicts=(DepthVerdict(0, True), DepthVerdict(1, False)))


def test_the_targets_token_never_covers_a_node():
    fig = tree_figure(crowded_cycle())
    star = next(t for t in fig.data if t.name and t.name.startswith("correction"))
    x, y = star.x[0], star.y[0]
    column = [(px, py) for t in fig.data
              if t.mode == "markers+text" and t.name in ("accepted", "rejected", "not reached")
              for px, py in zip(t.x, t.y) if px == x]
    assert len(column) == 3  # c, d and e share depth 2 with the star
    assert all(abs(py - y) >= 0.75 for _, py in column), (y, column)  # over 20 px at the least height
    edge = next(t for t in fig.data if t.mode == "lines" and t.line.dash == "dot")
    accepted = next(t for t in fig.data if t.name == "accepted")
    assert list(edge.y) == [accepted.y[0], y]  # drawn from the last accepted node, a


def test_verdicts_differ_in_shape_not_only_in_colour():
    fig = tree_figure(crowded_cycle())
    symbols = {t.name: t.marker.symbol for t in fig.data if t.name in ("accepted", "rejected", "not reached")}
    assert len(set(symbols.values())) == 3, symbols
    assert symbols["accepted"] != symbols["rejected"]
