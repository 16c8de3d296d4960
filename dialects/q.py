"""The `q` dialect: quantized operators that carry their integer arithmetic explicitly.

The method's "q operators": one level above the accelerator, below TFLite. Where a `tfl` op
derives its arithmetic from tensor scales at run time, a `q` op holds the integers that
arithmetic needs (zero points, fixed-point multipliers and shifts, explicit paddings,
activation bounds) as typed properties, so later passes can match, split and lower it
without knowing TFLite's rules. `legalize-tfl-to-q` computes them.

Accumulating ops (`q.conv2d`, `q.depthwise_conv2d`, `q.dense`) produce int32 accumulators;
`q.bias_add` adds an int32 bias along the last (channel) axis; `q.requantize` brings int32
back to int8; `q.relu` clamps to an activation range; `q.lut` maps each int8 value through a
256-entry table (any element-wise int8 -> int8 op: an int8 input has only 256 values). A TFLite convolution becomes:

    %acc = q.conv2d %x, %w {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>,
                            padding = array<i64: 1, 1, 1, 1>, input_zero_point = -1 : i32,
                            filter_zero_point = 0 : i32} : (...) -> tensor<1x8x8x16xi32>
    %b   = q.bias_add %acc, %bias : (...) -> tensor<1x8x8x16xi32>
    %y   = q.requantize %b {multiplier = array<i32: ...>, shift = array<i32: ...>,
                            input_zero_point = 0 : i32, output_zero_point = -128 : i32} : ...
    %r   = q.relu %y {min = -128 : i32, max = 127 : i32} : ...

Operands and results are tensors of integers or of `!quant.uniform` types; only their storage
matters to the arithmetic, the quantized types document it. Every op saturates its result to
the result's storage range; int32 results wrap as TFLite's int32 arithmetic does.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

import numpy as np
from xdsl.dialects.builtin import (
    I1,
    I32,
    BytesAttr,
    DenseArrayBase,
    FloatAttr,
    IntegerAttr,
    TensorType,
    f64,
    i32,
    i64,
)
from xdsl.ir import Attribute, Dialect
from xdsl.irdl import (
    IRDLOperation,
    ParsePropInAttrDict,
    operand_def,
    opt_prop_def,
    prop_def,
    result_def,
    traits_def,
    var_operand_def,
)
from qaccel.dialects.op_definition import irdl_op_definition  # formats built on first use
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException

from qaccel.dialects.types import tensor_dtype

# --------------------------------------------------------------------------------------------
# Property helpers


def i64_array(values: Sequence[int] | np.ndarray) -> DenseArrayBase:
    return _dense_array("<i8", np.asarray(values, dtype="<i8").tobytes())


def i32_array(values: Sequence[int] | np.ndarray) -> DenseArrayBase:
    return _dense_array("<i4", np.asarray(values, dtype="<i4").tobytes())


def f64_array(values: Sequence[float] | np.ndarray) -> DenseArrayBase:
    return _dense_array("<f8", np.asarray(values, dtype="<f8").tobytes())


_ARRAY_DTYPES = {i64: "<i8", i32: "<i4", f64: "<f8"}
_ARRAY_ELEMENTS = {dtype: element for element, dtype in _ARRAY_DTYPES.items()}
_ARRAY_DTYPES_BY_ID = {id(element): dtype for element, dtype in _ARRAY_DTYPES.items()}
"""The dtypes of this module's own `i64`, `i32` and `f64` by identity (they live as long as the
module, so no other object has their id): a lookup by value hashes the whole type, and the
passes ask for a property's values thousands of times (MobileNetV2: some 4,300)."""


@functools.lru_cache(maxsize=4096)
def _dense_array(dtype: str, data: bytes) -> DenseArrayBase:
    """One attribute per element type (by its dtype) and bytes (attributes are immutable: ops
    share them; the passes ask for the same strides, paddings, clamps and zero points again
    and again, MobileNetV2: 889 arrays, 342 distinct)."""
    return DenseArrayBase(_ARRAY_ELEMENTS[dtype], BytesAttr(data))


