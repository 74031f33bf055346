"""The answer grader (issue 47): formulas parsed as formulas, fixed examples (a paraphrase credited, the rubric's
words used to say something false refused, a right number from a wrong formula refused), the CLI contract, bad
input. The grader's agreement with the hand labels is measured by `python -m specviz grade --eval`, not here."""
import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from specviz.errors import SpecVizError
from specviz.practice import formula as F
from specviz.practice import grade as G
from specviz.qa.bank import bank

ROOT = Path(__file__).resolve().parent.parent
needs_model = pytest.mark.skipif(not G.available(), reason="the grader's encoder package is not installed")


@pytest.mark.fast
@pytest.mark.parametrize("written", ["(1 - a^(K+1))/(1 - a)", "(1-a**(K+1))/(1-a)", "\\frac{1 - a^{K+1}}{1 - a}",
                                     "1 + a + a^2 + ... + a^K", "1 + a + … + a^K", "sum_{i=0}^{K} a^i",
                                     "(1 − α^(γ+1))/(1 − α)"])
def test_the_expected_tokens_formula_in_any_usual_way(written):
    ref = F.compile_formula("(1 − a^(K+1))/(1 − a)")
    assert F.same_formula(F.compile_formula(written), ref)


@pytest.mark.fast
def test_other_formulas_are_told_apart_and_parsing_is_bounded():
    ref = F.compile_formula("(1 − a^(K+1))/(1 − a)")
    for wrong in ("(1 - a^K)/(1 - a)", "1/(1 - a)", "a*K", "(1 - a^(K+1))/((1 - a)(K c + 1))"):
        assert not F.same_formula(F.compile_formula(wrong), ref)
    w = F.compile_formula("(1 − a^(K+1))/((1 − a)(Kc + 1))")  # implicit products
    assert F.evaluate(w, dict(a=0.7, K=4, c=0.1)) == pytest.approx(2.77309 / 1.4, rel=1e-4)
    assert F.compile_formula("(" * 5000 + "a" + ")" * 5000) is None  # over the bound: no formula, no recursion
    assert F.compile_formula("(a + 1") is None and F.compile_formula("import os") is None
    assert F.matches("2.77", 2.7731) and F.matches("2.773", 2.7731) and not F.matches("2.8", 2.7731)


@pytest.mark.fast
def test_bad_answers_answer_in_one_line():
    for bad in ("", "   ", "x" * (G.MAX_ANSWER + 1), "(((( ))))", "12345 + 678"):
        with pytest.raises(SpecVizError):
            G.check_answer(bad)
    with pytest.raises(SpecVizError, match="plain text"):  # the bad inputs include HTML: one line
        G.check_answer("<b>exact</b> output")


@pytest.mark.fast
def test_clauses_are_substrings_and_bounded():
    text = ("Exact, not approximate. The target checks every guess in one pass; then it resamples, but from the "
            "residual.")
    spans = G.clauses(text)
    assert spans and all(0 <= a < b <= len(text) for a, b in spans)
    assert any(text[a:b] == "The target checks every guess in one pass" for a, b in spans)
    assert len(G.clauses("word, " * 3000)) <= G.MAX_CLAUSES
    # never cut inside brackets (a walk in Chromium was shown the evidence "The accept branch already emitted min(p")
    proof = "The accept branch already emitted min(p, q) with probability one, and the residual adds max(0, p - q)."
    assert all(proof[a:b].count("(") == proof[a:b].count(")") for a, b in G.clauses(proof))
    # nor does a sentence end at an abbreviation (the grader's clauses and the hints share the cut)
    said = "The argument assumes v ≈ 1, i.e. a verify pass costs one step. E.g. on a GPU. Draws are i.i.d. here."
    assert [said[a:b] for a, b in G.sentence_spans(said)] == [
        "The argument assumes v ≈ 1, i.e. a verify pass costs one step.", "E.g. on a GPU.", "Draws are i.i.d. here."]
    first = "The accept branch already emitted min(p, q) with probability one"
    assert first in [proof[a:b] for a, b in G.clauses(proof)]


@pytest.mark.fast
def test_a_piece_that_asserts_nothing_is_not_a_clause_but_its_sentence_is():
    """A piece cut from a sentence that stops on a word needing more, or a subordinate clause without its main one,
    cannot make a point (it earned "emit the target's argmax" for "and at the first mismatch you"); the whole
    sentence and the pieces that are claims stay."""
    text = ("So you accept the draft if it's the argmax, and at the first mismatch you, uh, you stop and redraft. "
            "When the draft is rejected, we keep the drafts before it.")
    pieces = [text[a:b] for a, b in G.clauses(text)]
    assert "and at the first mismatch you" not in pieces and "When the draft is rejected" not in pieces
    assert any(p.startswith("So you accept the draft") and p.endswith("redraft.") for p in pieces)
    assert "we keep the drafts before it." in pieces and "When the draft is rejected, we keep the drafts before it." \
        in pieces
    assert G.dangling("The expected number of tokens per pass is") and not G.dangling("the target verifies all K")
    assert not G.dangling("Because of this rule the output distribution is exactly the target's")  # a claim


@needs_model
def test_a_paraphrase_earns_the_point_and_the_rubric_words_saying_something_false_do_not():
    card = G.card("what-is-spec")
    made = G.grade(card, "A small, cheap model guesses a few tokens. Then the big model scores all the guesses in a "
                         "single forward pass and keeps the prefix it agrees with.")
    assert made.points[1].made and "single forward pass" in made.points[1].evidence
    wrong = G.grade(card, "The target checks the drafts one by one, in K separate forward passes.")
    assert not wrong.points[1].made
    # (a tuning card: the held-out cards of the labelled set are never a fixture)
    steps = G.card("rejection-steps")
    residual_point = next(n for n, p in enumerate(steps.rubric) if "residual" in p)
    wrong = G.grade(steps, "The drafts before it are kept, and after a rejection you resample from the target's p.")
    assert not wrong.points[residual_point].made


