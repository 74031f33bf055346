"""The engine against Hugging Face generate() on the embedded model (and a tiny random Llama)."""
import pytest
import torch

from conftest import chat
from specviz.engine.beam import beam_steps
from specviz.drafters import ModelDrafter, NgramDrafter, early_exit_model
from specviz.engine.plain import plain_steps
from specviz.sampling import SamplingConfig
from specviz.engine.speculative import speculative_steps
from specviz.engine.loop import run_steps

PROMPTS = ["Explain beam search", "Write a Python function that reverses a list.", "Name three primary colors."]
N = 24


def hf_greedy(model, ids, n):
    out = model.generate(torch.tensor([ids]), max_new_tokens=n, do_sample=False)
    return out[0, len(ids):].tolist()


@pytest.fixture(scope="module")
def references(embedded, greedy):
    tok = embedded[1]
    return {p: greedy(chat(tok, p), N) for p in PROMPTS}


@pytest.mark.parametrize("prompt", PROMPTS)
def test_greedy_equals_transformers(embedded, references, prompt):
    model, tok = embedded
    events, result = run_steps(plain_steps(model, tok, chat(tok, prompt), N))
    assert result.token_ids == references[prompt]
    assert [e.token for e in events] == result.token_ids  # the trace replays to the run
    assert result.counters.target_passes == len(result.token_ids)


def check_every_k(model, tok, drafter, ids, ks, reference) -> int:
    """Speculative greedy at each K equals the reference; returns the drafts accepted over all of them."""
    accepted = 0
    for k in ks:
        events, result = run_steps(speculative_steps(model, drafter(), tok, ids, N, k=k))
        assert result.token_ids == reference, k
        assert [t for cycle in events for t in cycle.emitted] == result.token_ids
        assert result.counters.target_passes == len(events)
        assert all(c.k <= k for c in events)
        accepted += result.counters.accepted
    return accepted


@pytest.mark.parametrize("drafter_kind", ["ngram", "model"])
def test_speculative_greedy_equals_transformers_every_k(tiny_llama, drafter_kind):
    """Every K from 1 to 8 on a tiny Llama (exactness does not depend on the model's size: the sweep is cheap there)."""
    model, tok = tiny_llama
    accepted = 0
    for ids in ([1, 500, 600, 700, 500, 600, 700, 500], [1, 42, 43, 44, 45, 42, 43]):
        drafter = NgramDrafter if drafter_kind == "ngram" else (lambda: ModelDrafter(early_exit_model(model, 1)))
        accepted += check_every_k(model, tok, drafter, ids, range(1, 9), hf_greedy(model, ids, N))
    assert accepted > 0  # drafts were accepted, so the sweep tests acceptance and rollback, not only corrections


@pytest.mark.parametrize("drafter_kind", ["ngram", "model"])
def test_speculative_greedy_equals_transformers_on_the_embedded_model(models, references, drafter_kind):
    """The real model at K = 1, 4, 8 (the whole sweep runs on the tiny model above)."""
    model, tok = models.target, models.tokenizer
    draft = models.draft if models.draft is not None else early_exit_model(model, 6)
    drafter = NgramDrafter if drafter_kind == "ngram" else (lambda: ModelDrafter(draft))
    accepted = check_every_k(model, tok, drafter, chat(tok, PROMPTS[1]), (1, 4, 8), references[PROMPTS[1]])
    assert accepted > 0 or drafter_kind == "ngram"  # the prompt's answer repeats nothing: lookup may find no match


def test_dynamic_k_stays_exact_and_moves(models, references):
    model, tok = models.target, models.tokenizer
    prompt = PROMPTS[1]
    events, result = run_steps(speculative_steps(model, NgramDrafter(), tok, chat(tok, prompt), N, k=2,
                                                 dynamic_k=True, k_max=8))
    assert result.token_ids == references[prompt]
    assert len({c.k for c in events if c.k}) > 1 or len(events) == 1


@pytest.mark.parametrize("beams", [2, 3, 4, 5])
@pytest.mark.parametrize("penalty", [1.0, 0.5])
def test_beam_equals_transformers(embedded, beams, penalty):
    model, tok = embedded
    ids = chat(tok, "Name three primary colors.")
    out = model.generate(torch.tensor([ids]), max_new_tokens=10, num_beams=beams, length_penalty=penalty,
                         early_stopping=False, do_sample=False, output_scores=True, return_dict_in_generate=True)
    events, result = run_steps(beam_steps(model, tok, ids, beams, 10, penalty))
    assert result.token_ids == out.sequences[0, len(ids):].tolist()
    assert result.score == pytest.approx(float(out.sequences_scores[0]), abs=1e-4)
    # every step keeps at most B beams, and the kept candidates are the ones marked kept
    for e in events:
        assert len(e.beams_after) <= beams
        assert sum(c.status == "kept" for c in e.candidates) == len(e.beams_after)


