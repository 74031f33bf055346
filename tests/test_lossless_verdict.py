"""The Lossless lab's sentences, worded from the numbers: the family verdict of its chi-square tests, the power
it claims, and the toy table's checks (pure functions, no model)."""
import pytest
import torch

from specviz.labs.lossless import detection_power, family_verdict, output_distribution, table_problem


@pytest.mark.fast
def test_a_p_value_below_the_bonferroni_threshold_is_said_as_a_rejection():
    kind, text = family_verdict([0.008, 0.4, 0.7])  # the run: 0.008 < 0.05 / 3 = 0.0167
    assert kind == "reject"
    assert "Token 1" in text and "0.008" in text and "0.0167" in text
    assert "rejection at the family level" in text
    assert "no detectable difference" not in text and "as the proof says" not in text
    assert "more samples" in text  # the honest check: sample again


@pytest.mark.fast
def test_a_p_value_below_alpha_alone_is_not_a_detection_among_several():
    kind, text = family_verdict([0.3, 0.03, 0.9])
    assert kind == "chance"
    assert "Token 2" in text and "not a detection" in text and "14%" in text  # 1 - 0.95^3


@pytest.mark.fast
def test_high_p_values_are_no_detectable_difference_without_claiming_proof():
    kind, text = family_verdict([0.4, 0.6, 0.2])
    assert kind == "consistent"
    assert "no detectable difference" in text and "does not prove" in text
    kind, text = family_verdict([0.03])  # one test: its threshold is alpha itself, and no family to speak of
    assert kind == "reject" and "below 0.05: a **rejection**" in text and "Bonferroni" not in text


@pytest.mark.fast
def test_detection_power_grows_with_samples_and_is_small_for_no_difference():
    p = torch.tensor([0.834, 0.089, 0.049, 0.01, 0.018], dtype=torch.float64)
    q = torch.tensor([0.103, 0.113, 0.179, 0.271, 0.334], dtype=torch.float64)
    wrong = output_distribution(p, q, "resample_p")
    powers = [detection_power(p, wrong, n, tests=3) for n in (100, 400, 1600)]
    assert powers == sorted(powers) and powers[0] < 0.5 < powers[-1]
    assert detection_power(p, p, 400, tests=3) == pytest.approx(0.05 / 3, abs=1e-6)  # no difference: the size


@pytest.mark.fast
def test_toy_table_problems_are_named_before_any_division():
    assert table_problem([0.4, 0.6], [0.5, 0.5]) is None
    assert table_problem([0.0, 0.0], [0.5, 0.5]).startswith("Every weight in p is 0")
    assert table_problem([0.4, 0.6], [0, 0]).startswith("Every weight in q is 0")
    assert "negative" in table_problem([0.4, -0.1], [0.5, 0.5])
    assert "not a number" in table_problem([0.4, float("nan")], [0.5, 0.5])
