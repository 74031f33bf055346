"""End to end in a real headless Chromium (Debian's, driven by Playwright): start the server, open
every page by direct URL, step the pages, assert what is shown, save screenshots, time a Step."""
import os
import statistics
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SHOTS = ROOT / "test-artifacts" / "screenshots"
pytestmark = [pytest.mark.browser,
              pytest.mark.skipif(os.environ.get("SPECVIZ_SKIP_BROWSER") == "1", reason="SPECVIZ_SKIP_BROWSER=1")]
from conftest import browser, settle, timed_click  # noqa: E402,F401  (the shared Chromium fixture)
from ui.registry import PAGES as REGISTERED  # noqa: E402

# every registered page, by the URL path st.navigation gives it (the file name less its number prefix)
PAGES = [""] + [Path(p.path).stem.split("_", 1)[1] for p in REGISTERED]
NAV_TITLES = ["Home"] + [p.title for p in REGISTERED]



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
    expect(page.get_by_text("KV caches").first).to_be_visible(timeout=60_000)
    assert page.locator("[data-testid=stPlotlyChart]").count() >= 4  # draft, verify, verdicts, (resolution,) caches
    expect(page.locator("span.chip").first).to_be_visible()
    # time Step: click to redraw, in the browser
    times = []
    stage = page.locator("[data-testid=stMarkdownContainer]").filter(has_text="stage:")
    for _ in range(8):
        before = stage.inner_text()
        times.append(timed_click(page, "Step ▶"))
        assert stage.inner_text() != before  # the Step moved the page on
        page.wait_for_timeout(300)  # a person reads between Steps
    settle(page)
    (SHOTS.parent / "step_ms.txt").write_text(f"median {statistics.median(times):.0f} ms; all {times}\n")
    expect(page.locator("[data-testid=stException]")).to_have_count(0)
    page.mouse.move(1390, 990)  # no hover tooltip over the controls in the README's screenshot
    page.wait_for_timeout(300)
    page.screenshot(path=str(SHOTS / "speculative_cycle.png"), full_page=True)
    page.close()


# Counts, in the page, the charts Plotly sets up (its event hub, one per chart div) and its full draws (the
# "plotly_beforeplot" every whole layout-and-draw fires; a react that only restyles does not).
COUNT_DRAWS = """window.__plotly = {charts: 0, draws: 0};
Object.defineProperty(HTMLDivElement.prototype, '_ev', {configurable: true, get() { return this.__ev; },
  set(hub) { const div = this; div.__ev = hub; div.__draws = 0; window.__plotly.charts++;
             hub.on('plotly_beforeplot', () => { window.__plotly.draws++; div.__draws++; }); }});"""
# draws of the chart with Streamlit key `key` (its element carries the class st-key-<key>)
DRAWS_OF = "key => { const d = document.querySelector(`.st-key-${key} .js-plotly-plot`); return d ? d.__draws : null; }"


# Clicks "Next cycle" and returns the opacity transition of the first element Streamlit marks stale
STALE_TRANSITION = ("""async () => {
  const button = [...document.querySelectorAll('button')].find(b => b.innerText.includes('Next cycle'));
  let fade = null;
  const watch = new MutationObserver(() => {
    const stale = document.querySelector('[data-stale=true]');
    if (stale && !fade) { const s = getComputedStyle(stale); """
"""fade = {duration: s.transitionDuration, delay: s.transitionDelay}; }
  });
  watch.observe(document.body, {subtree: true, attributes: true, attributeFilter: ['data-stale']});
  button.click();
  for (let i = 0; i < 300 && !fade; i++) await new Promise(r => setTimeout(r, 10));
  watch.disconnect();
  if (!fade) {  // a rerun drawn from recorded events can finish before anything is marked stale: mark one
    const el = document.querySelector('[data-testid=stMarkdownContainer]');
    el.setAttribute('data-stale', 'true');
    const s = getComputedStyle(el);
    fade = {duration: s.transitionDuration, delay: s.transitionDelay};
    el.removeAttribute('data-stale');
  }
  return fade;
}""")


