"""Chain vs tree at the same verify budget, and where trees stop paying on this machine.

A tree of N nodes is verified in ONE target forward over N + 1 positions (the root, then the nodes); a chain
of K drafts over K + 1. Time per emitted token is about

    (draft time + v(n)) / tau        v(n): one target forward over n positions on a cached context
                                     tau:  tokens emitted per verify pass (accepted + the target's own)

so a tree pays over a chain only when its extra tau beats its extra verify cost. On a GPU a forward over 64
positions costs about as much as one (decoding is memory bound: the weights are read once either way, the
arithmetic units idle), v is flat, and any extra tau is profit. On a 2-core CPU the forward is compute bound
past a few positions and v(n) grows about linearly, so a big tree costs what it gains or more.

The measuring functions run models; `comparison` and `break_even` are pure arithmetic on what they measured.
"""
from __future__ import annotations

import json
import pathlib
import re
import statistics
import time


from specviz import ROOT
from specviz.drafters import make_drafter
from specviz.labs.measure import timed_rounds
from specviz.labs.timing import time_forwards
from specviz.engine.plain import plain_steps
from specviz.engine.loop import run_steps
from specviz.engine.tree import tree_speculative_steps

V_SIZES = (1, 2, 4, 8, 16, 32, 64)
DOCS = ROOT / "docs"


def verify_cost_curve(model, ctx: list[int], sizes=V_SIZES, repeats: int = 5) -> dict[int, dict]:
    """v(n) in ms for each n: one target forward over n new positions (logits at each, as a verify pass needs)
    on a cache holding ctx, timed by the one timer (labs/timing.py). Median and the min-max spread of each."""
    return {n: t.as_dict() for n, t in time_forwards(model, ctx, sizes, repeats).items()}


def interpolate(curve: dict[int, dict], n: float) -> float:
    """v(n) in ms between the measured sizes (linear), and past the largest along the last segment's slope."""
    xs = sorted(curve)
    ys = [curve[x]["median"] for x in xs]
    if n <= xs[0]:
        return ys[0]
    for (x0, y0), (x1, y1) in zip(zip(xs, ys), zip(xs[1:], ys[1:])):
        if n <= x1 or x1 == xs[-1]:
            return y0 + (y1 - y0) * (n - x0) / (x1 - x0)
    return ys[-1]


def chain_vs_tree(target, tokenizer, ids: list[int], runs: dict, max_new: int, rounds: int = 2) -> list[dict]:
    """runs: name -> (drafter factory, budget, depth); greedy, the same prompt, each timed by timed_rounds
    (interleaved, after one short warm-up) beside plain greedy. One row per run with what it measured."""
    def spec(make, budget, depth, n):
        return lambda: run_steps(tree_speculative_steps(target, make(), tokenizer, ids, n, budget=budget, depth=depth))

    def plain(n):
        return lambda: run_steps(plain_steps(target, tokenizer, ids, n))

    timed_rounds({"plain greedy": plain(4)} | {k: spec(*v, 4) for k, v in runs.items()}, 1)  # warm-up
    seconds, results = timed_rounds({"plain greedy": plain(max_new)} | {k: spec(*v, max_new) for k, v in runs.items()},
                                    rounds)
    reference = results["plain greedy"][1].token_ids
    rows = []
    for name, (events, result) in results.items():
        c = result.counters
        verify = [e.verify_positions for e in events] if name in runs else [1] * len(events)
        rows.append({"name": name, "tokens": len(result.token_ids), "target passes": c.target_passes,
                     "verify passes": c.verify_passes if name in runs else len(events),
                     "positions per verify pass": statistics.mean(verify) if verify else 0.0,
                     "seconds": statistics.median(seconds[name]),
                     "seconds range": (min(seconds[name]), max(seconds[name])),
                     "identical to greedy": result.token_ids == reference})
    return rows


def measure_chain_vs_tree(models, ids: list[int], budget: int, depth: int, max_new: int, choices=None) -> dict:
    """The Tree page's "Measure chain vs tree": v(n) for n = 1 .. 64 on this context, then the feature draft's chain
    at K = depth (the tree's depth) and K = budget (the tree's verify cost), the EAGLE-2 tree of `budget` nodes (and
    the Medusa heads' when shipped), timed interleaved with plain greedy; and how long it all took."""
    start = time.perf_counter()
    curve = verify_cost_curve(models.target, list(ids))
    runs = {f"chain K={depth}": (lambda: make_drafter("feature", models), budget, depth),
            f"chain K={budget}": (lambda: make_drafter("feature", models), budget, budget),
            f"EAGLE-2 tree N={budget}": (lambda: make_drafter("eagle2", models), budget, depth)}
    if models.medusa is not None:
        runs[f"Medusa heads N={budget}"] = (lambda: make_drafter("medusa", models, choices=choices), budget, depth)
    rows = chain_vs_tree(models.target, models.tokenizer, list(ids), runs, max_new)
    return {"v": curve, "compare": rows, "seconds": time.perf_counter() - start, "budget": budget, "depth": depth,
            "max_new": max_new}