def array_values(attr: DenseArrayBase) -> np.ndarray:
    """A dense array property as a numpy array of its element type."""
    element = attr.elt_type
    dtype = _ARRAY_DTYPES_BY_ID.get(id(element))
    if dtype is None:  # an equal type made elsewhere (e.g. parsed)
        dtype = _ARRAY_DTYPES[element]
    return np.frombuffer(attr.data.data, dtype=dtype)


def i32_attr(value: int) -> IntegerAttr:
    return _i32_attr(int(value))


@functools.lru_cache(maxsize=4096)
def _i32_attr(value: int) -> IntegerAttr:
    """One attribute per value (MobileNetV2's passes ask for 337 zero points and bounds, 36
    distinct)."""
    return IntegerAttr(value, i32)


def storage_bounds(t: Attribute) -> tuple[int, int]:
    """The range of a tensor type's storage (int8: -128..127)."""
    info = np.iinfo(tensor_dtype(t))
    return int(info.min), int(info.max)


class QOp(IRDLOperation):
    """A `q` op: generic operand list, properties in the attribute dictionary."""

    irdl_options = (ParsePropInAttrDict(),)
    traits = traits_def(Pure())
    assembly_format = "operands attr-dict `:` functional-type(operands, results)"

    def int_prop(self, name: str) -> int:
        return self.properties[name].value.data  # type: ignore[attr-defined]

    def array_prop(self, name: str) -> np.ndarray:
        return array_values(self.properties[name])  # type: ignore[arg-type]


def _check_len(op: QOp, name: str, expected: int) -> None:
    got = len(op.array_prop(name))
    if got != expected:
        raise VerifyException(f"{op.name}: {name} needs {expected} values, got {got}")


def _check_positive(op: QOp, name: str) -> None:
    values = op.array_prop(name)
    if np.any(values < 1):
        raise VerifyException(f"{op.name}: {name} must be positive, got {values.tolist()}")


def _check_channels(op: QOp, names: Sequence[str], channels: int) -> None:
    for name in names:
        n = len(op.array_prop(name))
        if n not in (1, channels):
            raise VerifyException(
                f"{op.name}: {name} has {n} values for {channels} channels (need 1 or {channels})"
            )


# The shifts the kernels' MultiplyByQuantizedMultiplier defines: a left shift of an int32 by at
# most 31, a rounding right shift of the int64 high product by at most 62. (TFLite itself
# produces [-31, 30]; smaller shifts are exact here and refused by the accelerator lowering.)
MIN_SHIFT, MAX_SHIFT = -62, 31


def _check_shifts(op: QOp, name: str, values) -> None:
    values = np.atleast_1d(np.asarray(values, np.int64))
    bad = values[(values < MIN_SHIFT) | (values > MAX_SHIFT)]
    if bad.size:
        raise VerifyException(
            f"{op.name}: {name} {int(bad[0])} is outside [{MIN_SHIFT}, {MAX_SHIFT}], "
            "where TFLite's fixed-point rescaling is defined"
        )


class _WindowOp(QOp):
    strides = prop_def(DenseArrayBase)
    """[stride_h, stride_w]"""
    padding = prop_def(DenseArrayBase)
    """[top, bottom, left, right]: explicit padding."""

    def verify_window(self) -> None:
        _check_len(self, "strides", 2)
        _check_positive(self, "strides")
        _check_len(self, "padding", 4)
        if np.any(self.array_prop("padding") < 0):
            raise VerifyException(f"{self.name}: padding must not be negative")


class _ConvOp(_WindowOp):
    input = operand_def(TensorType)
    filter = operand_def(TensorType)
    output = result_def(TensorType)
    dilations = prop_def(DenseArrayBase)
    input_zero_point = prop_def(IntegerAttr[I32])
    filter_zero_point = prop_def(IntegerAttr[I32])

    def verify_(self) -> None:
        self.verify_window()
        _check_len(self, "dilations", 2)
        _check_positive(self, "dilations")
        if tensor_dtype(self.output.type) != np.int32:
            raise VerifyException(f"{self.name}: the result must be int32 accumulators")
        if len(self.input.type.get_shape()) != 4 or len(self.filter.type.get_shape()) != 4:
            raise VerifyException(f"{self.name}: input and filter must be 4-D")


