"""`insert-pack-unpack`: give accelerator functions the accelerator's packed layout (the method's
function-level transformation, steps 3.1-3.4).

Input: partitioned IR (see "Partitioned IR contract"): host functions call accelerator
functions, recognised by their `qaccel.target` attribute. Afterwards every accelerator function
takes and returns *packed* tensors (`dialects/accel.py`: NHWC `[N, H, W, C]` becomes
`[N, ceil(C/B), H, W, 1, B]`, `[N, C]` becomes `[N, ceil(C/B), 1, B]`, B the block of the module's `#accel.target`),
and the host converts with `accel.pack` / `accel.unpack` only where the method says so:

    %m = q.max_pool2d %x {...}            %m = q.max_pool2d %x {...}
    %a = func.call @vta_fn_0(%m)          %p = accel.pack %m ...           pack flag of vta_fn_0
    %b = q.add %a, %a {...}         =>    %a = func.call @vta_fn_0(%p)     packed result
    %c = func.call @vta_fn_1(%b)          %b = q.add %a, %a {...}          runs on packed data
    %d = tfl.softmax %c                   %c = func.call @vta_fn_1(%b)
                                          %u = accel.unpack %c ...         unpack flag of vta_fn_1
                                          %d = tfl.softmax %u

The accelerator function's body stays executable: it starts by unpacking each argument and
ends by packing each result (`lower-q-to-accel` later rewrites the body into packed-layout ops
and drops them); weights of `q.conv2d` (OHWI) and `q.dense` ([O, I]) are packed at compile time
into `[O/B, I/B, KH, KW, B, B]` / `[O/B, I/B, B, B]` constants (padded with the filter zero
point) followed by an `accel.unpack` that lowering will drop likewise. `q.depthwise_conv2d`
filters and grouped convolutions keep their layout. Functions that are done get the unit
attribute `accel.packed`, so running the pass again changes nothing.

The method's steps, per host function (a function without `qaccel.target`), on the ops of its
body in program order (`index` = position in the body):

- 3.1 `[(sub_func, index)]`: every `func.call`;
- 3.2 `[(accel_func, index)]`: the calls of accelerator functions;
- 3.3 `[(accel_func, pack, unpack)]`, one per call: pack when a non-element-wise op lies before
  the first accelerator function, or between the previous accelerator function and this one;
  unpack when a non-element-wise op lies after the last one, or between this one and the next;
- 3.4 rewrite: `accel.pack` of the call's host-layout inputs when pack is set, `accel.unpack`
  of its results for host-layout users when unpack is set.

How we read "before", "after" and "between" on a DAG: host ops are *element-wise* (see
`is_elementwise`: same-shape `q.add`/`q.sub`/`q.mul`, `q.relu`, `q.lut`, per-tensor `q.requantize`,
same-shape `tfl.add`/`tfl.sub`/`tfl.mul`, `tfl.relu`/`relu6`/`leaky_relu`/`logistic`/`tanh`/
`hard_swish`/`quantize`, all on integer tensors of rank >= 2), *leaves* (constants:
`tfl.const`, `tfl.no_value`) or *non-element-wise* (everything else: reshapes, pooling, softmax,
broadcasting ops, calls of host functions, ...). Element-wise ops joined by data edges form
*segments*; the ops between two accelerator functions are the segment that carries data from
one to the other, and a non-element-wise op lies "between" them when it feeds or consumes that
segment (it *touches* the segment: it makes one of its operands or uses one of its results), or
sits directly between the calls. On a chain this is exactly the method's rule (the tests check
it against a literal implementation on random chains). So:

- pack(A) = some input of A comes from a non-element-wise op, or from a segment that touches one;
- unpack(A) = some result of A goes to a non-element-wise op, or to a segment that touches one.

A segment touching accelerator functions and no non-element-wise op runs on packed data (no
pack/unpack around it: the element-wise-only case); any other segment runs in host layout. The
graph's own inputs, outputs and constants are not ops: a first accelerator function reached from
the inputs through element-wise ops only has pack = 0 and the inputs are packed at the function's
entry instead (likewise unpack = 0 and an unpack before `func.return` for a last one), so the
host function's signature never changes. Conversions are per value and shared: a value several
users need in the other layout is converted once, right after it is defined (arguments: at the
function's entry; values only returned: right before `func.return`). Values that are not integer
tensors of rank >= 2 (scalars, vectors, floats) cross unchanged and take no part in the rules.

Element-wise ops on packed tensors compute on the padded channel lanes too. Those lanes start as
the zero point and, for the ops above, mostly stay there (real 0.0 maps to real 0.0 through an
add, a requantize or a clamp), but nothing relies on it: the lanes never reach a host-layout value
because `accel.unpack` drops them.

`print-flags=true` prints the three lists to stderr; `plan_pack_unpack(module)` returns them.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from dataclasses import dataclass, field

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import (
    BytesAttr,
    DenseIntOrFPElementsAttr,
    IntegerType,
    ModuleOp,
    TensorType,
    UnitAttr,
)
from xdsl.ir import Attribute, Block, BlockArgument, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter
from xdsl.traits import ConstantLike
from xdsl.utils.exceptions import PassFailedException

from qaccel.dialects import accel, q, tfl
from qaccel.dialects.quant import UniformQuantizedType
from qaccel.dialects.annotations import TARGET_ATTR, accelerator_functions, annotated_target
from qaccel.targets.base import TargetError, module_target

# --------------------------------------------------------------------------------------------
# What counts as element-wise

_SAME_SHAPE_BINARY = (q.AddOp, q.SubOp, q.MulOp, tfl.AddOp, tfl.SubOp, tfl.MulOp)
_UNARY = (
    q.ReluOp, q.LutOp, q.RequantizeOp, tfl.ReluOp, tfl.Relu6Op, tfl.LeakyReluOp, tfl.LogisticOp,
    tfl.TanhOp, tfl.HardSwishOp, tfl.QuantizeOp,
)  # fmt: skip


def is_elementwise(op: Operation) -> bool:
    """Whether `op` computes each output element from the input elements at the same index
    only, so it computes the same on packed tensors (where the channel axis is split and
    moved): unary ops and binary ops without broadcasting. `q.requantize` qualifies only with
    one multiplier (per-channel values index the last axis, which packing moves); `q.bias_add`
    (a per-channel vector) and every broadcasting op do not."""
    if not isinstance(op, _SAME_SHAPE_BINARY + _UNARY):
        return False
    if isinstance(op, q.RequantizeOp):
        values = op.scale if op.is_double else op.multiplier
        if len(q.array_values(values)) != 1:
            return False
    shapes = {
        v.type.get_shape() for v in (*op.operands, *op.results) if isinstance(v.type, TensorType)
    }
    return len(shapes) == 1 and len(op.operands) == (2 if isinstance(op, _SAME_SHAPE_BINARY) else 1)


def _integer_element(t: Attribute) -> bool:
    element = t.element_type if isinstance(t, TensorType) else None
    return isinstance(element, UniformQuantizedType | IntegerType)


def activation_packing(t: Attribute, block: int) -> accel.Packing | None:
    """How a value of type `t` crosses into an accelerator function: integer tensors of static
    rank >= 2 are packed channels-last (`Packing.activations`); anything else stays as it is."""
    if not isinstance(t, TensorType) or not _integer_element(t):
        return None
    shape = t.get_shape()
    if len(shape) < 2 or any(d < 0 for d in shape):
        return None
    return accel.Packing.activations(len(shape), block)


# --------------------------------------------------------------------------------------------
# Targets


def target_block(module: ModuleOp) -> int:
    """The channel block of the module's target (`#accel.target`; for `vta`, the
    HardwareConfig's BLOCK_IN, which must equal BLOCK_OUT: one accelerator function's packed
    output is the next one's packed input)."""
    try:
        target = module_target(module)
    except (TargetError, ValueError) as e:
        raise PassFailedException(f"insert-pack-unpack: {e}") from None
    config = target.config
    block_in = getattr(config, "block_in", None)
    block_out = getattr(config, "block_out", None)
    if not isinstance(block_in, int) or not isinstance(block_out, int):
        raise PassFailedException(
            f"insert-pack-unpack: target {target.name} has no block size in its hardware config"
        )
    if block_in != block_out:
        raise PassFailedException(
            f"insert-pack-unpack: target {target.name} has BLOCK_IN {block_in} != BLOCK_OUT "
            f"{block_out}; one packed layout cannot serve both sides"
        )
    for f in accelerator_functions(module):
        if annotated_target(f) != target.name:
            raise PassFailedException(
                f"insert-pack-unpack: @{f.sym_name.data} is for target "
                f"{annotated_target(f) or f.attributes[TARGET_ATTR]}, the module's is {target.name}"
            )
    return block_in


