"""Interpreter implementations of the `q` dialect, on numpy arrays of the storage dtypes.

Each op computes exactly what its properties say (see `dialects/q.py`) with the same
fixed-point primitives as the TFLite kernels (`arithmetic.py`), so a legalized model stays
bit-exact with the `tfl` ops it came from; `--verify-semantics` and the tests check it.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from xdsl.interpreter import Interpreter, InterpreterFunctions, impl, register_impls

from qaccel.kernels import arithmetic as ar
from qaccel.kernels import qhost
from qaccel.kernels.base import pad_spatial
from qaccel.kernels.conv import grouped_matmul
from qaccel.dialects import q
from qaccel.dialects.types import tensor_dtype


def _saturate(x: np.ndarray, op: q.QOp) -> np.ndarray:
    lo, hi = q.storage_bounds(op.output.type)
    return np.clip(x, lo, hi).astype(tensor_dtype(op.output.type))


def _wrap_int32(x: np.ndarray) -> np.ndarray:
    return ar.wrap_int32(x).astype(np.int32)


def _window_geometry(op: q._WindowOp, kh: int, kw: int, dh: int = 1, dw: int = 1):
    """(out_h, out_w, pad_top, pad_left, sh, sw, dh, dw) as the CPU kernels expect it."""
    _, out_h, out_w, _ = op.output.type.get_shape()
    top, _, left, _ = (int(v) for v in op.array_prop("padding"))
    sh, sw = (int(v) for v in op.array_prop("strides"))
    return out_h, out_w, top, left, sh, sw, dh, dw



def batch_matmul(op: q.BatchMatmulOp, lhs: np.ndarray, rhs: np.ndarray) -> np.ndarray:
    from qaccel.kernels.attention import batch_matmul_int8

    return batch_matmul_int8(lhs, rhs, bool(op.int_prop("adj_x")), bool(op.int_prop("adj_y")),
                             op.int_prop("lhs_zero_point"), op.int_prop("rhs_zero_point"),
                             op.int_prop("multiplier"), op.int_prop("shift"),
                             op.int_prop("output_zero_point"), op.output.type.get_shape())


def conv2d(op: q.Conv2DOp, x: np.ndarray, w: np.ndarray) -> np.ndarray:
    xzp, wzp = op.int_prop("input_zero_point"), op.int_prop("filter_zero_point")
    _, kh, kw, cin_g = w.shape
    dh, dw = (int(v) for v in op.array_prop("dilations"))
    geometry = _window_geometry(op, kh, kw, dh, dw)
    groups = x.shape[3] // cin_g
    # Centred input padded with zeros: padding taps hold the input zero point.
    acc = grouped_matmul(
        x.astype(np.float64) - xzp, w.astype(np.float64) - wzp, groups, kh, kw, geometry
    )
    return _wrap_int32(acc.reshape(op.output.type.get_shape()))


def depthwise_conv2d(op: q.DepthwiseConv2DOp, x: np.ndarray, w: np.ndarray) -> np.ndarray:
    xzp, wzp = op.int_prop("input_zero_point"), op.int_prop("filter_zero_point")
    mult = op.int_prop("depth_multiplier")
    _, kh, kw, cout = w.shape
    dh, dw = (int(v) for v in op.array_prop("dilations"))
    out_h, out_w, top, left, sh, sw, _, _ = _window_geometry(op, kh, kw, dh, dw)
    xi = x.astype(np.int64) - xzp
    if mult > 1:
        xi = np.repeat(xi, mult, axis=3)  # output channel m + ic * mult reads channel ic
    xp = pad_spatial(xi, top, left, out_h, out_w, kh, kw, sh, sw, dh, dw, 0)
    wi = w.astype(np.int64) - wzp
    acc = np.zeros((x.shape[0], out_h, out_w, cout), dtype=np.int64)
    for ky in range(kh):
        for kx in range(kw):
            tap = xp[:, ky * dh : ky * dh + (out_h - 1) * sh + 1 : sh,
                     kx * dw : kx * dw + (out_w - 1) * sw + 1 : sw, :]  # fmt: skip
            acc += tap * wi[0, ky, kx]
    return _wrap_int32(acc)


def dense(op: q.DenseOp, x: np.ndarray, w: np.ndarray) -> np.ndarray:
    xzp, wzp = op.int_prop("input_zero_point"), op.int_prop("filter_zero_point")
    rows = x.reshape(-1, w.shape[1]).astype(np.float64) - xzp
    acc = (rows @ (w.astype(np.float64) - wzp).T).astype(np.int64)
    return _wrap_int32(acc.reshape(op.output.type.get_shape()))


def requantize(op: q.RequantizeOp, x: np.ndarray) -> np.ndarray:
    centred = x.astype(np.int64) - op.int_prop("input_zero_point")
    if op.is_double:
        scaled = ar.float_to_int32(
            ar.round_half_away(centred.astype(np.float64) * op.array_prop("scale"))
        )
        out = ar.wrap_int32(scaled + op.int_prop("output_zero_point"))
    else:
        m = op.array_prop("multiplier").astype(np.int64)
        s = op.array_prop("shift").astype(np.int64)
        scaled = ar.multiply_by_quantized_multiplier(ar.wrap_int32(centred), m, s)
        out = scaled + op.int_prop("output_zero_point")
    return _saturate(out, op)


def _storage(op: q.QOp) -> dict:
    lo, hi = q.storage_bounds(op.output.type)
    return {"lo": lo, "hi": hi, "dtype": tensor_dtype(op.output.type).str}


def add_sub_params(op: q._AddSubOp) -> dict:
    """The keyword arguments of `qhost.add_sub` for `op` (the run plan stores them too)."""
    names = ("left_shift", "lhs_zero_point", "lhs_multiplier", "lhs_shift", "rhs_zero_point",
             "rhs_multiplier", "rhs_shift", "output_multiplier", "output_shift",
             "output_zero_point")  # fmt: skip
    return {"subtract": isinstance(op, q.SubOp), **{n: op.int_prop(n) for n in names},
            **_storage(op)}  # fmt: skip


def add_sub(op: q._AddSubOp, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return qhost.add_sub(a, b, **add_sub_params(op))


def mul_params(op: q.MulOp) -> dict:
    """The keyword arguments of `qhost.mul` for `op`."""
    names = ("lhs_zero_point", "rhs_zero_point", "multiplier", "shift", "output_zero_point")
    return {**{n: op.int_prop(n) for n in names}, **_storage(op)}


def mul(op: q.MulOp, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return qhost.mul(a, b, **mul_params(op))


def squared_difference_params(op: q.SquaredDifferenceOp) -> dict:
    """The keyword arguments of `qhost.squared_difference` for `op`."""
    names = ("left_shift", "lhs_zero_point", "lhs_multiplier", "lhs_shift", "rhs_zero_point",
             "rhs_multiplier", "rhs_shift", "output_multiplier", "output_shift",
             "output_zero_point")  # fmt: skip
    return {**{n: op.int_prop(n) for n in names}, **_storage(op)}


def pool_params(op: q._PoolOp) -> dict:
    """The keyword arguments of `qhost.pool2d` for `op` (the run plan stores them too)."""
    top, _, left, _ = (int(v) for v in op.array_prop("padding"))
    return {"kind": "max" if isinstance(op, q.MaxPool2DOp) else "avg",
            "filter": [int(v) for v in op.array_prop("filter")],
            "strides": [int(v) for v in op.array_prop("strides")], "top": top, "left": left,
            "shape": list(op.output.type.get_shape()), **_storage(op)}  # fmt: skip


def pool2d(op: q._PoolOp, x: np.ndarray) -> np.ndarray:
    return qhost.pool2d(x, **pool_params(op))


def mean_params(op: q.MeanOp) -> dict:
    """The keyword arguments of `qhost.mean` for `op`."""
    names = ("num_elements", "input_zero_point", "multiplier", "shift", "output_zero_point")
    return {"axes": [int(a) for a in op.array_prop("axes")],
            **{n: op.int_prop(n) for n in names},
            "shape": list(op.output.type.get_shape()), **_storage(op)}  # fmt: skip


def mean(op: q.MeanOp, x: np.ndarray) -> np.ndarray:
    return qhost.mean(x, **mean_params(op))


def lut(op: q.LutOp, x: np.ndarray) -> np.ndarray:
    table = op.array_prop("table").astype(np.int8)
    return table[x.astype(np.int16) + 128]


def pad(op: q.PadOp, x: np.ndarray) -> np.ndarray:
    widths = op.array_prop("padding").reshape(-1, 2)
    return np.pad(x, [tuple(int(v) for v in w) for w in widths], constant_values=op.int_prop("pad_value"))


@register_impls
class QFunctions(InterpreterFunctions):
    """Implementations of the `q` ops."""

    @impl(q.Conv2DOp)
    def run_conv2d(self, interpreter: Interpreter, op: q.Conv2DOp, args: tuple[Any, ...]):
        return (conv2d(op, *args),)

    @impl(q.DepthwiseConv2DOp)
    def run_depthwise(self, interpreter: Interpreter, op: q.DepthwiseConv2DOp, args):
        return (depthwise_conv2d(op, *args),)

    @impl(q.DenseOp)
    def run_dense(self, interpreter: Interpreter, op: q.DenseOp, args: tuple[Any, ...]):
        return (dense(op, *args),)

    @impl(q.BiasAddOp)
    def run_bias_add(self, interpreter: Interpreter, op: q.BiasAddOp, args: tuple[Any, ...]):
        acc, bias = args
        return (_wrap_int32(acc.astype(np.int64) + bias.astype(np.int64)),)

    @impl(q.RequantizeOp)
    def run_requantize(self, interpreter: Interpreter, op: q.RequantizeOp, args):
        return (requantize(op, *args),)

    @impl(q.ReluOp)
    def run_relu(self, interpreter: Interpreter, op: q.ReluOp, args: tuple[Any, ...]):
        (x,) = args
        return (np.clip(x, op.int_prop("min"), op.int_prop("max")).astype(x.dtype),)

    @impl(q.LutOp)
    def run_lut(self, interpreter: Interpreter, op: q.LutOp, args: tuple[Any, ...]):
        return (lut(op, *args),)

    @impl(q.AddOp)
    def run_add(self, interpreter: Interpreter, op: q.AddOp, args: tuple[Any, ...]):
        return (add_sub(op, *args),)

    @impl(q.SubOp)
    def run_sub(self, interpreter: Interpreter, op: q.SubOp, args: tuple[Any, ...]):
        return (add_sub(op, *args),)

    @impl(q.MulOp)
    def run_mul(self, interpreter: Interpreter, op: q.MulOp, args: tuple[Any, ...]):
        return (mul(op, *args),)

    @impl(q.AvgPool2DOp)
    def run_avg_pool(self, interpreter: Interpreter, op: q.AvgPool2DOp, args):
        return (pool2d(op, *args),)

    @impl(q.MaxPool2DOp)
    def run_max_pool(self, interpreter: Interpreter, op: q.MaxPool2DOp, args):
        return (pool2d(op, *args),)

    @impl(q.SquaredDifferenceOp)
    def run_squared_difference(self, interpreter: Interpreter, op: q.SquaredDifferenceOp,
                               args: tuple[Any, ...]):  # fmt: skip
        return (qhost.squared_difference(*args, **squared_difference_params(op)),)

    @impl(q.MeanOp)
    def run_mean(self, interpreter: Interpreter, op: q.MeanOp, args: tuple[Any, ...]):
        return (mean(op, *args),)

    @impl(q.PadOp)
    def run_pad(self, interpreter: Interpreter, op: q.PadOp, args: tuple[Any, ...]):
        return (pad(op, *args),)

    @impl(q.SliceOp)
    def run_slice(self, interpreter: Interpreter, op: q.SliceOp, args: tuple[Any, ...]):
        begin = [int(b) for b in op.array_prop("begin")]
        box = tuple(slice(b, b + n) for b, n in zip(begin, op.output.type.get_shape()))
        return (np.ascontiguousarray(args[0][box]),)

    @impl(q.DepthToSpaceOp)
    def run_depth_to_space(self, interpreter: Interpreter, op: q.DepthToSpaceOp,
                           args: tuple[Any, ...]):  # fmt: skip
        k = op.int_prop("block_size")
        n, h, w, c = args[0].shape
        x = args[0].reshape(n, h, w, k, k, c // (k * k)).transpose(0, 1, 3, 2, 4, 5)
        return (np.ascontiguousarray(x.reshape(n, h * k, w * k, c // (k * k))),)

    @impl(q.ResizeNearestNeighborOp)
    def run_resize_nearest_neighbor(self, interpreter: Interpreter,
                                    op: q.ResizeNearestNeighborOp, args: tuple[Any, ...]):  # fmt: skip
        from qaccel.kernels.shape import nearest_indices

        (x,), (_, oh, ow, _) = args, op.output.type.get_shape()
        ys = nearest_indices(x.shape[1], oh, *op.flags())
        xs = nearest_indices(x.shape[2], ow, *op.flags())
        return (np.ascontiguousarray(x[:, ys][:, :, xs]),)

    @impl(q.ResizeBilinearOp)
    def run_resize_bilinear(self, interpreter: Interpreter, op: q.ResizeBilinearOp,
                            args: tuple[Any, ...]):  # fmt: skip
        from qaccel.kernels.shape import resize_bilinear_integer

        _, oh, ow, _ = op.output.type.get_shape()
        y = resize_bilinear_integer(args[0], oh, ow, *op.flags())
        return (y.astype(tensor_dtype(op.output.type)),)

    @impl(q.Col2ImOp)
    def run_col2im(self, interpreter: Interpreter, op: q.Col2ImOp, args: tuple[Any, ...]):
        x = args[0].astype(np.int64)
        n, h, w, _ = x.shape
        _, oh, ow, o = op.output.type.get_shape()
        kh, kw = (int(v) for v in op.array_prop("kernel"))
        sh, sw = (int(v) for v in op.array_prop("strides"))
        top, left = (int(v) for v in op.array_prop("padding"))
        full = np.zeros((n, max((h - 1) * sh + kh, top + oh), max((w - 1) * sw + kw, left + ow),
                         o), np.int64)  # fmt: skip
        for ky in range(kh):
            for kx in range(kw):
                tap = (ky * kw + kx) * o
                full[:, ky : ky + (h - 1) * sh + 1 : sh, kx : kx + (w - 1) * sw + 1 : sw] += x[
                    ..., tap : tap + o]  # fmt: skip
        return (_wrap_int32(full[:, top : top + oh, left : left + ow]),)

    @impl(q.TransposeOp)
    def run_transpose(self, interpreter: Interpreter, op: q.TransposeOp, args: tuple[Any, ...]):
        perm = tuple(int(p) for p in op.array_prop("perm"))
        return (np.ascontiguousarray(np.transpose(args[0], perm)),)

    @impl(q.SoftmaxOp)
    def run_softmax(self, interpreter: Interpreter, op: q.SoftmaxOp, args: tuple[Any, ...]):
        from qaccel.kernels.attention import softmax_int8

        return (softmax_int8(args[0], op.int_prop("multiplier"), op.int_prop("left_shift"),
                             op.int_prop("diff_min")),)  # fmt: skip

    @impl(q.BatchMatmulOp)
    def run_batch_matmul(self, interpreter: Interpreter, op: q.BatchMatmulOp,
                         args: tuple[Any, ...]):  # fmt: skip
        return (batch_matmul(op, *args),)

    @impl(q.ReshapeOp)
    def run_reshape(self, interpreter: Interpreter, op: q.ReshapeOp, args: tuple[Any, ...]):
        return (np.reshape(args[0], tuple(op.output.type.get_shape())),)

    @impl(q.ConcatOp)
    def run_concat(self, interpreter: Interpreter, op: q.ConcatOp, args: tuple[Any, ...]):
        return (np.concatenate(args, axis=op.int_prop("axis")),)
