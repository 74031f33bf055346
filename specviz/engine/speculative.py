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
from specviz.engine.step import Stepper, token_text, top_probs
from specviz.trace import CacheState, Cycle, DraftToken, Result, Verdict
from specviz.verify import RULES, Verification, one_hot, verify_chain


def speculative_steps(target, drafter: Drafter, tokenizer, prompt_ids: list[int], max_new_tokens: int, k: int = 4,
                      cfg: SamplingConfig = SamplingConfig(), dynamic_k: bool = False, k_max: int = 16,
                      top_n: int = 5, laps: list | None = None, acceptance: str = "token"
                      ) -> Generator[Cycle, None, Result]:
    """laps: a list to receive the end time of each stage of each cycle (Decoding.lap), for the timeline.
    acceptance: "token" (token-wise rejection sampling) or "block" (block verification); greedy runs either way."""
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
        emitted = drafts[:v.accepted] + ([v.token] if v.token is not None else [])
        d.lap("accept")

        # Roll both caches back to the accepted prefix; the last new token is fed on the next cycle.
        keep = len(d.ids) + len(emitted) - 1
        tstep.crop(keep)
        draft_cache = rollback_draft(drafter, keep)
        d.lap("rollback")
        if dynamic_k:  # transformers' heuristic: grow after a clean sweep, shrink after a rejection
            ks.append(min(asked + 2, k_max) if v.accepted == len(drafts) > 0 else max(1, asked - 1))
        return cycle_event(tokenizer, top_n, cycle=d.cycle, context_len=len(d.ids), drafts=drafts, q=q, p=p, v=v,
                           emitted=emitted, greedy=cfg.greedy, draft_passes=draft_passes,
                           prefill=run.prefill if d.cycle == 0 else 0, k_asked=asked, k_room=d.room(asked),
                           target_cache=CacheState(target_filled, tstep.cached), draft_cache=draft_cache), emitted

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


def cycle_event(tokenizer, top_n: int, *, cycle: int, context_len: int, drafts: list[int], q, p, v: Verification,
                emitted: list[int], greedy: bool, draft_passes: int, prefill: int, target_cache: CacheState,
                draft_cache: CacheState | None, k_asked: int = 0, k_room: int = 0) -> Cycle:
    """The trace event of one cycle: what the viewer needs to draw it, with token texts and top-n lists."""
    def q_of(i):  # one-hot for deterministic proposals
        return q[i] if q is not None else one_hot(drafts[i], p[i])

    def text(t):
        return token_text(tokenizer, t)

    return Cycle(
        cycle=cycle, context_len=context_len, k=len(drafts),
        drafts=tuple(DraftToken(i, x, text(x), float(q_of(i)[x]),
                                top_probs(tokenizer, q_of(i), top_n if q is not None else 1, x))
                     for i, x in enumerate(drafts)),
        verify_positions=len(drafts) + 1,
        verdicts=tuple(Verdict(r.position, r.token, text(r.token), r.p, r.q, r.accept_prob, r.u, r.accepted,
                               top_probs(tokenizer, p[r.position], top_n, r.token),
                               top_probs(tokenizer, q_of(r.position), top_n, r.token), r.target_choice)
                       for r in v.rulings),
        accepted=v.accepted, new_token=v.token, new_text=text(v.token) if v.token is not None else "",
        new_origin=v.origin,
        residual_top=top_probs(tokenizer, v.residual, top_n, v.token) if v.residual is not None else (),
        residual_fallback=v.residual_fallback, target_cache=target_cache, draft_cache=draft_cache,
        emitted=tuple(emitted), origins=tuple(["accepted"] * v.accepted + ([v.origin] if v.token is not None else [])),
        verify_mode="greedy" if greedy else "sampling", draft_passes=draft_passes, prefill=prefill,
        target_top=tuple(top_probs(tokenizer, p[i], 1)[0] for i in range(len(drafts) + 1)),
        p_draft=tuple(float(p[i, x]) for i, x in enumerate(drafts)),
        new_p=float(p[v.accepted, v.token]) if v.token is not None else None, k_asked=k_asked, k_room=k_room,
        residual_mass=(float((p[v.accepted] - q_of(v.accepted)).clamp(min=0).sum())
                       if v.residual is not None else None))