# --------------------------------------------------------------------------------------------
# Analysis (steps 3.1-3.3)


@dataclass(frozen=True)
class CallFlags:
    """Step 3.3 for one call of an accelerator function."""

    callee: str
    index: int
    pack: bool
    unpack: bool

    def __str__(self) -> str:
        return f"({self.callee}, pack={int(self.pack)}, unpack={int(self.unpack)})"


@dataclass
class HostPlan:
    """What the pass computes for one host function, before rewriting it."""

    function: func.FuncOp
    calls: list[tuple[str, int]]
    """3.1: every `func.call` of the body, with its position."""
    accelerator_calls: list[tuple[str, int]]
    """3.2: the calls of accelerator functions."""
    flags: list[CallFlags]
    """3.3: pack/unpack flags per accelerator call, in program order."""
    block: int = 16
    packed_ops: set[Operation] = field(default_factory=set)
    """Element-wise host ops that run on packed tensors."""

    @property
    def name(self) -> str:
        return self.function.sym_name.data

    def lines(self) -> list[str]:
        def pairs(items: Iterable[tuple[str, int]]) -> str:
            return "[" + ", ".join(f"({n}, {i})" for n, i in items) + "]"

        return [
            f"@{self.name} sub-functions: {pairs(self.calls)}",
            f"@{self.name} accelerator functions: {pairs(self.accelerator_calls)}",
            f"@{self.name} flags: [{', '.join(str(f) for f in self.flags)}]",
        ]


