"""Live measurements for the labs: real runs timed side by side, and the forward costs behind c and v."""
from __future__ import annotations

import statistics
import time


from specviz.engine.plain import plain_steps
from specviz.sampling import SamplingConfig
from specviz.engine.speculative import speculative_steps
from specviz.engine.loop import run_steps
from specviz.labs.timing import draft_step_ms, forward_ms, time_forwards
from specviz.theory import speculation_pays, speedup_breakdown


def verify_cost_profile(model, ctx: list[int], ks=range(1, 17), repeats: int = 5) -> dict:
    """v(K) = a (K+1)-token forward / a 1-token forward, for each K, from the one timer (labs/timing.py: medians,
    sizes interleaved), with its spread (fastest over slowest to slowest over fastest): a wide spread says the
    figures are noisy. Returns {"t1_ms", "t1_range", "v": {K: v}, "v_range": {K: (lo, hi)}, "noisy"}."""
    t = time_forwards(model, ctx, [1] + [k + 1 for k in ks], repeats)
    t1 = t[1]
    v = {k: t[k + 1].median / t1.median for k in ks}
    rng = {k: (t[k + 1].lo / t1.hi, t[k + 1].hi / t1.lo) for k in ks}
    spread = max((hi - lo) / v[k] for k, (lo, hi) in rng.items()) if rng else 0.0
    return {"t1_ms": t1.median, "t1_range": (t1.lo, t1.hi), "v": v, "v_range": rng,
            "noisy": spread > 0.3 or t1.hi > 1.3 * t1.lo}


def timed_rounds(runs: dict, rounds: int, progress=lambda f, m: None, span=(0.0, 1.0)) -> tuple[dict, dict]:
    """runs: key -> zero-argument function returning a Result. Each is timed in `rounds` interleaved rounds
    (A B C ... A B C ...). A run of ~1 s moves by ~10 % with whatever else the machine does; interleaving
    spreads that over all of them alike instead of landing on whichever ran during the disturbance.
    Returns (key -> seconds per round, key -> the last round's result). The one timing loop of the labs,
    the benchmark and the drafts' evaluation."""
    seconds = {key: [] for key in runs}
    results = {}
    lo, hi = span
    for r in range(rounds):
        for i, (key, run) in enumerate(runs.items()):
            progress(lo + (hi - lo) * (r * len(runs) + i) / (rounds * len(runs)), f"round {r + 1}/{rounds}: {key}…")
            t0 = time.perf_counter()
            results[key] = run()
            seconds[key].append(time.perf_counter() - t0)
    return seconds, results


def plain_vs_drafters(target, tokenizer, ids, drafters: dict, k: int, max_new: int, rounds: int,
                      progress=lambda f, m: None, span=(0.0, 1.0)) -> tuple[dict, dict]:
    """Plain greedy (named "plain greedy") and speculative greedy with each drafter (name -> drafter), after
    one short untimed warm-up of each: the first run in a process pays one-time costs (oneDNN primitives
    for each new shape, first calls), which would make whatever is timed first look slower than it is."""
    def plain(n):
        return lambda: run_steps(plain_steps(target, tokenizer, ids, n))[1]

    def spec(drafter, n):
        return lambda: run_steps(speculative_steps(target, drafter, tokenizer, ids, n, k))[1]

    timed_rounds({"plain greedy": plain(8)} | {name: spec(d, 8) for name, d in drafters.items()}, 1)
    return timed_rounds({"plain greedy": plain(max_new)} | {name: spec(d, max_new) for name, d in drafters.items()},
                        rounds, progress, span)


def speedup_summary(plain_s: list[float], spec_s: list[float]) -> dict:
    """Median seconds, their ratio, and the spread: the speedup each round gave against its own plain run."""
    per_round = [p / x for p, x in zip(plain_s, spec_s)]
    return {"plain_s": statistics.median(plain_s), "spec_s": statistics.median(spec_s),
            "speedup": statistics.median(plain_s) / statistics.median(spec_s),
            "speedup_range": (min(per_round), max(per_round)), "rounds": len(per_round)}


