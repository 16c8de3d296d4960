"""qaccel's pass manager: parse pass pipelines, expand named pipelines, run passes with
instrumentation (IR printing, timing, semantic verification).

A *named pipeline* is a `ModulePass` whose `apply` runs a documented list of other passes;
its options pass through to the options of the passes inside:

    @dataclass(frozen=True)
    class MyPipeline(NamedPipeline):
        '''One line summary.

        Runs: `a`, `b{x=...}`.
        '''
        name = "my-pipeline"
        x: int | None = None            # None: `b`'s own default

        def expansion(self):
            return ["a", pass_spec("b", x=self.x)]

Drivers expand named pipelines *before* running (`expand`), so every instrumentation sees
the inner passes, not one opaque pass:

    scheduled = expand(parse_passes("vta-pipeline{max-partitions=4},cse"))
    PassManager(scheduled.passes, [IRPrinter(after_all=True)]).run(ctx, module)

An entry of an expansion that names a pass nobody has registered yet is skipped (and listed in
`Expansion.skipped`, which the drivers print as a note), so a pipeline can name the passes
planned for a flow before they exist; but a pipeline option whose value would reach such a
pass is an error, never silently ignored. A registered pass that fails to load is an error.
"""

from __future__ import annotations

import dataclasses
import inspect
import re
import sys
import time
import types
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import zip_longest
from typing import IO, TYPE_CHECKING, Any, Literal, Union, get_args, get_origin, get_type_hints

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Block, Operation, SSAValue
from xdsl.passes import ModulePass, PassPipeline
from xdsl.printer import Printer
from xdsl.universe import Universe
from xdsl.utils.arg_spec import ArgSpec, parse_pipeline
from xdsl.utils.exceptions import DiagnosticException
from xdsl.utils.hints import type_repr

from qaccel.dialects import qaccel_context  # noqa: F401  (re-exported for the tools)
from qaccel.dialects.annotations import verify_annotations

if TYPE_CHECKING:
    import numpy as np

PassFactories = Mapping[str, Callable[[], type[ModulePass]]]


class PipelineError(ValueError):
    """An unknown pass, a pass that cannot be loaded, or a bad pass option, as one line."""


class PassVerificationError(DiagnosticException):
    """The IR does not verify after a pass (the pass is named in the message)."""


class SemanticsError(Exception):
    """`--verify-semantics` found a pass that changed what the module computes."""


def available_passes() -> PassFactories:
    """Every registered pass of the multiverse (qaccel's and xDSL's), by name."""
    return Universe.get_multiverse().all_passes


# --------------------------------------------------------------------------------------------
# Pass specs


def pass_spec(pass_name: str, **options: Any) -> ArgSpec:
    """`ArgSpec` of `pass_name` with `options` (Python names); options that are None are left
    out, so the pass uses its own default: `pass_spec("p", max_partitions=None)` is `p`."""
    parameters: dict[str, tuple[Any, ...]] = {}
    for key, value in options.items():
        if value is None:
            continue
        parameters[key.replace("_", "-")] = (
            tuple(value) if isinstance(value, tuple | list) else (value,)
        )
    return ArgSpec(pass_name, parameters)


_BARE_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")  # what the pipeline lexer reads as a word


def _format_value(value: Any) -> str:
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, str):
        if _BARE_WORD.fullmatch(value) and value not in ("true", "false"):
            return value
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return str(value)


def format_spec(spec: ArgSpec) -> str:
    """`name{key=value other=1,2}` as a user would type it (kebab-case keys, bare words)."""
    if not spec.parameters:
        return spec.name
    items = []
    for key, values in spec.parameters.items():
        key = key.replace("_", "-")
        items.append(f"{key}={','.join(_format_value(v) for v in values)}" if values else key)
    return f"{spec.name}{{{' '.join(items)}}}"


def describe_pass(p: ModulePass) -> str:
    """How diagnostics and dumps name a pass instance: its spec without default options."""
    return format_spec(p.spec())


# --------------------------------------------------------------------------------------------
# Parsing and named pipelines


def load_pass(name: str, available: PassFactories) -> type[ModulePass]:
    """The class of the registered pass `name`, or a one-line PipelineError."""
    try:
        return available[name]()
    except Exception as e:  # a registered pass whose module is missing or broken
        raise PipelineError(
            f"pass '{name}' is registered but cannot be loaded: {type(e).__name__}: {e}"
        ) from None


