"""Issue 38, item 6: bit-exact vs distribution-lossless. Where two runs part, the margins read there, the chart's
data; on a tiny random Llama in fp32 and bf16, the four runs end to end (the embedded model runs in the page test)."""
import copy

import pytest
import torch

from specviz.figures.precision import margin_chart
from specviz.labs.precision import PAIRS, RUNS, compare, first_difference, precision_runs, top2


class Tok:
    def convert_ids_to_tokens(self, i):
        return f"t{i}"

    def decode(self, ids, **kw):
        return "".join(f"t{i}" for i in ids)


@pytest.mark.fast
def test_first_difference():
    assert first_difference([1, 2, 3], [1, 2, 3]) is None
    assert first_difference([1, 2, 3], [1, 5, 3]) == 1
    assert first_difference([1, 2], [1, 2, 7]) == 2  # one ended (end of sequence) where the other went on
    assert first_difference([], []) is None


def fake_result():
    runs = {"fp32 plain": [1, 2, 3, 4], "fp32 speculative": [1, 2, 3, 4], "bf16 plain": [1, 2, 9, 9],
            "bf16 speculative": [1, 2, 9, 8]}
    m = lambda xs: [{"top1": 0, "top2": 1, "margin": x} for x in xs]  # noqa: E731
    margins = {"fp32": m([3.0, 1.5, 0.01, 2.0]), "bf16": m([3.1, 1.4, 0.0, 2.2]),
               "bf16 own": m([3.1, 1.4, 0.05, 0.002])}
    return runs, margins


@pytest.mark.fast
def test_compare_reads_each_pairs_margin_where_it_parts():
    runs, margins = fake_result()

    pairs = compare(runs, margins, Tok())
    assert [(p["a"], p["b"]) for p in pairs] == list(PAIRS)
    same, bf16, across = pairs
    assert same["position"] is None and same["margin"] == {}  # fp32 speculative bit-identical to fp32 plain
    assert bf16["position"] == 3 and bf16["margin"] == {"bf16": 0.002}  # read on bf16 plain's own text
    assert across["position"] == 2 and across["margin"] == {"fp32": 0.01, "bf16": 0.0}  # both on the same prefix


@pytest.mark.fast
def test_margin_chart_marks_where_pairs_part():
    runs, margins = fake_result()
    pairs = compare(runs, margins, Tok())
    res = {"runs": runs, "margins": margins, "pairs": pairs, "texts": {"fp32 plain": ["a", "b", "c", "d"]}}
    fig = margin_chart(res).to_plotly_json()
    bars, dots = fig["data"]
    assert list(bars["x"]) == [1, 2, 3, 4] and list(bars["customdata"]) == [3.0, 1.5, 0.01, 2.0]
    assert min(dots["y"]) == pytest.approx(1e-3)  # a tie (margin 0) drawn at the log axis' floor, its value kept
    assert [s["x0"] for s in fig["layout"]["shapes"]] == [4, 3]  # 1-based positions of the two pairs that part
    assert "2 of 3 pairs part" in fig["layout"]["title"]["text"]
    assert fig["layout"]["yaxis"]["type"] == "log"


def test_four_runs_on_a_tiny_llama_in_fp32_and_bf16(tiny_llama):
    from specviz.drafters import NgramDrafter

    model, tok = tiny_llama
    half = copy.deepcopy(model).to(torch.bfloat16)
    prompt = tok("The cat sat on the mat. The cat sat on")["input_ids"]
    res = precision_runs(model, half, NgramDrafter, tok, prompt, 12, k=3)
    assert set(res["runs"]) == set(RUNS) and all(len(v) == 12 for v in res["runs"].values())
    for pr in res["pairs"]:
        assert pr["position"] == first_difference(res["runs"][pr["a"]], res["runs"][pr["b"]])
    assert res["margins"]["fp32"] == top2(model, prompt, res["runs"]["fp32 plain"])
    # fp32 plain is the argmax of its own margins' top1 at every position (the one-pass forward agrees with the steps
    # wherever the margin is not within rounding)
    tops = [m["top1"] for m in res["margins"]["fp32"]]
    agree = [t == x or m["margin"] < 1e-4 for t, x, m in zip(tops, res["runs"]["fp32 plain"], res["margins"]["fp32"])]
    assert all(agree)
