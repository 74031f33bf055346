"""The exported lesson (issue 40): one self-contained HTML file per step page's run (beam, speculative, tree,
lookahead) that steps offline. At every step the file shows the page's own charts (figure JSON equal to what the page
draws), its heading, captions and metrics; hostile prompt text stays text; no request leaves the page."""
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import browser  # noqa: F401  (the shared Chromium fixture)

ROOT = Path(__file__).resolve().parent.parent
HOSTILE = "<script>alert(1)</script><img src=x onerror=alert(2)> Repeat: sum a list **bold** \\*"
METHODS = ["beam", "speculative", "tree", "lookahead"]
# method: (page, its key prefix for the export, its replay's name, settings that keep the run short)
PAGES = {"beam": ("pages/1_Beam_search.py", "bm", "beam", {"bm_max": 4}),
         "speculative": ("pages/2_Speculative_decoding.py", "sp", "spec", {"sp_max": 8}),
         "tree": ("pages/7_Tree_speculation.py", "tr", "tree", {"tr_budget": 4, "tr_depth": 2}),
         "lookahead": ("pages/9_Lookahead_decoding.py", "la", "lookahead", {"la_max_new": 8})}
OUTSIDE = {"speculative": 1}  # charts a page draws outside its step view (the Speculative page's "What K buys")


