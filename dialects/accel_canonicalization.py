"""The `accel` compute ops' canonicalization patterns (the `canonicalize-accel` pass runs only
them).

`lower-q-to-accel` emits each q op's sequence on its own (a requantize ends with its clamp to
int8, the zero-point add and a narrowing; a following `q.relu` widens again and clamps). These
patterns fuse what that leaves behind, without ever changing a value:

    %m = accel.round_rshift %a by [7]               %m = accel.round_rshift %a by [7]
    %lo = accel.max %m by [-128 - zp]               %lo = accel.max %m by [0 - zp]
    %hi = accel.min %lo by [127 - zp]               %hi = accel.min %lo by [6 - zp]
    %z = accel.add %hi by [zp]              =>      %z = accel.add %hi by [zp]
    %n = accel.narrow %z : i32 -> i8                %y = accel.narrow %z : i32 -> i8
    %w = accel.widen %n : i8 -> i32
    %r0 = accel.max %w by [0]                       (relu [0, 6] merged into the clamp)
    %r1 = accel.min %r0 by [6]
    %y = accel.narrow %r1 : i32 -> i8

- **clamps that cannot clip fold away**: `max(x, a)` when every value `x` can take is >= a
  (likewise `min`), from a value-range analysis (`value_range`) that follows clamps, widenings,
  adds, shifts and rounding multiplies;
- **consecutive clamps merge**: `max(max(x, a), b) = max(x, max(a, b))`, `min` likewise, and
  `max(min(x, b), a) = min(max(x, a), b)` when `a <= b` puts pairs in max-then-min order;
  a clamp after `accel.add x, c` moves before it when the range analysis proves the add cannot
  wrap (`max(x + c, a) = max(x, a - c) + c`); a clamp of a widened `accel.host_requantize`
  tightens its clamp instead;
- **identities drop**: `round_rshift` / `shift_left` by 0, `add` / `bias_add_zp` of 0,
  `mul` by 1; `widen(narrow(x)) = x` when `x` fits the narrow type, `narrow(widen(y)) = y`;
- **constants combine**: `add(add(x, a), b)` and `bias_add_zp` pairs (modulo 2^32, exact),
  `shift_left(shift_left(x, a), b)` when `a + b <= 31`;
- **pads fold into convolutions**: `conv2d_zp(pad(x, p, v))` with the conv's own pad value `v`
  is `conv2d_zp(x)` with the paddings added (when no window would see padding only), so the
  DMA pads while loading instead of a pad pass over DRAM:

      %p = accel.pad %x pad_value(-1) padding = [3, 3, 3, 3] : ...x224x224... -> ...x230x230...
      %y = accel.conv2d_zp %p, %w pad_value(-1) ... padding = [0, 0, 0, 0] ...
    =>
      %y = accel.conv2d_zp %x, %w pad_value(-1) ... padding = [3, 3, 3, 3] ...

The ops declare these patterns through `HasCanonicalizationPatternsTrait`, so xDSL's generic
`canonicalize` applies them too; this pass applies nothing else (no folding of other dialects).
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Iterator, Sequence
from typing import ClassVar

import numpy as np
from qaccel.dialects import accel
from qaccel.dialects.quant import storage_range
from qaccel.kernels import arithmetic as ar
from xdsl.dialects.builtin import TensorType
from xdsl.ir import Operation, SSAValue
from xdsl.pattern_rewriter import (
    PatternRewriter,
    PatternRewriterListener,
    RewritePattern,
    op_type_rewrite_pattern,
)

INT32 = (accel.INT32_MIN, accel.INT32_MAX)

# --------------------------------------------------------------------------------------------
# Value ranges


def _type_range(v: SSAValue) -> tuple[int, int]:
    t = v.type
    storage = accel._storage(t.element_type) if isinstance(t, TensorType) else None
    return storage_range(storage) if storage is not None else INT32


def _fits(lo: int, hi: int, bounds: tuple[int, int] = INT32) -> bool:
    return bounds[0] <= lo and hi <= bounds[1]


def _corners(fn: Callable, lo: int, hi: int, values: np.ndarray) -> tuple[int, int]:
    """The range of `fn(x, v)` over x in [lo, hi] and v in values, for fn monotone in x."""
    v = np.ascontiguousarray(values)
    if v.size > 2 and _monotone_in_v(fn, v):
        v = np.array([v.min(), v.max()], dtype=v.dtype)  # the extremes are at the corners
    return _corners_of(fn, int(lo), int(hi), v.dtype.str, v.tobytes())


def _monotone_in_v(fn: Callable, v: np.ndarray) -> bool:
    """Whether `fn(x, v)` is also monotone in v for every x (and its extremes over a box of
    x and v are at the box's corners), so that only v's extremes matter: `x * v`; `x << v`,
    `rounding_divide_by_pot(x, v)` for shifts v >= 0; SRDHM, a monotone function of `x * v`
    but at its saturation point (x = v = INT32_MIN, not taken here)."""
    if fn is _times:
        return True
    if fn is _shifted_left:  # int32 x << 31 at most: no int64 overflow
        return 0 <= int(v.min()) and int(v.max()) <= 31
    if fn is ar.rounding_divide_by_pot:
        return 0 <= int(v.min()) and int(v.max()) <= 62
    if fn is ar.saturating_rounding_doubling_high_mul:
        return int(v.min()) > accel.INT32_MIN
    return False


@functools.lru_cache(maxsize=4096)
def _corners_of(fn: Callable, lo: int, hi: int, dtype: str, data: bytes) -> tuple[int, int]:
    """`_corners` once per distinct question: the clamps of a chain ask again for the ranges
    below them, and each asks about the same per-channel multipliers and shifts."""
    x = np.array([lo, hi], dtype=np.int64)[:, None]
    out = fn(x, np.frombuffer(data, dtype).astype(np.int64)[None, :])
    return int(out.min()), int(out.max())


def _times(x: np.ndarray, v: np.ndarray) -> np.ndarray:
    return x * v


def _shifted_left(x: np.ndarray, s: np.ndarray) -> np.ndarray:
    return x << s


def _operand_values(op: accel._BinaryOp, rng) -> tuple[int, int]:
    if op.rhs is not None:
        return rng(op.rhs)
    values = op.values
    assert values is not None
    return int(values.min()), int(values.max())


def _range_of(op: Operation, rng: Callable[[SSAValue], tuple[int, int]]) -> tuple[int, int] | None:
    """The range of `op`'s result from its operands', None when nothing better than its type's
    range is known."""
    if isinstance(op, accel.WidenOp | accel.NarrowOp | accel.MaxPool2DOp):
        lo, hi = rng(op.operands[0])
        return (lo, hi) if _fits(lo, hi, _type_range(op.results[0])) else None
    if isinstance(op, accel.MaxOp | accel.MinOp):
        lo, hi = rng(op.lhs)
        a_lo, a_hi = _operand_values(op, rng)
        if isinstance(op, accel.MaxOp):
            return max(lo, a_lo), max(hi, a_hi)
        return min(lo, a_lo), min(hi, a_hi)
    if isinstance(op, accel.AddOp | accel.BiasAddZpOp):
        lo, hi = rng(op.operands[0])
        if isinstance(op, accel.AddOp):
            a_lo, a_hi = _operand_values(op, rng)
        else:
            a_lo, a_hi = int(op.values.min()), int(op.values.max())
        return (lo + a_lo, hi + a_hi) if _fits(lo + a_lo, hi + a_hi) else None
    if isinstance(op, accel.MulOp) and op.values is not None:
        lo, hi = rng(op.lhs)
        r = _corners(_times, lo, hi, op.values)
        return r if _fits(*r) else None
    if isinstance(op, accel.ShiftLeftOp):
        lo, hi = rng(op.input)
        r = _corners(_shifted_left, lo, hi, op.values)
        return r if _fits(*r) else None
    if isinstance(op, accel.RoundMultiplyOp):
        lo, hi = rng(op.input)
        return _corners(ar.saturating_rounding_doubling_high_mul, lo, hi, op.values)
    if isinstance(op, accel.RoundRShiftOp):
        lo, hi = rng(op.input)
        return _corners(ar.rounding_divide_by_pot, lo, hi, op.values)
    if isinstance(op, accel.SumPool2DOp | accel.ReduceSumOp):
        lo, hi = rng(op.input)
        if isinstance(op, accel.SumPool2DOp):
            n = int(np.prod(op.array_prop("window")))
        else:
            n = int(np.prod(op.input.type.get_shape())) // int(np.prod(op.output.type.get_shape()))
        return (n * lo, n * hi) if _fits(n * lo, n * hi) else None
    if isinstance(op, accel.HostRequantizeOp | accel.HostPool2DOp):
        return op.int_prop("min"), op.int_prop("max")
    if isinstance(op, accel.LutOp):
        table = op.array_prop("table")
        return int(table.min()), int(table.max())
    if isinstance(op, accel.ReshapeOp | accel.CropOp):
        return rng(op.input)
    if isinstance(op, accel.PadOp):
        lo, hi = rng(op.input)
        pad = op.pad_value.value.data
        return min(lo, pad), max(hi, pad)
    if isinstance(op, accel.ConcatOp | accel.ConcatLanesOp):
        ranges = [rng(v) for v in op.inputs]
        return min(r[0] for r in ranges), max(r[1] for r in ranges)
    return None


_MAX_DEPTH = 64


def value_range(v: SSAValue) -> tuple[int, int]:
    """Bounds `[lo, hi]` of every value `v` can hold at run time (per element, all lanes),
    following the `accel` ops that define it (at most 64 deep); the range of its storage type
    when unknown."""
    if _active is not None:
        found = _active.value_range(v)
        if found is not None:
            return found
    return _value_range(v, 0, {})


def _value_range(v: SSAValue, depth: int, memo: dict) -> tuple[int, int]:
    if v in memo:  # a value reached along several paths is analysed once
        return memo[v]
    bounds = _type_range(v)
    owner = v.owner
    found = None
    if depth < _MAX_DEPTH and isinstance(owner, Operation):
        found = _range_of(owner, lambda u: _value_range(u, depth + 1, memo))
    if found is not None:
        bounds = max(found[0], bounds[0]), min(found[1], bounds[1])
    memo[v] = bounds
    return bounds


class _TooDeep(Exception):
    pass


class ValueRanges:
    """`value_range` remembered across questions while the IR changes under a rewriter whose
    listener is `listener()`: every value's range and height (the longest chain of defining
    ops the analysis follows from it), dropped with everything computed from it when its
    defining op is modified, replaced or erased.

    A remembered range is the analysis without its depth limit; it is `value_range`'s answer
    exactly when the value's height is at most the limit (no chain is cut), so a question
    whose value is higher is answered by `value_range`'s own walk (`value_range` returns
    None then)."""

    def __init__(self) -> None:
        self.known: dict[SSAValue, tuple[tuple[int, int], int]] = {}
        self.users: dict[SSAValue, list[SSAValue]] = {}  # value -> remembered ranges using it

    def value_range(self, v: SSAValue) -> tuple[int, int] | None:
        try:
            bounds, height = self._known(v, 0)
        except _TooDeep:
            return None
        return bounds if height <= _MAX_DEPTH else None

    def _known(self, v: SSAValue, depth: int) -> tuple[tuple[int, int], int]:
        known = self.known.get(v)
        if known is not None:
            return known
        bounds = _type_range(v)
        owner = v.owner
        height = 0
        if isinstance(owner, Operation):
            if depth >= _MAX_DEPTH:
                raise _TooDeep
            used: list[SSAValue] = []
            heights = [0]

            def rng(u: SSAValue) -> tuple[int, int]:
                r, h = self._known(u, depth + 1)
                used.append(u)
                heights.append(h)
                return r

            found = _range_of(owner, rng)
            if found is not None:
                bounds = max(found[0], bounds[0]), min(found[1], bounds[1])
            height = 1 + max(heights)
            for u in used:
                self.users.setdefault(u, []).append(v)
        known = self.known[v] = (bounds, height)
        return known

    def forget(self, values: Sequence[SSAValue]) -> None:
        stack = list(values)
        while stack:
            v = stack.pop()
            self.known.pop(v, None)
            stack.extend(self.users.pop(v, ()))

    def listener(self) -> PatternRewriterListener:
        def changed(op: Operation, *_) -> None:
            self.forget(op.results)

        return PatternRewriterListener(
            operation_removal_handler=[changed],
            operation_modification_handler=[changed],
            operation_replacement_handler=[changed],
        )


_active: ValueRanges | None = None
"""The ranges `value_range` remembers while `remembered_ranges` is active."""


@contextlib.contextmanager
def remembered_ranges() -> Iterator[ValueRanges]:
    """Within the block, `value_range` remembers its answers; every change to the IR must go
    through a rewriter listened to by the yielded cache's `listener()`."""
    global _active
    outer, _active = _active, ValueRanges()
    try:
        yield _active
    finally:
        _active = outer


