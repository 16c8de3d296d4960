"""`lower-q-to-accel` and the `accel` compute ops.

- every compute op's interpreter against an independent reference (the ISA's definitions in
  Python integers, direct convolution loops) on edge cases: INT32_MIN, ties, shifts 0 and 31;
- seeded sweeps of random quantization parameters and shapes through `insert-pack-unpack` and
  `lower-q-to-accel` (both bias modes, blocks 4 and 16), compared bit for bit with the q IR;
- FULLY_CONNECTED: the accumulators on which the naive integer requantization is wrong, and the
  host requantization that is not;
- every fixture through `vta-pipeline{bias-placement=preload}` with `--verify-semantics`, the
  collapsed MobileNet's accelerator function on its own, and LiteRT on a few fixtures in both
  bias modes.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from xdsl.context import Context
from xdsl.dialects.builtin import TensorType, i8, i32
from xdsl.ir import Block
from qaccel.pipeline.manager import PipelineError, build_pipeline

from qaccel.interpreter import accel_semantics as sem
from qaccel.kernels import arithmetic as ar
from qaccel.interpreter.interpreter import entry_function, random_inputs, run_function
from qaccel.targets.vta import alu
from qaccel.dialects import accel, q
from qaccel.passes.insert_pack_unpack import InsertPackUnpackPass
from qaccel.lowering.lower_q_to_accel import LowerQToAccelPass
from qaccel.lowering.q_to_accel.accumulate import block_grouped_filter
from qaccel.tools.qaccel_opt import main as qaccel_opt

from conftest import FIXTURE_MODELS, attach_vta, fixture_models, parse_module

INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1
TARGET = 'qaccel.target = "vta"'
COLLAPSED = FIXTURE_MODELS / "mobilenetv2_035_96_collapsed.tflite"
RUNNABLE = [p for p in fixture_models() if p != COLLAPSED]


# --------------------------------------------------------------------------------------------
# References: the VTA simulator's ALU lane functions (targets/vta/alu.py, tested against the
# ISA's definitions in test_vta_alu.py), so what the interpreter computes is what the hardware
# computes.


def wrap(v: int) -> int:
    return (v + 2**31) % 2**32 - 2**31


def arg(shape, element=i32):
    return Block(arg_types=[TensorType(element, list(shape))]).args[0]


EDGES = np.array(
    [INT32_MIN, INT32_MIN + 1, -(2**30) - 1, -(2**30), -3, -2, -1, 0, 1, 2, 3, 2**30,
     2**30 + 1, INT32_MAX - 1, INT32_MAX, 12345678, -12345678, 3 << 20, -(3 << 20), 1 << 15],
    dtype=np.int64,
)  # fmt: skip


def lanes_of(values: np.ndarray, shape) -> np.ndarray:
    """`values` (one per lane) broadcast to a packed shape `[N, C/B, ..., 1, B]`."""
    return np.broadcast_to(accel.lane_values(values, shape), shape)


def packed_edges(lanes: int) -> np.ndarray:
    """Every edge value in every lane: `[len(EDGES), lanes/4, 1, 4]` int32."""
    x = np.repeat(EDGES[:, None], lanes, axis=1)
    return x.reshape(len(EDGES), lanes // 4, 1, 4).astype(np.int32)


# --------------------------------------------------------------------------------------------
# Op semantics


def test_round_multiply_is_the_alu_rdmul_on_edges():
    multipliers = np.array([INT32_MIN, INT32_MAX, 2**30, 1, 0, -1, 1518500250, -(2**30)])
    x = packed_edges(len(multipliers))
    out = sem.lane_op(accel.RoundMultiplyOp(arg(x.shape), multipliers), x)
    assert np.array_equal(out, alu.alu_rdmul(x, lanes_of(multipliers, x.shape)))
    assert out[0, 0, 0, 0] == INT32_MAX  # INT32_MIN * INT32_MIN saturates
    # Positive ties round up, negative ties toward zero: 2^30 * (+-3) / 2^31 = +-1.5.
    tie = np.array([[[[3, -3, 1, -1]]]], dtype=np.int32)
    got = sem.lane_op(accel.RoundMultiplyOp(arg(tie.shape), [2**30]), tie)
    assert got.tolist() == [[[[2, -1, 1, 0]]]]


def test_round_rshift_is_the_alu_rshr():
    shifts = np.array([0, 1, 2, 3, 7, 15, 30, 31])
    x = packed_edges(len(shifts))
    out = sem.lane_op(accel.RoundRShiftOp(arg(x.shape), shifts), x)
    assert np.array_equal(out, alu.alu_rshr(x, lanes_of(shifts, x.shape)))
    # Ties round away from zero: -3 / 2 -> -2, 3 / 2 -> 2; by 31, INT32_MIN -> -1.
    tie = np.array([[[[-3, 3, -5, INT32_MIN]]]], dtype=np.int32)
    got = sem.lane_op(accel.RoundRShiftOp(arg(tie.shape), [1, 1, 1, 31]), tie)
    assert got.tolist() == [[[[-2, 2, -3, -1]]]]


def test_shift_left_is_the_alu_shr_by_a_negative_amount():
    shifts = np.array([0, 1, 31, 20, 0, 1, 31, 20])
    x = packed_edges(len(shifts))
    out = sem.lane_op(accel.ShiftLeftOp(arg(x.shape), shifts), x)
    assert np.array_equal(out, alu.alu_shr(x, -lanes_of(shifts, x.shape)))
    assert out[1, 0, 0, 2] == INT32_MIN  # (INT32_MIN + 1) << 31 keeps the low 32 bits


def test_bias_add_and_binary_ops_are_the_alu_ops():
    x = packed_edges(4)
    bias = np.array([INT32_MAX, INT32_MIN, 1, -1])
    got = sem.lane_op(accel.BiasAddZpOp(arg(x.shape), bias), x)
    assert np.array_equal(got, alu.alu_add(x, lanes_of(bias, x.shape).astype(np.int32)))
    rng = np.random.default_rng(0)
    bounds = {"size": (1, 2, 3, 3, 1, 4), "endpoint": True}
    lhs = rng.integers(INT32_MIN, INT32_MAX, **bounds).astype(np.int32)
    lhs.flat[:4] = [INT32_MIN, INT32_MAX, INT32_MIN, -1]
    row = rng.integers(INT32_MIN, INT32_MAX, **{**bounds, "size": (1, 2, 1, 1, 1, 4)})
    row = row.astype(np.int32)
    row.flat[:4] = [INT32_MIN, 1, -1, INT32_MIN]
    cases = {
        accel.AddOp: alu.alu_add,
        accel.MulOp: alu.alu_mul,
        accel.MinOp: alu.alu_min,
        accel.MaxOp: alu.alu_max,
    }
    for cls, fn in cases.items():
        out = sem.binary_op(cls(arg(lhs.shape), arg(row.shape)), lhs, row)
        assert out.dtype == np.int32
        assert np.array_equal(out, fn(lhs, np.broadcast_to(row, lhs.shape))), cls
        by = sem.binary_op(cls(arg(lhs.shape), value=[-7]), lhs, None)
        assert np.array_equal(by, fn(lhs, np.full(lhs.shape, -7, np.int32))), cls


def test_narrow_truncates_and_widen_sign_extends():
    module = parse_module(
        """
        func.func @f(%x: tensor<1x1x1x4xi32>) -> (tensor<1x1x1x4xi8>, tensor<1x1x1x4xi32>) {
          %n = accel.narrow %x : tensor<1x1x1x4xi32> -> tensor<1x1x1x4xi8>
          %w = accel.widen %n : tensor<1x1x1x4xi8> -> tensor<1x1x1x4xi32>
          func.return %n, %w : tensor<1x1x1x4xi8>, tensor<1x1x1x4xi32>
        }
        """
    )
    x = np.array([[[[300, -129, 127, INT32_MIN + 255]]]], dtype=np.int32)
    n, w = run_function(module, [x])
    assert n.tolist() == [[[[44, 127, 127, -1]]]]  # STORE OUT keeps the low 8 bits
    assert w.dtype == np.int32 and w.tolist() == [[[[44, 127, 127, -1]]]]


def direct_conv(x, w, strides, dilations, padding, pad_value, groups, bias):
    """`accel.conv2d_zp` by loops over taps, on plain NHWC / OHWI arrays."""
    n, h, wd, _ = x.shape
    o, kh, kw, cg = w.shape
    top, bottom, left, right = padding
    xp = np.pad(x.astype(np.int64), ((0, 0), (top, bottom), (left, right), (0, 0)),
                constant_values=pad_value)  # fmt: skip
    oh = (h + top + bottom - (kh - 1) * dilations[0] - 1) // strides[0] + 1
    ow = (wd + left + right - (kw - 1) * dilations[1] - 1) // strides[1] + 1
    out = np.zeros((n, oh, ow, o), dtype=np.int64)
    per_group = o // groups
    for oc in range(o):
        g = oc // per_group
        for ky in range(kh):
            for kx in range(kw):
                ys = ky * dilations[0] + np.arange(oh) * strides[0]
                xs = kx * dilations[1] + np.arange(ow) * strides[1]
                tap = xp[:, ys][:, :, xs][..., g * cg : (g + 1) * cg]
                out[..., oc] += tap @ w[oc, ky, kx].astype(np.int64)
    return np.vectorize(wrap)((out + bias).astype(object)).astype(np.int64)


@pytest.mark.parametrize("seed", range(6))
def test_conv2d_zp_matches_direct_convolution(seed):
    rng = np.random.default_rng(seed)
    block = int(rng.choice([4, 8]))
    groups = int(rng.choice([1, 2]))
    ib_g, ob_g = int(rng.integers(1, 3)), int(rng.integers(1, 3))
    cin, cout = ib_g * groups * block, ob_g * groups * block
    kh, kw = (int(v) for v in rng.integers(1, 4, size=2))
    strides = tuple(int(v) for v in rng.integers(1, 3, size=2))
    dilations = tuple(int(v) for v in rng.integers(1, 3, size=2))
    padding = tuple(int(v) for v in rng.integers(0, 3, size=4))
    h, w = 5, 6
    pad_value = int(rng.integers(-128, 128))
    x = rng.integers(-128, 128, size=(1, h, w, cin)).astype(np.int8)
    wts = rng.integers(-128, 128, size=(cout, kh, kw, cin // groups)).astype(np.int8)
    bias = rng.integers(INT32_MIN, INT32_MAX, size=cout, endpoint=True)
    expected = direct_conv(x, wts, strides, dilations, padding, pad_value, groups, bias)
    act = accel.Packing.activations(4, block)
    xp = sem.pack(x, act)
    packed_w = sem.pack(wts, accel.Packing.weights(4, block, block))  # [O/B, I/B/G, KH, KW, B, B]
    out_type = TensorType(i32, act.packed_shape(expected.shape))
    op = accel.Conv2DZpOp(
        arg(xp.shape, i8), arg(packed_w.shape, i8), out_type, strides=strides,
        dilations=dilations, padding=padding, pad_value=pad_value, groups=groups, bias=bias,
    )  # fmt: skip
    op.verify()
    got = sem.conv2d_zp(op, xp, packed_w)
    assert np.array_equal(sem.unpack(got, act, expected.shape), expected)


def test_block_grouped_filter_chooses_aligned_groups():
    # Depthwise, multiplier 1, 8 channels in blocks of 4: one group per block, diagonal tiles.
    o = np.arange(8)
    taps = np.arange(1, 9, dtype=np.int8).reshape(8, 1, 1)
    tiles, groups = block_grouped_filter(o, o, taps, 8, 8, 4)
    assert groups == 2 and tiles.shape == (2, 1, 1, 1, 4, 4)
    assert np.array_equal(tiles[1, 0, 0, 0], np.diag([5, 6, 7, 8]))
    # Multiplier 3 over 4 input channels: output blocks straddle input channels; one group.
    o = np.arange(12)
    tiles, groups = block_grouped_filter(o, o // 3, np.ones((12, 1, 1), np.int8), 12, 4, 4)
    assert groups == 1 and tiles.shape == (3, 1, 1, 1, 4, 4)
    assert tiles.sum() == 12


def test_dense_pools_reduce_pad_concat_match_numpy():
    rng = np.random.default_rng(1)
    act2 = accel.Packing.activations(2, 4)
    x = rng.integers(-128, 128, size=(3, 10)).astype(np.int8)
    w = rng.integers(-128, 128, size=(6, 10)).astype(np.int8)
    op = accel.DenseZpOp(arg((3, 3, 1, 4), i8), arg((2, 3, 4, 4), i8),
                         TensorType(i32, [3, 2, 1, 4]), bias=np.arange(8))  # fmt: skip
    got = sem.dense_zp(op, sem.pack(x, act2), sem.pack(w, accel.Packing.weights(2, 4, 4)))
    expected = x.astype(np.int64) @ w.T.astype(np.int64) + np.arange(6)
    assert np.array_equal(sem.unpack(got, act2, (3, 6)), expected)

    act = accel.Packing.activations(4, 4)
    plain = rng.integers(INT32_MIN // 16, INT32_MAX // 16, size=(1, 5, 6, 8)).astype(np.int32)
    xp = sem.pack(plain, act)
    t = TensorType(i32, list(xp.shape))
    mp = accel.MaxPool2DOp(arg(xp.shape), TensorType(i32, [1, 2, 2, 2, 1, 4]), [3, 2], [2, 2])
    sp = accel.SumPool2DOp(arg(xp.shape), TensorType(i32, [1, 2, 2, 2, 1, 4]), [3, 2], [2, 2])
    taps = [plain[:, ky : ky + 3 : 2, kx : kx + 3 : 2] for ky in range(3) for kx in range(2)]
    assert np.array_equal(sem.unpack(sem.pool(mp, xp), act, (1, 2, 2, 8)), np.max(taps, axis=0))
    total = np.sum(np.array(taps, dtype=np.int64), axis=0)
    assert np.array_equal(sem.unpack(sem.pool(sp, xp), act, (1, 2, 2, 8)), ar.wrap_int32(total))
    rs = accel.ReduceSumOp(arg(xp.shape), TensorType(i32, [1, 2, 1, 4]), [2, 3])
    reduced = sem.reduce_sum(rs, xp)
    assert np.array_equal(
        sem.unpack(reduced, act2, (1, 8)), ar.wrap_int32(plain.astype(np.int64).sum(axis=(1, 2)))
    )
    del t

    x8 = rng.integers(-128, 128, size=(1, 2, 3, 8)).astype(np.int8)
    p8 = sem.pack(x8, act)
    pad = accel.PadOp(arg(p8.shape, i8), TensorType(i8, [1, 2, 4, 6, 1, 4]), [0, 2, 1, 2], -7)
    expected = np.pad(x8, ((0, 0), (0, 2), (1, 2), (0, 0)), constant_values=-7)
    assert np.array_equal(sem.unpack(sem.pad_op(pad, p8), act, expected.shape), expected)


def test_host_requantize_is_the_double_requantization():
    rng = np.random.default_rng(2)
    acc = rng.integers(-(2**24), 2**24, size=(5, 2, 1, 4)).astype(np.int32)
    acc.flat[:6] = [INT32_MIN, INT32_MAX, -3, 3, -1, 1]
    scale = np.array([0.5, 0.25, 1 / 3, 1e-3, 7.5e-5, 2.0, 0.125, 0.0013913921871730327])
    op = accel.HostRequantizeOp(arg(acc.shape), TensorType(i8, list(acc.shape)), scale, (5, -3),
                                (-100, 90))  # fmt: skip
    got = sem.host_requantize(op, acc)
    s = lanes_of(scale, acc.shape)
    exact = [float(np.float64(a - 5) * sc) for a, sc in zip(acc.ravel().tolist(), s.ravel())]
    rounded = np.array([int(np.trunc(v + np.copysign(0.5, v))) if abs(v) < 2**31 else INT32_MIN
                        for v in exact]).reshape(acc.shape)  # fmt: skip
    assert np.array_equal(got, np.clip(np.vectorize(wrap)((rounded - 3).astype(object)), -100, 90))


# --------------------------------------------------------------------------------------------
# Random q IR through insert-pack-unpack and lower-q-to-accel


def hexconst(name: str, array: np.ndarray, element: str | None = None) -> str:
    storage = {np.dtype(np.int8): "i8", np.dtype(np.int32): "i32"}[array.dtype]
    shape = "x".join(map(str, array.shape))
    data = np.ascontiguousarray(array).astype(array.dtype.newbyteorder("<")).tobytes().hex()
    return (f'%{name} = tfl.const dense<"0x{data.upper()}"> : tensor<{shape}x{storage}> '
            f"-> tensor<{shape}x{element or storage}>")  # fmt: skip


def ty(shape, element="i8") -> str:
    return f"tensor<{'x'.join(map(str, shape))}x{element}>"


def arr(values, kind="i32") -> str:
    return f"array<{kind}: {', '.join(str(int(v)) for v in np.ravel(values))}>"


def program(
    args: list[tuple[str, tuple]], results: list[tuple[str, tuple]], body: list[str]
) -> str:
    """A host function calling one accelerator function with `body`."""
    params = ", ".join(f"%{n}: {ty(s)}" for n, s in args)
    rtypes = ", ".join(ty(s) for _, s in results)
    names = ", ".join(f"%{n}" for n, _ in args)
    arg_types = ", ".join(ty(s) for _, s in args)
    outs = ", ".join(f"%r{i}" for i in range(len(results)))
    ret = ", ".join(f"%{n}" for n, _ in results)
    return "\n".join([
        f"func.func @main({params}) -> ({rtypes}) {{",
        f"  {outs} = func.call @vta_fn_0({names}) : ({arg_types}) -> ({rtypes})",
        f"  func.return {outs} : {rtypes}",
        "}",
        f"func.func private @vta_fn_0({params}) -> ({rtypes}) attributes {{{TARGET}}} {{",
        *[f"  {line}" for line in body],
        f"  func.return {ret} : {rtypes}",
        "}",
    ])  # fmt: skip


def multiplier(rng) -> int:
    """An extreme multiplier (0, 2^30, INT32_MAX) or any in [2^30, 2^31)."""
    return int(rng.choice([0, 1 << 30, INT32_MAX, int(rng.integers(1 << 30, 1 << 31))]))


def fixed_point(rng, scales) -> tuple[list[int], list[int]]:
    """TFLite's (multiplier, shift) of real scales, or (one time in five) extreme ones:
    multipliers 0 / 2^30 / INT32_MAX, shifts from -24 to +3 (a left shift that wraps)."""
    if rng.random() < 0.2:
        n = len(scales)
        return [multiplier(rng) for _ in range(n)], [int(v) for v in rng.integers(-24, 4, size=n)]
    m, sh = ar.quantize_multiplier(np.asarray(scales, np.float64))
    return [int(v) for v in m], [int(v) for v in sh]


def relu_bounds(rng, zp: int) -> tuple[int, int]:
    """RELU ([zp, 127]), RELU6-like, or any sub-range."""
    kind = rng.random()
    if kind < 0.4:
        return zp, 127
    if kind < 0.7:
        return zp, int(min(127, zp + rng.integers(10, 120)))
    lo = int(rng.integers(-128, 128))
    return lo, int(rng.integers(lo, 128))


def requantize_tail(
    rng, src: str, shape: tuple, channels: int, name: str, acc_scale: float
) -> list[str]:
    """A fixed-point or double `q.requantize` of `%src` and maybe a `q.relu`. `acc_scale` is
    the real scale that spreads typical accumulators (standard deviation about 40) over int8."""
    per_channel = rng.random() < 0.6
    n = channels if per_channel else 1
    ozp = int(rng.integers(-128, 128))
    rzp = int(rng.choice([0, 0, int(rng.integers(-1000, 1000))]))
    scales = acc_scale * np.exp(rng.uniform(np.log(0.3), np.log(3.0), size=n))
    if rng.random() < 0.3:
        scales[rng.random(n) < 0.2] = 0.5  # exact halves: ties everywhere
        props = f"scale = array<f64: {', '.join(repr(float(v)) for v in scales)}>"
    else:
        mults, shifts = fixed_point(rng, scales)
        props = f"multiplier = {arr(mults)}, shift = {arr(shifts)}"
    lines = [
        (
            f"%{name}_q = q.requantize %{src} {{{props}, input_zero_point = {rzp} : i32, "
            f"output_zero_point = {ozp} : i32}} : ({ty(shape, 'i32')}) -> {ty(shape)}"
        )
    ]
    if rng.random() < 0.5:
        lo, hi = relu_bounds(rng, ozp)
        lines.append(f"%{name} = q.relu %{name}_q {{min = {lo} : i32, max = {hi} : i32}} : "
                     f"({ty(shape)}) -> {ty(shape)}")  # fmt: skip
    else:
        lines[0] = lines[0].replace(f"%{name}_q =", f"%{name} =", 1)
    return lines


def bias_lines(rng, src: str, shape: tuple, channels: int, name: str) -> tuple[list[str], str]:
    if rng.random() < 0.3:
        return [], src
    big = rng.random() < 0.15  # accumulators near the int32 limits: wraparound everywhere
    bound = 2**31 - 1 if big else 2**14
    bias = rng.integers(-bound, bound, size=channels).astype(np.int32)
    return [
        hexconst(f"{name}_b", bias),
        (f"%{name}_acc = q.bias_add %{src}, %{name}_b : ({ty(shape, 'i32')}, "
         f"{ty((channels,), 'i32')}) -> {ty(shape, 'i32')}"),
    ], f"{name}_acc"  # fmt: skip


def conv_case(rng) -> str:
    depthwise = rng.random() < 0.35
    c = int(rng.integers(1, 13))
    groups = 1
    if depthwise:
        mult = int(rng.integers(1, 4))
        o = c * mult
    else:
        groups = int(rng.choice([1, 1, 2]))
        c = c * groups
        o = int(rng.integers(1, 7)) * groups
    h, w = (int(v) for v in rng.integers(2, 7, size=2))
    kh, kw = (int(v) for v in rng.integers(1, 4, size=2))
    sh, sw = (int(v) for v in rng.integers(1, 3, size=2))
    dh, dw = (int(v) for v in rng.integers(1, 3, size=2))
    pads = [int(v) for v in rng.integers(0, 3, size=4)]
    oh = (h + pads[0] + pads[1] - (kh - 1) * dh - 1) // sh + 1
    ow = (w + pads[2] + pads[3] - (kw - 1) * dw - 1) // sw + 1
    if oh < 1 or ow < 1:
        pads = [kh * dh, kh * dh, kw * dw, kw * dw]
        oh = (h + pads[0] + pads[1] - (kh - 1) * dh - 1) // sh + 1
        ow = (w + pads[2] + pads[3] - (kw - 1) * dw - 1) // sw + 1
    xzp = int(rng.integers(-128, 128))
    wzp = int(rng.choice([0, 0, 0, int(rng.integers(-20, 21))]))
    fshape = (1, kh, kw, o) if depthwise else (o, kh, kw, c // groups)
    wts = rng.integers(-128 + max(wzp, 0), 128 + min(wzp, 0), size=fshape).astype(np.int8)
    out = (1, oh, ow, o)
    props = (f"strides = {arr([sh, sw], 'i64')}, dilations = {arr([dh, dw], 'i64')}, "
             f"padding = {arr(pads, 'i64')}, input_zero_point = {xzp} : i32, "
             f"filter_zero_point = {wzp} : i32")  # fmt: skip
    opname = "q.depthwise_conv2d" if depthwise else "q.conv2d"
    if depthwise:
        props += f", depth_multiplier = {mult} : i32"
    body = [hexconst("w", wts),
            (f"%acc = {opname} %x, %w {{{props}}} : ({ty((1, h, w, c))}, {ty(fshape)}) "
            f"-> {ty(out, 'i32')}")]  # fmt: skip
    lines, src = bias_lines(rng, "acc", out, o, "c")
    taps = kh * kw * (1 if depthwise else c // groups)
    body += lines + requantize_tail(rng, src, out, o, "y", 1 / (140 * np.sqrt(taps)))
    return program([("x", (1, h, w, c))], [("y", out)], body)


def dense_case(rng) -> str:
    i, o = int(rng.integers(1, 40)), int(rng.integers(1, 20))
    rows = [(int(rng.integers(1, 4)), i), (1, int(rng.integers(1, 4)), i)][int(rng.integers(0, 2))]
    xzp = int(rng.integers(-128, 128))
    wzp = int(rng.choice([0, 0, int(rng.integers(-20, 21))]))
    wts = rng.integers(-128 + max(wzp, 0), 128 + min(wzp, 0), size=(o, i)).astype(np.int8)
    out = (*rows[:-1], o)
    body = [hexconst("w", wts),
            (f"%acc = q.dense %x, %w {{input_zero_point = {xzp} : i32, "
             f"filter_zero_point = {wzp} : i32}} : ({ty(rows)}, {ty((o, i))}) "
             f"-> {ty(out, 'i32')}")]  # fmt: skip
    lines, src = bias_lines(rng, "acc", out, o, "d")
    body += lines + requantize_tail(rng, src, out, o, "y", 1 / (140 * np.sqrt(i)))
    return program([("x", rows)], [("y", out)], body)


def add_sub_mul_case(rng) -> str:
    kind = str(rng.choice(["q.add", "q.sub", "q.mul"]))
    shape = (1, int(rng.integers(1, 4)), int(rng.integers(1, 4)), int(rng.integers(1, 11)))
    c = shape[-1]
    rhs_kind = str(
        rng.choice(["tensor", "per_channel", "const_channel", "const_scalar", "const_full"])
    )
    args = [("a", shape)]
    body = []
    if rhs_kind == "tensor":
        args.append(("b", shape))
        rshape = shape
    elif rhs_kind == "per_channel":
        rshape = (1, 1, 1, c)
        args.append(("b", rshape))
    else:
        rshape = {"const_channel": (1, 1, 1, c), "const_scalar": (1,), "const_full": shape}[
            rhs_kind
        ]
        body.append(hexconst("b", rng.integers(-128, 128, size=rshape).astype(np.int8)))
    lhs, rhs = ("a", "b")
    lshape = shape
    if kind == "q.sub" and rhs_kind != "const_full" and rng.random() < 0.3:
        lhs, rhs, lshape, rshape = "b", "a", rshape, shape  # a broadcast or constant minuend
    zps = [int(v) for v in rng.integers(-128, 128, size=3)]
    s1, s2, so = np.exp(rng.uniform(np.log(0.01), np.log(0.1), size=3))
    if kind == "q.mul":
        (m,), (sh,) = fixed_point(rng, [0.0073 * np.exp(rng.uniform(np.log(0.3), np.log(3)))])
        props = (f"lhs_zero_point = {zps[0]} : i32, rhs_zero_point = {zps[1]} : i32, "
                 f"multiplier = {m} : i32, shift = {sh} : i32, "
                 f"output_zero_point = {zps[2]} : i32")  # fmt: skip
    else:
        left = 20 if rng.random() < 0.8 else int(rng.choice([0, 8, 23]))
        twice_max = 2 * max(s1, s2)
        (m1, m2), (sh1, sh2) = fixed_point(rng, [s1 / twice_max, s2 / twice_max])
        (mo,), (sho,) = fixed_point(rng, [twice_max / ((1 << left) * so)])
        sho = min(sho, 0)  # q.add verifies that the output shift is not a left shift
        props = (f"lhs_zero_point = {zps[0]} : i32, rhs_zero_point = {zps[1]} : i32, "
                 f"left_shift = {left} : i32, lhs_multiplier = {m1} : i32, "
                 f"lhs_shift = {sh1} : i32, "
                 f"rhs_multiplier = {m2} : i32, rhs_shift = {sh2} : i32, "
                 f"output_multiplier = {mo} : i32, output_shift = {sho} : i32, "
                 f"output_zero_point = {zps[2]} : i32")  # fmt: skip
    body.append(
        f"%s = {kind} %{lhs}, %{rhs} {{{props}}} : ({ty(lshape)}, {ty(rshape)}) -> {ty(shape)}"
    )
    if rng.random() < 0.4:
        lo, hi = relu_bounds(rng, zps[2])
        body.append(f"%y = q.relu %s {{min = {lo} : i32, max = {hi} : i32}}"
                    f" : ({ty(shape)}) -> {ty(shape)}")  # fmt: skip
    else:
        body[-1] = body[-1].replace("%s =", "%y =", 1)
    return program(args, [("y", shape)], body)


def pool_mean_case(rng) -> str:
    h, w, c = int(rng.integers(2, 7)), int(rng.integers(2, 7)), int(rng.integers(1, 11))
    shape = (1, h, w, c)
    which = str(rng.choice(["max", "avg", "mean"]))
    if which == "mean":
        keep = rng.random() < 0.5
        out = (1, 1, 1, c) if keep else (1, c)
        (m,), (sh,) = fixed_point(rng, [np.exp(rng.uniform(np.log(0.3), np.log(3))) / (h * w)])
        props = (f"axes = {arr([1, 2], 'i64')}, num_elements = {h * w} : i32, "
                 f"input_zero_point = {int(rng.integers(-128, 128))} : i32, "
                 f"multiplier = {m} : i32, shift = {sh} : i32, "
                 f"output_zero_point = {int(rng.integers(-128, 128))} : i32")  # fmt: skip
        body = [f"%y = q.mean %x {{{props}}} : ({ty(shape)}) -> {ty(out)}"]
        return program([("x", shape)], [("y", out)], body)
    windows = [(kh, kw) for kh in (1, 2, 4) for kw in (1, 2, 4) if kh <= h and kw <= w]
    if which == "max":
        windows = [(kh, kw) for kh in range(1, h + 1) for kw in range(1, w + 1)]
    kh, kw = windows[int(rng.integers(0, len(windows)))]
    sh, sw = int(rng.integers(1, 3)), int(rng.integers(1, 3))
    out = (1, (h - kh) // sh + 1, (w - kw) // sw + 1, c)
    props = (
        f"filter = {arr([kh, kw], 'i64')}, strides = {arr([sh, sw], 'i64')}, "
        f"padding = {arr([0] * 4, 'i64')}"
    )
    body = [f"%y = q.{which}_pool2d %x {{{props}}} : ({ty(shape)}) -> {ty(out)}"]
    return program([("x", shape)], [("y", out)], body)


def pad_concat_case(rng, block: int) -> str:
    h, w = int(rng.integers(1, 4)), int(rng.integers(1, 4))
    c1 = block * int(rng.integers(1, 3))
    c2 = int(rng.integers(1, 7))
    pads = [int(v) for v in rng.integers(0, 3, size=4)]
    ph, pw = h + pads[0] + pads[1], w + pads[2] + pads[3]
    pv = int(rng.integers(-128, 128))
    widths = arr([0, 0, pads[0], pads[1], pads[2], pads[3], 0, 0], "i64")
    body = [
        (f"%p = q.pad %x {{padding = {widths}, pad_value = {pv} : i32}} : ({ty((1, h, w, c1))}) "
        f"-> {ty((1, ph, pw, c1))}"),
        (f"%y = q.concat %p, %z {{axis = 3 : i32}} : ({ty((1, ph, pw, c1))}, "
        f"{ty((1, ph, pw, c2))}) -> {ty((1, ph, pw, c1 + c2))}"),
        (f"%v = q.concat %z, %z {{axis = 1 : i32}} : ({ty((1, ph, pw, c2))}, "
        f"{ty((1, ph, pw, c2))}) -> {ty((1, 2 * ph, pw, c2))}"),
    ]  # fmt: skip
    return program([("x", (1, h, w, c1)), ("z", (1, ph, pw, c2))],
                   [("y", (1, ph, pw, c1 + c2)), ("v", (1, 2 * ph, pw, c2))], body)  # fmt: skip


CASES = {
    "conv": lambda rng, block: conv_case(rng),
    "dense": lambda rng, block: dense_case(rng),
    "elementwise": lambda rng, block: add_sub_mul_case(rng),
    "pool_mean": lambda rng, block: pool_mean_case(rng),
    "pad_concat": pad_concat_case,
}


def lowered_outputs(text: str, block: int, bias_mode: str, inputs) -> list[list[np.ndarray]]:
    module = attach_vta(parse_module(text), block)
    InsertPackUnpackPass().apply(Context(), module)
    LowerQToAccelPass(bias_placement=bias_mode).apply(Context(), module)
    module.verify()
    remaining = [op.name for f in module.ops if "qaccel.target" in f.attributes
                 for op in f.walk() if isinstance(op, q.QOp)]  # fmt: skip
    assert not remaining, remaining
    return [run_function(module, x) for x in inputs]


@pytest.mark.parametrize("family", sorted(CASES))
def test_random_programs_lower_bit_exactly(family):
    """Seeded sweep: random shapes and quantization parameters, blocks 4 and 16, both bias
    modes; the lowered IR must compute exactly what the q IR computes, on inputs covering the
    whole int8 range."""
    rng = np.random.default_rng(sum(map(ord, family)))
    mismatches, cases = [], 0
    for index in range(32):
        block = int(rng.choice([4, 16]))
        text = CASES[family](rng, block)
        reference = parse_module(text)
        inputs = [random_inputs(entry_function(reference), seed) for seed in range(2)]
        expected = [run_function(reference, x) for x in inputs]
        for mode in ("alu", "preload"):
            cases += 1
            got = lowered_outputs(text, block, mode, inputs)
            for e_set, g_set in zip(expected, got):
                for e, g in zip(e_set, g_set):
                    if e.dtype != g.dtype or not np.array_equal(e, g):
                        mismatches.append((index, mode, block, text))
    assert cases == 64
    assert not mismatches, mismatches[0]


def test_wraparound_and_saturation_corners():
    """Accumulators at the int32 limits: biases of INT32_MAX / INT32_MIN wrap the sums, left
    shifts by 3 and 31 wrap, the output zero point 127 sits at the clamp's edge; as TFLite's
    int32 arithmetic does."""
    body = [
        hexconst("w", np.array([[127, 127], [-128, -128], [1, -1]], np.int8)),
        hexconst("b", np.array([INT32_MAX, INT32_MIN, INT32_MAX - 5], np.int32)),
        (
            "%acc = q.dense %x, %w {input_zero_point = -128 : i32, filter_zero_point = 0 : i32} : "
            "(tensor<4x2xi8>, tensor<3x2xi8>) -> tensor<4x3xi32>"
        ),
        "%s = q.bias_add %acc, %b : (tensor<4x3xi32>, tensor<3xi32>) -> tensor<4x3xi32>",
        (
            f"%y = q.requantize %s {{multiplier = {arr([INT32_MAX, 1 << 30, INT32_MAX])}, "
            f"shift = {arr([3, 0, 31])}, input_zero_point = 5 : i32, "
            "output_zero_point = 127 : i32}"
            " : (tensor<4x3xi32>) -> tensor<4x3xi8>"
        ),
    ]
    text = program([("x", (4, 2))], [("y", (4, 3))], body)
    reference = parse_module(text)
    inputs = [np.array([[-128, -128], [127, 127], [0, -1], [127, -128]], np.int8)]
    inputs += [random_inputs(entry_function(reference), s)[0] for s in range(3)]
    for mode in ("alu", "preload"):
        got = lowered_outputs(text, 4, mode, [[x] for x in inputs])
        for x, (g,) in zip(inputs, got):
            assert np.array_equal(g, run_function(reference, [x])[0])


# --------------------------------------------------------------------------------------------
# FULLY_CONNECTED: double-precision requantization


def naive_requantize(acc: np.ndarray, scale: float) -> np.ndarray:
    """What a lowering with `QuantizeMultiplier(scale)` + MBQM would compute."""
    m, s = ar.quantize_multiplier_scalar(scale)
    return ar.multiply_by_quantized_multiplier(acc, m, s)


def double_requantize(acc: np.ndarray, scale: float) -> np.ndarray:
    return ar.float_to_int32(ar.round_half_away(acc.astype(np.float64) * scale))


FC_SCALES = [0.5, 1 / 3 + 2**-40, 0.0013913921871730327, 0.0033140009114263061]


@pytest.mark.parametrize("scale", FC_SCALES)
def test_naive_integer_requantization_breaks_fully_connected(scale):
    """On some reachable accumulators the fixed-point multiply disagrees with LiteRT's double
    requantization: negative halves (SRDHM takes them toward zero, round() away), the 31-bit
    multiplier's error near halves."""
    acc = np.arange(-(2**21), 2**21, dtype=np.int64)
    wrong = acc[naive_requantize(acc, scale) != double_requantize(acc, scale)]
    assert wrong.size > 0
    if scale == 0.5:
        assert naive_requantize(np.array([-3]), 0.5)[0] == -1
        assert double_requantize(np.array([-3]), 0.5)[0] == -2


