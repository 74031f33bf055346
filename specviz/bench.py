"""python -m specviz.bench: our decoding vs transformers and vs the theoretical estimate, side by side.

Every configuration runs on the same prompts, interleaved (A B C ... A B C ...) after a warm-up, and
each figure is the median over repeats. Every greedy speculative output is checked token-identical
to plain greedy; the run fails loudly otherwise. Ratios are measured in this one run.
The Leviathan et al. formula is an estimate (it assumes every draft position is accepted with the same
probability a, independently), not a bound: measured runs can land above it as well as below.
"""
from __future__ import annotations

import argparse
import json
import os
import pathlib
import resource
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass

import torch

from specviz.drafters import QUANTIZED, make_drafter, quantized_model
from specviz.errors import SpecVizError
from specviz.engine.lookahead import lookahead_steps
from specviz.engine.plain import plain_steps
from specviz.labs.measure import timed_rounds
from specviz.labs.timing import draft_step_ms, forward_ms, time_forwards
from specviz.labs.tree_sizing import size
from specviz.loading import load_models
from specviz.packed import PackedLinear, choice as packing_choice
from specviz.prompting import prompt_ids
from specviz.sampling import SamplingConfig
from specviz.engine.speculative import speculative_steps
from specviz.engine.loop import run_steps
from specviz.theory import (DONT_SPECULATE, best_k_from_positions, expected_tokens, speedup_breakdown,
                            walltime_improvement)
from specviz.engine.tree import tree_speculative_steps
from specviz.trace import Counters


PROMPTS = pathlib.Path(__file__).with_name("bench_prompts.json")


def load_prompts():
    return json.loads(PROMPTS.read_text())["prompts"]


@dataclass(frozen=True)
class Config:
    """One row of the benchmark: what runs, described by fields rather than by its name."""
    name: str
    method: str  # "plain" (ours), "speculative" (ours), "lookahead" (ours, no drafter) or "hf" (transformers' generate)
    drafter: str | None = None  # "ngram" | "token" | "feature" | "suffix" | "staged" | a QUANTIZED kind ("int8", ...)
    k: int | None = None  # None with dynamic K
    dynamic_k: bool = False
    sampling: bool = False  # T = 1 instead of greedy
    hf: str | None = None  # transformers' peer of a drafter: "assisted" | "prompt-lookup"
    unpacked: bool = False  # the same models with plain nn.Linear layers
    tree: str | None = None  # "eagle2" / "medusa": a token tree verified in one pass (specviz/engine/tree.py)
    tree_budget: int = 16  # nodes per tree
    tree_depth: int = 5  # deepest drafted position
    threshold: float | None = None  # a confidence stop (llama.cpp --draft-p-min; transformers' threshold), K <= 16
    keep_crossing: bool = False  # the confidence stop keeps the token that fell under the threshold (transformers)

    lookahead: tuple[int, int, int] = (5, 4, 5)  # window W, n-gram size N, candidates G (method "lookahead")
    acceptance: str = "token"  # a sampling row's rule: token-wise rejection sampling or block verification (issue 48)
    # record every cycle's display data as the pages do (issue 48.3); the benchmark's rows record only the counters
    details: bool = False

    @property
    def greedy_speculative(self) -> bool:
        """Must reproduce plain greedy token for token."""
        return self.method in ("speculative", "lookahead") and not self.sampling

    @property
    def peer(self) -> str | None:
        """The transformers row that runs the same drafter at the same K, if any."""
        hf = {"token": "hf assisted", "ngram": "hf prompt-lookup"}.get(self.drafter)
        return f"{hf} K={self.k}" if hf and self.k and self.greedy_speculative and not self.unpacked else None