def _literal_choices(hint: Any) -> tuple[Any, ...] | None:
    """The allowed values of a `Literal[...]` (or `Literal[...] | None`) option type."""
    if get_origin(hint) is Literal:
        return get_args(hint)
    if get_origin(hint) in (Union, types.UnionType):
        for arg in get_args(hint):
            if get_origin(arg) is Literal:
                return get_args(arg)
    return None


def _check_literal_options(cls: type[ModulePass], spec: ArgSpec) -> None:
    """A one-line error naming the option for a value outside a `Literal[...]` option's
    words (xDSL's own message names neither the option nor the words)."""
    try:
        hints = get_type_hints(cls)
    except Exception:  # noqa: BLE001 - unresolvable hints: leave the check to xDSL
        return
    for key, values in spec.parameters.items():
        choices = _literal_choices(hints.get(key.replace("-", "_")))
        if choices is None:
            continue
        for value in values:
            if value not in choices:
                raise PipelineError(
                    f"{spec.name}: {key} must be one of {', '.join(map(str, choices))}, "
                    f"got '{value}'"
                )


def _option_names(cls: type[ModulePass]) -> list[str]:
    """The pass's options as a pipeline spells them (kebab-case)."""
    if not dataclasses.is_dataclass(cls):
        return []
    fields = sorted((f for f in dataclasses.fields(cls) if f.init and f.name != "name"),
                    key=lambda f: f.kw_only)  # a pass's own options, then inherited ones  # fmt: skip
    return [f.name.replace("_", "-") for f in fields]


def _kebab_case(message: str, cls: type[ModulePass]) -> str:
    """xDSL's option errors name options by their Python fields (`max_partitions`): spell them
    as pipelines and the docs do."""
    for option in _option_names(cls):
        if "-" in option:
            message = re.sub(rf"\b{re.escape(option.replace('-', '_'))}\b", option, message)
    return message


def instantiate(spec: ArgSpec, available: PassFactories) -> ModulePass:
    cls = load_pass(spec.name, available)
    known = _option_names(cls)
    unknown = [k for k in spec.parameters if k.replace("_", "-") not in known]
    if unknown and known:
        raise PipelineError(
            f"bad options for pass '{spec.name}': unknown option(s) "
            f"{', '.join(k.replace('_', '-') for k in unknown)} (its options: {', '.join(known)})"
        )
    _check_literal_options(cls, spec)
    try:
        return cls.from_spec(spec)
    except ValueError as e:
        raise PipelineError(f"bad options for pass '{spec.name}': {_kebab_case(str(e), cls)}") from None


def parse_passes(spec: str, available: PassFactories | None = None) -> list[ModulePass]:
    """The passes of a textual pipeline (`a,b{x=1}`), named pipelines not yet expanded.

    Raises PipelineError (unknown pass, pass that cannot load, bad option) or xDSL's
    ArgSpecParseError (syntax)."""
    available = available_passes() if available is None else available
    if spec.strip().endswith(","):
        raise PipelineError(f"invalid pass pipeline '{spec}': a pass name must follow the last ','")
    specs = list(parse_pipeline(spec))
    unknown = [s.name for s in specs if s.name not in available]
    if unknown:
        raise PipelineError(f"Unrecognized passes: {unknown}")
    return [instantiate(s, available) for s in specs]


@dataclass(frozen=True)
class NamedPipeline(ModulePass):
    """A pass that runs a list of passes (see the module docstring).

    Subclasses are frozen dataclasses with a kebab-case `name`, typed options (usually
    `T | None = None`, None meaning "the inner pass's default") and a docstring that lists the
    passes; they override `expansion`.
    """

    start_after: str | None = field(default=None, kw_only=True)
    """Run only the passes after this one (a pass or named pipeline the pipeline lists), e.g.
    to continue a module that stopped there."""

    stop_after: str | None = field(default=None, kw_only=True)
    """Run the passes up to and including this one, then stop (e.g. `stop-after=partition-graph`
    to change the partitioned module before the rest of the flow)."""

    def expansion(self) -> Sequence[str | ArgSpec | ModulePass]:
        """The passes to run, in order: textual specs (`"cse"`, `"a{x=1},b"`), `ArgSpec`s
        (see `pass_spec`) or pass instances. Entries may be named pipelines themselves."""
        raise NotImplementedError

    def selected(self, entries: list[ArgSpec | ModulePass]) -> list[ArgSpec | ModulePass]:
        """`entries` (the flattened expansion) cut by `start-after` and `stop-after`."""
        names = [e.name for e in entries]
        first, last = 0, len(entries)
        for option, value in (("start-after", self.start_after), ("stop-after", self.stop_after)):
            if value is None:
                continue
            if value not in names:
                raise PipelineError(f"{self.name}: {option}={value}: no pass '{value}' in the "
                                    f"pipeline (it runs: {', '.join(names)})")  # fmt: skip
            if option == "start-after":
                first = names.index(value) + 1
            else:
                last = names.index(value) + 1
        return entries[first:last]

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        # Run as one opaque pass (e.g. from plain xdsl-opt); qaccel's drivers expand instead.
        for scheduled in expand([self]).passes:
            scheduled.pass_.apply(ctx, op)


