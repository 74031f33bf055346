"""python -m specviz.bench --quick runs end to end: its JSON has the promised fields and the
token-identity check passed. No speed is asserted."""
import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def test_bench_quick_json():
    res = subprocess.run([sys.executable, "-m", "specviz.bench", "--quick", "--json"], cwd=ROOT, capture_output=True,
                         text=True, timeout=900)
    assert res.returncode == 0, res.stderr[-2000:]
    out = json.loads(res.stdout)
    assert out["identical"] is True and out["mismatches"] == []
    rows = out["rows"]
    for name in ("hf greedy", "ours greedy", "spec ngram K=4", "hf prompt-lookup K=4", "ours sample T=1",
                 "spec sample T=1 K=4"):
        assert rows[name]["tokens_per_s"] > 0, name
    spec = rows["spec ngram K=4"]
    for field in ("acceptance_rate", "mean_acceptance_length", "per_position", "leviathan_estimate", "machine_estimate",
                  "fraction_of_machine_estimate", "vs_hf_peer", "vs_ours_greedy", "vs_hf_greedy"):
        assert field in spec, field
    assert 1.0 <= spec["mean_acceptance_length"] <= 5.0
    for name, row in rows.items():  # issue 38: the breakdown's factors multiply to the measured speedup
        if "mean_acceptance_length" in row:
            assert math.prod(f for _, f in row["breakdown"]) == pytest.approx(row["vs_ours_greedy"], rel=1e-9), name
            assert row["breakdown"][0][1] == row["mean_acceptance_length"]
    assert [n.split(":")[0] for n, _ in spec["breakdown"]] == ["tokens per verify pass (drafting and verifying free)",
                                                                "drafting", "verify pass at its measured cost v",
                                                                "everything else"]
    assert out["forward_ms"]["target_1"] > 0 and "5" in out["forward_ms"]["target_verify"]
    assert out["peak_rss_mb"] > 0 and out["load_s"]["cached"] > 0
    if "spec token K=4" in rows:  # with the shipped draft: compared with HF assisted generation
        assert "vs_hf_peer" in rows["spec token K=4"] and 0 < rows["spec token K=4"]["c"] < 1


def test_only_selects_rows_and_keeps_the_greedy_references():
    from specviz.bench import Config, select

    cfgs = [Config("hf greedy", "hf"), Config("ours greedy", "plain"),
            Config("spec token K=4", "speculative", "token", 4),
            Config("spec eagle2 N=16 D=5", "speculative", "feature", None, tree="eagle2"),
            Config("unpacked greedy", "plain", unpacked=True),
            Config("unpacked spec token K=4", "speculative", "token", 4, unpacked=True)]
    assert select(cfgs, ()) == cfgs
    assert [c.name for c in select(cfgs, ("eagle2",))] == ["hf greedy", "ours greedy", "spec eagle2 N=16 D=5"]
    assert [c.name for c in select(cfgs, ("unpacked spec",))] == ["hf greedy", "ours greedy", "unpacked greedy",
                                                                  "unpacked spec token K=4"]


@pytest.mark.fast
def test_the_breakdown_multiplies_to_the_measured_speedup():
    from specviz.theory import speedup_breakdown, walltime_improvement

    parts = speedup_breakdown(2.4, 1.15, k=4, c=0.1, v=1.3)
    assert math.prod(f for _, f in parts) == pytest.approx(1.15)
    assert math.prod(f for _, f in parts[:3]) == pytest.approx(2.4 / (4 * 0.1 + 1.3))  # the machine-aware estimate
    assert parts[-1][1] == pytest.approx(1.15 / (2.4 / 1.7))
    lookahead = speedup_breakdown(1.6, 0.7)  # no K: drafting and verifying stay in "everything else"
    assert len(lookahead) == 2 and math.prod(f for _, f in lookahead) == pytest.approx(0.7)
    # with iid acceptance and nothing else, the first three are exactly Leviathan's machine estimate
    tau = (1 - 0.7 ** 5) / 0.3
    assert math.prod(f for _, f in speedup_breakdown(tau, 1.0, 4, 0.05, 1.2)[:3]) == pytest.approx(
        walltime_improvement(0.7, 4, 0.05, 1.2))


