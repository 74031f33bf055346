"""The quiz state machine out of the page (issue 46), checked without Streamlit: a round from the page's filters
(saved progress or this session's), when a new round starts, the note and points recorded for a graded answer, the
graded interview's follow-ups, its state and its verdict table, and paging."""
import dataclasses
from types import SimpleNamespace

import pytest

from specviz.practice import quiz as Q
from specviz.practice.progress import RIGHT
from specviz.qa.bank import MockInterview, MockStep, QuizItem

pytestmark = pytest.mark.fast


def card(id, topic="t", level="L5"):
    return QuizItem(id, topic, level, f"prompt {id}", "answer", "src", "", "question")


ITEMS = [card(c) for c in "abcdef"]
MOCK = MockInterview("m", "A chain", "", tuple(MockStep(f"Q{n}?", ("x", "y"), "", "", "") for n in (1, 2, 3)))


class Store:
    """Progress as round_for reads it: the saved missed cards and the Leitner order."""

    def __init__(self):
        self.calls = []

    def missed(self, learner):
        self.calls.append(("missed", learner))
        return {"b", "e"}

    def due_order(self, learner, ids):
        self.calls.append(("due", learner))
        return sorted(ids, reverse=True)


def test_a_round_from_the_filters_reads_saved_progress_only_with_a_learner():
    history = {"a": 0.0, "c": 1.0}
    key = ((), (), True, False, 0)
    assert sorted(Q.round_for(ITEMS, key, 7, 1, history)) == ["a"]  # this session's missed card
    store = Store()
    assert sorted(Q.round_for(ITEMS, key, 7, 1, history, store, 3)) == ["b", "e"]
    assert store.calls == [("missed", 3)]
    assert sorted(Q.round_for(ITEMS, key, 7, 1, history, store, None)) == ["a"]  # no name: the session's
    # due first: the store's order with a learner, else this session's (missed, unseen, right)
    due = ((), (), False, True, 3)
    assert Q.round_for(ITEMS, due, 7, 1, history, Store(), 3) == ["f", "e", "d"]
    assert Q.round_for(ITEMS, due, 7, 1, history)[0] == "a"
    assert "c" not in Q.round_for(ITEMS, ((), (), False, True, 5), 7, 1, history)  # the right one comes last
    # the plain filters: the session's shuffle, cut to the size
    assert Q.round_for(ITEMS, ((), (), False, False, 0), 7, 2, {}) == Q.shuffled(list("abcdef"), 7, 2)


def test_a_new_round_starts_for_other_filters_or_a_card_gone_from_the_bank():
    key = (("t",), (), False, False, 10)
    r = Q.Round(["a", "b"], key)
    known = {"a": 1, "b": 2}
    assert Q.needs_new_round(None, key, known)
    assert not Q.needs_new_round(r, key, known)
    assert Q.needs_new_round(r, ((), (), False, False, 10), known)
    assert Q.needs_new_round(r, key, {"a": 1})


def test_the_round_counts_right_cards_and_the_summary_its_share_of_points():
    r = Q.Round(["a", "b", "c"])
    for score in (1.0, RIGHT, 0.5):
        r.grade(score)
        r.next()
    assert r.right == 2
    by_id = {i.id: i for i in ITEMS}
    assert Q.summarize(r.order, r.scores, by_id).percent == pytest.approx(100 * (1.5 + RIGHT) / 3)
    assert Q.summarize([], {}, by_id).percent == 0


def test_the_note_after_a_card_says_its_box_only_when_saved():
    assert Q.score_note(0.5) == "Last card: 0.5 of 1."
    note = Q.score_note(1.0, 2)
    assert note.startswith("Last card: 1 of 1. ") and note.endswith(Q.box_message(2))


def point(text, made, confidence=0.9, evidence=""):
    return SimpleNamespace(point=text, made=made, confidence=confidence, evidence=evidence)


def test_overruled_points_count_the_other_way_but_keep_the_graders_verdict():
    points = [point("p0", True), point("p1", False), point("p2", False)]
    made = [True, True, False]  # the learner overruled p1
    assert Q.made_score(made) == pytest.approx(2 / 3) and Q.made_score([]) == 0
    assert Q.point_rows(points, made) == [(0, "p0", True, True), (1, "p1", False, True), (2, "p2", False, False)]
    assert Q.point_rows(points) == [(0, "p0", True, True), (1, "p1", False, False), (2, "p2", False, False)]


def asked(card_id, points, score=0.5, answer="an answer"):
    return Q.Asked(card_id, "q", "why", answer, tuple((p, made, "", conf) for p, made, conf in points), score)


