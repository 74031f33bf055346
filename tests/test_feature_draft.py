"""The feature draft (specviz/drafters/feature.py, trained by specviz/training/feature.py): it reads the
target's hidden states, so the checks are that the engine hands it the right ones, that its cache after a
rollback is exactly what the target's real states give, that the shipped one is trained, and that its
recipe runs end to end."""
import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from conftest import chat
from specviz.drafters import FeatureDrafter, make_drafter
from specviz.drafters.build import load_token_draft
from specviz.drafters.feature import is_feature_draft, shifted
from specviz.drafters.feature import load as load_feature_draft
from specviz.labs.timing import forward_ms
from specviz.loading import SHIPPED_FEATURE_DRAFT
from specviz.sampling import SamplingConfig
from specviz.engine.speculative import speculative_steps
from specviz.engine.loop import run_steps
from specviz.training import feature
from specviz.prompting import held_out_prompts
from specviz.training.export import export

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def plain():
    """The embedded target with plain nn.Linear layers: a draft is built by copying one of them."""
    from specviz.loading import load_target
    return load_target(packed=False)


@pytest.fixture(scope="module")
def untrained(plain):
    target, tok = plain
    torch.manual_seed(0)
    return feature.build(target, target.config.num_hidden_layers - 1, torch.arange(0, 4096)).eval()


@pytest.mark.parametrize("k", [1, 3, 6])
def test_greedy_with_feature_draft_equals_hf_generate(plain, untrained, k):
    target, tok = plain
    ids = chat(tok, "Name three rivers in Europe.")
    _, r = run_steps(speculative_steps(target, FeatureDrafter(untrained), tok, ids, 24, k))
    ref = target.generate(torch.tensor([ids]), max_new_tokens=24, do_sample=False, pad_token_id=tok.eos_token_id)
    assert r.token_ids == ref[0, len(ids):].tolist()[:len(r.token_ids)]
    assert r.counters.drafted > 0  # the draft really proposed (after the prefill cycle)


def test_prefill_gives_the_features_so_the_first_cycle_drafts(plain, untrained):
    target, tok = plain
    cycles, r = run_steps(speculative_steps(target, FeatureDrafter(untrained), tok,
                                            chat(tok, "Hello!"), 12, 4))
    assert cycles[0].k == 4  # the prefill pass already handed the draft the prompt's features
    assert r.counters.target_passes == len(cycles) + 1  # ...and it is counted as a target pass


def test_cache_after_rollback_equals_one_pass_over_the_real_features(plain, untrained):
    """After each cycle the draft keeps only entries built from the target's real features; they must
    equal a fresh pass of the draft over the target's teacher-forced hidden states."""
    target, tok = plain
    ids = chat(tok, "Explain what a lighthouse does.")
    drafter = FeatureDrafter(untrained)
    steps = speculative_steps(target, drafter, tok, ids, 30, 4)
    cycles, r = run_steps(steps)
    assert any(c.accepted < c.k for c in cycles), "the untrained draft should be rejected somewhere"
    seq = ids + r.token_ids
    n = drafter.cached
    assert 0 < n <= len(seq) - 1
    with torch.inference_mode():
        f = target(input_ids=torch.tensor([seq]), output_hidden_states=True).hidden_states[-1]
        from transformers import DynamicCache
        fresh = DynamicCache(config=untrained.config)
        untrained(torch.tensor([seq[:n]]), shifted(f[0, :n - 1])[None], fresh)
    for layer_a, layer_b in zip(drafter.cache.layers, fresh.layers):
        torch.testing.assert_close(layer_a.keys[..., :n, :], layer_b.keys, rtol=1e-4, atol=1e-4)
        torch.testing.assert_close(layer_a.values[..., :n, :], layer_b.values, rtol=1e-4, atol=1e-4)


