"""The home page's one-week study path: days tick off from the learner's progress."""
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from specviz.practice.drills import DRILLS
from specviz.practice.plan import WEEK, complete, status
from ui.registry import BY_PATH


@pytest.mark.fast
def test_the_week_links_real_pages_and_drills_and_ticks_off():
    for d in WEEK:
        assert all(p in BY_PATH for p in d.pages) and all(k in DRILLS for k in d.drills)
        assert d.drills or d.predictions or d.quiz_cards or d.mocks  # every day can be completed
        assert not d.predictions or d.predict_on in ("speculative", "beam", "tree")  # the pages that record them
    assert not any(complete(parts) for _, parts in status({}, 0, {}, 0))
    full = status({k: (9, 9) for k in DRILLS}, 99, {"speculative": 99, "beam": 99, "tree": 99}, 9)
    assert all(complete(parts) for _, parts in full)
    day3 = status({"residual": (5, 2), "accept": (1, 1)}, 0, {}, 0)[2][1]
    assert day3 == [("drills right", 3, 3)]  # 2 + 1 drills right of the day's kinds
    day5 = status({"tree-walk": (2, 2)}, 0, {"tree": 1}, 0)[4][1]
    assert day5 == [("drills right", 2, 2), ("predictions", 1, 3)] and not complete(day5)


def test_home_shows_the_plan_with_the_learners_progress():
    at = AppTest.from_file(str(Path(__file__).resolve().parent.parent / "app.py"), default_timeout=180)
    at.session_state["s_learner"] = "Plan Tester"
    at.run()
    assert not at.exception
    from ui.learner import progress
    p = progress()
    me = p.learner("Plan Tester")
    for seed in range(3):
        p.record_drill(me, "kv-gib", seed, True, "1")
    at.run()
    text = " ".join(m.value for m in at.markdown)
    assert "Day 6 · Serving" in text and "(drills right 3/3)" in text
    assert "1 of 7 days done" in " ".join(e.label for e in at.expander)
