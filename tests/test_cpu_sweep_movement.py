"""TILE, BROADCAST_TO, EXPAND_DIMS, SPLIT, SPLIT_V, UNPACK, DEPTH_TO_SPACE, SPACE_TO_DEPTH and
(wider than test_cpu_sweep_shape.py) GATHER, TRANSPOSE, PACK, SQUEEZE, RESIZE_BILINEAR and
RESIZE_NEAREST_NEIGHBOR against LiteRT's reference kernels: seeded random grids over ranks,
shapes, axes (negative too), multiples, block sizes and int8 / int16 data."""

from __future__ import annotations

import numpy as np
import pytest

from qaccel.kernels.registry import Refusal, prepare
from test_cpu_kernels import Case, assert_bit_exact, batch_model, qt, spec

pytest.importorskip("ai_edge_litert")


def _data(rng, shape, dtype):
    info = np.iinfo(dtype)
    return rng.integers(info.min, info.max, size=tuple(shape), endpoint=True, dtype=dtype)


def _q(rng, dtype):
    return qt(float(rng.uniform(0.01, 0.5)), 0 if dtype == np.int16 else int(rng.integers(-128, 128)))


def _shape(rng, rank, choices=(1, 2, 3, 4, 5)):
    return tuple(int(rng.choice(choices)) for _ in range(rank))


def _i32(values) -> np.ndarray:
    return np.asarray(values, dtype=np.int32)


def new_op_cases(seed: int) -> list[Case]:
    rng = np.random.default_rng(seed)
    cases = []
    for i in range(240):
        dtype = np.int16 if rng.integers(4) == 0 else np.int8
        q = _q(rng, dtype)
        kind = i % 8
        rank = int(rng.integers(1, 6))
        shape = _shape(rng, rank)
        x = _data(rng, shape, dtype)
        tag = f"#{i} {np.dtype(dtype).name} {shape}"
        if kind == 0:
            mult = [int(rng.choice([1, 1, 2, 3])) for _ in range(rank)]
            mdtype = np.int64 if rng.integers(4) == 0 else np.int32
            out = tuple(d * m for d, m in zip(shape, mult))
            cases.append(Case("TILE", [spec("x", shape, dtype, q),
                                       spec("m", (rank,), mdtype, data=np.array(mult, mdtype))],
                              [spec("y", out, dtype, q)], {}, [x], f"TILE {tag} x{mult}"))
        elif kind == 1:
            extra = [int(rng.choice([1, 2, 3])) for _ in range(int(rng.integers(0, 3)))]
            target = extra + [int(rng.choice([2, 3])) if d == 1 and rng.integers(2) else d
                              for d in shape]
            small = tuple(1 if rng.integers(3) == 0 else d for d in shape)
            x = _data(rng, small, dtype)
            sdtype = np.int64 if rng.integers(4) == 0 else np.int32
            target = [t if s == 1 or s == t else s for s, t in zip(small, target[len(extra):])]
            target = extra + target
            cases.append(Case("BROADCAST_TO", [spec("x", small, dtype, q),
                                               spec("s", (len(target),), sdtype,
                                                    data=np.array(target, sdtype))],
                              [spec("y", tuple(target), dtype, q)], {}, [x],
                              f"BROADCAST_TO #{i} {small} -> {target}", version=2))
        elif kind == 2:
            axis = int(rng.integers(-rank - 1, rank + 1))
            out = np.expand_dims(x, axis).shape
            adtype = np.int64 if rng.integers(4) == 0 else np.int32
            ashape = () if rng.integers(2) else (1,)
            cases.append(Case("EXPAND_DIMS", [spec("x", shape, dtype, q),
                                              spec("a", ashape, adtype,
                                                   data=np.array(axis, adtype).reshape(ashape))],
                              [spec("y", out, dtype, q)], {}, [x], f"EXPAND_DIMS {tag} {axis}"))
        elif kind == 3:
            axis = int(rng.integers(-rank, rank))
            dim = shape[axis]
            count = int(rng.choice([c for c in range(1, dim + 1) if dim % c == 0]))
            out = list(shape)
            out[axis] = dim // count
            cases.append(Case("SPLIT", [spec("a", (), np.int32, data=np.array(axis, np.int32)),
                                        spec("x", shape, dtype, q)],
                              [spec(f"y{k}", out, dtype, q) for k in range(count)],
                              {"num_splits": count}, [x], f"SPLIT {tag} axis {axis} into {count}"))
        elif kind == 4:
            axis = int(rng.integers(-rank, rank))
            dim = shape[axis]
            cuts = sorted(int(c) for c in rng.integers(0, dim + 1, size=int(rng.integers(0, 3))))
            sizes = [b - a for a, b in zip([0, *cuts], [*cuts, dim])]
            if any(s == 0 for s in sizes):
                sizes = [s for s in sizes if s] or [dim]
            written = list(sizes)
            if rng.integers(3) == 0:
                written[int(rng.integers(len(sizes)))] = -1
            sdtype = np.int64 if rng.integers(4) == 0 else np.int32
            outs = []
            for k, s in enumerate(sizes):
                o = list(shape)
                o[axis] = s
                outs.append(spec(f"y{k}", o, dtype, q))
            cases.append(Case("SPLIT_V", [spec("x", shape, dtype, q),
                                          spec("s", (len(sizes),), sdtype,
                                               data=np.array(written, sdtype)),
                                          spec("a", (1,), np.int32, data=_i32([axis]))],
                              outs, {"num_splits": len(sizes)}, [x],
                              f"SPLIT_V {tag} axis {axis} sizes {written}"))
        elif kind == 5:
            axis = int(rng.integers(-rank, rank))
            out = tuple(d for k, d in enumerate(shape) if k != axis % rank)
            cases.append(Case("UNPACK", [spec("x", shape, dtype, q)],
                              [spec(f"y{k}", out, dtype, q) for k in range(shape[axis])],
                              {"num": shape[axis], "axis": axis}, [x],
                              f"UNPACK {tag} axis {axis}"))
        else:
            dtype = np.int8  # int16 is not among these kernels' types
            q = _q(rng, dtype)
            bs = int(rng.choice([1, 2, 3]))
            n, h, w, c = int(rng.choice([1, 2])), *(int(rng.integers(1, 4)) for _ in range(3))
            if kind == 6:
                xs, out = (n, h, w, c * bs * bs), (n, h * bs, w * bs, c)
                op = "DEPTH_TO_SPACE"
            else:
                xs, out = (n, h * bs, w * bs, c), (n, h, w, c * bs * bs)
                op = "SPACE_TO_DEPTH"
            cases.append(Case(op, [spec("x", xs, dtype, q)], [spec("y", out, dtype, q)],
                              {"block_size": bs}, [_data(rng, xs, dtype)], f"{op} #{i} {xs} {bs}"))
    return cases


