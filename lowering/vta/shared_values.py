"""Values several element-wise trees share, made DRAM tensors the trees can read.

An element-wise layer is a tree: each value inside it has one user. Canonicalization folds
`widen(narrow(x))` back to `x` when `x` fits int8, so an int8 result two ops read (a swish
that feeds both the squeeze-excite mean and the squeeze-excite multiply) is left as an int32
value with two users, and neither tree forms: both ran as host ops. Likewise one `accel.widen`
of an int8 tensor read by two trees.

`split_shared_values` undoes that where it helps, keeping every value:

    %v = accel.add %m by [-120] : ...xi32          %v = accel.add %m by [-120] : ...xi32
    %s = accel.reduce_sum %v ...             =>    %n = accel.narrow %v : ...xi32 -> ...xi8
    %p = accel.add %v by [120] ...                 %s = accel.reduce_sum %v ...
                                                   %p = accel.add %v by [120] ...

The new narrowing ends the producer's tree (a layer storing int8 whose `widened` result the
other trees read back from DRAM as a leaf); `value_range` proves the narrowing exact. A widen
with several users is cloned once per user, each tree loading the int8 tensor itself. Only
feature maps (`[N, C/B, H, W, 1, B]`) are split: the token rows of a transformer sit between
host steps (lane sums and broadcasts), where the cost model keeps their trees on the host.
Where the cost model keeps a tree on the host after all, `qaccel-compile` puts its ops back in
the program without the narrowing nobody reads and with one widening per int8 value
(`backends/vta/alu_or_host.py`'s `dissolve` and `merge_widenings`).
"""

from __future__ import annotations

import numpy as np
from xdsl.dialects.builtin import TensorType, i8
from xdsl.ir import Block, Operation, SSAValue

from qaccel.dialects import accel
from qaccel.dialects.accel_canonicalization import value_range
from qaccel.dialects.types import tensor_dtype

_TREE_OPS = (
    accel.AddOp, accel.MulOp, accel.MinOp, accel.MaxOp, accel.ShiftLeftOp, accel.RoundMultiplyOp,
    accel.RoundRShiftOp, accel.MaxPool2DOp, accel.SumPool2DOp, accel.ReduceSumOp,
)  # fmt: skip
"""Ops whose int32 result an element-wise or pool layer can end at."""


def _narrowed(v: SSAValue) -> bool:
    return any(isinstance(u.operation, accel.NarrowOp)
               and tensor_dtype(u.operation.output.type) == np.int8 for u in v.uses)  # fmt: skip


def split_shared_values(block: Block, skip: set[Operation]) -> int:
    """Narrow each int32 tree value of `block` with several users and no narrowing that
    provably fits int8, and give each user of a shared `accel.widen` its own; ops in `skip`
    (other layers' ops) are left alone. The number of changes."""
    changed = 0
    for op in list(block.ops):
        if op in skip or len(op.results) != 1:
            continue
        v = op.results[0]
        uses = list(v.uses)
        if len(uses) < 2:
            continue
        if isinstance(op, accel.WidenOp):
            if tensor_dtype(op.input.type) != np.int8 or len(op.input.type.get_shape()) != 6:
                continue
            for use in uses[1:]:
                clone = accel.WidenOp(op.input, v.type)
                block.insert_op_after(clone, op)
                use.operation.operands[use.index] = clone.output
                changed += 1
            continue
        if not isinstance(op, _TREE_OPS) or _narrowed(v):
            continue
        t = v.type
        if not isinstance(t, TensorType) or tensor_dtype(t) != np.int32 or len(t.get_shape()) != 6:
            continue  # feature maps only: token rows sit between host steps (lane sums)
        lo, hi = value_range(v)
        if not -128 <= lo <= hi <= 127:
            continue
        block.insert_op_after(accel.NarrowOp(v, TensorType(i8, t.get_shape())), op)
        changed += 1
    return changed


__all__ = ["split_shared_values"]