@needs_model
def test_a_hint_is_never_cut_inside_brackets():
    """A missed point's hint is a clause of the model answer; one cut at a comma inside (...) read as a fragment
    ("Hint: and low-entropy text (code")."""
    reference = ("Acceptance is highest on repetitive and low-entropy text (code, lists, boilerplate), where the "
                 "draft and target agree; it is lowest on creative text.")
    h = G.hint("speculation helps most on predictable text such as code", reference)
    assert h.count("(") == h.count(")") and h.strip("…") in reference and "(code, lists, boilerplate)" in h


@needs_model
def test_a_hint_cut_from_mid_sentence_says_so():
    reference = ("Each target pass yields between 1 and K+1 tokens instead of exactly 1, so latency drops while the "
                 "output stays the target's own distribution.")
    h = G.hint("latency falls and the output distribution is unchanged", reference)
    assert h.removeprefix("…") in reference
    assert h.startswith("…so latency drops")  # the clause closest to the point, marked as cut from its sentence
    # and a piece that stops before its sentence does says so at its end (a walk read the first half of "sample
    # y ~ p; if y = x keep the draft, otherwise emit y" as the whole rule)
    reference = "The rule has an equivalent form: sample y from p; if y = x keep the draft, otherwise emit y. Done."
    h = G.hint("an equivalent form of the rule samples y from p", reference)
    body = h.strip("…")
    assert body in reference and h.endswith("…") == (not body.endswith("."))
    assert h.endswith("…") or h.endswith("otherwise emit y.")  # this answer's nearest piece stops at the ";"

@needs_model
def test_a_hint_points_the_right_way_and_never_stops_at_an_abbreviation():
    """A walk in Chromium: "At high load wasted verify work can lower goodput" was hinted "At low load it raises both
    goodputs" (the nearest by cosine alone), and a hint ended "The argument assumes v≈1, i.e."."""
    card = G.card("ttft-tpot")
    reference = {q.id: q for q in bank().questions}["ttft-tpot"].answer
    h = G.hint(card.rubric[4], reference)
    assert "high load the wasted verify work" in h and h != "At low load it raises both goodputs"
    reference = "The argument assumes v ≈ 1, i.e. a verify pass costs about one decode step. Measure it first."
    h = G.hint("The speedup argument assumes the verify cost v is about one step", reference)
    assert not h.endswith(("i.e.", "e.g.")) and "one decode step" in h


def test_a_number_from_a_wrong_formula_does_not_earn_the_point():
    card = G.card("expected-length")
    worked = [i for i, p in enumerate(card.rubric) if "2.7731" in p][0]
    right = G.grade(card, "Each draft is accepted with probability a independently, so the expected count is "
                          "(1 - a^(K+1))/(1 - a), which for a = 0.7 and K = 4 gives 2.77.")
    assert right.points[worked].made and right.points[worked].numeric is True
    wrong = G.grade(card, "The expected count for a = 0.7 and K = 4 is 0.7 × 4 = 2.8, so about 2.77.")
    assert not wrong.points[worked].made


def test_the_formula_that_gives_the_stated_number_must_give_it():
    point = "Worked value: a = 0.7, K = 4 gives 2.7731"
    # the sentence stating 2.77 writes a formula in a and K that gives 1.77: the number was not computed from it
    wrong = "Every draft passes with probability a. It's a geometric thing, E = a(1 − a^K)/(1 − a), and for " \
            "a = 0.7, K = 4 that comes out to 2.77."
    assert G.numeric_check(point, "Every draft passes with probability a.", wrong) is False
    # a formula in a and K elsewhere (a^K, the chance all pass) is a step, not the answer's formula for 2.77
    right = "You get K+1 tokens with probability a^K when all pass. E = (1 − a^(K+1))/(1 − a); with a = 0.7 " \
            "and K = 4: (1 − 0.16807)/0.3 = 2.773."
    assert G.numeric_check(point, "with a = 0.7 and K = 4: (1 − 0.16807)/0.3 = 2.773", right) is True


@pytest.mark.fast
def test_lookaheads_positions_formula_is_checked_in_w_n_g():
    point = G.card("lookahead-cost").rubric[0]
    assert "(N − 1)W" in point  # the card's point this test is about
    # W + N + G sums the three knobs: a formula in the same variables that is not the point's
    assert G.numeric_check(point, "each step processes W + N + G positions", "") is False
    for right in ("a step feeds 1 + W(N-1) + G(N-1) positions", "it is 1 + (N − 1)(W + G) positions"):
        assert G.numeric_check(point, right, right) is True
    assert F.formulas_in("the K + 1 positions") == []  # one variable plus a number is prose, not a formula
    for prose in ("pick a K of 4", "a W of 5", "with a K + 1 position verify", "a K = 3 chain gives 256"):
        assert F.formulas_in(prose) == [], prose  # the article a beside a variable is not a times K
    worked = "for a K of 4 and a = 0.7: (1 − 0.16807)/0.3 = 2.773"
    assert G.numeric_check("Worked value: a = 0.7, K = 4 gives 2.7731", worked, worked) is True


def run_cli(*args, stdin=None):
    return subprocess.run([sys.executable, "-m", "specviz", "grade", *args], capture_output=True, text=True,
                          cwd=ROOT, input=stdin, timeout=300)