def test_each_new_chart_is_drawn_once(server, browser):
    """Streamlit mounts each new chart, then hands Plotly.react a JSON copy of it: with the template object in the
    figure that copy was drawn whole a second time (64 draws for 32 charts in 10 cycles). specviz.figures.for_browser
    makes the copy compare equal, so every chart is laid out and drawn once. And what waits fades in one step."""
    ctx = browser.new_context(viewport={"width": 1400, "height": 1000})
    ctx.add_init_script(COUNT_DRAWS)
    page = ctx.new_page()
    page.goto(f"{server}/Speculative_decoding?mode=sampling&drafter=ngram&seed=3", timeout=180_000)
    page.get_by_role("button", name="Next cycle ⏩").wait_for(timeout=180_000)
    settle(page)
    # the page's "What K buys" chart, outside the cycle's fragment, is drawn when the page opens (before any Step:
    # the chart library loads while the learner reads) and never again by a Step
    page.wait_for_function(DRAWS_OF, arg="k_buys", timeout=60_000)
    page.wait_for_timeout(1000)  # anything Plotly still had queued from the page's opening
    opened = page.evaluate(DRAWS_OF, "k_buys")
    # once, or twice when the page's opening run is itself redrawn before the learner acts (seen on 2026-11-26 on
    # the commits of the two stops before as well, about one open in two on this host): a matter of when the
    # browser draws, never of stepping, which is what must not redraw it
    assert opened in (1, 2), opened
    for _ in range(2):
        click(page, "Next cycle ⏩")
    # While the rerun runs, the elements not yet redrawn fade: after Streamlit's 0.5 s, in one step
    # (ui.sidebar.STALE_CSS), not as a 1 s animation the browser must composite frame by frame
    fade = page.evaluate(STALE_TRANSITION)
    assert fade and fade["duration"] == "0s" and fade["delay"] == "0.5s", fade
    settle(page)
    page.wait_for_timeout(1000)  # anything Plotly still had queued
    counts = page.evaluate("window.__plotly")
    assert counts["charts"] >= 6, counts  # the cycles drew charts (verify pass and caches at least, each cycle)
    # every chart drawn once; one stray redraw is a matter of when the browser draws (seen on 2026-11-26 on earlier
    # commits too), while the fault this guards against drew every chart twice (64 draws for 32 charts)
    assert counts["charts"] <= counts["draws"] <= counts["charts"] + 1, counts
    assert page.evaluate(DRAWS_OF, "k_buys") == opened  # the Steps reran only the fragment
    ctx.close()


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


# ---------------------------------------------------------------- state, sharing, keyboard (issue 19)
def stage_line(page) -> str:
    """The speculative page's 'Cycle n · K = k · stage: ...' header (the screen's position)."""
    return page.locator("[data-testid=stMarkdownContainer]").filter(has_text="stage:").first.inner_text()


def chips(page) -> list[int]:
    return [int(t) for t in page.locator("span.chip").evaluate_all("els => els.map(e => e.dataset.tok)")]


def pick(page, label, option):
    """Choose `option` in the selectbox labelled `label`."""
    page.get_by_role("combobox", name=label).click()
    page.get_by_role("option", name=option, exact=True).click()
    settle(page)


def go(page, title):
    page.locator("[data-testid=stSidebarNav] a").filter(has_text=title).click()
    page.wait_for_selector("h1", timeout=60_000)
    settle(page)
    page.wait_for_function("t => document.querySelector('h1') && document.querySelector('h1').innerText.includes(t)",
                           arg=title, timeout=60_000)
    settle(page)


def changes(page, key, before) -> str:
    """Press `key` and wait until the stage line is no longer `before`; the new line."""
    page.keyboard.press(key)
    page.wait_for_function("b => { const e = [...document.querySelectorAll('[data-testid=stMarkdownContainer]')]"
                           ".find(e => e.innerText.includes('stage:')); return e && e.innerText !== b; }",
                           arg=before, timeout=60_000)
    settle(page)
    return stage_line(page)


def blur(page):
    """Keys go to the page, not to a focused widget (a focused slider would take the arrows)."""
    page.locator("h1").first.click()


