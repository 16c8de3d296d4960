"""`legalize-tfl-to-q`: rewrite int8 `tfl` ops into `q` ops that carry their integer arithmetic.

The method's step 1: TFLite operators become "q operators", whose zero points, fixed-point
multipliers, shifts, explicit paddings and activation bounds are computed here, once, with
the same functions the CPU kernels use, so the result is bit-exact with the `tfl` IR by
construction. A convolution with a fused activation becomes the method's example group:

    %y = tfl.conv_2d %x, %w, %b {padding = "SAME", fused_activation_function = "RELU6", ...}

becomes

    %acc = q.conv2d %x, %w {strides = ..., padding = array<i64: 1, 1, 1, 1>,
                            input_zero_point = -1 : i32, filter_zero_point = 0 : i32, ...}
    %sum = q.bias_add %acc, %b
    %req = q.requantize %sum {multiplier = array<i32: ...>, shift = array<i32: ...>, ...}
    %y   = q.relu %req {min = -128 : i32, max = 70 : i32}

(`q.relu` only when the activation range is narrower than int8's). FULLY_CONNECTED becomes
`q.dense + q.bias_add + q.requantize (+ q.relu)` whose requantize keeps the reference kernel's
double-precision scale. Also DEPTHWISE_CONV_2D, ADD, SUB, MUL, AVERAGE_POOL_2D, MAX_POOL_2D,
MEAN (constant axes), PAD/PADV2 (constant paddings), CONCATENATION, STRIDED_SLICE with constant
bounds and unit strides (`q.slice`, the box it selects), RESHAPE between static
shapes (`q.reshape`; a computed shape operand, e.g. Keras' Flatten's SHAPE, STRIDED_SLICE and
PACK, is dropped with the ops that computed it), MAXIMUM/MINIMUM with a one-valued constant
(a `q.relu` clamp), and RESIZE_NEAREST_NEIGHBOR / RESIZE_BILINEAR of one quantization
(`q.resize_nearest_neighbor` / `q.resize_bilinear`, their size operand dropped), and
TRANSPOSE_CONV (its taps a 1x1 `q.conv2d`, then `q.depth_to_space` when the kernel is the
stride, or `q.col2im` summing overlapping taps before the bias and requantization), and
SQUARED_DIFFERENCE (`q.squared_difference`, the kernel's multipliers), and the attention core:
TRANSPOSE with a constant permutation (`q.transpose`), int8 SOFTMAX (`q.softmax`, the
reference kernel's fixed-point parameters) and int8 x int8 -> int8 BATCH_MATMUL
(`q.batch_matmul`, both zero points and the multiplier).

Element-wise int8 -> int8 ops with one input (`TABLE_OPS`: standalone RELU/RELU6/RELU_N1_TO_1,
LOGISTIC, TANH, HARD_SWISH, LEAKY_RELU, GELU, an int8 QUANTIZE, ...) see only 256 input values:
their kernel (`kernels/`) computes the 256 results at compile time, and the op becomes

    %y = tfl.logistic %x : ... -> ...        =>   %y = q.lut %x {table = array<i32: ...>}

or, when the table is a clamp of the input (a RELU whose input and output share a
quantization), `q.relu` (nothing at all when the clamp is the identity and the types agree).
A table the kernel cannot compute for every input (it refuses one) leaves the op as it is.
A `DEQUANTIZE -> float element-wise ops -> QUANTIZE` chain of one int8 input (`FLOAT_CHAIN_OPS`:
NEG, ABS, SQUARE, SQRT, RSQRT, RELU; a layer norm's negated mean) is such an op too: one
`q.lut`, its table the chain's kernels run on the 256 values.

A FULLY_CONNECTED between a RESHAPE of tokens `[1, T, C]` to rows `[T, C]` and a RESHAPE of
its rows back to `[1, T, O]` (Keras' Dense on `[N, T, C]`) becomes one `q.dense` group over the
tokens, as with `keep_num_dims`: the reshapes and the ops that computed their shapes go.

The reshape of a global mean (`MEAN` without kept dimensions, then `RESHAPE` to `[N, 1, 1, C]`
by the converter's `SHAPE -> STRIDED_SLICE -> PACK` idiom, as squeeze-excite blocks do) becomes
the mean with kept dimensions: the shape computation, which only reads the static shape, goes.

An op stays `tfl` (and runs on the CPU) when it is not int8, when an operand that must be
constant is not, or when LiteRT's reference kernel would refuse it (the interpreter then
reports the refusal). Option `ops` limits the rewrite to some op kinds, e.g.
`legalize-tfl-to-q{ops=conv_2d,fully_connected}`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from xdsl.context import Context
from xdsl.dialects.builtin import (
    BytesAttr,
    DenseIntOrFPElementsAttr,
    IntegerAttr,
    ModuleOp,
    NameLoc,
    NoneType,
    StringAttr,
    TensorType,
    UnknownLoc,
    i8,
    i32,
)
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)
from xdsl.utils.exceptions import PassFailedException

from qaccel.kernels import arithmetic as ar
from qaccel.kernels import registry as kernels
from qaccel.interpreter.prepare import ExecutionError, prepare_op
from qaccel.kernels.base import window_geometry
from qaccel.kernels.conv import per_channel_multipliers
from qaccel.kernels.elementwise import add_sub_params
from qaccel.kernels.reduce import resolve_axes
from qaccel.dialects import q, tfl
from qaccel.dialects.names import location_name
from qaccel.dialects.quant import element_qparams
from qaccel.dialects.types import tensor_dtype

# --------------------------------------------------------------------------------------------
# Shared helpers


def _is_int8(v: SSAValue) -> bool:
    return isinstance(v.type, TensorType) and tensor_dtype(v.type) == np.int8 and (
        element_qparams(v.type) is not None
    )


def _const(v: SSAValue) -> np.ndarray | None:
    return v.owner.as_array() if isinstance(v.owner, tfl.ConstOp) else None


def _static_call(op: tfl.TflOp) -> kernels.OpCall | None:
    """The op's static call if LiteRT's reference kernel accepts it, else None."""
    try:
        return prepare_op(op)
    except (kernels.Refusal, ExecutionError):
        return None


def _acc_type(like: SSAValue) -> TensorType:
    return TensorType(i32, like.type.get_shape())


def _activation_bounds(op: tfl.TflOp) -> tuple[int, int]:
    out_q = element_qparams(op.results[0].type)
    return ar.activation_range_quantized(
        op.options.get("fused_activation_function", "NONE"), out_q.s, out_q.zp, np.int8
    )


def _per_channel(multiplier: np.ndarray, shift: np.ndarray) -> dict[str, np.ndarray]:
    """Requantize arrays, one entry when every channel has the same (a per-tensor scale)."""
    m, s = np.asarray(multiplier), np.asarray(shift)
    if m.size and np.all(m == m[0]) and np.all(s == s[0]):
        m, s = m[:1], s[:1]
    return {"multiplier": m, "shift": s}


def _explicit_padding(
    padding: str, in_hw: tuple[int, int], k_hw: tuple[int, int], strides, dilations
) -> list[int]:
    """[top, bottom, left, right] of TFLite's SAME/VALID padding."""
    pads: list[int] = []
    for size, k, s, d in zip(in_hw, k_hw, strides, dilations):
        out, before = window_geometry(padding, size, k, s, d)
        total = max((out - 1) * s + (k - 1) * d + 1 - size, 0)
        pads += [before, total - before]
    return pads


