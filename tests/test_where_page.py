"""Issue 38, items 5, 6 and 7 on the Where the speedup goes page, under AppTest: the knobs and metrics tables, the
acceptance-rules chart at defaults and at the temperature's extremes, and the fp32/bf16 runs' chart. The page opens
without measuring anything (issue 45 D): each measurement is pressed for, and a setting changed after one marks the
figures stale until it is pressed again."""
import json
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from specviz.labs import knobs
from specviz.labs.acceptance_rules import BLOCK, RULES, TOKENWISE

ROOT = Path(__file__).resolve().parent.parent
PAGE = "pages/11_Where_speedup_goes.py"


def chart(at, key):
    return next(json.loads(e.proto.spec) for e in at.get("plotly_chart") if e.proto.id.endswith(key))


def no_errors(at):
    assert not at.exception, [e.value for e in at.exception]


def press(at, key):
    """A section's measure button. With a result already kept for these settings (measured by an earlier test in
    this process: the results are kept per server) the figures show at once and a button that would only repeat
    the same measurement is not drawn."""
    if any(b.key == key for b in at.button):
        at.button(key=key).click().run()
        no_errors(at)


@pytest.fixture
def page():
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=400)
    at.run()
    at.switch_page(PAGE).run()
    no_errors(at)
    return at


def test_the_page_opens_without_measuring_and_marks_changed_settings_stale(page):
    at = page
    # nothing measured on opening: the static knobs table, and a note under each button saying what it measures
    assert not at.get("plotly_chart") and len(at.table) == 1
    notes = " ".join(i.value for i in at.info)
    for label in ("Record the run", "Time the three runs", "Run fp32 and bf16, plain and speculative"):
        assert f"Press **{label}**" in notes
    assert not any("verify passes" in m.value for m in at.markdown)
    press(at, "ws_record")
    assert len(at.table) == 2 and not at.warning
    before = next(m.value for m in at.markdown if "verify passes" in m.value)
    at.slider(key="ws_k").set_value(2).run()
    no_errors(at)
    # the old run stays on screen, marked stale, and every section reading it says so
    assert any("Stale figures" in w.value and "K = 4" in w.value and "K = 2" in w.value for w in at.warning)
    assert next(m.value for m in at.markdown if "verify passes" in m.value) == before
    assert sum("⏳" in c.value for c in at.caption) == 3  # the metrics, the policies and the rules
    press(at, "ws_record")
    assert not at.warning and "K = 2" in next(m.value for m in at.markdown if "verify passes" in m.value)