def test_new_data_movement_sweep(oracle):
    assert_bit_exact(oracle, new_op_cases(71))


def existing_op_cases(seed: int) -> list[Case]:
    rng = np.random.default_rng(seed)
    cases = []
    for i in range(250):
        dtype = np.int16 if i % 3 == 2 else np.int8
        q = _q(rng, dtype)
        kind = i % 5
        rank = int(rng.integers(1, 6))
        shape = _shape(rng, rank)
        x = _data(rng, shape, dtype)
        tag = f"#{i} {np.dtype(dtype).name} {shape}"
        if kind == 0:
            axis = int(rng.integers(-rank, rank))
            batch_dims = int(rng.integers(0, axis % rank + 1))
            pos_shape = tuple(shape[:batch_dims]) + _shape(rng, int(rng.integers(0, 3)), (1, 2, 4))
            pdtype = np.int64 if rng.integers(4) == 0 else np.int32
            positions = rng.integers(0, shape[axis], size=pos_shape).astype(pdtype)
            ax = axis % rank
            out = shape[:ax] + positions.shape[batch_dims:] + shape[ax + 1:]
            if int(np.prod(out)) == 0:
                continue
            cases.append(Case("GATHER", [spec("x", shape, dtype, q),
                                         spec("i", positions.shape, pdtype, data=positions)],
                              [spec("y", out, dtype, q)], {"axis": axis, "batch_dims": batch_dims},
                              [x], f"GATHER {tag} axis {axis} batch_dims {batch_dims} "
                                   f"positions {pos_shape}"))
        elif kind == 1:
            perm = [int(p) for p in rng.permutation(rank)]
            out = tuple(shape[p] for p in perm)
            cases.append(Case("TRANSPOSE", [spec("x", shape, dtype, q),
                                            spec("p", (rank,), np.int32, data=_i32(perm))],
                              [spec("y", out, dtype, q)], {}, [x], f"TRANSPOSE {tag} {perm}"))
        elif kind == 2:
            count = int(rng.integers(1, 5))
            axis = int(rng.integers(-rank - 1, rank + 1))
            parts = [_data(rng, shape, dtype) for _ in range(count)]
            out = np.stack(parts, axis=axis).shape
            cases.append(Case("PACK", [spec(f"p{k}", shape, dtype, q) for k in range(count)],
                              [spec("y", out, dtype, q)], {"axis": axis, "values_count": count},
                              parts, f"PACK {tag} x{count} axis {axis}"))
        elif kind == 3:
            ones = [k for k, d in enumerate(shape) if d == 1]
            if ones and rng.integers(3):
                dims = sorted(int(d) for d in rng.choice(ones, size=int(rng.integers(1, len(ones) + 1)),
                                                         replace=False))
                dims = [d - rank if rng.integers(2) else d for d in dims]
                out = tuple(d for k, d in enumerate(shape) if k not in {v % rank for v in dims})
                opts = {"squeeze_dims": _i32(dims)}
            else:
                out, opts = tuple(d for d in shape if d != 1), {}
            if not out:
                continue
            cases.append(Case("SQUEEZE", [spec("x", shape, dtype, q)], [spec("y", out, dtype, q)],
                              opts, [x], f"SQUEEZE {tag} {opts}"))
        else:
            op = str(rng.choice(["RESIZE_BILINEAR", "RESIZE_NEAREST_NEIGHBOR"]))
            n, h, w, c = int(rng.choice([1, 2])), *(int(rng.integers(1, 9)) for _ in range(2)), \
                int(rng.choice([1, 3, 8]))
            oh, ow = (int(rng.choice([1, 2 * d, 3 * d, int(rng.integers(1, 20))])) for d in (h, w))
            ac, hp = [(False, False), (True, False), (False, True), (True, True)][int(rng.integers(4))]
            if op == "RESIZE_BILINEAR" and ac and hp:
                ac = False
            xs = (n, h, w, c)
            cases.append(Case(op, [spec("x", xs, dtype, q),
                                   spec("size", (2,), np.int32, data=_i32([oh, ow]))],
                              [spec("y", (n, oh, ow, c), dtype, q)],
                              {"align_corners": ac, "half_pixel_centers": hp},
                              [_data(rng, xs, dtype)],
                              f"{op} #{i} {np.dtype(dtype).name} {xs} -> {oh}x{ow} "
                              f"align_corners {ac} half_pixel {hp}"))
    return cases


