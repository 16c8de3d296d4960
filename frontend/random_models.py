"""Random valid int8 TFLite models: small multi-op graphs of what TFLite's converter emits.

    from qaccel.frontend.random_models import generate, generate_model
    model: bytes = generate_model(7)          # the same bytes for the same seed, always
    g = generate(7)
    print(g.description)                      # "cnn 1x9x9x13: conv3x3/s2 ... -> fc -> softmax"
    g.ops                                     # Counter({"CONV_2D": 3, "ADD": 1, ...})

Every model is built with our builder (`frontend/builder.py`) and is meant to be valid: LiteRT's
reference kernels (`BUILTIN_REF`) accept it, and its quantization is the converter's:

- activations per-tensor asymmetric int8; an output range as calibration would find it;
  a fused RELU/RELU6 gives zero point -128 (RELU6: scale at most 6/255);
- CONV_2D weights per-channel (axis 0) or per-tensor, DEPTHWISE_CONV_2D per-channel on axis 3,
  FULLY_CONNECTED per-tensor, all symmetric, with int32 biases of scale input x weight;
- LOGISTIC and SOFTMAX outputs 1/256 with zero point -128; HARD_SWISH's output range is the
  function's image of its input's range (never below the kernel's limit of input scale / 128);
- pooling, PAD, RESHAPE and CONCATENATION keep their input's quantization (a concatenation's
  branches are given its quantization, as the converter ties them).
- FULLY_CONNECTED weights per-tensor or, as newer converters emit, per-channel on axis 0;
- the data-movement ops (TRANSPOSE, GATHER, PACK, SQUEEZE, SLICE, STRIDED_SLICE, RESIZE_*,
  MAXIMUM/MINIMUM, ...) keep their input's quantization; TANH's output is 1/128 with zero
  point 0, LOG_SOFTMAX's 16/256 with zero point 127; LEAKY_RELU, RELU, SUM, an int8 -> int8
  QUANTIZE and the others get the calibrated range of their function's image.

Activation scales stay within the ranges of real models (0.004-0.3 after a GEMM op, as
normalization keeps them) and weight scales follow from them, so that ops' multipliers stay in
the ranges LiteRT accepts (ADD's output multiplier, FULLY_CONNECTED's bias scale check).

Shapes cover what the compiler has to handle: odd spatial sizes, strides (now and then
unequal), dilations (never with a stride, as the converter never combines them), square and
1xN/Nx1 kernels, SAME/VALID padding, channel counts that are not multiples of 16 (and some
that are), now and then feature maps larger than the accelerator's buffers, FULLY_CONNECTED
over rank 2-4 inputs with and without bias and `keep_num_dims` both ways, ADD/SUB/MUL
broadcasting a constant or a second input, MEAN over several axis sets, residual (ResNet,
MobileNetV2) and squeeze-excite blocks.

And what the converter's defaults make of Keras models:

- a dynamic batch: tensors' `shape_signature` with -1 in dimension 0 (the shape itself says 1),
  with RESHAPE targets computed at run time (SHAPE -> STRIDED_SLICE with shrink_axis_mask ->
  PACK -> RESHAPE, Keras Reshape) or written with -1 for the batch (Keras Flatten);
- or a fixed batch, now and then 2 (convolutions, dense layers, pools over N=2);
- a float interface (a float32 input QUANTIZEd, a DEQUANTIZEd float32 output) and float islands
  (DEQUANTIZE -> ADD/SUB/MUL, LOGISTIC, TANH, RELU, swish, ... in float32 -> QUANTIZE);
- upsampling, transposes, gathers, crops, stacking, reductions, LEAKY_RELU, TANH and other ops
  beyond the GEMMs.

Each rule for an op is on only while the op has a CPU kernel (`name in KERNELS` when the model
is generated): the rules for `PENDING_OPS` (TRANSPOSE_CONV, BATCH_MATMUL, PRELU, SPLIT, ...)
are written and LiteRT accepts what they make, and switch on by themselves when those kernels
are merged; the models of a seed change then. (BROADCAST_TO has no rule: LiteRT's reference
resolver does not register it.)
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from qaccel.frontend.builder import (
    GraphBuilder,
    ModelBuilder,
    QParams,
    TensorSpec,
    bias_tensor,
    random_int8,
    weights_tensor,
)
from qaccel.kernels.base import window_geometry
from qaccel.kernels.registry import KERNELS

__all__ = ["GeneratedModel", "PENDING_OPS", "generate", "generate_model"]

PENDING_OPS = (
    "TRANSPOSE_CONV", "BATCH_MATMUL", "NEG", "RSQRT", "SQUARED_DIFFERENCE", "GELU", "TILE",
    "SPLIT", "SPLIT_V", "UNPACK", "DEPTH_TO_SPACE", "SPACE_TO_DEPTH", "PRELU", "REDUCE_MAX",
    "REDUCE_MIN", "ARG_MAX", "ARG_MIN", "LOG_SOFTMAX", "MINIMUM", "MAXIMUM", "EXPAND_DIMS",
)  # fmt: skip
"""Ops the generator has rules for that switch on only once they are in `KERNELS`."""

MAX_CHANNELS = 48
LARGE_MAX_CHANNELS = 64
SOFTMAX_Q = QParams.per_tensor(1.0 / 256, -128)


@dataclass
class GeneratedModel:
    seed: int
    model: bytes
    description: str
    ops: Counter = field(default_factory=Counter)
    features: Counter = field(default_factory=Counter)
    """Variants covered: `fc rank 3`, `fc keep_num_dims`, `fc no bias`, `conv per-tensor`,
    `depthwise per-channel`, `dilation`, `stride`, `padding VALID`, `broadcast`, blocks..."""


def generate_model(seed: int, kernels: Iterable[str] | None = None) -> bytes:
    """The flatbuffer of the random model of `seed`."""
    return generate(seed, kernels).model


def generate(seed: int, kernels: Iterable[str] | None = None) -> GeneratedModel:
    """The random model of `seed`, with a one-line description and its op counts.

    `kernels`: the ops to consider as having a CPU kernel (default: `KERNELS`, now); rules for
    other ops stay off (`PENDING_OPS`)."""
    gen = _Generator(seed, frozenset(KERNELS if kernels is None else kernels))
    gen.build()
    return GeneratedModel(seed, gen.mb.build(), " ".join(gen.words), gen.ops, gen.features)


@dataclass(frozen=True)
class _Value:
    index: int
    shape: tuple[int, ...]
    q: QParams

    @property
    def real_range(self) -> tuple[float, float]:
        s, zp = self.q.s, self.q.zp
        return s * (-128 - zp), s * (127 - zp)


@dataclass(frozen=True)
class _Window:
    kh: int
    kw: int
    sh: int
    sw: int
    d: int
    padding: str

    def out(self, h: int, w: int) -> tuple[int, int]:
        return (window_geometry(self.padding, h, self.kh, self.sh, self.d)[0],
                window_geometry(self.padding, w, self.kw, self.sw, self.d)[0])  # fmt: skip

    def options(self) -> dict[str, Any]:
        return {"padding": self.padding, "stride_h": self.sh, "stride_w": self.sw,
                "dilation_h_factor": self.d, "dilation_w_factor": self.d}  # fmt: skip

    def __str__(self) -> str:
        s = f"{self.kh}x{self.kw}"
        if max(self.sh, self.sw) > 1:
            s += f"/s{self.sh}" if self.sh == self.sw else f"/s{self.sh}x{self.sw}"
        return s + (f"/d{self.d}" if self.d > 1 else "") + self.padding[0]


def _range_q(lo: float, hi: float) -> QParams:
    """The converter's quantization of a calibrated range [lo, hi] (0 always representable)."""
    lo, hi = min(lo, 0.0), max(hi, 0.0)
    if hi - lo < 1e-4:
        hi = lo + 1e-4
    scale = (hi - lo) / 255.0
    zp = int(np.clip(round(-128 - lo / scale), -128, 127))
    return QParams.per_tensor(float(np.float32(scale)), zp)


def _hard_swish(x: float) -> float:
    return x * min(max(x + 3.0, 0.0), 6.0) / 6.0