def export(*args, timeout=900):
    return subprocess.run([sys.executable, "-m", "specviz", "export", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=timeout)


# ---------------------------------------------------------------- model-free
@pytest.mark.fast
def test_the_file_is_self_contained_and_escaped():
    import plotly.graph_objects as go

    from specviz.lesson import Pool, View, figure_json, lesson_page, shown, unpack

    views = [View(Pool(), ["**Step 1** · " + HOSTILE, "**Step 1** · later"])]
    fig = go.Figure(go.Bar(x=[HOSTILE, "b"], y=[1, 2]))
    views[0].fig(fig)
    views[0].text("caption: " + HOSTILE, at=1, style="caption")
    views[0].metrics([("tokens", "3", HOSTILE)], until=1)
    page = lesson_page("beam", views, HOSTILE, {"drafter": HOSTILE})
    assert not re.search(r"(?:src|href)\s*=\s*[\"']?(?:https?:)?//", page)  # no external script, style or link
    assert "http://" not in page and "https://" not in page
    assert "<script>alert(1)" not in page and page.count("&lt;script&gt;alert(1)") == 2  # the prompt, the settings
    data = unpack(page)
    title, later = data["views"][0]["titles"]
    assert "<script>" not in title and "&lt;script&gt;" in title and title.startswith("<b>Step 1</b>")
    assert [p["kind"] for p in shown(data, 0, 0)] == ["fig", "metrics"]
    assert [p["kind"] for p in shown(data, 0, 1)] == ["fig", "html"]
    assert shown(data, 0, 0)[0]["value"] == figure_json(fig)
    assert "<img" not in shown(data, 0, 1)[0]["value"]


@pytest.mark.fast
def test_the_pages_markdown_becomes_escaped_html():
    from specviz.figures import md_escape
    from specviz.lesson import _markdown

    assert _markdown("**4 · Rejected:** “\\*a\\*” *stage* <b>") == \
        "<b>4 · Rejected:</b> “&#42;a&#42;” <i>stage</i> &lt;b&gt;"
    assert _markdown("one  \ntwo\nthree\n\nfour") == "one<br>two\nthree<br><br>four"
    assert _markdown(md_escape("sum_list(x) <b> ``` \\")) == "sum&#95;list&#40;x&#41; &#60;b&#62; &#96;&#96;&#96; &#92;"


@pytest.mark.fast
@pytest.mark.parametrize("args, says", [
    (["--method", "greedy", "--prompt", "x", "--out", "x.html"], "invalid choice"),
    (["--prompt", "x", "--out", "/no/such/folder/x.html"], "not a file in an existing folder"),
    (["--prompt", "x", "--k", "99", "--out", "x.html"], "--k must be 1..16"),
    (["--method", "beam", "--prompt", "x", "--temperature", "0.7", "--out", "x.html"], "greedy here"),
    (["--method", "lookahead", "--prompt", "x", "--window", "0", "--out", "x.html"], "--window must be"),
    (["--method", "tree", "--prompt", "x", "--typical", "0.1,0.3", "--out", "x.html"], "--tree medusa only"),
    (["--prompt", "", "--out", "x.html"], ""),
    (["--prompt", "x", "--max-new-tokens", "lots", "--out", "x.html"], "invalid int value"),
])
def test_bad_input_gets_one_line_and_exit_2(args, says):
    res = export(*args, timeout=120)
    assert res.returncode == 2, res.stderr
    assert len(res.stderr.strip().splitlines()) == 1 and "Traceback" not in res.stderr, res.stderr
    assert res.stderr.startswith("error: ") and says in res.stderr


@pytest.mark.fast
def test_the_readme_lesson_is_made_by_todays_player():
    """docs/lesson.html (make lesson) is linked from README: its player code must be today's template's, so a change
    to the player without `make lesson` fails here."""
    from specviz.lesson import TEMPLATE

    kept = (ROOT / "docs" / "lesson.html").read_text()
    tail = TEMPLATE.split('const DATA = "{data}";')[1].replace("{{", "{").replace("}}", "}")
    assert kept.split('const DATA = "')[1].split('";', 1)[1] == tail
    assert "docs/lesson.html" in (ROOT / "README.md").read_text() and len(kept.encode()) < 5e6


# ---------------------------------------------------------------- the page and its file, step by step
def page_texts(at) -> set:
    from specviz.lesson import _markdown

    return {_markdown(e.value) for kind in ("markdown", "caption", "info") for e in at.get(kind)}


@pytest.mark.parametrize("method", METHODS)
def test_every_step_of_the_file_is_the_pages_step(method):
    """The page exports its run; then the page is stepped from the start, and at each step the file's charts (figure
    JSON), heading, captions and metrics at the same step are the page's."""
    from streamlit.testing.v1 import AppTest

    from specviz.lesson import shown, unpack

    path, prefix, name, settings = PAGES[method]
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=600)
    at.run()
    at.switch_page(path).run()
    for key, value in settings.items():
        at.slider(key=key).set_value(value).run()
    at.button(key=f"{prefix}_export").click().run()
    assert not at.exception, at.exception
    assert any("Download lesson.html" in str(e.proto) for e in at.get("download_button"))
    page = at.session_state[f"{prefix}_lesson"][1]
    assert page.startswith("<!doctype html>") and len(page.encode()) < 5e6
    data = unpack(page)
    steps = [(v, p) for v, view in enumerate(data["views"]) for p in range(len(view["titles"]))]
    assert len(data["views"]) >= 2
    for v, p in steps:
        at.button(key=f"{name}_step").click().run()
        assert not at.exception, at.exception
        parts = shown(data, v, p)
        figures = [x["value"] for x in parts if x["kind"] == "fig"]
        charts = [json.loads(c.proto.spec) for c in at.get("plotly_chart")]
        assert len(charts) == len(figures) + OUTSIDE.get(method, 0), (v, p)
        for i, (chart, fig) in enumerate(zip(charts, figures)):
            assert chart == fig, f"step {v + 1}.{p + 1}, chart {i}: not the page's"
        texts = page_texts(at)
        assert data["views"][v]["titles"][p] in texts, (v, p)
        for x in parts:
            if x["kind"] == "html" and not x.get("raw"):
                assert x["value"] in texts, (v, p, x["value"][:80])
        metrics = [(m.label, m.value) for m in at.metric]
        for x in parts:
            if x["kind"] == "metrics":
                rows = [(name_, value) for name_, value, *_ in x["value"]]
                assert any(metrics[i: i + len(rows)] == rows for i in range(len(metrics))), (v, p, rows, metrics)
    assert at.button(key=f"{name}_step").disabled  # the file ends where the page's run does


