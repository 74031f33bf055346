"""The shipped token draft: shares the target's embedding, beats an untrained early exit, and the
recipe that made it runs end to end on a tiny budget."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from conftest import chat
from specviz.drafters import ModelDrafter, early_exit_model
from specviz.drafters.build import load_token_draft
from specviz.loading import SHIPPED_DRAFT
from specviz.engine.speculative import speculative_steps
from specviz.engine.loop import run_steps
from specviz.prompting import held_out_prompts

ROOT = Path(__file__).resolve().parent.parent


def test_shipped_draft_is_small_and_shares_the_embedding(models):
    assert (SHIPPED_DRAFT / "config.json").is_file(), "models/draft must ship"
    size = sum(f.stat().st_size for f in SHIPPED_DRAFT.iterdir())
    assert size <= 30 * 2**20
    draft = models.draft
    assert draft is not None and models.draft_name == "token draft"
    assert draft.model.embed_tokens is models.target.model.embed_tokens  # the same module: no copy in memory
    assert draft.model.embed_tokens.weight.data_ptr() == models.target.model.embed_tokens.weight.data_ptr()
    own = sum(p.numel() for n, p in draft.named_parameters() if not n.startswith("model.embed_tokens"))
    assert own < 0.2 * sum(p.numel() for p in models.target.parameters())


def acceptance(target, tok, draft, prompt):
    _, r = run_steps(speculative_steps(target, ModelDrafter(draft), tok, chat(tok, prompt), 48, k=4))
    return r.counters.acceptance_rate


def test_trained_draft_beats_untrained_early_exit(models):
    target, tok = models.target, models.tokenizer
    prompt = held_out_prompts()[0]  # never used in training
    trained = acceptance(target, tok, models.draft, prompt)
    untrained = acceptance(target, tok, early_exit_model(target, models.draft.config.num_hidden_layers), prompt)
    assert trained > untrained + 0.1, (trained, untrained)


def test_distillation_runs_end_to_end_and_reproduces_bit_for_bit(tmp_path, embedded):
    """The recipe on a tiny budget, twice from scratch: the same seed must give the same weights (step
    budgets, seeded data and seeded shuffles make the recipe reproducible, not just similar)."""
    outs = []
    for run in ("a", "b"):
        out = tmp_path / run / "draft"
        cmd = [sys.executable, "-m", "specviz.distill", "--prompts", "2", "--answers-per-prompt", "2",
               "--max-new-tokens", "6", "--steps", "3", "--gen-batch", "2", "--head-vocab", "256",
               "--data", str(tmp_path / run / "data.pt"), "--out", str(out)]
        # each process times which kernel is faster at a few rows (specviz/packed.py); on a busy machine two
        # processes can choose differently and round differently: fix the kernel, the recipe must do the rest
        res = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=600,
                             env={**os.environ, "SPECVIZ_PACKED": "1"})
        assert res.returncode == 0, res.stderr[-2000:]
        outs.append(out)
    meta = json.loads((outs[0] / "config.json").read_text())
    assert meta["train"]["steps"] == 3 and meta["train"]["answers"] == 4 and meta["head_vocab"] == 256
    assert (outs[0] / "model.safetensors").read_bytes() == (outs[1] / "model.safetensors").read_bytes()
    draft = load_token_draft(embedded[0], outs[0])
    logits = draft(input_ids=torch.tensor([[1, 2, 3]])).logits
    assert torch.isfinite(logits).sum(-1).max() == 256  # the reduced head scores exactly its subset


def test_training_jobs_extend_the_cache_and_never_use_held_out_subjects():
    """Each subject list is appended after the ones before it (an existing data cache stays a valid
    prefix), and no training prompt names a held-out subject."""
    from specviz.prompting import EXTRA_SUBJECTS, HELD_OUT, MORE_SUBJECTS, TASKS
    from specviz.training.data import training_jobs

    temps = [0.0, 0.7, 1.0]
    first = training_jobs(0, temps, 2, 0)
    second = training_jobs(0, temps, 2, len(EXTRA_SUBJECTS))
    full = training_jobs(0, temps, 2, len(EXTRA_SUBJECTS) + len(MORE_SUBJECTS))
    assert full[:len(first)] == first and full[:len(second)] == second
    assert len(full) == len(first) + len(TASKS) * (len(EXTRA_SUBJECTS) + len(MORE_SUBJECTS))
    assert len({p for p, _ in full}) == len(full) - len(first) // 2  # every prompt distinct; the first list twice
    assert not [p for p, _ in full if any(h.lower() in p.lower() for h in HELD_OUT)]
    assert {t for _, t in full[len(first):]} == set(temps)


@pytest.mark.parametrize("kind", ["token", "feature"])
def test_shipped_drafts_were_made_by_the_default_recipe(kind):
    """`python -m specviz.distill [--kind feature]` with no other flag must re-make what is shipped: the
    configs record the settings the weights were trained with, and they must be today's defaults."""
    from specviz.training import cli

    a = cli.parse_args(["--kind", kind])
    folder = ROOT / "models" / ("feature_draft" if kind == "feature" else "draft")
    cfg = json.loads((folder / "config.json").read_text())
    train = cfg["train"]
    assert train.get("steps_planned", train["steps"]) == a.steps  # a time cap may stop a run a few steps short
    assert train["steps"] >= 0.99 * a.steps and train.get("subjects", "default") == a.subjects
    assert train["lr"] == a.lr
    assert train["temperatures"] == [float(t) for t in a.temperatures.split(",")]
    for key in ("batch", "seed", "topk", "answers_per_prompt", "extra_subjects"):
        assert train[key] == getattr(a, key), key
    if kind == "feature":
        assert train["unroll"] == a.unroll and cfg["num_layers"] == a.layers
        assert [str(x) for x in train["read_layers"][:-1]] == a.read_layers.split(",")[:-1]
    else:
        assert cfg["num_hidden_layers"] == a.layers and cfg["head_vocab"] == a.head_vocab
        assert cfg["init_from_target_layers"] == [int(x) for x in a.init.split(",")]


