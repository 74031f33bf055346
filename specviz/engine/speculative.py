"""Speculative decoding (Leviathan et al. 2023; Chen et al. 2023), one cycle at a time.

A cycle: the drafter proposes k tokens x_1..x_k (recording q_i, the distribution x_i was drawn from);
the target scores the context + all k drafts in ONE forward pass, giving p_1..p_{k+1}; the rule in
verify.py accepts a prefix of the drafts and adds one token of the target's own (correction, resampled
or bonus). Both KV caches are then cropped back to the accepted prefix: the rejected drafts never
happened.
"""
from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass

import torch

from specviz.drafters import Drafter
from specviz.errors import SpecVizError
from specviz.sampling import SamplingConfig, distribution, new_generator, warpers
from specviz.engine.loop import Decoding, run_cycles
from specviz.stepper import Stepper
from specviz.tokens import token_text, top_probs
from specviz.trace import CacheState, Cycle, DraftToken, Result, Verdict
from specviz.verify import RULES, Verification, accept_probability, block_weights, one_hot, verify_chain


def speculative_steps(target, drafter: Drafter, tokenizer, prompt_ids: list[int], max_new_tokens: int, k: int = 4,
                      cfg: SamplingConfig = SamplingConfig(), dynamic_k: bool = False, k_max: int = 16,
                      top_n: int = 5, laps: list | None = None, acceptance: str = "token", details: bool = True
                      ) -> Generator[Cycle, None, Result]:
    """laps: a list to receive the end time of each stage of each cycle (Decoding.lap), for the timeline.
    acceptance: "token" (token-wise rejection sampling) or "block" (block verification); greedy runs either way.
    details=False: each cycle records what the counters read and nothing to draw (cycle_event), for the benchmark
    and the CLI; the same algorithm, the same tokens."""
    if k < 1:
        raise SpecVizError(f"K (draft length) must be at least 1; got {k}.")
    if acceptance not in RULES:
        raise SpecVizError(f"The acceptance rule is one of {', '.join(RULES)}; got {str(acceptance)[:40]!r}.")
    run = Run.start(target, drafter, tokenizer, prompt_ids, max_new_tokens, cfg, laps)
    tstep, ks = run.tstep, [k]  # ks[-1]: this cycle's K (dynamic K changes it between cycles)

    def cycle(d: Decoding) -> tuple[Cycle, list[int]]:
        draft_passes, asked = drafter.passes, ks[-1]
        drafts, q = drafter.propose(d.ids, d.room(asked), cfg, run.gen)
        draft_passes = drafter.passes - draft_passes
        d.lap("draft")

        # ONE target forward over the unseen context + all drafts: len(drafts) + 1 next-token distributions.
        fed_from = tstep.cached
        p = distribution(tstep.logits(d.ids + drafts, len(drafts) + 1), cfg, run.procs).cpu()
        if drafter.reads_target_states:
            drafter.observe(tstep.states, fed_from)
        target_filled = tstep.cached
        d.lap("verify")
        v = verify_chain(drafts, q, p, cfg.greedy, run.gen, d.stop, acceptance)
        emitted = v.emitted(drafts)
        d.lap("accept")

        # Roll both caches back to the accepted prefix; the last new token is fed on the next cycle.
        keep = len(d.ids) + len(emitted) - 1
        tstep.crop(keep)
        draft_cache = rollback_draft(drafter, keep)
        d.lap("rollback")
        if dynamic_k:
            ks.append(next_k(asked, v.accepted, len(drafts), k_max))
        return cycle_event(tokenizer, top_n, cycle=d.cycle, context_len=len(d.ids), drafts=drafts, q=q, p=p, v=v,
                           emitted=emitted, greedy=cfg.greedy, draft_passes=draft_passes,
                           prefill=run.prefill if d.cycle == 0 else 0, k_asked=asked, k_room=d.room(asked),
                           target_cache=CacheState(target_filled, tstep.cached), draft_cache=draft_cache,
                           acceptance=acceptance, details=details), emitted

    yield from run_cycles(run.d, cycle)
    return run.d.result("speculative")


