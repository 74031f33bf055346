"""Distil the embedded target's drafts: `python -m specviz.distill [train] [--kind feature]`.

Recipe (seeded, CPU-friendly; uses CUDA when present):
  1. prompts: task templates x subjects -> several thousand chat prompts; held-out subjects never
     enter training and are used only for evaluation;
  2. data: the target answers each prompt of the first subject list `--answers-per-prompt` times (each
     at a different temperature) and the others once; one teacher-forced target pass over each answer
     stores its top-k next-token log-probs: the soft labels;
  3. train: a token draft with the target's own config but `--layers` decoder layers (initialised from
     target layers `--init`), sharing the target's frozen embedding and rotary table; the loss is the
     cross-entropy of the draft's distribution against the target's top-k distribution (renormalised
     over the draft's reduced head), `--steps` AdamW steps with a cosine-decayed rate;
  4. export: only the draft's own weights (layers, final norm, reduced head) as bf16 safetensors in
     models/draft.
`--kind feature` trains the feature draft (specviz/drafters/feature.py) instead: it starts from the token
draft in models/draft, reads the target's hidden states (`--read-layers`; one teacher-forced pass per
answer, cached next to the data), and is trained on the same soft labels, with further passes fed its own
outputs (what drafting positions 2..K see); it exports to models/feature_draft.
Evaluate on held-out prompts with `python -m specviz.distill eval [--draft models/feature_draft]`.
`python -m specviz.distill medusa` trains Medusa-1 heads (specviz/training/medusa.py) on the target's greedy
answers to training prompts and their final states, and exports them with their held-out accuracy to
models/medusa.
"""
from __future__ import annotations

import argparse
import functools
import json
import os
import pathlib
import sys
import time

import torch

from specviz.drafters.build import load_token_draft
from specviz.drafters.early_exit import early_exit_model
from specviz.drafters.feature import is_feature_draft
from specviz.drafters.feature import load as load_feature_draft
from specviz.drafters.medusa import load as load_medusa
from specviz.loading import REPO_ROOT, load_target
from specviz.training import feature, medusa, token
from specviz.prompting import EXTRA_SUBJECTS, MORE_SUBJECTS
from specviz.training.data import (all_jobs, broad_jobs, cached_data, features_path, fresh_jobs, head_subset,
                                   shape_jobs, training_jobs)
from specviz.training.evaluate import evaluate, evaluation_prompts
from specviz.training.export import export
from specviz.training.train import train

# The default recipe: the shipped drafts were made with exactly these (a test compares their configs)
DEFAULT_STEPS = {"token": 2400, "feature": 4600}
DEFAULT_SUBJECTS = {"token": "default", "feature": "all"}
DEFAULT_LR = 1e-3
COMMANDS = ("train", "eval", "medusa")
DATA = REPO_ROOT / "models" / "work" / "data.pt"
log = functools.partial(print, flush=True)


def add_train_args(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("--kind", choices=["token", "feature"], default="token",
                    help="token: a small LM over tokens (models/draft); feature: reads the target's hidden "
                         "states, EAGLE-style (models/feature_draft, specviz/drafters/feature.py)")
    ap.add_argument("--layers", type=int, default=1,
                    help="decoder layers (feature draft: copies of the token draft's layer, the extra ones "
                         "starting with zero output projections)")
    ap.add_argument("--init", default="0", help="token draft: comma-separated target layers to start from")
    ap.add_argument("--unroll", type=int, default=2, help="feature draft: passes fed with its own states")
    ap.add_argument("--read-layers", default="10,20,last",
                    help="feature draft: which target hidden states it reads (0 = embeddings, last = final normed)")
    ap.add_argument("--token-draft", default=str(REPO_ROOT / "models" / "draft"),
                    help="feature draft: the trained 1-layer token draft it starts from and shares its head with")
    ap.add_argument("--prompts", type=int, default=0, help="use only the first N training prompts (0: all)")
    ap.add_argument("--max-new-tokens", type=int, default=128)
    ap.add_argument("--temperatures", default="0,0.7,1.0")
    ap.add_argument("--topk", type=int, default=32)
    ap.add_argument("--gen-batch", type=int, default=16)
    ap.add_argument("--answers-per-prompt", type=int, default=2,
                    help="answers per prompt, each at a different temperature from --temperatures")
    ap.add_argument("--extra-subjects", type=int, default=len(EXTRA_SUBJECTS) + len(MORE_SUBJECTS),
                    help="how many of the second and third subject lists to add, one answer per prompt (0: none)")
    ap.add_argument("--steps", type=int, default=None,
                    help=f"training steps, cosine learning-rate decay over them (default: "
                         f"{DEFAULT_STEPS['token']} token, {DEFAULT_STEPS['feature']} feature)")
    ap.add_argument("--minutes", type=float, default=0.0, help="also stop training after this long (0: no cap)")
    ap.add_argument("--lr", type=float, default=DEFAULT_LR, help="(fc and the fuse layer learn at 0.3x)")
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--head-vocab", type=int, default=8192,
                    help="token draft: reduced head size (0: share the full head)")
    ap.add_argument("--data", default=str(DATA), help="cache of generated data (reused when present and "
                                                      "--regenerate is off)")
    ap.add_argument("--regenerate", action="store_true")
    ap.add_argument("--out", default=None, help="default: models/draft or models/feature_draft")
    ap.add_argument("--resume", default=None, metavar="DIR",
                    help="feature draft: fine-tune this trained feature draft instead of starting from the token "
                         "draft; its config keeps its own recipe under \"train\" and adds this run as \"fine_tune\"")
    ap.add_argument("--subjects", choices=["default", "fresh", "shapes", "broad", "all"], default=None,
                    help='the prompts answered (default: default for the token draft, all for the feature draft). '
                         'default: the task templates over the three training subject lists; fresh: answers to the '
                         'fresh subject list only (prompts no shipped draft was trained on), --answers-per-prompt '
                         'each; shapes: the other prompt shapes (conversations, code, constraints) over fresh '
                         'subjects, with the original templates over 20 more; broad: the shapes over 70 fresh '
                         'subjects, the original templates over 20 more and over 50 training subjects (replayed so the'
                         " old shapes are kept); all: the default lists, then broad's shapes and fresh templates (no "
                         'replay): the main recipe with the other shapes in it')