def test_lowered_fully_connected_is_exact_where_the_naive_lowering_is_not():
    """A dense layer whose accumulators are `x + bias[o]` (unit weights) hits, in every
    channel, 256 accumulators around the smallest one where the naive lowering is wrong
    (MultiplyByQuantizedMultiplier rounds twice: scale 1/3, acc 4 gives 2, round(4/3) is 1);
    the lowered IR (host requantization) matches the q IR on all of them."""
    acc_targets, scales = [], []
    probe = np.arange(-(2**16), 2**16, dtype=np.int64)
    for scale in FC_SCALES:
        wrong = probe[naive_requantize(probe, scale) != double_requantize(probe, scale)]
        acc_targets.append(int(wrong[np.argmin(np.abs(wrong))]))
        scales.append(scale)
    assert naive_requantize(np.array([4]), 1 / 3 + 2**-40)[0] == 2
    o = len(scales)
    body = [
        hexconst("w", np.ones((o, 1), np.int8)),
        hexconst("b", np.array(acc_targets, np.int32)),
        (f"%acc = q.dense %x, %w {{input_zero_point = 0 : i32, filter_zero_point = 0 : i32}} : "
        f"({ty((256, 1))}, {ty((o, 1))}) -> {ty((256, o), 'i32')}"),
        (f"%s = q.bias_add %acc, %b : ({ty((256, o), 'i32')}, {ty((o,), 'i32')}) "
        f"-> {ty((256, o), 'i32')}"),
        (f"%y = q.requantize %s {{scale = array<f64: {', '.join(repr(s) for s in scales)}>, "
        f"input_zero_point = 0 : i32, output_zero_point = 0 : i32}} : ({ty((256, o), 'i32')}) "
        f"-> {ty((256, o))}"),
    ]  # fmt: skip
    text = program([("x", (256, 1))], [("y", (256, o))], body)
    x = np.arange(-128, 128, dtype=np.int8).reshape(256, 1)
    reference = parse_module(text)
    (expected,) = run_function(reference, [x])
    accs = x.astype(np.int64) + np.array(acc_targets)
    naive = np.stack([naive_requantize(accs[:, k], s) for k, s in enumerate(scales)], axis=1)
    exact = np.stack([double_requantize(accs[:, k], s) for k, s in enumerate(scales)], axis=1)
    assert np.array_equal(expected, np.clip(exact, -128, 127))
    # The naive lowering would be wrong in every channel, on unsaturated outputs.
    assert all(np.any((naive[:, k] != exact[:, k]) & (np.abs(exact[:, k]) < 128)) for k in range(o))
    for mode in ("alu", "preload"):
        module = attach_vta(parse_module(text), 4)
        InsertPackUnpackPass().apply(Context(), module)
        LowerQToAccelPass(bias_placement=mode).apply(Context(), module)
        assert any(isinstance(op, accel.HostRequantizeOp) for op in module.walk())
        (got,) = run_function(module, [x])
        assert np.array_equal(got, expected)


