"""The knobs and metrics of real serving systems, translated (issue 38, item 7).

knobs.json holds the table (each row with the code or page its definition was read from); this module reads it
and computes each system's metric from this app's Counters, so a run here can be read in the units a vLLM,
SGLang or llama.cpp log would print. tests/test_knobs.py re-counts each metric the way that system's code counts
it, from the run's cycles, and checks the two agree.
"""
from __future__ import annotations

import functools
import json
import pathlib

from specviz.engine.speculative import speculative_steps
from specviz.engine.loop import run_steps
from specviz.trace import Counters

TABLE = pathlib.Path(__file__).with_name("knobs.json")


@functools.cache
def table() -> dict:
    return json.loads(TABLE.read_text())


def knob_rows() -> list[dict]:
    return table()["knobs"]


def metric_rows() -> list[dict]:
    return table()["metrics"]


def drafts(c: Counters) -> int:
    """Verify passes that carried at least one draft (vLLM's num_drafts): the passes whose first draft was ruled on."""
    return c.reached_at[0] if c.reached_at else 0


def _ratio(a: float, b: float) -> float | None:
    return a / b if b else None


def vllm_draft_acceptance_rate(c: Counters) -> float | None:
    return _ratio(c.accepted, c.drafted)


def vllm_mean_acceptance_length(c: Counters) -> float | None:
    n = drafts(c)
    return 1 + c.accepted / n if n else None


def vllm_per_position(c: Counters) -> list[float]:
    """Of all drafts, the share whose position i was accepted (unconditional); Counters.per_position() is the
    conditional rate, accepted_at[i] / reached_at[i]."""
    n = drafts(c)
    return [a / n for a in c.accepted_at] if n else []


def sglang_accept_length(c: Counters) -> float | None:
    return _ratio(c.accepted + c.verify_passes, c.verify_passes)


def llama_cpp_acceptance(c: Counters) -> float | None:
    return _ratio(c.accepted, c.drafted)


def accepted_per_pass(c: Counters) -> float | None:
    return _ratio(c.accepted, c.verify_passes)


METRICS = {
    "vllm_draft_acceptance_rate": vllm_draft_acceptance_rate,
    "vllm_mean_acceptance_length": vllm_mean_acceptance_length,
    "vllm_per_position": vllm_per_position,
    "sglang_accept_length": sglang_accept_length,
    "llama_cpp_acceptance": llama_cpp_acceptance,
    "specviz_acceptance_rate": lambda c: c.acceptance_rate if c.decided else None,
    "specviz_tokens_per_pass": lambda c: c.mean_acceptance_length if c.verify_passes else None,
    "specviz_accepted_per_pass": accepted_per_pass,
}


def fmt(value) -> str:
    if value is None:
        return "–"
    if isinstance(value, list):
        return " · ".join(f"{v:.2f}" for v in value) or "–"
    return f"{value:.3f}"


def metrics_on(c: Counters) -> list[dict]:
    """Each metric row of knobs.json with its value on this run (value: a number, a list per position, or None
    when the run has nothing it could be computed from)."""
    return [dict(row, value=METRICS[row["id"]](c), shown=fmt(METRICS[row["id"]](c))) for row in metric_rows()]


def record(target, drafter, tokenizer, prompt: list[int], max_new: int, k: int) -> dict:
    """One greedy speculative run: its Counters and output, what the page's sections read."""
    _, result = run_steps(speculative_steps(target, drafter, tokenizer, prompt, max_new, k=k))
    return {"counters": result.counters, "prompt": list(prompt), "output": result.token_ids, "k": k,
            "drafter": drafter.name}