def test_knobs_metrics_and_rules_at_defaults_and_extremes(page):
    at = page
    press(at, "ws_record")
    press(at, "ws_tl_again")
    knob_table, metric_table = at.table[0].value, at.table[1].value
    assert len(knob_table) == len(knobs.knob_rows())
    assert knob_table["what the source says (and where)"].str.contains(r"\[.*(?:github|docs|nvidia)").all()
    assert {"vLLM", "SGLang", "llama.cpp", "transformers", "TensorRT-LLM"} <= set(knob_table.index)
    shown = dict(zip(metric_table["metric"], metric_table["this run"]))
    assert all(v != "–" for v in shown.values()), shown  # the recorded run gives every metric a value
    # the page's numbers are the run's: tokens per verify pass (EAGLE's tau) as the summary line counts it
    summary = next(m.value for m in at.markdown if "verify passes" in m.value)
    tokens = int(summary.split(": ")[1].split(" tokens")[0])
    passes = int(summary.split(" in ")[1].split(" verify")[0])
    tau = next(v for k, v in shown.items() if k.startswith("tokens per verify pass"))
    assert float(tau) == pytest.approx(tokens / passes, abs=5e-4)

    # item 4: the timeline, three lanes on the same text; every bar a measured span; the lines say the same numbers
    tl = chart(at, "ws_timeline")
    lanes = {y for d in tl["data"] if d["type"] == "bar" for y in d["y"]}
    assert {y.split(" (")[0].split(",")[0] for y in lanes} == {"plain greedy", "chain K = 4", "EAGLE-2 tree"}
    verify = next(d for d in tl["data"] if d.get("name") == "target forward (verify)")
    assert all(w > 0 for w in verify["x"]) and all(b >= 0 for b in verify["base"])
    plus = [n["text"] for n in tl["layout"]["annotations"]]
    assert sum(int(t[1:]) for t in plus) == 2 * 24  # the chain's and the tree's 24 tokens, every cycle labelled
    per = chart(at, "ws_per_token")
    assert len(per["data"][0]["y"]) == 3
    lines = next(m.value for m in at.markdown if "plain greedy's one-token forward" in m.value)
    assert lines.count("×** plain greedy's one-token forward") == 2 and "parted" not in lines
    # extremes: the fewest tokens and the smallest and largest tree
    at.slider(key="ws_tl_new").set_value(4).run()
    at.slider(key="ws_tl_budget").set_value(2).run()
    no_errors(at)
    assert any("Stale figures" in w.value for w in at.warning)  # the timeline above is the 24-token one
    press(at, "ws_tl_again")
    small = chart(at, "ws_timeline")
    assert sum(int(n["text"][1:]) for n in small["layout"]["annotations"]) == 2 * 4
    at.slider(key="ws_tl_budget").set_value(64).run()
    no_errors(at)
    press(at, "ws_tl_again")
    assert any("64 nodes" in y for d in chart(at, "ws_timeline")["data"] if d["type"] == "bar" for y in d["y"])
    at.button(key="ws_tl_again").click().run()
    no_errors(at)

    fig = chart(at, "ws_rules")
    bars = [d for d in fig["data"] if d["type"] == "bar"]
    # the five rules on one draft (P(accept)); token-wise and block verification on blocks of K in a chart of their
    # own, in drafts kept per block (issue 48: a different unit, not on the same axis)
    assert [b["name"].split(" (")[0] for b in bars] == list(RULES)
    assert len(bars[0]["x"]) == 16 + 1 and bars[0]["x"][-1] == "mean"
    by = {b["name"].split(" (")[0]: b["y"] for b in bars}
    one_minus_tv = next(d for d in fig["data"] if d["type"] == "scatter")["y"]
    for i in range(17):
        assert 0 <= by["exact match, sampled draft"][i] <= by["rejection sampling"][i] + 1e-9 <= 1 + 1e-9
        assert by["rejection sampling"][i] == pytest.approx(one_minus_tv[i], abs=1e-9)
    blk = chart(at, "ws_block_rules")
    kept = {b["name"].split(" (")[0]: b["y"] for b in blk["data"]}
    assert list(kept) == [TOKENWISE, BLOCK]
    assert blk["layout"]["yaxis"]["title"]["text"] == "drafts kept per block (of 4)"
    assert all(0 <= v <= 4 for ys in kept.values() for v in ys) and len(kept[BLOCK]) == 17
    blocks = next(m.value for m in at.markdown if m.value.startswith("**Blocks of K = 4.**"))
    assert f"token-wise keeps **{kept[TOKENWISE][-1]:.2f}** of 4" in blocks and f"**{kept[BLOCK][-1]:.2f}**" in blocks
    assert kept[BLOCK][-1] > kept[TOKENWISE][-1] - 0.1  # block keeps at least as many in expectation (a margin)
    assert "T = 1" in fig["layout"]["title"]["text"]
    # extremes: the coldest and hottest temperature, the fewest and most positions
    at.slider(key="ws_t").set_value(0.1).run()
    at.slider(key="ws_pos").set_value(4).run()
    no_errors(at)
    cold = chart(at, "ws_rules")
    assert "T = 0.1" in cold["layout"]["title"]["text"] and len(cold["data"][0]["x"]) == 5
    at.slider(key="ws_t").set_value(2.0).run()
    at.slider(key="ws_pos").set_value(32).run()
    no_errors(at)
    hot = chart(at, "ws_rules")
    mean = {b["name"].split(" (")[0]: b["y"][-1] for b in hot["data"] if b["type"] == "bar"}
    cold_mean = {b["name"].split(" (")[0]: b["y"][-1] for b in cold["data"] if b["type"] == "bar"}
    assert mean["exact match, self-draft"] < cold_mean["exact match, self-draft"]  # a flatter p: sum p^2 falls


