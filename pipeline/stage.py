"""The stage of a module in the VTA flow, read from the IR alone.

    stage = module_stage(module)
    stage.last            # 'partition-graph': the last pass of vta-pipeline whose work is there
    stage.target          # 'vta' (the module's #accel.target) or None
    stage.remaining()     # ['insert-pack-unpack', 'lower-q-to-accel', ...]
    stage.describe()      # 'partitioned (target vta-default): next insert-pack-unpack'

Each pass of `vta-pipeline` leaves a mark in the IR, and a later pass never removes the marks
of an earlier one: `attach-target` the module's `#accel.target`, `legalize-tfl-to-q` `q` ops,
`annotate-target` the `qaccel.pattern` of op groups, `partition-graph` accelerator functions
(`qaccel.target` on a function), `insert-pack-unpack` the `accel.packed` functions and
`accel.pack`/`accel.unpack` ops, `lower-q-to-accel` the `accel` compute ops,
`form-vta-layers` `vta.layer` ops and `schedule-vta` their `#vta.<kind>_schedule`. The stage is the
last of these marks found; `qaccel-compile` and `api.compile` run the passes after it (so a
module changed by hand or by a researcher's own pass keeps its changes), and refuse an explicit
pipeline that would run a finished pass again.

A module in which the accelerator takes nothing has no mark past `annotate-target`; running
the remaining passes on it changes nothing.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp

from qaccel.dialects import accel, vta
from qaccel.dialects.accel import MODULE_TARGET_ATTR, PACKED_FUNCTION_ATTR
from qaccel.dialects.annotations import PATTERN_ATTR, TARGET_ATTR
from qaccel.pipeline.spec import PipelineError, format_spec, pass_spec

VTA_PASSES = (
    "attach-target",
    "fuse-composites",
    "legalize-tfl-to-q",
    "annotate-target",
    "partition-graph",
    "insert-pack-unpack",
    "lower-q-to-accel",
    "form-vta-layers",
    "schedule-vta",
)
"""The passes of `vta-pipeline`, in order (pipeline/named.py)."""

IDEMPOTENT = frozenset({"fuse-composites", "legalize-tfl-to-q"})
"""Passes that may run again on their own output without changing it."""

_STAGE_NAMES = {
    None: "imported",
    "legalize-tfl-to-q": "legalized",
    "annotate-target": "annotated",
    "partition-graph": "partitioned",
    "insert-pack-unpack": "packed",
    "lower-q-to-accel": "lowered",
    "form-vta-layers": "layers formed",
    "schedule-vta": "scheduled",
}


@dataclass(frozen=True)
class Stage:
    last: str | None
    """The last pass of `vta-pipeline` (after `attach-target`) whose mark is in the IR, or
    None (an imported `tfl` module)."""
    target: str | None
    """The name of the module's `#accel.target`, or None when none is attached."""
    config: str | None = None
    """The name of the target's hardware configuration (VTA), when one is attached."""

    @property
    def name(self) -> str:
        if self.last is None and self.target is not None:
            return "target attached"
        return _STAGE_NAMES[self.last]

    def done(self) -> tuple[str, ...]:
        """The passes of `vta-pipeline` whose work the module already has."""
        if self.last is None:
            finished: tuple[str, ...] = ()
        else:
            finished = VTA_PASSES[1 : VTA_PASSES.index(self.last) + 1]
        return (("attach-target",) if self.target else ()) + finished

    def remaining(self) -> list[str]:
        """The passes of `vta-pipeline` still to run, in order."""
        done = set(self.done())
        start = 0 if self.last is None else VTA_PASSES.index(self.last) + 1
        rest = [p for p in VTA_PASSES[start:] if p not in done]
        if self.target is None and "attach-target" not in rest:
            rest.insert(0, "attach-target")
        return rest

    def redone(self, passes: list[str]) -> list[str]:
        """Which of `passes` (names, in order) would redo finished work of this module (the
        idempotent cleanups `fuse-composites` and `legalize-tfl-to-q` never do)."""
        done = set(self.done()) - IDEMPOTENT
        return list(dict.fromkeys(p for p in passes if p in done))

    def describe(self) -> str:
        target = f"target {self.config or self.target}" if self.target else "no target"
        rest = self.remaining()
        following = f"next {rest[0]}" if rest else "every vta-pipeline pass has run"
        return f"{self.name} ({target}): {following}"


def _config_name(module: ModuleOp) -> str | None:
    attr = module.attributes.get(MODULE_TARGET_ATTR)
    if not isinstance(attr, accel.TargetAttr):
        return None
    try:
        name = attr.config_values().get("name")
    except Exception:  # noqa: BLE001 - a target of a plugin with another configuration
        return None
    return name if isinstance(name, str) else None


