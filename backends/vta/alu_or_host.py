"""Whether an element-wise or pool layer that reads a host step's result runs on the ALU or
stays a host step.

On the ALU an element-wise or pool layer costs its program's cycles (loads of every input row, the
steps, the store); on the host, the host's work on its elements (`targets/vta/host_cost.py`'s
`host_tree_cycles`). The program stops for host steps: a layer between two host steps
(in program order) splits their run and adds a stop when it runs on the ALU, and a layer
between two layers adds one when it runs on the host. The layer stays on the host when the
cost model prices the host lower, and the report says so with both figures. Only layers that
read a host step's result are priced (a table lookup's, a host pool's): a layer between
layers only keeps its place on the ALU.
"""

from __future__ import annotations

from qaccel.backends.vta.compiled import top_level
from qaccel.dialects import tfl, vta
from qaccel.targets.vta.host_cost import host_sync_cycles, host_tree_cycles
from xdsl.ir import Operation


def _reads_host_step(op: vta.LayerOp) -> bool:
    """An input of the layer is computed by a host step of the program (not a layer's
    result, a constant or the function's argument)."""
    block = op.parent_block()
    inside = set(op.body_ops())
    for inner in inside:
        for v in inner.operands:
            owner = v.owner
            if owner in inside or not isinstance(owner, Operation) or isinstance(owner, tfl.ConstOp):
                continue
            if not isinstance(top_level(owner, block), vta.LayerOp):
                return True
    return False


def _neighbours_on_host(op: vta.LayerOp) -> tuple[bool, bool]:
    """Whether the op before `op` and the op after it in the program (constants skipped, the
    function's return a host op) run on the host: every op but a formed layer does."""
    before, after = op.prev_op, op.next_op
    while isinstance(before, tfl.ConstOp):
        before = before.prev_op
    while isinstance(after, tfl.ConstOp):
        after = after.next_op
    return (before is not None and not isinstance(before, vta.LayerOp),
            after is not None and not isinstance(after, vta.LayerOp))


def cheaper_on_host(op: vta.LayerOp, alu_cycles: int, config) -> str | None:
    """Why the element-wise or pool layer `op` stays on the host (its ALU program would take
    `alu_cycles`), or None when it runs on the ALU."""
    if op.kind.data not in ("eltwise", "pool") or not _reads_host_step(op):
        return None
    before, after = _neighbours_on_host(op)
    stop = host_sync_cycles(config)
    host = host_tree_cycles(op.body_ops(), config)
    if not (before or after):
        host += stop  # on the host it would stop the program between two layers
    alu = alu_cycles + (stop if before and after else 0)  # it would split a run of host steps
    if alu <= host:
        return None
    return (f"kept on the host: the cost model prices it at {host} cycles of host work "
            f"against {alu} on the ALU (its program"
            + (", and the program's stop between the host steps around it)" if before and after
               else ")"))


def tree_end(op: Operation) -> Operation | None:
    """The narrowing to int8 (or the formed layer holding it) that an ALU op's result flows
    to through ops of one user each, at the top level of its block; None when there is none."""
    from qaccel.dialects import accel

    block = op.parent_block()
    seen = 0
    while seen < 256 and op.results:
        seen += 1
        if isinstance(op, accel.NarrowOp | vta.LayerOp):
            return op
        users = {top_level(u.operation, block) for r in op.results for u in r.uses}
        if len(users) != 1:
            return None
        op = users.pop()
        if not isinstance(op, accel._ComputeOp | vta.LayerOp):
            return None
    return None


__all__ = ["cheaper_on_host", "tree_end"]