# --------------------------------------------------------------------------------------------
# Helpers


def _combine(a: np.ndarray, b: np.ndarray, shape, fn) -> np.ndarray:
    """`fn` of two value lists (per tensor or per lane), per lane when either is."""
    n = 1 if a.size == b.size == 1 else accel.packed_lanes(shape)
    return fn(accel.per_lane(a.astype(np.int64), n), accel.per_lane(b.astype(np.int64), n))


def _single_use(v: SSAValue) -> bool:
    return v.has_one_use()


def _constant_clamp(op: Operation) -> bool:
    return isinstance(op, accel.MaxOp | accel.MinOp) and op.value is not None


# --------------------------------------------------------------------------------------------
# Clamps


class FoldUnclippingClamp(RewritePattern):
    """`max(x, a)` is `x` when x >= a always (range analysis); `min` likewise."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /):
        if not isinstance(op, accel.MaxOp | accel.MinOp):
            return
        lo, hi = value_range(op.lhs)
        if op.value is not None:
            a_lo, a_hi = int(op.values.min()), int(op.values.max())
        else:
            a_lo, a_hi = value_range(op.rhs)
        if (lo >= a_hi) if isinstance(op, accel.MaxOp) else (hi <= a_lo):
            rewriter.replace(op, [], [op.lhs])


class MergeClamps(RewritePattern):
    """`max(max(x, a), b) -> max(x, max(a, b))`, `min(min(x, a), b) -> min(x, min(a, b))`,
    and `max(min(x, b), a) -> min(max(x, a), b)` when a <= b (max-then-min order, so that
    consecutive clamps meet and merge)."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /):
        if not _constant_clamp(op):
            return
        inner = op.lhs.owner
        if not _constant_clamp(inner):
            return
        shape = op.lhs.type.get_shape()
        if type(inner) is type(op):
            fn = np.maximum if isinstance(op, accel.MaxOp) else np.minimum
            merged = _combine(inner.values, op.values, shape, fn)
            rewriter.replace(op, type(op)(inner.lhs, value=merged))
            return
        # op = max(min(x, b), a)
        ordered = np.all(_combine(op.values, inner.values, shape, lambda a, b: a <= b))
        if isinstance(op, accel.MaxOp) and _single_use(inner.output) and ordered:
            new_max = accel.MaxOp(inner.lhs, value=op.values)
            new_min = accel.MinOp(new_max, value=inner.values)
            rewriter.replace(op, [new_max, new_min])