def _finish(rewriter: PatternRewriter, op: tfl.TflOp, ops: list[Operation], bounds) -> None:
    """Insert `ops`, add `q.relu` when the activation range is narrower than int8, and
    replace `op` by the last result."""
    lo, hi = bounds
    if (lo, hi) != (-128, 127):
        last = ops[-1].results[0]
        ops.append(
            q.ReluOp.create(
                operands=[last],
                result_types=[last.type],
                properties={"min": q.i32_attr(lo), "max": q.i32_attr(hi)},
            )
        )
    _name_group(op, ops)
    rewriter.replace(op, ops, [ops[-1].results[0]])


def _requantize(acc: SSAValue, result_type, out_zp: int, **arrays) -> q.RequantizeOp:
    props = {"input_zero_point": q.i32_attr(0), "output_zero_point": q.i32_attr(out_zp)}
    for name, values in arrays.items():
        props[name] = q.f64_array(values) if name == "scale" else q.i32_array(values)
    return q.RequantizeOp.create(operands=[acc], result_types=[result_type], properties=props)


def _name_group(op: Operation, ops: list[Operation]) -> None:
    """The last op computes the TFLite tensor and takes its name; the ones before it are
    named after it (`conv/Relu/q.requantize`), so reports name tensors and layer-by-layer
    comparison never mistakes an intermediate for the tensor."""
    ops[-1].location = op.location
    name = location_name(op)
    if name is not None:
        for new in ops[:-1]:
            new.location = NameLoc(StringAttr(f"{name}/{new.name}"), UnknownLoc())


def _replace_one(rewriter: PatternRewriter, op: Operation, new: Operation) -> None:
    new.location = op.location
    rewriter.replace(op, new)


def _accumulate_group(
    rewriter: PatternRewriter, op: tfl.TflOp, accumulate: Operation, **requantize_arrays
) -> None:
    """`accumulate` (+ `q.bias_add`) + `q.requantize` (+ `q.relu`) in place of `op`."""
    ops = [accumulate]
    bias = op.operands[2]
    if not isinstance(bias.type, NoneType):
        acc = accumulate.results[0]
        ops.append(q.BiasAddOp.create(operands=[acc, bias], result_types=[acc.type]))
    out_q = element_qparams(op.results[0].type)
    ops.append(_requantize(ops[-1].results[0], op.results[0].type, out_q.zp, **requantize_arrays))
    _finish(rewriter, op, ops, _activation_bounds(op))


# --------------------------------------------------------------------------------------------
# Patterns


class _Legalize(RewritePattern):
    def legal_int8(self, op: tfl.TflOp, *operands: SSAValue) -> kernels.OpCall | None:
        if not all(_is_int8(v) for v in (*operands, *op.results)):
            return None
        return _static_call(op)


def _legalize_conv(
    rewriter: PatternRewriter, op: tfl.Conv2DOp | tfl.DepthwiseConv2DOp, q_op, channels_axis: int,
    **extra: Attribute,
) -> None:
    """A (depthwise) convolution group; `channels_axis` is the filter's output-channel axis."""
    o = op.options
    _, h, w, _ = op.input.type.get_shape()
    filter_shape = op.filter.type.get_shape()
    kh, kw = filter_shape[1:3]
    strides = [o["stride_h"], o["stride_w"]]
    dilations = [o["dilation_h_factor"], o["dilation_w_factor"]]
    in_q, w_q = element_qparams(op.input.type), element_qparams(op.filter.type)
    conv = q_op.create(
        operands=[op.input, op.filter],
        result_types=[_acc_type(op.output)],
        properties={
            "strides": q.i64_array(strides),
            "dilations": q.i64_array(dilations),
            "padding": q.i64_array(
                _explicit_padding(o["padding"], (h, w), (kh, kw), strides, dilations)
            ),
            "input_zero_point": q.i32_attr(in_q.zp),
            "filter_zero_point": q.i32_attr(0),
            **extra,
        },
    )
    out_q = element_qparams(op.output.type)
    m, s = per_channel_multipliers(in_q, w_q, out_q, filter_shape[channels_axis])
    _accumulate_group(rewriter, op, conv, **_per_channel(m, s))


class LegalizeConv2D(_Legalize):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: tfl.Conv2DOp, rewriter: PatternRewriter):
        if self.legal_int8(op, op.input, op.filter) is not None:
            _legalize_conv(rewriter, op, q.Conv2DOp, channels_axis=0)


class LegalizeDepthwiseConv2D(_Legalize):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: tfl.DepthwiseConv2DOp, rewriter: PatternRewriter):
        if self.legal_int8(op, op.input, op.filter) is not None:
            cin, cout = op.input.type.get_shape()[3], op.filter.type.get_shape()[3]
            _legalize_conv(
                rewriter, op, q.DepthwiseConv2DOp, channels_axis=3,
                depth_multiplier=q.i32_attr(cout // cin),
            )


class LegalizeFullyConnected(_Legalize):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: tfl.FullyConnectedOp, rewriter: PatternRewriter):
        if self.legal_int8(op, op.input, op.filter) is None:
            return
        in_q, w_q = element_qparams(op.input.type), element_qparams(op.filter.type)
        out_q = element_qparams(op.output.type)
        per_channel = w_q.scale.size > 1
        dense = q.DenseOp.create(
            operands=[op.input, op.filter],
            result_types=[_acc_type(op.output)],
            properties={
                "input_zero_point": q.i32_attr(in_q.zp),
                "filter_zero_point": q.i32_attr(0 if per_channel else w_q.zp),
            },
        )
        # The reference kernel requantizes in double: round(acc * in_s * w_s / out_s).
        w_scales = w_q.scale.astype(np.float32).astype(np.float64)
        scale = float(np.float32(in_q.s)) * w_scales / float(np.float32(out_q.s))
        _accumulate_group(rewriter, op, dense, scale=scale)