def test_cli_bad_input_is_one_line_and_exit_2():
    for args in (("--card", "no-such-card", "--answer", "x"), ("--card", "what-is-spec", "--answer", ""),
                 ("--card", "what-is-spec", "--answer", "y" * (G.MAX_ANSWER + 1)), ("--answer", "x"),
                 ("--card", "what-is-spec", "--answer", "<script>alert(1)</script>"),
                 ("--card", "what-is-spec", "--answer", "asdkj qwpoe zxmcn lkjh"),
                 ("--cv", "--start", "/no/such/stage-one.safetensors"), ("--cv", "--start", "README.md"),
                 ("--eval", "--start", "README.md"), ("--eval", "--no-contrasts"),
                 ("--cv", "--train", "--no-contrasts"), ("--eval", "--device", "cuda")):
        out = run_cli(*args)
        assert out.returncode == 2 and len(out.stderr.strip().splitlines()) == 1, (args, out.stderr)
    listed = run_cli("--list", "--json")
    assert listed.returncode == 0
    cards = {c["card"] for c in json.loads(listed.stdout)}
    assert "what-is-spec" in cards and any(":" in c for c in cards)  # questions and mock steps


def test_cli_overrules_reports_where_learners_and_the_grader_disagree(tmp_path, monkeypatch):
    """grade --overrules reads the progress database (SPECVIZ_DB) without loading a model: the overrules by direction
    and point, as text or JSON, for everyone or one learner by name; an unknown name is one line, exit 2."""
    from specviz.practice.progress import Progress
    monkeypatch.setenv("SPECVIZ_DB", str(tmp_path / "p.sqlite"))
    p = Progress()
    empty = run_cli("--overrules")
    assert empty.returncode == 0 and empty.stdout.startswith("No graded answers yet")
    p.record_points(p.learner("Ada"), "what-is-spec", [(0, "drafter proposes K", False, True),
                                                       (1, "one pass", True, True)])
    p.record_points(p.learner("Lin"), "what-is-spec", [(0, "drafter proposes K", True, False)])
    text = run_cli("--overrules")
    assert text.returncode == 0, text.stderr
    assert text.stdout.startswith("2 of 3 graded points overruled (66.7 %), by 2 learners")
    assert "what-is-spec #1  2 of 2  (1 ✗→✓, 1 ✓→✗)  drafter proposes K" in text.stdout
    d = json.loads(run_cli("--overrules", "--learner", "Ada", "--json").stdout)
    assert (d["graded"], d["overruled"], d["to_made"], d["to_missed"], d["learners"]) == (2, 1, 1, 0, 1)
    bad = run_cli("--overrules", "--learner", "Nobody")
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1 and Progress().known("Nobody") is None
    p.record_points(p.learner("Ada"), "ttft-tpot", [(k, f"p{k}", False, True) for k in range(12)])
    assert len(json.loads(run_cli("--overrules", "--json").stdout)["points"]) == 13  # JSON: all, the text ten
    monkeypatch.setenv("SPECVIZ_DB", str(tmp_path / "mistyped.sqlite"))
    missing = run_cli("--overrules")  # a report never makes a database
    assert missing.returncode == 2 and not (tmp_path / "mistyped.sqlite").exists()


@pytest.mark.fast
def test_cli_takes_an_answer_written_as_a_bullet_list():
    """A terse answer starts with "- ": it is --answer's value, not an unknown option (argparse alone refuses)."""
    from specviz.__main__ import _glued, _parser
    notes = "- target scores all K drafts in one pass\n- output exactly the target's"
    a = _parser().parse_args(_glued(["grade", "--card", "what-is-spec", "--answer", notes, "--json"]))
    assert a.answer == notes and a.json and a.card == "what-is-spec"
    assert _parser().parse_args(_glued(["grade", "--card", "c", "--answer", "-"])).answer == "-"  # standard input


@needs_model
def test_cli_contract_json_and_stdin():
    answer = "The big model checks all the drafted tokens in one forward pass, and the output is exactly its own."
    out = run_cli("--card", "what-is-spec", "--answer", "-", "--json", stdin=answer)
    assert out.returncode == 0, out.stderr
    d = json.loads(out.stdout)
    assert set(d) == {"card", "points", "score"} and d["card"] == "what-is-spec"
    rubric = G.card("what-is-spec").rubric
    assert [p["point"] for p in d["points"]] == list(rubric)
    for p in d["points"]:
        assert set(p) == {"point", "made", "confidence", "evidence"} and 0 <= p["confidence"] <= 1
        assert (p["evidence"] is None) != p["made"] and (p["evidence"] is None or p["evidence"] in answer)
    assert d["score"] == pytest.approx(sum(p["made"] for p in d["points"]) / len(rubric))


@pytest.mark.fast
def test_a_point_flipped_to_its_opposite_for_the_second_readers_negatives():
    from specviz.training.reader_train import flips
    assert "The target verifies all K drafts in K separate passes" in flips(
        "The target verifies all K drafts in one forward pass")
    assert any("approximately" in f for f in flips("The output is exactly the target's distribution"))
    assert any("cannot" in f for f in flips("The draft can sample from any q"))
    assert flips("Greedy: one hypothesis") == []  # nothing to flip: no made-up negative
    turned = flips("Widening the beam is not monotonic", 99)
    assert "Widening the beam is monotonic" in turned and not any("not not" in f for f in turned)


