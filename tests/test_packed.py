"""The oneDNN-packed linear layers must compute what nn.Linear computes, and change no decoded token."""
import pytest
import torch

from specviz import packed
from specviz.engine.plain import plain_steps
from specviz.engine.loop import run_steps

pytestmark = pytest.mark.skipif(not packed.available(), reason="this torch build has no oneDNN linear ops")


@pytest.mark.parametrize("rows", [1, 2, 3, 5, 9, 40])
@pytest.mark.parametrize("bias", [False, True])
def test_packed_linear_equals_linear(rows, bias):
    g = torch.Generator().manual_seed(rows)
    lin = torch.nn.Linear(576, 1536, bias=bias)
    x = torch.randn(1, rows, 576, generator=g)
    want = lin(x)
    got = packed.PackedLinear(lin.weight, lin.bias)(x)
    assert got.shape == want.shape
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(packed.PackedLinear(lin.weight, lin.bias)(x[0]), want[0], rtol=1e-5, atol=1e-5)


def test_embedded_target_is_packed_and_decodes_like_the_unpacked_model(embedded):
    from specviz.loading import load_target
    from tests.conftest import chat

    model, tok = embedded
    n_packed = sum(isinstance(m, packed.PackedLinear) for m in model.modules())
    assert n_packed == 7 * model.config.num_hidden_layers + 1  # q k v o gate up down per layer, plus the head
    assert not any(isinstance(m, torch.nn.Linear) for m in model.modules())

    plain, _ = load_target(packed=False)
    assert not any(isinstance(m, packed.PackedLinear) for m in plain.modules())
    ids = chat(tok, "Name three uses of a hash map.")
    with torch.inference_mode():
        a = model(torch.tensor([ids])).logits
        b = plain(torch.tensor([ids])).logits
    torch.testing.assert_close(a, b, rtol=1e-4, atol=2e-3)
    ours = run_steps(plain_steps(model, tok, ids, 24))[1].token_ids
    ref = plain.generate(torch.tensor([ids]), max_new_tokens=24, do_sample=False, pad_token_id=tok.eos_token_id)
    assert ours == ref[0, len(ids):].tolist()


def test_packing_can_be_switched_off(monkeypatch):
    monkeypatch.setenv("SPECVIZ_PACKED", "0")
    packed.available.cache_clear()
    try:
        lin = torch.nn.Sequential(torch.nn.Linear(8, 8))
        assert packed.pack_linears(lin) == 0
        assert isinstance(lin[0], torch.nn.Linear)
    finally:
        monkeypatch.delenv("SPECVIZ_PACKED")
        packed.available.cache_clear()
    lin = torch.nn.Sequential(torch.nn.Linear(8, 8))
    assert packed.pack_linears(lin) == 1 and isinstance(lin[0], packed.PackedLinear)


def test_shipped_draft_is_packed_and_still_shares_the_embedding(models):
    if models.draft is None:
        pytest.skip("no shipped draft")
    assert models.draft.model.embed_tokens is models.target.model.embed_tokens
    own = [m for m in models.draft.model.layers.modules() if isinstance(m, packed.PackedLinear)]
    assert len(own) == 7 * models.draft.config.num_hidden_layers
    head = models.draft.lm_head
    if hasattr(head, "proj"):  # the reduced head is packed too
        assert isinstance(head.proj, packed.PackedLinear)