def test_fp32_vs_bf16_runs_and_their_chart():
    # on this prompt fp32 and bf16 greedy part at the third token on the development machine (the margin there is
    # 0.2): the branch that draws where pairs part runs, without this test requiring that any pair parts
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=400)
    at.query_params["prompt"], at.query_params["chat"] = "Explain beam search", "1"
    at.run()
    at.switch_page(PAGE).run()
    no_errors(at)
    at.slider(key="ws_n16").set_value(16).run()
    at.button(key="ws_precision").click().run()
    no_errors(at)
    fig = chart(at, "ws_margins")
    bars = fig["data"][0]
    assert len(bars["x"]) == 16 and all(y > 0 for y in bars["y"])
    table = at.dataframe[0].value
    assert list(table["pair"]) == ["fp32 plain vs fp32 speculative", "bf16 plain vs bf16 speculative",
                                   "fp32 plain vs bf16 plain"]
    lines = [s for s in fig["layout"].get("shapes", [])]
    parted = [p for p in table["first position where they part"] if p != "never (bit-identical)"]
    assert len(lines) == len(parted) and f"{len(parted)} of 3 pairs part" in fig["layout"]["title"]["text"]
    for line, pos in zip(lines, parted):
        assert line["x0"] == int(pos)  # drawn where the table says the pair parts
    for _, row in table.iterrows():
        parts = row["first position where they part"] != "never (bit-identical)"
        assert bool(row["tokens there"]) == parts and bool(row["top-2 logit margin there"]) == parts


def test_dynamic_k_policies_replayed_and_measured(page):
    at = page
    press(at, "ws_record")
    assert not any(b.key == "ws_policies_run" for b in at.button)  # nothing to put measured speedups beside yet
    press(at, "ws_policies_replay")
    fig = chart(at, "ws_policies")
    assert [d["name"] for d in fig["data"]] == ["tokens per verify pass", "speedup, predicted"]
    tau = fig["data"][0]["y"]
    assert len(tau) == 4 and all(1 <= t <= 17 for t in tau)
    assert fig["data"][0]["x"][0] == "fixed<br>K = 4" and fig["data"][0]["x"][2] == "llama.cpp<br>p-min 0.75"
    # the extremes of the threshold: at 0.95 the confidence stops draft less than at 0.05
    at.slider(key="ws_theta").set_value(0.05).run()
    press(at, "ws_policies_replay")
    low = chart(at, "ws_policies")["data"][0]
    at.slider(key="ws_theta").set_value(0.95).run()
    no_errors(at)
    press(at, "ws_policies_replay")
    high = chart(at, "ws_policies")["data"][0]
    # fixed K and the heuristic ignore the threshold
    assert high["x"][2] == "llama.cpp<br>p-min 0.95" and high["y"][:2] == low["y"][:2]
    drafted = lambda d, i: d["customdata"][i][1]  # noqa: E731
    assert drafted(high, 2) < drafted(low, 2) and drafted(high, 3) <= drafted(low, 3)
    at.button(key="ws_policies_run").click().run()
    no_errors(at)
    fig = chart(at, "ws_policies")
    measured = next(d for d in fig["data"] if d["name"] == "speedup, measured")
    assert len(measured["y"]) == 4 and all(y > 0 for y in measured["y"])
    note = next(c.value for c in at.caption if c.value.startswith("Costs measured here"))
    assert "match the replay's in every policy" in note or "rounding parted the outputs" in note
