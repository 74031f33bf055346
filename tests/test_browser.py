"""End to end in a real headless Chromium (Debian's, driven by Playwright): start the server, open
every page by direct URL, step the pages, assert what is shown, save screenshots, time a Step."""
import os
import shutil
import statistics
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SHOTS = ROOT / "test-artifacts" / "screenshots"
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
pytestmark = pytest.mark.skipif(os.environ.get("SPECVIZ_SKIP_BROWSER") == "1", reason="SPECVIZ_SKIP_BROWSER=1")
from conftest import CHROMIUM_ARGS as ARGS  # noqa: E402
PAGES = ["", "Beam_search", "Speculative_decoding", "Speedup_lab", "Lossless_lab", "Drafter_comparison", "Interview_QA"]
NAV_TITLES = ["Home", "Beam search", "Speculative decoding", "Speedup lab", "Lossless lab", "Drafter comparison",
              "Interview Q&A"]


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    assert Path(CHROMIUM).exists(), "Debian's chromium is needed: apt-get install chromium (make browser)"
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
        yield b
        b.close()


def settle(page, timeout=180_000):
    """Wait until Streamlit has finished the rerun the last action started."""
    page.wait_for_timeout(150)
    page.wait_for_selector("[data-testid=stApp][data-test-script-state=notRunning]", timeout=timeout)


def open_page(browser, url):
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    page.goto(url, timeout=180_000)
    page.wait_for_selector("[data-testid=stSidebar]", timeout=180_000)
    settle(page)
    # the first run is done only when its placeholders are gone and the sidebar prompt is drawn
    page.wait_for_selector("[data-testid=stSidebar] textarea", timeout=180_000)
    page.wait_for_function("() => document.querySelectorAll('[data-testid=stSkeleton]').length === 0", timeout=180_000)
    settle(page)
    return page


def click(page, label):
    page.get_by_role("button", name=label).first.click()
    settle(page)


def test_every_page_opens_by_direct_url(server, browser):
    from playwright.sync_api import expect

    SHOTS.mkdir(parents=True, exist_ok=True)
    for name in PAGES:
        page = open_page(browser, f"{server}/{name}")
        expect(page.locator("[data-testid=stException]")).to_have_count(0)
        expect(page.locator("h1").first).to_be_visible()
        # the sidebar names every page by its title, the home page "Home" (not the entrypoint's file name)
        nav = [t.strip() for t in page.locator("[data-testid=stSidebarNav] a").all_inner_texts()]
        assert [t.split("\n")[-1] for t in nav] == NAV_TITLES, nav
        # no developer toolbar items (the "Deploy" button): .streamlit/config.toml sets toolbarMode "viewer"
        expect(page.locator("[data-testid=stAppDeployButton]")).to_have_count(0)
        expect(page.get_by_role("button", name="Deploy", exact=True)).to_have_count(0)
        page.screenshot(path=str(SHOTS / f"{name or 'home'}.png"), full_page=True)
        page.close()


def test_deep_link_as_a_fresh_servers_first_visit(browser):
    """Until app.py's st.navigation has run once, Streamlit serves requests through its legacy pages/-folder
    mode (the sidebar said "app" and file names); a deep link must get the declared navigation at once."""
    from conftest import streamlit_server
    from playwright.sync_api import expect

    with streamlit_server("server_fresh.log") as url:
        page = open_page(browser, f"{url}/Interview_QA")
        expect(page.locator("h1").first).to_have_text("Interview Q&A")
        nav = [t.strip() for t in page.locator("[data-testid=stSidebarNav] a").all_inner_texts()]
        assert [t.split("\n")[-1] for t in nav] == NAV_TITLES, nav
        assert page.url.endswith("/Interview_QA")
        page.close()


def test_speculative_full_cycle_in_browser(server, browser):
    from playwright.sync_api import expect

    page = open_page(browser, f"{server}/Speculative_decoding")
    click(page, "Next cycle ⏩")
    expect(page.locator("[data-testid=stPlotlyChart]")).to_have_count(5, timeout=60_000)
    expect(page.get_by_text("KV caches").first).to_be_visible()
    expect(page.locator("span.chip").first).to_be_visible()
    # time Step: click to redraw, in the browser
    times = []
    for _ in range(8):
        before = page.locator("[data-testid=stMarkdownContainer]").filter(has_text="stage:").inner_text()
        t0 = time.perf_counter()
        page.get_by_role("button", name="Step ▶").click()
        page.wait_for_function(
            "b => ![...document.querySelectorAll('[data-testid=stMarkdownContainer]')]"
            ".some(e => e.innerText === b)", arg=before, timeout=60_000)
        settle(page)
        times.append((time.perf_counter() - t0) * 1000)
    (SHOTS.parent / "step_ms.txt").write_text(f"median {statistics.median(times):.0f} ms; all {times}\n")
    expect(page.locator("[data-testid=stException]")).to_have_count(0)
    page.mouse.move(1390, 990)  # no hover tooltip over the controls in the README's screenshot
    page.wait_for_timeout(300)
    page.screenshot(path=str(SHOTS / "speculative_cycle.png"), full_page=True)
    page.close()


def test_beam_three_steps_in_browser(server, browser):
    from playwright.sync_api import expect

    page = open_page(browser, f"{server}/Beam_search")
    for _ in range(3):
        click(page, "Step ▶")
    expect(page.get_by_text("Step 3").first).to_be_visible()
    expect(page.locator("[data-testid=stPlotlyChart]").first.locator(".point").first).to_be_visible()
    expect(page.locator("[data-testid=stException]")).to_have_count(0)
    page.screenshot(path=str(SHOTS / "beam_3_steps.png"), full_page=True)
    page.close()
