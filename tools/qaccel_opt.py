"""`qaccel-opt`: xdsl-opt for qaccel. Reads `.mlir` or `.tflite`, runs `-p` pipelines, prints
MLIR or writes `-t tflite`.

    qaccel-opt model.tflite                       # import and print the tfl IR
    qaccel-opt model.tflite | qaccel-opt          # print-parse round trip
    qaccel-opt in.mlir -t tflite -o out.tflite    # export
    qaccel-opt --list-passes                      # every pass and named pipeline, with options
    qaccel-opt model.tflite -p 'vta-pipeline{max-partitions=4}' --verify-semantics \
        --pass-timing --print-ir-after=legalize-tfl-to-q

`--help` lists qaccel's options; `--help-all` adds xDSL's own. xDSL's `--time-passes` and
`--print-between-passes` are accepted as aliases of `--pass-timing` and `--print-ir-after-all`.
`--elide-elementsattrs-if-larger=N` prints large constants as `dense_resource<__elided__>`
(readable; such text does not parse back).

Pass-manager flags (named pipelines are expanded first, so these see the passes inside):
`--print-ir-after-all`, `--print-ir-after=PASS` (repeatable, or comma-separated; PASS may be a
named pipeline) dump the IR to stderr; `--pass-timing` prints MLIR's execution time table to
stderr; `--verify-semantics[=SEED]` runs the entry function on seeded random inputs with the
interpreter before the first pass and after every pass that changed the IR, and fails naming
the first pass after which an output differs bit for bit.

Every bad input (missing or malformed file, unknown pass or option, invalid IR) ends with one
line on stderr, `qaccel-opt: error: ...`, and exit code 1; never a Python traceback.
"""

from __future__ import annotations

import argparse
import io
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from typing import IO, NoReturn

from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass, PassPipeline
from xdsl.utils.exceptions import ArgSpecParseError, DiagnosticException, ParseError
from xdsl.xdsl_opt_main import xDSLOptMain

from qaccel.frontend.errors import TFLiteExportError, TFLiteImportError
from qaccel.interpreter.prepare import ExecutionError
from qaccel.tools.cli import (
    OutputPathError,
    check_output_file,
    linear_string_literal_lexing,
    parse_error_line,
    parser_failures,
    resource_errors,
)
from qaccel.pipeline.manager import (
    PassInfo,
    PassManager,
    PassTiming,
    PipelineError,
    SemanticsError,
    pass_info,
    qaccel_pass_names,
)
from qaccel.tools.pass_flags import (
    add_pass_manager_arguments,
    normalize_argv,
    partitioning_output,
    pass_manager_for,
    print_ir_after_names,
)

PROG = "qaccel-opt"


class UsageError(Exception):
    """A command-line mistake, reported as one line."""


def fail(message: str, prog: str = PROG) -> NoReturn:
    first = message.strip().splitlines()[0] if message.strip() else "unknown error"
    print(f"{prog}: error: {first}", file=sys.stderr)
    sys.exit(1)


NAME_WIDTH = 24


def list_passes(available: Mapping[str, Callable[[], type[ModulePass]]], stream: IO[str]) -> None:
    """`--list-passes`: qaccel's pipelines, qaccel's passes, then every other registered pass,
    each sorted by name, with summary, options and (pipelines) the passes they run."""
    ours = qaccel_pass_names()
    infos = [pass_info(name, available, with_option_docs=name in ours) for name in available]
    groups: list[tuple[str, list[PassInfo]]] = [
        ("qaccel named pipelines", [i for i in infos if i.name in ours and i.is_pipeline]),
        ("qaccel passes", [i for i in infos if i.name in ours and not i.is_pipeline]),
        ("other passes (xDSL and plugins)", [i for i in infos if i.name not in ours]),
    ]
    lines: list[str] = []
    for title, group in groups:
        if not group:
            continue
        lines.append(f"{title}:")
        for info in sorted(group, key=lambda i: i.name):
            if info.error is not None:
                lines.append(f"  {info.name:<{NAME_WIDTH}}  (not available: {info.error})")
                continue
            lines.append(f"  {info.name:<{NAME_WIDTH}}  {info.summary}".rstrip())
            for o in info.options:
                default = "required" if o.default is None else f"= {o.default}"
                lines.append(f"      {o.name}: {o.type} {default}  {o.doc}".rstrip())
            if info.expansion is not None:
                lines.append(f"      runs: {', '.join(info.expansion) or '(nothing)'}")
    stream.write("\n".join(lines) + "\n")


_XDSL_SHOWN = {"help", "input_file", "passes", "target", "output_file", "frontend", "split_input_file"}
"""xDSL's arguments that `--help` shows with qaccel's (the others are behind --help-all)."""