def test_existing_data_movement_sweep(oracle):
    assert_bit_exact(oracle, existing_op_cases(72))


def refused_cases() -> list[tuple[Case, str]]:
    """One invalid case of each op (constant inputs, so Prepare sees every shape)."""
    x = np.zeros((2, 3), np.int8)
    q = qt(0.1, 0)
    c = lambda name, values: spec(name, np.shape(values), np.int32,  # noqa: E731
                                  data=np.asarray(values, np.int32))
    xs = spec("x", (2, 3), q=q, data=x)
    nhwc = lambda shape: spec("x", shape, q=q, data=np.zeros(shape, np.int8))  # noqa: E731
    y = lambda name, shape: spec(name, shape, q=q)  # noqa: E731
    return [
        (Case("TRANSPOSE_CONV", [c("shape", [1, 4, 4, 2]),
                                 spec("w", (2, 3, 3, 4), q=qt(0.01, 0),
                                      data=np.ones((2, 3, 3, 4), np.int8)), nhwc((1, 2, 2, 3))],
              [y("y", (1, 4, 4, 2))], {"padding": "SAME", "stride_h": 2, "stride_w": 2}),
         "TRANSPOSE_CONV: input channels 3 differ from the weights' 4"),
        (Case("BATCH_MATMUL", [nhwc((2, 3, 4)), spec("b", (3, 4, 5), q=q,
                                                     data=np.zeros((3, 4, 5), np.int8))],
              [y("y", (2, 3, 5))], {"adj_x": False, "adj_y": False}),
         "BATCH_MATMUL: batch dimensions"),
        (Case("TILE", [xs, c("m", [1, 2, 3])], [y("y", (2, 6))], {}), "TILE: 3 multipliers"),
        (Case("BROADCAST_TO", [xs, c("s", [4, 3])], [y("y", (4, 3))], {}, version=2),
         r"BROADCAST_TO: output shape \[4, 3\] is not broadcastable"),
        (Case("EXPAND_DIMS", [xs, c("a", 3)], [y("y", (2, 3, 1))], {}),
         "EXPAND_DIMS: axis 3 out of range"),
        (Case("SPLIT", [c("a", 1), xs], [y("y0", (2, 1)), y("y1", (2, 1))], {"num_splits": 2}),
         "SPLIT: not an even split"),
        (Case("SPLIT_V", [xs, c("s", [1, 1]), c("a", 1)], [y("y0", (2, 1)), y("y1", (2, 1))],
              {"num_splits": 2}), r"SPLIT_V: size_splits \[1, 1\] do not sum"),
        (Case("UNPACK", [xs], [y("y0", (3,)), y("y1", (3,)), y("y2", (3,))],
              {"num": 3, "axis": 0}), "UNPACK: num 3 differs"),
        (Case("DEPTH_TO_SPACE", [nhwc((1, 2, 2, 3))], [y("y", (1, 4, 4, 1))], {"block_size": 2}),
         "DEPTH_TO_SPACE: input depth 3"),
        (Case("SPACE_TO_DEPTH", [nhwc((1, 3, 2, 1))], [y("y", (1, 1, 1, 4))], {"block_size": 2}),
         "SPACE_TO_DEPTH: input height 3"),
    ]


def test_litert_and_prepare_refuse():
    """Each case: a one-line Refusal naming the op, and LiteRT refuses it too (all the models
    in one child process)."""
    from qaccel.backends.litert.oracle import run_reference_batch

    cases = refused_cases()
    for case, message in cases:
        with pytest.raises(Refusal, match=f"^{message}") as info:
            prepare(case.op, case.call())
        assert "\n" not in str(info.value)
    results = run_reference_batch([(batch_model([case]), [[]]) for case, _ in cases])
    ran = [case.op for (case, _), r in zip(cases, results) if not r.refused]
    assert not ran, f"LiteRT ran what prepare refuses: {ran}"
