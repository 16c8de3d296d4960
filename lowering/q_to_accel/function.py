"""The state of lowering one accelerator function to `accel` ops, and the arithmetic every
op kind shares.

`FunctionLowering` holds what `lower-q-to-accel` learns while it walks one function in program
order (the accumulating ops whose `q.bias_add` it folded, the requantizations whose input zero
point went into a bias, the constants and widened values it built once) and the steps every
kind of op needs: emitting before the op being replaced, the packed type and packed form of a
value, compile-time constants, widening int8 to int32 (LOAD ACC8), TFLite's fixed-point
requantization and the exact saturation to a storage type. `replace` puts a lowered value in
place of a q op (through an `accel.unpack`, so the IR is valid after every rewrite); `finish`
drops the conversions the function no longer needs.

Each kind of op is lowered by a function `lower_<kind>(fl, op) -> SSAValue` in the module named
after the kind (`accumulate`, `requantize`, `elementwise`, `pool`, `data_movement`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import (
    BytesAttr,
    DenseIntOrFPElementsAttr,
    TensorType,
    UnknownLoc,
    i32,
)
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.pattern_rewriter import PatternRewriter
from xdsl.rewriter import InsertPoint, Rewriter
from xdsl.traits import ConstantLike
from xdsl.utils.exceptions import PassFailedException

from qaccel.targets.base import constant_value, describe_op, describe_value, is_constant
from qaccel.dialects import accel, q, tfl, vta
from qaccel.dialects.quant import storage_range

PASS = "lower-q-to-accel"
BiasPlacement = Literal["alu", "preload"]


class LoweringError(Exception):
    """An op of an accelerator function that cannot be lowered (message names it)."""


def storage_of(t: Attribute) -> tuple[int, int]:
    element = t.element_type if isinstance(t, TensorType) else t
    storage = accel._storage(element)
    assert storage is not None
    return storage_range(storage)


def describe(value: SSAValue) -> str:
    """A value as the user wrote it: an argument rather than its entry `accel.unpack`."""
    owner = value.owner
    return describe_value(owner.input if isinstance(owner, accel.UnpackOp) else value)


class FunctionLowering:
    """The lowering of one accelerator function: its state and the shared arithmetic."""

    def __init__(self, f: func.FuncOp, bias_placement: BiasPlacement, block: int):
        self.f = f
        self.bias_placement = bias_placement
        self.absorbed: dict[Operation, Operation] = {}  # accumulating op -> its folded q.bias_add
        self.zero_point_folded: set[Operation] = set()  # q.requantize whose input zp is in a bias
        self.constants: dict[tuple, SSAValue] = {}
        self.widened: dict[SSAValue, SSAValue] = {}
        self.point: InsertPoint | None = None
        self.rewriter: PatternRewriter | None = None
        self.block = block
        self.lowered_from: dict[Operation, str] = {}  # materialized unpack -> the q op it replaced
        self.packed_types: dict[tuple[TensorType, Attribute | None], TensorType] = {}

    # --- helpers shared by every kind of op ---------------------------------------------

    def emit(self, op: Operation) -> SSAValue:
        assert self.point is not None and self.rewriter is not None
        self.rewriter.insert(op, self.point)
        return op.results[0]

    def packed_type(self, t: TensorType, element: Attribute | None = None) -> TensorType:
        key = (t, element)
        found = self.packed_types.get(key)
        if found is None:  # types are immutable: one per plain type (and element)
            if len(t.get_shape()) < 2:
                raise LoweringError(f"its {t} result has no packed layout (rank < 2)")
            packing = accel.Packing.activations(len(t.get_shape()), self.block)
            found = TensorType(element or t.element_type, packing.packed_shape(t.get_shape()))
            self.packed_types[key] = found
        return found

    def constant_array(self, value: SSAValue, what: str) -> np.ndarray:
        """The plain value of a constant operand (through a weight `accel.unpack`)."""
        from qaccel.kernels.layout import unpack

        owner = value.owner
        if isinstance(owner, accel.UnpackOp) and isinstance(owner.input.owner, tfl.ConstOp):
            packed = owner.input.owner.as_array()
            return unpack(packed, owner.packing, tuple(owner.output.type.get_shape()))
        array = constant_value(value)
        if array is not None:
            return np.asarray(array)
        raise LoweringError(
            f"{what} is computed at run time ({describe(value)}); the accelerator needs "
            "it at compile time"
        )

    def constant(self, array: np.ndarray, element: Attribute, key: tuple | None) -> SSAValue:
        """A `tfl.const` of `array` (storage dtype) and element type `element`, built once per
        `key`."""
        if key is not None and key in self.constants:
            return self.constants[key]
        storage = accel._storage(element)
        attr = DenseIntOrFPElementsAttr(
            TensorType(storage, array.shape), BytesAttr(np.ascontiguousarray(array).tobytes())
        )
        value = self.emit(tfl.ConstOp(attr, TensorType(element, array.shape)))
        if key is not None:
            self.constants[key] = value
        return value

    def packed_of(self, value: SSAValue) -> SSAValue:
        """The packed form of a plain value: the lowered producer's result, a packed argument,
        or a constant packed at compile time."""
        owner = value.owner
        if isinstance(owner, accel.UnpackOp):  # an entry unpack, or a lowered op's result
            return owner.input
        t = value.type
        if isinstance(t, TensorType) and is_constant(value) and len(t.get_shape()) >= 2:
            from qaccel.kernels.layout import pack

            packing = accel.Packing.activations(len(t.get_shape()), self.block)
            data = pack(
                self.constant_array(value, "a constant"), packing, accel.default_padding_value(t)
            )
            return self.constant(data, t.element_type, ("activation", value))
        raise LoweringError(
            f"operand {describe(value)} has no packed form (not a packed argument, a "
            "lowered op's result or a constant of rank >= 2)"
        )

    def int32(self, value: SSAValue) -> SSAValue:
        """int8 data widened to int32 accumulators (LOAD ACC8), once per value; int32 stays."""
        if accel.storage_width(value.type) == 32:
            return value
        widened = self.widened.get(value)
        if widened is None:
            widened = self.emit(accel.WidenOp(value, TensorType(i32, value.type.get_shape())))
            self.widened[value] = widened
        return widened

    def lanes_of(self, value: SSAValue) -> int:
        return accel.packed_lanes(value.type.get_shape())

    def requantize(
        self, v: SSAValue, multiplier: np.ndarray, shift: np.ndarray, where: str
    ) -> SSAValue:
        """TFLite's `MultiplyByQuantizedMultiplier` of int32 accumulators, per tensor or per
        channel: `RDBPOT(SRDHM(x << max(s, 0), M), max(-s, 0))`."""
        shift = np.asarray(shift, np.int64)
        if np.any(np.abs(shift) > 31):
            worst = int(shift[np.argmax(np.abs(shift))])
            raise LoweringError(f"{where} shift {worst} is beyond the ALU's 31-bit shifts")
        lanes = self.lanes_of(v)
        if np.any(shift > 0):
            left = accel.per_lane(np.maximum(shift, 0), lanes, spread=False)
            v = self.emit(accel.ShiftLeftOp(v, left))
        v = self.emit(accel.RoundMultiplyOp(v, accel.per_lane(multiplier, lanes, spread=False)))
        right = accel.per_lane(np.maximum(-shift, 0), lanes, spread=False)
        return self.emit(accel.RoundRShiftOp(v, right))

    def saturate(self, v: SSAValue, zero_point: int, result: TensorType) -> SSAValue:
        """`clamp(v + zero_point)` to the result's storage, exact for every int32 `v` (clamp
        first: the add then cannot wrap), narrowed to the result type."""
        lo, hi = storage_of(result)
        low = int(np.clip(lo - zero_point, accel.INT32_MIN, accel.INT32_MAX))
        high = int(np.clip(hi - zero_point, accel.INT32_MIN, accel.INT32_MAX))
        v = self.emit(accel.MaxOp(v, value=[low]))
        v = self.emit(accel.MinOp(v, value=[high]))
        if zero_point:
            v = self.emit(accel.AddOp(v, value=[zero_point]))
        if accel.storage_width(result) == 32:
            return v
        return self.emit(accel.NarrowOp(v, self.packed_type(result)))

    # --- driver --------------------------------------------------------------------------

    def fail(
        self, op: Operation | None, message: str, where: str | None = None
    ) -> PassFailedException:
        if where is None:
            where = describe_op(op) if op is not None else None
        prefix = f"{where}: " if where is not None else ""
        return PassFailedException(f"{PASS}: @{self.f.sym_name.data}: {prefix}{message}")

    def replace(
        self, op: q.QOp, rewriter: PatternRewriter, lower: Callable[[q.QOp], SSAValue]
    ) -> None:
        """Lower `op` (and the q.bias_add it folds) before it; its uses get the lowered packed
        value through an `accel.unpack` (removed when a pack or another lowering consumes
        it)."""
        self.point, self.rewriter = InsertPoint.before(op), rewriter
        try:
            lowered = lower(op)
        except LoweringError as e:
            raise self.fail(op, str(e)) from None
        if lowered.name_hint is None:
            lowered.name_hint = op.results[0].name_hint
        tail = self.absorbed.pop(op, op)
        plain = tail.results[0]
        if isinstance(lowered.owner, Operation) and not isinstance(tail.location, UnknownLoc):
            lowered.owner.location = tail.location  # the original tensor it computes, if named
        packing = accel.Packing.activations(len(plain.type.get_shape()), self.block)
        unpack = accel.UnpackOp(lowered, packing, plain.type)
        rewriter.insert(unpack, self.point)
        self.lowered_from[unpack] = describe_op(tail)
        rewriter.replace_all_uses_with(plain, unpack.output)
        if tail is not op:
            rewriter.erase(tail)
        rewriter.erase(op)

    def check(self, lowered_ops: tuple[type[q.QOp], ...]) -> None:
        """The function can be lowered: packed, one block, only `lowered_ops` among its q ops."""
        f = self.f
        if accel.PACKED_FUNCTION_ATTR not in f.attributes:
            raise self.fail(None, "not in the packed layout yet: run insert-pack-unpack first")
        if len(f.body.blocks) != 1:
            raise self.fail(None, "accelerator functions must have one block")
        for op in f.body.block.ops:
            if isinstance(op, q.QOp) and type(op) not in lowered_ops:
                raise self.fail(op, "has no accelerator form (the target should not accept it)")
            known = q.QOp | accel.AccelOp | vta.VtaOp | func.ReturnOp
            if not isinstance(op, known) and not op.has_trait(ConstantLike):
                raise self.fail(op, "cannot run on the accelerator: not a q or accel op")

    def finish(self) -> None:
        """Results are packed already: `accel.pack` of a lowered value's unpack is the value;
        conversions and constants nothing uses are erased."""
        block = self.f.body.block
        for op in list(block.ops):
            if isinstance(op, accel.PackOp) and isinstance(op.input.owner, accel.UnpackOp):
                new = op.input.owner.input
                if new.type != op.output.type:
                    raise self.fail(op, f"lowered value has type {new.type}, not {op.output.type}")
                op.output.replace_all_uses_with(new)
        for op in reversed(list(block.ops)):
            if isinstance(op, func.ReturnOp) or op.results and any(r.uses for r in op.results):
                continue
            if isinstance(op, q.QOp | accel.PackOp | accel.UnpackOp) or op.has_trait(ConstantLike):
                Rewriter.erase_op(op)
        for op in block.ops:
            if op in self.lowered_from:
                raise self.fail(
                    None, "its result leaves the function unpacked; cannot lower it",
                    self.lowered_from[op],
                )  # fmt: skip
