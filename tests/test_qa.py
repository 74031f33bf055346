"""The Q&A content: complete (answers, levels, sources, real page links), covering the topics an inference
interview asks, free of the phrasings found wrong in review (issue 20), and quoting measured figures only
from the model card or the benchmark JSON."""
import ast
import json
import re
from pathlib import Path

import numpy as np
import pytest
import torch

from ui.registry import PAGES as REGISTERED
from specviz.qa.bank import LEVELS, bank, load, quiz_items, topics, verdict_answer

ROOT = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.fast
PAGES = {p.path for p in REGISTERED}


def all_text():
    """Every text the learner reads, by card id: questions (with headline and rubric), misconceptions, true
    claims, code cards and mock-interview steps."""
    b = bank()
    pairs = [(q.id, " ".join([q.question, q.headline, *q.rubric, q.answer])) for q in b.questions]
    pairs += [(m.id, m.claim + " " + m.correct) for m in b.misconceptions]
    pairs += [(c.id, c.claim + " " + c.why) for c in b.true_claims]
    pairs += [(c.id, " ".join([c.title, *c.fixes, c.why])) for c in b.code_cards]
    pairs += [(f"{m.id}#{n}", " ".join([s.question, *s.rubric, s.l4, s.l5, s.l6])) for m in b.mocks
              for n, s in enumerate(m.steps, 1)]
    pairs += [(m.id, m.title + " " + m.level_guide) for m in b.mocks]
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


def test_every_misconception_names_the_rubric_points_it_contradicts():
    """A graded miss names what is often believed instead: each claim is linked by hand to real rubric points, and
    its correction's opening is whole sentences, never cut inside maths."""
    from specviz.qa.bank import mistakes

    b = bank()
    rubric = {q.id: q.rubric for q in b.questions}
    for m in b.misconceptions:
        assert m.points, m.id
        for ref in m.points:
            card, _, index = ref.partition("#")
            assert card in rubric and 0 <= int(index) < len(rubric[card]), (m.id, ref)
            assert m in mistakes(card, int(index))
        gist = m.gist()
        assert gist.endswith(".") and gist.count("$") % 2 == 0 and " ".join(m.correct.split()).startswith(gist)
        assert len(gist) >= 60 or gist == " ".join(m.correct.split()), m.id  # "Four." comes with its reason
    assert [m.id for m in mistakes("rejection-steps", 2)] == ["mc-resample-p"] and not mistakes("nope", 0)


def test_the_quiz_draws_from_every_question_and_misconception():
    """...and every true claim and code card, each once; ids are unique across every kind, mocks included."""
    b = bank()
    items = quiz_items()
    ids = [q.id for q in b.questions] + [m.id for m in b.misconceptions] + [c.id for c in b.true_claims] + \
        [c.id for c in b.code_cards]
    assert len(ids) == len(set(ids)) and not set(ids) & {m.id for m in b.mocks}
    assert len({m.id for m in b.mocks}) == len(b.mocks)
    assert sorted(i.id for i in items) == sorted(ids)
    assert all(i.prompt and i.answer and i.source for i in items)
    assert {i.kind for i in items} == {"question", "truefalse", "code"}
    for t in topics():
        assert quiz_items([t]) and all(i.topic == t for i in quiz_items([t]))
    # the cards of the new kinds sit under the same topics and levels as the questions, so the filters find them
    assert {i.topic for i in items} <= {q.topic for q in b.questions} and {i.level for i in items} <= set(LEVELS)
    for level in LEVELS:
        assert all(i.level == level for i in quiz_items(levels=[level])) and quiz_items(levels=[level])


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
    quiz = next(i for i in quiz_items() if i.id == greedy.id).answer
    # simply false (issue 20, item 21), and the verdict said once (issue 35, item 27)
    assert quiz.startswith("**False.** Greedy verification") and "holds only" not in greedy.correct
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
    assert ("α > 1 favours longer" not in text and "\\alpha = 0" in lp and "including the EOS" in lp
            and "(5 + L)/6" in lp)
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


