"""The Q&A content: complete (answers, levels, sources, real page links), covering the topics an inference
interview asks, free of the phrasings found wrong in review (issue 20), and quoting measured figures only
from the model card or the benchmark JSON."""
import json
import re
from pathlib import Path

import pytest

from ui.registry import PAGES as REGISTERED
from specviz.qa import LEVELS, load, quiz_items, topics

ROOT = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.fast
PAGES = {p.path for p in REGISTERED}


def all_text():
    qs, ms = load()
    pairs = [(q.id, q.question + " " + q.answer) for q in qs] + [(m.id, m.claim + " " + m.correct) for m in ms]
    return [(i, " ".join(t.split())) for i, t in pairs]  # one space between words, whatever the line breaks


def test_questions_are_complete_and_link_to_real_pages():
    questions, misconceptions = load()
    assert len(questions) >= 70
    assert len({q.id for q in questions} | {m.id for m in misconceptions}) == len(questions) + len(misconceptions)
    for level in LEVELS:
        assert sum(q.level == level for q in questions) >= 10, level
    for q in questions:
        assert q.question.rstrip().endswith(("?", ".")) and len(q.answer) > 80 and q.topic and q.level in LEVELS, q.id
        assert len(q.source) > 10, q.id  # a named paper or documentation section
        assert not q.page or ((ROOT / q.page).is_file() and q.page in PAGES), (q.id, q.page)
    assert sum(bool(q.page) for q in questions) >= 50  # most answers point at a page that shows them
    assert len(misconceptions) >= 10
    for m in misconceptions:
        assert m.claim and len(m.correct) > 40 and len(m.source) > 10, m.id
        assert not m.page or (ROOT / m.page).is_file(), m.page


def test_the_quiz_draws_from_every_question_and_misconception():
    qs, ms = load()
    items = quiz_items()
    assert {i.id for i in items} == {q.id for q in qs} | {m.id for m in ms}
    assert all(i.prompt and i.answer and i.source for i in items)
    for t in topics():
        assert quiz_items([t]) and all(i.topic == t for i in quiz_items([t]))


def test_required_topics_are_covered():
    text = " ".join(t.lower() for _, t in all_text())
    for needle in ["length penalty", "memory-bandwidth", "residual", "greedy verification", "medusa", "eagle",
                   "tree", "lookahead", "n-gram", "early exit", "staged", "scheduler", "mean acceptance length",
                   "tokenizer", "temperature", "kv cache", "bonus", "flops", "batch",
                   # coverage added by issue 20
                   "grouped-query", "ttft", "goodput", "position ids", "specinfer",
                   "eagle-2", "eagle-3", "typical acceptance", "multi-token", "vllm", "sglang", "tensorrt-llm",
                   "cuda graph", "lookahead slots", "non-monotonic", "a > c", "bf16", "batch-invariant",
                   "diverse beam", "constrained beam", "beam search curse", "layerskip", "draft & verify", "swift",
                   "kangaroo", "distillspec", "on-policy", "1 - \\mathrm{tv}", "jacobi", "suffix", "grammar",
                   "repetition penalty", "early_stopping", "universal assisted generation", "bild"]:
        assert needle in text, needle


def test_the_seed_errors_appear_as_flagged_misconceptions():
    ms = load()[1]
    claims = " ".join(m.claim.lower() for m in ms)
    assert "from the target's p" in claims and "never be greedy" in claims and "approximate" in claims
    assert "flops" in claims
    greedy = next(m for m in ms if "never be greedy" in m.claim)
    assert greedy.correct.startswith("False") and "holds only" not in greedy.correct  # simply false (item 21)
    resample = next(m for m in ms if "from the target's p" in m.claim)
    assert "max(0, p - q)" in resample.correct


def answer(qid):
    return " ".join(next(q.answer for q in load()[0] if q.id == qid).split())


def test_review_defects_are_gone():
    """Issue 20's wrong or imprecise phrasings, by item."""
    text = " ".join(t for _, t in all_text())
    # 1: acceptance does not simply fall with position
    assert "as errors compound" not in text.replace("because errors compound", "")
    assert "a^{i-1}" in answer("acceptance-by-position") and "rise" in answer("acceptance-by-position")
    # 2: temperature is a tendency; the worked example
    assert "lower temperature all raise it" not in text
    assert "(0.51, 0.49)" in answer("acceptance-temperature") and "0.98" in answer("acceptance-temperature")
    # 3: q need not be processed like p
    assert "Must the draft's q" in next(q.question for q in load()[0] if q.id == "temperature-consistency")
    assert "any* q" in answer("temperature-consistency")
    # 4: the neutral length penalty is 0
    lp = answer("length-penalty")
    assert "α > 1 favours longer" not in text and "\\alpha = 0" in lp and "including the EOS" in lp and "(5 + L)/6" in lp
    # 5: the three early_stopping settings
    bf = answer("beam-finished")
    assert all(s in bf for s in ("early_stopping=True", "`False`", '"never"', "current* length", "max(2, 1 + E)"))
    # 6: the longest accepted path is for greedy only
    assert "The longest accepted root-to-leaf path wins" not in text
    assert "recursive rejection sampling" in answer("tree") and "share" in answer("tree-mask")
    # 7: the formula is an estimate
    assert "estimate" in answer("estimate-not-bound") and "both directions" in answer("estimate-not-bound")
    # 10: exact arithmetic
    assert "exact arithmetic" in answer("greedy-verification") and "near-ties" in answer("numerical-losslessness")
    # 11: Medusa heads and variants
    md = answer("medusa")
    assert "t+k+1" in md and "Medusa-1" in md and "Medusa-2" in md and "lossy" in md
    # 12: batch size: attention stays memory-bound at long context
    assert "long context" in answer("batch-size") and "K+1 times" in answer("batch-size")
    # 13: KV bytes in the memory-bound time
    assert "KV-cache bytes" in answer("memory-bound")
    # 14: beam memory and "usually"
    assert "multiplies compute and KV memory by B" not in text and "shared" in answer("when-beam")
    assert "*usually*" in answer("greedy-vs-beam")
    # 15: both acceptance-rate definitions
    assert "*proposed*" in answer("metrics") and "*ruled on*" in answer("metrics")
    # 16: EAGLE generations
    eg = answer("eagle")
    assert "*static* tree" in eg and "*dynamically*" in eg and "training-time test" in eg
    # 17: which draft the figures are for
    assert "feature draft" in answer("feature-draft") and "token draft" in answer("feature-draft")
    assert "2.3×" not in text and "0.72×" not in text
    # 21: the lossy variants are named
    mc = next(m for m in load()[1] if "approximate" in m.claim).correct
    assert "typical acceptance" in mc and "BiLD" in mc and "assistant_ensemble_weight" in mc