class LegalizeTransposeConv(_Legalize):
    """TRANSPOSE_CONV whose kernel is its stride (`Conv2DTranspose(k, strides=k)`, as U-Nets
    upsample): the taps of one input pixel land on distinct output pixels, so every output
    is one tap's products plus the bias, never a sum of taps. It is then a GEMM per tap, all
    taps at once as a 1x1 `q.conv2d` with `k*k*O` output channels (weights ordered tap-major,
    `[(ky*k + kx)*O + o]`), requantized per output channel exactly as the reference kernel
    requantizes its accumulator image, followed by `q.depth_to_space` (block k), which puts
    channel `(ky*k + kx)*O + o` of pixel (y, x) at pixel (k*y + ky, k*x + kx), channel o:

        %y = tfl.transpose_conv %shape, %w, %x, %b {stride_h = 2, stride_w = 2, ...}
    =>
        %acc = q.conv2d %x, %w_taps {strides = [1, 1], padding = [0, 0, 0, 0], ...}
        %sum = q.bias_add %acc, %b_taps
        %req = q.requantize %sum {multiplier = (per channel, per tap), ...}
        %y   = q.depth_to_space %req {block_size = 2}

    The int32 accumulator, the bias add and the requantization see the same values as the
    reference kernel's, so the result is bit-exact. Overlapping taps (kernel larger than the
    stride) are `LegalizeTransposeConvTaps`'s."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: tfl.TransposeConvOp, rewriter: PatternRewriter):
        if self.legal_int8(op, op.input, op.weights) is None:
            return
        w, shape = _const(op.weights), _const(op.output_shape)
        if w is None or w.dtype != np.int8:
            return
        o = op.options
        sh, sw = int(o.get("stride_h", 1)), int(o.get("stride_w", 1))
        cout, kh, kw, cin = w.shape
        n, h, wd, c = op.input.type.get_shape()
        if (kh, kw) != (sh, sw) or kh != kw or kh < 2 or n != 1 or c != cin:
            return
        # A computed output_shape (the converter's SHAPE -> STRIDED_SLICE -> PACK of the batch)
        # is the declared shape at run time: the static shapes were checked at import.
        want = (1, h * kh, wd * kw, cout)
        if tuple(op.output.type.get_shape()) != want or (
            shape is not None and tuple(int(d) for d in shape.reshape(-1)) != want
        ):  # fmt: skip
            return
        in_q, w_q = element_qparams(op.input.type), element_qparams(op.weights.type)
        out_q = element_qparams(op.output.type)
        if w_q is None or np.any(w_q.zero_point != 0):
            return
        taps = kh * kw
        w_taps = np.ascontiguousarray(w.transpose(1, 2, 0, 3).reshape(taps * cout, 1, 1, cin))
        weights = tfl.ConstOp(DenseIntOrFPElementsAttr(
            TensorType(i8, w_taps.shape), BytesAttr(w_taps.tobytes())))  # fmt: skip
        mid_shape = [1, h, wd, taps * cout]
        conv = q.Conv2DOp.create(
            operands=[op.input, weights.output],
            result_types=[TensorType(i32, mid_shape)],
            properties={
                "strides": q.i64_array([1, 1]), "dilations": q.i64_array([1, 1]),
                "padding": q.i64_array([0, 0, 0, 0]),
                "input_zero_point": q.i32_attr(in_q.zp), "filter_zero_point": q.i32_attr(0),
            },
        )  # fmt: skip
        ops: list[Operation] = [weights, conv]
        if not isinstance(op.bias.type, NoneType):
            bias = _const(op.bias)
            if bias is None or bias.dtype != np.int32:
                return
            b_taps = np.tile(bias.reshape(-1), taps).astype(np.int32)
            bconst = tfl.ConstOp(DenseIntOrFPElementsAttr(
                TensorType(i32, [taps * cout]), BytesAttr(b_taps.tobytes())))  # fmt: skip
            acc = conv.results[0]
            ops += [bconst, q.BiasAddOp.create(operands=[acc, bconst.output],
                                               result_types=[acc.type])]  # fmt: skip
        m, s_ = per_channel_multipliers(in_q, w_q, out_q, cout)
        arrays = _per_channel(np.tile(np.asarray(m).reshape(-1), taps),
                              np.tile(np.asarray(s_).reshape(-1), taps))  # fmt: skip
        mid_type = TensorType(op.output.type.element_type, mid_shape)
        ops.append(_requantize(ops[-1].results[0], mid_type, out_q.zp, **arrays))
        lo, hi = _activation_bounds(op)
        if (lo, hi) != (-128, 127):
            last = ops[-1].results[0]
            ops.append(q.ReluOp.create(operands=[last], result_types=[last.type],
                                       properties={"min": q.i32_attr(lo), "max": q.i32_attr(hi)}))
        ops.append(q.DepthToSpaceOp.create(
            operands=[ops[-1].results[0]], result_types=[op.output.type],
            properties={"block_size": q.i32_attr(kh)}))  # fmt: skip
        for const, of in ((weights, op.weights), (ops[2] if len(ops) > 2 else None, op.bias)):
            if isinstance(const, tfl.ConstOp) and of.name_hint:
                const.output.name_hint = f"{of.name_hint}_taps"
        _name_group(op, [o for o in ops if not isinstance(o, tfl.ConstOp)])
        output_shape = op.output_shape
        rewriter.replace(op, ops, [ops[-1].results[0]])
        _erase_dead_shape(rewriter, output_shape)


class _LegalizeAddSub(_Legalize):
    q_op: type[q._AddSubOp]
    name: str

    def rewrite(self, op: tfl.AddOp | tfl.SubOp, rewriter: PatternRewriter) -> None:
        call = self.legal_int8(op, op.lhs, op.rhs)
        if call is None:
            return
        left_shift, (m1, s1), (m2, s2), (mo, so) = add_sub_params(self.name, call)
        if so > 0:
            return  # undefined behaviour in LiteRT's kernel: leave it to the CPU kernel
        props = {
            "lhs_zero_point": element_qparams(op.lhs.type).zp,
            "rhs_zero_point": element_qparams(op.rhs.type).zp,
            "left_shift": left_shift,
            "lhs_multiplier": m1,
            "lhs_shift": s1,
            "rhs_multiplier": m2,
            "rhs_shift": s2,
            "output_multiplier": mo,
            "output_shift": so,
            "output_zero_point": element_qparams(op.output.type).zp,
        }
        new = self.q_op.create(
            operands=[op.lhs, op.rhs],
            result_types=[op.output.type],
            properties={k: q.i32_attr(v) for k, v in props.items()},
        )
        _finish(rewriter, op, [new], _activation_bounds(op))


class LegalizeAdd(_LegalizeAddSub):
    q_op, name = q.AddOp, "ADD"

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: tfl.AddOp, rewriter: PatternRewriter):
        self.rewrite(op, rewriter)


class LegalizeSub(_LegalizeAddSub):
    q_op, name = q.SubOp, "SUB"

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: tfl.SubOp, rewriter: PatternRewriter):
        self.rewrite(op, rewriter)


class LegalizeSquaredDifference(_Legalize):
    """int8 SQUARED_DIFFERENCE: `q.squared_difference` with the kernel's Prepare-time
    multipliers (left shift 7, each input's and the output's multiplier below one)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: tfl.SquaredDifferenceOp, rewriter: PatternRewriter):
        call = self.legal_int8(op, op.lhs, op.rhs)
        if call is None:
            return
        from qaccel.kernels.elementwise import squared_difference_params

        (m1, s1), (m2, s2), (mo, so) = squared_difference_params("SQUARED_DIFFERENCE", call)
        props = {
            "lhs_zero_point": element_qparams(op.lhs.type).zp,
            "rhs_zero_point": element_qparams(op.rhs.type).zp,
            "left_shift": 7,
            "lhs_multiplier": m1,
            "lhs_shift": s1,
            "rhs_multiplier": m2,
            "rhs_shift": s2,
            "output_multiplier": mo,
            "output_shift": so,
            "output_zero_point": element_qparams(op.output.type).zp,
        }
        new = q.SquaredDifferenceOp.create(
            operands=[op.lhs, op.rhs],
            result_types=[op.output.type],
            properties={k: q.i32_attr(v) for k, v in props.items()},
        )
        _replace_one(rewriter, op, new)


