"""Sentences the pages show, worded from results: beam vs greedy on one prompt (the beam page), and the
committed benchmark's packing figures (the Speedup lab), read from its JSON with its date, never typed in."""
from __future__ import annotations

import json

from specviz import ROOT
from specviz.figures import md_escape

DOCS = ROOT / "docs"
PACKING_BENCH = "bench-2026-11-23b.json"  # the run with packed and unpacked forwards side by side (README)


def beam_vs_greedy(tokenizer, greedy_ids, greedy_lp, beam_ids, beam_lp, beams: int,
                   length_penalty: float = 1.0) -> str:
    if beams == 1:  # one beam keeps only the best token each step: greedy itself, whatever the prompt
        return ("With B = 1, beam search keeps a single hypothesis, the best token at every step: it *is* greedy "
                "search, so the two match by construction. Raise B to let beam keep tokens that look worse now.")
    if list(greedy_ids) == list(beam_ids):
        return (f"Beam search and greedy chose the same sequence here: keeping {beams} hypotheses found nothing "
                "likelier than greedy's locally best tokens (a wider beam, or another prompt, may).")
    branch = next((i for i, (a, b) in enumerate(zip(greedy_ids, beam_ids)) if a != b),
                  min(len(greedy_ids), len(beam_ids)))
    # the sentence is shown as Markdown: escape the model's text
    shared = md_escape(tokenizer.decode(list(greedy_ids[:branch]))[-40:])
    g_tok = md_escape(tokenizer.decode([greedy_ids[branch]])) if branch < len(greedy_ids) else "(end)"
    b_tok = md_escape(tokenizer.decode([beam_ids[branch]])) if branch < len(beam_ids) else "(end)"
    where = f"after {branch} shared token{'s' if branch != 1 else ''}" + (f" (“{shared}”)" if shared else "")
    if beam_lp > greedy_lp:
        return (f"Beam search found a sequence greedy missed, with higher total log-probability "
                f"({beam_lp:.2f} vs {greedy_lp:.2f}). They branch off {where}: greedy took “{g_tok}”, beam kept "
                f"“{b_tok}”, which looked worse at that step but led somewhere more likely overall.")
    differ = (f"The two differ {where} (greedy “{g_tok}”, beam “{b_tok}”), but greedy's sequence has the higher total "
              f"log-probability ({greedy_lp:.2f} vs {beam_lp:.2f})")
    # two causes, told apart by the scores: the length penalty can only reorder hypotheses of different lengths
    # (and not at all when alpha = 0); otherwise beam never kept greedy's path to the end
    g_len, b_len = max(len(greedy_ids), 1), max(len(beam_ids), 1)
    g_score, b_score = greedy_lp / g_len ** length_penalty, beam_lp / b_len ** length_penalty
    if length_penalty != 0 and g_len != b_len and b_score > g_score:
        return (f"{differ}: beam ranks finished hypotheses by log p / L^α, and with α = {length_penalty:g} its "
                f"{b_len}-token sequence scores {b_score:.3f} against greedy's {g_len} tokens' {g_score:.3f}. "
                "The length penalty chose it, not probability.")
    return (f"{differ}: the length penalty is not why"
            + (" (α = 0: beam compares raw log-probabilities)" if length_penalty == 0 else
               f" (both have {g_len} tokens: dividing by the same L^α cannot reorder them)" if g_len == b_len else
               f" (greedy would score {g_score:.3f} against beam's {b_score:.3f} even after it)")
            + f". Beam pruned greedy's path: at some step greedy's prefix fell out of the {beams} best partial "
            "hypotheses, so beam never finished it. Keeping the B best prefixes is no guarantee of keeping the "
            "best sequence — beam search can return something less likely than greedy.")


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


def load_bench(name: str = PACKING_BENCH) -> dict | None:
    """A committed benchmark's JSON (docs/), or None when it is missing."""
    try:
        return json.loads((DOCS / name).read_text())
    except (OSError, ValueError):
        return None


def _k4(rows: dict, prefix: str) -> str | None:
    return next((k for k in rows if k.startswith(prefix) and k.endswith("K=4")), None)


def packing_note(bench: dict, source: str = PACKING_BENCH) -> str:
    """What packing the linear layers did in the benchmark, in its own numbers: one target step unpacked and
    packed, greedy's gain, the token draft at K = 4 without and with packing, and v for 3, 5, 9 tokens."""
    f, u, rows = bench["forward_ms"], bench["forward_ms_unpacked"], bench["rows"]
    spec, unpacked_spec = _k4(rows, "spec token") or _k4(rows, "spec model"), _k4(rows, "unpacked spec")
    base = rows["unpacked greedy"]["vs_ours_greedy"]  # unpacked greedy's speed over packed greedy's
    before = rows[unpacked_spec]["vs_ours_greedy"] / base  # the token draft unpacked, over unpacked greedy
    after = rows[spec]["vs_ours_greedy"]
    vs = ", ".join(f"{f['target_verify'][n] / f['target_1']:.2f} for {n}" for n in sorted(f["target_verify"], key=int))
    turned = (" — in that run packing turned the token draft from a slowdown into a speedup" if before < 1 <= after
              else "")
    return (f"In the benchmark of {bench['date']} (`docs/{source}`, on this project's 2-core machine) one unpacked "
            f"step took {u['target_1']:.1f} ms against {f['target_1']:.1f} ms packed, and unpacked, the token draft "
            f"at K = 4 ran at {before:.2f}× plain greedy. SpecViz packs the weights once for oneDNN when it loads a "
            f"model on CPU (`specviz/packed.py`): in that run greedy got {1 / base:.2f}× faster, a verify pass cost "
            f"v = {vs} tokens (one step = 1), and the token draft at K = 4 ran at {after:.2f}× plain "
            f"greedy{turned}. Those are one run's figures; toggle the measured v above to see "
            "this machine's now.")


def estimate_note(bench: dict, source: str = PACKING_BENCH) -> str:
    """How the benchmark's measured speedups sat against the machine-aware estimate, from its rows."""
    fr = {k: r["fraction_of_machine_bound"] for k, r in bench["rows"].items() if r.get("fraction_of_machine_bound")}
    if not fr:
        return ""
    above = sorted(v for v in fr.values() if v > 1)
    return (f"In the benchmark of {bench['date']} (`docs/{source}`) the measured speedups ran at "
            f"{min(fr.values()):.0%}–{max(fr.values()):.0%} of the machine-aware estimate over {len(fr)} "
            f"configurations ({len(above)} above it).")