def add_eval_args(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("--draft", default=str(REPO_ROOT / "models" / "draft"),
                    help="a token draft's or a feature draft's folder")
    ap.add_argument("--prompts", type=int, default=16, help="held-out prompts")
    ap.add_argument("--max-new-tokens", type=int, default=64)
    ap.add_argument("--early-exit", type=int, default=0, help="evaluate the untrained first-L-layers drafter instead")
    ap.add_argument("--json", default=None, help="also write the results to this file")
    ap.add_argument("--data", default=str(DATA),
                    help="training data cache: its greedy answers give the training-side agreement (if present)")
    ap.add_argument("--ks", default="2,4,6,8")
    ap.add_argument("--rounds", type=int, default=2, help="timed rounds per prompt (the median is kept)")
    ap.add_argument("--prompt-set", choices=["subjects", "shapes"], default="subjects",
                    help="subjects: held-out subjects in the training templates (the card's figures); shapes: "
                         "held-out subjects in templates of other shapes that no training run uses")


def add_medusa_args(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("--heads", type=int, default=4, help="Medusa heads: head k drafts the k-th token ahead")
    ap.add_argument("--prompts", type=int, default=256, help="training prompts, one greedy answer each")
    ap.add_argument("--max-new-tokens", type=int, default=64)
    ap.add_argument("--topk", type=int, default=32)
    ap.add_argument("--gen-batch", type=int, default=32)
    ap.add_argument("--steps", type=int, default=450)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--batch", type=int, default=128, help="answer positions per step")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--choices", type=int, default=32, help="paths in the default tree (config.json)")
    ap.add_argument("--eval-prompts", type=int, default=12, help="held-out prompts for the accuracy figures")
    ap.add_argument("--token-draft", default=str(REPO_ROOT / "models" / "draft"),
                    help="the token draft whose reduced-head ids the heads score")
    ap.add_argument("--data", default=str(DATA.with_name("medusa_data.pt")),
                    help="cache of the greedy answers (and medusa_feats.pt beside it: their final states)")
    ap.add_argument("--out", default=str(REPO_ROOT / "models" / "medusa"))


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="python -m specviz.distill", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog="train is the default command: `python -m specviz.distill --kind feature` "
                                        "= `python -m specviz.distill train --kind feature`.")
    sub = ap.add_subparsers(dest="command", metavar="{train,eval,medusa}")
    add_train_args(sub.add_parser("train", help="distil a draft (the default command)",
                                  description="Distil a draft: see `python -m specviz.distill --help` for the recipe."))
    add_eval_args(sub.add_parser("eval", help="the model card's figures for a draft, on held-out prompts",
                                 description="A draft's acceptance, agreement and speedup on held-out prompts."))
    add_medusa_args(sub.add_parser("medusa", help="train Medusa-1 heads on the frozen target (models/medusa)",
                                   description=medusa.__doc__))
    return ap


