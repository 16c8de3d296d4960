"""The `accel` dialect: tensors in the accelerator's blocked layout, and the accelerator's ops.

The accelerator computes on blocks: its GEMM core multiplies a `1 x BLOCK_IN` row of inputs
by a `BLOCK_IN x BLOCK_OUT` weight tile, and its vector ALU works on rows of `BLOCK_OUT`
accumulators (BLOCK_IN = BLOCK_OUT = 16 in VTA's default configuration). Tensors it reads and
writes are therefore *packed*: the channel dimension is cut into blocks that become the
innermost dimension, padded up to a whole block, as TVM's VTA flow does (NCHW1n16c,
OIHW16o16i). From our NHWC / OHWI tensors:

    activations  [N, H, W, C]       -> [N, ceil(C/B), H, W, 1, B]        (NCHW1n16c)
                 [N, C]             -> [N, ceil(C/B), 1, B]
    weights      [O, KH, KW, I]     -> [ceil(O/B), ceil(I/B), KH, KW, B, B]  (OIHW16o16i)
                 [O, I]             -> [ceil(O/B), ceil(I/B), B, B]

`accel.pack` and `accel.unpack` convert between the two. Like MLIR's `linalg.pack` /
`linalg.unpack` they describe a general tiling, so one pair of ops covers every layout above
(`Packing.activations` and `Packing.weights` build the usual ones): each dimension listed in
`inner_dims_pos` is cut into tiles of the size given in `inner_tiles`, the tile indices stay in
place as outer dimensions, permuted by `outer_dims_perm`, and the tile contents follow as the
innermost dimensions, in `inner_dims_pos` order. The block size is therefore a property of the
op (an `inner_tiles` entry), never a constant of the dialect:

    %p = accel.pack %x padding_value(-1) outer_dims_perm = [0, 3, 1, 2] inner_dims_pos = [0, 3]
         inner_tiles = [1, 16] : tensor<1x8x8x20x!q> -> tensor<1x2x8x8x1x16x!q>
    %y = accel.unpack %p outer_dims_perm = [0, 3, 1, 2] inner_dims_pos = [0, 3]
         inner_tiles = [1, 16] : tensor<1x2x8x8x1x16x!q> -> tensor<1x8x8x20x!q>

Packed tensors are ordinary builtin tensors whose element type is the unpacked tensor's,
`!quant.uniform` included: packing moves elements, it does not change what they mean. (A
per-axis quantized type, e.g. of packed weights, keeps describing the axis of the unpacked
tensor.) The shape tells the layout; `accel.unpack`'s result type says how much padding to drop.

Compute ops on packed tensors (`COMPUTE_OPS`, produced by `lower-q-to-accel`) describe what
the accelerator computes:

- GEMM core, int8 in, int32 accumulators out: `accel.conv2d_zp` (padding holds the input zero
  point; strides, dilations, groups of channel blocks; optionally a preloaded bias) and
  `accel.dense_zp`;
- vector ALU on int32 accumulators, each lane-wise with one constant per tensor or per lane:
  `accel.bias_add_zp` (the zero-point-fused bias), `accel.shift_left`, `accel.round_multiply`
  (gemmlowp's rounding doubling high multiply), `accel.round_rshift` (rounding divide by a power
  of two), and `accel.add` / `accel.mul` / `accel.min` / `accel.max` (by a constant or another
  tensor, broadcast by whole rows); window and spatial reductions `accel.max_pool2d`,
  `accel.sum_pool2d`, `accel.reduce_sum`;
- moving data: `accel.widen` (int8 -> int32, LOAD ACC8), `accel.narrow` (int32 -> int8 keeping
  the low bits, STORE OUT: the IR clamps first), `accel.pad`, `accel.concat`;
- `accel.host_requantize`: LiteRT's double-precision FULLY_CONNECTED requantization, run by the
  host on accumulators the accelerator stored; `accel.lut`: an element-wise int8 table, looked
  up by the host on int8 data the accelerator stored.

Their canonicalization patterns live in `dialects/accel_canonicalization.py`;
`interpreter/accel_semantics.py` executes every op bit-exactly.

The ops stay generic: grouping them into one accelerator's layers and scheduling those is the
`vta` dialect's business (`dialects/vta.py`: `vta.layer` and its schedule attributes).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping, Sequence
from typing import ClassVar

import numpy as np
from qaccel.dialects.q import array_values, f64_array, i32_array, i64_array
from qaccel.dialects.quant import UniformQuantizedType, storage_range
from qaccel.kernels.layout import Packing
from xdsl.dialects.builtin import (
    I32,
    I64,
    BoolAttr,
    DenseArrayBase,
    DictionaryAttr,
    FloatAttr,
    Float64Type,
    IntegerAttr,
    IntegerType,
    StringAttr,
    TensorType,
    i32,
    i64,
)
from xdsl.ir import Attribute, Dialect, Operation, ParametrizedAttribute, SSAValue
from xdsl.irdl import (
    IRDLOperation,
    ParsePropInAttrDict,
    VarConstraint,
    base,
    irdl_attr_definition,
    operand_def,
    opt_operand_def,
    opt_prop_def,
    prop_def,
    result_def,
    traits_def,
    var_operand_def,
)
from qaccel.dialects.op_definition import irdl_op_definition  # formats built on first use
from xdsl.pattern_rewriter import RewritePattern
from xdsl.traits import HasCanonicalizationPatternsTrait, Pure
from xdsl.utils.exceptions import VerifyException

PACKED_FUNCTION_ATTR = "accel.packed"
"""Unit attribute `insert-pack-unpack` puts on an accelerator function once its arguments and
results are packed (so the pass leaves it alone when run again)."""

# --------------------------------------------------------------------------------------------
# Layouts


def _values(attr: DenseArrayBase) -> tuple[int, ...]:
    return tuple(int(v) for v in array_values(attr))


def packing_properties(packing: Packing) -> dict[str, Attribute]:
    """The `accel.pack` / `accel.unpack` properties of this layout (no `outer_dims_perm`
    when it is the identity)."""
    return dict(_packing_properties(packing))


@functools.lru_cache(maxsize=256)
def _packing_properties(packing: Packing) -> dict[str, Attribute]:
    """`packing_properties`, built once per layout (attributes are immutable: ops share
    them)."""
    props = {
        "inner_dims_pos": i64_array(packing.inner_dims_pos),
        "inner_tiles": i64_array(packing.inner_tiles),
    }
    if packing.outer_dims_perm != tuple(range(packing.rank)):
        props["outer_dims_perm"] = i64_array(packing.outer_dims_perm)
    return props


def packed_type(t: TensorType, packing: Packing) -> TensorType:
    """`t` with its shape packed by `packing`, same element type."""
    return TensorType(t.element_type, packing.packed_shape(t.get_shape()))


def default_padding_value(t: Attribute) -> int:
    """The value that fills the padding when packing a tensor of type `t`: its zero point when
    it is quantized (so padded lanes hold the real value 0.0, as a channel of zeros would), else
    0 (int32 accumulators: adding a zero accumulator changes nothing)."""
    element = t.element_type if isinstance(t, TensorType) else t
    if isinstance(element, UniformQuantizedType):
        zero_points = element.qparams.zero_point
        if np.all(zero_points == zero_points[0]):
            return int(zero_points[0])
    return 0


# --------------------------------------------------------------------------------------------
# Ops


def _build(op: IRDLOperation, operands: list[SSAValue], result_types: list[Attribute],
           properties: dict[str, Attribute]) -> None:  # fmt: skip
    """`IRDLOperation.__init__` for an `accel` op without variadic segments, regions or
    successors, given its operands flat: the same op, without the generic argument building
    (most of an op's construction time; the lowering builds thousands)."""
    Operation.__init__(op, operands=operands, result_types=result_types, properties=properties)


class AccelOp(IRDLOperation):
    """An `accel` op: properties in the attribute dictionary, no side effects."""

    irdl_options = (ParsePropInAttrDict(),)
    traits = traits_def(Pure())
    assembly_format = "operands attr-dict `:` functional-type(operands, results)"

    def int_prop(self, name: str) -> int:
        return self.properties[name].value.data  # type: ignore[attr-defined]


def _storage(element: Attribute) -> IntegerType | None:
    if isinstance(element, UniformQuantizedType):
        return element.storage_type
    return element if isinstance(element, IntegerType) else None


class _LayoutOp(AccelOp):
    input = operand_def(TensorType)
    output = result_def(TensorType)
    inner_dims_pos = prop_def(DenseArrayBase[I64])
    inner_tiles = prop_def(DenseArrayBase[I64])
    outer_dims_perm = opt_prop_def(DenseArrayBase[I64])

    @property
    def packing(self) -> Packing:
        rank = len(self.plain_type.get_shape())
        perm = (
            _values(self.outer_dims_perm)
            if self.outer_dims_perm is not None
            else tuple(range(rank))
        )
        return Packing(_values(self.inner_dims_pos), _values(self.inner_tiles), perm)

    @property
    def plain_type(self) -> TensorType:
        raise NotImplementedError

    @property
    def packed_value_type(self) -> TensorType:
        raise NotImplementedError

    def verify_(self) -> None:
        plain, packed = self.plain_type, self.packed_value_type
        if plain.element_type != packed.element_type:
            raise VerifyException(
                f"{self.name}: element types differ ({plain.element_type} and "
                f"{packed.element_type})"
            )
        if _storage(plain.element_type) is None:
            raise VerifyException(
                f"{self.name}: packs integer or quantized tensors, not {plain.element_type}"
            )
        shape = plain.get_shape()
        if any(d < 0 for d in (*shape, *packed.get_shape())):
            raise VerifyException(f"{self.name}: needs static shapes")
        if self.outer_dims_perm is not None and len(_values(self.outer_dims_perm)) != len(shape):
            raise VerifyException(
                f"{self.name}: outer_dims_perm has {len(_values(self.outer_dims_perm))} entries "
                f"for a rank-{len(shape)} tensor"
            )
        packing = self.packing
        if (error := packing.error()) is not None:
            raise VerifyException(f"{self.name}: {error}")
        expected = packing.packed_shape(shape)
        if packed.get_shape() != expected:
            raise VerifyException(
                f"{self.name}: packing {list(shape)} gives {list(expected)}, "
                f"not {list(packed.get_shape())}"
            )


@irdl_op_definition
class PackOp(_LayoutOp):
    """Copy a tensor into a blocked layout (see the module docstring), padding each tiled
    dimension up to a whole number of tiles with `padding_value`.

    `padding_value` is required when some tiled dimension is not a multiple of its tile, and
    must fit the element's storage type; `insert-pack-unpack` uses the zero point of a
    quantized tensor (see `default_padding_value`).
    """

    name = "accel.pack"
    padding_value = opt_prop_def(IntegerAttr[I32])
    assembly_format = (
        "$input (`padding_value` `(` $padding_value^ `)`)? "
        "(`outer_dims_perm` `=` $outer_dims_perm^)? `inner_dims_pos` `=` $inner_dims_pos "
        "`inner_tiles` `=` $inner_tiles attr-dict `:` type($input) `->` type($output)"
    )

    def __init__(self, value, packing: Packing, padding_value: int | None = None):
        t = value.type
        props = packing_properties(packing)
        if padding_value is not None:
            props["padding_value"] = IntegerAttr(int(padding_value), i32)
        super().__init__(operands=[value], result_types=[packed_type(t, packing)], properties=props)

    @property
    def plain_type(self) -> TensorType:
        return self.input.type  # type: ignore[return-value]

    @property
    def packed_value_type(self) -> TensorType:
        return self.output.type  # type: ignore[return-value]

    def verify_(self) -> None:
        super().verify_()
        storage = _storage(self.input.type.element_type)
        if self.padding_value is None:
            if self.packing.needs_padding(self.input.type.get_shape()):
                raise VerifyException(
                    "accel.pack: needs a padding_value: a tiled dimension is not a multiple "
                    "of its tile"
                )
            return
        lo, hi = storage_range(storage)
        value = self.padding_value.value.data
        if not lo <= value <= hi:
            raise VerifyException(
                f"accel.pack: padding_value {value} does not fit the storage type {storage} "
                f"[{lo}, {hi}]"
            )


@irdl_op_definition
class UnpackOp(_LayoutOp):
    """Copy a blocked tensor back to the plain layout of the result type, dropping the padding
    (the inverse of `accel.pack` with the same properties)."""

    name = "accel.unpack"
    assembly_format = (
        "$input (`outer_dims_perm` `=` $outer_dims_perm^)? `inner_dims_pos` `=` "
        "$inner_dims_pos `inner_tiles` `=` $inner_tiles attr-dict "
        "`:` type($input) `->` type($output)"
    )

    def __init__(self, value, packing: Packing, result_type: TensorType):
        _build(self, [SSAValue.get(value)], [result_type], packing_properties(packing))

    @property
    def plain_type(self) -> TensorType:
        return self.output.type  # type: ignore[return-value]

    @property
    def packed_value_type(self) -> TensorType:
        return self.input.type  # type: ignore[return-value]


# --------------------------------------------------------------------------------------------
# Compute ops
#
# They work on packed activations `[N, C/B, d1, ..., 1, B]` (`Packing.activations`): a value
# "per lane" is one per channel lane, `C/B * B` of them (padded channels included), and a
# per-tensor value is a single one. int8 data is what the DMA moves; int32 accumulators are what
# the GEMM core produces and the vector ALU works on (`accel.widen` / `accel.narrow` are LOAD
# ACC8 / STORE OUT). Padded lanes carry no meaning: no op mixes them into real lanes (weights
# for padded input channels are zero).

INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1


class AccelCanonicalization(HasCanonicalizationPatternsTrait):
    """The `accel` op's canonicalization patterns, imported when first asked for (xDSL's lazy
    idiom): `dialects/accel_canonicalization.py` defines them over these op classes."""

    def get_patterns(self, op: type[Operation]) -> tuple[RewritePattern, ...]:
        from qaccel.dialects.accel_canonicalization import patterns_of

        return patterns_of(op.name)

    @classmethod
    def get_canonicalization_patterns(cls) -> tuple[RewritePattern, ...]:
        from qaccel.dialects.accel_canonicalization import all_patterns

        return all_patterns()


def storage_width(t: Attribute) -> int | None:
    """The bit width of a tensor type's integer (or quantized) storage, else None."""
    element = t.element_type if isinstance(t, TensorType) else t
    storage = _storage(element)
    return None if storage is None else storage.width.data


def packed_lanes(shape: Sequence[int]) -> int:
    """The channel lanes of a packed activation `[N, C/B, ..., 1, B]`: `C/B * B`."""
    return int(shape[1]) * int(shape[-1])


def per_lane(values, lanes: int, fill=0, *, spread: bool = True,
             channels: int | None = None) -> np.ndarray:  # fmt: skip
    """A per-tensor or per-channel parameter as `lanes` values: one value stands for the
    first `channels` lanes (default all; with `spread=False` it stays one value), per-channel
    values are padded to `lanes` with `fill`."""
    v = np.asarray(values).reshape(-1)
    if v.size == 1:
        if not spread:
            return v
        v = np.broadcast_to(v, (lanes if channels is None else channels,))
    if v.size == lanes:
        return v
    return np.concatenate([v, np.full(lanes - v.size, fill, dtype=v.dtype)])


def lane_values(values: np.ndarray, shape: Sequence[int]) -> np.ndarray:
    """One value per tensor or per lane, shaped to broadcast against a packed activation of
    `shape`: `[1, C/B, 1, ..., 1, B]`."""
    values = np.asarray(values)
    if values.size == 1:
        return values.reshape(())
    rank = len(shape)
    return values.reshape([1, shape[1]] + [1] * (rank - 3) + [shape[-1]])


def _check_packed(op: AccelOp, what: str, t: Attribute, width: int | str) -> tuple[int, ...]:
    """`t` is a packed activation whose storage is `width` bits ("narrow": below 32, "any":
    any integer storage)."""
    if not isinstance(t, TensorType):
        raise VerifyException(f"{op.name}: {what} must be a tensor, got {t}")
    shape = tuple(t.get_shape())
    if len(shape) < 4 or shape[-2] != 1 or any(d < 0 for d in shape):
        raise VerifyException(
            f"{op.name}: {what} must be a static packed activation [N, C/B, ..., 1, B], got "
            f"{list(shape)}"
        )
    got = storage_width(t)
    if width == "narrow":
        ok, expected = got is not None and got < 32, "integers narrower than 32 bits"
    elif width == "any":
        ok, expected = got is not None, "integers"
    else:
        ok, expected = got == width, f"{width}-bit integers"
    if not ok:
        raise VerifyException(f"{op.name}: {what} must hold {expected}, got {t.element_type}")
    return shape


def _check_lanes(
    op: AccelOp, name: str, values: np.ndarray, shape: Sequence[int], bounds=None
) -> None:
    lanes = packed_lanes(shape)
    if len(values) not in (1, lanes):
        raise VerifyException(
            f"{op.name}: {name} has {len(values)} values; needs 1 (per tensor) or {lanes} "
            f"(per lane: {shape[1]} blocks of {shape[-1]})"
        )
    if (
        bounds is not None
        and len(values)
        and (values.min() < bounds[0] or values.max() > bounds[1])
    ):
        raise VerifyException(
            f"{op.name}: {name} must be in [{bounds[0]}, {bounds[1]}], got values in "
            f"[{int(values.min())}, {int(values.max())}]"
        )


def _check_same_shape(op: AccelOp, a: TensorType, b: TensorType) -> None:
    if a.get_shape() != b.get_shape():
        raise VerifyException(
            f"{op.name}: result shape {list(b.get_shape())} differs from the input's "
            f"{list(a.get_shape())}"
        )


class _ComputeOp(AccelOp):
    def array_prop(self, name: str) -> np.ndarray:
        return array_values(self.properties[name])  # type: ignore[arg-type]


class _LaneOp(_ComputeOp):
    """int32 accumulators combined lane-wise with a constant (one per tensor or per lane)."""

    T: ClassVar = VarConstraint("T", base(TensorType))
    input = operand_def(T)
    output = result_def(T)
    traits = traits_def(Pure(), AccelCanonicalization())
    VALUES: ClassVar[str] = ""
    BOUNDS: ClassVar[tuple[int, int] | None] = None

    def __init__(self, value: SSAValue | Operation, values: Sequence[int] | np.ndarray):
        v = SSAValue.get(value)
        _build(self, [v], [v.type], {self.VALUES: i32_array(values)})

    @property
    def values(self) -> np.ndarray:
        return self.array_prop(self.VALUES)

    def verify_(self) -> None:
        shape = _check_packed(self, "the input", self.input.type, 32)
        _check_lanes(self, self.VALUES, self.values, shape, self.BOUNDS)


@irdl_op_definition
class BiasAddZpOp(_LaneOp):
    """Add the zero-point-fused bias to int32 accumulators, one value per output lane
    (wrapping): `qfused_bias = qbias - zp_in * Σw`, folded at compile time, so that the GEMM
    over raw (uncentred) inputs plus this bias is the centred convolution plus its bias. On the
    accelerator, an ALU ADD with a LOAD ACC parameter row (method's variant (a))."""

    name = "accel.bias_add_zp"
    bias = prop_def(DenseArrayBase[I32])
    VALUES: ClassVar[str] = "bias"
    assembly_format = "$input `by` $bias attr-dict `:` type($input)"


@irdl_op_definition
class ShiftLeftOp(_LaneOp):
    """`x << shift` keeping the low 32 bits (ALU SHR by a negative amount), shift in [0, 31]:
    the left shift TFLite's `MultiplyByQuantizedMultiplier` applies *before* the rounding
    multiply when its shift is positive, with the same int32 wraparound."""

    name = "accel.shift_left"
    shift = prop_def(DenseArrayBase[I32])
    VALUES: ClassVar[str] = "shift"
    BOUNDS: ClassVar[tuple[int, int] | None] = (0, 31)
    assembly_format = "$input `by` $shift attr-dict `:` type($input)"


@irdl_op_definition
class RoundMultiplyOp(_LaneOp):
    """gemmlowp's `SaturatingRoundingDoublingHighMul(x, M)` by a multiplier per tensor or per
    lane (ALU RDMUL): `(x * M + 2^30) >> 31`, rounding as gemmlowp does (positive ties up,
    negative ties toward zero), `INT32_MIN * INT32_MIN` saturating to `INT32_MAX`."""

    name = "accel.round_multiply"
    multiplier = prop_def(DenseArrayBase[I32])
    VALUES: ClassVar[str] = "multiplier"
    assembly_format = "$input `by` $multiplier attr-dict `:` type($input)"


@irdl_op_definition
class RoundRShiftOp(_LaneOp):
    """gemmlowp's `RoundingDivideByPOT(x, shift)`, shift in [0, 31] per tensor or per lane
    (ALU RSHR): an arithmetic shift right rounding halves away from zero."""

    name = "accel.round_rshift"
    shift = prop_def(DenseArrayBase[I32])
    VALUES: ClassVar[str] = "shift"
    BOUNDS: ClassVar[tuple[int, int] | None] = (0, 31)
    assembly_format = "$input `by` $shift attr-dict `:` type($input)"


class _BinaryOp(_ComputeOp):
    """Lane-wise `f(lhs, rhs)` on int32 accumulators, where `rhs` is either a tensor (same
    shape, or broadcast along any dimension of size 1: the ALU repeats its rows) or a constant
    `by [...]`, one per tensor (an immediate) or per lane (a parameter row)."""

    T: ClassVar = VarConstraint("T", base(TensorType))
    lhs = operand_def(T)
    rhs = opt_operand_def(TensorType)
    output = result_def(T)
    value = opt_prop_def(DenseArrayBase[I32])
    traits = traits_def(Pure(), AccelCanonicalization())
    assembly_format = (
        "$lhs (`,` $rhs^)? (`by` $value^)? attr-dict `:` type($lhs) (`,` type($rhs)^)?"
    )

    def __init__(
        self,
        lhs: SSAValue | Operation,
        rhs: SSAValue | Operation | None = None,
        value: Sequence[int] | np.ndarray | None = None,
    ):
        lhs = SSAValue.get(lhs)
        props = {} if value is None else {"value": i32_array(value)}
        _build(self, [lhs] if rhs is None else [lhs, SSAValue.get(rhs)], [lhs.type], props)

    @property
    def values(self) -> np.ndarray | None:
        return None if self.value is None else array_values(self.value)

    def verify_(self) -> None:
        shape = _check_packed(self, "lhs", self.lhs.type, 32)
        if (self.rhs is None) == (self.value is None):
            raise VerifyException(f"{self.name}: needs either a tensor rhs or a constant (by)")
        if self.value is not None:
            _check_lanes(self, "value", array_values(self.value), shape)
            return
        rhs_shape = _check_packed(self, "rhs", self.rhs.type, 32)
        if (
            len(rhs_shape) != len(shape)
            or any(r not in (1, s) for r, s in zip(rhs_shape, shape))
            or rhs_shape[-1] != shape[-1]
        ):
            raise VerifyException(
                f"{self.name}: rhs {list(rhs_shape)} does not broadcast to lhs {list(shape)} "
                "(same rank, each dimension equal or 1, whole blocks)"
            )


@irdl_op_definition
class AddOp(_BinaryOp):
    """`lhs + rhs` modulo 2^32 (ALU ADD)."""

    name = "accel.add"


@irdl_op_definition
class MulOp(_BinaryOp):
    """`lhs * rhs` modulo 2^32, the low 32 bits of the product (ALU MUL)."""

    name = "accel.mul"


@irdl_op_definition
class MinOp(_BinaryOp):
    """`min(lhs, rhs)` (ALU MIN)."""

    name = "accel.min"


@irdl_op_definition
class MaxOp(_BinaryOp):
    """`max(lhs, rhs)` (ALU MAX)."""

    name = "accel.max"


class _ConvertOp(_ComputeOp):
    """int8 <-> int32 between the DMA's data and the ALU's accumulators, same shape."""

    input = operand_def(TensorType)
    output = result_def(TensorType)
    traits = traits_def(Pure(), AccelCanonicalization())
    assembly_format = "$input attr-dict `:` type($input) `->` type($output)"
    WIDTHS: ClassVar[tuple[int | str, int | str]] = ("narrow", 32)

    def __init__(self, value: SSAValue | Operation, result_type: TensorType):
        _build(self, [SSAValue.get(value)], [result_type], {})

    def verify_(self) -> None:
        _check_packed(self, "the input", self.input.type, self.WIDTHS[0])
        _check_packed(self, "the result", self.output.type, self.WIDTHS[1])
        _check_same_shape(self, self.input.type, self.output.type)  # type: ignore[arg-type]


@irdl_op_definition
class WidenOp(_ConvertOp):
    """Sign-extend narrow integers (int8 activations) to int32 accumulators, as LOAD ACC8
    does, so the ALU can work on them."""

    name = "accel.widen"


@irdl_op_definition
class NarrowOp(_ConvertOp):
    """Keep the low bits of int32 accumulators (STORE OUT: truncation, **no saturation**; the
    IR clamps with `accel.max` / `accel.min` first, as the hardware must)."""

    name = "accel.narrow"
    WIDTHS: ClassVar[tuple[int | str, int | str]] = (32, "narrow")


def _window_extent(size: int, pad: int, kernel: int, stride: int, dilation: int) -> int:
    return (size + pad - ((kernel - 1) * dilation + 1)) // stride + 1


@irdl_op_definition
class Conv2DZpOp(_ComputeOp):
    """2-D convolution of raw int8 inputs on the GEMM core, the spatial padding holding
    `pad_value` (the input zero point: SETPAD before the padded LOAD INP), to int32:
    `acc[o] = bias[o] + Σ w[o, tap, i] * x_padded[tap, i]` modulo 2^32.

    Input `[N, I/B, H, W, 1, B]`, filter `[O/B, I/B/groups, KH, KW, B, B]` (OIHW16o16i tiles,
    `[out lane][in lane]`), result `[N, O/B, OH, OW, 1, B]`. `groups` splits the channel
    *blocks*: output block `ob` reads the `I/B/groups` input blocks of group
    `ob // (O/B/groups)` (a depthwise convolution is one group per block, with diagonal tiles).
    With `bias` the accumulators start from it instead of zero (method's variant (b): the bias
    rows are loaded into the accumulator and the GEMM accumulates onto them). Subtracting the
    zero-point term `zp_in * Σw` is `accel.bias_add_zp`'s job (or is folded into `bias`).
    """

    name = "accel.conv2d_zp"
    traits = traits_def(Pure(), AccelCanonicalization())
    input = operand_def(TensorType)
    filter = operand_def(TensorType)
    output = result_def(TensorType)
    strides = prop_def(DenseArrayBase[I64])
    dilations = prop_def(DenseArrayBase[I64])
    padding = prop_def(DenseArrayBase[I64])
    """[top, bottom, left, right]"""
    pad_value = prop_def(IntegerAttr[I32])
    groups = opt_prop_def(IntegerAttr[I64])
    bias = opt_prop_def(DenseArrayBase[I32])
    assembly_format = (
        "$input `,` $filter `pad_value` `(` $pad_value `)` `strides` `=` $strides "
        "`dilations` `=` $dilations `padding` `=` $padding (`groups` `=` $groups^)? "
        "(`bias` `=` $bias^)? attr-dict `:` type($input) `,` type($filter) `->` type($output)"
    )

    def __init__(
        self,
        value: SSAValue | Operation,
        filter: SSAValue | Operation,
        result_type: TensorType,
        *,
        strides: Sequence[int],
        dilations: Sequence[int],
        padding: Sequence[int],
        pad_value: int,
        groups: int = 1,
        bias: Sequence[int] | np.ndarray | None = None,
    ):
        props: dict[str, Attribute] = {
            "strides": i64_array(strides),
            "dilations": i64_array(dilations),
            "padding": i64_array(padding),
            "pad_value": IntegerAttr(int(pad_value), i32),
        }
        if groups != 1:
            props["groups"] = IntegerAttr(int(groups), i64)
        if bias is not None:
            props["bias"] = i32_array(bias)
        super().__init__(
            operands=[SSAValue.get(value), SSAValue.get(filter)],
            result_types=[result_type],
            properties=props,
        )

    @property
    def group_count(self) -> int:
        return 1 if self.groups is None else self.groups.value.data

    def verify_(self) -> None:
        n, ib, h, w, _, block = _check_packed(self, "the input", self.input.type, 8)
        out = _check_packed(self, "the result", self.output.type, 32)
        ft = self.filter.type
        fshape = tuple(ft.get_shape()) if isinstance(ft, TensorType) else ()
        if len(fshape) != 6 or fshape[4:] != (block, block) or storage_width(ft) != 8:
            raise VerifyException(
                f"{self.name}: the filter must be int8 [O/B, I/B/groups, KH, KW, {block}, "
                f"{block}] tiles, got {ft}"
            )
        if len(out) != 6 or out[-1] != block:
            raise VerifyException(f"{self.name}: the result must be [N, O/B, OH, OW, 1, {block}]")
        ob, ibg, kh, kw = fshape[:4]
        groups = self.group_count
        if groups < 1 or ib != ibg * groups or ob % groups:
            raise VerifyException(
                f"{self.name}: {groups} groups do not split {ib} input blocks into groups of "
                f"{ibg} and {ob} output blocks evenly"
            )
        checked = {}  # as Python ints: the few values are compared one by one
        for name, n_values in (("strides", 2), ("dilations", 2), ("padding", 4)):
            values = checked[name] = self.array_prop(name).tolist()
            if len(values) != n_values or min(values) < (0 if name == "padding" else 1):
                raise VerifyException(
                    f"{self.name}: {name} needs {n_values} "
                    f"{'non-negative' if name == 'padding' else 'positive'} values, got "
                    f"{values}"
                )
        sh, sw = checked["strides"]
        dh, dw = checked["dilations"]
        top, bottom, left, right = checked["padding"]
        expected = (
            n, ob, _window_extent(h, top + bottom, kh, sh, dh),
            _window_extent(w, left + right, kw, sw, dw), 1, block,
        )  # fmt: skip
        if out != expected:
            raise VerifyException(
                f"{self.name}: the result must be {list(expected)}, got {list(out)}"
            )
        lo, hi = storage_range(_storage(self.input.type.element_type))  # type: ignore[arg-type]
        if not lo <= self.pad_value.value.data <= hi:
            raise VerifyException(
                f"{self.name}: pad_value {self.pad_value.value.data} does not fit the input's "
                f"storage [{lo}, {hi}]"
            )
        if self.bias is not None:
            _check_lanes(self, "bias", array_values(self.bias), out)


@irdl_op_definition
class DenseZpOp(_ComputeOp):
    """Matrix product of raw int8 rows on the GEMM core, to int32:
    `acc[o] = bias[o] + Σ w[o, i] * x[i]` modulo 2^32.

    Input `[N, I/B, d1, ..., 1, B]` (every position but the channel blocks is a row), filter
    `[O/B, I/B, B, B]`, result `[N, O/B, d1, ..., 1, B]`, or, as TFLite's FULLY_CONNECTED
    without `keep_num_dims` gives it, the rows flattened in `(n, d1, ...)` order,
    `[N * d1 * ..., O/B, 1, B]`; `bias` as for `accel.conv2d_zp`. A filter `[N, O/B, I/B, B, B]`
    holds one set of tiles per row group n (a BATCH_MATMUL's stacked product, the tiles
    `accel.bmm_operand` gathers): row group n is multiplied by its own tiles.
    """

    name = "accel.dense_zp"
    input = operand_def(TensorType)
    filter = operand_def(TensorType)
    output = result_def(TensorType)
    bias = opt_prop_def(DenseArrayBase[I32])
    assembly_format = (
        "$input `,` $filter (`bias` `=` $bias^)? attr-dict "
        "`:` type($input) `,` type($filter) `->` type($output)"
    )

    def __init__(
        self,
        value: SSAValue | Operation,
        filter: SSAValue | Operation,
        result_type: TensorType,
        bias: Sequence[int] | np.ndarray | None = None,
    ):
        super().__init__(
            operands=[SSAValue.get(value), SSAValue.get(filter)],
            result_types=[result_type],
            properties={} if bias is None else {"bias": i32_array(bias)},
        )

    def verify_(self) -> None:
        shape = _check_packed(self, "the input", self.input.type, 8)
        out = _check_packed(self, "the result", self.output.type, 32)
        block = shape[-1]
        ft = self.filter.type
        fshape = tuple(ft.get_shape()) if isinstance(ft, TensorType) else ()
        if len(fshape) == 5 and fshape[0] == shape[0] and storage_width(ft) == 8:
            fshape = fshape[1:]  # one filter per row group: no flattened result
            if fshape[1:] == (shape[1], block, block) and out != (shape[0], fshape[0], *shape[2:]):
                raise VerifyException(
                    f"{self.name}: the result must be {[shape[0], fshape[0], *shape[2:]]}, got "
                    f"{list(out)}")  # fmt: skip
        if len(fshape) != 4 or fshape[1:] != (shape[1], block, block) or storage_width(ft) != 8:
            raise VerifyException(
                f"{self.name}: the filter must be int8 [O/B, {shape[1]}, {block}, {block}] "
                f"tiles for this input, got {ft}"
            )
        expected = (shape[0], fshape[0], *shape[2:])
        flattened = (int(np.prod(shape[:1] + shape[2:-2])), fshape[0], 1, block)
        if out not in (expected, flattened):
            also = f" or, rows flattened, {list(flattened)}" if flattened != expected else ""
            raise VerifyException(
                f"{self.name}: the result must be {list(expected)}{also}, got {list(out)}"
            )
        if self.bias is not None:
            _check_lanes(self, "bias", array_values(self.bias), out)


@irdl_op_definition
class HostRequantizeOp(_ComputeOp):
    """Double-precision requantization **on the host CPU**, for LiteRT's reference
    FULLY_CONNECTED: `clamp(int32(round(double(x - input_zero_point) * scale)) +
    output_zero_point, min, max)`, halves away from zero, `scale` per tensor or per lane.

    The accelerator stores the int32 accumulators (STORE ACC) and the host finishes: no integer
    multiply-shift reproduces the double product's rounding for every accumulator (see
    `lower-q-to-accel`). `[min, max]` is the clamp (saturation and activation range)."""

    name = "accel.host_requantize"
    input = operand_def(TensorType)
    output = result_def(TensorType)
    scale = prop_def(DenseArrayBase[Float64Type])
    input_zero_point = prop_def(IntegerAttr[I32])
    output_zero_point = prop_def(IntegerAttr[I32])
    min = prop_def(IntegerAttr[I32])
    max = prop_def(IntegerAttr[I32])
    traits = traits_def(Pure(), AccelCanonicalization())
    assembly_format = (
        "$input `scale` `=` $scale `zero_points` `(` $input_zero_point `,` $output_zero_point "
        "`)` `clamp` `(` $min `,` $max `)` attr-dict `:` type($input) `->` type($output)"
    )

    def __init__(
        self,
        value: SSAValue | Operation,
        result_type: TensorType,
        scale: Sequence[float] | np.ndarray,
        zero_points: tuple[int, int],
        clamp: tuple[int, int],
    ):
        super().__init__(
            operands=[SSAValue.get(value)],
            result_types=[result_type],
            properties={
                "scale": f64_array(scale),
                "input_zero_point": IntegerAttr(int(zero_points[0]), i32),
                "output_zero_point": IntegerAttr(int(zero_points[1]), i32),
                "min": IntegerAttr(int(clamp[0]), i32),
                "max": IntegerAttr(int(clamp[1]), i32),
            },
        )

    def verify_(self) -> None:
        shape = _check_packed(self, "the input", self.input.type, 32)
        _check_packed(self, "the result", self.output.type, "any")
        _check_same_shape(self, self.input.type, self.output.type)  # type: ignore[arg-type]
        _check_lanes(self, "scale", array_values(self.scale), shape)
        lo, hi = storage_range(_storage(self.output.type.element_type))  # type: ignore[arg-type]
        low, high = self.int_prop("min"), self.int_prop("max")
        if not lo <= low <= high <= hi:
            raise VerifyException(
                f"{self.name}: clamp [{low}, {high}] must be ordered and within the result's "
                f"storage [{lo}, {hi}]"
            )


@irdl_op_definition
class LutOp(_ComputeOp):
    """Element-wise table lookup of packed int8 data **on the host CPU**: `y = table[x + 128]`
    (`q.lut`: an element-wise int8 op as its 256 results, computed at compile time).

    The ALU has no indexed load, so the program looks the table up between two layers, on
    data the accelerator stored in DRAM (an exact host step, like `accel.host_requantize`):
    the accelerator function does not split around it. Padding lanes are looked up too
    (their values are never unpacked)."""

    name = "accel.lut"
    input = operand_def(TensorType)
    output = result_def(TensorType)
    table = prop_def(DenseArrayBase[I32])
    traits = traits_def(Pure())
    assembly_format = "$input `table` `=` $table attr-dict `:` type($input) `->` type($output)"

    def __init__(self, value: SSAValue | Operation, result_type: TensorType,
                 table: Sequence[int] | np.ndarray):  # fmt: skip
        super().__init__(
            operands=[SSAValue.get(value)],
            result_types=[result_type],
            properties={"table": i32_array(table)},
        )

    def verify_(self) -> None:
        _check_packed(self, "the input", self.input.type, 8)
        _check_packed(self, "the result", self.output.type, 8)
        _check_same_shape(self, self.input.type, self.output.type)  # type: ignore[arg-type]
        table = self.array_prop("table")
        if table.size != 256:
            raise VerifyException(f"{self.name}: table needs 256 values, got {table.size}")
        lo, hi = storage_range(_storage(self.output.type.element_type))  # type: ignore[arg-type]
        if table.min() < lo or table.max() > hi:
            raise VerifyException(
                f"{self.name}: table values span [{int(table.min())}, {int(table.max())}], "
                f"outside the result's storage [{lo}, {hi}]"
            )


class _PoolOp(_ComputeOp):
    input = operand_def(TensorType)
    output = result_def(TensorType)
    window = prop_def(DenseArrayBase[I64])
    strides = prop_def(DenseArrayBase[I64])
    assembly_format = (
        "$input `window` `=` $window `strides` `=` $strides attr-dict "
        "`:` type($input) `->` type($output)"
    )

    def __init__(
        self,
        value: SSAValue | Operation,
        result_type: TensorType,
        window: Sequence[int],
        strides: Sequence[int],
    ):
        super().__init__(
            operands=[SSAValue.get(value)],
            result_types=[result_type],
            properties={"window": i64_array(window), "strides": i64_array(strides)},
        )

    def verify_(self) -> None:
        n, cb, h, w, _, block = _check_packed(self, "the input", self.input.type, 32)
        out = _check_packed(self, "the result", self.output.type, 32)
        window, strides = self.array_prop("window"), self.array_prop("strides")
        if len(window) != 2 or len(strides) != 2 or np.any(window < 1) or np.any(strides < 1):
            raise VerifyException(
                f"{self.name}: window and strides need 2 positive values each, got "
                f"{window.tolist()} and {strides.tolist()}"
            )
        if window[0] > h or window[1] > w:
            raise VerifyException(
                f"{self.name}: window {window.tolist()} exceeds the {h}x{w} input"
            )
        expected = (
            n, cb, _window_extent(h, 0, int(window[0]), int(strides[0]), 1),
            _window_extent(w, 0, int(window[1]), int(strides[1]), 1), 1, block,
        )  # fmt: skip
        if out != expected:
            raise VerifyException(
                f"{self.name}: the result must be {list(expected)}, got {list(out)}"
            )


@irdl_op_definition
class MaxPool2DOp(_PoolOp):
    """Maximum over each window of int32 rows (ALU MAX; no padding: windows lie inside)."""

    name = "accel.max_pool2d"


@irdl_op_definition
class SumPool2DOp(_PoolOp):
    """Sum over each window of int32 rows, modulo 2^32 (ALU ADD; no padding)."""

    name = "accel.sum_pool2d"


@irdl_op_definition
class ReduceSumOp(_ComputeOp):
    """Sum of int32 rows over spatial `axes` of a packed activation (dimensions 2 .. rank-3),
    modulo 2^32 (ALU ADD). The result drops those dimensions or keeps them with size 1."""

    name = "accel.reduce_sum"
    input = operand_def(TensorType)
    output = result_def(TensorType)
    axes = prop_def(DenseArrayBase[I64])
    assembly_format = "$input `axes` `=` $axes attr-dict `:` type($input) `->` type($output)"

    def __init__(self, value: SSAValue | Operation, result_type: TensorType, axes: Sequence[int]):
        super().__init__(
            operands=[SSAValue.get(value)],
            result_types=[result_type],
            properties={"axes": i64_array(axes)},
        )

    def verify_(self) -> None:
        shape = _check_packed(self, "the input", self.input.type, 32)
        out = _check_packed(self, "the result", self.output.type, 32)
        axes = sorted(int(a) for a in self.array_prop("axes"))
        rank = len(shape)
        if not axes or len(set(axes)) != len(axes) or any(not 2 <= a <= rank - 3 for a in axes):
            raise VerifyException(
                f"{self.name}: axes {axes} must be distinct spatial dimensions in "
                f"[2, {rank - 3}] (lanes and blocks never mix)"
            )
        kept = tuple(1 if d in axes else s for d, s in enumerate(shape))
        dropped = tuple(s for d, s in enumerate(shape) if d not in axes)
        if out not in (kept, dropped):
            raise VerifyException(
                f"{self.name}: the result must be {list(kept)} or {list(dropped)}, got {list(out)}"
            )


@irdl_op_definition
class PadOp(_ComputeOp):
    """Spatial padding with `pad_value` (done by the DMA: LOAD padding after SETPAD).
    `padding` holds (before, after) for each spatial dimension (2 .. rank-3)."""

    name = "accel.pad"
    input = operand_def(TensorType)
    output = result_def(TensorType)
    padding = prop_def(DenseArrayBase[I64])
    pad_value = prop_def(IntegerAttr[I32])
    assembly_format = (
        "$input `pad_value` `(` $pad_value `)` `padding` `=` $padding attr-dict "
        "`:` type($input) `->` type($output)"
    )

    def __init__(
        self,
        value: SSAValue | Operation,
        result_type: TensorType,
        padding: Sequence[int],
        pad_value: int,
    ):
        super().__init__(
            operands=[SSAValue.get(value)],
            result_types=[result_type],
            properties={
                "padding": i64_array(padding),
                "pad_value": IntegerAttr(int(pad_value), i32),
            },
        )

    def verify_(self) -> None:
        shape = _check_packed(self, "the input", self.input.type, "narrow")
        out = _check_packed(self, "the result", self.output.type, "narrow")
        if self.input.type.element_type != self.output.type.element_type:
            raise VerifyException(f"{self.name}: the input and result element types differ")
        padding = self.array_prop("padding")
        spatial = len(shape) - 4
        if len(padding) != 2 * spatial or np.any(padding < 0):
            raise VerifyException(
                f"{self.name}: padding needs {2 * spatial} non-negative values (before, after "
                f"per spatial dimension), got {padding.tolist()}"
            )
        expected = list(shape)
        for k in range(spatial):
            expected[2 + k] += int(padding[2 * k] + padding[2 * k + 1])
        if list(out) != expected:
            raise VerifyException(f"{self.name}: the result must be {expected}, got {list(out)}")
        lo, hi = storage_range(_storage(self.input.type.element_type))  # type: ignore[arg-type]
        if not lo <= self.pad_value.value.data <= hi:
            raise VerifyException(
                f"{self.name}: pad_value {self.pad_value.value.data} does not fit [{lo}, {hi}]"
            )


@irdl_op_definition
class ConcatOp(_ComputeOp):
    """Concatenation of packed tensors along dimension `axis` (placement in DRAM): batch,
    channel blocks or a spatial dimension, never inside a block."""

    name = "accel.concat"
    inputs = var_operand_def(TensorType)
    output = result_def(TensorType)
    axis = prop_def(IntegerAttr[I64])
    assembly_format = "$inputs `axis` `=` $axis attr-dict `:` type($inputs) `->` type($output)"

    def __init__(self, values: Sequence[SSAValue | Operation], result_type: TensorType, axis: int):
        super().__init__(
            operands=[[SSAValue.get(v) for v in values]],
            result_types=[result_type],
            properties={"axis": IntegerAttr(int(axis), i64)},
        )

    def verify_(self) -> None:
        out = _check_packed(self, "the result", self.output.type, "narrow")
        axis = self.int_prop("axis")
        if not 0 <= axis <= len(out) - 3:
            raise VerifyException(
                f"{self.name}: axis {axis} must be in [0, {len(out) - 3}] (not inside a block)"
            )
        if not self.inputs:
            raise VerifyException(f"{self.name}: needs at least one input")
        total = 0
        for i, v in enumerate(self.inputs):
            shape = _check_packed(self, f"input {i}", v.type, "narrow")
            if storage_width(v.type) != storage_width(self.output.type) or len(shape) != len(out):
                raise VerifyException(
                    f"{self.name}: input {i} has type {v.type}, not matching the result's"
                )
            if any(s != o for d, (s, o) in enumerate(zip(shape, out)) if d != axis):
                raise VerifyException(
                    f"{self.name}: input {i} {list(shape)} differs from the result {list(out)} "
                    f"outside axis {axis}"
                )
            total += shape[axis]
        if total != out[axis]:
            raise VerifyException(
                f"{self.name}: the inputs give {total} along axis {axis}, the result has "
                f"{out[axis]}"
            )


@irdl_op_definition
class ReshapeOp(_ComputeOp):
    """The same packed bytes under other spatial dimensions: batch, channel blocks and lanes
    stay, so nothing moves (e.g. Keras' Flatten of a `[N, 1, 1, C]` pooled tensor to
    `[N, C]`). The accelerator function keeps it as a host step of its program (a copy)."""

    name = "accel.reshape"
    input = operand_def(TensorType)
    output = result_def(TensorType)
    assembly_format = "$input attr-dict `:` type($input) `->` type($output)"

    def __init__(self, value: SSAValue | Operation, result_type: TensorType):
        super().__init__(operands=[SSAValue.get(value)], result_types=[result_type])

    def verify_(self) -> None:
        shape = _check_packed(self, "the input", self.input.type, "any")
        out = _check_packed(self, "the result", self.output.type, "any")
        if self.input.type.element_type != self.output.type.element_type:
            raise VerifyException(f"{self.name}: the input and result element types differ")
        same = int(np.prod(shape)) == int(np.prod(out)) and shape[0] == out[0]
        if not same or (shape[1], shape[-1]) != (out[1], out[-1]) and not (
            shape[-1] == out[-1] and plain_order(shape) and plain_order(out)
        ):  # fmt: skip
            raise VerifyException(
                f"{self.name}: {list(shape)} -> {list(out)} must keep the batch, the lanes and "
                "the number of elements, and the channel blocks unless both are in plain "
                "order (nothing moves)"
            )


def plain_order(packed_shape: Sequence[int]) -> bool:
    """Whether a packed activation `[N, C/B, ..., 1, B]` holds its bytes in the plain
    tensor's order: one channel block, or no dimensions between batch and channels (a
    Flatten of a one-block map is then the same bytes)."""
    return packed_shape[1] == 1 or int(np.prod(packed_shape[2:-2])) == 1


@irdl_op_definition
class CropOp(_ComputeOp):
    """The spatial box of the result's shape starting at `offsets` (one per spatial dimension,
    2 .. rank-3) of a packed activation; batch, channel blocks and lanes stay (Keras'
    Cropping2D). The accelerator function keeps it as a host step of its program (a copy: a
    padding by negative widths)."""

    name = "accel.crop"
    input = operand_def(TensorType)
    output = result_def(TensorType)
    offsets = prop_def(DenseArrayBase[I64])
    assembly_format = (
        "$input `offsets` `=` $offsets attr-dict `:` type($input) `->` type($output)"
    )

    def __init__(self, value: SSAValue | Operation, result_type: TensorType,
                 offsets: Sequence[int]):  # fmt: skip
        super().__init__(operands=[SSAValue.get(value)], result_types=[result_type],
                         properties={"offsets": i64_array(offsets)})  # fmt: skip

    def verify_(self) -> None:
        shape = _check_packed(self, "the input", self.input.type, "narrow")
        out = _check_packed(self, "the result", self.output.type, "narrow")
        if self.input.type.element_type != self.output.type.element_type:
            raise VerifyException(f"{self.name}: the input and result element types differ")
        offsets = self.array_prop("offsets").tolist()
        spatial = list(range(2, len(shape) - 2))
        if (len(out) != len(shape) or len(offsets) != len(spatial)
                or any(out[d] != shape[d] for d in (0, 1, len(shape) - 2, len(shape) - 1))
                or any(o < 0 or out[d] < 1 or o + out[d] > shape[d]
                       for o, d in zip(offsets, spatial))):  # fmt: skip
            raise VerifyException(
                f"{self.name}: a {list(out)} box at spatial offsets {offsets} does not lie "
                f"inside {list(shape)} with its batch, channel blocks and lanes"
            )


@irdl_op_definition
class DepthToSpaceOp(_ComputeOp):
    """`q.depth_to_space` on packed activations `[1, Ci/B, H, W, 1, B]` ->
    `[1, Co/B, H*k, W*k, 1, B]` (`channels` = Co real channels, Ci = k*k*Co; `k` =
    `block_size`): lanes move between blocks and pixels, padding lanes hold `pad_value`. The
    accelerator function keeps it as a host step of its program (a gather)."""

    name = "accel.depth_to_space"
    input = operand_def(TensorType)
    output = result_def(TensorType)
    block_size = prop_def(IntegerAttr[I64])
    channels = prop_def(IntegerAttr[I64])
    pad_value = prop_def(IntegerAttr[I64])
    assembly_format = (
        "$input `block_size` `=` $block_size `channels` `=` $channels `pad_value` `=` $pad_value "
        "attr-dict `:` type($input) `->` type($output)"
    )

    def __init__(self, value: SSAValue | Operation, result_type: TensorType, block_size: int,
                 channels: int, pad_value: int):  # fmt: skip
        super().__init__(operands=[SSAValue.get(value)], result_types=[result_type],
                         properties={"block_size": IntegerAttr(block_size, 64),
                                     "channels": IntegerAttr(channels, 64),
                                     "pad_value": IntegerAttr(pad_value, 64)})  # fmt: skip

    def verify_(self) -> None:
        shape = _check_packed(self, "the input", self.input.type, "narrow")
        out = _check_packed(self, "the result", self.output.type, "narrow")
        if self.input.type.element_type != self.output.type.element_type:
            raise VerifyException(f"{self.name}: the input and result element types differ")
        k, co = self.int_prop("block_size"), self.int_prop("channels")
        b = shape[-1]
        if (len(shape) != 6 or len(out) != 6 or k < 1 or co < 1 or shape[0] != 1
                or out[0] != 1 or out[-1] != b or out[1] != -(-co // b)
                or shape[1] != -(-(k * k * co) // b)
                or (out[2], out[3]) != (shape[2] * k, shape[3] * k)):  # fmt: skip
            raise VerifyException(
                f"{self.name}: {list(out)} is not {list(shape)} with {k}x{k} blocks of {co} "
                "channels moved into pixels"
            )


class _ResizeOp(_ComputeOp):
    """A resize of H and W on packed activations `[N, C/B, H, W, 1, B]` ->
    `[N, C/B, OH, OW, 1, B]`: every lane alike (padding lanes too), the channel blocks kept."""

    input = operand_def(TensorType)
    output = result_def(TensorType)
    align_corners = prop_def(BoolAttr)
    half_pixel_centers = prop_def(BoolAttr)
    assembly_format = (
        "$input `align_corners` `=` $align_corners `half_pixel_centers` `=` $half_pixel_centers "
        "attr-dict `:` type($input) `->` type($output)"
    )

    def __init__(self, value: SSAValue | Operation, result_type: TensorType, align_corners: bool,
                 half_pixel_centers: bool):  # fmt: skip
        super().__init__(operands=[SSAValue.get(value)], result_types=[result_type],
                         properties={"align_corners": IntegerAttr.from_bool(align_corners),
                                     "half_pixel_centers": IntegerAttr.from_bool(
                                         half_pixel_centers)})  # fmt: skip

    def flags(self) -> tuple[bool, bool]:
        """(align_corners, half_pixel_centers)."""
        return bool(self.align_corners.value.data), bool(self.half_pixel_centers.value.data)

    def verify_(self) -> None:
        shape = _check_packed(self, "the input", self.input.type, "narrow")
        out = _check_packed(self, "the result", self.output.type, "narrow")
        if self.input.type.element_type != self.output.type.element_type:
            raise VerifyException(f"{self.name}: the input and result element types differ")
        if len(shape) != 6 or len(out) != 6 or (out[0], out[1], out[-1]) != (
                shape[0], shape[1], shape[-1]) or min(out[2:4]) < 1:  # fmt: skip
            raise VerifyException(
                f"{self.name}: {list(out)} is not {list(shape)} resized in H and W"
            )


@irdl_op_definition
class ResizeNearestNeighborOp(_ResizeOp):
    """`q.resize_nearest_neighbor` on packed activations: each output pixel a copy of the
    input pixel the reference kernel picks. The accelerator function keeps it as a host step
    of its program (a gather)."""

    name = "accel.resize_nearest_neighbor"


@irdl_op_definition
class ResizeBilinearOp(_ResizeOp):
    """`q.resize_bilinear` (int8) on packed activations: LiteRT's integer interpolation, lane
    by lane. The accelerator function keeps it as an exact host step of its program (the ALU
    has no 64-bit products or division rounding half away from zero)."""

    name = "accel.resize_bilinear"

    def verify_(self) -> None:
        super().verify_()
        if all(self.flags()):
            raise VerifyException(f"{self.name}: align_corners and half_pixel_centers cannot "
                                  "both be true")  # fmt: skip


@irdl_op_definition
class Col2ImOp(_ComputeOp):
    """`q.col2im` on packed int32 accumulators `[N, Ci/B, H, W, 1, B]` (Ci = KH*KW*`channels`,
    tap-major) -> `[N, Co/B, OH, OW, 1, B]` (Co = `channels`): each output element the
    int32 sum of the taps that land on it, padding lanes 0. The accelerator function keeps it
    as an exact host step of its program (a gather-sum) between the taps' GEMM layer and the
    requantization."""

    name = "accel.col2im"
    input = operand_def(TensorType)
    output = result_def(TensorType)
    kernel = prop_def(DenseArrayBase[I64])
    strides = prop_def(DenseArrayBase[I64])
    padding = prop_def(DenseArrayBase[I64])
    channels = prop_def(IntegerAttr[I64])
    assembly_format = (
        "$input `kernel` `=` $kernel `strides` `=` $strides `padding` `=` $padding "
        "`channels` `=` $channels attr-dict `:` type($input) `->` type($output)"
    )

    def __init__(self, value: SSAValue | Operation, result_type: TensorType, kernel, strides,
                 padding, channels: int):  # fmt: skip
        super().__init__(operands=[SSAValue.get(value)], result_types=[result_type],
                         properties={"kernel": i64_array(kernel), "strides": i64_array(strides),
                                     "padding": i64_array(padding),
                                     "channels": IntegerAttr(channels, 64)})  # fmt: skip

    def verify_(self) -> None:
        shape = _check_packed(self, "the input", self.input.type, 32)
        out = _check_packed(self, "the result", self.output.type, 32)
        kernel, strides = self.array_prop("kernel"), self.array_prop("strides")
        padding, co = self.array_prop("padding"), self.int_prop("channels")
        if len(kernel) != 2 or len(strides) != 2 or len(padding) != 2 or np.any(kernel < 1) \
                or np.any(strides < 1) or np.any(padding < 0) or co < 1:  # fmt: skip
            raise VerifyException(f"{self.name}: kernel, strides (positive) and padding (not "
                                  "negative) need 2 values each")  # fmt: skip
        b = shape[-1]
        taps = int(kernel[0] * kernel[1])
        if len(shape) != 6 or len(out) != 6 or out[0] != shape[0] or out[-1] != b or \
                out[1] != -(-co // b) or shape[1] != -(-(taps * co) // b):  # fmt: skip
            raise VerifyException(f"{self.name}: {list(out)} does not take the "
                                  f"{int(kernel[0])}x{int(kernel[1])} taps of {co} channels of "
                                  f"{list(shape)}")  # fmt: skip


HOST_POOL_KINDS = ("max", "avg")


@irdl_op_definition
class HostPool2DOp(_ComputeOp):
    """TFLite's int8 max or average pool on a packed activation, lane by lane, as an exact host
    step of the accelerator program: what the ALU trees cannot do bit-exactly (padded windows
    whose padded taps must not count, averages over a number of taps that is not a power of
    two, e.g. 3x3 or 25x5). `padding` is (top, bottom, left, right); taps in the padding are
    skipped (max) or not counted (average: sum of the raw int8 values over the in-image taps,
    divided rounding half away from zero as the reference kernel does); then the clamp
    `[min, max]`."""

    name = "accel.host_pool2d"
    input = operand_def(TensorType)
    output = result_def(TensorType)
    kind = prop_def(StringAttr)
    window = prop_def(DenseArrayBase[I64])
    strides = prop_def(DenseArrayBase[I64])
    padding = prop_def(DenseArrayBase[I64])
    min = prop_def(IntegerAttr[I32])
    max = prop_def(IntegerAttr[I32])
    assembly_format = (
        "$input $kind `window` `=` $window `strides` `=` $strides `padding` `=` $padding "
        "`clamp` `(` $min `,` $max `)` attr-dict `:` type($input) `->` type($output)"
    )

    def __init__(self, value: SSAValue | Operation, result_type: TensorType, kind: str,
                 window: Sequence[int], strides: Sequence[int], padding: Sequence[int],
                 lo: int, hi: int):  # fmt: skip
        super().__init__(
            operands=[SSAValue.get(value)],
            result_types=[result_type],
            properties={"kind": StringAttr(kind), "window": i64_array(window),
                        "strides": i64_array(strides), "padding": i64_array(padding),
                        "min": IntegerAttr(int(lo), i32), "max": IntegerAttr(int(hi), i32)},
        )  # fmt: skip

    def verify_(self) -> None:
        n, cb, h, w, _, block = _check_packed(self, "the input", self.input.type, 8)
        out = _check_packed(self, "the result", self.output.type, 8)
        if self.kind.data not in HOST_POOL_KINDS:
            raise VerifyException(f"{self.name}: kind {self.kind.data!r} is not max or avg")
        window, strides = self.array_prop("window"), self.array_prop("strides")
        padding = self.array_prop("padding")
        if len(window) != 2 or len(strides) != 2 or np.any(window < 1) or np.any(strides < 1):
            raise VerifyException(
                f"{self.name}: window and strides need 2 positive values each, got "
                f"{window.tolist()} and {strides.tolist()}"
            )
        if len(padding) != 4 or np.any(padding < 0) or np.any(padding[0:2] >= window[0]) or (
            np.any(padding[2:4] >= window[1])
        ):  # fmt: skip
            raise VerifyException(
                f"{self.name}: padding needs 4 values (top, bottom, left, right), each smaller "
                f"than the window (no window entirely in the padding), got {padding.tolist()}"
            )
        lo, hi = self.int_prop("min"), self.int_prop("max")
        if not -128 <= lo <= hi <= 127:
            raise VerifyException(f"{self.name}: clamp [{lo}, {hi}] is not an int8 range")
        expected = (
            n, cb,
            _window_extent(h, int(padding[0] + padding[1]), int(window[0]), int(strides[0]), 1),
            _window_extent(w, int(padding[2] + padding[3]), int(window[1]), int(strides[1]), 1),
            1, block,
        )  # fmt: skip
        if out != expected:
            raise VerifyException(
                f"{self.name}: the result must be {list(expected)}, got {list(out)}"
            )


@irdl_op_definition
class ConcatLanesOp(_ComputeOp):
    """Concatenation along the channels of packed tensors whose inputs do not all fill whole
    channel blocks (e.g. 24 + 8 channels with 16 lanes): `channels` holds each input's real
    channel count, and channel `c` of input `i` moves to channel `c + sum(channels[:i])` of
    the result, so lanes move. The accelerator function keeps it as an exact host step of its
    program (a copy per channel run); the result's padding lanes are zero."""

    name = "accel.concat_lanes"
    inputs = var_operand_def(TensorType)
    output = result_def(TensorType)
    channels = prop_def(DenseArrayBase[I64])
    assembly_format = (
        "$inputs `channels` `=` $channels attr-dict `:` type($inputs) `->` type($output)"
    )

    def __init__(self, values: Sequence[SSAValue | Operation], result_type: TensorType,
                 channels: Sequence[int]):  # fmt: skip
        super().__init__(
            operands=[[SSAValue.get(v) for v in values]],
            result_types=[result_type],
            properties={"channels": i64_array(channels)},
        )

    def verify_(self) -> None:
        out = _check_packed(self, "the result", self.output.type, "narrow")
        channels = self.array_prop("channels")
        if not self.inputs or len(channels) != len(self.inputs):
            raise VerifyException(
                f"{self.name}: needs one channel count per input ({len(self.inputs)} inputs, "
                f"{len(channels)} counts)"
            )
        block = out[-1]
        for i, (v, c) in enumerate(zip(self.inputs, channels, strict=True)):
            shape = _check_packed(self, f"input {i}", v.type, "narrow")
            if storage_width(v.type) != storage_width(self.output.type) or len(shape) != len(out):
                raise VerifyException(
                    f"{self.name}: input {i} has type {v.type}, not matching the result's"
                )
            if any(s != o for d, (s, o) in enumerate(zip(shape, out)) if d != 1):
                raise VerifyException(
                    f"{self.name}: input {i} {list(shape)} differs from the result {list(out)} "
                    "outside the channel blocks"
                )
            if c <= 0 or -(-int(c) // block) != shape[1]:
                raise VerifyException(
                    f"{self.name}: input {i} has {shape[1]} channel blocks of {block}, which "
                    f"cannot hold {int(c)} channels"
                )
        total = int(channels.sum())
        if -(-total // block) != out[1]:
            raise VerifyException(
                f"{self.name}: {total} channels need {-(-total // block)} blocks of {block}, "
                f"the result has {out[1]}"
            )


@irdl_op_definition
class LaneSumOp(_ComputeOp):
    """Sum of all lanes of each pixel, modulo 2^32, into lane 0 of a one-block int32 result
    whose other lanes hold 0: `[N, C/B, ..., 1, B]` (int8 or int32) -> `[N, 1, ..., 1, B]`
    (a MEAN over the channel axis of channels filling whole blocks). Lanes mix, which the ALU
    cannot do: the accelerator function keeps it as a host step of its program (a reduction
    over the blocks and lanes, then a padding of the lanes)."""

    name = "accel.lane_sum"
    input = operand_def(TensorType)
    output = result_def(TensorType)
    traits = traits_def(Pure())
    assembly_format = "$input attr-dict `:` type($input) `->` type($output)"

    def __init__(self, value: SSAValue | Operation, result_type: TensorType):
        super().__init__(operands=[SSAValue.get(value)], result_types=[result_type])

    def verify_(self) -> None:
        shape = _check_packed(self, "the input", self.input.type, "any")
        out = _check_packed(self, "the result", self.output.type, 32)
        expected = (shape[0], 1, *shape[2:])
        if out != expected:
            raise VerifyException(
                f"{self.name}: the result must be {list(expected)}, got {list(out)}"
            )


@irdl_op_definition
class LaneBroadcastOp(_ComputeOp):
    """Lane 0 of each pixel copied to every lane of every channel block: `[N, 1, ..., 1, B]`
    -> `[N, C/B, ..., 1, B]`, same element type (a `[..., 1]` operand broadcast against
    `[..., C]`). The ALU repeats whole rows, not lanes: the accelerator function keeps it as
    a host step of its program (a gather)."""

    name = "accel.lane_broadcast"
    input = operand_def(TensorType)
    output = result_def(TensorType)
    traits = traits_def(Pure())
    assembly_format = "$input attr-dict `:` type($input) `->` type($output)"

    def __init__(self, value: SSAValue | Operation, result_type: TensorType):
        super().__init__(operands=[SSAValue.get(value)], result_types=[result_type])

    def verify_(self) -> None:
        shape = _check_packed(self, "the input", self.input.type, "any")
        out = _check_packed(self, "the result", self.output.type, "any")
        if self.input.type.element_type != self.output.type.element_type:
            raise VerifyException(f"{self.name}: the input and result element types differ")
        if shape[1] != 1 or len(out) != len(shape) or (out[0], *out[2:]) != (shape[0], *shape[2:]):
            raise VerifyException(
                f"{self.name}: {list(out)} is not {list(shape)} (one channel block) with its "
                "lane 0 broadcast over the channel blocks"
            )


# --------------------------------------------------------------------------------------------
# The attention core's host steps (kernels/attention.py)


def _i64_props(**values: int) -> dict[str, Attribute]:
    return {k: IntegerAttr(int(v), 64) for k, v in values.items()}


@irdl_op_definition
class RelayoutOp(_ComputeOp):
    """A lane-moving `q.reshape` or a `q.transpose` on packed activations: the plain
    `in_shape` input reshaped to `shape`, then transposed by `perm` (the identity for a
    reshape); padding lanes of the result hold `pad_value`. The accelerator function keeps it
    as a host step of its program (a gather, `kernels/attention.py`'s `relayout_index`)."""

    name = "accel.relayout"
    input = operand_def(TensorType)
    output = result_def(TensorType)
    in_shape = prop_def(DenseArrayBase[I64])
    shape = prop_def(DenseArrayBase[I64])
    perm = prop_def(DenseArrayBase[I64])
    pad_value = prop_def(IntegerAttr[I64])

    def __init__(self, value: SSAValue | Operation, result_type: TensorType,
                 in_shape: Sequence[int], shape: Sequence[int], perm: Sequence[int],
                 pad_value: int):  # fmt: skip
        super().__init__(operands=[SSAValue.get(value)], result_types=[result_type],
                         properties={"in_shape": i64_array(in_shape), "shape": i64_array(shape),
                                     "perm": i64_array(perm),
                                     **_i64_props(pad_value=pad_value)})  # fmt: skip

    def verify_(self) -> None:
        shape_in = _check_packed(self, "the input", self.input.type, "narrow")
        out = _check_packed(self, "the result", self.output.type, "narrow")
        if self.input.type.element_type != self.output.type.element_type:
            raise VerifyException(f"{self.name}: the input and result element types differ")
        plain_in = self.array_prop("in_shape").tolist()
        mid = self.array_prop("shape").tolist()
        perm = self.array_prop("perm").tolist()
        block = shape_in[-1]
        if (len(plain_in) < 2 or sorted(perm) != list(range(len(mid))) or len(mid) < 2
                or int(np.prod(plain_in)) != int(np.prod(mid))
                or tuple(shape_in) != Packing.activations(len(plain_in), block).packed_shape(
                    plain_in)
                or tuple(out) != Packing.activations(len(mid), block).packed_shape(
                    [mid[p] for p in perm])):  # fmt: skip
            raise VerifyException(
                f"{self.name}: {list(out)} is not the packed {list(plain_in)} reshaped to "
                f"{mid} and permuted by {perm}"
            )


@irdl_op_definition
class SoftmaxOp(_ComputeOp):
    """`q.softmax` on a packed int8 activation `[N, C/B, ..., 1, B]` along its `channels` real
    channels (the lanes of all blocks); padding lanes of the result hold -128 (its zero point).
    The accelerator function keeps it as a host step of its program."""

    name = "accel.softmax"
    input = operand_def(TensorType)
    output = result_def(TensorType)
    channels = prop_def(IntegerAttr[I64])
    multiplier = prop_def(IntegerAttr[I64])
    left_shift = prop_def(IntegerAttr[I64])
    diff_min = prop_def(IntegerAttr[I64])

    def __init__(self, value: SSAValue | Operation, result_type: TensorType, channels: int,
                 multiplier: int, left_shift: int, diff_min: int):  # fmt: skip
        super().__init__(operands=[SSAValue.get(value)], result_types=[result_type],
                         properties=_i64_props(channels=channels, multiplier=multiplier,
                                               left_shift=left_shift, diff_min=diff_min))

    def verify_(self) -> None:
        shape = _check_packed(self, "the input", self.input.type, "narrow")
        out = _check_packed(self, "the result", self.output.type, "narrow")
        c = self.int_prop("channels")
        if shape != out or c < 1 or -(-c // shape[-1]) != shape[1]:
            raise VerifyException(f"{self.name}: {list(shape)} -> {list(out)} with {c} channels")
        if not 0 <= self.int_prop("left_shift") <= 31 or \
                not 0 <= self.int_prop("multiplier") <= 2**31 - 1:  # fmt: skip
            raise VerifyException(f"{self.name}: multiplier or left_shift out of range")


@irdl_op_definition
class BatchMatmulOp(_ComputeOp):
    """`q.batch_matmul` of packed int8 activations (plain shapes `lhs_shape`, `rhs_shape`)
    into a packed int8 result whose padding lanes hold `pad_value`. The accelerator function
    keeps it as a host step of its program."""

    name = "accel.batch_matmul"
    lhs = operand_def(TensorType)
    rhs = operand_def(TensorType)
    output = result_def(TensorType)
    lhs_shape = prop_def(DenseArrayBase[I64])
    rhs_shape = prop_def(DenseArrayBase[I64])
    adj_x = prop_def(IntegerAttr[I64])
    adj_y = prop_def(IntegerAttr[I64])
    lhs_zero_point = prop_def(IntegerAttr[I64])
    rhs_zero_point = prop_def(IntegerAttr[I64])
    multiplier = prop_def(IntegerAttr[I64])
    shift = prop_def(IntegerAttr[I64])
    output_zero_point = prop_def(IntegerAttr[I64])
    pad_value = prop_def(IntegerAttr[I64])

    def __init__(self, lhs: SSAValue, rhs: SSAValue, result_type: TensorType,
                 lhs_shape: Sequence[int], rhs_shape: Sequence[int], **ints: int):  # fmt: skip
        super().__init__(operands=[lhs, rhs], result_types=[result_type],
                         properties={"lhs_shape": i64_array(lhs_shape),
                                     "rhs_shape": i64_array(rhs_shape), **_i64_props(**ints)})

    def plain_output_shape(self) -> list[int]:
        ls, rs = self.array_prop("lhs_shape").tolist(), self.array_prop("rhs_shape").tolist()
        rows = ls[-1] if self.int_prop("adj_x") else ls[-2]
        cols = rs[-2] if self.int_prop("adj_y") else rs[-1]
        return [*np.broadcast_shapes(tuple(ls[:-2]), tuple(rs[:-2])), rows, cols]

    def verify_(self) -> None:
        packed = []
        for what, t in (("the lhs", self.lhs.type), ("the rhs", self.rhs.type),
                        ("the result", self.output.type)):  # fmt: skip
            packed.append(_check_packed(self, what, t, "narrow"))
        ls, rs = self.array_prop("lhs_shape").tolist(), self.array_prop("rhs_shape").tolist()
        block = packed[0][-1]
        try:
            out = self.plain_output_shape()
        except ValueError:
            out = None
        depth_l = ls[-2] if self.int_prop("adj_x") else ls[-1]
        depth_r = rs[-1] if self.int_prop("adj_y") else rs[-2]
        if (out is None or depth_l != depth_r
                or any(tuple(p) != Packing.activations(len(s), block).packed_shape(s)
                       for p, s in zip(packed, (ls, rs, out)))):  # fmt: skip
            raise VerifyException(f"{self.name}: {list(packed[0])} x {list(packed[1])} -> "
                                  f"{list(packed[2])} does not fit plain {ls} x {rs}")


def _view_props(views) -> dict[str, Attribute]:
    """`lhs_view` / `rhs_view` properties of the views given (`bmm_gemm.encode_view`)."""
    from qaccel.kernels import bmm_gemm

    return {name: i64_array(bmm_gemm.encode_view(*view))
            for name, view in zip(("lhs_view", "rhs_view"), views, strict=True)
            if view is not None}  # fmt: skip


class _BmmOp(_ComputeOp):
    """Properties shared by the ops of one `q.batch_matmul` run as GEMM layers: the plain
    operand shapes, adj_x / adj_y and the flattened batch index `index` this op is about, or
    -1: every batch index at once, stacked on a leading dimension of the result (one GEMM
    layer over the batch, `kernels/bmm_gemm.py`)."""

    lhs_shape = prop_def(DenseArrayBase[I64])
    rhs_shape = prop_def(DenseArrayBase[I64])
    adj_x = prop_def(IntegerAttr[I64])
    adj_y = prop_def(IntegerAttr[I64])
    index = prop_def(IntegerAttr[I64])
    lhs_view = opt_prop_def(DenseArrayBase[I64])
    rhs_view = opt_prop_def(DenseArrayBase[I64])

    def views(self):
        """Each operand's `bmm_gemm.View` (read through the relayouts that made it: the op's
        operand is then the value the first relayout reads), or None; VerifyException when
        malformed."""
        from qaccel.kernels import bmm_gemm

        out = []
        for name in ("lhs_view", "rhs_view"):
            attr = self.properties.get(name)
            try:
                out.append(None if attr is None else bmm_gemm.decode_view(attr.get_values()))
            except ValueError as e:
                raise VerifyException(f"{self.name}: {name}: {e}") from None
        return tuple(out)

    def dims(self) -> tuple[int, int, int, int]:
        """(batch, M, K, N) of the flattened product, or VerifyException."""
        from qaccel.kernels import bmm_gemm

        ls, rs = self.array_prop("lhs_shape").tolist(), self.array_prop("rhs_shape").tolist()
        try:
            if len(ls) < 2 or len(rs) < 2:
                raise ValueError
            batch, m, k, n = bmm_gemm.dims(ls, rs, bool(self.int_prop("adj_x")),
                                           bool(self.int_prop("adj_y")))  # fmt: skip
            depth = rs[-1] if self.int_prop("adj_y") else rs[-2]
        except ValueError:
            raise VerifyException(f"{self.name}: plain shapes {ls} x {rs} do not multiply") from None
        if depth != k or min(m, k, n) < 1:
            raise VerifyException(f"{self.name}: plain shapes {ls} x {rs} do not multiply")
        index = self.int_prop("index")
        if not (0 <= index < batch or index == bmm_gemm.ALL):
            raise VerifyException(f"{self.name}: batch index {index} not in [0, {batch}) nor "
                                  f"{bmm_gemm.ALL} (every index, stacked)")  # fmt: skip
        return batch, m, k, n

    def stacked(self) -> int | None:
        """The batch when the op is about every batch index at once (index -1), else None."""
        from qaccel.kernels import bmm_gemm

        return self.dims()[0] if self.int_prop("index") == bmm_gemm.ALL else None

    def _check_operands(self, operands) -> int:
        """The channel block; each packed operand is its plain shape packed (or, read through
        relayouts, its view's root shape packed, the view reading its plain shape)."""
        from qaccel.kernels import bmm_gemm

        block = None
        views = dict(zip(("lhs_shape", "rhs_shape"), self.views(), strict=True))
        for what, v, attr in operands:
            shape = _check_packed(self, what, v.type, 8)
            block = shape[-1]
            plain = self.array_prop(attr).tolist()
            view = views[attr]
            if view is not None:
                if bmm_gemm.view_shape(view) != plain:
                    raise VerifyException(f"{self.name}: the {attr[:3]} view reads "
                                          f"{bmm_gemm.view_shape(view)}, not {plain}")  # fmt: skip
                plain = list(view[0])
            if tuple(shape) != Packing.activations(len(plain), block).packed_shape(plain):
                raise VerifyException(f"{self.name}: {what} {list(shape)} is not plain {plain} "
                                      "packed")  # fmt: skip
        assert block is not None
        return block


@irdl_op_definition
class BmmOperandOp(_BmmOp):
    """One GEMM operand of batch `index` of a `q.batch_matmul`, gathered from a packed int8
    activation: `operand` 0, the lhs rows as a token image `[1, K/B, M, 1, B]` (the input of
    `accel.dense_zp` over M tokens); `operand` 1, the rhs as weight tiles `[N/B, K/B, B, B]`
    (`accel.dense_zp`'s filter: its bytes are the layer's WGT tiles, placed in the activation
    arena and loaded like constant weights). Padding is 0. With `index` -1, every batch index
    stacked: `[batch, K/B, M, 1, B]` or `[batch, N/B, K/B, B, B]`. A GATHER step of the program
    (`kernels/bmm_gemm.py`)."""

    name = "accel.bmm_operand"
    input = operand_def(TensorType)
    output = result_def(TensorType)
    operand = prop_def(IntegerAttr[I64])

    def __init__(self, value: SSAValue, result_type: TensorType, lhs_shape: Sequence[int],
                 rhs_shape: Sequence[int], views=(None, None), **ints: int):  # fmt: skip
        super().__init__(operands=[value], result_types=[result_type],
                         properties={"lhs_shape": i64_array(lhs_shape),
                                     "rhs_shape": i64_array(rhs_shape), **_i64_props(**ints),
                                     **_view_props(views)})  # fmt: skip

    def index_array(self) -> np.ndarray:
        """Flat indices into the packed input, -1 for padding, in the result's shape."""
        from qaccel.kernels import bmm_gemm

        block = self.input.type.get_shape()[-1]
        sources = bmm_gemm.operand_sources(
            self.array_prop("lhs_shape").tolist(), self.array_prop("rhs_shape").tolist(),
            bool(self.int_prop("adj_x")), bool(self.int_prop("adj_y")), block, self.views())
        return bmm_gemm.operand_index(sources, self.int_prop("operand"), self.int_prop("index"),
                                      block)  # fmt: skip

    def verify_(self) -> None:
        from qaccel.kernels import bmm_gemm

        _, m, k, n = self.dims()
        which = self.int_prop("operand")
        if which not in (0, 1):
            raise VerifyException(f"{self.name}: operand must be 0 (lhs) or 1 (rhs), got {which}")
        block = self._check_operands(
            [("the input", self.input, "lhs_shape" if which == 0 else "rhs_shape")])
        batch = self.stacked()
        want = bmm_gemm.tokens_shape(m, k, block, batch or 1) if which == 0 else \
            bmm_gemm.tiles_shape(k, n, block, batch)  # fmt: skip
        out = self.output.type
        if (not isinstance(out, TensorType) or tuple(out.get_shape()) != want
                or storage_width(out) != 8):  # fmt: skip
            raise VerifyException(f"{self.name}: the result must be int8 {list(want)}, got {out}")


@irdl_op_definition
class BmmZpCorrectionOp(_BmmOp):
    """The int32 zero-point correction of batch `index` of a `q.batch_matmul`:
    `-rhs_zp * Σ_k lhs[m, k] - lhs_zp * Σ_k rhs[k, n] + K * lhs_zp * rhs_zp` (wrapped to
    int32), packed like `accel.dense_zp`'s result over M tokens, `[1, N/B, M, 1, B]`, padding
    lanes 0; added to the GEMM's Σ lhs*rhs it gives LiteRT's accumulator; with `index` -1,
    every batch index stacked, `[batch, N/B, M, 1, B]`. A step of the program (kind 18,
    BMM_CORRECTION; kind 22, BMM_CORRECTIONS, for every batch index)."""

    name = "accel.bmm_zp_correction"
    lhs = operand_def(TensorType)
    rhs = operand_def(TensorType)
    output = result_def(TensorType)
    lhs_zero_point = prop_def(IntegerAttr[I64])
    rhs_zero_point = prop_def(IntegerAttr[I64])

    def __init__(self, lhs: SSAValue, rhs: SSAValue, result_type: TensorType,
                 lhs_shape: Sequence[int], rhs_shape: Sequence[int], views=(None, None),
                 **ints: int):  # fmt: skip
        super().__init__(operands=[lhs, rhs], result_types=[result_type],
                         properties={"lhs_shape": i64_array(lhs_shape),
                                     "rhs_shape": i64_array(rhs_shape), **_i64_props(**ints),
                                     **_view_props(views)})  # fmt: skip

    def verify_(self) -> None:
        from qaccel.kernels import bmm_gemm

        _, m, _, n = self.dims()
        block = self._check_operands([("the lhs", self.lhs, "lhs_shape"),
                                      ("the rhs", self.rhs, "rhs_shape")])  # fmt: skip
        want = bmm_gemm.result_shape(m, n, block, self.stacked() or 1)
        out = self.output.type
        if (not isinstance(out, TensorType) or tuple(out.get_shape()) != want
                or storage_width(out) != 32):  # fmt: skip
            raise VerifyException(f"{self.name}: the result must be int32 {list(want)}, got {out}")
        for name in ("lhs_zero_point", "rhs_zero_point"):
            if not -128 <= self.int_prop(name) <= 127:
                raise VerifyException(f"{self.name}: {name} {self.int_prop(name)} is not int8")


COMPUTE_OPS: tuple[type[AccelOp], ...] = (
    Conv2DZpOp, DenseZpOp, BiasAddZpOp, ShiftLeftOp, RoundMultiplyOp, RoundRShiftOp, AddOp,
    MulOp, MinOp, MaxOp, WidenOp, NarrowOp, HostRequantizeOp, LutOp, MaxPool2DOp, SumPool2DOp,
    ReduceSumOp, PadOp, ConcatOp, ConcatLanesOp, HostPool2DOp, ReshapeOp, CropOp, DepthToSpaceOp,
    ResizeNearestNeighborOp, ResizeBilinearOp, Col2ImOp,
)  # fmt: skip
COMPUTE_OPS += (RelayoutOp, SoftmaxOp, BatchMatmulOp)
"""The ops `lower-q-to-accel` produces: what the accelerator computes on packed tensors."""
COMPUTE_OPS += (LaneSumOp, LaneBroadcastOp)
COMPUTE_OPS += (BmmOperandOp, BmmZpCorrectionOp)


ACCEL_OPS: tuple[type[AccelOp], ...] = (PackOp, UnpackOp, *COMPUTE_OPS)

# --------------------------------------------------------------------------------------------
# The target


MODULE_TARGET_ATTR = "accel.target"
"""Discardable attribute of `builtin.module` holding its `#accel.target` (`attach-target`)."""

ConfigValue = int | float | bool | str


@irdl_attr_definition
class TargetAttr(ParametrizedAttribute):
    """The accelerator a module is compiled for: a target name and its whole hardware
    configuration, as `attach-target` puts it on the module (MLIR's `tosa-attach-target`):

        module attributes {accel.target = #accel.target<"vta", {log_block = 4 : i64,
                           clock_mhz = 3.330000e+02 : f64, name = "vta-default",
                           store_requant = false, ...}>} { ... }

    The configuration's keys and meaning belong to the target (`targets/`; for `vta`,
    `HardwareConfig`'s fields), so the dialect fixes only their form: identifier keys whose
    values are i64 integers, f64 floats, booleans (i1) or strings. Every pass after
    `attach-target` reads the target from here (`targets.base.module_target`), which also
    checks the configuration with the target's own rules."""

    name = "accel.target"

    target: StringAttr
    config: DictionaryAttr

    def __init__(self, target: str | StringAttr, config: Mapping[str, ConfigValue] | DictionaryAttr):
        if not isinstance(config, DictionaryAttr):
            config = DictionaryAttr({k: _config_attr(k, v) for k, v in config.items()})
        super().__init__(StringAttr(target) if isinstance(target, str) else target, config)

    @property
    def target_name(self) -> str:
        return self.target.data

    def config_values(self) -> dict[str, ConfigValue]:
        """The configuration as plain Python values (booleans for i1 integers)."""
        values: dict[str, ConfigValue] = {}
        for key, attr in self.config.data.items():
            if isinstance(attr, IntegerAttr):
                v = attr.value.data
                values[key] = bool(v) if attr.type == IntegerType(1) else int(v)
            elif isinstance(attr, FloatAttr):
                values[key] = float(attr.value.data)
            else:
                assert isinstance(attr, StringAttr)
                values[key] = attr.data
        return values

    def verify(self) -> None:
        if not re.fullmatch(r"[A-Za-z_][\w-]*", self.target.data):
            raise VerifyException(
                f"#accel.target: target name '{self.target.data}' must be an identifier"
            )
        for key, attr in self.config.data.items():
            if not re.fullmatch(r"[A-Za-z_]\w*", key):
                raise VerifyException(f"#accel.target: config key '{key}' must be an identifier")
            ok = (
                isinstance(attr, IntegerAttr) and attr.type in (i64, IntegerType(1))
                or isinstance(attr, FloatAttr) and isinstance(attr.type, Float64Type)
                or isinstance(attr, StringAttr)
            )
            if not ok:
                raise VerifyException(
                    f"#accel.target: config key '{key}' must be an i64 integer, an f64 float, a "
                    f"boolean or a string, got {attr}"
                )


def _config_attr(key: str, value: ConfigValue) -> Attribute:
    if isinstance(value, bool):
        return IntegerAttr(int(value), IntegerType(1))
    if isinstance(value, int):
        return IntegerAttr(value, i64)
    if isinstance(value, float):
        return FloatAttr(value, Float64Type())
    if isinstance(value, str):
        return StringAttr(value)
    raise TypeError(f"#accel.target: config key '{key}' has a {type(value).__name__} value")


Accel = Dialect("accel", [*ACCEL_OPS], [TargetAttr])