def configs(models, ks, dynamic_k: bool, hf_peers: bool, sampling: bool, unpacked: bool,
            trees: bool = True, quantized: bool = False) -> list[Config]:
    drafters = ["ngram"] + (["token"] if models.draft is not None else []) + \
        (["feature"] if models.feature_draft is not None else [])  # transformers cannot run the feature draft
    out = [Config("hf greedy", "hf"), Config("ours greedy", "plain")]
    for d in drafters:
        for k in ks:
            out.append(Config(f"spec {d} K={k}", "speculative", d, k))
            if hf_peers and d in ("token", "ngram"):
                hf = "assisted" if d == "token" else "prompt-lookup"
                out.append(Config(f"hf {hf} K={k}", "hf", d, k, hf=hf))
        if dynamic_k:
            out.append(Config(f"spec {d} dynamic", "speculative", d, None, dynamic_k=True))
            if d == "token":  # the two confidence stops of issue 38.3, at their systems' defaults
                out.append(Config("spec token p-min 0.75", "speculative", d, None, threshold=0.75))
                out.append(Config("spec token threshold 0.4", "speculative", d, None, threshold=0.4,
                                  keep_crossing=True))
        if trees and d == "feature":  # the EAGLE-2 tree from the same feature draft (greedy: token identity checked)
            out.append(Config("spec eagle2 N=16 D=6", "speculative", d, None, tree="eagle2", tree_depth=6))
    if trees and getattr(models, "medusa", None) is not None:
        out.append(Config("spec medusa N=16 D=4", "speculative", "medusa", None, tree="medusa", tree_depth=4))
        # the whole shipped list: more tokens per target pass than the token chain, more verify cost per pass
        out.append(Config("spec medusa N=32 D=4", "speculative", "medusa", None, tree="medusa", tree_depth=4,
                          tree_budget=32))
    # the best chain recording every cycle's display data as a page does: what recording costs, in the same run
    best_k = 2 if 2 in ks else ks[0]
    out.append(Config(f"spec {drafters[-1]} K={best_k} recorded", "speculative", drafters[-1], best_k, details=True))
    # beyond one draft model: suffix decoding and staged speculation at K = 4, lookahead with no drafter at all
    out.append(Config("spec suffix K=4", "speculative", "suffix", 4))
    if models.draft is not None:
        out.append(Config("spec staged K=4", "speculative", "staged", 4))
    out.append(Config("lookahead W=5 N=4 G=5", "lookahead"))
    if quantized:  # issue 48.5: the target itself with int8 / int4 weights (fp32 or bf16 activations): a near 1, c?
        out += [Config(f"spec {q} K=4", "speculative", q, 4) for q in QUANTIZED]
    if unpacked:  # what packing buys: the same model with plain nn.Linear layers
        out.append(Config("unpacked greedy", "plain", unpacked=True))
        if models.draft is not None:
            out.append(Config("unpacked spec token K=4", "speculative", "token", 4, unpacked=True))
    if sampling:
        out.append(Config("ours sample T=1", "plain", sampling=True))
        out.append(Config("spec sample T=1 K=4", "speculative", drafters[-1], 4, sampling=True))  # the best drafter
        # the same drafter, seeds and K, the drafts judged jointly: block verification's gain over token-wise
        out.append(Config("spec sample T=1 K=4 block", "speculative", drafters[-1], 4, sampling=True,
                          acceptance="block"))
    return out


def block_twin(cfg: Config) -> str | None:
    """The token-wise row a block-verification row is measured against (same drafter, K and seeds)."""
    return cfg.name.removesuffix(" block") if cfg.acceptance == "block" else None


def runner(cfg: Config, models, seeds: int = 1):
    """cfg -> function(ids, max_new) returning (token_ids, counters or None). A sampling row decodes each prompt once
    per seed 0..seeds-1 (the same seeds for every sampling row, so token-wise and block verification start from the
    same draws) and returns the runs' tokens one after the other and their counters added up."""
    if not cfg.sampling:
        return runner_with(cfg, models, SamplingConfig())
    runs = [runner_with(cfg, models, SamplingConfig(temperature=1.0, seed=seed)) for seed in range(seeds)]

    def every_seed(ids, n):
        outs = [f(ids, n) for f in runs]
        counters = outs[0][1] if outs[0][1] is None else sum((c for _, c in outs[1:]), outs[0][1])
        return [t for tokens, _ in outs for t in tokens], counters
    return every_seed


