"""The accept/reject rule of speculative decoding, as a pure function of tensors: no model, no cache.

Given the drafts x_1..x_n, the distributions q_i they were drawn from and the target's p_1..p_{n+1}
(all from ONE verify pass):

  greedy verification:   accept x_i while x_i == argmax p_i; the first mismatch is replaced by argmax p_i
                         (the correction). Output == plain greedy, with any drafter.
  sampling verification: accept x_i with probability min(1, p_i(x)/q_i(x)); at the first rejection draw
                         from the residual normalize(max(0, p_i - q_i)). Output ~ p exactly
                         (Leviathan et al. 2023, Appendix A.1; Chen et al. 2023, Theorem 1).

If all n pass, p_{n+1} gives one more token for free (the bonus). An accepted end-of-sequence token ends
the output, so nothing after it is ruled on and no token is added.

The rule is written ONCE, for token trees (verify_tree: greedy walk, or recursive rejection sampling over
each node's children); a chain of drafts is the tree with one path (TokenTree.chain), so `verify` is that
call. Typical acceptance (Medusa, lossy) is at the end, apart, because it is a different rule.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from specviz.sampling import draw


@dataclass(frozen=True)
class Ruling:
    """The verifier's decision on one drafted token (a node of the tree; for a chain, node == position)."""
    node: int
    token: int
    p: float  # p(x): the target's processed probability of the drafted token (after earlier siblings' residuals)
    q: float  # q(x): the draft's
    accept_prob: float  # min(1, p/q) when sampling; 1 or 0 for a greedy match
    u: float | None  # the uniform draw (None in greedy verification)
    accepted: bool
    target_choice: int  # greedy verification: argmax p at the parent; -1 when sampling

    @property
    def position(self) -> int:  # a chain's node i is its i-th drafted position
        return self.node


@dataclass(frozen=True)
class Verification:
    rulings: tuple[Ruling, ...]  # every node tried, in order (a chain: up to the first rejection or accepted EOS)
    path: tuple[int, ...]  # the accepted nodes, root's child first
    token: int | None  # the target's own token: correction, resampled or bonus; None after an accepted EOS
    origin: str  # "correction" | "resampled" | "bonus" | "target" (nothing drafted) | "none" (EOS accepted)
    residual: torch.Tensor | None  # normalize(max(0, p - q)) where every child was rejected (sampling)
    residual_fallback: bool  # the residual was all zero (p == q): drew from p instead

    @property
    def accepted(self) -> int:
        """Drafted tokens accepted."""
        return len(self.path)

    def emitted(self, tokens) -> list[int]:
        """The tokens this verification commits (tokens: the drafted nodes' tokens, a chain's drafts in order): the
        accepted nodes', then the target's own, if any."""
        return [tokens[i] for i in self.path] + ([self.token] if self.token is not None else [])

    @property
    def origins(self) -> tuple[str, ...]:
        """Where each emitted token came from: "accepted" per accepted draft, then the target token's origin."""
        return ("accepted",) * self.accepted + ((self.origin,) if self.token is not None else ())


def residual(p: torch.Tensor, q: torch.Tensor) -> tuple[torch.Tensor, bool]:
    """normalize(max(0, p - q)). All zero only when p == q, where a rejection has probability 0 in exact
    arithmetic; floating point can still land there, and p itself is then the right answer."""
    r = torch.clamp(p - q, min=0.0)
    total = r.sum()
    if total <= 0:
        return p, True
    return r / total, False


def total_variation(p, q) -> float:
    """TV(p, q) = ½ Σ|p(x) − q(x)|, in float64. Why it keeps coming back: 1 − TV = Σ min(p, q) is the chance a draft
    from q is accepted, and TV from p is how far an output distribution strays from lossless."""
    p, q = torch.as_tensor(p, dtype=torch.float64), torch.as_tensor(q, dtype=torch.float64)
    return 0.5 * float((p - q).abs().sum())


def accept_probability(p_x: float, q_x: float) -> float:
    """min(1, p(x)/q(x)): x was drawn from q, so q(x) > 0."""
    return min(1.0, p_x / q_x)


def one_hot(token: int, like: torch.Tensor) -> torch.Tensor:
    """q of a deterministic proposal (n-gram lookup, a greedy draft under greedy verification)."""
    q = torch.zeros_like(like)
    q[token] = 1.0
    return q


