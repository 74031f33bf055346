"""Issue 35 on the labs (Speedup, Lossless, Drafter comparison, Serving) under AppTest: every setting survives a
page switch and back; verdicts and labels are worded from the numbers shown; the charts name their values."""
import json
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

APP = str(Path(__file__).resolve().parent.parent / "app.py")
SPEEDUP, LOSSLESS = "pages/3_Speedup_lab.py", "pages/4_Lossless_lab.py"
DRAFTERS, SERVING, BEAM = "pages/5_Drafter_comparison.py", "pages/8_Serving_lab.py", "pages/1_Beam_search.py"


def open_page(page):
    at = AppTest.from_file(APP, default_timeout=180)
    at.run()
    at.switch_page(page).run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def away_and_back(at, page):
    """A learner's page switch and back: the page's widgets are not drawn in between, so Streamlit drops them."""
    at.switch_page(BEAM).run()
    at.switch_page(page).run()
    assert not at.exception, [e.value for e in at.exception]


def charts(at) -> list[dict]:
    return [json.loads(e.proto.spec) for e in at.get("plotly_chart")]


# ---------------------------------------------------------------- settings kept across page switches (item 33)
def test_speedup_lab_keeps_its_settings_across_a_page_switch():
    at = open_page(SPEEDUP)
    at.slider(key="sl_a").set_value(0.55).run()
    at.slider(key="sl_k").set_value(7).run()
    at.slider(key="sl_c").set_value(0.2).run()
    at.slider(key="sl_mk").set_value(6).run()
    at.slider(key="sl_max").set_value(32).run()
    at.selectbox(key="sl_drafter").set_value("n-gram lookup").run()
    away_and_back(at, SPEEDUP)
    assert at.slider(key="sl_a").value == 0.55 and at.slider(key="sl_k").value == 7
    assert at.slider(key="sl_c").value == 0.2
    assert at.slider(key="sl_mk").value == 6 and at.slider(key="sl_max").value == 32
    assert at.selectbox(key="sl_drafter").value == "n-gram lookup"
    assert {m.label: m.value for m in at.metric}["Expected tokens per target pass"] != "2.7731"  # not a=0.7, K=4


def test_serving_lab_keeps_its_settings_across_a_page_switch():
    at = open_page(SERVING)
    at.select_slider(key="sv_batch").set_value(8).run()
    at.select_slider(key="sv_ctx").set_value(4096).run()
    at.radio(key="sv_dtype").set_value("fp8 (1 B)").run()
    at.radio(key="sv_wdtype").set_value("fp32 (4 B)").run()
    at.slider(key="sv_beams").set_value(3).run()
    at.slider(key="sv_prompt").set_value(1024).run()
    at.toggle(key="sv_share").set_value(False).run()
    at.slider(key="sv_k").set_value(6).run()
    at.select_slider(key="sv_spec_ctx").set_value(8192).run()
    at.slider(key="sv_a").set_value(0.8).run()
    at.slider(key="sv_c").set_value(0.1).run()
    shape = at.selectbox(key="sv_shape").options[1]
    at.selectbox(key="sv_shape").set_value(shape).run()
    away_and_back(at, SERVING)
    assert at.select_slider(key="sv_batch").value == 8 and at.select_slider(key="sv_ctx").value == 4096
    assert at.radio(key="sv_dtype").value == "fp8 (1 B)" and at.radio(key="sv_wdtype").value == "fp32 (4 B)"
    assert at.slider(key="sv_beams").value == 3 and at.slider(key="sv_prompt").value == 1024
    assert at.toggle(key="sv_share").value is False
    assert at.slider(key="sv_k").value == 6 and at.select_slider(key="sv_spec_ctx").value == 8192
    assert at.slider(key="sv_a").value == 0.8 and at.slider(key="sv_c").value == 0.1
    assert at.selectbox(key="sv_shape").value == shape
    assert "a = 0.80" in next(f for f in charts(at)
                              if "batch size" in f["layout"]["title"]["text"])["layout"]["title"]["text"]