def question(qid):
    return next(q for q in load()[0] if q.id == qid)


def misconception(mid):
    return next(m for m in load()[1] if m.id == mid)


def flat(text):
    return " ".join(text.split())


def test_issue_35_item_11_batch_64_gain_shrinks_not_vanishes():
    """At batch 64 the gain shrinks, it does not vanish; why, and measure."""
    b = answer("spec-at-batch-64")
    assert ("small or no gain" not in b and "1.08" in b and "does not vanish" in b
            and "1.38× throughput at batch 64" in b)
    assert "below the datasheet peak" in b and "rejected draft" in b and "draft's own passes" in b and "measure" in b
    # the same correction where the bank says it in passing
    assert "need not vanish" in flat(misconception("mc-large-batch").correct)
    assert "Near the ridge" in answer("batch-size") and "compute-bound, so verifying" not in answer("batch-size")


def test_issue_35_item_12_draft_numbers_name_their_setting():
    """Literature figures with their setting."""
    g = answer("good-draft-numbers")
    # issue 45 A13: EAGLE-3's acceptance lengths as its Table 1 reports them, per task, with the setting
    assert "Table 1" in g and "HumanEval 6.38–7.54" in g and "CNN/DM 4.92–6.47" in g and "T = 0" in g
    assert "batch 1" in g and "6 to 6.5" not in g
    assert "K ≈ 3" in g and "2.5 to 3.5" in g


def test_issue_35_item_13_tree_rule_for_iid_and_one_hot_children():
    """The i.i.d. rule and the one-hot (top-k) rule, in the tree answer and the longest-path misconception."""
    for t in (answer("tree"), flat(misconception("mc-longest-path").correct)):
        assert "i.i.d." in t and "one-hot" in t and "current $p(x)$" in t and "renormalise" in t
    assert "Top-k trees (EAGLE, Medusa, and this app's trees)" in answer("tree")


def test_issue_35_item_14_production_systems_are_current():
    """The production systems as documented now."""
    ps = answer("production-systems")
    for name in ("EAGLE-3", "MTP", "PARD", "MLP speculators", "n-gram", "suffix decoding",
                 "DFlash", "dynamic speculation",
                 "EAGLE-2/EAGLE-3", "standalone draft model", "adaptive speculation", "overlap scheduler",
                 "PyTorch backend", "user-provided drafters", "ReDrafter", "EAGLE-1/2", "legacy TensorRT-engine path",
                 "cannot be switched off dynamically"):
        assert name in ps, name


def test_issue_35_item_15_larger_targets_reasons():
    """Neither "more memory-bound" nor "acceptance rises" for larger targets."""
    lt = answer("larger-targets")
    assert "more memory-bound per token, so" not in lt and "does not depend on size" in lt
    assert "Table 3" in lt and all(x in lt for x in ("0.88", "0.75", "0.61")) and "does not reliably" in lt


def test_issue_35_item_16_leviathan_and_chen_dates_and_lineage():
    """Not "days apart"; the dates and the lineage."""
    lc = answer("leviathan-vs-chen")
    assert "within days" not in lc and "two months apart" in lc and "30 November 2022" in lc and "2 February 2023" in lc
    assert "2211.17192" in lc and "2302.01318" in lc and "Stern et al. 2018" in lc and "SpecDec" in lc


def test_issue_35_item_17_leviathan_sections_and_beta():
    """Leviathan's sections (§3.3 walltime, §3.4 arithmetic operations, §3.5 choosing γ) and β = acceptance."""
    src = {q.id: q.source for q in load()[0]} | {m.id: m.source for m in load()[1]}
    for qid in ("choose-k", "mc-bigger-k"):
        assert "§3.5 (choosing γ)" in src[qid] and "§3.4" not in src[qid], qid
    for qid in ("reduce-flops", "mc-flops"):
        assert "§3.4 (number of arithmetic operations)" in src[qid] and "§3.5" not in src[qid], qid
    assert ("§3.3 (walltime improvement, Theorem 3.8)" in src["walltime-formula"]
            and "3.4" not in src["walltime-formula"])
    ep = answer("exactness-proof")
    assert "rejection probability is $\\beta" not in ep and "acceptance probability is $\\beta = \\sum_y \\min" in ep
    assert "/(1 - \\beta)" in ep


