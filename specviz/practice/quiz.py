"""The quiz and the mock interview as plain functions (no Streamlit): the page composes widgets around them.

- A round: the cards matching the filters (topics, levels, "missed only"), shuffled by a seed drawn once per
  session (two sessions ask in different orders; one session keeps its order until a new round), optionally
  put in Leitner order (due cards first), cut to the round's size. A round ends; it does not wrap.
- Grading: a question card scores the rubric points ticked ÷ the points (partial credit; with no rubric, a
  self-grade of 1 or 0); a true/false card 1 or 0; a code card half for the faulty line and half for the fix.
  A score of at least RIGHT (0.8) counts as right, as in the Leitner boxes (specviz.practice.progress).
- A round's summary: score by level and by topic, and the cards missed.
- A mock interview's verdict: L4 / L5 / L6 from the rubric scores of its steps, by the rule VERDICT_RULE.
- A graded mock interview (issue 47): the next question (a follow-up on the first missed point, else the chain's
  next step; FOLLOW_UP_RULE), its state, and the transcript.
"""
from __future__ import annotations

import dataclasses
import json
import math
import random
import secrets
from dataclasses import dataclass, field
from typing import Callable, Iterable, Sequence

from specviz.qa.bank import LEVELS, CodeCard, QuizItem
from specviz.practice.progress import INTERVAL_DAYS, RIGHT

MAX_ANSWER = 4000  # characters in an answer box: a spoken answer written down is a few hundred
# what the box itself takes: a browser box capped at MAX_ANSWER drops a longer paste whole, without a word, so the
# box takes far more (a whole pasted page) and grading refuses an answer over MAX_ANSWER in one line, before reading it
MAX_BOX = 100_000
ROUND_SIZES = (5, 10, 20, 0)  # 0: every card that matches the filters
TIMER_SECONDS = (60, 90, 120, 180, 300)
LEVEL_NAMES = {"L4": "fundamentals", "L5": "mechanics and trade-offs", "L6": "systems and design"}
BELOW_L4 = "below L4"  # a mock verdict under the L4 floor
KIND_NAMES = {"question": "question", "truefalse": "true or false", "code": "code: find the bug"}


def level_label(level: str) -> str:
    """A level as the filters and the card header name it: "L5 · mechanics and trade-offs"."""
    return f"{level} · {LEVEL_NAMES.get(level, '')}"


def new_seed() -> int:
    """A session's shuffle seed, from the OS's randomness (never from the deck: every session would agree)."""
    return secrets.randbits(63)


def shuffled(ids: Sequence[str], seed: int, number: int = 1) -> list[str]:
    """The ids in the order of round `number` of the session with `seed`: the same seed and number give the same
    order, another round of the same session a new one."""
    return random.Random(f"{seed}:{number}").sample(list(ids), len(ids))


def session_due_order(ids: Sequence[str], last: dict[str, float]) -> list[str]:
    """Leitner order within one session (no name typed, nothing stored): cards missed last time first, then cards
    not yet seen, then cards answered right; each group in the order given."""
    missed = [c for c in ids if c in last and last[c] < RIGHT]
    unseen = [c for c in ids if c not in last]
    right = [c for c in ids if c in last and last[c] >= RIGHT]
    return missed + unseen + right


def session_missed(last: dict[str, float]) -> set[str]:
    """'Missed only' within one session: the cards whose last answer here scored under RIGHT."""
    return {c for c, v in last.items() if v < RIGHT}


def select(items: Iterable[QuizItem], topics=(), levels=(), only: set[str] | None = None) -> list[QuizItem]:
    """The cards matching the filters: topics and levels (none chosen: all), and `only` (a set of ids: 'missed
    only'; None: no such filter)."""
    return [i for i in items if (not topics or i.topic in topics) and (not levels or i.level in levels)
            and (only is None or i.id in only)]


