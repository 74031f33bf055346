"""The Tree speculation page in a real headless Chromium (Debian's, driven by Playwright): step it, check the
tree and mask are drawn with no exception, and time Step from click to redraw, both computing a new cycle and
replaying a recorded one (medians written to test-artifacts/tree_step_ms.txt; the issue's target is <= 1 s, not
asserted: it depends on the machine's load)."""
import os
import statistics
from pathlib import Path

import pytest

from conftest import browser, settle, timed_click  # noqa: F401  (the shared Chromium fixture)

ROOT = Path(__file__).resolve().parent.parent
pytestmark = [pytest.mark.browser,
              pytest.mark.skipif(os.environ.get("SPECVIZ_SKIP_BROWSER") == "1", reason="SPECVIZ_SKIP_BROWSER=1")]
CYCLE = ("() => [...document.querySelectorAll('[data-testid=stMarkdownContainer]')].map(e => e.innerText)"
         ".find(t => t.startsWith('Cycle ')) || ''")



def test_tree_page_steps_in_browser_and_times_step(server, browser):
    from playwright.sync_api import expect

    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    page.goto(f"{server}/Tree_speculation", timeout=180_000)
    page.wait_for_selector("[data-testid=stSidebar] textarea", timeout=180_000)
    page.wait_for_function("() => document.querySelectorAll('[data-testid=stSkeleton]').length === 0", timeout=180_000)
    settle(page)
    page.get_by_role("button", name="Step ▶").first.click()  # the first step also records the run's start
    page.wait_for_function(f"() => ({CYCLE})().startsWith('Cycle 1')", timeout=180_000)
    settle(page)  # the tree and the mask (the chart library loads with the first chart)
    page.wait_for_function("() => document.querySelectorAll('[data-testid=stPlotlyChart] .main-svg').length >= 2",
                           timeout=60_000)
    def timed(button: str) -> float:
        before = page.evaluate(CYCLE)
        ms = timed_click(page, button)
        page.wait_for_function(f"b => ({CYCLE})() !== b && ({CYCLE})() !== ''", arg=before, timeout=60_000)
        return ms

    times = []  # Step past the recording: the engine drafts and verifies a new tree, then the redraw
    for _ in range(8):
        if "done" in page.evaluate(CYCLE):
            break
        times.append(timed("Step ▶"))
    assert len(times) >= 3
    for _ in times:  # back to the first cycle, then Step again over the recorded cycles: the redraw alone
        timed("◀ Back")
    replayed = [timed("Step ▶") for _ in times]
    read = []  # past the recording again, after 2 s of reading: the page drafts the next tree meanwhile
    while len(read) < 4 and "done" not in page.evaluate(CYCLE):
        page.wait_for_timeout(2000)
        read.append(timed("Step ▶"))
    expect(page.locator("[data-testid=stException]")).to_have_count(0)
    # the last cycle (one token left) drafts no tree: a line says so instead of an empty tree and mask
    assert "no tree" not in page.evaluate(CYCLE) or page.get_by_text("No tree this cycle").count() == 1
    out = ROOT / "test-artifacts"
    out.mkdir(exist_ok=True)
    (out / "tree_step_ms.txt").write_text(
        f"median {statistics.median(times):.0f} ms computing a new cycle; all {[round(t) for t in times]}\n"
        f"median {statistics.median(replayed):.0f} ms replaying a recorded cycle; all {[round(t) for t in replayed]}\n"
        + (f"median {statistics.median(read):.0f} ms for a new cycle after 2 s of reading; "
           f"all {[round(t) for t in read]}\n"
           if read else ""))
    page.close()
