"""Batched greedy vs batched speculative greedy measured at B = 1, 4, 16 (the engine: specviz/engine/batched.py):
`python -m specviz.labs.batched [--batches 1,4,16 --max-new 64 --k 4]` writes docs/batched-2026-11-23.json, which
the Serving lab reads."""
from __future__ import annotations

import argparse
import json
import platform
import sys
from pathlib import Path

import torch

from specviz.engine.batched import batched_greedy, batched_speculative
from specviz.errors import SpecVizError
from specviz.labs.serving import forward_grid
from specviz.roofline import speedup_at_batch
from specviz.loading import REPO_ROOT, load_models
from specviz.prompting import prompt_ids
from specviz.theory import acceptance_from_tokens_per_pass

# ---------------------------------------------------------------- measured: greedy vs speculative at B = 1, 4, 16
PROMPTS = Path(__file__).resolve().parents[1] / "bench_prompts.json"
VARIATIONS = ("", "Answer briefly. ", "Explain it to a beginner. ")  # later rounds vary the repeated prompts


def batch_prompts(tokenizer, b: int) -> list[list[int]]:
    """The first b prompts of bench_prompts.json (chat template), the list repeated with a short
    instruction prepended once it runs out: different prompt lengths, different answers."""
    texts = [p["text"] for p in json.loads(PROMPTS.read_text())["prompts"]]
    return [prompt_ids(tokenizer, VARIATIONS[(i // len(texts)) % len(VARIATIONS)] + texts[i % len(texts)])
            for i in range(b)]


def compare_at(target, draft, tokenizer, prompts: list[list[int]], max_new_tokens: int, k: int) -> dict:
    """One batch: batched greedy then batched speculative greedy on the same prompts; the wall-clock ratio
    and whether every sequence came out token-identical."""
    g = batched_greedy(target, tokenizer, prompts, max_new_tokens)
    s = batched_speculative(target, draft, tokenizer, prompts, max_new_tokens, k)
    tpp = s.tokens_per_pass
    return {"batch": len(prompts), "k": k, "max_new_tokens": max_new_tokens,
            "greedy_s": g.seconds, "speculative_s": s.seconds, "speedup": g.seconds / s.seconds,
            "greedy_target_passes": g.target_passes, "target_passes": s.target_passes, "draft_passes": s.draft_passes,
            "tokens": s.tokens, "tokens_per_pass": tpp, "mean_tokens_per_pass": sum(tpp) / len(tpp),
            # the batch steps until its slowest sequence is done: what the whole batch gets per verify pass
            "batch_tokens_per_pass": max(s.tokens) / max(1, s.target_passes - 1),
            "identical": s.outputs == g.outputs, "first_difference": first_difference(g.outputs, s.outputs)}


def first_difference(a: list[list[int]], b: list[list[int]]) -> list[int] | None:
    """[sequence, token index] of the first place two batches' outputs differ, or None."""
    for i, (x, y) in enumerate(zip(a, b)):
        for j in range(max(len(x), len(y))):
            if j >= len(x) or j >= len(y) or x[j] != y[j]:
                return [i, j]
    return None


def measure_batches(target, draft, tokenizer, batches=(1, 4, 16), max_new_tokens: int = 64, k: int = 4,
                    grid_batches=(1, 2, 4, 8, 16), progress=lambda f, m: None) -> dict:
    """Measured here: batched greedy vs batched speculative greedy at each batch size; the forward-cost grid
    v(B), c(B) at the same K and a typical context; the acceptance rate a (from the largest batch's mean
    tokens per pass); and, per batch, the speedup predicted from them with the same a and K, and again with
    the tokens per pass the whole batch got (its slowest sequence sets the step count)."""
    runs = []
    for i, b in enumerate(batches):
        progress(i / (len(batches) + 1), f"B = {b}: batched greedy, then batched speculative greedy…")
        runs.append(compare_at(target, draft, tokenizer, batch_prompts(tokenizer, b), max_new_tokens, k))
    progress(len(batches) / (len(batches) + 1), "forward-cost grid v(B), c(B)…")
    prompts = batch_prompts(tokenizer, max(batches))
    context = sum(map(len, prompts)) // len(prompts) + max_new_tokens // 2
    grid = forward_grid(target, draft, sorted(set(grid_batches) | set(batches)), k, context)
    a = acceptance_from_tokens_per_pass(runs[-1]["mean_tokens_per_pass"], k)
    costs = {r["batch"]: r for r in grid["rows"]}
    for r in runs:
        v, c = costs[r["batch"]]["v"], costs[r["batch"]]["c"]
        r["predicted"] = speedup_at_batch(a, k, v, c)
        r["predicted_ragged"] = r["batch_tokens_per_pass"] / (v + k * c)
    progress(1.0, "done")
    return {"k": k, "max_new_tokens": max_new_tokens, "a": a, "grid": grid, "runs": runs}


DOCS = REPO_ROOT / "docs"
COMMITTED = DOCS / "batched-2026-11-23.json"


def load_measured(path: Path = COMMITTED) -> dict | None:
    """A committed measure_batches result (python -m specviz.labs.batched writes one), or None."""
    return json.loads(path.read_text()) if path.is_file() else None


def summary(result: dict) -> str:
    """The measured table as text (what `python -m specviz.labs.batched` prints)."""
    lines = [f"K = {result['k']}, {result['max_new_tokens']} new tokens, a = {result['a']:.3f} (from the largest "
             "batch's mean tokens per pass)",
             "   B  greedy s  spec s  speedup  predicted  ragged-pred  target passes (greedy/spec)  tokens/pass "
             "(mean seq / batch)  identical"]
    for r in result["runs"]:
        lines.append(f"{r['batch']:4d}  {r['greedy_s']:8.2f}  {r['speculative_s']:6.2f}  {r['speedup']:6.2f}x  "
                     f"{r['predicted']:8.2f}x  {r['predicted_ragged']:10.2f}x  {r['greedy_target_passes']:13d} / "
                     f"{r['target_passes']:<13d}  {r['mean_tokens_per_pass']:8.2f} / {r['batch_tokens_per_pass']:.2f}"
                     f"        {r['identical']}")
    lines.append("grid (ms): " + ", ".join(f"B={g['batch']}: step {g['target_ms']:.1f}, verify {g['verify_ms']:.1f} "
                                           f"(v={g['v']:.2f}), draft {g['draft_ms']:.1f} (c={g['c']:.2f})"
                                           for g in result["grid"]["rows"]))
    return "\n".join(lines)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description="Batched greedy vs batched speculative greedy on the embedded model.")
    ap.add_argument("--batches", default="1,4,16")
    ap.add_argument("--max-new", type=int, default=64)
    ap.add_argument("--k", type=int, default=4)
    ap.add_argument("--out", default=str(COMMITTED))
    args = ap.parse_args(argv)
    models = load_models()
    if models.draft is None:
        raise SpecVizError("No token draft: batched speculation here needs the shipped models/draft.")
    result = measure_batches(models.target, models.draft, models.tokenizer,
                             tuple(int(b) for b in args.batches.split(",")), args.max_new, args.k,
                             progress=lambda f, m: print(f"[{f:4.0%}] {m}", flush=True))
    result |= {"machine": f"{platform.machine()} CPU, {torch.get_num_threads()} torch threads, "
                          f"torch {torch.__version__}",
               "command": "python -m specviz.labs.batched " + " ".join(argv if argv is not None else sys.argv[1:])}
    Path(args.out).write_text(json.dumps(result, indent=1) + "\n")
    print(summary(result))


if __name__ == "__main__":
    main()