# ---------------------------------------------------------------- measured figures come from one place
# A quoted measurement: a ratio written with ×, an acceptance-like fraction with three decimals, a
# tokens-per-pass figure, or a percentage. Worked examples in the answers use other forms (0.98, 2.7731).
FIGURE_PATTERNS = [r"(\d+(?:\.\d+)?)×", r"(?<![\d.])(0\.\d{3})(?!\d)", r"(\d+\.\d+) tokens per (?:target )?pass",
                   r"(\d+(?:\.\d+)?) ?%"]
MODEL_CARD = ROOT / "models" / "README.md"
CARD_NAMES = ("model card", "models/README.md")
# percentages that are external reports, attributed to their paper in the answer
EXTERNAL = {("mtp-drafters", "85"), ("mtp-drafters", "90")}


def quoted_figures(text):
    for pat in FIGURE_PATTERNS:
        for m in re.finditer(pat, text):
            yield m.group(1), pat.endswith("%")


def _decimals(figure: str) -> int:
    return len(figure.split(".")[1]) if "." in figure else 0


def card_figures() -> set:
    """The model card's numbers as written: (value, decimals); '.55' counts as 0.55."""
    text = MODEL_CARD.read_text(encoding="utf-8")
    return {(float(x), _decimals(x)) for x in re.findall(r"(?<![\d.])\d*\.?\d+", text)}


def _json_numbers(x, out):
    if isinstance(x, bool):
        return out
    if isinstance(x, (int, float)):
        out.add(float(x))
    elif isinstance(x, dict):
        for v in x.values():
            _json_numbers(v, out)
    elif isinstance(x, list):
        for v in x:
            _json_numbers(v, out)
    return out


def bench_figures(name: str) -> set:
    """Every number in one benchmark JSON, whatever its keys are called."""
    return _json_numbers(json.loads((ROOT / "docs" / name).read_text(encoding="utf-8")), set())


def in_card(figure: str, percent: bool, card: set) -> bool:
    value, d = float(figure), _decimals(figure)
    return (value, d) in card or (percent and (value / 100, d + 2) in card)


def in_bench(figure: str, percent: bool, nums: set) -> bool:
    value, d = float(figure), _decimals(figure)
    if percent:
        value, d = value / 100, d + 2
    return any(round(n, d) == round(value, d) for n in nums)


def unsourced_figures(qid: str, text: str) -> list:
    """Figures that are neither in a source the text names (the model card, a docs/bench-*.json) nor external."""
    card = card_figures() if any(n in text for n in CARD_NAMES) else set()
    benches = [bench_figures(n) for n in sorted(set(re.findall(r"bench-[\w-]+\.json", text)))]
    bad = []
    for fig, percent in quoted_figures(text):
        ok = (qid, fig) in EXTERNAL or in_card(fig, percent, card) or any(in_bench(fig, percent, b) for b in benches)
        if not ok:
            bad.append((qid, fig))
    return bad


def test_quoted_figures_come_from_the_model_card_or_the_benchmark():
    """Every measured figure a Q&A text quotes names its source (the model card or a benchmark JSON) and is
    found there; the model card's figures must match as written, the JSON's after rounding."""
    assert [b for qid, text in all_text() for b in unsourced_figures(qid, text)] == []
    for path in (ROOT / "docs").glob("bench-*.json"):
        assert bench_figures(path.name)  # the benchmark JSON is readable


def test_the_figure_check_catches_stale_and_unsourced_figures():
    fresh = "The model card gives the feature draft 1.36× at K = 4, acceptance 0.564 and 2.03 tokens per pass."
    assert unsourced_figures("x", fresh) == []
    stale = "The model card gives the feature draft 9.87× at K = 4, acceptance 0.987 and 4.56 tokens per pass."
    assert [f for _, f in unsourced_figures("x", stale)] == ["9.87", "0.987", "4.56"]
    assert [f for _, f in unsourced_figures("x", "The feature draft gives 1.36× at K = 4.")] == ["1.36"]  # no source
    # the figures issue 20 found stale in the old Q&A fail
    old = "Packing made one step 2.3× faster and the same draft went from 0.72× to 1.18× plain greedy."
    assert [f for _, f in unsourced_figures("x", old)] == ["2.3", "0.72", "1.18"]
