"""Training data: chat prompts from task templates x subjects (specviz/subjects.json, read by
specviz/prompting.py), the target's answers to
them, and one teacher-forced target pass over each answer storing its top-k next-token log-probs (the
soft labels). The answers are cached in job order, so a longer run extends a shorter run's cache.

The subject lists, in cache order: "subjects" (answered `answers_per_prompt` times), then
"extra_subjects" and "more_subjects" (once each), each added when the drafts still memorised what they
were trained on (models/README.md, Data, says by how much). "held_out" never enters training: the
evaluation's prompts.
"""
from __future__ import annotations

import itertools
import pathlib
import random
import time

import torch

from specviz.loading import load_target
from specviz.prompting import EXTRA_SUBJECTS, FRESH_SUBJECTS, MORE_SUBJECTS, SHAPES, SUBJECTS, prompt_ids, prompts

DATA_SLICE = 480  # answers generated between two saves of the data cache


def training_jobs(seed: int, temps, answers_per_prompt: int, extra_subjects: int, n_prompts: int = 0):
    """(prompt, temperature) for the training data, in cache order: the first subject list's prompts
    `answers_per_prompt` times, then the first `extra_subjects` of the second and third lists' once each;
    each list shuffled with the seed on its own. n_prompts > 0 keeps only the first n prompts of the first
    list (tiny runs)."""
    first = prompts(SUBJECTS)
    random.Random(seed).shuffle(first)
    second = prompts(EXTRA_SUBJECTS[:extra_subjects])
    random.Random(seed + 1).shuffle(second)
    third = prompts(MORE_SUBJECTS[:max(0, extra_subjects - len(EXTRA_SUBJECTS))])
    random.Random(seed + 2).shuffle(third)
    if n_prompts:
        first, second, third = first[:n_prompts], [], []
    return data_jobs(first, temps, answers_per_prompt) + data_jobs(second + third, temps, 1)


def fresh_jobs(seed: int, temps, answers_per_prompt: int = 1) -> list[tuple[str, float]]:
    """(prompt, temperature) for the fine-tuning stage: the fresh subject list's prompts only, shuffled."""
    fresh = prompts(FRESH_SUBJECTS)
    random.Random(seed + 3).shuffle(fresh)
    return data_jobs(fresh, temps, answers_per_prompt)


def shape_jobs(seed: int, temps, shape_subjects: int = 40, replay_subjects: int = 20) -> list[tuple]:
    """(prompt, temperature) for the broadening stage (issue #48.4): the SHAPES templates over the first
    `shape_subjects` fresh subjects, plus the original TASKS over the next `replay_subjects` (the shipped
    draft's own kind of prompt, so a fine-tune on new shapes does not forget the old ones; its first data
    cache is not on every machine), one answer each, shuffled together."""
    return broad_jobs(seed, temps, shape_subjects, replay_subjects, replay_subjects=0, shuffle=4)


def broad_jobs(seed: int, temps, shape_subjects: int = 70, fresh_tasks: int = 20, replay_subjects: int = 50,
               shuffle: int = 5):
    """(prompt, temperature) for the second broadening stage (issue #48.4): the SHAPES templates over the first
    `shape_subjects` fresh subjects (the first stage used 40), the original TASKS over the next `fresh_tasks`,
    and the TASKS over the last `replay_subjects` of the third training list, so the draft keeps what it had on
    the shapes it was trained on; one answer each, shuffled together (seed + `shuffle`). Held-out subjects and
    shapes never enter."""
    fresh = FRESH_SUBJECTS[:shape_subjects + fresh_tasks]
    jobs = (prompts(fresh[:shape_subjects], SHAPES) + prompts(fresh[shape_subjects:])
            + prompts(MORE_SUBJECTS[-replay_subjects:] if replay_subjects else []))
    random.Random(seed + shuffle).shuffle(jobs)
    return data_jobs(jobs, temps, 1)