def _bigram_hook(eos, seed, eos_level, spread=3.0, rows=97):
    """A forward hook that turns the tiny model into a random bigram model whose EOS logits sit about
    eos_level above the usual maximum: hypotheses finish at varied lengths, so the finished list, the
    refill of the running beams and the early stop are all exercised (checked below)."""
    g = torch.Generator().manual_seed(seed)
    table = torch.randn(rows, 49152, generator=g) * spread
    for e in eos:
        table[:, e] = torch.randn(rows, generator=g) * spread + 2 * spread + eos_level

    def hook(module, args, kwargs, out):
        out.logits = table[kwargs["input_ids"] % rows]
        return out
    return hook


EOS_CASES = [(eos, B, alpha, seed, level) for eos in ([2], [2, 0, 5]) for B in (2, 3) for alpha in (1.0, 0.0, 2.0)
             for seed in range(4) for level in (3.0, 5.0)]
# with three EOS ids these need transformers' 4B candidates: 2B leaves fewer than B beams running and
# the search ends differently (found by search; checked by breaking beam.candidates_per_step)
EOS_CASES += [([2, 0, 5], 3, 2.0, 4, 5.0), ([2, 0, 5], 3, 2.0, 5, 5.0), ([2, 0, 5], 3, 3.0, 4, 5.0)]


def test_beam_finishes_on_eos_like_transformers(tiny_llama):
    """EOS forced into the candidates (one EOS id, then three): the finished hypotheses, the refill from
    max(2, 1 + #EOS)·B candidates and the early_stopping=False stop must agree with generate()."""
    model, tok = tiny_llama
    saved = model.generation_config.eos_token_id
    early_stops = finished_early = refills = 0
    try:
        for eos, B, alpha, seed, level in EOS_CASES:
            model.generation_config.eos_token_id = eos if len(eos) > 1 else eos[0]
            hook = model.register_forward_hook(_bigram_hook(eos, seed, level), with_kwargs=True)
            try:
                ids = [5 + seed, 17, 33]
                out = model.generate(torch.tensor([ids]), max_new_tokens=12, num_beams=B, length_penalty=alpha,
                                     early_stopping=False, do_sample=False, output_scores=True,
                                     return_dict_in_generate=True, pad_token_id=2)
                events, result = run_steps(beam_steps(model, tok, ids, B, 12, alpha))
            finally:
                hook.remove()
            case = (eos, B, alpha, seed, level)
            assert result.token_ids == out.sequences[0, len(ids):].tolist(), case
            assert result.score == pytest.approx(float(out.sequences_scores[0]), abs=1e-4), case
            early_stops += events[-1].stopped.startswith("no running beam can beat")
            finished_early += len(result.token_ids) < 12 and result.token_ids[-1] in eos
            # a step where more than B of the best 2B candidates ended in EOS: 2B would not refill B beams
            refills += any(sum(c.token in eos for c in e.candidates if 0 <= c.rank < 2 * B) > B for e in events)
    finally:
        model.generation_config.eos_token_id = saved
    # the test is real only if these paths were taken
    assert early_stops >= 20 and finished_early >= 20 and refills >= 3, (early_stops, finished_early, refills)


@pytest.mark.fast  # model-free
def test_beam_candidate_count_matches_transformers():
    from specviz.engine.beam import candidates_per_step
    assert [candidates_per_step(4, n) for n in (0, 1, 2, 3)] == [8, 8, 12, 16]  # max(2, 1 + #EOS) * B


def test_sampling_equals_transformers_with_same_seed(embedded):
    model, tok = embedded
    ids = chat(tok, "Tell me a story about a cat.")
    for seed, (t, k, p) in enumerate([(1.0, 0, 1.0), (0.7, 50, 0.9)]):
        torch.manual_seed(seed)
        out = model.generate(torch.tensor([ids]), max_new_tokens=12, do_sample=True, temperature=t, top_k=k,
                             top_p=p)
        _, result = run_steps(plain_steps(model, tok, ids, 12, SamplingConfig(t, k, p, seed)))
        assert result.token_ids == out[0, len(ids):].tolist()