class ClampThroughAdd(RewritePattern):
    """`max(x + c, a) -> max(x, a - c) + c` (and `min`) when `x + c` cannot wrap: moves the
    clamp that follows a zero-point add in front of it, next to the requantization's clamp."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /):
        if not _constant_clamp(op):
            return
        add = op.lhs.owner
        if not isinstance(add, accel.AddOp) or add.value is None or not _single_use(add.output):
            return
        lo, hi = value_range(add.lhs)
        c = add.values
        if not _fits(lo + int(c.min()), hi + int(c.max())):
            return
        shape = op.lhs.type.get_shape()
        bound = np.clip(_combine(op.values, c, shape, np.subtract), *INT32)
        clamp = type(op)(add.lhs, value=bound)
        rewriter.replace(op, [clamp, accel.AddOp(clamp, value=c)])


class FoldClampIntoHostRequantize(RewritePattern):
    """A per-tensor clamp of a widened `accel.host_requantize` (used once) tightens the
    requantization's own clamp: the host clamps anyway."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /):
        if not _constant_clamp(op) or op.values.size != 1:
            return
        widen = op.lhs.owner
        if not isinstance(widen, accel.WidenOp) or not _single_use(widen.output):
            return
        host = widen.input.owner
        if not isinstance(host, accel.HostRequantizeOp) or not _single_use(host.output):
            return
        a = int(op.values[0])
        lo, hi = host.int_prop("min"), host.int_prop("max")
        lo, hi = (
            (max(lo, a), max(hi, a)) if isinstance(op, accel.MaxOp) else (min(lo, a), min(hi, a))
        )
        if not _fits(lo, hi, _type_range(host.output)):
            return
        new = host.clone()
        new.properties["min"] = accel.IntegerAttr(lo, accel.i32)
        new.properties["max"] = accel.IntegerAttr(hi, accel.i32)
        rewriter.replace(op, [new, accel.WidenOp(new, widen.output.type)])