_ALIASES = {"time_passes": "--pass-timing", "print_between_passes": "--print-ir-after-all"}
"""xDSL's flags that are accepted as aliases of qaccel's and never listed."""


def _qaccel_help_first(ap: argparse.ArgumentParser, xdsl_actions: list, show_all: bool) -> None:
    """`--help` lists the input, -p, -t, -o, -f and qaccel's options first; xDSL's other
    options only with `--help-all`, after them. xDSL's aliases of qaccel's flags never."""
    for action in xdsl_actions:
        if action.dest in _ALIASES:
            action.help = argparse.SUPPRESS
        elif action.dest not in _XDSL_SHOWN and not show_all:
            action.help = argparse.SUPPRESS
        elif action.dest == "passes" and not show_all:
            action.help = ("pass pipeline, e.g. 'vta-pipeline{stop-after=partition-graph}' "
                           "(--list-passes: qaccel's passes and pipelines, then xDSL's)")  # fmt: skip
        elif action.dest == "target" and not show_all:
            action.help = ("output: mlir (default), tflite (a .tflite flatbuffer), dot (the "
                           "partitioned graph); --help-all lists xDSL's targets")  # fmt: skip
    shown_first = [a for a in xdsl_actions if a.dest in _XDSL_SHOWN]
    rest = [a for a in xdsl_actions if a.dest not in _XDSL_SHOWN]
    ours = [a for a in ap._actions if a not in xdsl_actions]
    order = shown_first + ours + rest
    for group in ap._action_groups:
        group._group_actions.sort(key=order.index)
    ap._actions.sort(key=order.index)


def _import_tflite(data: bytes, source: str):
    # The flatbuffer reader is loaded only for .tflite input: every start would pay for it.
    from qaccel.frontend.tflite_import import import_tflite

    return import_tflite(data, source)


def _tflite_target():
    from qaccel.frontend.tflite_export import TFLiteTarget

    return TFLiteTarget


