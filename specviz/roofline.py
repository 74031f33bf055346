"""The roofline, CALCULATED from published numbers: KV-cache bytes for well-known model shapes, a datasheet GPU,
and when speculation stops paying as the batch grows (the Serving lab draws it; specviz/labs/serving.py measures
this machine's side). Each shape and device names its source.

A step has two parts with different rooflines. The linear layers read every weight once whatever the
batch and do 2 FLOPs per weight per token: intensity 2·B·T / bytes per value, growing with the batch B
and the tokens per sequence T. Attention reads each sequence's own KV cache (nothing shared across the
batch) and does ~4·T·context·heads·head_dim FLOPs per layer over it: intensity 2·T·(query heads / KV heads)
/ bytes per value, whatever the batch or the context. Below the ridge point (peak FLOP/s ÷ bandwidth) a
part is memory-bound, so verifying K+1 tokens per sequence costs about what 1 does: speculation is cheap.
Once the linear layers cross the ridge, verify costs ~(K+1)x there and speculation stops paying; at long
context the memory-bound attention dominates the step and keeps verification cheap, so it can pay again.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from specviz.theory import expected_tokens

GIB = 2 ** 30


@dataclass(frozen=True)
class ModelShape:
    name: str
    layers: int
    heads: int  # query heads
    kv_heads: int
    head_dim: int
    params: float  # parameters, for the weight bytes a decode step reads
    source: str


# Typed in from the published configs (config.json on the model's Hub page); dtype chosen by the user.
KNOWN_SHAPES = [
    ModelShape("Llama-3-8B-like (GQA)", 32, 32, 8, 128, 8.03e9,
               "Meta Llama 3 8B config.json: 32 layers, 32 query / 8 KV heads, head_dim 128 (4096 / 32)"),
    ModelShape("Llama-3-70B-like (GQA)", 80, 64, 8, 128, 70.6e9,
               "Meta Llama 3 70B config.json: 80 layers, 64 query / 8 KV heads, head_dim 128 (8192 / 64)"),
    ModelShape("Llama-2-7B-like (no GQA)", 32, 32, 32, 128, 6.74e9,
               "Meta Llama 2 7B config.json: 32 layers, 32 heads, all of them KV heads (multi-head attention)"),
]


@dataclass(frozen=True)
class Device:
    name: str
    bandwidth: float  # bytes/s
    flops: float  # FLOP/s
    source: str


H100_SXM = Device("H100 SXM (datasheet)", 3.35e12, 989e12,
                  "NVIDIA H100 SXM datasheet: 3.35 TB/s HBM3, 989 TFLOP/s dense BF16 tensor core")


def gpus_for(nbytes: float, gpu_bytes: float = 80e9) -> int:
    """The fewest GPUs of `gpu_bytes` each whose memory together holds `nbytes` (weights alone: nothing left
    for the KV cache or activations, so a real deployment needs more)."""
    return max(1, math.ceil(nbytes / gpu_bytes))


def kv_bytes_per_token(shape: ModelShape, bytes_per_value: int = 2) -> int:
    """2 (K and V) · layers · KV heads · head_dim · bytes per value."""
    return 2 * shape.layers * shape.kv_heads * shape.head_dim * bytes_per_value


def kv_cache_bytes(shape: ModelShape, batch: int, context: int, bytes_per_value: int = 2, beams: int = 1,
                   prompt: int = 0, share_prompt: bool = True) -> int:
    """KV bytes for `batch` requests of `context` tokens, each searched with `beams` beams. The prompt's
    `prompt` tokens are held once per request when beams share them (prefix sharing / copy-on-write
    blocks, as paged attention does), B times otherwise; the generated tokens are held once per beam."""
    per_token = kv_bytes_per_token(shape, bytes_per_value)
    prompt = min(prompt, context)
    held = (prompt if share_prompt else prompt * beams) + (context - prompt) * beams
    return batch * held * per_token


def linear_intensity(batch: int, tokens_per_seq: int, bytes_per_value: int = 2) -> float:
    """FLOPs per byte of the linear layers: 2 FLOPs per weight per token, each weight read once."""
    return 2.0 * batch * tokens_per_seq / bytes_per_value


def attention_intensity(shape: ModelShape, tokens_per_seq: int, bytes_per_value: int = 2) -> float:
    """FLOPs per byte of attention over the KV cache: 4·T·ctx·heads·dim FLOPs per layer over 2·ctx·KV heads·dim
    values read. Independent of batch and context: grouped-query attention (heads > KV heads) raises it."""
    return 2.0 * tokens_per_seq * shape.heads / shape.kv_heads / bytes_per_value


def step_parts(shape: ModelShape, device: Device, batch: int, tokens_per_seq: int, context: int,
               bytes_per_value: int = 2) -> tuple[float, float]:
    """Roofline seconds of one step's linear layers and of its attention over the KV cache (a calculation)."""
    lin_bytes = shape.params * bytes_per_value
    lin = max(lin_bytes / device.bandwidth,
              lin_bytes * linear_intensity(batch, tokens_per_seq, bytes_per_value) / device.flops)
    kv_bytes = batch * context * kv_bytes_per_token(shape, bytes_per_value)
    att = max(kv_bytes / device.bandwidth,
              kv_bytes * attention_intensity(shape, tokens_per_seq, bytes_per_value) / device.flops)
    return lin, att


def step_seconds(shape: ModelShape, device: Device, batch: int, tokens_per_seq: int, context: int,
                 bytes_per_value: int = 2) -> float:
    return sum(step_parts(shape, device, batch, tokens_per_seq, context, bytes_per_value))


def speedup_at_batch(a: float, k: int, verify_over_step: float, c: float) -> float:
    """Leviathan et al.'s estimate with the measured verify cost: E[tokens per pass] / (v + K·c), where v is
    a (K+1)-token verify step over a 1-token step at the same batch and c a draft step over a target step."""
    return expected_tokens(a, k) / (verify_over_step + k * c)


def roofline_speedups(shape: ModelShape, device: Device, a: float, k: int, c: float, batches, context: int,
                      bytes_per_value: int = 2) -> list[float]:
    """The estimated speculative speedup at each batch size from the roofline's step times (a calculation)."""
    return [speedup_at_batch(a, k, step_seconds(shape, device, b, k + 1, context, bytes_per_value)
                             / step_seconds(shape, device, b, 1, context, bytes_per_value), c) for b in batches]


def compute_bound_batch(device: Device, tokens_per_seq: int, bytes_per_value: int = 2) -> int:
    """The smallest batch at which the linear layers reach the ridge point (peak FLOP/s ÷ bandwidth): from
    there on a step's weight reads no longer hide its compute, and verifying T tokens costs ~T times one."""
    ridge = device.flops / device.bandwidth
    return max(1, math.ceil(ridge * bytes_per_value / (2.0 * tokens_per_seq)))
