"""specviz.practice.quiz: the shuffle, rounds from filters, grading, the round summary and the mock verdict.
Expectations come from the bank as it is at run time (its content grows), never from fixed counts."""
import pytest

from specviz.practice import quiz as Q
from specviz.practice.progress import RIGHT, Progress
from specviz.qa.bank import LEVELS, CodeCard, QuizItem, quiz_items

pytestmark = pytest.mark.fast


def card(id, topic="t", level="L5", kind="question", truth=None, code=None):
    return QuizItem(id, topic, level, f"prompt {id}", "answer", "src", "", kind, truth=truth, code=code)


CODE = CodeCard("c1", "t", "L5", "a loop", "x = 1\ny = x + 1\nreturn y", 2, ("keep", "y = x", "y = 0"), 1, "why",
                "src")


def test_two_seeds_give_different_orders_and_one_seed_the_same():
    ids = [i.id for i in quiz_items()]
    a, b = Q.shuffled(ids, 1), Q.shuffled(ids, 2)
    assert sorted(a) == sorted(b) == sorted(ids)
    assert a != b and a != ids
    assert Q.shuffled(ids, 1) == a  # a session keeps its order
    assert Q.shuffled(ids, 1, 2) != a  # its next round is shuffled again


def test_new_seeds_differ():
    assert len({Q.new_seed() for _ in range(20)}) == 20


def test_round_order_filters_by_topic_level_and_missed():
    items = quiz_items()
    topic = items[0].topic
    level = items[0].level
    order = Q.round_order(items, 7, topics=[topic], levels=[level])
    want = {i.id for i in items if i.topic == topic and i.level == level}
    assert set(order) == want and len(order) == len(want)
    assert set(Q.round_order(items, 7, levels=["L4"])) == {i.id for i in items if i.level == "L4"}
    some = {i.id for i in items[::5]}
    assert set(Q.round_order(items, 7, only=some)) == some
    assert Q.round_order(items, 7, only=set()) == []  # 'missed only' with nothing missed: an empty round
    assert len(Q.round_order(items, 7, size=5)) == min(5, len(items))
    assert Q.round_order(items, 7, size=5) == Q.round_order(items, 7)[:5]


def test_due_order_puts_missed_first_then_unseen_then_right():
    ids = ["a", "b", "c", "d", "e"]
    last = {"b": 1.0, "d": 0.25, "e": 0.5}
    assert Q.session_due_order(ids, last) == ["d", "e", "a", "c", "b"]
    assert Q.session_missed(last) == {"d", "e"} and Q.session_missed({"x": RIGHT}) == set()
    items = [card(x) for x in ids]
    order = Q.round_order(items, 3, due=lambda o: Q.session_due_order(o, last))
    assert set(order[:2]) == {"d", "e"} and order[-1] == "b"


def test_due_order_from_the_database(tmp_path):
    p = Progress(tmp_path / "p.sqlite")
    me = p.learner("Ada")
    p.record_card(me, "a", 1.0)  # right: box 2, due tomorrow
    p.record_card(me, "c", 0.0)  # missed: box 1, due now
    items = [card(x) for x in "abcd"]
    order = Q.round_order(items, 11, due=lambda o: p.due_order(me, o))
    assert order[0] == "c" and order[-1] == "a" and set(order[1:3]) == {"b", "d"}


def test_rubric_score_is_partial_credit():
    assert Q.rubric_score([True, False, False, False]) == 0.25
    assert Q.rubric_score([True, True, True]) == 1.0
    assert Q.rubric_score([False, False]) == 0.0
    with pytest.raises(ValueError):
        Q.rubric_score([])
    assert Q.self_grade(True) == 1.0 and Q.self_grade(False) == 0.0


def test_true_false_and_code_grading():
    false, true = card("f", kind="truefalse", truth=False), card("t", kind="truefalse", truth=True)
    assert Q.grade_truefalse(false, False) == 1 and Q.grade_truefalse(false, True) == 0
    assert Q.grade_truefalse(true, True) == 1 and Q.grade_truefalse(true, False) == 0
    assert Q.grade_code(CODE, 2, 1).score == 1.0
    assert Q.grade_code(CODE, 2, 0).score == 0.5 and Q.grade_code(CODE, 2, 0).line_ok
    assert Q.grade_code(CODE, 3, 1).score == 0.5 and Q.grade_code(CODE, 3, 1).fix_ok
    assert Q.grade_code(CODE, None, None).score == 0.0


