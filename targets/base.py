"""Accelerator targets: the one place that knows what a piece of hardware can run.

Passes stay generic (`annotate-target`, `partition-graph`); everything they need to know about
a machine comes from its `Target`:

- `name`: what `annotate-target{target=NAME}` selects; accelerator functions are named
  `@NAME_fn_<k>` and carry `qaccel.target = "NAME"`;
- `config`: the hardware description (for `vta`, a `targets.vta.config.HardwareConfig`:
  block sizes and buffer sizes) and `features`: which ALU operations exist;
- `patterns`: a priority-ordered table of DAG `Pattern`s over q ops, each with `Check`s on
  shapes, dtypes, strides, constants and buffer capacity, and an optional partition index;
- `region_check`: an optional policy that refuses a whole partition (e.g. one without GEMM
  work);
- `host_step_cost`: an optional cost model for the ops the target runs as host steps of its
  programs: each is priced inside its partition against the CPU plus the hop a partition
  boundary costs, and `partition-graph` takes the cheaper choice (`--explain-partitioning`
  prints both).

A pattern is written as a term, root first; `?` marks an optional op (when absent, its first
operand's producer takes its place) and `_` an operand position the pattern does not
constrain:

    q.relu?(q.requantize(q.bias_add?(q.conv2d)))      # conv + (bias) + requantize + (clamp)
    q.relu?(q.add)                                    # element-wise add (+ clamp)

Matching follows the table's order; within a pattern, variants with more ops come first, and
roots are tried from the end of the function, so each group is as large as it can be. Ops
inside a group other than its root must be used only inside the group (their int32
accumulators never leave the accelerator). A match whose checks fail is not taken; every
failed check says why with the values involved, and `annotate-target` / `partition-graph`
report it for each op left on the CPU.

## What a pattern sees

Patterns match `q` ops (`dialects/q.py`; `legalize-tfl-to-q` makes them from `tfl` ops), on
batch-first tensors with the channels last, and constants as `tfl.const` ops
(`constant_value(v)` gives their numpy array, `storage_dtype(v)` the stored integer type):

- `q.conv2d`: input NHWC int8, filter **OHWI** int8 `[out channels, KH, KW, in channels]`
  (grouped when the input has a multiple of the filter's input channels), result NHWC int32
  accumulators; zero points, strides, dilations and padding `[top, bottom, left, right]` are
  properties (`m["q.conv2d"].strides`);
- `q.depthwise_conv2d`: input NHWC int8, filter `[1, KH, KW, C x depth_multiplier]`, result
  NHWC int32;
- `q.dense`: input rows `[..., I]` int8, filter `[O, I]` int8, result `[..., O]` int32;
- `q.bias_add`: int32 accumulators plus an int32 bias `[C]` along the last axis;
- `q.requantize`: int32 to int8 (or int16/int32) with per-tensor or per-last-axis-channel
  multipliers and shifts (TFLite's `MultiplyByQuantizedMultiplier`), or a double-precision
  `scale`; `q.relu` clamps;
- the element-wise and window ops (`q.add`, `q.sub`, `q.mul`, `q.avg_pool2d`, `q.max_pool2d`,
  `q.mean`, `q.pad`, `q.concat`) work on NHWC int8 with their quantization as properties.

Ops a pattern does not name (`tfl.*`, opaque custom ops) stay on the CPU. The reference of
every `q` op is generated into `docs/targets.md` from the op definitions.

## Adding a target from another package

Build a `Target` (or a zero-argument callable returning one) and declare it under the entry
point group `qaccel.targets`; the entry point's name is the target's name:

    # pyproject.toml of package `acme_npu`
    [project.entry-points."qaccel.targets"]
    acme = "acme_npu.target:make_target"

    # acme_npu/target.py
    from qaccel.targets.base import Pattern, Target, check

    @check("channels")
    def _channels(m):
        c = m["q.conv2d"].output.type.get_shape()[-1]
        return None if c % 8 == 0 else f"{c} output channels: not a multiple of 8"

    def make_target():
        return Target("acme", patterns=(Pattern("conv", "q.requantize(q.conv2d)", (_channels,)),))

`register_target(name, factory)` does the same inside one process (notebooks, tests).
`get_target(name)` returns a target or raises `TargetError` naming the known ones.

## The target in the IR

`attach-target{target=NAME config=...}` puts `target_attr(target)`, an `#accel.target` holding
the name and the whole configuration (`config.to_dict()`), on the module; passes after it get
the `Target` back with `module_target(module)` (rebuilt with the target's `from_config`, which
checks the configuration) and never parse configuration files themselves.
"""

