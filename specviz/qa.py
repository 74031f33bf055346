"""The interview Q&A, loaded from qa.yaml (content is data).

Each question: id, topic, level (L4 fundamentals, L5 mechanics and trade-offs, L6 systems and design),
question, answer (Markdown; maths between $...$), page (the app page that shows it, or "" when no page
does), source (the paper or documentation section it rests on). Each misconception: id, topic, claim,
correct, page, source. The quiz draws from both (quiz_items).
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


@dataclass(frozen=True)
class Misconception:
    id: str
    claim: str
    correct: str
    source: str
    page: str = ""
    topic: str = "misconceptions"
    level: str = "L5"


@dataclass(frozen=True)
class QuizItem:
    """One quiz card: a question, or a misconception asked as 'true or false?'."""
    id: str
    topic: str
    level: str
    prompt: str
    answer: str
    source: str
    page: str


def _clean(d: dict) -> dict:
    return {k: str(v).strip() for k, v in d.items() if v is not None}


@functools.lru_cache(maxsize=1)
def load() -> tuple[tuple[Question, ...], tuple[Misconception, ...]]:
    data = yaml.safe_load(QA_FILE.read_text(encoding="utf-8"))
    qs = tuple(Question(**_clean(q)) for q in data["questions"])
    ms = tuple(Misconception(**_clean(m)) for m in data["misconceptions"])
    return qs, ms


def topics() -> list[str]:
    qs, ms = load()
    return sorted({q.topic for q in qs} | {m.topic for m in ms})


def verdict_answer(correct: str) -> str:
    """A misconception's quiz answer: the verdict once, in bold, then the correction. A correction that
    opens with its own "False." (or "False:", "False,") is not given a second one."""
    body = re.sub(r"^\s*\**false\b\**\s*[.:,;]?\**\s*", "", correct, flags=re.IGNORECASE)
    return f"**False.** {body}"


def quiz_items(chosen_topics=()) -> list[QuizItem]:
    """Every question and every misconception (as 'true or false?'), filtered by topic when any are chosen."""
    qs, ms = load()
    items = [QuizItem(q.id, q.topic, q.level, q.question, q.answer, q.source, q.page) for q in qs]
    items += [QuizItem(m.id, m.topic, m.level, f"True or false? “{m.claim}”", verdict_answer(m.correct), m.source,
                       m.page) for m in ms]
    return [i for i in items if not chosen_topics or i.topic in chosen_topics]
