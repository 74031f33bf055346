"""The target itself, quantized, as the draft (issue 48, item 5): "a quantized target (INT8 vs FP16)", the draft
option interview guides list. Every linear layer of the target (each decoder layer's seven, and the LM head) gets
weight-only integer weights; norms, attention, the embedding and the KV cache stay the target's, in float.

- int8: one scale per output channel, s = max |w| / 127, w ~ s * q with q in -127..127 (torch's
  `_weight_int8pack_mm`).
- int4: groups of 32 along the input, w ~ scale * (q - 8) + zero with q in 0..15 (min and max per group, torch's
  `_weight_int4pack_mm_for_cpu`). The embedded target ships as GGUF Q4_1, which is exactly that grid (blocks of 32,
  w = d * q + m): the int4 copy holds its decoder layers almost exactly (its embedding, hence the tied head, is
  stored in another GGUF type: the int4 head is only close).

Why it is here: it agrees with the target nearly always (a close to 1), yet what a draft step costs is the kernel's
business, not the bit width's. With the target's own fp32 arithmetic torch's integer kernels are slower than the
oneDNN-packed fp32 target (c > 1), and Leviathan et al.'s rule a > c (Corollary 3.9) says do not speculate, however
high the acceptance: acceptance is not speedup. The "-bf16" kinds feed the same kernels bf16 activations (W8A16,
W4A16), a path that is fast where the CPU has AVX-512 BF16 or AMX. Measured on this project's 2-core machine (AVX-512
with BF16 and AMX, torch 2.13, one decode step, median): packed fp32 target 48 ms; fp32 activations int8 60 ms
(c = 1.25), int4 130 ms (c = 2.7); bf16 activations int8 25 ms (c = 0.52), int4 22 ms (c = 0.47). Issue 48's AVX2
host: int8 141 ms, int4 65 ms against 53 ms. So c, not a, decides, and c belongs to the kernel and the machine.

A matrix of more than ROWS rows (the prompt's prefill) is multiplied in float by the weights dequantized for that
call: with fp32 activations torch's kernels cost about one call per row (5 rows, 5 times one row, measured), which
would bill the draft seconds for a prompt. Off the CPU every
call takes that path (the same numbers, no claim about speed). A layer whose input size is no multiple of 32 keeps its
fp32 weights (not the embedded target's case).
"""
from __future__ import annotations

import copy
import threading
import weakref

import torch

from specviz.drafters.build import assemble
from specviz.drafters.model import ModelDrafter
from specviz.packed import PackedLinear

GROUP = 32  # int4 group size along the input: a GGUF Q4_1 block
ROWS = 4  # more rows than this (a prefill): dequantize and multiply in float
# kind -> (bits, activation dtype of the integer kernels, label)
FORMATS = {"int8": (8, torch.float32, "target quantized int8 (weight-only)"),
         "int4": (4, torch.float32, "target quantized int4 (weight-only, group 32)"),
         "int8-bf16": (8, torch.bfloat16, "target quantized int8, bf16 activations"),
         "int4-bf16": (4, torch.bfloat16, "target quantized int4, bf16 activations")}
QUANTIZED_LABELS = {kind: label for kind, (_, _, label) in FORMATS.items()}


def weight_of(layer: torch.nn.Module) -> torch.Tensor:
    """A linear layer's (out, in) weight in float: a packed layer's oneDNN copy reordered back (exact)."""
    return layer.packed.to_dense() if isinstance(layer, PackedLinear) else layer.weight.detach()


class QuantizedLinear(torch.nn.Module):
    """y = x W^T + b with W held in integers; `kernel` multiplies a few rows, `weight()` dequantizes for the rest."""

    def __init__(self, bias: torch.Tensor | None, act: torch.dtype):
        super().__init__()
        self.bias, self.act = (None if bias is None else bias.detach()), act

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        flat = x.reshape(-1, x.shape[-1])
        if x.device.type == "cpu" and flat.shape[0] <= ROWS:
            y = self.kernel(flat.to(self.act).contiguous()).to(x.dtype)
        else:
            y = flat @ self.weight().to(x.dtype).T
        y = y.reshape(*x.shape[:-1], -1)
        return y if self.bias is None else y + self.bias


class Int8Linear(QuantizedLinear):
    """int8 weights, one scale per output channel."""

    def __init__(self, weight: torch.Tensor, bias: torch.Tensor | None, act: torch.dtype = torch.float32):
        super().__init__(bias, act)
        w = weight.float()
        scale = w.abs().amax(1).clamp_min(1e-12) / 127
        self.register_buffer("q", torch.round(w / scale[:, None]).clamp(-127, 127).to(torch.int8))
        self.register_buffer("scale", scale)

    def kernel(self, x: torch.Tensor) -> torch.Tensor:
        return torch.ops.aten._weight_int8pack_mm(x, self.q, self.scale.to(x.dtype))

    def weight(self) -> torch.Tensor:
        return self.q.float() * self.scale[:, None]