def speculative_vs_plain(target, drafter, tokenizer, ids, max_new: int, k: int, progress=lambda f, m: None,
                         draft_model=None, rounds: int = 3) -> dict:
    """Plain greedy and speculative greedy on the same prompt, interleaved over `rounds`; measured a, c, v
    and the real speedup (medians, with the per-round range)."""
    progress(0.0, "warming up…")
    seconds, results = plain_vs_drafters(target, tokenizer, ids, {"speculative": drafter}, k, max_new, rounds,
                                         progress, span=(0.05, 0.8))
    plain, spec = results["plain greedy"], results["speculative"]
    progress(0.8, "measuring forward costs…")
    ctx = list(ids) + plain.token_ids[:16]
    t1 = forward_ms(target, ctx, 1, repeats=7)
    tv = forward_ms(target, ctx, k + 1, repeats=7)
    d1 = draft_step_ms(draft_model, target, ctx, repeats=7) if draft_model is not None else 0.0
    progress(1.0, "done")
    c = spec.counters
    summary = speedup_summary(seconds["plain greedy"], seconds["speculative"])
    cost_c, cost_v = d1 / t1 if t1 else 0.0, tv / t1 if t1 else 1.0
    return {
        "identical": spec.token_ids == plain.token_ids, "tokens": len(spec.token_ids), **summary,
        # where the speedup goes, every factor from this run (issue 38)
        "breakdown": speedup_breakdown(c.mean_acceptance_length, summary["speedup"], k, cost_c, cost_v)
        if c.mean_acceptance_length else [],
        "a": c.acceptance_rate, "mean_acceptance_length": c.mean_acceptance_length,
        "accepted_per_pass": list(c.accepted_per_pass), "per_position": c.per_position(),
        "reached": list(c.reached_at), "target_ms": t1, "verify_ms": tv, "draft_ms": d1,
        "c": cost_c, "v": cost_v, "k": k, "target_passes": c.target_passes,
    }


C_COLUMN = "c (draft step ÷ target step)"


def compare_drafters(target, tokenizer, ids, drafters: dict, k: int, max_new: int, rounds: int = 3,
                     progress=lambda f, m: None, step_models: dict | None = None) -> list[dict]:
    """drafters: name -> zero-argument factory. Plain greedy is the baseline; timed by `timed_rounds`, and
    reported as medians with the per-round range. step_models: name -> the model one draft step of that drafter
    runs; its c (one 1-token forward over the target's, timed after the runs) joins its row."""
    progress(0.0, "warming up…")
    drafters = {name: make() for name, make in drafters.items()}
    seconds, results = plain_vs_drafters(target, tokenizer, ids, drafters, k, max_new, rounds, progress,
                                         span=(0.0, 0.9 if step_models else 1.0))
    steps = {}
    if step_models:
        progress(0.9, "timing one step of each draft model…")
        ctx = list(ids) + results["plain greedy"].token_ids[:16]
        steps = {"target": forward_ms(target, ctx, 1, repeats=7),
                 **{name: draft_step_ms(m, target, ctx, repeats=7) for name, m in step_models.items()}}
    rows = []
    for name in drafters:
        r, c = results[name], results[name].counters
        sp = speedup_summary(seconds["plain greedy"], seconds[name])
        rows.append({"drafter": name, "acceptance rate": c.acceptance_rate,
                     "tokens per verify pass": c.mean_acceptance_length,
                     "speedup vs plain greedy": sp["speedup"], "speedup range": sp["speedup_range"],
                     "seconds": sp["spec_s"], "plain seconds": sp["plain_s"], "rounds": rounds,
                     "target passes": c.target_passes,
                     "identical to greedy": r.token_ids == results["plain greedy"].token_ids}
                    | ({C_COLUMN: steps[name] / steps["target"], "draft step ms": steps[name],
                        "target step ms": steps["target"]} if name in steps else {}))
    progress(1.0, "done")
    return rows