from __future__ import annotations

import re
from importlib import import_module
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np
from xdsl.dialects.builtin import ModuleOp, StringAttr, TensorType
from xdsl.ir import Block, BlockArgument, Operation, SSAValue

from qaccel.dialects.accel import MODULE_TARGET_ATTR, TargetAttr
from qaccel.dialects.names import location_name
from xdsl.traits import ConstantLike

ENTRY_POINT_GROUP = "qaccel.targets"


class TargetError(ValueError):
    """An unknown target, a malformed pattern or target definition (one line)."""


# --------------------------------------------------------------------------------------------
# Describing ops and values in messages


def describe_op(op: Operation) -> str:
    """`q.conv2d "tensor/name"`, or `q.conv2d %hint` when the op has no location name."""
    name = location_name(op)
    code = getattr(op, "custom_code", None)  # a custom op (tfl.opaque): its name too
    what = f"{op.name} {code.data}" if isinstance(code, StringAttr) else op.name
    if name is not None:
        return f'{what} "{name}"'
    hint = op.results[0].name_hint if op.results else None
    return f"{what} %{hint}" if hint else what


def describe_value(v: SSAValue) -> str:
    if isinstance(v, BlockArgument):
        return f"argument {v.index}" + (f" %{v.name_hint}" if v.name_hint else "")
    assert isinstance(v.owner, Operation)
    return describe_op(v.owner)


def shape_of(v: SSAValue) -> tuple[int, ...]:
    t = v.type
    return tuple(t.get_shape()) if isinstance(t, TensorType) else ()


def storage_dtype(v: SSAValue) -> np.dtype | None:
    from qaccel.dialects.types import tensor_dtype

    try:
        return tensor_dtype(v.type) if isinstance(v.type, TensorType) else None
    except ValueError:
        return None


def constant_value(v: SSAValue) -> np.ndarray | None:
    """The value of a `tfl.const` operand as a numpy array, else None."""
    owner = v.owner
    as_array = getattr(owner, "as_array", None)
    if isinstance(owner, Operation) and owner.has_trait(ConstantLike) and as_array is not None:
        return as_array()
    return None


def is_constant(v: SSAValue) -> bool:
    return isinstance(v.owner, Operation) and v.owner.has_trait(ConstantLike)


def tensor_bytes(v: SSAValue) -> int:
    dtype = storage_dtype(v)
    return int(np.prod(shape_of(v), dtype=np.int64)) * (dtype.itemsize if dtype else 0)


# --------------------------------------------------------------------------------------------
# Patterns


@dataclass(frozen=True)
class _Term:
    """One node of a pattern term: an op name, an optional flag, and sub-terms by operand."""

    op_name: str
    optional: bool = False
    children: tuple[tuple[int, _Term], ...] = ()

    def variants(self) -> list[_Term]:
        """Every concrete tree (no optional nodes), more ops first."""
        child_sets: list[list[tuple[int, _Term]]] = [[]]
        for index, child in self.children:
            child_sets = [s + [(index, v)] for s in child_sets for v in child.variants()]
        with_me = [_Term(self.op_name, False, tuple(s)) for s in child_sets]
        without = self.children[0][1].variants() if self.optional else []
        return sorted(with_me + without, key=lambda t: -t.size)

    @property
    def size(self) -> int:
        return 1 + sum(c.size for _, c in self.children)

    def op_names(self) -> set[str]:
        return {self.op_name}.union(*(c.op_names() for _, c in self.children))

    def __str__(self) -> str:
        args = []
        for index, child in self.children:
            args += ["_"] * (index - len(args)) + [str(child)]
        inner = f"({', '.join(args)})" if args else ""
        return f"{self.op_name}{'?' if self.optional else ''}{inner}"


_TOKEN = re.compile(r"\s*(?:(?P<name>[A-Za-z_][\w.]*)|(?P<punct>[()?,]))")


