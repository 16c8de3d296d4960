"""How qaccel IR names things: a tensor's name is its defining op's `NameLoc` (the importer
puts TFLite tensor names there), and a module's entry is its first public function."""

from __future__ import annotations

from typing import Any

from xdsl.dialects import func
from xdsl.dialects.builtin import FusedLoc, ModuleOp, NameLoc


def location_name(op_or_value: Any) -> str | None:
    """The name in an op's (or block argument's) location: the first of a fused location."""
    loc = op_or_value if isinstance(op_or_value, NameLoc | FusedLoc) else getattr(
        op_or_value, "location", None
    )
    if isinstance(loc, FusedLoc) and loc.locations.data:
        loc = loc.locations.data[0]
    return loc.desc.data if isinstance(loc, NameLoc) else None


def is_public(function: func.FuncOp) -> bool:
    return function.sym_visibility is None or function.sym_visibility.data == "public"


def public_functions(module: ModuleOp) -> list[func.FuncOp]:
    return [op for op in module.ops if isinstance(op, func.FuncOp) and is_public(op)]
