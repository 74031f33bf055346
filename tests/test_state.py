"""Issue 19 under AppTest: settings and the run survive page switches, the URL follows the settings and the
cursor, a link's ?step= reopens the same step, the prompt picker follows the text, and identical runs are
recorded once per server with a cursor per session."""
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

APP = str(Path(__file__).resolve().parent.parent / "app.py")
SPEC, BEAM, LAB = "pages/2_Speculative_decoding.py", "pages/1_Beam_search.py", "pages/3_Speedup_lab.py"
TREE = "pages/7_Tree_speculation.py"


def app(page=None, **query):
    at = AppTest.from_file(APP, default_timeout=180)
    for k, v in query.items():
        at.query_params[k] = v
    at.run()
    if page:
        at.switch_page(page).run()
    assert not at.exception, at.exception
    return at


def away_and_back(at, page):
    """A page switch and back, as a learner makes one."""
    at.switch_page(BEAM if page != BEAM else LAB).run()
    at.switch_page(page).run()
    assert not at.exception


def test_spec_settings_and_run_survive_a_page_switch():
    at = app(SPEC)
    at.selectbox(key="sp_drafter").select("n-gram lookup").run()
    at.radio(key="sp_mode").set_value("rejection sampling").run()
    at.slider(key="sp_k").set_value(6).run()
    at.toggle(key="sp_dynamic").set_value(True).run()
    at.select_slider(key="spec_speed").set_value(0.3).run()
    at.button(key="spec_whole").click().run()
    at.button(key="spec_step").click().run()
    replay = at.session_state["spec"].replay
    assert (replay.event, replay.phase) == (1, 0)
    q = dict(at.query_params)
    assert ((q["k"], q["drafter"], q["mode"], q["dynamic"], q["step"])
            == (["6"], ["ngram"], ["sampling"], ["1"], ["2.1"])
            or (q["k"], q["drafter"], q["mode"], q["dynamic"], q["step"]) == ("6", "ngram", "sampling", "1", "2.1"))
    at.switch_page(LAB).run()
    at.switch_page(BEAM).run()
    at.slider(key="bm_b").set_value(5).run()
    at.switch_page(SPEC).run()
    assert not at.exception
    assert at.selectbox(key="sp_drafter").value == "n-gram lookup"
    assert at.radio(key="sp_mode").value == "rejection sampling"
    assert at.slider(key="sp_k").value == 6 and at.toggle(key="sp_dynamic").value is True
    assert at.select_slider(key="spec_speed").value == 0.3
    # the same run, same step
    assert at.session_state["spec"].replay is replay and (replay.event, replay.phase) == (1, 0)
    at.switch_page(BEAM).run()
    assert at.slider(key="bm_b").value == 5


def test_a_links_step_reopens_the_same_screen_and_shares_the_recording():
    first = app(SPEC)
    first.button(key="spec_whole").click().run()
    first.button(key="spec_step").click().run()
    first.button(key="spec_step").click().run()
    mine = first.session_state["spec"].replay
    other = app(SPEC, step="2.2", k="4", drafter="feature", mode="greedy", max_new_tokens="48")
    theirs = other.session_state["spec"].replay
    assert (theirs.event, theirs.phase) == (1, 1) == (mine.event, mine.phase)
    assert theirs.recording is mine.recording  # the same settings: recorded once, one cursor each
    other.button(key="spec_back").click().run()
    assert (theirs.event, theirs.phase) == (1, 0) and (mine.event, mine.phase) == (1, 1)  # no session sees another's


def test_choosing_a_custom_prompt_shows_your_own_prompt():
    at = app(BEAM)
    at.selectbox(key="w_choice").select("What is 2+2? (beam beats greedy)").run()
    assert at.text_area(key="w_prompt").value == "What is 2+2?"
    at.text_area(key="w_prompt").input("Name three colours.").run()
    assert at.selectbox(key="w_choice").value == "Your own prompt"
    assert at.session_state["s_prompt"] == "Name three colours."
    at.switch_page(SPEC).run()  # the sidebar's widgets are new widgets on each page: they must keep the text
    assert at.text_area(key="w_prompt").value == "Name three colours."
    assert at.selectbox(key="w_choice").value == "Your own prompt"


@pytest.mark.fast  # model-free
def test_figures_are_built_once_for_the_same_events():
    from ui.charts import Figures

    calls = []

    def builder(events, upto):
        calls.append(upto)
        return object()

    cache, events = Figures(size=2), [object(), object()]
    a = cache.get(builder, (events, 0), {})
    assert cache.get(builder, (events, 0), {}) is a and calls == [0]
    cache.get(builder, (events, 1), {})
    cache.get(builder, (list(events), 1), {})  # another list: another figure
    assert calls == [0, 1, 1] and len(cache.items) == 2  # bounded


