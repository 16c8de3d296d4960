"""Pools, MEAN/SUM and the data-movement ops against LiteRT's reference kernels: seeded random
grids over shapes, windows, axes, masks and quantization."""

from __future__ import annotations

import numpy as np
import pytest

from qaccel.kernels.base import window_geometry
from qaccel.kernels.shape import strided_slice_plan
from qaccel.kernels.qparams import QParams
from qaccel.kernels.registry import KernelError, Refusal, prepare
from test_cpu_kernels import Case, assert_bit_exact, batch_model, call_of, qt, spec

pytest.importorskip("ai_edge_litert")

ACTIVATIONS = ["NONE", "RELU", "RELU6", "RELU_N1_TO_1"]


def _log_uniform(rng, lo: float, hi: float) -> float:
    return float(np.exp(rng.uniform(np.log(lo), np.log(hi))))


def _zp(rng) -> int:
    return int(rng.choice([-128, -1, 0, 7, 127, int(rng.integers(-128, 128))]))


def _int8(rng, shape):
    return rng.integers(-128, 127, size=tuple(shape), endpoint=True, dtype=np.int8)


def _i32(values) -> np.ndarray:
    return np.asarray(values, dtype=np.int32)


def pool_cases(seed: int, count: int) -> list[Case]:
    rng = np.random.default_rng(seed)
    cases = []
    while len(cases) < count:
        op = str(rng.choice(["AVERAGE_POOL_2D", "MAX_POOL_2D"]))
        n, c = int(rng.choice([1, 2])), int(rng.choice([1, 3, 8]))
        h, w = (int(v) for v in rng.integers(1, 16, size=2))
        fh, fw = (int(rng.choice([1, 2, 3, 5, 7, 16])) for _ in range(2))
        sh, sw = (int(rng.choice([1, 2, 3])) for _ in range(2))
        padding = str(rng.choice(["SAME", "VALID"]))
        out_h, _ = window_geometry(padding, h, fh, sh)
        out_w, _ = window_geometry(padding, w, fw, sw)
        if out_h <= 0 or out_w <= 0:
            continue
        q = qt(_log_uniform(rng, 1e-3, 0.5), _zp(rng))
        # The reference kernels only DCHECK that input and output share quantization; the
        # output's matters for the activation bounds alone.
        out_q = q if rng.integers(4) else qt(_log_uniform(rng, 1e-3, 0.5), _zp(rng))
        options = {"padding": padding, "stride_h": sh, "stride_w": sw, "filter_height": fh,
                   "filter_width": fw, "fused_activation_function": str(rng.choice(ACTIVATIONS))}
        cases.append(Case(op, [spec("x", (n, h, w, c), q=q)],
                          [spec("y", (n, out_h, out_w, c), q=out_q)], options,
                          [_int8(rng, (n, h, w, c))],
                          f"{op} #{len(cases)} x{(n, h, w, c)} {options} q {q.s:g}/{q.zp}"))
    return cases


def test_pool_sweep(oracle):
    assert_bit_exact(oracle, pool_cases(41, 300))


def reduce_cases(seed: int, count: int) -> list[Case]:
    rng = np.random.default_rng(seed)
    cases = []
    for i in range(count):
        op = "MEAN" if i % 3 else "SUM"
        rank = int(rng.integers(1, 5))
        shape = tuple(int(rng.choice([1, 2, 3, 7, 16])) for _ in range(rank))
        naxes = int(rng.integers(1, rank + 1))
        axes = [int(a) for a in rng.choice(rank, size=naxes, replace=False)]
        axes = [a - rank if rng.integers(3) == 0 else a for a in axes]  # some negative
        if rng.integers(5) == 0:
            axes.append(axes[0])  # duplicates are collapsed
        keep = bool(rng.integers(2))
        resolved = {a % rank for a in axes}
        out_shape = tuple(1 if d in resolved else s for d, s in enumerate(shape)) if keep else \
            tuple(s for d, s in enumerate(shape) if d not in resolved)
        in_q = qt(_log_uniform(rng, 1e-3, 0.5), _zp(rng))
        n = int(np.prod([shape[a] for a in resolved]))
        ratio = _log_uniform(rng, 0.3, 3) * (n if op == "SUM" else 1)
        out_q = qt(in_q.s * ratio, _zp(rng))
        cases.append(Case(op, [spec("x", shape, q=in_q),
                               spec("axis", (len(axes),), np.int32, data=_i32(axes))],
                          [spec("y", out_shape, q=out_q)], {"keep_dims": keep},
                          [_int8(rng, shape)],
                          f"{op} #{i} {shape} axes {axes} keep {keep} q {in_q.s:g}/{in_q.zp} "
                          f"-> {out_q.s:g}/{out_q.zp}"))
    return cases


