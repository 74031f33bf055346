"""Issue 38, item 7: the knobs and metrics of real systems, translated. Each system's metric is re-counted here the
way that system's code counts it (an accumulator per verify step, as in its source), from the cycles of a run;
the app's translation (specviz.labs.knobs, computed from Counters alone) must give the same number."""
from types import SimpleNamespace as N

import pytest

from specviz.labs import knobs
from specviz.trace import Counters


class Vllm:
    """vllm/v1/spec_decode/metrics.py: SpecDecodingStats.observe_draft per request with drafts (num_accepted is
    len(generated) - 1: the verify pass always yields one token of the target's), and SpecDecodingLogging.log."""

    def __init__(self, k):
        self.num_drafts = self.num_draft_tokens = self.num_accepted_tokens = 0
        self.per_pos = [0] * k

    def observe(self, cycle):
        if cycle.k == 0:  # the scheduler records stats only for requests that had draft tokens scheduled
            return
        generated = cycle.accepted + 1
        num_accepted = generated - 1
        self.num_drafts += 1
        self.num_draft_tokens += cycle.k
        self.num_accepted_tokens += num_accepted
        for i in range(num_accepted):
            self.per_pos[i] += 1

    def report(self):
        return {"vllm_draft_acceptance_rate": self.num_accepted_tokens / self.num_draft_tokens,
                "vllm_mean_acceptance_length": 1 + self.num_accepted_tokens / self.num_drafts,
                "vllm_per_position": [a / self.num_drafts for a in self.per_pos]}


class Sglang:
    """python/sglang/srt/managers/scheduler.py: per verify step spec_num_total_accepted_tokens += num_accepted_tokens
    + bs and spec_num_total_forward_ct += bs; scheduler_metrics_mixin.py: accept len = their ratio."""

    def __init__(self):
        self.accepted = self.forward_ct = 0

    def observe(self, cycle, bs=1):
        self.accepted += cycle.accepted + bs
        self.forward_ct += bs

    def report(self):
        return {"sglang_accept_length": self.accepted / self.forward_ct}


class LlamaCpp:
    """examples/speculative-simple/speculative-simple.cpp: ids = sample_and_accept_n(draft) (the accepted drafts + one
    target token); n_drafted += draft.size(); n_accept += ids.size() - 1; accept = n_accept / n_drafted."""

    def __init__(self):
        self.n_drafted = self.n_accept = 0

    def observe(self, cycle):
        ids = cycle.accepted + 1
        self.n_drafted += cycle.k
        self.n_accept += ids - 1

    def report(self):
        return {"llama_cpp_acceptance": self.n_accept / self.n_drafted}


def recount(cycles, k):
    systems = [Vllm(k), Sglang(), LlamaCpp()]
    for c in cycles:
        for s in systems:
            s.observe(c)
    out = {}
    for s in systems:
        out.update(s.report())
    out["specviz_accepted_per_pass"] = sum(c.accepted for c in cycles) / len(cycles)
    out["specviz_tokens_per_pass"] = sum(len(c.emitted) for c in cycles) / len(cycles)
    ruled = sum(len(c.verdicts) for c in cycles)
    out["specviz_acceptance_rate"] = sum(c.accepted for c in cycles) / ruled
    return out


def assert_translated(cycles, k):
    counters = Counters.of(cycles)
    ours = {row["id"]: row["value"] for row in knobs.metrics_on(counters)}
    theirs = recount(cycles, k)
    assert set(ours) == set(theirs), "every metric in knobs.json is re-counted here, and only those"
    for name, value in theirs.items():
        if isinstance(value, list):
            assert ours[name] == pytest.approx(value[: len(ours[name])]) and len(ours[name]) <= k, name
            assert all(v == 0 for v in value[len(ours[name]):]), name  # positions never accepted
        else:
            assert ours[name] == pytest.approx(value), name
    return counters, ours


def cycle(k, accepted, eos=False, prefill=0):
    ruled = accepted + (1 if accepted < k else 0)
    verdicts = tuple(N(position=i, accepted=i < accepted) for i in range(ruled))
    emitted = tuple(range(accepted + (0 if eos else 1)))
    return N(k=k, accepted=accepted, emitted=emitted, verdicts=verdicts, prefill=prefill, draft_passes=k)


