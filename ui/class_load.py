"""A classroom on one server, with the students' browsers on their own machines: N sessions speak the app's
websocket protocol (what Streamlit's JavaScript sends when a button is clicked: a rerun carrying the button's
trigger), step the Speculative page at once, and time every Step from the click to the server's "script
finished", every chart and chip of the redraw received. No browser runs here, so the figure is the
server's half of a classroom (queueing for the engine, figures, serialisation), the half one server can
be held to; tests/test_load.py measures the same load with 8 headless Chromiums on the server's own cores.

    python -m ui.class_load                      # starts a server, 8 sessions x 20 Steps, prints the JSON
    python -m ui.class_load --url http://127.0.0.1:8501 --sessions 8 --cycles 20
    python -m ui.class_load --servers 2 --sessions 60   # a cohort over 2 servers (sessions dealt in turn)
    python -m ui.class_load --url http://a:8501,http://b:8501 --sessions 60

With several servers, session i goes to server i mod N (a sticky balancer's effect: one session, one server), and
the servers started here share SPECVIZ_DB from the environment (a cohort's postgresql:// URL).

Each session gets its own prompt and seed (nothing is shared between them: the worst case for the
per-server trace cache), speculative sampling with the n-gram drafter at K = 4, as tests/test_load.py.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import re
import statistics
import time
import urllib.parse

import websockets
from streamlit.proto.BackMsg_pb2 import BackMsg
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

PROMPTS = ["Count from one to twenty in words.", "List five fruits and their colors.", "Write a haiku about rain.",
           "What is a linked list?", "Name the days of the week.", "Say hello in three languages.",
           "Describe a cat in one sentence.", "Give two tips for studying."]
STEP = "Next cycle ⏩"
CHIP = re.compile(r'<span class="chip" data-tok="(\d+)"')


def session_query(i: int, seed0: int = 100) -> str:
    """Session i's settings, as a link would carry them (the page reads them on a first visit): its own prompt
    and seed seed0 + i."""
    return urllib.parse.urlencode({"prompt": PROMPTS[i % len(PROMPTS)], "mode": "sampling", "drafter": "ngram",
                                   "seed": seed0 + i, "k": 4, "max_new_tokens": 128})


class Session:
    """One browser tab, without the browser: the page's elements by delta path, as the frontend keeps them."""

    def __init__(self, url: str, page: str, query: str):
        self.ws_url = url.replace("http", "ws", 1).rstrip("/") + "/_stcore/stream"
        self.page, self.query, self.page_hash = page, query, ""
        self.elements: dict[tuple, object] = {}  # delta path -> Element proto
        self.fragments: dict[tuple, str] = {}  # delta path -> the fragment that drew it
        self.errors: list[str] = []

    async def open(self) -> float:
        self.ws = await websockets.connect(self.ws_url, subprotocols=["streamlit"], max_size=None)
        return await self.rerun()

    async def close(self) -> None:
        await self.ws.close()

    async def rerun(self, trigger: str = "", fragment_id: str = "") -> float:
        """Send one rerun (a click when trigger is a button's id) and wait until the script finished:
        the milliseconds in between."""
        msg = BackMsg()
        state = msg.rerun_script
        state.query_string, state.page_name, state.page_script_hash = self.query, self.page, self.page_hash
        if trigger:
            w = state.widget_states.widgets.add()
            w.id, w.trigger_value = trigger, True
        if fragment_id:
            state.fragment_id = fragment_id
        t0 = time.perf_counter()
        await self.ws.send(msg.SerializeToString())
        while True:
            fm = ForwardMsg()
            fm.ParseFromString(await self.ws.recv())
            kind = fm.WhichOneof("type")
            if kind == "new_session":
                self.page_hash = fm.new_session.page_script_hash
            elif kind == "page_info_changed":  # the page keeps the address bar in sync with its settings
                self.query = fm.page_info_changed.query_string
            elif kind == "delta" and fm.delta.WhichOneof("type") == "new_element":
                path = tuple(fm.metadata.delta_path)
                self.elements[path] = fm.delta.new_element
                self.fragments[path] = fm.delta.fragment_id
                if fm.delta.new_element.WhichOneof("type") == "exception":
                    self.errors.append(fm.delta.new_element.exception.message)
            elif kind == "script_finished" and fm.script_finished != ForwardMsg.FINISHED_EARLY_FOR_RERUN:
                return (time.perf_counter() - t0) * 1000  # (a run cut short for a rerun is followed by that rerun)

    def button(self, label: str):
        """(the button's widget id, its fragment id) or None when the page shows no such button."""
        for path, el in self.elements.items():
            if el.WhichOneof("type") == "button" and el.button.label == label:
                return el.button.id, self.fragments[path], el.button.disabled
        return None

    def tokens(self) -> list[int]:
        """The answer's token ids as the page shows them: the chip row with the most chips."""
        rows = [CHIP.findall(el.markdown.body) for el in self.elements.values() if el.WhichOneof("type") == "markdown"]
        return [int(t) for t in max(rows, key=len, default=[])]


