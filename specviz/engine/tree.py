"""Tree speculation (SpecInfer, Medusa, EAGLE-2): verify a TREE of drafted candidates in ONE target pass.

A chain drafter proposes one guess per position; a tree drafter proposes several, branching where it is
unsure. The target scores every node at once:

  flatten   the nodes go after the context in topological order (parents first), one row each;
  positions node i gets position id = context length + depth(i) - 1: siblings share a position, since
            each of them would sit at the same place in the output (depth 1 = the first drafted token);
  mask      node i attends to the whole context and to its own ancestors (and itself) only, never to a
            sibling or a cousin: each root-to-node path is scored exactly as if it had been a chain;
  walk      the rule in verify.py (verify_tree) walks from the root, accepting one child per level;
  gather    the cache keeps the context and the accepted path's entries only (Stepper.keep_slots).
"""
from __future__ import annotations

from collections.abc import Generator

import torch

from specviz.drafters import Drafter
from specviz.errors import SpecVizError
from specviz.sampling import SamplingConfig, distribution
from specviz.engine.loop import Decoding, run_cycles
from specviz.engine.speculative import Run, rollback_draft
from specviz.stepper import Stepper
from specviz.tokens import token_text, top_probs
from specviz.trace import CacheState, DepthVerdict, Result, TreeCycle, TreeNode
from specviz.verify import TokenTree, Verification, one_hot, verify_tree, verify_tree_typical


def tree_inputs(tree: TokenTree, ids: list[int], cached: int) -> tuple[list[int], list[int], torch.Tensor]:
    """The verify forward's inputs on top of a cache holding ids[:cached]: the tokens (the pending context,
    at least its last token, the root, then the nodes), their position ids, and the (queries, keys) bool
    attention pattern: the pending context causal, each node the context plus its ancestors and itself."""
    pending, n, length = ids[cached:], len(tree), len(ids)
    assert pending, "the context's last token (the root) must be fed with the tree"
    m = len(pending)
    positions = list(range(cached, length)) + [length - 1 + d for d in tree.depths]
    allowed = torch.zeros(m + n, cached + m + n, dtype=torch.bool)
    allowed[:, :cached] = True
    allowed[:m, cached:cached + m] = torch.tril(torch.ones(m, m, dtype=torch.bool))
    allowed[m:, cached:cached + m] = True
    allowed[m:, cached + m:] = tree.ancestry()
    return pending + list(tree.tokens), positions, allowed


def tree_logits(stepper: Stepper, tree: TokenTree, ids: list[int]) -> torch.Tensor:
    """ONE target forward over the tree: (n + 1, vocab) logits, row 0 the root's (what follows the
    context), row 1 + i node i's (what follows its root-to-node path)."""
    new, positions, allowed = tree_inputs(tree, ids, stepper.cached)
    return stepper.masked_logits(new, positions, allowed, len(tree) + 1)


def keep_path(stepper: Stepper, context_len: int, path: list[int]) -> list[int]:
    """After the verify pass the cache holds the context then every node; keep the context and the
    accepted path's slots, drop the rest. Returns the kept slots."""
    slots = list(range(context_len)) + [context_len + i for i in path]
    stepper.keep_slots(slots)
    return slots


def static_tree(tokens: list[int], q: torch.Tensor | None, width: int = 1) -> TokenTree:
    """A static tree from a chain drafter's proposal: the chain, plus at each depth the draft's width - 1
    runner-ups (its likeliest other tokens there) as leaf siblings tried after the chain's token. The
    runner-ups are deterministic given the chain token: one-hot q, lossless (verify_tree). Width 1 (or a
    drafter without q, such as n-gram lookup) is the chain itself."""
    chain = TokenTree.chain(tokens, q, tuple(float(q[i, x]) if q is not None else 1.0 for i, x in enumerate(tokens)))
    if width <= 1 or q is None or not tokens:
        return chain
    out_tokens, parents, rows, q_tok, parent = [], [], [], [], -1
    for i, x in enumerate(tokens):
        alts = [a for a in torch.topk(q[i], width).indices.tolist() if a != x][:width - 1]
        me = len(out_tokens)
        for j, t in enumerate([x] + alts):
            out_tokens.append(t)
            parents.append(parent)
            rows.append(q[i] if j == 0 else one_hot(t, q[i]))
            q_tok.append(float(q[i, t]))
        parent = me
    return TokenTree(tuple(out_tokens), tuple(parents), torch.stack(rows), tuple(q_tok))


def draft_tree(drafter: Drafter, ids: list[int], budget: int, depth: int, width: int, cfg: SamplingConfig,
               gen: torch.Generator) -> TokenTree:
    """The drafter's tree (proposes_tree), or its chain of `depth` tokens branched by static_tree."""
    if drafter.proposes_tree:
        return drafter.propose_tree(ids, budget, depth, cfg, gen)
    tokens, q = drafter.propose(ids, depth, cfg, gen)
    return static_tree(tokens, q, width)


