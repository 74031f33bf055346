"""The interview Q&A, loaded from qa.yaml (content is data).

Each question: id, topic, level (L4 fundamentals, L5 mechanics and trade-offs, L6 systems and design),
question, headline (what to say in 30 seconds, one line), answer (Markdown; maths between $...$), rubric
(3 to 5 points a complete answer makes: the learner ticks them after revealing), page (the app page that
shows it, or "" when no page does), source (the paper or documentation section it rests on).
Each misconception (a FALSE claim): id, topic, claim, correct, page, source, points (card#index: the rubric
points it contradicts, named beside a graded miss). Each true claim (the true cards
of the true/false deck): id, topic, level, claim, why, page, source.
Each code card: id, topic, level, title, code (a short snippet), bug_line (1-based line with the bug), fixes
(3 or 4 candidate fixes), fix (index of the right one), why, page, source.
Each mock interview: id, title, level_guide (what separates L4, L5 and L6 answers), steps (each: question,
rubric, and l4 / l5 / l6: what an answer at that level sounds like).
The quiz draws from questions, misconceptions, true claims and code cards (quiz_items).
"""
from __future__ import annotations

import functools
import pathlib
import re
from dataclasses import dataclass

import yaml

QA_FILE = pathlib.Path(__file__).with_name("qa.yaml")
LEVELS = ("L4", "L5", "L6")


@dataclass(frozen=True)
class Question:
    id: str
    topic: str
    level: str
    question: str
    answer: str
    source: str
    page: str = ""
    headline: str = ""
    rubric: tuple[str, ...] = ()


@dataclass(frozen=True)
class Misconception:
    id: str
    claim: str
    correct: str
    source: str
    page: str = ""
    topic: str = "misconceptions"
    level: str = "L5"
    points: tuple[str, ...] = ()  # "card#index": the rubric points this claim contradicts (a graded miss names it)

    def gist(self, at_least: int = 60) -> str:
        """The correction's opening: whole sentences (never cut inside $...$ maths) until `at_least` characters, so
        a one-word verdict ("Four.") comes with its reason."""
        text, out = " ".join(self.correct.split()), ""
        for m in re.finditer(r"\.(\s|$)", text):
            if text[:m.start()].count("$") % 2 == 0:
                out = text[:m.start() + 1]
                if len(out) >= at_least:
                    break
        return out or text


@dataclass(frozen=True)
class TrueClaim:
    """A true statement for the true/false deck (the misconceptions are its false cards)."""
    id: str
    claim: str
    why: str
    source: str
    page: str = ""
    topic: str = "misconceptions"
    level: str = "L5"


@dataclass(frozen=True)
class CodeCard:
    """A short snippet with one bug of a kind interviews probe: find the line, pick the fix."""
    id: str
    topic: str
    level: str
    title: str
    code: str
    bug_line: int  # 1-based
    fixes: tuple[str, ...]
    fix: int  # index into fixes
    why: str
    source: str
    page: str = ""


@dataclass(frozen=True)
class MockStep:
    question: str
    rubric: tuple[str, ...]
    l4: str
    l5: str
    l6: str


@dataclass(frozen=True)
class MockInterview:
    """A chain of follow-ups the way an interviewer goes, each step with a rubric and per-level answers."""
    id: str
    title: str
    level_guide: str
    steps: tuple[MockStep, ...]


@dataclass(frozen=True)
class QuizItem:
    """One quiz card: a question, a claim asked as 'true or false?' (truth says which), or a code card."""
    id: str
    topic: str
    level: str
    prompt: str
    answer: str
    source: str
    page: str
    kind: str = "question"  # "question" | "truefalse" | "code"
    headline: str = ""
    rubric: tuple[str, ...] = ()
    truth: bool | None = None  # true/false cards: the claim's truth
    code: CodeCard | None = None


def _clean(d: dict) -> dict:
    """Strings stripped; lists become tuples of stripped strings (frozen dataclasses hold tuples)."""
    out = {}
    for k, v in d.items():
        if v is None:
            continue
        out[k] = tuple(str(x).strip() for x in v) if isinstance(v, list) else v if isinstance(v, (bool, int)) \
            else str(v).strip()
    return out


@dataclass(frozen=True)
class Bank:
    questions: tuple[Question, ...]
    misconceptions: tuple[Misconception, ...]
    true_claims: tuple[TrueClaim, ...]
    code_cards: tuple[CodeCard, ...]
    mocks: tuple[MockInterview, ...]


@functools.lru_cache(maxsize=1)
def bank() -> Bank:
    data = yaml.safe_load(QA_FILE.read_text(encoding="utf-8"))
    mocks = tuple(MockInterview(m["id"], str(m["title"]).strip(), str(m.get("level_guide", "")).strip(),
                                tuple(MockStep(**_clean(s)) for s in m["steps"]))
                  for m in data.get("mock_interviews") or [])
    return Bank(tuple(Question(**_clean(q)) for q in data["questions"]),
                tuple(Misconception(**_clean(m)) for m in data["misconceptions"]),
                tuple(TrueClaim(**_clean(c)) for c in data.get("true_claims") or []),
                tuple(CodeCard(**_clean(c)) for c in data.get("code_cards") or []), mocks)


def mistakes(card_id: str, index: int) -> tuple[Misconception, ...]:
    """The misconceptions that contradict rubric point `index` of a card: what a learner who missed it is likely
    to believe instead (linked by hand in qa.yaml, not guessed: the grader cannot read which way a clause leans)."""
    return tuple(m for m in bank().misconceptions if f"{card_id}#{int(index)}" in m.points)


def load() -> tuple[tuple[Question, ...], tuple[Misconception, ...]]:
    b = bank()
    return b.questions, b.misconceptions


def topics() -> list[str]:
    qs, ms = load()
    return sorted({q.topic for q in qs} | {m.topic for m in ms})


def verdict_answer(correct: str) -> str:
    """A misconception's quiz answer: the verdict once, in bold, then the correction. A correction that
    opens with its own "False." (or "False:", "False,") is not given a second one."""
    body = re.sub(r"^\s*\**false\b\**\s*[.:,;]?\**\s*", "", correct, flags=re.IGNORECASE)
    return f"**False.** {body}"


def quiz_items(chosen_topics=(), levels=()) -> list[QuizItem]:
    """Every question, every claim (misconceptions false, true claims true) as 'true or false?', and every code
    card, filtered by topic and level when any are chosen."""
    b = bank()
    items = [QuizItem(q.id, q.topic, q.level, q.question, q.answer, q.source, q.page, "question", q.headline,
                      q.rubric) for q in b.questions]
    items += [QuizItem(m.id, m.topic, m.level, f"True or false? “{m.claim}”", verdict_answer(m.correct), m.source,
                       m.page, "truefalse", truth=False) for m in b.misconceptions]
    items += [QuizItem(c.id, c.topic, c.level, f"True or false? “{c.claim}”", f"**True.** {c.why}", c.source, c.page,
                       "truefalse", truth=True) for c in b.true_claims]
    items += [QuizItem(c.id, c.topic, c.level, f"Find the bug: {c.title}",
                       f"**Line {c.bug_line}.** Fix: {c.fixes[c.fix]} — {c.why}", c.source, c.page, "code", code=c)
              for c in b.code_cards]
    return [i for i in items if (not chosen_topics or i.topic in chosen_topics) and (not levels or i.level in levels)]