def runner_with(cfg: Config, models, sampling: SamplingConfig):
    """One configuration at one sampling setting (greedy, or T = 1 with its seed)."""
    target, tok = models.target, models.tokenizer
    if cfg.method == "hf":
        kw = {}
        if cfg.hf == "assisted":  # a constant K and no confidence cut-off: the same work as ours
            kw = dict(assistant_model=models.draft, num_assistant_tokens=cfg.k,
                      num_assistant_tokens_schedule="constant", assistant_confidence_threshold=0.0)
        elif cfg.hf == "prompt-lookup":
            kw = dict(prompt_lookup_num_tokens=cfg.k)

        def hf(ids, n):
            o = target.generate(torch.tensor([ids], device=target.device), max_new_tokens=n, do_sample=False,
                                pad_token_id=tok.eos_token_id, **kw)
            return o[0, len(ids):].tolist(), None
        return hf
    if cfg.method == "plain":
        return lambda ids, n: counted(plain_steps(target, tok, ids, n, sampling, details=cfg.details))
    if cfg.method == "lookahead":
        return lambda ids, n: counted(lookahead_steps(target, tok, ids, n, *cfg.lookahead))
    if cfg.tree:  # eagle2, or medusa with the shipped heads' default medusa_choices cut to the budget
        return lambda ids, n: counted(tree_speculative_steps(target, make_drafter(cfg.tree, models), tok, ids, n,
                                                             cfg.tree_budget, cfg.tree_depth, cfg=sampling,
                                                             details=cfg.details))
    if cfg.threshold is not None:  # drafts until the draft's top probability falls under the threshold, at most 16
        return lambda ids, n: counted(speculative_steps(target, make_drafter(
            "confidence", models, threshold=cfg.threshold, keep_crossing=cfg.keep_crossing), tok, ids, n, 16, sampling,
            details=cfg.details))
    k = cfg.k or 4  # dynamic K starts at 4
    block = cfg.acceptance == "block" and cfg.sampling  # its counters read the cycles' block odds: recorded
    count = counted_block if block else counted
    return lambda ids, n: count(speculative_steps(target, make_drafter(cfg.drafter, models), tok, ids, n, k, sampling,
                                                  cfg.dynamic_k, k_max=16, acceptance=cfg.acceptance,
                                                  details=cfg.details or block))


def select(cfgs: list[Config], only) -> list[Config]:
    """The rows whose name contains one of `only` (all rows when it is empty), and always the greedy rows every
    ratio is taken against, so a focused run still compares side by side in one run."""
    chosen = [c for c in cfgs if not only or any(o in c.name for o in only)]
    refs = {"hf greedy", "ours greedy"} | ({"unpacked greedy"} if any(c.unpacked for c in chosen) else set())
    return [c for c in cfgs if c in chosen or c.name in refs]


def counted(steps):
    result = run_steps(steps)[1]
    return result.token_ids, result.counters


@dataclass
class BlockCounters(Counters):
    """A block-verification row's counters, and over its cycles the drafts each rule keeps in expectation given that
    cycle's drafts (Cycle.kept_block, Cycle.kept_token, summed): the same drafts judged both ways, so the difference
    is block's gain without the noise of the draws that the realized counts carry (and of two runs that part)."""
    kept_block: float = 0.0
    kept_token: float = 0.0

    def __add__(self, other: Counters) -> "BlockCounters":
        both = Counters.__add__(self, other)
        return BlockCounters(**vars(both), kept_block=self.kept_block + getattr(other, "kept_block", 0.0),
                             kept_token=self.kept_token + getattr(other, "kept_token", 0.0))


def counted_block(steps):
    events, result = run_steps(steps)
    return result.token_ids, BlockCounters(**vars(result.counters), kept_block=sum(sum(c.kept_block) for c in events),
                                           kept_token=sum(sum(c.kept_token) for c in events))


def run(models, plain, cfgs: list[Config], prompts, max_new: int, repeats: int, log=print, seeds: int = 1):
    """Times every configuration on every prompt in interleaved rounds (measure.timed_rounds), after a short
    warm-up of each. Returns (seconds, outputs) keyed by (config name, prompt name)."""
    run_of = {c.name: runner(c, plain if c.unpacked else models, seeds) for c in cfgs}
    ids = {p["name"]: prompt_ids(models.tokenizer, p["text"]) for p in prompts}
    warm = ids[prompts[0]["name"]]
    timed_rounds({name: (lambda f=f: f(warm, 8)) for name, f in run_of.items()}, 1)
    runs = {(c.name, p): (lambda f=run_of[c.name], x=x: f(x, max_new)) for p, x in ids.items() for c in cfgs}
    shown = -1

    def progress(fraction, message):  # a line per tenth of the run
        nonlocal shown
        if int(10 * fraction) > shown:
            shown = int(10 * fraction)
            log(f"  {fraction:.0%}: {message}")
    seconds, outputs = timed_rounds(runs, repeats, progress)
    return seconds, outputs, ids


def mismatches(cfgs: list[Config], outputs: dict, prompts) -> list:
    """Every greedy configuration must reproduce plain greedy (the unpacked ones their unpacked greedy)."""
    bad = []
    for p in (p["name"] for p in prompts):
        ref, ref_unpacked = outputs[("ours greedy", p)][0], outputs.get(("unpacked greedy", p), (None,))[0]
        for c in cfgs:
            want = ref_unpacked if c.unpacked else ref
            if (c.greedy_speculative or c.name == "hf greedy") and outputs[(c.name, p)][0] != want:
                bad.append((c.name, p))
    return bad