@pytest.mark.fast
def test_stance_pairs_put_a_paraphrase_where_the_point_was():
    """A point's paraphrases stand in for its words: each read against another paraphrase (made), against each
    contrast that denies it and the point's words flipped (not made); a point no contrast denies gets none, and the
    left side is never one of its denials."""
    import random
    from specviz.training.reader_train import stance_swaps
    point, other = "The target verifies all K drafts in one forward pass", "Rejected drafts are discarded"
    said = ["The big model checks every guess in a single call.", "One target pass scores all the guesses at once."]
    deny = "The target runs K passes, one per guess, in order."
    data = [(point, s, 1.0) for s in said] + [(other, "Bad guesses are thrown away.", 1.0)]
    contrasts = {"card": [(point, said[0], 1.0), (point, deny, 0.0)]}
    out = stance_swaps(data, contrasts, random.Random(0), 2)
    assert {a for a, _, _ in out} == set(said)  # the paraphrases, never the point's own words or the other point's
    for a in said:
        assert (a, deny, 0.0) in out and (a, "The target verifies all K drafts in K separate passes", 0.0) in out
        assert [(x, b, y) for x, b, y in out if x == a and y == 1.0] == [(a, next(s for s in said if s != a), 1.0)]
    assert len({a for a, _, _ in stance_swaps(data, contrasts, random.Random(0), 1)}) == 1
    assert stance_swaps(data, {"card": [(point, said[0], 1.0)]}, random.Random(0), 2) == []


@needs_model
def test_the_second_reader_reads_point_and_clause_together():
    """The pair read as one text: a paraphrase rates above the same words turned to say the opposite (what two
    separately embedded vectors barely tell apart). Sentences written for this test, in no labelled answer."""
    reader = G.default_reader()
    assert reader is not None, "models/grader/reader.safetensors is shipped"
    point = "The target verifies all K in one forward pass"
    read = reader.logits([(point, "the big model then checks every one of the guesses together in a single pass"),
                          (point, "the big model then checks the guesses one after another, a pass for each")])
    assert float(read[0]) > float(read[1])


@needs_model
def test_without_the_second_readers_weights_the_first_grades_alone(monkeypatch):
    card = G.card("what-is-spec")
    answer = ("A small, cheap model guesses a few tokens. Then the big model scores all the guesses in a single "
              "forward pass and keeps the prefix it agrees with.")
    both = G.grade(card, answer)
    monkeypatch.setattr(G, "default_reader", lambda: None)
    alone = G.grade(card, answer)
    assert alone.points[1].made and both.points[1].made
    assert [p.point for p in alone.points] == list(card.rubric)


@pytest.mark.fast
def test_and_cuts_between_claims_not_symbols_and_no_sentence_of_a_long_answer_is_dropped():
    text = "Each pass gives between 1 and K+1 tokens and the output is exactly the target's. Compare p and q."
    said = [text[a:b] for a, b in G.clauses(text)]
    assert "Each pass gives between 1 and K+1 tokens" in said and "the output is exactly the target's." in said
    assert "Compare p and q." in said and not any(s in ("Compare p", "q.") for s in said)
    # 30 sentences of three clauses each: past MAX_CLAUSES the joined pairs and parts go, never a whole sentence
    long = " ".join(f"Claim {n} holds, it is short, and it ends here." for n in range(30))
    spans = G.clauses(long)
    assert len(spans) == G.MAX_CLAUSES
    assert all(f"Claim {n} holds, it is short, and it ends here." in {long[a:b] for a, b in spans} for n in range(30))


@needs_model
def test_a_follow_up_stays_on_the_missed_points_subject():
    """The twin rule drops the nearest cards; a word-level match from another subject must not win what is left
    (greedy-vs-beam's "one hypothesis, the most likely token" point was followed up with a MoE verify question)."""
    from specviz.qa.bank import bank

    topics = {q.id: q.topic for q in bank().questions}
    beam = G.card("greedy-vs-beam")
    assert all(topics[G.follow_up(p, [beam.id]).id] == "greedy and beam" for p in beam.rubric)
    # a mock step's point has no card topic of its own: it takes the nearest bank question's
    mock = next(c for c in G.gradable_cards() if c.startswith("mock-beam:"))
    assert G.point_topic(G.card(mock).rubric[0]) == "greedy and beam"


@needs_model
def test_a_follow_up_holds_a_point_near_the_one_missed():
    """An interviewer's follow-up digs where the answer was thin, so the follow-up card must itself be gradable on
    the missed point. By the whole card alone, "the output is exactly the target's" was followed up with a logprobs
    question whose nearest rubric point sat at cosine 0.29, and 50 of the mock steps' 133 points got a follow-up
    with no point within 0.4 of theirs. Now none does: where no card fits there is no follow-up (a walk answered
    "it is never exactly free (v > 1)" with a best-of-n question), and that stays rare."""
    from specviz.qa.bank import bank

    enc = G.default_encoder()
    questions = {q.id: q for q in bank().questions}

    def nearest(point, card_id):
        return float((enc.cached(list(questions[card_id].rubric)) @ enc.cached([point])[0]).max())

    step = "mock-spec-end-to-end:1"
    exact = next(p for p in G.card(step).rubric if "exactly" in p)
    assert nearest(exact, G.follow_up(exact, [step], enc).id) >= 0.4
    picks = [(p, G.follow_up(p, [f"{m.id}:{n}"], enc)) for m in bank().mocks for n, s in enumerate(m.steps, 1)
             for p in s.rubric]
    assert all(nearest(p, c.id) >= G.FOLLOW_UP_FLOOR for p, c in picks if c is not None)
    none = [p for p, c in picks if c is None]
    assert len(none) <= len(picks) // 5, none  # 21 of 133 at 0.45 (13 at 0.4)
    assert "It is never exactly free (v > 1), and on a small CPU it can be far from free" in none