class _UnionFind:
    def __init__(self) -> None:
        self.parent: dict[Operation, Operation] = {}

    def find(self, x: Operation) -> Operation:
        self.parent.setdefault(x, x)
        while self.parent[x] is not x:
            self.parent[x] = self.parent[self.parent[x]]
            x = self.parent[x]
        return x

    def union(self, a: Operation, b: Operation) -> None:
        self.parent[self.find(a)] = self.find(b)


class _Graph:
    """The ops of one host body, classified as the rules need them."""

    ACCEL, ELEMENTWISE, LEAF, HOST, RETURN = "accel", "elementwise", "leaf", "host", "return"

    def __init__(self, body: Block, accelerators: dict[str, func.FuncOp], block: int):
        self.body = body
        self.block = block
        self.ops = list(body.ops)
        self.kind: dict[Operation, str] = {}
        for op in self.ops:
            self.kind[op] = self._classify(op, accelerators)

    def _classify(self, op: Operation, accelerators: dict[str, func.FuncOp]) -> str:
        if isinstance(op, func.CallOp) and op.callee.string_value() in accelerators:
            if accel.PACKED_FUNCTION_ATTR in accelerators[op.callee.string_value()].attributes:
                return self.HOST  # already packed by an earlier run: its call is host code now
            return self.ACCEL
        if isinstance(op, func.ReturnOp):
            return self.RETURN
        if op.has_trait(ConstantLike):
            return self.LEAF
        if is_elementwise(op) and all(
            activation_packing(v.type, self.block) is not None for v in (*op.operands, *op.results)
        ):
            return self.ELEMENTWISE
        return self.HOST

    def packing(self, value: SSAValue) -> accel.Packing | None:
        return activation_packing(value.type, self.block)

    def producer_kind(self, value: SSAValue) -> str:
        """LEAF for the function's arguments (graph inputs are not ops)."""
        if isinstance(value, BlockArgument):
            return self.LEAF
        return self.kind[value.owner]

    def user(self, use_op: Operation) -> Operation:
        """The op of the body that contains `use_op` (itself, or an ancestor)."""
        found = self.body.find_ancestor_op_in_block(use_op)
        assert found is not None
        return found