@pytest.mark.fast
def test_fresh_subjects_are_new_and_never_held_out():
    """The fine-tuning stage's prompts (fresh_jobs) name subjects of no other list: no held-out subject, and no
    prompt the shipped drafts were trained on; their states never overwrite the main cache's."""
    from specviz.prompting import FRESH_SUBJECTS, HELD_OUT, LISTS, TASKS
    from specviz.training.data import features_path, fresh_jobs, training_jobs

    jobs = fresh_jobs(0, [0.0, 0.7, 1.0])
    assert len(jobs) == len(TASKS) * len(FRESH_SUBJECTS) and jobs == fresh_jobs(0, [0.0, 0.7, 1.0])
    assert not [p for p, _ in jobs if any(h.lower() in p.lower() for h in HELD_OUT)]
    others = {s.lower() for name, subjects in LISTS.items()
              if name not in ("tasks", "fresh_subjects", "shapes", "held_out_shapes") for s in subjects}
    assert not others & {s.lower() for s in FRESH_SUBJECTS}
    trained = {p for p, _ in training_jobs(0, [0.0], 1, 10_000)}
    assert not trained & {p for p, _ in jobs}
    assert features_path(Path("w/data.pt")) == Path("w/feats.pt")
    assert features_path(Path("w/fresh.pt")) == Path("w/fresh_feats.pt")