def test_sampling_with_feature_draft_records_the_q_it_drew_from(plain, untrained):
    target, tok = plain
    cfg = SamplingConfig(temperature=0.8, top_p=0.9, seed=3)
    cycles, r = run_steps(speculative_steps(target, FeatureDrafter(untrained), tok,
                                            chat(tok, "Write a haiku about rain."), 20, 3, cfg))
    drafted = [d for c in cycles for d in c.drafts]
    assert drafted and all(d.q > 0 for d in drafted)  # each draft token had positive q where it was drawn
    assert len(r.token_ids) == 20 or r.token_ids[-1] == tok.eos_token_id


def test_shipped_feature_draft_shares_target_modules_and_is_small(models):
    assert is_feature_draft(SHIPPED_FEATURE_DRAFT), "models/feature_draft must ship"
    from specviz.loading import SHIPPED_DRAFT
    size = sum(f.stat().st_size for d in (SHIPPED_DRAFT, SHIPPED_FEATURE_DRAFT) for f in d.iterdir())
    assert size <= 30 * 2**20  # both shipped drafts together
    fd = models.feature_draft
    assert fd is not None
    assert fd.embed_tokens is models.target.model.embed_tokens
    assert fd.lm.model.rotary_emb is models.target.model.rotary_emb
    assert forward_ms(fd, list(range(40)), 1, repeats=3) > 0
    from specviz import packed
    if packed.choice().packed:  # its own linear layers run packed like everything else on CPU
        own = [fd.fc, fd.lm.lm_head.proj] + ([fd.fuse] if fd.fuse is not None else [])
        assert all(isinstance(m, packed.PackedLinear) for m in own)


def test_shipped_feature_draft_beats_an_untrained_one(models, plain):
    """Fails if untrained weights were shipped: on a held-out prompt the trained draft is accepted far
    more often than the same architecture fresh from its initialisation."""
    target, tok = models.target, models.tokenizer
    ids = chat(tok, held_out_prompts()[0])

    def acceptance(model):
        _, r = run_steps(speculative_steps(target, FeatureDrafter(model), tok, ids, 48, 4))
        return r.counters.acceptance_rate

    head_ids = models.feature_draft.lm.lm_head.ids
    fresh = feature.build(plain[0], plain[0].config.num_hidden_layers - 1, head_ids.cpu()).eval()
    trained = acceptance(models.feature_draft)
    untrained = acceptance(fresh)
    assert trained > untrained + 0.15, (trained, untrained)


def test_make_drafter_feature_needs_the_shipped_draft(models):
    from specviz.errors import SpecVizError
    from specviz.loading import Models
    assert make_drafter("feature", models).reads_target_states
    bare = Models(models.target, models.tokenizer, None, "n-gram lookup", models.device)
    with pytest.raises(SpecVizError, match="feature draft"):
        make_drafter("feature", bare)


@pytest.mark.parametrize("layers", [1, 2])
def test_feature_draft_starts_as_the_token_draft(plain, layers, tmp_path):
    """fc = [identity; 0] at initialisation (and extra layers with zero output projections): whatever the
    features, its q is the token draft's q, so training starts from the token draft's acceptance and can
    only add what the target's state tells."""
    import os

    from specviz.loading import SHIPPED_DRAFT
    target, tok = plain
    fd = feature.from_token_draft(target, SHIPPED_DRAFT, layers=layers).eval()
    assert len(fd.lm.model.layers) == layers
    token = load_token_draft(target, SHIPPED_DRAFT, packed=False)
    ids = torch.tensor([chat(tok, "Tell me about penguins.")])
    with torch.inference_mode():
        h, _ = fd(ids, torch.randn(1, ids.shape[1], target.config.hidden_size))
        q_feature = fd.head(h)[0]
        q_token = token(input_ids=ids).logits[0]
    torch.testing.assert_close(q_feature, q_token, rtol=1e-4, atol=1e-4)
    fd.fc.weight.data[:, target.config.hidden_size:] += 0.01  # the feature half now matters
    with torch.inference_mode():
        h2, _ = fd(ids, torch.randn(1, ids.shape[1], target.config.hidden_size))
    assert not torch.allclose(h, h2)
    # export -> load keeps every layer (bf16 on disk: compare with the weights rounded the same way)
    out = tmp_path / "fd"
    export(fd, out, {}, head_from=os.path.relpath(SHIPPED_DRAFT.resolve(), out.resolve().parent))
    back = load_feature_draft(target, out, packed=False)
    assert len(back.lm.model.layers) == layers
    for mine, theirs in [(fd.lm.model.layers, back.lm.model.layers), (fd.fc, back.fc),
                         (fd.lm.model.norm, back.lm.model.norm)]:
        theirs = theirs.state_dict()
        for name, w in mine.state_dict().items():
            assert torch.equal(theirs[name], w.to(torch.bfloat16).float()), name