@dataclass
class Run:
    """What every speculative loop (chain here, tree in tree.py) sets up before its first cycle."""
    d: Decoding
    gen: torch.Generator
    procs: object  # the logits warpers
    tstep: Stepper
    prefill: int

    @classmethod
    def start(cls, target, drafter: Drafter, tokenizer, prompt_ids: list[int], max_new_tokens: int,
              cfg: SamplingConfig, laps: list | None = None) -> "Run":
        cfg.validate()
        tstep = Stepper(target, read_layers=drafter.read_layers if drafter.reads_target_states else ())
        drafter.reset()
        d = Decoding.of(target, tokenizer, prompt_ids, max_new_tokens, laps)
        d.lap("start")  # a second "start" (no prefill) begins the first cycle again: the timeline skips it
        prefill = prefill_states(tstep, drafter, list(prompt_ids))
        if prefill:
            d.lap("prefill")
        return cls(d, new_generator(cfg.seed), warpers(cfg), tstep, prefill)


def next_k(k: int, accepted: int, drafted: int, k_max: int) -> int:
    """Dynamic K, transformers' heuristic: grow by 2 after a cycle whose every draft was accepted (the draft is on
    an easy stretch), shrink by 1 after a rejection (the drafts past it were wasted)."""
    return min(k + 2, k_max) if accepted == drafted > 0 else max(1, k - 1)


def rollback_draft(drafter: Drafter, keep: int) -> CacheState | None:
    """Roll the drafter back to the first `keep` tokens; its cache lengths before and after (None without one)."""
    if drafter.cached is None:
        return None
    filled = drafter.cached
    drafter.rollback(keep)
    return CacheState(filled, drafter.cached)


def prefill_states(tstep: Stepper, drafter: Drafter, ids: list[int]) -> int:
    """A drafter that reads the target's states needs them over the prompt before it can draft: one
    prefill pass over all but the last prompt token (the first verify pass feeds that one). Returns the
    target passes it took."""
    if not drafter.reads_target_states or len(ids) < 2:
        return 0
    tstep.logits(ids[:-1], 1)
    drafter.observe(tstep.states, 0)
    return 1


@dataclass(frozen=True)
class BlockOdds:
    """One block of drafts judged both ways (block_odds), one entry per draft position i = 1..K."""
    accept: tuple[float, ...]  # min(1, p(x_i)/q(x_i)): the token-wise test at i
    ratio: tuple[float, ...]  # p_i = min(1, p_(i-1) · p(x_i)/q(x_i)): Sun et al.'s clipped running ratio
    weight: tuple[float, ...]  # h_i: draft i is the last kept when its uniform passes this and no later one does
    kept_token: tuple[float, ...]  # P(draft i kept) token-wise: prod_(j <= i) min(1, p_j(x_j)/q_j(x_j))
    kept_block: tuple[float, ...]  # P(draft i kept) block: P(tau >= i) = 1 - prod_(j >= i) (1 - h_j)


def block_odds(drafts: list[int], q: torch.Tensor | None, p: torch.Tensor) -> BlockOdds:
    """Given the drafts x_1..x_K (q: (K, vocab), the distributions they were drawn from, or None for one-hot) and
    the target's p: (K + 1, vocab), how likely each draft is kept, over the uniform draws only, under each rule.
    Token-wise keeps draft i when each of 1..i passes its own test; block verification keeps it when the weight at i
    or at any later position passes (tau is the last i with eta_i <= h_i), so a later draft the target likes can keep
    an earlier one the token-wise test would have rejected. Summed: the drafts each rule keeps in expectation given
    these drafts. Averaged over drafts drawn from q, block's sum is never the smaller (Sun et al. prove it optimal);
    for one given block it can be (tests/test_block_page.py)."""
    ratio, weight = block_weights(drafts, q, p)
    q_x = [float(q[i, x]) if q is not None else 1.0 for i, x in enumerate(drafts)]  # x was drawn from q: q(x) > 0
    accept = [accept_probability(float(p[i, x]), q_x[i]) if q_x[i] > 0 else 0.0 for i, x in enumerate(drafts)]
    kept_token, run = [], 1.0
    for a in accept:
        run *= a
        kept_token.append(run)
    kept_block, miss = [], 1.0
    for h in reversed(weight[1:]):  # h_K first: P(no weight from i on passes)
        miss *= 1.0 - h
        kept_block.append(1.0 - miss)
    return BlockOdds(tuple(accept), tuple(ratio[1:]), tuple(weight[1:]), tuple(kept_token), tuple(kept_block[::-1]))