def verify(drafts: list[int], q: torch.Tensor | None, p: torch.Tensor, greedy: bool, gen: torch.Generator,
           stop: set[int] | frozenset = frozenset()) -> Verification:
    """drafts: n token ids; q: (n, vocab) or None (one-hot proposals); p: (n + 1, vocab) from one verify
    pass; stop: end-of-sequence ids. A chain is a tree with one path: the ONE rule, verify_tree, decides
    (u and any resampled token drawn from `gen` in position order)."""
    return verify_tree(TokenTree.chain(drafts, q), p, greedy, gen, stop)


# ---------------------------------------------------------------- token trees (SpecInfer, Medusa, EAGLE-2)
@dataclass(frozen=True, eq=False)
class TokenTree:
    """Drafted candidates as a tree over the context's last token (the root, not a node). Node i holds
    tokens[i]; parents[i] is its parent node, or -1 for a child of the root; parents come before their
    children (parents[i] < i). q: (n, vocab), the distribution node i was drawn from given its parent AND
    its earlier siblings, or None when every node is a deterministic choice (one-hot q). q_token: the
    draft's probability of each node's token (what a viewer shows as its confidence)."""
    tokens: tuple[int, ...]
    parents: tuple[int, ...]
    q: torch.Tensor | None = None
    q_token: tuple[float, ...] = ()

    def __post_init__(self):
        if len(self.tokens) != len(self.parents) or any(not -1 <= a < i for i, a in enumerate(self.parents)):
            raise ValueError(f"not a tree in topological order: parents {self.parents}")
        if self.q is not None:
            check_ids(self.tokens, self.q.shape[-1])
        elif any(t < 0 for t in self.tokens):  # the vocabulary's size comes with p, in verify_tree
            raise ValueError(f"draft token id {min(self.tokens)} is negative")

    def __len__(self) -> int:
        return len(self.tokens)

    @classmethod
    def chain(cls, tokens: list[int], q: torch.Tensor | None = None, q_token: tuple[float, ...] = ()) -> "TokenTree":
        """A chain drafter's proposal: each token the only child of the one before."""
        return cls(tuple(tokens), tuple(range(-1, len(tokens) - 1)), q, q_token)

    @property
    def depths(self) -> list[int]:
        """1 for the root's children (the first drafted position), 2 for theirs, ..."""
        depth: list[int] = []
        for a in self.parents:
            depth.append(1 if a < 0 else depth[a] + 1)
        return depth

    def children(self, node: int) -> list[int]:
        """Children of a node (-1: the root), in the order the verifier tries them."""
        return [i for i, a in enumerate(self.parents) if a == node]

    def path_to(self, node: int) -> list[int]:
        """Nodes from the root's child down to `node` (empty for the root)."""
        path = []
        while node >= 0:
            path.append(node)
            node = self.parents[node]
        return path[::-1]

    def ancestry(self) -> torch.Tensor:
        """(n, n) bool: [i, j] is True when node j is node i or one of its ancestors (what i may attend to)."""
        n = len(self)
        seen = torch.zeros(n, n, dtype=torch.bool)
        for i, a in enumerate(self.parents):
            if a >= 0:
                seen[i] = seen[a]
            seen[i, i] = True
        return seen

    def q_of(self, node: int, like: torch.Tensor) -> torch.Tensor:
        return self.q[node] if self.q is not None else one_hot(self.tokens[node], like)


def sibling_schedule(p: torch.Tensor, xs: list[int],
                     qs: list[torch.Tensor]) -> tuple[list[float], list[torch.Tensor], bool]:
    """Multi-draft recursive rejection sampling at one node (SpecInfer, Miao et al. 2024): child i is tried
    against p_i, the residual the i earlier rejections left (p_0 = p), and accepted with probability
    a_i = min(1, p_i(x_i)/q_i(x_i)); after its rejection p_{i+1} = normalize(max(0, p_i - q_i)). Returns the
    a_i, the p_i (len(xs) + 1 of them: the last is what is sampled when every child fails) and whether any
    residual was all zero. Pure arithmetic: the sampling verifier and the exact enumeration both use it."""
    probs, dists, fallback = [], [p], False
    for x, q in zip(xs, qs):
        cur = dists[-1]
        probs.append(accept_probability(float(cur[x]), float(q[x])) if float(q[x]) > 0 else 0.0)
        nxt, fb = residual(cur, q)
        dists.append(nxt)
        fallback = fallback or fb
    return probs, dists, fallback


