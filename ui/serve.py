"""A real SpecViz server on a free loopback port, started from the repository root as `make app` starts it
(so .streamlit/config.toml applies): for the browser tests and the classroom load measurement."""
from __future__ import annotations

import contextlib
import os
import pathlib
import socket
import subprocess
import sys
import time
import urllib.request

ROOT = pathlib.Path(__file__).resolve().parent.parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def running_server(log_path: pathlib.Path = ROOT / "test-artifacts" / "server.log", env: dict | None = None):
    """Yields the server's URL once /_stcore/health answers "ok"; RuntimeError (with the log's tail) when it
    does not within a minute. env: variables set for this server only (SPECVIZ_DB: the store it keeps progress in)."""
    port = free_port()
    env = dict(os.environ, HF_HUB_OFFLINE="1", **(env or {}))
    log_path.parent.mkdir(parents=True, exist_ok=True)
    log = open(log_path, "w")  # a file, not a pipe: an unread pipe would block the server when full
    proc = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", str(ROOT / "app.py"), "--server.headless", "true",
         "--server.port", str(port), "--server.address", "127.0.0.1",
         "--server.fileWatcherType", "none"], cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        for _ in range(120):
            try:
                if urllib.request.urlopen(url + "/_stcore/health", timeout=2).read() == b"ok":
                    break
            except OSError:
                time.sleep(0.5)
        else:
            raise RuntimeError("streamlit did not start: " + log_path.read_text()[-2000:])
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()
