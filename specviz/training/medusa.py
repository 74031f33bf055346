"""Medusa-1 training (frozen target): the heads of specviz/drafters/medusa.py on the target's final states.

Data: the target's GREEDY answers to training prompts (never the held-out subjects), with the top-k
soft labels of one teacher-forced pass (data.py) and the target's final, normed state at every position
(feature.py's state cache, read layer = the last). Both are computed once and cached next to the data.

Loss: head k at the state f_t predicts x_{t+1+k}; its label is the target's own top-k distribution at
position t+k (what the target would say there, given the real prefix): the project's one distillation
loss (loss.topk_cross_entropy), summed over heads. On the target's greedy answers its argmax IS x_{t+1+k}.
Only the blocks train (the head's rows are the target's, frozen), so the training rows are independent
positions: minibatches of positions, no sequences, AdamW with a cosine-decayed rate as train.py's loop.
"""
from __future__ import annotations

import json
import math
import pathlib
import random
import time

import torch
from safetensors.torch import load_file, save_file

from specviz.drafters.medusa import MedusaHeads, target_rows
from specviz.prompting import prompt_ids
from specviz.prompting import EXTRA_SUBJECTS, MORE_SUBJECTS, SUBJECTS, prompts
from specviz.training.loss import topk_cross_entropy


def position_table(records, states, num_heads: int) -> dict:
    """Every answer position's state and soft label, flattened over the records. Row i holds a state f_t,
    t from start - 2 (the state before the last prompt token: at inference the first cycle reads it and
    its head 1 drafts the first answer token) to the end. Head k at f_t predicts x_{t+1+k}: its label is
    the target's distribution at position t + k, top_logp/top_ids row label[i] + k - 1, valid while
    ok[i, k - 1] (the answer goes on that far)."""
    xs, lps, ids, label, ok = [], [], [], [], []
    base = 0
    for r, s in zip(records, states):
        start, rows = r["start"], r["top_logp"].shape[0]  # label row j predicts answer token start + j
        lo = max(start - 2, 0)
        xs.append(s[lo:start - 2 + rows])  # f_t for t = lo .. start - 3 + rows (later ones label nothing)
        for t in range(lo, start - 2 + rows):
            j = t + 1 - (start - 1)  # head 1 at f_t reads label row t + 1 - (start - 1)
            label.append(base + j)
            ok.append([0 <= j + k < rows for k in range(num_heads)])
        lps.append(r["top_logp"])
        ids.append(r["top_ids"])
        base += rows
    return {"x": torch.cat(xs), "top_logp": torch.cat(lps), "top_ids": torch.cat(ids),
            "label": torch.tensor(label), "ok": torch.tensor(ok, dtype=torch.bool)}


def subset_logits(heads: MedusaHeads, f: torch.Tensor) -> torch.Tensor:
    """(H, B, rows + 1) logits over the head's own rows only, and a last column of -inf for every token
    outside them: the same softmax as heads(f) (whose other 41k entries are -inf), without writing a
    49152-wide tensor per head and position (that made a training step 3x slower on this CPU)."""
    x = torch.stack([f + torch.nn.functional.silu(block(f)) for block in heads.blocks])
    sub = heads.head.proj(x)
    return torch.cat([sub, torch.full_like(sub[..., :1], float("-inf"))], -1)


def subset_ids(table: dict, head) -> torch.Tensor:
    """The table's top-k token ids as column numbers of subset_logits (outside the head's rows: the -inf
    column, so topk_cross_entropy renormalises the target's top-k over the tokens the head can say)."""
    column = torch.full((head.vocab_size,), len(head.ids), dtype=torch.long)
    column[head.ids.cpu()] = torch.arange(len(head.ids))
    return column[table["top_ids"].long()]


def batch_loss(heads: MedusaHeads, table: dict, rows: torch.Tensor) -> tuple[torch.Tensor, int]:
    """Distillation loss of every head over the table rows `rows` (summed), and the (row, head) pairs.
    table["top_sub"]: subset_ids of its labels."""
    logits = subset_logits(heads, table["x"][rows].float())  # (H, B, rows + 1)
    total, n = 0.0, 0
    for k in range(heads.num_heads):
        keep = table["ok"][rows, k]
        if keep.any():
            at = table["label"][rows][keep] + k
            total = total + topk_cross_entropy(logits[k][keep], table["top_logp"][at], table["top_sub"][at])
            n += int(keep.sum())
    return total, n


