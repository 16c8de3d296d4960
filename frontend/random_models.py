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
"""

from __future__ import annotations

import math
from collections import Counter
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

__all__ = ["GeneratedModel", "generate", "generate_model"]

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


def generate_model(seed: int) -> bytes:
    """The flatbuffer of the random model of `seed`."""
    return generate(seed).model


def generate(seed: int) -> GeneratedModel:
    """The random model of `seed`, with a one-line description and its op counts."""
    gen = _Generator(seed)
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
    def __init__(self, seed: int) -> None:
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
        return sum(self.ops.values())

    def room(self, n: int = 1) -> bool:
        return self.used() + n <= self.budget

    # ---- tensors and ops --------------------------------------------------------------------

    def input(self, shape: tuple[int, ...]) -> _Value:
        if self.chance(0.3):
            q = QParams.per_tensor(1.0 / 255, -128)  # an image scaled to [0, 1]
        else:
            scale = float(np.float32(self.uniform(0.01, 0.1)))
            q = QParams.per_tensor(scale, self.randint(-128, 100))
        name = "input" if not self.g.inputs else self.name("input")
        return _Value(self.g.input(name, shape, np.int8, q), shape, q)

    def op(self, op: str, inputs: list, shape: tuple[int, ...], q: QParams,
           options: dict | None = None) -> _Value:  # fmt: skip
        index = self.g.op(op, inputs, TensorSpec(self.name(op.lower()), shape, np.int8, q),
                          options)  # fmt: skip
        self.ops[op] += 1
        return _Value(int(index), shape, q)

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
        w_q, q = self.gemm_quant(x, c, act, o, 0, False)  # int8 FULLY_CONNECTED: per-tensor
        weights = weights_tensor(self.name("weights"), self.rng, (o, c), w_q)
        b = bias_tensor(self.name("bias"), self.rng, x.q, w_q, o) if with_bias else None
        rows = int(np.prod(x.shape[:-1]))
        shape = (*x.shape[:-1], o) if keep else (rows, o)
        self.features[f"fc rank {len(x.shape)}"] += 1
        self.features["fc keep_num_dims" if keep else "fc flattening"] += 1
        self.features["fc bias" if with_bias else "fc no bias"] += 1
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
        data = TensorSpec(self.name("shape"), (len(shape),), np.int32,
                          data=np.asarray(shape, np.int32))  # fmt: skip
        self.words.append("reshape" + "x".join(map(str, shape)))
        options = {"new_shape": np.asarray(shape, np.int32)} if self.chance(0.5) else {}
        return self.op("RESHAPE", [x.index, data], shape, x.q, options)

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
            s = self.reshape(s, (1, 1, 1, c))
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
        )
        weights = np.array([b[0] for b in blocks])
        while self.room(1):
            fitting = [i for i, b in enumerate(blocks) if self.room(b[1])]
            p = weights[fitting] / weights[fitting].sum()
            block = blocks[fitting[int(self.rng.choice(len(fitting), p=p))]][2]
            x = block(x)
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
            if self.chance(0.5):
                x = self.reshape(x, (1, c))
        elif kind == 2:
            x = self.reshape(x, (1, h * w, c))
        else:
            x = self.reshape(x, (1, h * w * c)) if h * w * c <= 512 else self.mean(x, (1, 2), False)
        x = self.fully_connected(x, self.channels(2, 24), "NONE" if self.chance(0.6) else None)
        last = self.pick(("softmax", "softmax", "logistic", "none"))
        if last == "softmax":
            x = self.softmax(x)
        elif last == "logistic":
            x = self.logistic(x)
        return x

    def sequence_model(self) -> None:
        """Dense layers over rank 2-4 inputs (sequence models, MLPs, Dense on feature maps)."""
        rank = self.pick((2, 2, 3, 3, 4))
        c = self.channels(1, 40)
        if rank == 2:
            shape: tuple[int, ...] = (self.randint(1, 4), c)
        elif rank == 3:
            shape = (self.pick((1, 1, 2)), self.randint(1, 8), c)
        else:
            shape = (1, self.randint(1, 4), self.randint(1, 4), c)
        self.words.append(f"seq {'x'.join(map(str, shape))}:")
        x = self.input(shape)
        while self.room(1):
            r = self.randint(0, 9)
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
            elif r == 8 and len(x.shape) == 2 and x.shape[0] == 1 and self.room(2):
                x = self.reshape(x, (1, 1, 1, x.shape[1]))
                x = self.fully_connected(x, keep_num_dims=self.chance(0.5))
            elif r == 9:
                x = self.softmax(x)
        self.outputs.append(x.index)

    def op_with_q(self, y: _Value, q: QParams) -> _Value:
        """`y` re-quantized to `q` where it is made (the converter ties a concatenation's
        inputs to its output's quantization)."""
        op = self.g.operators[-1]
        assert op.outputs == [y.index]
        self.g.tensors[y.index].quant = q
        return _Value(y.index, y.shape, q)

    def build(self) -> None:
        if self.chance(0.25):
            self.sequence_model()
        else:
            self.large = self.chance(0.1)
            size = (18, 30) if self.large else (3, 14)
            if self.large:
                self.max_channels = LARGE_MAX_CHANNELS
                self.budget = min(self.budget, 6)
                self.features["large feature maps"] += 1
            h = self.randint(*size)
            w = h if self.chance(0.6) else self.randint(*size)
            c = self.channels(1, 40)
            self.words.append(f"cnn 1x{h}x{w}x{c}:")
            x = self.input((1, h, w, c))
            with_head = self.chance(0.5)
            if with_head:
                self.budget = max(self.budget - 3, 1)
            x = self.cnn_body(x)
            if with_head:
                self.budget += 3
                x = self.head(x)
            self.outputs.append(x.index)
        self.g.output(*dict.fromkeys(self.outputs))