@needs_model
def test_a_follow_up_never_asks_the_question_just_asked_in_other_words():
    """A walk answered the chain's "Does it still pay at batch 64?" and was asked "Does speculative decoding still
    pay at batch 64? Reason from the roofline." next: the bank's twin of the step (questions 0.67 apart, question and
    rubric as one text 0.75). A twin of an asked card is no follow-up, whichever point was missed; the next best
    card is asked only when it holds a point within TWIN_FLOOR."""
    steps = [f"mock-spec-end-to-end:{n}" for n in (1, 2, 3)]
    for missed in G.card(steps[-1]).rubric[1:]:
        pick = G.follow_up(missed, steps)
        assert pick is None or pick.id != "spec-at-batch-64", missed
    assert G.follow_up(G.card(steps[-1]).rubric[1], steps[:2]).id == "spec-at-batch-64"  # before the step: asked


@needs_model
def test_a_follow_up_probes_the_miss_not_what_the_answer_made():
    """A walk said "the target checks all K in one forward pass" and missed the accept rule: the follow-up asked how
    the target checks K drafts in one pass (what it had just said). A question as near a made point as a twin of an
    asked one is no follow-up; and where no card holds a point near the miss there is none."""
    step = G.card("mock-spec-end-to-end:1")
    made, missed = step.rubric[0], step.rubric[1]
    assert G.follow_up(missed, [step.id]).id == "verify-one-pass"  # by the missed point alone
    assert G.follow_up(missed, [step.id], made=[made]).id == "bonus-token"
    assert G.follow_up("A chi-square (or similar) test with a stated significance", ["mock-coding-round:2"]) is None


@pytest.mark.fast
def test_a_hedge_is_not_made_by_always_and_only_a_hedge_is_read_so():
    hedge = "Beam usually but not always ends with a likelier sequence (B = 1 is greedy)"
    assert G.contradicts(hedge, "because it explores more it always finds a likelier sequence than greedy")
    assert G.contradicts(hedge, "No, beam always finds the likelier one")  # a "No," three words back is no "not always"
    for fine in ("it is not always better, but usually it finds a likelier sequence", "it isn't always better",
                 "it is not usually worse than greedy", "the likelier sequence comes out most of the time"):
        assert not G.contradicts(hedge, fine), fine
    # one way only, and only a point that hedges: "always" in a point, "often" in brackets, "can" are no hedge
    assert not G.contradicts("Always name the metric", "usually people name the metric")
    assert not G.contradicts("A host step (often a CUDA graph) runs to completion", "a launched step always runs to "
                             "completion")
    assert not G.contradicts("Beam can recover from a locally poor token", "it always keeps B beams")


@pytest.mark.fast
def test_a_point_that_loses_its_clause_falls_back_to_its_next_one_not_yet_said():
    """One statement counts once, but a sentence can hold two: the surer point keeps the whole sentence, the other
    takes its next clause (the first half) when that clause alone makes it, and is missed when it was said already."""
    answer = "It keeps the longest matching prefix plus one token, so each pass gives 1 to K+1 tokens."
    whole, half = (0, len(answer)), (0, answer.index(", so"))
    rubric = ("Accept the longest prefix the target agrees with, plus one token", "Each pass yields 1 to K+1 tokens")
    x = [0.0]

    def per(first_half_z):
        return [(x, whole, None, 2.0, [(half, None, first_half_z)]), (x, whole, None, 3.0, [])]

    graded = G.decide_all(rubric, answer, per(1.0), 0.5)
    assert [made for made, _, _ in graded] == [True, True]
    assert graded[0][2] == half and graded[1][2] == whole  # each point shows its own evidence
    assert [made for made, *_ in G.decide_all(rubric, answer, per(1.0), 0.5, fall_back=False)] == [False, True]
    assert [made for made, *_ in G.decide_all(rubric, answer, per(-1.0), 0.5)] == [False, True]  # too unsure alone
    # a second choice clears the threshold by a margin: p = 0.52 would make a first pick, not a fall-back
    assert [made for made, *_ in G.decide_all(rubric, answer, per(0.08), 0.5)] == [False, True]  # the default
    assert [made for made, *_ in G.decide_all(rubric, answer, per(0.08), 0.5, margin=0.0)] == [True, True]
    said = [(x, whole, None, 2.0, [(whole, None, 5.0)]), (x, whole, None, 3.0, [])]  # its next is the same words
    assert [made for made, *_ in G.decide_all(rubric, answer, said, 0.5)] == [False, True]


@pytest.mark.fast
def test_a_sentence_made_only_of_statements_other_points_took_makes_no_third():
    """Its clauses made two points; read whole, it must not make a third ("The target checks every draft in one pass
    and the output is exactly the target's" is not "a cheap drafter proposes K tokens"); a sentence that says more
    than its clauses still can."""
    rubric = ["A cheap drafter proposes K tokens", "The target verifies all K in one pass", "The output is exact"]
    for extra, third in (("", False), ("A small model drafts K tokens, then ", True)):
        answer = extra + "the target checks every draft in one pass and the output is exactly the target's."
        one = (len(extra), answer.index(" and "))
        two = (answer.index("the output"), len(answer))
        per = [(None, (0, len(answer)), None, 2.0, [(one, None, 1.9)]), (None, one, None, 3.0, []),
               (None, two, None, 2.5, [])]
        assert [made for made, *_ in G.decide_all(rubric, answer, per, 0.5)] == [third, True, True]


