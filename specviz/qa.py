"""The interview Q&A, loaded from qa.yaml (content is data)."""
from __future__ import annotations

import functools
import pathlib
from dataclasses import dataclass

import yaml

QA_FILE = pathlib.Path(__file__).with_name("qa.yaml")


@dataclass(frozen=True)
class Question:
    id: str
    topic: str
    level: str
    question: str
    answer: str
    page: str


@dataclass(frozen=True)
class Misconception:
    claim: str
    correct: str
    page: str


@functools.lru_cache(maxsize=1)
def load() -> tuple[tuple[Question, ...], tuple[Misconception, ...]]:
    data = yaml.safe_load(QA_FILE.read_text(encoding="utf-8"))
    qs = tuple(Question(**{k: str(v).strip() for k, v in q.items()}) for q in data["questions"])
    ms = tuple(Misconception(**{k: str(v).strip() for k, v in m.items()}) for m in data["misconceptions"])
    return qs, ms


def topics() -> list[str]:
    return sorted({q.topic for q in load()[0]})