def parse_pattern(text: str) -> _Term:
    """Parse `q.relu?(q.requantize(q.bias_add?(q.conv2d)))`; TargetError when malformed."""
    tokens: list[str] = []
    pos = 0
    while pos < len(text.rstrip()):
        m = _TOKEN.match(text, pos)
        if m is None:
            bad = len(text) - len(text[pos:].lstrip())
            raise TargetError(f"pattern '{text}': unexpected '{text[bad]}' at offset {bad}")
        tokens.append(m.group("name") or m.group("punct"))
        pos = m.end()
    it = iter(tokens + ["<end>"])
    look = [next(it)]

    def take() -> str:
        tok = look[0]
        look[0] = next(it, "<end>")
        return tok

    def term() -> _Term | None:
        name = take()
        if name == "_":
            return None
        if not re.fullmatch(r"[A-Za-z_][\w.]*", name):
            raise TargetError(f"pattern '{text}': expected an op name, got '{name}'")
        optional = look[0] == "?"
        if optional:
            take()
        children: list[tuple[int, _Term]] = []
        if look[0] == "(":
            take()
            index = 0
            while True:
                child = term()
                if child is not None:
                    children.append((index, child))
                index += 1
                tok = take()
                if tok == ")":
                    break
                if tok != ",":
                    raise TargetError(f"pattern '{text}': expected ',' or ')', got '{tok}'")
        if optional and (not children or children[0][0] != 0 or len(children) != 1):
            raise TargetError(
                f"pattern '{text}': optional op {name}? needs exactly one sub-pattern, on its "
                "first operand (it takes its place when absent)"
            )
        return _Term(name, optional, tuple(children))

    root = term()
    if root is None or look[0] != "<end>":
        raise TargetError(f"pattern '{text}': expected one op term")
    return root


@dataclass(frozen=True)
class Check:
    """A named predicate on a `Match`: returns None when the hardware can run it, else the
    reason, with the values involved (`"padding 16 exceeds the 15 rows a LOAD pads"`)."""

    name: str
    fn: Callable[[Match], str | None]

    def __call__(self, match: Match) -> str | None:
        return self.fn(match)


def check(name: str) -> Callable[[Callable[[Match], str | None]], Check]:
    """Decorator: `@check("padding") def f(match) -> str | None`."""
    return lambda fn: Check(name, fn)


@dataclass(frozen=True)
class Pattern:
    """An entry of a target's pattern table.

    `dag` is a pattern term (see the module docstring). `checks` run in order on a structural
    match; all failures are reported. `partition_index` is LiteRT's way to keep groups apart:
    an int for every match, or a function of the match (None = 0); partitions never mix
    indices.
    """

    name: str
    dag: str
    checks: tuple[Check, ...] = ()
    partition_index: int | Callable[[Match], int | None] | None = None
    doc: str = ""

    @cached_property
    def term(self) -> _Term:
        return parse_pattern(self.dag)

    @cached_property
    def variants(self) -> tuple[_Term, ...]:
        return tuple(self.term.variants())

    def index_of(self, match: Match) -> int | None:
        if callable(self.partition_index):
            return self.partition_index(match)
        return self.partition_index


@dataclass(frozen=True)
class Match:
    """Ops matched by one variant of a pattern, in program order; `root` produces the
    group's result. `m["q.conv2d"]` is the first matched op of that name."""

    pattern: Pattern
    target: Target
    ops: tuple[Operation, ...]
    root: Operation

    def get(self, op_name: str) -> Operation | None:
        return next((op for op in self.ops if op.name == op_name), None)

    def __getitem__(self, op_name: str) -> Any:
        op = self.get(op_name)
        if op is None:
            raise KeyError(f"{self.pattern.name}: no {op_name} in this match")
        return op


@dataclass(frozen=True)
class Rejection:
    """Why a structural match was not taken: the pattern, the failed checks' names and
    reasons."""

    pattern: str
    failures: tuple[tuple[str, str], ...]

    def __str__(self) -> str:
        reasons = "; ".join(f"{msg} [{name}]" for name, msg in self.failures)
        return f"pattern {self.pattern} refused: {reasons}"


@dataclass
class MatchResult:
    groups: list[tuple[Match, int | None]] = field(default_factory=list)
    """Accepted matches with their partition index, in program order of their roots."""
    rejected: dict[Operation, Rejection] = field(default_factory=dict)
    """For ops in no accepted match: the first (highest-priority) refused match they were in."""


