"""SUM, REDUCE_MAX, REDUCE_MIN, REDUCE_PROD, ARG_MAX and ARG_MIN against LiteRT's reference
kernels: seeded random grids over ranks, axis sets (negative and repeated axes), keep_dims,
scales and zero points, index types."""

from __future__ import annotations

import numpy as np
import pytest

from qaccel.kernels.registry import Refusal, prepare
from test_cpu_kernels import Case, assert_bit_exact, qt, spec
from test_cpu_sweep_elementwise import _int8, _log_uniform, _zp

pytest.importorskip("ai_edge_litert")

F32 = np.float32


def _axes(rng, rank: int) -> list[int]:
    count = int(rng.integers(1, rank + 1))
    axes = [int(a) for a in rng.choice(rank, size=count, replace=False)]
    axes = [a - rank if rng.integers(2) else a for a in axes]
    if rng.integers(4) == 0:
        axes.append(axes[0])  # a repeated axis
    return axes


def _reduced(shape, axes, keep: bool):
    resolved = {a % len(shape) for a in axes}
    if keep:
        return tuple(1 if i in resolved else d for i, d in enumerate(shape))
    return tuple(d for i, d in enumerate(shape) if i not in resolved)


def reduce_cases(seed: int, count: int) -> list[Case]:
    rng = np.random.default_rng(seed)
    cases: list[Case] = []
    ops = ["SUM", "REDUCE_MAX", "REDUCE_MIN"]
    while len(cases) < count:
        op = ops[len(cases) % 3]
        rank = int(rng.integers(1, 5))
        shape = tuple(int(rng.choice([1, 2, 3, 5, 8])) for _ in range(rank))
        axes = _axes(rng, rank)
        keep = bool(rng.integers(2))
        out_shape = _reduced(shape, axes, keep)
        in_q = qt(_log_uniform(rng, 1e-3, 1.0), _zp(rng))
        out_q = qt(in_q.s * _log_uniform(rng, 1, 30), _zp(rng)) if op == "SUM" else in_q
        a = np.array(axes, np.int32)
        case = Case(op, [spec("x", shape, q=in_q), spec("a", a.shape, np.int32, data=a)],
                    [spec("y", out_shape, q=out_q)], {"keep_dims": keep}, [_int8(rng, shape)],
                    f"{op} {shape} axes {axes} keep {keep} {in_q.s:g}/{in_q.zp} -> "
                    f"{out_q.s:g}/{out_q.zp}")
        try:
            prepare(op, case.call())
        except Refusal:
            continue
        cases.append(case)
    # float: NaN, signed zeros and infinities among the values
    x = (rng.standard_normal((3, 4, 5)) * 10).astype(F32)
    x[0, 0, :4] = [np.nan, 0.0, -0.0, np.inf]
    x[1, :, 2] = np.nan
    x[2, 1, :] = [-0.0, 0.0, -0.0, 0.0, -np.inf]
    for op in ("REDUCE_MAX", "REDUCE_MIN"):
        for axes, keep in (([2], False), ([0, 2], True), ([-1, 0, 1], False), ([1], True)):
            a = np.array(axes, np.int32)
            cases.append(Case(op, [spec("x", x.shape, F32), spec("a", a.shape, np.int32, data=a)],
                              [spec("y", _reduced(x.shape, axes, keep), F32)],
                              {"keep_dims": keep}, [x], f"{op} float axes {axes} keep {keep}"))
    # REDUCE_PROD of unquantized tensors: converters' shape arithmetic (int32, wrapping) and
    # float products in row-major order
    for i in range(12):
        rank = int(rng.integers(1, 4))
        shape = tuple(int(rng.choice([1, 2, 3, 5])) for _ in range(rank))
        axes = _axes(rng, rank)
        keep = bool(rng.integers(2))
        a = np.array(axes, np.int32)
        if i % 2:
            v = rng.integers(-70000, 70000, size=shape).astype(np.int32)
            v_spec = spec("x", shape, np.int32)
            out = spec("y", _reduced(shape, axes, keep), np.int32)
        else:
            v = (rng.standard_normal(shape) * 3).astype(F32)
            v_spec = spec("x", shape, F32)
            out = spec("y", _reduced(shape, axes, keep), F32)
        cases.append(Case("REDUCE_PROD", [v_spec, spec("a", a.shape, np.int32, data=a)], [out],
                          {"keep_dims": keep}, [v], f"REDUCE_PROD {v.dtype}{shape} axes {axes}"))
    return cases