def test_the_follow_up_is_on_the_first_missed_point_of_the_rubric():
    """A rubric lists the heart of the answer first: a walk in Chromium saw the point the grader was surest was
    missed (a side remark, "engines do this for n-gram drafts") followed up while the core ones went unprobed."""
    seen = []

    def pick(missed_point, exclude, made):
        seen.append((missed_point, list(exclude), list(made)))
        return SimpleNamespace(id="other", question="Why is it exact?")

    first = asked("m:1", [("made it", True, 0.99), ("core miss", False, 0.6), ("side miss", False, 0.95)])
    card_id, question, why = Q.next_question(MOCK, [first], pick)
    assert (card_id, question) == ("other", "Why is it exact?") and "core miss" in why
    # asked cards are never asked again, nor what was made, nor the chain's questions still to come
    assert seen == [("core miss", ["m:1", "m:2", "m:3"], ["made it"])]
    # after a follow-up: the chain's next question, even if the follow-up missed points too
    follow = asked("other", [("a point", False, 0.9)])
    assert Q.next_question(MOCK, [first, follow], pick)[:2] == ("m:2", "Q2?")
    # nothing missed, or no card close to the point: the chain's next question
    full = asked("m:1", [("made it", True, 0.9)])
    assert Q.next_question(MOCK, [full], pick)[0] == "m:2"
    assert Q.next_question(MOCK, [first], lambda p, e, m: None)[0] == "m:2"


def test_a_graded_interview_asks_every_chain_question_and_at_most_two_follow_ups():
    asked_ = []
    always = lambda p, e, m: SimpleNamespace(id=f"f{len(e)}", question="follow-up?")
    while (nxt := Q.next_question(MOCK, asked_, always)) is not None:
        asked_.append(asked(nxt[0], [("x", False, 0.9)]))
        assert len(asked_) <= len(MOCK.steps) + Q.MAX_FOLLOW_UPS
    # one follow-up at a time, then back to the chain; the chain's last question is asked whatever was missed
    assert [a.card for a in asked_] == ["m:1", "f3", "m:2", "f4", "m:3"]
    never = lambda p, e, m: None
    done = []
    while (nxt := Q.next_question(MOCK, done, never)) is not None:
        done.append(asked(nxt[0], [("x", False, 0.9)]))
    assert [a.card for a in done] == ["m:1", "m:2", "m:3"]
    # the last chain question's answer can be followed up too, within the two; a one-question chain included
    late = [asked("m:1", [("x", True, 0.9)]), asked("m:2", [("x", True, 0.9)]), asked("m:3", [("x", False, 0.9)])]
    assert Q.next_question(MOCK, late, always)[0] == "f3"
    assert Q.next_question(MOCK, late + [asked("f3", [("x", False, 0.9)])], always) is None
    one = dataclasses.replace(MOCK, steps=MOCK.steps[:1])
    assert Q.next_question(one, [asked("m:1", [("x", False, 0.9)])], always)[0] == "f1"
    assert Q.next_question(one, [asked("m:1", [("x", True, 0.9)])], always) is None


def test_the_graded_interview_state_is_kept_per_chain():
    s = Q.graded_state(None, "m")
    assert s == {"id": "m", "asked": [], "recorded": False}
    s["asked"].append("x")
    assert Q.graded_state(s, "m") is s
    assert Q.graded_state(s, "other") == {"id": "other", "asked": [], "recorded": False}


def test_an_answer_graded_becomes_a_step_of_the_transcript():
    grade = SimpleNamespace(points=[point("p0", True, 0.8, "said it"), point("p1", False, 0.7)], score=0.5)
    a = Q.asked_from("m:1", "Q1?", "the chain's first question", "line one\nline two", grade)
    assert a.points == (("p0", True, "said it", 0.8), ("p1", False, "", 0.7)) and a.score == 0.5
    md = Q.transcript("A chain", [a], Q.mock_verdict([a.score]), "Ada", "2026-11-29")
    assert md.startswith("# Mock interview: A chain\n\nAda · 2026-11-29\n\n")  # whose, and when
    assert "> line one\n> line two" in md  # a multi-line answer stays quoted
    assert "- ✓ p0 — “said it”" in md and "- ✗ p1\n" in md and "## Verdict: L5" in md


def test_the_verdict_tables_and_the_step_to_work_on():
    assert Q.step_rows(MOCK, [1.0, 0.5, 0.25]) == [{"Step": 1, "Question": "Q1?", "Score": "100\u00a0%"},
                                                   {"Step": 2, "Question": "Q2?", "Score": "50\u00a0%"},
                                                   {"Step": 3, "Question": "Q3?", "Score": "25\u00a0%"}]
    steps = [asked("m:1", [], 2 / 3), asked("other", [], 0.0), asked("m:2", [], 1.0)]
    assert Q.chain_steps(MOCK, steps) == [0, 2]  # the follow-up is shown, and is not in the level
    assert Q.asked_rows(MOCK, steps) == [
        {"Step": 1, "Question": "q", "Why asked": "why", "Score": "67\u00a0%", "In the level": "yes"},
        {"Step": 2, "Question": "q", "Why asked": "why", "Score": "0\u00a0%", "In the level": "no: a follow-up"},
        {"Step": 3, "Question": "q", "Why asked": "why", "Score": "100\u00a0%", "In the level": "yes"}]
    assert Q.work_on(Q.mock_verdict([1, 0.5, 0.75]), [1, 0.5, 0.75]) == 1
    assert Q.work_on(Q.mock_verdict([1, 1]), [1, 1]) is None  # nothing to work on when every step is full
    past = Q.past_results([("m", "L5", 0.62), ("n", "L6", 1.0), ("m", "L6", 0.9)], "m")
    assert past == "L5 (62\u00a0%), L6 (90\u00a0%)"