@dataclass(frozen=True)
class PipelineFrame:
    """One expansion of a named pipeline (`index` tells two runs of the same one apart)."""

    name: str
    index: int


@dataclass(frozen=True)
class ScheduledPass:
    """A pass to run, with the named pipelines it came from (outermost first)."""

    pass_: ModulePass
    pipelines: tuple[PipelineFrame, ...] = ()

    @property
    def name(self) -> str:
        return self.pass_.name

    @property
    def label(self) -> str:
        """`partition-graph{target=vta} (vta-pipeline)`: the pass as IR dumps name it."""
        text = describe_pass(self.pass_)
        if self.pipelines:
            text += f" ({' > '.join(f.name for f in self.pipelines)})"
        return text

    @property
    def quoted(self) -> str:
        """`'partition-graph{target=vta}' (in vta-pipeline)`: the pass as diagnostics name it."""
        text = f"'{describe_pass(self.pass_)}'"
        if self.pipelines:
            text += f" (in {' > '.join(f.name for f in self.pipelines)})"
        return text


@dataclass
class Expansion:
    passes: list[ScheduledPass] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)
    """(pipeline, pass) for every entry naming a pass that is not registered."""

    def notes(self) -> list[str]:
        """One line per pipeline that skipped passes, for the user."""
        by_pipeline: dict[str, list[str]] = {}
        for pipeline, pass_name in self.skipped:
            names = by_pipeline.setdefault(pipeline, [])
            if pass_name not in names:
                names.append(pass_name)
        return [
            f"{p}: skipping passes that are not registered yet: {', '.join(n)}"
            for p, n in by_pipeline.items()
        ]


_MAX_PIPELINE_DEPTH = 16


def _entry_specs(entry: str | ArgSpec | ModulePass) -> list[ArgSpec | ModulePass]:
    if isinstance(entry, str):
        return list(parse_pipeline(entry))
    return [entry]


def _default_specs(pipeline: NamedPipeline) -> dict[str, ArgSpec]:
    """The inner specs of `pipeline` with default options, by pass name (first occurrence)."""
    try:
        default = type(pipeline)()
    except TypeError:  # the pipeline has required options: no default to compare with
        return {}
    specs: dict[str, ArgSpec] = {}
    for entry in default.expansion():
        for s in _entry_specs(entry):
            if isinstance(s, ArgSpec):
                specs.setdefault(s.name, s)
    return specs


def expand(passes: Sequence[ModulePass], available: PassFactories | None = None) -> Expansion:
    """Flatten named pipelines (recursively) into the passes that actually run."""
    available = available_passes() if available is None else available
    result = Expansion()
    counter = [0]

    def visit(p: ModulePass, frames: tuple[PipelineFrame, ...]) -> None:
        if not isinstance(p, NamedPipeline):
            result.passes.append(ScheduledPass(p, frames))
            return
        if len(frames) >= _MAX_PIPELINE_DEPTH:
            chain = " > ".join(f.name for f in frames)
            raise PipelineError(f"named pipelines nest too deeply (a cycle?): {chain}")
        counter[0] += 1
        inner_frames = (*frames, PipelineFrame(p.name, counter[0]))
        defaults: dict[str, ArgSpec] | None = None
        try:
            entries = [s for e in p.expansion() for s in _entry_specs(e)]
        except ValueError as e:
            raise PipelineError(f"{p.name}: bad expansion: {e}") from None
        entries = p.selected(entries)
        for s in entries:
            if isinstance(s, ModulePass):
                visit(s, inner_frames)
            elif s.name in available:
                try:
                    inner = instantiate(s, available)
                except PipelineError as e:
                    raise PipelineError(f"{describe_pass(p)}: {e}") from None
                visit(inner, inner_frames)
            else:
                if defaults is None:
                    defaults = _default_specs(p)
                default = defaults.get(s.name)
                passed = {
                    k: v for k, v in s.parameters.items()
                    if default is None or default.parameters.get(k) != v
                }  # fmt: skip
                if passed:
                    options = format_spec(ArgSpec("", passed))[1:-1]
                    raise PipelineError(
                        f"{describe_pass(p)}: cannot pass {options} to pass '{s.name}': "
                        "no such pass is registered yet"
                    )
                result.skipped.append((p.name, s.name))

    for p in passes:
        visit(p, ())
    return result


