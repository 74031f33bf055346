"""Memory stays flat over 500 steps and 20 resets in one session."""
import json
import os
from pathlib import Path

import psutil
from streamlit.testing.v1 import AppTest

ROOT = Path(__file__).resolve().parent.parent


def test_memory_flat_over_500_steps_and_20_resets():
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=180)
    at.run()
    at.switch_page("pages/2_Speculative_decoding.py")
    at.session_state["sp_drafter"] = "n-gram lookup"
    at.session_state["sp_max"] = 128
    at.run()
    proc = psutil.Process(os.getpid())
    steps, rss = 0, []
    for reset in range(20):
        for _ in range(25):
            at.button(key="spec_whole").click().run()
            steps += 1
        assert not at.exception
        rss.append(proc.memory_info().rss / 2**20)
        at.button(key="spec_reset").click().run()
    growth = rss[-1] - rss[1]  # after the first round has warmed every cache
    out = ROOT / "test-artifacts"
    out.mkdir(exist_ok=True)
    (out / "memory.json").write_text(json.dumps({"steps": steps, "resets": 20, "rss_mb": rss}, indent=1))
    assert steps == 500
    assert growth < 100, rss
