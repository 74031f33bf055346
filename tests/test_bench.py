"""python -m specviz.bench --quick runs end to end: its JSON has the promised fields and the
token-identity check passed. No speed is asserted."""
import json
import subprocess
import sys
from pathlib import Path

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
    assert out["forward_ms"]["target_1"] > 0 and "5" in out["forward_ms"]["target_verify"]
    assert out["peak_rss_mb"] > 0 and out["load_s"]["cached"] > 0
    if "spec token K=4" in rows:  # with the shipped draft: compared with HF assisted generation
        assert "vs_hf_peer" in rows["spec token K=4"] and 0 < rows["spec token K=4"]["c"] < 1


def test_only_selects_rows_and_keeps_the_greedy_references():
    from specviz.bench import Config, select

    cfgs = [Config("hf greedy", "hf"), Config("ours greedy", "plain"), Config("spec token K=4", "speculative", "token", 4),
            Config("spec eagle2 N=16 D=5", "speculative", "feature", None, tree="eagle2"),
            Config("unpacked greedy", "plain", unpacked=True),
            Config("unpacked spec token K=4", "speculative", "token", 4, unpacked=True)]
    assert select(cfgs, ()) == cfgs
    assert [c.name for c in select(cfgs, ("eagle2",))] == ["hf greedy", "ours greedy", "spec eagle2 N=16 D=5"]
    assert [c.name for c in select(cfgs, ("unpacked spec",))] == ["hf greedy", "ours greedy", "unpacked greedy",
                                                                  "unpacked spec token K=4"]