def tree_speculative_steps(target, drafter: Drafter, tokenizer, prompt_ids: list[int], max_new_tokens: int,
                           budget: int = 16, depth: int = 4, width: int = 1, cfg: SamplingConfig = SamplingConfig(),
                           top_n: int = 5,
                           typical: tuple[float, float] | None = None,
                           laps: list | None = None, details: bool = True) -> Generator[TreeCycle, None, Result]:
    """Tree speculation, one cycle at a time: draft a tree, ONE target pass over every node, walk it
    (verify_tree), keep the accepted path in the KV cache. budget: nodes per tree (tree drafters); depth:
    the deepest drafted position (a chain drafter's K); width: runner-ups per depth for a chain drafter.
    typical=(epsilon, delta): Medusa's typical acceptance instead of the exact rule when sampling (LOSSY: the
    output is no longer distributed as the target's; verify.verify_tree_typical). Under greedy it changes
    nothing: Medusa verifies by exact match at temperature 0, so the output is plain greedy's and the cycles
    are marked "greedy". details=False: cycles without texts, mask or top tokens (tree_event), for the benchmark
    and the CLI."""
    if depth < 1 or budget < 1:
        raise SpecVizError(f"Tree depth and budget must be at least 1; got depth {depth}, budget {budget}.")
    typical = typical if not cfg.greedy else None  # Medusa's temperature-0 branch: exact match
    run = Run.start(target, drafter, tokenizer, prompt_ids, max_new_tokens, cfg, laps)
    tstep = run.tstep

    def cycle(d: Decoding) -> tuple[TreeCycle, list[int]]:
        draft_passes = drafter.passes
        tree = draft_tree(drafter, d.ids, budget, d.room(depth), width, cfg, run.gen)  # no path past the budget
        draft_passes = drafter.passes - draft_passes
        d.lap("draft")

        context_len, fed_from = len(d.ids), tstep.cached
        p = distribution(tree_logits(tstep, tree, d.ids), cfg, run.procs).cpu()  # the ONE verify pass
        filled = tstep.cached
        d.lap("verify")
        v = (verify_tree_typical(tree, p, cfg.greedy, run.gen, typical, d.stop) if typical  # LOSSY
             else verify_tree(tree, p, cfg.greedy, run.gen, d.stop))
        d.lap("accept")
        keep_path(tstep, context_len, list(v.path))
        if drafter.reads_target_states:  # the target's states of the context and the accepted path only
            m = context_len - fed_from
            rows = list(range(m)) + [m + i for i in v.path]
            drafter.observe(tstep.states[rows], fed_from)
        emitted = v.emitted(tree.tokens)
        draft_cache = rollback_draft(drafter, context_len + len(emitted) - 1)
        d.lap("rollback")
        return tree_event(tokenizer, top_n, cycle=d.cycle, context_len=context_len, drafter=drafter.name, tree=tree,
                          p=p, v=v, emitted=emitted, greedy=cfg.greedy, draft_passes=draft_passes,
                          prefill=run.prefill if d.cycle == 0 else 0, pending=context_len - fed_from,
                          target_cache=CacheState(filled, tstep.cached), draft_cache=draft_cache,
                          typical=typical is not None, details=details), emitted

    yield from run_cycles(run.d, cycle)
    return run.d.result("speculative tree")


def tree_event(tokenizer, top_n: int, *, cycle: int, context_len: int, drafter: str,
               tree: TokenTree, p, v: Verification,
               emitted: list[int], greedy: bool, draft_passes: int, prefill: int, pending: int,
               target_cache: CacheState, draft_cache: CacheState | None, typical: bool = False,
               details: bool = True) -> TreeCycle:
    """The trace event of one tree cycle: every node with its verdict, the mask and position ids.
    verify_mode "typical" marks Medusa's lossy typical acceptance. details=False: no token texts, mask or residual's
    top tokens (what only a page draws)."""
    def text(t):
        return token_text(tokenizer, t) if details else ""

    ruled = {r.node: r for r in v.rulings}
    depths = tree.depths
    nodes = []
    for i, (x, a) in enumerate(zip(tree.tokens, tree.parents)):
        r = ruled.get(i)
        verdict = "accepted" if i in v.path else ("rejected" if r is not None else "not reached")
        nodes.append(TreeNode(i, x, text(x), a, depths[i], context_len - 1 + depths[i],
                              tree.q_token[i] if tree.q_token else 1.0, float(p[a + 1, x]), verdict,
                              r.accept_prob if r else None, r.u if r else None))
    reached = sorted({depths[r.node] for r in v.rulings})
    return TreeCycle(
        cycle=cycle, context_len=context_len, drafter=drafter, nodes=tuple(nodes),
        mask=tuple(tuple(row) for row in tree.ancestry().tolist()) if details else (),
        position_ids=tuple(context_len - 1 + d for d in depths), verify_positions=pending + len(tree),
        path=v.path, accepted=len(v.path), new_token=v.token,
        new_text=text(v.token) if v.token is not None else "", new_origin=v.origin,
        residual_top=top_probs(tokenizer, v.residual, top_n, v.token) if details and v.residual is not None else (),
        residual_fallback=v.residual_fallback, target_cache=target_cache, draft_cache=draft_cache,
        emitted=tuple(emitted), origins=v.origins,
        verify_mode="typical" if typical else ("greedy" if greedy else "sampling"), draft_passes=draft_passes,
        verdicts=tuple(DepthVerdict(d - 1, d <= len(v.path)) for d in reached), prefill=prefill)
