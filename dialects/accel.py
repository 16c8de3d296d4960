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

Compute ops on packed tensors (`accel.conv2d_zp`, `accel.dense_zp`, `accel.bias_add_zp`,
`accel.round_multiply`, `accel.round_rshift`, `accel.add`, `accel.min`, `accel.max`) derive
from `AccelOp` and are listed in `ACCEL_OPS`. `insert-pack-unpack` places packs and unpacks;
`backends/cpu/accel_semantics.py` executes the ops.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from xdsl.dialects.builtin import (
    I32,
    I64,
    DenseArrayBase,
    IntegerAttr,
    IntegerType,
    TensorType,
    i32,
)
from xdsl.ir import Attribute, Dialect
from xdsl.irdl import (
    IRDLOperation,
    ParsePropInAttrDict,
    irdl_op_definition,
    operand_def,
    opt_prop_def,
    prop_def,
    result_def,
    traits_def,
)
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException

from qaccel.dialects.q import array_values, i64_array
from qaccel.dialects.quant import UniformQuantizedType, storage_range

PACKED_FUNCTION_ATTR = "accel.packed"
"""Unit attribute `insert-pack-unpack` puts on an accelerator function once its arguments and
results are packed (so the pass leaves it alone when run again)."""

# --------------------------------------------------------------------------------------------
# Layouts


def _values(attr: DenseArrayBase) -> tuple[int, ...]:
    return tuple(int(v) for v in array_values(attr))


@dataclass(frozen=True)
class Packing:
    """A blocked layout: which dimensions are tiled, by how much, and the outer order.

    The same description as the `accel.pack` / `accel.unpack` properties (and MLIR's
    `linalg.pack`); see the module docstring.
    """

    inner_dims_pos: tuple[int, ...]
    inner_tiles: tuple[int, ...]
    outer_dims_perm: tuple[int, ...]
    """A permutation of all dimensions; the identity when the op has none."""

    @staticmethod
    def activations(rank: int, block: int) -> Packing:
        """Channels-last `[N, d1, ..., C]` -> `[N, ceil(C/block), d1, ..., 1, block]`: the
        batch is tiled by 1 (VTA's BATCH) and the channels by `block`. For NHWC, NCHW1n16c."""
        if rank < 2:
            raise ValueError(
                f"activations to pack need a batch and a channel dimension, got rank {rank}"
            )
        last = rank - 1
        return Packing((0, last), (1, block), (0, last, *range(1, last)))

    @staticmethod
    def weights(rank: int, block_out: int, block_in: int) -> Packing:
        """Output-channels-first, input-channels-last `[O, k1, ..., I]` ->
        `[ceil(O/block_out), ceil(I/block_in), k1, ..., block_out, block_in]`. For OHWI
        convolution filters, OIHW16o16i; for `[O, I]` dense weights, `[O/16, I/16, 16, 16]`."""
        if rank < 2:
            raise ValueError(f"weights to pack need output and input channels, got rank {rank}")
        last = rank - 1
        return Packing((0, last), (block_out, block_in), (0, last, *range(1, last)))

    @property
    def rank(self) -> int:
        return len(self.outer_dims_perm)

    def error(self) -> str | None:
        """What is wrong with this description, or None."""
        rank = self.rank
        if sorted(self.outer_dims_perm) != list(range(rank)):
            perm = list(self.outer_dims_perm)
            return f"outer_dims_perm {perm} is not a permutation of {rank} dimensions"
        if len(self.inner_tiles) != len(self.inner_dims_pos):
            return (
                f"{len(self.inner_dims_pos)} inner_dims_pos but {len(self.inner_tiles)} inner_tiles"
            )
        if len(set(self.inner_dims_pos)) != len(self.inner_dims_pos) or any(
            not 0 <= d < rank for d in self.inner_dims_pos
        ):
            dims = list(self.inner_dims_pos)
            return f"inner_dims_pos {dims} must be distinct dimensions below {rank}"
        if any(t < 1 for t in self.inner_tiles):
            return f"inner_tiles {list(self.inner_tiles)} must be positive"
        return None

    def tile_of(self, dim: int) -> int:
        """The tile size of dimension `dim` (1 when it is not tiled)."""
        for d, t in zip(self.inner_dims_pos, self.inner_tiles):
            if d == dim:
                return t
        return 1

    def outer_shape(self, shape: Sequence[int]) -> tuple[int, ...]:
        """Number of tiles along each dimension, before `outer_dims_perm`."""
        return tuple(-(-size // self.tile_of(d)) for d, size in enumerate(shape))

    def packed_shape(self, shape: Sequence[int]) -> tuple[int, ...]:
        """The shape of a tensor of `shape` once packed."""
        outer = self.outer_shape(shape)
        return (*(outer[d] for d in self.outer_dims_perm), *self.inner_tiles)

    def needs_padding(self, shape: Sequence[int]) -> bool:
        return any(shape[d] % t for d, t in zip(self.inner_dims_pos, self.inner_tiles))

    def properties(self) -> dict[str, Attribute]:
        """The `accel.pack` / `accel.unpack` properties of this layout (no `outer_dims_perm`
        when it is the identity)."""
        props = {
            "inner_dims_pos": i64_array(self.inner_dims_pos),
            "inner_tiles": i64_array(self.inner_tiles),
        }
        if self.outer_dims_perm != tuple(range(self.rank)):
            props["outer_dims_perm"] = i64_array(self.outer_dims_perm)
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
        props = packing.properties()
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
        super().__init__(
            operands=[value], result_types=[result_type], properties=packing.properties()
        )

    @property
    def plain_type(self) -> TensorType:
        return self.output.type  # type: ignore[return-value]

    @property
    def packed_value_type(self) -> TensorType:
        return self.input.type  # type: ignore[return-value]


ACCEL_OPS: tuple[type[AccelOp], ...] = (PackOp, UnpackOp)

Accel = Dialect("accel", list(ACCEL_OPS), [])
