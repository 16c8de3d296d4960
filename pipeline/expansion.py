"""Named pipelines and their expansion into the passes that run.

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

Every entry of an expansion must name a registered pass: an unknown one is an error naming
the pipeline, as is a registered pass that fails to load or a bad option.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass, PassPipeline
from xdsl.utils.arg_spec import ArgSpec, parse_pipeline

from qaccel.pipeline.spec import (
    PassFactories,
    PipelineError,
    available_passes,
    describe_pass,
    instantiate,
    parse_passes,
)


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


_MAX_PIPELINE_DEPTH = 16


def _entry_specs(entry: str | ArgSpec | ModulePass) -> list[ArgSpec | ModulePass]:
    if isinstance(entry, str):
        return list(parse_pipeline(entry))
    return [entry]


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
        try:
            entries = [s for e in p.expansion() for s in _entry_specs(e)]
        except ValueError as e:
            raise PipelineError(f"{p.name}: bad expansion: {e}") from None
        entries = p.selected(entries)
        for s in entries:
            if isinstance(s, ModulePass):
                visit(s, inner_frames)
                continue
            if s.name not in available:
                raise PipelineError(f"{describe_pass(p)}: unknown pass '{s.name}' in the "
                                    "pipeline (no pass of that name is registered)")  # fmt: skip
            try:
                inner = instantiate(s, available)
            except PipelineError as e:
                raise PipelineError(f"{describe_pass(p)}: {e}") from None
            visit(inner, inner_frames)

    for p in passes:
        visit(p, ())
    return result


def build_pipeline(spec: str, available: PassFactories | None = None) -> PassPipeline:
    """`PassPipeline` for a spec such as `legalize-tfl-to-q,annotate-target{target=vta}`, with
    named pipelines expanded into their passes."""
    scheduled = expand(parse_passes(spec, available), available)
    return PassPipeline(tuple(s.pass_ for s in scheduled.passes))