def test_every_code_card_in_the_bank_grades_its_own_answer_right():
    for item in quiz_items():
        if item.kind == "code":
            c = item.code
            assert Q.grade_code(c, c.bug_line, c.fix).score == 1.0
            assert Q.grade_code(c, c.bug_line % len(c.code.splitlines()) + 1, c.fix).score == 0.5
        if item.kind == "truefalse":
            assert Q.grade_truefalse(item, item.truth) == 1.0 and Q.grade_truefalse(item, not item.truth) == 0.0


def test_a_round_ends_and_does_not_wrap():
    r = Q.Round(["a", "b"])
    assert r.current == "a" and not r.graded
    r.grade(0.5)
    assert r.graded and r.revealed
    r.next()
    assert r.current == "b" and not r.revealed
    r.grade(7)  # clamped
    r.next()
    assert r.done and r.current is None and r.total == 1.5
    assert Q.Round([]).done


def test_summary_by_level_and_topic_with_the_missed_cards():
    items = [card("a", "x", "L4"), card("b", "x", "L5"), card("c", "y", "L5"), card("d", "y", "L6")]
    by_id = {i.id: i for i in items}
    s = Q.summarize(["d", "a", "c", "b"], {"a": 1.0, "b": 0.5, "c": RIGHT, "d": 0.0}, by_id)
    assert s.cards == 4 and s.score == pytest.approx(1.5 + RIGHT)
    assert [(r.name, r.cards, r.score) for r in s.by_level] == [("L4", 1, 1.0), ("L5", 2, 0.5 + RIGHT), ("L6", 1, 0.0)]
    assert [(r.name, r.cards) for r in s.by_topic] == [("x", 2), ("y", 2)]
    assert s.by_topic[0].percent == 75
    assert s.missed == ("d", "b")  # in the round's order; RIGHT itself counts as right
    # an unanswered card or one no longer in the bank is not counted
    s = Q.summarize(["a", "b", "gone"], {"a": 1.0, "gone": 0.0}, by_id)
    assert s.cards == 1 and s.missed == ()


@pytest.mark.parametrize("scores,level", [
    ([1, 1, 1], "L6"), ([1, 0.8, 0.6], "L6"), ([1, 1, 0.5], "L5"),  # one weak follow-up keeps it from L6
    ([0.5, 0.5, 0.5], "L5"), ([1, 0, 0.5], "L5"), ([0.4, 0.5, 0.5], "L4"), ([0.25, 0.25], "L4"),
    ([0.29, 0.2, 0.2], "below L4"), ([0, 0, 0], "below L4")])
def test_mock_verdict_follows_the_stated_rule(scores, level):
    v = Q.mock_verdict(scores)
    assert v.level == level and v.mean == pytest.approx(sum(scores) / len(scores))
    assert scores[v.weakest] == min(scores)


def test_mock_verdict_needs_a_step_and_the_mock_state_advances():
    with pytest.raises(ValueError):
        Q.mock_verdict([])
    m = Q.Mock("m", 2, started=5.0)
    m.revealed = True
    m.score(0.5)
    assert (m.step, m.scores, m.revealed, m.started, m.done) == (1, [0.5], False, None, False)
    m.score(2)
    assert m.done and m.scores == [0.5, 1.0]


def test_timer_and_formatting():
    assert Q.remaining(100.0, 60, 100.0) == 60
    assert Q.remaining(100.0, 60, 130.2) == 30
    assert Q.remaining(100.0, 60, 500.0) == 0
    assert [Q.fmt(x) for x in (1.0, 0.5, 2 / 3, 0.0, 12.25)] == ["1", "0.5", "0.67", "0", "12.25"]
    assert "box 1 of 5" in Q.box_message(1) and "this session" in Q.box_message(1)
    assert "3 days" in Q.box_message(3)
    assert set(Q.LEVEL_NAMES) == set(LEVELS)


def test_the_verdict_rule_says_what_the_code_computes():
    """Issue 45 A11: the rule said "points ticked over the whole chain" while the code averages step scores. With
    steps of 2 and 6 points, 2/2 and 3/6 pool to 5/8 = 62.5 % but average 75 %: the rule must name the mean."""
    v = Q.mock_verdict([2 / 2, 3 / 6])
    assert v.mean == pytest.approx(0.75)
    assert "mean of its step scores" in Q.VERDICT_RULE and "over the whole chain" not in Q.VERDICT_RULE
