"""Dynamic-K policies replayed on one run (issue 38, item 3): fixed K, transformers' heuristic schedule, and a
draft-confidence stop as llama.cpp's --draft-p-min (the token under the threshold is not drafted) and transformers'
assistant_confidence_threshold (it is kept, then drafting stops) do it.

Why a replay is exact, for a token draft under greedy verification: while every draft so far matched, the draft
reads exactly the target's greedy text, so its proposal at output position j is its argmax a_j on that text, and
ONE teacher-forced pass of the draft over the run's output gives a_j and its top probability c_j at every j. A
cycle starting at position t accepts the run of matches a_t = y_t, a_t+1 = y_t+1, ... (at most the K the policy
drafts), and the output is the same greedy text whatever the policy. Only drafts proposed after the first
mismatch read the draft's own wrong token; a confidence stop needs their probabilities to know how many it
drafted (the cost, never the output), so the replay runs the draft on that continuation for those cycles only.

Costs: a draft step t_d and a verify pass over n positions t_1 * v(n - 1), measured; the predicted time of a
policy is the sum over its cycles. tests/test_policies.py holds the replay to the engine's own runs cycle by
cycle (ConfidenceStopDrafter runs the confidence stop in the real engine)."""
from __future__ import annotations

import time
from dataclasses import dataclass

import torch

from specviz.drafters import make_drafter
from specviz.drafters.confidence import confidence_stop
from specviz.engine.loop import room, run_steps
from specviz.engine.plain import plain_steps
from specviz.engine.speculative import next_k, speculative_steps
from specviz.loading import Models
from specviz.tokens import eos_ids
from specviz.labs.measure import verify_cost_profile
from specviz.labs.timing import draft_step_ms


@dataclass(frozen=True)
class Policy:
    name: str
    kind: str  # "fixed" | "heuristic" | "confidence"
    k: int  # fixed: K; heuristic: the starting K; confidence: the most drafted per cycle
    threshold: float = 0.0  # confidence: stop when the draft's top probability falls below it
    keep_crossing: bool = False  # confidence: transformers keeps the token under the threshold, llama.cpp does not
    k_max: int = 16  # heuristic: the engine's cap
    label: str = ""  # a short name for a chart's axis (name when empty)


def default_policies(k: int, threshold: float) -> list[Policy]:
    return [Policy(f"fixed K = {k}", "fixed", k, label=f"fixed<br>K = {k}"),
            Policy(f"transformers heuristic (from K = {k}, +2 / −1)", "heuristic", k,
                   label=f"heuristic<br>+2 / −1 from {k}"),
            Policy(f"confidence stop, llama.cpp --draft-p-min {threshold:g} (K ≤ 16)", "confidence", 16, threshold,
                   label=f"llama.cpp<br>p-min {threshold:g}"),
            Policy(f"confidence stop, transformers threshold {threshold:g} (K ≤ 16)", "confidence", 16, threshold,
                   keep_crossing=True, label=f"transformers<br>threshold {threshold:g}")]


@torch.no_grad()
def teacher_forced(draft, prompt: list[int], output: list[int]) -> tuple[list[int], list[float]]:
    """The draft's argmax a_j and its probability c_j at every output position j, reading the run's own text."""
    ids = list(prompt) + list(output)
    logits = draft(torch.tensor([ids], device=draft.device)).logits[0, len(prompt) - 1: len(ids) - 1].float()
    probs = torch.softmax(logits, -1)
    top = probs.max(-1)
    return top.indices.tolist(), top.values.tolist()


@torch.no_grad()
def free_run_confidences(draft, context: list[int], n: int, threshold: float) -> list[float]:
    """The draft drafting on from `context` (ending in its own rejected token): the top probability of each next
    draft, up to n of them, stopping after the first under the threshold."""
    ctx, out = list(context), []
    for _ in range(n):
        probs = torch.softmax(draft(torch.tensor([ctx], device=draft.device)).logits[0, -1].float(), -1)
        top = probs.max(-1)
        out.append(float(top.values))
        if out[-1] < threshold:
            break
        ctx.append(int(top.indices))
    return out


def replay(policy: Policy, output: list[int], argmax: list[int], conf: list[float], max_new: int,
           stop: set[int] = frozenset(), continuation=lambda t, m, n: []) -> list[dict]:
    """The cycles `policy` runs over a greedy run's output (y = output, the draft's teacher-forced argmax and top
    probability per position; max_new: the run's token budget). continuation(t, m, n): the draft's top
    probabilities for up to n drafts after the mismatch at position t + m (free_run_confidences), asked only by a
    confidence stop. Each cycle: {"start", "k" (drafted), "accepted", "emitted", "draft_passes"}, as the engine
    counts them."""
    n, t, k, cycles = len(output), 0, policy.k, []
    while t < n:
        k_now = room(k, max_new - t)  # the engine's budget rule
        drafted, passes = k_now, k_now
        m = 0
        while m < k_now and t + m < n and argmax[t + m] == output[t + m]:
            m += 1
        if policy.kind == "confidence":
            confs = [conf[t + i] for i in range(min(m + 1, k_now))]
            if m + 1 < k_now and all(c >= policy.threshold for c in confs):
                confs += continuation(t, m, k_now - m - 1)
            for i, c in enumerate(confs):  # the drafter's own stop rule, draft by draft
                keep, stops = confidence_stop(c, policy.threshold, policy.keep_crossing)
                if stops:
                    drafted, passes = i + keep, i + 1  # its step ran either way
                    break
            m = min(m, drafted)
        ended = m > 0 and output[t + m - 1] in stop
        emitted = m if ended else m + 1
        cycles.append({"start": t, "k": drafted, "accepted": m, "emitted": emitted, "draft_passes": passes})
        t += emitted
        if ended:
            break
        if policy.kind == "heuristic":
            k = next_k(k, m, drafted, policy.k_max)
    return cycles