@irdl_op_definition
class Conv2DOp(_ConvOp):
    """2-D convolution to int32 accumulators: `acc = Σ (w - wzp) * (x - xzp)`.

    NHWC input, OHWI filter (grouped when the input has a multiple of the filter's input
    channels). Padding taps count as the input zero point, i.e. contribute nothing.
    """

    name = "q.conv2d"


@irdl_op_definition
class DepthwiseConv2DOp(_ConvOp):
    """Depthwise convolution to int32 accumulators; filter `[1, KH, KW, C * depth_multiplier]`."""

    name = "q.depthwise_conv2d"
    depth_multiplier = prop_def(IntegerAttr[I32])


@irdl_op_definition
class DenseOp(QOp):
    """Matrix product to int32 accumulators: rows of the input (its last dimension is the
    filter's `I`) times `[O, I]` weights, `acc = Σ (w - wzp) * (x - xzp)`."""

    name = "q.dense"
    input = operand_def(TensorType)
    filter = operand_def(TensorType)
    output = result_def(TensorType)
    input_zero_point = prop_def(IntegerAttr[I32])
    filter_zero_point = prop_def(IntegerAttr[I32])

    def verify_(self) -> None:
        if tensor_dtype(self.output.type) != np.int32:
            raise VerifyException("q.dense: the result must be int32 accumulators")
        if len(self.filter.type.get_shape()) != 2:
            raise VerifyException("q.dense: the filter must be 2-D [O, I]")


@irdl_op_definition
class BiasAddOp(QOp):
    """int32 accumulators plus an int32 bias along the last axis (wrapping as int32 does)."""

    name = "q.bias_add"
    input = operand_def(TensorType)
    bias = operand_def(TensorType)
    output = result_def(TensorType)

    def verify_(self) -> None:
        channels = self.input.type.get_shape()[-1]
        if self.bias.type.get_shape() != (channels,):
            raise VerifyException(
                f"q.bias_add: bias shape {list(self.bias.type.get_shape())} does not match "
                f"the {channels} channels of the input"
            )


@irdl_op_definition
class RequantizeOp(QOp):
    """Rescale integers to the result's quantization, per tensor or per last-axis channel.

    Fixed point (`multiplier`, `shift`: TFLite's `MultiplyByQuantizedMultiplier`, shift > 0
    is a left shift): `y = MBQM(x - input_zero_point, M, shift) + output_zero_point`.
    Double (`scale`, the current reference FULLY_CONNECTED):
    `y = int32(round(double(x - input_zero_point) * scale)) + output_zero_point`.
    Either way the result saturates to the result's storage range.
    """

    name = "q.requantize"
    input = operand_def(TensorType)
    output = result_def(TensorType)
    multiplier = opt_prop_def(DenseArrayBase)
    shift = opt_prop_def(DenseArrayBase)
    scale = opt_prop_def(DenseArrayBase)
    input_zero_point = prop_def(IntegerAttr[I32])
    output_zero_point = prop_def(IntegerAttr[I32])

    @property
    def is_double(self) -> bool:
        return self.scale is not None

    def verify_(self) -> None:
        channels = self.input.type.get_shape()[-1] if self.input.type.get_shape() else 1
        if self.is_double:
            if self.multiplier is not None or self.shift is not None:
                raise VerifyException("q.requantize: give either scale or multiplier+shift")
            _check_channels(self, ["scale"], channels)
            return
        if self.multiplier is None or self.shift is None:
            raise VerifyException("q.requantize: needs multiplier and shift, or scale")
        _check_channels(self, ["multiplier", "shift"], channels)
        if len(self.array_prop("multiplier")) != len(self.array_prop("shift")):
            raise VerifyException("q.requantize: multiplier and shift differ in length")
        if np.any(self.array_prop("multiplier") < 0):
            raise VerifyException("q.requantize: multipliers must not be negative")
        _check_shifts(self, "shift", self.array_prop("shift"))


