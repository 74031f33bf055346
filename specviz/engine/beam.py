"""Beam search, one step at a time, with the same result as transformers'
generate(num_beams=B, length_penalty=alpha, early_stopping=False, do_sample=False).

Each step: every running beam is expanded over the whole vocabulary (cumulative log-prob =
beam score + log p(token)); the best max(2, 1 + E)·B candidates are ranked, E being the number of
EOS ids (transformers' rule: enough to refill B running beams even if every EOS of every beam ranks
high); a candidate that ends in EOS (or reaches max_new_tokens) and ranks in the top B becomes a
finished hypothesis, scored sum log-prob / L ** alpha with L the generated tokens including the EOS
(prompt excluded); the best B candidates that did not finish are the new beams.

Stopping (early_stopping=False, transformers' default): once B hypotheses have finished, the search
stops when the best running beam's score *at its current length*, sum / L_now ** alpha, is no better
than the worst finished score. With alpha > 0 that is a heuristic, not a guarantee: a running beam
could still overtake by growing longer. transformers' early_stopping=True stops as soon as B
hypotheses have finished; early_stopping="never" judges the running beam at max length when
alpha > 0 (an upper bound, so the result is the exact best of what beam search can reach).
"""
from __future__ import annotations

from collections.abc import Generator

import torch

from specviz.errors import SpecVizError
from specviz.tokens import eos_ids, token_text
from specviz.trace import BeamCandidate, BeamStep, Counters, Hypothesis, Result

NEG = -1.0e9  # transformers' stand-in for "impossible"


def _hyp(tokenizer, tokens, logprob, score) -> Hypothesis:
    return Hypothesis(tuple(tokens), tokenizer.decode(list(tokens)), float(logprob), float(score))


def candidates_per_step(num_beams: int, n_eos: int) -> int:
    """How many candidates are ranked per step: max(2, 1 + number of EOS ids) · B, as transformers does,
    so that B running beams remain even when every EOS id ranks among the best."""
    return max(2, 1 + n_eos) * num_beams


