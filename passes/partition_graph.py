"""`partition-graph{target=vta max-partitions=N min-ops=K}`: outline annotated groups into
accelerator functions (the method's partitioning), cycle-free and as large as possible.

The pass and its IR before/after are documented on `PartitionGraphPass`.
"""

from __future__ import annotations

import heapq
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import IntegerAttr, ModuleOp, StringAttr
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import PassFailedException

from qaccel.targets.base import HopSummary, HostStepCost, RegionSummary, Target, describe_op
from qaccel.dialects.macs import op_macs
from qaccel.dialects.annotations import (
    ANNOTATIONS,
    GROUP_ATTR,
    PARTITION_INDEX_ATTR,
    TARGET_ATTR,
    annotated_target,
)
from qaccel.passes.annotate_target import (
    explain_lines,
    host_functions,
    is_compute_op,
    load_target,
    print_explanations,
)


@dataclass
class _Node:
    """A node of the condensed DAG: a region (merged groups) or one foreign op."""

    ops: list[Operation]
    region: bool
    index: int = 0  # partition index
    succ: set[int] = field(default_factory=set)
    pred: set[int] = field(default_factory=set)


class RegionGraph:
    """The host block's ops as a DAG where each candidate region is one node, with
    transitive reachability as bitsets so that merge tests are cheap."""

    def __init__(self, ops: Sequence[Operation], regions: Sequence[tuple[list[Operation], int]]):
        self.nodes: dict[int, _Node] = {}
        self.node_of: dict[Operation, int] = {}
        self.position = {op: i for i, op in enumerate(ops)}
        for members, index in regions:
            self._add(_Node(list(members), True, index))
        for op in ops:
            if op not in self.node_of:
                self._add(_Node([op], False))
        for op in ops:
            me = self.node_of[op]
            for v in op.operands:
                producer = self.node_of.get(v.owner)  # type: ignore[arg-type]
                if producer is not None and producer != me:
                    self.nodes[producer].succ.add(me)
                    self.nodes[me].pred.add(producer)
        self.desc: dict[int, int] = {}
        for n in reversed(self._topological_order()):
            bits = 0
            for s in self.nodes[n].succ:
                bits |= (1 << s) | self.desc[s]
            self.desc[n] = bits

    def _add(self, node: _Node) -> None:
        nid = len(self.nodes)
        self.nodes[nid] = node
        for op in node.ops:
            self.node_of[op] = nid

    def first(self, nid: int) -> int:
        return min(self.position[op] for op in self.nodes[nid].ops)

    def _topological_order(self) -> list[int]:
        indegree = {n: len(node.pred) for n, node in self.nodes.items()}
        ready = [(self.first(n), n) for n, d in indegree.items() if d == 0]
        heapq.heapify(ready)
        order: list[int] = []
        while ready:
            _, n = heapq.heappop(ready)
            order.append(n)
            for s in self.nodes[n].succ:
                indegree[s] -= 1
                if indegree[s] == 0:
                    heapq.heappush(ready, (self.first(s), s))
        if len(order) != len(self.nodes):
            stuck = next(n for n, d in indegree.items() if d > 0 and self.nodes[n].region)
            ops = self.nodes[stuck].ops
            gid = ops[0].attributes.get(GROUP_ATTR)
            raise PassFailedException(
                f"partition-graph: the ops of group "
                f"{gid.value.data if isinstance(gid, IntegerAttr) else '(none)'} "
                f"(first: {describe_op(ops[0])}) cannot form one partition: a path leaves the "
                "group and re-enters it through an op outside it"
            )
        return order

    def regions(self) -> list[int]:
        return sorted((n for n, node in self.nodes.items() if node.region), key=self.first)

    def can_merge(self, a: int, b: int) -> bool:
        """No path a -> x -> b or b -> x -> a through a node x outside both."""
        na, nb = self.nodes[a], self.nodes[b]
        if not (na.region and nb.region and na.index == nb.index):
            return False
        bit_a, bit_b = 1 << a, 1 << b
        if any(self.desc[s] & bit_b for s in na.succ if s != b):
            return False
        return not any(self.desc[s] & bit_a for s in nb.succ if s != a)

    def merge(self, a: int, b: int) -> None:
        """Contract b into a (the caller checked `can_merge`)."""
        na, nb = self.nodes[a], self.nodes.pop(b)
        na.ops.extend(nb.ops)
        for op in nb.ops:
            self.node_of[op] = a
        for s in nb.succ:
            self.nodes[s].pred.discard(b)
            if s != a:
                self.nodes[s].pred.add(a)
                na.succ.add(s)
        for p in nb.pred:
            self.nodes[p].succ.discard(b)
            if p != a:
                self.nodes[p].succ.add(a)
                na.pred.add(p)
        na.succ.discard(a)
        na.pred.discard(a)
        bit_a, bit_b = 1 << a, 1 << b
        merged = (self.desc[a] | self.desc.pop(b)) & ~bit_a & ~bit_b
        self.desc[a] = merged
        for n, bits in self.desc.items():
            if n != a and bits & (bit_a | bit_b):
                self.desc[n] = (bits | bit_a | merged) & ~bit_b

    def merge_all(self) -> None:
        """Greedy maximal merging: along edges in program order, then independent regions."""
        changed = True
        while changed:
            changed = False
            for a in self.regions():
                if a not in self.nodes:
                    continue
                for s in sorted(self.nodes[a].succ, key=self.first):
                    if s in self.nodes and self.can_merge(a, s):
                        self.merge(a, s)
                        changed = True
        regions = self.regions()
        for i, a in enumerate(regions):
            for b in regions[i + 1 :]:
                if a in self.nodes and b in self.nodes and self.can_merge(a, b):
                    self.merge(a, b)


