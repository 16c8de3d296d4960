"""Bit-exact numpy implementations of LiteRT's BUILTIN_REF (reference) kernels.

The interpreter glue calls every op the same way:

    prepare(op, call)              # raises Refusal where LiteRT's Prepare would refuse
    outputs = KERNELS[op](call)    # a list of numpy arrays, one per output

with `call` an `OpCall` (arrays in, quantization parameters, output shapes and dtypes, and the
operator's builtin options keyed by schema field names in snake_case). The kernels live in
`kernels_conv.py`, `kernels_elementwise.py`, `kernels_reduce.py` and `kernels_shape.py`, and the
integer primitives they share in `arithmetic.py`.
"""

from __future__ import annotations

from qaccel.backends.cpu import kernels_conv as _conv  # noqa: F401  (registers kernels)
from qaccel.backends.cpu import kernels_elementwise as _elementwise  # noqa: F401
from qaccel.backends.cpu import kernels_reduce as _reduce  # noqa: F401
from qaccel.backends.cpu import kernels_shape as _shape  # noqa: F401
from qaccel.backends.cpu.kernel_base import (
    KERNELS,
    KernelError,
    OpCall,
    Refusal,
    UnsupportedOp,
    prepare,
)

__all__ = ["KERNELS", "KernelError", "OpCall", "Refusal", "UnsupportedOp", "prepare", "run"]


def run(op: str, call: OpCall) -> list:
    """prepare + kernel: what the interpreter does for one operator."""
    prepare(op, call)
    return KERNELS[op](call)