@irdl_op_definition
class ReluOp(QOp):
    """Clamp to the activation range `[min, max]` (TFLite's fused activation, quantized)."""

    name = "q.relu"
    input = operand_def(TensorType)
    output = result_def(TensorType)
    min = prop_def(IntegerAttr[I32])
    max = prop_def(IntegerAttr[I32])

    def verify_(self) -> None:
        if self.int_prop("min") > self.int_prop("max"):
            raise VerifyException(
                f"q.relu: min {self.int_prop('min')} is above max {self.int_prop('max')}"
            )


@irdl_op_definition
class LutOp(QOp):
    """Element-wise table lookup, int8 to int8: `y = table[x + 128]`.

    An element-wise op whose input is int8 computes one of 256 values per element, so any
    such op (LOGISTIC, TANH, HARD_SWISH, a RELU that changes the scale, ...) is exactly its
    table, computed at compile time by the op's bit-exact kernel (`legalize-tfl-to-q`).
    `table` holds 256 values of the result's storage range, indexed by the input's storage
    value plus 128."""

    name = "q.lut"
    input = operand_def(TensorType)
    output = result_def(TensorType)
    table = prop_def(DenseArrayBase)

    def verify_(self) -> None:
        for what, t in (("input", self.input.type), ("result", self.output.type)):
            if tensor_dtype(t) != np.int8:
                raise VerifyException(f"q.lut: the {what} must be int8, got {t}")
        if self.input.type.get_shape() != self.output.type.get_shape():
            raise VerifyException("q.lut: input and result shapes differ")
        if self.properties["table"].elt_type != i32:  # type: ignore[attr-defined]
            raise VerifyException("q.lut: table must be an array<i32: ...>")
        table = self.array_prop("table")
        if table.size != 256:
            raise VerifyException(f"q.lut: table needs 256 values, got {table.size}")
        lo, hi = storage_bounds(self.output.type)
        if table.min() < lo or table.max() > hi:
            raise VerifyException(
                f"q.lut: table values span [{int(table.min())}, {int(table.max())}], outside "
                f"the result's [{lo}, {hi}]"
            )


class _AddSubOp(QOp):
    lhs = operand_def(TensorType)
    rhs = operand_def(TensorType)
    output = result_def(TensorType)
    lhs_zero_point = prop_def(IntegerAttr[I32])
    rhs_zero_point = prop_def(IntegerAttr[I32])
    left_shift = prop_def(IntegerAttr[I32])
    lhs_multiplier = prop_def(IntegerAttr[I32])
    lhs_shift = prop_def(IntegerAttr[I32])
    rhs_multiplier = prop_def(IntegerAttr[I32])
    rhs_shift = prop_def(IntegerAttr[I32])
    output_multiplier = prop_def(IntegerAttr[I32])
    output_shift = prop_def(IntegerAttr[I32])
    output_zero_point = prop_def(IntegerAttr[I32])

    def verify_(self) -> None:
        # TFLite's int8 ADD/SUB divide by a power of two at the end; a left shift there
        # (an output multiplier above 1) is undefined behaviour in LiteRT, so not ours.
        if self.int_prop("output_shift") > 0:
            raise VerifyException(
                f"{self.name}: output_shift must not be positive, got {self.int_prop('output_shift')}"
            )
        for name in ("lhs_shift", "rhs_shift", "output_shift"):
            _check_shifts(self, name, self.int_prop(name))


@irdl_op_definition
class AddOp(_AddSubOp):
    """Quantized addition with broadcasting, TFLite's way: each input is centred, shifted
    left by `left_shift` and rescaled (`MBQM`), the sum is rescaled to the output."""

    name = "q.add"


@irdl_op_definition
class SubOp(_AddSubOp):
    """Quantized subtraction with broadcasting, as `q.add` with the difference."""

    name = "q.sub"


