"""The grader's second reader: a small cross-encoder that reads a rubric point and one clause of the answer
TOGETHER, so attention runs across the pair ("the draft also cannot be one-hot" against "the draft may sample from
any q (..., one-hot)"). The first reader (grade.Encoder) embeds each side alone and compares two vectors, which is
fast enough for every clause but blind to a "not" that flips the meaning while keeping the words.

It is all-MiniLM-L6-v2 (the same packaged weights, found on disk) read as a pair, mean-pooled, with its top layers
and a one-unit score fine-tuned on the hand-labelled set's tuning part (specviz.training.reader_train); only what
was fine-tuned is shipped (models/grader/reader.safetensors, fp16). It reads only each point's few best clauses by
the first reader: a pair costs a full pass, and 48 clauses × 5 points would not fit the 300 ms budget.
"""
from __future__ import annotations

import pathlib

from specviz import ROOT

READER_FILE = ROOT / "models" / "grader" / "reader.safetensors"
MAX_LEN = 96


class Reader:
    """score(pairs) -> one logit per (point, clause) pair: made (> 0) or not, read together."""

    def __init__(self, folder: pathlib.Path, state: dict | None = None, tokenizer=None):
        import torch
        from transformers import AutoModel, AutoTokenizer
        self.torch = torch
        self.tokenizer = tokenizer or AutoTokenizer.from_pretrained(folder)
        self.model = AutoModel.from_pretrained(folder)
        self.score = torch.nn.Linear(self.model.config.hidden_size, 1)
        torch.nn.init.zeros_(self.score.weight)
        torch.nn.init.zeros_(self.score.bias)
        self.nli = None  # the 3-way entailment/neutral/contradiction head of stage one (specviz.training.nli)
        self.device = torch.device("cpu")
        if state is not None:
            self.load(state)
        self.model.eval()

    def tuned(self, layers: int) -> dict:
        """The parameters fine-tuning moves: the top `layers` transformer layers and the score."""
        n = self.model.config.num_hidden_layers
        out = {f"encoder.layer.{i}.{k}": v for i in range(n - layers, n)
               for k, v in self.model.encoder.layer[i].named_parameters()}
        out |= {f"score.{k}": v for k, v in self.score.named_parameters()}
        return out

    def load(self, state: dict) -> None:
        torch = self.torch
        if any(k.startswith("nli.") for k in state):
            self.nli = torch.nn.Linear(self.model.config.hidden_size, 3)
        with torch.no_grad():
            for k, v in state.items():
                if k.startswith(("score.", "nli.")):
                    head, name = k.split(".", 1)
                    getattr(getattr(self, head), name).copy_(v.float())
                else:
                    self.model.get_parameter(k).copy_(v.float())

    def to(self, device) -> "Reader":
        self.device = self.torch.device(device)
        for m in (self.model, self.score, self.nli):
            if m is not None:
                m.to(self.device)
        return self

    def pooled(self, points: list[str], parts: list[str]):
        """The pair read together, mean-pooled over its tokens."""
        batch = self.tokenizer(points, parts, padding=True, truncation="longest_first", max_length=MAX_LEN,
                               return_tensors="pt").to(self.device)
        h = self.model(**batch).last_hidden_state
        mask = batch["attention_mask"].unsqueeze(-1).to(h.dtype)
        return (h * mask).sum(1) / mask.sum(1).clamp(min=1)

    def forward(self, points: list[str], parts: list[str]):
        return self.score(self.pooled(points, parts)).squeeze(-1)

    def logits(self, pairs: list[tuple[str, str]], chunk: int = 8):
        """Read in chunks of similar length: a batch is padded to its longest pair, and on 2 CPU cores the padding
        is compute (27 pairs of one answer: 244 ms in one batch, 194 ms in chunks of 8; the same logits to 1e-5)."""
        if not pairs:
            return self.torch.zeros(0)
        order = sorted(range(len(pairs)), key=lambda k: len(pairs[k][0]) + len(pairs[k][1]))
        out = self.torch.zeros(len(pairs))
        with self.torch.inference_mode():
            for s in range(0, len(order), chunk):
                ids = order[s:s + chunk]
                out[ids] = self.forward([pairs[k][0] for k in ids], [pairs[k][1] for k in ids]).float().cpu()
        return out


def load_state(path: pathlib.Path = READER_FILE) -> dict | None:
    if not path.exists():
        return None
    from safetensors.torch import load_file
    return load_file(str(path))
