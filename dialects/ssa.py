"""SSA dominance of parsed and imported IR, which xDSL 0.74's verifier does not check.

In a single-block region a value may be used only after its definition: by a later op of the
same block, inside the regions of a later op, or as a block argument of an enclosing block.
A value used by its own defining op, or before its definition, is refused:

    %4 = q.bias_add %4, %b : ...
    f.mlir: q.bias_add uses its own result %4 as an operand

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


def _value_name(value: SSAValue) -> str:
    return f"%{value.name_hint}" if value.name_hint else f"a result of {value.owner.name}"


def _own_result(value: SSAValue) -> str:
    return f"its own result %{value.name_hint}" if value.name_hint else "its own result"


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
                for operand in op.operands:
                    if operand not in visible:
                        raise VerifyException(
                            f"{source}: {op.name} uses {_own_result(operand)} as an operand"
                            if operand.owner is op else
                            f"{source}: {op.name} uses {_value_name(operand)} before its "
                            "definition"
                        )  # fmt: skip
                for inner in op.regions:
                    _check_region(inner, visible, source)
                if ordered:
                    visible.update(op.results)
                    added.extend(op.results)
    finally:
        visible.difference_update(added)
