"""`lower-q-to-accel{bias-placement=alu|preload}`: the method's operator-level transformation (step
4): inside accelerator functions, q ops become the `accel` ops the accelerator executes, on the
packed layout.

Input: the output of `insert-pack-unpack`: accelerator functions (`qaccel.target`, marked
`accel.packed`) take and return packed tensors, unpack them on entry, pack results before
returning, and reach packed weight constants through an `accel.unpack`. The pass rewrites the
body to compute on packed data directly and drops those conversions; the signature does not
change. Host functions keep their q ops. A conv group (canonicalized; the relu merged):

    %x = accel.unpack %arg0 ...                     %acc = accel.conv2d_zp %arg0, %w_packed
    %w = accel.unpack %w_packed ...                        pad_value(-1) strides = [1, 1] ...
    %a = q.conv2d %x, %w {input_zero_point = -1}    %b = accel.bias_add_zp %acc by [...]
    %b = q.bias_add %a, %bias                =>     %m = accel.round_multiply %b by [...]
    %y = q.requantize %b {multiplier, shift,        %r = accel.round_rshift %m by [...]
           output_zero_point = -128}                %l = accel.max %r by [0]    (-128 - zp)
    %z = q.relu %y {min = -128, max = 127}          %h = accel.min %l by [255]  (127 - zp)
    %p = accel.pack %z ...                          %o = accel.add %h by [-128]
    func.return %p                                  %n = accel.narrow %o : i32 -> i8
                                                    func.return %n

## Arithmetic (exact, docs/isa.md §7)

- **Convolutions and matrix products** (`q.conv2d`, `q.depthwise_conv2d`, `q.dense`) become
  `accel.conv2d_zp` / `accel.dense_zp`: the GEMM over *raw* int8 inputs, padded with the input
  zero point (SETPAD), which TFLite's centred sum `Σ w (x - zp_in)` equals after subtracting
  `zp_in Σw`: that term is folded at compile time into `accel.bias_add_zp`'s bias,
  `qfused_bias = qbias - zp_in Σw` (modulo 2^32, like TFLite's int32 sums), together with the
  `q.bias_add` that follows (if its bias is constant) and a following fixed-point
  `q.requantize`'s input zero point. Weight zero points: `Σ (w - zp_w)(x - zp_in)` has a
  data-dependent term `zp_w Σx`, so a non-zero `zp_w` is folded into the weights instead,
  `w' = w - zp_w`, when every `w'` fits int8 (what the vta target's filter-zero-point check
  accepts); otherwise the pass fails naming the op. Depthwise and grouped convolutions are
  `accel.conv2d_zp` with `groups` over channel blocks (depthwise: one group per block,
  diagonal 16x16 tiles; a depth multiplier or group width that does not align with blocks
  falls back to fewer, larger groups with zero tiles).
- **`bias-placement`** is the method's variant: `alu` (a) adds `qfused_bias` after the GEMM
  (`accel.bias_add_zp`: ALU ADD of a parameter row); `preload` (b) puts it in the accumulators
  before the GEMM accumulates onto them (the `bias` of `accel.conv2d_zp` / `accel.dense_zp`:
  LOAD ACC of bias rows, no ALU add). Both are exact: the same sum modulo 2^32.
- **Fixed-point `q.requantize`** (TFLite's `MultiplyByQuantizedMultiplier`) becomes
  `accel.shift_left` (only where some channel's shift is positive: the left shift comes
  *before* the multiply and wraps in int32 as the C code does) + `accel.round_multiply` (SRDHM
  by M, per tensor or per channel) + `accel.round_rshift` (RoundingDivideByPOT by `-shift`),
  then the saturation: `accel.max` / `accel.min` by `[lo - zp_out, hi - zp_out]` *before*
  `accel.add` of `zp_out` (so the add cannot wrap and `clamp(x + zp)` is exact for every int32
  `x`), then `accel.narrow` (STORE OUT keeps the low 8 bits: the clamp must come first).
- **`q.relu`** becomes `accel.max` + `accel.min` by the activation range (on a widened int8
  input); canonicalization merges it into the requantization's clamp.
- **`q.lut`** (an element-wise int8 op as its 256-entry table) becomes `accel.lut` on the
  packed int8 data: a host step of the program between layers (the ALU cannot index a
  table), exact by construction.
- **FULLY_CONNECTED** (`q.requantize` with a double `scale`: LiteRT's reference kernel computes
  `round(double(acc) * scale)`, halves away from zero) is **requantized on the host**:
  `accel.host_requantize`, after the accelerator stores the int32 accumulators (STORE ACC),
  as docs/isa.md §7 plans. The naive lowering, `QuantizeMultiplier(scale)` and the
  RDMUL/RSHR sequence, is wrong on small, common accumulators: it rounds twice (scale 1/3,
  acc 4: SRDHM gives 8/3 -> 3, RSHR 3/2 -> 2, where round(4/3) = 1) and SRDHM takes negative
  halves toward zero (scale 0.5, acc -3: -1, where round(-1.5) = -2); its 31-bit multiplier also
  misses the double's 53 bits on large accumulators. A per-channel integer multiplier proved
  over the reachable accumulator range would need that range enumerated: up to 2^24.4 values
  per channel and 2^34 in all for MobileNetV2's classifier (1280 inputs), and no
  multiply-shift pair may exist at all. The host pass is one multiply and round per output.
  The clamp of a following `q.relu` folds into it (canonicalization).
- Element-wise ops the vta target accepts: `q.add` / `q.sub` (each side centred, shifted left
  by `left_shift`, rescaled; sum via `accel.add`, difference via `accel.mul` by -1 then
  `accel.add`; then the output rescale and clamp), `q.mul` (`accel.mul` of the centred sides),
  each side a tensor, a per-channel or scalar constant (rescaled at compile time) or a
  per-channel tensor broadcast over pixels; `q.max_pool2d` (`accel.max_pool2d`),
  `q.avg_pool2d` with a power-of-two window (`accel.sum_pool2d` + `accel.round_rshift`:
  TFLite's rounded division by `2^k` is RoundingDivideByPOT), both without padding; padded
  pools and averages over other tap counts (3x3, 25x5) are `accel.host_pool2d`, an exact host
  step of the accelerator program; `q.mean`
  over H and W (`accel.reduce_sum` + the requantization); `q.pad` of H and W (`accel.pad`);
  `q.concat` (`accel.concat`, by placement, along batch, spatial dimensions or whole
  channel blocks; `q.reshape` that keeps batch and channels (`accel.reshape`: the same packed
  bytes); `q.slice` of the spatial dimensions (`accel.crop`, a host step of the program);
  `accel.concat_lanes` when channels are concatenated and an input but the
  last does not fill whole blocks: lanes move, a host step of the accelerator program).
  int8 data reaches the ALU through `accel.widen` (LOAD ACC8).

An accelerator function holding anything else (an op the target did not accept, a
non-constant weight or bias, a pool with padding, ...) makes the pass fail with one line naming
the function, the op and the reason. Afterwards the `accel` canonicalization patterns run
(`canonicalize-accel`; `canonicalize=false` keeps the raw sequences).

## Structure

The channel block B is the module's target's (`#accel.target`, from `attach-target`). One
`RewritePattern` per q-op family (`PATTERNS`: `LowerAccumulate`, `LowerBiasAdd`,
`LowerRequantize`, ...) is applied by a `PatternRewriteWalker` once per op, in program order
(`dce_enabled=False`: unused pure ops stay until the end). Each replaces its op by the lowered
ops on packed values followed by an `accel.unpack` to the op's plain type, so the IR is valid
after every rewrite; a later pattern takes its operand's packed form from that unpack, and at
the end the function's result packs of those unpacks become the packed values and every unused
conversion and constant is erased. The arithmetic shared by the patterns (requantization,
saturation, filter tiles, constants built once per function) lives on `_FunctionLowering`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import (
    BytesAttr,
    DenseIntOrFPElementsAttr,
    ModuleOp,
    TensorType,
    UnknownLoc,
    i8,
    i32,
)
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)
from xdsl.rewriter import InsertPoint, Rewriter
from xdsl.traits import ConstantLike
from xdsl.utils.exceptions import PassFailedException

from qaccel.kernels import arithmetic as ar
from qaccel.targets.base import (
    TargetError,
    constant_value,
    describe_op,
    describe_value,
    is_constant,
    module_target,
)
from qaccel.dialects import accel, q, tfl
from qaccel.dialects.quant import storage_range
from qaccel.dialects.annotations import accelerator_functions
from qaccel.passes.canonicalize_accel import canonicalize_accel

PASS = "lower-q-to-accel"
BiasPlacement = Literal["alu", "preload"]


class LoweringError(Exception):
    """An op of an accelerator function that cannot be lowered (message names it)."""


# --------------------------------------------------------------------------------------------
# Values


def _storage_of(t: Attribute) -> tuple[int, int]:
    element = t.element_type if isinstance(t, TensorType) else t
    storage = accel._storage(element)
    assert storage is not None
    return storage_range(storage)


def _describe(value: SSAValue) -> str:
    """A value as the user wrote it: an argument rather than its entry `accel.unpack`."""
    owner = value.owner
    return describe_value(owner.input if isinstance(owner, accel.UnpackOp) else value)


def _per_channel_shape(shape: Sequence[int], out: Sequence[int]) -> bool:
    """`[1, ..., 1, C]` (or fewer dimensions) broadcasting over every pixel of `out`."""
    return (
        len(shape) <= len(out)
        and all(d == 1 for d in shape[:-1])
        and (not shape or shape[-1] in (1, out[-1]))
    )


def _divisors_desc(n: int) -> list[int]:
    return [d for d in range(n, 0, -1) if n % d == 0]


def block_grouped_filter(
    o_index: np.ndarray,
    i_index: np.ndarray,
    taps: np.ndarray,
    out_channels: int,
    in_channels: int,
    block: int,
) -> tuple[np.ndarray, int]:
    """Packed `[O/B, I/B/G, KH, KW, B, B]` tiles for a convolution where output channel
    `o_index[k]` reads input channel `i_index[k]` with the `taps[k]` (KH x KW) weights, and
    the largest number of block groups G for which no output block reads outside its group.
    Unconnected (and padded) lanes hold 0."""
    ob_n, ib_n = -(-out_channels // block), -(-in_channels // block)
    ob, oo = np.divmod(o_index, block)
    ib, ii = np.divmod(i_index, block)
    groups = next(
        g for g in _divisors_desc(math.gcd(ob_n, ib_n))
        if np.array_equal(ob // (ob_n // g), ib // (ib_n // g))
    )  # fmt: skip
    local = ib - (ob // (ob_n // groups)) * (ib_n // groups)
    kh, kw = taps.shape[1:]
    packed = np.zeros((ob_n, ib_n // groups, kh, kw, block, block), dtype=np.int8)
    packed[ob, local, :, :, oo, ii] = taps
    return packed, groups


# --------------------------------------------------------------------------------------------
# The lowering of one accelerator function


class _FunctionLowering:
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

    # --- helpers -------------------------------------------------------------------------

    def emit(self, op: Operation) -> SSAValue:
        assert self.point is not None and self.rewriter is not None
        self.rewriter.insert(op, self.point)
        return op.results[0]

    def packed_type(self, t: TensorType, element: Attribute | None = None) -> TensorType:
        if len(t.get_shape()) < 2:
            raise LoweringError(f"its {t} result has no packed layout (rank < 2)")
        packing = accel.Packing.activations(len(t.get_shape()), self.block)
        return TensorType(element or t.element_type, packing.packed_shape(t.get_shape()))

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
            f"{what} is computed at run time ({_describe(value)}); the accelerator needs "
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
            f"operand {_describe(value)} has no packed form (not a packed argument, a "
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
        lo, hi = _storage_of(result)
        low = int(np.clip(lo - zero_point, accel.INT32_MIN, accel.INT32_MAX))
        high = int(np.clip(hi - zero_point, accel.INT32_MIN, accel.INT32_MAX))
        v = self.emit(accel.MaxOp(v, value=[low]))
        v = self.emit(accel.MinOp(v, value=[high]))
        if zero_point:
            v = self.emit(accel.AddOp(v, value=[zero_point]))
        if accel.storage_width(result) == 32:
            return v
        return self.emit(accel.NarrowOp(v, self.packed_type(result)))

    # --- accumulating ops ----------------------------------------------------------------

    def filter_tiles(self, op: q.QOp, x: SSAValue) -> tuple[SSAValue, int, np.ndarray]:
        """(packed filter, block groups, Σ w' per output channel) with `w' = w - zp_w`."""
        w = self.constant_array(op.filter, "the filter").astype(np.int64)
        zp_w = op.int_prop("filter_zero_point")
        centred = w - zp_w
        if centred.size and (centred.min() < -128 or centred.max() > 127):
            raise LoweringError(
                f"filter zero point {zp_w}: weights minus zero point span "
                f"[{int(centred.min())}, {int(centred.max())}], outside int8 (the GEMM core "
                "multiplies int8 weights; a data-dependent zp_w * Σx term is not supported)"
            )
        block = self.block
        in_channels = accel.packed_lanes(x.type.get_shape())
        if isinstance(op, q.DenseOp):
            out_channels = w.shape[0]
            wsum = centred.sum(axis=1)
        elif isinstance(op, q.DepthwiseConv2DOp):
            out_channels = w.shape[3]
            wsum = centred.reshape(-1, out_channels).sum(axis=0)
        else:
            out_channels = w.shape[0]
            wsum = centred.reshape(out_channels, -1).sum(axis=1)
        groups = 1
        regular = isinstance(op, q.DenseOp) or (
            isinstance(op, q.Conv2DOp) and w.shape[3] == op.input.type.get_shape()[3]
        )
        if regular:
            owner = op.filter.owner
            packing = accel.Packing.weights(w.ndim, block, block)
            if zp_w == 0 and isinstance(owner, accel.UnpackOp) and owner.packing == packing:
                return owner.input, 1, wsum  # insert-pack-unpack's packed constant
            from qaccel.kernels.layout import pack

            tiles = pack(centred.astype(np.int8), packing, 0)
        else:
            if isinstance(op, q.DepthwiseConv2DOp):
                mult = op.int_prop("depth_multiplier")
                o_index = np.arange(out_channels)
                i_index = o_index // mult
                taps = centred[0].transpose(2, 0, 1)
            else:
                cin_g = w.shape[3]
                n_groups = op.input.type.get_shape()[3] // cin_g
                o_index = np.repeat(np.arange(out_channels), cin_g)
                group = o_index // (out_channels // n_groups)
                i_index = group * cin_g + np.tile(np.arange(cin_g), out_channels)
                taps = centred.transpose(0, 3, 1, 2).reshape(-1, *w.shape[1:3])
            tiles, groups = block_grouped_filter(
                o_index, i_index, taps.astype(np.int8), out_channels, in_channels, block
            )
        value = self.constant(tiles, i8, ("filter", op.filter, zp_w, type(op)))
        if value.name_hint is None and op.filter.name_hint:
            value.name_hint = f"{op.filter.name_hint.removesuffix('_unpacked')}_tiles"
        return value, groups, wsum

    def lower_accumulate(self, op: q.QOp) -> SSAValue:
        x = self.packed_of(op.input)
        if accel.storage_width(x.type) != 8:
            raise LoweringError(f"input is {x.type.element_type}: the GEMM core reads int8")
        filter, groups, wsum = self.filter_tiles(op, x)
        fused = -op.int_prop("input_zero_point") * wsum
        tail: Operation = op
        bias_add = op.output.get_user_of_unique_use()
        if isinstance(bias_add, q.BiasAddOp) and bias_add.input == op.output:
            bias = self.constant_array(bias_add.bias, "the bias").astype(np.int64)
            fused = fused + bias
            self.absorbed[op] = bias_add
            tail = bias_add
        requant = tail.results[0].get_user_of_unique_use()
        if isinstance(requant, q.RequantizeOp) and not requant.is_double:
            fused = fused - requant.int_prop("input_zero_point")
            self.zero_point_folded.add(requant)
        result = self.packed_type(op.output.type)
        lanes = accel.packed_lanes(result.get_shape())
        fused = accel.per_lane(ar.wrap_int32(fused), lanes, spread=False)
        preload = fused if self.bias_placement == "preload" and np.any(fused) else None
        if isinstance(op, q.DenseOp):
            acc = self.emit(accel.DenseZpOp(x, filter, result, bias=preload))
        else:
            _, oh, ow, _ = op.output.type.get_shape()
            _, h, w, _ = op.input.type.get_shape()
            kh, kw = op.filter.type.get_shape()[1:3]
            sh, sw = (int(v) for v in op.array_prop("strides"))
            dh, dw = (int(v) for v in op.array_prop("dilations"))
            padding = [int(v) for v in op.array_prop("padding")]
            expected = (
                accel._window_extent(h, padding[0] + padding[1], kh, sh, dh),
                accel._window_extent(w, padding[2] + padding[3], kw, sw, dw),
            )
            if expected != (oh, ow):
                raise LoweringError(
                    f"output {oh}x{ow} does not follow from the input, filter, strides and "
                    f"padding ({expected[0]}x{expected[1]})"
                )
            acc = self.emit(
                accel.Conv2DZpOp(
                    x, filter, result, strides=(sh, sw), dilations=(dh, dw), padding=padding,
                    pad_value=op.int_prop("input_zero_point"), groups=groups, bias=preload,
                )
            )  # fmt: skip
        acc.name_hint = op.output.name_hint
        if self.bias_placement == "alu" and np.any(fused):
            acc = self.emit(accel.BiasAddZpOp(acc, fused))
            hint = tail.results[0].name_hint if tail is not op else None
            acc.name_hint = hint or (
                f"{op.output.name_hint}_fused" if op.output.name_hint else None
            )
        return acc

    # --- the requantization tail ---------------------------------------------------------

    def lower_bias_add(self, op: q.BiasAddOp) -> SSAValue:
        acc = self.int32(self.packed_of(op.input))
        bias = self.constant_array(op.bias, "the bias").astype(np.int64)
        bias = accel.per_lane(ar.wrap_int32(bias), self.lanes_of(acc), spread=False)
        return self.emit(accel.BiasAddZpOp(acc, bias))

    def lower_requantize(self, op: q.RequantizeOp) -> SSAValue:
        v = self.int32(self.packed_of(op.input))
        result = op.output.type
        input_zp = op.int_prop("input_zero_point")
        output_zp = op.int_prop("output_zero_point")
        if op.is_double:
            scale = accel.per_lane(op.array_prop("scale"), self.lanes_of(v), 0.0, spread=False)
            return self.emit(
                accel.HostRequantizeOp(
                    v, self.packed_type(result), scale, (input_zp, output_zp), _storage_of(result)
                )
            )
        if input_zp and op not in self.zero_point_folded:
            v = self.emit(accel.AddOp(v, value=ar.wrap_int32([-input_zp])))
        v = self.requantize(v, op.array_prop("multiplier"), op.array_prop("shift"), "requantize")
        return self.saturate(v, output_zp, result)

    def lower_relu(self, op: q.ReluOp) -> SSAValue:
        x = self.packed_of(op.input)
        v = self.int32(x)
        v = self.emit(accel.MaxOp(v, value=[op.int_prop("min")]))
        v = self.emit(accel.MinOp(v, value=[op.int_prop("max")]))
        if accel.storage_width(op.output.type) == 32:
            return v
        return self.emit(accel.NarrowOp(v, self.packed_type(op.output.type)))

    def lower_lut(self, op: q.LutOp) -> SSAValue:
        x = self.packed_of(op.input)
        if accel.storage_width(x.type) != 8:
            raise LoweringError(f"a table lookup of {x.type} (int8 data only)")
        return self.emit(
            accel.LutOp(x, self.packed_type(op.output.type), op.array_prop("table"))
        )

    # --- element-wise ops ----------------------------------------------------------------

    def side(
        self,
        op: q.QOp,
        value: SSAValue,
        compute: Callable[[np.ndarray], np.ndarray],
        emit: Callable[[SSAValue], SSAValue],
    ) -> SSAValue | np.ndarray:
        """One operand of a binary op, transformed: a tensor (`emit` on the packed, widened
        value) or, for a constant, per-tensor/per-lane values or a packed int32 constant
        (`compute` at compile time)."""
        out = tuple(op.results[0].type.get_shape())
        shape = tuple(value.type.get_shape())
        if is_constant(value):
            data = compute(self.constant_array(value, "a constant").astype(np.int64))
            data = ar.wrap_int32(data)
            if data.size == 1:
                return data.reshape(1)
            if _per_channel_shape(shape, out):
                packed = self.packed_type(op.results[0].type).get_shape()
                return accel.per_lane(data.reshape(-1), accel.packed_lanes(packed), spread=False)
            if shape == out:
                from qaccel.kernels.layout import pack

                packing = accel.Packing.activations(len(out), self.block)
                return self.constant(pack(data.astype(np.int32), packing, 0), i32, None)
            raise LoweringError(
                f"constant operand of shape {list(shape)} broadcasts against {list(out)}: only "
                "scalars, per-channel and same-shape operands"
            )
        per_channel = (
            len(shape) == len(out) and _per_channel_shape(shape, out) and (shape[-1] == out[-1])
        )
        if shape != out and not per_channel:
            raise LoweringError(
                f"operand {_describe(value)} of shape {list(shape)} broadcasts against "
                f"{list(out)}: the ALU repeats whole rows only (per-channel operands)"
            )
        return emit(self.int32(self.packed_of(value)))

    def full_shape_first(
        self, op: q.QOp, a: SSAValue | np.ndarray, b: SSAValue | np.ndarray
    ) -> tuple[SSAValue, SSAValue | np.ndarray]:
        """(lhs, rhs) for a commutative ALU op: lhs a tensor with the result's shape."""
        packed = self.packed_type(op.results[0].type).get_shape()
        for lhs, rhs in ((a, b), (b, a)):
            if isinstance(lhs, SSAValue) and lhs.type.get_shape() == packed:
                return lhs, rhs
        raise LoweringError("no operand has the result's shape (both broadcast or constant)")

    def binary(self, cls, lhs: SSAValue, rhs: SSAValue | np.ndarray) -> SSAValue:
        if isinstance(rhs, SSAValue):
            return self.emit(cls(lhs, rhs))
        return self.emit(cls(lhs, value=rhs))

    def lower_add_sub(self, op: q._AddSubOp) -> SSAValue:
        left = op.int_prop("left_shift")
        if not 0 <= left <= 23:
            raise LoweringError(
                f"left_shift {left}: centred int8 values shifted left must stay within int32 "
                "(at most 23)"
            )

        def rescaled(side: str) -> SSAValue | np.ndarray:
            zp = op.int_prop(f"{side}_zero_point")
            m, s = op.int_prop(f"{side}_multiplier"), op.int_prop(f"{side}_shift")

            def compute(x: np.ndarray) -> np.ndarray:
                return ar.multiply_by_quantized_multiplier((x - zp) << left, m, s)

            def emit(v: SSAValue) -> SSAValue:
                if zp:
                    v = self.emit(accel.AddOp(v, value=[-zp]))
                if left:
                    v = self.emit(accel.ShiftLeftOp(v, [left]))
                return self.requantize(v, np.array([m]), np.array([s]), f"{side} rescale")

            return self.side(op, getattr(op, side), compute, emit)

        a, b = rescaled("lhs"), rescaled("rhs")
        if isinstance(op, q.SubOp):  # a - b = a + (-1) * b modulo 2^32
            if isinstance(b, SSAValue):
                b = self.emit(accel.MulOp(b, value=[-1]))
            else:
                b = ar.wrap_int32(-b.astype(np.int64))
        lhs, rhs = self.full_shape_first(op, a, b)
        raw = self.binary(accel.AddOp, lhs, rhs)
        v = self.requantize(
            raw, np.array([op.int_prop("output_multiplier")]),
            np.array([op.int_prop("output_shift")]), "output rescale",
        )  # fmt: skip
        return self.saturate(v, op.int_prop("output_zero_point"), op.output.type)

    def lower_mul(self, op: q.MulOp) -> SSAValue:
        def centred(side: str) -> SSAValue | np.ndarray:
            zp = op.int_prop(f"{side}_zero_point")

            def emit(v: SSAValue) -> SSAValue:
                return self.emit(accel.AddOp(v, value=[-zp])) if zp else v

            return self.side(op, getattr(op, side), lambda x: x - zp, emit)

        lhs, rhs = self.full_shape_first(op, centred("lhs"), centred("rhs"))
        prod = self.binary(accel.MulOp, lhs, rhs)
        v = self.requantize(
            prod, np.array([op.int_prop("multiplier")]), np.array([op.int_prop("shift")]), "mul"
        )
        return self.saturate(v, op.int_prop("output_zero_point"), op.output.type)

    # --- pooling, reductions, data movement ----------------------------------------------

    def window(self, op: q._PoolOp) -> tuple[list[int], list[int]]:
        kh, kw = (int(v) for v in op.array_prop("filter"))
        sh, sw = (int(v) for v in op.array_prop("strides"))
        pads = [int(v) for v in op.array_prop("padding")]
        _, h, w, _ = op.input.type.get_shape()
        _, oh, ow, _ = op.output.type.get_shape()
        if any(pads):
            raise LoweringError(
                f"padding {pads}: padded taps must not count, but accumulator loads pad with zeros"
            )
        if (oh - 1) * sh + kh > h or (ow - 1) * sw + kw > w or oh < 1 or ow < 1:
            raise LoweringError(f"a {kh}x{kw} window leaves the {h}x{w} input")
        if (oh, ow) != (
            accel._window_extent(h, 0, kh, sh, 1),
            accel._window_extent(w, 0, kw, sw, 1),
        ):
            raise LoweringError(f"output {oh}x{ow} does not follow from the window and strides")
        return [kh, kw], [sh, sw]

    def pool_result(self, op: q.QOp) -> TensorType:
        return self.packed_type(op.results[0].type, i32)

    def on_the_host(self, op: q._PoolOp) -> bool:
        """A pool the ALU trees cannot compute bit-exactly: padded taps (they must not count)
        or an average over a number of taps that is not a power of two."""
        kh, kw = (int(v) for v in op.array_prop("filter"))
        n = kh * kw
        return any(int(v) for v in op.array_prop("padding")) or (
            isinstance(op, q.AvgPool2DOp) and bool(n & (n - 1))
        )

    def lower_host_pool(self, op: q._PoolOp) -> SSAValue:
        """An exact host step of the accelerator program (`accel.host_pool2d`)."""
        lo, hi = _storage_of(op.output.type)
        if _storage_of(op.input.type) != (lo, hi) or (lo, hi) != (-128, 127):
            raise LoweringError("a host pool takes and gives int8")
        kind = "max" if isinstance(op, q.MaxPool2DOp) else "avg"
        return self.emit(accel.HostPool2DOp(
            self.packed_of(op.input), self.packed_type(op.output.type), kind,
            [int(v) for v in op.array_prop("filter")], [int(v) for v in op.array_prop("strides")],
            [int(v) for v in op.array_prop("padding")], lo, hi))  # fmt: skip

    def lower_max_pool(self, op: q.MaxPool2DOp) -> SSAValue:
        if self.on_the_host(op):
            return self.lower_host_pool(op)
        window, strides = self.window(op)
        v = self.int32(self.packed_of(op.input))
        v = self.emit(accel.MaxPool2DOp(v, self.pool_result(op), window, strides))
        return self.saturate(v, 0, op.output.type)

    def lower_avg_pool(self, op: q.AvgPool2DOp) -> SSAValue:
        if self.on_the_host(op):
            return self.lower_host_pool(op)
        window, strides = self.window(op)
        n = window[0] * window[1]
        if n & (n - 1):
            raise LoweringError(
                f"a {window[0]}x{window[1]} window averages {n} values: not a power of two "
                "(the ALU's rounding shift divides by powers of two only)"
            )
        v = self.int32(self.packed_of(op.input))
        v = self.emit(accel.SumPool2DOp(v, self.pool_result(op), window, strides))
        v = self.emit(accel.RoundRShiftOp(v, [n.bit_length() - 1]))
        return self.saturate(v, 0, op.output.type)

    def lower_mean(self, op: q.MeanOp) -> SSAValue:
        rank = len(op.input.type.get_shape())
        axes = sorted({int(a) % rank for a in op.array_prop("axes")})
        if not axes or any(not 1 <= a <= rank - 2 for a in axes):
            raise LoweringError(
                f"mean over axes {axes} of a rank-{rank} tensor: only spatial axes reduce "
                "along accumulator rows (batch or channel axes would mix lanes)"
            )
        x = self.int32(self.packed_of(op.input))
        result = self.pool_result(op)
        shape = x.type.get_shape()
        packed_axes = [a + 1 for a in axes]
        kept = tuple(1 if d in packed_axes else s for d, s in enumerate(shape))
        dropped = tuple(s for d, s in enumerate(shape) if d not in packed_axes)
        if tuple(result.get_shape()) not in (kept, dropped):
            raise LoweringError(
                f"result shape {list(op.output.type.get_shape())} is not the input's without "
                f"axes {axes}"
            )
        v = self.emit(accel.ReduceSumOp(x, result, packed_axes))
        offset = op.int_prop("input_zero_point") * op.int_prop("num_elements")
        if offset:
            v = self.emit(accel.AddOp(v, value=ar.wrap_int32([-offset])))
        v = self.requantize(
            v, np.array([op.int_prop("multiplier")]), np.array([op.int_prop("shift")]), "mean"
        )
        return self.saturate(v, op.int_prop("output_zero_point"), op.output.type)

    def lower_pad(self, op: q.PadOp) -> SSAValue:
        widths = op.array_prop("padding").reshape(-1, 2)
        rank = len(widths)
        if rank < 3 or widths[0].any() or widths[-1].any():
            raise LoweringError(
                f"pads {widths.tolist()}: only spatial dimensions are padded by the DMA (batch "
                "or channel padding would move lanes)"
            )
        lo, hi = _storage_of(op.output.type)
        pad_value = op.int_prop("pad_value")
        if not lo <= pad_value <= hi:
            raise LoweringError(f"pad value {pad_value} does not fit [{lo}, {hi}]")
        x = self.packed_of(op.input)
        spatial = [int(v) for v in widths[1:-1].reshape(-1)]
        return self.emit(accel.PadOp(x, self.packed_type(op.output.type), spatial, pad_value))

    def lower_slice(self, op: q.SliceOp) -> SSAValue:
        shape, out = op.input.type.get_shape(), op.output.type.get_shape()
        begin = [int(b) for b in op.array_prop("begin")]
        last = len(shape) - 1
        if len(shape) < 3 or any(begin[d] or out[d] != shape[d] for d in (0, last)):
            raise LoweringError(
                f"slices {list(out)} at {begin} out of {list(shape)}: only the dimensions "
                "between batch and channels can be cropped (anything else moves lanes)"
            )
        return self.emit(accel.CropOp(self.packed_of(op.input), self.packed_type(op.output.type),
                                      begin[1:last]))  # fmt: skip

    def lower_depth_to_space(self, op: q.DepthToSpaceOp) -> SSAValue:
        out_type = self.packed_type(op.output.type)
        return self.emit(accel.DepthToSpaceOp(
            self.packed_of(op.input), out_type, op.int_prop("block_size"),
            op.output.type.get_shape()[-1], accel.default_padding_value(op.output.type)))  # fmt: skip

    def lower_reshape(self, op: q.ReshapeOp) -> SSAValue:
        a, b = op.input.type.get_shape(), op.output.type.get_shape()
        if len(a) < 2 or len(b) < 2 or (a[0], a[-1]) != (b[0], b[-1]):
            raise LoweringError(
                f"reshapes {list(a)} to {list(b)}: only the dimensions between batch and "
                "channels may change (anything else moves lanes)"
            )
        return self.emit(accel.ReshapeOp(self.packed_of(op.input), self.packed_type(op.output.type)))

    def lower_concat(self, op: q.ConcatOp) -> SSAValue:
        rank = len(op.output.type.get_shape())
        axis = op.int_prop("axis") % rank
        if axis == rank - 1:
            channels = [v.type.get_shape()[-1] for v in op.inputs]
            if any(c % self.block for c in channels[:-1]):
                # Lanes move: an exact host step of the function's program (no DRAM placement).
                values = [self.packed_of(v) for v in op.inputs]
                return self.emit(
                    accel.ConcatLanesOp(values, self.packed_type(op.output.type), channels)
                )
        packed_axis = 0 if axis == 0 else 1 if axis == rank - 1 else axis + 1
        values = [self.packed_of(v) for v in op.inputs]
        return self.emit(accel.ConcatOp(values, self.packed_type(op.output.type), packed_axis))

    # --- driver --------------------------------------------------------------------------

    def fail(self, op: Operation | None, message: str, where: str | None = None) -> PassFailedException:
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

    def check(self) -> None:
        f = self.f
        if accel.PACKED_FUNCTION_ATTR not in f.attributes:
            raise self.fail(None, "not in the packed layout yet: run insert-pack-unpack first")
        if len(f.body.blocks) != 1:
            raise self.fail(None, "accelerator functions must have one block")
        for op in f.body.block.ops:
            if isinstance(op, q.QOp) and type(op) not in LOWERED_OPS:
                raise self.fail(op, "has no accelerator form (the target should not accept it)")
            if not isinstance(op, q.QOp | accel.AccelOp | func.ReturnOp) and not op.has_trait(
                ConstantLike
            ):
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


# --------------------------------------------------------------------------------------------
# One rewrite pattern per q-op family; the arithmetic is `_FunctionLowering`'s, per function.


@dataclass
class _LowerQOp(RewritePattern):
    functions: dict[func.FuncOp, _FunctionLowering]

    def lowering_of(self, op: Operation) -> _FunctionLowering | None:
        return self.functions.get(op.parent_op())  # type: ignore[arg-type]

    def lower(self, op: q.QOp, rewriter: PatternRewriter, method) -> None:
        lowering = self.lowering_of(op)
        if lowering is not None:  # host functions keep their q ops
            lowering.replace(op, rewriter, lambda o: method(lowering, o))


class LowerAccumulate(_LowerQOp):
    """`q.conv2d` / `q.depthwise_conv2d` / `q.dense` (+ the `q.bias_add` it folds) ->
    `accel.conv2d_zp` / `accel.dense_zp` (+ `accel.bias_add_zp`)."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if isinstance(op, q.Conv2DOp | q.DepthwiseConv2DOp | q.DenseOp):
            self.lower(op, rewriter, _FunctionLowering.lower_accumulate)


class LowerBiasAdd(_LowerQOp):
    """A `q.bias_add` no accumulating op folded -> `accel.bias_add_zp`."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: q.BiasAddOp, rewriter: PatternRewriter) -> None:
        self.lower(op, rewriter, _FunctionLowering.lower_bias_add)


class LowerRequantize(_LowerQOp):
    """`q.requantize` -> shift/multiply/round + clamp + zero point, or `accel.host_requantize`."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: q.RequantizeOp, rewriter: PatternRewriter) -> None:
        self.lower(op, rewriter, _FunctionLowering.lower_requantize)


class LowerRelu(_LowerQOp):
    """`q.relu` -> `accel.max` + `accel.min`."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: q.ReluOp, rewriter: PatternRewriter) -> None:
        self.lower(op, rewriter, _FunctionLowering.lower_relu)


class LowerLut(_LowerQOp):
    """`q.lut` -> `accel.lut` (a host step of the program)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: q.LutOp, rewriter: PatternRewriter) -> None:
        self.lower(op, rewriter, _FunctionLowering.lower_lut)


class LowerAddSub(_LowerQOp):
    """`q.add` / `q.sub` -> rescaled sides, `accel.add`, output rescale and clamp."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if isinstance(op, q.AddOp | q.SubOp):
            self.lower(op, rewriter, _FunctionLowering.lower_add_sub)


class LowerMul(_LowerQOp):
    """`q.mul` -> `accel.mul` of the centred sides, rescale and clamp."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: q.MulOp, rewriter: PatternRewriter) -> None:
        self.lower(op, rewriter, _FunctionLowering.lower_mul)


class LowerPool(_LowerQOp):
    """`q.max_pool2d` -> `accel.max_pool2d`; `q.avg_pool2d` -> `accel.sum_pool2d` + shift."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if isinstance(op, q.MaxPool2DOp):
            self.lower(op, rewriter, _FunctionLowering.lower_max_pool)
        elif isinstance(op, q.AvgPool2DOp):
            self.lower(op, rewriter, _FunctionLowering.lower_avg_pool)


class LowerMean(_LowerQOp):
    """`q.mean` over H and W -> `accel.reduce_sum` + requantization."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: q.MeanOp, rewriter: PatternRewriter) -> None:
        self.lower(op, rewriter, _FunctionLowering.lower_mean)


class LowerPad(_LowerQOp):
    """`q.pad` of H and W -> `accel.pad`."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: q.PadOp, rewriter: PatternRewriter) -> None:
        self.lower(op, rewriter, _FunctionLowering.lower_pad)


class LowerConcat(_LowerQOp):
    """`q.concat` -> `accel.concat`."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: q.ConcatOp, rewriter: PatternRewriter) -> None:
        self.lower(op, rewriter, _FunctionLowering.lower_concat)


class LowerReshape(_LowerQOp):
    """`q.reshape` keeping batch and channels -> `accel.reshape` (nothing moves)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: q.ReshapeOp, rewriter: PatternRewriter) -> None:
        self.lower(op, rewriter, _FunctionLowering.lower_reshape)


class LowerSlice(_LowerQOp):
    """`q.slice` of the spatial dimensions -> `accel.crop`."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: q.SliceOp, rewriter: PatternRewriter) -> None:
        self.lower(op, rewriter, _FunctionLowering.lower_slice)


class LowerDepthToSpace(_LowerQOp):
    """`q.depth_to_space` -> `accel.depth_to_space`."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: q.DepthToSpaceOp, rewriter: PatternRewriter) -> None:
        self.lower(op, rewriter, _FunctionLowering.lower_depth_to_space)


PATTERNS: tuple[type[_LowerQOp], ...] = (
    LowerAccumulate, LowerBiasAdd, LowerRequantize, LowerRelu, LowerLut, LowerAddSub, LowerMul,
    LowerPool, LowerMean, LowerPad, LowerConcat, LowerReshape, LowerSlice, LowerDepthToSpace,
)  # fmt: skip
LOWERED_OPS: tuple[type[q.QOp], ...] = (
    q.Conv2DOp, q.DepthwiseConv2DOp, q.DenseOp, q.BiasAddOp, q.RequantizeOp, q.ReluOp, q.LutOp,
    q.AddOp, q.SubOp, q.MulOp, q.MaxPool2DOp, q.AvgPool2DOp, q.MeanOp, q.PadOp, q.ConcatOp,
    q.ReshapeOp, q.SliceOp, q.DepthToSpaceOp,
)  # fmt: skip
"""The q ops the patterns lower (every other q op in an accelerator function is an error)."""


def lower_functions(functions: dict[func.FuncOp, _FunctionLowering]) -> None:
    """Apply the patterns in program order over each accelerator function, once per op (new
    ops are not revisited; unused pure ops are not erased on the way: `dce_enabled=False`)."""
    applier = GreedyRewritePatternApplier([p(functions) for p in PATTERNS], dce_enabled=False)
    for f, lowering in functions.items():
        lowering.check()
        PatternRewriteWalker(applier, apply_recursively=False).rewrite_region(f.body)
        lowering.finish()


@dataclass(frozen=True)
class LowerQToAccelPass(ModulePass):
    """Lower q ops inside accelerator functions to `accel` ops on the packed layout.

    The method's operator-level transformation: `q.conv2d` -> `accel.conv2d_zp` (padding with
    the input zero point), `q.bias_add` -> `accel.bias_add_zp` (`qbias - zp_in Σw`, folded at
    compile time), `q.requantize` -> `accel.round_multiply` + `accel.round_rshift` + clamp +
    `accel.add` of the output zero point + `accel.narrow`, `q.relu` -> `accel.max` +
    `accel.min`; FULLY_CONNECTED's double-precision requantization runs on the host
    (`accel.host_requantize`), and the other ops the vta target accepts lower to ALU and DMA
    ops. Entry unpacks, exit packs and weight unpacks disappear; signatures do not change;
    host functions are untouched. See the module docstring for the arithmetic.

        %a = q.conv2d %x, %w {...}           %acc = accel.conv2d_zp %x, %w_packed pad_value(-1) ...
        %b = q.bias_add %a, %bias      =>    %b = accel.bias_add_zp %acc by [...]
        %y = q.requantize %b {...}           %m = accel.round_multiply %b by [...]  ... narrow
    """

    name = "lower-q-to-accel"

    bias_placement: BiasPlacement = "alu"
    """Where the fused bias enters the accumulators: `alu`, added by the ALU after the GEMM
    (method's variant (a)); `preload`, loaded into them before the GEMM accumulates (variant
    (b)). (`schedule-vta`'s `bias-mode` is another choice: how the scheduled layer moves it.)"""

    canonicalize: bool = True
    """Run the `accel` canonicalization patterns afterwards (merging clamps, dropping no-ops)."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        functions = accelerator_functions(op)
        if not functions:
            return
        try:
            config = module_target(op).config
        except (TargetError, ValueError) as e:
            raise PassFailedException(f"{PASS}: {e}") from None
        block = getattr(config, "block", None)
        if not isinstance(block, int):
            raise PassFailedException(f"{PASS}: the module's target has no block size")
        lower_functions({f: _FunctionLowering(f, self.bias_placement, block) for f in functions})
        if self.canonicalize:
            for f in functions:
                canonicalize_accel(f)