@needs_model
def test_one_statement_counts_once_however_often_it_is_said():
    """A learner's walk: one sentence about the one-pass verify earned 4 of 5 points of what-is-spec (a cheap
    drafter, 1 to K+1 tokens a pass), the same clause the evidence of three; said three times, still 4."""
    card = G.card("what-is-spec")
    once = ("The target model verifies all of the K draft tokens in one forward pass and the output distribution "
            "is exactly the target's.")
    for answer in (once, " ".join([once] * 3)):
        g = G.grade(card, answer)
        made = [p for p in g.points if p.made]
        assert len({" ".join(p.evidence.lower().split()) for p in made}) == len(made)  # no clause used twice
        assert [p.made for p in g.points][1] and g.score <= 0.4
    strong = ("A small draft model guesses K tokens cheaply. The big target model then checks all K guesses in a "
              "single forward pass. It keeps the longest prefix that matches what it would have produced, plus one "
              "token of its own, so each target pass gives between 1 and K+1 tokens and latency drops. The output "
              "is exactly the target's: the same distribution when sampling, the same tokens under greedy.")
    assert G.grade(card, strong).score == 1.0


@pytest.mark.fast
def test_the_labelled_set_keeps_its_held_out_parts_apart():
    """Held-out cards and fresh and hard answers (held out by answer) never reach training or cross-validation;
    every label has its point, and every made point its evidence, verbatim in the answer."""
    from specviz.training import grader as T
    rows, held = T.load_labels()
    tune, test = T.split(rows, held)
    later, hard = T.fresh(rows), T.hard(rows)
    assert later and test and tune and hard
    assert not any(r.fresh or r.hard for r in tune + test) and all(r.card not in held for r in tune + later + hard)
    assert len(tune) + len(test) + len(later) + len(hard) == len(rows) and not set(later) & set(hard)
    cards = T.cards_by_id()
    for r in rows:
        assert len(r.labels) == len(cards[r.card].rubric), r.card
        for made, ev in zip(r.labels, r.evidence):
            assert not made or (ev and ev in r.answer), (r.card, ev)
    assert {r.kind for r in later} >= {"wrong", "strong"}
    # the third part, new cards: held out by card like the first, and no other part has an answer to one of them
    new = T.new_cards()
    first = set(yaml.safe_load(T.LABELS.read_text(encoding="utf-8"))["held_out_cards"])
    # the fourth, mock-interview steps: held out by card too, each a step of a mock the bank has
    mock = T.mock_steps()
    assert new and mock and not (new & first or mock & (first | new)) and held == first | new | mock
    assert {r.card for r in test} == held and mock <= set(G.gradable_cards())
    assert not any(r.card in new | mock for r in tune + later)
    assert {r.kind for r in test if r.card in mock} == {"strong", "partial", "wrong", "off-topic"}
    # the fifth, late answers: on the first part's cards and the mock steps, so split keeps them with the test
    last = T.late(rows)
    assert last and {r.card for r in last} <= first | mock and not any(r.fresh for r in last)
    assert not set(last) & set(tune) and {r.kind for r in last} == {"strong", "partial", "wrong", "off-topic"}
    # the sixth, hard answers: on tuning cards (every one of them), held out by answer like the fresh ones
    assert {r.card for r in hard} == {r.card for r in tune} and {r.kind for r in hard} == {"strong", "partial", "wrong"}


def test_the_shipped_head_was_trained_on_the_whole_tuning_part_at_the_chosen_weight_and_threshold():
    """Labels added to the tuning part (the mock steps' answers, say) without `grade --train`, or a weight or threshold
    chosen by cross-validation but not written to models/grader/head.json, would ship a grader the figures are not of.
    """
    import json
    from specviz.training import grader as T
    tune, _ = T.split(*T.load_labels())
    h = json.loads(G.HEAD_FILE.read_text(encoding="utf-8"))
    assert h["trained_on"]["answers"] == len(tune) and h["trained_on"]["labels"] == sum(len(r.labels) for r in tune)
    assert h["trained_on"]["cards"] == len({r.card for r in tune})
    assert h["stack"][2] == T.READER_WEIGHT and h["threshold"] == T.READER_THRESHOLD


def _contrasts_are_shaped(data: list, cards: dict, makes: int) -> None:
    """Per card, its rubric's points in order; per point `makes` sentences that make it and five that deny it, one
    of those with no negation word."""
    import re
    negation = re.compile(r"\b(not|no|never|none|nothing|without|cannot)\b|n't", re.I)
    for c in data:
        assert [p["point"] for p in c["points"]] == list(cards[c["card"]].rubric), c["card"]
        for p in c["points"]:
            assert len(p["makes"]) == makes and len(p["denies"]) == 5
            # a quoted "never" names beam search's setting: not a negation
            assert any(not negation.search(re.sub(r'"[^"]*"', "", d)) for d in p["denies"]), p["point"]


@needs_model
def test_stance_contrasts_leave_out_held_out_cards_and_reach_training_only_for_the_cards_given(tmp_path):
    """Every card but the held-out ones has contrasts (the mock interviews' steps too): per point, two sentences that
    make it and five that deny it, one of those with no negation word, no sentence twice; no held-out card is there
    (a file naming one, an unknown card or a point off its rubric is refused); the second reader's pairs take the
    contrasts they are given and no other."""
    from specviz.training import grader as T
    from specviz.training import reader_train as RT
    data = yaml.safe_load(T.CONTRASTS.read_text(encoding="utf-8"))
    rows, held = T.load_labels()
    tune, _ = T.split(rows, held)
    cards = T.cards_by_id()
    assert not {c["card"] for c in data} & held and {r.card for r in tune} <= {c["card"] for c in data}
    assert {c["card"] for c in data} == set(G.gradable_cards()) - held  # every card a learner meets but the held-out
    said = [t for c in data for p in c["points"] for t in p["makes"] + p["denies"]]
    assert len(said) == len(set(said))
    _contrasts_are_shaped(data, cards, 2)
    for bad in ([{"card": sorted(held)[0], "points": []}], [{"card": "no-such-card", "points": []}],
                [{"card": data[0]["card"], "points": [{"point": "not a rubric point", "makes": ["x"]}]}]):
        (tmp_path / "c.yaml").write_text(yaml.safe_dump(bad))
        with pytest.raises(SpecVizError):
            T.load_contrasts(tmp_path / "c.yaml")
    with pytest.raises(SpecVizError, match="missing"):
        T.load_contrasts(tmp_path / "absent.yaml")
    contrasts = T.load_contrasts()
    graded = {r.card for r in tune} - {tune[0].card}  # cross-validation's test fold, say
    taught = {c: v for c, v in contrasts.items() if c not in graded}
    got = set(RT.pairs(tune[:1], cards, G.default_encoder(), G.head()["weights"], contrasts=taught))
    assert all(set(v) <= got if c in taught else not set(v) & got for c, v in contrasts.items())