def _plan_host(host: func.FuncOp, accelerators: dict[str, func.FuncOp], block: int) -> HostPlan:
    body = host.body.block
    graph = _Graph(body, accelerators, block)
    calls = [
        (op.callee.string_value(), i)
        for i, op in enumerate(graph.ops)
        if isinstance(op, func.CallOp)
    ]
    accel_calls = [(n, i) for n, i in calls if graph.kind[graph.ops[i]] == graph.ACCEL]

    # Segments: element-wise ops joined by data edges.
    segments = _UnionFind()
    elementwise = [op for op in graph.ops if graph.kind[op] == graph.ELEMENTWISE]
    for op in elementwise:
        segments.find(op)
        for v in op.operands:
            if not isinstance(v, BlockArgument) and graph.kind[v.owner] == graph.ELEMENTWISE:
                segments.union(op, v.owner)
    touches_accel: set[Operation] = set()
    touches_host: set[Operation] = set()
    for op in elementwise:
        root = segments.find(op)
        neighbours = [graph.producer_kind(v) for v in op.operands]
        neighbours += [graph.kind[graph.user(u.operation)] for r in op.results for u in r.uses]
        if graph.ACCEL in neighbours:
            touches_accel.add(root)
        if graph.HOST in neighbours:
            touches_host.add(root)
    packed_roots = touches_accel - touches_host
    packed_ops = {op for op in elementwise if segments.find(op) in packed_roots}

    def host_layout_op(op: Operation) -> bool:
        """A host op that needs (and makes) host-layout tensors."""
        kind = graph.kind[op]
        return kind == graph.HOST or (kind == graph.ELEMENTWISE and op not in packed_ops)

    flags = []
    for name, index in accel_calls:
        call = graph.ops[index]
        pack = any(
            graph.packing(v) is not None
            and not isinstance(v, BlockArgument)
            and host_layout_op(v.owner)
            for v in call.operands
        )
        unpack = any(
            graph.packing(r) is not None and host_layout_op(graph.user(u.operation))
            for r in call.results
            for u in r.uses
        )
        flags.append(CallFlags(name, index, pack, unpack))
    return HostPlan(host, calls, accel_calls, flags, block, packed_ops)


def _check_structure(module: ModuleOp, accelerators: dict[str, func.FuncOp]) -> None:
    for op in module.walk():
        if not isinstance(op, func.CallOp) or op.callee.string_value() not in accelerators:
            continue
        caller = op.parent_op()
        if not isinstance(caller, func.FuncOp):
            raise PassFailedException(
                f"insert-pack-unpack: call of @{op.callee.string_value()} inside "
                f"'{caller.name if caller else '?'}': accelerator calls must be at the top "
                "level of a function"
            )
        if TARGET_ATTR in caller.attributes:
            raise PassFailedException(
                f"insert-pack-unpack: accelerator function @{caller.sym_name.data} calls "
                f"accelerator function @{op.callee.string_value()}: not supported"
            )
        if len(caller.body.blocks) != 1:
            raise PassFailedException(
                f"insert-pack-unpack: @{caller.sym_name.data} has several blocks; host "
                "functions calling accelerator functions must have one"
            )
    for name, f in accelerators.items():
        if not f.body.blocks:
            raise PassFailedException(
                f"insert-pack-unpack: accelerator function @{name} has no body"
            )


def _module_block(module: ModuleOp, block: int | None) -> int:
    if block is not None:
        if block < 1:
            raise PassFailedException(f"insert-pack-unpack: block must be positive, got {block}")
        return block
    return target_block(module)


