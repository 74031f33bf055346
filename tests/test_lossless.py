"""Rejection sampling is exact: enumeration on toy distributions, and chi-square on the real model."""
import pytest
import torch
from scipy.stats import chi2_contingency

from conftest import chat
from specviz.drafters import ModelDrafter, early_exit_model
from specviz.engine.plain import plain_steps
from specviz.labs.lossless import output_distribution, simulate, toy
from specviz.sampling import SamplingConfig
from specviz.engine.speculative import speculative_steps
from specviz.verify import residual
from specviz.engine.loop import run_steps

CASES = {
    "generic": ([0.5, 0.3, 0.15, 0.05], [0.1, 0.2, 0.3, 0.4]),
    "p equals q": ([0.25, 0.25, 0.5], [0.25, 0.25, 0.5]),
    "disjoint supports": ([0.6, 0.4, 0.0, 0.0], [0.0, 0.0, 0.3, 0.7]),
    "q zero somewhere": ([0.2, 0.3, 0.5], [0.5, 0.5, 0.0]),
    "q one-hot (n-gram)": ([0.7, 0.2, 0.1], [0.0, 1.0, 0.0]),
}


@pytest.mark.fast
@pytest.mark.parametrize("name", CASES)
def test_exact_output_distribution_is_p(name):
    p, q = CASES[name]
    out = output_distribution(p, q)
    torch.testing.assert_close(out, torch.tensor(p, dtype=torch.float64), atol=1e-9, rtol=0)


@pytest.mark.fast
def test_the_classic_mistakes_are_not_p():
    p, q = CASES["generic"]
    assert (output_distribution(p, q, "resample_p") - torch.tensor(p, dtype=torch.float64)).abs().max() > 0.05
    assert (output_distribution(p, q, "greedy_draft") - torch.tensor(p, dtype=torch.float64)).abs().max() > 0.05


@pytest.mark.fast
def test_residual_handles_equal_distributions():
    p = torch.tensor([0.2, 0.8])
    r, fallback = residual(p, p.clone())
    assert fallback and torch.equal(r, p)
    r, fallback = residual(torch.tensor([0.6, 0.4]), torch.tensor([0.2, 0.8]))
    assert not fallback and torch.allclose(r, torch.tensor([1.0, 0.0]))
    # the lab says so when its residual bars are p's
    assert toy([0.2, 0.8], [0.2, 0.8], 100).residual_is_p and not toy([0.6, 0.4], [0.2, 0.8], 100).residual_is_p


@pytest.mark.fast
def test_simulation_converges_to_p():
    p, q = CASES["generic"]
    counts = simulate(p, q, 200_000, seed=1)
    torch.testing.assert_close(counts.double() / counts.sum(), torch.tensor(p, dtype=torch.float64), atol=5e-3, rtol=0)


def test_speculative_sampling_matches_plain_sampling_on_the_model(embedded):
    """First token of N speculative runs (badly aligned draft: the residual path is hot) vs N plain
    samples: a chi-square test of homogeneity must not reject."""
    model, tok = embedded
    ids = chat(tok, "Tell me a story.")
    cfg = dict(temperature=1.0, top_k=8)
    draft = early_exit_model(model, 4)
    n = 150
    spec, plain, rejections = [], [], 0
    for seed in range(n):
        c = SamplingConfig(seed=seed, **cfg)
        events, r = run_steps(speculative_steps(model, ModelDrafter(draft), tok, ids, 3, k=2, cfg=c))
        spec.append(r.token_ids[0])
        rejections += events[0].accepted == 0
        plain.append(run_steps(plain_steps(model, tok, ids, 1,
                                           SamplingConfig(seed=10_000 + seed, **cfg)))[1].token_ids[0])
    assert rejections > n // 10  # the residual really was exercised
    cats = sorted(set(spec) | set(plain))
    table = [[spec.count(t) for t in cats], [plain.count(t) for t in cats]]
    keep = [i for i in range(len(cats)) if table[0][i] + table[1][i] >= 10]
    other = [[sum(row[i] for i in range(len(cats)) if i not in keep)] for row in table]
    merged = [[row[i] for i in keep] + o for row, o in zip(table, other)]
    merged = [list(col) for col in zip(*[c for c in zip(*merged) if sum(c) > 0])]
    _, pvalue, _, _ = chi2_contingency(merged)
    assert pvalue > 0.001, merged
