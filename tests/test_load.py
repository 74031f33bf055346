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
from specviz.speculative import speculative_steps
from ui.class_load import PROMPTS, classroom, session_query

ROOT = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.skipif(os.environ.get("SPECVIZ_SKIP_BROWSER") == "1", reason="SPECVIZ_SKIP_BROWSER=1")
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


async def one_session(browser, url, i, latencies):
    ctx = await browser.new_context(viewport={"width": 1300, "height": 900})
    page = await ctx.new_page()
    q = session_query(i)
    await page.goto(f"{url}/Speculative_decoding?{q}", timeout=300_000)
    done = "[data-testid=stApp][data-test-script-state=notRunning]"
    await page.wait_for_selector(done, timeout=300_000)
    button = page.get_by_role("button", name="Next cycle ⏩")
    for n in range(CYCLES):
        if await button.is_disabled():  # the answer ended (EOS) before CYCLES cycles
            break
        before = await page.locator("span.chip").count()
        t0 = time.perf_counter()
        await button.click()
        await page.wait_for_function(f"() => document.querySelectorAll('span.chip').length > {before}",
                                     timeout=300_000)
        await page.wait_for_selector(done, timeout=300_000)
        latencies.append((time.perf_counter() - t0) * 1000)
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
            latencies = []
            results = await asyncio.gather(*[one_session(browser, server, i, latencies) for i in range(SESSIONS)])
            await browser.close()
            return results, latencies

    results, latencies = asyncio.run(main())
    report = {"sessions": SESSIONS, "cycles_each": CYCLES, "median_ms": statistics.median(latencies),
              "p90_ms": sorted(latencies)[int(0.9 * len(latencies))], "max_ms": max(latencies)}
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
