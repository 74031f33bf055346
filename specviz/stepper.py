"""The one model-step helper every algorithm and every model drafter shares: a model plus its KV cache.

`logits(ids, keep)` feeds only the tokens the cache has not seen yet and returns the logits of the
last `keep` positions; `crop(n)` rolls the cache back to its first n tokens (DynamicCache.crop). With
that, speculative rollback is one line: crop to the accepted prefix, and the next call feeds whatever
is missing. It sits in the shared core, below the drafters and the engine that both run models with it.
"""
from __future__ import annotations

import torch
from transformers.cache_utils import DynamicLayer

from specviz.errors import SpecVizError


class Stepper:
    def __init__(self, model: torch.nn.Module, read_layers: tuple[int, ...] = ()):
        self.model = model
        self.cache = None  # a DynamicCache once the first forward made one
        # read_layers: also keep these hidden states (concatenated) of every position a call fed, for
        # drafters that read the target's states (specviz/drafters/feature.py)
        self.read_layers = tuple(read_layers)
        self.states = None
        self.passes = 0

    @property
    def cached(self) -> int:
        return 0 if self.cache is None else self.cache.get_seq_length()

    @torch.inference_mode()
    def logits(self, ids: list[int], keep: int = 1) -> torch.Tensor:
        """(keep, vocab) float32 logits for the last `keep` positions of ids."""
        new = ids[self.cached:]
        assert len(new) >= keep, "asked for logits of positions the cache already holds"
        out = self.model(
            input_ids=torch.tensor([new], device=self.model.device),
            past_key_values=self.cache,
            use_cache=True,
            logits_to_keep=keep,  # the head over the whole prompt would be wasted work
            output_hidden_states=bool(self.read_layers),
        )
        if self.read_layers:
            self.states = torch.cat([out.hidden_states[i][0] for i in self.read_layers], -1)
        self.cache = out.past_key_values
        logits = out.logits[0, -keep:].float()
        self.passes += 1
        return logits

    @torch.inference_mode()
    def masked_logits(self, new: list[int], position_ids: list[int], allowed: torch.Tensor, keep: int) -> torch.Tensor:
        """ONE forward over `new` on top of the cache with an explicit attention pattern (a token tree):
        allowed is (len(new), cached + len(new)) bool, True where a query may attend; position_ids one per
        new token. transformers takes a 4D mask as given (masking_utils returns a prepared 4D mask as-is):
        here an additive float mask, 0 where allowed and the dtype's minimum elsewhere, which both the SDPA
        and the eager attention add to the scores. Returns (keep, vocab) float32 logits of the last `keep`
        positions; every new token's keys and values are appended to the cache (keep_slots prunes them)."""
        dtype = self.model.dtype
        mask = torch.zeros(allowed.shape, dtype=dtype).masked_fill(~allowed.cpu(), torch.finfo(dtype).min)
        device = self.model.device
        out = self.model(
            input_ids=torch.tensor([new], device=device),
            position_ids=torch.tensor([position_ids], device=device),
            attention_mask=mask[None, None].to(device),
            past_key_values=self.cache,
            use_cache=True,
            logits_to_keep=keep,
            output_hidden_states=bool(self.read_layers),
        )
        if self.read_layers:
            self.states = torch.cat([out.hidden_states[i][0] for i in self.read_layers], -1)
        self.cache = out.past_key_values
        self.passes += 1
        return out.logits[0, -keep:].float()

    @torch.inference_mode()  # the cache's tensors are inference tensors: moved in place only inside it
    def keep_slots(self, slots: list[int]) -> None:
        """Keep only these cache entries, in this order (a tree's accepted path after its context): every
        layer's keys and values gathered along the sequence axis, the rest dropped. Each kept entry was
        computed at its node's position id (context length + depth - 1), which is exactly the position it
        now holds, so the cache equals a fresh prefill of the accepted prefix."""
        if self.cache is None:
            return
        keep = len(slots)
        # the context's slots stay where they are: move only the path's entries, in place, then cut the rest
        # (a gather of every slot copied the whole cache each cycle, 1.5 ms of a 50 ms cycle at 64 tokens)
        start = next((i for i, s in enumerate(slots) if s != i), keep)
        if any(type(layer) is not DynamicLayer for layer in self.cache.layers):
            # a sliding-window or quantized layer keeps its own length and drops old slots: these indices would
            # point at the wrong entries
            raise SpecVizError("Token trees and lookahead need a model whose every layer attends to the whole "
                               "context; this one has sliding-window (or quantized) cache layers.")
        index = torch.tensor(slots[start:], device=self.cache.layers[0].keys.device) if start < keep else None
        for layer in self.cache.layers:
            if index is not None:
                layer.keys[..., start:keep, :] = layer.keys.index_select(-2, index)
                layer.values[..., start:keep, :] = layer.values.index_select(-2, index)
            layer.keys, layer.values = layer.keys[..., :keep, :], layer.values[..., :keep, :]

    def crop(self, n: int) -> None:
        # transformers 5: crop(-m) removes the last m tokens (a positive size is refused)
        if self.cache is not None and self.cached > n:
            self.cache.crop(n - self.cached)