def _region_values(ops: Sequence[Operation]) -> tuple[list[SSAValue], list[SSAValue]]:
    """(inputs in order of first use, outputs in program order); constants are neither."""
    return _Edges().region_values(ops)


class _Edges:
    """Each op's operands that are not constants (with their owners) and each result's users,
    read once for the many regions `_decide` asks about (the IR does not change meanwhile).
    Ops are told apart by `id` (alive throughout): an op's own hash is a Python call."""

    def __init__(self) -> None:
        self.edges: dict[int, tuple[list[tuple[SSAValue, int]], list[tuple]]] = {}

    def _of(self, op: Operation) -> tuple[list[tuple[SSAValue, int]], list[tuple]]:
        found = self.edges.get(id(op))
        if found is None:
            reads = [
                (v, id(v.owner)) for v in op.operands
                if not isinstance(v.owner, Operation) or is_compute_op(v.owner)
            ]  # fmt: skip
            users = [(r, [id(use.operation) for use in r.uses]) for r in op.results]
            found = self.edges[id(op)] = (reads, users)
        return found

    def region_values(self, ops: Sequence[Operation]) -> tuple[list[SSAValue], list[SSAValue]]:
        """`_region_values(ops)`."""
        inside = set(map(id, ops))
        inputs: dict[SSAValue, None] = {}
        outputs: list[SSAValue] = []
        edges = self.edges
        for op in ops:
            found = edges.get(id(op))  # `_of(op)`, without a call for the ops read already
            reads, users = found if found is not None else self._of(op)
            for v, owner in reads:
                if owner not in inside:
                    inputs.setdefault(v, None)
            for r, operations in users:
                for user in operations:
                    if user not in inside:
                        outputs.append(r)
                        break
        return list(inputs), outputs


@dataclass(eq=False)
class _Partition:
    ops: list[Operation]
    macs: int
    index: int

    @property
    def summary(self) -> RegionSummary:
        inputs, outputs = _region_values(self.ops)
        return RegionSummary(tuple(self.ops), tuple(inputs), tuple(outputs), self.macs)


