"""Tree verification rules on synthetic tensors, no model: greedy walk, and multi-draft recursive rejection
sampling (SpecInfer) proved lossless by exact enumeration over toy trees (drafting randomness included)
and by a Monte-Carlo chi-square of the sampling code itself; "take the longest accepted path" is biased."""
import functools
import itertools
import zlib

import pytest
import torch
from scipy.stats import chisquare

from specviz.verify import TokenTree, sibling_schedule, verify, verify_tree

pytestmark = pytest.mark.fast

V = 5
T = 3  # compare distributions over the first T output tokens


def gen(seed=0):
    g = torch.Generator()
    g.manual_seed(seed)
    return g


def dist(key, salt, zeros=True):
    """A fixed random distribution over V tokens for a context (some exact zeros, to exercise q(x) = 0
    and p(x) = 0)."""
    # crc32, not hash(): str hashing is salted per process, which made every CI run a different test
    g = gen(zlib.crc32(repr((salt,) + tuple(key)).encode()) % (2 ** 31))
    w = torch.rand(V, generator=g, dtype=torch.float64) ** 2
    if zeros:
        w[int(torch.randint(V, (), generator=g))] = 0.0
    return w / w.sum()


def p_target(ctx):
    return cached_dist(tuple(ctx), "p")


def q_draft(ctx):
    return cached_dist(tuple(ctx), "q")


@functools.lru_cache(maxsize=None)
def cached_dist(ctx, salt):
    return dist(ctx, salt)


# ---------------------------------------------------------------- drafting, as an enumerable process
def children(ctx, mode, k):
    """[(tokens, q rows, probability of this draw)] for one node's children."""
    q = q_draft(ctx)
    if mode == "topk":  # deterministic: one-hot q
        top = torch.topk(q, k).indices.tolist()
        return [(top, [torch.nn.functional.one_hot(torch.tensor(x), V).double() for x in top], 1.0)]
    if mode == "iid":  # k draws with replacement from q, each with q as its distribution
        return [(list(xs), [q] * k, float(torch.prod(q[list(xs)])))
                for xs in itertools.product(range(V), repeat=k) if float(torch.prod(q[list(xs)])) > 0]
    if mode == "mixed":  # one draw from q, then the likeliest other token, deterministic given the first
        out = []
        for x in range(V):
            if q[x] > 0:
                alt = max((y for y in range(V) if y != x), key=lambda y: float(q[y]))
                out.append(([x, alt], [q, torch.nn.functional.one_hot(torch.tensor(alt), V).double()], float(q[x])))
        return out
    raise ValueError(mode)


def trees(ctx, shape):
    """Every tree the drafter can propose with its probability. shape: per depth (mode, k)."""
    def grow(level, nodes):  # nodes: [(tokens, parents, qs)] partial; expand the nodes at depth `level`
        tokens, parents, qs, prob = nodes
        if level == len(shape):
            yield TokenTree(tuple(tokens), tuple(parents), torch.stack(qs) if qs else None), prob
            return
        depth = [0] * len(tokens)
        for i, a in enumerate(parents):
            depth[i] = 1 if a < 0 else depth[a] + 1
        frontier = [-1] if level == 0 else [i for i in range(len(tokens)) if depth[i] == level]
        mode, k = shape[level]
        options = [children(ctx + path_tokens(tokens, parents, f), mode, k) for f in frontier]
        for combo in itertools.product(*options):
            t, pa, qq, pr = list(tokens), list(parents), list(qs), prob
            for f, (xs, rows, w) in zip(frontier, combo):
                t += xs
                pa += [f] * len(xs)
                qq += rows
                pr *= w
            yield from grow(level + 1, (t, pa, qq, pr))
    yield from grow(0, ([], [], [], 1.0))


def path_tokens(tokens, parents, node):
    out = []
    while node >= 0:
        out.append(tokens[node])
        node = parents[node]
    return out[::-1]