@pytest.mark.browser
def test_settings_and_run_survive_page_switches(server, browser):
    from playwright.sync_api import expect

    page = open_page(browser, f"{server}/Speculative_decoding")
    # a prompt with a long answer, so that cycle 3 exists (the default prompt's answer is a few tokens)
    pick(page, "Curated prompts", "Explain beam search (chat)")
    pick(page, "Drafter", "n-gram lookup")
    page.get_by_text("rejection sampling", exact=True).click()
    settle(page)
    page.get_by_text("Dynamic K", exact=False).first.click()
    settle(page)
    click(page, "Next cycle ⏩")
    click(page, "Step ▶")
    before, tokens = stage_line(page), chips(page)
    go(page, "Interview Q&A")
    go(page, "Beam search")
    page.locator("[data-testid=stSlider]").filter(has_text="Beam width B").get_by_role("slider").focus()
    page.keyboard.press("ArrowRight")  # B 3 -> 4
    settle(page)
    go(page, "Speculative decoding")
    expect(page.get_by_role("combobox", name="Drafter")).to_have_value("n-gram lookup")
    expect(page.get_by_role("radio", name="rejection sampling")).to_be_checked()
    expect(page.locator("[data-testid=stCheckbox]").filter(has_text="Dynamic K").locator("input")).to_be_checked()
    assert stage_line(page) == before and chips(page) == tokens  # the run, at the same step
    assert "drafter=ngram" in page.url and "mode=sampling" in page.url and "dynamic=1" in page.url
    page.screenshot(path=str(SHOTS / "state_after_page_switch.png"), full_page=True)
    go(page, "Beam search")
    expect(page.locator("[data-testid=stSlider]").filter(has_text="Beam width B")).to_contain_text("4")
    assert "beams=4" in page.url
    page.close()


@pytest.mark.browser
@pytest.mark.parametrize("path, name, expected", [
    ("Speculative_decoding?drafter=ngram&mode=sampling&dynamic=1", "Speculative decoding",
     ["drafter=ngram", "mode=sampling", "dynamic=1"]),
    ("Tree_speculation?drafter=feature&mode=sampling&budget=6", "Tree speculation",
     ["drafter=feature", "mode=sampling", "budget=6"])])
def test_settings_from_a_link_survive_page_switches(server, browser, path, name, expected):
    """Settings a link gave, then only Steps (fragment reruns): a page switch and back keeps them and the run.
    (AppTest reruns the whole page on a fragment's button, so only a browser shows this.)"""
    page = open_page(browser, f"{server}/{path}")
    click(page, "Step ▶")
    click(page, "Step ▶")
    step = page.url.split("step=")[1].split("&")[0]
    go(page, "Beam search")
    go(page, name)
    for part in expected + [f"step={step}"]:
        assert part in page.url, (part, page.url)
    page.close()


@pytest.mark.browser
def test_copied_link_reopens_the_same_screen_in_a_fresh_browser(server, browser):
    from playwright.sync_api import expect

    page = open_page(browser, f"{server}/Speculative_decoding")
    # a prompt with a long answer, so that cycle 3 exists (the default prompt's answer is a few tokens)
    pick(page, "Curated prompts", "Explain beam search (chat)")
    pick(page, "Drafter", "n-gram lookup")
    page.get_by_text("rejection sampling", exact=True).click()
    settle(page)
    for _ in range(2):
        click(page, "Next cycle ⏩")
    for _ in range(2):
        click(page, "Step ▶")
    # a Step reruns only the fragment, which may not have drawn yet when the script state reads notRunning:
    # read the screen's position once it has stopped changing
    here = stage_line(page)
    for _ in range(20):
        page.wait_for_timeout(500)
        settle(page)
        if stage_line(page) == here:
            break
        here = stage_line(page)
    tokens = chips(page)
    page.get_by_role("button", name="Copy link").click()
    link = page.locator("[data-testid=stPopoverBody] code").first.inner_text().replace("\n", "")
    assert "step=3.2" in link and "drafter=ngram" in link and "mode=sampling" in link, link
    assert link.split("?")[1] == page.url.split("?")[1]  # the address bar says the same
    page.close()

    fresh = browser.new_context(viewport={"width": 1400, "height": 1000})  # no cookies, no session: a new reader
    other = fresh.new_page()
    other.goto(link, timeout=180_000)
    other.wait_for_selector("[data-testid=stSidebar] textarea", timeout=180_000)
    settle(other)
    expect(other.locator("[data-testid=stMarkdownContainer]").filter(has_text="stage:").first).to_have_text(here)
    assert chips(other) == tokens and tokens
    expect(other.get_by_role("combobox", name="Drafter")).to_have_value("n-gram lookup")
    expect(other.locator("[data-testid=stException]")).to_have_count(0)
    other.screenshot(path=str(SHOTS / "opened_from_link.png"), full_page=True)
    fresh.close()


