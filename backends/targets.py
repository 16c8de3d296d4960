"""Accelerator targets: the one place that knows what a piece of hardware can run.

Passes stay generic (`annotate-target`, `partition-graph`); everything they need to know about
a machine comes from its `Target`:

- `name`: what `annotate-target{target=NAME}` selects; accelerator functions are named
  `@NAME_fn_<k>` and carry `qaccel.target = "NAME"`;
- `config`: the hardware description (for `vta`, a `backends.vta.config.HardwareConfig`:
  block sizes and buffer sizes) and `features`: which ALU operations exist;
- `patterns`: a priority-ordered table of DAG `Pattern`s over q ops, each with `Check`s on
  shapes, dtypes, strides, constants and buffer capacity, and an optional partition index;
- `region_check`: an optional policy that refuses a whole partition (e.g. one without GEMM
  work).

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

## Adding a target from another package

Build a `Target` (or a zero-argument callable returning one) and declare it under the entry
point group `qaccel.targets`; the entry point's name is the target's name:

    # pyproject.toml of package `acme_npu`
    [project.entry-points."qaccel.targets"]
    acme = "acme_npu.target:make_target"

    # acme_npu/target.py
    from qaccel.backends.targets import Pattern, Target, check

    @check("channels")
    def _channels(m):
        c = m["q.conv2d"].output.type.get_shape()[-1]
        return None if c % 8 == 0 else f"{c} output channels: not a multiple of 8"

    def make_target():
        return Target("acme", patterns=(Pattern("conv", "q.requantize(q.conv2d)", (_channels,)),))

`register_target(name, factory)` does the same inside one process (notebooks, tests).
`get_target(name)` returns a target or raises `TargetError` naming the known ones.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np
from xdsl.dialects.builtin import TensorType
from xdsl.ir import Block, BlockArgument, Operation, SSAValue

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
    if name is not None:
        return f'{op.name} "{name}"'
    hint = op.results[0].name_hint if op.results else None
    return f"{op.name} %{hint}" if hint else op.name


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
    configure: Callable[[str], Target] | None = None
    """Returns this target with the hardware configuration read from a file (`hw-config`)."""

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
        if not op.name.startswith("q."):
            return f"no {self.name} pattern for {op.name} (the accelerator runs q ops only)"
        return f"no {self.name} pattern for {op.name}"


# --------------------------------------------------------------------------------------------
# Registry


_REGISTERED: dict[str, Callable[[], Target]] = {}


def register_target(name: str, factory: Callable[[], Target] | Target) -> None:
    """Make a target available by name in this process (overrides entry points)."""
    _REGISTERED[name] = factory if callable(factory) else (lambda: factory)


def _builtin_targets() -> dict[str, Callable[[], Target]]:
    return {"vta": lambda: vta_target()}


def available_targets() -> dict[str, Callable[[], Target]]:
    """Every target by name: built-in, then `qaccel.targets` entry points, then registered."""
    from importlib.metadata import entry_points

    targets = _builtin_targets()
    for ep in entry_points(group=ENTRY_POINT_GROUP):

        def load(ep=ep) -> Target:
            try:
                obj = ep.load()
            except Exception as e:  # noqa: BLE001 - any failure of another package's code
                raise TargetError(
                    f"target {ep.name}: cannot load entry point '{ep.value}': {e}"
                ) from None
            return obj if isinstance(obj, Target) else obj()

        targets[ep.name] = load
    targets.update(_REGISTERED)
    return targets


def get_target(name: str, hw_config: str | None = None) -> Target:
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
    return target.with_config(hw_config) if hw_config else target


# --------------------------------------------------------------------------------------------
# The built-in `vta` target


def _ints(op: Operation, name: str) -> list[int]:
    return [int(v) for v in op.array_prop(name)]  # type: ignore[attr-defined]


def _int(op: Operation, name: str) -> int:
    return op.int_prop(name)  # type: ignore[attr-defined]


def _dtype_name(dtype: np.dtype | None) -> str:
    return "non-tensor" if dtype is None else str(np.dtype(dtype))


_OPERAND_NAMES = {
    "q.conv2d": ("input", "filter"),
    "q.depthwise_conv2d": ("input", "filter"),
    "q.dense": ("input", "filter"),
    "q.bias_add": ("accumulators", "bias"),
}


@check("int8")
def _int8_operands(m: Match) -> str | None:
    """The GEMM core multiplies int8 by int8; loads and stores move int8 tensors."""
    inside = set(m.ops)
    for op in m.ops:
        for i, v in enumerate(op.operands):
            if v.owner in inside or (op.name == "q.bias_add" and i == 1):
                continue  # int32 accumulators inside the group; int32 biases
            dtype = storage_dtype(v)
            if dtype != np.int8:
                names = _OPERAND_NAMES.get(op.name, ())
                what = names[i] if i < len(names) else f"operand {i}"
                return (
                    f"{what} of {op.name} is {_dtype_name(dtype)}: the accelerator loads int8 only"
                )
    out = storage_dtype(m.root.results[0])
    if out != np.int8:
        return f"result of {m.root.name} is {_dtype_name(out)}: the accelerator stores int8 only"
    return None


def _tile(m: Match) -> str:
    return f"{m.target.config.block_out}x{m.target.config.block_in}"


@check("constant-weights")
def _constant_weights(m: Match) -> str | None:
    acc = m.ops[0]
    if not is_constant(acc.operands[1]):
        return (
            f"filter of {acc.name} is computed at run time ({describe_value(acc.operands[1])}): "
            f"weights are packed into {_tile(m)} tiles at compile time"
        )
    bias = m.get("q.bias_add")
    if bias is not None and not is_constant(bias.operands[1]):
        return (
            f"bias is computed at run time ({describe_value(bias.operands[1])}): the bias is "
            "fused with the zero-point term at compile time"
        )
    return None


@check("filter-zero-point")
def _filter_zero_point(m: Match) -> str | None:
    acc = m.ops[0]
    zp = _int(acc, "filter_zero_point")
    if zp == 0:
        return None
    w = constant_value(acc.operands[1])
    if w is None:
        return f"filter zero point {zp} with run-time weights"
    lo, hi = int(w.min()) - zp, int(w.max()) - zp
    if lo < -128 or hi > 127:
        return (
            f"filter zero point {zp}: weights minus zero point span [{lo}, {hi}], outside int8 "
            "(the GEMM core multiplies int8 weights; a non-zero point must fold into them)"
        )
    return None


def _pad_limit(config) -> int:
    from qaccel.backends.vta.isa import Opcode

    return (1 << config.layout.field(Opcode.LOAD, "y_pad_0").width) - 1


@check("padding")
def _conv_padding(m: Match) -> str | None:
    acc = m.ops[0]
    pads = _ints(acc, "padding")
    limit = _pad_limit(m.target.config)
    if max(pads) > limit:
        return (
            f"padding {pads} (top, bottom, left, right) exceeds the {limit} rows/columns a LOAD "
            "can pad (4-bit pad fields)"
        )
    return None


def _kib(n: int) -> str:
    return f"{n / 1024:g} KiB"


@check("buffers")
def _conv_buffers(m: Match) -> str | None:
    """The smallest tile the schedule can use must fit: one output pixel of one output-channel
    block, accumulating over input-channel blocks (the accumulator stays on chip, so
    input channels need not fit at once)."""
    acc = m.ops[0]
    c = m.target.config
    kh, kw = shape_of(acc.operands[1])[1:3]
    dh, dw = _ints(acc, "dilations")
    eff_h, eff_w = (kh - 1) * dh + 1, (kw - 1) * dw + 1
    wgt_tiles, wgt_depth = kh * kw, c.depth("wgt")
    if wgt_tiles > wgt_depth:
        return (
            f"a {kh}x{kw} filter needs {wgt_tiles} weight tiles "
            f"({_kib(wgt_tiles * c.elem_bytes('wgt'))}) "
            f"per {_tile(m)} channel block; the weight buffer holds {wgt_depth} "
            f"({_kib(wgt_depth * c.elem_bytes('wgt'))})"
        )
    inp_rows, inp_depth = eff_h * eff_w, c.depth("inp")
    if inp_rows > inp_depth:
        dil = f" dilated by {dh}x{dw}" if (dh, dw) != (1, 1) else ""
        return (
            f"the {kh}x{kw} window{dil} spans {eff_h}x{eff_w} input pixels = {inp_rows} input "
            f"rows for one output pixel; the input buffer holds {inp_depth} "
            f"({_kib(inp_depth * c.elem_bytes('inp'))})"
        )
    return None


@check("requantize")
def _requantize_range(m: Match) -> str | None:
    req = m.get("q.requantize")
    if req is None or req.properties.get("shift") is None:
        return None  # double-precision scale (FULLY_CONNECTED): lower-q-to-accel decides how
    shifts = _ints(req, "shift")
    worst = max(shifts, key=abs)
    if abs(worst) > 31:
        return f"requantize shift {worst} is beyond the ALU's 31-bit shifts"
    return None


# ALU operations each q op needs on the accumulator rows (saturation before the truncating
# int8 STORE is a MAX then a MIN).
_ALU_NEEDS: dict[str, tuple[str, ...]] = {
    "q.bias_add": ("add",),
    "q.requantize": ("rdmul", "rshr", "add", "max", "min"),
    "q.relu": ("max", "min"),
    "q.add": ("add", "shr", "rdmul", "rshr", "max", "min"),
    "q.sub": ("add", "mul", "shr", "rdmul", "rshr", "max", "min"),
    "q.mul": ("add", "mul", "shr", "rdmul", "rshr", "max", "min"),
    "q.max_pool2d": ("max",),
    "q.avg_pool2d": ("add", "rshr"),
    "q.mean": ("add", "shr", "rdmul", "rshr", "max", "min"),
    "q.pad": ("add",),
}


@check("alu-ops")
def _alu_ops(m: Match) -> str | None:
    have = m.target.features
    for op in m.ops:
        missing = [a for a in _ALU_NEEDS.get(op.name, ()) if a not in have]
        if missing:
            return (
                f"{op.name} needs ALU {'/'.join(a.upper() for a in missing)}, which this "
                f"configuration lacks (it has {', '.join(sorted(a.upper() for a in have))})"
            )
    return None


def _is_constant(v) -> bool:
    from xdsl.traits import ConstantLike

    owner = getattr(v, "owner", None)
    return owner is not None and not isinstance(owner, Block) and owner.has_trait(ConstantLike)


@check("broadcast")
def _broadcast(m: Match) -> str | None:
    op = m.ops[0]
    out = shape_of(op.results[0])
    for v in op.operands:
        s = shape_of(v)
        if s == out:
            continue
        lanes = s[-1:] if s else ()
        per_channel = all(d == 1 for d in s[:-1]) and lanes == out[-1:]
        scalar = all(d == 1 for d in s)
        # The ALU repeats whole accumulator rows: a per-channel operand is one row; a scalar
        # fills all 16 lanes only when the compiler can write that row as a constant.
        if per_channel or (scalar and _is_constant(v)):
            continue
        return (
            f"{op.name} broadcasts {list(s)} against {list(out)}: the ALU repeats whole rows "
            "only (per-channel operands, or constant scalars)"
        )
    return None


@check("pool-padding")
def _pool_padding(m: Match) -> str | None:
    op = m.ops[0]
    pads = _ints(op, "padding")
    if any(pads):
        return (
            f"{op.name} padding {pads}: padded taps must not count, but accumulator loads pad "
            "with zeros"
        )
    return None


@check("pool-window")
def _avg_window(m: Match) -> str | None:
    op = m.ops[0]
    kh, kw = _ints(op, "filter")
    n = kh * kw
    if n & (n - 1):
        return (
            f"a {kh}x{kw} window averages {n} values: dividing by {n} is not a rounding shift "
            "(ALU RSHR divides by powers of two only)"
        )
    return None


@check("reduce-axes")
def _mean_axes(m: Match) -> str | None:
    op = m.ops[0]
    rank = len(shape_of(op.operands[0]))
    axes = sorted(_ints(op, "axes"))
    if rank != 4 or axes != [1, 2]:
        return (
            f"mean over axes {axes} of a {rank}-D tensor: only H and W of NHWC (axes [1, 2]) "
            "reduce along accumulator rows; other axes would reduce across lanes"
        )
    return None


@check("pad-axes")
def _pad_axes(m: Match) -> str | None:
    op = m.ops[0]
    widths = np.asarray(_ints(op, "padding")).reshape(-1, 2)
    if len(widths) != 4:
        return (
            f"pads a {len(widths)}-D tensor: only H and W of NHWC tensors can be padded by the DMA"
        )
    for axis, name in ((0, "batch"), (3, "channel")):
        if widths[axis].any():
            before, after = (int(v) for v in widths[axis])
            return (
                f"pads the {name} axis by {before}+{after}: only H and W of NHWC can be padded "
                "by the DMA; batch or channel padding would move lanes"
            )
    limit = _pad_limit(m.target.config)
    if widths.max() > limit:
        return f"padding {int(widths.max())} exceeds the {limit} rows/columns a LOAD can pad"
    return None


@check("concat-lanes")
def _concat_lanes(m: Match) -> str | None:
    op = m.ops[0]
    rank = len(shape_of(op.results[0]))
    axis = _int(op, "axis")
    if axis != rank - 1:
        return None
    block = m.target.config.block
    channels = [shape_of(v)[-1] for v in op.operands]
    if any(c % block for c in channels[:-1]):
        return (
            f"concatenates {'+'.join(map(str, channels))} channels: lanes cannot move, so every "
            f"input but the last needs a multiple of {block} channels"
        )
    return None


def _vta_region_check(region: RegionSummary) -> str | None:
    if region.macs == 0:
        moved = sum(tensor_bytes(v) for v in (*region.inputs, *region.outputs))
        return (
            f"does no GEMM work (0 MACs): moving {moved} bytes to the accelerator and back, "
            "with a pack and an unpack on the host, costs more than its ALU work saves"
        )
    return None


_GEMM_CHECKS = (
    _int8_operands, _constant_weights, _filter_zero_point, _conv_padding, _conv_buffers,
    _requantize_range, _alu_ops,
)  # fmt: skip
_DENSE_CHECKS = (_int8_operands, _constant_weights, _filter_zero_point, _requantize_range, _alu_ops)
_ELEMENTWISE = (_int8_operands, _broadcast, _alu_ops)

VTA_PATTERNS: tuple[Pattern, ...] = (
    Pattern("conv2d", "q.relu?(q.requantize(q.bias_add?(q.conv2d)))", _GEMM_CHECKS,
            doc="convolution as GEMM over 16x16 channel blocks, requantize and clamp on the ALU"),
    Pattern("depthwise_conv2d", "q.relu?(q.requantize(q.bias_add?(q.depthwise_conv2d)))",
            _GEMM_CHECKS, doc="depthwise convolution with block-diagonal 16x16 weight tiles"),
    Pattern("dense", "q.relu?(q.requantize(q.bias_add?(q.dense)))", _DENSE_CHECKS,
            doc="matrix product as GEMM, requantize and clamp on the ALU"),
    Pattern("add", "q.relu?(q.add)", _ELEMENTWISE, doc="int8 addition with rescaling, ALU"),
    Pattern("sub", "q.relu?(q.sub)", _ELEMENTWISE, doc="int8 subtraction with rescaling, ALU"),
    Pattern("mul", "q.relu?(q.mul)", _ELEMENTWISE, doc="int8 multiplication, ALU"),
    Pattern("max_pool2d", "q.relu?(q.max_pool2d)", (_int8_operands, _pool_padding, _alu_ops),
            doc="ALU MAX over the window's rows"),
    Pattern("avg_pool2d", "q.relu?(q.avg_pool2d)",
            (_int8_operands, _pool_padding, _avg_window, _alu_ops),
            doc="ALU ADD over the window's rows, rounding shift by log2(taps)"),
    Pattern("mean", "q.mean", (_int8_operands, _mean_axes, _alu_ops),
            doc="spatial mean: ALU ADD over rows, then the requantize sequence"),
    Pattern("pad", "q.pad", (_int8_operands, _pad_axes, _alu_ops), doc="spatial padding by DMA"),
    Pattern("concat", "q.concat", (_int8_operands, _concat_lanes),
            doc="concatenation by placement in DRAM"),
    Pattern("relu", "q.relu", (_int8_operands, _alu_ops), doc="clamp, ALU MAX and MIN"),
)  # fmt: skip


def vta_target(config=None, alu_ops: Iterable[Any] | None = None) -> Target:
    """The VTA-like accelerator of `backends/vta`.

    `config` is a `HardwareConfig` (default: VTA's default configuration, 1x16x16 GEMM,
    32 KiB input, 256 KiB weight, 128 KiB accumulator buffers); `alu_ops` the ALU opcodes
    (`AluOp` members, default all, i.e. VTA's MIN/MAX/ADD/SHR plus our MUL, RDMUL, RSHR).

    Accepted (each with the checks listed in `VTA_PATTERNS`): convolution, depthwise
    convolution and dense groups, element-wise add/sub/mul, max and average pooling, spatial
    mean, spatial pad, concatenation and clamps. Partitions without GEMM work are refused.
    Decisions, measured with `benchmarks/bench_partition.py` on the fixtures and ResNet-50
    (GEMM: one 1x16x16 block per cycle; ALU: one 16-lane row per 2 cycles; 333 MHz):

    - **Convolutions whose input channels are not a multiple of 16 are accepted**, padded to
      16 lanes (TVM's VTA refuses them). A 3-channel first layer uses 18.8% of the lanes
      (48 useful MACs per cycle), MobileNetV2's 3- and 24-channel layers 37.5%. Refusing
      them would leave on the CPU 20.1% of `cnn`'s MACs, 40.9% of `small_cnn`'s, 10.8% of
      MobileNetV2's (3 partitions instead of 1, 1.5 MiB crossing CPU/accelerator borders
      instead of 148 KiB) and 3.1% of ResNet-50's (785 KiB instead of 148 KiB). A first layer
      sits at the graph input, so keeping it on the CPU saves no transfer either.
    - **Depthwise convolutions are accepted**, as block-diagonal 16x16 weight tiles: 1 lane
      in 16 is useful (16 MACs per cycle, 5.3 GMAC/s). In MobileNetV2 they are 6.9% of the
      MACs but 49% of the GEMM cycles (1.29 M of 2.62 M); refusing them splits the model into
      18 partitions with 6.3 MiB crossing borders (instead of 1 and 148 KiB). The ALU would
      be slower still: a 3x3 tap loop of MUL and ADD costs 36 cycles per pixel and 16
      channels, the GEMM 9.
    - **Ops without MACs (add/sub/mul, pools, spatial mean and pad, concat, clamps) are
      accepted inside partitions with GEMM work.** Without them MobileNetV2 splits into 12
      partitions (770 KiB across borders) and ResNet-50 into 18 (13 MiB), each border a host
      pack or unpack plus a DMA transfer. Their price is ALU time: on ResNet-50 they add about
      9.9 M ALU cycles (30 ms), making the ALU (17.8 M cycles in all) as busy as the GEMM core
      (17.1 M); on MobileNetV2 they add 0.4 M to 5.5 M. Alone they are not worth a launch,
      which `region_check` refuses.
    """
    from qaccel.backends.vta.config import DEFAULT_CONFIG, HardwareConfig
    from qaccel.backends.vta.isa import AluOp

    config = DEFAULT_CONFIG if config is None else config
    ops = list(AluOp) if alu_ops is None else list(alu_ops)

    def configure(path: str) -> Target:
        return vta_target(HardwareConfig.from_json(path), ops)

    return Target(
        "vta",
        VTA_PATTERNS,
        config=config,
        features=frozenset(AluOp(o).name.lower() for o in ops),
        description=f"VTA-like accelerator ({config.name}: 1x{config.block}x{config.block} GEMM)",
        region_check=_vta_region_check,
        configure=configure,
    )


__all__ = [
    "ENTRY_POINT_GROUP",
    "VTA_PATTERNS",
    "Check",
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
    "parse_pattern",
    "register_target",
    "vta_target",
]  # fmt: skip
