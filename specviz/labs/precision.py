"""Bit-exact vs distribution-lossless (issue 38, item 6): the target in fp32 and in bf16, plain greedy and speculative
(greedy verification) within each, on one prompt.

Speculative decoding is exact *in distribution*: in exact arithmetic its greedy output is plain greedy's. Computers
round. The verify pass scores K + 1 positions in one forward, plain decoding one at a time: a different kernel
shape can sum in another order, so a logit moves in its last bits; where the target's top two tokens are that
close, the argmax flips and the two outputs part for good. Lower precision (bf16: 8 bits of mantissa) moves
logits far more than the kernel shape does, and parts the fp32 and bf16 runs wherever the top-2 margin is small.
This module finds the first position where two runs part and the margin between the top two logits there."""
from __future__ import annotations

import time

import torch

from specviz.engine.plain import plain_steps
from specviz.engine.speculative import speculative_steps
from specviz.engine.loop import run_steps
from specviz.tokens import token_text
from specviz.loading import load_target

RUNS = ("fp32 plain", "fp32 speculative", "bf16 plain", "bf16 speculative")
PAIRS = (("fp32 plain", "fp32 speculative"), ("bf16 plain", "bf16 speculative"), ("fp32 plain", "bf16 plain"))


def bf16_target(name: str | None = None, device: str | None = None):
    """The same target in bfloat16 (its plain nn.Linear layers: the oneDNN packing is for fp32)."""
    return load_target(name, device, packed=False)[0].to(torch.bfloat16)


def first_difference(a: list[int], b: list[int]) -> int | None:
    """The first index where two token lists differ (one ending earlier counts there); None when identical."""
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return i
    return None if len(a) == len(b) else min(len(a), len(b))


@torch.no_grad()
def top2(model, prompt: list[int], output: list[int]) -> list[dict]:
    """At each output position, from ONE forward over prompt + output: the model's top two tokens and their logit
    margin (top1 - top2, in the model's own dtype, read as a float)."""
    ids = list(prompt) + list(output)
    logits = model(torch.tensor([ids], device=model.device)).logits[0, len(prompt) - 1: len(ids) - 1]
    vals, idx = torch.topk(logits.float(), 2, dim=-1)
    return [{"top1": int(i[0]), "top2": int(i[1]), "margin": float(v[0] - v[1])} for v, i in zip(vals, idx)]


def compare(runs: dict, margins: dict, tokenizer) -> list[dict]:
    """For each pair in PAIRS: where the two outputs first part, the token each chose there, and the top-2 logit
    margin there. margins: "fp32" and "bf16" over fp32 plain's text, "bf16 own" over bf16 plain's text (a pair
    parts after a common prefix, so the margin is read on the first run's text: both ran that same context)."""
    read = {("fp32 plain", "fp32 speculative"): {"fp32": "fp32"},
            ("bf16 plain", "bf16 speculative"): {"bf16": "bf16 own"},
            ("fp32 plain", "bf16 plain"): {"fp32": "fp32", "bf16": "bf16"}}
    out = []
    for a, b in PAIRS:
        d = first_difference(runs[a], runs[b])
        row = {"a": a, "b": b, "position": d, "margin": {}}
        if d is not None and d < min(len(runs[a]), len(runs[b])):
            row["token_a"], row["token_b"] = token_text(tokenizer, runs[a][d]), token_text(tokenizer, runs[b][d])
            row["margin"] = {name: margins[key][d]["margin"] for name, key in read[(a, b)].items()}
        out.append(row)
    return out


def precision_runs(fp32, bf16, make_drafter, tokenizer, prompt: list[int], max_new: int, k: int = 4,
                   progress=lambda f, m: None) -> dict:
    """The four greedy runs (make_drafter(): a fresh drafter for each speculative run), their outputs and times,
    where each pair first parts and the top-2 margins there, and the margins along fp32 plain's text."""
    runs, seconds = {}, {}
    models = {"fp32": fp32, "bf16": bf16}
    for i, name in enumerate(RUNS):
        progress(i / (len(RUNS) + 1), f"{name}…")
        model = models[name.split()[0]]
        steps = (plain_steps(model, tokenizer, prompt, max_new) if name.endswith("plain")
                 else speculative_steps(model, make_drafter(), tokenizer, prompt, max_new, k=k))
        t0 = time.perf_counter()
        _, result = run_steps(steps)
        seconds[name] = time.perf_counter() - t0
        runs[name] = result.token_ids
    progress(len(RUNS) / (len(RUNS) + 1), "top-2 margins…")
    margins = {"fp32": top2(fp32, prompt, runs["fp32 plain"]), "bf16": top2(bf16, prompt, runs["fp32 plain"]),
               "bf16 own": top2(bf16, prompt, runs["bf16 plain"])}
    progress(1.0, "done")
    return {"runs": runs, "seconds": seconds, "pairs": compare(runs, margins, tokenizer), "margins": margins,
            "k": k, "max_new": max_new,
            "texts": {name: [token_text(tokenizer, t) for t in ids] for name, ids in runs.items()}}
