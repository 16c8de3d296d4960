"""`ConvLayer`s straight from `q` IR and their numeric reference, for benchmarks and tests (the
compiler builds its layers from `accel` ops, `lowering/vta/layers.py`)."""

from __future__ import annotations

import numpy as np
from qaccel.lowering.vta.geometry import ConvLayer


def layers_from_q(module) -> list[ConvLayer]:
    """Every `q.conv2d` / `q.depthwise_conv2d` / `q.dense` group (+ `q.bias_add`) +
    `q.requantize` (+ `q.relu`) of a module whose filter and bias are constants, as
    `ConvLayer`s named after the group's position (for benchmarks and tests; the accel
    lowering builds layers from its own ops)."""
    from qaccel.dialects import q, tfl

    def const(value):
        owner = value.owner
        return owner.as_array() if isinstance(owner, tfl.ConstOp) else None

    def only_user(value):
        users = list(value.uses)
        return users[0].operation if len(users) == 1 else None

    layers = []
    for op in module.walk():
        if not isinstance(op, (q.Conv2DOp, q.DepthwiseConv2DOp, q.DenseOp)):
            continue
        w = const(op.filter)
        if w is None:
            continue
        nxt = only_user(op.output)
        bias = None
        if isinstance(nxt, q.BiasAddOp):
            bias = const(nxt.bias)
            if bias is None:
                continue
            nxt = only_user(nxt.output)
        if not isinstance(nxt, q.RequantizeOp):
            continue
        rq = nxt
        act = (-128, 127)
        relu = only_user(rq.output)
        if isinstance(relu, q.ReluOp):
            act = (relu.int_prop("min"), relu.int_prop("max"))
        kw = {}
        if not isinstance(op, q.DenseOp):
            kw = {
                "strides": tuple(int(v) for v in op.array_prop("strides")),
                "padding": tuple(int(v) for v in op.array_prop("padding")),
                "dilations": tuple(int(v) for v in op.array_prop("dilations")),
            }
        if isinstance(op, q.DepthwiseConv2DOp):
            kw["depth_multiplier"] = op.int_prop("depth_multiplier")
        if rq.is_double:
            kw["scale"] = rq.array_prop("scale").copy()
        else:
            kw["multiplier"] = rq.array_prop("multiplier").copy()
            kw["shift"] = rq.array_prop("shift").copy()
        kind = {q.Conv2DOp: "conv", q.DepthwiseConv2DOp: "depthwise", q.DenseOp: "dense"}[type(op)]
        layers.append(
            ConvLayer(
                kind, tuple(op.input.type.get_shape()), np.asarray(w).astype(np.int8),
                None if bias is None else np.asarray(bias).astype(np.int32),
                input_zero_point=op.int_prop("input_zero_point"),
                filter_zero_point=op.int_prop("filter_zero_point"),
                requant_input_zero_point=rq.int_prop("input_zero_point"),
                output_zero_point=rq.int_prop("output_zero_point"),
                act_min=act[0], act_max=act[1], name=f"{kind}{len(layers)}", **kw,
            )
        )  # fmt: skip
    return layers


def reference(layer: ConvLayer, x: np.ndarray) -> np.ndarray:
    """The layer computed by the `q` dialect's semantics (`interpreter/q_semantics.py`, the
    numeric reference the accelerator must match bit for bit): accumulate, bias, requantize,
    clamp. `x` is the int8 input tensor; returns int8."""
    from qaccel.interpreter import q_semantics as qs
    from qaccel.dialects import q
    from xdsl.dialects.builtin import TensorType, i8, i32
    from xdsl.ir import Block

    g = layer.geometry
    x = np.asarray(x)
    w = layer.weights

    def t(shape, el=i32):
        return TensorType(el, list(shape))

    xv, wv, accv = Block(arg_types=[t(x.shape, i8), t(w.shape, i8), t((1,))]).args
    zps = {"input_zero_point": q.i32_attr(layer.input_zero_point),
           "filter_zero_point": q.i32_attr(layer.filter_zero_point)}  # fmt: skip
    if g.kind == "dense":
        out_shape = (*x.shape[:-1], g.O)
        op = q.DenseOp.create(operands=[xv, wv], result_types=[t(out_shape)], properties=zps)
        acc = qs.dense(op, x, w)
    else:
        out_shape = (g.batch, g.OH, g.OW, g.O)
        props = {"strides": q.i64_array(layer.strides), "dilations": q.i64_array(layer.dilations),
                 "padding": q.i64_array(layer.padding), **zps}  # fmt: skip
        if g.kind == "conv":
            op = q.Conv2DOp.create(operands=[xv, wv], result_types=[t(out_shape)], properties=props)
            acc = qs.conv2d(op, x, w)
        else:
            props["depth_multiplier"] = q.i32_attr(layer.depth_multiplier)
            op = q.DepthwiseConv2DOp.create(
                operands=[xv, wv], result_types=[t(out_shape)], properties=props
            )
            acc = qs.depthwise_conv2d(op, x, w)
    if layer.bias is not None:
        acc = (acc.astype(np.int64) + np.asarray(layer.bias, np.int64)).astype(np.int32)
    props = {"input_zero_point": q.i32_attr(layer.requant_input_zero_point),
             "output_zero_point": q.i32_attr(layer.output_zero_point)}  # fmt: skip
    if layer.scale is not None:
        props["scale"] = q.f64_array(np.asarray(layer.scale, np.float64).reshape(-1))
    else:
        props["multiplier"] = q.i32_array(np.asarray(layer.multiplier).reshape(-1))
        props["shift"] = q.i32_array(np.asarray(layer.shift).reshape(-1))
    rq = q.RequantizeOp.create(operands=[accv], result_types=[t(out_shape, i8)], properties=props)
    y = qs.requantize(rq, acc)
    return np.clip(y, layer.act_min, layer.act_max).astype(np.int8)