def train_heads(heads: MedusaHeads, table: dict, steps: int, lr: float, batch: int, seed: int, log=print,
                log_every: int = 50) -> int:
    """`steps` AdamW steps on seeded random batches of positions, the rate on a cosine to lr/10."""
    params = list(heads.blocks.parameters())
    opt = torch.optim.AdamW(params, lr=lr, weight_decay=0.0)
    gen = torch.Generator().manual_seed(seed)
    n_rows, t0 = table["x"].shape[0], time.time()
    table = table | {"top_sub": subset_ids(table, heads.head)}
    heads.train()
    for step in range(steps):
        for group in opt.param_groups:
            group["lr"] = lr * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * step / steps)))
        rows = torch.randint(0, n_rows, (batch,), generator=gen)
        opt.zero_grad()
        loss, n = batch_loss(heads, table, rows)
        (loss / max(n, 1)).backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        if (step + 1) % log_every == 0:
            log(f"  step {step + 1} loss/head-token {loss.item() / max(n, 1):.3f} ({time.time() - t0:.0f} s)")
    heads.eval()
    return steps


@torch.inference_mode()
def head_accuracy(heads: MedusaHeads, states: torch.Tensor, answer_start: int, seq: list[int],
                  k: int = 10) -> torch.Tensor:
    """(H, k + 1) counts over the states f_t of one sequence (t >= answer_start - 2; seq is the target's
    own greedy text, states its final states): [h, i] for i < k counts the f_t whose head h+1's i-th
    candidate is x_{t+2+h}, the token the target wrote there; [h, k] counts the f_t tried. Summed over
    prompts, top-i accuracy = counts[:, :i].sum(-1) / counts[:, k]."""
    out = torch.zeros(heads.num_heads, k + 1)
    lo = max(answer_start - 2, 0)
    top = torch.topk(heads(states[lo:].float()), k, -1).indices  # (H, T - lo, k)
    for h in range(heads.num_heads):
        for j in range(top.shape[1]):
            t = lo + j
            if t + 2 + h < len(seq):
                out[h, k] += 1
                hit = (top[h, j] == seq[t + 2 + h]).nonzero()
                if len(hit):
                    out[h, int(hit[0])] += 1
    return out


def best_first_choices(top_acc: torch.Tensor, n: int) -> list[tuple[int, ...]]:
    """Medusa's way of choosing the tree: top_acc[h, i] = P(head h+1's i-th candidate is right), measured;
    a path's value is the product of its entries' accuracies (heads taken as independent), and the n
    paths of highest value are grown best-first from the root (a child's value never exceeds its
    parent's, so the set is a tree). Returned best first."""
    chosen: list[tuple[tuple[int, ...], float]] = []
    frontier = [((i,), float(top_acc[0, i])) for i in range(top_acc.shape[1])]
    while frontier and len(chosen) < n:
        frontier.sort(key=lambda pv: -pv[1])
        path, value = frontier.pop(0)
        chosen.append((path, value))
        if len(path) < top_acc.shape[0]:
            frontier += [(path + (i,), value * float(top_acc[len(path), i])) for i in range(top_acc.shape[1])]
    return [p for p, _ in chosen]


def seeded_order(items: list, seed: int) -> list:
    out = list(items)
    random.Random(seed).shuffle(out)
    return out


def training_prompts(seed: int, n: int) -> list[str]:
    """n prompts from every TRAINING subject list (the held-out subjects never enter), shuffled."""
    return seeded_order(prompts(SUBJECTS + EXTRA_SUBJECTS + MORE_SUBJECTS), seed)[:n]


def untrained_heads(target, token_draft: pathlib.Path, num_heads: int) -> MedusaHeads:
    """Fresh heads (blocks at zero: each head starts as the target's own next-token head) over the target's
    rows for the token draft's reduced-head ids."""
    ids = load_file(str(token_draft / "model.safetensors"))["head.ids"]
    last = target.config.num_hidden_layers
    return MedusaHeads(target.config.hidden_size, num_heads, target_rows(target, ids), last).to(target.device)


@torch.inference_mode()
def greedy_states(target, ids: list[int], max_new: int) -> tuple[list[int], torch.Tensor]:
    """The target's greedy text after ids (prompt + answer) and its final states at every position."""
    out = target.generate(input_ids=torch.tensor([ids], device=target.device), max_new_tokens=max_new,
                          do_sample=False, pad_token_id=target.config.eos_token_id)
    seq = out[0].tolist()
    o = target(input_ids=out, output_hidden_states=True, logits_to_keep=1)
    return seq, o.hidden_states[target.config.num_hidden_layers][0]