def test_the_mock_knows_its_last_step():
    m = Q.Mock("m", 2)
    assert not m.last
    m.score(1)
    assert m.last
    m.score(1)
    assert m.done and not m.last


def test_paging_and_labels():
    assert [Q.page_count(n, 20) for n in (0, 1, 20, 21, 130)] == [1, 1, 1, 2, 7]
    assert Q.page_of(list(range(45)), 3, 20) == list(range(40, 45)) and Q.page_of([], 1, 20) == []
    assert Q.level_label("L5") == "L5 · mechanics and trade-offs" and Q.level_label("L9") == "L9 · "
    assert set(Q.KIND_NAMES) == {"question", "truefalse", "code"}


def test_a_retry_during_a_round_is_asked_next_and_the_round_goes_on():
    """A walk in Chromium: a Retry on a weak point, 3 cards into a 10-card round, replaced the round by a one-card
    one. Now the card is asked next (after the card in front of the learner, if that one is graded or revealed)."""
    r = Q.Round(["a", "b", "c", "d"])
    r.grade(1.0)
    r.next()  # on "b", nothing typed or graded yet
    assert Q.retry_in_round(r, "x", busy=False) == "now" and r.order == ["a", "x", "b", "c", "d"] and r.current == "x"
    assert Q.retry_in_round(r, "d", busy=True) == "next" and r.order == ["a", "x", "d", "b", "c"]  # after the shown
    assert Q.retry_in_round(r, "x", busy=False) == "here" and r.order == ["a", "x", "d", "b", "c"]  # it is shown
    assert Q.retry_in_round(r, "a", busy=False) == "now" and r.order[:2] == ["a", "a"] and r.current == "a"
    assert not r.graded and r.scores == {"a": 1.0}  # asked again: open, its old score counts until the new one
    r.grade(0.5)
    assert r.graded and Q.retry_in_round(r, "a", busy=False) == "next" and r.order[1:3] == ["a", "a"]
    r.next()
    assert r.current == "a" and not r.graded  # the second asking opens ungraded too
    by_id = {c: SimpleNamespace(level="L4", topic="t") for c in "axdbc"}
    s = Q.summarize(r.order, r.scores, by_id)
    assert (s.cards, s.score) == (1, 0.5)  # counted once, with its newest score
    r.i = len(r.order)
    assert Q.retry_in_round(r, "x", busy=False) is None and Q.retry_in_round(None, "x", busy=False) is None


def test_a_mock_steps_point_can_be_overruled_and_back():
    grade = SimpleNamespace(points=[SimpleNamespace(point="p0", made=True, evidence="said it", confidence=0.8),
                                    SimpleNamespace(point="p1", made=False, evidence=None, confidence=0.7)], score=0.5)
    a = Q.asked_from("m:1", "Q1?", "the chain's first question", "an answer", grade)
    assert a.graded == (True, False) and not Q.overruled(a, 1)
    Q.overrule(a, 1)
    assert a.score == 1.0 and Q.overruled(a, 1) and not Q.overruled(a, 0)
    assert Q.asked_point_rows(a) == [(0, "p0", True, True), (1, "p1", False, True)]  # stored as overruled
    md = Q.transcript("A chain", [a], None)
    assert "- ✓ p1 (overruled by you)\n" in md and "- ✓ p0 — “said it”" in md
    Q.overrule(a, 0)  # the made point overruled: its evidence is no longer quoted as making it
    assert a.score == 0.5 and "- ✗ p0 (overruled by you)\n" in Q.transcript("A chain", [a], None)
    Q.overrule(a, 1)
    Q.overrule(a, 0)  # and back: the grader's own again
    assert a.score == 0.5 and a.points[0][1] and not any(Q.overruled(a, n) for n in range(2))


def test_an_interview_is_stored_and_read_back_whole():
    grade = SimpleNamespace(points=[SimpleNamespace(point="p0", made=True, evidence="said <it>", confidence=0.8),
                                    SimpleNamespace(point="p1", made=False, evidence=None, confidence=0.7)], score=0.5)
    a = Q.asked_from("m:1", "Q1?", "the chain's first question", "line one\nline two", grade)
    a.at = 12.5
    Q.overrule(a, 1)
    state = {"id": "m", "asked": [a], "recorded": 99.25, "done": True}
    back = Q.interview_from_json(Q.interview_json(state), "m")
    assert back == state
    assert Q.interview_from_json(Q.interview_json(state), "other") is None  # another chain's
    for bad in (None, "", "not json", "[1, 2]", '{"id": "m"}', "x" * (Q.MAX_STATE + 1)):
        assert Q.interview_from_json(bad, "m") is None  # starts afresh, never a traceback
