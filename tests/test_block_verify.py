"""Block verification (Sun et al., ICLR 2025) by exact enumeration on toy models whose p and q depend on the whole
prefix: over every draft block, every τ the uniform draws can give (P(τ = i) = h_i · Π_{j>i} (1 − h_j)) and every
corrected or bonus token, the first K + 1 tokens are distributed exactly as the target's (to 1e-12, zeros in p and q
included), and the expected number of drafts kept is never below token-wise verification's. A seeded run checks
the sampler draws what the weights say."""
import itertools

import pytest
import torch

from specviz.verify import block_weights, verify, verify_block

pytestmark = pytest.mark.fast
V = 3


def toy(seed, zeros):
    """p and q as functions of the prefix (tuples of token ids), float64, some entries exactly zero."""
    g = torch.Generator().manual_seed(seed)
    cache = {}

    def dist(kind, prefix):
        key = (kind, prefix)
        if key not in cache:
            w = torch.rand(V, generator=g, dtype=torch.float64) + 0.05
            if zeros and torch.rand((), generator=g) < 0.3:
                w[int(torch.randint(V, (), generator=g))] = 0.0
            cache[key] = w / w.sum()
        return cache[key]
    return (lambda prefix: dist("p", prefix)), (lambda prefix: dist("q", prefix))


def block_output(p, q, k):
    """Exact distribution of the first k + 1 tokens after one block-verified cycle (continued with the target p),
    and the expected number of drafts kept."""
    out, kept = {}, 0.0
    for drafts in itertools.product(range(V), repeat=k):
        prob_d = 1.0
        for i, x in enumerate(drafts):
            prob_d *= float(q(drafts[:i])[x])
        if prob_d == 0:
            continue
        P = torch.stack([p(drafts[:i]) for i in range(k + 1)])
        Q = torch.stack([q(drafts[:i]) for i in range(k)])
        ps, hs = block_weights(list(drafts), Q, P)
        for tau in range(k + 1):
            w = hs[tau] if tau else 1.0
            for j in range(tau + 1, k + 1):
                w *= 1.0 - hs[j]
            if w == 0:
                continue
            kept += prob_d * w * tau
            if tau == k:
                nxt = P[k]
            else:
                r = torch.clamp(ps[tau] * P[tau] - Q[tau], min=0.0)
                nxt = r / r.sum() if r.sum() > 0 else P[tau]
            for y in range(V):
                seq = drafts[:tau] + (y,)
                mass = prob_d * w * float(nxt[y])
                for rest in itertools.product(range(V), repeat=k + 1 - len(seq)):  # continue with the target
                    full, m = seq + rest, mass
                    for i in range(len(seq), k + 1):
                        m *= float(p(full[:i])[full[i]])
                    out[full] = out.get(full, 0.0) + m
    return out, kept


def tokenwise_kept(p, q, k):
    """Expected drafts kept by token-wise rejection sampling: Σ over blocks of q(block) · Σ_i Π_{j≤i} min(1, p/q)."""
    kept = 0.0
    for drafts in itertools.product(range(V), repeat=k):
        prob_d, run = 1.0, 1.0
        for i, x in enumerate(drafts):
            prob_d *= float(q(drafts[:i])[x])
        if prob_d == 0:
            continue
        for i, x in enumerate(drafts):
            run *= min(1.0, float(p(drafts[:i])[x]) / float(q(drafts[:i])[x]))
            kept += prob_d * run
    return kept


@pytest.mark.parametrize("k", [1, 2, 3, 4])
@pytest.mark.parametrize("seed,zeros", [(0, False), (1, True), (2, True)])
def test_block_verification_is_exact_and_keeps_at_least_as_many(k, seed, zeros):
    p, q = toy(seed, zeros)
    out, kept = block_output(p, q, k)
    for seq in itertools.product(range(V), repeat=k + 1):
        target = 1.0
        for i in range(k + 1):
            target *= float(p(seq[:i])[seq[i]])
        assert out.get(seq, 0.0) == pytest.approx(target, abs=1e-12), seq
    assert kept >= tokenwise_kept(p, q, k) - 1e-12


def test_a_later_draft_rescues_an_earlier_one():
    """Context-free p = (1/3, 2/3), q = (2/3, 1/3), drafts "a b": token-wise keeps a only half the time (ratio 1/2);
    block verification keeps the whole block whenever p_2 = min(1, 1/2 · 2) = 1, i.e. always."""
    P = torch.tensor([[1 / 3, 2 / 3]] * 3, dtype=torch.float64)
    Q = torch.tensor([[2 / 3, 1 / 3]] * 2, dtype=torch.float64)
    ps, hs = block_weights([0, 1], Q, P)
    assert ps == pytest.approx([1.0, 0.5, 1.0]) and hs[2] == pytest.approx(1.0)
    v = verify_block([0, 1], Q, P, torch.Generator().manual_seed(0))
    assert v.accepted == 2 and v.origin == "bonus"
    token_wise = sum(verify([0, 1], Q.float(), P.float(), False, torch.Generator().manual_seed(s)).accepted >= 1
                     for s in range(400)) / 400
    assert 0.4 < token_wise < 0.6


def test_the_sampler_follows_the_weights():
    p, q = toy(3, True)
    drafts = [0, 1, 2]
    P = torch.stack([p(tuple(drafts[:i])) for i in range(4)])
    Q = torch.stack([q(tuple(drafts[:i])) for i in range(3)])
    _, hs = block_weights(drafts, Q, P)
    expected = [(hs[t] if t else 1.0) * torch.prod(torch.tensor([1 - h for h in hs[t + 1:]], dtype=torch.float64))
                for t in range(4)]
    n = 4000
    g = torch.Generator().manual_seed(7)
    counts = [0] * 4
    for _ in range(n):
        counts[verify_block(drafts, Q, P, g).accepted] += 1
    for t in range(4):
        assert abs(counts[t] / n - float(expected[t])) < 0.03, (t, counts, expected)
    with pytest.raises(ValueError, match="outside the vocabulary"):
        verify_block([-1], Q[:1], P[:2], g)  # an id outside the vocabulary is refused, as token-wise