@irdl_op_definition
class MulOp(QOp):
    """Quantized multiplication: `MBQM((a - azp) * (b - bzp), M, shift) + output_zero_point`."""

    name = "q.mul"
    lhs = operand_def(TensorType)
    rhs = operand_def(TensorType)
    output = result_def(TensorType)
    lhs_zero_point = prop_def(IntegerAttr[I32])
    rhs_zero_point = prop_def(IntegerAttr[I32])
    multiplier = prop_def(IntegerAttr[I32])
    shift = prop_def(IntegerAttr[I32])
    output_zero_point = prop_def(IntegerAttr[I32])

    def verify_(self) -> None:
        _check_shifts(self, "shift", self.int_prop("shift"))


class _PoolOp(_WindowOp):
    input = operand_def(TensorType)
    output = result_def(TensorType)
    filter = prop_def(DenseArrayBase)
    """[filter_h, filter_w]"""

    def verify_(self) -> None:
        self.verify_window()
        _check_len(self, "filter", 2)
        _check_positive(self, "filter")


@irdl_op_definition
class AvgPool2DOp(_PoolOp):
    """Average of the in-image taps (padding does not count), halves away from zero."""

    name = "q.avg_pool2d"


@irdl_op_definition
class MaxPool2DOp(_PoolOp):
    """Maximum of the in-image taps."""

    name = "q.max_pool2d"


@irdl_op_definition
class MeanOp(QOp):
    """Quantized mean over `axes`, TFLite's reference formula:
    `MBQM(Σx - input_zero_point * num_elements, M, shift) + output_zero_point`, where M and
    shift already include the division by `num_elements`."""

    name = "q.mean"
    input = operand_def(TensorType)
    output = result_def(TensorType)
    axes = prop_def(DenseArrayBase)
    num_elements = prop_def(IntegerAttr[I32])
    input_zero_point = prop_def(IntegerAttr[I32])
    multiplier = prop_def(IntegerAttr[I32])
    shift = prop_def(IntegerAttr[I32])
    output_zero_point = prop_def(IntegerAttr[I32])


@irdl_op_definition
class PadOp(QOp):
    """Pad with `pad_value`; `padding` holds (before, after) for each dimension."""

    name = "q.pad"
    input = operand_def(TensorType)
    output = result_def(TensorType)
    padding = prop_def(DenseArrayBase)
    pad_value = prop_def(IntegerAttr[I32])

    def verify_(self) -> None:
        rank = len(self.input.type.get_shape())
        _check_len(self, "padding", 2 * rank)


@irdl_op_definition
class ConcatOp(QOp):
    """Concatenate along `axis` (inputs and result share one quantization)."""

    name = "q.concat"
    inputs = var_operand_def(TensorType)
    output = result_def(TensorType)
    axis = prop_def(IntegerAttr[I32])


@irdl_op_definition
class ReshapeOp(QOp):
    """Reshape to the result's static shape, one quantization: the elements keep their order
    (a RESHAPE whose shape operand, constant or computed, the static types already fix)."""

    name = "q.reshape"
    input = operand_def(TensorType)
    output = result_def(TensorType)

    def verify_(self) -> None:
        a, b = self.input.type, self.output.type
        if a.element_type != b.element_type:
            raise VerifyException(f"{self.name}: the input and result element types differ")
        shapes = (tuple(a.get_shape()), tuple(b.get_shape()))
        if any(d < 0 for s in shapes for d in s) or int(np.prod(shapes[0])) != int(
            np.prod(shapes[1])
        ):  # fmt: skip
            raise VerifyException(
                f"{self.name}: {list(shapes[0])} and {list(shapes[1])} must be static shapes "
                "of the same number of elements"
            )


@irdl_op_definition
class SliceOp(QOp):
    """The box of the result's shape starting at `begin` (one quantization; a STRIDED_SLICE
    with unit strides that keeps every dimension, e.g. Keras' Cropping2D)."""

    name = "q.slice"
    input = operand_def(TensorType)
    output = result_def(TensorType)
    begin = prop_def(DenseArrayBase)

    def verify_(self) -> None:
        a, b = self.input.type, self.output.type
        if a.element_type != b.element_type:
            raise VerifyException(f"{self.name}: the input and result element types differ")
        shape, out = list(a.get_shape()), list(b.get_shape())
        begin = self.array_prop("begin").tolist()
        if len(begin) != len(shape) or len(out) != len(shape) or any(
            s < 0 or o < 1 or g < 0 or g + o > s for s, o, g in zip(shape, out, begin)
        ):  # fmt: skip
            raise VerifyException(
                f"{self.name}: a {out} box at {begin} does not lie inside {shape}"
            )


