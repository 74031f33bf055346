"""A drill as a record, and grading a typed response to it.

`Drill` holds what grading reads: the answer, its form ("number", "int", "choice", "list"), the absolute tolerance
per number and the choices. `grade` reads a response of at most MAX_RESPONSE characters the same way (numbers
without eval, a trailing % or ×, lists split on commas and spaces, choices by unambiguous prefix). `rounded` and
`numbers` write a drill's numbers as its question shows them; the formula and the live drills share them.
"""
from __future__ import annotations

import math
import re
from dataclasses import asdict, dataclass

MAX_RESPONSE = 200  # characters: an answer is a number, a short list or a word


@dataclass(frozen=True)
class Drill:
    kind: str
    seed: int
    question: str  # Markdown; maths between $...$
    given: dict  # every input needed to recompute the answer
    answer: object  # float | int | str | list
    tolerance: float  # absolute, per number (0: exact)
    solution: str  # the worked solution with this drill's own numbers
    page: str = ""  # the app page that shows it
    form: str = "number"  # "number" | "int" | "choice" | "list"
    choices: tuple[str, ...] = ()

    def as_dict(self) -> dict:
        d = asdict(self)
        return {k: d[k] for k in ("kind", "question", "given", "answer", "tolerance", "solution")} | {
            "seed": self.seed, "page": self.page, "form": self.form, "choices": list(self.choices)}


@dataclass(frozen=True)
class Grade:
    right: bool
    message: str  # what was wrong with the response, or "" when it could not be read
    readable: bool = True


def rounded(x: float, n: int = 3) -> float:
    return round(float(x), n)


def numbers(xs) -> str:
    return ", ".join(f"{x:g}" for x in xs)


NUMBER = re.compile(r"^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d{1,3})?$")


def _number(text: str) -> float | None:
    text = text.strip().rstrip("×x").strip()
    if text.endswith("%"):
        v = _number(text[:-1])
        return None if v is None else v / 100
    if not NUMBER.match(text):
        return None
    value = float(text)
    return value if math.isfinite(value) else None  # 1e400 is inf: not an answer


def grade(drill: Drill, response: str) -> Grade:
    """Grade a typed response (bounded, parsed without eval or recursion)."""
    text = str(response)[:MAX_RESPONSE].strip()
    if not text:
        return Grade(False, "Type an answer first.", readable=False)
    if drill.form == "choice":
        pick = text.lower()
        match = [c for c in drill.choices if c.lower() == pick or c.lower().startswith(pick) and len(pick) >= 1]
        if len(match) != 1:
            return Grade(False, f"Answer one of: {', '.join(drill.choices)}.", readable=False)
        right = match[0] == drill.answer  # the messages never give the answer away: the learner may try again
        return Grade(right, "" if right else f"You said {match[0]}.")
    if drill.form == "list":
        parts = [p for p in re.split(r"[,\s;]+", text.strip("()[] ")) if p]
        if isinstance(drill.answer[0], str):  # letters: a set, any order
            got = sorted(p.upper() for p in parts)
            right = got == sorted(drill.answer)
            return Grade(right, "" if right else f"You chose {', '.join(got)}.")
        values = [_number(p) for p in parts]
        if any(v is None for v in values) or len(values) != len(drill.answer):
            return Grade(False, f"Give {len(drill.answer)} numbers separated by commas.", readable=False)
        off = [i for i, (v, a) in enumerate(zip(values, drill.answer)) if abs(v - a) > drill.tolerance + 1e-9]
        return Grade(not off, "" if not off else f"Off by more than {drill.tolerance:g} at position(s) "
                     + ", ".join(str(i + 1) for i in off) + ".")
    value = _number(text)
    if value is None:
        return Grade(False, "Give a number (e.g. 2.31).", readable=False)
    if drill.form == "int" and value != int(value):
        return Grade(False, "Give a whole number.", readable=False)
    right = abs(value - float(drill.answer)) <= drill.tolerance + 1e-9
    tol = f"more than ±{drill.tolerance:g} from the answer" if drill.tolerance else "not the answer"
    return Grade(right, "" if right else f"You said {value:g}: {tol}.")