def test_issue_35_item_18_one_hot_verifier_sources():
    """The one-hot verifier's real sources, and the "sample y ~ p, keep on equality" form."""
    sg = question("sampling-draft-greedy")
    assert ("greedy assistants" not in sg.source and "rejection_sampler.py" in sg.source
            and "draft_prob = 1" in sg.source)
    assert "prompt-lookup" in answer("sampling-draft-greedy") and "$y = x$" in answer("sampling-draft-greedy")


def test_issue_35_item_19_kv_sharing_early_exit_only():
    """KV sharing holds for early exit, not for layer skipping."""
    ss = answer("self-spec")
    assert "shares the target's KV for the layers it runs" not in ss and "*prefix*" in ss
    assert "Draft & Verify" in ss and "SWIFT" in ss and "does not hold" in ss


def test_issue_35_item_20_two_goodputs():
    """Both meanings of goodput."""
    tt = answer("ttft-tpot")
    assert ("two meanings" in tt and "DistServe" in tt and "SmartSpec" in tt and "tokens per second" in tt
            and "SLOs" in tt)


def test_issue_35_item_21_vllm_beam_search_history():
    """The RFC was withdrawn; the PRs that did it; prefix caching, not 2023 copy-on-write."""
    bs = answer("beam-serving")
    assert "withdrawn" in bs and "#8306" in bs and "#8726" in bs and "#9105" in bs and "prefix caching" in bs
    wb = answer("when-beam")
    assert "(vLLM's paged blocks are shared copy-on-write)" not in wb and "prefix caching" in wb and "2023" in wb


def test_issue_35_item_22_transformers_drafters_as_installed():
    """Transformers 5.x drafters, named as they are in the installed library."""
    hf, tk = answer("hf-assisted"), answer("tokenizer")
    assert "`use_mtp=True`" in hf and '`speculation_type="dflash"`' in hf and "Universal Speculative Decoding" in hf
    assert "Universal Speculative Decoding" in tk and "exactly the target's" in tk
    from transformers import GenerationConfig
    from transformers.generation import candidate_generator as cg
    config = GenerationConfig()
    assert hasattr(config, "use_mtp") and hasattr(config, "speculation_type")
    assert all(hasattr(cg, c) for c in ("MTPCandidateGenerator", "DFlashTokenCandidateGenerator",
                                        "UniversalSpeculativeDecodingGenerator",
                                        "AssistedCandidateGeneratorDifferentTokenizers"))


def test_issue_35_item_23_engine_lossy_options():
    """Engine options that are lossy."""
    lv = answer("lossy-variants")
    assert "TensorRT-LLM" in lv and "*relaxed acceptance*" in lv and "relaxed_topk" in lv and "FLy verification" in lv


def test_issue_35_item_24_resampling_from_p_overweights_q_above_p():
    """Over-weighted are the tokens with q > p; the one-hot "y = x" form."""
    for t in (answer("residual"), flat(misconception("mc-resample-p").correct)):
        assert "$q(x) > p(x)$" in t and "$y = x$" in t and "one-hot" in t
    assert "double-counts tokens the draft likes" not in answer("residual")
    assert "over-weights the tokens the draft already proposes" not in flat(misconception("mc-resample-p").correct)


def test_issue_35_item_25_length_penalty_neutral_point():
    """The length-penalty claim, right about the direction, wrong about the neutral point."""
    lp = misconception("mc-length-penalty")
    assert "neutral" in lp.claim and "raising α always favours longer outputs" in flat(lp.correct)
    assert "against the default $\\alpha = 1$ a lower α does favour shorter outputs" in flat(lp.correct)


