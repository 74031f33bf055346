"""Fine-tuning the grader's second reader (specviz.practice.reader) and the stack that joins it to the first.

Pairs come from the tuning part's answers and the contrasts of the tuning cards and the cards no answer was labelled
for (the caller passes both; the held-out cards' answers and points never reach here):
- made: each labelled point with its hand-marked evidence clause; each point with the sentence of its card's
  model answer that says it (when the first reader finds one close enough);
- not made: each point the hand labels say was missed, with the clauses the first reader rates best for it (the
  hardest negatives, the ones that earned false credit); each point with its own words flipped (a "not" put in or
  taken out, an opposite swapped: "exactly" for "approximately", "one pass" for "K passes"), with the bank's
  misconception it sits closest to, and with a clause of another card's answer; and every clause above that
  makes its point, with one of its words flipped;
- both, from `contrasts` (specviz/practice/grading_contrasts.yaml, never a held-out card): for each point, a
  sentence that makes it far from the rubric's words, and two on its subject that contradict it in a learner's own
  words (not a flipped word: "Arithmetic intensity = bytes moved ÷ FLOPs, so a higher number means a more
  memory-hungry kernel" for "Arithmetic intensity = FLOPs ÷ bytes moved from memory").
"""
from __future__ import annotations

import random
import re

from specviz.practice import grade as G
from specviz.practice import reader as R

# Paraphrases per point read in its place against its denials (stance_swaps). Measured and not adopted (2026-11-28,
# docs/grader-rounds.md, "The tenth round"): 2 raised the leave-out folds' agreement in both runs and cut the answers
# outside the targets (49 to 42), but the five held-out parts fell from 0.872 to 0.864 pooled (30 answers outside to
# 29). Set it to repeat the measurement with `grade --cv`.
STANCE_SWAPS = 0

# one word or phrase turned to its opposite; "is" and friends only where no "not" follows (else "is not not")
_FLIPS = [(r"\bcannot\b", "can"), (r"\bcan\b(?!\s+not\b)", "cannot"), (r"\bmust not\b", "must"),
          (r"\bmust\b(?!\s+not\b)", "must not"), (r"\bis not\b", "is"), (r"\bis\b(?!\s+not\b)", "is not"),
          (r"\bare not\b", "are"), (r"\bare\b(?!\s+not\b)", "are not"), (r"\bdoes not\b", "does"),
          (r"\bdoes\b(?!\s+not\b)", "does not"), (r"\b(?:doesn't|don't)\b", "does"), (r"\bnever\b", "always"),
          (r"\balways\b", "never"), (r"\bno\b", "some"), (r"\bwithout\b", "with"),
          (r"\bexactly\b", "approximately"), (r"\bexact\b", "approximate"), (r"\blossless\b", "lossy"),
          (r"\bidentical\b", "close"), (r"\b(?:one|a single) (?:forward )?pass\b", "K separate passes"),
          (r"\ball\b", "only some of"),
          (r"\bin parallel\b", "one at a time"), (r"\bonce\b", "again for each position"),
          (r"\bbelow\b", "above"), (r"\babove\b", "below"), (r"\bfewer\b", "more"), (r"\bmore\b", "fewer"),
          (r"\blower\b", "higher"), (r"\bhigher\b", "lower"), (r"\blowers\b", "raises"), (r"\braises\b", "lowers"),
          (r"\bfaster\b", "slower"), (r"\bslower\b", "faster"), (r"\bup\b", "down"), (r"\bdown\b", "up"),
          (r"\bincreases?\b", "decreases"), (r"\bdecreases?\b", "increases"), (r"\bgrows?\b", "shrinks"),
          (r"\bfalls?\b", "rises"), (r"\bbefore\b", "after"), (r"\bafter\b", "before"), (r"\bfirst\b", "last"),
          (r"\bsame\b", "different"), (r"\bdifferent\b", "same"), (r"\bboth\b", "neither of"),
          (r"\bmemory-bound\b", "compute-bound"), (r"\bcompute-bound\b", "memory-bound"), (r"\bany\b", "only a greedy"),
          (r"\bresidual\b", "target distribution p"), (r"\bdiscarded\b", "kept"), (r"\bkept\b", "discarded"),
          (r"\baccepted\b", "rejected"), (r"\brejected\b", "accepted"), (r"\bimmediately\b", "only at the end"),
          (r"\b(?:cropped|cut back|rolled back)\b", "left untouched"), (r"\bends\b", "continues"),
          (r"\bstops\b", "continues"), (r"\bnot\s+", "")]


def flips(point: str, most: int = 3) -> list[str]:
    """The point (or a clause) with one of its words turned to the opposite, for each that applies (at most
    `most`)."""
    out = []
    for pattern, to in _FLIPS:
        flipped, n = re.subn(pattern, to, point, count=1, flags=re.IGNORECASE)
        if n and flipped != point and flipped not in out:
            out.append(flipped)
    return out[:most]


def _sentences(text: str) -> list[str]:
    text = re.sub(r"\s+", " ", str(text or "")).strip()
    return [text[a:b] for a, b in G.sentence_spans(text) if len(text[a:b].split()) >= 4]


