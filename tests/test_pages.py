"""The pages under streamlit.testing.v1.AppTest: step, back, reset, slider change; figure data."""
import json
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

ROOT = Path(__file__).resolve().parent.parent


def figures(at):
    """The charts of the page's step view (the Speculative page's "What K buys" chart below it left out)."""
    return [json.loads(e.proto.spec) for e in at.get("plotly_chart") if not e.proto.id.endswith("-k_buys")]


def k_buys(at) -> dict:
    return next(json.loads(e.proto.spec) for e in at.get("plotly_chart") if e.proto.id.endswith("-k_buys"))


def no_errors(at):
    assert not at.exception, [e.value for e in at.exception]


@pytest.fixture
def app():
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=180)
    at.run()
    no_errors(at)
    return at


def test_home_explains_and_links(app):
    text = " ".join(m.value for m in app.markdown)
    assert "search" in text and "accelerator" in text
    assert app.sidebar.text_area[0].value  # a curated prompt is preselected


@pytest.mark.fast
def test_every_page_link_fits_one_line():
    """A page link's label is one line, cut with an ellipsis past the column: a walk in Chromium at 1280 px saw the
    Drafter comparison's (148 characters) end "…speedups a". The longest that showed whole had 124."""
    from ui.registry import PAGES
    for p in PAGES:
        assert len(f"{p.title} — {p.blurb}") <= 125, p.title


def test_speculative_page_steps_back_and_resets(app):
    at = app
    at.switch_page("pages/2_Speculative_decoding.py").run()
    no_errors(at)
    at.selectbox(key="sp_drafter").set_value("early exit (untrained)").run()
    at.button(key="spec_step").click().run()  # phase 1: the first draft token
    no_errors(at)
    figs = figures(at)
    assert len(figs) == 1 and figs[0]["layout"]["title"]["text"].startswith("1: ")  # one draft token shown so far
    assert any(m.value.startswith("**1 · The draft proposes") for m in at.markdown)
    # the counters say which cycles they hold while one is on screen half-way
    assert any(c.value.startswith("Totals over 0 decided cycles · cycle 1's passes") for c in at.caption)
    assert {m.label: m.value for m in at.metric}["Tokens per verify pass"] == "—"  # no pass yet: no ratio
    for _ in range(3 + 3):  # the other 3 drafts (K=4), then verify, decide, resolve
        at.button(key="spec_step").click().run()
    no_errors(at)
    titles = [f["layout"]["title"]["text"] for f in figures(at)]
    # one chart per draft position, then stages 2 and 3; greedy: stage 4 (correction or bonus: one token) is a
    # one-line caption, not a chart
    assert [t[:3] for t in titles] == ["1: ", "2: ", "3: ", "4: ", "2 ·", "3 ·"]
    assert any(m.value.startswith("**4 ·") for m in at.markdown)
    verify = figures(at)[4]  # what the verify pass computed: the target's top choice and p(draft) at K + 1 positions
    tops = next(d for d in verify["data"] if d["name"].startswith("target's top choice"))
    p_draft = next(d for d in verify["data"] if d["name"] == "p(draft token)")
    assert len(tops["x"]) == 5 and len(p_draft["x"]) == 4 and all(0 <= y <= 1 for y in tops["y"] + p_draft["y"])
    verdict = figures(at)[5]
    p_bars = [d for d in verdict["data"] if d.get("name") == "p (target)"]
    assert p_bars and all(0 <= y <= 1 for d in p_bars for y in d["y"])
    assert all(d["text"] for d in p_bars)  # values on the bars
    assert not any(d.get("name") in ("min(1, p/q)", "u") for d in verdict["data"])  # greedy: no accept-test row
    at.button(key="spec_step").click().run()  # cache rollback
    cache = figures(at)[-1]
    assert cache["layout"]["title"]["text"].startswith("5 · KV caches")
    assert any(t for row in cache["data"][0]["text"] for t in row)  # token text in the cells
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Target passes"] == "1" and any(c.value == "Totals over 1 decided cycle" for c in at.caption)
    html = " ".join(m.value for m in at.markdown)
    assert 'class="chip"' in html
    # Back replays the recorded trace
    at.button(key="spec_back").click().run()
    assert len(figures(at)) == 6
    # Reset clears the run
    at.button(key="spec_reset").click().run()
    assert not figures(at) and any("Press **Step**" in i.value for i in at.info)
    # a whole cycle, then changing K resets cleanly
    at.button(key="spec_whole").click().run()
    assert len(figures(at)) == 7  # 4 drafts, verify, verdicts, caches
    at.slider(key="sp_k").set_value(2).run()
    no_errors(at)
    assert not figures(at)