def plan_pack_unpack(module: ModuleOp, block: int | None = None) -> list[HostPlan]:
    """Steps 3.1-3.3 for every host function that calls an accelerator function (the module is
    not changed). `block` overrides the module target's channel block (for analysis)."""
    accelerators = {f.sym_name.data: f for f in accelerator_functions(module)}
    _check_structure(module, accelerators)
    if not accelerators:
        return []
    size = _module_block(module, block)
    plans = []
    for f in module.ops:
        if not isinstance(f, func.FuncOp) or TARGET_ATTR in f.attributes or not f.body.blocks:
            continue
        if len(f.body.blocks) != 1:
            continue  # _check_structure rejected it if it calls an accelerator
        plan = _plan_host(f, accelerators, size)
        if plan.accelerator_calls:
            plans.append(plan)
    return plans


# --------------------------------------------------------------------------------------------
# Rewriting (step 3.4)


def _name(conv: Operation, value: SSAValue, suffix: str) -> None:
    if value.name_hint is not None:
        conv.results[0].name_hint = f"{value.name_hint}_{suffix}"


def _rewrite_host(plan: HostPlan) -> None:
    body = plan.function.body.block
    ops = list(body.ops)
    packed_side = plan.packed_ops | {ops[i] for _, i in plan.accelerator_calls}

    def packing_of(value: SSAValue) -> accel.Packing | None:
        return activation_packing(value.type, plan.block)

    def produced_packed(value: SSAValue) -> bool:
        return not isinstance(value, BlockArgument) and value.owner in packed_side

    def consumed_packed(user: Operation) -> bool:
        top = body.find_ancestor_op_in_block(user)
        return top in packed_side

    # Decide on the original IR: the uses of each value that need the other layout.
    conversions = []
    for value in [*body.args, *(r for op in ops for r in op.results)]:
        packing = packing_of(value)
        if packing is None:
            continue
        packed = produced_packed(value)
        uses = [
            (u.operation, u.index) for u in value.uses if consumed_packed(u.operation) != packed
        ]
        if uses:
            owner = None if isinstance(value, BlockArgument) else value.owner
            index = value.index
            conversions.append((owner, index, value.type, packing, packed, uses))

    # Results on the packed side get packed types (new values: keep them by (owner, index)).
    retyped: dict[tuple[Operation, int], SSAValue] = {}
    for op in ops:
        if op not in packed_side:
            continue
        for r in list(op.results):
            packing = packing_of(r)
            if packing is not None:
                new = Rewriter.replace_value_with_new_type(r, accel.packed_type(r.type, packing))
                retyped[(op, r.index)] = new

    after: dict[Operation, Operation] = {}  # the last conversion inserted after a definition
    entry: Operation | None = None  # the last conversion of an argument
    for owner, index, plain_type, packing, packed, uses in conversions:
        value = (
            body.args[index] if owner is None else retyped.get((owner, index), owner.results[index])
        )
        if packed:
            conv: Operation = accel.UnpackOp(value, packing, plain_type)
        else:
            conv = accel.PackOp(value, packing, accel.default_padding_value(plain_type))
        if owner is None:
            point = InsertPoint.after(entry) if entry is not None else InsertPoint.at_start(body)
            entry = conv
        elif all(isinstance(user, func.ReturnOp) for user, _ in uses):
            point = InsertPoint.before(body.last_op)  # the graph's output: unpack last
        else:
            point = InsertPoint.after(after.get(owner, owner))
            after[owner] = conv
        _name(conv, value, "unpacked" if packed else "packed")
        Rewriter.insert_op(conv, point)
        for user, operand in uses:
            user.operands[operand] = conv.results[0]


