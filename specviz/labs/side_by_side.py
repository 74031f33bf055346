"""The home page's live comparison: greedy, beam search and speculative decoding run on one prompt, with what
each produced, how many target forward passes it took and how long. Beam search is a search (it may change
the output); speculative decoding is an accelerator (greedy verification gives greedy's tokens exactly)."""
from __future__ import annotations

import time
from dataclasses import dataclass

from specviz.engine.beam import beam_steps
from specviz.drafters import make_drafter
from specviz.engine.plain import plain_steps
from specviz.engine.speculative import speculative_steps
from specviz.engine.loop import run_steps


@dataclass(frozen=True)
class MethodRun:
    method: str
    text: str
    tokens: int
    target_passes: int
    seconds: float
    logprob: float | None  # total log-prob of the output (greedy and beam; None for speculative)
    same_as_greedy: bool
    note: str


def side_by_side(models, ids: list[int], max_new: int = 32, beams: int = 3, k: int = 4, drafter: str = "feature",
                 length_penalty: float = 1.0, drafter_label: str = "", progress=lambda f, m: None) -> list[MethodRun]:
    """Greedy, beam search (B beams) and speculative greedy (K drafts, the given drafter) on the same prompt
    ids, each run once, timed with perf_counter (one run: seconds move by ~10 % with the machine's load)."""
    tok = models.tokenizer

    def timed(run):
        t0 = time.perf_counter()
        result = run_steps(run)[1]
        return result, time.perf_counter() - t0

    progress(0.0, "greedy…")
    g, tg = timed(plain_steps(models.target, tok, ids, max_new))
    progress(0.33, f"beam search (B = {beams})…")
    b, tb = timed(beam_steps(models.target, tok, ids, beams, max_new, length_penalty))
    progress(0.66, f"speculative decoding (K = {k})…")
    s, ts = timed(speculative_steps(models.target, make_drafter(drafter, models), tok, ids, max_new, k))
    progress(1.0, "done")
    c = s.counters
    return [
        MethodRun("greedy", g.text, len(g.token_ids), g.counters.target_passes, tg, g.logprob, True,
                  "one target pass per token"),
        MethodRun(f"beam search (B = {beams})", b.text, len(b.token_ids), b.counters.target_passes, tb, b.logprob,
                  b.token_ids == g.token_ids,
                  f"one pass per step, each over {beams} beams (≈ {beams}× the compute of a greedy step)"),
        MethodRun(f"speculative (K = {k}" + (f", {drafter_label})" if drafter_label else ")"),
                  s.text, len(s.token_ids), c.target_passes, ts, None,
                  s.token_ids == g.token_ids,
                  f"{c.mean_acceptance_length:.2f} tokens per verify pass, acceptance "
                  f"{c.acceptance_rate:.0%}" + (f", + {c.prefill_passes} prefill pass" if c.prefill_passes else "")),
    ]
