"""Accelerator layers in `accel` IR: a GEMM op with its requantization tail as one `ConvLayer`,
an element-wise tree as an `AluLayer`, a windowed pool as a `PoolLayer`.

    m = match_layer(conv_op, "fn_layer0")    # -> LayerMatch, or raises NotALayer (why)
    m.layer                                   # the ConvLayer the scheduler and emitter take

`form-vta-layers` finds the layers with the `match_*` functions and makes each one
`vta.layer` op; `schedule-vta` and `qaccel-compile` read a formed layer back with
`read_layer` / `LayerReader` (its body, as its kind says; no search).

`lower-q-to-accel` (+ `canonicalize-accel`) writes every convolution, depthwise convolution
or matrix product with its requantization tail as

    accel.conv2d_zp | accel.dense_zp   (filter a constant; `bias` preloaded or not)
    accel.bias_add_zp*  [accel.shift_left]  accel.round_multiply  [accel.round_rshift]
    [accel.max]  [accel.min]  [accel.add by zp_out]  accel.narrow          (int8 result)
    -- or, for a dense layer requantized in double: the int32 accumulators (bias included),
       the `accel.host_requantize` that follows stays a host op.

A matrix product over tokens (`accel.dense_zp` of a packed `[1, I/B, T, 1, B]`, FULLY_CONNECTED
on `[1, T, I]` with `keep_num_dims`) holds the bytes of a `[1, I/B, 1, T, 1, B]` image: it is a
"conv" layer, a 1x1 convolution over one row of T pixels, storing its int32 accumulators for
the host's double-precision requantization like a dense layer; element-wise layers take such
tensors as T rows.

The layer's parameters come from the accel ops themselves, not from the q IR: the packed
layout is taken as it is, so channel counts are whole blocks (padded lanes have zero weights,
zero bias and multiplier 0, exactly as in the accel ops). The fused bias `qbias - zp_in Σw` of
`accel.bias_add_zp` becomes the layer's bias `fused + zp_in Σw` (modulo 2^32) so that the
scheduler's library folds it back to the same value. A clamp that `canonicalize-accel`
removed (proved unable to clip) is the int8 range.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np
from qaccel.dialects import accel, tfl, vta
from qaccel.dialects.types import tensor_dtype
from qaccel.lowering.vta.geometry import ConvLayer, weight_sums
from xdsl.ir import Operation, SSAValue


class NotALayer(Exception):
    """A compute op that does not form an accelerator layer (message: why)."""


def _sole_user(value: SSAValue) -> Operation | None:
    """The one op that reads `value`, seen through the end of a formed layer (the op that
    reads the layer's result), so a layer reads the same in its `vta.layer` as before."""
    uses = list(value.uses)
    if len(uses) != 1:
        return None
    use = uses[0]
    if isinstance(use.operation, vta.YieldOp):
        layer = use.operation.parent_op()
        return _sole_user(layer.results[use.index]) if layer is not None else None
    return use.operation


def _scalar(values: np.ndarray, what: str) -> int:
    v = np.asarray(values).reshape(-1)
    if len(v) == 0 or np.any(v != v[0]):
        raise NotALayer(f"{what} differs between lanes")
    return int(v[0])


@dataclass
class LayerMatch:
    layer: ConvLayer
    ops: list[Operation]  # every op of the group, in order (anchor last)
    input: SSAValue
    output: SSAValue  # the anchor's result: what the layer's DRAM output holds
    widened: SSAValue | None  # int32 value equal to widen(output), used outside the group
    weight_consts: list[Operation]
    offset: int | None = None  # output is int32: the layer's int8 values minus `offset`
    weights: SSAValue | None = None  # runtime weight tiles (an arena value), else constants
    init: SSAValue | None = None  # int32 accumulators' start (an arena value), else reset/bias


def _runtime_filter(op: Operation) -> bool:
    """Whether the filter is weight tiles gathered at run time (a BATCH_MATMUL's rhs)."""
    return isinstance(op, accel.DenseZpOp) and isinstance(op.filter.owner, accel.BmmOperandOp)


def _filter_array(op: Operation) -> tuple[np.ndarray, Operation]:
    owner = op.filter.owner  # type: ignore[attr-defined]
    if _runtime_filter(op):  # placeholder zeros: the tiles are written at run time
        return np.zeros(tuple(op.filter.type.get_shape()), np.int8), owner
    if not isinstance(owner, tfl.ConstOp):
        raise NotALayer("the filter is not a constant")
    return np.asarray(owner.as_array()), owner


def _tiles_transposed(w: np.ndarray, perm: tuple[int, ...], shape: tuple[int, ...]) -> np.ndarray:
    """`w.transpose(perm).reshape(shape).astype(np.int8)`, a new array: packed weight tiles
    in the layer's `[O, ..., I]` order. When the tiles' rows stay whole (int8, the last axis
    last), each row moves as one element: a copy of 1/16 as many elements (MobileNetV2's
    1280x320 filter: 0.03 ms instead of 1 ms), the same bytes."""
    if (w.dtype == np.int8 and w.flags.c_contiguous and perm[-1] == w.ndim - 1
            and w.ndim > 1 and w.shape[-1] > 0):  # fmt: skip
        rows = w.view(np.dtype((np.void, w.shape[-1]))).reshape(w.shape[:-1])
        moved = np.array(rows.transpose(perm[:-1]), order="C")  # always a copy
        return moved.view(np.int8).reshape(shape)
    return w.transpose(perm).reshape(shape).astype(np.int8)


def _conv_params(op: accel.Conv2DZpOp) -> tuple[str, dict]:
    w, _ = _filter_array(op)
    n, ib, h, wd, _, blk = op.input.type.get_shape()  # a batch: an outer loop over images
    ob, ibg, kh, kw = w.shape[:4]
    groups = op.group_count
    kw_args = {
        "input_shape": (n, h, wd, ib * blk),
        "strides": tuple(int(v) for v in op.array_prop("strides")),
        "dilations": tuple(int(v) for v in op.array_prop("dilations")),
        "padding": tuple(int(v) for v in op.array_prop("padding")),
        "input_zero_point": op.pad_value.value.data,
    }
    if groups == 1:
        kw_args["weights"] = _tiles_transposed(w, (0, 4, 2, 3, 1, 5), (ob * blk, kh, kw, ib * blk))
        return "conv", kw_args
    if groups == ib == ob and ibg == 1:
        eye = np.eye(blk, dtype=bool)
        if np.any(w[:, 0][..., ~eye]):
            raise NotALayer("grouped tiles are not diagonal (depth multiplier not block-aligned)")
        diag = w[:, 0][..., eye]  # [ob, kh, kw, blk]
        kw_args["weights"] = diag.transpose(1, 2, 0, 3).reshape(1, kh, kw, ob * blk).astype(np.int8)
        return "depthwise", kw_args
    raise NotALayer(f"grouped convolution ({groups} groups of channel blocks)")


def _dense_params(op: accel.DenseZpOp) -> tuple[str, dict]:
    w, _ = _filter_array(op)
    shape = op.input.type.get_shape()
    if w.ndim == 5:
        return _stacked_tokens_params(op, w, shape)
    ob = w.shape[0]
    blk = shape[-1]
    out = op.output.type.get_shape()
    if len(shape) == 5 and shape[0] == 1 and shape[3] == 1 and tuple(out) == (
        1, out[1], shape[2], 1, blk
    ):  # fmt: skip
        # Tokens [1, T, I] pack as [1, I/B, T, 1, B]: the bytes of a [1, I/B, 1, T, 1, B]
        # image, so the matrix product is a 1x1 convolution over a row of T pixels (weights
        # [O, 1, 1, I]); its output [1, O/B, T, 1, B] is that convolution's output.
        ib, tokens = shape[1], shape[2]
        weights = _tiles_transposed(w, (0, 2, 1, 3), (ob * blk, 1, 1, ib * blk))
        return "conv", {"input_shape": (1, 1, tokens, ib * blk), "weights": weights,
                        "strides": (1, 1), "dilations": (1, 1), "padding": (0, 0, 0, 0),
                        "input_zero_point": 0}  # fmt: skip
    if len(shape) == 5 and shape[0] == 1 and shape[3] == 1 and shape[2] > 1:
        raise NotALayer(f"dense of tokens {list(shape)} to rows {list(out)} (the input in the "
                        "tokens' layout, the output in the rows' layout)")  # fmt: skip
    if len(shape) != 4 and any(d != 1 for d in shape[2:-2]):
        raise NotALayer(f"dense input of rank {len(shape)} (rows beyond the batch dimension)")
    n, ib = shape[0], shape[1]  # [N, I/B, 1, ..., 1, B]: the bytes of [N, I/B, 1, B]
    weights = _tiles_transposed(w, (0, 2, 1, 3), (ob * blk, ib * blk))
    return "dense", {"input_shape": (n, ib * blk), "weights": weights, "input_zero_point": 0}


def _stacked_tokens_params(op: accel.DenseZpOp, w: np.ndarray, shape) -> tuple[str, dict]:
    """A product of stacked token images by their own run-time weight tiles (a BATCH_MATMUL's
    batch indices, `accel.bmm_operand` with index -1): a 1x1 convolution over `batch` images
    of one row of T pixels each, every image with its tiles (`ConvLayer.runtime_weights`)."""
    batch, ob, ib, blk = w.shape[0], w.shape[1], w.shape[2], w.shape[3]
    out = tuple(op.output.type.get_shape())
    if not (_runtime_filter(op) and len(shape) == 5 and shape[3] == 1
            and out == (batch, ob, shape[2], 1, blk)):  # fmt: skip
        raise NotALayer(f"per-image filters {list(w.shape)} on {list(shape)} (only a product's "
                        "stacked run-time weight tiles on token images)")  # fmt: skip
    weights = np.zeros((ob * blk, 1, 1, ib * blk), np.int8)  # one image's; written at run time
    return "conv", {"input_shape": (batch, 1, shape[2], ib * blk), "weights": weights,
                    "strides": (1, 1), "dilations": (1, 1), "padding": (0, 0, 0, 0),
                    "input_zero_point": 0}  # fmt: skip


def match_layer(op: Operation, name: str) -> LayerMatch:
    """The layer rooted at `op` (an `accel.conv2d_zp` / `accel.dense_zp`) or `NotALayer`."""
    if isinstance(op, accel.Conv2DZpOp):
        kind, kw = _conv_params(op)
    else:
        kind, kw = _dense_params(op)
    out_shape = op.output.type.get_shape()
    lanes, blk = accel.packed_lanes(out_shape), out_shape[-1]
    ops: list[Operation] = [op]
    fused = np.zeros(lanes, np.int64)
    if op.bias is not None:
        fused += accel.per_lane(accel.array_values(op.bias), lanes)
    cur: SSAValue = op.output
    nxt = _sole_user(cur)
    while isinstance(nxt, accel.BiasAddZpOp):
        fused += nxt.values.astype(np.int64)
        ops.append(nxt)
        cur, nxt = nxt.output, _sole_user(nxt.output)
    # qbias such that the library's fused bias `qbias - zp_in Σw` is `fused` modulo 2^32.
    w = kw["weights"]
    if kind == "depthwise":
        wsum = weight_sums(w.reshape(-1, lanes), 0)
    else:
        wsum = weight_sums(w.reshape(lanes, -1), 1)
    qbias = (fused + kw["input_zero_point"] * wsum) & 0xFFFFFFFF
    kw["bias"] = qbias.astype(np.uint32).view(np.int32)
    if isinstance(op, accel.Conv2DZpOp) and isinstance(nxt, accel.Col2ImOp):
        # A transposed convolution's taps: the accelerator stores the int32 accumulators, the
        # host sums the overlapping taps (`accel.col2im`), then bias and requantization.
        kw["scale"] = np.ones(1)
        layer = ConvLayer(kind, name=name, block=blk, **kw)
        return LayerMatch(layer, ops, op.input, cur, None, [_filter_array(op)[1]], None)
    runtime: dict = {}
    if _runtime_filter(op):
        # A BATCH_MATMUL's product on the GEMM core: raw int8 products accumulated onto the
        # zero-point correction (`accel.bmm_zp_correction`, per element, loaded into the
        # accumulators), then the requantization tail as any GEMM layer's.
        if op.bias is not None or len(ops) != 1:
            raise NotALayer("a product with run-time weights takes no bias")
        if not (isinstance(nxt, accel.AddOp) and nxt.rhs is not None
                and isinstance(nxt.rhs.owner, accel.BmmZpCorrectionOp)):  # fmt: skip
            raise NotALayer("a product with run-time weights is not followed by its zero-point "
                            "correction")  # fmt: skip
        runtime = {"weights": op.filter, "init": nxt.rhs}
        kw.update(runtime_weights=True, runtime_init=True)
        ops.append(nxt)
        cur, nxt = nxt.output, _sole_user(nxt.output)
    if isinstance(op, accel.DenseZpOp) and isinstance(nxt, accel.HostRequantizeOp):
        # LiteRT's FULLY_CONNECTED requantizes in double: the accelerator stores the int32
        # accumulators, `accel.host_requantize` stays a host op (the scale only marks this).
        kw["scale"] = np.ones(1)
        layer = ConvLayer(kind, name=name, block=blk, **kw)
        return LayerMatch(layer, ops, op.input, cur, None, [_filter_array(op)[1]], None)
    left = right = np.zeros(1, np.int64)
    if isinstance(nxt, accel.ShiftLeftOp):
        left = nxt.values.astype(np.int64)
        ops.append(nxt)
        cur, nxt = nxt.output, _sole_user(nxt.output)
    if not isinstance(nxt, accel.RoundMultiplyOp):
        raise NotALayer(f"the accumulators go to {nxt.name if nxt else 'several ops'}, "
                       "not a requantization")  # fmt: skip
    multiplier = nxt.values.astype(np.int64)
    ops.append(nxt)
    cur, nxt = nxt.output, _sole_user(nxt.output)
    if isinstance(nxt, accel.RoundRShiftOp):
        right = nxt.values.astype(np.int64)
        ops.append(nxt)
        cur, nxt = nxt.output, _sole_user(nxt.output)
    if np.any((accel.per_lane(left, lanes) > 0) & (accel.per_lane(right, lanes) > 0)):
        raise NotALayer("a lane shifted both left and right")
    per_channel = max(len(left), len(right), len(multiplier)) > 1
    n = lanes if per_channel else 1
    shift = accel.per_lane(left, n) - accel.per_lane(right, n)
    lo, hi, zp = -(2**31), 2**31 - 1, 0
    widened = None
    for cls in (accel.MaxOp, accel.MinOp, accel.AddOp):
        if isinstance(nxt, cls) and nxt.rhs is None:
            v = _scalar(nxt.values, f"{nxt.name}'s value")
            if cls is accel.MaxOp:
                lo = v
            elif cls is accel.MinOp:
                hi = v
            else:
                zp = v
            ops.append(nxt)
            cur, nxt = nxt.output, _sole_user(nxt.output)
            if nxt is None:
                # Also read elsewhere (a residual add): as int32 it is the widened int8 result.
                narrows = [u.operation for u in cur.uses if isinstance(u.operation, accel.NarrowOp)]
                nxt, widened = (narrows[0], cur) if len(narrows) == 1 else (None, None)
                break
    offset = None
    if isinstance(nxt, accel.NarrowOp) and tensor_dtype(nxt.output.type) == np.int8:
        # A clamp that canonicalization removed could not clip: the int8 range is as good.
        act_min = lo + zp if lo > -(2**31) else -128
        act_max = hi + zp if hi < 2**31 - 1 else 127
        ops.append(nxt)
        output = nxt.output
    else:
        # An int32 consumer (an element-wise op fused after the requantization, e.g. a
        # residual add): when the clamp spans at most 256 values, the layer stores them as
        # int8 shifted by `offset` and the host adds it back (exact). The smallest offset
        # that puts both the clamp and the layer's zero point in int8 (a clamp far from
        # zero, e.g. [244, 255] before a zero point is added, needs the zero point's bound).
        if lo == -(2**31) or hi == 2**31 - 1 or hi - lo > 255:
            raise NotALayer("the requantized value is not narrowed to int8 and its clamp spans "
                           "more than 256 values")  # fmt: skip
        offset = max(-128 - (lo + zp), -128 - zp)
        if offset > min(127 - (hi + zp), 127 - zp):
            raise NotALayer(f"no int8 offset holds the clamp [{lo}, {hi}] and the zero point "
                            f"{zp}")  # fmt: skip
        zp, act_min, act_max = zp + offset, lo + zp + offset, hi + zp + offset
        output, widened = cur, None
    if not -128 <= act_min <= act_max <= 127:
        raise NotALayer(f"clamp [{act_min}, {act_max}] is not within int8")
    kw.update(multiplier=accel.per_lane(multiplier, n).astype(np.int32),
              shift=shift.astype(np.int32),
              output_zero_point=zp, act_min=act_min, act_max=act_max)  # fmt: skip
    layer = ConvLayer(kind, name=name, block=blk, **kw)
    return LayerMatch(layer, ops, op.input, output, widened, [_filter_array(op)[1]], offset,
                      **runtime)


# --------------------------------------------------------------------------------------------
# Element-wise layers: int8 tensors widened, a tree of ALU ops, narrowed to int8


@dataclass(frozen=True)
class AluStep:
    """`temp[dst] = op(temp[dst], operand)`; the operand is another temp, an immediate, or
    parameter rows (`param`: first row; per channel block when `per_block`)."""

    op: str  # an `AluOp` name: MIN, MAX, ADD, SHR, MUL, RDMUL, RSHR
    dst: int
    kind: str  # "temp" | "imm" | "param"
    operand: int
    per_block: bool = False


def apply_steps(steps, temps: list[np.ndarray], params: np.ndarray, blocks: int,
                param_shape: tuple[int, ...]) -> None:  # fmt: skip
    """Run ALU `steps` on int32 `temps` as the hardware does (parameter rows broadcast to
    `param_shape`, one row per block or one for all)."""
    from qaccel.targets.vta.alu import ALU_FUNCTIONS
    from qaccel.targets.vta.isa import AluOp

    for s in steps:
        if s.kind == "temp":
            y = temps[s.operand]
        elif s.kind == "imm":
            y = np.int32(s.operand)
        else:
            y = params[s.operand : s.operand + (blocks if s.per_block else 1)].reshape(param_shape)
        temps[s.dst] = ALU_FUNCTIONS[AluOp[s.op]](temps[s.dst], y)


def output_stage(steps: list[AluStep], result: int, params: np.ndarray, first: int = 0,
                 block: int = 16) -> tuple[int, np.ndarray] | None:  # fmt: skip
    """The requantization at the end of `steps` that the store module's output stage
    (STORE OUTQ, docs/isa.md §6.3) computes instead of the ALU: `(k, rows)` when `steps[k:]`
    (k >= `first`) are exactly `[SHR -left] RDMUL M [RSHR r] [ADD zp] [MAX lo] [MIN hi]
    [ADD zp']` (clamps in either order) on temp `result`, with `rows` the output stage's four
    parameter rows (bias 0, multiplier, shift, zero point and bounds); None when no such
    suffix exists or it could wrap around int32 where the output stage would not."""
    from qaccel.targets.vta.alu import INT32_MAX, INT32_MIN, output_stage_block

    lanes = {}

    def operand(s: AluStep):
        if s.kind == "imm":
            return np.full(block, s.operand, np.int64)
        return params[s.operand].astype(np.int64)

    order = ("ADD_after", "CLAMP", "ADD_before", "RSHR", "RDMUL", "SHR")
    k, pos = len(steps), 0  # steps[k:] are taken; `order[pos:]` may still come (backwards)
    while k > first:
        s = steps[k - 1]
        if s.dst != result or s.kind == "temp" or s.per_block:
            break
        kind = "CLAMP" if s.op in ("MIN", "MAX") else s.op
        found = [i for i in range(pos, len(order)) if order[i].split("_")[0] == kind]
        if not found:
            break
        name = s.op if kind == "CLAMP" else order[found[0]]
        if name in lanes or (name == "SHR" and (s.kind != "imm" or s.operand > 0)):
            break  # a clamp twice, or a right shift that is not a rounding one
        lanes[name] = operand(s)
        pos = found[0] + (0 if kind == "CLAMP" else 1)
        k -= 1
    if "RDMUL" not in lanes:
        return None
    if "SHR" in lanes and "RSHR" in lanes and np.any(lanes["RSHR"]):
        del lanes["SHR"]  # one shift field: the left shift stays on the ALU
        k += 1
    right = lanes.get("RSHR", np.zeros(block, np.int64))
    left = -lanes.get("SHR", np.zeros(block, np.int64))
    before = lanes.get("ADD_before", np.zeros(block, np.int64))
    after = lanes.get("ADD_after", np.zeros(block, np.int64))
    lo = lanes.get("MAX", np.full(block, INT32_MIN, np.int64))
    hi = lanes.get("MIN", np.full(block, INT32_MAX, np.int64))
    if np.any(before) and (np.any(right < 1) or np.any(np.abs(before) >= 2**30)):
        return None  # the ALU's add could wrap around int32
    if np.any(after) and ("MAX" not in lanes or "MIN" not in lanes):
        return None  # an unclamped add after the clamp could wrap
    lo, hi = lo + after, hi + after
    if np.any(lo > hi) or np.any(lo < INT32_MIN) or np.any(hi > INT32_MAX):
        return None
    if np.any(right < 0) or np.any(right > 31) or np.any(left > 31):
        return None
    zero_point = before + after
    if np.any(zero_point != zero_point[0]) or np.any(lo != lo[0]) or np.any(hi != hi[0]):
        return None  # the zero point and the bounds are one value per tensor
    return k, output_stage_block(0, lanes["RDMUL"], left - right, int(zero_point[0]),
                                 int(lo[0]), int(hi[0]), block)  # fmt: skip


@dataclass
class AluLayer:
    """An element-wise layer on packed `[images, blocks, H, W, 1, block]` tensors: input k is
    loaded widened (LOAD ACC8) into temp k, the steps run on every row, temp `result` is stored
    narrowed (STORE OUT). `params` are int32 rows `[n][block]` the steps read. A batch of
    `images` is an outer loop: each image's blocks in turn, with the same parameter rows.

    With `reduce` > 1 (a global sum pool: `accel.reduce_sum` over H and W), the inputs have
    `reduce` rows per block and the output one (`rows` is 1): the first `reduce_at` steps run
    on every input row, then each block's rows of temp `result` are summed into one row, and
    the remaining steps (on `result` alone) run on the sums.

    Inputs listed in `broadcast` hold one row per channel block (`[N, C/B, 1, 1, 1, B]`,
    e.g. a squeeze-excite scale) that every row of the block reads: steps on such a temp run
    on its one row, and a step of the map's rows reads it with micro-op source factors 0."""

    name: str
    blocks: int
    rows: int  # rows per channel block (H * W)
    block: int
    n_inputs: int
    steps: list[AluStep]
    result: int
    params: np.ndarray
    reduce: int = 1
    reduce_at: int = 0
    images: int = 1
    broadcast: tuple[int, ...] = ()  # inputs of one row per block, repeated over the rows

    def describe(self) -> str:
        ops = sorted({s.op.lower() for s in self.steps})
        what = f"sum of {self.reduce} px" if self.reduce > 1 else f"{self.rows} px"
        images = f"{self.images} images x " if self.images > 1 else ""
        bcast = f" ({len(self.broadcast)} per channel)" if self.broadcast else ""
        return (f"eltwise {images}{what} x {self.blocks * self.block} ch, {self.n_inputs} "
                f"input(s){bcast}, {len(self.steps)} ALU ops ({' '.join(ops)})")  # fmt: skip

    def input_rows(self, k: int) -> int:
        """Rows of input `k` per channel block: one for a broadcast input."""
        return 1 if k in self.broadcast else self.rows * self.reduce

    def reference(self, inputs: list[np.ndarray]) -> np.ndarray:
        """What the program computes, from the int8 inputs `[images * blocks, rows, block]`
        (`[blocks, rows, block]` for one image; a broadcast input has one row)."""
        if self.images > 1:
            split = [np.split(np.asarray(x), self.images) for x in inputs]
            return np.concatenate([replace(self, images=1).reference([x[n] for x in split])
                                   for n in range(self.images)])  # fmt: skip
        temps = [np.asarray(x, np.int8).astype(np.int32) for x in inputs]
        shape = (-1, 1, self.block)
        if self.reduce == 1:
            apply_steps(self.steps, temps, self.params, self.blocks, shape)
            return temps[self.result].astype(np.int8)
        apply_steps(self.steps[: self.reduce_at], temps, self.params, self.blocks, shape)
        total = temps[self.result].astype(np.int64).sum(axis=1, keepdims=True)
        temps[self.result] = total.astype(np.int32)  # modulo 2^32
        apply_steps(self.steps[self.reduce_at :], temps, self.params, self.blocks, shape)
        return temps[self.result].astype(np.int8)


@dataclass
class AluMatch:
    layer: AluLayer
    ops: list[Operation]  # the group's ops in body order (the narrow last)
    inputs: list[SSAValue]  # arena values loaded into temps 0, 1, ...
    output: SSAValue
    widened: SSAValue | None  # the int32 value narrowed, also used elsewhere (= widen(output))


_IMM_BITS = 16
_LANE_OPS = {"accel.shift_left": "SHR", "accel.round_multiply": "RDMUL",
             "accel.round_rshift": "RSHR", "accel.bias_add_zp": "ADD"}  # fmt: skip
_BINARY_OPS = {"accel.add": "ADD", "accel.max": "MAX", "accel.min": "MIN", "accel.mul": "MUL"}
_SHIFT_RANGE = {"SHR": (-31, 31), "RSHR": (0, 31)}


class _Tree:
    """Builds the ALU steps of a tree of accel ops over packed tensors of one channel-block
    count: leaves become inputs (temps 0, 1, ... in order), constants immediates or parameter
    rows, binary ops steps between temps. With `out_shape`, one `accel.reduce_sum` over H and
    W (a global sum pool) may sit on the path to the root."""

    def __init__(self, leaves, claimed, blocks: int, block: int,
                 out_shape: tuple[int, ...] | None = None):  # fmt: skip
        """`out_shape`: the `[1, C/B, 1, B]` result of a global sum pool, when one may occur."""
        self.leaves, self.claimed = leaves, claimed
        self.blocks, self.block = blocks, block
        self.allow_sum, self.out_shape = out_shape is not None, out_shape
        self.steps: list[AluStep] = []
        self.inputs: list[SSAValue] = []
        self.params: list[np.ndarray] = []
        self.n_params = 0
        self.group: list[Operation] = []
        self.reduce, self.reduce_at, self.summed = 1, 0, -1
        self.after_sum_leaf = False  # a leaf of the result's shape (1x1 map) was visited
        self.allow_broadcast = False  # per-block operands broadcast over the rows
        self.bcast_shape: tuple[int, ...] | None = None  # their shape, `[N, C/B, 1, 1, 1, B]`
        self.broadcast: list[int] = []  # temps holding one row per channel block

    def table(self) -> np.ndarray:
        return np.concatenate(self.params) if self.params else np.zeros((0, self.block), np.int32)

    def leaf(self, value: SSAValue, offset: int, want: tuple[int, ...]) -> int:
        if self.reduce > 1:
            raise NotALayer("a tensor joins a global sum pool after the sum")
        # A leaf of the sum's shape joins after a sum only when the tree has one (a 1x1 map's
        # tree has none): `match_alu_layer` checks once the whole tree is read.
        self.after_sum_leaf |= self.allow_sum and want == self.out_shape
        t = len(self.inputs)
        self.inputs.append(value)
        if self.bcast_shape is not None and want == self.bcast_shape:
            self.broadcast.append(t)
        if offset:
            self.constant("ADD", np.array([-offset]), t)
        return t

    def constant(self, op_name: str, values: np.ndarray, dst: int) -> None:
        v = np.asarray(values, np.int64).reshape(-1)
        lo, hi = _SHIFT_RANGE.get(op_name, (-(2**31), 2**31 - 1))
        if v.min() < lo or v.max() > hi:
            raise NotALayer(f"{op_name} operand outside [{lo}, {hi}]")
        if len(v) == 1 and -(2 ** (_IMM_BITS - 1)) <= v[0] < 2 ** (_IMM_BITS - 1):
            self.steps.append(AluStep(op_name, dst, "imm", int(v[0])))
            return
        rows = np.broadcast_to(v, (self.blocks * self.block,)).reshape(self.blocks, self.block)
        per_block = len(v) > 1
        rows = rows if per_block else rows[:1]
        self.steps.append(AluStep(op_name, dst, "param", self.n_params, per_block))
        self.params.append(rows.astype(np.int32))
        self.n_params += len(rows)

    def summed_pool(self, op: Operation) -> int:
        """A global sum pool: the steps so far run on every row, then the rows are summed."""
        src = tuple(op.input.type.get_shape())
        axes = sorted(int(a) for a in op.array_prop("axes"))
        if not self.allow_sum or len(src) != 6 or axes != [2, 3] or self.reduce > 1:
            raise NotALayer("a reduction other than one global sum pool over H and W")
        t = self.visit(op.input, src)
        if src[2] * src[3] == 1:
            return t  # a sum over one row (a MEAN of a 1x1 map): nothing to record
        # The operand's subtree is visited first: a sum inside it has set `reduce` by now.
        # Recording this one over it would drop that sum (a MEAN of a MEAN, keep_dims).
        if self.reduce > 1:
            raise NotALayer("two global sum pools in one layer")
        self.reduce, self.reduce_at, self.summed = src[2] * src[3], len(self.steps), t
        return t

    def broadcasts(self, value: SSAValue, want: tuple[int, ...]) -> bool:
        """`value` is one row per channel block (`[N, C/B, 1, 1, 1, B]`) repeated over the
        rows of `want` (`[N, C/B, H, W, 1, B]`): the squeeze-excite scale of a feature map.
        It is loaded once per block and read with a micro-op source factor of 0."""
        shape = tuple(value.type.get_shape())
        if not self.allow_broadcast or len(shape) != 6 or len(want) != 6:
            return False
        ok = (shape[2] == shape[3] == 1 and want[2] * want[3] > 1
              and (shape[0], shape[1], shape[4], shape[5]) == (want[0], want[1], want[4], want[5]))
        if ok:
            self.bcast_shape = shape
        return ok

    def visit(self, value: SSAValue, want: tuple[int, ...], root: bool = False) -> int:
        if value in self.leaves:
            if tuple(value.type.get_shape()) != want:
                if not self.broadcasts(value, want):
                    raise NotALayer(f"an operand broadcasts (shape {list(value.type.get_shape())})")
                want = self.bcast_shape  # type: ignore[assignment]
            return self.leaf(*self.leaves[value], want)
        op = value.owner
        if not isinstance(op, Operation) or op in self.claimed:
            raise NotALayer("an operand is not in DRAM (a block argument or another layer's)")
        if isinstance(op, vta.LayerOp):
            raise NotALayer("an operand is the int32 result of a layer that runs on the host "
                            "(element-wise layers load int8 tensors)")
        if not root and len(list(value.uses)) != 1:
            raise NotALayer(f"{op.name}'s result is also used outside the element-wise tree"
                            + _shared_why(value))
        if tuple(value.type.get_shape()) != want:
            if not self.broadcasts(value, want):
                raise NotALayer(f"{op.name} broadcasts (shape {list(value.type.get_shape())})")
            want = self.bcast_shape  # type: ignore[assignment]
        if isinstance(op, accel.ReduceSumOp):
            t = self.summed_pool(op)
            self.group.append(op)
            return t
        if isinstance(op, accel.WidenOp):
            if tensor_dtype(op.input.type) != np.int8:
                raise NotALayer("a widened operand is not int8")
            self.group.append(op)
            return self.leaf(op.input, 0, want)
        if op.name in _LANE_OPS:
            t = self.visit(op.input, want)
            values = op.values.astype(np.int64)
            if op.name == "accel.shift_left":
                values = -values  # SHR by a negative amount shifts left (low 32 bits kept)
            self.constant(_LANE_OPS[op.name], values, t)
        elif op.name in _BINARY_OPS:
            t = self.visit(op.lhs, want)
            if op.rhs is None:
                self.constant(_BINARY_OPS[op.name], op.values, t)
            else:
                u = self.visit(op.rhs, want)
                if t in self.broadcast and u not in self.broadcast:
                    t, u = u, t  # every binary ALU op commutes: the full rows take the result
                self.steps.append(AluStep(_BINARY_OPS[op.name], t, "temp", u))
        else:
            raise NotALayer(f"{op.name} has no ALU form")
        self.group.append(op)
        return t


def _shared_why(value: SSAValue) -> str:
    """Why a value two trees read is not stored once for both (`shared_values.py`)."""
    from qaccel.dialects.accel_canonicalization import value_range

    lo, hi = value_range(value)
    if lo < -128 or hi > 127:
        return (f" (its values [{lo}, {hi}] do not fit int8, and layers pass each other int8 "
                "tensors through DRAM)")
    return ""


def _packed_shape(narrow: Operation) -> tuple[int, ...]:
    if not isinstance(narrow, accel.NarrowOp) or tensor_dtype(narrow.output.type) != np.int8:
        raise NotALayer("not a narrowing to int8")
    return tuple(narrow.output.type.get_shape())


def match_alu_layer(
    narrow: Operation,
    leaves: dict[SSAValue, tuple[SSAValue, int]],
    claimed: set[Operation],
    name: str,
) -> AluMatch:
    """The element-wise layer ending at `narrow` (an `accel.narrow` to int8), or `NotALayer`.

    `leaves` maps an int32 value to the arena tensor it is read from and the offset to
    subtract (`value = stored int8 - offset`), e.g. a GEMM layer's output; an `accel.widen`
    of an int8 tensor is a leaf too. Every other value of the tree must be used once, by the
    tree, except the value narrowed (its other users read it as the widened int8 result);
    `claimed` ops (other layers) cannot be part of it."""
    shape = _packed_shape(narrow)
    if not (len(shape) == 6 and shape[0] >= 1 and shape[4] == 1
            or len(shape) == 5 and shape[0] == 1 and shape[3] == 1
            or len(shape) == 4 and shape[0] >= 1 and shape[2] == 1):  # fmt: skip
        raise NotALayer(f"packed shape {list(shape)} is neither [N, C/B, H, W, 1, B], "
                        "[1, C/B, T, 1, B] nor [N, C/B, 1, B]")  # fmt: skip
    blocks, block = shape[1], shape[-1]
    # Tokens [1, C/B, T, 1, B] are the bytes of a [1, C/B, 1, T, 1, B] image: T rows.
    rows = shape[2] * shape[3] if len(shape) == 6 else shape[2] if len(shape) == 5 else 1
    # A sum over H and W gives [1, C/B, 1, B], or [1, C/B, 1, 1, 1, B] with keep_dims.
    summed = len(shape) == 4 or shape[2] * shape[3] == 1
    tree = _Tree(leaves, claimed, blocks, block, shape if summed else None)
    tree.allow_broadcast = len(shape) == 6 and not summed
    result = tree.visit(narrow.input, shape, root=True)
    if tree.reduce > 1 and tree.after_sum_leaf:
        raise NotALayer("a tensor joins a global sum pool after the sum")
    if result in tree.broadcast:
        raise NotALayer("the result is one row per channel block, not the map's rows")
    widened = narrow.input if len(list(narrow.input.uses)) > 1 else None
    steps = tree.steps
    if not steps and len(tree.inputs) == 1:
        raise NotALayer("a plain copy")
    if tree.reduce > 1 and (tree.summed != result or any(
            s.dst != result or s.kind == "temp" for s in steps[tree.reduce_at :])):  # fmt: skip
        raise NotALayer("a global sum pool's sum is combined with another tensor")
    layer = AluLayer(name, blocks, rows, block, len(tree.inputs), steps, result, tree.table(),
                     tree.reduce, tree.reduce_at, shape[0], tuple(tree.broadcast))  # fmt: skip
    return AluMatch(layer, [*tree.group, narrow], tree.inputs, narrow.output, widened)


# --------------------------------------------------------------------------------------------
# Windowed pools: max or sum over windows of an int8 tensor, then ALU steps, narrowed to int8


@dataclass
class PoolLayer:
    """`accel.max_pool2d` / `accel.sum_pool2d` (window KH x KW, strides sh, sw) over a packed
    int8 tensor `[images, blocks, H, W, 1, block]` read from DRAM (a batch: an outer loop over
    the images), padded by `pad` = [top, bottom,
    left, right] with the operation's identity (-128 for max, 0 for sum: taps in the padding
    are skipped), minus `offset` (the tensor holds stored int8 - offset), then `steps` on the
    pooled temp 0 (parameter rows `params`), stored narrowed to int8 `[blocks, OH, OW]`.

    With `pre_steps` the pooled tensor is computed: `n_inputs` int8 tensors are loaded into
    temps 0, 1, ..., the pre-steps run on every input row, and temp `pooled` is pooled
    (no padding then)."""

    name: str
    op: str  # "MAX" | "ADD"
    blocks: int
    H: int
    W: int
    OH: int
    OW: int
    KH: int
    KW: int
    sh: int
    sw: int
    pad: tuple[int, int, int, int]
    offset: int
    steps: list[AluStep]
    params: np.ndarray
    block: int = 16
    n_inputs: int = 1
    pre_steps: list[AluStep] = field(default_factory=list)
    pooled: int = 0
    images: int = 1

    def describe(self) -> str:
        kind = "max" if self.op == "MAX" else "sum"
        n = len(self.steps) + len(self.pre_steps)
        images = f"{self.images}x" if self.images > 1 else ""
        return (f"{kind} pool {images}{self.H}x{self.W}x{self.blocks * self.block} -> {self.OH}x{self.OW} "
                f"k{self.KH}x{self.KW} s{self.sh} p{list(self.pad)}, {self.n_inputs} input(s), "
                f"{n} ALU ops")  # fmt: skip

    def reference(self, x) -> np.ndarray:
        """From the int8 input(s) `[blocks, H, W, block]`: the int8 output `[blocks, OH, OW,
        block]` (`[images * blocks, ...]` both for a batch)."""
        xs = x if isinstance(x, list) else [x]
        if self.images > 1:
            split = [np.split(np.asarray(v), self.images) for v in xs]
            return np.concatenate([replace(self, images=1).reference([v[n] for v in split])
                                   for n in range(self.images)])  # fmt: skip
        temps = [np.asarray(v, np.int8).astype(np.int32) for v in xs]
        apply_steps(self.pre_steps, temps, self.params, self.blocks, (-1, 1, 1, self.block))
        x = temps[self.pooled]
        t, b, l, r = self.pad
        fill = -128 if self.op == "MAX" else 0  # the padding: the pool's identity on int8
        v = np.full((self.blocks, self.H + t + b, self.W + l + r, self.block), fill, np.int64)
        v[:, t : t + self.H, l : l + self.W] = np.asarray(x, np.int64)  # `steps` subtract offset
        taps = [v[:, ky : ky + (self.OH - 1) * self.sh + 1 : self.sh,
                  kx : kx + (self.OW - 1) * self.sw + 1 : self.sw]
                for ky in range(self.KH) for kx in range(self.KW)]  # fmt: skip
        acc = np.max(taps, axis=0) if self.op == "MAX" else np.sum(taps, axis=0)
        out = [(acc & 0xFFFFFFFF).astype(np.uint32).view(np.int32)]  # modulo 2^32
        apply_steps(self.steps, out, self.params, self.blocks, (-1, 1, 1, self.block))
        return out[0].astype(np.int8)


@dataclass
class PoolMatch:
    layer: PoolLayer
    ops: list[Operation]
    inputs: list[SSAValue]  # the arena tensors read
    output: SSAValue
    widened: SSAValue | None = None


def match_pool_layer(
    narrow: Operation,
    leaves: dict[SSAValue, tuple[SSAValue, int]],
    claimed: set[Operation],
    name: str,
) -> PoolMatch:
    """The windowed pool ending at `narrow`: `narrow(steps(pool(widen(pad?(x)))))` with `x` an
    int8 tensor in DRAM, `pool(leaf)` with `leaf` a GEMM layer's output, or `pool(tree)` with
    `tree` as `match_alu_layer` takes it (unpadded); `NotALayer` else. The steps are
    per-tensor or per-channel constants on the pooled value."""
    _packed_shape(narrow)
    group: list[Operation] = [narrow]
    chain: list[Operation] = []
    value = narrow.input
    while not isinstance(value.owner, accel.MaxPool2DOp | accel.SumPool2DOp):
        op = value.owner
        if not isinstance(op, Operation) or len(list(value.uses)) != 1 or op.name not in (
            *_LANE_OPS, *_BINARY_OPS
        ) or (op.name in _BINARY_OPS and op.rhs is not None):  # fmt: skip
            raise NotALayer("not a pool followed by constant ALU ops")
        chain.append(op)
        value = op.operands[0]
    pool = value.owner
    if chain and len(list(value.uses)) != 1:  # unchained, it is the widened result
        raise NotALayer("the pooled value is also used elsewhere")
    group.append(pool)
    src = tuple(pool.input.type.get_shape())
    if len(src) != 6 or src[4] != 1:
        raise NotALayer(f"pool input {list(src)} is not [N, C/B, H, W, 1, B]")
    kind = "MAX" if isinstance(pool, accel.MaxPool2DOp) else "ADD"
    identity = -128 if kind == "MAX" else 0
    pad, offset = (0, 0, 0, 0), 0
    x = pool.input
    tree = _Tree(leaves, claimed, src[1], src[5])
    if x not in leaves and not isinstance(x.owner, accel.WidenOp):
        pooled = tree.visit(x, src)
        return _pool_match(name, narrow, pool, kind, tree, pooled, chain, group)
    if x in leaves:
        arena, offset = leaves[x]
    elif isinstance(x.owner, accel.WidenOp) and len(list(x.uses)) == 1:
        group.append(x.owner)
        arena = x.owner.input
        if isinstance(arena.owner, accel.PadOp) and len(list(arena.uses)) == 1:
            p = arena.owner
            if p.pad_value.value.data != identity:
                raise NotALayer(f"pool padding {p.pad_value.value.data} is not the identity "
                                f"{identity} of the pool")  # fmt: skip
            pad = tuple(int(v) for v in p.array_prop("padding"))
            group.append(p)
            arena = p.input
        if tensor_dtype(arena.type) != np.int8:
            raise NotALayer("the pooled tensor is not int8")
    else:
        raise NotALayer("the pooled tensor is not in DRAM")
    if offset and kind != "MAX":  # max(x - c) = max(x) - c; a sum would count c per tap
        raise NotALayer("a sum pool of an offset tensor")
    tree.inputs.append(arena)
    if offset:
        tree.constant("ADD", np.array([-offset]), 0)  # after the pool (max commutes with it)
    return _pool_match(name, narrow, pool, kind, tree, None, chain, group, pad, offset)


def _pool_match(name, narrow, pool, kind, tree: _Tree, pooled: int | None, chain, group,
                pad=(0, 0, 0, 0), offset=0) -> PoolMatch:  # fmt: skip
    """The layer: `tree`'s steps so far run before the pool when `pooled` is a temp (a
    computed tensor), after it otherwise; then the constant `chain` ops on the pooled value."""
    n_pre = len(tree.steps) if pooled is not None else 0
    for op in reversed(chain):
        values = np.asarray(op.values, np.int64).reshape(-1)
        if op.name == "accel.shift_left":
            values = -values
        tree.constant(_LANE_OPS.get(op.name) or _BINARY_OPS[op.name], values, 0)
    src, shape = tuple(pool.input.type.get_shape()), tuple(pool.output.type.get_shape())
    kh, kw = (int(v) for v in pool.array_prop("window"))
    sh, sw = (int(v) for v in pool.array_prop("strides"))
    h, w = src[2] - pad[0] - pad[1], src[3] - pad[2] - pad[3]  # the tensor in DRAM, unpadded
    layer = PoolLayer(name, kind, src[1], h, w, shape[2], shape[3], kh, kw, sh, sw,
                      pad, offset, tree.steps[n_pre:], tree.table(), src[5],
                      len(tree.inputs), tree.steps[:n_pre], pooled or 0, src[0])  # fmt: skip
    widened = narrow.input if len(list(narrow.input.uses)) > 1 else None
    ops = [*group, *tree.group, *chain]
    return PoolMatch(layer, ops, tree.inputs, narrow.output, widened)


# --------------------------------------------------------------------------------------------
# Formed layers: `vta.layer` ops (`form-vta-layers`)


def read_layer(
    op: vta.LayerOp,
    name: str,
    leaves: dict[SSAValue, tuple[SSAValue, int]] | None = None,
) -> LayerMatch | AluMatch | PoolMatch:
    """The layer a formed `vta.layer` holds, read from its body as its kind says (a GEMM
    layer from the body's first op, an element-wise tree or a pool from the value it narrows);
    `NotALayer` when the body is not exactly such a layer (e.g. edited by hand) or, for an
    element-wise or pool layer, reads a value that is neither a `leaves` entry nor an int8
    tensor in DRAM. The match's `output` / `widened` are the body's values (the layer's
    results 0 / 1)."""
    body = op.body_ops()
    kind = op.kind.data
    yielded = list(op.body.block.last_op.operands)  # type: ignore[union-attr]
    m: LayerMatch | AluMatch | PoolMatch
    if kind in vta.GEMM_KINDS:
        if not body or not isinstance(body[0], accel.Conv2DZpOp | accel.DenseZpOp):
            raise NotALayer(f"a {kind} layer's body does not start with a GEMM op")
        m = match_layer(body[0], name)
        if m.layer.kind != kind:
            raise NotALayer(f"the body computes a {m.layer.kind} layer, not a {kind} one")
    else:
        narrow = yielded[0].owner
        if not isinstance(narrow, Operation):
            raise NotALayer(f"a {kind} layer's result is not computed in its body")
        match = match_pool_layer if kind == "pool" else match_alu_layer
        m = match(narrow, leaves or {}, set(), name)
    if set(m.ops) != set(body):
        raise NotALayer(f"the body of the {kind} layer holds ops that are not part of it")
    want = [m.output] if m.widened is None else [m.output, m.widened]
    if yielded != want:
        raise NotALayer(f"the {kind} layer yields other values than its output and the value it "
                        "narrows")  # fmt: skip
    return m


class LayerReader:
    """Reads the formed layers of one accelerator function in body order:

        reader = LayerReader("vta_fn_0")
        m = reader.read(layer_op)       # LayerMatch | AluMatch | PoolMatch, or NotALayer
        reader.accept(layer_op, m)      # later layers may read its results from DRAM

    A layer's results become leaves of later element-wise and pool layers (the values they
    read from DRAM) only once accepted, so a layer that runs on the host is no leaf."""

    def __init__(self, function: str):
        self.function = function
        self.leaves: dict[SSAValue, tuple[SSAValue, int]] = {}
        self.n_gemm = self.n_alu = 0

    def name(self, op: vta.LayerOp) -> str:
        if op.kind.data in vta.GEMM_KINDS:
            return f"{self.function}_layer{self.n_gemm}"
        kind = "pool" if op.kind.data == "pool" else "eltwise"
        return f"{self.function}_{kind}{self.n_alu}"

    def read(self, op: vta.LayerOp) -> LayerMatch | AluMatch | PoolMatch:
        return read_layer(op, self.name(op), self.leaves)

    def accept(self, op: vta.LayerOp, m: LayerMatch | AluMatch | PoolMatch) -> None:
        output = op.outputs[0]
        if isinstance(m, LayerMatch):
            self.n_gemm += 1
            if m.offset is not None:
                self.leaves[output] = (output, m.offset)
        else:
            self.n_alu += 1
        if len(op.outputs) > 1:
            self.leaves[op.outputs[1]] = (output, 0)


__all__ = [
    "AluLayer",
    "AluMatch",
    "AluStep",
    "LayerMatch",
    "LayerReader",
    "NotALayer",
    "PoolLayer",
    "PoolMatch",
    "match_alu_layer",
    "match_layer",
    "match_pool_layer",
    "read_layer",
]