def _pack_weights(f: func.FuncOp, block: int) -> None:
    """Constant `q.conv2d` / `q.dense` filters become packed constants plus an unpack (one per
    constant and filter zero point, right after the constant)."""
    from qaccel.kernels.layout import pack

    unpacked: dict[tuple[Operation, int], SSAValue] = {}
    for op in list(f.walk()):
        if isinstance(op, q.Conv2DOp):
            if op.filter.type.get_shape()[3] != op.input.type.get_shape()[3]:
                continue  # grouped: input channel blocks do not match the filter's
        elif not isinstance(op, q.DenseOp):
            continue
        const = op.filter.owner
        if not isinstance(const, tfl.ConstOp):
            continue
        zero_point = op.int_prop("filter_zero_point")
        value = unpacked.get((const, zero_point))
        if value is None:
            t = const.output.type
            packing = accel.Packing.weights(len(t.get_shape()), block, block)
            data = pack(const.as_array(), packing, zero_point)
            storage = const.value.type.element_type
            attr = DenseIntOrFPElementsAttr(
                TensorType(storage, data.shape), BytesAttr(data.tobytes())
            )
            packed = tfl.ConstOp(attr, accel.packed_type(t, packing))
            unpack = accel.UnpackOp(packed.output, packing, t)
            _name(packed, const.output, "packed")
            _name(unpack, const.output, "unpacked")
            Rewriter.insert_op([packed, unpack], InsertPoint.after(const))
            value = unpacked[(const, zero_point)] = unpack.output
        op.operands[1] = value
    for const in {const for const, _ in unpacked}:
        if not const.results[0].uses:
            Rewriter.erase_op(const)


def _rewrite_accelerator(f: func.FuncOp, block: int) -> None:
    """Packed arguments unpacked on entry, results packed before returning, weights packed."""
    body = f.body.block
    cursor: Operation | None = None
    for arg in list(body.args):
        packing = activation_packing(arg.type, block)
        if packing is None:
            continue
        plain_type = arg.type
        new_arg = Rewriter.replace_value_with_new_type(arg, accel.packed_type(plain_type, packing))
        unpack = accel.UnpackOp(new_arg, packing, plain_type)
        _name(unpack, new_arg, "unpacked")
        point = InsertPoint.after(cursor) if cursor is not None else InsertPoint.at_start(body)
        Rewriter.insert_op(unpack, point)
        cursor = unpack
        new_arg.replace_all_uses_with(unpack.output)
        unpack.operands[0] = new_arg
    for ret in [op for op in f.walk() if isinstance(op, func.ReturnOp)]:
        for i, v in enumerate(list(ret.operands)):
            packing = activation_packing(v.type, block)
            if packing is not None:
                pack_op = accel.PackOp(v, packing, accel.default_padding_value(v.type))
                _name(pack_op, v, "packed")
                Rewriter.insert_op(pack_op, InsertPoint.before(ret))
                ret.operands[i] = pack_op.output
    _pack_weights(f, block)
    f.update_function_type()
    f.attributes[accel.PACKED_FUNCTION_ATTR] = UnitAttr()


@dataclass(frozen=True)
class InsertPackUnpackPass(ModulePass):
    """Pack/unpack at CPU/accelerator borders so accelerator functions get the packed layout.

    The method's function-level transformation. Accelerator functions (`qaccel.target`) take
    and return tensors packed as `[N, ceil(C/B), H, W, 1, B]` (B: the block of the module's `#accel.target`); their
    bodies unpack on entry and pack before returning, and constant `q.conv2d` / `q.dense`
    weights are packed at compile time (`[O/B, I/B, KH, KW, B, B]`). Per accelerator call, in
    host program order: pack its inputs when a non-element-wise op lies before it (since the
    previous accelerator function, or the graph's input for the first one); unpack its results
    when one lies after it (until the next, or the graph's output for the last one).
    Element-wise ops between accelerator functions with no such op around them run on packed
    tensors, with no pack/unpack; graph inputs and outputs joined to accelerator functions
    only through such ops are packed on entry and unpacked before returning, so the host
    function's signature does not change.
    `print-flags=true` prints the `(function, pack, unpack)` list. The module docstring gives
    the exact reading on DAGs and what counts as element-wise.
    """

    name = "insert-pack-unpack"

    print_flags: bool = False
    """Print the calls, the accelerator calls and their (pack, unpack) flags to stderr."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        plans = plan_pack_unpack(op)
        if self.print_flags:
            for plan in plans:
                for line in plan.lines():
                    print(f"insert-pack-unpack: {line}", file=sys.stderr)
            sys.stderr.flush()
        accelerators = accelerator_functions(op)
        if not accelerators:
            return
        size = target_block(op)
        for plan in plans:
            _rewrite_host(plan)
        for f in accelerators:
            if accel.PACKED_FUNCTION_ATTR not in f.attributes:
                _rewrite_accelerator(f, size)
