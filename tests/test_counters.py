"""Counters (the one place a run's passes and acceptances are counted) and sampling.distribution, on synthetic
inputs: no model (issue 36: neither had a unit test)."""
from types import SimpleNamespace as N

import pytest
import torch

from specviz.sampling import SamplingConfig, distribution
from specviz.trace import Counters

pytestmark = pytest.mark.fast


def cycle(k, accepted, emitted, prefill=0, draft_passes=None):
    """A speculative cycle as Counters.record reads it: k drafts, `accepted` of them accepted in order (then one
    rejection if any are left), `emitted` tokens committed."""
    ruled = accepted + (1 if accepted < k else 0)
    verdicts = tuple(N(position=i, accepted=i < accepted) for i in range(ruled))
    return N(k=k, accepted=accepted, emitted=tuple(range(emitted)), verdicts=verdicts, prefill=prefill,
             draft_passes=k if draft_passes is None else draft_passes)


def test_record_counts_passes_tokens_and_positions():
    c = Counters.of([cycle(4, 4, 5, prefill=1), cycle(4, 1, 2), cycle(4, 0, 1)])
    assert (c.target_passes, c.prefill_passes, c.verify_passes) == (4, 1, 3)
    assert (c.drafted, c.decided, c.accepted, c.tokens) == (12, 4 + 2 + 1, 5, 8)
    assert c.acceptance_rate == pytest.approx(5 / 7) and c.draft_acceptance_rate == pytest.approx(5 / 12)
    assert c.mean_acceptance_length == pytest.approx(8 / 3)  # the prefill pass is not a verify pass
    assert c.reached_at == [3, 2, 1, 1] and c.accepted_at == [2, 1, 1, 1]
    assert c.per_position() == [pytest.approx(2 / 3), 0.5, 1.0, 1.0]
    assert c.accepted_per_pass == [4, 1, 0]


def test_counters_add_up_over_runs_of_different_depths():
    a, b = Counters.of([cycle(2, 2, 3)]), Counters.of([cycle(4, 3, 4), cycle(4, 0, 1)])
    total = a + b
    assert total.reached_at == [3, 2, 1, 1] and total.accepted_at == [2, 2, 1, 0]
    assert (total.tokens, total.target_passes, total.drafted) == (8, 3, 10)
    assert total.accepted_per_pass == [2, 3, 0]
    empty = Counters()
    assert empty.acceptance_rate == 0.0 and empty.mean_acceptance_length == 0.0 and empty.per_position() == []


def test_distribution_applies_temperature_top_k_and_top_p_like_the_formulas():
    logits = torch.tensor([[2.0, 1.0, 0.0, -1.0]])
    plain = distribution(logits, SamplingConfig(1.0))
    assert torch.allclose(plain, torch.softmax(logits, -1)) and plain.sum().item() == pytest.approx(1.0)
    hot = distribution(logits, SamplingConfig(2.0))
    assert torch.allclose(hot, torch.softmax(logits / 2, -1))
    top2 = distribution(logits, SamplingConfig(1.0, top_k=2))
    assert top2[0, 2:].sum().item() == 0 and torch.allclose(top2[0, :2], torch.softmax(logits[0, :2], -1))
    p = torch.softmax(logits, -1)[0]  # 0.644, 0.237, 0.087, 0.032: top-p 0.8 keeps the first two
    nucleus = distribution(logits, SamplingConfig(1.0, top_p=0.8))
    assert nucleus[0, 2:].sum().item() == 0 and torch.allclose(nucleus[0, :2], p[:2] / p[:2].sum())
    greedy = distribution(logits, SamplingConfig(0.0))  # greedy: no warper; the argmax is read from it
    assert int(greedy.argmax()) == 0

