"""python -m specviz.bench: our decoding vs transformers and vs the theoretical bound, side by side.

Every configuration runs on the same prompts, interleaved (A B C ... A B C ...) after a warm-up, and
each figure is the median over repeats. Every greedy speculative output is checked token-identical
to plain greedy; the run fails loudly otherwise. Ratios are measured in this one run.
"""
from __future__ import annotations

import argparse
import json
import pathlib
import resource
import statistics
import sys
import tempfile
import time

import torch

from .distill import chat_ids
from .drafters import ModelDrafter, NgramDrafter
from .eagle import FeatureDrafter
from .greedy import greedy_steps
from .models import load_pair
from .packed import PackedLinear
from .sampling import SamplingConfig
from .speculative import speculative_steps
from .step import run_steps
from .measure import forward_ms
from .theory import expected_tokens, walltime_improvement

PROMPTS = pathlib.Path(__file__).with_name("bench_prompts.json")


def load_prompts():
    return json.loads(PROMPTS.read_text())["prompts"]


def configs(pair, ks, dynamic_k: bool, hf_peers: bool, sampling: bool, unpacked=None):
    """name -> function(ids, max_new) returning (token_ids, counters or None)."""
    tgt, tok = pair.target, pair.tokenizer
    out = {}

    def hf(**kw):
        def f(ids, n):
            o = tgt.generate(torch.tensor([ids], device=tgt.device), max_new_tokens=n, do_sample=False,
                             pad_token_id=tok.eos_token_id, **kw)
            return o[0, len(ids):].tolist(), None
        return f

    out["hf greedy"] = hf()
    out["ours greedy"] = lambda ids, n: (lambda r: (r.token_ids, r.counters))(run_steps(greedy_steps(tgt, tok, ids, n))[1])
    drafters = [("ngram", NgramDrafter)] + ([("model", lambda: ModelDrafter(pair.draft))] if pair.draft is not None else [])
    if pair.feature_draft is not None:  # transformers has no way to run it: no HF peer row
        drafters.append(("feature", lambda: FeatureDrafter(pair.feature_draft)))
    for dname, make in drafters:
        for k in ks:
            out[f"spec {dname} K={k}"] = (lambda make, k: lambda ids, n: (lambda r: (r.token_ids, r.counters))(
                run_steps(speculative_steps(tgt, make(), tok, ids, n, k))[1]))(make, k)
            if hf_peers:
                if dname == "model":
                    out[f"hf assisted K={k}"] = hf(assistant_model=pair.draft, num_assistant_tokens=k,
                                                   num_assistant_tokens_schedule="constant",
                                                   assistant_confidence_threshold=0.0)
                elif dname == "ngram":
                    out[f"hf prompt-lookup K={k}"] = hf(prompt_lookup_num_tokens=k)
        if dynamic_k:
            out[f"spec {dname} dynamic"] = (lambda make: lambda ids, n: (lambda r: (r.token_ids, r.counters))(
                run_steps(speculative_steps(tgt, make(), tok, ids, n, 4, dynamic_k=True, k_max=16))[1]))(make)
    if unpacked is not None:  # the same model with plain nn.Linear layers: what packing buys
        u_tgt = unpacked.target
        out["unpacked greedy"] = lambda ids, n: (run_steps(greedy_steps(u_tgt, tok, ids, n))[1].token_ids, None)
        if unpacked.draft is not None:
            out["unpacked spec model K=4"] = lambda ids, n: (run_steps(speculative_steps(
                u_tgt, ModelDrafter(unpacked.draft), tok, ids, n, 4))[1].token_ids, None)
    if sampling:
        s_cfg = SamplingConfig(temperature=1.0, seed=0)
        out["ours sample T=1"] = lambda ids, n: (lambda r: (r.token_ids, r.counters))(
            run_steps(greedy_steps(tgt, tok, ids, n, s_cfg))[1])
        best = drafters[-1][1]  # the feature draft, else the draft model, else n-gram
        out["spec sample T=1 K=4"] = lambda ids, n: (lambda r: (r.token_ids, r.counters))(
            run_steps(speculative_steps(tgt, best(), tok, ids, n, 4, s_cfg))[1])
    return out