def test_speculative_page_shows_what_k_buys(app):
    """Below the step view, before any Step: expected tokens per verify pass against a at the page's K (bold, its
    ceiling K + 1) beside other K; unchanged by Steps (outside the cycle's fragment), following the K slider."""
    from specviz.theory import expected_tokens

    at = app
    at.switch_page("pages/2_Speculative_decoding.py").run()
    no_errors(at)
    first = k_buys(at)
    mine = first["data"][-1]
    assert mine["line"]["width"] > max(d["line"]["width"] for d in first["data"][:-1])  # the page's K stands out
    assert mine["y"] == pytest.approx([expected_tokens(a, 4) for a in mine["x"]])
    assert first["layout"]["shapes"][0]["y0"] == 5 and "K = 4 (yours)" in json.dumps(first["layout"]["annotations"])
    assert any("What K = 4 buys" in m.value for m in at.markdown)
    at.button(key="spec_whole").click().run()
    at.button(key="spec_step").click().run()
    assert figures(at) and k_buys(at) == first  # a Step leaves it as it was
    at.slider(key="sp_k").set_value(8).run()
    now = k_buys(at)
    assert now["data"][-1]["y"] == pytest.approx([expected_tokens(a, 8) for a in now["data"][-1]["x"]])
    assert now["layout"]["shapes"][0]["y0"] == 9 and any("What K = 8 buys" in m.value for m in at.markdown)


def test_speculative_page_defaults_to_the_feature_draft(app):
    from specviz.drafters import FEATURE_LABEL
    at = app
    at.switch_page("pages/2_Speculative_decoding.py").run()
    assert at.selectbox(key="sp_drafter").value == FEATURE_LABEL  # the best drafter first
    at.button(key="spec_whole").click().run()
    no_errors(at)
    assert len(figures(at)) == 7  # 4 drafts, verify, verdicts, caches (greedy: resolution is a line): it drafts at once
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Target passes"] == "2"  # the prefill that gave it the prompt's features, then verify
    at.button(key="spec_whole").click().run()
    no_errors(at)
    assert metrics["Draft passes"] != {m.label: m.value for m in at.metric}["Draft passes"]


def test_the_default_speculative_page_shows_speculation_working_in_cycle_1(app):
    """First impression: on the page's defaults (default prompt, feature draft, greedy, K = 4) cycle 1 already
    commits several drafts (a run opening on 0 % reads as "speculation doesn't work")."""
    at = app
    at.switch_page("pages/2_Speculative_decoding.py").run()
    at.button(key="spec_whole").click().run()
    no_errors(at)
    verdict = next(f for f in figures(at) if f["layout"]["title"]["text"].startswith("3 ·"))
    html = " ".join(m.value for m in at.markdown)
    assert html.count('title="accepted"') >= 2, html
    assert verdict