def test_feature_distillation_runs_end_to_end(tmp_path):
    out = tmp_path / "fd"
    cmd = [sys.executable, "-m", "specviz.distill", "--kind", "feature", "--prompts", "2", "--answers-per-prompt", "1",
           "--max-new-tokens", "6", "--steps", "2", "--gen-batch", "2",
           "--data", str(tmp_path / "data.pt"), "--out", str(out)]
    res = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr[-2000:]
    meta = json.loads((out / "config.json").read_text())
    assert meta["kind"] == "feature" and meta["train"]["steps"] == 2
    assert (tmp_path / "feats.pt").is_file()  # the target's features were computed and cached
    from specviz.loading import SHIPPED_DRAFT, load_target
    assert (out.parent / meta["head_from"]).resolve() == SHIPPED_DRAFT.resolve()  # the head is shared, not stored
    target, tok = load_target()
    fd = load_feature_draft(target, out)
    h, _ = fd(torch.tensor([[5, 6, 7]]), torch.zeros(1, 3, target.config.hidden_size))
    assert torch.isfinite(fd.head(h)).sum(-1).max() == 8192


def test_feature_cache_grows_with_the_data_and_computes_only_new_sequences(tmp_path, plain, monkeypatch):
    """The data cache grows as a prefix; its feature cache must keep the matching prefix and compute only
    the sequences beyond it, giving exactly what computing them all would give."""
    target, _ = plain
    records = [{"ids": list(range(5, 5 + n))} for n in (3, 5, 4)]
    layers = (1, target.config.num_hidden_layers)
    computed = []
    real = feature.target_features
    monkeypatch.setattr(feature, "target_features",
                        lambda t, rs, *a, **k: computed.append(len(rs)) or real(t, rs, *a, **k))
    path = tmp_path / "feats.pt"
    load = lambda: (target, None)  # noqa: E731
    first = feature.cached_features(path, records[:2], layers, load, log=lambda *_: None)
    grown = feature.cached_features(path, records, layers, load, log=lambda *_: None)
    again = feature.cached_features(path, records, layers, load, log=lambda *_: None)
    assert computed == [2, 1]  # the third call read everything from the cache
    assert all(torch.equal(a, b) for a, b in zip(first, grown[:2]))
    assert [f.shape[0] for f in again] == [3, 5, 4]
    assert torch.equal(grown[2], real(target, records[2:], layers)[0])
    fewer = feature.cached_features(path, records[:1], layers, load, log=lambda *_: None)
    assert computed == [2, 1] and len(fewer) == 1 and len(torch.load(path)) == 3  # the longer cache is kept