class QaccelOptMain(xDSLOptMain):
    """xdsl-opt with qaccel's frontends, targets, one-line diagnostics and pass manager.

    `extra_passes` registers more passes (name -> factory of the pass class), e.g. a
    researcher's own driver or a test's deliberately wrong pass."""

    pass_manager: PassManager
    timing: PassTiming | None = None

    def __init__(
        self,
        description: str = "qaccel modular optimizer driver (--help-all: xDSL's options too)",
        args: Sequence[str] | None = None,
        extra_passes: Mapping[str, Callable[[], type[ModulePass]]] | None = None,
    ):
        self.extra_passes = dict(extra_passes or {})
        argv = normalize_argv(args)
        self.help_all = "--help-all" in argv
        super().__init__(description=description, args=argv)

    def register_all_arguments(self, arg_parser: argparse.ArgumentParser):
        def error(message: str) -> NoReturn:
            raise UsageError(message)

        arg_parser.error = error  # type: ignore[method-assign]
        super().register_all_arguments(arg_parser)
        xdsl_actions = list(arg_parser._actions)
        add_pass_manager_arguments(arg_parser)
        arg_parser.add_argument("--list-passes", action="store_true",
                                help="list every pass and named pipeline with its summary and "
                                "options, then exit")
        arg_parser.add_argument("--list-targets", action="store_true",
                                help="list every target (built-in and `qaccel.targets` plugins) "
                                "with where it comes from, then exit")
        arg_parser.add_argument("--list-fusions", action="store_true",
                                help="list every fusion of fuse-composites (built-in and "
                                "`qaccel.fusions` plugins) with where it comes from, then exit")
        arg_parser.add_argument("--help-all", action="help",
                                help="show the help with xDSL's own options and exit")
        _qaccel_help_first(arg_parser, xdsl_actions, self.help_all)

    def register_all_passes(self):
        super().register_all_passes()
        for name, factory in self.extra_passes.items():
            self.register_pass(name, factory)

    def register_all_frontends(self):
        super().register_all_frontends()
        self.available_frontends["tflite"] = lambda io: _import_tflite(
            io.read(), self.get_input_name()
        )

    def register_all_targets(self):
        super().register_all_targets()
        self.available_targets["tflite"] = _tflite_target

    def setup_pipeline(self):
        # xDSL's --print-between-passes and --time-passes become ours.
        self.args.print_ir_after_all |= self.args.print_between_passes
        self.args.pass_timing |= self.args.time_passes
        self.pass_manager, self.timing = pass_manager_for(
            self.args,
            self.available_passes,
            PROG,
            printer_options={
                "print_generic_format": self.args.print_op_generic,
                "print_properties_as_attributes": self.args.print_no_properties,
                "print_debuginfo": self.args.print_debuginfo,
            },
        )
        self.pipeline = PassPipeline(tuple(s.pass_ for s in self.pass_manager.passes))

    def apply_passes(self, prog: ModuleOp):
        try:
            self.pass_manager.run(self.ctx, prog)
        except (DiagnosticException, PipelineError, SemanticsError):
            raise
        except Exception as e:  # a pass's own bug, e.g. in a plugin: one line naming it
            raise UsageError(failing_pass_line(e)) from None

    def get_input_stream(self) -> tuple[IO[bytes], str]:
        path = self.args.input_file
        if path is not None:
            try:
                open(path, "rb").close()
            except OSError as e:
                raise UsageError(f"cannot open input file '{path}': {e.strerror}") from None
        stream, ext = super().get_input_stream()
        if path is not None and ext not in self.available_frontends and not self.args.frontend:
            raise UsageError(
                f"'{path}': unknown file extension '.{ext}' (expected .mlir or .tflite; "
                "use -f to choose a frontend)"
            )
        return stream, ext

    def parse_chunk(self, chunk: IO[bytes], file_extension: str, start_offset: int = 0):
        start = time.perf_counter()
        name = self.get_input_name()
        linear_string_literal_lexing()
        try:
            with parser_failures(name, UsageError, keep=(UnicodeDecodeError, TFLiteImportError,
                                                         DiagnosticException, ParseError)):
                module = super().parse_chunk(chunk, file_extension, start_offset)
        except UnicodeDecodeError as e:
            raise UsageError(f"'{name}': not UTF-8 text (byte {e.start})") from None
        if module is not None:
            verify_input(module, name)
        if self.timing is not None:
            what = "Import" if file_extension == "tflite" else "Parse"
            self.timing.add(("input",), f"{what} ({file_extension})", time.perf_counter() - start)
        return module

    def output_resulting_program(self, prog: ModuleOp) -> str:
        start = time.perf_counter()
        if self.args.elide_elementsattrs_if_larger is not None and self.args.target == "mlir":
            from qaccel.dialects.printing import op_text

            text = op_text(prog, self.args.elide_elementsattrs_if_larger,
                           print_generic_format=self.args.print_op_generic,
                           print_properties_as_attributes=self.args.print_no_properties,
                           print_debuginfo=self.args.print_debuginfo)  # fmt: skip
        else:
            text = super().output_resulting_program(prog)
        if self.timing is not None:
            self.timing.add(("output",), f"Output ({self.args.target})", time.perf_counter() - start)
        return text

    def prepare_output(self) -> IO[str]:
        # Written only once everything succeeded: a failure leaves no partial output file.
        return sys.stdout if self.args.output_file is None else _HeldOutput()

    def run(self):
        if self.args.list_passes:
            list_passes(self.available_passes, sys.stdout)
            return
        if self.args.output_file is not None:
            check_output_file(self.args.output_file, "-o")
        if self.args.list_targets:
            list_targets(sys.stdout)
            return
        if self.args.list_fusions:
            list_fusions(sys.stdout)
            return
        start = time.perf_counter()
        if self.args.target.split("{")[0] != "tflite":
            held = self.prepare_output()
            self.prepare_output = lambda: held  # type: ignore[method-assign]
            super().run()
            if isinstance(held, _HeldOutput):
                with open(self.args.output_file, "w") as f:
                    f.write(held.getvalue())
        else:
            self._run_tflite_target()
        if self.timing is not None:
            self.timing.total = time.perf_counter() - start
            sys.stdout.flush()
            self.timing.report(sys.stderr)

    def _run_tflite_target(self):
        chunks, ext = self.prepare_input()
        (chunk, offset), *rest = chunks
        if rest:
            raise UsageError("-t tflite cannot be combined with --split-input-file")
        module = self.parse_chunk(chunk, ext, offset)
        assert isinstance(module, ModuleOp)
        self.apply_passes(module)
        start = time.perf_counter()
        from qaccel.frontend.tflite_export import export_tflite

        data = export_tflite(module)
        if self.timing is not None:
            self.timing.add(("output",), "Output (tflite)", time.perf_counter() - start)
        if self.args.output_file is None:
            if sys.stdout.isatty():
                raise UsageError("-t tflite writes binary data: give an output file with -o")
            sys.stdout.buffer.write(data)
        else:
            with open(self.args.output_file, "wb") as f:
                f.write(data)


class _HeldOutput(io.StringIO):
    """Output text kept in memory until the run succeeded (xDSL closes its stream early)."""

    def close(self) -> None:
        pass


def verify_input(module: ModuleOp, source: str) -> None:
    """Dominance of every parsed or imported module (xDSL's verifier does not check it)."""
    from qaccel.dialects.ssa import verify_dominance

    verify_dominance(module, source)