def pairs(rows, cards: dict, enc, weights, seed: int = 0, contrasts: dict | None = None,
          swap: int | None = None) -> list[tuple[str, str, float]]:
    """(point, clause, made) for fine-tuning; see the module docstring. `contrasts`: card -> [(point, sentence,
    made)], every card's taken (the caller leaves out the cards it will grade). `swap`: stance_swaps' `most`
    (default STANCE_SWAPS; 0 for none)."""
    swap = STANCE_SWAPS if swap is None else swap
    rng = random.Random(seed)
    out: list[tuple[str, str, float]] = []
    clauses_by_card: dict[str, list[str]] = {}
    for r in rows:
        rubric = cards[r.card].rubric
        spans, parts, x = G.candidates(rubric, r.answer, enc)
        clauses_by_card.setdefault(r.card, []).extend(parts)
        scores = G.logits(x, weights)
        for j, (lab, ev) in enumerate(zip(r.labels, r.evidence)):
            if lab and ev:
                out.append((rubric[j], ev, 1.0))
            elif not lab:
                top = sorted(range(len(parts)), key=lambda i: -float(scores[i, j]))[:G.TOP]
                out += [(rubric[j], parts[i], 0.0) for i in top]
    points = list(dict.fromkeys(p for c in {r.card for r in rows} for p in cards[c].rubric))
    misc = G.misconception_claims()
    P, M = enc.cached(points), enc.cached(misc)
    near = (P @ M.T).argmax(dim=1).tolist()
    others = {c: [t for d, ts in clauses_by_card.items() if d != c for t in ts] for c in clauses_by_card}
    for c in {r.card for r in rows}:
        q = cards[c]
        said = _sentences(getattr(q, "answer", ""))
        S = enc.cached(said) if said else None
        for point in q.rubric:
            k = points.index(point)
            if S is not None:
                sims = S @ P[k]
                best = int(sims.argmax())
                if float(sims[best]) >= 0.55:
                    out.append((point, said[best], 1.0))
            out += [(point, f, 0.0) for f in flips(point)]
            out.append((point, misc[near[k]], 0.0))
            if others[c]:
                out.append((point, rng.choice(others[c]), 0.0))
    # every clause that makes a point, with one of its words turned to the opposite, does not: contradictions in
    # the learner's own words ("the weights are re-read for each position", "the target's cache is not touched"),
    # the false credits a reader of meaning alone gives
    for point, clause, _ in [t for t in out if t[2] == 1.0]:
        turned = flips(clause, len(_FLIPS))
        if turned:
            out.append((point, rng.choice(turned), 0.0))
    for c in sorted(contrasts or ()):
        out += [(point, text, made) for point, text, made in contrasts[c] if point in cards[c].rubric]
    return out + (stance_swaps(out, contrasts or {}, rng, swap) if swap else [])


def stance_swaps(data: list[tuple[str, str, float]], contrasts: dict, rng: random.Random,
                 most: int) -> list[tuple[str, str, float]]:
    """The stance pairs again with a paraphrase of the point in the point's place: for each point that a contrast
    sentence denies, up to `most` of the sentences that make it (its contrast, hand-marked evidence, its card's model
    answer) each read against another that makes it (made) and against each denial and the point's own words flipped
    (not made). Why: the reader sees each rubric point's own words on the left of only three stance pairs, and learns
    the point's subject rather than its stance; with a learner's paraphrase on the left, a denial must still read as
    not made."""
    makes: dict[str, list[str]] = {}
    for point, text, made in data:
        if made and text not in makes.setdefault(point, []):
            makes[point].append(text)
    out = []
    for c in sorted(contrasts):
        denied: dict[str, list[str]] = {}
        for point, text, made in contrasts[c]:
            if not made:
                denied.setdefault(point, []).append(text)
        for point, denials in denied.items():
            said = makes.get(point, [])
            for a in rng.sample(said, min(most, len(said))):
                out += [(a, b, 1.0) for b in said if b != a][:1]
                out += [(a, d, 0.0) for d in denials + flips(point)]
    return out


def train_reader(data: list[tuple[str, str, float]], layers: int = 4, epochs: int = 3, lr: float = 5e-5,
                 batch: int = 16, seed: int = 0, start: dict | None = None, device: str = "cpu") -> R.Reader:
    """Fine-tune the top `layers` layers and the score on `data`; the classes weighted to balance. `start`: the
    tuned layers to begin from (stage one, specviz.training.nli), else the packaged encoder's own. `device`: where
    it trains ("cuda" on a lent GPU: the leave-out folds in minutes); it is returned on the CPU."""
    import torch
    torch.manual_seed(seed)
    reader = R.Reader(G.encoder_dir(), start, G.default_encoder().tokenizer).to(device)
    for p in reader.model.parameters():
        p.requires_grad_(False)
    tuned = reader.tuned(layers)
    for p in tuned.values():
        p.requires_grad_(True)
    head = [p for k, p in tuned.items() if k.startswith("score.")]
    body = [p for k, p in tuned.items() if not k.startswith("score.")]
    opt = torch.optim.AdamW([{"params": body, "lr": lr}, {"params": head, "lr": 2e-3}], weight_decay=0.01)
    positives = sum(y for *_, y in data)
    pos_weight = torch.tensor((len(data) - positives) / max(1.0, positives), device=reader.device)
    rng = random.Random(seed)
    reader.model.train()
    for _ in range(epochs):
        order = list(range(len(data)))
        rng.shuffle(order)
        for s in range(0, len(order), batch):
            chunk = [data[i] for i in order[s:s + batch]]
            z = reader.forward([p for p, _, _ in chunk], [c for _, c, _ in chunk])
            y = torch.tensor([t for *_, t in chunk], device=reader.device)
            loss = torch.nn.functional.binary_cross_entropy_with_logits(z, y, pos_weight=pos_weight)
            opt.zero_grad()
            loss.backward()
            opt.step()
    reader.model.eval()
    reader.layers = layers
    reader.to("cpu")  # graded where it is shipped: on the CPU
    return reader


def save(reader: R.Reader, path=R.READER_FILE) -> None:
    from safetensors.torch import save_file
    save_file({k: v.detach().half().contiguous() for k, v in reader.tuned(reader.layers).items()}, str(path))
