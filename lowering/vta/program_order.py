"""The order of an accelerator function's layers: GEMM layers moved up so host steps merge.

An accelerator function runs as one program in body order, and each run of host steps between
two layers stops the program once (the host waits for the STOREs before it, works, and lets
the program go on; `targets/vta/host_cost.py`'s `sync`). A GEMM layer that reads nothing
computed since the GEMM layer before it (only the function's arguments, constants and older
values) can run right after that layer instead: the host steps it followed then run together
with the host steps after it, one stop fewer. A transformer's key and value projections, which
the model interleaves with the attention core's host steps, become one run of layers:

    %q = vta.layer "conv" {...}          %q = vta.layer "conv" {...}
    %a = accel.relayout %q               %k = vta.layer "conv" {...}    (reads %x)
    %k = vta.layer "conv" {...}    ->    %a = accel.relayout %q
    %b = accel.relayout %k               %b = accel.relayout %k
    ...                                  ...

A layer moves only when the op after it is a host step (or the return), so that its host steps
join that run, and only when no element-wise or pool layer gets other neighbours in the
program: whether such a layer runs on the ALU or stays on the host is priced with its
neighbours (`backends/vta/alu_or_host.py`), and this order keeps every such decision as it
was. Layers keep their order among themselves except that a moved GEMM layer passes the
element-wise and pool layers between the two GEMM layers; values only move earlier, so the
function computes the same values.
"""

from __future__ import annotations

from xdsl.ir import Block, Operation

from qaccel.dialects import tfl, vta


def _top(op: Operation, block: Block) -> Operation | None:
    while op is not None and op.parent_block() is not block:
        op = op.parent_op()
    return op


def _is_gemm(op: Operation) -> bool:
    return isinstance(op, vta.LayerOp) and op.kind.data in vta.GEMM_KINDS


def _is_priced_layer(op: Operation | None) -> bool:
    """An element-wise or pool layer: the ALU-or-host rule looks at its neighbours."""
    return isinstance(op, vta.LayerOp) and op.kind.data not in vta.GEMM_KINDS


def _next_in_program(op: Operation) -> Operation | None:
    nxt = op.next_op
    while isinstance(nxt, tfl.ConstOp):
        nxt = nxt.next_op
    return nxt


def _reads_from(layer: Operation, ops: set[Operation], block: Block) -> bool:
    inside = set(layer.walk())
    for o in inside:
        for v in o.operands:
            owner = v.owner
            if isinstance(owner, Operation) and owner not in inside and _top(owner, block) in ops:
                return True
    return False


def hoist_gemm_layers(block: Block) -> int:
    """Move each GEMM layer that can run right after the GEMM layer before it there (see the
    module docstring); the number of layers moved."""
    moved = 0
    last_gemm: Operation | None = None
    run: list[Operation] = []  # the ops since `last_gemm`, constants left out
    for op in list(block.ops):
        if isinstance(op, tfl.ConstOp):
            continue
        if not _is_gemm(op):
            run.append(op)
            continue
        nxt = _next_in_program(op)
        if (last_gemm is not None and run and not _is_priced_layer(run[-1])
                and not isinstance(nxt, vta.LayerOp) and not _reads_from(op, set(run), block)):  # fmt: skip
            op.detach()
            block.insert_op_after(op, last_gemm)
            moved += 1
        else:
            run = []
        last_gemm = op
    return moved


__all__ = ["hoist_gemm_layers"]