# --------------------------------------------------------------------------------------------
# Identities and constants


class DropIdentity(RewritePattern):
    """Shifts by 0, adds of 0 and multiplies by 1 leave their input unchanged."""

    IDENTITY: ClassVar[dict[type[Operation], int]] = {
        accel.RoundRShiftOp: 0, accel.ShiftLeftOp: 0, accel.BiasAddZpOp: 0, accel.AddOp: 0,
        accel.MulOp: 1,
    }  # fmt: skip

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /):
        neutral = self.IDENTITY.get(type(op))
        if neutral is None:
            return
        values = op.values
        if values is not None and np.all(values == neutral):
            rewriter.replace(op, [], [op.operands[0]])


class CombineConstants(RewritePattern):
    """`add(add(x, a), b) -> add(x, a + b)` and `bias_add_zp` pairs (both modulo 2^32, so
    exact); `shift_left(shift_left(x, a), b) -> shift_left(x, a + b)` when a + b <= 31 (low 32
    bits of `x * 2^a * 2^b` either way)."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /):
        if not isinstance(op, accel.AddOp | accel.BiasAddZpOp | accel.ShiftLeftOp):
            return
        inner = op.operands[0].owner
        if type(inner) is not type(op) or op.values is None or inner.values is None:
            return
        if not _single_use(inner.results[0]):
            return
        shape = op.operands[0].type.get_shape()
        total = _combine(inner.values, op.values, shape, np.add)
        if isinstance(op, accel.ShiftLeftOp):
            if total.max() > 31:
                return
            rewriter.replace(op, accel.ShiftLeftOp(inner.input, total))
            return
        total = ar.wrap_int32(total)
        if isinstance(op, accel.AddOp):
            rewriter.replace(op, accel.AddOp(inner.lhs, value=total))
        else:
            rewriter.replace(op, accel.BiasAddZpOp(inner.input, total))


class FoldPadIntoConv(RewritePattern):
    """`conv2d_zp(pad(x, p, v), pad_value=v) -> conv2d_zp(x, padding + p)` when the pad has no
    other user and each side's padding stays below the (dilated) kernel extent."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: accel.Conv2DZpOp, rewriter: PatternRewriter, /):
        pad = op.input.owner
        if not isinstance(pad, accel.PadOp) or not _single_use(pad.output):
            return
        if pad.pad_value.value.data != op.pad_value.value.data:
            return
        added = [int(v) for v in pad.array_prop("padding")]
        if len(added) != 4:
            return
        total = [a + b for a, b in zip(op.array_prop("padding"), added, strict=True)]
        kh, kw = op.filter.type.get_shape()[2:4]
        dh, dw = (int(v) for v in op.array_prop("dilations"))
        extents = ((kh - 1) * dh + 1,) * 2 + ((kw - 1) * dw + 1,) * 2
        if any(t >= e for t, e in zip(total, extents, strict=True)):
            return
        new = op.clone()
        new.operands = [pad.input, *op.operands[1:]]
        new.properties["padding"] = accel.i64_array(total)
        rewriter.replace_op(op, new)