def forward_costs(models, plain, ctx, ks, quantized: bool = False) -> tuple[dict, dict | None]:
    """A decode step, a verify pass of K + 1 and each draft's step (median ms); c = draft step / target step.
    quantized: also a step of the target quantized, each QUANTIZED kind's {kind}_1 and c_{kind}."""
    # the step and every verify size interleaved round by round: v(n) = verify / step is a ratio of two timings
    # taken under the same conditions (timed one size after the other, run 27c read a step at 40.6 ms and a
    # 3-token pass at 38.5: v(3) = 0.95, where 27b, minutes before, read 1.28)
    sizes = [1] + [k + 1 for k in sorted(set(ks) | {4})]
    target = {n: t.median for n, t in time_forwards(models.target, ctx, sizes, repeats=15).items()}
    t1 = target[1]
    d1 = draft_step_ms(models.draft, models.target, ctx) if models.draft is not None else None
    f1 = draft_step_ms(models.feature_draft, models.target, ctx) if models.feature_draft is not None else None
    out = {"target_1": t1,
           "target_verify": {str(n): target[n] for n in sizes[1:]},
           "draft_1": d1, "c": d1 / t1 if d1 else 0.0, "feature_draft_1": f1, "c_feature": f1 / t1 if f1 else 0.0,
           # the same steps timed back to back (their weights stay in the CPU's caches): what c was before
           # 2026-11-26, kept to show how much the loop's cold caches add
           "draft_1_back_to_back": forward_ms(models.draft, ctx, 1) if models.draft is not None else None}
    for q in QUANTIZED if quantized else ():
        out[f"{q}_1"] = draft_step_ms(quantized_model(models.target, q), models.target, ctx)
        out[f"c_{q}"] = out[f"{q}_1"] / t1
    unpacked = None
    if plain is not None:
        unpacked = {"target_1": forward_ms(plain.target, ctx, 1), "target_5": forward_ms(plain.target, ctx, 5),
                    "draft_1": forward_ms(plain.draft, ctx, 1) if plain.draft is not None else None}
    return out, unpacked


def aggregate(cfgs: list[Config], seconds: dict, outputs: dict, prompts, fm: dict) -> dict:
    """One row per configuration: tokens/s over all prompts (sum of per-prompt medians), acceptance and the
    theory's estimates for speculative rows, ratios against our greedy, transformers' greedy and the peer."""
    rows = {}
    names = [p["name"] for p in prompts]
    for c in cfgs:
        tokens = sum(len(outputs[(c.name, p)][0]) for p in names)
        secs = sum(statistics.median(seconds[(c.name, p)]) for p in names)
        row = {"tokens": tokens, "seconds": secs, "tokens_per_s": tokens / secs}
        if c.method in ("speculative", "lookahead"):
            total = sum((outputs[(c.name, p)][1] for p in names[1:]), outputs[(c.name, names[0])][1])
            a = total.acceptance_rate
            row |= {"acceptance_rate": a, "mean_acceptance_length": total.mean_acceptance_length,
                    "per_position": [None if x is None else round(x, 3) for x in total.per_position()]}
            if c.k and not c.sampling and not c.unpacked:
                draft_c = {"token": fm["c"], "feature": fm["c_feature"],
                           **{q: fm.get(f"c_{q}", 0.0) for q in QUANTIZED}}.get(c.drafter, 0.0)
                v = fm["target_verify"][str(c.k + 1)] / fm["target_1"]
                row |= {"k": c.k, "c": draft_c, "v": v, "tau": expected_tokens(a, c.k),
                        "leviathan_estimate": walltime_improvement(a, c.k, draft_c),
                        "machine_estimate": walltime_improvement(a, c.k, draft_c, v)}
        rows[c.name] = row
    base, hf_base = rows["ours greedy"]["tokens_per_s"], rows["hf greedy"]["tokens_per_s"]
    for c in cfgs:
        row = rows[c.name]
        row["vs_ours_greedy"] = row["tokens_per_s"] / base
        row["vs_hf_greedy"] = row["tokens_per_s"] / hf_base
        if "machine_estimate" in row:
            row["fraction_of_machine_estimate"] = row["vs_ours_greedy"] / row["machine_estimate"]
            row["fraction_of_leviathan_estimate"] = row["vs_ours_greedy"] / row["leviathan_estimate"]
        if row.get("mean_acceptance_length"):  # where the speedup goes: factors multiplying to vs_ours_greedy
            row["breakdown"] = [[name, f] for name, f in speedup_breakdown(
                row["mean_acceptance_length"], row["vs_ours_greedy"],
                row.get("k"), row.get("c", 0.0), row.get("v", 1.0))]
        if c.peer in rows:
            row["vs_hf_peer"] = row["tokens_per_s"] / rows[c.peer]["tokens_per_s"]
        twin = rows.get(block_twin(c))
        if twin:  # the tokens differ once the rules part: compare rates, per pass and per second
            row["block_vs_token"] = {
                "tokens_per_pass": row["mean_acceptance_length"], "token_wise_tokens_per_pass":
                    twin["mean_acceptance_length"],
                "tokens_per_pass_ratio": row["mean_acceptance_length"] / twin["mean_acceptance_length"],
                "speed_ratio": row["tokens_per_s"] / twin["tokens_per_s"]}
            total = sum((outputs[(c.name, p)][1] for p in names[1:]), outputs[(c.name, names[0])][1])
            if isinstance(total, BlockCounters) and total.verify_passes:  # paired: this row's own drafts
                row["block_vs_token"] |= {
                    "expected_tokens_per_pass": 1 + total.kept_block / total.verify_passes,
                    "token_wise_expected_tokens_per_pass": 1 + total.kept_token / total.verify_passes}
    for c in cfgs:  # sampled speculative rows against plain sampling on the same seeds
        if c.sampling and c.method == "speculative" and "ours sample T=1" in rows:
            rows[c.name]["vs_ours_sample"] = rows[c.name]["tokens_per_s"] / rows["ours sample T=1"]["tokens_per_s"]
    return rows