class LegalizeMul(_Legalize):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: tfl.MulOp, rewriter: PatternRewriter):
        if self.legal_int8(op, op.lhs, op.rhs) is None:
            return
        a, b = element_qparams(op.lhs.type), element_qparams(op.rhs.type)
        out = element_qparams(op.output.type)
        # TFLite computes this multiplier in float, then widens it.
        real = float(np.float32(a.s) * np.float32(b.s) / np.float32(out.s))
        m, s = ar.quantize_multiplier_scalar(real)
        props = {
            "lhs_zero_point": a.zp,
            "rhs_zero_point": b.zp,
            "multiplier": m,
            "shift": s,
            "output_zero_point": out.zp,
        }
        new = q.MulOp.create(
            operands=[op.lhs, op.rhs],
            result_types=[op.output.type],
            properties={k: q.i32_attr(v) for k, v in props.items()},
        )
        _finish(rewriter, op, [new], _activation_bounds(op))


@dataclass
class LegalizePool(_Legalize):
    kind: type[tfl.AveragePool2DOp] | type[tfl.MaxPool2DOp]

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter):
        if not isinstance(op, self.kind) or self.legal_int8(op, op.input) is None:
            return
        o = op.options
        _, h, w, _ = op.input.type.get_shape()
        k = [o["filter_height"], o["filter_width"]]
        strides = [o["stride_h"], o["stride_w"]]
        q_op = q.AvgPool2DOp if isinstance(op, tfl.AveragePool2DOp) else q.MaxPool2DOp
        new = q_op.create(
            operands=[op.input],
            result_types=[op.output.type],
            properties={
                "filter": q.i64_array(k),
                "strides": q.i64_array(strides),
                "padding": q.i64_array(_explicit_padding(o["padding"], (h, w), k, strides, [1, 1])),
            },
        )
        _finish(rewriter, op, [new], _activation_bounds(op))


class LegalizeMean(_Legalize):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: tfl.MeanOp, rewriter: PatternRewriter):
        axes_value = _const(op.axis)
        if axes_value is None or self.legal_int8(op, op.input) is None:
            return
        shape = op.input.type.get_shape()
        axes = resolve_axes(axes_value, len(shape))
        n = int(np.prod([shape[a] for a in axes])) if axes else 1
        if n == 0:
            return
        in_q, out_q = element_qparams(op.input.type), element_qparams(op.output.type)
        m, s = ar.quantize_multiplier_scalar(float(np.float32(in_q.s)) / float(np.float32(out_q.s)))
        k = min(n.bit_length() - 1, 32, 31 + s)
        if k >= 0:
            m, s = (m << k) // n, s - k
        props = {
            "axes": q.i64_array(axes),
            "num_elements": q.i32_attr(n),
            "input_zero_point": q.i32_attr(in_q.zp),
            "multiplier": q.i32_attr(m),
            "shift": q.i32_attr(s),
            "output_zero_point": q.i32_attr(out_q.zp),
        }
        new = q.MeanOp.create(operands=[op.input], result_types=[op.output.type], properties=props)
        _replace_one(rewriter, op, new)


@dataclass
class LegalizePad(_Legalize):
    kind: type[tfl.PadOp] | type[tfl.PadV2Op]

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter):
        if not isinstance(op, self.kind):
            return
        paddings = _const(op.padding)
        if paddings is None or self.legal_int8(op, op.input) is None:
            return
        if isinstance(op, tfl.PadV2Op):
            value = _const(op.constant_values)
            if value is None:
                return
            pad_value = int(value.reshape(-1)[0])
        else:
            pad_value = element_qparams(op.output.type).zp
        new = q.PadOp.create(
            operands=[op.input],
            result_types=[op.output.type],
            properties={
                "padding": q.i64_array(np.asarray(paddings).reshape(-1)),
                "pad_value": q.i32_attr(pad_value),
            },
        )
        _replace_one(rewriter, op, new)


class LegalizeConcatenation(_Legalize):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: tfl.ConcatenationOp, rewriter: PatternRewriter):
        if self.legal_int8(op, *op.values) is None:
            return
        rank = len(op.output.type.get_shape())
        axis = op.options["axis"]
        new = q.ConcatOp.create(
            operands=list(op.values),
            result_types=[op.output.type],
            properties={"axis": IntegerAttr(axis + rank if axis < 0 else axis, i32)},
        )
        _replace_one(rewriter, op, new)


_SHAPE_OPS = ("tfl.shape", "tfl.strided_slice", "tfl.pack", "tfl.const", "tfl.gather",
              "tfl.reduce_prod", "tfl.concatenation", "tfl.cast")  # fmt: skip
"""Ops that compute a RESHAPE's target shape (Keras' Flatten: SHAPE, STRIDED_SLICE, PACK)."""


def _erase_dead_shape(rewriter: PatternRewriter, value: SSAValue | None) -> None:
    """Erase the now unused integer ops that computed a reshape's shape operand (they would
    otherwise keep reading the reshaped tensor, on the host)."""
    work = [value.owner] if value is not None and isinstance(value.owner, Operation) else []
    while work:
        op = work.pop()
        if op.name not in _SHAPE_OPS or any(r.uses for r in op.results) or op.parent is None:
            continue
        if any(_is_int8(v) for v in op.results):
            continue
        operands = [v.owner for v in op.operands if isinstance(v.owner, Operation)]
        rewriter.erase(op)
        work.extend(operands)