def run_bench(prompts, max_new: int, repeats: int, ks, dynamic_k=True, hf_peers=True, sampling=True,
              device=None, cold=False, unpacked=True, log=print) -> dict:
    t0 = time.perf_counter()
    pair = load_pair(device=device)
    load_cached = time.perf_counter() - t0
    packed = any(isinstance(m, PackedLinear) for m in pair.target.modules())
    # packed linear layers are the CPU default; an unpacked copy measures what they buy, side by side
    plain = load_pair(device=device, packed=False) if unpacked and packed else None
    load_cold = None
    if cold:
        import os
        with tempfile.TemporaryDirectory() as d:
            old = os.environ.get("SPECVIZ_CACHE")
            os.environ["SPECVIZ_CACHE"] = d
            t0 = time.perf_counter()
            load_pair(device=device)
            load_cold = time.perf_counter() - t0
            if old is None:
                del os.environ["SPECVIZ_CACHE"]
            else:
                os.environ["SPECVIZ_CACHE"] = old
    tok = pair.tokenizer
    cfgs = configs(pair, ks, dynamic_k, hf_peers, sampling, plain)
    ids_list = [chat_ids(tok, p["text"]) for p in prompts]
    warm = ids_list[0]
    for name, f in cfgs.items():  # warm-up: first calls pay for allocations and lazy inits
        f(warm, 8)
    times = {n: {p["name"]: [] for p in prompts} for n in cfgs}
    outputs, counters = {}, {}
    for r in range(repeats):
        for p, ids in zip(prompts, ids_list):
            for name, f in cfgs.items():  # interleaved: every config sees the same machine state
                t = time.perf_counter()
                toks, c = f(ids, max_new)
                times[name][p["name"]].append(time.perf_counter() - t)
                outputs[(name, p["name"])] = toks
                counters[(name, p["name"])] = c
            log(f"  repeat {r + 1}/{repeats}: {p['name']} done")

    # token identity: every greedy configuration must reproduce plain greedy exactly
    mismatches = []
    for p in prompts:
        ref = outputs[("ours greedy", p["name"])]
        if outputs[("hf greedy", p["name"])] != ref:
            mismatches.append(("hf greedy", p["name"]))
        for name in cfgs:
            if name.startswith("spec") and "sample" not in name and outputs[(name, p["name"])] != ref:
                mismatches.append((name, p["name"]))
            if name.startswith("unpacked spec") and outputs[(name, p["name"])] != outputs[("unpacked greedy", p["name"])]:
                mismatches.append((name, p["name"]))

    # forward costs: a decode step, a verify pass of K+1, a draft step (median ms)
    ctx = ids_list[0] + outputs[("ours greedy", prompts[0]["name"])][:32]
    t1 = forward_ms(pair.target, ctx, 1)
    verify = {k: forward_ms(pair.target, ctx, k + 1) for k in sorted(set(ks) | {4})}
    d1 = forward_ms(pair.draft, ctx, 1) if pair.draft is not None else None
    c = d1 / t1 if d1 else 0.0
    f1 = forward_ms(pair.feature_draft, ctx, 1) if pair.feature_draft is not None else None
    c_feature = f1 / t1 if f1 else 0.0
    unpacked_ms = None
    if plain is not None:
        unpacked_ms = {"target_1": forward_ms(plain.target, ctx, 1), "target_5": forward_ms(plain.target, ctx, 5),
                       "draft_1": forward_ms(plain.draft, ctx, 1) if plain.draft is not None else None}

    rows = {}
    base = None
    for name in cfgs:
        tokens = sum(len(outputs[(name, p["name"])]) for p in prompts)
        seconds = sum(statistics.median(times[name][p["name"]]) for p in prompts)
        row = {"tokens": tokens, "seconds": seconds, "tokens_per_s": tokens / seconds}
        cs = [counters[(name, p["name"])] for p in prompts if counters[(name, p["name"])] is not None]
        if name.startswith("spec") and cs:
            decided = sum(x.decided for x in cs)
            accepted = sum(x.accepted for x in cs)
            passes = sum(x.target_passes for x in cs)
            a = accepted / decided if decided else 0.0
            depth = max(len(x.reached_at) for x in cs)
            reached = [sum(x.reached_at[i] for x in cs if i < len(x.reached_at)) for i in range(depth)]
            acc = [sum(x.accepted_at[i] for x in cs if i < len(x.accepted_at)) for i in range(depth)]
            row |= {"acceptance_rate": a, "mean_acceptance_length": tokens / passes,
                    "per_position": [round(x / y, 3) if y else None for x, y in zip(acc, reached)]}
            if "K=" in name and "sample" not in name:
                k = int(name.split("K=")[1])
                ck = c if " model " in name else c_feature if " feature " in name else 0.0
                v = verify[k] / t1
                row |= {"k": k, "c": ck, "v": v, "tau": expected_tokens(a, k),
                        "leviathan_bound": walltime_improvement(a, k, ck),
                        "machine_bound": walltime_improvement(a, k, ck, v)}
        rows[name] = row
    base = rows["ours greedy"]["tokens_per_s"]
    for name, row in rows.items():
        row["vs_ours_greedy"] = row["tokens_per_s"] / base
        row["vs_hf_greedy"] = row["tokens_per_s"] / rows["hf greedy"]["tokens_per_s"]
        if "machine_bound" in row:
            row["fraction_of_machine_bound"] = row["vs_ours_greedy"] / row["machine_bound"]
            row["fraction_of_leviathan_bound"] = row["vs_ours_greedy"] / row["leviathan_bound"]
        if name.startswith("spec") and "K=" in name and "sample" not in name:
            k = name.split("K=")[1]
            peer = f"hf assisted K={k}" if " model " in name else f"hf prompt-lookup K={k}" if " ngram " in name else ""
            if peer in rows:
                row["vs_hf_peer"] = row["tokens_per_s"] / rows[peer]["tokens_per_s"]
    if "ours sample T=1" in rows and "spec sample T=1 K=4" in rows:
        rows["spec sample T=1 K=4"]["vs_ours_sample"] = (rows["spec sample T=1 K=4"]["tokens_per_s"]
                                                         / rows["ours sample T=1"]["tokens_per_s"])

    # the repeats-the-input prompts alone: where prompt lookup should shine
    rep = [p["name"] for p in prompts if p["kind"] == "repeats input"]
    repeat_rows = {}
    if rep:
        g = sum(statistics.median(times["ours greedy"][n]) for n in rep)
        for name in cfgs:
            if name.startswith("spec ngram"):
                repeat_rows[name] = g / sum(statistics.median(times[name][n]) for n in rep)
    return {
        "date": time.strftime("%Y-%m-%d"), "device": str(pair.device), "threads": torch.get_num_threads(),
        "torch": torch.__version__, "prompts": [p["name"] for p in prompts], "max_new_tokens": max_new,
        "repeats": repeats, "draft": pair.draft_name, "rows": rows,
        "ngram_speedup_on_repeat_prompts": repeat_rows,
        "forward_ms": {"target_1": t1, "target_verify": {str(k + 1): v for k, v in verify.items()},
                       "draft_1": d1, "c": c, "feature_draft_1": f1, "c_feature": c_feature},
        "packed": packed, "forward_ms_unpacked": unpacked_ms,
        "load_s": {"cached": load_cached, "cold": load_cold},
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "identical": not mismatches, "mismatches": mismatches,
    }


