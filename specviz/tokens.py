"""Tokens as the app shows and stops on them: a token's text (its bytes when it is part of a character), the
output's text piece by piece, a distribution's top tokens with their text, the ids generation stops on."""
from __future__ import annotations

import re

import torch

from specviz.trace import TokenProb


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
