"""The Beam search page's view of one step: the tree, the finished ranking, beam beside greedy."""
from __future__ import annotations

from specviz.figures.beam_tree import (LEGEND, beam_tree, beam_vs_greedy, final_ranking, heading, length_penalty_note,
                                       readable)
from specviz.views import Event

SIDE = "beam vs greedy"  # the row of two columns under the tree


def beam_event(steps: list, n: int, tokenizer, greedy_ids: list[int], greedy_logprob: float, beams: int,
               penalty: float, last: bool, predict: bool = False) -> Event:
    """Step n (steps: the run's steps so far; the recording's own list, so the page's figure cache knows it).
    predict: two phases, the candidates without their fate first (the page's slot "prediction"), then the rest."""
    step = steps[n]
    rest = 1 if predict else 0  # the phase from which the step's outcome shows
    e = Event([heading(step)] * (rest + 1))
    if predict:
        e.chart(beam_tree, steps, n, hide_last=True, until=1, key="beam_tree")
        e.chart(beam_tree, steps, n, hide_last=False, at=1, key="beam_tree")
        e.add("slot", "prediction")
    else:
        e.chart(beam_tree, steps, n, hide_last=False, key="beam_tree")
    e.add("caption", LEGEND, rest)
    if step.beams_after and not last:
        e.add("pre", "\n".join(f"{h.logprob:8.3f}  {readable(h.text)}" for h in step.beams_after), rest,
              fold=f"Running beams after step {step.step + 1} (cumulative log-prob)")
    if step.finished:
        e.chart(final_ranking, step.finished, at=rest, key="beam_rank")
        if length_penalty_note(step.finished, penalty):
            e.add("caption", length_penalty_note(step.finished, penalty), rest)
    else:
        e.add("caption", "No finished hypothesis yet.", rest)
    e.add("heading", "Beam vs greedy on the same prompt", rest)
    e.add("markdown", "**Greedy**", rest, row=(SIDE, 0, 2))
    e.add("pre", tokenizer.decode(list(greedy_ids), skip_special_tokens=True), rest, row=(SIDE, 0, 2))
    e.add("metrics", [("Total log-prob", f"{greedy_logprob:.3f}", None)], rest, row=(SIDE, 0, 2))
    e.add("markdown", "**Beam (best finished so far)**", rest, row=(SIDE, 1, 2))
    if step.finished:
        best = step.finished[0]
        same = list(best.tokens) == list(greedy_ids)  # no arrow for "+0.000": nothing was gained or lost
        e.add("pre", tokenizer.decode(list(best.tokens), skip_special_tokens=True), rest, row=(SIDE, 1, 2))
        e.add("metrics", [("Total log-prob", f"{best.logprob:.3f}", None, "same sequence as greedy" if same else
                           f"{best.logprob - greedy_logprob:+.3f} vs greedy", same)], rest, row=(SIDE, 1, 2))
        if last:
            e.add("info", beam_vs_greedy(tokenizer, greedy_ids, greedy_logprob, list(best.tokens), best.logprob,
                                         beams, penalty), rest)
    else:
        e.add("caption", "Step until a hypothesis finishes (EOS or max new tokens).", rest, row=(SIDE, 1, 2))
    return e
