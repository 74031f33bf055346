"""The Tree speculation page under AppTest: one step draws the tree and the mask."""
from pathlib import Path

from streamlit.testing.v1 import AppTest

APP = str(Path(__file__).resolve().parent.parent / "app.py")


def test_tree_page_steps_and_draws():
    at = AppTest.from_file(APP, default_timeout=300)
    at.run()
    at.switch_page("pages/7_Tree_speculation.py").run()
    assert not at.exception, at.exception
    at.button(key="tree_step").click().run()
    assert not at.exception, at.exception
    charts = at.get("plotly_chart")
    assert len(charts) >= 2
    assert any(m.label == "Tokens per target pass" for m in at.metric)
