"""`attach-target{target=vta config=NAME|FILE}`: say in the IR which accelerator the module is
compiled for (MLIR's `tosa-attach-target`).

The pass and its IR before/after are documented on `AttachTargetPass`.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import PassFailedException

from qaccel.dialects.accel import MODULE_TARGET_ATTR
from qaccel.targets.base import TargetError, get_target, target_attr


@dataclass(frozen=True)
class AttachTargetPass(ModulePass):
    """Put the target and its whole hardware configuration on the module as `#accel.target`.

    Every pass after it (`annotate-target`, `partition-graph`, `insert-pack-unpack`,
    `lower-q-to-accel`, `schedule-vta`) and `qaccel-compile` read the target from this
    attribute; none parses configuration files. An `#accel.target` already on the module is
    replaced.

        builtin.module {                  builtin.module attributes {accel.target =
          func.func @main(...) {...}  =>      #accel.target<"vta", {name = "vta-default",
        }                                     log_block = 4 : i64, ..., store_requant = false}>} {
                                            func.func @main(...) {...}
                                          }

    An unknown target, a configuration that is neither a file nor a bundled name, an
    unreadable file or a bad key fails the pass with one line naming it.
    """

    name = "attach-target"

    target: str = "vta"
    """The target (built-in `vta`, or one registered through the `qaccel.targets` entry
    point)."""

    config: str = ""
    """The target's hardware configuration: a JSON file or a bundled configuration's name
    (`vta-default`, `vta-store-requant`); default: the target's default configuration."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        try:
            target = get_target(self.target, self.config or None)
        except (TargetError, OSError, ValueError) as e:
            raise PassFailedException(f"{self.name}: {e}") from None
        op.attributes[MODULE_TARGET_ATTR] = target_attr(target)