def test_browser_back_and_forward_walk_the_steps_then_the_pages(server, browser):
    """Each Step writes the screen into the address bar, and Streamlit keeps each address in the browser's history:
    Back shows the screen before (settings, cycle, tokens), down to the page the learner came from; Forward comes
    back (ui.state.history_visit). Before, the page wrote its current screen over the one Back went to."""
    from playwright.sync_api import expect

    page = open_page(browser, f"{server}/Beam_search")
    page.locator("[data-testid=stSidebarNav] a", has_text="Speculative").click()
    settle(page)
    pick(page, "Drafter", "n-gram lookup")
    screens = []
    for _ in range(2):
        click(page, "Next cycle ⏩")
        screens.append((page.url, stage_line(page), chips(page)))
    assert screens[0][0] != screens[1][0] and "step=" in screens[1][0]
    for direction, (url, line, tokens) in (("back", screens[0]), ("forward", screens[1])):
        (page.go_back if direction == "back" else page.go_forward)()
        settle(page)
        expect(page.locator("[data-testid=stMarkdownContainer]").filter(has_text="stage:").first).to_have_text(line)
        assert page.url == url and chips(page) == tokens, direction
        expect(page.get_by_role("combobox", name="Drafter")).to_have_value("n-gram lookup")
    for _ in range(6):  # cycle 1, the start, the drafter's default, then the page the learner came from
        if page.locator("h1").first.inner_text() == "Beam search":
            break
        page.go_back()
        settle(page)
    expect(page.locator("h1").first).to_have_text("Beam search")
    expect(page.locator("[data-testid=stException]")).to_have_count(0)
    page.close()


@pytest.mark.browser
def test_keyboard_steps_back_and_plays(server, browser):
    from playwright.sync_api import expect

    page = open_page(browser, f"{server}/Speculative_decoding")
    step = page.get_by_role("button", name="Step ▶")
    expect(step).to_contain_text("→")  # the key is shown on the button
    blur(page)
    page.keyboard.press("ArrowRight")
    settle(page)
    expect(page.locator("[data-testid=stMarkdownContainer]").filter(has_text="stage:").first).to_contain_text(
        "Cycle 1")
    first = stage_line(page)
    changes(page, "ArrowRight", first)
    assert changes(page, "ArrowLeft", stage_line(page)) == first
    page.keyboard.press("Space")  # play
    expect(page.get_by_role("button", name="Pause ❚❚")).to_be_visible(timeout=30_000)
    page.wait_for_timeout(2500)
    settle(page)
    page.keyboard.press("Space")  # pause
    expect(page.get_by_role("button", name="Play ▶▶")).to_be_visible(timeout=30_000)
    assert stage_line(page) != first

    beam = open_page(browser, f"{server}/Beam_search")
    blur(beam)
    beam.keyboard.press("ArrowRight")
    settle(beam)
    beam.keyboard.press("ArrowRight")
    settle(beam)
    expect(beam.get_by_text("Step 2", exact=True).first).to_be_visible()
    beam.keyboard.press("ArrowLeft")
    settle(beam)
    expect(beam.get_by_text("Step 1", exact=True).first).to_be_visible()
    beam.close()
    page.close()


@pytest.mark.browser
def test_play_never_shows_the_controls_twice(server, browser):
    page = open_page(browser, f"{server}/Speculative_decoding")
    page.evaluate("""() => { window.maxSteps = 0; const count = () => { window.maxSteps = Math.max(window.maxSteps,
        [...document.querySelectorAll('button')].filter(b => b.offsetParent !== null
        && b.innerText.startsWith('Step ▶')).length); };  // visible ones: Streamlit keeps a hidden copy to measure
        new MutationObserver(count).observe(document.body, {subtree: true, childList: true}); }""")
    click(page, "Play ▶▶")
    page.wait_for_timeout(5000)
    click(page, "Pause ❚❚")
    assert page.evaluate("window.maxSteps") == 1
    page.close()


@pytest.mark.browser
def test_prompt_picker_follows_the_text_and_the_log_has_no_widget_warnings(server, browser):
    from playwright.sync_api import expect

    page = open_page(browser, f"{server}/Beam_search")
    pick(page, "Curated prompts", "What is 2+2? (beam beats greedy)")
    expect(page.locator("[data-testid=stSidebar] textarea")).to_have_value("What is 2+2?")
    box = page.locator("[data-testid=stSidebar] textarea")
    box.fill("Name three colours.")
    page.wait_for_timeout(300)  # the text area takes the typed text into its state first
    box.press("Control+Enter")
    settle(page)
    expect(page.get_by_role("combobox", name="Curated prompts")).to_have_value("Your own prompt")
    assert "Name+three+colours." in page.url or "Name%20three%20colours." in page.url
    pick(page, "Curated prompts", "Explain beam search (chat)")
    expect(box).to_have_value("Explain beam search in two sentences.")
    settle(page)
    page.wait_for_timeout(500)  # the picker's rerun has written the text area: type after it, as a person would
    box.fill("Name four colours.")
    page.wait_for_timeout(300)  # the text area takes the typed text into its state first
    box.press("Control+Enter")
    settle(page)
    expect(page.get_by_role("combobox", name="Curated prompts")).to_have_value("Your own prompt")
    go(page, "Speculative decoding")
    expect(page.get_by_role("combobox", name="Curated prompts")).to_have_value("Your own prompt")
    expect(page.locator("[data-testid=stSidebar] textarea")).to_have_value("Name four colours.")
    page.close()
    log = (ROOT / "test-artifacts" / "server.log").read_text()
    assert "default value but also had its value set via the Session State API" not in log
    assert "Traceback" not in log


