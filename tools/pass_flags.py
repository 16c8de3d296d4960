"""The pass-manager flags every qaccel driver shares (`--print-ir-after-all`, `--pass-timing`,
`--verify-semantics`, ...) and the `PassManager` they ask for.

Apart from `qaccel-opt` (which re-exports them) so that `qaccel-compile` and `qaccel-run` get
them without importing xDSL's `xdsl-opt` driver.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Mapping, Sequence

from xdsl.passes import ModulePass

# From the modules themselves, not `pipeline/manager.py`'s namespace: that one also imports
# the pass docs and the semantics verifier, which only some flags need.
from qaccel.pipeline.expansion import expand
from qaccel.pipeline.runner import IRPrinter, PassInstrumentation, PassManager, PassTiming
from qaccel.pipeline.spec import parse_passes


def add_pass_manager_arguments(ap: argparse.ArgumentParser, semantics: bool = True) -> None:
    """The pass-manager flags shared by qaccel's drivers."""
    ap.add_argument("--print-ir-after-all", action="store_true",
                    help="print the IR to stderr after every pass (inside named pipelines too)")
    ap.add_argument("--print-ir-after", action="append", default=[], metavar="PASS",
                    help="print the IR to stderr after each run of PASS (a pass or named "
                    "pipeline; repeatable or comma-separated)")
    ap.add_argument("--pass-timing", action="store_true",
                    help="print wall time per pass to stderr (MLIR's execution time table)")
    if semantics:
        ap.add_argument("--verify-semantics", nargs="?", const=0, default=None, type=int,
                        metavar="SEED",
                        help="after every pass, run the entry function on random inputs "
                        "(seed SEED, default 0) with the interpreter; fail naming the pass "
                        "if any output changed bit for bit (write --verify-semantics=SEED)")
    ap.add_argument("--explain-partitioning", action="store_true",
                    help="print why every op left on the CPU was not partitioned, and for "
                    "every host step both choices (inside its partition or on the CPU) with "
                    "their costs and the choice made (sets explain=true on every "
                    "partition-graph pass)")
    ap.add_argument("--elide-elementsattrs-if-larger", type=int, metavar="N", default=None,
                    help="print constants (dense elements, arrays, lane lists) of more than N "
                    "elements as dense_resource<__elided__> / __elided__ in printed IR; such "
                    "text is for reading and does not parse back")


def normalize_argv(argv: Sequence[str] | None) -> list[str]:
    """A bare `--verify-semantics` must not swallow the input file as its SEED."""
    argv = list(sys.argv[1:] if argv is None else argv)
    return ["--verify-semantics=0" if a == "--verify-semantics" else a for a in argv]


def print_ir_after_names(values: Sequence[str]) -> list[str]:
    return [name.strip() for v in values for name in v.split(",") if name.strip()]


def pass_manager_for(
    args: argparse.Namespace,
    available: Mapping[str, Callable[[], type[ModulePass]]],
    prog: str,
    printer_options: Mapping[str, object] | None = None,
) -> tuple[PassManager, PassTiming | None]:
    """The `PassManager` for `args.passes` and the pass-manager flags. Raises PipelineError
    (a ValueError) for bad pipelines or flags."""
    expansion = expand(parse_passes(args.passes, available), available)
    passes = list(expansion.passes)
    if getattr(args, "explain_partitioning", False):
        passes = [partitioning_output(p, explain=True) for p in passes]
    elif getattr(args, "report_partitioning", False):  # qaccel-compile: the summary line
        passes = [partitioning_output(p, report=True) for p in passes]
    after = print_ir_after_names(args.print_ir_after)
    IRPrinter.check_names(after, passes, "--print-ir-after")
    instrumentations: list[PassInstrumentation] = []
    if args.print_ir_after_all or after:
        options = dict(printer_options or {})
        if getattr(args, "elide_elementsattrs_if_larger", None) is not None:
            options["elide_larger_than"] = args.elide_elementsattrs_if_larger
        instrumentations.append(IRPrinter(args.print_ir_after_all, after, printer_options=options))
    if getattr(args, "verify_semantics", None) is not None:
        from qaccel.pipeline.semantics import SemanticsVerifier

        instrumentations.append(SemanticsVerifier(args.verify_semantics))
    timing = PassTiming() if args.pass_timing else None
    verify = not getattr(args, "disable_verify", False)
    return PassManager(passes, instrumentations, verify, timing), timing


def partitioning_output(scheduled, **options: bool):
    """A scheduled partition-graph pass with `options` (explain=true, report=true) set; any
    other pass as it is."""
    import dataclasses

    if scheduled.name == "partition-graph":
        return dataclasses.replace(scheduled, pass_=dataclasses.replace(scheduled.pass_, **options))
    return scheduled
