"""Bit-exact numpy implementations of LiteRT's BUILTIN_REF (reference) kernels.

The interpreter glue calls every op the same way:

    prepare(op, call)              # raises Refusal where LiteRT's Prepare would refuse
    outputs = KERNELS[op](call)    # a list of numpy arrays, one per output

with `call` an `OpCall` (arrays in, quantization parameters, output shapes and dtypes, and the
operator's builtin options keyed by schema field names in snake_case). The kernels live in
`conv.py`, `gemm.py`, `elementwise.py`, `reduce.py` and `shape.py`, and the
integer primitives they share in `arithmetic.py`.
"""

from __future__ import annotations

from qaccel.kernels import conv as _conv  # noqa: F401  (registers kernels)
from qaccel.kernels import elementwise as _elementwise  # noqa: F401
from qaccel.kernels import gemm as _gemm  # noqa: F401
from qaccel.kernels import reduce as _reduce  # noqa: F401
from qaccel.kernels import shape as _shape  # noqa: F401
from qaccel.kernels.base import (
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