def comparison(rows: list[dict], curve: dict[int, dict]) -> list[dict]:
    """Each row with tau (tokens per verify pass), the measured v at its mean verify width, the verify time per
    emitted token here (v(n) / tau) and on a GPU-like machine where v is flat (v(1) / tau), and tokens/s."""
    v1 = curve[min(curve)]["median"]
    out = []
    for r in rows:
        tau = r["tokens"] / r["verify passes"] if r["verify passes"] else 0.0
        v = interpolate(curve, r["positions per verify pass"])
        out.append(r | {"tokens per verify pass": tau, "v(n) ms": v,
                        "verify ms per token": v / tau if tau else 0.0,
                        "flat-v verify ms per token": v1 / tau if tau else 0.0,
                        "tokens per second": r["tokens"] / r["seconds"] if r["seconds"] else 0.0})
    return out


def break_even(curve: dict[int, dict], tau_chain: float, n_chain: float, budgets) -> list[dict]:
    """For a tree of N nodes (N + 1 verified positions): the tau it needs to match the chain's verify time per
    token (tau_chain at n_chain positions), here (tau_chain * v(N + 1) / v(n_chain)) and where v is flat
    (tau_chain itself). Draft time left out: it is the same order for both and small beside v on this CPU."""
    base = interpolate(curve, n_chain)
    return [{"budget": n, "needed tau here": tau_chain * interpolate(curve, n + 1) / base,
             "needed tau, flat v": tau_chain} for n in budgets]


def linear_from(curve: dict[int, dict], ratio: float = 1.5) -> int | None:
    """The smallest measured n from which v grows near-linearly: v(2n) / v(n) >= ratio for it and every larger
    pair (a flat, memory-bound forward gives ~1; a compute-bound one ~2). None if v never does."""
    xs = sorted(curve)
    pairs = [(a, curve[b]["median"] / curve[a]["median"]) for a, b in zip(xs, xs[1:]) if b == 2 * a]
    start = None
    for a, r in pairs:
        if r >= ratio:
            start = a if start is None else start
        else:
            start = None
    return start


def finding(rows: list[dict], curve: dict[int, dict]) -> dict:
    """The numbers the page's verdict is written from: v(64) / v(1) (or the largest size measured), where v
    starts growing linearly, the fastest run by wall clock, and the tree against each chain (tau ratio, verify
    time per token ratio here and with flat v, wall-clock ratio). rows: comparison's, the tree's name starting
    with "EAGLE-2"."""
    xs = sorted(curve)
    tree = next((r for r in rows if r["name"].startswith("EAGLE-2")), None)
    vs = {}
    for r in rows:
        if tree is not None and r is not tree and r["name"] != "plain greedy" and r["tokens per verify pass"]:
            vs[r["name"]] = {"tau ratio": tree["tokens per verify pass"] / r["tokens per verify pass"],
                             "verify cost ratio here": tree["verify ms per token"] / r["verify ms per token"],
                             "verify cost ratio flat v": tree["flat-v verify ms per token"]
                                                         / r["flat-v verify ms per token"],
                             "wall clock ratio": tree["seconds"] / r["seconds"],
                             "tree faster": tree["seconds"] < r["seconds"]}
    return {"largest n": xs[-1], "v largest / v1": curve[xs[-1]]["median"] / curve[xs[0]]["median"],
            "linear from": linear_from(curve), "fastest": min(rows, key=lambda r: r["seconds"])["name"],
            "tree vs": vs}


def tree_faster(f: dict, chain: str) -> bool | None:
    """From finding(): did the EAGLE-2 tree beat `chain` by wall clock in the run just measured (None: no such row)."""
    vs = f["tree vs"].get(chain)
    return None if vs is None else vs["tree faster"]


def tree_benchmark(docs: pathlib.Path = DOCS) -> dict | None:
    """The newest committed benchmark (docs/bench-*.json, by its date then its file name) with an EAGLE-2 tree
    row and a feature-draft chain row: their settings, tokens per verify pass and speed against plain greedy,
    and which ran faster. None when no benchmark has both (the page then quotes none)."""
    found = []
    for path in docs.glob("bench-*.json"):
        try:
            bench = json.loads(path.read_text())
            rows = bench["rows"]
        except (OSError, ValueError, KeyError, TypeError):
            continue
        tree = next((k for k in rows if re.fullmatch(r"spec eagle2 N=\d+ D=\d+", k)), None)
        chains = sorted(k for k in rows if re.fullmatch(r"spec feature K=\d+", k))
        chain = "spec feature K=4" if "spec feature K=4" in chains else (chains[0] if chains else None)
        if tree and chain:
            found.append((str(bench.get("date", "")), path.name, bench, tree, chain))
    if not found:
        return None
    date, name, bench, tree, chain = max(found, key=lambda x: (x[0], x[1]))
    n, d = map(int, re.fullmatch(r"spec eagle2 N=(\d+) D=(\d+)", tree).groups())
    t, c = bench["rows"][tree], bench["rows"][chain]
    return {"file": name, "date": date, "prompts": len(bench.get("prompts", [])),
            "max_new_tokens": bench.get("max_new_tokens"),
            "tree": {"budget": n, "depth": d, "tau": t["mean_acceptance_length"], "speedup": t["vs_ours_greedy"]},
            "chain": {"k": int(chain.rsplit("=", 1)[1]), "tau": c["mean_acceptance_length"],
                      "speedup": c["vs_ours_greedy"]},
            "faster": "tree" if t["vs_ours_greedy"] > c["vs_ours_greedy"] else "chain"}
