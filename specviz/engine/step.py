"""The one model-step helper every algorithm shares: a model plus its KV cache.

`logits(ids, keep)` feeds only the tokens the cache has not seen yet and returns the logits of the
last `keep` positions; `crop(n)` rolls the cache back to its first n tokens (DynamicCache.crop). With
that, speculative rollback is one line: crop to the accepted prefix, and the next call feeds whatever
is missing.
"""
from __future__ import annotations

import re

import torch

from specviz.trace import TokenProb


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

    def keep_slots(self, slots: list[int]) -> None:
        """Keep only these cache entries, in this order (a tree's accepted path after its context): every
        layer's keys and values gathered along the sequence axis, the rest dropped. Each kept entry was
        computed at its node's position id (context length + depth - 1), which is exactly the position it
        now holds, so the cache equals a fresh prefill of the accepted prefix."""
        if self.cache is None:
            return
        for layer in self.cache.layers:
            index = torch.tensor(slots, device=layer.keys.device)
            layer.keys = layer.keys.index_select(-2, index)
            layer.values = layer.values.index_select(-2, index)

    def crop(self, n: int) -> None:
        # transformers 5: crop(-m) removes the last m tokens (a positive size is refused)
        if self.cache is not None and self.cached > n:
            self.cache.crop(n - self.cached)


def token_text(tokenizer, token: int) -> str:
    """A token's text; a byte-level token that is only part of a UTF-8 character (it decodes to "\ufffd") is
    shown by its bytes, "<0xE2>", as tokenizer viewers do."""
    text = tokenizer.decode([token])
    if "\ufffd" not in text:
        return text
    raw = _token_bytes(tokenizer, token)
    if raw is None:
        return text
    shown = raw.decode("utf-8", errors="backslashreplace")
    return re.sub(r"\\x([0-9a-f]{2})", lambda m: f"<0x{m.group(1).upper()}>", shown)


def output_pieces(tokenizer, ids) -> list[str]:
    """Per token, the text it adds to the decoded output, so that "".join(pieces) == decode(ids). Why: an emoji or
    a CJK character is often several byte-level tokens, and each decoded alone is "\ufffd"; decoding the output as
    a whole gives a token that stops part-way through a character "" and the token that completes it the whole
    character. A byte sequence never completed keeps its bytes ("<0xF0>"), as the charts label it."""
    pieces, done, pending = [], "", []
    for i in range(len(ids)):
        text = tokenizer.decode(list(ids[: i + 1]))
        if text.endswith("\ufffd") or not text.startswith(done):
            pending.append(i)  # part of a character that the next tokens may complete
            pieces.append(None)
            continue
        for j in pending:
            pieces[j] = ""
        pending = []
        pieces.append(text[len(done):])
        done = text
    return [token_text(tokenizer, t) if piece is None else piece for t, piece in zip(ids, pieces)]


def _byte_decoder() -> dict[str, int]:
    """GPT-2's byte-to-unicode alphabet, inverted: printable bytes stand for themselves, the rest are
    shifted to code points 256 and up."""
    keep = (list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1))
            + list(range(ord("®"), ord("ÿ") + 1)))
    chars, n = {}, 0
    for b in range(256):
        if b in keep:
            chars[chr(b)] = b
        else:
            chars[chr(256 + n)] = b
            n += 1
    return chars


_BYTE_DECODER = _byte_decoder()


def _token_bytes(tokenizer, token: int) -> bytes | None:
    """The raw bytes of a byte-level BPE token (GPT-2 style byte-to-unicode alphabet), or None."""
    piece = tokenizer.convert_ids_to_tokens(int(token))
    decoder = _BYTE_DECODER
    if not isinstance(piece, str) or any(ch not in decoder for ch in piece):
        return None
    return bytes(decoder[ch] for ch in piece)


def top_probs(tokenizer, probs: torch.Tensor, n: int, must_include: int | None = None):
    """The n most likely tokens of a distribution (plus must_include, if it is not among them)."""
    n = min(n, probs.shape[-1])
    values, ids = torch.topk(probs, n)
    pairs = list(zip(ids.tolist(), values.tolist()))
    if must_include is not None and must_include not in ids.tolist():
        pairs.append((must_include, float(probs[must_include])))
    return tuple(TokenProb(i, token_text(tokenizer, i), float(v)) for i, v in pairs)


def eos_ids(model, tokenizer) -> set[int]:
    ids = set()
    cfg_eos = getattr(model.generation_config, "eos_token_id", None)
    for e in (cfg_eos if isinstance(cfg_eos, (list, tuple)) else [cfg_eos]):
        if e is not None:
            ids.add(int(e))
    # generate() stops on the generation config's EOS; fall back to the tokenizer's only without one
    if not ids and tokenizer.eos_token_id is not None:
        ids.add(int(tokenizer.eos_token_id))
    return ids


def run_steps(steps):
    """Iterate a step generator to its end; returns (events, result). A full run is just this."""
    events = []
    while True:
        try:
            events.append(next(steps))
        except StopIteration as stop:
            return events, stop.value
