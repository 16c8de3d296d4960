"""`--verify-semantics`: run the module with the interpreter before the first pass and after
every pass that changed it, and name the first pass after which an output differs."""

from __future__ import annotations

from collections.abc import Sequence
from itertools import zip_longest
from typing import TYPE_CHECKING, Any

from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Block, Operation, SSAValue

from qaccel.pipeline.expansion import ScheduledPass
from qaccel.pipeline.runner import PassInstrumentation

if TYPE_CHECKING:
    import numpy as np


class SemanticsError(Exception):
    """`--verify-semantics` found a pass that changed what the module computes."""


def same_ir(a: Operation, b: Operation) -> bool:
    """Whether two ops are identical up to SSA names and locations, result types included
    (`Operation.is_structurally_equivalent` ignores result and block-argument types)."""
    values: dict[SSAValue, SSAValue] = {}
    blocks: dict[Block, Block] = {}
    for x, y in zip_longest(a.walk(), b.walk()):
        if x is None or y is None:
            return False
        if (
            x.name != y.name
            or x.attributes != y.attributes
            or x.properties != y.properties
            or len(x.operands) != len(y.operands)
            or len(x.results) != len(y.results)
            or len(x.regions) != len(y.regions)
            or len(x.successors) != len(y.successors)
        ):
            return False
        if any(values.get(u) is not v for u, v in zip(x.operands, y.operands)):
            return False
        if any(blocks.get(u) is not v for u, v in zip(x.successors, y.successors)):
            return False
        for u, v in zip(x.results, y.results):
            if u.type != v.type:
                return False
            values[u] = v
        for rx, ry in zip(x.regions, y.regions):
            if len(rx.blocks) != len(ry.blocks):
                return False
            for bx, by in zip(rx.blocks, ry.blocks):
                blocks[bx] = by
                if len(bx.args) != len(by.args):
                    return False
                for u, v in zip(bx.args, by.args):
                    if u.type != v.type:
                        return False
                    values[u] = v
    return True


def describe_array(x: np.ndarray) -> str:
    return f"{x.dtype}[{'x'.join(str(d) for d in x.shape)}]"


def compare_outputs(before: Sequence[Any], after: Sequence[Any], function: str) -> str | None:
    """None if the outputs are identical bit for bit (dtype, shape, bytes), else what differs:
    `output 0 of @f (3 of 10 elements differ, max |diff| 7)`."""
    import numpy as np

    if len(before) != len(after):
        return f"the number of outputs of @{function} from {len(before)} to {len(after)}"
    for i, (x, y) in enumerate(zip(before, after)):
        x, y = np.asarray(x), np.asarray(y)
        if x.dtype != y.dtype or x.shape != y.shape:
            return f"output {i} of @{function} from {describe_array(x)} to {describe_array(y)}"
        if x.tobytes() == y.tobytes():
            continue
        if x.dtype.kind in "iub":
            a, b = x.astype(np.int64).ravel(), y.astype(np.int64).ravel()
            differ = a != b
            max_diff = str(int(np.abs(a - b).max()))
        elif x.dtype.kind in "fc":
            bits = np.dtype(f"u{x.dtype.itemsize}") if x.dtype.kind == "f" else None
            a, b = x.ravel(), y.ravel()
            differ = a.view(bits) != b.view(bits) if bits is not None else a != b
            with np.errstate(invalid="ignore", over="ignore"):
                max_diff = f"{float(np.nanmax(np.abs(a[differ] - b[differ]), initial=0.0)):.6g}"
        else:
            differ = x.ravel() != y.ravel()
            max_diff = "n/a"
        return (
            f"output {i} of @{function} ({int(np.count_nonzero(differ))} of {x.size} "
            "elements differ, "
            f"max |diff| {max_diff})"
        )
    return None


class SemanticsVerifier(PassInstrumentation):
    """`--verify-semantics[=SEED]`: run the entry function with qaccel's interpreter on the
    same seeded random inputs before the first pass and after each pass that changed the IR;
    raise SemanticsError naming the first pass after which an output differs bit for bit or
    the module cannot run.

    The interpreter only runs once some pass changed the IR (the input is run then, from a
    snapshot), and never after a pass that left the IR as it was, so passes that do nothing
    cost a clone and a comparison."""

    timing_label = "Semantics verifier (interpreter)"

    def __init__(self, seed: int = 0):
        self.seed = seed
        self.runs = 0
        self.reference: list[Any] | None = None

    def run_before_pipeline(self, module: ModuleOp, passes: Sequence[ScheduledPass]) -> None:
        self.reference = None
        self.snapshot = module.clone() if passes else None

    def _start(self) -> None:
        """Run the input (the snapshot taken before the first pass) for the reference."""
        from qaccel.interpreter import interpreter

        self._interpreter = interpreter
        assert self.snapshot is not None
        try:
            function = interpreter.entry_function(self.snapshot)
        except interpreter.ExecutionError as e:
            raise SemanticsError(f"--verify-semantics: cannot run the input: {e}") from None
        self.entry = function.sym_name.data
        self.inputs = interpreter.random_inputs(function, self.seed)
        self.reference = self._run(self.snapshot, None)

    def _run(self, module: ModuleOp, after: ScheduledPass | None) -> list[Any]:
        self.runs += 1
        try:
            return self._interpreter.run_function(module, self.inputs, entry=self.entry)
        except Exception as e:
            text = str(e).strip().splitlines()[0] if str(e).strip() else ""
            known = (self._interpreter.ExecutionError,)
            reason = text if isinstance(e, known) and text else f"{type(e).__name__}: {text}"
            where = "the input" if after is None else f"@{self.entry} after pass {after.quoted}"
            raise SemanticsError(f"--verify-semantics: cannot run {where}: {reason}") from None

    def run_after_pass(self, index: int, scheduled: ScheduledPass, module: ModuleOp) -> None:
        assert self.snapshot is not None
        if same_ir(module, self.snapshot):
            return  # an unchanged module computes the same outputs
        if self.reference is None:
            self._start()
        outputs = self._run(module, scheduled)
        difference = compare_outputs(self.reference, outputs, self.entry)
        if difference is not None:
            raise SemanticsError(
                f"--verify-semantics: pass {scheduled.quoted} changed {difference}"
            )
        self.snapshot = module.clone()