def accuracy_table(counts: torch.Tensor, ks=(1, 5)) -> dict:
    """{"top1": [per head], "top5": [...], "positions": [...]} from head_accuracy's summed counts."""
    k = counts.shape[1] - 1
    out = {f"top{i}": [round(float(c[:i].sum() / max(c[k], 1)), 4) for c in counts] for i in ks}
    return out | {"positions": [int(c[k]) for c in counts]}


def held_out_accuracy(target, heads: MedusaHeads, prompt_list: list[list[int]], max_new: int) -> dict:
    """Per-head top-1/top-5 accuracy against the target's own greedy answers to held-out prompts."""
    counts = torch.zeros(heads.num_heads, 11)
    for ids in prompt_list:
        seq, states = greedy_states(target, ids, max_new)
        counts += head_accuracy(heads, states, len(ids), seq)
    return accuracy_table(counts)


def training_accuracy(heads: MedusaHeads, records, states, n: int) -> torch.Tensor:
    """(H, 10) top-i candidate hit rates on the first n TRAINING answers (greedy): what the default tree
    is chosen from (never the held-out prompts)."""
    counts = sum(head_accuracy(heads, s.float(), r["start"], r["ids"]) for r, s in zip(records[:n], states[:n]))
    return counts[:, :-1] / counts[:, -1:].clamp(min=1)


def export_heads(heads: MedusaHeads, out: pathlib.Path, meta: dict) -> None:
    """The blocks only (bf16) + config.json; the head is the target's rows for the token draft's ids."""
    out.mkdir(parents=True, exist_ok=True)
    tensors = {f"blocks.{k}": v.detach().to(torch.bfloat16).contiguous().cpu()
               for k, v in heads.blocks.state_dict().items()}
    save_file(tensors, str(out / "model.safetensors"))
    (out / "config.json").write_text(json.dumps(meta, indent=2) + "\n")


@torch.inference_mode()
def answers_with_states(target, tok, prompt_list: list[str], max_new: int,
                        topk: int) -> tuple[list[dict], list[torch.Tensor]]:
    """The target's greedy answers to prompt_list (one batch, left-padded), then ONE teacher-forced pass
    per answer giving both its top-k soft labels (data.py's record format) and its final states (fp16):
    the soft-label pass and the state pass of the other drafts' recipe, fused (on a 2-core CPU each pass
    costs about as much as generating the answer)."""
    tok.padding_side = "left"
    pad = tok.pad_token_id if tok.pad_token_id is not None else tok.eos_token_id
    enc = [prompt_ids(tok, p) for p in prompt_list]
    width = max(map(len, enc))
    ids = torch.tensor([[pad] * (width - len(e)) + e for e in enc], device=target.device)
    mask = torch.tensor([[0] * (width - len(e)) + [1] * len(e) for e in enc], device=target.device)
    out = target.generate(input_ids=ids, attention_mask=mask, max_new_tokens=max_new, do_sample=False, pad_token_id=pad)
    records, states = [], []
    for row, e in zip(out, enc):
        answer = row[width:].tolist()
        if pad in answer:  # cut at EOS (inclusive)
            answer = answer[:answer.index(pad) + 1]
        o = target(input_ids=torch.tensor([e + answer], device=target.device), output_hidden_states=True)
        logp = torch.log_softmax(o.logits[0, len(e) - 1:-1].float(), -1)
        v, i = torch.topk(logp, topk, -1)
        records.append({"ids": e + answer, "start": len(e), "top_logp": v.half().cpu(), "top_ids": i.int().cpu(),
                        "temperature": 0.0})
        states.append(o.hidden_states[target.config.num_hidden_layers][0].half().cpu())
    return records, states


def cached_answers(path: pathlib.Path, prompt_list: list[str], target, tok, max_new: int, topk: int, batch: int,
                   log=print) -> tuple[list[dict], list[torch.Tensor]]:
    """answers_with_states for prompt_list, cached at path (records) and medusa_feats.pt beside it
    (states), both saved after every batch (a cut run keeps what it made; a longer run extends them)."""
    fpath = path.with_name("medusa_feats.pt")
    records = torch.load(path, weights_only=False) if path.is_file() else []
    states = torch.load(fpath, weights_only=True) if fpath.is_file() else []
    records, states = records[:len(states)], states[:len(records)]
    log(f"data: {len(records)} greedy answers with their states from {path}")
    path.parent.mkdir(parents=True, exist_ok=True)
    while len(records) < len(prompt_list):
        r, s = answers_with_states(target, tok, prompt_list[len(records):len(records) + batch], max_new, topk)
        records, states = records + r, states + s
        torch.save(records, path)
        torch.save(states, fpath)
        log(f"  data {len(records)}/{len(prompt_list)} answers")
    return records[:len(prompt_list)], states[:len(prompt_list)]
