"""The model card's figures for a draft, on held-out prompts only (never used in training)."""
from __future__ import annotations

import statistics

import torch

from specviz.drafters import make_drafter
from specviz.drafters.feature import FeatureDraft, shifted
from specviz.engine.plain import plain_steps
from specviz.labs.measure import timed_rounds
from specviz.labs.timing import draft_step_ms, forward_ms
from specviz.engine.speculative import speculative_steps
from specviz.engine.loop import run_steps
from specviz.engine.tree import tree_speculative_steps
from specviz.trace import Counters
from specviz.loading import Models
from specviz.prompting import HELD_OUT_SHAPES, TASKS, held_out_prompts, prompt_ids

PLAIN = "plain greedy"
TREE = "eagle2 N=16 D=6"  # the benchmark's EAGLE-2 row: 16 nodes per verify pass, depth 6


@torch.inference_mode()
def teacher_forced(target, draft, seq: list[int], n: int):
    """(p, q) at the answer positions after the first (the last n tokens of seq are the answer), each
    read from the real prefix; for a feature draft that is its first draft position (real target states)."""
    seq = torch.tensor([seq], device=target.device)
    if isinstance(draft, FeatureDraft):
        o = target(input_ids=seq, output_hidden_states=True)
        p = torch.softmax(o.logits[0, -n:-1].float(), -1)
        states = torch.cat([o.hidden_states[j][0] for j in draft.read_layers], -1)
        h, _ = draft(seq, shifted(states)[:-1][None])
        return p, torch.softmax(draft.head(h[0, -n:-1]).float(), -1)
    p = torch.softmax(target(input_ids=seq, logits_to_keep=n + 1).logits[0, :-1].float(), -1)
    return p, torch.softmax(draft(input_ids=seq, logits_to_keep=n + 1).logits[0, :-1].float(), -1)


def agreement(pairs) -> float:
    """Top-1 agreement of q with p over all positions of all (p, q) pairs."""
    return float(torch.cat([(p.argmax(-1) == q.argmax(-1)).float() for p, q in pairs]).mean())


PROMPT_SETS = {"subjects": TASKS, "shapes": HELD_OUT_SHAPES}  # the held-out subjects in which templates


def evaluation_prompts(tok, n_prompts: int, prompt_set: str = "subjects") -> list[list[int]]:
    """n held-out prompts spread over subjects AND templates (a stride of len(templates) + 1 walks both)."""
    templates = PROMPT_SETS[prompt_set]
    plist = held_out_prompts(templates)
    return [prompt_ids(tok, plist[(i * (len(templates) + 1)) % len(plist)]) for i in range(n_prompts)]


def timed_runs(target, tok, drafter, ids_list, max_new: int, ks, rounds: int, log=print, tree=None) -> dict:
    """Plain greedy and speculative greedy at each K on every prompt (and, with tree = a fresh tree
    drafter's factory, the EAGLE-2 tree TREE), interleaved by measure.timed_rounds.
    Returns per run key (PLAIN, K=k, TREE): the median seconds per prompt, the summed Counters, and the last
    round's token ids per prompt."""
    keys = [PLAIN] + [f"K={k}" for k in ks] + ([TREE] if tree else [])
    out = {key: {"seconds": [], "counters": Counters(), "tokens": []} for key in keys}

    def spec(ids, k):
        return lambda: run_steps(speculative_steps(target, drafter(), tok, ids, max_new, k))[1]

    for i, ids in enumerate(ids_list):
        runs = {PLAIN: lambda: run_steps(plain_steps(target, tok, ids, max_new))[1]}
        runs |= {f"K={k}": spec(ids, k) for k in ks}
        if tree:
            runs[TREE] = lambda ids=ids: run_steps(tree_speculative_steps(target, tree(), tok, ids, max_new, 16, 6))[1]
        seconds, results = timed_rounds(runs, rounds)
        for key in keys:
            out[key]["seconds"].append(statistics.median(seconds[key]))
            out[key]["counters"] += results[key].counters
            out[key]["tokens"].append(results[key].token_ids)
        log(f"  prompt {i + 1}/{len(ids_list)} timed")
    return out