def cycle_event(tokenizer, top_n: int, *, cycle: int, context_len: int, drafts: list[int], q, p, v: Verification,
                emitted: list[int], greedy: bool, draft_passes: int, prefill: int, target_cache: CacheState,
                draft_cache: CacheState | None, k_asked: int = 0, k_room: int = 0, acceptance: str = "token",
                details: bool = True) -> Cycle:
    """The trace event of one cycle: what the viewer needs to draw it, with token texts and top-n lists.
    details=False: only what the counters read (drafts, rulings, passes, tokens): no texts, no top-n lists, no
    block odds. Building those is most of a cycle's Python (a tokenizer decode per listed token), and only a page
    or a lesson draws them."""
    def q_of(i):  # one-hot for deterministic proposals
        return q[i] if q is not None else one_hot(drafts[i], p[i])

    def text(t):
        return token_text(tokenizer, t) if details else ""

    def tops(probs, n, must=None):
        return top_probs(tokenizer, probs, n, must) if details else ()

    # block verification's own numbers, for the viewer only (verify_block decided already): recomputed here so the
    # rule stays a pure function with one result, and a token-wise run pays nothing for them
    odds = block_odds(drafts, q, p) if details and acceptance == "block" and not greedy and drafts else None
    # the residual after tau kept drafts is max(0, p_tau p - q) (p_0 = 1); token-wise it is max(0, p - q)
    scale = odds.ratio[v.accepted - 1] if odds is not None and v.accepted else 1.0

    return Cycle(
        cycle=cycle, context_len=context_len, k=len(drafts),
        drafts=tuple(DraftToken(i, x, text(x), float(q_of(i)[x]), tops(q_of(i), top_n if q is not None else 1, x))
                     for i, x in enumerate(drafts)),
        verify_positions=len(drafts) + 1,
        verdicts=tuple(Verdict(r.position, r.token, text(r.token), r.p, r.q, r.accept_prob, r.u, r.accepted,
                               tops(p[r.position], top_n, r.token), tops(q_of(r.position), top_n, r.token),
                               r.target_choice)
                       for r in v.rulings),
        accepted=v.accepted, new_token=v.token, new_text=text(v.token) if v.token is not None else "",
        new_origin=v.origin,
        residual_top=tops(v.residual, top_n, v.token) if v.residual is not None else (),
        residual_fallback=v.residual_fallback, target_cache=target_cache, draft_cache=draft_cache,
        emitted=tuple(emitted), origins=v.origins,
        verify_mode="greedy" if greedy else "sampling", draft_passes=draft_passes, prefill=prefill,
        target_top=tuple(top_probs(tokenizer, p[i], 1)[0] for i in range(len(drafts) + 1)) if details else (),
        p_draft=tuple(float(p[i, x]) for i, x in enumerate(drafts)),
        new_p=float(p[v.accepted, v.token]) if v.token is not None else None, k_asked=k_asked, k_room=k_room,
        residual_mass=(float((scale * p[v.accepted] - q_of(v.accepted)).clamp(min=0).sum())
                       if v.residual is not None else None),
        acceptance=acceptance,
        **({} if odds is None else dict(
            block_ratio=odds.ratio, block_weight=odds.weight, kept_token=odds.kept_token, kept_block=odds.kept_block,
            # the same uniforms read token-wise: keep while eta_i < min(1, p/q)
            tokenwise_kept=next((i for i, (r, a) in enumerate(zip(v.rulings, odds.accept)) if not r.u < a),
                                len(v.rulings)))))