def all_jobs(seed: int, temps, answers_per_prompt: int, extra_subjects: int):
    """(prompt, temperature) for the main recipe with the broad shapes in it (issue #48.4): training_jobs first
    (so an existing main data cache stays a valid prefix), then broad_jobs without its replay (those subjects
    are in the main lists already)."""
    return training_jobs(seed, temps, answers_per_prompt, extra_subjects) + broad_jobs(seed, temps, replay_subjects=0)


def features_path(data: pathlib.Path) -> pathlib.Path:
    """Where the target states of a data cache are cached: feats.pt beside the main data.pt (as it always was),
    <name>_feats.pt beside any other, so two data sets never overwrite each other's states."""
    return data.with_name("feats.pt" if data.name == "data.pt" else f"{data.stem}_feats.pt")


def data_jobs(prompt_list, temperatures, answers_per_prompt: int) -> list[tuple[str, float]]:
    """(prompt, temperature) in cache order: round r gives prompt i temperature i + r (mod the list),
    so a prompt's answers all differ in temperature; a longer run extends a shorter run's cache."""
    return [(p, temperatures[(i + r) % len(temperatures)])
            for r in range(answers_per_prompt) for i, p in enumerate(prompt_list)]


@torch.inference_mode()
def make_data(target, tok, jobs, max_new: int, topk: int, batch: int, seed: int, log=print) -> list[dict]:
    """Target answers (batched, left-padded, one temperature per batch) then one teacher-forced pass over
    each storing its top-k log-probs. Returns one record per job, in job order."""
    torch.manual_seed(seed)
    tok.padding_side = "left"
    order = sorted(range(len(jobs)), key=lambda j: jobs[j][1])  # stable: cache order within a temperature
    jobs_by_temp = [(jobs[j][0], jobs[j][1], j) for j in order]
    groups = [list(g) for _, g in itertools.groupby(jobs_by_temp, key=lambda j: j[1])]
    batches = [g[s:s + batch] for g in groups for s in range(0, len(g), batch)]
    pad = tok.pad_token_id if tok.pad_token_id is not None else tok.eos_token_id
    by_job, done, made, t0 = {}, 0, 0, time.time()
    for chunk in batches:
        temp = chunk[0][1]
        enc = [prompt_ids(tok, p) for p, _, _ in chunk]
        width = max(map(len, enc))
        ids = torch.tensor([[pad] * (width - len(e)) + e for e in enc], device=target.device)
        mask = torch.tensor([[0] * (width - len(e)) + [1] * len(e) for e in enc], device=target.device)
        kw = dict(do_sample=True, temperature=temp, top_k=0, top_p=1.0) if temp > 0 else dict(do_sample=False)
        out = target.generate(input_ids=ids, attention_mask=mask, max_new_tokens=max_new, pad_token_id=pad, **kw)
        answers = [row[width:].tolist() for row in out]
        answers = [a[:a.index(pad) + 1] if pad in a else a for a in answers]  # cut at EOS (inclusive)
        for record, (_, _, j) in zip(soft_labels(target, list(zip(enc, answers)), topk), chunk):
            by_job[j] = record | {"temperature": temp}
        made += sum(map(len, answers))
        done += len(chunk)
        log(f"  data {done}/{len(jobs)} answers, {made / (time.time() - t0):.0f} answer tokens/s")
    return [by_job[j] for j in range(len(jobs))]


# positions per teacher-forced pass: a GPU takes many sequences at once; a CPU's full-vocabulary logits stay small
PASS_POSITIONS = {"cuda": 32768, "cpu": 2048}


def pass_batches(lengths: list[int], device) -> list[list[int]]:
    """Consecutive sequence indices grouped for right-padded teacher-forced passes: a group grows while its
    padded size (members x longest) stays within the device's PASS_POSITIONS; one sequence at least."""
    budget = PASS_POSITIONS.get(torch.device(device).type, PASS_POSITIONS["cpu"])
    groups, width = [], 0
    for i, n in enumerate(lengths):
        if groups and (len(groups[-1]) + 1) * max(width, n) <= budget:
            groups[-1].append(i)
            width = max(width, n)
        else:
            groups.append([i])
            width = n
    return groups


