"""Speculative decoding (Leviathan et al. 2023; Chen et al. 2023), one cycle at a time.

A cycle: the drafter proposes k tokens x_1..x_k (recording q_i, the distribution x_i was drawn from);
the target scores the context + all k drafts in ONE forward pass, giving p_1..p_{k+1}; then

  greedy verification:   accept x_i while x_i == argmax p_i; the first mismatch is replaced by
                         argmax p_i (correction). Output == plain greedy, with any drafter.
  sampling verification: accept x_i with probability min(1, p_i(x)/q_i(x)); at the first rejection
                         draw from the residual normalize(max(0, p_i - q_i)). Output ~ p exactly.

If all k pass, the target's next distribution p_{k+1} gives one more token for free (bonus). Both KV
caches are then cropped back to the accepted prefix: the rejected drafts never happened.
"""
from __future__ import annotations

from collections.abc import Generator

import torch

from .errors import SpecVizError
from .sampling import SamplingConfig, choose, distribution, new_generator, warpers
from .step import Stepper, eos_ids, token_text, top_probs
from .trace import CacheState, Counters, Cycle, DraftToken, Result, Verdict


def residual(p: torch.Tensor, q: torch.Tensor) -> tuple[torch.Tensor, bool]:
    """normalize(max(0, p - q)). All zero only when p == q, where a rejection has probability 0 in
    exact arithmetic; floating point can still land there, and p itself is then the right answer."""
    r = torch.clamp(p - q, min=0.0)
    total = r.sum()
    if total <= 0:
        return p, True
    return r / total, False


def accept_probability(p_x: float, q_x: float) -> float:
    """min(1, p(x)/q(x)): x was drawn from q, so q(x) > 0."""
    return min(1.0, p_x / q_x)


def one_hot(token: int, like: torch.Tensor) -> torch.Tensor:
    q = torch.zeros_like(like)
    q[token] = 1.0
    return q


def speculative_steps(target, drafter, tokenizer, prompt_ids: list[int], max_new_tokens: int, k: int = 4,
                      cfg: SamplingConfig = SamplingConfig(), dynamic_k: bool = False, k_max: int = 16,
                      top_n: int = 5) -> Generator[Cycle, None, Result]:
    if k < 1:
        raise SpecVizError(f"K (draft length) must be at least 1; got {k}.")
    cfg.validate()
    verify_mode = "greedy" if cfg.greedy else "sampling"
    gen = new_generator(cfg.seed)
    procs = warpers(cfg)
    stop = eos_ids(target, tokenizer)
    reads_features = getattr(drafter, "needs_features", False)
    tstep = Stepper(target, hidden_layers=drafter.feature_layers if reads_features else ())
    drafter.reset()
    ids = list(prompt_ids)
    new: list[int] = []
    c = Counters()
    prefill = 0
    if reads_features and len(ids) > 1:
        # A feature drafter needs the target's hidden states over the prompt before it can draft: one
        # prefill pass over all but the last prompt token (the first verify pass feeds that one).
        tstep.logits(ids[:-1], 1)
        drafter.observe(tstep.hidden, 0)
        c.target_passes += 1
        prefill = 1
    cycle = 0
    while len(new) < max_new_tokens:
        # Never draft past max_new_tokens: the cycle always adds one target token after the drafts.
        k_now = max(0, min(k, max_new_tokens - len(new) - 1))
        draft_passes_before = drafter.passes
        drafts, q = drafter.propose(ids, k_now, cfg, gen)
        c.draft_passes += drafter.passes - draft_passes_before
        n = len(drafts)

        # ONE target forward over the unseen context + all n drafts: n + 1 next-token distributions.
        fed_from = tstep.cached
        logits = tstep.logits(ids + drafts, n + 1)
        if reads_features:  # a feature drafter (eagle.py) reads the target's hidden states of this pass
            drafter.observe(tstep.hidden, fed_from)
        p = distribution(logits, cfg, procs).cpu()
        target_cached = tstep.cached
        c.target_passes += 1
        c.drafted += n

        verdicts, accepted = [], 0
        res_top, fallback, origin = (), False, "bonus" if n else "target"  # n == 0: a plain target step
        new_token = None
        for i, x in enumerate(drafts):
            q_i = q[i] if q is not None else one_hot(x, p[i])
            if verify_mode == "greedy":
                best = int(torch.argmax(logits[i]))
                ok, prob, u = x == best, 1.0 if x == best else 0.0, None
            else:
                best = -1
                prob = accept_probability(float(p[i, x]), float(q_i[x]))
                u = float(torch.rand((), generator=gen))
                ok = u < prob
            verdicts.append(Verdict(i, x, token_text(tokenizer, x), float(p[i, x]), float(q_i[x]), prob, u, ok,
                                    top_probs(tokenizer, p[i], top_n, x), top_probs(tokenizer, q_i, top_n, x), best))
            if not ok:
                if verify_mode == "greedy":
                    new_token, origin = best, "correction"
                else:
                    r, fallback = residual(p[i], q_i)
                    new_token, origin = choose(r, cfg, gen), "resampled"
                    res_top = top_probs(tokenizer, r, top_n, new_token)
                break
            accepted += 1
        if new_token is None:  # every draft passed: the target's last distribution is free
            new_token = int(torch.argmax(logits[n])) if verify_mode == "greedy" else choose(p[n], cfg, gen)

        emitted = drafts[:accepted] + [new_token]
        origins = ["accepted"] * accepted + [origin]
        # Stop at EOS, as plain decoding would have.
        for j, t in enumerate(emitted):
            if t in stop:
                emitted, origins = emitted[:j + 1], origins[:j + 1]
                break
        ids += emitted
        new += emitted

        # Roll both caches back to the accepted prefix; the new token is fed on the next cycle.
        keep = len(ids) - 1
        tstep.crop(keep)
        draft_cache = None
        if drafter.cached is not None:
            draft_before = drafter.cached
            drafter.rollback(keep)
            draft_cache = CacheState(draft_before, drafter.cached)

        c.decided += len(verdicts)
        c.accepted += accepted
        c.accepted_per_pass.append(accepted)
        while len(c.reached_at) < len(verdicts):
            c.reached_at.append(0)
            c.accepted_at.append(0)
        for v in verdicts:
            c.reached_at[v.position] += 1
            c.accepted_at[v.position] += int(v.accepted)

        yield Cycle(cycle, len(ids) - len(emitted), n,
                    tuple(DraftToken(i, x, token_text(tokenizer, x),
                                     float(q[i, x]) if q is not None else 1.0,
                                     top_probs(tokenizer, q[i], top_n, x) if q is not None
                                     else top_probs(tokenizer, one_hot(x, p[i]), 1))
                          for i, x in enumerate(drafts)),
                    n + 1, tuple(verdicts), accepted, new_token, token_text(tokenizer, new_token), origin,
                    res_top, fallback, CacheState(target_cached, tstep.cached), draft_cache,
                    tuple(emitted), tuple(origins), verify_mode, prefill if cycle == 0 else 0)
        cycle += 1
        if emitted[-1] in stop:
            break
        if dynamic_k:  # transformers' heuristic: grow after a clean sweep, shrink after a rejection
            k = min(k + 2, k_max) if accepted == n and n > 0 else max(1, k - 1)

    return Result("speculative", list(prompt_ids), new, tokenizer.decode(new, skip_special_tokens=True), c)
