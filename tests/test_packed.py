"""The oneDNN-packed linear layers must compute what nn.Linear computes, and change no decoded token; whether a
process packs is measured on its CPU (or set by SPECVIZ_PACKED)."""
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


@pytest.mark.parametrize("rows", [1, 3, 4, 9])
def test_a_layer_kept_both_ways_uses_plain_below_its_row_count_and_packed_from_it(rows, monkeypatch):
    g = torch.Generator().manual_seed(rows)
    lin = torch.nn.Linear(64, 48)
    x = torch.randn(1, rows, 64, generator=g)
    both = packed.PackedLinear(lin.weight, lin.bias, plain_below=4)
    real = torch.nn.functional.linear
    want = real(x, lin.weight, lin.bias)
    calls = []
    monkeypatch.setattr(torch.nn.functional, "linear", lambda *a: calls.append(1) or real(*a))
    torch.testing.assert_close(both(x), want, rtol=1e-5, atol=1e-5)
    assert bool(calls) == (rows < 4)


def test_the_embedded_target_follows_the_process_choice_and_packed_decodes_like_plain(embedded):
    from specviz.loading import load_target
    from tests.conftest import chat

    model, tok = embedded
    n_packed = sum(isinstance(m, packed.PackedLinear) for m in model.modules())
    if packed.choice().packed:
        assert n_packed == 7 * model.config.num_hidden_layers + 1  # q k v o gate up down per layer, plus the head
        assert not any(isinstance(m, torch.nn.Linear) for m in model.modules())
        # where plain measured faster for few rows, each layer keeps a plain copy for them (packed_from rows on)
        assert all((m.plain is not None) == (packed.choice().packed_from > 1)
                   for m in model.modules() if isinstance(m, packed.PackedLinear))
    else:  # this host measured plain layers faster at every row count: nothing of the loaded target is packed
        assert n_packed == 0

    plain, _ = load_target(packed=False)
    assert not any(isinstance(m, packed.PackedLinear) for m in plain.modules())
    ids = chat(tok, "Name three uses of a hash map.")
    with torch.inference_mode():
        b = plain(torch.tensor([ids])).logits
    ref = plain.generate(torch.tensor([ids]), max_new_tokens=24, do_sample=False, pad_token_id=tok.eos_token_id)
    assert packed.pack_linears(plain, force=True) == 7 * plain.config.num_hidden_layers + 1  # now packed, forced
    with torch.inference_mode():
        a = plain(torch.tensor([ids])).logits
    torch.testing.assert_close(a, b, rtol=1e-4, atol=5e-3)  # another GEMM's summation order: float32 noise
    ours = run_steps(plain_steps(plain, tok, ids, 24))[1].token_ids
    assert ours == ref[0, len(ids):].tolist()


def test_packing_is_chosen_by_measurement_unless_the_environment_says(monkeypatch):
    # each call decides afresh here; the process's cached choice (which the loaded models follow) is left alone
    monkeypatch.setattr(packed, "choice", packed.decide)
    monkeypatch.setenv("SPECVIZ_PACKED", "0")
    lin = torch.nn.Sequential(torch.nn.Linear(8, 8))
    assert packed.pack_linears(lin) == 0 and isinstance(lin[0], torch.nn.Linear)
    monkeypatch.setenv("SPECVIZ_PACKED", "1")
    assert packed.decide() == packed.Choice(1)
    assert packed.pack_linears(lin) == 1 and isinstance(lin[0], packed.PackedLinear) and lin[0].plain is None
    monkeypatch.delenv("SPECVIZ_PACKED")
    measured = packed.decide()  # auto: the faster way on this CPU per row count, with the figures that decided it
    n0 = measured.packed_from
    assert set(measured.plain_ms) == set(packed.PROBE_ROWS) and n0 in (None, *packed.PROBE_ROWS)
    assert all(measured.packed_ms[n] < packed.PLAIN_MARGIN * measured.plain_ms[n]
               for n in packed.PROBE_ROWS if n0 and n >= n0)