@dataclass(frozen=True)
class RegionSummary:
    """What `Target.region_check` sees of a candidate partition."""

    ops: tuple[Operation, ...]
    inputs: tuple[SSAValue, ...]
    outputs: tuple[SSAValue, ...]
    macs: int


@dataclass(frozen=True)
class HopSummary:
    """What `Target.host_step_cost` sees of one decision point of `partition-graph`: a group
    of a candidate partition that the target runs as a host step of the partition's program,
    and what its partition's boundary would become if the group ran on the CPU instead.

    `inputs`/`outputs` are the partition's boundary values with the group inside;
    `inputs_without`/`outputs_without` those of the partitions the other ops form without it
    (summed over them: `parts` partitions, 2 when the group sits between ops of the
    partition, i.e. reads what they compute and feeds them, which then split at its place
    in program order; 1 when it is at an edge)."""

    ops: tuple[Operation, ...]
    inputs: tuple[SSAValue, ...]
    outputs: tuple[SSAValue, ...]
    inputs_without: tuple[SSAValue, ...]
    outputs_without: tuple[SSAValue, ...]
    parts: int

    @property
    def interior(self) -> bool:
        return self.parts > 1


@dataclass(frozen=True)
class HostStepCost:
    """A target's price of both choices at one decision point, in accelerator cycles, each
    choice as named terms: `inside` the host step of the program, `outside` the op on the
    CPU plus the hop (packing, unpacking, DRAM transfers, launches) that running it there
    adds or saves (a term may be negative: a value that stops crossing)."""

    step: str
    """What the host step is (e.g. "a table lookup")."""
    inside: tuple[tuple[str, int], ...]
    outside: tuple[tuple[str, int], ...]

    @property
    def inside_cycles(self) -> int:
        return sum(c for _, c in self.inside)

    @property
    def outside_cycles(self) -> int:
        return sum(c for _, c in self.outside)

    @property
    def on_cpu(self) -> bool:
        """The cheaper choice; a tie keeps the op inside (fewer, larger partitions)."""
        return self.outside_cycles < self.inside_cycles


def _interior_escape(ops: Sequence[Operation], root: Operation) -> str | None:
    inside = set(ops)
    for op in ops:
        if op is root:
            continue
        for r in op.results:
            for use in r.uses:
                if use.operation not in inside:
                    return (
                        f"the result of {describe_op(op)} is also used by "
                        f"{describe_op(use.operation)} outside the group"
                    )
    return None


def _match_term(term: _Term, op: Operation, block: Block, out: list[Operation]) -> bool:
    if op.name != term.op_name or op.parent_block() is not block:
        return False
    out.append(op)
    for index, child in term.children:
        if index >= len(op.operands):
            return False
        owner = op.operands[index].owner
        if not isinstance(owner, Operation) or not _match_term(child, owner, block, out):
            return False
    return True


# --------------------------------------------------------------------------------------------
# Targets