@dataclass(eq=False)
class _Decision:
    """One decision point: a group its target runs as a host step, priced both ways."""

    ops: list[Operation]
    cost: HostStepCost
    interior: bool
    on_cpu: bool
    forced: bool  # by host-steps=inside|cpu, not by the cost model

    @property
    def reason(self) -> str:
        c = self.cost
        if self.forced:
            return "host-steps=cpu runs host steps on the CPU"
        return (f"the cost model prefers the CPU: {c.outside_cycles} cycles with the hop, "
                f"{c.inside_cycles} as a host step of its partition")  # fmt: skip

    def line(self) -> str:
        """Both choices, their terms and the choice, on one line."""
        c = self.cost

        def terms(items) -> str:
            return ", ".join(f"{name} {cycles}" for name, cycles in items)

        where = "inside its partition" if self.interior else "at its partition's edge"
        choice = "CPU" if self.on_cpu else "host step"
        how = " (host-steps option)" if self.forced else ""
        return (f"host step or CPU: {describe_op(self.ops[-1])}, {c.step} {where}: "
                f"host step {c.inside_cycles} cycles ({terms(c.inside)}); "
                f"CPU {c.outside_cycles} cycles ({terms(c.outside)}); "
                f"chosen: {choice}{how}")  # fmt: skip


def _decide(
    candidates: Sequence[_Partition], target: Target, mode: str, position: dict[Operation, int]
) -> list[_Decision]:
    """Price every group of every candidate partition that the target runs as a host step:
    inside the partition, or on the CPU with the partition's boundary moved around it (two
    partitions, cut at its place in program order, when it sits between ops of the
    partition)."""
    assert target.host_step_cost is not None
    decisions: list[_Decision] = []
    edges = _Edges()
    for part in candidates:
        units: dict[object, list[Operation]] = {}
        for o in part.ops:
            gid = o.attributes.get(GROUP_ATTR)
            key = gid.value.data if isinstance(gid, IntegerAttr) else ("op", id(o))
            units.setdefault(key, []).append(o)
        if len(units) < 2:
            continue  # nothing to move the group away from
        inputs, outputs = edges.region_values(part.ops)
        at = {id(o): position[o] for o in part.ops}  # ops by id: see _Edges
        for unit in units.values():
            members = set(map(id, unit))
            rest = [o for o in part.ops if id(o) not in members]
            others = set(map(id, rest))
            reads = any(id(v.owner) in others for o in unit for v in o.operands)
            feeds = any(
                id(u.operation) in others for o in unit for r in o.results for u in r.uses
            )
            if reads and feeds:
                first = min(at[id(o)] for o in unit)
                pieces = [[o for o in rest if at[id(o)] < first],
                          [o for o in rest if at[id(o)] > first]]  # fmt: skip
            else:
                pieces = [rest]
            ins: list[SSAValue] = []
            outs: list[SSAValue] = []
            for piece in pieces:
                i, o = edges.region_values(piece)
                ins += i
                outs += o
            summary = HopSummary(tuple(unit), tuple(inputs), tuple(outputs), tuple(ins),
                                 tuple(outs), len(pieces))  # fmt: skip
            cost = target.host_step_cost(summary)
            if cost is None:
                continue
            forced = mode != "cost"
            on_cpu = mode == "cpu" or (mode == "cost" and cost.on_cpu)
            decisions.append(_Decision(unit, cost, summary.interior, on_cpu, forced))
    decisions.sort(key=lambda d: position[d.ops[0]])
    return decisions


def _percent(part: int, total: int) -> str:
    return f"{100.0 * part / total:.1f}%" if total else "0.0%"


def _op_list(ops: Sequence[Operation], limit: int = 4) -> str:
    names = [describe_op(op) for op in ops[:limit]]
    if len(ops) > limit:
        names.append(f"... ({len(ops) - limit} more)")
    return ", ".join(names)


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def _host_order(block: Block, parts: Sequence[_Partition]) -> list[Operation | int]:
    """A topological order of the host block once each partition is one node (an int, its
    index in `parts`): each op or call as early as its original position allows."""
    ops = list(block.ops)
    position = {op: i for i, op in enumerate(ops)}
    item_of: dict[Operation, Operation | int] = {op: op for op in ops}
    for k, part in enumerate(parts):
        item_of.update((op, k) for op in part.ops)
    items: list[Operation | int] = [op for op in ops if not isinstance(item_of[op], int)]
    items += list(range(len(parts)))
    members: dict[Operation | int, list[Operation]] = {
        op: [op] for op in items if isinstance(op, Operation)
    }
    members.update((k, part.ops) for k, part in enumerate(parts))
    key = {item: min(position[op] for op in members[item]) for item in items}
    users: dict[Operation | int, set[Operation | int]] = {item: set() for item in items}
    indegree: dict[Operation | int, int] = {}
    for item in items:
        producers = {
            item_of[v.owner]
            for op in members[item]
            for v in op.operands
            if isinstance(v.owner, Operation) and v.owner in item_of
        } - {item}
        indegree[item] = len(producers)
        for p in producers:
            users[p].add(item)
    ready = [(key[item], item) for item in items if indegree[item] == 0]
    heapq.heapify(ready)
    order: list[Operation | int] = []
    while ready:
        _, item = heapq.heappop(ready)
        order.append(item)
        for u in users[item]:
            indegree[u] -= 1
            if indegree[u] == 0:
                heapq.heappush(ready, (key[u], u))
    assert len(order) == len(items), "partitions were merged into a cycle"
    return order


