"""Chain vs tree arithmetic (specviz/labs/tree_compare.py), model-free: interpolation of the measured v(n), the
comparison rows and the break-even tau a tree needs, checked against hand-computed values."""
import pytest

from specviz.labs.tree_compare import break_even, comparison, interpolate, linear_from

pytestmark = pytest.mark.fast

# compute bound past 4 positions: v doubles with n (a 2-core CPU); flat below (overheads dominate)
CPU = {n: {"median": m, "lo": m, "hi": m} for n, m in {1: 20.0, 2: 21.0, 4: 24.0, 8: 40.0, 16: 80.0}.items()}
FLAT = {n: {"median": 20.0, "lo": 20.0, "hi": 20.0} for n in (1, 2, 4, 8, 16)}


def test_interpolate_between_and_past_the_measured_sizes():
    assert interpolate(CPU, 1) == 20.0 and interpolate(CPU, 0.5) == 20.0
    assert interpolate(CPU, 3) == pytest.approx(22.5)
    assert interpolate(CPU, 12) == pytest.approx(60.0)
    assert interpolate(CPU, 24) == pytest.approx(120.0)  # along the last segment's slope (5 ms / position)


def test_comparison_rows():
    rows = [{"name": "chain K=4", "tokens": 30, "verify passes": 12, "target passes": 13,
             "positions per verify pass": 5.0, "seconds": 1.5},
            {"name": "tree N=15", "tokens": 30, "verify passes": 10, "target passes": 11,
             "positions per verify pass": 16.0, "seconds": 2.0}]
    chain, tree = comparison(rows, CPU)
    assert chain["tokens per verify pass"] == 2.5 and tree["tokens per verify pass"] == 3.0
    assert chain["v(n) ms"] == pytest.approx(28.0) and tree["v(n) ms"] == 80.0
    assert chain["verify ms per token"] == pytest.approx(28.0 / 2.5)
    assert tree["verify ms per token"] == pytest.approx(80.0 / 3.0)  # the tree loses here...
    assert tree["flat-v verify ms per token"] < chain["flat-v verify ms per token"]  # ...and wins with flat v
    assert tree["tokens per second"] == 15.0


def test_break_even_rises_with_v_here_and_is_the_chains_tau_with_flat_v():
    here = break_even(CPU, 2.5, 5, [3, 7, 15])
    assert [r["needed tau here"] for r in here] == pytest.approx([2.5 * 24 / 28, 2.5 * 40 / 28, 2.5 * 80 / 28])
    assert all(r["needed tau, flat v"] == 2.5 for r in here)
    flat = break_even(FLAT, 2.5, 5, [3, 7, 15])
    assert [r["needed tau here"] for r in flat] == pytest.approx([2.5, 2.5, 2.5])


def test_linear_from_finds_where_v_starts_doubling():
    assert linear_from(CPU) == 4  # 4 -> 8 -> 16 each double; 2 -> 4 does not
    assert linear_from(FLAT) is None


def bench_json(tmp_path, name, date, rows):
    import json
    (tmp_path / name).write_text(json.dumps({"date": date, "prompts": ["a", "b"], "max_new_tokens": 64, "rows": rows}))


def row(tau, speedup):
    return {"mean_acceptance_length": tau, "vs_ours_greedy": speedup}


def test_tree_benchmark_reads_the_newest_json_with_both_rows(tmp_path):
    """The Tree page quoted 2.38 / 1.81 / 1.05x / 1.15x from a dated file by hand; it reads them now."""
    from specviz.labs.tree_compare import tree_benchmark

    assert tree_benchmark(tmp_path) is None
    bench_json(tmp_path, "bench-2026-01-01a.json", "2026-01-01",
               {"spec eagle2 N=16 D=6": row(2.4, 1.05), "spec feature K=4": row(1.8, 1.15)})
    bench_json(tmp_path, "bench-2026-01-02a.json", "2026-01-02",
               {"spec eagle2 N=8 D=4": row(2.2, 1.2),
                "spec feature K=2": row(1.7, 1.1), "spec feature K=4": row(1.9, 1.0)})
    bench_json(tmp_path, "bench-2026-01-03a.json", "2026-01-03", {"spec medusa N=16 D=4": row(1.6, 0.9)})  # no tree
    (tmp_path / "bench-2026-01-04a.json").write_text("{not json")
    b = tree_benchmark(tmp_path)
    assert b["file"] == "bench-2026-01-02a.json" and b["date"] == "2026-01-02" and b["prompts"] == 2
    assert b["tree"] == {"budget": 8, "depth": 4, "tau": 2.2, "speedup": 1.2}
    assert b["chain"] == {"k": 4, "tau": 1.9, "speedup": 1.0} and b["faster"] == "tree"  # K = 4 preferred
    (tmp_path / "bench-2026-01-02a.json").unlink()
    assert tree_benchmark(tmp_path)["faster"] == "chain"


def test_the_shipped_benchmark_is_found():
    from specviz.labs.tree_compare import tree_benchmark

    b = tree_benchmark()
    assert b is not None and b["file"].startswith("bench-") and b["tree"]["tau"] > b["chain"]["tau"] > 1


def test_tree_faster_reads_this_runs_wall_clock():
    from specviz.labs.tree_compare import tree_faster

    from specviz.labs.tree_compare import finding

    def row(name, seconds):
        return {"name": name, "tokens per verify pass": 2.0, "verify ms per token": 10.0,
                "flat-v verify ms per token": 8.0, "seconds": seconds}

    curve = {1: {"median": 1.0}, 2: {"median": 1.1}, 4: {"median": 1.3}, 8: {"median": 2.0}}
    f = finding([row("plain greedy", 2.0), row("chain K=4", 1.0), row("chain K=12", 0.6),
                 row("EAGLE-2 tree N=12", 0.8)], curve)
    assert tree_faster(f, "chain K=4") is True and tree_faster(f, "chain K=12") is False
    assert f["tree vs"]["chain K=4"]["wall clock ratio"] == 0.8
    assert tree_faster(f, "chain K=6") is None
