"""The pages under streamlit.testing.v1.AppTest: step, back, reset, slider change; figure data."""
import json
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

ROOT = Path(__file__).resolve().parent.parent


def figures(at):
    return [json.loads(e.proto.spec) for e in at.get("plotly_chart")]


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


def test_speculative_page_steps_back_and_resets(app):
    at = app
    at.switch_page("pages/2_Speculative_decoding.py").run()
    no_errors(at)
    at.selectbox(key="sp_drafter").set_value("early exit (untrained)").run()
    at.button(key="spec_step").click().run()  # phase 1: the first draft token
    no_errors(at)
    figs = figures(at)
    assert len(figs) == 1 and figs[0]["layout"]["title"]["text"].startswith("1 ·")
    assert len(figs[0]["data"]) == 1  # one draft token shown so far
    for _ in range(3 + 3):  # the other 3 drafts (K=4), then verify, decide, resolve
        at.button(key="spec_step").click().run()
    no_errors(at)
    titles = [f["layout"]["title"]["text"] for f in figures(at)]
    assert [t[:3] for t in titles] == ["1 ·", "2 ·", "3 ·", "4 ·"]
    verdict = figures(at)[2]
    p_bars = [d for d in verdict["data"] if d.get("name") == "p (target)"]
    assert p_bars and all(0 <= y <= 1 for d in p_bars for y in d["y"])
    at.button(key="spec_step").click().run()  # cache rollback
    assert figures(at)[-1]["layout"]["title"]["text"].startswith("5 · KV caches")
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Target passes"] == "1"
    html = " ".join(m.value for m in at.markdown)
    assert 'class="chip"' in html
    # Back replays the recorded trace
    at.button(key="spec_back").click().run()
    assert len(figures(at)) == 4
    # Reset clears the run
    at.button(key="spec_reset").click().run()
    assert not figures(at) and any("Press **Step**" in i.value for i in at.info)
    # a whole cycle, then changing K resets cleanly
    at.button(key="spec_whole").click().run()
    assert len(figures(at)) == 5
    at.slider(key="sp_k").set_value(2).run()
    no_errors(at)
    assert not figures(at)


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