def _outline_partition(
    part: _Partition, name: str, target: Target
) -> tuple[func.FuncOp, func.CallOp]:
    """Move the partition's ops into a new private function; return it and the call that
    replaces them (not inserted yet)."""
    ops = part.ops
    inside = set(ops)
    inputs, outputs = _region_values(ops)
    call = func.CallOp(name, inputs, [v.type for v in outputs])
    for v, r in zip(outputs, call.results):
        v.replace_uses_with_if(r, lambda use: use.operation not in inside)
    body = Block(arg_types=[v.type for v in inputs])
    mapping: dict[SSAValue, SSAValue] = dict(zip(inputs, body.args))
    for v, arg in zip(inputs, body.args):
        arg.name_hint = v.name_hint
    for op in ops:
        for v in op.operands:
            owner = v.owner
            if v not in mapping and isinstance(owner, Operation) and not is_compute_op(owner):
                clone = owner.clone()
                body.add_op(clone)
                mapping[v] = clone.results[owner.results.index(v)]
    for op in ops:
        op.detach()
        body.add_op(op)
        op.operands = [mapping.get(v, v) for v in op.operands]
    body.add_op(func.ReturnOp(*outputs))
    function = func.FuncOp(
        name, ([v.type for v in inputs], [v.type for v in outputs]), Region(body), "private"
    )
    function.attributes[TARGET_ATTR] = StringAttr(target.name)
    return function, call