@pytest.mark.fast
def test_every_row_names_its_source_and_every_metric_is_computed():
    for row in knobs.knob_rows():
        assert row["system"] and row["knob"] and row["quote"] and row["app"] and row["source"], row
        assert any(s in row["source"] for s in ("github.com/", "docs.", "nvidia.github.io/")), row["source"]
    systems = {r["system"] for r in knobs.knob_rows()}
    assert {"vLLM", "SGLang", "llama.cpp", "transformers", "TensorRT-LLM"} <= systems
    names = " ".join(r["knob"] for r in knobs.knob_rows())
    for knob in ("num_speculative_tokens", "speculative-num-steps", "speculative-eagle-topk",
                 "speculative-num-draft-tokens", "--draft-max", "--draft-min", "--draft-p-min", "num_assistant_tokens",
                 "assistant_confidence_threshold", "prompt_lookup_num_tokens", "max_draft_len"):
        assert knob in names, knob
    ids = [r["id"] for r in knobs.metric_rows()]
    assert sorted(ids) == sorted(knobs.METRICS) and len(set(ids)) == len(ids)
    assert {r["bonus"] for r in knobs.metric_rows()} == {"yes", "no"}  # with and without the bonus token, named


@pytest.mark.fast
def test_translation_where_the_definitions_part():
    """A pass with no drafts (the last one before max_new_tokens) and an accepted end-of-sequence (no bonus): there
    vLLM's mean acceptance length and tokens per verify pass differ, and the translation must follow vLLM."""
    cycles = [cycle(4, 4, prefill=1), cycle(4, 1), cycle(4, 0), cycle(4, 2, eos=True), cycle(0, 0)]
    counters, ours = assert_translated(cycles, 4)
    assert ours["vllm_mean_acceptance_length"] == pytest.approx(1 + 7 / 4)
    assert counters.mean_acceptance_length == pytest.approx((5 + 2 + 1 + 2 + 1) / 5)  # not the same number
    assert ours["vllm_mean_acceptance_length"] != pytest.approx(counters.mean_acceptance_length)
    assert ours["sglang_accept_length"] == pytest.approx((7 + 5) / 5)
    # per position: vLLM divides by all drafts, Counters.per_position by the passes that reached i
    assert ours["vllm_per_position"] == pytest.approx([3 / 4, 2 / 4, 1 / 4, 1 / 4])
    assert counters.per_position() == pytest.approx([3 / 4, 2 / 3, 1 / 2, 1.0])
    assert knobs.metrics_on(Counters())[0]["shown"] == "–"  # an empty run: nothing to divide


@pytest.mark.parametrize("drafter_kind,k,prompt", [("token", 4, "Explain beam search"),
                                                   ("ngram", 3, "Count from one to twenty in words.")])
def test_counters_reproduce_each_systems_metric_on_a_recorded_run(models, drafter_kind, k, prompt):
    from conftest import chat
    from specviz.drafters import ModelDrafter, NgramDrafter
    from specviz.engine.speculative import speculative_steps
    from specviz.engine.loop import run_steps

    tok = models.tokenizer
    drafter = ModelDrafter(models.draft) if drafter_kind == "token" else NgramDrafter()
    cycles, result = run_steps(speculative_steps(models.target, drafter, tok, chat(tok, prompt), 40, k=k))
    counters, ours = assert_translated(cycles, k)
    assert counters.tokens == len(result.token_ids) <= 40
    assert 0 < counters.accepted < counters.drafted  # a real run: some drafts accepted, some not
    # vLLM's per-position rate (of all drafts) never exceeds the conditional one, and is below it wherever fewer
    # passes reached position i than drafted at all
    for i, (v, r) in enumerate(zip(ours["vllm_per_position"], counters.per_position())):
        assert v <= r + 1e-12, i
        if counters.accepted_at[i] and counters.reached_at[i] < counters.reached_at[0]:
            assert v < r, i
