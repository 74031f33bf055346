"""The speedup formulas (Leviathan et al. 2023, §3): expected tokens, walltime improvement, best K and
the rule that speculation pays only if a > c (Corollary 3.9)."""
import pytest

from specviz.figures import speedup as F
from specviz.theory import (DONT_SPECULATE, best_k, expected_tokens, speculation_pays, tokens_from_positions,
                            walltime_improvement)

pytestmark = pytest.mark.fast


def test_expected_tokens_is_the_geometric_sum():
    for a in (0.0, 0.3, 0.7, 0.95):
        for k in range(0, 9):
            assert expected_tokens(a, k) == pytest.approx(sum(a ** i for i in range(k + 1)))
    assert expected_tokens(0.7, 4) == pytest.approx(2.7731)
    assert expected_tokens(1.0, 5) == 6


@pytest.mark.parametrize("a,c", [(0.1, 0.2), (0.2, 0.2), (0.0, 0.0), (0.5, 0.9), (0.05, 0.5)])
def test_no_k_pays_when_a_is_at_most_c(a, c):
    assert not speculation_pays(a, c)
    assert best_k(a, c) == DONT_SPECULATE == 0
    assert max(walltime_improvement(a, k, c) for k in range(1, 65)) <= 1.0 + 1e-12


@pytest.mark.parametrize("a,c", [(0.21, 0.2), (0.5, 0.1), (0.9, 0.05), (0.3, 0.0)])
def test_some_k_pays_when_a_exceeds_c(a, c):
    assert speculation_pays(a, c)
    k = best_k(a, c)
    assert k >= 1
    # Corollary 3.9: the improvement is at least (1 + a) / (1 + c), the value at K = 1
    assert walltime_improvement(a, k, c) >= (1 + a) / (1 + c) > 1


def test_best_k_maximises_and_respects_the_verify_cost():
    a, c = 0.8, 0.05
    k = best_k(a, c)
    assert all(walltime_improvement(a, k, c) >= walltime_improvement(a, j, c) for j in range(1, 17))
    # a verify pass that costs 1.6 steps eats the whole gain of a weak draft
    assert best_k(0.3, 0.1) >= 1 and best_k(0.3, 0.1, v=1.6) == 0


def test_improvement_chart_handles_dont_speculate():
    fig = F.improvement(0.1, 0.3)
    names = [d.name for d in fig.data]
    assert "best K (paper)" not in names
    assert any("no K pays" in (a.text or "") for a in fig.layout.annotations)
    fig = F.improvement(0.7, 0.1, v_of_k=lambda k: 5.0)  # paper: pays; with v = 5: nothing pays
    names = [d.name for d in fig.data]
    assert "best K (paper)" in names and "best K (machine-aware)" not in names


def test_bench_best_k_check_picks_from_positions_and_scores_against_the_fastest_run():
    """bench.best_k_check: the K chosen from the widest run's per-position rates, c and v(K), and how fast that K
    really ran beside the fastest fixed K (issue 38's 3 % target is read off picked_vs_fastest)."""
    from specviz.bench import best_k_check
    rates = [0.9, 0.8, 0.5, 0.2]
    fm = {"target_1": 10.0, "target_verify": {"2": 10.5, "3": 11.0, "4": 11.5, "5": 12.0}}
    rows = {f"spec token K={k}": {"k": k, "c": 0.05, "v": 1.2, "per_position": rates[:k], "vs_ours_greedy": s}
            for k, s in [(1, 1.30), (2, 1.52), (3, 1.60), (4, 1.55)]}
    rows["unpacked spec token K=4"] = {"k": 4, "per_position": rates, "vs_ours_greedy": 9.0}  # not a fixed-K row
    b = best_k_check(rows, fm, "token")
    gains = {k: tokens_from_positions(rates, k) / (k * 0.05 + fm["target_verify"][str(k + 1)] / 10)
             for k in range(1, 5)}
    assert b["picked"] == max(gains, key=gains.get) == 3 and b["predicted"] == pytest.approx(gains[3])
    assert b["fastest"] == 3 and b["picked_vs_fastest"] == pytest.approx(1.0)
    assert best_k_check(rows, fm, "feature") is None  # no feature rows ran


def test_clustered_or_rising_acceptance_gives_fewer_tokens_than_the_iid_estimate():
    """Issue 45 A1: with a = accepted ÷ ruled on, acceptance rising with depth gives FEWER tokens per pass than
    the i.i.d. estimate at that a, not more (the bank and the Speedup lab used to say the opposite)."""
    from specviz.theory import pooled_acceptance
    rates = [0.6, 0.8, 0.8, 0.8]
    a = pooled_acceptance(rates, 4)
    assert a == pytest.approx(1.7712 / 2.464)  # accepted 0.6 + 0.48 + 0.384 + 0.3072 over ruled 1 + 0.6 + 0.48 + 0.384
    assert round(a, 3) == 0.719
    assert expected_tokens(a, 4) == pytest.approx(2.87, abs=0.005)
    assert tokens_from_positions(rates, 4) == pytest.approx(2.7712)
    assert tokens_from_positions(rates, 4) < expected_tokens(a, 4)
    # equal rates pool to themselves and meet the estimate exactly
    assert pooled_acceptance([0.7] * 4, 4) == pytest.approx(0.7)
    assert tokens_from_positions([0.7] * 4, 4) == pytest.approx(expected_tokens(0.7, 4))
    for rates in ([0.3, 0.9], [0.5, 0.6, 0.7, 0.8, 0.9], [0.2, 1.0, 1.0]):
        k = len(rates)
        assert tokens_from_positions(rates, k) < expected_tokens(pooled_acceptance(rates, k), k)
    # falling acceptance does the opposite: more tokens than the estimate at its pooled a
    falling = [0.8, 0.7, 0.6, 0.5]
    assert round(pooled_acceptance(falling, 4), 3) == 0.691
    assert tokens_from_positions(falling, 4) > expected_tokens(pooled_acceptance(falling, 4), 4)


def test_the_projects_own_benchmark_rows_sit_below_their_iid_estimate():
    import json
    import pathlib
    rows = json.loads((pathlib.Path(__file__).parents[1] / "docs" / "bench-2026-11-23b.json").read_text())["rows"]
    spec = [r for r in rows.values() if "tau" in r]
    assert spec
    assert all(r["mean_acceptance_length"] <= r["tau"] for r in spec)


def test_no_text_says_clustered_acceptance_pushes_runs_above_the_estimate():
    import pathlib
    import re
    root = pathlib.Path(__file__).parents[1]
    texts = [root / "specviz" / "qa" / "qa.yaml", root / "specviz" / "theory.py", root / "pages" / "3_Speedup_lab.py"]
    for path in texts:
        flat = re.sub(r"\s+", " ", path.read_text())
        assert not re.search(r"cluster\w*[^.]{0,60}(above|more tokens)", flat), path.name