def test_batched_passes_equal_one_sequence_at_a_time(plain, untrained, monkeypatch):
    """Training data and the feature draft's loss go through right-padded batches (a GPU's speed); a causal
    pass never lets a real position see the padding, so each sequence's soft labels, states and loss must be
    what a pass over it alone gives, up to float rounding, whatever the batch."""
    from specviz.training import data

    target, tok = plain
    pairs = [(chat(tok, q), tok.encode(a)) for q, a in
             [("Hi", " Hello there, friend."), ("Name a river.", " The Danube."), ("Why?", " Because.")]]
    alone = [r for p in pairs for r in data.soft_labels(target, [p], 8)]
    monkeypatch.setitem(data.PASS_POSITIONS, "cpu", 10_000)  # all three in one padded pass
    assert data.pass_batches([len(p) + len(a) for p, a in pairs], "cpu") == [[0, 1, 2]]
    batched = data.soft_labels(target, pairs, 8)
    for a, b in zip(alone, batched):
        assert a["ids"] == b["ids"] and a["start"] == b["start"] and torch.equal(a["top_ids"], b["top_ids"])
        assert torch.allclose(a["top_logp"].float(), b["top_logp"].float(), atol=2e-3)
    layers = (10, target.config.num_hidden_layers)
    states = feature.target_features(target, batched, layers)
    monkeypatch.setitem(data.PASS_POSITIONS, "cpu", 1)  # one sequence per pass
    for s, r in zip(states, batched):
        assert torch.allclose(s.float(), feature.target_features(target, [r], layers)[0].float(), atol=2e-2)
    last = [s[:, -target.config.hidden_size:] for s in states]  # the untrained draft reads the final states
    one = [feature.batch_loss(untrained, [r], [s]) for r, s in zip(batched, last)]
    loss, n = feature.batch_loss(untrained, batched, last)
    assert n == sum(m for _, m in one) == sum(len(a) for _, a in pairs)
    assert float(loss.detach()) == pytest.approx(sum(float(x.detach()) for x, _ in one), rel=1e-4)
    assert data.pass_batches([5, 5, 9, 2], "cpu") == [[0], [1], [2], [3]]


def test_compare_drafters_interleaves_rounds_and_reports_medians(models):
    """Plain greedy and each drafter run once per round, in turn (so machine noise spreads over all of
    them), and the row's seconds are the median over the rounds."""
    from specviz.labs.measure import compare_drafters
    from specviz.drafters import NgramDrafter

    target, tok = models.target, models.tokenizer
    messages = []
    rows = compare_drafters(target, tok, chat(tok, "Say hello."),
                            {"n-gram": NgramDrafter, "n-gram again": NgramDrafter},
                            k=2, max_new=6, rounds=3, progress=lambda f, m: messages.append(m))
    timed = [m for m in messages if m.startswith("round")]
    assert timed == [f"round {r}/3: {n}…" for r in (1, 2, 3) for n in ("plain greedy", "n-gram", "n-gram again")]
    for row in rows:
        assert row["rounds"] == 3 and row["identical to greedy"]
        lo, hi = row["speedup range"]
        assert 0 < lo <= hi
        assert row["speedup vs plain greedy"] == pytest.approx(row["plain seconds"] / row["seconds"])


def test_a_fine_tuning_stage_keeps_the_recipe_and_records_itself(tmp_path):
    """--resume: start from the shipped feature draft (not the token draft), train on fresh-subject answers with a
    longer unroll, and export a draft whose config keeps the shipped recipe under "train" and adds "fine_tune"."""
    out = tmp_path / "ft"
    cmd = [sys.executable, "-m", "specviz.distill", "--kind", "feature", "--resume", "models/feature_draft",
           "--subjects", "fresh", "--prompts", "2", "--answers-per-prompt", "1", "--max-new-tokens", "6",
           "--steps", "2", "--gen-batch", "2", "--unroll", "4", "--data", str(tmp_path / "fresh.pt"), "--out", str(out)]
    res = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr[-2000:]
    meta = json.loads((out / "config.json").read_text())
    shipped = json.loads((ROOT / "models" / "feature_draft" / "config.json").read_text())
    assert meta["train"] == shipped["train"] and meta["read_layers"] == shipped["read_layers"]
    ft = meta["fine_tune"]
    assert ft["from"] == "models/feature_draft" and ft["subjects"] == "fresh" and ft["unroll"] == 4
    assert ft["steps"] == 2 and ft["answers"] == 2
    assert (tmp_path / "fresh_feats.pt").is_file() and not (tmp_path / "feats.pt").exists()
    from specviz.loading import load_target
    target, _ = load_target()
    before = load_feature_draft(target, ROOT / "models" / "feature_draft", packed=False)
    after = load_feature_draft(target, out, packed=False)
    assert not torch.equal(before.fc.weight, after.fc.weight)  # it trained from the shipped weights...
    assert (before.fc.weight - after.fc.weight).abs().max() < 0.05  # ...two small steps away from them