def continue_exact(ctx, seq, weight, out):
    """The target carries on after the cycle: spread weight over its continuations to length T."""
    if len(seq) >= T:
        key = tuple(seq[:T])
        out[key] = out.get(key, 0.0) + weight
        return
    p = p_target(ctx + seq)
    for y in range(V):
        if p[y] > 0:
            continue_exact(ctx, seq + [y], weight * float(p[y]), out)


def walk_exact(tree, ctx, node, weight, out):
    """The exact output distribution of one tree cycle, by the same sibling_schedule the verifier uses."""
    path = [tree.tokens[j] for j in tree.path_to(node)]
    row = p_target(ctx + path)
    kids = tree.children(node)
    probs, dists, _ = sibling_schedule(row, [tree.tokens[c] for c in kids], [tree.q_of(c, row) for c in kids])
    reach = weight
    for c, a in zip(kids, probs):
        if a > 0:
            walk_exact(tree, ctx, c, reach * a, out)
        reach *= 1 - a
    for y in range(V):
        if dists[-1][y] > 0:
            continue_exact(ctx, path + [y], reach * float(dists[-1][y]), out)


def target_exact(ctx):
    out = {}
    continue_exact(ctx, [], 1.0, out)
    return out


SHAPES = {
    "top-2, depth 1": [("topk", 2)],
    "top-3 then top-2": [("topk", 3), ("topk", 2)],
    "iid 2 then iid 2": [("iid", 2), ("iid", 2)],
    "iid 3, depth 1": [("iid", 3)],
    "mixed then top-2": [("mixed", 2), ("topk", 2)],
    "chain iid, depth 3": [("iid", 1)] * 3,
}


@pytest.mark.parametrize("shape", SHAPES, ids=list(SHAPES))
def test_tree_sampling_output_equals_the_target_exactly(shape):
    ctx = [1, 3]
    got = {}
    for tree, prob in trees(ctx, SHAPES[shape]):
        walk_exact(tree, ctx, -1, prob, got)
    want = target_exact(ctx)
    keys = set(got) | set(want)
    assert max(abs(got.get(k, 0.0) - want.get(k, 0.0)) for k in keys) < 1e-9
    assert abs(sum(got.values()) - 1.0) < 1e-9


def sample_tree(ctx, shape, g):
    """Draw one tree the way the enumerated drafter would, level by level."""
    tokens, parents, qs, frontier = [], [], [], [-1]
    for mode, k in shape:
        nxt = []
        for f in frontier:
            options = children(ctx + path_tokens(tokens, parents, f), mode, k)
            w = torch.tensor([pr for *_, pr in options], dtype=torch.float64)
            xs, rows, _ = options[int(torch.multinomial(w, 1, generator=g))]
            nxt += list(range(len(tokens), len(tokens) + len(xs)))
            tokens += xs
            parents += [f] * len(xs)
            qs += rows
        frontier = nxt
    return TokenTree(tuple(tokens), tuple(parents), torch.stack(qs))


def run_cycle(ctx, shape, g):
    """One real verify_tree cycle on a sampled tree, then the target to length T; returns the T tokens."""
    tree = sample_tree(ctx, shape, g)
    rows = [p_target(ctx)] + [p_target(ctx + [tree.tokens[j] for j in tree.path_to(i)]) for i in range(len(tree))]
    v = verify_tree(tree, torch.stack(rows), greedy=False, gen=g)
    seq = [tree.tokens[j] for j in v.path] + [v.token]
    while len(seq) < T:
        seq.append(int(torch.multinomial(p_target(ctx + seq), 1, generator=g)))
    return tuple(seq[:T])


@pytest.mark.parametrize("shape", ["iid 2 then iid 2", "mixed then top-2", "top-3 then top-2"])
def test_tree_sampling_chi_square(shape):
    ctx, g, n = [1, 3], gen(7), 2500
    want = target_exact(ctx)
    counts = {}
    for _ in range(n):
        s = run_cycle(ctx, SHAPES[shape], g)
        counts[s] = counts.get(s, 0) + 1
    assert set(counts) <= {k for k, v in want.items() if v > 0}  # nothing the target cannot say
    keys = sorted(k for k, v in want.items() if v * n >= 5)  # chi-square needs expected counts >= 5
    rest = n - sum(counts.get(k, 0) for k in keys)
    obs = [counts.get(k, 0) for k in keys] + [rest]
    exp = [want[k] * n for k in keys] + [n * (1 - sum(want[k] for k in keys))]
    assert chisquare(obs, exp).pvalue > 1e-3


