"""The exported lesson (issue 40, first slice): one self-contained HTML file that steps offline, drawn by the same
figure builders as the Speculative page; hostile prompt text stays text; no request leaves the page."""
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import browser  # noqa: F401  (the shared Chromium fixture)

ROOT = Path(__file__).resolve().parent.parent
HOSTILE = "<script>alert(1)</script><img src=x onerror=alert(2)> Repeat: sum a list"


@pytest.fixture(scope="module")
def lesson(tmp_path_factory):
    out = tmp_path_factory.mktemp("lesson") / "lesson.html"
    res = subprocess.run([sys.executable, "-m", "specviz", "export", "--prompt", HOSTILE, "--chat",
                          "--max-new-tokens", "16", "--out", str(out)], cwd=ROOT, capture_output=True, text=True,
                         timeout=600)
    assert res.returncode == 0, res.stderr[-2000:]
    return out


def test_the_file_is_self_contained_and_escaped(lesson):
    text = lesson.read_text()
    assert not re.search(r"(?:src|href)\s*=\s*[\"']?(?:https?:)?//", text)  # no external script, style or link
    assert "http://" not in text and "https://" not in text
    assert "<script>alert(1)" not in text and "&lt;script&gt;alert(1)" in text
    assert len(text.encode()) < 5e6


def test_the_lessons_charts_are_the_pages_figure_builders(models):
    from specviz.drafters import make_drafter
    from specviz.figures import spec_cycle as F
    from specviz.lesson import cycle_view
    from specviz.prompting import prompt_ids
    from specviz.sampling import SamplingConfig
    from specviz.engine.speculative import speculative_steps

    ids = prompt_ids(models.tokenizer, "Write a Python function that returns the sum of a list.")
    cycles = list(speculative_steps(models.target, make_drafter("feature", models), models.tokenizer, ids, 12, 4,
                                    SamplingConfig(0.0), False))
    view = cycle_view(cycles[0], models.tokenizer, ids)
    figs = [p["value"] for p in view["parts"] if p["kind"] == "fig"]
    same = json.loads(F.verify_pass(cycles[0]).to_json())
    assert any(f["layout"]["title"] == same["layout"]["title"] and f["data"][0]["y"] == same["data"][0]["y"]
               for f in figs)
    assert [p["stage"] for p in view["parts"]][:4] == ["draft"] * 4 and view["stages"][-1] == "cache"


@pytest.mark.browser
@pytest.mark.skipif(os.environ.get("SPECVIZ_SKIP_BROWSER") == "1", reason="SPECVIZ_SKIP_BROWSER=1")
def test_the_lesson_steps_offline_with_buttons_and_keys(lesson, browser):
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    requests, errors = [], []
    page.route(re.compile(r"^(?!file:).*"), lambda route: (requests.append(route.request.url), route.abort()))
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(lesson.as_uri() + "?step=1.2")
    page.wait_for_function("window.lessonReady === true", timeout=60_000)
    assert page.locator("#stage").inner_text().startswith("Cycle 1") and "draft 2/" in page.locator("#stage").inner_text()
    first = page.locator("#where").inner_text()
    page.keyboard.press("ArrowRight")
    page.get_by_role("button", name="Step ▶").click()
    page.keyboard.press("ArrowLeft")
    assert page.locator("#where").inner_text() != first
    page.locator("#slider").fill("9")
    page.wait_for_function("window.lessonDraws > 3", timeout=30_000)
    assert page.locator(".js-plotly-plot").count() >= 1
    assert "<script>" in page.locator("#prompt").inner_text()  # shown as text, never run
    import time
    t0 = time.perf_counter()
    page.keyboard.press("ArrowRight")
    page.wait_for_timeout(50)
    (ROOT / "test-artifacts").mkdir(exist_ok=True)
    (ROOT / "test-artifacts" / "lesson_step_ms.txt").write_text(f"{(time.perf_counter() - t0) * 1000:.0f} ms\n")
    assert not requests, requests  # nothing left the page
    assert not errors, errors
    page.close()


def test_the_speculative_page_exports_its_run():
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=300)
    at.run()
    at.switch_page("pages/2_Speculative_decoding.py").run()
    at.slider(key="sp_max").set_value(16).run()
    at.button(key="sp_export").click().run()
    assert not at.exception
    params, page = at.session_state["sp_lesson"]
    assert page.startswith("<!doctype html>") and "Write a Python function" in page
    assert any(getattr(e, "proto", None) is not None and "Download lesson.html" in str(e.proto)
               for e in at.get("download_button"))


@pytest.mark.fast
def test_the_readme_lesson_is_made_by_todays_player():
    """docs/lesson.html (make lesson) is linked from README: its player code must be today's template's, so a change
    to the player without `make lesson` fails here."""
    from specviz.lesson import TEMPLATE

    kept = (ROOT / "docs" / "lesson.html").read_text()
    tail = TEMPLATE.split('const DATA = "{data}";')[1].replace("{{", "{").replace("}}", "}")
    assert kept.split('const DATA = "')[1].split('";', 1)[1] == tail
    assert "docs/lesson.html" in (ROOT / "README.md").read_text() and len(kept.encode()) < 5e6
