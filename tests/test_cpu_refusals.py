"""Models LiteRT's reference kernels refuse (a Prepare check fails, or a CHECK aborts the
process): LiteRT must refuse each one, and `prepare` must raise a one-line `Refusal` naming the
op. One subprocess per model, since a refused model stops the interpreter."""

from __future__ import annotations

import numpy as np
import pytest

from qaccel.kernels.registry import Refusal, prepare
from qaccel.kernels.qparams import QParams
from test_cpu_kernels import Case, batch_model, qt, spec

pytest.importorskip("ai_edge_litert")


def _x(shape, q=None, dtype=np.int8):
    return spec("x", shape, dtype, q or qt(0.1, 0))


def _w(shape, q, values=None):
    data = np.ones(shape, np.int8) if values is None else values
    return spec("w", shape, q=q, data=data)


def _b(n, scale, zp=0):
    return spec("b", (n,), np.int32, QParams.per_tensor(scale, zp), np.zeros(n, np.int32))


CONV_OPTIONS = {"padding": "SAME", "stride_h": 1, "stride_w": 1, "dilation_h_factor": 1,
                "dilation_w_factor": 1, "fused_activation_function": "NONE"}


def refused_cases() -> list[tuple[Case, str]]:
    x4 = (1, 4, 4, 2)
    y = lambda shape, q=None, dtype=np.int8: spec("y", shape, dtype, q or qt(0.1, 0))  # noqa
    cases = [
        (Case("SOFTMAX", [_x((1, 8), qt(1e-8, 0))], [y((1, 8), qt(1 / 256, -128))],
              {"beta": 1.0}), r"SOFTMAX: beta \* input_scale"),
        (Case("SOFTMAX", [_x((1, 8))], [y((1, 8), qt(1 / 256, 0))], {"beta": 1.0}),
         "SOFTMAX: int8 output zero point must be -128"),
        (Case("CONCATENATION", [spec("a", (1, 2), q=qt(0.1, 0)), spec("c", (1, 2), q=qt(0.2, 0))],
              [y((1, 4))], {"axis": 1}), "CONCATENATION: input 1 quantization"),
        (Case("CONCATENATION", [spec("a", (1, 2), q=qt(0.1, 0)), spec("c", (1, 2), q=qt(0.1, 0))],
              [y((1, 4))], {"axis": 1, "fused_activation_function": "RELU"}),
         "CONCATENATION: fused activations"),
        (Case("ADD", [spec("a", (4,), q=qt(1.0, 0)), spec("c", (4,), q=qt(1.0, 0))],
              [y((4,), qt(1e-7, 0))], {}), "ADD: output multiplier"),
        (Case("CONV_2D", [_x(x4), _w((3, 3, 3, 2), qt(0.01, 0))], [y((1, 4, 4, 3))],
              CONV_OPTIONS), "CONV_2D: the reference kernel requires a bias"),
        (Case("CONV_2D", [_x(x4), _w((3, 3, 3, 2), qt(0.01, 4)), _b(3, 0.001)],
              [y((1, 4, 4, 3))], CONV_OPTIONS), "CONV_2D: filter zero points must be 0"),
        (Case("DEPTHWISE_CONV_2D", [_x(x4), _w((1, 3, 3, 2), qt(0.01, 0)), None],
              [y((1, 4, 4, 2))], {**CONV_OPTIONS, "depth_multiplier": 1}),
         "DEPTHWISE_CONV_2D: the bias input is listed but omitted"),
        (Case("FULLY_CONNECTED", [_x((2, 3), qt(0.5, 0)), _w((4, 3), qt(0.5, 0)), _b(4, 0.5)],
              [y((2, 4), qt(0.5, 0))], {}), "FULLY_CONNECTED: bias scale"),
        (Case("LOGISTIC", [_x((1, 8))], [y((1, 8), qt(1 / 255, -128))], {}),
         "LOGISTIC: int8 output scale must be exactly 1/256"),
        (Case("HARD_SWISH", [_x((1, 8), qt(1.0, 0))], [y((1, 8), qt(1e-4, 0))], {}),
         "HARD_SWISH: output multiplier exponent"),
        (Case("PACK", [spec("a", (2,), q=qt(0.1, 0)), spec("c", (2,), q=qt(0.1, 1))],
              [y((2, 2))], {"axis": 0, "values_count": 2}), "PACK: input 1 quantization"),
        (Case("PADV2", [_x((1, 2)), spec("p", (2, 2), np.int32, data=np.ones((2, 2), np.int32)),
                        spec("c", (), q=qt(0.2, 0), data=np.int8(3).reshape(()))],
              [y((3, 4))], {}), "PADV2: constant_values quantization"),
        (Case("RESIZE_BILINEAR", [_x(x4), spec("s", (2,), np.int32, data=np.int32([8, 8]))],
              [y((1, 8, 8, 2))], {"align_corners": True, "half_pixel_centers": True}),
         "RESIZE_BILINEAR: half_pixel_centers and align_corners"),
    ]
    return cases


@pytest.mark.parametrize("case,message", refused_cases(),
                         ids=[m.split(":")[0] + "-" + str(i) for i, (_, m)
                              in enumerate(refused_cases())])
def test_litert_and_prepare_refuse(oracle, case, message):
    with pytest.raises(Refusal, match=f"^{message}") as info:
        prepare(case.op, case.call())
    assert "\n" not in str(info.value)
    feeds = [np.zeros(s.shape, s.dtype) for s in case.inputs if s is not None and s.data is None]
    ref = oracle(batch_model([case]), [feeds], keep_all_tensors=False)
    assert ref.refused, f"LiteRT ran {case.op} although prepare refused it: {info.value}"