def round_order(items: Iterable[QuizItem], seed: int, number: int = 1, topics=(), levels=(),
                only: set[str] | None = None, due: Callable[[list[str]], list[str]] | None = None,
                size: int = 0) -> list[str]:
    """A round's card ids: the filtered cards shuffled (seed, number), then in study order when `due` is given
    (a function from ids to ids, e.g. Progress.due_order or session_due_order: it keeps the shuffle among equals),
    then the first `size` (0: all)."""
    order = shuffled([i.id for i in select(items, topics, levels, only)], seed, number)
    if due is not None:
        order = list(due(order))
    return order[:size] if size and size > 0 else order


def page_count(total: int, per_page: int) -> int:
    """Pages of `per_page` items for `total` items (at least one, empty or not)."""
    return max(1, -(-total // per_page))


def page_of(pool: Sequence, page: int, per_page: int) -> list:
    """Page `page` (1-based) of `pool`."""
    return list(pool[(page - 1) * per_page:page * per_page])


def round_for(items: Iterable[QuizItem], key: tuple, seed: int, number: int, history: dict[str, float],
              store=None, learner: int | None = None) -> list[str]:
    """A round's card ids from the page's filters `key` (topics, levels, missed only, due first, size). "Missed
    only" and "due first" read the learner's saved boxes from `store` (a Progress) when a learner is named, else
    this session's `history` (card id -> last score)."""
    topics, levels, missed_only, due_first, size = key
    saved = store is not None and learner is not None
    only = None
    if missed_only:
        only = store.missed(learner) if saved else session_missed(history)
    due = None
    if due_first:
        due = (lambda ids: store.due_order(learner, ids)) if saved else (lambda ids: session_due_order(ids, history))
    return round_order(items, seed, number, topics, levels, only, due, size)


@dataclass
class Round:
    """One round's state: its cards in order, the card being asked, and the scores given so far."""
    order: list[str]
    key: tuple = ()  # the filters it was built from: other filters make a new round
    number: int = 1
    i: int = 0
    scores: dict[str, float] = field(default_factory=dict)
    revealed: bool = False  # the current card's answer is shown
    graded_at: set[int] = field(default_factory=set)  # the positions scored (a retried card can be asked twice)

    @property
    def done(self) -> bool:
        return self.i >= len(self.order)

    @property
    def current(self) -> str | None:
        return None if self.done else self.order[self.i]

    @property
    def graded(self) -> bool:
        """The current card has its score (true/false and code cards: graded before moving on)."""
        return self.current is not None and self.i in self.graded_at

    def grade(self, score: float) -> float:
        score = min(max(float(score), 0.0), 1.0)
        self.scores[self.order[self.i]] = score
        self.graded_at.add(self.i)
        self.revealed = True
        return score

    def next(self) -> None:
        self.i += 1
        self.revealed = False

    @property
    def total(self) -> float:
        return sum(self.scores.values())

    @property
    def right(self) -> int:
        """Cards scoring at least RIGHT so far."""
        return sum(is_right(x) for x in self.scores.values())


def retry_in_round(r: Round | None, card: str, busy: bool) -> str | None:
    """A Retry (a weak point on Home or the Q&A page) while a round is under way: the card is asked next and the
    round goes on after it (a walk in Chromium lost a 10-card round, 3 cards in, to one Retry). `busy`: the card in
    front of the learner is graded or revealed, so the retried one comes right after it. A card the round asked
    already is asked again (its old score counts until the new one replaces it). Returns "now", "next" (after the
    card shown), "here" (it is the card shown, not yet answered), or None when no round is under way."""
    if r is None or r.done:
        return None
    busy = busy or r.graded
    if card == r.current and not busy:
        return "here"
    at = r.i + 1 if busy else r.i
    if card in r.order[at:]:
        del r.order[r.order.index(card, at)]
    r.order.insert(at, card)  # asked again if the round had it: ungraded there (Round.graded is by position)
    return "next" if busy else "now"


def is_chain(mock, card_id: str) -> bool:
    """A graded interview's step is one of the chain's own questions (its id is "<chain>:<n>"), not a follow-up."""
    return card_id.startswith(mock.id + ":")


def needs_new_round(r: Round | None, key: tuple, known) -> bool:
    """No round yet, other filters than the round's, or a card of it gone from the bank (`known`: the ids now)."""
    return r is None or r.key != key or any(c not in known for c in r.order)


def rubric_score(ticked: Sequence[bool]) -> float:
    """Points ticked ÷ points (partial credit). A card with no rubric is self-graded instead (self_grade)."""
    if not ticked:
        raise ValueError("no rubric points to score against")
    return sum(bool(t) for t in ticked) / len(ticked)


def self_grade(had_it: bool) -> float:
    return 1.0 if had_it else 0.0


def grade_truefalse(item: QuizItem, said_true: bool) -> float:
    return 1.0 if bool(said_true) == bool(item.truth) else 0.0


@dataclass(frozen=True)
class CodeGrade:
    line_ok: bool
    fix_ok: bool

    @property
    def score(self) -> float:
        """Half for the faulty line, half for the fix."""
        return (self.line_ok + self.fix_ok) / 2


def grade_code(card: CodeCard, line: int | None, fix: int | None) -> CodeGrade:
    return CodeGrade(line == card.bug_line, fix == card.fix)


def is_right(score: float) -> bool:
    return score >= RIGHT


def fmt(x: float) -> str:
    """A score for reading: 1, 0.5, 0.67 (no trailing zeros)."""
    return f"{round(x, 2):g}"


def pct(x: float) -> str:
    """A share in percent, as the verdict's headline, the graded steps and the transcript say it: "67 %", the space
    a no-break one (a narrow table column broke "100 %" over two lines)."""
    return f"{round(100 * x)}\u00a0%"


def box_message(box: int) -> str:
    """Where a card went in the Leitner boxes after an answer."""
    days = INTERVAL_DAYS[box]
    when = "comes back in this session" if days == 0 else f"comes back in {days:g} day{'s' if days != 1 else ''}"
    return f"Leitner box {box} of {max(INTERVAL_DAYS)}: {when}."


def score_note(score: float, box: int | None = None) -> str:
    """The line about the last card, under the next one or on the round's summary: its score and, when saved,
    where it went (box)."""
    note = f"Last card: {fmt(score)} of 1."
    return note if box is None else f"{note} {box_message(box)}"


def made_score(made: Sequence[bool]) -> float:
    """A graded answer's score: the points counted as made (after overrules) ÷ the points."""
    return sum(made) / max(1, len(made))


def point_rows(points, made: Sequence[bool] | None = None) -> list[tuple]:
    """A graded answer's points as Progress.record_points takes them: (n, point, graded made, counted made); the
    counted ones are the learner's overrules applied (`made`), or the grader's own when there is none."""
    made = [p.made for p in points] if made is None else made
    return [(n, p.point, p.made, m) for n, (p, m) in enumerate(zip(points, made))]


@dataclass(frozen=True)
class Row:
    name: str
    cards: int
    score: float  # sum of the cards' scores

    @property
    def percent(self) -> float:
        return 100 * self.score / self.cards if self.cards else 0.0


@dataclass(frozen=True)
class Summary:
    cards: int
    score: float
    by_level: tuple[Row, ...]
    by_topic: tuple[Row, ...]
    missed: tuple[str, ...]  # ids scoring under RIGHT, in the round's order

    @property
    def percent(self) -> float:
        return 100 * self.score / self.cards if self.cards else 0.0


def summarize(order: Sequence[str], scores: dict[str, float], by_id: dict[str, QuizItem]) -> Summary:
    """A round's summary over the cards answered (in `order`, with a score, still in the bank)."""
    done = list(dict.fromkeys(c for c in order if c in scores and c in by_id))  # a retried card counts once

    def rows(attr, names):
        out = []
        for name in names:
            mine = [c for c in done if getattr(by_id[c], attr) == name]
            if mine:
                out.append(Row(name, len(mine), sum(scores[c] for c in mine)))
        return tuple(out)

    topics = sorted({by_id[c].topic for c in done})
    levels = list(LEVELS) + sorted({by_id[c].level for c in done} - set(LEVELS))
    return Summary(len(done), sum(scores[c] for c in done), rows("level", levels), rows("topic", topics),
                   tuple(c for c in done if not is_right(scores[c])))


# ---------------------------------------------------------------------------------------------- mock interview
VERDICT_RULE = ("each step scores the share of its rubric points made; the chain's score is the mean of its step "
                "scores (every step weighs the same, however many points it has). **L6** when that mean reaches "
                "80 % and no step falls under 60 % (the chain's deep questions answered too); **L5** when it "
                "reaches 50 %; **L4** when it reaches 25 %; below 25 % **below L4** (the fundamentals first).")


@dataclass(frozen=True)
class Verdict:
    level: str
    mean: float  # mean step score in [0, 1]
    weakest: int | None  # 0-based index of the lowest-scoring step


def mock_verdict(step_scores: Sequence[float]) -> Verdict:
    """L4 / L5 / L6 from the per-step rubric scores (each in [0, 1]) by VERDICT_RULE."""
    if not step_scores:
        raise ValueError("a verdict needs at least one step scored")
    s = [min(max(float(x), 0.0), 1.0) for x in step_scores]
    mean = sum(s) / len(s)
    eps = 1e-9  # (1 + 0.8 + 0.6) / 3 is 0.7999999999999999 in floating point: 80 % all the same
    level = ("L6" if mean >= 0.8 - eps and min(s) >= 0.6 - eps else "L5" if mean >= 0.5 - eps else
             "L4" if mean >= 0.25 - eps else BELOW_L4)
    return Verdict(level, mean, min(range(len(s)), key=s.__getitem__))


def work_on(v: Verdict, step_scores: Sequence[float]) -> int | None:
    """The step to work on first: the weakest one, unless even it scored full marks."""
    return v.weakest if v.weakest is not None and step_scores[v.weakest] < 1 else None


def step_rows(mock, step_scores: Sequence[float]) -> list[dict]:
    """The verdict's table for a chain the learner ticked: one row per step."""
    return [{"Step": n + 1, "Question": s.question, "Score": pct(x)}
            for n, (s, x) in enumerate(zip(mock.steps, step_scores))]


def past_results(mocks: Iterable[tuple[str, str, float]], mock_id: str) -> str:
    """A learner's results on one chain (Progress.mocks: (chain, level, mean) rows), oldest first."""
    return ", ".join(f"{lvl} ({pct(s)})" for mid, lvl, s in mocks if mid == mock_id)


@dataclass
class Mock:
    """A mock interview in progress: which chain, the step asked, each step's score, when the step started."""
    id: str
    steps: int
    step: int = 0
    scores: list[float] = field(default_factory=list)
    revealed: bool = False
    started: float | None = None  # the current step's start (time.time()), for the timer
    recorded: bool = False

    @property
    def done(self) -> bool:
        return self.step >= self.steps

    @property
    def last(self) -> bool:
        """The step asked is the chain's last: its score brings the verdict."""
        return self.step + 1 == self.steps

    def score(self, value: float) -> None:
        self.scores.append(min(max(float(value), 0.0), 1.0))
        self.step += 1
        self.revealed = False
        self.started = None


def remaining(started: float, limit: float, now: float) -> int:
    """Whole seconds left on a step's timer (0 when time is up)."""
    return max(0, math.ceil(limit - (now - started)))


# ---------------------------------------------------------------------------------- the graded mock (issue 47)
@dataclass
class Asked:
    """One step of a graded interview: the card asked, why, the answer and its grade (points made, after any
    overrule, and the evidence for each)."""
    card: str
    question: str
    why: str  # "the chain's step N" or "follow-up on: <missed point>"
    answer: str = ""
    points: tuple = ()  # (point, made, evidence, confidence) per rubric point
    score: float | None = None
    graded: tuple = ()  # what the grader said per point (made differs where the learner overruled it)
    at: float | None = None  # when its points were recorded (Progress.restate_points finds them by it)


def graded_state(state: dict | None, mock_id: str) -> dict:
    """A graded interview's state: the one under way on this chain, else a fresh one (another chain picked)."""
    if state is None or state["id"] != mock_id:
        return {"id": mock_id, "asked": [], "recorded": False}
    return state


MAX_STATE = 200_000  # characters of a stored interview: its steps' answers are bounded (MAX_ANSWER), so is this


def interview_json(state: dict) -> str:
    """A graded interview's state as stored (Progress.save_interview): its chain, steps and recorded verdict."""
    return json.dumps({"id": state["id"], "recorded": state["recorded"], "done": bool(state.get("done")),
                       "asked": [dataclasses.asdict(a) for a in state["asked"]]})


def interview_from_json(text: str | None, mock_id: str) -> dict | None:
    """The stored state back (flat JSON of our own writing, bounded), or None: none, too long, another chain's, or
    not one we wrote (the interview then starts afresh)."""
    if not text or len(text) > MAX_STATE:
        return None
    try:
        d = json.loads(text)
        if d["id"] != mock_id:
            return None
        asked = [Asked(a["card"], a["question"], a["why"], a["answer"],
                       tuple(tuple(p) for p in a["points"]), a["score"], tuple(a["graded"]), a["at"])
                 for a in d["asked"]]
        recorded = d["recorded"]
        return {"id": mock_id, "asked": asked, "recorded": recorded if isinstance(recorded, (bool, float)) else False,
                "done": d.get("done") is True}
    except (ValueError, KeyError, TypeError):
        return None


def asked_from(card_id: str, question: str, why: str, answer: str, grade) -> Asked:
    """A step of a graded interview once its answer is graded (`grade`: a specviz.practice.grade.Grade)."""
    return Asked(card_id, question, why, answer,
                 tuple((p.point, p.made, p.evidence, p.confidence) for p in grade.points), grade.score,
                 tuple(p.made for p in grade.points))


def overrule(a: Asked, n: int) -> None:
    """Point n of a step counted the other way (a second time: back to the grader's), and the step's score with it."""
    point, made, evidence, confidence = a.points[n]
    a.points = a.points[:n] + ((point, not made, evidence, confidence),) + a.points[n + 1:]
    a.score = sum(m for _, m, _, _ in a.points) / len(a.points)


def overruled(a: Asked, n: int) -> bool:
    return bool(a.graded) and a.points[n][1] != a.graded[n]


def asked_point_rows(a: Asked) -> list[tuple]:
    """A step's points as Progress.record_points takes them: (n, point, what the grader said, what counts)."""
    graded = a.graded or tuple(m for _, m, _, _ in a.points)
    return [(n, p, g, m) for n, ((p, m, _, _), g) in enumerate(zip(a.points, graded))]


def asked_rows(mock, asked: Sequence[Asked]) -> list[dict]:
    """The verdict's table for a graded interview: one row per question asked, with why it was asked and whether
    it counts in the level (the chain's questions do, follow-ups do not)."""
    chain = set(chain_steps(mock, asked))
    return [{"Step": n + 1, "Question": a.question, "Why asked": a.why, "Score": pct(a.score),
             "In the level": "yes" if n in chain else "no: a follow-up"} for n, a in enumerate(asked)]


MAX_FOLLOW_UPS = 2  # an interview is the chain's questions and at most this many follow-ups, each after one of them
FOLLOW_UP_RULE = ("After an answer to one of the chain's questions, the interviewer follows up on the first point of "
                  "its rubric the grader found missing (a rubric lists the heart of the answer first), with the bank "
                  "question closest to it. The chain's next question comes instead after a follow-up, after an answer "
                  "that makes every point, when no bank question holds a point near the missed one, and when the "
                  "nearest is a question already asked in other words. Every question of the chain is asked, and at "
                  "most "
                  f"{MAX_FOLLOW_UPS} follow-ups in all (the last question's answer can have one too). Follow-ups are "
                  "graded and shown, but the level comes from the chain's questions alone: a follow-up's question is "
                  "the grader's pick from the bank, and can stray from the chain.")


def chain_steps(mock, asked: Sequence[Asked]) -> list[int]:
    """Where the chain's own questions sit among the steps asked (the rest are follow-ups)."""
    return [n for n, a in enumerate(asked) if is_chain(mock, a.card)]


def next_question(mock, asked: list[Asked], pick_follow_up) -> tuple[str, str, str] | None:
    """(card id, question, why) for the next step of a graded interview, or None when it is over. The first
    question is the chain's; after a graded answer to a chain question, `pick_follow_up(missed_point, exclude,
    made)` (the grader's follow_up) chooses a card on the first missed point, not one on what the answer made, at
    most MAX_FOLLOW_UPS times; otherwise
    the chain's next question. Follow-ups never take a chain question's place: the deep steps the level guide
    judges L6 on are always asked."""
    if not asked:
        return f"{mock.id}:1", mock.steps[0].question, "the chain's first question"
    chain = len(chain_steps(mock, asked))
    last = asked[-1]
    # the first missed point in the rubric's order: a rubric lists the heart of the answer first, its details
    # after (the point the grader was surest was missed was often a side remark the answer never went near)
    missed = [p for p, made, _, _ in last.points if not made]
    followed_up = not is_chain(mock, last.card)
    if missed and not followed_up and len(asked) - chain < MAX_FOLLOW_UPS:
        point = missed[0]
        # the chain's questions still to come are excluded too, with their twins: a follow-up the chain asks later
        # anyway ("Can the draft model decode greedily?" before the step that asks it) is a repeat in advance
        chain_ids = [f"{mock.id}:{n}" for n in range(1, len(mock.steps) + 1)]
        card = pick_follow_up(point, list(dict.fromkeys([a.card for a in asked] + chain_ids)),
                              [p for p, made, _, _ in last.points if made])
        if card is not None:
            return card.id, card.question, f"follow-up on what your last answer missed: “{point}”"
    if chain >= len(mock.steps):
        return None
    n = chain + 1
    return f"{mock.id}:{n}", mock.steps[n - 1].question, f"the chain's question {n}"


def transcript(title: str, asked: list[Asked], verdict: Verdict | None, who: str = "", day: str = "") -> str:
    """The interview as Markdown: each question, why it was asked, the answer, each point ✓/✗ with its evidence;
    under the title, whose interview and when (a walk kept three transcripts that did not say)."""
    lines = [f"# Mock interview: {title}", ""] + ([" · ".join(x for x in (who, day) if x), ""] if who or day else [])
    for n, a in enumerate(asked, 1):
        follow = " (not in the level)" if a.why.startswith("follow-up") else ""
        lines += [f"## {n}. {a.question}", f"_{a.why}{follow}_", "", "**Answer:**", "", "> " + (a.answer or "(none)")
                  .replace("\n", "\n> "), ""]
        for n, (p, made, evidence, _) in enumerate(a.points):
            lines.append(f"- {'✓' if made else '✗'} {p}" + (" (overruled by you)" if overruled(a, n) else "")
                         + (f" — “{evidence}”" if evidence and made else ""))
        if a.score is not None:
            lines += ["", f"Score: {pct(a.score)}", ""]
    if verdict is not None:
        lines += [f"## Verdict: {verdict.level} ({LEVEL_NAMES.get(verdict.level, 'start with the fundamentals')})",
                  "", f"Mean score of the chain's questions "
                  f"{pct(verdict.mean)}. Rule: " + VERDICT_RULE.replace("**", ""), "", FOLLOW_UP_RULE]
    return "\n".join(lines) + "\n"