def check_ids(tokens, vocab: int) -> None:
    """Draft ids must index the vocabulary: a negative one would read from its END in Python (vLLM's tests refuse
    both ends too)."""
    bad = [t for t in tokens if not 0 <= t < vocab]
    if bad:
        raise ValueError(f"draft token id {bad[0]} is outside the vocabulary (0..{vocab - 1})")


def verify_tree(tree: TokenTree, p: torch.Tensor, greedy: bool, gen: torch.Generator,
                stop: set[int] | frozenset = frozenset()) -> Verification:
    """p: (n + 1, vocab) from ONE verify pass over the tree: row 0 the root's next-token distribution, row
    1 + i node i's. Greedy: walk from the root, at each node take the child equal to the argmax (output ==
    plain greedy for any tree). Sampling: recursive rejection sampling over each node's children in turn;
    output ~ p exactly as long as each q is what its node was really drawn from (one-hot for deterministic
    picks). Taking "the longest accepted path" instead is biased (tests/test_tree_verify.py)."""
    check_ids(tree.tokens, p.shape[-1])
    rulings, path, node = [], [], -1
    while True:
        row, kids = p[node + 1], tree.children(node)
        fallback = False
        if greedy:
            best, dist, chosen = int(torch.argmax(row)), row, None
            for c in kids:
                ok = tree.tokens[c] == best
                rulings.append(Ruling(c, tree.tokens[c], float(row[tree.tokens[c]]),
                                      float(tree.q_of(c, row)[tree.tokens[c]]), float(ok), None, ok, best))
                if ok:
                    chosen = c
                    break
        else:
            (chosen, dist, fallback), best = sample_children(tree, row, kids, gen, rulings), -1
        if chosen is None:
            break
        path.append(chosen)
        node = chosen
        if tree.tokens[chosen] in stop:
            return Verification(tuple(rulings), tuple(path), None, "none", None, False)
    tried = bool(kids)
    origin = ("correction" if greedy else "resampled") if tried else ("bonus" if path else "target")
    token = best if greedy else draw(dist, False, gen)
    res = dist if (tried and not greedy) else None
    return Verification(tuple(rulings), tuple(path), token, origin, res, fallback and res is not None)


def sample_children(tree: TokenTree, row: torch.Tensor, kids: list[int], gen: torch.Generator,
                    rulings: list) -> tuple[int | None, torch.Tensor, bool]:
    """Try the children in turn (sibling_schedule); the accepted one, or None and the final residual (and
    whether a residual was all zero)."""
    xs = [tree.tokens[c] for c in kids]
    qs = [tree.q_of(c, row) for c in kids]
    probs, dists, fallback = sibling_schedule(row, xs, qs)
    for i, c in enumerate(kids):
        u = float(torch.rand((), generator=gen))
        ok = u < probs[i]
        rulings.append(Ruling(c, xs[i], float(dists[i][xs[i]]), float(qs[i][xs[i]]), probs[i], u, ok, -1))
        if ok:
            return c, dists[i], False
    return None, dists[-1], fallback


# ---------------------------------------------------------------- typical acceptance (Medusa): LOSSY
# As the Medusa repository runs it (FasterDecoding/Medusa, medusa/model/utils.py, evaluate_posterior and
# generate_candidates with medusa_generate's defaults sampling="typical", fast=True):
#   temperature 0   exact match (the same walk as greedy verification): the output is plain greedy's;
#   temperature > 0 a node passes when p(x) > min(epsilon, delta * exp(-H(p))) under its parent; of the
#                   longest passing paths the one with the highest sum of log p is kept; the token after it
#                   is the base head's argmax (not a draw from p), so the whole output is deterministic.
# The repository's fast=False variant draws that token from p with the tokens under the threshold removed
# instead; it is not what its generate() runs by default, and not what is run here.
def typical_threshold(p: torch.Tensor, epsilon: float, delta: float) -> float:
    """Medusa's typical acceptance threshold min(epsilon, delta * exp(-H(p))): a candidate passes when the
    target gives it more than this. A confident p (low entropy) demands up to epsilon; a flat one less. H is
    computed as the repository does, -sum p log(p + 1e-5) (the 1e-5 keeps log finite at p = 0)."""
    p = p.double()
    entropy = float(-(p * torch.log(p + 1e-5)).sum())
    return min(epsilon, delta * float(torch.exp(torch.tensor(-entropy))))


