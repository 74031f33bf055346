"""The Practice page under AppTest: a drill answered wrong then right, its worked solution and link, the history
kept in the database under the learner's name, a live drill from the model's own cycle."""
from pathlib import Path

from streamlit.testing.v1 import AppTest

from specviz.practice.drills import make

ROOT = Path(__file__).resolve().parent.parent


def practice(name=""):
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=180)
    at.run()
    at.switch_page("pages/10_Practice.py")
    at.session_state["dr_seed"] = 11
    if name:
        at.session_state["s_learner"] = name
    at.run()
    assert not at.exception, at.exception
    return at


def test_a_drill_answered_wrong_then_right_with_its_solution():
    at = practice("Practice Tester")
    at.selectbox(key="dr_choice").set_value("Walltime improvement").run()
    d = make("walltime", 11)
    assert any(d.question[:40] in m.value for m in at.markdown)
    at.text_input(key="dr_text_walltime_11").set_value(str(d.answer + 0.5))
    next(b for b in at.button if b.label.startswith("Check")).click().run()
    assert not at.exception and at.error and "Not right" in at.error[0].value
    assert not any("Solution" in m.value for m in at.markdown)  # a retry is still a test
    at.text_input(key="dr_text_walltime_11").set_value(str(d.answer))
    next(b for b in at.button if b.label.startswith("Check")).click().run()
    assert at.success and "Right" in at.success[0].value
    assert any("Solution" in m.value for m in at.markdown)  # shown once it is right
    table = at.table[0].value
    assert list(table["tried"]) == [2] and list(table["right"]) == [1]  # both attempts kept under the name
    # a new session with the same name reads the history back
    again = practice("Practice Tester")
    assert list(again.table[0].value["tried"]) == [2]
    # New drill moves on
    again.button(key="dr_new").click().run()
    assert again.session_state["dr_seed"] == 12


def test_a_choice_drill_and_a_live_drill():
    at = practice()
    at.selectbox(key="dr_choice").set_value("Accept or reject (p, q, u)").run()
    d = make("accept", 11)
    at.radio(key="dr_pick_accept_11").set_value(d.answer)
    next(b for b in at.button if b.label.startswith("Check")).click().run()
    assert at.success and not at.exception
    assert any("Type a name" in c.value for c in at.caption)
    # read the solution first, then answer: shown right, not counted
    at.button(key="dr_new").click().run()
    d2 = make("accept", 12)
    at.toggle(key="dr_show_accept_12").set_value(True).run()
    at.radio(key="dr_pick_accept_12").set_value(d2.answer)
    next(b for b in at.button if b.label.startswith("Check")).click().run()
    assert "not counted" in at.success[0].value and at.session_state["dr_history"][-1][2] is False
    at.selectbox(key="dr_choice").set_value("Live: accept or reject a real draft token").run()
    assert not at.exception and any("real cycle of the model" in m.value for m in at.markdown)
