"""Prompt text -> token ids, with the checks every entry point needs (CLI and pages alike)."""
from __future__ import annotations

from specviz.errors import SpecVizError

MAX_PROMPT_CHARS = 20_000  # a pasted novel is refused before tokenizing, so nothing hangs


def check_text(text: str) -> None:
    if text is None or not text.strip():
        raise SpecVizError("The prompt is empty: type something for the model to continue.")
    if len(text) > MAX_PROMPT_CHARS:
        raise SpecVizError(f"The prompt has {len(text):,} characters; the limit is {MAX_PROMPT_CHARS:,}. "
                           "Shorten it.")


def encode_prompt(tokenizer, text: str, chat: bool, max_positions: int, max_new_tokens: int) -> list[int]:
    check_text(text)
    ids = prompt_ids(tokenizer, text, chat)
    if len(ids) + max_new_tokens > max_positions:
        raise SpecVizError(f"The prompt is {len(ids)} tokens; with {max_new_tokens} new tokens that exceeds the "
                           f"model's context of {max_positions} tokens. Shorten it or ask for fewer tokens.")
    return ids


def prompt_ids(tokenizer, text: str, chat: bool = True) -> list[int]:
    """The prompt's token ids: with chat, a user turn in the model's chat template and the assistant header."""
    if chat:
        return list(tokenizer.apply_chat_template([{"role": "user", "content": text}],
                                                  add_generation_prompt=True)["input_ids"])
    return list(tokenizer(text)["input_ids"])


def context_size(model) -> int:
    return int(getattr(model.config, "max_position_embeddings", 2048) or 2048)
