"""Load: 8 concurrent sessions on one server, each stepping speculative sampling 20 cycles with its own
prompt and seed, twice: with 8 headless Chromiums on the server's cores, and with the students' browsers
elsewhere (ui/class_load.py speaks the app's websocket protocol). No error, and every session's tokens
equal its single-user run."""
import asyncio
import json
import os
import statistics
import time
from pathlib import Path

import pytest

from conftest import CHROMIUM, CHROMIUM_ARGS
from specviz.drafters import NgramDrafter
from specviz.prompting import encode_prompt
from specviz.sampling import SamplingConfig
from specviz.engine.speculative import speculative_steps
from ui.class_load import PROMPTS, classroom, session_query

ROOT = Path(__file__).resolve().parent.parent
pytestmark = [pytest.mark.browser,
              pytest.mark.skipif(os.environ.get("SPECVIZ_SKIP_BROWSER") == "1", reason="SPECVIZ_SKIP_BROWSER=1")]
SESSIONS, CYCLES = int(os.environ.get("SPECVIZ_LOAD_SESSIONS", 8)), int(os.environ.get("SPECVIZ_LOAD_CYCLES", 20))


def single_user(embedded, prompt, seed):
    """The same run with no server at all: what the session must show."""
    model, tok = embedded
    ids = encode_prompt(tok, prompt, True, 8192, 128)
    steps = speculative_steps(model, NgramDrafter(), tok, ids, 128, 4, SamplingConfig(1.0, 0, 1.0, seed))
    tokens = []
    for i, cycle in enumerate(steps):
        tokens += cycle.emitted
        if i + 1 == CYCLES:
            break
    return tokens


# One "Next cycle" as a student sees it, timed inside the page: from the click until the new cycle is on screen. The
# rerun's result is in when the script has finished and the new tokens are shown; it is drawn when a frame passes
# with nothing left changing on the page (Plotly draws its charts after React has committed them). Measured in the
# page, not from Playwright: the harness's round trips and its 60-per-second requestAnimationFrame polling of 8 pages
# (Playwright's default) are not part of a student's click and cost the shared cores CPU a classroom would not spend.
CYCLE_JS = """async () => {
  const app = document.querySelector('[data-testid=stApp]');
  const button = [...document.querySelectorAll('button')].find(b => b.innerText.includes('Next cycle'));
  if (button.disabled) return null;  // the answer ended (EOS)
  const before = document.querySelectorAll('span.chip').length;
  const ready = () => app.getAttribute('data-test-script-state') === 'notRunning'
                      && document.querySelectorAll('span.chip').length > before;
  let changed = false;
  const watch = new MutationObserver(() => { changed = true; });
  watch.observe(document.body, {subtree: true, childList: true, attributes: true, characterData: true});
  const frame = () => new Promise(r => requestAnimationFrame(() => setTimeout(r, 0)));
  const t0 = performance.now();
  button.click();
  while (!ready()) await new Promise(r => setTimeout(r, 10));
  for (let i = 0; i < 100; i++) { changed = false; await frame(); if (!changed) break; }
  watch.disconnect();
  return performance.now() - t0;
}"""


DRAWN = "[...document.querySelectorAll('[data-testid=stPlotlyChart]')].every(c => c.querySelector('.main-svg'))"


async def one_session(browser, url, i, latencies, loads, start, by_cycle):
    ctx = await browser.new_context(viewport={"width": 1300, "height": 900})
    page = await ctx.new_page()
    done = "[data-testid=stApp][data-test-script-state=notRunning]"
    try:
        t0 = time.perf_counter()
        await page.goto(f"{url}/Speculative_decoding?{session_query(i)}", timeout=300_000)
        await page.get_by_role("button", name="Next cycle ⏩").wait_for(timeout=300_000)
        await page.wait_for_selector(done, timeout=300_000)
        # opened = on screen: Plotly draws the page's charts after the script has finished, and a student reads a
        # page once it is drawn (timing the first click from here, not from a page still drawing)
        await page.wait_for_function(DRAWN, timeout=300_000, polling=100)
        loads.append(time.perf_counter() - t0)
    except BaseException:
        start.abort()
        raise
    await start.wait()  # every session opened its page: from here the 8 step at once
    for n in range(CYCLES):
        ms = await page.evaluate(CYCLE_JS)
        if ms is None:
            break
        latencies.append(ms)
        by_cycle.setdefault(n, []).append(round(ms))
    errors = await page.locator("[data-testid=stException]").count()
    await page.screenshot(path=str(ROOT / "test-artifacts" / "screenshots" / f"load_{i}.png"), full_page=True)
    tokens = [int(t) for t in await page.locator("span.chip").evaluate_all("els => els.map(e => e.dataset.tok)")]
    await ctx.close()
    return errors, tokens