def test_rollback_equals_fresh_prefill(embedded):
    """After a rejection both caches must hold exactly the accepted prefix."""
    model, tok = embedded
    ids = chat(tok, "Explain beam search")
    drafter = ModelDrafter(early_exit_model(model, 3))  # poorly aligned: rejections guaranteed
    steps = speculative_steps(model, drafter, tok, ids, 20, k=4)
    checked = 0
    for cycle in steps:
        if cycle.accepted < cycle.k:
            state = steps.gi_frame.f_locals
            context = state["run"].d.ids
            for stepper in (state["tstep"], drafter.stepper):
                n = stepper.cached
                assert n == len(context) - 1  # everything but the token fed next cycle
                fresh = stepper.model(input_ids=torch.tensor([context[:n]]), use_cache=True).past_key_values
                for mine, ref in zip(stepper.cache.layers, fresh.layers):
                    torch.testing.assert_close(mine.keys, ref.keys, atol=1e-4, rtol=1e-4)
                    torch.testing.assert_close(mine.values, ref.values, atol=1e-4, rtol=1e-4)
            checked += 1
        if checked == 2:
            break
    assert checked == 2
    assert cycle.target_cache.before > cycle.target_cache.after


@pytest.mark.fast  # model-free
def test_ngram_proposes_latest_continuation():
    d = NgramDrafter(max_ngram=2)
    ids = [5, 6, 7, 8, 1, 5, 6, 9, 1, 5, 6]
    tokens, q = d.propose(ids, 3, SamplingConfig(), torch.Generator())
    assert tokens == [9, 1, 5] and q is None  # the latest earlier "5 6" is followed by 9
    assert d.propose([1, 2, 3], 3, SamplingConfig(), torch.Generator())[0] == []


def test_counters_are_consistent(embedded):
    model, tok = embedded
    ids = chat(tok, "Write a Python function that reverses a list.")
    events, result = run_steps(speculative_steps(model, NgramDrafter(), tok, ids, 30, k=4))
    c = result.counters
    assert sum(c.accepted_per_pass) == c.accepted
    assert len(result.token_ids) == c.accepted + c.target_passes  # each pass adds exactly one target token
    assert c.mean_acceptance_length == pytest.approx(len(result.token_ids) / c.verify_passes)
    assert c.tokens == len(result.token_ids)
    assert c.decided <= c.drafted


def test_each_cycle_records_the_k_it_asked_for_and_the_budgets_cap(tiny_llama):
    """Pages read why K came out short from the trace: k_asked follows transformers' dynamic-K heuristic (+2 after a
    clean sweep, -1 otherwise, from 4) and k never exceeds k_room, the budget's cap (max_new - produced - 1)."""
    from specviz.drafters import make_drafter
    from specviz.engine.speculative import speculative_steps
    from specviz.engine.loop import run_steps

    model, tok = tiny_llama
    cycles, result = run_steps(speculative_steps(model, make_drafter("early-exit", target=model, early_exit_layers=1),
                                                 tok, [1, 500, 600, 700], 30, k=4, dynamic_k=True))
    produced = 0
    for i, c in enumerate(cycles):
        assert c.k_room == max(0, min(c.k_asked, 30 - produced - 1)) and c.k <= c.k_room
        if i:
            prev = cycles[i - 1]
            grew = prev.accepted == prev.k > 0
            assert c.k_asked == (min(prev.k_asked + 2, 16) if grew else max(1, prev.k_asked - 1))
        produced += len(c.emitted)
    assert cycles[0].k_asked == 4 and produced == len(result.token_ids)


def test_the_engine_runs_block_verification_on_a_model(tiny_llama):
    """speculative_steps(acceptance="block"): under greedy it is plain greedy; under sampling it runs to the end
    with drafts kept; an unknown rule is one sentence before anything runs."""
    from specviz.errors import SpecVizError

    model, tok = tiny_llama
    ids = tok("The capital of France is")["input_ids"]
    plain = run_steps(plain_steps(model, tok, ids, 12))[1].token_ids
    greedy = run_steps(speculative_steps(model, ModelDrafter(early_exit_model(model, 1)), tok, ids, 12, 4,
                                         acceptance="block"))[1]
    assert greedy.token_ids == plain
    cfg = SamplingConfig(1.0, 0, 1.0, 3)
    events, sampled = run_steps(speculative_steps(model, ModelDrafter(early_exit_model(model, 1)), tok, ids, 24, 4,
                                                  cfg, acceptance="block"))
    assert len(sampled.token_ids) == 24 and all(0 <= t < 49152 for t in sampled.token_ids)
    assert all(c.verify_mode == "sampling" for c in events)
    with pytest.raises(SpecVizError, match="acceptance rule"):
        run_steps(speculative_steps(model, ModelDrafter(early_exit_model(model, 1)), tok, ids, 4, 2,
                                    acceptance="lenient"))