def right_padded(seqs: list[list[int]], device) -> torch.Tensor:
    """(B, longest) token ids, each row padded on the right with 0: a causal pass never lets a real position
    see the padding after it, so each row's real positions are what a pass over that row alone computes."""
    width = max(map(len, seqs))
    return torch.tensor([s + [0] * (width - len(s)) for s in seqs], device=device)


def soft_labels(target, pairs, topk: int) -> list[dict]:
    """For each (prompt, answer): one teacher-forced target pass over prompt + answer (batched, right-padded),
    keeping the top-k log-probs at the positions that predict the answer's tokens."""
    seqs = [p + a for p, a in pairs]
    out = []
    for group in pass_batches([len(s) for s in seqs], target.device):
        # the head over every position, not only the answer's: a packed target picks its kernel by row count,
        # and a few answer rows could get another kernel (other rounding) than they get in a longer call
        logits = target(input_ids=right_padded([seqs[i] for i in group], target.device)).logits
        for row, i in enumerate(group):
            start = len(pairs[i][0])
            logp = torch.log_softmax(logits[row, start - 1:len(seqs[i]) - 1].float(), -1)
            v, top = torch.topk(logp, topk, -1)
            out.append({"ids": seqs[i], "start": start, "top_logp": v.half().cpu(), "top_ids": top.int().cpu()})
    return out


def cache_in_job_order(records, jobs, tok):
    """Caches written before answers carried their temperature were sorted by temperature; put such a
    cache (one answer per prompt) back in job order by matching each answer's prompt tokens."""
    if not records or "temperature" in records[0]:
        return records
    by_prompt = {tuple(r["ids"][:r["start"]]): r for r in records}
    ordered = []
    for prompt, temp in jobs:
        r = by_prompt.pop(tuple(prompt_ids(tok, prompt)), None)
        if r is None:
            break
        ordered.append(r | {"temperature": temp})
    return ordered


def cached_data(path: pathlib.Path, jobs, tok, max_new: int, topk: int, batch: int, seed: int,
                regenerate: bool = False, log=print) -> list[dict]:
    """One record per job: those in the cache at `path` (unless regenerate), the rest generated and saved
    slice by slice (a long run that is cut keeps what it made). A run on fewer jobs reads a prefix."""
    records = []
    if path.is_file() and not regenerate:
        records = cache_in_job_order(torch.load(path, weights_only=False), jobs, tok)
        log(f"data: {len(records)} answers from {path}")
    if len(records) < len(jobs):
        temps = sorted({t for _, t in jobs[len(records):]})
        log(f"data: {len(jobs) - len(records)} more answers, temperatures {temps}, {max_new} new tokens each")
        gen, _ = load_target()  # no gradients, no weights read back: the packed (fast) target generates
        path.parent.mkdir(parents=True, exist_ok=True)
        while len(records) < len(jobs):
            todo = jobs[len(records):len(records) + DATA_SLICE]
            records += make_data(gen, tok, todo, max_new, topk, batch, seed + len(records), log)
            torch.save(records, path)
    return records[:len(jobs)]


def head_subset(records, size: int, eos: int) -> torch.Tensor:
    """The `size` token ids the target emits most often in the training answers (EOS always in)."""
    counts = torch.zeros(200_000, dtype=torch.long)
    for r in records:
        ans = torch.tensor(r["ids"][r["start"]:])
        counts.index_add_(0, ans, torch.ones_like(ans))
        top = r["top_ids"][:, :4].reshape(-1).long()  # the target's near-misses matter too
        counts.index_add_(0, top, torch.ones_like(top))
    counts[eos] = counts.max() + 1
    return torch.sort(torch.topk(counts, size).indices).values