def best_k_check(rows: dict, fm: dict, drafter: str) -> dict | None:
    """Issue 38's check of "how do I choose K": the K best_k_from_positions picks from the per-position acceptance
    measured at the largest fixed K run (and c, v(K) measured in this run), against the fastest fixed K actually
    run; None unless at least two fixed-K greedy rows of this drafter ran."""
    runs = {r["k"]: r for name, r in rows.items() if name == f"spec {drafter} K={r.get('k')}" and r.get("per_position")}
    if len(runs) < 2:
        return None
    widest = runs[max(runs)]
    rates = [x for x in widest["per_position"] if x is not None]
    t1 = fm["target_1"]
    verify = {int(n) - 1: ms / t1 for n, ms in fm["target_verify"].items()}
    picked, gain = best_k_from_positions(rates, widest["c"], lambda k: verify.get(k, widest["v"]), max(runs))
    fastest = max(runs, key=lambda k: runs[k]["vs_ours_greedy"])
    out = {"rates": rates, "c": widest["c"], "picked": picked, "predicted": gain, "fastest": fastest,
           "fastest_speedup": runs[fastest]["vs_ours_greedy"],
           "measured": {k: r["vs_ours_greedy"] for k, r in sorted(runs.items())}}
    if picked in runs or picked == DONT_SPECULATE:  # "don't speculate" is plain greedy: 1.0 by definition
        out["picked_speedup"] = runs[picked]["vs_ours_greedy"] if picked in runs else 1.0
        out["picked_vs_fastest"] = out["picked_speedup"] / out["fastest_speedup"]
    return out


def repeat_prompt_speedups(cfgs: list[Config], seconds: dict, prompts) -> dict:
    """n-gram lookup on the prompts whose answer repeats the input: where prompt lookup should shine."""
    rep = [p["name"] for p in prompts if p["kind"] == "repeats input"]
    if not rep:
        return {}
    greedy = sum(statistics.median(seconds[("ours greedy", n)]) for n in rep)
    return {c.name: greedy / sum(statistics.median(seconds[(c.name, n)]) for n in rep)
            for c in cfgs if c.drafter == "ngram" and c.method == "speculative" and not c.sampling}


def cold_load_seconds(device) -> float:
    """Loading with an empty cache: the embedded GGUF converted again."""
    old = os.environ.get("SPECVIZ_CACHE")
    with tempfile.TemporaryDirectory() as d:
        os.environ["SPECVIZ_CACHE"] = d
        try:
            t0 = time.perf_counter()
            load_models(device=device)
            return time.perf_counter() - t0
        finally:
            if old is None:
                del os.environ["SPECVIZ_CACHE"]
            else:
                os.environ["SPECVIZ_CACHE"] = old