def evaluate(target, tok, draft, n_prompts: int = 16, max_new: int = 64, ks=(2, 4, 6, 8), log=print,
             train_records=(), rounds: int = 2, prompt_set: str = "subjects") -> dict:
    """Greedy acceptance, tokens per verify pass and acceptance by draft position per K; teacher-forced
    top-1 agreement on held-out answers (and on train_records, greedy training answers: the gap says how
    much of what the draft learned was memorised); sampling acceptance at T = 1 (mean over positions of
    sum_x min(p, q) = 1 - TV(p, q)); c; and the wall-clock speedup over plain greedy per K, each prompt
    timed in `rounds` interleaved rounds (median)."""
    feature = isinstance(draft, FeatureDraft)
    models = Models(target, tok, None if feature else draft, "token draft", target.device,
                    feature_draft=draft if feature else None)
    drafter = lambda: make_drafter("feature" if feature else "token", models)  # noqa: E731
    ids_list = evaluation_prompts(tok, n_prompts, prompt_set)
    out = {"prompts": len(ids_list), "prompt_set": prompt_set, "max_new_tokens": max_new}
    runs = timed_runs(target, tok, drafter, ids_list, max_new, ks, rounds, log,
                      tree=(lambda: make_drafter("eagle2", models)) if feature else None)
    plain = runs[PLAIN]
    for k in ks:
        run = runs[f"K={k}"]
        c = run["counters"]
        by_position = (c.per_position() + [None] * k)[:k]  # P(position i accepted | the ones before were)
        out[f"K={k}"] = {"greedy_acceptance": c.acceptance_rate, "mean_acceptance_length": c.mean_acceptance_length,
                         "tokens_per_target_pass": c.tokens_per_target_pass,  # prefill counted, as the CLI does
                         "by_position": [None if a is None else round(a, 3) for a in by_position],
                         "speedup": sum(plain["seconds"]) / sum(run["seconds"])}
        log(f"  K={k}: acceptance {c.acceptance_rate:.3f}, tokens/pass {c.mean_acceptance_length:.2f} "
            f"({out[f'K={k}']['tokens_per_target_pass']:.2f} with the prefill)")
    if TREE in runs:  # the tree target is read against the chain at K = 4
        c = runs[TREE]["counters"]
        out[TREE] = {"mean_acceptance_length": c.mean_acceptance_length,
                     "tokens_per_target_pass": c.tokens_per_target_pass,
                     "speedup": sum(plain["seconds"]) / sum(runs[TREE]["seconds"])}
        if "K=4" in out:
            out[TREE]["vs_chain_K4_tokens_per_target_pass"] = (out[TREE]["tokens_per_target_pass"]
                                                               / out["K=4"]["tokens_per_target_pass"])
        log(f"  {TREE}: tokens/pass {c.mean_acceptance_length:.2f} ({out[TREE]['tokens_per_target_pass']:.2f} with "
            f"the prefill), {out[TREE]['speedup']:.2f}x plain greedy")
    held_out = [teacher_forced(target, draft, ids + answer, len(answer))
                for ids, answer in zip(ids_list, plain["tokens"])]
    out["teacher_forced_agreement_held_out"] = agreement(held_out)
    if train_records:
        answers = [(r["ids"][:r["start"] + max_new], len(r["ids"][r["start"]:r["start"] + max_new]))
                   for r in train_records]
        out["teacher_forced_agreement_train"] = agreement([teacher_forced(target, draft, s, n) for s, n in answers])
    overlaps = torch.cat([torch.minimum(p, q).sum(-1) for p, q in held_out]).tolist()
    out["sampling_acceptance_T1"] = sum(overlaps) / len(overlaps)
    t1, d1 = forward_ms(target, ids_list[0], 1), draft_step_ms(draft, target, ids_list[0])
    out["target_ms"], out["draft_ms"], out["c"] = t1, d1, d1 / t1
    best = max(ks, key=lambda k: out[f"K={k}"]["speedup"])
    same = all(runs[key]["tokens"] == plain["tokens"] for key in runs)
    out["speedup_K"], out["speedup"], out["identical"] = best, out[f"K={best}"]["speedup"], same
    log(f"  teacher-forced agreement held-out {out['teacher_forced_agreement_held_out']:.3f}, training "
        f"{out.get('teacher_forced_agreement_train', float('nan')):.3f}")
    log(f"  sampling acceptance {out['sampling_acceptance_T1']:.3f}; c = {out['c']:.3f}; speedup "
        + ", ".join(f"K={k} {out[f'K={k}']['speedup']:.2f}x" for k in ks) + f" (identical: {same})")
    return out