@pytest.mark.fast
def test_the_held_out_cards_contrasts_are_read_at_grade_time_and_never_teach():
    """The held-out cards have their own file, of the tuning cards' shape (one sentence that makes each point, five
    that deny it, one of those with no negation word), naming exactly the held-out cards; with it, every point a
    learner meets has denials for the grader to read, and the training file still refuses those cards."""
    from specviz.training import grader as T
    rows, held = T.load_labels()
    cards = T.cards_by_id()
    data = yaml.safe_load(G.HELD_OUT_CONTRASTS.read_text(encoding="utf-8"))
    assert {c["card"] for c in data} == held and not set(T.load_contrasts()) & held
    _contrasts_are_shaped(data, cards, 1)
    den = G.denials()
    assert all(len(den.get(p, ())) >= 5 for k in G.gradable_cards().values() for p in k.rubric)


@pytest.mark.fast
def test_a_clause_loses_logits_only_when_it_reads_as_a_denial_about_as_well_as_the_point():
    w, m = G.DENIAL_WEIGHT, G.DENIAL_MARGIN
    assert G.denial_penalty(5.0, []) == 0.0
    assert G.denial_penalty(5.0, [5.0 - m - 3.0, -2.0]) == 0.0  # the denials read far worse than the point
    assert G.denial_penalty(5.0, [5.0, 1.0]) == pytest.approx(w * m)
    assert G.denial_penalty(2.0, [6.0, 1.0]) == pytest.approx(w * (4.0 + m))


@needs_model
def test_denials_are_read_at_grade_time_unless_switched_off_and_then_the_nearest(monkeypatch):
    """As shipped (DENIALS_READ = 2, the thirteenth round) each clause the head rates above one half is read against
    the DENIALS_READ denials of its point nearest it by the first reader's embedding, no more, and an answer that says
    what a denial says ("rejected draft tokens cost nothing in verification, so goodput can't go down under load") is
    rated lower than with none read: here, from made to not. Switched off (0), no clause is read against a denial.
    A sentence written for this test, in no labelled answer."""
    card = G.card("ttft-tpot")
    point = "At high load wasted verify work can lower goodput"
    j, den = list(card.rubric).index(point), G.denials()[point]
    answer = "At high load the verify work on rejected drafts is basically free, so goodput goes up."
    reader, read = G.default_reader(), []
    logits = reader.logits
    monkeypatch.setattr(reader, "logits", lambda pairs, **k: read.extend(pairs) or logits(pairs, **k))
    assert G.DENIALS_READ == 2
    on = G.pair_features(card.rubric, answer)[j][3]
    against = [(a, b) for a, b in read if a in den]
    assert against and all(sum(x == b for _, x in against) <= 2 for _, b in against)
    monkeypatch.setattr(G, "DENIALS_READ", 0)
    read.clear()
    off = G.pair_features(card.rubric, answer)[j][3]
    every = {d for ds in G.denials().values() for d in ds}
    assert read and not any(a in every for a, _ in read)
    assert on < 0.0 < off
    monkeypatch.setattr(G, "DENIALS_READ", 2)
    enc = G.default_encoder()
    near = G.nearest_denials(point, enc.embed([den[3]])[0], enc)
    assert len(near) == 2 and den[3] in near and set(near) <= set(den)


@needs_model
def test_cross_validate_teaches_each_fold_only_the_other_cards_contrasts(monkeypatch):
    from specviz.training import grader as T
    from specviz.training import reader_train as RT
    tune, _ = T.split(*T.load_labels())
    small = list({r.card: r for r in tune}.values())[:4]
    contrasts = {c: v for c, v in T.load_contrasts().items() if c in {r.card for r in tune}}
    seen = []
    monkeypatch.setattr(T, "_base", lambda rows, cards, enc, **fit: G.head()["weights"])
    monkeypatch.setattr(RT, "pairs", lambda *a, contrasts=None, **k: seen.append(set(contrasts)) or [])
    monkeypatch.setattr(RT, "train_reader", lambda data, start=None, device="cpu": None)
    T.cross_validate(small, folds=2, weights=(0.0,), contrasts=contrasts)
    ids = sorted(r.card for r in small)
    assert seen == [set(contrasts) - set(ids[k::2]) for k in range(2)]


