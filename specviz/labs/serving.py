"""The serving view, MEASURED on this machine: target forwards over a grid of batch size x tokens per sequence,
memory bandwidth and matmul throughput (`measure_*`, `forward_grid`), and the loaded models' shapes. What is
calculated from published numbers (the roofline, KV bytes of well-known shapes) is specviz/roofline.py; the page
keeps the two apart."""
from __future__ import annotations

import statistics
import time

import torch

from specviz.labs.timing import forward_ms
from specviz.packed import PackedLinear
from specviz.roofline import Device, ModelShape


def loaded_weights(model, shared_with=None) -> int:
    """Weight values the loaded model holds: its parameters and the weights of its oneDNN-packed linear layers
    (buffers, not parameters: specviz/packed.py), each tensor once. With tied embeddings the packed LM head is
    the embedding's values again (a reordered copy) and is not counted twice. shared_with: a model whose
    tensors this one borrows (a draft assembled on the target shares its embedding): those are left out, so
    the figure is what loading this model adds."""
    def tensors(m) -> dict[int, int]:
        out = {id(p): p.numel() for p in m.parameters()}
        tied = getattr(m.config, "tie_word_embeddings", False)
        head = m.get_output_embeddings() if hasattr(m, "get_output_embeddings") else None
        for mod in m.modules():
            if isinstance(mod, PackedLinear) and not (tied and mod is head):
                out[id(mod.packed)] = mod.out_features * mod.in_features
                if mod.bias is not None:
                    out[id(mod.bias)] = mod.bias.numel()
        return out

    mine = tensors(model)
    borrowed = tensors(shared_with) if shared_with is not None else {}
    return sum(n for t, n in mine.items() if t not in borrowed)


def shape_of(model, name: str, shared_with=None) -> ModelShape:
    """The shape of a loaded transformers model, read from its config; its weight count from what is loaded
    (loaded_weights: packed linear layers included, tied embeddings once, tensors borrowed from `shared_with`
    left out)."""
    cfg = model.config
    head_dim = getattr(cfg, "head_dim", None) or cfg.hidden_size // cfg.num_attention_heads
    kv = getattr(cfg, "num_key_value_heads", None) or cfg.num_attention_heads
    params = loaded_weights(model, shared_with)
    return ModelShape(name, cfg.num_hidden_layers, cfg.num_attention_heads, kv, head_dim, float(params),
                      "read from the loaded model's config; weights counted as loaded" +
                      ("; its embedding is the target's (shared, counted there)" if shared_with is not None else ""))


# ---------------------------------------------------------------- measured here
def measure_bandwidth(mb: int = 256, repeats: int = 5) -> float:
    """Bytes/s reading a large fp32 tensor (a sum streams it once): this machine's memory bandwidth."""
    x = torch.ones(mb * 2 ** 20 // 4)
    x.sum()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        x.sum()
        times.append(time.perf_counter() - t0)
    return x.numel() * 4 / statistics.median(times)


def measure_matmul_flops(n: int = 1024, repeats: int = 5) -> float:
    """FLOP/s of an fp32 n x n matmul: this machine's practical compute peak."""
    a, b = torch.randn(n, n), torch.randn(n, n)
    a @ b
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        a @ b
        times.append(time.perf_counter() - t0)
    return 2 * n ** 3 / statistics.median(times)


def this_cpu(bandwidth: float, flops: float) -> Device:
    return Device("this CPU (measured)", bandwidth, flops, "measured here: a 256 MB fp32 sum and a 1024² fp32 matmul")


def forward_grid(target, draft, batches, k: int, context: int = 64, progress=lambda f, m: None) -> dict:
    """Measured: per batch size, a 1-token target step, a (K+1)-token verify and a 1-token draft step (ms),
    and from them v(B) and c(B)."""
    rows = []
    for i, b in enumerate(batches):
        progress(i / len(batches), f"batch {b}…")
        t1 = forward_ms(target, context, 1, 3, batch=b)
        tv = forward_ms(target, context, k + 1, 3, batch=b)
        d1 = forward_ms(draft, context, 1, 3, batch=b) if draft is not None else 0.0
        rows.append({"batch": b, "target_ms": t1, "verify_ms": tv, "draft_ms": d1, "v": tv / t1, "c": d1 / t1})
    progress(1.0, "done")
    return {"k": k, "context": context, "rows": rows}