def test_reduce_sweep(oracle):
    assert_bit_exact(oracle, reduce_cases(71, 150))


def arg_cases(seed: int, count: int) -> list[Case]:
    rng = np.random.default_rng(seed)
    cases: list[Case] = []
    while len(cases) < count:
        op = "ARG_MAX" if len(cases) % 2 else "ARG_MIN"
        rank = int(rng.integers(1, 5))
        shape = tuple(int(rng.choice([1, 2, 3, 7, 20])) for _ in range(rank))
        axis = int(rng.integers(-rank, rank))
        out_shape = tuple(d for i, d in enumerate(shape) if i != axis % rank)
        index_type = str(rng.choice(["INT32", "INT64"]))
        axis_type = np.int32 if rng.integers(2) else np.int64
        kind = len(cases) % 3
        if kind == 0:
            x, x_spec = _int8(rng, shape), spec("x", shape, q=qt(0.1, _zp(rng)))
            if rng.integers(2):
                x = np.clip(x, -2, 2).astype(np.int8)  # ties: the first index wins
        elif kind == 1:
            x, x_spec = rng.integers(-5, 5, size=shape).astype(np.int32), spec("x", shape,
                                                                               np.int32)
        else:
            x = np.round(rng.standard_normal(shape) * 2).astype(F32)
            x[rng.random(shape) < 0.1] = -0.0
            x[rng.random(shape) < 0.2] = np.nan
            x_spec = spec("x", shape, F32)
        a = np.array([axis], axis_type)
        cases.append(Case(op, [x_spec, spec("a", a.shape, axis_type, data=a)],
                          [spec("y", out_shape, {"INT32": np.int32, "INT64": np.int64}[
                              index_type])], {"output_type": index_type}, [x],
                          f"{op} {x.dtype}{shape} axis {axis} ({np.dtype(axis_type)}) -> "
                          f"{index_type}"))
    return cases


def test_arg_min_max_sweep(oracle):
    assert_bit_exact(oracle, arg_cases(72, 120))


def test_arg_min_max_contiguous_rows(oracle):
    """Rows over the contiguous axis, where LiteRT runs its vector loops: float rows of every
    length from 1 to 13 with NaNs, ties and signed zeros (4 lanes), int8 rows of up to 50
    values with many ties (16 lanes)."""
    rng = np.random.default_rng(73)
    cases = []
    for size in range(1, 14):
        x = rng.choice(F32([np.nan, -2, -1, -0.0, 0, 1, 2]), size=(60, size)).astype(F32)
        axis = np.array([1], np.int32)
        for op in ("ARG_MAX", "ARG_MIN"):
            cases.append(Case(op, [spec("x", x.shape, F32), spec("a", (1,), np.int32, data=axis)],
                              [spec("y", (60,), np.int32)], {"output_type": "INT32"}, [x],
                              f"{op} float rows of {size}"))
    for size in (15, 16, 17, 31, 32, 33, 50):
        x = rng.integers(-3, 3, size=(40, size), endpoint=True).astype(np.int8)
        axis = np.array([-1], np.int32)
        for op in ("ARG_MAX", "ARG_MIN"):
            cases.append(Case(op, [spec("x", x.shape, q=qt(0.1, 0)),
                                   spec("a", (1,), np.int32, data=axis)],
                              [spec("y", (40,), np.int64)], {"output_type": "INT64"}, [x],
                              f"{op} int8 rows of {size}"))
    assert_bit_exact(oracle, cases)