def test_issue_35_item_26_benchmark_checks_greedy_rows_only():
    """The benchmark checks the greedy rows only."""
    nl = answer("numerical-losslessness")
    assert "for every configuration" not in nl and "*greedy* speculative row" in nl and "sampled rows" in nl


def test_the_quiz_gives_each_verdict_once_and_links_every_shown_topic():
    """Issue 35, item 27: "**False.** False." is gone; the questions about what the Tree and Drafter pages show
    link them; the large-batch misconception links the Serving lab."""
    assert verdict_answer("False. Greedy verification works.") == "**False.** Greedy verification works."
    assert verdict_answer("Greedy verification works.") == "**False.** Greedy verification works."
    ms = {m.id for m in load()[1]}
    for item in quiz_items():
        if item.id in ms:
            rest = item.answer.removeprefix("**False.** ")
            assert rest != item.answer and not rest.lstrip("* ").lower().startswith("false"), item.id
    page = {q.id: q.page for q in load()[0]} | {m.id: m.page for m in load()[1]}
    shown = {"medusa": ("pages/7_Tree_speculation.py", "medusa"),
             "medusa-typical": ("pages/7_Tree_speculation.py", "typical"),
             "suffix-decoding": ("pages/5_Drafter_comparison.py", "suffix decoding"),
             "staged": ("pages/5_Drafter_comparison.py", "staged speculation"),
             "mc-large-batch": ("pages/8_Serving_lab.py", "batch")}
    for qid, (path, word) in shown.items():
        assert page[qid] == path and word in (ROOT / path).read_text(encoding="utf-8").lower(), qid


def test_the_seeds_imprecise_claims_are_flagged_misconceptions():
    """Issue 35, item 28: the seeds' errors that the bank corrected only in passing are misconceptions of their own."""
    ms = {m.id: m for m in load()[1]}
    m = ms["mc-tokens-as-speedup"]
    assert "2.4" in m.claim and "2.7731" in m.correct and "Kc + v" in m.correct
    m = ms["mc-verify-compute-bound"]
    assert "mini-prefill" in m.claim and "*not* compute-bound" in m.correct and "memory-bound" in m.correct
    m = ms["mc-speedup-product"]
    assert "acceptance rate times the draft length" in m.claim and "(1 - a^{K+1})/(1 - a)" in m.correct
    m = ms["mc-accepted-follow-p"]
    assert "\\mathrm{norm}(\\min(p, q))" in m.correct and "\\max(0, p - q)" in m.correct and "mixture" in m.correct
    m = ms["mc-medusa-draft-heads"]
    assert "draft model" in m.claim and "no draft model" in m.correct and "*target's*" in m.correct
    m = ms["mc-alpha-thresholds"]
    assert ("0.6" in m.claim and "0.3" in m.claim and "$a > c$" in m.correct
            and "No fixed acceptance threshold" in m.correct)
    m = ms["mc-dropped-correction"]
    assert "three tokens" in m.claim and m.correct.startswith("Four.") and "residual" in m.correct


# ---------------------------------------------------------------- measured figures come from one place
# A quoted measurement: a ratio written with ×, an acceptance-like fraction with three decimals, a
# tokens-per-pass figure, or a percentage. Worked examples in the answers use other forms (0.98, 2.7731).
FIGURE_PATTERNS = [r"(\d+(?:\.\d+)?)×", r"(?<![\d.])(0\.\d{3})(?!\d)", r"(\d+\.\d+) tokens per (?:target )?pass",
                   r"(\d+(?:\.\d+)?) ?%"]
