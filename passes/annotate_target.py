"""`annotate-target`: mark the op groups a target can run (the method's grouping).

The pass and its IR before/after are documented on `AnnotateTargetPass`.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from dataclasses import dataclass
from typing import IO

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import IntegerAttr, ModuleOp, StringAttr, i64
from xdsl.ir import Block, Operation
from xdsl.passes import ModulePass
from xdsl.traits import ConstantLike
from xdsl.utils.exceptions import PassFailedException

from qaccel.dialects.annotations import (
    GROUP_ATTR,
    PARTITION_INDEX_ATTR,
    PATTERN_ATTR,
    TARGET_ATTR,
    annotated_target,
)
from qaccel.targets.base import MatchResult, Target, TargetError, describe_op, resolve_target


def load_target(pass_name: str, module: ModuleOp, name: str = "") -> Target:
    """The target a pass's `target=` option selects (`resolve_target`: by default the module's
    `#accel.target`), or a PassFailedException naming the pass."""
    try:
        return resolve_target(module, name)
    except (TargetError, ValueError) as e:
        raise PassFailedException(f"{pass_name}: {e}") from None


def host_functions(module: ModuleOp) -> Iterator[func.FuncOp]:
    """Public functions without `qaccel.target`: where the graph to partition lives."""
    for op in module.ops:
        if not isinstance(op, func.FuncOp) or TARGET_ATTR in op.attributes:
            continue
        if op.sym_visibility is not None and op.sym_visibility.data != "public":
            continue
        if op.body.blocks and len(op.body.blocks) != 1:
            raise PassFailedException(
                f"@{op.sym_name.data}: partitioning needs a function with a single block"
            )
        if op.body.blocks:
            yield op


def is_compute_op(op: Operation) -> bool:
    """Ops a partition report counts: not constants, not the function's terminator."""
    kind = type(op)
    compute = _COMPUTE.get(kind)
    if compute is None:
        compute = _COMPUTE[kind] = (
            not op.has_trait(ConstantLike) and not isinstance(op, func.ReturnOp)
        )
    return compute


_COMPUTE: dict[type[Operation], bool] = {}
"""`is_compute_op` per op class (traits belong to the class)."""


def explain_lines(
    target: Target, block: Block, result: MatchResult
) -> Iterator[tuple[Operation, str]]:
    """(op, reason) for every compute op of `block` that `result` leaves unannotated."""
    for op in block.ops:
        if not is_compute_op(op):
            continue
        other = annotated_target(op)
        if other == target.name:
            continue
        if other is not None:
            yield op, f"annotated for target {other}"
            continue
        pattern = next((m.pattern.name for m, _ in result.groups if op in m.ops), None)
        if pattern is None:
            yield op, target.explain(op, result)
        else:
            yield (
                op,
                (
                    f"not annotated, although {target.name} pattern {pattern} matches it "
                    f"(run annotate-target{{target={target.name}}} first)"
                ),
            )


def print_explanations(target: Target, items, stream: IO[str]) -> None:
    for op, reason in items:
        print(f"{target.name}: kept on CPU: {describe_op(op)}: {reason}", file=stream)


def _next_group_id(module: ModuleOp) -> int:
    ids = [
        attr.value.data
        for op in module.walk()
        if isinstance(attr := op.attributes.get(GROUP_ATTR), IntegerAttr)
    ]
    return max(ids, default=-1) + 1


@dataclass(frozen=True)
class AnnotateTargetPass(ModulePass):
    """Mark the op groups that match a target's pattern table (target, pattern, group id).

    The target's pattern table (`qaccel.targets.base`) is matched over the host functions
    (the public ones, i.e. the entry function); each accepted match becomes a group whose ops get
    the discardable attributes `qaccel.target`, `qaccel.pattern` and `qaccel.group` (a module-wide
    id, increasing in program order), plus `qaccel.partition_index` when the pattern gives one:

        %acc = q.conv2d %x, %w {...} : (...) -> tensor<1x8x8x16xi32>
        %sum = q.bias_add %acc, %b : (...) -> tensor<1x8x8x16xi32>
        %y   = q.requantize %sum {...} : (tensor<1x8x8x16xi32>) -> tensor<1x8x8x16xi8>
        %r   = tfl.reshape %y, %shape : (...) -> tensor<1x1024xi8>

    becomes

        %acc = q.conv2d %x, %w {qaccel.target = "vta", qaccel.pattern = "conv2d",
                                qaccel.group = 0 : i64, ...}
        %sum = q.bias_add %acc, %b {qaccel.target = "vta", qaccel.pattern = "conv2d",
                                    qaccel.group = 0 : i64}
        %y   = q.requantize %sum {qaccel.target = "vta", qaccel.pattern = "conv2d",
                                  qaccel.group = 0 : i64, ...}
        %r   = tfl.reshape %y, %shape : (...) -> tensor<1x1024xi8>

    Ops that already carry a `qaccel.target` (this target's or another's) are left alone, so the
    pass is idempotent and `annotate-target{target=a},annotate-target{target=b}` gives `a`
    priority. `explain=true` prints to stderr, for every op left unannotated, why (no pattern, or
    the pattern whose checks failed and the values that failed them). The target and its
    hardware configuration are the module's `#accel.target` (`attach-target`); `target=NAME`
    naming another target matches that target's table in its default configuration.
    """

    name = "annotate-target"

    target: str = ""
    """The target whose pattern table is matched; default: the module's `#accel.target`
    (built-in `vta`, or one registered through the `qaccel.targets` entry point)."""

    explain: bool = False
    """Print to stderr why each op left unannotated is not matched."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        target = load_target(self.name, op, self.target)
        group = _next_group_id(op)
        for function in host_functions(op):
            block = function.body.block
            claimed = [o for o in block.ops if TARGET_ATTR in o.attributes]
            result = target.match(block, claimed)
            target_name = StringAttr(target.name)
            for match, index in result.groups:
                # One attribute of each per group, shared by its ops (attributes are immutable).
                marks = {TARGET_ATTR: target_name,
                         PATTERN_ATTR: StringAttr(match.pattern.name),
                         GROUP_ATTR: IntegerAttr(group, i64)}  # fmt: skip
                if index is not None:
                    marks[PARTITION_INDEX_ATTR] = IntegerAttr(index, i64)
                for o in match.ops:
                    o.attributes.update(marks)
                group += 1
            if self.explain:
                print_explanations(target, explain_lines(target, block, result), sys.stderr)
