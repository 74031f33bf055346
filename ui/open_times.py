"""How long each page takes to open, as a learner waits for it (issue 45, item D): a fresh server, every registered
page opened in headless Chromium (Debian's, driven by Playwright), each in a new tab (a new session), twice over.
The first round includes what a fresh server does once (loading the models: the first page opened pays it); the
second finds the server warm. Each open is timed from the navigation until the page's script has finished and its
content is drawn: `[data-testid=stApp][data-test-script-state=notRunning]`, the title and the sidebar's prompt
shown, no loading skeleton left, and all of that still so half a second later (a page that reruns itself is not
done at its first pause).

    python -m ui.open_times                                  # a fresh server, every page twice; JSON on stdout
    python -m ui.open_times --shots /tmp/shots               # and a full-page screenshot of each second open
    python -m ui.open_times --pages Where_speedup_goes --url http://127.0.0.1:8501   # a server already running

Needs Playwright and Chromium at /usr/bin/chromium (`make browser`; never `playwright install`).
"""
from __future__ import annotations

import argparse
import contextlib
import json
import pathlib
import shutil
import sys
import time

from ui.registry import PAGES

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
LIMIT_S = 3.0  # issue 45 D: a page opens within 3 s once the models are loaded
READY_JS = """() => {
  const app = document.querySelector('[data-testid=stApp]');
  return !!app && app.getAttribute('data-test-script-state') === 'notRunning'
    && !!document.querySelector('[data-testid=stMain] h1')
    && !!document.querySelector('[data-testid=stSidebar] textarea')
    && document.querySelectorAll('[data-testid=stSkeleton]').length === 0;
}"""


def page_paths() -> list[tuple[str, str]]:
    """(title, URL path) of every page: Home, then the registered pages in their sidebar order."""
    return [("Home", "")] + [(p.title, pathlib.Path(p.path).stem.split("_", 1)[1]) for p in PAGES]


def wait_ready(page, timeout_s: float = 600.0, still_s: float = 0.5) -> float:
    """perf_counter() at which the page became ready and then stayed ready for still_s; TimeoutError after
    timeout_s."""
    end = time.perf_counter() + timeout_s
    since = None
    while time.perf_counter() < end:
        now = time.perf_counter()
        if page.evaluate(READY_JS):
            since = since or now
            if now - since >= still_s:
                return since
        else:
            since = None
        time.sleep(0.05)
    raise TimeoutError(f"{page.url} was not ready within {timeout_s:.0f} s")


def open_once(browser, url: str, shot: pathlib.Path | None = None, timeout_s: float = 600.0) -> dict:
    """Open url in a new tab: seconds until ready, and whether an exception is shown."""
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    try:
        t0 = time.perf_counter()
        page.goto(url, timeout=timeout_s * 1000, wait_until="commit")
        seconds = wait_ready(page, timeout_s) - t0
        errors = page.locator("[data-testid=stException]").count()
        if shot:
            shot.parent.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(shot), full_page=True)
        return {"seconds": round(seconds, 2), "exceptions": errors}
    finally:
        page.close()


def measure(url: str, only: list[str] | None = None, shots: pathlib.Path | None = None, rounds: int = 2) -> list[dict]:
    """Every page (or those whose URL path is in `only`), opened `rounds` times in a row, round by round: one row per
    page, {"page", "path", "opens": [seconds, ...], "exceptions"}."""
    from playwright.sync_api import sync_playwright

    pages = [(t, p) for t, p in page_paths() if not only or p in only]
    rows = [{"page": t, "path": p, "opens": [], "exceptions": 0} for t, p in pages]
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        try:
            for r in range(rounds):
                for row in rows:
                    shot = shots / f"{row['path'] or 'home'}.png" if shots and r == rounds - 1 else None
                    got = open_once(browser, f"{url}/{row['path']}", shot)
                    row["opens"].append(got["seconds"])
                    row["exceptions"] += got["exceptions"]
                    print(f"round {r + 1}: {row['page']}: {got['seconds']:.2f} s", file=sys.stderr, flush=True)
        finally:
            browser.close()
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--url", help="a server already running (default: start a fresh one)")
    ap.add_argument("--pages", nargs="*", help="URL paths to open (default: every page; Home is '')")
    ap.add_argument("--shots", type=pathlib.Path, help="save a screenshot of each page's last open here")
    ap.add_argument("--rounds", type=int, default=2)
    args = ap.parse_args(argv)
    if args.url:
        server = contextlib.nullcontext(args.url.rstrip("/"))
    else:
        from ui.serve import running_server
        server = running_server(pathlib.Path("/tmp") / "specviz-open-times-server.log")
    with server as url:
        rows = measure(url, args.pages, args.shots, args.rounds)
    slow = [r["page"] for r in rows if r["opens"][1:] and max(r["opens"][1:]) > LIMIT_S]
    print(json.dumps({"limit_s": LIMIT_S, "pages": rows, "over_limit_when_warm": slow}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