def table(res: dict) -> str:
    lines = [f"SpecViz bench {res['date']} · {res['device']} · {res['threads']} threads · torch {res['torch']} · "
             f"{len(res['prompts'])} prompts × {res['max_new_tokens']} new tokens · median of {res['repeats']} · "
             f"draft: {res['draft']}", ""]
    hdr = f"{'config':24} {'tok/s':>7} {'×ours':>6} {'×HF':>6} {'a':>5} {'tok/pass':>8} {'bound':>6} {'mach.':>6} {'%mach':>6} {'×peer':>6}"
    lines += [hdr, "-" * len(hdr)]

    def f(x, fmt):
        return format(x, fmt) if isinstance(x, (int, float)) else "-"
    for name, r in res["rows"].items():
        lines.append(f"{name:24} {r['tokens_per_s']:7.1f} {r['vs_ours_greedy']:6.2f} {r['vs_hf_greedy']:6.2f} "
                     f"{f(r.get('acceptance_rate'), '5.2f'):>5} {f(r.get('mean_acceptance_length'), '8.2f'):>8} "
                     f"{f(r.get('leviathan_bound'), '6.2f'):>6} {f(r.get('machine_bound'), '6.2f'):>6} "
                     f"{f(100 * r['fraction_of_machine_bound'] if 'fraction_of_machine_bound' in r else None, '5.0f'):>6} "
                     f"{f(r.get('vs_hf_peer'), '6.2f'):>6}")
    fm = res["forward_ms"]
    lines += ["", "target forward (ms): 1 token " + f"{fm['target_1']:.1f}; " + "; ".join(
        f"{n} tokens {v:.1f} (v={v / fm['target_1']:.2f})" for n, v in fm["target_verify"].items())]
    if fm["draft_1"]:
        lines.append(f"draft forward: {fm['draft_1']:.1f} ms -> c = {fm['c']:.3f}")
    if fm.get("feature_draft_1"):
        lines.append(f"feature draft forward: {fm['feature_draft_1']:.1f} ms -> c = {fm['c_feature']:.3f}")
    um, rows = res.get("forward_ms_unpacked"), res["rows"]
    if um:
        lines.append(f"unpacked nn.Linear forward (ms): 1 token {um['target_1']:.1f}; 5 tokens {um['target_5']:.1f} "
                     f"(v={um['target_5'] / um['target_1']:.2f})"
                     + (f"; draft {um['draft_1']:.1f} -> c = {um['draft_1'] / um['target_1']:.3f}" if um["draft_1"] else ""))
        g, ug = rows["ours greedy"]["tokens_per_s"], rows["unpacked greedy"]["tokens_per_s"]
        line = f"packed vs unpacked: greedy {g / ug:.2f}×"
        if "unpacked spec model K=4" in rows and "spec model K=4" in rows:
            us = rows["unpacked spec model K=4"]["tokens_per_s"]
            line += (f", spec model K=4 {rows['spec model K=4']['tokens_per_s'] / us:.2f}×; "
                     f"unpacked spec model K=4 vs unpacked greedy {us / ug:.2f}×")
        lines.append(line)
    if res["ngram_speedup_on_repeat_prompts"]:
        lines.append("n-gram on repeats-the-input prompts (× our greedy): " + ", ".join(
            f"{k.replace('spec ngram ', '')} {v:.2f}" for k, v in res["ngram_speedup_on_repeat_prompts"].items()))
    load = res["load_s"]
    lines.append(f"model load: cached {load['cached']:.1f} s" + (f", cold {load['cold']:.1f} s" if load["cold"] else "")
                 + f"; peak RSS {res['peak_rss_mb']:.0f} MB")
    lines.append("token identity vs greedy: " + ("OK" if res["identical"] else f"FAILED {res['mismatches']}"))
    lines.append("a = accepted / drafted tokens ruled on; tok/pass = mean acceptance length incl. bonus/correction; "
                 "bound = (1-a^(K+1))/((1-a)(Kc+1)); mach. = same with the measured verify cost v for 1.")
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
    a = ap.parse_args(argv)
    torch.manual_seed(0)
    prompts = load_prompts()
    ks = [int(k) for k in a.ks.split(",")]
    kw = {}
    if a.quick:
        prompts = [prompts[0], next(p for p in prompts if p["kind"] == "repeats input")]
        a.repeats, a.max_new_tokens, ks = 1, 32, [4]
        kw = dict(dynamic_k=False, sampling=True, hf_peers=True)
    from .errors import SpecVizError
    try:
        res = run_bench(prompts, a.max_new_tokens, a.repeats, ks, device=a.device, cold=not a.quick,
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