@pytest.mark.fast
def test_broad_jobs_add_shapes_and_replay_but_never_hold_out():
    """The second broadening stage: the shapes over 70 fresh subjects (the first stage's 40 among them), the
    original templates over 20 more fresh subjects and over 50 subjects the shipped drafts were trained on (replay);
    no held-out subject or template, one answer each, reproducible from the seed."""
    from specviz.prompting import HELD_OUT, HELD_OUT_SHAPES, SHAPES, TASKS
    from specviz.training.data import all_jobs, broad_jobs, shape_jobs, training_jobs

    jobs = broad_jobs(0, [0.0, 0.7, 1.0])
    assert jobs == broad_jobs(0, [0.0, 0.7, 1.0]) and len(jobs) == 70 * len(SHAPES) + 70 * len(TASKS)
    assert len({p for p, _ in jobs}) == len(jobs) and {t for _, t in jobs} == {0.0, 0.7, 1.0}
    text = lambda p: " ".join(p) if isinstance(p, tuple) else p  # noqa: E731
    assert not [p for p, _ in jobs if any(h.lower() in text(p).lower() for h in HELD_OUT)]
    held_stems = {text(tuple(t) if isinstance(t, list) else t).split("{s}")[0] for t in HELD_OUT_SHAPES}
    assert not [p for p, _ in jobs if any(text(p).startswith(s) for s in held_stems)]
    first_stage = {p for p, _ in shape_jobs(0, [0.0])}
    assert len(first_stage - {p for p, _ in jobs}) == 20 * len(TASKS)  # its 40 subjects' shapes are all here
    replayed = {p for p, _ in jobs} & {p for p, _ in training_jobs(0, [0.0], 1, 10_000)}
    assert len(replayed) == 50 * len(TASKS)
    # the main recipe with the shapes in it: the main lists first (their cache stays a prefix), then no replay
    temps = [0.0, 0.7, 1.0]
    main, everything = training_jobs(0, temps, 2, 10_000), all_jobs(0, temps, 2, 10_000)
    assert everything[:len(main)] == main and everything[len(main):] == broad_jobs(0, temps, replay_subjects=0)
    assert len(everything) - len(main) == 70 * len(SHAPES) + 20 * len(TASKS)
    assert not {p for p, _ in everything[len(main):]} & {p for p, _ in main}


def test_shape_jobs_hold_out_templates_and_subjects(embedded):
    """The broadening stage (issue #48.4) trains on other prompt shapes, conversations among them, and never on a
    held-out template or subject: the "shapes" evaluation set is new templates AND new subjects. A conversation
    becomes alternating user/assistant turns in the chat template, ending on the assistant's header."""
    from specviz.prompting import HELD_OUT, HELD_OUT_SHAPES, SHAPES, TASKS, prompt_ids
    from specviz.training.data import shape_jobs
    from specviz.training.evaluate import evaluation_prompts

    jobs = shape_jobs(0, [0.0, 0.7, 1.0])
    assert jobs == shape_jobs(0, [0.0, 0.7, 1.0]) and len(jobs) == 40 * len(SHAPES) + 20 * len(TASKS)
    assert len({p for p, _ in jobs}) == len(jobs) and {t for _, t in jobs} == {0.0, 0.7, 1.0}
    text = lambda p: " ".join(p) if isinstance(p, tuple) else p  # noqa: E731
    assert not [p for p, _ in jobs if any(h.lower() in text(p).lower() for h in HELD_OUT)]
    assert sum(isinstance(p, tuple) for p, _ in jobs) == 40 * sum(isinstance(t, list) for t in SHAPES) > 0
    stems = lambda t: text(tuple(t) if isinstance(t, list) else t).split("{s}")[0]  # noqa: E731
    assert not {stems(t) for t in HELD_OUT_SHAPES} & ({stems(t) for t in SHAPES} | {stems(t) for t in TASKS})

    tok = embedded[1]
    turns = ("Tell me about X.", "Short or long?", "Short.")
    ids = prompt_ids(tok, turns)
    decoded = tok.decode(ids)
    assert [decoded.index(t) for t in turns] == sorted(decoded.index(t) for t in turns)
    assert decoded.count("<|im_start|>assistant") == 2 and decoded.rstrip().endswith("<|im_start|>assistant")
    assert prompt_ids(tok, "Tell me about X.") == prompt_ids(tok, ("Tell me about X.",))
    held = evaluation_prompts(tok, 16, "shapes")
    assert len({tuple(p) for p in held}) == 16
    assert any(tok.decode(p).count("<|im_start|>user") == 2 for p in held)  # the held-out conversation is in
