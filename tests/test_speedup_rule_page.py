"""The speedup lab says "don't speculate" when a <= c (Leviathan et al. Corollary 3.9) and calls its formulas
estimates, not bounds (issue 20, items 7 and 8)."""
from pathlib import Path

from streamlit.testing.v1 import AppTest

ROOT = Path(__file__).resolve().parent.parent


def test_speedup_lab_shows_the_a_greater_than_c_rule():
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=180)
    at.run()
    at.switch_page("pages/3_Speedup_lab.py").run()
    assert not at.exception
    assert any("pays only if a > c" in i.value for i in at.info)
    at.slider(key="sl_a").set_value(0.1).run()
    at.slider(key="sl_c").set_value(0.3).run()
    assert not at.exception
    metrics = {m.label: m.value for m in at.metric}
    assert (metrics["Best K for this a and c"].startswith("0")
            and "don't speculate" in metrics["Best K for this a and c"])
    assert any("don't speculate" in w.value for w in at.warning)
    assert "Estimated walltime improvement" in metrics
    assert not any("bound" in m.label for m in at.metric)