class FoldWidenOfNarrow(RewritePattern):
    """`widen(narrow(x)) -> x` when every value of x fits the narrow type."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: accel.WidenOp, rewriter: PatternRewriter, /):
        narrow = op.input.owner
        if not isinstance(narrow, accel.NarrowOp) or narrow.input.type != op.output.type:
            return
        lo, hi = value_range(narrow.input)
        if _fits(lo, hi, _type_range(narrow.output)):
            rewriter.replace(op, [], [narrow.input])


class FoldNarrowOfWiden(RewritePattern):
    """`narrow(widen(y)) -> y`."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: accel.NarrowOp, rewriter: PatternRewriter, /):
        widen = op.input.owner
        if isinstance(widen, accel.WidenOp) and widen.input.type == op.output.type:
            rewriter.replace(op, [], [widen.input])


_CLAMP = (FoldUnclippingClamp(), MergeClamps(), ClampThroughAdd(), FoldClampIntoHostRequantize())
_PATTERNS: dict[str, tuple[RewritePattern, ...]] = {
    accel.MaxOp.name: _CLAMP,
    accel.MinOp.name: _CLAMP,
    accel.AddOp.name: (DropIdentity(), CombineConstants()),
    accel.MulOp.name: (DropIdentity(),),
    accel.BiasAddZpOp.name: (DropIdentity(), CombineConstants()),
    accel.ShiftLeftOp.name: (DropIdentity(), CombineConstants()),
    accel.RoundRShiftOp.name: (DropIdentity(),),
    accel.RoundMultiplyOp.name: (),
    accel.WidenOp.name: (FoldWidenOfNarrow(),),
    accel.NarrowOp.name: (FoldNarrowOfWiden(),),
    accel.HostRequantizeOp.name: (),
    accel.Conv2DZpOp.name: (FoldPadIntoConv(),),
}


def patterns_of(op_name: str) -> tuple[RewritePattern, ...]:
    """The canonicalization patterns of the `accel` op named `op_name`."""
    return _PATTERNS.get(op_name, ())


def all_patterns() -> tuple[RewritePattern, ...]:
    """Every `accel` canonicalization pattern, once each."""
    seen: dict[int, RewritePattern] = {}
    for patterns in _PATTERNS.values():
        for p in patterns:
            seen.setdefault(id(p), p)
    return tuple(seen.values())