# --------------------------------------------------------------------------------------------
# The pass on its own


def test_host_functions_keep_their_q_ops_and_bad_options_fail():
    text = program([("x", (1, 2, 2, 6))], [("y", (1, 2, 2, 6))],
                   [("%y = q.relu %x {min = -5 : i32, max = 7 : i32} : "
                    f"({ty((1, 2, 2, 6))}) -> {ty((1, 2, 2, 6))}")])  # fmt: skip
    text += "\nfunc.func @host(%x: tensor<4xi8>) -> tensor<4xi8> {\n" \
            "  %y = q.relu %x {min = 0 : i32, max = 7 : i32} : (tensor<4xi8>) -> tensor<4xi8>\n" \
            "  func.return %y : tensor<4xi8>\n}"  # fmt: skip
    module = attach_vta(parse_module(text), 4)
    InsertPackUnpackPass().apply(Context(), module)
    LowerQToAccelPass().apply(Context(), module)
    host = next(f for f in module.ops if f.sym_name.data == "host")
    assert [op.name for op in host.walk()][1:] == ["q.relu", "func.return"]
    with pytest.raises(PipelineError, match="bias-placement must be one of alu, preload"):
        build_pipeline("lower-q-to-accel{bias-placement=dma}")


# --------------------------------------------------------------------------------------------
# Fixtures


