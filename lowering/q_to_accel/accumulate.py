"""Accumulating ops (docs/isa.md §7), exact:

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
"""

from __future__ import annotations

import math

import numpy as np
from xdsl.dialects.builtin import i8
from xdsl.ir import Operation, SSAValue

from qaccel.kernels import arithmetic as ar
from qaccel.dialects import accel, q, tfl
from qaccel.lowering.q_to_accel.function import FunctionLowering, LoweringError


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


def _centred(w: np.ndarray, zp_w: int) -> np.ndarray:
    """`w - zp_w` as int8 (it fits: checked)."""
    if zp_w == 0 and w.dtype == np.int8:
        return w
    return (w.astype(np.int64) - zp_w).astype(np.int8)


def filter_tiles(
    fl: FunctionLowering, op: q.QOp, x: SSAValue
) -> tuple[SSAValue, int, np.ndarray]:
    """(packed filter, block groups, Σ w' per output channel) with `w' = w - zp_w`."""
    zp_w = op.int_prop("filter_zero_point")
    if zp_w == 0 and isinstance(op, q.DenseOp | q.Conv2DOp):
        packed = _packed_filter(op, fl.block)
        if packed is not None:  # insert-pack-unpack's tiles, taken as they are
            return packed
    w = fl.constant_array(op.filter, "the filter")
    # w - zp_w's range and sums from w's own (exact in int64; no int64 copy of the filter)
    lo, hi = (int(w.min()) - zp_w, int(w.max()) - zp_w) if w.size else (0, 0)
    if lo < -128 or hi > 127:
        raise LoweringError(
            f"filter zero point {zp_w}: weights minus zero point span "
            f"[{lo}, {hi}], outside int8 (the GEMM core "
            "multiplies int8 weights; a data-dependent zp_w * Σx term is not supported)"
        )
    block = fl.block
    in_channels = accel.packed_lanes(x.type.get_shape())
    if isinstance(op, q.DenseOp):
        out_channels = w.shape[0]
        wsum = w.sum(axis=1, dtype=np.int64)
    elif isinstance(op, q.DepthwiseConv2DOp):
        out_channels = w.shape[3]
        wsum = w.reshape(-1, out_channels).sum(axis=0, dtype=np.int64)
    else:
        out_channels = w.shape[0]
        wsum = w.reshape(out_channels, -1).sum(axis=1, dtype=np.int64)
    if zp_w:
        wsum = wsum - zp_w * (w.size // max(out_channels, 1))
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

        tiles = pack(_centred(w, zp_w), packing, 0)
    else:
        centred = w.astype(np.int64) - zp_w
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
    value = fl.constant(tiles, i8, ("filter", op.filter, zp_w, type(op)))
    if value.name_hint is None and op.filter.name_hint:
        value.name_hint = f"{op.filter.name_hint.removesuffix('_unpacked')}_tiles"
    return value, groups, wsum


def _packed_filter(op: q.QOp, block: int) -> tuple[SSAValue, int, np.ndarray] | None:
    """`filter_tiles` of a convolution or matrix product whose int8 filter (zero point 0)
    reaches it as insert-pack-unpack's packed constant: that constant, one group, and Σ w
    per output channel summed on the tiles (no unpacked copy; lanes past the real channels
    left out, whatever the padding holds). None for any other filter."""
    owner = op.filter.owner
    if not isinstance(owner, accel.UnpackOp) or not isinstance(owner.input.owner, tfl.ConstOp):
        return None
    shape = tuple(owner.output.type.get_shape())
    if len(shape) != (2 if isinstance(op, q.DenseOp) else 4):
        return None
    if isinstance(op, q.Conv2DOp) and shape[3] != op.input.type.get_shape()[3]:
        return None  # grouped: tiles of its own
    if owner.packing != accel.Packing.weights(len(shape), block, block):
        return None
    tiles = owner.input.owner.as_array()  # [O/B, I/B, k..., B (out), B (in)]
    if tiles.dtype != np.int8 or tiles.ndim != len(shape) + 2:
        return None
    out_channels, in_channels = shape[0], shape[-1]
    wsum = _tile_sums(tiles)
    if in_channels % block:  # the last input block's padded lanes
        wsum -= _tile_sums(np.ascontiguousarray(tiles[:, -1:, ..., in_channels % block :]))
    return owner.input, 1, wsum.reshape(-1)[:out_channels]


def _tile_sums(tiles: np.ndarray) -> np.ndarray:
    """Σ over every axis but the first and the one before last of int8 `[O/B, I/B, k..., B
    (out), Bi]` tiles, as int64 `[O/B, B]`: the tiles' middle axes summed first (contiguous
    rows of B x Bi), in int32 when no sum can leave it (|Σ| <= 128 per term), then the lanes."""
    ob, bo, bi = tiles.shape[0], tiles.shape[-2], tiles.shape[-1]
    rows = tiles.reshape(ob, -1, bo * bi)
    exact32 = rows.shape[1] * 128 < 2**31
    summed = rows.sum(axis=1, dtype=np.int32 if exact32 else np.int64)
    return summed.reshape(ob, bo, bi).sum(axis=2, dtype=np.int64)


def lower_accumulate(fl: FunctionLowering, op: q.QOp) -> SSAValue:
    x = fl.packed_of(op.input)
    if accel.storage_width(x.type) != 8:
        raise LoweringError(f"input is {x.type.element_type}: the GEMM core reads int8")
    filter, groups, wsum = filter_tiles(fl, op, x)
    fused = -op.int_prop("input_zero_point") * wsum
    tail: Operation = op
    bias_add = op.output.get_user_of_unique_use()
    if isinstance(bias_add, q.BiasAddOp) and bias_add.input == op.output:
        bias = fl.constant_array(bias_add.bias, "the bias").astype(np.int64)
        fused = fused + bias
        fl.absorbed[op] = bias_add
        tail = bias_add
    requant = tail.results[0].get_user_of_unique_use()
    if isinstance(requant, q.RequantizeOp) and not requant.is_double:
        fused = fused - requant.int_prop("input_zero_point")
        fl.zero_point_folded.add(requant)
    result = fl.packed_type(op.output.type)
    lanes = accel.packed_lanes(result.get_shape())
    fused = accel.per_lane(ar.wrap_int32(fused), lanes, spread=False)
    preload = fused if fl.bias_placement == "preload" and np.any(fused) else None
    if isinstance(op, q.DenseOp):
        acc = fl.emit(accel.DenseZpOp(x, filter, result, bias=preload))
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
        acc = fl.emit(
            accel.Conv2DZpOp(
                x, filter, result, strides=(sh, sw), dilations=(dh, dw), padding=padding,
                pad_value=op.int_prop("input_zero_point"), groups=groups, bias=preload,
            )
        )  # fmt: skip
    acc.name_hint = op.output.name_hint
    if fl.bias_placement == "alu" and np.any(fused):
        acc = fl.emit(accel.BiasAddZpOp(acc, fused))
        hint = tail.results[0].name_hint if tail is not op else None
        acc.name_hint = hint or (
            f"{op.output.name_hint}_fused" if op.output.name_hint else None
        )
    return acc
