"""SSA dominance of parsed and imported IR, which xDSL 0.74's verifier does not check.

In a single-block region a value may be used only after its definition: by a later op of the
same block, inside the regions of a later op, or as a block argument of an enclosing block.
A value used by its own defining op, or before its definition, is refused:

    %4 = q.bias_add %4, %b : ...
    f.mlir: @f: op 0 (q.bias_add) uses its own result as operand 0

Regions with several blocks (control flow) are checked only for values defined outside them;
dominance between their blocks would need a CFG analysis that no qaccel IR needs.
"""

from __future__ import annotations

from xdsl.ir import Operation, Region, SSAValue
from xdsl.utils.exceptions import VerifyException


def verify_dominance(root: Operation, source: str = "<input>") -> None:
    """Raise VerifyException naming the first op that uses a value not dominating it."""
    visible: set[SSAValue] = set()
    for region in root.regions:
        _check_region(region, visible, source)


def _where(op: Operation) -> str:
    """`@f: op 3 (q.bias_add)`: the op's function (if any) and its index in its block."""
    index = list(op.parent.ops).index(op) if op.parent is not None else 0
    parent = op.parent_op()
    while parent is not None and "sym_name" not in parent.properties:
        parent = parent.parent_op()
    fn = f"@{parent.properties['sym_name'].data}: " if parent is not None else ""
    return f"{fn}op {index} ({op.name})"


def _error(source: str, op: Operation, i: int, value: SSAValue) -> VerifyException:
    name = f"%{value.name_hint}" if value.name_hint else "its value"
    if value.owner is op:
        return VerifyException(f"{source}: {_where(op)} uses its own result as operand {i}")
    if isinstance(value.owner, Operation) and value.owner.parent is not None:
        return VerifyException(
            f"{source}: {_where(op)}: operand {i} ({name}) is used before its definition by "
            f"{_where(value.owner).split(': ')[-1]}"
        )
    return VerifyException(f"{source}: {_where(op)}: operand {i} is not visible here")


def _check_region(region: Region, visible: set[SSAValue], source: str) -> None:
    blocks = list(region.blocks)
    ordered = len(blocks) == 1
    added: list[SSAValue] = []
    if not ordered:
        for block in blocks:
            added.extend(block.args)
            for op in block.ops:
                added.extend(op.results)
        visible.update(added)
    try:
        for block in blocks:
            if ordered:
                visible.update(block.args)
                added.extend(block.args)
            for op in block.ops:
                for i, operand in enumerate(op.operands):
                    if operand not in visible:
                        raise _error(source, op, i, operand)
                for inner in op.regions:
                    _check_region(inner, visible, source)
                if ordered:
                    visible.update(op.results)
                    added.extend(op.results)
    finally:
        visible.difference_update(added)