@torch.inference_mode()
def beam_steps(model, tokenizer, prompt_ids: list[int], num_beams: int, max_new_tokens: int,
               length_penalty: float = 1.0, top_n: int = 3) -> Generator[BeamStep, None, Result]:
    if num_beams < 1:
        raise SpecVizError(f"Beam width must be at least 1; got {num_beams}.")
    B = num_beams
    stop = eos_ids(model, tokenizer)
    n_cand = candidates_per_step(B, len(stop))
    dev = model.device
    # One prefill of the prompt: at step 1 only beam 0 is alive (the others start at -1e9 in
    # transformers), so its logits are all we need; the cache is copied to B rows below.
    out = model(input_ids=torch.tensor([prompt_ids], device=dev), use_cache=True, logits_to_keep=1)
    cache, logits = out.past_key_values, out.logits[:, -1].float()
    passes = 1
    beams: list[list[int]] = [[]]
    beam_scores = torch.zeros(1, device=dev)  # cumulative log-probs of the running beams
    finished: list[tuple[float, list[int], float]] = []  # (score, tokens, logprob), best first

    for step in range(max_new_tokens):
        gen_len = step + 1
        logp = torch.log_softmax(logits, dim=-1)  # (beams, vocab)
        vocab = logp.shape[-1]
        top_scores, top_idx = torch.topk((logp + beam_scores[:, None]).reshape(-1), n_cand)
        parents, tokens, scores = (top_idx // vocab).tolist(), (top_idx % vocab).tolist(), top_scores.tolist()
        last = gen_len == max_new_tokens
        hits = [t in stop or last for t in tokens]
        finished, finished_ranks = update_finished(finished, beams, parents, tokens, scores, hits, B,
                                                   gen_len ** length_penalty)
        live = [r for r in range(n_cand) if not hits[r]][:B]  # running: the best B candidates that did not stop
        candidates = shown_candidates(tokenizer, logp, beam_scores, parents, tokens, live, finished_ranks, top_n)

        before = tuple(_hyp(tokenizer, b, s, s / max(len(b), 1) ** length_penalty)
                       for b, s in zip(beams, beam_scores.tolist()))
        beams = [beams[parents[r]] + [tokens[r]] for r in live]
        if live:
            beam_scores = torch.tensor([scores[r] for r in live], device=dev)
        after = tuple(_hyp(tokenizer, b, s, s / gen_len ** length_penalty) for b, s in zip(beams, beam_scores.tolist()))
        stopped = stop_reason(last, max_new_tokens, live, finished, B,
                              float(beam_scores[0]) / gen_len ** length_penalty if live else None)
        yield BeamStep(step, before, tuple(candidates), after,
                       tuple(_hyp(tokenizer, t, lp, s) for s, t, lp in finished), stopped)
        if stopped:
            break

        # Reorder the cache so row i holds beam i's history, then score every beam's new token in
        # one batched forward.
        cache.reorder_cache(torch.tensor([parents[r] for r in live], device=dev))
        out = model(input_ids=torch.tensor([[b[-1]] for b in beams], device=dev),
                    past_key_values=cache, use_cache=True)
        cache, logits = out.past_key_values, out.logits[:, -1].float()
        passes += 1

    best_score, best_tokens, best_lp = finished[0]
    return Result("beam", list(prompt_ids), list(best_tokens), tokenizer.decode(best_tokens, skip_special_tokens=True),
                  Counters(target_passes=passes, tokens=len(best_tokens)), score=float(best_score),
                  logprob=float(best_lp), finished=[_hyp(tokenizer, t, lp, s) for s, t, lp in finished])


def update_finished(finished, beams, parents, tokens, scores, hits, B: int, length_norm: float):
    """Candidates that hit a stop and rank in the top B become finished hypotheses, scored
    logprob / L ** alpha (length_norm); the best B finished overall are kept. Returns (finished, the ranks
    of this step's candidates that were kept as finished)."""
    new = [(scores[r] / length_norm, beams[parents[r]] + [tokens[r]], scores[r], r) for r in range(B) if hits[r]]
    pool = sorted([(s, t, lp, -1) for s, t, lp in finished] + new, key=lambda h: -h[0])[:B]
    return [(s, t, lp) for s, t, lp, _ in pool], {h[3] for h in pool if h[3] >= 0}


def shown_candidates(tokenizer, logp, beam_scores, parents, tokens, live, finished_ranks, top_n: int):
    """What the viewer sees: each beam's own top_n expansions plus every ranked candidate, best first, each
    marked kept / finished / pruned."""
    child_of = {r: i for i, r in enumerate(live)}
    rank_of = {(p, t): r for r, (p, t) in enumerate(zip(parents, tokens))}
    shown = set(rank_of)
    if top_n:
        own = torch.topk(logp, min(top_n, logp.shape[-1]), dim=-1).indices.tolist()
        shown |= {(b, t) for b in range(logp.shape[0]) for t in own[b] if float(beam_scores[b]) > NEG / 2}
    out = []
    for p, t in sorted(shown, key=lambda pt: -(float(logp[pt[0], pt[1]]) + float(beam_scores[pt[0]]))):
        r = rank_of.get((p, t), -1)
        status = "kept" if r in child_of else "finished" if r in finished_ranks else "pruned"
        out.append(BeamCandidate(p, t, token_text(tokenizer, t), float(logp[p, t]),
                                 float(logp[p, t] + beam_scores[p]), status, r, child_of.get(r, -1)))
    return out


def stop_reason(last: bool, max_new_tokens: int, live, finished, B: int, best_running: float | None) -> str:
    """Why the search ends at this step ("" while it goes on). early_stopping=False: once B hypotheses have
    finished, stop when the best running beam's score at its current length is no better than the worst
    finished one."""
    if last:
        return f"reached max new tokens ({max_new_tokens})"
    if not live:
        return "no running beam left"
    if len(finished) == B and best_running <= finished[-1][0]:
        return "no running beam can beat the finished hypotheses"
    return ""