def test_a_measured_run_carries_its_breakdown(models):
    """The Speedup lab's measured run: its breakdown multiplies to its measured speedup, from the same run."""
    from specviz.drafters import make_drafter
    from specviz.labs.measure import speculative_vs_plain
    from specviz.prompting import prompt_ids

    ids = prompt_ids(models.tokenizer, "Write a Python function that returns the sum of a list.")
    res = speculative_vs_plain(models.target, make_drafter("token", models), models.tokenizer, ids, 12, 4,
                               draft_model=models.draft, rounds=1)
    parts = res["breakdown"]
    assert math.prod(f for _, f in parts) == pytest.approx(res["speedup"], rel=1e-9)
    assert parts[0][1] == res["mean_acceptance_length"] and len(parts) == 4
    assert parts[1][1] == pytest.approx(1 / (1 + 4 * res["c"])) and parts[2][1] == pytest.approx(
        (1 + 4 * res["c"]) / (4 * res["c"] + res["v"]))


@pytest.mark.fast
def test_best_k_from_measured_positions():
    from specviz.theory import best_k_from_positions, expected_tokens, tokens_from_positions

    assert tokens_from_positions([0.7] * 6, 4) == pytest.approx(expected_tokens(0.7, 4))  # i.i.d. as a special case
    assert tokens_from_positions([0.9, 0.5, 0.2], 3) == pytest.approx(1 + 0.9 + 0.45 + 0.09)
    # falling acceptance by position: a shorter K than one mean a suggests
    rates = [0.9, 0.6, 0.3, 0.1]
    k, gain = best_k_from_positions(rates, 0.05, lambda k: 1.0)
    assert k == 3 and gain == pytest.approx(tokens_from_positions(rates, 3) / (3 * 0.05 + 1))
    assert best_k_from_positions([0.05, 0.05], 0.2, lambda k: 1.0)[0] == 0  # nothing pays: don't speculate


def test_confidence_stop_rows_run_token_identical(models):
    """Issue 38.3 in the benchmark: llama.cpp's --draft-p-min and transformers' threshold as rows of their own (K at
    most 16, the draft stopping where it is unsure); greedy, so each reproduces plain greedy token for token."""
    from specviz.bench import configs, runner
    from specviz.prompting import prompt_ids

    rows = {c.name: c for c in configs(models, [4], dynamic_k=True, hf_peers=False, sampling=False, unpacked=False)}
    pmin, hf = rows["spec token p-min 0.75"], rows["spec token threshold 0.4"]
    assert (pmin.threshold, pmin.keep_crossing, hf.threshold, hf.keep_crossing) == (0.75, False, 0.4, True)
    assert "spec token p-min 0.75" not in {c.name for c in configs(models, [4], False, False, False, False)}
    ids = prompt_ids(models.tokenizer, "Write a Python function that returns the sum of a list.")
    plain, _ = runner(rows["ours greedy"], models)(ids, 20)
    for cfg in (pmin, hf):
        tokens, counters = runner(cfg, models)(ids, 20)
        assert tokens == plain
        assert counters.drafted < 16 * counters.verify_passes  # the stop cut drafting short somewhere
    _, low = runner(pmin, models)(ids, 20)
    _, high = runner(hf, models)(ids, 20)
    assert low.drafted <= high.drafted  # a higher threshold, never keeping the crossing token, drafts no more


@pytest.mark.parametrize("n", ["0", "99"])
def test_a_prompt_count_out_of_range_is_one_line(n):
    """--prompts N runs the first N benchmark prompts (a short run on a lent GPU); outside 1..10: one line, exit 2,
    before any model loads."""
    res = subprocess.run([sys.executable, "-m", "specviz.bench", "--prompts", n, "--no-cold"], cwd=ROOT,
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 2 and res.stderr.strip() == f"error: --prompts must be 1..10; got {n}"