class _Generator:
    def __init__(self, seed: int, kernels: frozenset[str] = frozenset(KERNELS)) -> None:
        self.kernels = kernels
        self.rng = np.random.default_rng(seed)
        self.mb = ModelBuilder(f"qaccel random model {seed}")
        self.g: GraphBuilder = self.mb.subgraph("main")
        self.ops: Counter = Counter()
        self.features: Counter = Counter()
        self.words: list[str] = []
        self.names = 0
        self.budget = int(self.rng.integers(3, 16))
        self.large = False  # feature maps bigger than the accelerator's buffers (tiling)
        self.max_channels = MAX_CHANNELS
        self.outputs: list[int] = []
        self.batch = 1
        self.dynamic = False  # shape signatures with -1 in the batch dimension
        self.batched: set[int] = set()  # tensors whose dimension 0 is the batch
        self.free = 0  # ops outside the budget (run-time shape computations)

    def has(self, *ops: str) -> bool:
        """Whether every op of `ops` has a CPU kernel (rules for the others stay off)."""
        return all(op in self.kernels for op in ops)

    # ---- random helpers ---------------------------------------------------------------------

    def chance(self, p: float) -> bool:
        return bool(self.rng.random() < p)

    def pick(self, items: list | tuple) -> Any:
        return items[int(self.rng.integers(len(items)))]

    def randint(self, lo: int, hi: int) -> int:
        """Uniform in [lo, hi]."""
        return int(self.rng.integers(lo, hi, endpoint=True))

    def uniform(self, lo: float, hi: float) -> float:
        return float(self.rng.uniform(lo, hi))

    def channels(self, lo: int = 1, hi: int = 40) -> int:
        """A channel count: mostly any in [lo, hi], sometimes whole 16-channel blocks."""
        if self.large:
            lo, hi = max(lo, 16), max(hi, self.max_channels)
        if self.chance(0.2) and hi >= 16:
            return 16 * self.randint(1, hi // 16)
        return self.randint(lo, hi)

    def name(self, base: str) -> str:
        self.names += 1
        return f"{base}_{self.names}"

    def used(self) -> int:
        return sum(self.ops.values()) - self.free

    def room(self, n: int = 1) -> bool:
        return self.used() + n <= self.budget

    # ---- tensors and ops --------------------------------------------------------------------

    def input(self, shape: tuple[int, ...], batched: bool = True,
              float_input: bool = False) -> _Value:  # fmt: skip
        """A model input; `float_input`: a float32 input quantized by a QUANTIZE (the
        converter's default interface)."""
        if self.chance(0.3):
            q = QParams.per_tensor(1.0 / 255, -128)  # an image scaled to [0, 1]
        else:
            scale = float(np.float32(self.uniform(0.01, 0.1)))
            q = QParams.per_tensor(scale, self.randint(-128, 100))
        name = "input" if not self.g.inputs else self.name("input")
        if not float_input:
            index = self.g.input(name, shape, np.int8, q)
            if batched and shape:
                self.batched.add(index)
            return _Value(index, shape, q)
        index = self.g.input(name, shape, np.float32)
        if batched and shape:
            self.batched.add(index)
        self.features["float input"] += 1
        self.words.append("quantize")
        return self.op("QUANTIZE", [index], shape, q)

    def op(self, op: str, inputs: list, shape: tuple[int, ...], q: QParams | None,
           options: dict | None = None, dtype: Any = np.int8,
           batched: bool | None = None) -> _Value:  # fmt: skip
        """Append `op`; its output is batched (dimension 0 is the batch) when an input is,
        unless `batched` says otherwise."""
        index = int(self.g.op(op, inputs, TensorSpec(self.name(op.lower()), shape, dtype, q),
                              options))  # fmt: skip
        self.ops[op] += 1
        if batched is None:
            batched = any(isinstance(i, int) and i in self.batched for i in inputs)
        if batched and shape:
            self.batched.add(index)
        return _Value(index, shape, q)

    def aux_op(self, op: str, inputs: list, shape: tuple[int, ...],
               options: dict | None = None) -> int:  # fmt: skip
        """An int32 shape computation, outside the op budget."""
        self.free += 1
        return self.op(op, inputs, shape, None, options, np.int32, batched=False).index

    def int32(self, values: Any, base: str = "const") -> TensorSpec:
        data = np.asarray(values, np.int32)
        return TensorSpec(self.name(base), data.shape, np.int32, data=data)

    def const_int8(self, shape: tuple[int, ...]) -> tuple[TensorSpec, QParams]:
        q = QParams.per_tensor(float(np.float32(self.uniform(0.005, 0.05))), self.randint(-60, 60))
        return TensorSpec(self.name("const"), shape, np.int8, q,
                          data=random_int8(self.rng, shape)), q  # fmt: skip

    def output_scale(self, x: _Value) -> float:
        """A layer's output scale: near its input's (normalization keeps activation ranges
        alike from layer to layer), within the ranges of real models."""
        return float(np.clip(x.q.s * math.exp(self.uniform(-0.7, 0.7)), 0.004, 0.3))

    def activation_q(self, scale: float, act: str) -> QParams:
        """The converter's output quantization for a real range of about +-128 `scale`,
        clamped by the fused activation."""
        if act == "NONE":
            return QParams.per_tensor(float(np.float32(scale)), self.randint(-30, 30))
        scale /= 2
        if act == "RELU6":
            scale = min(scale, 6.0 / 255)
        return QParams.per_tensor(float(np.float32(scale)), -128)

    def gemm_quant(self, x: _Value, reduction: int, act: str, channels: int, axis: int,
                   per_channel: bool,
                   q: QParams | None = None) -> tuple[QParams, QParams]:  # fmt: skip
        """(weight, output) quantization of a GEMM op: symmetric weight scales that make the
        accumulator's spread, on inputs spanning int8 (the root mean square of `x - zero
        point`, 74 for zero point 0), about the output's range."""
        q = q or self.activation_q(self.output_scale(x), act)
        spread = math.hypot(74.0, x.q.zp + 0.5) / 74.0
        full = q.s * (1 if act == "NONE" else 2)  # a fused RELU keeps the upper half
        w_s = full / (x.q.s * math.sqrt(reduction) * spread * self.uniform(30.0, 120.0))
        if not per_channel:
            return QParams.per_tensor(float(np.float32(w_s)), 0), q
        scales = (w_s * np.exp(self.rng.uniform(-0.7, 0.7, channels))).astype(np.float32)
        return QParams.per_axis(scales, np.zeros(channels, np.int64), axis), q

    def activation(self) -> str:
        return self.pick(("NONE", "NONE", "RELU", "RELU6"))

    def window_features(self, kind: str, w_q: QParams, win: _Window, c: int, o: int) -> None:
        f = self.features
        f[f"{kind} {'per-channel' if w_q.is_per_axis else 'per-tensor'}"] += 1
        f[f"{kind} {win.padding}"] += 1
        if win.kh != win.kw:
            f[f"{kind} non-square kernel"] += 1
        if win.kh % 2 == 0 or win.kw % 2 == 0:
            f[f"{kind} even kernel"] += 1
        if win.sh != win.sw:
            f[f"{kind} unequal strides"] += 1
        if max(win.sh, win.sw) > 1:
            f[f"{kind} stride {max(win.sh, win.sw)}"] += 1
        if win.d > 1:
            f[f"{kind} dilation {win.d}"] += 1
        if c % 16 or o % 16:
            f[f"{kind} channels not a multiple of 16"] += 1

    def geometry(self, h: int, w: int, k: int | None = None, s: int | None = None,
                 d: int | None = None, padding: str | None = None) -> _Window:  # fmt: skip
        """A window: square unless `k` is given and a draw says otherwise (1x3, 7x1, ...),
        equal strides but now and then, dilation only with stride 1 (as converters emit)."""
        kh = kw = self.pick((1, 2, 3, 3, 3, 5)) if k is None else k
        if k is None and self.chance(0.15):
            kh, kw = (1, self.pick((3, 5, 7))) if self.chance(0.5) else (self.pick((3, 5, 7)), 1)
        sh = sw = self.pick((1, 1, 1, 2, 2, 3)) if s is None else s
        if s is None and self.chance(0.1):
            sh, sw = self.pick(((1, 2), (2, 1), (2, 3)))
        if d is None:
            d = 1 if max(sh, sw) > 1 else self.pick((1, 1, 1, 1, 2, 3))
        padding = self.pick(("SAME", "VALID")) if padding is None else padding
        if padding == "VALID" and (h - (kh - 1) * d < 1 or w - (kw - 1) * d < 1):
            padding = "SAME"
        return _Window(kh, kw, sh, sw, d, padding)

    def conv(self, x: _Value, out_channels: int | None = None, act: str | None = None,
             q: QParams | None = None, **geometry) -> _Value:  # fmt: skip
        n, h, w, c = x.shape
        win = self.geometry(h, w, **geometry)
        o = self.channels() if out_channels is None else out_channels
        act = self.activation() if act is None else act
        w_q, q = self.gemm_quant(x, win.kh * win.kw * c, act, o, 0, self.chance(0.7), q)
        weights = weights_tensor(self.name("filter"), self.rng, (o, win.kh, win.kw, c), w_q)
        bias = bias_tensor(self.name("bias"), self.rng, x.q, w_q, o)
        oh, ow = win.out(h, w)
        self.window_features("conv", w_q, win, c, o)
        self.words.append(f"conv{win}->{o}")
        return self.op("CONV_2D", [x.index, weights, bias], (n, oh, ow, o), q,
                       {**win.options(), "fused_activation_function": act})

    def depthwise(self, x: _Value, act: str | None = None, **geometry) -> _Value:
        n, h, w, c = x.shape
        win = self.geometry(h, w, **geometry)
        m = 2 if c * 2 <= self.max_channels and self.chance(0.2) else 1
        o = c * m
        act = self.activation() if act is None else act
        w_q, q = self.gemm_quant(x, win.kh * win.kw, act, o, 3, self.chance(0.8))
        weights = weights_tensor(self.name("filter"), self.rng, (1, win.kh, win.kw, o), w_q)
        bias = bias_tensor(self.name("bias"), self.rng, x.q, w_q, o)
        oh, ow = win.out(h, w)
        self.window_features("depthwise", w_q, win, c, o)
        if m > 1:
            self.features["depthwise multiplier 2"] += 1
        self.words.append(f"dw{win}" + (f"x{m}" if m > 1 else ""))
        return self.op("DEPTHWISE_CONV_2D", [x.index, weights, bias], (n, oh, ow, o), q,
                       {**win.options(), "depth_multiplier": m,
                        "fused_activation_function": act})  # fmt: skip

    def fully_connected(self, x: _Value, out_channels: int | None = None, act: str | None = None,
                        keep_num_dims: bool | None = None, bias: bool | None = None) -> _Value:
        c = x.shape[-1]
        o = self.channels() if out_channels is None else out_channels
        act = self.activation() if act is None else act
        keep = self.chance(0.5) if keep_num_dims is None else keep_num_dims
        with_bias = self.chance(0.7) if bias is None else bias
        per_channel = self.chance(0.3)  # newer converters quantize Dense per channel
        w_q, q = self.gemm_quant(x, c, act, o, 0, per_channel)
        weights = weights_tensor(self.name("weights"), self.rng, (o, c), w_q)
        b = bias_tensor(self.name("bias"), self.rng, x.q, w_q, o) if with_bias else None
        rows = int(np.prod(x.shape[:-1]))
        shape = (*x.shape[:-1], o) if keep else (rows, o)
        self.features[f"fc rank {len(x.shape)}"] += 1
        self.features["fc keep_num_dims" if keep else "fc flattening"] += 1
        self.features["fc bias" if with_bias else "fc no bias"] += 1
        self.features["fc per-channel" if per_channel else "fc per-tensor"] += 1
        self.words.append(f"fc{len(x.shape)}d->{o}" + ("/keep" if keep else "") +
                          ("" if with_bias else "/nobias"))  # fmt: skip
        return self.op("FULLY_CONNECTED", [x.index, weights, b], shape, q,
                       {"fused_activation_function": act, "keep_num_dims": keep})

    def pool(self, x: _Value, kind: str | None = None, k: int | None = None,
             s: int | None = None, padding: str | None = None) -> _Value:  # fmt: skip
        n, h, w, c = x.shape
        kind = kind or self.pick(("AVERAGE_POOL_2D", "MAX_POOL_2D"))
        k = self.pick((2, 2, 3, 3)) if k is None else k
        s = self.pick((1, 2, 2, 3)) if s is None else s
        padding = padding or self.pick(("SAME", "VALID"))
        if padding == "VALID" and min(h, w) < k:
            padding = "SAME"
        oh, ow = _Window(k, k, s, s, 1, padding).out(h, w)
        self.words.append(f"{kind[:3].lower()}pool{k}/s{s}{padding[0]}")
        return self.op(kind, [x.index], (n, oh, ow, c), x.q,
                       {"padding": padding, "stride_w": s, "stride_h": s, "filter_width": k,
                        "filter_height": k, "fused_activation_function": "NONE"})  # fmt: skip

    def global_pool(self, x: _Value) -> _Value:
        n, h, w, c = x.shape
        self.words.append("gap")
        return self.op("AVERAGE_POOL_2D", [x.index], (n, 1, 1, c), x.q,
                       {"padding": "VALID", "stride_w": 1, "stride_h": 1, "filter_width": w,
                        "filter_height": h, "fused_activation_function": "NONE"})  # fmt: skip

    def mean(self, x: _Value, axes: tuple[int, ...] | None = None,
             keep: bool | None = None) -> _Value:  # fmt: skip
        rank = len(x.shape)
        if axes is None:
            if rank == 4:
                axes = self.pick(((1, 2), (1, 2), (1, 2), (2, 1), (1,), (2,), (3,), (-1,),
                                  (1, 2, 3)))  # fmt: skip
            else:
                axes = self.pick(tuple((a,) for a in range(1, rank)) + ((-1,),))
        keep = self.chance(0.5) if keep is None else keep
        dims = {a % rank for a in axes}
        shape = tuple(1 if i in dims else d for i, d in enumerate(x.shape) if keep or i not in dims)
        if self.chance(0.4):
            q = x.q
        else:
            lo, hi = x.real_range
            f = self.uniform(0.3, 1.0)
            q = _range_q(lo * f, hi * f)
        axis = TensorSpec(self.name("axes"), (len(axes),), np.int32,
                          data=np.asarray(axes, np.int32))  # fmt: skip
        self.words.append(f"mean{list(axes)}" + ("/keep" if keep else ""))
        return self.op("MEAN", [x.index, axis], shape, q, {"keep_dims": keep})

    def pad(self, x: _Value, paddings: list[list[int]] | None = None) -> _Value:
        if paddings is None:
            paddings = [[0, 0] for _ in x.shape]
            for i in range(1, len(x.shape) - 1) if len(x.shape) == 4 else range(len(x.shape)):
                paddings[i] = [self.randint(0, 2), self.randint(0, 2)]
            if len(x.shape) == 4 and self.chance(0.15):
                paddings[3] = [self.randint(0, 3), self.randint(0, 3)]
        shape = tuple(d + a + b for d, (a, b) in zip(x.shape, paddings))
        data = TensorSpec(self.name("paddings"), (len(x.shape), 2), np.int32,
                          data=np.asarray(paddings, np.int32))  # fmt: skip
        self.words.append("pad" + "".join(f"{a}{b}" for a, b in paddings))
        return self.op("PAD", [x.index, data], shape, x.q)

    def reshape(self, x: _Value, shape: tuple[int, ...]) -> _Value:
        """RESHAPE to `shape`, which keeps the batch when `shape[0]` is `x`'s. With a dynamic
        batch the converter computes such a target at run time (Keras Reshape:
        SHAPE -> STRIDED_SLICE -> PACK) or writes -1 for the batch (Keras Flatten)."""
        keeps_batch = shape[0] == x.shape[0] and x.index in self.batched
        if keeps_batch and self.chance(0.6 if self.dynamic else 0.15):
            return self.computed_reshape(x, shape)
        target = list(shape)
        if keeps_batch and self.dynamic and self.chance(0.7):
            target[0] = -1
            self.features["reshape -1 batch"] += 1
        data = TensorSpec(self.name("shape"), (len(shape),), np.int32,
                          data=np.asarray(target, np.int32))  # fmt: skip
        self.words.append("reshape" + "x".join(map(str, shape)))
        options = {"new_shape": np.asarray(target, np.int32)} if self.chance(0.5) else {}
        return self.op("RESHAPE", [x.index, data], shape, x.q, options,
                       batched=keeps_batch)  # fmt: skip

    def computed_reshape(self, x: _Value, shape: tuple[int, ...]) -> _Value:
        """The converter's RESHAPE with a run-time target: the batch read from SHAPE by a
        STRIDED_SLICE that shrinks its axis, packed with the other dimensions (one of them
        now and then -1)."""
        dims = self.aux_op("SHAPE", [x.index], (len(x.shape),), {"out_type": "INT32"})
        batch = self.aux_op("STRIDED_SLICE", [dims, self.int32([0], "begin"),
                                              self.int32([1], "end"), self.int32([1], "strides")],
                            (), {"begin_mask": 0, "end_mask": 0, "ellipsis_mask": 0,
                                 "new_axis_mask": 0, "shrink_axis_mask": 1})  # fmt: skip
        rest = list(shape[1:])
        if rest and self.chance(0.3):
            rest[self.randint(0, len(rest) - 1)] = -1
        target = self.aux_op("PACK", [batch, *(self.int32(d, "dim") for d in rest)],
                             (len(shape),), {"values_count": len(shape), "axis": 0})  # fmt: skip
        self.features["reshape computed shape"] += 1
        self.words.append("reshape(computed)" + "x".join(map(str, shape)))
        return self.op("RESHAPE", [x.index, target], shape, x.q, {}, batched=True)

    def concat(self, xs: list[_Value], axis: int) -> _Value:
        rank = len(xs[0].shape)
        a = axis % rank
        shape = tuple(sum(x.shape[a] for x in xs) if i == a else d
                      for i, d in enumerate(xs[0].shape))  # fmt: skip
        self.words.append(f"concat{len(xs)}@{axis}")
        return self.op("CONCATENATION", [x.index for x in xs], shape, xs[0].q,
                       {"axis": axis, "fused_activation_function": "NONE"})

    def logistic(self, x: _Value) -> _Value:
        self.words.append("logistic")
        return self.op("LOGISTIC", [x.index], x.shape, SOFTMAX_Q)

    def softmax(self, x: _Value) -> _Value:
        self.words.append("softmax")
        return self.op("SOFTMAX", [x.index], x.shape, SOFTMAX_Q, {"beta": 1.0})

    def hard_swish(self, x: _Value) -> _Value:
        lo, hi = x.real_range
        grid = np.linspace(lo, hi, 1025)
        image = [_hard_swish(float(v)) for v in grid]
        q = _range_q(min(image) * self.uniform(0.8, 1.0), max(image) * self.uniform(0.7, 1.0))
        if q.s < x.q.s / 100:  # the kernel's output multiplier must stay below one
            q = QParams.per_tensor(float(np.float32(x.q.s / 100)), q.zp)
        self.words.append("hswish")
        return self.op("HARD_SWISH", [x.index], x.shape, q)

    def binary(self, op: str, a: _Value, b: _Value, shape: tuple[int, ...],
               act: str = "NONE") -> _Value:  # fmt: skip
        (lo1, hi1), (lo2, hi2) = a.real_range, b.real_range
        if op == "ADD":
            lo, hi = lo1 + lo2, hi1 + hi2
        elif op == "SUB":
            lo, hi = lo1 - hi2, hi1 - lo2
        else:
            products = (lo1 * lo2, lo1 * hi2, hi1 * lo2, hi1 * hi2)
            lo, hi = min(products), max(products)
        f = self.uniform(0.4, 1.0)
        lo, hi = lo * f, hi * f
        if act != "NONE":
            lo = 0.0
            if act == "RELU6":
                hi = min(hi, 6.0)
        q = _range_q(lo, hi)
        if a.shape != b.shape:
            self.features[f"{op.lower()} broadcast"] += 1
        return self.op(op, [a.index, b.index], shape, q, {"fused_activation_function": act})

    def broadcast_shape(self, shape: tuple[int, ...]) -> tuple[int, ...]:
        """A shape that broadcasts to `shape` (dims kept or set to one, maybe fewer dims)."""
        choice = self.randint(0, 5)
        if choice == 0:
            return ()
        if choice == 1:
            return (shape[-1],)
        other = tuple(d if self.chance(0.5) else 1 for d in shape)
        if choice == 2 and len(shape) > 1:
            other = other[1:]
        return other

    # ---- ops converters emit besides the GEMMs ------------------------------------------------

    def squeeze(self, x: _Value, dims: tuple[int, ...]) -> _Value:
        drop = {d % len(x.shape) for d in dims}
        shape = tuple(d for i, d in enumerate(x.shape) if i not in drop)
        self.words.append(f"squeeze{list(dims)}")
        return self.op("SQUEEZE", [x.index], shape, x.q, {"squeeze_dims": list(dims)})

    def expand_dims(self, x: _Value, axis: int) -> _Value:
        a = axis % (len(x.shape) + 1)
        shape = x.shape[:a] + (1,) + x.shape[a:]
        self.words.append(f"expand_dims{axis}")
        return self.op("EXPAND_DIMS", [x.index, self.int32(axis, "axis")], shape, x.q)

    def resize(self, x: _Value) -> _Value:
        """Upsampling (Keras UpSampling2D, tf.image.resize): mostly by 2, now and then to any
        size; TF2 sets half_pixel_centers, TF1 graphs align_corners now and then."""
        n, h, w, c = x.shape
        op = self.pick(("RESIZE_NEAREST_NEIGHBOR", "RESIZE_BILINEAR"))
        if self.chance(0.6):
            oh, ow = 2 * h, 2 * w
        else:
            oh, ow = self.randint(max(1, h // 2), 2 * h + 1), self.randint(max(1, w // 2), 2 * w + 1)
        mode = self.pick(("half_pixel", "half_pixel", "plain", "align_corners"))
        options = {"align_corners": mode == "align_corners",
                   "half_pixel_centers": mode == "half_pixel"}  # fmt: skip
        self.features[f"{op.lower()} {mode}"] += 1
        self.words.append(f"{op[7:].lower()}->{oh}x{ow}")
        return self.op(op, [x.index, self.int32([oh, ow], "size")], (n, oh, ow, c), x.q, options)

    def transpose(self, x: _Value, perm: tuple[int, ...] | None = None) -> _Value:
        if perm is None:
            perm = self.pick(((0, 2, 1, 3), (0, 2, 1, 3), (0, 1, 3, 2))) if len(x.shape) == 4 \
                else (0, 2, 1)  # fmt: skip
        shape = tuple(x.shape[p] for p in perm)
        self.words.append(f"transpose{''.join(map(str, perm))}")
        return self.op("TRANSPOSE", [x.index, self.int32(perm, "perm")], shape, x.q)

    def gather(self, x: _Value) -> _Value:
        """Channels (or rows) picked by constant indices: a permutation, a selection, repeats."""
        rank = len(x.shape)
        axis = self.pick((rank - 1, rank - 1, -1, *range(1, rank - 1)))
        size = x.shape[axis]
        count = self.randint(1, min(2 * size, self.max_channels))
        indices = self.rng.integers(0, size, count) if self.chance(0.5) else \
            self.rng.permutation(size)  # fmt: skip
        a = axis % rank
        shape = x.shape[:a] + (len(indices),) + x.shape[a + 1:]
        self.features[f"gather axis {'last' if a == rank - 1 else 'inner'}"] += 1
        self.words.append(f"gather@{axis}->{len(indices)}")
        return self.op("GATHER", [x.index, self.int32(indices, "indices")], shape, x.q,
                       {"axis": axis, "batch_dims": 0})

    def crop(self, x: _Value) -> _Value:
        """Keras Cropping2D and slicing: STRIDED_SLICE (sometimes strided, masks, negative
        ends) or SLICE, on the spatial dimensions."""
        n, h, w, c = x.shape
        top, left = self.randint(0, (h - 1) // 2), self.randint(0, (w - 1) // 2)
        bottom, right = self.randint(0, (h - 1 - top) // 2), self.randint(0, (w - 1 - left) // 2)
        if self.chance(0.3):
            size = [-1, h - top - bottom, w - left - right, -1 if self.chance(0.5) else c]
            out = (n, size[1], size[2], c)
            self.words.append(f"slice{top}{left}")
            return self.op("SLICE", [x.index, self.int32([0, top, left, 0], "begin"),
                                     self.int32(size, "size")], out, x.q)  # fmt: skip
        stride = self.pick((1, 1, 1, 2))
        begin, end = [0, top, left, 0], [0, h - bottom, w - right, 0]
        if self.chance(0.4):
            end[1] = -bottom if bottom else 0
            end[2] = -right if right else 0
            end_mask = 0b1001 | (0 if bottom else 0b0010) | (0 if right else 0b0100)
        else:
            end_mask = 0b1001
        self.features["strided_slice stride 2" if stride == 2 else "strided_slice"] += 1
        oh, ow = len(range(top, h - bottom, stride)), len(range(left, w - right, stride))
        self.words.append(f"stridedslice{top}{left}/{stride}")
        return self.op("STRIDED_SLICE", [x.index, self.int32(begin, "begin"), self.int32(end, "end"),
                                         self.int32([1, stride, stride, 1], "strides")],
                       (n, oh, ow, c), x.q,
                       {"begin_mask": 0b1001, "end_mask": end_mask, "ellipsis_mask": 0,
                        "new_axis_mask": 0, "shrink_axis_mask": 0})  # fmt: skip

    def pack_block(self, x: _Value) -> _Value:
        """Two same-quantized tensors stacked on a new inner axis and merged by a RESHAPE
        (channel interleaving, as pixel-shuffle code does)."""
        n, h, w, c = x.shape
        y = self.conv(x, c, "NONE", q=x.q, s=1, padding="SAME")
        axis = self.pick((3, 4, -1))
        a = axis % 5
        stacked = x.shape[:a] + (2,) + x.shape[a:]
        self.words.append(f"pack@{axis}")
        z = self.op("PACK", [x.index, y.index] if self.chance(0.5) else [y.index, x.index],
                    stacked, x.q, {"values_count": 2, "axis": axis})  # fmt: skip
        return self.reshape(z, (n, h, w, 2 * c))

    def leaky_relu(self, x: _Value) -> _Value:
        alpha = self.pick((0.01, 0.1, 0.2, 0.3))
        lo, hi = x.real_range
        q = _range_q(min(lo * alpha, 0.0) * self.uniform(0.7, 1.0), hi * self.uniform(0.6, 1.0))
        self.words.append(f"leaky{alpha}")
        return self.op("LEAKY_RELU", [x.index], x.shape, q, {"alpha": alpha})

    def prelu(self, x: _Value) -> _Value:
        """Keras PReLU with shared spatial axes: one int8 slope per channel."""
        shape = (1,) * (len(x.shape) - 2) + (x.shape[-1],)
        q = QParams.per_tensor(float(np.float32(self.uniform(0.3, 0.5) / 127)), 0)
        alpha = TensorSpec(self.name("alpha"), shape, np.int8, q,
                           data=self.rng.integers(0, 127, shape, endpoint=True).astype(np.int8))
        lo, hi = x.real_range
        out = _range_q(lo * 0.5 * self.uniform(0.5, 1.0), hi * self.uniform(0.6, 1.0))
        self.words.append("prelu")
        return self.op("PRELU", [x.index, alpha], x.shape, out)

    def relu(self, x: _Value) -> _Value:
        """A standalone RELU/RELU6 (the converter fuses most of them; not after a concat)."""
        op = self.pick(("RELU", "RELU6"))
        lo, hi = x.real_range
        hi = min(hi, 6.0) if op == "RELU6" else hi
        q = _range_q(0.0, max(hi, 0.05) * self.uniform(0.7, 1.0))
        self.words.append(op.lower())
        return self.op(op, [x.index], x.shape, q)

    def tanh(self, x: _Value) -> _Value:
        self.words.append("tanh")
        return self.op("TANH", [x.index], x.shape, QParams.per_tensor(1.0 / 128, 0))

    def gelu(self, x: _Value) -> _Value:
        lo, hi = x.real_range
        q = _range_q(-0.17, hi * self.uniform(0.7, 1.0))
        approximate = self.chance(0.5)
        self.words.append("gelu" + ("/tanh" if approximate else ""))
        return self.op("GELU", [x.index], x.shape, q, {"approximate": approximate})

    def requantize(self, x: _Value) -> _Value:
        """An int8 -> int8 QUANTIZE (the converter's requantization between ranges)."""
        lo, hi = x.real_range
        f = self.uniform(0.5, 1.5)
        self.words.append("requantize")
        return self.op("QUANTIZE", [x.index], x.shape, _range_q(lo * f, hi * f))

    def reduce(self, x: _Value, op: str) -> _Value:
        """SUM, REDUCE_MAX or REDUCE_MIN over the spatial axes (or the last one)."""
        rank = len(x.shape)
        axes = self.pick(((1, 2), (1, 2), (2,), (-1,))) if rank == 4 else (self.randint(1, rank - 1),)
        keep = self.chance(0.6)
        dims = {a % rank for a in axes}
        shape = tuple(1 if i in dims else d for i, d in enumerate(x.shape) if keep or i not in dims)
        if op == "SUM":
            count = int(np.prod([x.shape[a] for a in dims]))
            lo, hi = x.real_range
            f = math.sqrt(count) * self.uniform(0.8, 2.0)
            q = _range_q(lo * f, hi * f)
        else:
            q = x.q
        self.words.append(f"{op.lower()}{list(axes)}" + ("/keep" if keep else ""))
        return self.op(op, [x.index, self.int32(axes, "axes")], shape, q, {"keep_dims": keep})

    def minmax(self, x: _Value) -> _Value:
        """MAXIMUM/MINIMUM with a constant of the same quantization (clipping)."""
        op = self.pick(("MAXIMUM", "MINIMUM"))
        shape = self.broadcast_shape(x.shape)
        data = random_int8(self.rng, shape)
        other = TensorSpec(self.name("bound"), shape, np.int8, x.q, data=data)
        self.words.append(f"{op.lower()}({'x'.join(map(str, shape)) or 'scalar'})")
        return self.op(op, [x.index, other] if self.chance(0.7) else [other, x.index], x.shape,
                       x.q)  # fmt: skip

    def squared_difference(self, x: _Value) -> _Value:
        spec, q = self.const_int8(self.broadcast_shape(x.shape))
        (lo1, hi1), (lo2, hi2) = x.real_range, (q.s * (-128 - q.zp), q.s * (127 - q.zp))
        span = max(hi1 - lo2, hi2 - lo1)
        out = _range_q(0.0, span * span * self.uniform(0.3, 1.0))
        self.words.append("sqdiff")
        return self.op("SQUARED_DIFFERENCE", [x.index, spec], x.shape, out)

    def neg(self, x: _Value) -> _Value:
        self.words.append("neg")
        return self.op("NEG", [x.index], x.shape, x.q)

    def rsqrt(self, x: _Value) -> _Value:
        """RSQRT of a RELU's output (LiteRT refuses negative inputs)."""
        y = self.relu(x) if x.q.zp != -128 else x
        out = _range_q(0.0, self.uniform(0.5, 1.0) / math.sqrt(y.q.s))
        self.words.append("rsqrt")
        return self.op("RSQRT", [y.index], y.shape, out)

    def tile(self, x: _Value) -> _Value:
        multiples = [1] * len(x.shape)
        a = self.randint(1, len(x.shape) - 1)
        multiples[a] = 2
        shape = tuple(d * m for d, m in zip(x.shape, multiples))
        self.words.append(f"tile{multiples}")
        return self.op("TILE", [x.index, self.int32(multiples, "multiples")], shape, x.q)

    def space_depth(self, x: _Value) -> _Value:
        n, h, w, c = x.shape
        if h % 2 == 0 and w % 2 == 0 and (c * 4 <= self.max_channels or c % 4):
            self.words.append("space_to_depth2")
            return self.op("SPACE_TO_DEPTH", [x.index], (n, h // 2, w // 2, 4 * c), x.q,
                           {"block_size": 2})
        if c % 4:
            x = self.conv(x, 4 * self.randint(1, 8), k=1, s=1, padding="SAME")
            c = x.shape[3]
        self.words.append("depth_to_space2")
        return self.op("DEPTH_TO_SPACE", [x.index], (n, 2 * h, 2 * w, c // 4), x.q,
                       {"block_size": 2})

    def split_block(self, x: _Value) -> _Value:
        """SPLIT (equal parts) or SPLIT_V (sizes) on the channels, the parts joined again by
        an ADD (same sizes) or a CONCATENATION in another order."""
        n, h, w, c = x.shape
        if c < 2:
            return x
        axis = self.pick((3, -1))
        if c % 2 == 0 and self.chance(0.5):
            sizes = [c // 2, c // 2]
            outs = [TensorSpec(self.name("split"), (n, h, w, c // 2), np.int8, x.q)
                    for _ in range(2)]  # fmt: skip
            index = self.g.op("SPLIT", [self.int32(axis, "axis"), x.index], outs, {"num_splits": 2})
            self.ops["SPLIT"] += 1
            self.words.append("split2")
        else:
            first = self.randint(1, c - 1)
            sizes = [first, -1] if self.chance(0.3) else [first, c - first]
            real = [first, c - first]
            outs = [TensorSpec(self.name("split"), (n, h, w, k), np.int8, x.q) for k in real]
            index = self.g.op("SPLIT_V", [x.index, self.int32(sizes, "sizes"),
                                          self.int32(axis, "axis")], outs, {"num_splits": 2})
            self.ops["SPLIT_V"] += 1
            self.words.append(f"splitv{sizes}")
            sizes = real
        parts = [_Value(i, (n, h, w, k), x.q) for i, k in zip(index, sizes)]
        for p in parts:
            self.batched.add(p.index)
        if sizes[0] == sizes[1] and self.chance(0.5):
            self.words.append("+add")
            return self.binary("ADD", parts[0], parts[1], parts[0].shape)
        return self.concat(parts[::-1], axis)

    def transpose_conv(self, x: _Value) -> _Value:
        """Keras Conv2DTranspose: per-channel weights [O, kh, kw, C], stride 2, SAME or
        VALID, the bias as a fourth input."""
        n, h, w, c = x.shape
        k, s = self.pick(((2, 2), (3, 2), (3, 1), (4, 2)))
        padding = self.pick(("SAME", "VALID"))
        oh = h * s if padding == "SAME" else (h - 1) * s + k
        ow = w * s if padding == "SAME" else (w - 1) * s + k
        o = self.channels(1, 32)
        w_q, q = self.gemm_quant(x, max(1, k * k * c // (s * s)), "NONE", o, 0, True)
        weights = weights_tensor(self.name("filter"), self.rng, (o, k, k, c), w_q)
        bias = bias_tensor(self.name("bias"), self.rng, x.q, w_q, o) if self.chance(0.8) else None
        self.words.append(f"tconv{k}x{k}/s{s}{padding[0]}->{o}")
        return self.op("TRANSPOSE_CONV", [self.int32([n, oh, ow, o], "output_shape"), weights,
                                          x.index, bias], (n, oh, ow, o), q,
                       {"padding": padding, "stride_w": s, "stride_h": s,
                        "fused_activation_function": "NONE"}, batched=x.index in self.batched)

    def float_island(self, x: _Value) -> _Value:
        """DEQUANTIZE -> float ops -> QUANTIZE: what the converter leaves in float (an op with
        no int8 kernel, or a swish written by hand), its output range tracked through."""
        lo, hi = x.real_range
        self.words.append("[float")
        self.features["float island"] += 1
        f = self.op("DEQUANTIZE", [x.index], x.shape, None, dtype=np.float32)
        first = f
        for _ in range(self.randint(1, 3)):
            kind = self.pick(("ADD", "SUB", "MUL", "MUL", "swish", "LOGISTIC", "TANH", "RELU",
                              "RELU6", "LEAKY_RELU", "HARD_SWISH"))  # fmt: skip
            if kind in ("ADD", "SUB", "MUL"):
                shape = self.broadcast_shape(x.shape)
                values = self.rng.uniform(-1.0, 1.0, shape).astype(np.float32)
                if kind == "MUL":
                    values = np.where(np.abs(values) < 0.1, 0.5, values).astype(np.float32)
                c = TensorSpec(self.name("fconst"), shape, np.float32, data=values)
                a, b = float(values.min()) if values.size else 0.0, \
                    float(values.max()) if values.size else 0.0  # fmt: skip
                if kind == "ADD":
                    lo, hi = lo + a, hi + b
                elif kind == "SUB":
                    lo, hi = lo - b, hi - a
                else:
                    p = (lo * a, lo * b, hi * a, hi * b)
                    lo, hi = min(p), max(p)
                operands = [f.index, c] if self.chance(0.7) else [c, f.index]
                f = self.op(kind, operands, x.shape, None, {"fused_activation_function": "NONE"},
                            dtype=np.float32)  # fmt: skip
            elif kind == "swish":  # x * sigmoid(x)
                s = self.op("LOGISTIC", [f.index], x.shape, None, dtype=np.float32)
                f = self.op("MUL", [f.index, s.index], x.shape, None,
                            {"fused_activation_function": "NONE"}, dtype=np.float32)
                lo, hi = min(lo, -0.28), max(hi, 0.0)
            elif kind in ("LOGISTIC", "TANH"):
                fn = (lambda v: 1 / (1 + math.exp(-v))) if kind == "LOGISTIC" else math.tanh
                lo, hi = fn(lo), fn(hi)
                f = self.op(kind, [f.index], x.shape, None, dtype=np.float32)
            elif kind in ("RELU", "RELU6"):
                lo, hi = max(lo, 0.0), max(hi, 0.0)
                if kind == "RELU6":
                    lo, hi = min(lo, 6.0), min(hi, 6.0)
                f = self.op(kind, [f.index], x.shape, None, dtype=np.float32)
            elif kind == "LEAKY_RELU":
                lo = lo * 0.2 if lo < 0 else lo
                f = self.op(kind, [f.index], x.shape, None, {"alpha": 0.2}, dtype=np.float32)
            else:
                image = [_hard_swish(float(v)) for v in np.linspace(lo, hi, 257)]
                lo, hi = min(image), max(image)
                f = self.op(kind, [f.index], x.shape, None, dtype=np.float32)
            self.words.append(kind.lower())
        if f is first:
            return x
        k = self.uniform(0.7, 1.0)
        self.words.append("quantize]")
        return self.op("QUANTIZE", [f.index], x.shape, _range_q(lo * k, hi * k))

    def float_output(self, x: _Value) -> _Value:
        """A float32 model output (the converter's default interface)."""
        self.features["float output"] += 1
        self.words.append("dequantize")
        return self.op("DEQUANTIZE", [x.index], x.shape, None, dtype=np.float32)

    # ---- blocks -----------------------------------------------------------------------------

    def binary_block(self, x: _Value) -> _Value:
        op = self.pick(("ADD", "ADD", "SUB", "MUL", "MUL"))
        other_shape = self.broadcast_shape(x.shape) if self.chance(0.8) else x.shape
        if self.chance(0.6):
            spec, q = self.const_int8(other_shape)
            other = _Value(self.g.add_tensor(spec), other_shape, q)
            kind = "const"
        else:
            other = self.input(other_shape)
            kind = "input"
        a, b = (other, x) if self.chance(0.3) else (x, other)
        act = self.pick(("NONE", "NONE", "NONE", "RELU", "RELU6")) if op != "MUL" or \
            self.chance(0.5) else "NONE"  # fmt: skip
        self.words.append(f"{op.lower()}({kind}{'x'.join(map(str, other_shape)) or 'scalar'})")
        return self.binary(op, a, b, x.shape, act)

    def residual_block(self, x: _Value) -> _Value:
        c = x.shape[3]
        if self.chance(0.5) and self.room(4):
            self.words.append("[mbv2")
            self.features["block inverted residual"] += 1
            e = min(c * self.randint(2, 4), self.max_channels)
            y = self.conv(x, e, "RELU6", k=1, s=1, d=1, padding="SAME")
            y = self.depthwise(y, "RELU6", k=3, s=1, d=1, padding="SAME")
            y = self.conv(y, c, "NONE", k=1, s=1, d=1, padding="SAME")
            act = "NONE"
        else:
            self.words.append("[resnet")
            self.features["block residual"] += 1
            k = self.pick((1, 3, 3))
            y = self.conv(x, c, "RELU", k=k, s=1, padding="SAME")
            y = self.conv(y, c, "NONE", k=k, s=1, padding="SAME")
            act = "RELU"
        out = self.binary("ADD", x, y, x.shape, act) if self.chance(0.8) else \
            self.binary("ADD", y, x, x.shape, act)  # fmt: skip
        self.words.append("+add]")
        return out

    def squeeze_excite_block(self, x: _Value) -> _Value:
        n, h, w, c = x.shape
        r = max(1, c // self.pick((2, 4, 8)))
        variant = self.randint(0, 2)
        self.words.append("[se")
        self.features[f"block squeeze-excite {('conv', 'fc', 'fc rank 4')[variant]}"] += 1
        if variant == 0:  # MobileNetV3: MEAN keep_dims, 1x1 convolutions
            s = self.mean(x, (1, 2), True)
            s = self.conv(s, r, "RELU", k=1, s=1, d=1, padding="VALID")
            s = self.conv(s, c, "NONE", k=1, s=1, d=1, padding="VALID")
        elif variant == 1:  # Keras: GlobalAveragePooling2D, Dense, Dense, Reshape
            s = self.mean(x, (1, 2), False)
            s = self.fully_connected(s, r, "RELU", keep_num_dims=False)
            s = self.fully_connected(s, c, "NONE", keep_num_dims=False)
        else:  # pooled to [1, 1, 1, C], Dense on rank 4
            s = self.global_pool(x) if self.chance(0.5) else self.mean(x, (1, 2), True)
            s = self.fully_connected(s, r, "RELU", keep_num_dims=True)
            s = self.fully_connected(s, c, "NONE", keep_num_dims=True)
        s = self.logistic(s)
        if len(s.shape) != 4:
            s = self.reshape(s, (n, 1, 1, c))
        lo, hi = x.real_range
        q = _range_q(lo * self.uniform(0.5, 1.0), hi * self.uniform(0.5, 1.0))
        a, b = (x, s) if self.chance(0.8) else (s, x)
        out = self.op("MUL", [a.index, b.index], x.shape, q, {"fused_activation_function": "NONE"})
        self.words.append("*mul]")
        return out

    def concat_block(self, x: _Value) -> _Value:
        n, h, w, c = x.shape
        if self.chance(0.3):  # spatial: x beside a same-sized convolution of x
            axis = self.pick((1, 2, -3, -2))
            y = self.conv(x, c, "NONE", q=x.q, s=1, padding="SAME")
            return self.concat([x, y] if self.chance(0.5) else [y, x], axis)
        with_pool = self.chance(0.4)
        q = x.q if with_pool else self.activation_q(self.output_scale(x), "NONE")
        s = self.pick((1, 1, 2))
        branches = [self.conv(x, self.channels(1, 24), None, q=q, k=k, s=s, d=1, padding="SAME")
                    for k in (1, 3)]  # fmt: skip
        if with_pool:
            branches.append(self.pool(x, "MAX_POOL_2D", k=3, s=s, padding="SAME"))
        order = self.rng.permutation(len(branches))
        return self.concat([branches[i] for i in order], self.pick((3, -1)))

    def pad_conv_block(self, x: _Value) -> _Value:
        p = self.randint(1, 2)
        y = self.pad(x, [[0, 0], [p, p], [p, p], [0, 0]] if self.chance(0.6) else None)
        k = 2 * p + 1 if self.chance(0.7) else None
        return self.conv(y, None, None, k=k, s=self.pick((1, 2)), d=1, padding="VALID")

    def cnn_body(self, x: _Value) -> _Value:
        blocks = (
            (3.0, 1, lambda v: self.conv(v)),
            (2.0, 1, lambda v: self.depthwise(v)),
            (1.0, 1, lambda v: self.pool(v)),
            (0.7, 1, lambda v: self.pad(v)),
            (1.0, 2, self.pad_conv_block),
            (1.5, 3, self.residual_block),
            (1.2, 5, self.squeeze_excite_block),
            (1.5, 1, self.binary_block),
            (1.0, 3, self.concat_block),
            (0.8, 1, lambda v: self.hard_swish(v)),
            (0.4, 1, lambda v: self.logistic(v)),
            (0.4, 1, lambda v: self.mean(v, (1, 2), True)),
            # ops beyond the GEMMs; each rule only while its ops have CPU kernels
            (0.5, 1, self.resize, ("RESIZE_NEAREST_NEIGHBOR", "RESIZE_BILINEAR")),
            (0.3, 1, self.transpose, ("TRANSPOSE",)),
            (0.4, 1, self.gather, ("GATHER",)),
            (0.5, 1, self.crop, ("STRIDED_SLICE", "SLICE")),
            (0.4, 3, self.pack_block, ("PACK",)),
            (0.5, 1, self.leaky_relu, ("LEAKY_RELU",)),
            (0.3, 1, self.tanh, ("TANH",)),
            (0.3, 1, self.relu, ("RELU", "RELU6")),
            (0.3, 1, self.requantize, ("QUANTIZE",)),
            (0.3, 1, lambda v: self.reduce(v, "SUM"), ("SUM",)),
            (0.8, 3, self.float_island, ("DEQUANTIZE", "QUANTIZE", "ADD", "SUB", "MUL", "LOGISTIC",
                                          "TANH", "RELU", "RELU6", "LEAKY_RELU", "HARD_SWISH")),
            (0.4, 1, self.prelu, ("PRELU",)),
            (0.3, 1, self.gelu, ("GELU",)),
            (0.3, 1, lambda v: self.reduce(v, self.pick(("REDUCE_MAX", "REDUCE_MIN"))),
             ("REDUCE_MAX", "REDUCE_MIN")),
            (0.4, 1, self.minmax, ("MAXIMUM", "MINIMUM")),
            (0.3, 1, self.squared_difference, ("SQUARED_DIFFERENCE",)),
            (0.2, 1, self.neg, ("NEG",)),
            (0.2, 2, self.rsqrt, ("RSQRT", "RELU", "RELU6")),
            (0.3, 1, self.tile, ("TILE",)),
            (0.4, 2, self.space_depth, ("SPACE_TO_DEPTH", "DEPTH_TO_SPACE")),
            (0.4, 2, self.split_block, ("SPLIT", "SPLIT_V")),
            (0.6, 1, self.transpose_conv, ("TRANSPOSE_CONV",)),
        )
        blocks = tuple(b for b in blocks if len(b) == 3 or self.has(*b[3]))
        weights = np.array([b[0] for b in blocks])
        while self.room(1):
            fitting = [i for i, b in enumerate(blocks) if self.room(b[1])]
            p = weights[fitting] / weights[fitting].sum()
            block = blocks[fitting[int(self.rng.choice(len(fitting), p=p))]][2]
            x = block(x)
            if len(x.shape) != 4:  # a reduction without keep_dims: back to a feature map
                x = self.reshape(x, (x.shape[0], 1, 1, x.shape[-1]) if len(x.shape) == 2 else
                                 (*x.shape[:3], 1) if len(x.shape) == 3 else x.shape)
            if x.shape[3] > self.max_channels:
                x = self.conv(x, self.channels(1, 32), k=1, s=1, padding="SAME")
            if max(x.shape[1:3]) > (32 if self.large else 24):
                x = self.pool(x, "MAX_POOL_2D", k=2, s=2, padding="SAME")
            if self.chance(0.08) and self.room(2):
                self.outputs.append(x.index)
                self.words.append("(out)")
        return x

    def head(self, x: _Value) -> _Value:
        """A classifier over a 4-D feature map, as converters emit them."""
        n, h, w, c = x.shape
        kind = self.randint(0, 3)
        if kind == 0:
            x = self.mean(x, (1, 2), self.chance(0.5))
        elif kind == 1:
            x = self.global_pool(x)
            if self.chance(0.3) and self.has("SQUEEZE"):
                x = self.squeeze(x, (1, 2))
            elif self.chance(0.5):
                x = self.reshape(x, (n, c))
        elif kind == 2:
            x = self.reshape(x, (n, h * w, c))
        else:
            x = self.reshape(x, (n, h * w * c)) if h * w * c <= 512 else self.mean(x, (1, 2), False)
        x = self.fully_connected(x, self.channels(2, 24), "NONE" if self.chance(0.6) else None)
        last = self.pick(("softmax", "softmax", "logistic", "none"))
        if last == "softmax":
            x = self.softmax(x)
        elif last == "logistic":
            x = self.logistic(x)
        if self.chance(0.15) and self.has("ARG_MAX", "ARG_MIN"):
            x = self.arg_max(x)
        return x

    def arg_max(self, x: _Value) -> _Value:
        """The class index: ARG_MAX (now and then ARG_MIN) over the last axis, int32 or int64."""
        op = "ARG_MAX" if self.chance(0.8) else "ARG_MIN"
        dtype = np.int32 if self.chance(0.7) else np.int64
        axis = self.int32([len(x.shape) - 1] if self.chance(0.5) else [-1], "axis")
        self.words.append(op.lower())
        return self.op(op, [x.index, axis], x.shape[:-1], None,
                       {"output_type": "INT32" if dtype == np.int32 else "INT64"}, dtype=dtype)

    def sequence_model(self, float_input: bool) -> None:
        """Dense layers over rank 2-4 inputs (sequence models, MLPs, Dense on feature maps)."""
        rank = self.pick((2, 2, 3, 3, 4))
        c = self.channels(1, 40)
        if rank == 2:
            shape: tuple[int, ...] = (self.batch if self.dynamic else self.randint(1, 4), c)
        elif rank == 3:
            shape = (self.batch, self.randint(1, 8), c)
        else:
            shape = (self.batch, self.randint(1, 4), self.randint(1, 4), c)
        self.words.append(f"seq {'x'.join(map(str, shape))}:")
        x = self.input(shape, float_input=float_input)
        while self.room(1):
            r = self.randint(0, 15)
            if r <= 3:
                x = self.fully_connected(x)
            elif r == 4:
                x = self.binary_block(x)
            elif r == 5:
                x = self.pick((self.hard_swish, self.logistic))(x)
            elif r == 6 and self.room(3):
                q = self.activation_q(self.output_scale(x), "NONE")
                ys = []
                for _ in range(2):
                    y = self.fully_connected(x, self.channels(1, 24), "NONE", keep_num_dims=True)
                    ys.append(self.op_with_q(y, q))
                x = self.concat(ys, -1)
            elif r == 7 and len(x.shape) > 2:
                x = self.mean(x, None, True) if self.chance(0.5) else self.reshape(
                    x, (int(np.prod(x.shape[:-1])), x.shape[-1]))  # fmt: skip
            elif r == 8 and len(x.shape) == 2 and self.room(2):
                rows = x.shape[0]
                x = self.reshape(x, (rows, 1, 1, x.shape[1]))
                if self.chance(0.3) and self.has("SQUEEZE"):
                    x = self.squeeze(x, (1, 2))
                x = self.fully_connected(x, keep_num_dims=self.chance(0.5))
            elif r == 9:
                x = self.softmax(x)
            elif r == 10 and len(x.shape) == 3 and self.has("TRANSPOSE"):
                x = self.transpose(x)
            elif r == 11 and self.has("GATHER"):
                x = self.gather(x) if len(x.shape) > 1 else x
            elif r == 12:
                rules = [rule for rule, ops in (
                    (self.leaky_relu, ("LEAKY_RELU",)), (self.tanh, ("TANH",)),
                    (self.gelu, ("GELU",)), (self.log_softmax, ("LOG_SOFTMAX",)),
                    (self.neg, ("NEG",)), (self.squared_difference, ("SQUARED_DIFFERENCE",)),
                    (self.minmax, ("MAXIMUM", "MINIMUM"))) if self.has(*ops)]  # fmt: skip
                if rules:
                    x = self.pick(rules)(x)
            elif r == 13 and self.room(3) and self.has("DEQUANTIZE", "QUANTIZE"):
                x = self.float_island(x)
            elif r == 14 and len(x.shape) == 3 and self.room(2) and self.has("BATCH_MATMUL"):
                x = self.attention_scores(x)
            elif r == 15 and len(x.shape) >= 2 and x.shape[-1] >= 2 and self.room(2):
                if len(x.shape) == 3 and self.has("UNPACK", "PACK") and x.shape[1] <= 4:
                    x = self.unpack_pack(x)
                elif self.has("EXPAND_DIMS", "SQUEEZE") and len(x.shape) == 2:
                    axis = self.pick((1, -1))
                    x = self.expand_dims(x, axis)
                    if self.chance(0.5):
                        x = self.squeeze(x, (axis,))
        self.outputs.append(x.index)

    def log_softmax(self, x: _Value) -> _Value:
        self.words.append("log_softmax")
        return self.op("LOG_SOFTMAX", [x.index], x.shape, QParams.per_tensor(16.0 / 256, 127))

    def attention_scores(self, x: _Value) -> _Value:
        """q @ k^T of two Dense projections of a sequence (BATCH_MATMUL, adj_y)."""
        n, t, c = x.shape
        d = self.channels(1, 24)
        q_ = self.fully_connected(x, d, "NONE", keep_num_dims=True)
        k_ = self.fully_connected(x, d, "NONE", keep_num_dims=True)
        spread = 74.0 * 74.0 * q_.q.s * k_.q.s * math.sqrt(d)
        out = QParams.per_tensor(float(np.float32(spread / 128 * self.uniform(0.5, 2.0))),
                                 self.randint(-10, 10))
        self.words.append("bmm")
        return self.op("BATCH_MATMUL", [q_.index, k_.index], (n, t, t), out,
                       {"adj_x": False, "adj_y": True, "asymmetric_quantize_inputs": False})

    def unpack_pack(self, x: _Value) -> _Value:
        """UNPACK a short sequence into its steps and PACK them back in reverse order."""
        n, t, c = x.shape
        outs = [TensorSpec(self.name("step"), (n, c), np.int8, x.q) for _ in range(t)]
        steps = self.g.op("UNPACK", [x.index], outs, {"num": t, "axis": 1})
        self.ops["UNPACK"] += 1
        for i in steps:
            self.batched.add(i)
        self.words.append(f"unpack{t}+pack")
        return self.op("PACK", list(steps)[::-1], x.shape, x.q, {"values_count": t, "axis": 1})

    def op_with_q(self, y: _Value, q: QParams) -> _Value:
        """`y` re-quantized to `q` where it is made (the converter ties a concatenation's
        inputs to its output's quantization)."""
        op = self.g.operators[-1]
        assert op.outputs == [y.index]
        self.g.tensors[y.index].quant = q
        return _Value(y.index, y.shape, q)

    def build(self) -> None:
        # The converter's defaults: a dynamic batch (shape signatures with -1), now and then a
        # float interface (QUANTIZE in, DEQUANTIZE out); or a fixed batch, now and then 2.
        self.dynamic = self.chance(0.35)
        if not self.dynamic and self.chance(0.2):
            self.batch = 2
            self.features["batch 2"] += 1
        float_io = self.chance(0.12) and self.has("QUANTIZE", "DEQUANTIZE")
        if self.chance(0.25):
            self.sequence_model(float_io)
        else:
            self.large = self.batch == 1 and self.chance(0.1)
            size = (18, 30) if self.large else (3, 14)
            if self.large:
                self.max_channels = LARGE_MAX_CHANNELS
                self.budget = min(self.budget, 6)
                self.features["large feature maps"] += 1
            h = self.randint(*size)
            w = h if self.chance(0.6) else self.randint(*size)
            c = self.channels(1, 40)
            self.words.append(f"cnn {self.batch}x{h}x{w}x{c}:")
            x = self.input((self.batch, h, w, c), float_input=float_io)
            with_head = self.chance(0.5)
            if with_head:
                self.budget = max(self.budget - 3, 1)
            x = self.cnn_body(x)
            if with_head:
                self.budget += 3
                x = self.head(x)
            self.outputs.append(x.index)
        last = self.outputs[-1]
        if float_io and self.g.tensors[last].quant is not None:  # a class index stays an integer
            t = self.g.tensors[last]
            y = self.float_output(_Value(last, t.shape, t.quant))
            self.outputs[-1] = y.index
        if self.dynamic:
            self.features["dynamic batch"] += 1
            for i in self.batched:
                t = self.g.tensors[i]
                t.shape_signature = (-1, *t.shape[1:])
        self.g.output(*dict.fromkeys(self.outputs))