@pytest.mark.browser
def test_trace_json_and_chart_image_export(server, browser):
    import json
    import re

    from playwright.sync_api import TimeoutError as PlaywrightTimeout
    from playwright.sync_api import expect

    page = open_page(browser, f"{server}/Speculative_decoding")
    click(page, "Next cycle ⏩")
    # the cycle is a fragment rerun, which can still be drawing when the script state reads notRunning; a click
    # on the Trace JSON button it is about to replace asks for a file the server has already dropped (nothing
    # downloads, and a person clicks again). Wait for the step to reach the address bar, then click.
    page.wait_for_url(re.compile(r"[?&]step="), timeout=120_000)
    settle(page)
    for attempt in range(3):
        try:
            with page.expect_download(timeout=20_000) as info:
                page.get_by_role("button", name="Trace JSON").click()
            break
        except PlaywrightTimeout:
            assert attempt < 2, "Trace JSON downloaded nothing after three clicks"
            settle(page)
    data = json.loads(Path(info.value.path()).read_text())
    assert data["page"] == "Speculative_decoding" and len(data["events"]) == 1
    assert data["events"][0]["cycle"] == 0 and data["events"][0]["emitted"]
    assert data["settings"]["k"] == "4"
    chart = page.locator("[data-testid=stPlotlyChart]").first
    chart.hover()
    expect(chart.locator(".modebar-btn[data-title*='Download plot']")).to_have_count(1)
    page.close()


def test_the_controls_stay_in_reach_on_a_laptop_screen(server, browser):
    """At 1280×720 a cycle's result is below the fold: scrolled down to it, the Step button is still on screen."""
    page = browser.new_page(viewport={"width": 1280, "height": 720})
    page.goto(f"{server}/Speculative_decoding", timeout=180_000)
    page.wait_for_selector("[data-testid=stSidebar] textarea", timeout=180_000)
    settle(page)
    click(page, "Next cycle ⏩")
    page.get_by_text("KV caches").first.wait_for(timeout=60_000)
    page.mouse.move(700, 500)
    page.mouse.wheel(0, 1200)  # down to the verdicts and the caches
    page.wait_for_timeout(800)
    box = page.get_by_role("button", name="Step ▶").first.bounding_box()
    assert box and 0 <= box["y"] and box["y"] + box["height"] <= 720, box
    assert page.get_by_text("KV caches").first.bounding_box()["y"] < 720  # and the result is what is on screen
    row = page.evaluate("() => document.querySelector('[class*=spec_controls]').getBoundingClientRect().height")
    assert row < 60, row  # one row of buttons: two rows (107 px), sticky, covered the metrics
    click(page, "Step ▶")  # usable where it is
    page.close()


def test_predict_then_reveal_with_the_keyboard(server, browser):
    """Predict first: Step with → to the verify pass, pick accept/reject per draft, → reveals and marks them."""
    from playwright.sync_api import expect

    page = open_page(browser, f"{server}/Speculative_decoding")
    page.get_by_text("Predict first").click()
    settle(page)
    blur(page)  # the keys go to the page, not the toggle
    for _ in range(5):  # the four drafts, then the verify pass
        page.keyboard.press("ArrowRight")
        settle(page)
    expect(page.get_by_text("Your prediction", exact=False).first).to_be_visible(timeout=60_000)
    groups = page.locator("[data-testid=stRadio]").filter(has_text="accept")
    assert groups.count() == 4
    for i in range(4):
        groups.nth(i).get_by_text("accept", exact=True).click()
        settle(page)
    blur(page)
    page.keyboard.press("ArrowRight")
    settle(page)
    expect(page.get_by_text("Your predictions: 4 of 4 right").first).to_be_visible(timeout=60_000)
    expect(page.locator("[data-testid=stException]")).to_have_count(0)
    page.screenshot(path=str(SHOTS / "predict_reveal.png"), full_page=True)
    page.close()