def run_bench(prompts, max_new: int, repeats: int, ks, dynamic_k=True, hf_peers=True, sampling=True,
              device=None, cold=False, unpacked=True, only=(), log=print, seeds: int = 1, sized_tree=False,
              quantized=False) -> dict:
    t0 = time.perf_counter()
    models = load_models(device=device)
    load_cached = time.perf_counter() - t0
    packed = any(isinstance(m, PackedLinear) for m in models.target.modules())
    # where this CPU measured packed layers faster (specviz/packed.py), an unpacked copy measures what they buy
    plain = load_models(device=device, packed=False) if unpacked and packed else None
    load_cold = cold_load_seconds(device) if cold else None
    cfgs = select(configs(models, ks, dynamic_k, hf_peers, sampling, plain is not None, quantized=quantized), only)
    sizing = None
    if sized_tree and models.feature_draft is not None:  # issue 48: the EAGLE-2 tree sized for this machine
        log("sizing the EAGLE-2 tree for this machine…")
        sizing = size(models)
        c = sizing["choice"]
        cfgs.append(Config(f"spec eagle2 sized N={c.budget} D={c.depth}", "speculative", "feature", None,
                           tree="eagle2", tree_budget=c.budget, tree_depth=c.depth))
    seconds, outputs, ids = run(models, plain, cfgs, prompts, max_new, repeats, log, seeds)
    first = prompts[0]["name"]
    fm, unpacked_ms = forward_costs(models, plain, ids[first] + outputs[("ours greedy", first)][0][:32], ks,
                                    quantized=any(c.drafter in QUANTIZED for c in cfgs))
    bad = mismatches(cfgs, outputs, prompts)
    rows = aggregate(cfgs, seconds, outputs, prompts, fm)
    return {
        "date": time.strftime("%Y-%m-%d"), "device": str(models.device), "threads": torch.get_num_threads(),
        "cpu_flags": cpu_flags(), "torch": torch.__version__, "prompts": [p["name"] for p in prompts],
        "max_new_tokens": max_new, "repeats": repeats, "draft": models.draft_name, "sampling_seeds": seeds,
        "rows": rows, "best_k": {d: best_k_check(rows, fm, d) for d in ("token", "feature")},
        "ngram_speedup_on_repeat_prompts": repeat_prompt_speedups(cfgs, seconds, prompts),
        "forward_ms": fm, "packed": packed, "packing": packing_choice().as_dict(), "forward_ms_unpacked": unpacked_ms,
        "load_s": {"cached": load_cached, "cold": load_cold},
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "identical": not bad, "mismatches": bad,
        "tree_sizing": None if sizing is None else {
            "budget": sizing["choice"].budget, "depth": sizing["choice"].depth,
            "expected_tokens_per_cycle": sizing["choice"].tokens, "expected_ms_per_cycle": sizing["choice"].ms,
            "draft_pass_ms": sizing["draft_pass_ms"], "recorded_cycles": sizing["cycles"]},
    }


def cpu_flags() -> list[str]:
    """The vector extensions this CPU has: figures are compared only within one run, on one machine."""
    try:
        flags = next(line for line in open("/proc/cpuinfo") if line.startswith("flags")).split(":")[1].split()
    except (OSError, StopIteration):
        return []
    return sorted(f for f in flags if f.startswith(("avx", "amx", "fma", "sse4")))


