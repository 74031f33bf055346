"""Staged speculation's time, stage by stage (specviz/labs/stages.py), and the Drafter comparison page's sections
for staged and suffix decoding."""
import json
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from conftest import chat
from specviz.figures.drafters import stage_bars, suffix_bars
from specviz.labs.stages import Timed, staged_breakdown, staged_cell, staged_verdict
from test_staged import REFACTOR

APP = str(Path(__file__).resolve().parent.parent / "app.py")


@pytest.mark.fast
def test_timed_counts_only_propose_and_delegates_the_rest():
    class Slow:
        name, passes = "slow", 3

        def propose(self, *args):
            import time
            time.sleep(0.02)
            return [1], None

    t = Timed(Slow())
    assert t.propose([0], 1, None, None) == ([1], None) and t.name == "slow" and t.passes == 3
    assert 0.015 < t.seconds < 0.5


@pytest.mark.fast
def test_stage_and_suffix_figures():
    rows = [{"run": "token draft", "n-gram lookup s": 0.0, "draft model s": 1.0, "target verify s": 2.0},
            {"run": "staged: n-gram → token draft", "n-gram lookup s": 0.01,
             "draft model s": 0.4, "target verify s": 2.0}]
    fig = stage_bars({"rows": rows, "plain s": 3.5})
    assert [t.name for t in fig.data] == ["n-gram lookup", "draft model", "target verify"]
    assert list(fig.data[1].x) == [1.0, 0.4, 0] and list(fig.data[2].x) == [2.0, 2.0, 3.5]
    res = {"requests": 4, "k": 4, "rows": {"plain greedy": {"tokens_per_verify_pass": 1.0, "speedup_vs_plain": 1.0},
                                           "suffix decoding": {"tokens_per_verify_pass": 2.3, "speedup_vs_plain": 1.5}}}
    fig = suffix_bars(res)
    assert list(fig.data[0].y) == [1.0, 2.3] and fig.data[1].text[1] == "1.50×"


def test_staged_breakdown_on_a_refactoring_prompt(models):
    out = staged_breakdown(models, chat(models.tokenizer, REFACTOR), k=6, max_new=32)
    token, staged = out["rows"]
    assert token["identical"] and staged["identical"]
    assert staged["draft forwards"] < token["draft forwards"]
    assert staged["first-stage accepted"] > 0 and token["first-stage guesses"] is None
    for r in out["rows"]:
        parts = r["n-gram lookup s"] + r["draft model s"] + r["target verify s"]
        assert abs(parts - r["total s"]) < 1e-6 and min(r["draft model s"], r["target verify s"]) > 0


def test_drafter_page_runs_the_staged_section():
    at = AppTest.from_file(APP, default_timeout=600)
    at.run()
    at.switch_page("pages/5_Drafter_comparison.py").run()
    assert not at.exception, at.exception
    at.button(key="dc_staged_run").click().run()
    assert not at.exception, at.exception
    specs = [json.loads(e.proto.spec) for e in at.get("plotly_chart")]
    stage = next(s for s in specs if s["layout"]["title"]["text"].startswith("Where the time goes"))
    assert [t["name"] for t in stage["data"]] == ["n-gram lookup", "draft model", "target verify"]
    assert len(stage["data"][1]["x"]) == 3  # token draft, staged, plain greedy
    table = at.table[0].value  # every value formatted for reading: no raw floats, None or True
    cells = [str(v) for v in table.to_numpy().ravel()]
    assert all(len(c) < 16 for c in cells) and "None" not in cells and "True" not in cells, cells
    said = next(c.value for c in at.caption if "Seconds are measured" in c.value)
    assert "draft model's time" in said
    k = at.slider(key="dc_k").value  # the staged run takes the page's K, and says it (item 37 of issue 35)
    assert said.startswith(f"K = {k}, {at.slider(key='dc_max').value} new tokens")


@pytest.mark.fast
def test_staged_table_cells_and_the_verdict_say_what_was_measured():
    assert [staged_cell(n, v) for n, v in [("total s", 3.698433613), ("draft forwards", 109.0),
            ("first-stage guesses", None),
            ("identical", True), ("speedup vs plain greedy", 1.2345), ("tokens per verify pass", 3.0)]] == \
        ["3.698 s", "109", "—", "yes", "1.23×", "3.00"]
    alone = {"draft model s": 0.731, "draft forwards": 120, "identical": True}
    same = staged_verdict([alone, {"draft model s": 0.724, "draft forwards": 104, "identical": True}])
    assert "about the same" in same and "whole gain" not in same
    fell = staged_verdict([alone, {"draft model s": 0.30, "draft forwards": 40, "identical": True}])
    assert "fell from 0.73 s to 0.30 s (120 → 40 draft forwards)" in fell
    rose = staged_verdict([alone, {"draft model s": 0.90, "draft forwards": 104, "identical": True}])
    assert "rose from 0.73 s to 0.90 s despite fewer draft forwards" in rose
