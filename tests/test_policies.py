"""Issue 38, item 3: dynamic-K policies replayed. The replay on hand-made runs (each policy's rule, the end of the
budget, an accepted end-of-sequence), the chart's data, and (model) the replay against the engine cycle by cycle."""
import pytest

from specviz.figures.policies import policy_bars
from specviz.labs.policies import Policy, default_policies, predicted_seconds, replay

Y = [10, 11, 12, 13, 14, 15, 16, 17, 18, 19]  # the greedy output
A = [10, 11, 99, 13, 14, 15, 16, 99, 18, 19]  # the draft's teacher-forced argmax: wrong at positions 2 and 7


def shape(cycles):
    return [(c["start"], c["k"], c["accepted"], c["emitted"], c["draft_passes"]) for c in cycles]


@pytest.mark.fast
def test_fixed_k_replay():
    cycles = replay(Policy("K3", "fixed", 3), Y, A, [0.9] * 10, max_new=10)
    # t=0: drafts 10, 11, (99) -> 2 accepted + correction 12; t=3: 13 14 15 all accepted + bonus 16; t=7: 99 wrong;
    # t=8: only 10 - 8 - 1 = 1 draft fits the budget: 18 accepted + bonus 19
    assert shape(cycles) == [(0, 3, 2, 3, 3), (3, 3, 3, 4, 3), (7, 2, 0, 1, 2), (8, 1, 1, 2, 1)]
    assert sum(c["emitted"] for c in cycles) == len(Y)


@pytest.mark.fast
def test_heuristic_grows_after_a_clean_sweep_and_shrinks_otherwise():
    cycles = replay(Policy("h", "heuristic", 2), Y, A, [0.9] * 10, max_new=10)
    # K=2 at t=0: 10 11 accepted (clean sweep) + bonus 12 -> K=4; t=3: 13 14 15 16 accepted + bonus 17 -> K=6;
    # t=8: the budget leaves 1 draft: 18 accepted + bonus 19
    assert shape(cycles) == [(0, 2, 2, 3, 2), (3, 4, 4, 5, 4), (8, 1, 1, 2, 1)]


@pytest.mark.fast
def test_confidence_stop_the_llama_cpp_way_and_the_transformers_way():
    conf = [0.9, 0.9, 0.9, 0.9, 0.3, 0.9, 0.9, 0.9, 0.9, 0.9]
    asked = []

    def cont(t, m, n):  # the draft's confidences after its own wrong token
        asked.append((t, m, n))
        return [0.8, 0.2, 0.9][:n]

    llama = replay(Policy("l", "confidence", 16, 0.5), Y, A, conf, max_new=10, continuation=cont)
    hf = replay(Policy("h", "confidence", 16, 0.5, keep_crossing=True), Y, A, conf, max_new=10, continuation=cont)
    # t=0: drafts 10 11 99 confident, then 2 more after the wrong one (0.8), the next 0.2 stops it: llama.cpp drafts
    # 4 (5 steps ran), transformers 5; both accept 2 + correction
    assert shape(llama)[0] == (0, 4, 2, 3, 5) and shape(hf)[0] == (0, 5, 2, 3, 5)
    assert asked[0] == (0, 2, 6)  # k_now = 10 - 0 - 1 = 9; 3 drafts read the true text: the draft asked for 6 more
    # t=3: 13 confident, position 4 (0.3) under the threshold: llama.cpp drafts only 13, transformers 13 and 14
    assert shape(llama)[1] == (3, 1, 1, 2, 2) and shape(hf)[1] == (3, 2, 2, 3, 2)


@pytest.mark.fast
def test_an_accepted_end_of_sequence_ends_the_replay():
    y, a = [10, 11, 2], [10, 11, 2]  # 2: end of sequence, drafted and accepted
    cycles = replay(Policy("K4", "fixed", 4), y, a, [0.9] * 3, max_new=8, stop={2})
    assert shape(cycles) == [(0, 4, 3, 3, 4)]  # nothing after the end-of-sequence: no bonus token


@pytest.mark.fast
def test_predicted_seconds_and_the_chart():
    cycles = [{"k": 3, "draft_passes": 3}, {"k": 0, "draft_passes": 0}]
    v = {3: 1.5}.get
    assert predicted_seconds(cycles, 0.01, 0.1, v) == pytest.approx(3 * 0.01 + 0.1 * 1.5 + 0.1)
    rows = [dict(policy=p.name, label=p.label, tokens_per_pass=1.5 + i / 10, passes=10, drafted=20, accepted=8,
                 predicted_speedup=1.1 + i / 10) for i, p in enumerate(default_policies(4, 0.75))]
    fig = policy_bars(rows).to_plotly_json()
    assert [d["name"] for d in fig["data"]] == ["tokens per verify pass", "speedup, predicted"]
    assert list(fig["data"][0]["y"]) == [1.5, 1.6, 1.7, 1.8] and fig["data"][1]["yaxis"] == "y2"
    measured = {"plain_s": 2.0, **{r["policy"]: {"seconds": 1.0 + i / 2} for i, r in enumerate(rows)}}
    fig = policy_bars(rows, measured).to_plotly_json()
    assert list(fig["data"][2]["y"]) == pytest.approx([2.0, 2 / 1.5, 1.0, 0.8])
    assert fig["data"][0]["x"][2] == "llama.cpp<br>p-min 0.75"
    assert "--draft-p-min 0.75" in fig["data"][0]["customdata"][2][3]


@pytest.mark.parametrize("threshold", [0.3, 0.75])
def test_the_replay_is_the_engines_run_cycle_by_cycle(models, threshold):
    from conftest import chat
    from specviz.tokens import eos_ids
    from specviz.labs import policies as P

    tok = models.tokenizer
    prompt = chat(tok, "Explain how a hash table works.")
    seen = set()
    for pol in P.default_policies(3, threshold):
        cycles, result, _ = P.engine_run(pol, models.target, models.draft, tok, prompt, 32)
        out = result.token_ids
        argmax, conf = P.teacher_forced(models.draft, prompt, out)

        def cont(t, m, n, pol=pol):
            return P.free_run_confidences(models.draft, prompt + out[:t + m] + [argmax[t + m]], n, pol.threshold)

        rep = P.replay(pol, out, argmax, conf, 32, eos_ids(models.target, tok), cont)
        engine = [(c.k, c.accepted, len(c.emitted), c.draft_passes) for c in cycles]
        assert [(c["k"], c["accepted"], c["emitted"], c["draft_passes"]) for c in rep] == engine, pol.name
        seen.add(tuple(engine))
    assert len(seen) > 1  # the policies ran differently on this run (else this could not tell them apart)
