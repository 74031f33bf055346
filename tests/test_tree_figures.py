"""Tree figures on a synthetic TreeCycle: the tree has one marker per node coloured by verdict and the
accepted path's edges drawn thick; the mask heatmap's rows carry the position ids."""
import pytest

from specviz.figures.tree import mask_figure, tree_figure
from specviz.trace import CacheState, DepthVerdict, TreeCycle, TreeNode

pytestmark = pytest.mark.fast


def cycle():
    parents, tokens, verdicts = (-1, -1, 0, 0), ("a", "b", "c", "d"), ("accepted", "rejected", "rejected", "accepted")
    depth = (1, 1, 2, 2)
    nodes = tuple(TreeNode(i, 100 + i, t, a, d, 9 + d, 0.5, 0.4, v, None, None)
                  for i, (t, a, d, v) in enumerate(zip(tokens, parents, depth, verdicts)))
    mask = ((True, False, False, False), (False, True, False, False), (True, False, True, False), (True, False, False, True))
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
    assert len(thick) == 2  # root -> a, a -> d


def test_mask_figure_rows_carry_position_ids():
    fig = mask_figure(cycle(), context_tail=2)
    hm = fig.data[0]
    assert list(hm.y) == ["0:a (pos 10)", "1:b (pos 10)", "2:c (pos 11)", "3:d (pos 11)"]
    assert [list(r) for r in hm.z] == [[1, 1, 1, 0, 0, 0], [1, 1, 0, 1, 0, 0], [1, 1, 1, 0, 1, 0], [1, 1, 1, 0, 0, 1]]