def typical_pass(tree: TokenTree, p: torch.Tensor, epsilon: float, delta: float) -> list[bool]:
    """Per node: does its whole root-to-node path pass the typical test (each node against its parent's p)?"""
    thresholds = [typical_threshold(row, epsilon, delta) for row in p]
    ok: list[bool] = []
    for i, (x, a) in enumerate(zip(tree.tokens, tree.parents)):
        ok.append((a < 0 or ok[a]) and float(p[a + 1, x]) > thresholds[a + 1])
    return ok


def typical_path(tree: TokenTree, ok: list[bool], p: torch.Tensor, stop) -> list[int]:
    """Medusa keeps the LONGEST passing path and, among equally long ones, the likeliest under the target: the
    highest sum of log p(x) along the path, each node's p under its parent (ties left: the earliest node).
    Cut after an end-of-sequence token."""
    depths, logp = tree.depths, []
    for x, a in zip(tree.tokens, tree.parents):
        logp.append((logp[a] if a >= 0 else 0.0) + float(torch.log(p[a + 1, x].double())))
    best = max((i for i in range(len(tree)) if ok[i]), key=lambda i: (depths[i], logp[i], -i), default=None)
    path = tree.path_to(best) if best is not None else []
    for j, node in enumerate(path):
        if tree.tokens[node] in stop:
            return path[:j + 1]
    return path


def verify_tree_typical(tree: TokenTree, p: torch.Tensor, greedy: bool, gen: torch.Generator,
                        typical: tuple[float, float], stop: set[int] | frozenset = frozenset()) -> Verification:
    """Medusa's typical acceptance over a tree (see above). Greedy: exact match, verify_tree's greedy walk, as
    Medusa's evaluate_posterior does at temperature 0. Otherwise LOSSY: the longest passing path (the likeliest
    of equals), then the argmax of p after it; no uniform draw, no residual, `gen` unused. A token the exact
    rule would reject with probability 1 - p(x) passes every time, and where nothing passes the argmax stands
    in for a draw from p: the output is NOT distributed as p; first_token_tv measures by how much."""
    if greedy:
        return verify_tree(tree, p, True, gen, stop)
    epsilon, delta = typical
    ok = typical_pass(tree, p, epsilon, delta)
    path = typical_path(tree, ok, p, stop)
    rulings = []
    for node in [-1] + path:  # the children tried along the walk: each node on the path, and its siblings
        for c in tree.children(node):
            x = tree.tokens[c]
            rulings.append(Ruling(c, x, float(p[node + 1, x]), 1.0, float(ok[c]), None, ok[c], -1))
    if path and tree.tokens[path[-1]] in stop:
        return Verification(tuple(rulings), tuple(path), None, "none", None, False)
    last = path[-1] if path else -1
    tried = bool(tree.children(last))
    # the argmax after a rejection is the greedy rule's correction, not a resampled token
    origin = "correction" if tried else ("bonus" if path else "target")
    return Verification(tuple(rulings), tuple(path), int(torch.argmax(p[last + 1])), origin, None, False)


def first_token_distribution(tree: TokenTree, p: torch.Tensor,
                             typical: tuple[float, float] | None = None) -> torch.Tensor:
    """P(the first token a verify pass emits = x), exactly, from the tree and the target's p (float64).
    Exact rule: the root's children tried in turn with their accept probabilities a_i, the final residual
    otherwise (sibling_schedule), so sum_i reach_i a_i [x = x_i] + reach_end residual: equals p[0]. Typical
    (at T > 0): a point mass, on the first node of the kept path, else on the argmax of p[0]."""
    p = p.double()
    if typical is not None:
        path = typical_path(tree, typical_pass(tree, p, *typical), p, frozenset())
        return one_hot(tree.tokens[path[0]] if path else int(torch.argmax(p[0])), p[0])
    kids = tree.children(-1)
    xs = [tree.tokens[c] for c in kids]
    probs, dists, _ = sibling_schedule(p[0], xs, [tree.q_of(c, p[0]).double() for c in kids])
    out, reach = torch.zeros_like(p[0]), 1.0
    for x, a in zip(xs, probs):
        out[x] += reach * a
        reach *= 1.0 - a
    return out + reach * dists[-1]


def first_token_tv(tree: TokenTree, p: torch.Tensor, typical: tuple[float, float] | None = None) -> float:
    """Total variation between the first emitted token's distribution and the target's p[0]: 0 for the exact
    rule (up to rounding), the typical rule's distance from the target otherwise."""
    return total_variation(first_token_distribution(tree, p, typical), p[0])