@dataclass(frozen=True)
class Target:
    """An accelerator as the graph passes see it (see the module docstring)."""

    name: str
    patterns: tuple[Pattern, ...]
    config: Any = None
    features: frozenset[str] = frozenset()
    description: str = ""
    region_check: Callable[[RegionSummary], str | None] | None = None
    host_step_cost: Callable[[HopSummary], HostStepCost | None] | None = None
    """Prices a group the target runs as a host step of its program against running it on
    the CPU (`HopSummary`); None for a group the accelerator itself runs. `partition-graph`
    takes the cheaper choice at each such decision point."""
    configure: Callable[[str], Target] | None = None
    """Returns this target with the hardware configuration read from a file or named by a
    bundled configuration's name (`attach-target{config=...}`)."""
    from_config: Callable[[Mapping[str, Any]], Target] | None = None
    """Returns this target with the configuration given as a dictionary (`config.to_dict()`,
    as `#accel.target` holds it); raises ValueError naming a bad key or value."""

    def __post_init__(self):
        if not re.fullmatch(r"[A-Za-z_][\w-]*", self.name):
            raise TargetError(f"target name '{self.name}' must be an identifier")
        seen: set[str] = set()
        for p in self.patterns:
            if p.name in seen:
                raise TargetError(f"target {self.name}: two patterns named '{p.name}'")
            seen.add(p.name)
            _ = p.term  # parse now: a malformed table fails when the target is built

    @property
    def function_prefix(self) -> str:
        return re.sub(r"\W", "_", self.name) + "_fn_"

    def function_name(self, index: int) -> str:
        return f"{self.function_prefix}{index}"

    def patterns_using(self, op_name: str) -> list[str]:
        return [p.name for p in self.patterns if op_name in p.term.op_names()]

    def with_config(self, path: str) -> Target:
        if self.configure is None:
            raise TargetError(f"target {self.name} takes no hardware configuration file")
        return self.configure(path)

    def config_dict(self) -> dict[str, Any]:
        """The configuration as plain values (what `#accel.target` stores)."""
        to_dict = getattr(self.config, "to_dict", None)
        return dict(to_dict()) if to_dict is not None else {}

    def match(self, block: Block, claimed: Iterable[Operation] = ()) -> MatchResult:
        """Match the pattern table over the ops of `block`, leaving `claimed` ops alone."""
        taken = set(claimed)
        ops = list(block.ops)
        position = {op: i for i, op in enumerate(ops)}
        result = MatchResult()
        for pattern in self.patterns:
            for variant in pattern.variants:
                for op in reversed(ops):
                    if op in taken or op.name != variant.op_name:
                        continue
                    found: list[Operation] = []
                    if not _match_term(variant, op, block, found):
                        continue
                    group = sorted(set(found), key=position.__getitem__)
                    if any(o in taken for o in group):
                        continue
                    match = Match(pattern, self, tuple(group), op)
                    failures = []
                    escape = _interior_escape(group, op)
                    if escape is not None:
                        failures.append(("single-use", escape))
                    else:
                        for c in pattern.checks:
                            reason = c(match)
                            if reason is not None:
                                failures.append((c.name, reason))
                    if failures:
                        rejection = Rejection(pattern.name, tuple(failures))
                        for o in group:
                            result.rejected.setdefault(o, rejection)
                        continue
                    taken.update(group)
                    result.groups.append((match, pattern.index_of(match)))
        for o in [o for o in result.rejected if o in taken]:
            del result.rejected[o]  # a lower-priority pattern took it after all
        result.groups.sort(key=lambda g: position[g[0].root])
        return result

    def explain(self, op: Operation, result: MatchResult) -> str:
        """Why `op` is in no group of `result` (one line, no op name)."""
        rejection = result.rejected.get(op)
        if rejection is not None:
            return str(rejection)
        using = self.patterns_using(op.name)
        if using:
            return (
                f"no {self.name} pattern matches {op.name} here (patterns with {op.name}: "
                f"{', '.join(using)})"
            )
        code = getattr(op, "custom_code", None)
        if isinstance(code, StringAttr):
            if code.data == "QACCEL_VTA":
                return ("custom op QACCEL_VTA: an accelerator function compiled ahead of time "
                        "(its program is in the model), run by LiteRT's kernel for it "
                        "(libqaccel_litert); opaque to qaccel")  # fmt: skip
            if code.data == "DISPATCH_OP":
                return ("custom op DISPATCH_OP: a partition compiled ahead of time for an NPU "
                        "(its bytecode is in the model), run by LiteRT's dispatch library "
                        "(libLiteRtDispatch_Qaccel for qaccel's); opaque to qaccel")  # fmt: skip
            return f"custom op {code.data} is opaque to qaccel: it runs on the CPU"
        if not op.name.startswith("q."):
            return f"no {self.name} pattern for {op.name} (the accelerator runs q ops only)"
        return f"no {self.name} pattern for {op.name}"


# --------------------------------------------------------------------------------------------
# Registry


_REGISTERED: dict[str, Callable[[], Target]] = {}


def register_target(name: str, factory: Callable[[], Target] | Target) -> None:
    """Make a target available by name in this process (overrides entry points)."""
    _REGISTERED[name] = factory if callable(factory) else (lambda: factory)


# name -> (module, factory): built-in targets load the way plugins do, by name, when first used
_BUILTIN_TARGETS = {"vta": ("qaccel.targets.vta.target", "vta_target")}


def _builtin_targets() -> dict[str, Callable[[], Target]]:
    def loader(module: str, factory: str) -> Callable[[], Target]:
        return lambda: getattr(import_module(module), factory)()

    return {name: loader(*where) for name, where in _BUILTIN_TARGETS.items()}