def module_stage(module: ModuleOp) -> Stage:
    """Where `module` is in `vta-pipeline` (see the module docstring)."""
    target_attr = module.attributes.get(MODULE_TARGET_ATTR)
    target = target_attr.target_name if isinstance(target_attr, accel.TargetAttr) else None
    marks: set[str] = set()
    scheduled = formed = 0
    for op in module.walk():
        if isinstance(op, vta.LayerOp):
            formed += 1
            scheduled += op.schedule is not None
        elif isinstance(op, func.FuncOp):
            if TARGET_ATTR in op.attributes:
                marks.add("partition-graph")
            if PACKED_FUNCTION_ATTR in op.attributes:
                marks.add("insert-pack-unpack")
        elif isinstance(op, accel.PackOp | accel.UnpackOp):
            marks.add("insert-pack-unpack")
        elif isinstance(op, accel.AccelOp):
            marks.add("lower-q-to-accel")
        elif op.name.startswith("q."):
            marks.add("legalize-tfl-to-q")
        if PATTERN_ATTR in op.attributes:
            marks.add("annotate-target")
    if formed:
        marks.add("form-vta-layers")
    if scheduled:
        marks.add("schedule-vta")
    last = next((p for p in reversed(VTA_PASSES) if p in marks), None)
    return Stage(last, target, _config_name(module) if target else None)




OPTION_PASSES = {
    "config": "attach-target",
    "max_partitions": "partition-graph",
    "bias_placement": "lower-q-to-accel",
}
"""The pass each `vta-pipeline` option goes to."""


def _check_same_config(module: ModuleOp, stage: Stage, config: str) -> None:
    """PipelineError unless the configuration `config` (a file or bundled name) has the
    content of the one the module was compiled for so far."""
    from qaccel.targets.vta.config import HardwareConfig

    attr = module.attributes[MODULE_TARGET_ATTR]
    assert isinstance(attr, accel.TargetAttr)
    have = {k: v for k, v in attr.config_values().items() if k != "name"}
    want = {k: v for k, v in HardwareConfig.from_json(config).to_dict().items() if k != "name"}
    differ = sorted(k for k in set(have) | set(want) if have.get(k) != want.get(k))
    if differ:
        raise PipelineError(
            f"the module already targets {stage.config or stage.target} (it is {stage.name}); "
            f"configuration '{config}' differs in {', '.join(differ)}: start from the model "
            "to compile it for another configuration"
        )


def continuation(module: ModuleOp, config: str | None = None, **options: object) -> str:
    """The pipeline that takes `module` from its stage (`module_stage`) to the end of
    `vta-pipeline`, as text ('' when every pass has run): `vta-pipeline{start-after=...}`,
    after `attach-target` when the module has no target yet. `config` (a file or bundled
    name) must match the module's target when it has one; an option whose pass has already
    run is refused (PipelineError), never silently dropped."""
    stage = module_stage(module)
    if config is not None and stage.target is not None:
        _check_same_config(module, stage, config)
        config = None
    for key, value in options.items():
        if key not in OPTION_PASSES:
            raise PipelineError(f"vta-pipeline has no option {key.replace('_', '-')} "
                                f"(its options: {', '.join(k.replace('_', '-') for k in OPTION_PASSES)})")  # fmt: skip
        if value is not None and OPTION_PASSES[key] in stage.done():
            raise PipelineError(f"{key.replace('_', '-')} goes to {OPTION_PASSES[key]}, which has "
                                f"already run on this module ({stage.describe()})")  # fmt: skip
    if not stage.remaining():
        return ""
    if stage.target is None and stage.last is None:
        return format_spec(pass_spec("vta-pipeline", config=config, **options))
    start = stage.last or "attach-target"
    spec = format_spec(pass_spec("vta-pipeline", start_after=start, **options))
    if stage.target is None:
        spec = format_spec(pass_spec("attach-target", target="vta", config=config)) + "," + spec
    return spec


def check_no_redo(module: ModuleOp, passes: list[str], what: str) -> None:
    """PipelineError when the passes named `passes` (the expanded pipeline `what`) would run
    a finished pass of `vta-pipeline` again on `module` (e.g. re-partition a module a
    researcher changed after `partition-graph`)."""
    stage = module_stage(module)
    redone = stage.redone(passes)
    if redone:
        raise PipelineError(
            f"{what} would run {', '.join(redone)} again on a module that is already "
            f"{stage.name}; leave the pipeline out to continue from there "
            f"({', '.join(stage.remaining()) or 'nothing left to run'})"
        )


__all__ = ["IDEMPOTENT", "Stage", "VTA_PASSES", "check_no_redo", "continuation", "module_stage"]