def test_mean_sum_sweep(oracle):
    assert_bit_exact(oracle, reduce_cases(42, 240))


def _strided_slice_case(rng, i: int) -> Case | None:
    rank = int(rng.integers(1, 5))
    shape = tuple(int(rng.choice([1, 2, 3, 5, 8])) for _ in range(rank))
    count = int(rng.integers(1, rank + 1))
    begin = [int(rng.integers(-6, 7)) for _ in range(count)]
    end = [int(rng.integers(-6, 7)) for _ in range(count)]
    strides = [int(rng.choice([1, 1, 2, 3, -1, -2])) for _ in range(count)]
    bits = lambda p: sum(1 << k for k in range(count) if rng.random() < p)  # noqa: E731
    options = {"begin_mask": bits(0.3), "end_mask": bits(0.3), "shrink_axis_mask": 0,
               "ellipsis_mask": 0, "new_axis_mask": 0}
    if rng.random() < 0.3:
        options["ellipsis_mask"] = 1 << int(rng.integers(count))
    if rng.random() < 0.3:
        options["new_axis_mask"] = bits(0.3) & ~options["ellipsis_mask"]
    if rng.random() < 0.4:
        options["shrink_axis_mask"] = bits(0.4) & ~options["ellipsis_mask"] & \
            ~options["new_axis_mask"]
        for k in range(count):
            if options["shrink_axis_mask"] >> k & 1:
                strides[k] = 1
    inputs = [spec("x", shape, q=qt(0.1, 3)), spec("b", (count,), np.int32, data=_i32(begin)),
              spec("e", (count,), np.int32, data=_i32(end)),
              spec("s", (count,), np.int32, data=_i32(strides))]
    case = Case("STRIDED_SLICE", inputs, [spec("y", (1,), q=qt(0.1, 3))], options,
                [_int8(rng, shape)],
                f"STRIDED_SLICE #{i} {shape} b{begin} e{end} s{strides} {options}")
    try:
        _, _, out_shape = strided_slice_plan(case.call(), shape)
    except KernelError:
        return None  # a shrunk index outside the dimension: LiteRT outputs garbage
    if int(np.prod(out_shape)) == 0:
        return None  # LiteRT leaves empty outputs unallocated
    case.outputs = [spec("y", out_shape, q=qt(0.1, 3))]
    return case