def parse_args(argv=None) -> argparse.Namespace:
    """The command's settings (train unless argv starts with a command), train's with every default
    resolved (the step budget depends on --kind)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] not in COMMANDS + ("-h", "--help"):
        argv = ["train"] + argv
    a = parser().parse_args(argv)
    if a.command == "train":
        a.steps = a.steps or DEFAULT_STEPS[a.kind]
        a.subjects = a.subjects or DEFAULT_SUBJECTS[a.kind]
    return a


def main(argv=None) -> int:
    a = parse_args(argv)
    return {"eval": run_eval, "medusa": run_medusa}.get(a.command, run_train)(a)


def build_for_training(a, target, tok, records, data_path: pathlib.Path):
    """(the untrained draft, loss_fn(indices) -> (loss, tokens), the draft's config without "train")."""
    if a.kind == "feature":
        last = target.config.num_hidden_layers
        read_layers = [last if x == "last" else int(x) for x in a.read_layers.split(",")]
        if a.resume:  # a fine-tuning stage: the trained draft, its read layers and its own recipe kept
            draft = load_feature_draft(target, pathlib.Path(a.resume), packed=False)
            read_layers = list(draft.read_layers)
            meta = {k: v for k, v in json.loads((pathlib.Path(a.resume) / "config.json").read_text()).items()
                    if k not in ("kind", "head_from", "num_layers", "read_layers")}
        else:
            draft = feature.from_token_draft(target, pathlib.Path(a.token_draft), read_layers, a.layers)
            meta = {"init_from": "the token draft's layer, norm and head (fc: embedding passed through)",
                    "shares_with_target": ["embed_tokens", "rotary_emb"], "dtype": "bfloat16"}
        states = feature.cached_features(features_path(data_path), records, read_layers, load_target, log)
        return draft, lambda chunk: feature.batch_loss(draft, [records[i] for i in chunk], [states[i] for i in chunk],
                                                       a.unroll), meta
    init = [int(x) for x in a.init.split(",")]
    head_ids = head_subset(records, a.head_vocab, tok.eos_token_id) if a.head_vocab else None
    draft = token.build(target, a.layers, init, head_ids)
    meta = {"num_hidden_layers": a.layers, "init_from_target_layers": init[:a.layers],
            "shares_with_target": ["embed_tokens", "rotary_emb"] + ([] if a.head_vocab else ["lm_head"]),
            "head_vocab": a.head_vocab or None, "dtype": "bfloat16"}
    return draft, lambda chunk: token.batch_loss(draft, [records[i] for i in chunk]), meta


def run_train(a: argparse.Namespace) -> int:
    torch.manual_seed(a.seed)
    t0 = time.time()
    target, tok = load_target(packed=False)  # layers are copied from it and trained
    target.requires_grad_(False)
    data_path = pathlib.Path(a.data)
    temps = [float(t) for t in a.temperatures.split(",")]
    if a.resume and a.kind != "feature":
        raise SystemExit("error: --resume fine-tunes a feature draft (--kind feature).")
    jobs = {"fresh": lambda: fresh_jobs(a.seed, temps, a.answers_per_prompt)[:a.prompts or None],
            "shapes": lambda: shape_jobs(a.seed, temps)[:a.prompts or None],
            "broad": lambda: broad_jobs(a.seed, temps)[:a.prompts or None],
            "all": lambda: all_jobs(a.seed, temps, a.answers_per_prompt, a.extra_subjects)[:a.prompts or None],
            "default": lambda: training_jobs(a.seed, temps, a.answers_per_prompt, a.extra_subjects, a.prompts),
            }[a.subjects]()
    records = cached_data(data_path, jobs, tok, a.max_new_tokens, a.topk, a.gen_batch, a.seed, a.regenerate, log)
    n_tokens = sum(len(r["ids"]) - r["start"] for r in records)
    log(f"data ready: {n_tokens} answer tokens in {time.time() - t0:.0f} s")
    draft, loss_fn, meta = build_for_training(a, target, tok, records, data_path)
    t_train = time.time()
    steps = train(draft, len(records), loss_fn, a.steps, a.minutes, a.lr, a.batch, a.seed, log)
    record = {"answers": len(records), "answer_tokens": n_tokens, "temperatures": temps, "topk": a.topk,
              "answers_per_prompt": a.answers_per_prompt, "extra_subjects": a.extra_subjects,
              "subjects": a.subjects, "steps_planned": a.steps, "steps": steps, "batch": a.batch, "lr": a.lr,
              "lr_schedule": "cosine to 0.1x", "minutes": round((time.time() - t_train) / 60, 1), "seed": a.seed,
              "device": str(target.device), "threads": torch.get_num_threads()}
    out = pathlib.Path(a.out or REPO_ROOT / "models" / ("feature_draft" if a.kind == "feature" else "draft"))
    head_from = None
    if a.kind == "feature":
        record |= {"unroll": a.unroll, "read_layers": list(draft.read_layers), "lr_input_layers": "0.3x (fc, fuse)"}
        head_from = os.path.relpath(pathlib.Path(a.token_draft).resolve(), out.resolve().parent)
    if a.resume:
        meta["fine_tune"] = record | {"from": a.resume, "subjects": a.subjects, "date": time.strftime("%Y-%m-%d")}
    else:
        meta["train"] = record
    export(draft, out, meta, head_from)
    log(f"exported to {out} after {time.time() - t0:.0f} s")
    return 0


def run_eval(a: argparse.Namespace) -> int:
    target, tok = load_target()
    path = pathlib.Path(a.draft)
    if a.early_exit:
        draft = early_exit_model(target, a.early_exit)
    elif is_feature_draft(path):
        draft = load_feature_draft(target, path)
    else:
        draft = load_token_draft(target, path)
    data = pathlib.Path(a.data)
    train_records = [r for r in torch.load(data, weights_only=False) if r.get("temperature") == 0.0][:a.prompts] \
        if data.is_file() else []
    res = evaluate(target, tok, draft, a.prompts, a.max_new_tokens, tuple(int(k) for k in a.ks.split(",")),
                   log=log, train_records=train_records, prompt_set=a.prompt_set, rounds=a.rounds)
    res["date"] = time.strftime("%Y-%m-%d")
    res["drafter"] = f"early exit L={a.early_exit}" if a.early_exit else a.draft
    print(json.dumps(res, indent=1))
    if a.json:
        pathlib.Path(a.json).write_text(json.dumps(res, indent=1))
    return 0


def run_medusa(a: argparse.Namespace) -> int:
    torch.manual_seed(a.seed)
    t0 = time.time()
    target, tok = load_target()  # frozen: only its answers, states and head rows are read
    last = target.config.num_hidden_layers
    records, states = medusa.cached_answers(pathlib.Path(a.data), medusa.training_prompts(a.seed, a.prompts),
                                            target, tok, a.max_new_tokens, a.topk, a.gen_batch, log)
    table = medusa.position_table(records, states, a.heads)
    log(f"data ready: {len(records)} answers, {table['x'].shape[0]} positions in {time.time() - t0:.0f} s")
    heads = medusa.untrained_heads(target, pathlib.Path(a.token_draft), a.heads)
    t_train = time.time()
    steps = medusa.train_heads(heads, table, a.steps, a.lr, a.batch, a.seed, log)
    minutes = round((time.time() - t_train) / 60, 1)
    acc = medusa.training_accuracy(heads, records, states, 200)
    out = pathlib.Path(a.out)
    meta = {"kind": "medusa", "num_heads": a.heads, "read_layer": last,
            "head_ids_from": os.path.relpath(pathlib.Path(a.token_draft).resolve(), out.resolve().parent),
            "head": "the target's own tied LM-head rows for the token draft's "
                    "8192 reduced-head ids (frozen, not stored)",
            "block": "x + SiLU(W x + b), W and b zero at the start", "dtype": "bfloat16",
            "choices": [list(p) for p in medusa.best_first_choices(acc, a.choices)],
            "choices_from": "best-first by the product of per-head top-i accuracy on 200 training answers",
            "train": {"answers": len(records), "positions": table["x"].shape[0], "temperature": 0.0,
                      "max_new_tokens": a.max_new_tokens, "topk": a.topk, "loss": "top-k distillation per head",
                      "steps": steps, "batch_positions": a.batch, "lr": a.lr, "lr_schedule": "cosine to 0.1x",
                      "optimizer": "AdamW, weight decay 0, clip 1.0", "minutes": minutes, "seed": a.seed,
                      "device": str(target.device), "threads": torch.get_num_threads(),
                      "date": time.strftime("%Y-%m-%d")},
            "training_top_i_accuracy": [[round(float(x), 4) for x in row] for row in acc]}
    medusa.export_heads(heads, out, meta)
    shipped = load_medusa(target, out, packed=False)  # measured as shipped: bf16-rounded blocks
    meta["held_out"] = medusa.held_out_accuracy(target, shipped, evaluation_prompts(tok, a.eval_prompts), 64)
    meta["held_out"] |= {"prompts": a.eval_prompts, "max_new_tokens": 64}
    medusa.export_heads(heads, out, meta)
    log(json.dumps(meta["held_out"]))
    log(f"exported to {out} after {time.time() - t0:.0f} s")
    return 0
