"""Prompt text -> token ids, with the checks every entry point needs (CLI and pages alike)."""
from __future__ import annotations

import itertools
import json
import pathlib

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


def prompt_ids(tokenizer, text: str | tuple[str, ...], chat: bool = True) -> list[int]:
    """The prompt's token ids: with chat, a user turn in the model's chat template and the assistant header.
    A tuple of texts (only the training and evaluation sets have them) is a conversation: user and assistant
    turns alternating, ending on the user's turn."""
    if chat:
        turns = (text,) if isinstance(text, str) else text
        messages = [{"role": ("user", "assistant")[i % 2], "content": t} for i, t in enumerate(turns)]
        return list(tokenizer.apply_chat_template(messages, add_generation_prompt=True)["input_ids"])
    return list(tokenizer(text)["input_ids"])


def context_size(model) -> int:
    return int(getattr(model.config, "max_position_embeddings", 2048) or 2048)


# the prompt sets (subjects.json): task templates x subjects, for training the drafts (training/data.py) and the
# held-out prompts every evaluation and lab uses; "held_out" never enters training
LISTS = json.loads(pathlib.Path(__file__).with_name("subjects.json").read_text())
TASKS: list[str] = LISTS["tasks"]
SUBJECTS: list[str] = LISTS["subjects"]
EXTRA_SUBJECTS: list[str] = LISTS["extra_subjects"]
MORE_SUBJECTS: list[str] = LISTS["more_subjects"]
# a fourth list, for a fine-tuning stage on answers the shipped drafts never saw (models/README.md, "fine-tune")
FRESH_SUBJECTS: list[str] = LISTS["fresh_subjects"]
HELD_OUT: list[str] = LISTS["held_out"]
# prompts of other shapes than TASKS (issue #48.4: conversations, code of several kinds, instructions with
# constraints); a list is a conversation (user, assistant, user). HELD_OUT_SHAPES never enter training: the
# evaluation's "shapes" set is them over the HELD_OUT subjects, new templates AND new subjects
SHAPES: list = LISTS["shapes"]
HELD_OUT_SHAPES: list = LISTS["held_out_shapes"]


def fill(template, subject: str) -> str | tuple[str, ...]:
    return template.format(s=subject) if isinstance(template, str) else tuple(t.format(s=subject) for t in template)


def prompts(subjects, templates=None) -> list:
    return [fill(t, s) for s, t in itertools.product(subjects, TASKS if templates is None else templates)]


def held_out_prompts(templates=None) -> list:
    return prompts(HELD_OUT, templates)
