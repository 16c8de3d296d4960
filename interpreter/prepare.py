"""Prepare-time checks of `tfl` ops against the CPU kernels, without the interpreter.

`prepare_op(op)` runs the reference kernel's Prepare checks (as TFLite's AllocateTensors does)
and returns the op's static call; legalization and fusion use it to leave alone what LiteRT
would refuse. Kept apart from `interpreter.py` so passes do not import xDSL's interpreters.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from xdsl.dialects.builtin import NoneType, TensorType
from xdsl.ir import Operation

from qaccel.kernels import registry as kernels
from qaccel.dialects.names import location_name
from qaccel.dialects.quant import element_qparams
from qaccel.dialects.tfl import ConstOp, OpaqueOp, TflOp, attr_to_py
from qaccel.dialects.types import tensor_dtype


class ExecutionError(Exception):
    """Execution cannot go on: an op without implementation, a refused model, bad inputs."""


def describe(op: Operation) -> str:
    """`tfl.conv_2d "name"`: how diagnostics name an op."""
    name = location_name(op)
    return f'{op.name} "{name}"' if name else op.name


# --------------------------------------------------------------------------------------------
# tfl


def _static_call(op: Operation, options: dict[str, Any]) -> kernels.OpCall:
    """The parts of an op's `OpCall` that do not depend on the data."""
    return kernels.OpCall(
        inputs=[],
        input_q=[
            None if isinstance(v.type, NoneType) else element_qparams(v.type) for v in op.operands
        ],
        output_q=[element_qparams(r.type) for r in op.results],
        output_shapes=[r.type.get_shape() for r in op.results],
        output_dtypes=[tensor_dtype(r.type) for r in op.results],
        options=options,
        input_dtypes=[_known_dtype(v.type) for v in op.operands],
        input_shapes=[
            tuple(v.type.get_shape()) if isinstance(v.type, TensorType) else None
            for v in op.operands
        ],
    )


def _known_dtype(t) -> np.dtype | None:
    if not isinstance(t, TensorType):
        return None
    try:
        return tensor_dtype(t)
    except (KeyError, ValueError, TypeError, AssertionError):
        return None


def _kernel_name(op: Operation) -> str:
    if isinstance(op, OpaqueOp):
        return op.op_name.data
    return op.TFLITE_NAME


def _options(op: Operation) -> dict[str, Any]:
    return attr_to_py(op.options) if isinstance(op, OpaqueOp) else op.options


def _constant_inputs(op: Operation) -> list[np.ndarray | None]:
    return [
        v.owner.as_array() if isinstance(v.owner, ConstOp) else None for v in op.operands
    ]


def prepare_op(op: TflOp | OpaqueOp) -> kernels.OpCall:
    """Run the reference kernel's Prepare-time checks on `op`; return its static call."""
    name = _kernel_name(op)
    if name not in kernels.KERNELS:
        what = name
        if isinstance(op, OpaqueOp) and op.custom_code is not None:
            what = f"custom op {op.custom_code.data}"
        raise ExecutionError(f"cannot execute op {describe(op)}: no CPU kernel for {what}")
    call = _static_call(op, _options(op))
    probe = kernels.OpCall(**{**call.__dict__, "inputs": _constant_inputs(op)})
    try:
        kernels.prepare(name, probe)
    except kernels.Refusal as e:
        raise kernels.Refusal(f"{describe(op)}: {e}") from None
    except kernels.UnsupportedOp as e:  # a kernel without this tensor type
        raise ExecutionError(f"cannot execute op {describe(op)}: {e}") from None
    return call