def test_k_16_names_both_acceptance_rates(app):
    """At K = 16 most drafts come after a rejection and are never ruled on: accepted ÷ ruled on and vLLM's
    accepted ÷ proposed differ, and both are shown, named."""
    at = app
    at.switch_page("pages/2_Speculative_decoding.py").run()
    at.slider(key="sp_k").set_value(16).run()
    for _ in range(3):
        at.button(key="spec_whole").click().run()
    no_errors(at)
    metrics = {m.label: m.value for m in at.metric}
    ruled, proposed = (int(metrics[k].rstrip("%")) for k in ("Accepted ÷ ruled on", "Accepted ÷ proposed"))
    assert proposed < ruled


def test_next_cycle_from_part_way_shows_the_rest_of_that_cycle(app):
    at = app
    at.switch_page("pages/2_Speculative_decoding.py").run()
    at.button(key="spec_step").click().run()  # cycle 1, draft 1/4
    at.button(key="spec_whole").click().run()
    no_errors(at)
    assert any("**Cycle 1**" in m.value and "stage: *cache*" in m.value for m in at.markdown)
    assert len(figures(at)) == 7  # 4 drafts, verify, verdicts, caches: cycle 1's verdicts are on screen


def test_speculative_sampling_shows_u_and_threshold(app):
    at = app
    at.switch_page("pages/2_Speculative_decoding.py").run()
    at.selectbox(key="sp_drafter").set_value("early exit (untrained)").run()
    at.radio(key="sp_mode").set_value("rejection sampling").run()
    at.button(key="spec_whole").click().run()
    no_errors(at)
    figs = figures(at)
    verdict = next(f for f in figs if f["layout"]["title"]["text"].startswith("3 ·"))
    u = [d for d in verdict["data"] if d.get("name") == "u"]
    thr = [d for d in verdict["data"] if d.get("name") == "min(1, p/q)"]
    assert u and thr and 0 <= u[0]["x"][0] < 1 and 0 <= thr[0]["x"][0] <= 1
    resolution = next(f for f in figs if f["layout"]["title"]["text"].startswith("4 ·"))
    assert "residual" in resolution["layout"]["title"]["text"] or "bonus" in resolution["layout"]["title"]["text"]
    # drawn once in the browser: without Streamlit's theme (re-applied there, it made Plotly draw each new chart
    # twice), in the charts' own look, the toolbar on hover
    charts = at.get("plotly_chart")
    assert len(charts) >= 4 and all(c.proto.theme == "" for c in charts)
    assert all(json.loads(c.proto.config)["displayModeBar"] == "hover" for c in charts)
    # ... with the look written into the layout, no template object, a fixed datarevision (drawn once: for_browser)
    assert all(f["layout"]["font"]["family"].startswith('"Source Sans"') and f["layout"]["template"] == "none"
               and f["layout"]["datarevision"] == 1 for f in figs)


def test_beam_page_tree_and_comparison(app):
    at = app
    at.switch_page("pages/1_Beam_search.py").run()
    no_errors(at)
    at.slider(key="bm_b").set_value(3).run()
    for _ in range(3):
        at.button(key="beam_step").click().run()
    no_errors(at)
    tree = figures(at)[0]
    kept = next(d for d in tree["data"] if d.get("name") == "kept")
    assert max(kept["x"]) == 3 and kept["x"].count(3) == 3  # 3 beams survive step 3
    pruned = next(d for d in tree["data"] if d.get("name") == "pruned")
    assert len(pruned["x"]) > 0
    at.button(key="beam_back").click().run()
    kept = next(d for d in figures(at)[0]["data"] if d.get("name") == "kept")
    assert max(kept["x"]) == 2
    at.button(key="beam_end").click().run()
    no_errors(at)
    assert any("log-prob" in i.value or "same sequence" in i.value for i in at.info)
    assert any(m.label == "Total log-prob" for m in at.metric)


