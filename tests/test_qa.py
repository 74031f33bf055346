"""The Q&A content is complete: every question has an answer, a topic, a level and an existing page."""
from pathlib import Path

from specviz.qa import load

ROOT = Path(__file__).resolve().parent.parent


def test_questions_are_complete_and_link_to_real_pages():
    questions, misconceptions = load()
    assert len(questions) >= 30
    assert len({q.id for q in questions}) == len(questions)
    for q in questions:
        assert q.question.rstrip().endswith(("?", ".")) and len(q.answer) > 80 and q.topic and q.level in {"L4", "L5", "L6"}
        assert (ROOT / q.page).is_file(), q.page
    for m in misconceptions:
        assert m.claim and m.correct and (ROOT / m.page).is_file()


def test_required_topics_are_covered():
    text = " ".join((q.question + q.answer).lower() for q in load()[0])
    for needle in ["length penalty", "memory-bandwidth", "residual", "greedy verification", "medusa", "eagle",
                   "tree", "lookahead", "n-gram", "early exit", "staged", "scheduler", "mean acceptance length",
                   "tokenizer", "temperature", "kv cache", "bonus", "flops", "batch"]:
        assert needle in text, needle


def test_the_seed_errors_appear_as_flagged_misconceptions():
    claims = " ".join(m.claim.lower() for m in load()[1])
    assert "from the target's p" in claims and "never be greedy" in claims and "approximate" in claims
    assert "flops" in claims