def test_longest_accepted_path_is_biased():
    """The naive rule: rule on every child independently against the UNCHANGED p, then keep the accepted
    child with the longest accepted path. Exact output of the first token is not p."""
    p = torch.tensor([0.5, 0.3, 0.2], dtype=torch.float64)
    # root's deterministic children a = 0 (with a subtree, so it wins ties) and b = 1
    out = torch.zeros(3, dtype=torch.float64)
    pa, pb = float(p[0]), float(p[1])
    out[0] += pa  # a accepted (b may also be, a's path is longer)
    out[1] += (1 - pa) * pb  # b only
    out[2] += (1 - pa) * (1 - pb)  # both rejected: the residual of p minus both proposals is token 2
    assert abs(float(out[1]) - pb) > 0.1 and abs(float(out[2]) - float(p[2])) > 0.1
    # the recursive rule gives p exactly on the same tree
    tree = TokenTree((0, 1), (-1, -1))
    probs, dists, _ = sibling_schedule(p, [0, 1], [tree.q_of(0, p), tree.q_of(1, p)])
    exact = torch.zeros(3, dtype=torch.float64)
    exact[0] = probs[0]
    exact[1] = (1 - probs[0]) * probs[1]
    exact += (1 - probs[0]) * (1 - probs[1]) * dists[-1]
    torch.testing.assert_close(exact, p, atol=1e-12, rtol=0)


def test_greedy_walk_takes_the_child_equal_to_the_argmax():
    # root ─┬─ 1 ─┬─ 3
    #       │     └─ 2 ── 4
    #       └─ 0
    tree = TokenTree((1, 0, 3, 2, 4), (-1, -1, 0, 0, 3))
    eye = torch.eye(V)
    # the target wants 0? no: root argmax 1, after 1 argmax 2, after 1 2 argmax 4, after 1 2 4 argmax 3
    p = torch.stack([eye[1], eye[2], eye[0], eye[0], eye[4], eye[3]])
    v = verify_tree(tree, p, greedy=True, gen=gen())
    assert v.path == (0, 3, 4) and v.token == 3 and v.origin == "bonus"
    assert [(r.node, r.accepted) for r in v.rulings] == [(0, True), (2, False), (3, True), (4, True)]
    # a mismatch at the root's level: the correction is the argmax
    v = verify_tree(tree, torch.stack([eye[4]] + [eye[0]] * 5), greedy=True, gen=gen())
    assert v.path == () and v.token == 4 and v.origin == "correction"
    assert verify_tree(TokenTree((), ()), eye[2:3], greedy=True, gen=gen()).origin == "target"


def test_an_accepted_eos_ends_the_walk():
    tree = TokenTree((2, 3), (-1, 0))
    eye = torch.eye(V)
    v = verify_tree(tree, torch.stack([eye[2], eye[3], eye[1]]), greedy=True, gen=gen(), stop={2})
    assert v.path == (0,) and v.token is None and v.origin == "none"


@pytest.mark.parametrize("seed", range(20))
def test_a_chain_tree_is_ruled_exactly_as_the_chain_rule(seed):
    g = gen(seed)
    q = torch.softmax(torch.randn(3, V, generator=g), -1)
    p = torch.softmax(torch.randn(4, V, generator=g), -1)
    drafts = [int(torch.multinomial(q[i], 1, generator=g)) for i in range(3)]
    a = verify(drafts, q, p, greedy=False, gen=gen(100 + seed))
    b = verify_tree(TokenTree.chain(drafts, q), p, greedy=False, gen=gen(100 + seed))
    assert len(b.path) == a.accepted and b.token == a.token and b.origin == a.origin
    assert [r.u for r in b.rulings] == [r.u for r in a.rulings]