def test_speedup_lab_theory_numbers(app):
    at = app
    at.switch_page("pages/3_Speedup_lab.py").run()
    no_errors(at)
    at.slider(key="sl_a").set_value(0.7).run()
    at.slider(key="sl_k").set_value(4).run()
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Expected tokens per target pass"] == "2.7731"
    tau = figures(at)[0]
    chosen = next(d for d in tau["data"] if d["name"] == "a = 0.7")
    assert abs(chosen["y"][3] - 2.7731) < 1e-4  # K = 4
    improve = figures(at)[1]
    assert all(c.proto.theme == "" for c in at.get("plotly_chart"))  # every page's charts through ui.charts.chart
    # ... in the specviz look: ui.state makes it the default again after importing streamlit (which sets its own)
    assert all(f["layout"]["font"]["family"].startswith('"Source Sans"') and f["layout"]["template"] == "none"
               for f in figures(at))
    assert any(d.get("name") == "best K (paper)" for d in improve["data"])
    assert any(s.get("type") == "rect" for s in improve["layout"]["shapes"])  # the slower-than-plain region


def test_speedup_lab_measures_a_real_run(app):
    at = app
    at.switch_page("pages/3_Speedup_lab.py").run()
    at.selectbox(key="sl_drafter").set_value("n-gram lookup").run()
    at.slider(key="sl_max").set_value(16).run()
    at.button(key="sl_run").click().run()
    no_errors(at)
    metrics = {m.label: m.value for m in at.metric}
    assert 0 <= float(metrics["measured a"]) <= 1 and float(metrics["measured v"]) > 0.5
    summary = next(m.value for m in at.markdown if "interleaved rounds" in m.value)
    assert "identical output" in summary and "Medians of 3" in summary  # timed 3 times, not once
    improve = figures(at)[1]
    assert any(d.get("name") == "measured" for d in improve["data"])
    water = next(json.loads(e.proto.spec) for e in at.get("plotly_chart") if e.proto.id.endswith("-sl_breakdown"))
    bars = water["data"][0]  # issue 38: where the speedup goes, ending at the measured speedup
    speedup = summary.split("→ **")[1].split("×")[0]
    assert any(m.value.startswith("**Best K from this run's acceptance by position**") for m in at.markdown)
    assert (bars["measure"][-1] == "total" and bars["text"][-1] == f"{speedup}×"
            and speedup in water["layout"]["title"]["text"])
    assert any("measured" in a.get("text", "") and "(a = " in a.get("text", "")
               for a in improve["layout"]["annotations"])  # label beside, not on, the point, with its own a and c
    if abs(at.slider(key="sl_a").value - float(metrics["measured a"])) > 0.005:  # curves at other a, c: said
        assert any(c.value.startswith("The curves are drawn at the sliders'") for c in at.caption)
    at.button(key="sl_use").click().run()  # the sliders take the run's a, c, K; the estimate at its a, c, v is drawn
    no_errors(at)
    assert abs(at.slider(key="sl_a").value - min(0.99, round(float(metrics["measured a"]), 2))) < 0.011
    improve = figures(at)[1]
    assert any(d.get("name", "").startswith("estimate at the measured") for d in improve["data"])


def test_lossless_lab_exact_equals_p(app):
    at = app
    at.switch_page("pages/4_Lossless_lab.py").run()
    no_errors(at)
    pieces = figures(at)[0]
    p = next(d for d in pieces["data"] if d["name"] == "p (target)")["y"]
    exact = next(d for d in pieces["data"] if d["name"] == "exact output distribution")["y"]
    assert max(abs(a - b) for a, b in zip(p, exact)) < 1e-9
    wrong = figures(at)[1]
    bad = next(d for d in wrong["data"] if d["name"].startswith("what the mistaken"))["y"]
    assert max(abs(a - b) for a, b in zip(p, bad)) > 0.01