def _origin_of(module: str, group: str) -> str:
    """The entry point of `group` whose value lives in `module`'s top-level package, else
    built-in (qaccel) or the module."""
    from importlib.metadata import entry_points

    top = module.split(".")[0]
    if top in ("qaccel", "xdsl"):
        return "built-in" if top == "qaccel" else "xDSL"
    for ep in entry_points(group=group):
        if ep.value.split(".")[0].split(":")[0] == top:
            return f"entry point '{ep.name} = {ep.value}' ({group})"
    return f"module {module}"


def failing_pass_line(e: Exception) -> str:
    """`pass 'NAME' (from ...) raised TYPE: message`: the innermost pass on the traceback."""
    tb, failing = e.__traceback__, None
    while tb is not None:
        candidate = tb.tb_frame.f_locals.get("self")
        if isinstance(candidate, ModulePass):
            failing = candidate
        tb = tb.tb_next
    message = str(e).strip().splitlines()[0] if str(e).strip() else ""
    what = f"{type(e).__name__}{': ' + message if message else ''}"
    if failing is None:
        return f"a pass raised {what}"
    cls = type(failing)
    origin = _origin_of(cls.__module__, "xdsl.universe")
    return f"pass '{failing.name}' ({cls.__module__}.{cls.__qualname__}, {origin}) raised {what}"


def universe_failure_line(e: Exception) -> str:
    """One line naming the `xdsl.universe` entry point that fails to load (else `e`)."""
    from importlib.metadata import entry_points

    for ep in entry_points(group="xdsl.universe"):
        try:
            ep.load()
        except Exception as err:  # noqa: BLE001 - another package's code
            text = str(err).strip().splitlines()
            return (f"pass plugin entry point '{ep.name} = {ep.value}' (xdsl.universe) failed "
                    f"to load: {type(err).__name__}{': ' + text[0] if text else ''}")  # fmt: skip
    text = str(e).strip().splitlines()
    return f"{type(e).__name__}{': ' + text[0] if text else ''}"


def list_targets(stream: IO[str]) -> None:
    """`--list-targets`: name, where it comes from, description."""
    from importlib.metadata import entry_points

    from qaccel.targets.base import ENTRY_POINT_GROUP, TargetError, available_targets

    plugins = {ep.name: ep for ep in entry_points(group=ENTRY_POINT_GROUP)}
    for name, load in sorted(available_targets().items()):
        try:
            target = load()
        except TargetError as e:
            raise UsageError(str(e)) from None
        except Exception as e:  # noqa: BLE001 - another package's factory
            raise UsageError(f"target {name}: entry point '{plugins[name].value}' "
                             f"({ENTRY_POINT_GROUP}) raised {type(e).__name__}: {e}") from None  # fmt: skip
        origin = (f"entry point '{plugins[name].value}'" if name in plugins else "built-in")
        summary = (getattr(target, "description", "") or "").strip().splitlines()
        print(f"{name:<{NAME_WIDTH}} {origin}{' - ' + summary[0] if summary else ''}",
              file=stream)  # fmt: skip


def list_fusions(stream: IO[str]) -> None:
    """`--list-fusions`: interface name (aliases), where it comes from, summary."""
    from qaccel.fusions.registry import default_registry

    registry = default_registry()
    for fusion in sorted(registry.fusions(), key=lambda f: f.name):
        aliases = f" (also {', '.join(fusion.aliases)})" if fusion.aliases else ""
        doc = (type(fusion).__doc__ or "").strip().splitlines()
        print(f"{fusion.name:<{NAME_WIDTH}} {registry.origin(fusion.name)}{aliases}"
              f"{' - ' + doc[0] if doc else ''}", file=stream)  # fmt: skip


def main(
    argv: Sequence[str] | None = None,
    extra_passes: Mapping[str, Callable[[], type[ModulePass]]] | None = None,
) -> None:
    """The `qaccel-opt` command; `extra_passes` as for `QaccelOptMain`."""
    try:
        with resource_errors(PROG):
            try:
                opt = QaccelOptMain(args=argv, extra_passes=extra_passes)
            except ValueError as e:  # xDSL reports unknown passes and pass options this way
                raise UsageError(str(e)) from None
            except Exception as e:  # noqa: BLE001 - an xdsl.universe plugin that does not load
                raise UsageError(universe_failure_line(e)) from None
            opt.run()
    except UsageError as e:
        fail(str(e))
    except ArgSpecParseError as e:
        fail(f"invalid pass pipeline: {str(e).splitlines()[-1].strip()}")
    except ParseError as e:
        fail(parse_error_line(e))
    except (TFLiteImportError, TFLiteExportError, DiagnosticException, SemanticsError,
            PipelineError, OutputPathError, ExecutionError) as e:
        fail(str(e))
    except BrokenPipeError:
        sys.exit(1)
    except OSError as e:
        fail(f"{e.filename}: {e.strerror}" if e.filename else str(e))


if __name__ == "__main__":
    main()