def available_targets() -> dict[str, Callable[[], Target]]:
    """Every target by name: built-in, then `qaccel.targets` entry points, then registered."""
    from qaccel.kernels.entry_points import entry_points

    targets = _builtin_targets()
    for ep in entry_points(group=ENTRY_POINT_GROUP):

        def load(ep=ep) -> Target:
            try:
                obj = ep.load()
            except Exception as e:  # noqa: BLE001 - any failure of another package's code
                raise TargetError(
                    f"target {ep.name}: cannot load entry point '{ep.value}': {e}"
                ) from None
            if isinstance(obj, Target):
                return obj
            try:
                return obj()
            except Exception as e:  # noqa: BLE001 - the plugin's factory failed
                raise TargetError(
                    f"target {ep.name}: entry point '{ep.value}' ({ENTRY_POINT_GROUP}) raised "
                    f"{type(e).__name__}: {str(e).strip().splitlines()[0] if str(e).strip() else ''}"
                ) from None

        targets[ep.name] = load
    targets.update(_REGISTERED)
    return targets


def get_target(name: str, config: str | None = None) -> Target:
    """The target registered as `name` (optionally with a hardware configuration file)."""
    targets = available_targets()
    if name not in targets:
        raise TargetError(f"unknown target '{name}' (known: {', '.join(sorted(targets))})")
    target = targets[name]()
    if not isinstance(target, Target):
        raise TargetError(
            f"target {name}: the entry point gave {type(target).__name__}, not a Target"
        )
    if target.name != name:
        raise TargetError(f"target registered as '{name}' calls itself '{target.name}'")
    return target.with_config(config) if config else target


# --------------------------------------------------------------------------------------------
# The module's target (`#accel.target`)


def target_attr(target: Target) -> TargetAttr:
    """The `#accel.target` describing `target` and its whole configuration."""
    return TargetAttr(target.name, target.config_dict())


def target_from_attr(attr: TargetAttr) -> Target:
    """The `Target` an `#accel.target` describes; TargetError when the name is unknown or the
    target refuses the configuration (naming the key)."""
    target = get_target(attr.target_name)
    values = attr.config_values()
    if not values:
        return target
    if target.from_config is None:
        raise TargetError(f"target {target.name} takes no configuration, got {sorted(values)}")
    try:
        return target.from_config(values)
    except (TypeError, ValueError) as e:
        raise TargetError(f"#accel.target<\"{target.name}\">: {e}") from None


def module_target(module: ModuleOp, name: str | None = None) -> Target:
    """The target the module is compiled for (its `#accel.target`, from `attach-target`);
    TargetError (one line) when it has none, or, with `name`, when it is another target."""
    attr = module.attributes.get(MODULE_TARGET_ATTR)
    if attr is None:
        wanted = name or "NAME"
        raise TargetError(
            f"the module has no {MODULE_TARGET_ATTR}: run attach-target{{target={wanted}}} "
            "first (vta-pipeline does)"
        )
    if not isinstance(attr, TargetAttr):
        raise TargetError(f"the module's {MODULE_TARGET_ATTR} is not an #accel.target: {attr}")
    if name is not None and attr.target_name != name:
        raise TargetError(
            f"the module is compiled for target {attr.target_name}, not {name}"
        )
    return target_from_attr(attr)


def hardware_config(module: ModuleOp, name: str = "vta") -> Any:
    """The hardware configuration of the module's target `name` (for `vta`, a
    `HardwareConfig`); TargetError when the module has no such target."""
    return module_target(module, name).config


def resolve_target(module: ModuleOp, name: str = "") -> Target:
    """The target a pass's `target=NAME` option selects: the module's target when `name` is
    empty or names it, else target `name` in its default configuration (so several targets can
    annotate one module in turn)."""
    attr = module.attributes.get(MODULE_TARGET_ATTR)
    if not name or (isinstance(attr, TargetAttr) and attr.target_name == name):
        return module_target(module)
    return get_target(name)


__all__ = [
    "ENTRY_POINT_GROUP",
    "Check",
    "HopSummary",
    "HostStepCost",
    "Match",
    "MatchResult",
    "Pattern",
    "RegionSummary",
    "Rejection",
    "Target",
    "TargetError",
    "available_targets",
    "check",
    "describe_op",
    "get_target",
    "hardware_config",
    "module_target",
    "resolve_target",
    "target_attr",
    "target_from_attr",
    "parse_pattern",
    "register_target",
]  # fmt: skip
