"""The accept/reject rule on synthetic tensors, no model (the way vLLM tests its rejection sampler):
early mismatch, all accepted, q(x) = 0 elsewhere, an all-zero residual, an accepted EOS, and the
output distribution of sampling verification against p."""
import pytest
import torch

from specviz.verify import residual, verify

pytestmark = pytest.mark.fast

V = 6


def onehots(tokens, n_extra=1):
    """p or q that puts all mass on the given tokens, one row each (+ n_extra uniform rows)."""
    rows = [torch.nn.functional.one_hot(torch.tensor(t), V).float() for t in tokens]
    rows += [torch.full((V,), 1.0 / V)] * n_extra
    return torch.stack(rows)


def gen(seed=0):
    g = torch.Generator()
    g.manual_seed(seed)
    return g


def test_greedy_early_mismatch_is_corrected_by_the_target_argmax():
    p = onehots([1, 2, 3])  # the target wants 1, 2, 3
    v = verify([1, 5, 3], None, p, greedy=True, gen=gen())
    assert v.accepted == 1 and v.token == 2 and v.origin == "correction"
    assert [r.accepted for r in v.rulings] == [True, False]  # nothing after the first rejection is ruled on
    assert [r.target_choice for r in v.rulings] == [1, 2]


def test_greedy_all_accepted_gives_the_bonus_from_the_last_position():
    p = onehots([1, 2], n_extra=0)
    p = torch.cat([p, torch.nn.functional.one_hot(torch.tensor([4]), V).float()])
    v = verify([1, 2], None, p, greedy=True, gen=gen())
    assert v.accepted == 2 and v.token == 4 and v.origin == "bonus"


def test_nothing_drafted_is_a_plain_target_step():
    v = verify([], None, torch.eye(V)[3:4], greedy=True, gen=gen())
    assert v.accepted == 0 and v.token == 3 and v.origin == "target" and v.rulings == ()


def test_sampling_accepts_when_p_covers_q():
    # p(x) >= q(x) for every drafted x: min(1, p/q) = 1, accepted whatever u is
    q = torch.tensor([[0.5, 0.5, 0, 0, 0, 0]] * 2)
    p = torch.tensor([[0.6, 0.4, 0, 0, 0, 0], [0.2, 0.8, 0, 0, 0, 0], [0, 0, 0, 0, 1.0, 0]])
    v = verify([0, 1], q, p, greedy=False, gen=gen())
    assert v.accepted == 2 and v.origin == "bonus" and v.token == 4
    assert all(r.accept_prob == 1.0 for r in v.rulings)


def test_sampling_rejects_a_token_the_target_gives_zero_and_resamples_from_the_residual():
    q = torch.tensor([[0.0, 0.5, 0.5, 0, 0, 0]])
    p = torch.tensor([[0.0, 0.0, 0.2, 0.8, 0, 0], [1.0 / V] * V])
    v = verify([1], q, p, greedy=False, gen=gen())
    assert v.rulings[0].accept_prob == 0.0 and not v.rulings[0].accepted
    assert v.origin == "resampled"
    # residual = normalize(max(0, p - q)) = token 3 only: q took more than p everywhere else
    assert torch.allclose(v.residual, torch.tensor([0, 0, 0, 1.0, 0, 0]))
    assert v.token == 3


def test_one_hot_q_is_accepted_with_probability_p():
    p = torch.tensor([[0.3, 0.7, 0, 0, 0, 0], [1.0 / V] * V])
    v = verify([1], None, p, greedy=False, gen=gen())
    assert v.rulings[0].q == 1.0 and v.rulings[0].accept_prob == pytest.approx(0.7)


def test_an_all_zero_residual_falls_back_to_p():
    p = torch.tensor([0.25, 0.75, 0, 0, 0, 0])
    r, fallback = residual(p, p.clone())
    assert fallback and torch.equal(r, p)
    r, fallback = residual(p, torch.tensor([0.5, 0.5, 0, 0, 0, 0]))
    assert not fallback and torch.allclose(r, torch.tensor([0, 1.0, 0, 0, 0, 0]))


def test_an_accepted_eos_ends_the_ruling():
    """Plain decoding stops at EOS: drafts after an accepted EOS are not ruled on and no token is added."""
    p = onehots([1, 2, 3])
    v = verify([1, 2, 3], None, p, greedy=True, gen=gen(), stop={2})
    assert v.accepted == 2 and v.token is None and v.origin == "none"
    assert len(v.rulings) == 2


def test_sampling_verification_outputs_p():
    """The first token out of one draft + verification is distributed as p (Leviathan et al. 2023, Appendix A.1),
    whatever q is; a chi-square test over 20000 draws."""
    from scipy.stats import chisquare

    p_row = torch.tensor([0.05, 0.10, 0.15, 0.20, 0.25, 0.25])
    q_row = torch.tensor([0.40, 0.30, 0.10, 0.10, 0.05, 0.05])
    p = torch.stack([p_row, torch.full((V,), 1.0 / V)])
    g, n = gen(1), 20000
    counts = torch.zeros(V)
    for _ in range(n):
        x = int(torch.multinomial(q_row, 1, generator=g))
        v = verify([x], q_row[None], p, greedy=False, gen=g)
        counts[x if v.accepted else v.token] += 1
    assert chisquare(counts.numpy(), (p_row * n).numpy()).pvalue > 1e-3
    # and it is not q's distribution
    assert chisquare(counts.numpy(), (q_row * n).numpy()).pvalue < 1e-6


@pytest.mark.parametrize("greedy", [True, False])
@pytest.mark.parametrize("with_q", [True, False])
def test_draft_ids_outside_the_vocabulary_are_refused(greedy, with_q):
    """Issue 45 B: verify([-1], ...) used to read the LAST vocabulary entry (Python's negative index) and emit -1.
    Ids below 0 and at or above the vocabulary size are refused with a clear error, in verify and verify_tree."""
    from specviz.verify import TokenTree, verify_tree
    vocab = 5
    p = torch.softmax(torch.randn(2, vocab, generator=torch.Generator().manual_seed(0)), -1)
    q = torch.full((1, vocab), 1.0 / vocab) if with_q else None
    for bad in (-1, -vocab, vocab, vocab + 7):
        with pytest.raises(ValueError, match="outside the vocabulary|negative"):
            verify([bad], q, p, greedy, torch.Generator().manual_seed(1))
        with pytest.raises(ValueError, match="outside the vocabulary|negative"):
            verify_tree(TokenTree((0, bad), (-1, -1)), torch.cat([p, p[:1]]), greedy,
                        torch.Generator().manual_seed(1))
    for ok in (0, vocab - 1):  # both ends of the vocabulary are fine
        v = verify([ok], q, p, greedy, torch.Generator().manual_seed(1))
        assert v.token is None or 0 <= v.token < vocab