# ---------------------------------------------------------------- offline in Chromium
@pytest.fixture(scope="module", params=METHODS)
def lesson(request, tmp_path_factory):
    out = tmp_path_factory.mktemp("lesson") / f"{request.param}.html"
    res = export("--method", request.param, "--prompt", HOSTILE, "--chat", "--max-new-tokens", "12", "--out", str(out))
    assert res.returncode == 0, res.stderr[-2000:]
    return request.param, out


@pytest.mark.browser
@pytest.mark.skipif(os.environ.get("SPECVIZ_SKIP_BROWSER") == "1", reason="SPECVIZ_SKIP_BROWSER=1")
def test_the_lesson_steps_offline_with_buttons_and_keys(lesson, browser):
    method, path = lesson
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    requests, errors = [], []
    page.route(re.compile(r"^(?!file:).*"), lambda route: (requests.append(route.request.url), route.abort()))
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    start = "2.2" if method == "speculative" else "2"  # an app link's ?step=: event 2 (phase 2)
    page.goto(path.as_uri() + "?step=" + start)
    page.wait_for_function("window.lessonReady === true", timeout=60_000)

    def drawn(at: str):  # the step is on screen and every chart of it fired plotly_afterplot
        page.wait_for_function("s => window.lessonStep.at === s && "
                               "window.lessonStep.drawn === window.lessonStep.charts",
                               arg=at, timeout=30_000)
        assert page.locator("#view .js-plotly-plot").count() == page.evaluate("window.lessonStep.charts")

    drawn(start)
    assert page.evaluate("window.lessonStep.charts") >= 1
    assert page.locator("#where").inner_text().startswith(f"step {start} ")
    assert page.locator("#stage").inner_text().startswith("Cycle 2" if method in ("speculative", "tree") else
                                                          "Step 2" if method == "beam" else "Target pass 2")
    after = "2.3" if method == "speculative" else "3"
    page.keyboard.press("ArrowRight")
    drawn(after)
    page.get_by_role("button", name="◀ Back").click()
    drawn(start)
    page.get_by_role("button", name="Step ▶").click()
    drawn(after)
    page.keyboard.press("ArrowLeft")
    drawn(start)
    page.keyboard.press(" ")  # Space plays, Space again pauses
    page.wait_for_function("s => window.lessonStep.at !== s", arg=start, timeout=5_000)
    page.keyboard.press(" ")
    drawn(page.evaluate("window.lessonStep.at"))
    last = int(page.locator("#slider").get_attribute("max"))
    page.locator("#slider").fill(str(last))
    drawn(page.evaluate("window.lessonStep.at"))
    assert page.locator("#where").inner_text().endswith(f"({last + 1} of {last + 1})")
    page.locator("#slider").fill("0")
    walk = page.evaluate("""async () => {  // every step from the first, by Step: each chart drawn before the next
      const seen = [];
      for (;;) {
        const t0 = performance.now();
        await new Promise(r => { const c = () => window.lessonStep.drawn === window.lessonStep.charts
                                   || performance.now() - t0 > 10000 ? r() : requestAnimationFrame(c); c(); });
        seen.push([window.lessonStep.at, window.lessonStep.drawn, window.lessonStep.charts,
                   document.querySelectorAll("#view .js-plotly-plot").length]);
        const before = window.lessonStep.at;
        document.getElementById("step").click();
        if (window.lessonStep.at === before) return seen;
      }
    }""")
    assert len(walk) == last + 1
    assert all(drawn_ == charts == plots for _, drawn_, charts, plots in walk), walk
    assert sum(charts for _, _, charts, _ in walk) > len(walk)
    assert page.locator("#prompt").inner_text() == HOSTILE  # shown as text, never run
    assert page.evaluate("document.querySelectorAll('img').length") == 0
    (ROOT / "test-artifacts").mkdir(exist_ok=True)
    page.screenshot(path=str(ROOT / "test-artifacts" / f"lesson_{method}.png"), full_page=True)
    assert not requests, requests  # nothing left the page
    assert not errors, errors
    page.close()
