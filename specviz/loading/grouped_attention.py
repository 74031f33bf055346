"""Grouped-query attention on CPU without copying the KV cache: the verify pass's other half of the fast path.

Why: the embedded target has 9 query heads sharing 3 key/value heads. transformers' "sdpa" attention hands
torch's SDPA the heads still grouped (enable_gqa=True) only when the call has no attention mask (a CUDA kernel
limit). A decode step has none; a verify pass (K + 1 queries on a cache) and a tree pass carry one, so every
layer first copies its cached keys and values three times over (repeat_kv), a copy that grows with the context.
Measured on the 2-core AVX-512 host, 2026-11-27 (the whole target, a 3-token pass, the two implementations timed
alternately, medians of 7): 35.4 -> 34.3 ms on a 64-token context, 37.5 -> 35.3 at 128, 39.0 -> 36.3 at 256,
44.6 -> 38.4 at 512; a decode step is unchanged. What a verify pass costs over a step, v(3) - 1, falls by about
40 % at 64-128 tokens and 70 % at 512. torch's CPU SDPA takes enable_gqa together with a mask and returns
bit-identical outputs (tested), so on CPU this implementation does that; everything else (no mask, CUDA, no
grouping) is transformers' own sdpa.
"""
from __future__ import annotations

import torch
from transformers import AttentionInterface, AttentionMaskInterface
from transformers.integrations.sdpa_attention import sdpa_attention_forward
from transformers.masking_utils import sdpa_mask

NAME = "specviz_sdpa"


def sdpa_grouped(module, query, key, value, attention_mask, dropout: float = 0.0, scaling=None, **kwargs):
    """transformers' sdpa_attention_forward, except a masked CPU call with grouped KV heads: SDPA reads the
    grouped heads itself (no repeat_kv). Same contract: (batch, queries, heads, head_dim) output, no weights."""
    grouped = getattr(module, "num_key_value_groups", 1) > 1
    if query.device.type != "cpu" or attention_mask is None or not grouped or kwargs.get("position_bias") is not None:
        return sdpa_attention_forward(module, query, key, value, attention_mask, dropout=dropout, scaling=scaling,
                                      **kwargs)
    out = torch.nn.functional.scaled_dot_product_attention(
        query, key, value, attn_mask=attention_mask, dropout_p=dropout, scale=scaling, enable_gqa=True)
    return out.transpose(1, 2).contiguous(), None


AttentionInterface.register(NAME, sdpa_grouped)
AttentionMaskInterface.register(NAME, sdpa_mask)  # the masks sdpa itself is given


def use_grouped(model: torch.nn.Module) -> bool:
    """Switch a CPU model that runs transformers' sdpa to this implementation, in place; True if switched."""
    config = getattr(model, "config", None)
    if config is None or config._attn_implementation != "sdpa" or next(model.parameters()).device.type != "cpu":
        return False
    model.set_attn_implementation(NAME)
    return config._attn_implementation == NAME