class LegalizeReshape(_Legalize):
    """An int8 RESHAPE between static shapes of one quantization is `q.reshape` (the target
    moves no data for it when batch and channels stay); its shape operand, constant or
    computed (Keras' Flatten), is dropped with the ops that computed it."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: tfl.ReshapeOp, rewriter: PatternRewriter):
        x, t = op.input, op.output.type
        if not (_is_int8(x) and _is_int8(op.output)) or x.type.element_type != t.element_type:
            return
        shapes = (tuple(x.type.get_shape()), tuple(t.get_shape()))
        if any(d < 0 for s in shapes for d in s) or np.prod(shapes[0]) != np.prod(shapes[1]):
            return
        shape = op.shape
        new = q.ReshapeOp.create(operands=[x], result_types=[t])
        _replace_one(rewriter, op, new)
        _erase_dead_shape(rewriter, shape)


class LegalizeDenseOverTokens(RewritePattern):
    """FULLY_CONNECTED over tokens written as the converter writes `Dense` on `[N, T, C]`:
    `RESHAPE` to rows `[T, C]`, the matrix product without `keep_num_dims`, `RESHAPE` back to
    `[1, T, O]`. The rows are the tokens in order either way, so the `q.dense` group takes the
    tokens `[1, T, C]` and gives `[1, T, O]` (as with `keep_num_dims`), and both reshapes go
    with the ops that computed their shapes:

        %r = q.reshape %x : [1, T, C] -> [T, C]        %acc = q.dense %x, %w : -> [1, T, O]
        %acc = q.dense %r, %w : -> [T, O]          =>  ... q.bias_add, q.requantize, q.relu
        ... q.bias_add, q.requantize, q.relu           (on [1, T, O])
        %y = tfl.reshape %z, %shape : -> [1, T, O]

    Matched at the closing `tfl.reshape`, after the ops before it are legalized."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: tfl.ReshapeOp, rewriter: PatternRewriter):
        out = tuple(op.output.type.get_shape())
        if len(out) != 3 or out[0] != 1 or op.input.type.element_type != op.output.type.element_type:
            return
        chain: list[Operation] = []
        value = op.input
        while True:
            owner = value.owner
            if not isinstance(owner, q.ReluOp | q.RequantizeOp | q.BiasAddOp | q.DenseOp):
                return
            if len(list(value.uses)) != 1:
                return
            chain.append(owner)
            if isinstance(owner, q.DenseOp):
                break
            value = owner.operands[0]
        dense = chain[-1]
        rows = dense.operands[0]
        first = rows.owner
        if not isinstance(first, q.ReshapeOp) or len(list(rows.uses)) != 1:
            return
        tokens = first.operands[0]
        if tuple(tokens.type.get_shape()) != (1, out[1], rows.type.get_shape()[-1]):
            return
        if tuple(rows.type.get_shape()) != (out[1], rows.type.get_shape()[-1]):
            return
        new_ops: list[Operation] = []
        prev = tokens
        for old in reversed(chain):
            t = old.results[0].type
            operands = [prev, *old.operands[1:]]
            new = type(old).create(
                operands=operands, result_types=[TensorType(t.element_type, list(out))],
                properties=dict(old.properties), attributes=dict(old.attributes),
            )  # fmt: skip
            new.location = old.location
            new.results[0].name_hint = old.results[0].name_hint
            new_ops.append(new)
            prev = new.results[0]
        new_ops[-1].location = op.location
        new_ops[-1].results[0].name_hint = op.output.name_hint
        shape = op.shape
        rewriter.replace(op, new_ops)
        for old in chain:
            rewriter.erase(old)
        rewriter.erase(first)
        _erase_dead_shape(rewriter, shape)


class LegalizeStridedSlice(_Legalize):
    """An int8 STRIDED_SLICE with constant bounds, unit strides, one quantization and no axis
    added or removed is `q.slice`, the box it selects (Keras' Cropping2D)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: tfl.StridedSliceOp, rewriter: PatternRewriter):
        from qaccel.kernels.shape import strided_slice_plan

        x, t = op.input, op.output.type
        if not (_is_int8(x) and _is_int8(op.output)) or x.type.element_type != t.element_type:
            return
        bounds = [_const(v) for v in (op.begin, op.end, op.strides)]
        shape, out = tuple(x.type.get_shape()), tuple(t.get_shape())
        if any(b is None for b in bounds) or any(d < 0 for d in (*shape, *out)):
            return
        call = _static_call(op)
        if call is None:
            return
        call.inputs = [None, *bounds]
        try:
            eff_shape, ranges, out_shape = strided_slice_plan(call, shape)
        except (kernels.Refusal, kernels.KernelError):
            return
        if eff_shape != shape or out_shape != out or len(ranges) != len(shape):
            return
        begin = []
        for r, n in zip(ranges, out, strict=True):
            if len(r) != n or n < 1 or np.any(np.diff(r) != 1):
                return
            begin.append(int(r[0]))
        new = q.SliceOp.create(operands=[x], result_types=[t],
                               properties={"begin": q.i64_array(begin)})  # fmt: skip
        _replace_one(rewriter, op, new)


class LegalizeMaximumMinimum(_Legalize):
    """MAXIMUM / MINIMUM of an int8 tensor and a constant holding one value: a clamp
    (`q.relu`), when the result has the tensor's type. LiteRT compares the stored values
    whatever the quantization, so max(x, c) is x clamped to [c, 127] (min: [-128, c])."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter):
        if not isinstance(op, tfl.MaximumOp | tfl.MinimumOp):
            return
        for x, other in ((op.lhs, op.rhs), (op.rhs, op.lhs)):
            value = _const(other)
            if value is None or value.dtype != np.int8 or value.size == 0:
                continue
            v = int(value.reshape(-1)[0])
            if not np.all(value == v) or x.type != op.output.type or not _is_int8(x):
                continue
            if _static_call(op) is None:
                return
            lo, hi = (v, 127) if isinstance(op, tfl.MaximumOp) else (-128, v)
            new = q.ReluOp.create(
                operands=[x],
                result_types=[op.output.type],
                properties={"min": q.i32_attr(lo), "max": q.i32_attr(hi)},
            )
            _replace_one(rewriter, op, new)
            return


# --------------------------------------------------------------------------------------------
# Element-wise int8 ops as 256-entry tables

TABLE_OPS = ("RELU", "RELU6", "RELU_N1_TO_1", "RELU_0_TO_1", "LOGISTIC", "TANH", "HARD_SWISH",
             "LEAKY_RELU", "GELU", "QUANTIZE", "NEG", "SQRT", "RSQRT")  # fmt: skip
"""TFLite operators with one input that compute each int8 element from that element alone:
`legalize-tfl-to-q` replaces them by their table (`q.lut`) or a clamp (`q.relu`)."""

_INT8_DOMAIN = np.arange(-128, 128, dtype=np.int8)


def _kernel_name(op: Operation) -> str | None:
    if isinstance(op, tfl.OpaqueOp):
        return op.op_name.data
    return getattr(op, "TFLITE_NAME", None)