@irdl_op_definition
class DepthToSpaceOp(QOp):
    """NHWC channel `(dy * b + dx) * C + c` of pixel (y, x) moves to pixel (b*y + dy, b*x + dx),
    channel c (`b` the block size), one quantization: DEPTH_TO_SPACE, and the scatter of a
    TRANSPOSE_CONV whose kernel is its stride (its taps, computed as channels, land on
    distinct output pixels)."""

    name = "q.depth_to_space"
    input = operand_def(TensorType)
    output = result_def(TensorType)
    block_size = prop_def(IntegerAttr[I32])

    def verify_(self) -> None:
        a, b = self.input.type, self.output.type
        if a.element_type != b.element_type:
            raise VerifyException(f"{self.name}: the input and result element types differ")
        k = self.int_prop("block_size")
        shape, out = list(a.get_shape()), list(b.get_shape())
        if k < 1 or len(shape) != 4 or out != [shape[0], shape[1] * k, shape[2] * k,
                                               shape[3] // (k * k)] or shape[3] % (k * k):
            raise VerifyException(f"{self.name}: {out} is not {shape} with {k}x{k} channel "
                                  "blocks moved into pixels")  # fmt: skip


@irdl_op_definition
class TransposeOp(QOp):
    """Permute the dimensions by `perm` (one quantization: TRANSPOSE of an int8 tensor)."""

    name = "q.transpose"
    input = operand_def(TensorType)
    output = result_def(TensorType)
    perm = prop_def(DenseArrayBase)

    def verify_(self) -> None:
        a, b = self.input.type, self.output.type
        if a.element_type != b.element_type:
            raise VerifyException(f"{self.name}: the input and result element types differ")
        shape, out = list(a.get_shape()), list(b.get_shape())
        perm = self.array_prop("perm").tolist()
        if sorted(perm) != list(range(len(shape))) or out != [shape[p] for p in perm]:
            raise VerifyException(f"{self.name}: {out} is not {shape} permuted by {perm}")


@irdl_op_definition
class SoftmaxOp(QOp):
    """int8 softmax along the last axis, the reference kernel's fixed point (output scale
    1/256, zero point -128): each value's difference to its row's maximum, from `diff_min` on,
    scaled by `multiplier` after `left_shift` (`PreprocessSoftmaxScaling`) into Q5.26, its
    exponential in Q0.31, the row's sum in Q12, its reciprocal, and each exponential times it;
    values below `diff_min` give -128."""

    name = "q.softmax"
    input = operand_def(TensorType)
    output = result_def(TensorType)
    multiplier = prop_def(IntegerAttr[I32])
    left_shift = prop_def(IntegerAttr[I32])
    diff_min = prop_def(IntegerAttr[I32])
    beta = opt_prop_def(FloatAttr)
    """The SOFTMAX's beta, kept for its TFLite form when it stays on the CPU."""

    def verify_(self) -> None:
        for what, t in (("input", self.input.type), ("result", self.output.type)):
            if tensor_dtype(t) != np.int8:
                raise VerifyException(f"{self.name}: the {what} must be int8, got {t}")
        if self.input.type.get_shape() != self.output.type.get_shape():
            raise VerifyException(f"{self.name}: input and result shapes differ")
        if not 0 <= self.int_prop("left_shift") <= 31 or self.int_prop("multiplier") < 0:
            raise VerifyException(f"{self.name}: multiplier must not be negative and left_shift "
                                  "lie in [0, 31]")  # fmt: skip


@irdl_op_definition
class BatchMatmulOp(QOp):
    """int8 activation x activation product of the last two dimensions, batch dimensions
    broadcast (BATCH_MATMUL; `adj_x` / `adj_y` transpose an operand's last two dimensions):
    `MBQM(Σ (l - lhs_zero_point) * (r - rhs_zero_point), M, shift) + output_zero_point`, the
    sum wrapping as int32."""

    name = "q.batch_matmul"
    lhs = operand_def(TensorType)
    rhs = operand_def(TensorType)
    output = result_def(TensorType)
    adj_x = prop_def(IntegerAttr[I32])
    adj_y = prop_def(IntegerAttr[I32])
    lhs_zero_point = prop_def(IntegerAttr[I32])
    rhs_zero_point = prop_def(IntegerAttr[I32])
    multiplier = prop_def(IntegerAttr[I32])
    shift = prop_def(IntegerAttr[I32])
    output_zero_point = prop_def(IntegerAttr[I32])

    def verify_(self) -> None:
        for what, t in (("lhs", self.lhs.type), ("rhs", self.rhs.type),
                        ("result", self.output.type)):  # fmt: skip
            if tensor_dtype(t) != np.int8:
                raise VerifyException(f"{self.name}: the {what} must be int8, got {t}")
        _check_shifts(self, "shift", self.int_prop("shift"))
        ls, rs = list(self.lhs.type.get_shape()), list(self.rhs.type.get_shape())
        out = list(self.output.type.get_shape())
        if not (2 <= len(ls) <= 5 and 2 <= len(rs) <= 5):
            raise VerifyException(f"{self.name}: operands must have rank 2 to 5")
        adj_x, adj_y = bool(self.int_prop("adj_x")), bool(self.int_prop("adj_y"))
        rows, depth_l = (ls[-1], ls[-2]) if adj_x else (ls[-2], ls[-1])
        depth_r, cols = (rs[-1], rs[-2]) if adj_y else (rs[-2], rs[-1])
        try:
            batch = list(np.broadcast_shapes(tuple(ls[:-2]), tuple(rs[:-2])))
        except ValueError:
            batch = None
        if depth_l != depth_r or batch is None or out != [*batch, rows, cols]:
            raise VerifyException(f"{self.name}: {ls} x {rs} (adj_x={int(adj_x)}, "
                                  f"adj_y={int(adj_y)}) is not {out}")  # fmt: skip


class _ResizeOp(QOp):
    """Shared by the resizes: NHWC, H and W to the result's, batch and channels kept, one
    quantization (the reference kernels move or interpolate stored values)."""

    input = operand_def(TensorType)
    output = result_def(TensorType)
    align_corners = prop_def(IntegerAttr[I1])
    half_pixel_centers = prop_def(IntegerAttr[I1])

    def flags(self) -> tuple[bool, bool]:
        """(align_corners, half_pixel_centers)."""
        return bool(self.int_prop("align_corners")), bool(self.int_prop("half_pixel_centers"))

    def verify_(self) -> None:
        a, b = self.input.type, self.output.type
        if a.element_type != b.element_type:
            raise VerifyException(f"{self.name}: the input and result element types differ")
        shape, out = list(a.get_shape()), list(b.get_shape())
        if len(shape) != 4 or len(out) != 4 or (out[0], out[3]) != (shape[0], shape[3]) or \
                min(out[1:3] + shape[1:3]) < 1:  # fmt: skip
            raise VerifyException(f"{self.name}: {out} is not {shape} resized in H and W")


@irdl_op_definition
class ResizeNearestNeighborOp(_ResizeOp):
    """RESIZE_NEAREST_NEIGHBOR: each output pixel a copy of the input pixel the reference
    kernel's `GetNearestNeighbor` picks (float32 coordinates, `align_corners` rounding,
    `half_pixel_centers` offset)."""

    name = "q.resize_nearest_neighbor"


@irdl_op_definition
class ResizeBilinearOp(_ResizeOp):
    """RESIZE_BILINEAR of int8: the reference kernel's integer interpolation (10 fractional
    bits per axis, the four products summed, rounded half away from zero by 2^20)."""

    name = "q.resize_bilinear"

    def verify_(self) -> None:
        super().verify_()
        if all(self.flags()):
            raise VerifyException(f"{self.name}: align_corners and half_pixel_centers cannot "
                                  "both be true")  # fmt: skip


@irdl_op_definition
class Col2ImOp(QOp):
    """The scatter-add of a transposed convolution's taps: int32 input `[N, H, W, KH*KW*O]`
    (channel `(ky*KW + kx)*O + o` the products of tap (ky, kx) for output channel o, as a 1x1
    convolution over the taps computes them) into int32 `[N, OH, OW, O]`: element
    (n, iy, ix, tap) adds to pixel (iy*sh - pad_top + ky, ix*sw - pad_left + kx), taps outside
    the result dropped, sums wrapping as int32 (TRANSPOSE_CONV's scratch accumulator before
    its bias and requantization)."""

    name = "q.col2im"
    input = operand_def(TensorType)
    output = result_def(TensorType)
    kernel = prop_def(DenseArrayBase)
    strides = prop_def(DenseArrayBase)
    padding = prop_def(DenseArrayBase)
    """[top, left]: where the result's window starts in the full scatter."""

    def verify_(self) -> None:
        for name in ("kernel", "strides", "padding"):
            _check_len(self, name, 2)
        _check_positive(self, "kernel")
        _check_positive(self, "strides")
        if np.any(self.array_prop("padding") < 0):
            raise VerifyException(f"{self.name}: padding must not be negative")
        a, b = self.input.type, self.output.type
        if tensor_dtype(a) != np.int32 or tensor_dtype(b) != np.int32:
            raise VerifyException(f"{self.name}: input and result must be int32 accumulators")
        shape, out = list(a.get_shape()), list(b.get_shape())
        kh, kw = (int(v) for v in self.array_prop("kernel"))
        if len(shape) != 4 or len(out) != 4 or out[0] != shape[0] or \
                shape[3] != kh * kw * out[3] or min(out) < 1:  # fmt: skip
            raise VerifyException(f"{self.name}: {out} does not take the {kh}x{kw} taps of "
                                  f"{shape}")  # fmt: skip


@irdl_op_definition
class SquaredDifferenceOp(QOp):
    """Quantized squared difference with broadcasting, TFLite's way (SQUARED_DIFFERENCE):
    each input is centred, shifted left by `left_shift` (7) and rescaled (`MBQM`), the square
    of their difference is rescaled to the output."""

    name = "q.squared_difference"
    lhs = operand_def(TensorType)
    rhs = operand_def(TensorType)
    output = result_def(TensorType)
    lhs_zero_point = prop_def(IntegerAttr[I32])
    rhs_zero_point = prop_def(IntegerAttr[I32])
    left_shift = prop_def(IntegerAttr[I32])
    lhs_multiplier = prop_def(IntegerAttr[I32])
    lhs_shift = prop_def(IntegerAttr[I32])
    rhs_multiplier = prop_def(IntegerAttr[I32])
    rhs_shift = prop_def(IntegerAttr[I32])
    output_multiplier = prop_def(IntegerAttr[I32])
    output_shift = prop_def(IntegerAttr[I32])
    output_zero_point = prop_def(IntegerAttr[I32])

    def verify_(self) -> None:
        for name in ("lhs_shift", "rhs_shift", "output_shift"):
            _check_shifts(self, name, self.int_prop(name))
            if self.int_prop(name) > 0:
                raise VerifyException(
                    f"{self.name}: {name} must not be positive (multipliers below one), got "
                    f"{self.int_prop(name)}"
                )
        if not 0 <= self.int_prop("left_shift") <= 15:
            raise VerifyException(
                f"{self.name}: left_shift must be in [0, 15], got {self.int_prop('left_shift')}"
            )


Q_OPS = (
    Conv2DOp, DepthwiseConv2DOp, DenseOp, BiasAddOp, RequantizeOp, ReluOp, LutOp, AddOp, SubOp,
    MulOp, AvgPool2DOp, MaxPool2DOp, MeanOp, PadOp, ConcatOp, ReshapeOp, SliceOp, DepthToSpaceOp,
    ResizeNearestNeighborOp, ResizeBilinearOp, Col2ImOp,
)  # fmt: skip
Q_OPS += (TransposeOp, SoftmaxOp, BatchMatmulOp)
Q_OPS += (SquaredDifferenceOp,)
Q = Dialect("q", list(Q_OPS), [])