def test_the_page_records_ahead_while_the_learner_reads():
    """ui.stepping.controls asks the background worker for the events the next Steps will show: on opening, the
    first two (the first Step only draws); after a Step, the one after the next (a cycle-start Step only draws)."""
    import time

    def recorded(replay, n):
        end = time.monotonic() + 120
        while len(replay.events) < n:
            assert time.monotonic() < end, f"nothing recorded ahead: {len(replay.events)} events, wanted {n}"
            time.sleep(0.05)

    at = app(SPEC, drafter="ngram", seed="7", k="3", max_new_tokens="40")  # settings no other test records
    replay = at.session_state["spec"].replay
    assert replay.event == -1
    recorded(replay, 2)
    at.button(key="spec_whole").click().run()
    assert replay.event == 0
    recorded(replay, 3)  # event 1 by the Step itself, event 2 in the background
    at.button(key="spec_whole").click().run()
    assert replay.event == 1
    recorded(replay, 4)


def test_settings_from_a_link_survive_a_page_switch():
    """?drafter=, ?mode= and ?dynamic= set the widgets on a first visit; they must outlive a page switch like
    settings chosen by hand (they were dropped: keep() ran before the link's values were written)."""
    at = app(SPEC, drafter="ngram", mode="sampling", dynamic="1", k="16")
    assert at.selectbox(key="sp_drafter").value == "n-gram lookup"
    at.button(key="spec_whole").click().run()
    replay = at.session_state["spec"].replay
    away_and_back(at, SPEC)
    assert at.selectbox(key="sp_drafter").value == "n-gram lookup"
    assert at.radio(key="sp_mode").value == "rejection sampling"
    assert at.toggle(key="sp_dynamic").value is True and at.slider(key="sp_k").value == 16
    assert at.session_state["spec"].replay is replay and replay.event == 0  # and the run with them


def test_tree_page_link_carries_its_settings_and_they_survive_a_page_switch():
    """The tree page's "Copy link" named no page and none of its settings (it opened Home); its radios reset on
    a page switch."""
    at = app(TREE, drafter="feature", mode="sampling", budget="6", depth="3")
    assert at.radio(key="tr_drafter").value == "chain (feature draft)"
    assert at.radio(key="tr_mode").value == "sampling (T = 1)"
    at.button(key="tree_step").click().run()
    q = {k: at.query_params[k] for k in ("drafter", "mode", "budget", "depth", "step")}
    assert {k: v if isinstance(v, str) else v[0] for k, v in q.items()} == dict(
        drafter="feature", mode="sampling", budget="6", depth="3", step="1")
    link = next(c.value for c in at.code if "Tree_speculation?" in c.value)
    assert "drafter=feature" in link and "budget=6" in link
    replay = at.session_state["tree"].replay
    away_and_back(at, TREE)
    assert at.radio(key="tr_drafter").value == "chain (feature draft)"
    assert at.radio(key="tr_mode").value == "sampling (T = 1)"
    assert at.session_state["tree"].replay is replay and replay.event == 0


def test_tree_page_link_carries_edited_medusa_choices():
    """An edited medusa_choices list travels in the link (?choices=) and, read through the same ui.state.linked
    as the page's other settings, survives a page switch; the list a link carries is checked like typed text."""
    edited = "[(0,), (1,), (0, 0)]"
    at = app(TREE, drafter="medusa", choices=edited)
    if at.session_state["tr_drafter"] != "Medusa heads":
        pytest.skip("this build ships no Medusa heads")
    assert at.text_area(key="tr_choices").value == edited
    link = next(c.value for c in at.code if "Tree_speculation?" in c.value)
    assert "choices=" in link
    away_and_back(at, TREE)
    assert at.text_area(key="tr_choices").value == edited
    bad = app(TREE, drafter="medusa", choices="[(7, 7, 7)]")  # a path whose parent is not listed
    assert bad.text_area(key="tr_choices").value == "[(7, 7, 7)]" and bad.error  # said so, shipped list used


def test_a_progress_bar_says_how_long_is_left_from_the_pace_so_far(monkeypatch):
    # a walk's 4.6-minute run read only "200/400 samples" for minutes: it looked hung
    from ui import measured as M
    shown = []
    bar = M.ProgressBar.__new__(M.ProgressBar)
    bar.bar = type("Bar", (), {"progress": lambda self, f, text: shown.append((f, text))})()
    bar.start = 100.0
    monkeypatch.setattr(M.time, "monotonic", lambda: 250.0)  # 150 s spent
    bar(0.5, "200/400 samples")
    bar(0.02, "8/400 samples")  # too little done to know the pace: no guess
    bar(1.2, "done")
    assert shown == [(0.5, "200/400 samples — about 2 min left"), (0.02, "8/400 samples"), (1.0, "done")]
    assert M.left_in_words(42) == "about 40 s left" and M.left_in_words(2) == "about 5 s left"