def element_table(op: Operation) -> np.ndarray | None:
    """The 256 int8 results of element-wise `op` for the inputs -128 .. 127, computed by its
    CPU kernel; None when `op` is not an int8 -> int8 op of `TABLE_OPS` or the kernel refuses
    some input."""
    name = _kernel_name(op)
    if name not in TABLE_OPS or name not in kernels.KERNELS:
        return None
    if len(op.operands) != 1 or len(op.results) != 1:
        return None
    x, y = op.operands[0], op.results[0]
    if not (_is_int8(x) and _is_int8(y)) or x.type.get_shape() != y.type.get_shape():
        return None
    call = _static_call(op)  # type: ignore[arg-type]
    if call is None:
        return None
    probe = kernels.OpCall(**{**call.__dict__, "inputs": [_INT8_DOMAIN.copy()],
                              "input_shapes": [(256,)], "output_shapes": [(256,)]})  # fmt: skip
    try:
        (table,) = kernels.run(name, probe)
    except (kernels.Refusal, kernels.KernelError, kernels.UnsupportedOp, ValueError):
        return None
    table = np.asarray(table)
    if table.shape != (256,) or table.dtype != np.int8:
        return None
    return table


class LegalizeTable(RewritePattern):
    """An element-wise int8 op of `TABLE_OPS`: `q.relu` when its table is a clamp, otherwise
    `q.lut` with the table."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter):
        if not isinstance(op, tfl.TflOp | tfl.OpaqueOp):
            return
        table = element_table(op)
        if table is None:
            return
        x, y = op.operands[0], op.results[0]
        lo, hi = int(table[0]), int(table[-1])
        if lo <= hi and np.array_equal(table, np.clip(_INT8_DOMAIN, lo, hi)):
            if (lo, hi) == (-128, 127) and x.type == y.type:
                rewriter.replace_all_uses_with(y, x)
                rewriter.erase(op)
                return
            new = q.ReluOp.create(operands=[x], result_types=[y.type],
                                  properties={"min": q.i32_attr(lo), "max": q.i32_attr(hi)})
        else:
            new = q.LutOp.create(operands=[x], result_types=[y.type],
                                 properties={"table": q.i32_array(table)})
        _replace_one(rewriter, op, new)


FLOAT_CHAIN_OPS = ("NEG", "ABS", "SQUARE", "SQRT", "RSQRT", "RELU", "RELU6", "RELU_N1_TO_1")
"""float32 element-wise operators a `DEQUANTIZE -> ... -> QUANTIZE` chain of one int8 input may
hold (each one IEEE operation per element, which the CPU kernels compute as LiteRT does)."""


def _probe(op: Operation, x: np.ndarray) -> np.ndarray | None:
    """`op`'s kernel on the 256 values `x` (as if its input were `[256]`), None if refused."""
    call = _static_call(op)  # type: ignore[arg-type]
    if call is None:
        return None
    probe = kernels.OpCall(**{**call.__dict__, "inputs": [x], "input_shapes": [(256,)],
                              "output_shapes": [(256,)]})  # fmt: skip
    try:
        (y,) = kernels.run(_kernel_name(op), probe)
    except (kernels.Refusal, kernels.KernelError, kernels.UnsupportedOp, ValueError):
        return None
    y = np.asarray(y)
    return y if y.shape == (256,) else None


class LegalizeFloatChain(RewritePattern):
    """`QUANTIZE(f(...(DEQUANTIZE(x))))` of one int8 input through float element-wise ops
    (`FLOAT_CHAIN_OPS`, e.g. the NEG of a layer norm's mean), each result used once: the chain
    sees only 256 input values, so it is one `q.lut` whose table is the chain's kernels run on
    them, exactly as LiteRT computes each element."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: tfl.QuantizeOp, rewriter: PatternRewriter):
        y = op.results[0]
        if not _is_int8(y) or len(op.operands) != 1:
            return
        chain: list[Operation] = [op]
        v = op.operands[0]
        while True:
            owner = v.owner
            if not isinstance(owner, Operation) or len(list(v.uses)) != 1:
                return
            if len(owner.operands) != 1 or len(owner.results) != 1:
                return
            if not isinstance(v.type, TensorType) or tensor_dtype(v.type) != np.float32 or \
                    v.type.get_shape() != y.type.get_shape():  # fmt: skip
                return
            chain.append(owner)
            if isinstance(owner, tfl.DequantizeOp):
                break
            if _kernel_name(owner) not in FLOAT_CHAIN_OPS:
                return
            v = owner.operands[0]
        x = chain[-1].operands[0]
        if not _is_int8(x) or len(chain) < 3 or x.type.get_shape() != y.type.get_shape():
            return
        values: np.ndarray | None = _INT8_DOMAIN.copy()
        for o in reversed(chain):
            if o.name != "tfl.dequantize" and _kernel_name(o) not in (*FLOAT_CHAIN_OPS, "QUANTIZE"):
                return
            values = _probe(o, values)
            if values is None:
                return
        if values.dtype != np.int8:
            return
        new = q.LutOp.create(operands=[x], result_types=[y.type],
                             properties={"table": q.i32_array(values)})  # fmt: skip
        new.location = op.location
        rewriter.insert(new, InsertPoint.before(op))
        rewriter.replace_all_uses_with(y, new.output)
        for o in chain:  # users before producers
            rewriter.erase(o)


_SHAPE_ARITHMETIC = (tfl.ShapeOp, tfl.StridedSliceOp, tfl.PackOp, tfl.GatherOp, tfl.SliceOp,
                     tfl.ConcatenationOp, tfl.ReduceProdOp)  # fmt: skip


def _shape_computation(value: SSAValue, stop: SSAValue) -> list[Operation] | None:
    """The ops computing `value` from constants and the static shape of `stop` (SHAPE of
    it), in producer order; None when it depends on anything else."""
    ops: list[Operation] = []
    todo = [value]
    while todo:
        v = todo.pop()
        owner = v.owner
        if isinstance(owner, tfl.ConstOp) or owner in ops:
            continue
        if not isinstance(owner, _SHAPE_ARITHMETIC):
            return None
        if isinstance(owner, tfl.ShapeOp):
            if owner.operands[0] != stop:
                return None
        else:
            todo.extend(owner.operands)
        ops.append(owner)
    return ops


class LegalizeMeanReshape(RewritePattern):
    """`RESHAPE` of a `q.mean` result (dimensions dropped) to the mean's shape with kept
    dimensions: the mean keeps them, and the reshape and its shape computation go."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: tfl.ReshapeOp, rewriter: PatternRewriter):
        mean = op.input.owner
        if not isinstance(mean, q.MeanOp):
            return
        in_shape = list(mean.input.type.get_shape())
        axes = {int(a) % len(in_shape) for a in mean.array_prop("axes")}
        kept = [1 if d in axes else n for d, n in enumerate(in_shape)]
        if list(op.output.type.get_shape()) != kept or kept == list(mean.output.type.get_shape()):
            return
        if op.output.type.element_type != mean.output.type.element_type:
            return
        chain: list[Operation] = []
        if op.shape is not None:
            found = _shape_computation(op.shape, mean.output)
            if found is None:
                return
            chain = found
        inside = {op, *chain}
        for o in chain:
            if any(use.operation not in inside for r in o.results for use in r.uses):
                return
        if any(use.operation not in inside for use in mean.output.uses):
            return
        new = q.MeanOp.create(operands=[mean.input], result_types=[op.output.type],
                              properties=dict(mean.properties))  # fmt: skip
        new.location = op.location
        rewriter.insert(new, InsertPoint.before(op))
        rewriter.replace_all_uses_with(op.output, new.output)
        rewriter.erase(op)
        pending = chain
        while pending:  # users before producers
            for o in [o for o in pending if not any(r.uses for r in o.results)]:
                rewriter.erase(o)
                pending.remove(o)
        rewriter.erase(mean)