@needs_model
def test_stage_one_trains_a_three_way_head_and_the_reader_starts_from_it(tmp_path):
    """specviz.training.nli on a handful of pairs written here: the file it writes loads into a Reader with the
    3-way head, the one-unit score starts as entailment minus contradiction, and --cv can start from it."""
    import torch

    from specviz.practice import reader as R
    from specviz.training import nli
    rows = [(0, "The big model checks all the guesses in a single pass.", "The target verifies the drafts at once."),
            (2, "The big model checks the guesses one after another.", "The target verifies the drafts at once."),
            (1, "The draft model is small.", "The target verifies the drafts at once."),
            (0, "Rejected drafts waste real compute.", "Rejected drafts cost something."),
            (2, "Rejected drafts cost nothing at all.", "Rejected drafts waste real compute."),
            (1, "The cache is cropped after a rejection.", "Rejected drafts waste real compute.")]
    data = tmp_path / "pairs.tsv"
    data.write_text("".join(f"{y}\t{p}\t{h}\n" for y, p, h in rows), encoding="utf-8")
    assert nli.load(data) == rows
    out = tmp_path / "nli.safetensors"
    nli.main(["--data", str(data), "--test", str(data), "--out", str(out), "--epochs", "1", "--batch", "3"])
    state = R.load_state(out)
    assert {"nli.weight", "nli.bias", "score.weight", "score.bias"} <= set(state)
    reader = R.Reader(G.encoder_dir(), state)
    assert reader.nli is not None and reader.nli.out_features == 3
    assert torch.allclose(reader.score.weight, (reader.nli.weight[nli.ENTAIL] - reader.nli.weight[nli.CONTRA])[None],
                          atol=1e-2)
    # stage two starts from it: before its first step the reader is stage one's (its score reads entailment)
    from specviz.training import reader_train as RT
    pair = ("The target verifies the drafts at once.", "The big model checks all the guesses in a single pass.")
    before = RT.train_reader([(*pair, 1.0)], epochs=0, start=state)
    assert torch.allclose(before.logits([pair]), reader.logits([pair]))
    after = RT.train_reader([(*pair, 1.0), (pair[0], "The big model checks them one by one.", 0.0)], epochs=1,
                            batch=2, start=state)
    assert after.layers == 4 and not torch.allclose(after.score.weight, before.score.weight)


def test_an_answer_in_another_language_is_told_so():
    """A walk in Chromium: a Chinese answer was told it had "no words to grade", and a French one that made three
    points was graded 1 of 5 with no word on why."""
    with pytest.raises(SpecVizError, match="reads English only"):
        G.check_answer("目标模型在一次前向传播中验证所有草稿")
    with pytest.raises(SpecVizError, match="no words to grade"):
        G.check_answer("12345 -> 678 !!!")
    french = ("Le modèle cible vérifie tous les jetons du brouillon en une seule passe, et la distribution de sortie "
              "est exactement celle de la cible.")
    assert "English only" in G.language_note(french)
    assert "English only" in G.language_note("目标模型在一次前向传播中验证所有草稿, KV cache 也要裁剪")  # Chinese
    with pytest.raises(SpecVizError, match="reads English only"):  # refused, not graded 0 and stored as misses
        G.check_answer(french)
    for english in ("reject -> resid = p minus x, renorm", "The target verifies all K drafts in one forward pass and "
                    "the output is exactly the target's.", "K+1 logits; accept w.p. min(1, p/q)",
                    "Cost per token, per draft, per cycle: c per step, con and pro, die size.", "α = 0.7, Σ min(p, q)"):
        assert G.language_note(english) is None
    with pytest.raises(SpecVizError, match="no words to grade"):
        G.check_answer("α = 1")  # Greek letters are maths here, not another language


def test_html_and_keyboard_mash_are_refused_in_one_line_and_no_labelled_answer_is():
    """A walk in Chromium: "<script>alert(1)</script><b>x</b>" and "asdkj qwpoe ..." were graded 0 and stored as
    misses (the issue: HTML and gibberish are one line, nothing stored). Maths with < and > is not HTML; terse notes
    of shorthand and the bank's terms are words."""
    for html_ in ("<script>alert(1)</script><b>x</b>", "the draft is <b>cheap</b>", "<img src=x onerror=alert(1)> ok"):
        with pytest.raises(SpecVizError, match="plain text"):
            G.check_answer(html_)
    for mash in ("asdkj qwpoe zxmcn lkjh qwerty", "lorem ipsum dolor sit amet consectetur adipiscing elit"):
        with pytest.raises(SpecVizError, match="too few English words"):
            G.check_answer(mash)
    for html_ in ('<a href="x">link</a> the target', "<details ontoggle=alert(1)> the target verifies"):
        with pytest.raises(SpecVizError, match="plain text"):
            G.check_answer(html_)
    for fine in ("p<q and q>p, so accept", "stop at the <eos> token", "KV cache tok renorm argmax softmax resid",
                 "asdf: the target verifies all K drafts in one forward pass", "acceptance<head count> is the rate",
                 "prefill<pre-fill time and speedup>1", "non-greedy sampling: non-zero temperature, non-deterministic "
                 "kernels, so not bit-exact", "greedy: bit-exact vs non-spec run; sampling: non-det, same seed"):
        assert G.check_answer(fine) == fine
    from specviz.training import grader as T
    rows, _ = T.load_labels()
    assert all(G.check_answer(r.answer) for r in rows)  # every labelled answer (401), of every voice: none refused


@needs_model
def test_a_hint_is_not_what_the_answer_already_says():
    """A walk in Chromium: "So a cycle yields up to K+1 tokens." missed "One token is sampled from it at no extra
    target cost, so a cycle yields up to K+1", and the hint was the learner's own sentence."""
    reference = ("When all K drafts are accepted, the verify pass has already computed the target's distribution after "
                 "the last draft, so one more token is sampled from it at no extra target cost. A cycle therefore "
                 "yields up to K+1 tokens.")
    point = "One token is sampled from it at no extra target cost, so a cycle yields up to K+1"
    assert G.hint(point, reference) == "…so one more token is sampled from it at no extra target cost."
    said = "One more token is sampled from it at no extra target cost."
    assert "K+1" in G.hint(point, reference, answer=said)  # that half said: the hint is the other half
    h = G.hint(point, reference, answer="So a cycle yields up to K+1 tokens.")
    assert "no extra target cost" in h and h.removeprefix("…") in reference