MODEL_CARD = ROOT / "models" / "README.md"
CARD_NAMES = ("model card", "models/README.md")
# percentages that are external reports, attributed to their paper in the answer
EXTERNAL = {("mtp-drafters", "85"), ("mtp-drafters", "90"),
            ("spec-at-batch-64", "1.38"),  # EAGLE-3 paper, SGLang throughput at batch 64
            ("good-draft-numbers", "6.62"),  # EAGLE-3 paper, Table 1: mean acceptance length, Vicuna 13B, T = 0
            # a worked example, computed in the answer from per-position rates 0.6, 0.8, 0.8, 0.8 (not measured)
            ("estimate-not-bound", "0.719"), ("estimate-not-bound", "0.384"), ("estimate-not-bound", "0.307"),
            ("estimate-not-bound", "2.87")}


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


# ---------------------------------------------------------------- issue 37, section 3: a quiz that trains
def test_every_question_has_a_headline_and_a_rubric():
    """A one-line answer to say in 30 seconds, and 3 to 5 short points to tick (issue 37, section 3)."""
    b = bank()
    assert len(b.questions) >= 110
    for q in b.questions:
        assert q.headline and "\n" not in q.headline and len(q.headline) <= 200, q.id
        assert q.headline.rstrip(".") != q.question.rstrip("?."), q.id
        assert 3 <= len(q.rubric) <= 5, q.id
        assert all(r and "\n" not in r and len(r) <= 200 for r in q.rubric), q.id
        assert len(set(q.rubric)) == len(q.rubric), q.id
    items = {i.id: i for i in quiz_items()}
    assert all(items[q.id].headline == q.headline and items[q.id].rubric == q.rubric for q in b.questions)


def test_issue_37_topics_are_covered():
    """The coverage issue 37 asks for, each topic in at least one question."""
    b = bank()
    text = " ".join(" ".join([q.question, q.answer]).lower() for q in b.questions)
    for needle in ["token budget", "lookahead", "num_computed_tokens", "chunked prefill", "cuda graph", "padding",
                   "experts", "one-hot", "min-p", "top-p", "p99", "tensor parallelism", "quantiz", "prefill",
                   "continuous batching", "pagedattention", "latent", "re-distil", "eagle-3", "draft_vocab_size",
                   "typical", "contrastive", "best-of-n", "minimum bayes risk", "dflash", "pard", "hydra",
                   "redrafter", "spectr", "without replacement", "triforce", "magicdec", "deepseek-v3", "mtp",
                   "quantspec", "qspec", "moesd", "arithmetic intensity"]:
        assert needle in text, needle
    coding = [q for q in b.questions if q.topic == "coding"]
    assert len(coding) >= 3 and all("```python" in q.answer for q in coding)
    for level in LEVELS:
        assert sum(q.level == level for q in b.questions) >= 15, level


def test_true_claims_give_the_deck_true_cards():
    """The true/false deck holds true claims as well as the misconceptions (issue 37: every card was "False")."""
    b = bank()
    assert len(b.true_claims) >= 12
    for c in b.true_claims:
        assert c.claim and len(c.why) > 40 and len(c.source) > 10 and c.level in LEVELS, c.id
        assert not c.page or ((ROOT / c.page).is_file() and c.page in PAGES), (c.id, c.page)
    assert sum(bool(c.page) for c in b.true_claims) >= 10
    tf = [i for i in quiz_items() if i.kind == "truefalse"]
    assert {i.truth for i in tf} == {True, False}
    assert all(i.answer.startswith("**True.** ") for i in tf if i.truth)
    assert all(i.answer.startswith("**False.** ") for i in tf if i.truth is False)
    # both verdicts in the topics most misconceptions are about
    for topic in ("exactness", "tuning"):
        assert {i.truth for i in tf if i.topic == topic} == {True, False}, topic
    false_claims = {" ".join(m.claim.lower().split()) for m in b.misconceptions}
    assert not {" ".join(c.claim.lower().split()) for c in b.true_claims} & false_claims