def test_serving_lab_prompt_follows_a_shorter_context_without_a_warning():
    at = open_page(SERVING)
    at.slider(key="sv_prompt").set_value(4096).run()
    at.select_slider(key="sv_ctx").set_value(1024).run()
    assert not at.exception and not at.warning
    assert at.slider(key="sv_prompt").value == 1024


def test_lossless_lab_keeps_its_settings_across_a_page_switch():
    at = open_page(LOSSLESS)
    assert at.select_slider(key="ll_real_n").value == 400  # the default: a test with power against the mistakes
    at.select_slider(key="ll_n").set_value(1_000).run()
    at.select_slider(key="ll_real_n").set_value(200).run()
    at.slider(key="ll_temp").set_value(0.7).run()
    at.slider(key="ll_topk").set_value(20).run()
    at.slider(key="ll_pos").set_value(2).run()
    at.number_input(key="ll_seed").set_value(5).run()
    away_and_back(at, LOSSLESS)
    assert at.select_slider(key="ll_n").value == 1_000 and at.select_slider(key="ll_real_n").value == 200
    assert at.slider(key="ll_temp").value == 0.7 and at.slider(key="ll_topk").value == 20
    assert at.slider(key="ll_pos").value == 2 and at.number_input(key="ll_seed").value == 5


def test_drafter_comparison_keeps_its_settings_across_a_page_switch():
    at = open_page(DRAFTERS)
    at.slider(key="dc_k").set_value(6).run()
    at.slider(key="dc_l").set_value(8).run()
    at.slider(key="dc_max").set_value(32).run()
    at.slider(key="dc_rounds").set_value(1).run()
    away_and_back(at, DRAFTERS)
    assert at.slider(key="dc_k").value == 6 and at.slider(key="dc_l").value == 8
    assert at.slider(key="dc_max").value == 32 and at.slider(key="dc_rounds").value == 1


# ---------------------------------------------------------------- verdicts worded from the result
def _fake_tests(pvalues):
    return [{"position": j, "categories": [330, 429], "table": [[81, 5, 14], [83, 13, 4]],
             "expected": [[82, 9, 9], [82, 9, 9]], "statistic": 9.7, "dof": 2, "pvalue": pv}
            for j, pv in enumerate(pvalues)]


def test_lossless_lab_says_a_low_p_value_is_a_rejection_and_a_high_one_is_not():
    at = open_page(LOSSLESS)
    power = next(c.value for c in at.caption if c.value.startswith("**What this test can see**"))
    assert "% at 400" in power  # the power at each sample count, calculated for this prompt
    at.session_state["ll_real"] = (3, _fake_tests([0.008, 0.3, 0.5]), 400, {"resample_p": 0.6, "greedy_draft": 1.0}, 7)
    at.run()
    assert not at.exception
    said = " ".join(w.value for w in at.warning)
    assert "rejection at the family level" in said and "0.0167" in said and "from seed 7" in said
    assert "another seed" in said
    assert "as the proof says" not in " ".join(i.value for i in at.info) + said
    at.session_state["ll_real"] = (3, _fake_tests([0.4, 0.3, 0.5]), 400, {"resample_p": 0.6, "greedy_draft": 1.0}, 7)
    at.run()
    said = " ".join(i.value for i in at.info)
    assert "no detectable difference" in said and "60%" in said  # with the power the run had
    assert not any("rejection" in w.value for w in at.warning)


def _fake_drafter_rows(k):
    return [{"drafter": name, "acceptance rate": a, "tokens per verify pass": 1 + a * 2, "speedup vs plain greedy": s,
             "speedup range": (s - 0.05, s + 0.05), "seconds": 3 / s, "plain seconds": 3.0, "rounds": 3,
             "target passes": 20, "identical to greedy": True}
            for name, a, s in (("token draft", 0.55, 1.57), ("early exit, first 4 layers (untrained)", 0.05, 0.62))]


def _fake_staged(k):
    def row(run, draft_s, forwards, guesses):
        return {"run": run, "total s": 3.0, "n-gram lookup s": 0.01 if guesses else 0.0, "draft model s": draft_s,
                "target verify s": 2.5, "draft forwards": forwards, "target passes": 20, "tokens per verify pass": 2.4,
                "first-stage guesses": guesses, "first-stage accepted": guesses and guesses // 2, "identical": True,
                "speedup vs plain greedy": 1.3}
    return {"k": k, "max_new_tokens": 48, "plain s": 3.9,
            "rows": [row("token draft", 0.4, 100, None), row("staged: n-gram → token draft", 0.3, 70, 40)]}