class Int4Linear(QuantizedLinear):
    """int4 weights in groups of 32 along the input: w = scale * (q - 8) + zero, q in 0..15."""

    def __init__(self, weight: torch.Tensor, bias: torch.Tensor | None, act: torch.dtype = torch.float32):
        super().__init__(bias, act)
        n, k = weight.shape
        w = weight.float().reshape(n, k // GROUP, GROUP)
        lo, hi = w.amin(-1), w.amax(-1)
        scale = ((hi - lo) / 15).clamp_min(1e-12)
        q = torch.round((w - lo[..., None]) / scale[..., None]).clamp(0, 15).to(torch.uint8).reshape(n, k)
        self.register_buffer("scale", scale)  # (n, k / 32)
        self.register_buffer("low", lo)  # the value of q = 0: the group's minimum
        self.register_buffer("nibbles", q[:, 0::2] | q[:, 1::2] << 4)  # two per byte, for weight()
        # the kernel's own layout: packed (its blocking), and (k / 32, n, 2) of (scale, zero = the value of q = 8)
        self.register_buffer("packed", torch.ops.aten._convert_weight_to_int4pack_for_cpu(q.int(), 2)
                             if weight.device.type == "cpu" else None)  # 2 inner k-tiles: 32 divides k
        self.register_buffer("scale_zeros", torch.stack([scale, lo + 8 * scale], -1).transpose(0, 1).contiguous())

    def kernel(self, x: torch.Tensor) -> torch.Tensor:
        return torch.ops.aten._weight_int4pack_mm_for_cpu(x, self.packed, GROUP, self.scale_zeros.to(x.dtype))

    def weight(self) -> torch.Tensor:
        n = self.nibbles.shape[0]
        q = torch.stack([self.nibbles & 15, self.nibbles >> 4], -1).reshape(n, -1, GROUP).float()
        return (q * self.scale[..., None] + self.low[..., None]).reshape(n, -1)


def quantize_layer(layer: torch.nn.Module, bits: int, act: torch.dtype) -> torch.nn.Module:
    """The int8 or int4 twin of one linear layer (the layer itself when its input size is no multiple of 32)."""
    weight = weight_of(layer)
    if weight.shape[1] % GROUP:
        return layer
    return (Int8Linear if bits == 8 else Int4Linear)(weight, layer.bias, act)


def rebuilt(module: torch.nn.Module, leaf) -> torch.nn.Module:
    """`module` with every module below it that `leaf` maps to a replacement (not None) replaced: each module on the
    way is a shallow copy (its own child table, the same norms and buffers), so the original is left untouched."""
    new = leaf(module)
    if new is not None:
        return new
    clone = copy.copy(module)
    clone._parameters, clone._buffers = dict(module._parameters), dict(module._buffers)
    clone._modules = {name: None if child is None else rebuilt(child, leaf) for name, child in module._modules.items()}
    return clone


def quantizer(bits: int, act: torch.dtype):
    """The leaf map that quantizes every linear layer."""
    return lambda m: quantize_layer(m, bits, act) if isinstance(m, (torch.nn.Linear, PackedLinear)) else None


def twin(act: torch.dtype):
    """The leaf map that feeds a quantized layer's kernel another activation dtype: the same integer buffers (a
    quantized model and its bf16-activation twin hold their weights once)."""
    def leaf(m):
        if not isinstance(m, QuantizedLinear):
            return None
        clone = copy.copy(m)
        clone.act = act
        return clone
    return leaf


_built: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # target -> {kind: its quantized copy}
_lock = threading.Lock()  # two sessions of the app asking at once build it once


@torch.inference_mode()
def quantized_model(target, kind: str):
    """The target quantized as `kind` (a FORMATS key), built once per target and kept while the target lives: its
    embedding, rotary table and final norm ARE the target's; its decoder layers and head are quantized copies (shared
    with the kind of the same bits built before it, when there is one)."""
    bits, act, _ = FORMATS[kind]
    with _lock:
        done = _built.setdefault(target, {})
        if kind not in done:
            sibling = next((done[k] for k, (b, _, _) in FORMATS.items() if b == bits and k in done), None)
            source, leaf = (target, quantizer(bits, act)) if sibling is None else (sibling, twin(act))
            layers = torch.nn.ModuleList(rebuilt(layer, leaf) for layer in source.model.layers)
            done[kind] = assemble(target, layers, target.model.norm, rebuilt(source.lm_head, leaf))
        return done[kind]


def quantized_drafter(target, kind: str) -> ModelDrafter:
    return ModelDrafter(quantized_model(target, kind), QUANTIZED_LABELS[kind])