def forward_lines(res: dict) -> list[str]:
    """The forward costs behind c and v: the target's step and verify passes, each draft's step and its c (the target
    quantized with its a beside it), and what packing the linear layers bought when the unpacked rows ran."""
    fm = res["forward_ms"]
    lines = ["target forward (ms): 1 token " + f"{fm['target_1']:.1f}; " + "; ".join(
        f"{n} tokens {v:.1f} (v={v / fm['target_1']:.2f})" for n, v in fm["target_verify"].items())]
    if fm["draft_1"]:
        lines.append(f"draft forward: {fm['draft_1']:.1f} ms -> c = {fm['c']:.3f}")
    if fm.get("feature_draft_1"):
        lines.append(f"feature draft forward: {fm['feature_draft_1']:.1f} ms -> c = {fm['c_feature']:.3f}")
    for q in QUANTIZED:  # the target quantized: a near 1, yet some K pays only if a > c (Leviathan et al. 3.9)
        if fm.get(f"{q}_1"):
            a = res["rows"].get(f"spec {q} K=4", {}).get("acceptance_rate")
            lines.append(f"target {q} forward: {fm[f'{q}_1']:.1f} ms -> c = {fm[f'c_{q}']:.3f}"
                         + (f"; a = {a:.3f}, so a > c {'holds' if a > fm[f'c_{q}'] else 'fails'}" if a else ""))
    pc = res.get("packing")
    if pc and pc.get("plain_ms"):  # the process's measured choice (specviz/packed.py)
        n0 = pc["packed_from"]
        way = ("oneDNN-packed" if n0 == 1 else "plain nn.Linear" if n0 is None else
               f"plain below {n0} rows, oneDNN-packed from {n0}")
        probe = ", ".join(f"{n} rows {pc['packed_ms'][n]:.1f}/{pc['plain_ms'][n]:.1f}" for n in pc["plain_ms"])
        lines.append(f"linear layers: {way} (probe stack, packed/plain ms: {probe})")
    um, rows = res.get("forward_ms_unpacked"), res["rows"]
    if um and "unpacked greedy" in rows:  # a run --only some rows has the forward timings but no unpacked rows
        lines.append(f"unpacked nn.Linear forward (ms): 1 token {um['target_1']:.1f}; 5 tokens {um['target_5']:.1f} "
                     f"(v={um['target_5'] / um['target_1']:.2f})"
                     + (f"; draft {um['draft_1']:.1f} -> c = {um['draft_1'] / um['target_1']:.3f}"
                        if um["draft_1"] else ""))
        g, ug = rows["ours greedy"]["tokens_per_s"], rows["unpacked greedy"]["tokens_per_s"]
        line = f"packed vs unpacked: greedy {g / ug:.2f}×"
        if "unpacked spec token K=4" in rows and "spec token K=4" in rows:
            us = rows["unpacked spec token K=4"]["tokens_per_s"]
            line += (f", spec token K=4 {rows['spec token K=4']['tokens_per_s'] / us:.2f}×; "
                     f"unpacked spec token K=4 vs unpacked greedy {us / ug:.2f}×")
        lines.append(line)
    return lines


