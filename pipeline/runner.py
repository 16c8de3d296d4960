"""The pass runner: xDSL's `PassPipeline` over the expanded passes, with its callback
verifying the IR after every pass (naming the pass when it does not verify), timing each pass
and calling the instrumentations (`--print-ir-after-all`, `--pass-timing`,
`--verify-semantics`)."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import IO, Any

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass, PassPipeline, PassPipelineCallbackType
from xdsl.utils.exceptions import DiagnosticException

from qaccel.dialects.annotations import verify_annotations
from qaccel.pipeline.expansion import ScheduledPass
from qaccel.pipeline.spec import PipelineError, describe_pass


class PassVerificationError(DiagnosticException):
    """The IR does not verify after a pass (the pass is named in the message)."""


class PassInstrumentation:
    """Hooks around every pass a `PassManager` runs (MLIR's PassInstrumentation)."""

    timing_label: str | None = None
    """Name of the `--pass-timing` row that accounts for the time spent in these hooks."""

    def run_before_pipeline(self, module: ModuleOp, passes: Sequence[ScheduledPass]) -> None:
        pass

    def run_after_pass(self, index: int, scheduled: ScheduledPass, module: ModuleOp) -> None:
        pass


@dataclass
class PassTiming:
    """Wall time per pass and per other phase, reported as MLIR's `-mlir-timing` table."""

    rows: dict[Any, list[Any]] = field(default_factory=dict)
    """key -> [label, depth, seconds], in first-seen order."""
    total: float = 0.0

    def add(self, key: Any, label: str, seconds: float, depth: int = 0) -> None:
        row = self.rows.setdefault(key, [label, depth, 0.0])
        row[2] += seconds

    def add_pass(self, index: int, scheduled: ScheduledPass, seconds: float) -> None:
        for depth, frame in enumerate(scheduled.pipelines):
            self.add(("pipeline", frame), frame.name, seconds, depth)
        self.add(("pass", index), describe_pass(scheduled.pass_), seconds,
                 len(scheduled.pipelines))  # fmt: skip

    def report(self, stream: IO[str]) -> None:
        rule = "===" + "-" * 73 + "==="
        total = self.total or sum(r[2] for r in self.rows.values() if r[1] == 0)
        lines = [
            rule,
            " " * 25 + "... Execution time report ...",
            rule,
            f"  Total Execution Time: {total:.4f} seconds",
            "",
            "  ----Wall Time----  ----Name----",
        ]

        def line(seconds: float, depth: int, label: str) -> str:
            percent = 100.0 * seconds / total if total > 0 else 0.0
            return f"  {seconds:8.4f} ({percent:5.1f}%)  {'  ' * depth}{label}"

        # Input first, then the passes in pipeline order, then verifiers, then output.
        rank = {"input": 0, "pipeline": 1, "pass": 1, "output": 3}
        ordered = sorted(
            self.rows.items(),
            key=lambda kv: rank.get(kv[0][0] if isinstance(kv[0], tuple) else kv[0], 2),
        )
        lines += [line(seconds, depth, label) for _, (label, depth, seconds) in ordered]
        lines.append(line(total, 0, "Total"))
        print("\n".join(lines), file=stream)


class PassManager:
    """Runs scheduled passes on a module: verifies the IR after each pass (naming the pass
    when it does not verify) and calls the instrumentations.

    `verify_each=False` verifies the input and the IR after the last pass only (what
    `qaccel-compile` does: about a tenth of its time went to verifying every intermediate
    module); a failure then names the pipeline, and `qaccel-opt` with the same passes names
    the pass. `verify_input=False` leaves the input to its own boundary: for a module just
    made by `parse_mlir` (which verifies it) or `import_tflite` (whose IR verifies by
    construction, as the fuzz harness checks), verifying it again only repeats that work."""

    def __init__(
        self,
        passes: Sequence[ScheduledPass],
        instrumentations: Sequence[PassInstrumentation] = (),
        verify: bool = True,
        timing: PassTiming | None = None,
        verify_each: bool = True,
        verify_input: bool = True,
    ):
        self.passes = list(passes)
        self.instrumentations = list(instrumentations)
        self.verify = verify
        self.timing = timing
        self.verify_each = verify_each
        self.verify_input = verify_input

    def _timed(self, key: Any, label: str, run: Callable[[], None]) -> None:
        start = time.perf_counter()
        run()
        if self.timing is not None:
            self.timing.add(key, label, time.perf_counter() - start)

    def _instrument(self, hook: Callable[[PassInstrumentation], None]) -> None:
        for inst in self.instrumentations:
            if inst.timing_label is None or self.timing is None:
                hook(inst)
            else:
                self._timed(("instrumentation", inst.timing_label), inst.timing_label,
                            lambda: hook(inst))  # fmt: skip

    def run(self, ctx: Context, module: ModuleOp) -> None:
        if self.verify and self.verify_input:
            self._timed("verifier", "Verifier", lambda: verify_ir(module))  # the input's errors are its own
        self._instrument(lambda inst: inst.run_before_pipeline(module, self.passes))
        if not self.passes:
            return
        pipeline = PassPipeline(tuple(s.pass_ for s in self.passes), self._callback(module))
        pipeline.apply(ctx, module)

    def _callback(self, module: ModuleOp) -> PassPipelineCallbackType:
        """PassPipeline's callback: called before the first pass (nothing ran yet) and after
        every pass; it finds the scheduled pass that ran by its position (a pass instance may
        run twice) and times it from the end of the previous call."""
        position = [-1]
        last = [time.perf_counter()]

        def after(ran: ModulePass | None, op: ModuleOp, following: ModulePass | None) -> None:
            if ran is None:
                last[0] = time.perf_counter()
                return
            position[0] += 1
            index = position[0]
            scheduled = self.passes[index]
            if self.timing is not None:
                self.timing.add_pass(index, scheduled, time.perf_counter() - last[0])
            if self.verify and (self.verify_each or index == len(self.passes) - 1):
                self._timed("verifier", "Verifier", lambda: self._verify_after(scheduled, module))
            self._instrument(lambda inst: inst.run_after_pass(index, scheduled, module))
            last[0] = time.perf_counter()

        return after

    def _verify_after(self, scheduled: ScheduledPass, module: ModuleOp) -> None:
        try:
            verify_ir(module)
        except DiagnosticException as e:
            first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
            where = f"pass {scheduled.quoted}"
            if not self.verify_each and len(self.passes) > 1:
                where = (f"the passes (the last {scheduled.quoted}; qaccel-opt with the same "
                         "passes names the one that broke it)")  # fmt: skip
            raise PassVerificationError(f"IR after {where} does not verify: {first}") from e


def verify_ir(module: ModuleOp) -> None:
    """The IR verifier plus the registered discardable attributes (`dialects/annotations.py`:
    xDSL 0.74 has no hook that verifies them with the ops)."""
    module.verify()
    verify_annotations(module)


def _print_module(module: ModuleOp, stream: IO[str], **printer_options: Any) -> None:
    from qaccel.dialects.printing import op_text  # xDSL's text (or elided), printed faster

    stream.write(op_text(module, **printer_options))


class IRPrinter(PassInstrumentation):
    """`--print-ir-after-all` / `--print-ir-after=NAME`: dumps the IR after passes, to
    `stream` (stderr, as MLIR does), under `// -----// IR Dump After <pass> //----- //`.

    NAME may be a pass or a named pipeline (printed after its last pass)."""

    def __init__(
        self,
        after_all: bool = False,
        after: Sequence[str] = (),
        stream: IO[str] | None = None,
        printer_options: Mapping[str, Any] | None = None,
    ):
        self.after_all = after_all
        self.after = set(after)
        self.stream = stream
        self.printer_options = dict(printer_options or {})
        self._passes: list[ScheduledPass] = []

    @staticmethod
    def check_names(names: Sequence[str], passes: Sequence[ScheduledPass], flag: str) -> None:
        """PipelineError unless each name is a pass or named pipeline that runs."""
        running = {s.name for s in passes} | {f.name for s in passes for f in s.pipelines}
        for name in names:
            if name not in running:
                listed = ", ".join(dict.fromkeys(s.name for s in passes)) or "none"
                raise PipelineError(
                    f"{flag}: pass '{name}' is not in the pipeline (passes that run: {listed})"
                )

    def run_before_pipeline(self, module: ModuleOp, passes: Sequence[ScheduledPass]) -> None:
        self._passes = list(passes)

    def _dump(self, title: str, module: ModuleOp) -> None:
        stream = self.stream or sys.stderr
        stream.write(f"// -----// IR Dump After {title} //----- //\n")
        _print_module(module, stream, **self.printer_options)
        stream.write("\n")
        stream.flush()

    def run_after_pass(self, index: int, scheduled: ScheduledPass, module: ModuleOp) -> None:
        if self.after_all or scheduled.name in self.after:
            self._dump(scheduled.label, module)
        following = self._passes[index + 1].pipelines if index + 1 < len(self._passes) else ()
        ended = [f for f in scheduled.pipelines if f not in following]
        for frame in reversed(ended):  # innermost first
            if frame.name in self.after:
                self._dump(frame.name, module)
