"""Where staged speculation's time goes (Spector & Re 2023): the same prompt decoded by speculative greedy
with the token draft alone and with the staged drafter (n-gram lookup drafts for the token draft, which
drafts for the target), each stage's seconds measured in the run itself, one stage per row.

The drafter is wrapped (Timed) so its propose() calls are timed where they happen; the staged drafter's
inner n-gram lookup is wrapped the same way. The target's share is the rest of the run: its verify passes
and the loop around them."""
from __future__ import annotations

import time

from specviz.drafters import StagedDrafter, make_drafter
from specviz.engine.plain import plain_steps
from specviz.engine.speculative import speculative_steps
from specviz.engine.loop import run_steps


class Timed:
    """A drafter (or the staged drafter's inner lookup) whose propose() calls are timed; everything else is
    the wrapped object's own."""

    def __init__(self, inner):
        self.inner = inner
        self.seconds = 0.0

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def propose(self, *args):
        t0 = time.perf_counter()
        out = self.inner.propose(*args)
        self.seconds += time.perf_counter() - t0
        return out


def one_run(models, ids: list[int], make, k: int, max_new: int) -> dict:
    """Decode once with the drafter make() builds; its stages' seconds and counts."""
    drafter = make()
    lookup = None
    if isinstance(drafter, StagedDrafter):
        lookup = drafter.lookup = Timed(drafter.lookup)
    timed = Timed(drafter)
    t0 = time.perf_counter()
    result = run_steps(speculative_steps(models.target, timed, models.tokenizer, ids, max_new, k))[1]
    total = time.perf_counter() - t0
    ngram = lookup.seconds if lookup is not None else 0.0
    c = result.counters
    return {"run": drafter.name, "tokens": result.token_ids, "total s": total, "n-gram lookup s": ngram,
            "draft model s": timed.seconds - ngram, "target verify s": total - timed.seconds,
            "draft forwards": c.draft_passes, "target passes": c.target_passes,
            "tokens per verify pass": c.mean_acceptance_length,
            "first-stage guesses": drafter.inner_proposed if lookup is not None else None,
            "first-stage accepted": drafter.inner_accepted if lookup is not None else None}


def staged_breakdown(models, ids: list[int], k: int = 6, max_new: int = 48) -> dict:
    """Plain greedy, the token draft alone and the staged drafter on the same prompt, after one warm-up run
    each; greedy, so all three must give the same tokens."""
    def plain():
        return run_steps(plain_steps(models.target, models.tokenizer, ids, max_new))[1]

    makes = [lambda: make_drafter("token", models), lambda: make_drafter("staged", models)]
    plain()
    for make in makes:  # warm-up: the first run of each pays one-off allocation costs
        one_run(models, ids, make, k, max_new)
    t0 = time.perf_counter()
    reference = plain().token_ids
    plain_s = time.perf_counter() - t0
    rows = [one_run(models, ids, make, k, max_new) for make in makes]
    for row in rows:
        row["identical"] = row.pop("tokens") == reference
        row["speedup vs plain greedy"] = plain_s / row["total s"]
    return {"k": k, "max_new_tokens": max_new, "plain s": plain_s, "rows": rows}


def staged_cell(name: str, value) -> str:
    """One value of staged_breakdown's rows as the page's table shows it."""
    if value is None:
        return "—"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if name.endswith(" s"):
        return f"{value:.3f} s"
    if name == "speedup vs plain greedy":
        return f"{value:.2f}×"
    if name == "tokens per verify pass":
        return f"{value:.2f}"
    return f"{int(value):,}"


def staged_verdict(rows: list[dict]) -> str:
    """What the measured rows say (token draft alone first, staged second): the same tokens, so any gain is in
    the draft model's seconds; said as measured, never assumed."""
    alone, staged = rows[0], rows[1]
    a, b = alone["draft model s"], staged["draft model s"]
    forwards = f"{alone['draft forwards']} → {staged['draft forwards']} draft forwards"
    fewer = " despite fewer draft forwards" if staged["draft forwards"] < alone["draft forwards"] else ""
    saved = (f"the draft model's time fell from {a:.2f} s to {b:.2f} s ({forwards})" if b < 0.9 * a else
             f"here the draft model's time rose from {a:.2f} s to {b:.2f} s{fewer} ({forwards}): checking the "
             "guesses cost more than it saved" if b > 1.1 * a else
             f"here the draft model's time is about the same ({a:.2f} s alone, {b:.2f} s staged; {forwards}): on "
             "this prompt the first stage's guesses saved the draft little")
    same = "The same tokens for both drafters (greedy), so only the draft's cost can differ: " \
        if alone["identical"] and staged["identical"] else "⚠ An output differs from plain greedy. "
    return same + saved + "."