def test_eight_concurrent_sessions(server, embedded):
    from playwright.async_api import async_playwright

    async def main():
        async with async_playwright() as p:
            browser = await p.chromium.launch(executable_path=CHROMIUM,
                                              args=CHROMIUM_ARGS, headless=True)
            latencies, loads, start, by_cycle = [], [], asyncio.Barrier(SESSIONS), {}
            results = await asyncio.gather(*[one_session(browser, server, i, latencies, loads, start, by_cycle)
                                             for i in range(SESSIONS)])
            await browser.close()
            return results, latencies, loads, by_cycle

    results, latencies, loads, by_cycle = asyncio.run(main())
    report = {"sessions": SESSIONS, "cycles_each": CYCLES, "median_ms": round(statistics.median(latencies)),
              "p90_ms": round(sorted(latencies)[int(0.9 * len(latencies))]), "max_ms": round(max(latencies)),
              "page_loads_s": [round(t, 1) for t in sorted(loads)],
              "ms_by_cycle": {n: sorted(ms) for n, ms in sorted(by_cycle.items())}}
    out = ROOT / "test-artifacts"
    out.mkdir(exist_ok=True)
    (out / "load.json").write_text(json.dumps(report, indent=1))
    for i, (errors, tokens) in enumerate(results):
        assert errors == 0, f"session {i} showed an exception"
        assert tokens == single_user(embedded, PROMPTS[i], 100 + i), f"session {i} differs from its single-user run"


def test_eight_concurrent_sessions_without_browsers(server, embedded):
    """The server's half of a classroom: 8 sessions with no browser on this machine. Their own seeds (200 + i),
    not the Chromium sessions' (100 + i): on the same server those traces are cached and would only be replayed."""
    report, results = asyncio.run(classroom(server, SESSIONS, CYCLES, seed0=200))
    out = ROOT / "test-artifacts"
    out.mkdir(exist_ok=True)
    (out / "class_load.json").write_text(json.dumps(report, indent=1))
    assert report["steps"] >= SESSIONS * min(CYCLES, 5)  # every session stepped (no answer ends within 5 cycles)
    for i, (errors, tokens) in enumerate(results):
        assert errors == [], f"session {i}: {errors}"
        assert tokens == single_user(embedded, PROMPTS[i], 200 + i), f"session {i} differs from its single-user run"


def test_sessions_dealt_over_two_servers_on_one_postgresql(embedded, postgres_cluster):
    """Issue 49: ui/class_load.py across two servers sharing one PostgreSQL (session i on server i mod 2, as a sticky
    balancer would keep it): every session steps on its own server without an error, with its single-user tokens."""
    import contextlib

    from conftest import streamlit_server
    from postgres import fresh_database

    env = {"SPECVIZ_DB": fresh_database(postgres_cluster, "class_load")}
    with contextlib.ExitStack() as stack:
        urls = [stack.enter_context(streamlit_server(f"class-load-{n}.log", env=env)) for n in range(2)]
        report, results = asyncio.run(classroom(urls, 4, 3, seed0=300))
    assert report["servers"] == 2 and report["steps"] == 4 * 3
    for i, (errors, tokens) in enumerate(results):
        assert errors == [], f"session {i}: {errors}"
        assert tokens == single_user(embedded, PROMPTS[i], 300 + i)[:len(tokens)] and tokens
