import os, sys, time, statistics, torch
torch.set_num_threads(2)
from specviz.drafters import quantized_model, make_drafter, QUANTIZED
from specviz.models import load_models
from specviz.labs.timing import Forward
from specviz.prompting import prompt_ids
from specviz.engine.plain import plain_steps
from specviz.engine.speculative import speculative_steps
from specviz.engine.loop import run_steps
M = load_models(); t, tok = M.target, M.tokenizer
ids = prompt_ids(tok, "Explain why the sky is blue in two sentences.")
t0 = time.perf_counter()
models = {"fp32": t} | {k: quantized_model(t, k) for k in QUANTIZED}
print("build all", time.perf_counter() - t0, "prompt", len(ids))
sizes = [1, 2, 40]
with torch.inference_mode():
    fw = {n: Forward(m, ids) for n, m in models.items()}
    times = {(n, s): [] for n in models for s in sizes}
    for r in range(6):
        for n in models:
            for s in sizes:
                ms = fw[n].run(s)
                if r: times[(n, s)].append(ms)
for n in models:
    print(n, "  ".join(f"M={s}: med {statistics.median(times[(n,s)]):.1f} min {min(times[(n,s)]):.1f}" for s in sizes))
ref = run_steps(plain_steps(t, tok, ids, 48))[1]
runs = {"plain": lambda: run_steps(plain_steps(t, tok, ids, 48))[1]} | {
    k: (lambda k=k: run_steps(speculative_steps(t, make_drafter(k, M), tok, ids, 48, 4))[1]) for k in QUANTIZED}
for k, f in runs.items():
    t0 = time.perf_counter(); r = f(); s = time.perf_counter() - t0
    c = r.counters
    print(k, f"{s:.2f}s", r.token_ids == ref.token_ids, round(c.acceptance_rate, 3) if k != "plain" else "", c.per_position() if k != "plain" else "")
