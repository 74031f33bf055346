"""On CPU the target's masked passes (verify, tree) read the grouped KV heads in place: the logits must be
bit-identical to transformers' own sdpa, and the KV cache must no longer be copied per head (repeat_kv)."""
import pytest
import torch
import transformers.integrations.sdpa_attention as hf_sdpa

from specviz.loading.grouped_attention import NAME
from specviz.stepper import Stepper


def passes(model, ids: list[int]) -> list[torch.Tensor]:
    """A verify pass of 3 and of 5 tokens on a cached context, and a two-branch tree pass, on `model`."""
    out = []
    for n in (3, 5):
        s = Stepper(model)
        s.logits(ids[:-n])
        out.append(s.logits(ids, keep=n))  # the whole sequence: it feeds what the cache lacks
    s = Stepper(model)
    s.logits(ids[:-4])
    cached = len(ids) - 4
    allowed = torch.zeros(4, cached + 4, dtype=torch.bool)
    allowed[:, :cached] = True
    for r, path in enumerate([(0,), (0, 1), (2,), (2, 3)]):  # nodes 0 -> 1 and 2 -> 3: two branches of depth 2
        allowed[r, [cached + i for i in path]] = True
    out.append(s.masked_logits(ids[-4:], [cached, cached + 1, cached, cached + 1], allowed, keep=4))
    return out


@pytest.fixture
def ids(embedded):
    _, tok = embedded
    return tok("Speculative decoding lets a small draft model propose tokens that the target checks.")["input_ids"]


def test_the_embedded_target_runs_grouped_attention_on_cpu(embedded):
    model, _ = embedded
    assert model.config._attn_implementation == NAME
    assert model.config.num_attention_heads > model.config.num_key_value_heads  # grouped: the case this is for


def test_masked_passes_equal_transformers_sdpa_bit_for_bit_without_copying_the_cache(embedded, ids, monkeypatch):
    model, _ = embedded
    copies = []
    real = hf_sdpa.repeat_kv
    monkeypatch.setattr(hf_sdpa, "repeat_kv", lambda x, n: copies.append(n) or real(x, n))
    grouped = passes(model, ids)
    assert copies == []
    model.set_attn_implementation("sdpa")
    try:
        plain = passes(model, ids)
    finally:
        model.set_attn_implementation(NAME)
    assert copies, "transformers' sdpa copies the cache per head under a mask: the cost this module removes"
    for g, p in zip(grouped, plain):
        assert torch.equal(g, p)
