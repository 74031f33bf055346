"""Beam vs greedy on one prompt, in plain words (the beam page shows this sentence)."""
from __future__ import annotations

from .figures import md_escape


def beam_vs_greedy(tokenizer, greedy_ids, greedy_lp, beam_ids, beam_lp, beams: int) -> str:
    if beams == 1:  # one beam keeps only the best token each step: greedy itself, whatever the prompt
        return ("With B = 1, beam search keeps a single hypothesis, the best token at every step: it *is* greedy "
                "search, so the two match by construction. Raise B to let beam keep tokens that look worse now.")
    if list(greedy_ids) == list(beam_ids):
        return (f"Beam search and greedy chose the same sequence here: keeping {beams} hypotheses found nothing "
                "likelier than greedy's locally best tokens (a wider beam, or another prompt, may).")
    branch = next((i for i, (a, b) in enumerate(zip(greedy_ids, beam_ids)) if a != b), min(len(greedy_ids), len(beam_ids)))
    # the sentence is shown as Markdown: escape the model's text
    shared = md_escape(tokenizer.decode(list(greedy_ids[:branch]))[-40:])
    g_tok = md_escape(tokenizer.decode([greedy_ids[branch]])) if branch < len(greedy_ids) else "(end)"
    b_tok = md_escape(tokenizer.decode([beam_ids[branch]])) if branch < len(beam_ids) else "(end)"
    where = f"after {branch} shared token{'s' if branch != 1 else ''}" + (f" (“{shared}”)" if shared else "")
    if beam_lp > greedy_lp:
        return (f"Beam search found a sequence greedy missed, with higher total log-probability "
                f"({beam_lp:.2f} vs {greedy_lp:.2f}). They branch off {where}: greedy took “{g_tok}”, beam kept "
                f"“{b_tok}”, which looked worse at that step but led somewhere more likely overall.")
    return (f"The two differ {where} (greedy “{g_tok}”, beam “{b_tok}”), but greedy's sequence has the higher total "
            f"log-probability ({greedy_lp:.2f} vs {beam_lp:.2f}): beam ranks by the length-penalised score, "
            "not raw log-probability, and lengths differ.")


def length_penalty_note(hypotheses, penalty: float) -> str | None:
    """When every finished hypothesis has the same length, the penalty divides all scores by the same number
    and cannot reorder them: say so (None when lengths differ, or fewer than two hypotheses)."""
    lengths = {len(h.tokens) for h in hypotheses}
    if len(hypotheses) < 2 or len(lengths) != 1:
        return None
    n = lengths.pop()
    return (f"All {len(hypotheses)} finished hypotheses have the same length ({n} tokens), so score = log p / "
            f"{n}^{penalty:g} divides every one by the same number: the length penalty cannot reorder them here. "
            "It matters when hypotheses end at different lengths — try a prompt with a short answer (e.g. the "
            "curated “What is 2+2?”) and move the slider.")
