"""The repeated-request scenario (what agents do): the same kind of request asked again with small
changes. Suffix decoding drafts from everything earlier requests produced; n-gram prompt lookup sees only
the current request. Both are run on each request in turn, greedy, beside plain greedy: token identity,
tokens per verify pass and wall clock (interleaved rounds, measure.timed_rounds)."""
from __future__ import annotations

import statistics

from specviz.drafters import make_drafter
from specviz.labs.measure import timed_rounds
from specviz.engine.plain import plain_steps
from specviz.prompting import prompt_ids
from specviz.engine.speculative import speculative_steps
from specviz.engine.loop import run_steps

# the same kind of coding request with one thing changed: the answers share their shape
REQUESTS = [f"Write a Python function called {name} that takes a list of numbers and returns the {what} of the "
            "list. Include a docstring." for name, what in
            [("list_sum", "sum"), ("list_max", "largest value"), ("list_min", "smallest value"),
             ("list_mean", "average"), ("list_range", "difference between the largest and smallest value")]]


def run(models, requests=REQUESTS, k: int = 4, max_new: int = 64, rounds: int = 2) -> dict:
    """Each request after the first, with suffix decoding remembering the earlier requests' prompts and
    outputs (plain greedy's, which every exact method reproduces)."""
    target, tok = models.target, models.tokenizer
    ids = [prompt_ids(tok, r) for r in requests]
    outputs = [run_steps(plain_steps(target, tok, x, max_new))[1].token_ids for x in ids]
    runs = {}
    for i in range(1, len(ids)):
        history = [ids[j] + outputs[j] for j in range(i)]
        runs[("plain greedy", i)] = lambda x=ids[i]: run_steps(plain_steps(target, tok, x, max_new))[1]
        runs[("n-gram lookup", i)] = lambda x=ids[i]: run_steps(
            speculative_steps(target, make_drafter("ngram"), tok, x, max_new, k))[1]
        runs[("suffix decoding", i)] = lambda x=ids[i], h=history: run_steps(
            speculative_steps(target, make_drafter("suffix", history=h), tok, x, max_new, k))[1]
    timed_rounds({key: f for key, f in list(runs.items())[:3]}, 1)  # warm-up
    seconds, results = timed_rounds(runs, rounds)
    out = {"requests": len(ids) - 1, "k": k, "max_new_tokens": max_new, "rounds": rounds, "rows": {}}
    for name in ("plain greedy", "n-gram lookup", "suffix decoding"):
        keys = [key for key in runs if key[0] == name]
        total = sum((results[key].counters for key in keys[1:]), results[keys[0]].counters)
        secs = sum(statistics.median(seconds[key]) for key in keys)
        out["rows"][name] = {
            "seconds": secs, "tokens": total.tokens,
            "identical": all(results[key].token_ids == outputs[key[1]] for key in keys),
            "tokens_per_verify_pass": total.mean_acceptance_length if name != "plain greedy" else 1.0,
            "acceptance_rate": total.acceptance_rate if name != "plain greedy" else None}
    plain = out["rows"]["plain greedy"]["seconds"]
    for row in out["rows"].values():
        row["speedup_vs_plain"] = plain / row["seconds"]
    return out