@pytest.mark.parametrize("path", RUNNABLE, ids=lambda p: p.stem)
def test_fixture_through_vta_pipeline_in_preload_mode(path: Path, tmp_path, capsys):
    """`tests/test_pipeline_fixtures.py` runs the default (alu) bias mode."""
    out = tmp_path / "out.mlir"
    try:
        qaccel_opt([str(path), "-p", "vta-pipeline{bias-placement=preload}", "--verify-semantics=3",
                    "-o", str(out)])  # fmt: skip
    except SystemExit as e:
        pytest.fail(f"qaccel-opt exited {e.code}: {capsys.readouterr().err}")
    text = out.read_text()
    assert "accel.conv2d_zp" in text or "accel.dense_zp" in text
    assert "accel.bias_add_zp" not in text  # preload: biases sit in the accumulators


def test_collapsed_mobilenet_accelerator_function_lowers_exactly():
    """LiteRT refuses the whole model (its SOFTMAX), but the accelerator function holding the
    rest runs: compared on its own before and after lowering."""
    from qaccel.frontend.tflite_import import import_tflite
    from qaccel.pipeline.manager import build_pipeline, qaccel_context

    def prepared():
        module = import_tflite(COLLAPSED.read_bytes())
        spec = ("attach-target,fuse-composites,legalize-tfl-to-q,annotate-target,"
                "partition-graph,insert-pack-unpack")  # fmt: skip
        build_pipeline(spec).apply(qaccel_context(), module)
        for f in list(module.ops):  # the host function holds the refused SOFTMAX
            if "qaccel.target" not in f.attributes:
                f.detach()
                f.erase()
        return module

    before, after = prepared(), prepared()
    LowerQToAccelPass(bias_placement="preload").apply(Context(), after)
    f = entry_function(before, "vta_fn_0")
    for seed in range(2):
        x = random_inputs(f, seed)
        (e,) = run_function(before, x, entry="vta_fn_0")
        (g,) = run_function(after, x, entry="vta_fn_0")
        assert np.array_equal(e, g)


@pytest.mark.parametrize("mode", ["alu", "preload"])
@pytest.mark.parametrize("name", ["cnn_per_tensor", "mlp", "pad_concat_slice", "composite"])
def test_lowered_fixture_is_bit_exact_with_litert(name, mode, oracle):
    from qaccel.backends.litert.compare import compare_with_reference
    from qaccel.frontend.tflite_import import import_tflite
    from qaccel.pipeline.manager import build_pipeline, qaccel_context

    data = (FIXTURE_MODELS / f"{name}.tflite").read_bytes()
    module = import_tflite(data)
    build_pipeline(f"vta-pipeline{{bias-placement={mode}}}").apply(qaccel_context(), module)
    assert any(isinstance(op, accel.NarrowOp | accel.HostRequantizeOp) for op in module.walk())
    inputs = [random_inputs(entry_function(module), seed) for seed in range(2)]
    report = compare_with_reference(data, module, inputs, layers=False)
    assert report.bit_exact, report.summary()
