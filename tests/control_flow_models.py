"""Control-flow models for the LiteRT flows' tests, made with qaccel's builder (no TensorFlow):
LiteRT offers a delegate and a compiler plugin every subgraph, a loop body included."""

from __future__ import annotations

import numpy as np

from qaccel.frontend.builder import (
    ModelBuilder,
    QParams,
    TensorSpec,
    bias_tensor,
    per_axis_qparams,
    random_weights,
)


def while_conv_model(iterations: int = 2) -> bytes:
    """main: x (int8 1x8x8x4) -> WHILE(i < iterations) { i + 1; CONV_2D 3x3 RELU } -> x_out.
    Subgraph 1 is the loop's condition (LESS), subgraph 2 its body (the counter's int32 ADD and
    the convolution, the one operator qaccel puts on the accelerator)."""
    rng = np.random.default_rng(0)
    q = QParams.per_tensor(0.05, -3)
    w_q = per_axis_qparams(rng, channels=4, axis=0)
    mb = ModelBuilder()
    main, cond, body = mb.subgraph("main"), mb.subgraph("cond"), mb.subgraph("body")
    ci = cond.input("i", (), np.int32)
    cond.input("x", (1, 8, 8, 4), q=q)
    n = cond.const("n", np.array(iterations, np.int32))
    cond.output(cond.op("LESS", [ci, n], TensorSpec("more", (), np.bool_)))
    bi, bx = body.input("i", (), np.int32), body.input("x", (1, 8, 8, 4), q=q)
    one = body.const("one", np.array(1, np.int32))
    i_next = body.op("ADD", [bi, one], TensorSpec("i_next", (), np.int32),
                     {"fused_activation_function": "NONE"})
    w = TensorSpec("w", (4, 3, 3, 4), np.int8, w_q, data=random_weights(rng, (4, 3, 3, 4)))
    y = body.op("CONV_2D", [bx, w, bias_tensor("b", rng, q, w_q)],
                TensorSpec("y", (1, 8, 8, 4), np.int8, q),
                {"padding": "SAME", "stride_w": 1, "stride_h": 1,
                 "fused_activation_function": "RELU", "dilation_w_factor": 1,
                 "dilation_h_factor": 1})  # fmt: skip
    body.output(i_next, y)
    x = main.input("x", (1, 8, 8, 4), q=q)
    i0 = main.const("i0", np.array(0, np.int32))
    outs = main.op("WHILE", [i0, x], [TensorSpec("i_out", (), np.int32),
                                      TensorSpec("x_out", (1, 8, 8, 4), np.int8, q)],
                   {"cond_subgraph_index": 1, "body_subgraph_index": 2})  # fmt: skip
    main.output(outs[1])
    return mb.build()