class LegalizeResize(_Legalize):
    """An int8 RESIZE_NEAREST_NEIGHBOR or RESIZE_BILINEAR of one quantization (input and
    output types equal, as the converter makes them) is `q.resize_nearest_neighbor` /
    `q.resize_bilinear` with the same `align_corners` and `half_pixel_centers`; its size
    operand (constant, or computed: the static shapes were checked at import) goes:

        %y = tfl.resize_bilinear %x, %size {align_corners = false, half_pixel_centers = true}
    =>
        %y = q.resize_bilinear %x {align_corners = false, half_pixel_centers = true}

    Both compute on the stored int8 values (the reference kernels ignore the scales), so the
    rewrite is exact."""

    kind: type[tfl.ResizeNearestNeighborOp] | type[tfl.ResizeBilinearOp]

    def __init__(self, kind):
        self.kind = kind

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter):
        if not isinstance(op, self.kind) or self.legal_int8(op, op.input) is None:
            return
        if op.input.type.element_type != op.output.type.element_type:
            return
        shape, out = list(op.input.type.get_shape()), list(op.output.type.get_shape())
        size = _const(op.size)
        if len(shape) != 4 or len(out) != 4 or min(shape + out) < 1 or (
                size is not None and [int(d) for d in size.reshape(-1)] != out[1:3]):  # fmt: skip
            return
        new_kind = (q.ResizeBilinearOp if isinstance(op, tfl.ResizeBilinearOp)
                    else q.ResizeNearestNeighborOp)  # fmt: skip
        new = new_kind.create(operands=[op.input], result_types=[op.output.type], properties={
            "align_corners": IntegerAttr.from_bool(bool(op.options.get("align_corners"))),
            "half_pixel_centers": IntegerAttr.from_bool(
                bool(op.options.get("half_pixel_centers")))})  # fmt: skip
        size_value = op.size
        _replace_one(rewriter, op, new)
        _erase_dead_shape(rewriter, size_value)



class LegalizeTransposeConvTaps(_Legalize):
    """TRANSPOSE_CONV whose taps overlap (a kernel larger than its stride, e.g. a 3x3 or 4x4
    kernel at stride 2): the products of every tap as a 1x1 `q.conv2d` with `KH*KW*O` output
    channels (weights tap-major, no bias), `q.col2im` summing the taps that land on each
    output pixel (the reference kernel's int32 scratch accumulator), then the bias and the
    per-channel requantization of the reference kernel:

        %y = tfl.transpose_conv %shape, %w, %x, %b {stride_h = 2, stride_w = 2, ...}
    =>
        %taps = q.conv2d %x, %w_taps {strides = [1, 1], padding = [0, 0, 0, 0], ...}
        %acc  = q.col2im %taps {kernel = [3, 3], strides = [2, 2], padding = [top, left]}
        %sum  = q.bias_add %acc, %b
        %y    = q.requantize %sum {multiplier = (per channel), ...}

    Each tap's products are exact int32 sums, and the int32 sum of the taps wraps as the
    reference kernel's accumulator does, so the result is bit-exact. (A kernel equal to its
    stride is `LegalizeTransposeConv`'s, without the sum.)"""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: tfl.TransposeConvOp, rewriter: PatternRewriter):
        call = self.legal_int8(op, op.input, op.weights)
        if call is None:
            return
        w = _const(op.weights)
        if w is None or w.dtype != np.int8:
            return
        o = op.options
        sh, sw = int(o.get("stride_h", 1)), int(o.get("stride_w", 1))
        cout, kh, kw, cin = w.shape
        n, h, wd, c = op.input.type.get_shape()
        if (kh, kw) == (sh, sw) or n != 1 or c != cin:
            return
        from qaccel.kernels.gemm import transpose_conv_output_shape

        out_shape = tuple(transpose_conv_output_shape(call))
        if out_shape != tuple(op.output.type.get_shape()) or out_shape[3] != cout:
            return
        _, out_h, out_w, _ = out_shape
        padding = o.get("padding", "SAME")
        # ComputePaddingHeightWidth with the output as the forward convolution's input
        top = window_geometry(padding, out_h, kh, sh)[1]
        left = window_geometry(padding, out_w, kw, sw)[1]
        in_q, w_q = element_qparams(op.input.type), element_qparams(op.weights.type)
        out_q = element_qparams(op.output.type)
        if w_q is None or np.any(w_q.zero_point != 0):
            return
        taps = kh * kw
        w_taps = np.ascontiguousarray(w.transpose(1, 2, 0, 3).reshape(taps * cout, 1, 1, cin))
        weights = tfl.ConstOp(DenseIntOrFPElementsAttr(
            TensorType(i8, w_taps.shape), BytesAttr(w_taps.tobytes())))  # fmt: skip
        if op.weights.name_hint:
            weights.output.name_hint = f"{op.weights.name_hint}_taps"
        conv = q.Conv2DOp.create(
            operands=[op.input, weights.output],
            result_types=[TensorType(i32, [1, h, wd, taps * cout])],
            properties={
                "strides": q.i64_array([1, 1]), "dilations": q.i64_array([1, 1]),
                "padding": q.i64_array([0, 0, 0, 0]),
                "input_zero_point": q.i32_attr(in_q.zp), "filter_zero_point": q.i32_attr(0),
            },
        )  # fmt: skip
        col2im = q.Col2ImOp.create(
            operands=[conv.results[0]], result_types=[TensorType(i32, list(out_shape))],
            properties={"kernel": q.i64_array([kh, kw]), "strides": q.i64_array([sh, sw]),
                        "padding": q.i64_array([top, left])})  # fmt: skip
        ops: list[Operation] = [weights, conv, col2im]
        if not isinstance(op.bias.type, NoneType):
            bias = _const(op.bias)
            if bias is None or bias.dtype != np.int32:
                return
            acc = col2im.results[0]
            ops.append(q.BiasAddOp.create(operands=[acc, op.bias], result_types=[acc.type]))
        m, s_ = per_channel_multipliers(in_q, w_q, out_q, cout)
        arrays = _per_channel(np.asarray(m).reshape(-1), np.asarray(s_).reshape(-1))
        ops.append(_requantize(ops[-1].results[0], op.output.type, out_q.zp, **arrays))
        output_shape = op.output_shape
        rewriter.insert(weights, InsertPoint.before(op))
        _finish(rewriter, op, ops[1:], _activation_bounds(op))
        _erase_dead_shape(rewriter, output_shape)