def acceptance_is_not_speedup(rows: list[dict], names) -> str | None:
    """Issue 48.5's lesson worded from this run, for the drafters in `names` (the target quantized): they agree
    with the target nearly always, but some K beats plain decoding only if a > c (Leviathan et al., Corollary 3.9),
    and c is what the kernel and the machine make a draft step cost. None without their rows."""
    quantized = [r for r in rows if r["drafter"] in names and r.get(C_COLUMN) is not None]
    if not quantized:
        return None
    said = "; ".join(
        f"{r['drafter']}: a = {r['acceptance rate']:.0%}, c = {r[C_COLUMN]:.2f} ({r['draft step ms']:.0f} ms a step "
        f"against the target's {r['target step ms']:.0f} ms), a > c "
        f"{'holds' if speculation_pays(r['acceptance rate'], r[C_COLUMN]) else 'fails'}: "
        f"{r['speedup vs plain greedy']:.2f}× plain greedy" for r in quantized)
    pays = [r for r in quantized if speculation_pays(r["acceptance rate"], r[C_COLUMN])]
    verdict = ("A draft must be cheap, not only right: with c ≥ a no K pays, however often the draft is right "
               "(K = 1 already loses: (1 + a) / (1 + c) ≤ 1)." if not pays else
               "Here each one is cheap enough: on this CPU its integer kernels beat the fp32 target's step. On "
               "another CPU the same drafts can lose: c belongs to the kernel and the machine." if len(pays) == len(
                   quantized) else
               "The same target at nearly the same acceptance, opposite outcomes: c decided, and c belongs to the "
               "kernel and the machine, not to the bit width.")
    return (f"**Acceptance is not speedup.** The target quantized agrees with the target nearly always, but some K "
            f"beats plain decoding only if a > c (Leviathan et al., Corollary 3.9). In this run — {said}. {verdict}")


# Seconds a first_positions sample costs per position on a 2-core CPU with the embedded target and token draft
# (a learner's walk, 2026-11-29: 400 samples at 3 positions took 276 s), for the page to say before it starts.
SECONDS_PER_SAMPLE_POSITION = 276 / (400 * 3)


def first_positions_minutes(n: int, positions: int) -> float:
    return n * positions * SECONDS_PER_SAMPLE_POSITION / 60


def first_positions(target, drafter_factory, tokenizer, ids, n: int, cfg: SamplingConfig, positions: int = 3,
                    k: int = 2, progress=lambda f, m: None) -> tuple[list[tuple[int, ...]], list[tuple[int, ...]]]:
    """n samples of the first `positions` tokens from speculative sampling and n from plain sampling
    (independent seeds). Position j's tokens from the two lists can be tested against each other: the marginal
    of every position must match, not only the first token's (a rule wrong after a rejection or a bonus
    token would show up from the second position on)."""
    spec, plain = [], []
    for i in range(n):
        c = SamplingConfig(cfg.temperature, cfg.top_k, cfg.top_p, cfg.seed + i)
        out = run_steps(speculative_steps(target, drafter_factory(), tokenizer, ids, positions, k, c))[1].token_ids
        spec.append(tuple(out[:positions]))
        c2 = SamplingConfig(cfg.temperature, cfg.top_k, cfg.top_p, cfg.seed + 1_000_000 + i)
        plain.append(tuple(run_steps(plain_steps(target, tokenizer, ids, positions, c2))[1].token_ids[:positions]))
        if i % 10 == 0:
            progress(i / n, f"{i}/{n} samples")
    progress(1.0, "done")
    return spec, plain


def per_position_tests(spec: list[tuple[int, ...]], plain: list[tuple[int, ...]], positions: int) -> list[dict]:
    """chi_square of the two samplers' tokens at each position (samples that ended earlier are left out there),
    each with the expected counts under "both samplers are the same" (the pooled count split by sample size)."""
    tests = []
    for j in range(positions):
        a = [s[j] for s in spec if len(s) > j]
        b = [s[j] for s in plain if len(s) > j]
        t = chi_square(a, b)
        na, nb = sum(t["table"][0]), sum(t["table"][1])
        t["expected"] = [[(x + y) * na / (na + nb) for x, y in zip(*t["table"])],
                         [(x + y) * nb / (na + nb) for x, y in zip(*t["table"])]] if na + nb else [[], []]
        t["position"] = j
        tests.append(t)
    return tests


def chi_square(a: list[int], b: list[int], min_count: int = 10) -> dict:
    """Chi-square test of homogeneity between two samples of token ids; rare tokens pooled as 'other'."""
    from scipy.stats import chi2_contingency

    cats = sorted(set(a) | set(b), key=lambda t: -(a.count(t) + b.count(t)))
    keep = [t for t in cats if a.count(t) + b.count(t) >= min_count]
    rows = [[a.count(t) for t in keep], [b.count(t) for t in keep]]
    other = [len(a) - sum(rows[0]), len(b) - sum(rows[1])]
    if sum(other):
        rows = [r + [o] for r, o in zip(rows, other)]
    if len(rows[0]) < 2:
        return {"statistic": 0.0, "pvalue": 1.0, "categories": keep, "table": rows, "dof": 0}
    stat, pvalue, dof, _ = chi2_contingency(rows)
    return {"statistic": float(stat), "pvalue": float(pvalue), "categories": keep, "table": rows, "dof": int(dof)}
