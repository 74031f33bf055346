"""Issue 47 in a real Chromium: a learner opens a card by its link, types an answer, presses Grade my answer and
sees each point ✓/✗ with the evidence highlighted in their own words; a screenshot is kept and looked at."""
import os
from pathlib import Path

import pytest

from conftest import browser, settle  # noqa: F401  (the shared Chromium fixture)
from specviz.practice import grade as G

ROOT = Path(__file__).resolve().parent.parent
SHOTS = ROOT / "test-artifacts" / "screenshots"
pytestmark = [pytest.mark.browser,
              pytest.mark.skipif(os.environ.get("SPECVIZ_SKIP_BROWSER") == "1", reason="SPECVIZ_SKIP_BROWSER=1"),
              pytest.mark.skipif(not G.available(), reason="the grader's encoder package is not installed")]


def test_a_typed_answer_is_graded_with_its_evidence(server, browser):
    from playwright.sync_api import expect

    SHOTS.mkdir(parents=True, exist_ok=True)
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    page.goto(f"{server}/Interview_QA?card=what-is-spec", timeout=180_000)
    page.wait_for_selector("[data-testid=stSidebar]", timeout=180_000, state="attached")
    settle(page)
    expect(page.get_by_text("What is speculative decoding", exact=False).first).to_be_visible(timeout=60_000)
    answer = ("A small cheap model guesses a few tokens ahead, and the big model scores all the guesses in a "
              "single forward pass. It is exact (whether p<q & q>p or not): the output is distributed as the big "
              "model's own.")
    box = page.locator("textarea[aria-label^='Your answer']").first
    box.fill(answer)
    box.press("Control+Enter")  # Streamlit commits a text area on Ctrl+Enter (or on blur)
    settle(page)
    page.get_by_role("button", name="Grade my answer").click()
    settle(page)
    expect(page.get_by_text("Your answer, graded", exact=False).first).to_be_visible(timeout=60_000)
    graded = page.locator(".sv-graded")
    expect(graded).to_have_count(1)
    expect(graded.locator("mark").first).to_be_visible()  # the evidence, marked in the learner's own text
    shown = graded.inner_text()  # the learner's < > & ' shown as typed (quoted()'s entities: tests/test_quiz_page.py)
    assert "p<q & q>p" in shown and "model's own" in shown and "&#" not in shown and "&amp;" not in shown
    g = G.grade(G.card("what-is-spec"), answer)
    for p in g.points:
        expect(page.get_by_text(p.point, exact=False).first).to_be_visible()
    made = [p for p in g.points if p.made]
    expect(page.get_by_text("better than its stance", exact=False).first).to_be_visible()  # its weakness, said
    assert made and graded.locator("mark").count() >= 1
    page.screenshot(path=str(SHOTS / "graded_answer.png"), full_page=True)
    expect(page.locator("[data-testid=stException]")).to_have_count(0)
    page.close()
