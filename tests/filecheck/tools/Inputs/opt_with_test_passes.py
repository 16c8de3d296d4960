"""qaccel-opt with test-only passes (deliberately wrong ones among them), for the pass-manager
tests: `python opt_with_test_passes.py ARGS...` takes qaccel-opt's arguments."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from xdsl.context import Context
from xdsl.dialects import arith, func
from xdsl.dialects.builtin import (
    BytesAttr,
    DenseIntOrFPElementsAttr,
    IntegerAttr,
    ModuleOp,
    TensorType,
    i32,
)
from xdsl.passes import ModulePass
from xdsl.utils.arg_spec import ArgSpec

from qaccel.dialects.tfl import ConstOp
from qaccel.pipeline.manager import NamedPipeline, pass_spec
from qaccel.tools.qaccel_opt import main


@dataclass(frozen=True)
class CorruptConstPass(ModulePass):
    """Adds `delta` to the first element of the first `tfl.const` (a deliberately wrong pass)."""

    name = "test-corrupt-const"
    delta: int = 1

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        const = next(o for o in op.walk() if isinstance(o, ConstOp))
        values = const.as_array().copy()
        values.flat[0] = np.array(int(values.flat[0]) + self.delta).astype(values.dtype)
        const.properties["value"] = DenseIntOrFPElementsAttr(
            const.value.type, BytesAttr(values.tobytes())
        )


@dataclass(frozen=True)
class SetAttrPass(ModulePass):
    """Sets the module attribute `test.value` (changes no computation)."""

    name = "test-set-attr"
    value: int = 0

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        op.attributes["test.value"] = IntegerAttr(self.value, 64)


@dataclass(frozen=True)
class InsertUnknownOpPass(ModulePass):
    """Inserts an unused `arith.constant` into each function: the interpreter cannot run it."""

    name = "test-insert-unknown-op"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for f in op.walk():
            if isinstance(f, func.FuncOp):
                block = f.body.blocks.first
                block.insert_op_before(arith.ConstantOp(IntegerAttr(0, i32)), block.first_op)


@dataclass(frozen=True)
class BreakIRPass(ModulePass):
    """Gives the first `tfl.const` a value of the wrong shape: the IR no longer verifies."""

    name = "test-break-ir"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        const = next(o for o in op.walk() if isinstance(o, ConstOp))
        element = const.value.type.element_type
        wrong = TensorType(element, [1, 2, 3])
        const.properties["value"] = DenseIntOrFPElementsAttr(
            wrong, BytesAttr(np.zeros(6, np.int64).astype(f"i{element.width.data // 8}").tobytes())
        )


@dataclass(frozen=True)
class TestPipeline(NamedPipeline):
    """A test pipeline: `cse`, `test-set-attr{value=...}`."""

    name = "test-pipeline"

    value: int | None = None
    """Passed to `test-set-attr`."""

    def expansion(self) -> Sequence[str | ArgSpec | ModulePass]:
        return ["cse", pass_spec("test-set-attr", value=self.value)]


@dataclass(frozen=True)
class BrokenPipeline(NamedPipeline):
    """A pipeline naming a pass nobody registers: `cse`, `test-not-registered`."""

    name = "test-broken-pipeline"

    def expansion(self) -> Sequence[str | ArgSpec | ModulePass]:
        return ["cse", "test-not-registered"]


TEST_PASSES = {
    p.name: (lambda p=p: p)
    for p in (CorruptConstPass, SetAttrPass, InsertUnknownOpPass, BreakIRPass, TestPipeline,
              BrokenPipeline)
}

if __name__ == "__main__":
    main(extra_passes=TEST_PASSES)