PipelineLike = Union[str, ModulePass, Sequence[Union[str, ModulePass]]]
"""A pipeline as the API takes it: its text (`"a,b{x=1}"`), a pass instance, or a list of
either (a researcher's own pass needs no registration)."""


def pipeline_passes(pipeline: PipelineLike, available: PassFactories | None = None) -> list[ModulePass]:
    """The passes of a pipeline given as text, a pass instance or a list of them, named
    pipelines not yet expanded. Raises PipelineError (also for a value of another type)."""
    if isinstance(pipeline, str):
        return parse_passes(pipeline, available) if pipeline.strip() else []
    if isinstance(pipeline, ModulePass):
        return [pipeline]
    if isinstance(pipeline, type) and issubclass(pipeline, ModulePass):
        raise PipelineError(f"pipeline: {pipeline.__name__} is a pass class; give an instance, "
                            f"{pipeline.__name__}(...)")  # fmt: skip
    if isinstance(pipeline, Sequence):
        passes: list[ModulePass] = []
        for entry in pipeline:
            if not isinstance(entry, str | ModulePass):
                raise PipelineError(f"pipeline: an entry is a {type(entry).__name__}, not a "
                                    "pass name or spec (str) or a ModulePass instance")  # fmt: skip
            passes.extend(pipeline_passes(entry, available))
        return passes
    raise PipelineError(f"pipeline: a {type(pipeline).__name__}, not a pass name or spec (str), "
                        "a ModulePass instance or a list of them")  # fmt: skip


def build_pipeline(spec: str, available: PassFactories | None = None) -> PassPipeline:
    """`PassPipeline` for a spec such as `legalize-tfl-to-q,annotate-target{target=vta}`, with
    named pipelines expanded into their passes."""
    scheduled = expand(parse_passes(spec, available), available)
    return PassPipeline(tuple(s.pass_ for s in scheduled.passes))


# --------------------------------------------------------------------------------------------
# Running passes


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
    when it does not verify) and calls the instrumentations."""

    def __init__(
        self,
        passes: Sequence[ScheduledPass],
        instrumentations: Sequence[PassInstrumentation] = (),
        verify: bool = True,
        timing: PassTiming | None = None,
    ):
        self.passes = list(passes)
        self.instrumentations = list(instrumentations)
        self.verify = verify
        self.timing = timing

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
        if self.verify:
            self._timed("verifier", "Verifier", lambda: verify_ir(module))  # the input's errors are its own
        self._instrument(lambda inst: inst.run_before_pipeline(module, self.passes))
        for index, scheduled in enumerate(self.passes):
            start = time.perf_counter()
            scheduled.pass_.apply(ctx, module)
            if self.timing is not None:
                self.timing.add_pass(index, scheduled, time.perf_counter() - start)
            if self.verify:
                self._timed("verifier", "Verifier", lambda: self._verify_after(scheduled, module))
            self._instrument(lambda inst: inst.run_after_pass(index, scheduled, module))

    @staticmethod
    def _verify_after(scheduled: ScheduledPass, module: ModuleOp) -> None:
        try:
            verify_ir(module)
        except DiagnosticException as e:
            first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
            raise PassVerificationError(
                f"IR after pass {scheduled.quoted} does not verify: {first}"
            ) from e


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


# --------------------------------------------------------------------------------------------
# --verify-semantics


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


# --------------------------------------------------------------------------------------------
# Describing passes (`--list-passes`, docs/passes.md)


@dataclass(frozen=True)
class OptionInfo:
    name: str  # kebab-case, as typed in a pipeline
    type: str
    default: str | None  # None: required
    doc: str = ""


@dataclass(frozen=True)
class PassInfo:
    name: str
    summary: str = ""
    doc: str = ""
    options: tuple[OptionInfo, ...] = ()
    expansion: tuple[str, ...] | None = None  # named pipelines: inner specs, default options
    error: str | None = None  # why the pass cannot be loaded

    @property
    def is_pipeline(self) -> bool:
        return self.expansion is not None


def pass_doc(cls: type) -> str:
    """The class's own docstring, cleaned; '' if it has none (dataclasses invent one)."""
    doc = cls.__dict__.get("__doc__") or ""
    if doc.startswith(cls.__name__ + "("):
        return ""
    return inspect.cleandoc(doc)