def test_code_cards_are_well_formed():
    """At least 8 find-the-bug snippets: valid Python of 5 to 14 lines, the bug line inside the code, 3 or 4
    distinct fixes and a valid index, covering the bugs issue 37 names."""
    b = bank()
    assert len(b.code_cards) >= 8
    for c in b.code_cards:
        lines = c.code.split("\n")
        assert 5 <= len(lines) <= 14, c.id
        ast.parse(c.code)  # every snippet is valid Python
        assert 1 <= c.bug_line <= len(lines) and lines[c.bug_line - 1].strip(), c.id
        assert not lines[c.bug_line - 1].strip().startswith("#"), c.id
        assert 3 <= len(c.fixes) <= 4 and len(set(c.fixes)) == len(c.fixes) and all(c.fixes), c.id
        assert 0 <= c.fix < len(c.fixes), c.id
        assert len(c.why) > 40 and len(c.source) > 10 and c.level in LEVELS and c.title, c.id
        assert not c.page or ((ROOT / c.page).is_file() and c.page in PAGES), (c.id, c.page)
    assert len({c.fix for c in b.code_cards}) >= 3  # the right fix is not always in the same place
    ids = {c.id for c in b.code_cards}
    for needed in ("cc-resample-from-p", "cc-argmax-softmax-q", "cc-temperature-after-ratio", "cc-no-kv-rollback",
                   "cc-missing-bonus", "cc-length-penalty-per-step"):
        assert needed in ids, needed
    titles = " ".join(c.title for c in b.code_cards)
    for kind in ("rejection sampler", "greedy verification", "beam-search step", "speculative step"):
        assert kind in titles, kind
    cards = {i.id: i for i in quiz_items() if i.kind == "code"}
    for c in b.code_cards:
        assert cards[c.id].code == c and f"**Line {c.bug_line}.**" in cards[c.id].answer
        assert c.fixes[c.fix] in cards[c.id].answer


def card(cid):
    return next(c for c in bank().code_cards if c.id == cid)


def define(code: str, name: str):
    ns = {"np": np, "torch": torch}
    exec(compile(code, f"<{name}>", "exec"), ns)
    return ns[name]


def patched(c, replacement: str) -> str:
    """The card's code with its bug line replaced, keeping the line's indentation."""
    lines = c.code.split("\n")
    bug = lines[c.bug_line - 1]
    lines[c.bug_line - 1] = bug[:len(bug) - len(bug.lstrip())] + replacement
    return "\n".join(lines)


# the right fix as code, and a fragment of it that the fix's text must contain
FIXED = {"cc-resample-from-p": ("r = np.maximum(p[i] - q[i], 0.0); y = rng.choice(len(r), p=r / r.sum())",
                                "np.maximum(p[i] - q[i], 0.0)"),
         "cc-count-all-matches": ("n = int(match.int().cumprod(0).sum())", "cumprod(0)"),
         "cc-missing-bonus": ("return out + [best[-1]]", "return out + [best[-1]]"),
         "cc-unclamped-residual": ("residual = np.maximum(p - q, 0.0)", "np.maximum(p - q, 0.0)"),
         "cc-inverted-test": ("if u < min(1.0, p[i, x] / q[i, x]):", "if u < min(1.0, p[i, x] / q[i, x]):"),
         "cc-length-penalty-precedence": ("scored.append((toks, sum(lps) / len(lps) ** alpha))",
                                          "sum(lps) / len(lps) ** alpha"),
         "cc-length-penalty-per-step": ("cands.append((toks + [tok], score + lp))", "score + lp))"),
         "cc-tree-no-renormalise": ("p[x] = 0.0; p = p / p.sum()", "p = p / p.sum()")}


