"""The built-in `vta` target: which q-op groups the VTA-like accelerator runs, and why not.

The checks name the hardware limit a group exceeds (buffer capacity, LOAD's padding fields,
the ALU's operations); `vta_target()` documents the decisions behind the accepted patterns.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np
from qaccel.kernels.layout import reshape_is_view
from xdsl.ir import Operation

from qaccel.targets.base import (
    Match,
    Pattern,
    RegionSummary,
    Target,
    check,
    constant_value,
    describe_value,
    is_constant,
    shape_of,
    storage_dtype,
    tensor_bytes,
)



def _ints(op: Operation, name: str) -> list[int]:
    return [int(v) for v in op.array_prop(name)]  # type: ignore[attr-defined]


def _int(op: Operation, name: str) -> int:
    return op.int_prop(name)  # type: ignore[attr-defined]


def _dtype_name(dtype: np.dtype | None) -> str:
    return "non-tensor" if dtype is None else str(np.dtype(dtype))


_OPERAND_NAMES = {
    "q.conv2d": ("input", "filter"),
    "q.depthwise_conv2d": ("input", "filter"),
    "q.dense": ("input", "filter"),
    "q.bias_add": ("accumulators", "bias"),
}


@check("int8")
def _int8_operands(m: Match) -> str | None:
    """The GEMM core multiplies int8 by int8; loads and stores move int8 tensors."""
    inside = set(m.ops)
    for op in m.ops:
        for i, v in enumerate(op.operands):
            if v.owner in inside or (op.name == "q.bias_add" and i == 1):
                continue  # int32 accumulators inside the group; int32 biases
            dtype = storage_dtype(v)
            if dtype != np.int8:
                names = _OPERAND_NAMES.get(op.name, ())
                what = names[i] if i < len(names) else f"operand {i}"
                return (
                    f"{what} of {op.name} is {_dtype_name(dtype)}: the accelerator loads int8 only"
                )
    out = storage_dtype(m.root.results[0])
    if out != np.int8:
        return f"result of {m.root.name} is {_dtype_name(out)}: the accelerator stores int8 only"
    return None


def _tile(m: Match) -> str:
    return f"{m.target.config.block_out}x{m.target.config.block_in}"


@check("constant-weights")
def _constant_weights(m: Match) -> str | None:
    acc = m.ops[0]
    if not is_constant(acc.operands[1]):
        return (
            f"filter of {acc.name} is computed at run time ({describe_value(acc.operands[1])}): "
            f"weights are packed into {_tile(m)} tiles at compile time"
        )
    bias = m.get("q.bias_add")
    if bias is not None and not is_constant(bias.operands[1]):
        return (
            f"bias is computed at run time ({describe_value(bias.operands[1])}): the bias is "
            "fused with the zero-point term at compile time"
        )
    return None


@check("filter-zero-point")
def _filter_zero_point(m: Match) -> str | None:
    acc = m.ops[0]
    zp = _int(acc, "filter_zero_point")
    if zp == 0:
        return None
    w = constant_value(acc.operands[1])
    if w is None:
        return f"filter zero point {zp} with run-time weights"
    lo, hi = int(w.min()) - zp, int(w.max()) - zp
    if lo < -128 or hi > 127:
        return (
            f"filter zero point {zp}: weights minus zero point span [{lo}, {hi}], outside int8 "
            "(the GEMM core multiplies int8 weights; a non-zero point must fold into them)"
        )
    return None


def _pad_limit(config) -> int:
    from qaccel.targets.vta.isa import Opcode, layout_of

    return (1 << layout_of(config).field(Opcode.LOAD, "y_pad_0").width) - 1


@check("padding")
def _conv_padding(m: Match) -> str | None:
    acc = m.ops[0]
    pads = _ints(acc, "padding")
    limit = _pad_limit(m.target.config)
    if max(pads) > limit:
        return (
            f"padding {pads} (top, bottom, left, right) exceeds the {limit} rows/columns a LOAD "
            "can pad (4-bit pad fields)"
        )
    return None


def _kib(n: int) -> str:
    return f"{n / 1024:g} KiB"


@check("buffers")
def _conv_buffers(m: Match) -> str | None:
    """The smallest tile the schedule can use must fit: one output pixel of one output-channel
    block, accumulating over input-channel blocks (the accumulator stays on chip, so
    input channels need not fit at once)."""
    acc = m.ops[0]
    c = m.target.config
    kh, kw = shape_of(acc.operands[1])[1:3]
    dh, dw = _ints(acc, "dilations")
    eff_h, eff_w = (kh - 1) * dh + 1, (kw - 1) * dw + 1
    wgt_tiles, wgt_depth = kh * kw, c.depth("wgt")
    if wgt_tiles > wgt_depth:
        return (
            f"a {kh}x{kw} filter needs {wgt_tiles} weight tiles "
            f"({_kib(wgt_tiles * c.elem_bytes('wgt'))}) "
            f"per {_tile(m)} channel block; the weight buffer holds {wgt_depth} "
            f"({_kib(wgt_depth * c.elem_bytes('wgt'))})"
        )
    inp_rows, inp_depth = eff_h * eff_w, c.depth("inp")
    if inp_rows > inp_depth:
        dil = f" dilated by {dh}x{dw}" if (dh, dw) != (1, 1) else ""
        return (
            f"the {kh}x{kw} window{dil} spans {eff_h}x{eff_w} input pixels = {inp_rows} input "
            f"rows for one output pixel; the input buffer holds {inp_depth} "
            f"({_kib(inp_depth * c.elem_bytes('inp'))})"
        )
    return None


@check("requantize")
def _requantize_range(m: Match) -> str | None:
    req = m.get("q.requantize")
    if req is None or req.properties.get("shift") is None:
        return None  # double-precision scale (FULLY_CONNECTED): lower-q-to-accel decides how
    shifts = _ints(req, "shift")
    worst = max(shifts, key=abs)
    if abs(worst) > 31:
        return f"requantize shift {worst} is beyond the ALU's 31-bit shifts"
    return None


# ALU operations each q op needs on the accumulator rows (saturation before the truncating
# int8 STORE is a MAX then a MIN).
_ALU_NEEDS: dict[str, tuple[str, ...]] = {
    "q.bias_add": ("add",),
    "q.requantize": ("rdmul", "rshr", "add", "max", "min"),
    "q.relu": ("max", "min"),
    "q.add": ("add", "shr", "rdmul", "rshr", "max", "min"),
    "q.sub": ("add", "mul", "shr", "rdmul", "rshr", "max", "min"),
    "q.mul": ("add", "mul", "shr", "rdmul", "rshr", "max", "min"),
    "q.max_pool2d": ("max",),
    "q.avg_pool2d": ("add", "rshr"),
    "q.mean": ("add", "shr", "rdmul", "rshr", "max", "min"),
    "q.pad": ("add",),
    "q.squared_difference": ("add", "mul", "shr", "rdmul", "rshr", "max", "min"),
}


@check("alu-ops")
def _alu_ops(m: Match) -> str | None:
    have = m.target.features
    for op in m.ops:
        missing = [a for a in _ALU_NEEDS.get(op.name, ()) if a not in have]
        if missing:
            return (
                f"{op.name} needs ALU {'/'.join(a.upper() for a in missing)}, which this "
                f"configuration lacks (it has {', '.join(sorted(a.upper() for a in have))})"
            )
    return None


def lane_broadcast(shape, out) -> bool:
    """`shape` is `out` with one channel (`[..., 1]` against `[..., C]`): the operand's lane 0
    broadcast over the channels, by a host step of the program (`accel.lane_broadcast`)."""
    shape, out = tuple(shape), tuple(out)
    return len(shape) == len(out) >= 2 and shape[-1] == 1 and out[-1] > 1 and \
        shape[:-1] == out[:-1]  # fmt: skip


@check("broadcast")
def _broadcast(m: Match) -> str | None:
    op = m.ops[0]
    out = shape_of(op.results[0])
    for v in op.operands:
        s = shape_of(v)
        if s == out:
            continue
        lanes = s[-1:] if s else ()
        per_channel = all(d == 1 for d in s[:-1]) and lanes == out[-1:]
        scalar = all(d == 1 for d in s)
        # The ALU repeats whole accumulator rows: a per-channel operand is one row; a scalar
        # fills all 16 lanes only when the compiler can write that row as a constant. A
        # per-channel tensor is packed as it is, so it needs the result's rank (`[C]` against
        # `[1, H, W, C]` would need a reshape); a constant one is written as that row.
        if (per_channel and (len(s) == len(out) or is_constant(v))) or \
                (scalar and is_constant(v)):  # fmt: skip
            continue
        if lane_broadcast(s, out) and not is_constant(v):
            continue  # a host step copies lane 0 to every lane (accel.lane_broadcast)
        return (
            f"{op.name} broadcasts {list(s)} against {list(out)}: the ALU repeats whole rows "
            "only (per-channel operands of the result's rank, or constants); a host step "
            "broadcasts one run-time channel ([..., 1] of the result's other dimensions)"
        )
    return None


@check("pool-padding")
def _pool_padding(m: Match) -> str | None:
    op = m.ops[0]
    top, bottom, left, right = _ints(op, "padding")
    kh, kw = _ints(op, "filter")
    if max(top, bottom) >= kh or max(left, right) >= kw:
        return (
            f"{op.name} padding {[top, bottom, left, right]} with a {kh}x{kw} window: a window "
            "could lie entirely in the padding"
        )
    return None


@check("reshape-view")
def _reshape_view(m: Match) -> str | None:
    op = m.ops[0]
    a, b = shape_of(op.operands[0]), shape_of(op.results[0])
    if not reshape_is_view(a, b, m.target.config.block):
        return (
            f"reshapes {list(a)} to {list(b)}: only the dimensions between batch and channels "
            "may change, or both be whole channel blocks in plain order, or lanes would move"
        )
    return None


@check("packed-rank")
def _packed_rank(m: Match) -> str | None:
    """Operands and results the program can hold as packed activations (rank 2 to 6)."""
    for v in (*m.ops[0].operands, *m.ops[0].results):
        rank = len(shape_of(v))
        if not 2 <= rank <= 6:
            return (f"{m.ops[0].name} on a rank-{rank} tensor: packed activations have a batch "
                    "and a channel dimension and at most 4 between them")  # fmt: skip
    return None


@check("head-reshape")
def _head_reshape(m: Match) -> str | None:
    """A lane-moving reshape the program gathers: channels split into heads `[.., T, C]` ->
    `[.., T, h, C/h]` or heads merged back; the dimensions before them stay."""
    op = m.ops[0]
    a, b = list(shape_of(op.operands[0])), list(shape_of(op.results[0]))
    split = len(b) == len(a) + 1 and a[:-1] == b[:-2] and a[-1] == b[-2] * b[-1]
    merge = len(a) == len(b) + 1 and b[:-1] == a[:-2] and b[-1] == a[-2] * a[-1]
    if not (split or merge):
        return (f"reshapes {a} to {b}: lanes would move, and only a split of the channels into "
                "heads or a merge of heads into channels is a gather step yet (a Flatten into "
                "a dense layer is a partition boundary)")  # fmt: skip
    return None


@check("softmax-rows")
def _softmax_rows(m: Match) -> str | None:
    """A softmax over rows of a sequence (rank 3 or more: attention's scores); a classifier's
    `[N, classes]` softmax ends the model after its last layer and stays on the CPU."""
    rank = len(shape_of(m.ops[0].operands[0]))
    if rank < 3:
        return (f"a rank-{rank} softmax (a classifier's output): after the last layer it joins "
                "no partitions, so it stays a CPU operator")  # fmt: skip
    return None

@check("slice-axes")
def _slice_axes(m: Match) -> str | None:
    op = m.ops[0]
    a, b = shape_of(op.operands[0]), shape_of(op.results[0])
    begin = _ints(op, "begin")
    last = len(a) - 1
    if len(a) < 3 or any(begin[d] or a[d] != b[d] for d in (0, last)):
        return (
            f"slices {list(b)} at {list(begin)} out of {list(a)}: only the dimensions between "
            "batch and channels can be cropped, or lanes would move"
        )
    return None


@check("reduce-axes")
def _mean_axes(m: Match) -> str | None:
    op = m.ops[0]
    shape = shape_of(op.operands[0])
    rank = len(shape)
    axes = sorted(_ints(op, "axes"))
    if rank >= 2 and axes == [rank - 1]:  # over the channels: a host step sums the lanes
        block = m.target.config.block
        kept = len(shape_of(op.results[0])) == rank
        if shape[-1] % block == 0 and kept:
            return None
        return (
            f"mean over the channel axis of {list(shape)}: the host step sums whole "
            f"{block}-lane blocks" + ("" if kept else " into a result keeping the axis") +
            f" ({shape[-1]} channels{'' if kept else ', the axis dropped'})"
        )
    if rank != 4 or axes != [1, 2]:
        return (
            f"mean over axes {axes} of a {rank}-D tensor: only H and W of NHWC (axes [1, 2]) "
            "reduce along accumulator rows; other axes would reduce across lanes"
        )
    return None


@check("pad-axes")
def _pad_axes(m: Match) -> str | None:
    op = m.ops[0]
    widths = np.asarray(_ints(op, "padding")).reshape(-1, 2)
    if len(widths) != 4:
        return (
            f"pads a {len(widths)}-D tensor: only H and W of NHWC tensors can be padded by the DMA"
        )
    for axis, name in ((0, "batch"), (3, "channel")):
        if widths[axis].any():
            before, after = (int(v) for v in widths[axis])
            return (
                f"pads the {name} axis by {before}+{after}: only H and W of NHWC can be padded "
                "by the DMA; batch or channel padding would move lanes"
            )
    limit = _pad_limit(m.target.config)
    if widths.max() > limit:
        return f"padding {int(widths.max())} exceeds the {limit} rows/columns a LOAD can pad"
    return None


def _vta_region_check(region: RegionSummary) -> str | None:
    if region.macs == 0:
        moved = sum(tensor_bytes(v) for v in (*region.inputs, *region.outputs))
        return (
            f"does no GEMM work (0 MACs): moving {moved} bytes to the accelerator and back, "
            "with a pack and an unpack on the host, costs more than its ALU work saves"
        )
    return None


_GEMM_CHECKS = (
    _int8_operands, _constant_weights, _filter_zero_point, _conv_padding, _conv_buffers,
    _requantize_range, _alu_ops,
)  # fmt: skip
_DENSE_CHECKS = (_int8_operands, _constant_weights, _filter_zero_point, _requantize_range, _alu_ops)
_ELEMENTWISE = (_int8_operands, _broadcast, _alu_ops)

VTA_PATTERNS: tuple[Pattern, ...] = (
    Pattern("conv2d", "q.relu?(q.requantize(q.bias_add?(q.conv2d)))", _GEMM_CHECKS,
            doc="GEMM core: convolution as GEMM over 16x16 channel blocks (input channels "
                "padded to whole blocks), requantize and clamp on the ALU (on the store "
                "module's output stage with `store_requant`); a spatial `PAD` before it is "
                "the LOAD's padding; a batch of N images is an outer loop (each image one pass "
                "of the batch-1 loop nest, weights and parameters shared)"),
    Pattern("depthwise_conv2d", "q.relu?(q.requantize(q.bias_add?(q.depthwise_conv2d)))",
            _GEMM_CHECKS,
            doc="GEMM core: block-diagonal 16x16 weight tiles (1 lane in 16 useful, still "
                "4x fewer cycles than a MUL/ADD tap loop on the ALU); a batch is an outer loop "
                "over the images"),
    Pattern("dense", "q.relu?(q.requantize(q.bias_add?(q.dense)))", _DENSE_CHECKS,
            doc="GEMM core: matrix product (the batch is GEMM rows, the weights loaded once; "
                "tokens [1, T, C] as a 1x1 convolution over T pixels), requantize and clamp on "
                "the ALU; a requantization LiteRT computes in double precision (a float scale) "
                "is an exact host step of the program (`accel.host_requantize`: 32-bit ALU "
                "lanes cannot round as a double does)"),
    Pattern("add", "q.relu?(q.add)", _ELEMENTWISE,
            doc="ALU: int8 addition with TFLite's rescaling (SHL, RDMUL, RSHR are exact)"),
    Pattern("sub", "q.relu?(q.sub)", _ELEMENTWISE,
            doc="ALU: int8 subtraction with TFLite's rescaling"),
    Pattern("mul", "q.relu?(q.mul)", _ELEMENTWISE,
            doc="ALU: int8 multiplication (LiteRT's MUL: MUL of the centred sides, then "
                "MultiplyByQuantizedMultiplier as SHL, RDMUL, RSHR, the zero point and the "
                "clamp, all exact in 32-bit lanes); a per-channel operand broadcast over the "
                "map (the squeeze-excite scale [1, 1, 1, C] of MobileNetV3 and EfficientNet) "
                "is one accumulator row per channel block, read by every row with a micro-op "
                "source factor of 0; an element-wise layer that reads a host step's result "
                "(a table lookup's) stays a host step when the cost model prices the host's "
                "work below its ALU program, the trees between two layers decided together "
                "with the program's stops (the report gives both figures); a `[..., 1]` "
                "operand of the result's other dimensions (a layer norm's scale `[1, T, 1]` "
                "against `[1, T, C]`) is broadcast over the channels by a host step (a "
                "gather: the ALU and the DMA move whole rows, never lanes), a decision point "
                "of the cost model, the product on the ALU"),
    Pattern("max_pool2d", "q.relu?(q.max_pool2d)", (_int8_operands, _pool_padding, _alu_ops),
            doc="ALU: MAX over the window's rows (a batch: an outer loop over the images); "
                "with padding an exact host step of the program (padded taps must not count, "
                "accumulator loads pad with zeros): a decision point of the cost model, inside "
                "its partition unless the CPU is cheaper"),
    Pattern("avg_pool2d", "q.relu?(q.avg_pool2d)", (_int8_operands, _pool_padding, _alu_ops),
            doc="ALU: ADD over the window's rows, rounding shift by log2(taps) (a batch: an "
                "outer loop over the images); with padding "
                "(SAME, stride 1: the divisor varies at the border) or a tap count that is "
                "not a power of two (3x3, 25x5: the ALU divides by rounding shifts only, "
                "BUILTIN_REF divides with rounding) an exact host step of the program, a "
                "decision point of the cost model"),
    Pattern("mean", "q.mean", (_int8_operands, _mean_axes, _alu_ops),
            doc="ALU: spatial mean as ADD over rows, then the requantize sequence (exact: "
                "LiteRT's int8 MEAN divides by the element count n by folding it into the "
                "integer multiplier, `(M << k) / n` at compile time, then one "
                "MultiplyByQuantizedMultiplier of the centred sum); a global mean whose input "
                "other ops read too (the squeeze-excite swish) reads it from DRAM where that "
                "input's layer stores it; a mean over the channel axis (a layer norm's, "
                "channels in whole 16-lane blocks, the axis kept) sums the lanes in a host "
                "step (a reduction across lanes: ALU instructions combine rows, never lanes "
                "of one row; a decision point of the cost model), the requantize sequence on "
                "the ALU"),
    Pattern("squared_difference", "q.squared_difference", _ELEMENTWISE,
            doc="ALU: SQUARED_DIFFERENCE with TFLite's rescaling (each side centred, shifted "
                "left by 7 and rescaled by SHL, RDMUL and RSHR, the difference squared by MUL, "
                "all exact in 32-bit lanes); a `[..., 1]` side (a layer norm's mean) is "
                "broadcast over the channels by a host step of the program (a gather), a "
                "decision point of the cost model"),
    Pattern("pad", "q.pad", (_int8_operands, _pad_axes, _alu_ops),
            doc="DMA: spatial padding by the LOAD's pad fields of the convolution or pool "
                "that reads it; one nothing folds runs on the host inside the program"),
    Pattern("concat", "q.concat", (_int8_operands,),
            doc="host step: an exact copy per input inside the accelerator function (channel "
                "counts that do not fill whole 16-lane blocks, e.g. 24+8, move lanes), so "
                "the partition is not split; a decision point of the cost model: on the CPU "
                "when that is cheaper (at a partition's edge, the plain layout's fewer bytes)"),
    Pattern("relu", "q.relu", (_int8_operands, _alu_ops),
            doc="ALU: clamp, MAX and MIN (a standalone RELU or RELU6 keeping the scale)"),
    Pattern("lut", "q.lut", (_int8_operands,),
            doc="host step: the op's 256 int8 results, computed at compile time by its CPU "
                "kernel (exact), looked up by the host between two layers of the accelerator "
                "function (the ALU cannot index a table, and LiteRT's fixed-point LOGISTIC, "
                "TANH or HARD_SWISH sequences are not exact in 32-bit lanes); a decision point "
                "of the cost model (inside unless the CPU is cheaper); a table that is a clamp "
                "(a RELU keeping the scale) is `q.relu` on the ALU instead"),
    Pattern("slice", "q.slice", (_int8_operands, _slice_axes),
            doc="host step: a spatial crop (Cropping2D) keeps batch, channel blocks and "
                "lanes: a copy inside the accelerator function, a decision point of the cost "
                "model; slices of batch or channels move lanes: CPU (partition boundary)"),
    Pattern("depth_to_space", "q.depth_to_space", (_int8_operands,),
            doc="host step: channel blocks moved into pixels (DEPTH_TO_SPACE; the scatter of a "
                "TRANSPOSE_CONV whose kernel is its stride), a gather inside the accelerator "
                "function"),
    Pattern("reshape", "q.reshape", (_int8_operands, _reshape_view),
            doc="host step: a reshape that keeps batch and channels (e.g. Flatten after a "
                "global pool), or between whole channel blocks in plain order (Flatten of a "
                "16-channel map), is the same packed bytes, a copy inside the accelerator "
                "function, a decision point of the cost model; a split of the channels into "
                "heads or a merge of heads is a gather (`relayout`); other reshapes move lanes: "
                "CPU (partition boundary)"),
    Pattern("resize_nearest_neighbor", "q.resize_nearest_neighbor", (_int8_operands,),
            doc="host step: each output pixel a copy of the input pixel LiteRT's kernel picks "
                "(its float32 coordinates, computed at compile time), lanes kept "
                "(UpSampling2D), a gather inside the accelerator function, a decision point of "
                "the cost model"),
    Pattern("resize_bilinear", "q.resize_bilinear", (_int8_operands,),
            doc="host step: LiteRT's integer interpolation (four products per output with "
                "10-bit weights per row and column, rounded half away from zero by 2^20), "
                "exact, inside the accelerator function, a decision point of the cost model; "
                "the ALU could compute it exactly too (the sums fit 32-bit lanes, RSHR rounds "
                "as the kernel does), but it needs the int8 rows in the accumulator and a MUL "
                "per weight and tap, not generated yet"),
    Pattern("transpose_conv_taps", "q.relu?(q.requantize(q.bias_add?(q.col2im(q.conv2d))))",
            _GEMM_CHECKS,
            doc="GEMM core: a TRANSPOSE_CONV whose taps overlap (kernel larger than the "
                "stride) as a 1x1 convolution over its KH*KW taps (int32 accumulators stored), "
                "then an exact host step of the program sums the taps landing on each output "
                "pixel (`accel.col2im`, a gather-sum: the overlapping scatter is no LOAD/STORE "
                "pattern), then the bias and requantization as host lane steps of the program "
                "(the ALU's element-wise layers load int8 only)"),
    Pattern("relayout", "q.reshape", (_int8_operands, _packed_rank, _head_reshape),
            doc="host step: a reshape that moves lanes by splitting the channels into heads "
                "(attention's [1, T, 32] to [1, T, 2, 16]) or merging them back is a gather "
                "inside the accelerator function, a decision point of the cost model"),
    Pattern("transpose", "q.transpose", (_int8_operands, _packed_rank),
            doc="host step: a gather inside the accelerator function (lanes and pixels "
                "move; attention's head transposes), a decision point of the cost model"),
    Pattern("softmax", "q.softmax", (_int8_operands, _packed_rank, _softmax_rows),
            doc="host step: LiteRT's int8 fixed-point softmax, exact on the host inside the "
                "program (exponentials of the 256 int8 differences as a table, a row's sum, "
                "its gemmlowp reciprocal); the ALU has no reciprocal, max-over-lanes or "
                "table lookup; a decision point of the cost model; over rows of rank 3 or more "
                "(attention scores): a classifier's rank-2 softmax stays on the CPU"),
    Pattern("batch_matmul", "q.batch_matmul", (_int8_operands, _packed_rank),
            doc="GEMM core: activation x activation products (attention's Q K^T and P V), "
                "one GEMM layer over every batch index (each an image of M tokens x K, "
                "with its own weight tiles: the rhs gathered into the activation arena at run "
                "time and loaded like constant weights; one layer per batch index when the "
                "stacked operands pass 1 MiB); its accumulators start from the zero-point terms "
                "(row and column sums of the operands, an exact host step: BMM_CORRECTION) "
                "loaded into ACC, "
                "and it requantizes on the ALU (or the store stage) as any GEMM layer; beyond "
                "1024 in M, K, N or batch, an exact host step of the program (its MACs host "
                "MACs)"),
)  # fmt: skip


def vta_target(config=None, alu_ops: Iterable[Any] | None = None) -> Target:
    """The VTA-like accelerator of `backends/vta`.

    `config` is a `HardwareConfig` (default: VTA's default configuration, 1x16x16 GEMM,
    32 KiB input, 256 KiB weight, 128 KiB accumulator buffers); `alu_ops` the ALU opcodes
    (`AluOp` members, default all, i.e. VTA's MIN/MAX/ADD/SHR plus our MUL, RDMUL, RSHR).

    Accepted (each with the checks listed in `VTA_PATTERNS`): convolution, depthwise
    convolution and dense groups, element-wise add/sub/mul, max and average pooling, spatial
    mean, spatial pad, concatenation and clamps; element-wise int8 tables (`q.lut`: LOGISTIC,
    HARD_SWISH, TANH, a RELU that rescales, ...) as a host step inside the accelerator
    function. Partitions without GEMM work are refused.
    Decisions, measured with `benchmarks/bench_partition.py` on the fixtures and ResNet-50
    (GEMM: one 1x16x16 block per cycle; ALU: one 16-lane row per 2 cycles; 333 MHz):

    - **Convolutions whose input channels are not a multiple of 16 are accepted**, padded to
      16 lanes (TVM's VTA refuses them). A 3-channel first layer uses 18.8% of the lanes
      (48 useful MACs per cycle), MobileNetV2's 3- and 24-channel layers 37.5%. Refusing
      them would leave on the CPU 20.1% of `cnn`'s MACs, 40.9% of `small_cnn`'s, 10.8% of
      MobileNetV2's (3 partitions instead of 1, 1.5 MiB crossing CPU/accelerator borders
      instead of 148 KiB) and 3.1% of ResNet-50's (785 KiB instead of 148 KiB). A first layer
      sits at the graph input, so keeping it on the CPU saves no transfer either.
    - **Depthwise convolutions are accepted**, as block-diagonal 16x16 weight tiles: 1 lane
      in 16 is useful (16 MACs per cycle, 5.3 GMAC/s). In MobileNetV2 they are 6.9% of the
      MACs but 49% of the GEMM cycles (1.29 M of 2.62 M); refusing them splits the model into
      18 partitions with 6.3 MiB crossing borders (instead of 1 and 148 KiB). The ALU would
      be slower still: a 3x3 tap loop of MUL and ADD costs 36 cycles per pixel and 16
      channels, the GEMM 9.
    - **Ops without MACs (add/sub/mul, pools, spatial mean and pad, concat, clamps) are
      accepted inside partitions with GEMM work.** Without them MobileNetV2 splits into 12
      partitions (770 KiB across borders) and ResNet-50 into 18 (13 MiB), each border a host
      pack or unpack plus a DMA transfer. Their price is ALU time: on ResNet-50 they add about
      9.9 M ALU cycles (30 ms), making the ALU (17.8 M cycles in all) as busy as the GEMM core
      (17.1 M); on MobileNetV2 they add 0.4 M to 5.5 M. Alone they are not worth a launch,
      which `region_check` refuses.
    - **Element-wise int8 tables (`q.lut`) are accepted inside partitions** although the ALU
      cannot index a table: an int8 input has 256 values, so the op is exactly its table,
      and the program looks it up on the host between two layers (the value is in DRAM
      already, as `accel.host_requantize`'s accumulators are). On the ALU, LOGISTIC or
      HARD_SWISH would need LiteRT's fixed-point polynomial and exp sequences, not bit-exact
      with 32-bit lanes; on the CPU they split MobileNetV3 into 10-12 partitions and
      EfficientNet-B0 into 25, each border a pack, an unpack and two DRAM transfers.
    - **Each host step is a decision of the cost model** (`targets/vta/host_cost.py`): a
      table lookup, copy or host pool stays inside its partition unless running it on the
      CPU, with the hop that adds, is cheaper. Between two layers the launch a split adds
      (20 us) outweighs it: on the corpus (`benchmarks/bench_partition_cost.py`) 123 of the
      125 host steps stay inside (NASNet's 50, EfficientNet-B0's 24, ...; on the CPU they
      would split NASNet into 22 partitions, EfficientNet-B0 into 25). The 2 it moves are
      at partition edges, where no launch is at stake and the packed layout's padded lanes
      cost more than a CPU operator's dispatch (two of UNet's skip concatenations).
    """
    from qaccel.targets.vta.config import DEFAULT_CONFIG, HardwareConfig
    from qaccel.targets.vta.host_cost import vta_host_step_cost
    from qaccel.targets.vta.isa import AluOp

    config = DEFAULT_CONFIG if config is None else config
    ops = list(AluOp) if alu_ops is None else list(alu_ops)

    def configure(path: str) -> Target:
        return vta_target(HardwareConfig.from_json(path), ops)

    def from_config(values) -> Target:
        return vta_target(HardwareConfig.from_dict(dict(values)), ops)

    return Target(
        "vta",
        VTA_PATTERNS,
        config=config,
        features=frozenset(AluOp(o).name.lower() for o in ops),
        description=f"VTA-like accelerator ({config.name}: 1x{config.block}x{config.block} GEMM)",
        region_check=_vta_region_check,
        host_step_cost=lambda summary: vta_host_step_cost(summary, config),
        configure=configure,
        from_config=from_config,
    )


__all__ = ["VTA_PATTERNS", "vta_target"]