def test_drafter_comparison_runs(app):
    at = app
    at.switch_page("pages/5_Drafter_comparison.py").run()
    at.slider(key="dc_max").set_value(16).run()
    at.slider(key="dc_rounds").set_value(2).run()
    at.button(key="dc_run").click().run()
    no_errors(at)
    bars = figures(at)[0]["data"][0]
    assert len(bars["x"]) >= 2 and all(v > 0 for v in bars["y"])
    # whiskers span the rounds: one non-negative length each side per drafter
    assert len(bars["error_y"]["array"]) == len(bars["x"]) == len(bars["error_y"]["arrayminus"])
    assert min(bars["error_y"]["array"] + bars["error_y"]["arrayminus"]) >= 0
    table = at.dataframe[0].value
    assert table["speedup range"].str.endswith("×").all() and (table["plain seconds"] > 0).all()
    assert any("early exit" in x for x in bars["x"])
    assert any("feature draft" in x for x in bars["x"]) and any("token draft" in x for x in bars["x"])


def test_interview_page_quiz_scores(app):
    at = app
    at.switch_page("pages/6_Interview_QA.py").run()
    no_errors(at)
    assert len(at.main.expander) == 20  # the bank, 20 questions at a time (all 130 at once took the browser 3-4 s)
    first = at.main.expander[0].label
    at.selectbox(key="qa_browse_page").set_value(2).run()
    no_errors(at)
    assert len(at.main.expander) == 20 and at.main.expander[0].label != first
    shown = lambda: sum("**Correct** ·" in m.value for m in at.markdown)
    assert shown() >= 10  # browsing: the misconceptions with their correct versions
    at.radio(key="qa_mode").set_value("Quiz").run()
    at.toggle(key="qa_self_tick").set_value(True).run()  # the learner ticks (the graded quiz: test_quiz_page)
    assert shown() == 0  # the quiz asks them: their answers are not on the page beside it
    from test_quiz_page import answer  # the first card of the session's shuffle, whatever its kind
    answer(at, True)
    assert any(m.label == "Score" and m.value.startswith("1")
               for m in at.metric), [(m.label, m.value) for m in at.metric]
    at.multiselect(key="qa_topics").set_value(["drafters"]).run()
    no_errors(at)


def test_home_runs_the_three_live(app):
    at = app
    at.slider(key="home_max").set_value(8).run()
    at.button(key="home_run").click().run()
    no_errors(at)
    passes = [m for m in at.metric if m.label == "Target passes"]
    assert len(passes) == 3 and all(int(m.value) >= 1 for m in passes)
    assert any(m.label == "Time" and m.value.endswith(" s") for m in at.metric)
    # greedy verification: speculative gives greedy's words exactly
    assert any("same words as greedy" in c.value for c in at.caption)


def test_speculative_header_says_why_fewer_than_k_were_drafted(app):
    """The n-gram lookup drafts only as far as the context's copy runs: the header says so, not "few tokens left"
    while 128 tokens remain."""
    from specviz.drafters import LABELS
    at = app
    at.switch_page("pages/2_Speculative_decoding.py").run()
    at.selectbox(key="sp_drafter").set_value(LABELS["ngram"]).run()
    at.slider(key="sp_k").set_value(16).run()
    at.slider(key="sp_max").set_value(128).run()
    headers, nothing = [], 0
    for _ in range(4):
        at.button(key="spec_whole").click().run()
        no_errors(at)
        headers += [m.value for m in at.markdown if m.value.startswith("**Cycle ")]
        # stages 1 and 3 say there was nothing to do: 1, 2, 3, 4, 5
        if at.session_state["spec"].replay.current().k == 0:
            nothing += 1
            stages = [m.value[2] for m in at.markdown if m.value[:2] == "**" and m.value[3:6] == " · "]
            titles = [json.loads(e.proto.spec)["layout"].get("title", {}).get("text", "?")[0]
                      for e in at.get("plotly_chart")]
            assert sorted(stages + titles[:-1]) == ["1", "2", "3", "4", "5"], (stages, titles)
    assert nothing  # the default prompt has cycles where the lookup finds no match
    short = [h for h in headers if "(asked 16:" in h]
    assert short and all("n-gram continues for only" in h and "few tokens left" not in h for h in short), headers