def test_code_cards_bug_lines_are_the_bug():
    """Run the snippets: the marked line is the bug, and the card's right fix, put on that line, repairs it."""
    for cid, (code, fragment) in FIXED.items():
        assert fragment in card(cid).fixes[card(cid).fix], cid
    V = 3
    p1, q1 = np.array([0.6, 0.3, 0.1]), np.array([0.1, 0.3, 0.6])

    def first_token(verify, n=20000, seed=0):
        rng, counts = np.random.default_rng(seed), np.zeros(V)
        for _ in range(n):
            x = int(rng.choice(V, p=q1))
            counts[verify([x], q1[None], np.stack([p1, p1]), rng)[0]] += 1
        return counts / n
    c = card("cc-resample-from-p")
    tv = lambda a, b: 0.5 * np.abs(a - b).sum()  # noqa: E731
    assert tv(first_token(define(c.code, "verify")), p1) > 0.15  # biased: min(p, q) + (1 - beta) p
    assert tv(first_token(define(patched(c, FIXED[c.id][0]), "verify")), p1) < 0.02
    c = card("cc-count-all-matches")
    drafts, target = torch.tensor([3, 9, 4]), torch.tensor([3, 1, 4, 7])
    assert define(c.code, "accepted_count")(drafts, target) == (2, 4)  # accepts a draft after a mismatch
    assert define(patched(c, FIXED[c.id][0]), "accepted_count")(drafts, target) == (1, 1)
    c = card("cc-missing-bonus")
    logits = torch.eye(5)[[3, 1, 4, 2]]  # argmax 3, 1, 4, 2: all three drafts pass, the bonus is 2
    assert define(c.code, "greedy_verify")([3, 1, 4], logits) == [3, 1, 4]
    assert define(patched(c, FIXED[c.id][0]), "greedy_verify")([3, 1, 4], logits) == [3, 1, 4, 2]
    c = card("cc-unclamped-residual")
    with pytest.raises(ValueError), np.errstate(all="ignore"):  # p - q has negative entries and sums to zero
        define(c.code, "recover_token")(p1, q1, np.random.default_rng(0))
    draws = [define(patched(c, FIXED[c.id][0]), "recover_token")(p1, q1, np.random.default_rng(s)) for s in range(50)]
    assert set(draws) == {0}  # the residual max(0, p - q) is all on token 0
    c = card("cc-inverted-test")
    p_sure = np.array([[0.0, 1.0, 0.0]] * 2)  # the target is certain of token 1, the draft proposes it twice
    assert define(c.code, "accept_run")([1, 1], p_sure, q1[None].repeat(2, 0), np.random.default_rng(0)) == 0
    assert define(patched(c, FIXED[c.id][0]), "accept_run")([1, 1], p_sure, q1[None].repeat(2, 0),
                                                               np.random.default_rng(0)) == 2
    c = card("cc-length-penalty-precedence")
    hyps = [("long", [-0.4, -0.4, -0.4]), ("short", [-1.0])]  # alpha = 0 ranks by total: short first
    assert define(c.code, "rank_finished")(hyps, 0.0)[0][0] == "long"  # every score 0
    assert define(patched(c, FIXED[c.id][0]), "rank_finished")(hyps, 0.0)[0][0] == "short"
    c = card("cc-length-penalty-per-step")
    beams, lp = [([1, 2], -1.0)], torch.log(torch.tensor([[0.5, 0.3, 0.2]]))
    fixed = define(patched(c, FIXED[c.id][0]), "beam_step")(beams, lp, 2, 1.0)
    assert [round(s, 6) for _, s in fixed] == [round(-1.0 + float(lp[0, t]), 6) for t in (0, 1)]  # raw sums
    buggy = define(c.code, "beam_step")(beams, lp, 2, 1.0)
    assert [round(s, 6) for _, s in buggy] != [round(s, 6) for _, s in fixed]
    c = card("cc-tree-no-renormalise")
    p = np.array([0.5, 0.3, 0.2])
    with pytest.raises(ValueError):  # both children rejected: the final draw gets a vector that does not sum to 1
        for seed in range(200):
            define(c.code, "verify_children")([0, 1], p, np.random.default_rng(seed))
    rng, counts = np.random.default_rng(1), np.zeros(3)
    fixed = define(patched(c, FIXED[c.id][0]), "verify_children")
    for _ in range(20000):
        counts[fixed([0, 1], p, rng)[0]] += 1
    assert tv(counts / counts.sum(), p) < 0.02  # the one-hot recursive rule reproduces p