def test_drafter_comparison_names_the_k_of_each_section_and_marks_slowdowns_twice():
    at = open_page(DRAFTERS)
    at.session_state["dc_rows"] = _fake_drafter_rows(4)
    at.session_state["dc_rows_run"] = {"k": 4, "max_new": 48}
    at.session_state["dc_staged"] = _fake_staged(6)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    captions = " ".join(c.value for c in at.caption)
    assert "K = 4, 48 new tokens." in captions
    assert "K = 6, 48 new tokens — the table above ran at K = 4" in captions
    bars = next(f for f in charts(at) if f["layout"]["title"]["text"].startswith("Measured speedup by drafter"))
    bar = bars["data"][0]
    assert bar["marker"]["pattern"]["shape"] == ["", "/"]  # a second cue besides red: the slowdown is hatched
    assert "a slowdown" in bar["text"][1] and "slowdown" not in bar["text"][0]
    info = " ".join(i.value for i in at.info)
    assert "early exit, first 4 layers (untrained) at 0.62×" in info  # the slowdown named from the run
    at.session_state["dc_staged"] = _fake_staged(4)
    at.run()
    assert "K = 4, 48 new tokens — the same K as the table above" in " ".join(c.value for c in at.caption)


# ---------------------------------------------------------------- the Speedup lab's chart labels (item 37)
@pytest.mark.fast
def test_improvement_chart_names_the_best_k_values_and_keeps_the_measured_label_level():
    from specviz.figures.speedup import improvement
    from specviz.theory import walltime_improvement

    fig = improvement(0.8, 0.05, v_of_k=lambda k: 1 + 0.1 * k,
                      measured=[(4, 1.71, "measured 1.71× (a = 0.62, c = 0.050)")]).to_dict()
    paper = next(d for d in fig["data"] if d.get("name") == "best K (paper)")
    assert paper["text"][0] == f"best K = {paper['x'][0]}: {walltime_improvement(0.8, paper['x'][0], 0.05):.2f}×"
    machine = next(d for d in fig["data"] if d.get("name") == "best K (machine-aware)")
    km = machine["x"][0]
    assert machine["text"][0].startswith(f"best K = {km}: {walltime_improvement(0.8, km, 0.05, 1 + 0.1 * km):.2f}×")
    label = next(a for a in fig["layout"]["annotations"] if "measured 1.71×" in a.get("text", ""))
    assert label["ay"] == 0 and label["yanchor"] == "middle" and label["ax"] > 0  # level with the point, inward
    # a high a stretches the y range: a low point's label goes above it, clear of the K axis
    fig = improvement(0.99, 0.01, measured=[(14, 1.2, "measured 1.20× (a = 0.99, c = 0.010)")]).to_dict()
    label = next(a for a in fig["layout"]["annotations"] if "measured 1.20×" in a.get("text", ""))
    assert label["ay"] < 0 and label["yanchor"] == "bottom" and label["ax"] < 0  # right half: label to the left


@pytest.mark.fast
def test_speedup_lab_quotes_the_benchmark_from_its_json():
    from specviz.figures.speedup import estimate_note, packing_note
    from specviz.labs.committed import load_bench

    bench = load_bench()
    note = packing_note(bench)
    f, u = bench["forward_ms"], bench["forward_ms_unpacked"]
    assert f"{u['target_1']:.1f} ms against {f['target_1']:.1f} ms packed" in note and bench["date"] in note
    fake = json.loads(json.dumps(bench))
    fake["forward_ms_unpacked"]["target_1"] = 99.0
    fake["date"] = "2099-01-01"
    assert "99.0 ms" in packing_note(fake) and "2099-01-01" in packing_note(fake)
    assert "of the machine-aware estimate" in estimate_note(bench)
    page = Path(APP).with_name("pages").joinpath("3_Speedup_lab.py").read_text()
    assert "53.4 ms" not in page and "106 %" not in page  # no measured number typed into the prose