# --------------------------------------------------------------------------------------------
# The attention core: TRANSPOSE, SOFTMAX and activation x activation BATCH_MATMUL


class LegalizeTranspose(_Legalize):
    """An int8 TRANSPOSE with a constant permutation is `q.transpose`."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: tfl.TransposeOp, rewriter: PatternRewriter):
        perm = _const(op.perm)
        if perm is None or op.input.type.element_type != op.output.type.element_type:
            return
        if self.legal_int8(op, op.input) is None:
            return
        rank = len(op.input.type.get_shape())
        perm = [int(p) % rank if rank else 0 for p in np.asarray(perm).reshape(-1)]
        if sorted(perm) != list(range(rank)):
            return
        new = q.TransposeOp.create(operands=[op.input], result_types=[op.output.type],
                                   properties={"perm": q.i64_array(perm)})  # fmt: skip
        perm_value = op.perm
        _replace_one(rewriter, op, new)
        _erase_dead_shape(rewriter, perm_value)


class LegalizeSoftmax(_Legalize):
    """An int8 -> int8 SOFTMAX is `q.softmax` with the reference kernel's fixed-point
    parameters (`softmax_params`)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: tfl.SoftmaxOp, rewriter: PatternRewriter):
        call = self.legal_int8(op, op.input)
        if call is None:
            return
        from qaccel.kernels.elementwise import softmax_params

        m, left_shift, diff_min = softmax_params(call)
        new = q.SoftmaxOp.create(operands=[op.input], result_types=[op.output.type],
                                 properties={"multiplier": q.i32_attr(m),
                                             "left_shift": q.i32_attr(left_shift),
                                             "diff_min": q.i32_attr(diff_min),
                                             "beta": op.properties["beta"]})  # fmt: skip
        _replace_one(rewriter, op, new)


class LegalizeBatchMatmul(_Legalize):
    """An int8 x int8 -> int8 BATCH_MATMUL is `q.batch_matmul`: the kernel's multiplier (the
    scale product in float, divided in double, `QuantizeMultiplier`)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: tfl.BatchMatMulOp, rewriter: PatternRewriter):
        call = self.legal_int8(op, op.x, op.y)
        if call is None:
            return
        from qaccel.kernels.gemm import legacy_scale_zp

        (l_s, l_zp), (r_s, r_zp), (o_s, o_zp) = (
            legacy_scale_zp(qp) for qp in (call.input_q[0], call.input_q[1], call.output_q[0]))
        real = float(np.float32(np.float32(l_s) * np.float32(r_s))) / float(np.float32(o_s))
        m, s = ar.quantize_multiplier_scalar(real)
        props = {"adj_x": int(bool(call.options.get("adj_x", False))),
                 "adj_y": int(bool(call.options.get("adj_y", False))),
                 "lhs_zero_point": l_zp, "rhs_zero_point": r_zp, "multiplier": m, "shift": s,
                 "output_zero_point": o_zp}  # fmt: skip
        new = q.BatchMatmulOp.create(operands=[op.x, op.y], result_types=[op.output.type],
                                     properties={k: q.i32_attr(v) for k, v in props.items()})
        _replace_one(rewriter, op, new)



# tfl op name (as in the `ops` option) -> pattern
PATTERNS: dict[str, Callable[[], RewritePattern]] = {
    "conv_2d": LegalizeConv2D,
    "depthwise_conv_2d": LegalizeDepthwiseConv2D,
    "fully_connected": LegalizeFullyConnected,
    "transpose_conv": LegalizeTransposeConv,
    "transpose_conv_taps": LegalizeTransposeConvTaps,
    "add": LegalizeAdd,
    "sub": LegalizeSub,
    "mul": LegalizeMul,
    "average_pool_2d": lambda: LegalizePool(tfl.AveragePool2DOp),
    "max_pool_2d": lambda: LegalizePool(tfl.MaxPool2DOp),
    "mean": LegalizeMean,
    "pad": lambda: LegalizePad(tfl.PadOp),
    "padv2": lambda: LegalizePad(tfl.PadV2Op),
    "concatenation": LegalizeConcatenation,
    # before "reshape": a global mean's reshape folds into the mean rather than becoming q.reshape
    "mean_reshape": LegalizeMeanReshape,
    # before "reshape": a FULLY_CONNECTED between reshapes to rows and back takes the tokens
    "dense_tokens": LegalizeDenseOverTokens,
    "reshape": LegalizeReshape,
    "strided_slice": LegalizeStridedSlice,
    "maximum": LegalizeMaximumMinimum,
    "minimum": LegalizeMaximumMinimum,
    "table": LegalizeTable,
    "transpose": LegalizeTranspose,
    "softmax": LegalizeSoftmax,
    "batch_matmul": LegalizeBatchMatmul,
    "resize_nearest_neighbor": lambda: LegalizeResize(tfl.ResizeNearestNeighborOp),
    "resize_bilinear": lambda: LegalizeResize(tfl.ResizeBilinearOp),
    "float_chain": LegalizeFloatChain,
    "squared_difference": LegalizeSquaredDifference,
}


@dataclass(frozen=True)
class LegalizeTflToQPass(ModulePass):
    """Rewrite int8 tfl ops into q ops carrying explicit integer arithmetic."""

    name = "legalize-tfl-to-q"

    ops: tuple[str, ...] = ()
    """Op kinds to legalize (tfl op names without `tfl.`, e.g. conv_2d,add; `table`: the
    element-wise ops of `TABLE_OPS`; `mean_reshape`: a global mean's reshape; `float_chain`: a
    DEQUANTIZE -> float -> QUANTIZE chain as one table); all when empty."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        unknown = [name for name in self.ops if name not in PATTERNS]
        if unknown:
            raise PassFailedException(
                f"legalize-tfl-to-q: unknown op kind '{unknown[0]}' in ops "
                f"(known: {', '.join(sorted(PATTERNS))})"
            )
        patterns = [PATTERNS[name]() for name in dict.fromkeys(self.ops or PATTERNS)]
        PatternRewriteWalker(
            GreedyRewritePatternApplier(patterns, dce_enabled=False), apply_recursively=False
        ).rewrite_module(op)