async def one_session(url: str, i: int, cycles: int, latencies: list, seed0: int, step: str = STEP,
                      read_ms: float = 0, query: str | None = None) -> tuple[list[str], list[int]]:
    s = Session(url, "Speculative_decoding", session_query(i, seed0) if query is None else query)
    await s.open()
    await asyncio.sleep(read_ms / 1000)  # reading the page before the first click
    for _ in range(cycles):
        found = s.button(step)
        if found is None or found[2]:  # no button, or disabled: the answer ended before `cycles` Steps
            break
        before = len(s.tokens())
        ms = await s.rerun(found[0], found[1])
        if step == STEP and len(s.tokens()) <= before:
            s.errors.append(f"a Step drew no new token ({before} before and after)")
        latencies.append(ms)
        await asyncio.sleep(read_ms / 1000)  # a learner reading the screen before the next click
    tokens = s.tokens()
    await s.close()
    return s.errors, tokens


async def classroom(url: str | list[str], sessions: int, cycles: int, seed0: int = 100, step: str = STEP,
                    read_ms: float = 0, query: str | None = None) -> tuple[dict, list]:
    """N sessions stepping at once. On a server that already ran the same settings, the traces are cached and
    only replayed: pass another seed0 to measure the computing case. step: the button each click presses;
    read_ms: a pause after each Step; query: the same settings for every session instead of their own.
    url: one server, or a list (session i on server i mod N)."""
    urls = [url] if isinstance(url, str) else list(url)
    latencies: list[float] = []
    t0 = time.perf_counter()
    results = await asyncio.gather(*[one_session(urls[i % len(urls)], i, cycles, latencies, seed0, step, read_ms,
                                                 query) for i in range(sessions)])
    ordered = sorted(latencies)
    report = {"servers": len(urls), "sessions": sessions, "cycles_each": cycles, "steps": len(ordered),
              "median_ms": round(statistics.median(ordered), 1), "p90_ms": round(ordered[int(0.9 * len(ordered))], 1),
              "max_ms": round(ordered[-1], 1), "wall_s": round(time.perf_counter() - t0, 1)}
    return report, results


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--url", help="running SpecViz servers, comma-separated (default: start --servers on free ports)")
    ap.add_argument("--servers", type=int, default=1, help="servers to start when no --url is given (default 1)")
    ap.add_argument("--sessions", type=int, default=8)
    ap.add_argument("--cycles", type=int, default=20, help="clicks per session")
    ap.add_argument("--step", action="store_true",
                    help='click "Step ▶" (one phase of a cycle) instead of "Next cycle ⏩" (a whole cycle)')
    ap.add_argument("--read-ms", type=float, default=0, help="pause after each click, as a reader (default 0)")
    ap.add_argument("--defaults", action="store_true",
                    help="the page's default settings for every session (shared trace) instead of their own")
    ap.add_argument("--seed0", type=int, default=100)
    a = ap.parse_args(argv)
    run = lambda url: classroom(url, a.sessions, a.cycles, a.seed0, "Step ▶" if a.step else STEP, a.read_ms,
                                "" if a.defaults else None)
    if a.url:
        report, results = asyncio.run(run(a.url.split(",")))
    else:
        import contextlib
        import pathlib

        from .serve import running_server
        with contextlib.ExitStack() as servers:
            urls = [servers.enter_context(running_server(pathlib.Path("/tmp") / f"specviz-class-load-{n}.log"))
                    for n in range(max(1, a.servers))]
            report, results = asyncio.run(run(urls))
    report["errors"] = sum(len(e) for e, _ in results)
    print(json.dumps(report, indent=1))
    return 1 if report["errors"] else 0


if __name__ == "__main__":
    raise SystemExit(main())
