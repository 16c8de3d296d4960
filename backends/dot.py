"""`-t dot`: the entry function as a Graphviz graph, showing at a glance what runs where.

    qaccel-opt model.tflite -p 'legalize-tfl-to-q,annotate-target,partition-graph' -t dot \\
        | dot -Tsvg > model.svg

Every op of the entry function (the first public one) is a box labelled with its op name,
tensor name, result shape and MACs; weights (constants) are left out. Tensor names are
shortened to what tells nodes apart: the first of a fused name's `;`-separated parts (the
converter lists the op that produces the tensor first), without the scopes every name of the
graph shares (`model/`), then cut at the end, because the start of the rest names the layer
(`block_3_expand/Conv2D`, `conv2d_3/Relu`) and the end is what layers have in common
(`/Relu`, `/BiasAdd`, `:0`). Once the module has a target (`attach-target`) and ops were
annotated or partitioned, every op that stays on the CPU is shaded red and says why, with
the reasons `--explain-partitioning` prints (the target's pattern table and checks; a
partition dropped by partition-graph's min-ops, max-partitions or region check is named as
such; `--explain-partitioning` says which); the whole reason is the node's tooltip. A call to an
accelerator function (`qaccel.target` on the callee) is drawn expanded, as a coloured cluster
holding the callee's ops, titled with the function, its target, op count and share of the
model's MACs; edges cross the cluster border where data moves between CPU and accelerator.
Before partitioning, annotated groups are drawn as dashed clusters (`group 3: conv2d`).
`accel.pack` / `accel.unpack` are orange trapezoids. Edges carry the tensor shape and
element type.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import IO

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import IntegerAttr, ModuleOp, StringAttr, TensorType
from xdsl.ir import Block, Operation, SSAValue
from xdsl.traits import ConstantLike
from xdsl.utils.target import Target

from qaccel.dialects import vta
from qaccel.dialects.names import is_public, location_name
from qaccel.dialects.macs import op_macs

# Pastel fills with a darker border each, one per partition in turn.
_PALETTE = (
    ("#dbe9f6", "#4a7fb5"), ("#e3f1da", "#5b9a3c"), ("#f6e3f2", "#a8559a"),
    ("#fff2cc", "#b8962e"), ("#e0f3f3", "#3f9a9a"), ("#eee3f8", "#7a5aa8"),
)  # fmt: skip
_PACK = {"accel.pack": "pack", "accel.unpack": "unpack"}


def _quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def _short(name: str, limit: int = 28) -> str:
    """`name` cut at the end to `limit` characters (see the module docstring for why)."""
    return name if len(name) <= limit else name[: limit - 1] + "…"


def _primary(name: str) -> str:
    """The first part of a fused tensor name (`a/Relu;a/BiasAdd;a/Conv2D` -> `a/Relu`)."""
    return name.split(";", 1)[0] or name


def _shared_scope(names: list[str]) -> int:
    """How many leading `/` scopes every name shares (keeping at least the last part)."""
    parts = [n.split("/") for n in names]
    if len(parts) < 2:
        return 0
    shared = 0
    for column in zip(*(p[:-1] for p in parts)):
        if len(set(column)) != 1:
            break
        shared += 1
    return shared


def _wrap(text: str, width: int = 34, lines: int = 4) -> list[str]:
    """`text` in at most `lines` lines of about `width` characters (the last one cut)."""
    import textwrap

    out = textwrap.wrap(text, width) or [""]
    if len(out) > lines:
        out = out[:lines]
        out[-1] = out[-1][: width - 1] + "…"
    return out


def _cpu_reasons(module: ModuleOp, block: Block) -> dict[Operation, str]:
    """Why each op of the entry block stays on the CPU, when there is a target and something
    was annotated or partitioned (else nothing: no decision has been taken yet)."""
    from qaccel.targets.base import TargetError, module_target

    try:
        target = module_target(module)
    except (TargetError, ValueError):
        return {}
    functions = {op.sym_name.data: op for op in module.ops if isinstance(op, func.FuncOp)}

    def offloaded(op: Operation) -> bool:
        if not isinstance(op, func.CallOp):
            return False
        callee = functions.get(op.callee.root_reference.data)
        return callee is not None and "qaccel.target" in callee.attributes

    partitioned = any(offloaded(op) for op in block.ops)
    claimed = [op for op in block.ops if "qaccel.target" in op.attributes]
    if not partitioned and not claimed:
        return {}
    from qaccel.passes.annotate_target import explain_lines

    result = target.match(block, claimed)
    reasons: dict[Operation, str] = {}
    for op, reason in explain_lines(target, block, result):
        if offloaded(op) or op.name in _PACK:
            continue
        if partitioned and reason.startswith("not annotated, although"):
            pattern = next((m.pattern.name for m, _ in result.groups if op in m.ops), "?")
            reason = (f"{target.name} pattern {pattern} matches it, but partition-graph dropped "
                      f"its partition (min-ops, max-partitions or the region check)")  # fmt: skip
        reasons[op] = reason
    return reasons


def _type_label(v: SSAValue) -> str:
    t = v.type
    if not isinstance(t, TensorType):
        return str(t)
    from qaccel.targets.base import storage_dtype

    dtype = storage_dtype(v)
    kind = {"int8": "i8", "int32": "i32", "int16": "i16", "uint8": "u8"}.get(str(dtype), str(dtype))
    return "x".join(str(d) for d in t.get_shape()) + f" {kind}"


def _macs_label(n: int) -> str:
    for unit, size in (("G", 10**9), ("M", 10**6), ("k", 10**3)):
        if n >= size:
            return f"{n / size:.3g}{unit} MACs"
    return f"{n} MACs"


def _entry(module: ModuleOp) -> func.FuncOp | None:
    functions = [op for op in module.ops if isinstance(op, func.FuncOp) and op.body.blocks]
    public = [f for f in functions if is_public(f)]
    return (public or functions or [None])[0]


def _is_weight(op: Operation, memo: dict[Operation, bool]) -> bool:
    """Constants, and ops computed from constants only (e.g. weights unpacked at compile
    time): drawn as nothing, they are part of the op that uses them."""
    if op not in memo:
        memo[op] = op.has_trait(ConstantLike) or bool(
            op.operands
            and not op.regions
            and all(
                isinstance(v.owner, Operation) and _is_weight(v.owner, memo) for v in op.operands
            )
        )
    return memo[op]


class _Graph:
    def __init__(self, module: ModuleOp):
        self.weights: dict[Operation, bool] = {}
        self.functions = {op.sym_name.data: op for op in module.ops if isinstance(op, func.FuncOp)}
        self.node_ids: dict[Operation, str] = {}
        self.lines: list[str] = []
        self.edges: list[str] = []
        self.inputs: dict[SSAValue, str] = {}
        self.expanded: dict[func.CallOp, func.FuncOp] = {}
        self.total_macs = 0
        self.reasons: dict[Operation, str] = {}
        self.scope = 0  # leading `/` scopes every tensor name shares

    def accelerator_callee(self, op: Operation) -> func.FuncOp | None:
        if not isinstance(op, func.CallOp):
            return None
        callee = self.functions.get(op.callee.root_reference.data)
        if callee is None or "qaccel.target" not in callee.attributes or not callee.body.blocks:
            return None
        return callee

    def drawn(self, block: Block) -> list[Operation]:
        return [
            op
            for op in block.ops
            if not _is_weight(op, self.weights) and not isinstance(op, func.ReturnOp)
        ]

    def node(self, op: Operation, indent: str) -> None:
        nid = f"n{len(self.node_ids)}"
        self.node_ids[op] = nid
        label = [op.name]
        if isinstance(op, vta.LayerOp):  # a formed accelerator layer: say its kind
            label = [f'vta.layer "{op.kind.data}"']
        name = location_name(op)
        if name:
            label.append(_short("/".join(_primary(name).split("/")[self.scope :])))
        if op.results:
            label.append(_type_label(op.results[0]))
        macs = op_macs(op)
        if macs:
            label.append(_macs_label(macs))
        reason = self.reasons.get(op)
        if reason is not None:
            label += _wrap("CPU: " + reason)
        attrs = [f"label={_quote(chr(10).join(label))}"]
        if reason is not None:
            attrs.append(f'tooltip={_quote(reason)}, fillcolor="#fff0f0", color="#c92a2a"')
        if op.name in _PACK:
            attrs.append(
                'shape=trapezium, fillcolor="#ffd8a8", color="#d9480f", penwidth=2'
                if op.name == "accel.pack"
                else 'shape=invtrapezium, fillcolor="#ffd8a8", color="#d9480f", penwidth=2'
            )
        self.lines.append(f"{indent}{nid} [{', '.join(attrs)}];")

    def source(self, v: SSAValue) -> str | None:
        """The node that produces `v`, looking through expanded calls."""
        if v in self.inputs:
            return self.inputs[v]
        owner = v.owner
        if isinstance(owner, Operation):
            if owner in self.expanded:
                callee = self.expanded[owner]
                ret = callee.body.block.last_op
                assert ret is not None
                return self.source(ret.operands[owner.results.index(v)])
            if _is_weight(owner, self.weights):
                return None
            return self.node_ids.get(owner)
        return None

    def ops_block(
        self, block: Block, indent: str, call_args: list[SSAValue] | None
    ) -> list[Operation]:
        """Emit the nodes of `block` (clusters for annotated groups), return its ops."""
        if call_args is not None:
            for arg, outer in zip(block.args, call_args):
                src = self.source(outer)
                if src is not None:
                    self.inputs[arg] = src
        ops = self.drawn(block)
        groups: dict[tuple[str, int], list[Operation]] = {}
        for op in ops:
            target, group = op.attributes.get("qaccel.target"), op.attributes.get("qaccel.group")
            if (
                call_args is None
                and isinstance(target, StringAttr)
                and isinstance(group, IntegerAttr)
            ):
                groups.setdefault((target.data, group.value.data), []).append(op)
        grouped = {op: key for key, members in groups.items() for op in members}
        emitted: set[tuple[str, int]] = set()
        for op in ops:
            callee = self.accelerator_callee(op)
            if callee is not None:
                self.cluster(op, callee, indent)
                continue
            key = grouped.get(op)
            if key is None:
                self.node(op, indent)
            elif key not in emitted:
                emitted.add(key)
                members = groups[key]
                pattern = members[0].attributes.get("qaccel.pattern")
                kind = pattern.data if isinstance(pattern, StringAttr) else "?"
                title = f"group {key[1]}: {kind} ({key[0]})"
                self.lines.append(f"{indent}subgraph cluster_group_{key[1]} {{")
                self.lines.append(
                    f'{indent}  label={_quote(title)}; style="dashed,rounded"; color="#4a7fb5";'
                )
                for m in members:
                    self.node(m, indent + "  ")
                self.lines.append(f"{indent}}}")
        return ops

    def cluster(self, call: func.CallOp, callee: func.FuncOp, indent: str) -> None:
        k = len(self.expanded)
        self.expanded[call] = callee
        fill, border = _PALETTE[k % len(_PALETTE)]
        block = callee.body.block
        inner = self.drawn(block)
        macs = sum(op_macs(op) for op in inner)
        share = f", {100.0 * macs / self.total_macs:.1f}% of MACs" if self.total_macs else ""
        target = callee.attributes["qaccel.target"]
        target_name = target.data if isinstance(target, StringAttr) else str(target)
        count = sum(op.name not in _PACK for op in inner)
        title = f"@{callee.sym_name.data} on {target_name}: {count} ops{share}"
        self.lines.append(f"{indent}subgraph cluster_{callee.sym_name.data} {{")
        self.lines.append(
            f'{indent}  label={_quote(title)}; style="filled,rounded"; '
            f'fillcolor="{fill}"; color="{border}"; penwidth=2;'
        )
        self.ops_block(block, indent + "  ", list(call.operands))
        self.lines.append(f"{indent}}}")
        self.edges_of(inner)

    def edges_of(self, ops: list[Operation]) -> None:
        for op in ops:
            if op in self.expanded:
                continue
            dst = self.node_ids.get(op)
            if dst is None:
                continue
            for v in op.operands:
                src = self.source(v)
                if src is not None:
                    self.edges.append(f"  {src} -> {dst} [label={_quote(_type_label(v))}];")


@dataclass(frozen=True)
class DotTarget(Target):
    """Graphviz DOT of the entry function; partitions as coloured clusters."""

    name = "dot"

    def emit(self, ctx: Context, module: ModuleOp, output: IO[str]) -> None:
        output.write(to_dot(module))


def to_dot(module: ModuleOp) -> str:
    function = _entry(module)
    if function is None:
        return "digraph qaccel {\n}\n"
    g = _Graph(module)
    block = function.body.block
    for op in block.ops:
        callee = g.accelerator_callee(op)
        inner = callee.body.block.ops if callee is not None else (op,)
        g.total_macs += sum(op_macs(o) for o in inner)
    g.reasons = _cpu_reasons(module, block)
    names = [_primary(n) for op in module.walk() if (n := location_name(op))]
    g.scope = _shared_scope(names)
    name = function.sym_name.data
    g.lines += [
        f"digraph {_quote(name)} {{",
        "  rankdir=TB;",
        '  node [shape=box, style="rounded,filled", fillcolor=white, fontsize=10];',
        '  edge [fontsize=8, color="#555555"];',
    ]
    for i, arg in enumerate(block.args):
        nid = f"in{i}"
        g.inputs[arg] = nid
        g.lines.append(
            f"  {nid} [label={_quote(f'input {i}' + chr(10) + _type_label(arg))}, shape=ellipse, "
            'fillcolor="#eeeeee"];'
        )
    ops = g.ops_block(block, "  ", None)
    g.edges_of(ops)
    ret = block.last_op
    if isinstance(ret, func.ReturnOp):
        for i, v in enumerate(ret.operands):
            g.lines.append(
                f"  out{i} [label={_quote(f'output {i}' + chr(10) + _type_label(v))}, "
                'shape=ellipse, fillcolor="#eeeeee"];'
            )
            src = g.source(v)
            if src is not None:
                g.edges.append(f"  {src} -> out{i};")
    return "\n".join(g.lines + g.edges + ["}"]) + "\n"


__all__ = ["DotTarget", "to_dot"]