# ---------------------------------------------------------------- issue 37, section 4: mock interviews
def test_mock_interviews_are_chains_with_rubrics_and_levels():
    """At least 5 chains of at least 4 follow-ups, each step with a rubric and what an L4, L5 and L6 answer sounds
    like, each chain with what separates the levels."""
    b = bank()
    assert len(b.mocks) >= 5
    for m in b.mocks:
        assert m.title and len(m.steps) >= 4, m.id
        assert all(level in m.level_guide for level in LEVELS) and len(m.level_guide) > 150, m.id
        questions = [s.question for s in m.steps]
        assert len(set(questions)) == len(questions), m.id
        for n, s in enumerate(m.steps, 1):
            assert s.question.rstrip().endswith(("?", ".")), (m.id, n)
            assert 3 <= len(s.rubric) <= 5 and all(r and "\n" not in r for r in s.rubric), (m.id, n)
            assert s.l4 and s.l5 and s.l6 and len({s.l4, s.l5, s.l6}) == 3, (m.id, n)
            assert all(len(a) <= 400 for a in (s.l4, s.l5, s.l6)), (m.id, n)  # one or two sentences
    titles = " ".join(m.title.lower() for m in b.mocks)
    for needed in ("speculative decoding", "exact", "beam", "system design", "drafter", "coding round"):
        assert needed in titles, needed
    # the chain the issue gives as its example, in its order
    chain = " | ".join(s.question.lower() for s in b.mocks[0].steps)
    assert re.search(r"walk me through.*nearly as cheap.*batch 64.*choose k.*scheduler", chain), chain


# ---------------------------------------------------------------- issue 45: exact to the last sentence, round 3
def card_text(qid):
    return " ".join(next(t for i, t in all_text() if i == qid).split())


def test_issue_45_lossless_rules_vllm_drafts_and_rejected_slots():
    lossy = card_text("lossy-variants")
    assert "Only the standard rejection rule and greedy verification are lossless" not in lossy  # A3
    assert "block verification" in lossy and "SpecInfer" in lossy and "SpecTr" in lossy
    one_hot = card_text("engine-one-hot-q")  # A4: argmax by default, a probabilistic mode keeps q
    assert "by default" in one_hot.lower() and 'draft_sample_method="probabilistic"' in one_hot
    assert "by default" in card_text("deepseek-mtp-drafter")
    everything = " ".join(" ".join(t.split()) for _, t in all_text())  # A7: one answer, everywhere
    assert "frees the slots of rejected tokens" not in everything and "Free or overwrite" not in everything
    assert "nothing is freed" in card_text("serving") and "overwrite" in card_text("engine-rollback")
    serving_page = (ROOT / "pages" / "8_Serving_lab.py").read_text()
    assert "are freed" not in serving_page and "free the KV slots" not in serving_page


def test_issue_45_the_late_2026_topics_are_in_the_bank():
    """Section C: at least 127 questions; the new ones each with rubric, source and a page where one shows it."""
    b = bank()
    assert len(b.questions) >= 127
    ids = {q.id for q in b.questions}
    for qid in ("block-verification", "probabilistic-drafting", "draft-placement-parallelism", "async-scheduling-spec",
                "trees-under-batching", "eagle-prefix-cache-pd", "spec-reproducibility", "spec-logprobs",
                "multi-lora-drafts", "eagle3-training-practice", "acceptance-collapse-debug", "parallel-drafters",
                "spec-large-batch-long-context"):
        assert qid in ids, qid
        q = next(q for q in b.questions if q.id == qid)
        assert q.source and 3 <= len(q.rubric) <= 5
    assert any(m.id == "mock-production-engine" for m in b.mocks)