def table(res: dict) -> str:
    lines = [f"SpecViz bench {res['date']} · {res['device']} · {res['threads']} threads · torch {res['torch']} · "
             f"{len(res['prompts'])} prompts × {res['max_new_tokens']} new tokens · median of {res['repeats']} · "
             f"draft: {res['draft']}", "CPU flags: " + (" ".join(res.get("cpu_flags", [])) or "-"), ""]
    hdr = (f"{'config':24} {'tok/s':>7} {'×ours':>6} {'×HF':>6} {'a':>5} {'tok/pass':>8} {'est.':>6} {'mach.':>6} "
           f"{'%mach':>6} {'×peer':>6}")
    lines += [hdr, "-" * len(hdr)]

    def f(x, fmt):
        return format(x, fmt) if isinstance(x, (int, float)) else "-"
    for name, r in res["rows"].items():
        lines.append(
            f"{name:24} {r['tokens_per_s']:7.1f} {r['vs_ours_greedy']:6.2f} {r['vs_hf_greedy']:6.2f} "
            f"{f(r.get('acceptance_rate'), '5.2f'):>5} {f(r.get('mean_acceptance_length'), '8.2f'):>8} "
            f"{f(r.get('leviathan_estimate'), '6.2f'):>6} {f(r.get('machine_estimate'), '6.2f'):>6} "
            f"{f(100 * r['fraction_of_machine_estimate'] if 'fraction_of_machine_estimate' in r else None, '5.0f'):>6} "
            f"{f(r.get('vs_hf_peer'), '6.2f'):>6}")
    lines += ["", *forward_lines(res)]
    rows = res["rows"]
    if res["ngram_speedup_on_repeat_prompts"]:
        lines.append("n-gram on repeats-the-input prompts (× our greedy): " + ", ".join(
            f"{k.replace('spec ngram ', '')} {v:.2f}" for k, v in res["ngram_speedup_on_repeat_prompts"].items()))
    load = res["load_s"]
    lines.append(f"model load: cached {load['cached']:.1f} s" + (f", cold {load['cold']:.1f} s" if load["cold"] else "")
                 + f"; peak RSS {res['peak_rss_mb']:.0f} MB")
    for name, r in rows.items():  # where each speculative row's speedup goes (factors multiply to ×ours)
        if r.get("breakdown"):
            lines.append(f"breakdown {name}: " + " × ".join(f"{f:.3f}" for _, f in r["breakdown"])
                         + f" = {r['vs_ours_greedy']:.3f}")
    for name, r in rows.items():
        b = r.get("block_vs_token")
        if b:
            lines.append(f"block verification vs token-wise ({name}, seeds 0..{res.get('sampling_seeds', 1) - 1} "
                         f"per prompt): tokens per verify pass {b['tokens_per_pass']:.3f} vs "
                         f"{b['token_wise_tokens_per_pass']:.3f} (x{b['tokens_per_pass_ratio']:.3f}), tokens/s "
                         f"x{b['speed_ratio']:.3f}"
                         + (f"; on block's own drafts, expected tokens per pass {b['expected_tokens_per_pass']:.3f} "
                            f"vs token-wise {b['token_wise_expected_tokens_per_pass']:.3f}"
                            if "expected_tokens_per_pass" in b else ""))
    for drafter, b in (res.get("best_k") or {}).items():
        if b:
            lines.append(f"best K ({drafter} draft) from measured per-position acceptance: K = {b['picked']} "
                         f"(predicted {b['predicted']:.2f}x"
                         + (f", measured {b['picked_speedup']:.2f}x = {b['picked_vs_fastest']:.1%} of the fastest"
                            if "picked_speedup" in b else ", not run") + f"); fastest fixed K = {b['fastest']} "
                         f"({b['fastest_speedup']:.2f}x); measured " +
                         ", ".join(f"K={k} {v:.2f}x" for k, v in b["measured"].items()))
    lines.append("token identity vs greedy: " + ("OK" if res["identical"] else f"FAILED {res['mismatches']}"))
    lines.append("a = accepted / drafted tokens ruled on; tok/pass = mean acceptance length (tokens per verify pass, "
                 "incl. bonus/correction); est. = (1-a^(K+1))/((1-a)(Kc+1)), Leviathan et al.'s estimate under i.i.d. "
                 "acceptance; mach. = the same with the measured verify cost v in place of 1. Block rows rule on "
                 "every draft (no first rejection ends a block), so their a is accepted / drafted.")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m specviz.bench", description=__doc__)
    ap.add_argument("--quick", action="store_true", help="2 prompts, 1 repeat, K=4, 32 tokens: a smoke run")
    ap.add_argument("--max-new-tokens", type=int, default=128)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--ks", default="2,4,6,8")
    ap.add_argument("--device", default=None)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--out", default=None, help="also write the JSON here")
    ap.add_argument("--seeds", type=int, default=1, help="sampling rows: decode each prompt with seeds 0..N-1 (the "
                                                         "same seeds for token-wise and block verification)")
    ap.add_argument("--sized-tree", action="store_true",
                    help="also a row of the EAGLE-2 tree sized for this machine (labs/tree_sizing; about a minute)")
    ap.add_argument("--quantized", action="store_true",
                    help="also spec int8 / int4 K=4 and their bf16-activation twins: the target itself quantized as "
                         "the draft, each with its measured c (on the 2-core machine about 40 s more per prompt and "
                         "repeat at 128 tokens: some 13 minutes at the defaults)")
    ap.add_argument("--prompts", type=int, default=None, metavar="N",
                    help="only the first N benchmark prompts (a short run, e.g. on a lent GPU with a time limit)")
    ap.add_argument("--no-cold", action="store_true", help="skip the cold-load timing (a second conversion of the "
                                                          "embedded GGUF, ~20 s)")
    ap.add_argument("--only", default="", help="comma-separated parts of row names to run (e.g. 'feature K=4,eagle2'); "
                                               "the greedy rows always run")
    a = ap.parse_args(argv)
    torch.manual_seed(0)
    prompts = load_prompts()
    ks = [int(k) for k in a.ks.split(",")]
    kw = {}
    if a.quick:
        prompts = [prompts[0], next(p for p in prompts if p["kind"] == "repeats input")]
        a.repeats, a.max_new_tokens, ks = 1, 32, [4]
        kw = dict(dynamic_k=False, sampling=True, hf_peers=True)
    kw["only"] = tuple(o.strip() for o in a.only.split(",") if o.strip())
    if a.seeds < 1:
        print(f"error: --seeds must be at least 1; got {a.seeds}", file=sys.stderr)
        return 2
    if a.prompts is not None:
        if not 1 <= a.prompts <= len(prompts):
            print(f"error: --prompts must be 1..{len(prompts)}; got {a.prompts}", file=sys.stderr)
            return 2
        prompts = prompts[:a.prompts]
    kw["seeds"] = a.seeds
    kw["sized_tree"] = a.sized_tree
    kw["quantized"] = a.quantized
    try:
        res = run_bench(prompts, a.max_new_tokens, a.repeats, ks, device=a.device, cold=not (a.quick or a.no_cold),
                        log=lambda m: print(m, file=sys.stderr, flush=True), **kw)
    except SpecVizError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if a.out:
        pathlib.Path(a.out).write_text(json.dumps(res, indent=1))
    print(json.dumps(res) if a.json else table(res))
    if not res["identical"]:
        print(f"FAILED: outputs differ from greedy: {res['mismatches']}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