def summary_of(doc: str) -> str:
    """The first paragraph of a docstring, as one line."""
    paragraph = doc.strip().split("\n\n", 1)[0]
    return " ".join(line.strip() for line in paragraph.splitlines())


def _attribute_docs(cls: type) -> dict[str, str]:
    """Docstrings written under dataclass fields (xDSL's convention), by field name."""
    import ast
    import textwrap

    docs: dict[str, str] = {}
    for klass in reversed(cls.__mro__):
        if klass in (object, ModulePass) or not dataclasses.is_dataclass(klass):
            continue
        try:
            tree = ast.parse(textwrap.dedent(inspect.getsource(klass)))
        except (OSError, TypeError, SyntaxError):
            continue
        body = tree.body[0].body if tree.body and isinstance(tree.body[0], ast.ClassDef) else []
        for stmt, following in zip(body, body[1:]):
            if (
                isinstance(stmt, ast.AnnAssign)
                and isinstance(stmt.target, ast.Name)
                and isinstance(following, ast.Expr)
                and isinstance(following.value, ast.Constant)
                and isinstance(following.value.value, str)
            ):
                docs[stmt.target.id] = " ".join(inspect.cleandoc(following.value.value).split())
    return docs


def _default_text(f: dataclasses.Field[Any]) -> str | None:
    if f.default is not dataclasses.MISSING:
        value = f.default
    elif f.default_factory is not dataclasses.MISSING:
        value = f.default_factory()
    else:
        return None
    if value is None:
        return "none"
    if isinstance(value, tuple):
        return ",".join(_format_value(v) for v in value) if value else "(empty)"
    return _format_value(value)


def _option_type_text(hint: Any) -> str:
    """`int | None`; a `Literal[...]` option as its words, `alu|preload` (`| None`)."""
    choices = _literal_choices(hint)
    if choices is not None:
        words = "|".join(map(str, choices))
        optional = get_origin(hint) is not Literal and type(None) in get_args(hint)
        return f"{words} | None" if optional else words
    return type_repr(hint).replace("|", " | ").replace("typing.", "")


def option_infos(cls: type[ModulePass], with_docs: bool = True) -> tuple[OptionInfo, ...]:
    try:
        hints = get_type_hints(cls)
    except Exception:
        hints = {}
    docs = _attribute_docs(cls) if with_docs else {}
    ordered = sorted((f for f in dataclasses.fields(cls) if f.init and f.name != "name"),
                     key=lambda f: f.kw_only)  # a pass's own options first  # fmt: skip
    return tuple(
        OptionInfo(
            f.name.replace("_", "-"),
            _option_type_text(hints.get(f.name, f.type)),
            _default_text(f),
            docs.get(f.name, ""),
        )
        for f in ordered
    )


def pipeline_expansion(cls: type[NamedPipeline], available: PassFactories) -> tuple[str, ...]:
    """The inner passes of a named pipeline with default options; passes not registered yet
    are marked `(not registered yet)`."""
    entries: list[str] = []
    for entry in cls().expansion():
        for s in _entry_specs(entry):
            if isinstance(s, ModulePass):
                entries.append(describe_pass(s))
            else:
                text = format_spec(s)
                entries.append(text if s.name in available else f"{text} (not registered yet)")
    return tuple(entries)


def pass_info(name: str, available: PassFactories, with_option_docs: bool = True) -> PassInfo:
    """Everything `--list-passes` and docs/passes.md say about a registered pass; never
    raises (a pass that cannot load is described by `error`)."""
    try:
        cls = load_pass(name, available)
    except PipelineError as e:
        return PassInfo(name, error=str(e).split(": ", 1)[1])
    doc = pass_doc(cls)
    try:
        options = option_infos(cls, with_option_docs)
        expansion = (
            pipeline_expansion(cls, available) if issubclass(cls, NamedPipeline) else None
        )
    except Exception as e:
        return PassInfo(name, summary_of(doc), doc, error=f"{type(e).__name__}: {e}")
    return PassInfo(name, summary_of(doc), doc, options, expansion)


def qaccel_pass_names() -> set[str]:
    """Names of the passes and pipelines registered by qaccel itself."""
    from qaccel.pipeline.registry import get_all_passes

    return set(get_all_passes())