# ---------------------------------------------------------------- block verification (Sun et al., ICLR 2025)
def block_weights(drafts: list[int], q: torch.Tensor | None, p: torch.Tensor) -> tuple[list[float], list[float]]:
    """For each prefix length i = 0..K of the drafts: p_i, the running likelihood ratio clipped at 1 (p_0 = 1,
    p_i = min(1, p_(i-1) · p(x_i)/q(x_i))), and h_i, the weight of keeping exactly i drafts:
    h_i = r_i / (r_i + 1 − p_i) with r_i = Σ_x max(0, p_i · p(x | x_≤i) − q(x | x_≤i)) for i < K, and h_K = p_K.
    Token-wise verification stops at the first failed test; these weights let a later draft the target likes more
    than the draft did rescue an earlier one it liked less (why it accepts at least as many in expectation)."""
    ps, hs = [1.0], []
    for i, x in enumerate(drafts):
        qi = q[i] if q is not None else one_hot(x, p[i])
        ps.append(min(1.0, ps[-1] * float(p[i, x]) / float(qi[x])) if float(qi[x]) > 0 else 0.0)
    for i in range(len(drafts)):
        qi = q[i] if q is not None else one_hot(drafts[i], p[i])
        r = float(torch.clamp(ps[i] * p[i] - qi, min=0.0).sum())
        hs.append(r / (r + 1.0 - ps[i]) if r + 1.0 - ps[i] > 0 else 1.0)
    hs.append(ps[-1])
    return ps, hs


def verify_block(drafts: list[int], q: torch.Tensor | None, p: torch.Tensor, gen: torch.Generator,
                 stop: set[int] | frozenset = frozenset()) -> Verification:
    """Block verification of a chain (sampling only): one uniform η_i per draft (from `gen`, in position order),
    τ = the largest i with η_i ≤ h_i (block_weights; h_0 = 1, so τ ≥ 0), keep drafts 1..τ, then draw one token:
    from p(· | x_≤K) when τ = K (the bonus), else from normalize(max(0, p_τ · p(· | x_≤τ) − q(· | x_≤τ))). The
    output is distributed exactly as the target's, and the expected number kept is never below token-wise
    verification's (tests/test_block_verify.py enumerates both). An accepted end-of-sequence ends the block."""
    check_ids(drafts, p.shape[-1])
    ps, hs = block_weights(drafts, q, p)
    etas = [float(torch.rand((), generator=gen)) for _ in drafts]
    tau = max([0] + [i + 1 for i, eta in enumerate(etas) if eta <= hs[i + 1]])
    path = list(range(tau))
    rulings = tuple(Ruling(i, x, float(p[i, x]), float((q[i] if q is not None else one_hot(x, p[i]))[x]), hs[i + 1],
                           etas[i], i < tau, -1) for i, x in enumerate(drafts))
    for i in path:
        if drafts[i] in stop:
            return Verification(rulings[:i + 1], tuple(range(i + 1)), None, "none", None, False)
    if tau == len(drafts):
        return Verification(rulings, tuple(path), draw(p[tau], False, gen), "bonus" if drafts else "target", None,
                            False)
    qt = q[tau] if q is not None else one_hot(drafts[tau], p[tau])
    res, fallback = residual(ps[tau] * p[tau], qt)  # scaled: max(0, p_τ p − q), normalised
    res = p[tau] if fallback else res
    return Verification(rulings, tuple(path), draw(res, False, gen), "resampled", res, fallback)


RULES = ("token", "block")  # how a chain of sampled drafts is judged: one by one, or jointly (both exact)


def verify_chain(drafts: list[int], q: torch.Tensor | None, p: torch.Tensor, greedy: bool, gen: torch.Generator,
                 stop: set[int] | frozenset = frozenset(), rule: str = "token") -> Verification:
    """The one selector: greedy verification for a greedy target whatever the rule (both rules reduce to it),
    else token-wise rejection sampling (verify) or block verification (verify_block)."""
    if rule not in RULES:
        raise ValueError(f"acceptance rule must be one of {', '.join(RULES)}; got {rule!r}")
    if rule == "block" and not greedy:
        return verify_block(drafts, q, p, gen, stop)
    return verify(drafts, q, p, greedy, gen, stop)

