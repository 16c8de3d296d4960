"""Models with the element-wise, reduction and float-island ops that LiteRT's reference
kernels refuse (in Prepare, or in Eval for statically known facts): LiteRT must refuse each one,
and `prepare` must raise a one-line `Refusal` naming the op."""

from __future__ import annotations

import numpy as np
import pytest

from qaccel.kernels.registry import Refusal, prepare
from test_cpu_kernels import Case, batch_model, qt, spec

pytest.importorskip("ai_edge_litert")


def _x(shape=(1, 8), q=None, dtype=np.int8):
    return spec("x", shape, dtype, q or qt(0.1, 0))


def _y(shape=(1, 8), q=None, dtype=np.int8):
    return spec("y", shape, dtype, q or qt(0.1, 0))


def _const(name, values, dtype=np.int32):
    a = np.asarray(values, dtype)
    return spec(name, a.shape, dtype, data=a)


def refused_cases() -> list[tuple[Case, str]]:
    i16 = np.int16
    return [
        (Case("NEG", [_x(dtype=np.uint8, q=qt(0.1, 3))], [_y(dtype=np.uint8, q=qt(0.1, 3))]),
         "NEG: uint8 is not supported"),
        (Case("SQRT", [_x(q=qt(0.1, 2), dtype=i16)], [_y(q=qt(0.1, 2), dtype=i16)]),
         "SQRT: int16 zero points must be 0"),
        (Case("RSQRT", [_x()], [_y(dtype=i16, q=qt(0.1, 0))]),
         "RSQRT: output type int16 differs from the input type int8"),
        (Case("SQUARED_DIFFERENCE", [spec("a", (4,), q=qt(1.0, 0)), spec("b", (4,), q=qt(1.0, 0))],
              [_y((4,), qt(1e-6, 0))]), "SQUARED_DIFFERENCE: output multiplier"),
        (Case("GELU", [_x()], [_y(dtype=i16, q=qt(0.1, 0))], {"approximate": False}),
         "GELU: output type int16 differs"),
        (Case("PRELU", [_x((1, 4)), _const("a", [[1], [2], [3]], np.int8)], [_y((3, 4))]),
         r"PRELU: alpha of shape \[3, 1\] broadcasts"),
        (Case("LEAKY_RELU", [_x(dtype=i16, q=qt(0.1, 5))], [_y(dtype=i16, q=qt(0.1, 5))],
              {"alpha": 0.2}), "LEAKY_RELU: int16 zero points must be 0"),
        (Case("TANH", [_x()], [_y(dtype=i16, q=qt(1 / 32768, 0))]),
         "TANH: output type int16 differs"),
        (Case("LOG_SOFTMAX", [_x()], [_y(q=qt(16 / 256, 0))]),
         "LOG_SOFTMAX: int8 output zero point must be 127"),
        (Case("LOG_SOFTMAX", [_x(dtype=i16)], [_y(dtype=i16, q=qt(16 / 256, 0))]),
         "LOG_SOFTMAX: int16 is not supported"),
        (Case("SQUARED_DIFFERENCE", [_x(dtype=i16), spec("b", (1, 8), i16, qt(0.1, 0))],
              [_y(dtype=i16)]), "SQUARED_DIFFERENCE: int16 is not supported"),
        (Case("MAXIMUM", [_x(), spec("b", (1, 8), np.int16, qt(0.1, 0))], [_y()]),
         "MAXIMUM: input types differ"),
        (Case("MINIMUM", [_x((2, 3)), spec("b", (4,), q=qt(0.1, 0))], [_y((2, 3))]),
         r"MINIMUM: shapes \[2, 3\] and \[4\] are not broadcastable"),
        (Case("DIV", [_x(), spec("b", (1, 8), np.float32)], [_y()], {}),
         "DIV: input types differ"),
        (Case("POW", [_x(), spec("b", (1, 8), q=qt(0.1, 0))], [_y()]),
         "POW: int8 is not supported"),
        (Case("SUM", [_x((2, 3)), _const("a", [1], np.int64)], [_y((2,))], {"keep_dims": False}),
         "SUM: axis must be int32"),
        (Case("REDUCE_MAX", [_x((2, 3)), _const("a", [1])], [_y((2,), qt(0.2, 0))],
              {"keep_dims": False}), "REDUCE_MAX: input and output quantization differ"),
        (Case("REDUCE_MIN", [_x((2, 3), dtype=i16, q=qt(0.1, 4)), _const("a", [0])],
              [_y((3,), dtype=i16, q=qt(0.1, 4))], {"keep_dims": False}),
         "REDUCE_MIN: int16 zero points must be 0"),
        (Case("ARG_MAX", [_x((2, 3)), _const("a", [1])], [_y((2,), dtype=np.int32)],
              {"output_type": "FLOAT32"}), "ARG_MAX: output_type must be INT32 or INT64"),
        (Case("ARG_MIN", [_x((2, 3)), _const("a", [0, 1])], [_y((2,), dtype=np.int64)],
              {"output_type": "INT64"}), "ARG_MIN: axis must hold one value"),
    ]


@pytest.mark.parametrize("case,message", refused_cases(),
                         ids=[c.op for c, _ in refused_cases()])
def test_prepare_refuses_in_one_line(case, message):
    with pytest.raises(Refusal, match=f"^{message}") as info:
        prepare(case.op, case.call())
    assert "\n" not in str(info.value)


def test_litert_refuses_them_too():
    """Every model above, through LiteRT in as few child processes as its aborts allow."""
    from qaccel.backends.litert.oracle import run_reference_batch

    jobs = []
    for case, _ in refused_cases():
        feeds = [np.zeros(s.shape, s.dtype) for s in case.inputs
                 if s is not None and s.data is None]
        jobs.append((batch_model([case]), [feeds]))
    results = run_reference_batch(jobs, keep_all_tensors=False)
    ran = [case.op for (case, _), ref in zip(refused_cases(), results) if not ref.refused]
    assert not ran, f"LiteRT ran {ran} although prepare refuses them"