def movement_cases(seed: int) -> list[Case]:
    rng = np.random.default_rng(seed)
    q = qt(0.05, -7)
    cases = []
    x = _int8(rng, (2, 3, 4, 5))
    cases.append(Case("RESHAPE", [spec("x", x.shape, q=q), spec("s", (3,), np.int32,
                                                             data=_i32([6, -1, 5]))],
                      [spec("y", (6, 4, 5), q=q)], {}, [x], "RESHAPE with a shape tensor"))
    cases.append(Case("RESHAPE", [spec("x", x.shape, q=q)], [spec("y", (24, 5), q=q)],
                      {"new_shape": _i32([24, 5])}, [x], "RESHAPE with new_shape"))
    y = _int8(rng, (1, 3, 1, 4, 1))
    for dims in (None, [0], [-1, 2], [0, 2, 4]):
        opts = {} if dims is None else {"squeeze_dims": _i32(dims)}
        out = tuple(d for k, d in enumerate(y.shape)
                    if not (d == 1 and (dims is None or k in {v % 5 for v in dims})))
        cases.append(Case("SQUEEZE", [spec("x", y.shape, q=q)], [spec("y", out, q=q)], opts,
                          [y], f"SQUEEZE {dims}"))
    for axis in (0, 1, 2, 3, -1, -3):
        parts = []
        for k in range(int(rng.integers(1, 4))):
            shape = list(x.shape)
            shape[axis] = int(rng.integers(1, 4))
            parts.append(_int8(rng, shape))
        out = list(x.shape)
        out[axis] = sum(p.shape[axis] for p in parts)
        cases.append(Case("CONCATENATION", [spec(f"x{k}", p.shape, q=q) for k, p in
                                            enumerate(parts)],
                          [spec("y", out, q=q)], {"axis": axis}, parts, f"CONCAT axis {axis}"))
        pack_parts = [_int8(rng, (3, 4)) for _ in range(3)]
        pack_axis = int(np.clip(axis, -3, 2))
        cases.append(Case("PACK", [spec(f"p{k}", (3, 4), q=q) for k in range(3)],
                          [spec("y", np.stack(pack_parts, axis=pack_axis).shape, q=q)],
                          {"axis": pack_axis, "values_count": 3}, pack_parts,
                          f"PACK axis {pack_axis}"))
    for k in range(6):
        pads = rng.integers(0, 3, size=(4, 2)).astype(np.int32)
        out = tuple(d + int(p.sum()) for d, p in zip(x.shape, pads))
        cases.append(Case("PAD", [spec("x", x.shape, q=q), spec("p", (4, 2), np.int32,
                                                              data=pads)],
                          [spec("y", out, q=q)], {}, [x], f"PAD {pads.tolist()}"))
        cv = np.array([int(rng.integers(-128, 128))], np.int8).reshape(())
        cases.append(Case("PADV2", [spec("x", x.shape, q=q),
                                    spec("p", (4, 2), np.int32, data=pads),
                                    spec("c", (), q=q, data=cv)],
                          [spec("y", out, q=q)], {}, [x], f"PADV2 {pads.tolist()} {cv}"))
    for k in range(6):
        begin = [int(rng.integers(0, d)) for d in x.shape]
        size = [int(rng.integers(1, d - b + 1)) if rng.integers(4) else -1
                for d, b in zip(x.shape, begin)]
        out = tuple(d - b if s == -1 else s for d, b, s in zip(x.shape, begin, size))
        cases.append(Case("SLICE", [spec("x", x.shape, q=q),
                                    spec("b", (4,), np.int32, data=_i32(begin)),
                                    spec("s", (4,), np.int32, data=_i32(size))],
                          [spec("y", out, q=q)], {}, [x], f"SLICE b{begin} s{size}"))
    for perm in ([0, 1, 2, 3], [3, 2, 1, 0], [0, 2, 3, 1], [1, 0, 3, 2]):
        out = tuple(x.shape[p] for p in perm)
        cases.append(Case("TRANSPOSE", [spec("x", x.shape, q=q),
                                        spec("perm", (4,), np.int32, data=_i32(perm))],
                          [spec("y", out, q=q)], {}, [x], f"TRANSPOSE {perm}"))
    cases.append(Case("SHAPE", [spec("x", x.shape, q=q)], [spec("y", (4,), np.int32)],
                      {"out_type": "INT32"}, [x], "SHAPE"))
    for axis, batch_dims, pos_shape in ((0, 0, (3,)), (1, 0, (2, 2)), (-1, 0, (4,)),
                                        (2, 1, (2, 3)), (3, 2, (2, 3, 2)), (2, 0, ())):
        positions = rng.integers(0, x.shape[axis], size=pos_shape).astype(np.int32)
        ax = axis % 4
        out = x.shape[:ax] + positions.shape[batch_dims:] + x.shape[ax + 1:]
        cases.append(Case("GATHER", [spec("x", x.shape, q=q),
                                     spec("i", positions.shape, np.int32, data=positions)],
                          [spec("y", out, q=q)], {"axis": axis, "batch_dims": batch_dims},
                          [x], f"GATHER axis {axis} batch_dims {batch_dims} {pos_shape}"))
    table = _int8(rng, (10, 3, 2))
    ids = np.array([3, 0, 9, 3], np.int32)
    cases.append(Case("EMBEDDING_LOOKUP", [spec("ids", (4,), np.int32, data=ids),
                                           spec("t", table.shape, q=q)],
                      [spec("y", (4, 3, 2), q=q)], {}, [table], "EMBEDDING_LOOKUP int8"))
    hq = QParams.per_axis(np.float32(rng.uniform(0.01, 1, 10)), np.zeros(10, np.int64), 0)
    cases.append(Case("EMBEDDING_LOOKUP", [spec("ids", (4,), np.int32, data=ids),
                                           spec("t", table.shape, q=hq, data=table)],
                      [spec("y", (4, 3, 2), np.float32)], {}, [],
                      "EMBEDDING_LOOKUP per-row hybrid -> float"))
    for k in range(6):  # offset: end holds sizes relative to begin
        begin = [int(rng.integers(0, d)) for d in x.shape]
        sizes = [int(rng.integers(1, d - b + 1)) for d, b in zip(x.shape, begin)]
        strides = [int(rng.choice([1, 2])) for _ in x.shape]
        out = tuple(-(-sz // st) for sz, st in zip(sizes, strides))
        cases.append(Case("STRIDED_SLICE", [spec("x", x.shape, q=q),
                                            spec("b", (4,), np.int32, data=_i32(begin)),
                                            spec("e", (4,), np.int32, data=_i32(sizes)),
                                            spec("s", (4,), np.int32, data=_i32(strides))],
                          [spec("y", out, q=q)], {"offset": True}, [x],
                          f"STRIDED_SLICE offset b{begin} sizes{sizes} s{strides}"))
    i = 0
    while sum(c.op == "STRIDED_SLICE" for c in cases) < 66:
        case = _strided_slice_case(rng, i)
        i += 1
        if case is not None:
            cases.append(case)
    return cases


def test_data_movement_sweep(oracle):
    assert_bit_exact(oracle, movement_cases(43))


def resize_cases(seed: int) -> list[Case]:
    rng = np.random.default_rng(seed)
    cases = []
    for i in range(60):
        op = "RESIZE_BILINEAR" if i % 2 else "RESIZE_NEAREST_NEIGHBOR"
        h, w = (int(v) for v in rng.integers(1, 9, size=2))
        oh, ow = (int(v) for v in rng.integers(1, 20, size=2))
        ac, hp = [(False, False), (True, False), (False, True), (True, True)][i // 2 % 4]
        if op == "RESIZE_BILINEAR" and ac and hp:
            continue  # refused by Prepare: see test_resize_bilinear_refuses_both_modes
        x = _int8(rng, (1, h, w, 3))
        q = qt(0.1, int(rng.integers(-5, 5)))
        cases.append(Case(op, [spec("x", x.shape, q=q),
                               spec("size", (2,), np.int32, data=_i32([oh, ow]))],
                          [spec("y", (1, oh, ow, 3), q=q)],
                          {"align_corners": ac, "half_pixel_centers": hp}, [x],
                          f"{op} {h}x{w} -> {oh}x{ow} align_corners {ac} half_pixel {hp}"))
    return cases


def test_resize_sweep(oracle):
    assert_bit_exact(oracle, resize_cases(44))


def test_avg_pool_window_count_edge(oracle):
    """SAME pooling with a filter larger than the input: counts exclude the padding."""
    x = np.arange(-64, 64, 4, dtype=np.int8).reshape(1, 2, 4, 4)
    options = {"padding": "SAME", "stride_h": 1, "stride_w": 1, "filter_height": 5,
               "filter_width": 7, "fused_activation_function": "NONE"}
    q = qt(0.3, -1)
    case = Case("AVERAGE_POOL_2D", [spec("x", x.shape, q=q)], [spec("y", x.shape, q=q)],
                options, [x])
    assert_bit_exact(oracle, [case])
    assert call_of  # the hand-built calls in test_cpu_kernels use the same API


def test_resize_bilinear_refuses_both_modes(oracle):
    x = np.zeros((1, 2, 2, 1), np.int8)
    case = Case("RESIZE_BILINEAR", [spec("x", x.shape, q=qt(0.1, 0)),
                                    spec("size", (2,), np.int32, data=_i32([3, 3]))],
                [spec("y", (1, 3, 3, 1), q=qt(0.1, 0))],
                {"align_corners": True, "half_pixel_centers": True}, [x])
    assert oracle(batch_model([case]), [[x]], keep_all_tensors=False).refused
    with pytest.raises(Refusal, match="RESIZE_BILINEAR: half_pixel_centers and align_corners"):
        prepare("RESIZE_BILINEAR", case.call())
