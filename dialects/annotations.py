"""The `qaccel` dialect: the discardable attributes the partitioning passes put on ops and
functions, registered with their verifiers.

| attribute | on | value | set by |
| --- | --- | --- | --- |
| `qaccel.target` | ops of a group, accelerator functions | target name (string, an identifier) | `annotate-target`, `partition-graph` |
| `qaccel.pattern` | ops of a group | the pattern's name (non-empty string) | `annotate-target` |
| `qaccel.group` | ops of a group | group id (i64, >= 0) | `annotate-target` |
| `qaccel.partition_index` | ops of a group | the pattern's partition index (i64) | `annotate-target` |
| `accel.target` | `builtin.module` | `#accel.target<...>` | `attach-target` |

An op with `qaccel.pattern`, `qaccel.group` or `qaccel.partition_index` also carries
`qaccel.target`. xDSL 0.74 has no dialect hook for discardable attributes (MLIR's
`verifyOperationAttribute`), so `verify_annotations(op)` checks them on `op` and everything
nested in it; the pass manager runs it with the IR verifier, on the input and after every
pass. (Schedules are `#vta.<kind>_schedule` attributes of `vta.layer` ops, which verify
themselves.)
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from xdsl.dialects import func
from xdsl.dialects.builtin import IntegerAttr, ModuleOp, StringAttr, i64
from xdsl.ir import Attribute, Dialect, Operation
from xdsl.utils.exceptions import VerifyException

from qaccel.dialects.accel import MODULE_TARGET_ATTR, TargetAttr

TARGET_ATTR = "qaccel.target"
PATTERN_ATTR = "qaccel.pattern"
GROUP_ATTR = "qaccel.group"
PARTITION_INDEX_ATTR = "qaccel.partition_index"
ANNOTATIONS = (TARGET_ATTR, PATTERN_ATTR, GROUP_ATTR, PARTITION_INDEX_ATTR)
"""What `annotate-target` puts on the ops of a group."""


def _target_name(attr: Attribute, op: Operation) -> str | None:
    if not isinstance(attr, StringAttr) or not re.fullmatch(r"[A-Za-z_][\w-]*", attr.data):
        return f"must be a target name (an identifier string), got {attr}"
    return None


def _pattern_name(attr: Attribute, op: Operation) -> str | None:
    if not isinstance(attr, StringAttr) or not attr.data:
        return f"must be a non-empty pattern name string, got {attr}"
    return None


def _i64(minimum: int | None) -> Callable[[Attribute, Operation], str | None]:
    def check(attr: Attribute, op: Operation) -> str | None:
        if not isinstance(attr, IntegerAttr) or attr.type != i64:
            return f"must be an i64 integer, got {attr}"
        if minimum is not None and attr.value.data < minimum:
            return f"must be >= {minimum}, got {attr.value.data}"
        return None

    return check


def _module_target(attr: Attribute, op: Operation) -> str | None:
    if not isinstance(op, ModuleOp):
        return "belongs on builtin.module only"
    if not isinstance(attr, TargetAttr):
        return f"must be an #accel.target, got {attr}"
    return None


@dataclass(frozen=True)
class Annotation:
    """A registered discardable attribute: its name and a check of its value on an op (None
    when valid, else what is wrong)."""

    name: str
    check: Callable[[Attribute, Operation], str | None]
    needs_target: bool = False
    """Only meaningful on an op that also carries `qaccel.target`."""


REGISTERED: dict[str, Annotation] = {
    a.name: a
    for a in (
        Annotation(TARGET_ATTR, _target_name),
        Annotation(PATTERN_ATTR, _pattern_name, needs_target=True),
        Annotation(GROUP_ATTR, _i64(0), needs_target=True),
        Annotation(PARTITION_INDEX_ATTR, _i64(None), needs_target=True),
        Annotation(MODULE_TARGET_ATTR, _module_target),
    )
}


def verify_annotations(root: Operation) -> None:
    """Check every registered discardable attribute on `root` and the ops nested in it;
    `VerifyException` naming the op and the attribute."""
    for op in root.walk():
        if not op.attributes:
            continue
        for name, attr in op.attributes.items():
            annotation = REGISTERED.get(name)
            if annotation is None:
                continue
            problem = annotation.check(attr, op)
            if problem is None and annotation.needs_target and TARGET_ATTR not in op.attributes:
                problem = f"needs {TARGET_ATTR} on the same op"
            if problem is not None:
                raise VerifyException(f"{_describe(op)}: {name} {problem}")


def _describe(op: Operation) -> str:
    symbol = op.attributes.get("sym_name") or op.properties.get("sym_name")
    return f"{op.name} @{symbol.data}" if isinstance(symbol, StringAttr) else op.name


def annotated_target(op: Operation) -> str | None:
    """The `qaccel.target` of an op or function, if any."""
    attr = op.attributes.get(TARGET_ATTR)
    return attr.data if isinstance(attr, StringAttr) else None


def accelerator_functions(module: ModuleOp) -> list[func.FuncOp]:
    """The module's accelerator functions (those with `qaccel.target`), in module order."""
    return [
        op for op in module.ops
        if isinstance(op, func.FuncOp) and TARGET_ATTR in op.attributes
    ]  # fmt: skip


Qaccel = Dialect("qaccel", [], [])
"""The namespace of the discardable attributes above (no ops or attribute types of its own)."""
