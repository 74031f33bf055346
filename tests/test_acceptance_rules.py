"""Issue 38, item 5: acceptance rules side by side. Exact arithmetic on toy distributions (fractions), the float
version against it, the figure builder's data, and (model) the rules at real positions of a run."""
from fractions import Fraction as F

import pytest
import torch

from specviz.figures.acceptance_rules import rules_bars
from specviz.labs.acceptance_rules import RULES, rule_fractions, rule_probabilities
from specviz.verify import typical_threshold

P = [F(1, 2), F(1, 4), F(1, 8), F(1, 8)]
Q = [F(1, 4), F(1, 2), F(1, 4), F(0)]


@pytest.mark.fast
def test_lossless_rules_in_exact_arithmetic():
    r = rule_fractions(P, Q)
    assert r["exact match, sampled draft"] == F(1, 8) + F(1, 8) + F(1, 32)  # 9/32
    assert r["exact match, self-draft"] == F(1, 4) + F(1, 16) + F(1, 64) + F(1, 64)  # 11/32
    assert r["rejection sampling"] == F(1, 4) + F(1, 4) + F(1, 8) == F(5, 8)
    assert r["rejection sampling"] == r["1 - tv"]  # sum min(p, q) = 1 - TV(p, q)
    # the coupling bound: no lossless rule beats rejection sampling; exact match is below it term by term
    assert r["exact match, sampled draft"] < r["rejection sampling"]
    same = rule_fractions(P, P)  # a perfect draft: rejection sampling always accepts, exact match only sum p^2
    assert same["rejection sampling"] == 1 and same["exact match, sampled draft"] == F(11, 32)


@pytest.mark.fast
def test_float_rules_match_the_fractions_and_typical_and_greedy_follow_their_definitions():
    p, q = torch.tensor([float(x) for x in P]), torch.tensor([float(x) for x in Q])
    r = rule_probabilities(p, q, epsilon=0.3, delta=0.3)
    exact = rule_fractions(P, Q)
    for name in ("exact match, sampled draft", "exact match, self-draft", "rejection sampling"):
        assert r[name] == pytest.approx(float(exact[name]), abs=1e-12)
    assert r["tv"] == pytest.approx(3 / 8)
    assert r["greedy match"] == 0.0  # argmax p = 0, argmax q = 1
    assert rule_probabilities(p, torch.tensor([0.4, 0.3, 0.2, 0.1]))["greedy match"] == 1.0
    # typical: q's mass on tokens whose p clears min(eps, delta * exp(-H(p))); H(p) = 1.75 ln 2 = 1.213 nats
    assert typical_threshold(p, 0.3, 0.9) == pytest.approx(0.9 * 2 ** -1.75, rel=1e-4)  # 0.268: only p = 1/2 clears
    assert rule_probabilities(p, q, epsilon=0.3, delta=0.9)["typical acceptance"] == pytest.approx(0.25)
    assert typical_threshold(p, 0.3, 0.3) < 0.125 and r["typical acceptance"] == pytest.approx(1.0)  # all clear
    assert set(RULES) | {"tv"} == set(r)


@pytest.mark.fast
def test_rules_figure_carries_every_rule_per_position_and_the_mean():
    rows = [dict(position=1, token=5, text=" the", **{n: 0.5 for n in RULES}, tv=0.5),
            dict(position=2, token=6, text="the", **{n: 0.25 for n in RULES}, tv=0.1)]
    live = {"rows": rows, "mean": {n: 0.375 for n in list(RULES) + ["tv"]}, "temperature": 0.7,
            "epsilon": 0.09, "delta": 0.3}
    fig = rules_bars(live, RULES).to_plotly_json()
    bars = [d for d in fig["data"] if d["type"] == "bar"]
    assert [b["name"].split(" (")[0] for b in bars] == list(RULES)
    assert all(list(b["y"]) == [0.5, 0.25, 0.375] for b in bars)
    assert list(bars[0]["x"]) == ["1: ␣the", "2: the", "mean"]  # two tokens that look alike are told apart
    lossless = {b["name"].split(" (")[0]: b["marker"]["pattern"]["shape"] == "" for b in bars}
    assert lossless == {n: v is True for n, v in RULES.items()}
    tv = next(d for d in fig["data"] if d["type"] == "scatter")
    assert list(tv["y"]) == pytest.approx([0.5, 0.9, 0.625])
    assert "T = 0.7" in fig["layout"]["title"]["text"]


def test_rules_at_real_positions(models):
    from conftest import chat
    from specviz.engine.plain import plain_steps
    from specviz.engine.loop import run_steps
    from specviz.labs.acceptance_rules import live_rules

    tok = models.tokenizer
    prompt = chat(tok, "Explain beam search")
    _, result = run_steps(plain_steps(models.target, tok, prompt, 12))
    for T in (0.3, 1.5):
        live = live_rules(models.target, models.draft, tok, prompt, result.token_ids, T, positions=8)
        assert len(live["rows"]) == 8
        for row in live["rows"]:
            assert 0 <= row["exact match, sampled draft"] <= row["rejection sampling"] + 1e-9 <= 1 + 1e-9
            assert row["rejection sampling"] == pytest.approx(1 - row["tv"], abs=1e-9)
            assert 0 < row["exact match, self-draft"] <= 1 and row["greedy match"] in (0.0, 1.0)
        assert live["mean"]["rejection sampling"] > live["mean"]["exact match, sampled draft"]
        beyond = {r["position"] for r in live["rows"] if r["typical acceptance"] > r["rejection sampling"] + 1e-12}
        assert set(live["typical_beyond_bound"]) == beyond  # the positions the page names
    # colder: p sharper, so a perfect draft's exact-match acceptance sum p^2 rises
    cold = live_rules(models.target, models.draft, tok, prompt, result.token_ids, 0.3, positions=8)["mean"]
    hot = live_rules(models.target, models.draft, tok, prompt, result.token_ids, 1.5, positions=8)["mean"]
    assert cold["exact match, self-draft"] > hot["exact match, self-draft"]
