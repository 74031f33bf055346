"""How long each page takes to open in a real headless Chromium (issue 45, item D), on a fresh server: every page
twice (ui/open_times.py; the first round pays the models' load once). The times go to test-artifacts/open_times.json;
the test fails on an exception, and on a page that takes over 10 s once the server is warm: a page that computes on
opening (the Where the speedup goes page took 23-44 s before its measurements moved onto buttons). The target is
3 s (ui.open_times.LIMIT_S); the bound here is looser because these cores are shared with the rest of the suite."""
import json
import os
from pathlib import Path

import pytest

from conftest import streamlit_server
from ui.open_times import LIMIT_S, measure

ROOT = Path(__file__).resolve().parent.parent
pytestmark = [pytest.mark.browser,
              pytest.mark.skipif(os.environ.get("SPECVIZ_SKIP_BROWSER") == "1", reason="SPECVIZ_SKIP_BROWSER=1")]
WARM_BOUND_S = 10.0


def test_every_page_opens_quickly_on_a_fresh_server():
    with streamlit_server("server_open_times.log") as url:
        rows = measure(url, shots=ROOT / "test-artifacts" / "open-times")
    (ROOT / "test-artifacts" / "open_times.json").write_text(json.dumps({"limit_s": LIMIT_S, "pages": rows}, indent=1))
    assert all(r["exceptions"] == 0 for r in rows), rows
    slow = {r["page"]: r["opens"] for r in rows if r["opens"][1] > WARM_BOUND_S}
    assert not slow, slow