def predicted_seconds(cycles: list[dict], t_draft: float, t_1: float, v) -> float:
    """Draft steps at t_draft each, verify passes over k + 1 positions at t_1 * v(k) (v(0) = 1)."""
    return sum(c["draft_passes"] * t_draft + t_1 * (v(c["k"]) if c["k"] else 1.0) for c in cycles)


def drafter_for(policy: Policy, draft_model):
    """The registry's drafter for a policy on this draft model: the token draft, or its confidence stop."""
    models = Models(None, None, draft_model, "token draft", draft_model.device)  # the models a replay has: a draft
    if policy.kind == "confidence":
        return make_drafter("confidence", models, threshold=policy.threshold, keep_crossing=policy.keep_crossing)
    return make_drafter("token", models)


def engine_run(policy: Policy, target, draft_model, tokenizer, prompt: list[int], max_new: int):
    """The policy in the real engine: (cycles, result, seconds)."""
    steps = speculative_steps(target, drafter_for(policy, draft_model), tokenizer, prompt, max_new,
                              k=policy.k, dynamic_k=policy.kind == "heuristic", k_max=policy.k_max)
    t0 = time.perf_counter()
    cycles, result = run_steps(steps)
    return cycles, result, time.perf_counter() - t0


def costs(target, draft, ctx: list[int], k_max: int = 16) -> dict:
    """What the prediction charges: t_d (one draft step), t_1 (one target step) and v(k) (a k + 1-position verify
    pass over t_1), measured here by the one timer (labs/timing.py: medians)."""
    prof = verify_cost_profile(target, ctx, ks=range(1, k_max + 1), repeats=3)
    return {"t_draft_s": draft_step_ms(draft, target, ctx, repeats=5) / 1000, "t1_s": prof["t1_ms"] / 1000,
            "v": prof["v"], "noisy": prof["noisy"]}


def compare_policies(policies: list[Policy], target, draft, tokenizer, prompt: list[int], output: list[int],
                     max_new: int, cost: dict) -> list[dict]:
    """Each policy replayed on the run's output: its cycles, tokens per verify pass, drafts, draft passes, and the
    predicted time and speedup over plain greedy (output tokens × t_1) from the measured costs."""
    argmax, conf = teacher_forced(draft, prompt, output)
    stop = eos_ids(target, tokenizer)
    v = lambda k: cost["v"].get(k, 1.0)  # noqa: E731
    plain = len(output) * cost["t1_s"]
    rows = []
    for pol in policies:
        def cont(t, m, n, pol=pol):
            return free_run_confidences(draft, list(prompt) + list(output[:t + m]) + [argmax[t + m]], n, pol.threshold)
        cycles = replay(pol, output, argmax, conf, max_new, stop, cont)
        secs = predicted_seconds(cycles, cost["t_draft_s"], cost["t1_s"], v)
        rows.append({"policy": pol.name, "label": pol.label or pol.name, "cycles": cycles, "passes": len(cycles),
                     "tokens_per_pass": sum(c["emitted"] for c in cycles) / len(cycles),
                     "drafted": sum(c["k"] for c in cycles), "accepted": sum(c["accepted"] for c in cycles),
                     "draft_passes": sum(c["draft_passes"] for c in cycles), "predicted_s": secs,
                     "predicted_speedup": plain / secs, "plain_predicted_s": plain})
    return rows


def measure_policies(policies: list[Policy], target, draft, tokenizer, prompt: list[int], max_new: int,
                     progress=lambda f, m: None) -> dict:
    """Each policy in the real engine, and plain greedy, timed once each: {"plain_s", policy name: {"seconds",
    "output", "passes"}}."""
    t0 = time.perf_counter()
    _, plain = run_steps(plain_steps(target, tokenizer, prompt, max_new))
    out = {"plain_s": time.perf_counter() - t0, "plain_output": plain.token_ids}
    for i, pol in enumerate(policies):
        progress(i / len(policies), pol.name)
        cycles, result, secs = engine_run(pol, target, draft, tokenizer, prompt, max_new)
        out[pol.name] = {"seconds": secs, "output": result.token_ids, "passes": len(cycles),
                         "cycles": [(c.k, c.accepted, len(c.emitted), c.draft_passes) for c in cycles]}
    progress(1.0, "done")
    return out


def replay_matches(rows: list[dict], measured: dict) -> bool:
    """Did the engine run every policy in exactly the cycles the replay predicted (drafted, accepted, emitted,
    draft passes)?"""
    return all([(c["k"], c["accepted"], c["emitted"], c["draft_passes"]) for c in r["cycles"]]
               == [tuple(x) for x in measured[r["policy"]]["cycles"]] for r in rows)