@dataclass(frozen=True)
class PartitionGraphPass(ModulePass):
    """Outline a target's annotated groups into maximal, cycle-free accelerator functions.

    The groups `annotate-target` marked for the target are merged into maximal regions of the
    host function's DAG: two regions merge when they have the same partition index and no path
    leaves one and enters the other through an op outside both (that would make the outlined
    call depend on itself). Regions joined by an edge merge first, then independent ones (one
    accelerator launch instead of two). Each region becomes

        func.func private @vta_fn_<k>(<inputs>) -> (<outputs>) attributes {qaccel.target = "vta"}

    (inputs: values defined outside and used inside, in order of first use; outputs: values
    defined inside and used outside, in program order; weights, i.e. constants, are cloned
    inside), called from the host by `func.call`. Ops keep their attributes and locations;
    regions are numbered in host program order.

        %y = q.conv2d %x, %w {qaccel.target = "vta", qaccel.group = 0 : i64, ...}
        ...
        %z = q.requantize %s {qaccel.target = "vta", qaccel.group = 0 : i64, ...}
        %o = tfl.softmax %z {...}

    becomes

        %z = func.call @vta_fn_0(%x) : (tensor<1x8x8x16xi8>) -> tensor<1x8x8x16xi8>
        %o = tfl.softmax %z {...}
        ...
        func.func private @vta_fn_0(%x: tensor<1x8x8x16xi8>) -> tensor<1x8x8x16xi8>
            attributes {qaccel.target = "vta"} {
          %w = tfl.const ...
          %y = q.conv2d %x, %w {qaccel.target = "vta", ...}
          ...
          func.return %z : tensor<1x8x8x16xi8>
        }

    Groups the target runs as host steps of its programs (for `vta`: table lookups, copies,
    resizes, pools the ALU cannot compute exactly) are decision points: the target's cost model
    (`Target.host_step_cost`) prices each inside its partition (a host step) against the CPU
    (the op there, plus the hop: packing, unpacking and DRAM transfers of the values that
    start crossing the partition's boundary, and one more launch when the group sits between
    ops of the partition, which then splits), and the cheaper choice is taken; a tie keeps it
    inside (`host-steps=inside|cpu` overrides the model). The other groups then merge again.

    A region stays on the CPU (its annotations removed) when it has fewer than `min-ops` ops, when
    the target's region check refuses it (for `vta`: no GEMM work), or when `max-partitions`
    keeps only the partitions with the most MACs. With `report=true` (or `explain=true`) the
    pass reports on stderr, LiteRT-style, `vta: selected N of M ops (X% of MACs) into K
    partitions` and one line per dropped partition; with `explain=true` also the reason every
    op left on the CPU has and one line per decision point, both choices with their cycles
    and the choice made (`qaccel-opt` and `qaccel-compile --explain-partitioning` set it):

        vta: host step or CPU: q.lut "act", a table lookup inside its partition: host step
        752 cycles (host step 86, sync 666); CPU 7283 cycles (CPU op 419, pack 86, unpack 86,
        DRAM 32, launch 6660); chosen: host step
    """

    name = "partition-graph"

    target: str = ""
    """The target whose annotated groups are outlined; default: the module's `#accel.target`
    (as for annotate-target)."""

    max_partitions: int | None = None
    """Keep at most this many partitions, those with the most MACs (the others run on the
    CPU; each is reported)."""

    min_ops: int = 1
    """Partitions with fewer ops stay on the CPU."""

    report: bool = False
    """Print to stderr how many ops (and what share of the MACs) went into how many
    partitions, and each partition dropped by max-partitions."""

    explain: bool = False
    """Print the report and, for every op left on the CPU, why; and, for every decision
    point (a group the target runs as a host step of its program), both choices with their
    costs and the choice made."""

    host_steps: Literal["cost", "inside", "cpu"] = "cost"
    """Groups the target runs as host steps of its programs (`Target.host_step_cost`):
    `cost` keeps each inside its partition or runs it on the CPU, whichever the target's
    cost model says is cheaper; `inside` keeps them all inside, `cpu` runs them all on the
    CPU (both for comparison)."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if self.host_steps not in ("cost", "inside", "cpu"):
            raise PassFailedException(
                "partition-graph: host-steps must be one of cost, inside, cpu, got "
                f"'{self.host_steps}'"
            )
        if self.max_partitions is not None and self.max_partitions < 0:
            raise PassFailedException(
                f"partition-graph: max-partitions must not be negative, got {self.max_partitions}"
            )
        target = load_target(self.name, op, self.target)
        taken = {o.sym_name.data for o in op.ops if isinstance(o, func.FuncOp)}
        for host in list(host_functions(op)):
            self._partition(op, host, target, taken)

    def _partition(self, module: ModuleOp, host: func.FuncOp, target: Target, taken: set[str]):
        block = host.body.block
        ops = [o for o in block.ops if is_compute_op(o) or isinstance(o, func.ReturnOp)]
        compute = [o for o in ops if is_compute_op(o)]
        total_macs = sum(op_macs(o) for o in compute)
        position = {o: i for i, o in enumerate(ops)}
        candidates = self._candidates(ops, compute, target, position)
        reasons: dict[Operation, str] = {}
        decisions: list[_Decision] = []
        if target.host_step_cost is not None:
            decisions = _decide(candidates, target, self.host_steps, position)
            moved = [d for d in decisions if d.on_cpu]
            for d in moved:
                for o in d.ops:
                    reasons[o] = d.reason
                    for name in ANNOTATIONS:
                        o.attributes.pop(name, None)
            if moved:  # the other ops form their partitions again
                candidates = self._candidates(ops, compute, target, position)
        kept: list[_Partition] = []
        for part in candidates:
            reason = None
            if len(part.ops) < self.min_ops:
                size = _plural(len(part.ops), "op")
                reason = f"its partition of {size} is below min-ops={self.min_ops}"
            elif target.region_check is not None:
                refusal = target.region_check(part.summary)
                if refusal is not None:
                    reason = f"its partition ({_op_list(part.ops, 2)}) {refusal}"
            if reason is None:
                kept.append(part)
            else:
                reasons.update((o, reason) for o in part.ops)
        dropped: list[_Partition] = []
        if self.max_partitions is not None and len(kept) > self.max_partitions:
            ranked = sorted(kept, key=lambda p: (-p.macs, -len(p.ops), position[p.ops[0]]))
            dropped = ranked[self.max_partitions :]
            kept = [p for p in kept if p not in dropped]
            for part in dropped:
                reason = (
                    f"its partition ({_plural(len(part.ops), 'op')}, "
                    f"{_percent(part.macs, total_macs)} "
                    f"of MACs) was dropped by max-partitions={self.max_partitions}"
                )
                reasons.update((o, reason) for o in part.ops)

        # Reasons for the ops no group claimed come from the pattern table, before anything
        # moves.
        explanations: list[tuple[Operation, str]] = []
        if self.explain:
            claimed = [o for o in block.ops if TARGET_ATTR in o.attributes]
            result = target.match(block, claimed)
            for o in compute:
                if o in reasons:
                    explanations.append((o, reasons[o]))
            explanations += [
                (o, r) for o, r in explain_lines(target, block, result) if o not in reasons
            ]
            explanations.sort(key=lambda item: position[item[0]])
        for o in reasons:
            for name in ANNOTATIONS:
                o.attributes.pop(name, None)

        if kept:
            self._outline(module, host, target, kept, taken)

        if not (self.report or self.explain):
            return
        selected = sum(len(p.ops) for p in kept)
        macs = sum(p.macs for p in kept)
        out = sys.stderr
        print(
            f"{target.name}: selected {selected} of {len(compute)} ops "
            f"({_percent(macs, total_macs)} of MACs) into {_plural(len(kept), 'partition')}",
            file=out,
        )
        for part in dropped:
            print(
                f"{target.name}: dropped a partition of {_plural(len(part.ops), 'op')} "
                f"({_percent(part.macs, total_macs)} of MACs) beyond max-partitions="
                f"{self.max_partitions}: {_op_list(part.ops)}",
                file=out,
            )
        print_explanations(target, explanations, out)
        for d in decisions:
            print(f"{target.name}: {d.line()}", file=out)

    @staticmethod
    def _candidates(
        ops: list[Operation], compute: list[Operation], target: Target,
        position: dict[Operation, int],
    ) -> list[_Partition]:  # fmt: skip
        """The target's annotated groups merged into maximal cycle-free regions."""
        groups: dict[object, list[Operation]] = {}
        index_of: dict[object, int] = {}
        for o in compute:
            if annotated_target(o) != target.name:
                continue
            gid = o.attributes.get(GROUP_ATTR)
            key = gid.value.data if isinstance(gid, IntegerAttr) else ("op", id(o))
            pidx = o.attributes.get(PARTITION_INDEX_ATTR)
            index = pidx.value.data if isinstance(pidx, IntegerAttr) else 0
            if key in index_of and index_of[key] != index:
                raise PassFailedException(
                    f"partition-graph: group {key} mixes partition indices "
                    f"{index_of[key]} and {index} ({describe_op(o)})"
                )
            index_of[key] = index
            groups.setdefault(key, []).append(o)
        graph = RegionGraph(ops, [(members, index_of[k]) for k, members in groups.items()])
        graph.merge_all()
        return [
            _Partition(
                sorted(graph.nodes[n].ops, key=position.__getitem__),
                sum(op_macs(o) for o in graph.nodes[n].ops),
                graph.nodes[n].index,
            )
            for n in graph.regions()
        ]

    @staticmethod
    def _outline(module: ModuleOp, host: func.FuncOp, target: Target, parts, taken: set[str]):
        block = host.body.block
        order = _host_order(block, parts)
        anchor: Operation = host
        calls: dict[int, func.CallOp] = {}
        k = 0
        for item in order:
            if not isinstance(item, int):
                continue
            while target.function_name(k) in taken:
                k += 1
            name = target.function_name(k)
            taken.add(name)
            function, calls[item] = _outline_partition(parts[item], name, target)
            module.body.block.insert_op_after(function, anchor)
            anchor = function
        for op in list(block.ops):
            op.detach()
        for item in order:
            block.add_op(calls[item] if isinstance(item, int) else item)
        for op in list(block.ops):
            if (
                not is_compute_op(op)
                and not isinstance(op, func.ReturnOp)
                and all(not r.uses for r in op.results)
            ):
                block.erase_op(op)
