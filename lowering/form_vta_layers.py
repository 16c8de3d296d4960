"""`form-vta-layers`: make each accelerator layer of a `vta` function one `vta.layer` op.

A layer is what the accelerator runs as one instruction stream (`lowering/vta/layers.py`):

- `conv` / `depthwise` / `dense`: an `accel.conv2d_zp` / `accel.dense_zp` with its
  requantization tail (bias, shifts, rounding multiply, clamp, zero point, narrowing);
- `eltwise`: a tree of ALU ops (adds, multiplies, clamps, shifts, rounding multiplies, at
  most one global sum pool) from GEMM layers' outputs or widened int8 tensors to an
  `accel.narrow` to int8 (a residual add with its requantization); an operand of one row per
  channel block (`[N, C/B, 1, 1, 1, B]`, a squeeze-excite scale) may be broadcast over the
  map's rows;
- `pool`: a windowed max or sum pool of an int8 tensor (its padding with the pool's identity
  included) or of such a tree, with its constant tail, narrowed to int8.

The layer's ops move into the body of the `vta.layer`, which takes the place of the last
one; its results are the value the layer stores (result 0) and, when other ops read it, the
int32 value it narrows (result 1). The body reads its inputs and weights from above, so the
layer computes exactly what its ops computed (the interpreter runs the body):

    %acc = accel.conv2d_zp %x, %w pad_value(-1) ... -> tensor<1x1x8x8x1x16xi32>
    %b = accel.bias_add_zp %acc by [...] : ...
    %m = accel.round_multiply %b by [...] : ...
    ...
    %y = accel.narrow %c : tensor<1x1x8x8x1x16xi32> -> tensor<1x1x8x8x1x16xi8>
  becomes
    %y = vta.layer "conv" {
      %acc = accel.conv2d_zp %x, %w pad_value(-1) ...
      ...
      %y_1 = accel.narrow %c : ...
      vta.yield %y_1 : tensor<1x1x8x8x1x16xi8>
    } : tensor<1x1x8x8x1x16xi8>

Before the trees are matched, an int8-valued result several trees read (canonicalization
folded its narrowing away) gets its `accel.narrow` back, so its tree is a layer the others
read from DRAM, and a widening several trees read is cloned per tree
(`lowering/vta/shared_values.py`). A tree that `qaccel-compile`'s cost model keeps on the host
goes back into the program as host steps without them (`backends/vta/alu_or_host.py`).

Ops that form no layer (pads, concatenations, a GEMM op whose tail is not a requantization,
trees that do not end in an int8 narrowing, `accel.host_requantize`) stay where they are and
run on the host; a GEMM op or an `accel.narrow` that forms none says why in
`accel.host_reason` (reported by `qaccel-compile`). Functions that already hold layers are
left alone (the pass is idempotent).
`schedule-vta` then gives every layer its `#vta.<kind>_schedule`.
"""

from __future__ import annotations

from dataclasses import dataclass

from qaccel.dialects import accel, vta
from qaccel.lowering.vta.layers import (
    AluMatch,
    LayerMatch,
    NotALayer,
    PoolMatch,
    match_alu_layer,
    match_layer,
    match_pool_layer,
)
from qaccel.lowering.vta.shared_values import split_shared_values
from qaccel.lowering.vta.program_order import hoist_gemm_layers
from qaccel.passes.annotate_target import TARGET_ATTR
from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, StringAttr
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.passes import ModulePass


def vta_functions(module: ModuleOp) -> list[func.FuncOp]:
    """The accelerator functions of `module` that target `vta`."""
    out = []
    for f in module.ops:
        target = f.attributes.get(TARGET_ATTR) if isinstance(f, func.FuncOp) else None
        if isinstance(target, StringAttr) and target.data == "vta":
            out.append(f)
    return out


HOST_REASON_ATTR = "accel.host_reason"
"""Why an op that could start or end a layer (a GEMM op, an `accel.narrow`) forms none: it
runs on the host, and `qaccel-compile` reports this reason."""


def match_layers(
    f: func.FuncOp, reasons: dict[Operation, str] | None = None
) -> list[tuple[str, LayerMatch | AluMatch | PoolMatch]]:
    """Every layer of `f`'s body as (kind, match): the GEMM layers, then the element-wise
    trees and pools over their outputs (and over int8 tensors), in body order. `reasons`
    receives why each GEMM op or narrowing that ends no layer forms none."""
    reasons = {} if reasons is None else reasons
    name = f.sym_name.data
    found: list[tuple[str, LayerMatch | AluMatch | PoolMatch]] = []
    leaves: dict[SSAValue, tuple[SSAValue, int]] = {}
    claimed: set[Operation] = set()
    for op in f.body.block.ops:
        if not isinstance(op, accel.Conv2DZpOp | accel.DenseZpOp):
            continue
        try:
            m = match_layer(op, f"{name}_layer{len(found)}")
        except NotALayer as e:
            reasons[op] = str(e)
            continue
        found.append((m.layer.kind, m))
        claimed.update(m.ops)
        if m.offset is not None:
            leaves[m.output] = (m.output, m.offset)
        if m.widened is not None:
            leaves[m.widened] = (m.output, 0)
    split_shared_values(f.body.block, claimed)
    n_alu = 0
    for op in list(f.body.block.ops):
        if not isinstance(op, accel.NarrowOp) or op in claimed:
            continue
        kind = "eltwise"
        try:
            am = match_alu_layer(op, leaves, claimed, f"{name}_eltwise{n_alu}")
        except NotALayer as e:
            try:
                am = match_pool_layer(op, leaves, claimed, f"{name}_pool{n_alu}")
            except NotALayer:
                reasons[op] = str(e)
                continue
            if any(o in claimed for o in am.ops):
                reasons[op] = str(e)
                continue
            kind = "pool"
        n_alu += 1
        claimed.update(am.ops)
        if am.widened is not None:
            leaves[am.widened] = (am.output, 0)
        found.append((kind, am))
    return found


def form_layer(
    kind: str, ops: list[Operation], yielded: list[SSAValue],
    position: dict[Operation, int] | None = None,
) -> vta.LayerOp:  # fmt: skip
    """Move `ops` (of one block) into a new `vta.layer` of `kind` at the place of the last
    of them, yielding `yielded`; `NotALayer` (nothing changed) when another value of the
    group is used outside it or a user of a yielded value comes before that place.

    `position` (optional, kept up to date here): the block's ops numbered in order, for
    several layers formed in one block (the new layer takes the number of its last op)."""
    block = ops[0].parent_block()
    assert block is not None
    if position is None:
        position = {op: i for i, op in enumerate(block.ops)}
    group = set(ops)
    ordered = sorted(ops, key=position.__getitem__)
    anchor = ordered[-1]
    for op in ordered:
        for result in op.results:
            outside = [u.operation for u in result.uses if u.operation not in group]
            if outside and result not in yielded:
                raise NotALayer(f"{op.name}'s result is also used outside the layer")
            for user in outside:
                top = user
                while top.parent_op() is not None and top.parent_block() is not block:
                    top = top.parent_op()  # type: ignore[assignment]
                if position.get(top, len(position)) < position[anchor]:
                    raise NotALayer(f"{user.name} reads the layer's value before its last op")
    layer = vta.LayerOp(kind, [v.type for v in yielded], Region(Block()))
    block.insert_op_after(layer, anchor)
    position[layer] = position[anchor]  # the order of the block's other ops is unchanged
    for value, result in zip(yielded, layer.outputs, strict=True):
        value.replace_uses_with_if(result, lambda use: use.operation not in group)
    for op in ordered:
        op.detach()
        layer.body.block.add_op(op)
    layer.body.block.add_op(vta.YieldOp(yielded))
    return layer


@dataclass(frozen=True)
class FormVtaLayersPass(ModulePass):
    """Make each layer of a `vta` accelerator function (a GEMM op with its requantization
    tail, an element-wise tree, a pool) one `vta.layer` op holding its ops.

    A GEMM layer that reads nothing computed since the GEMM layer before it then runs right
    after that layer, so the host steps between them join the next run of host steps: one
    program stop fewer (`lowering/vta/program_order.py`).

    Runs after `lower-q-to-accel`, before `schedule-vta`."""

    name = "form-vta-layers"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for f in vta_functions(op):
            if any(isinstance(o, vta.LayerOp) for o in f.body.block.ops):
                continue
            reasons: dict[Operation, str] = {}
            position: dict[Operation, int] | None = None
            for kind, m in match_layers(f, reasons):
                yielded = [m.output] if m.widened is None else [m.output, m.widened]
                if position is None:  # after match_layers' changes to the block
                    position = {o: i for i, o in enumerate(f.body.block.ops)}
                try:
                    shared = position if m.ops[0].parent_block() is f.body.block else None
                    form_layer(kind, list(m.ops), yielded, shared)
                except NotALayer as e:  # the GEMM op, or the narrowing, says why
                    root = m.ops[0] if isinstance(m, LayerMatch) else m.output.owner
                    reasons[root] = str(e)  # type: ignore[index]
            for o, why in reasons.items():
                o.attributes[HOST_REASON_ATTR] = StringAttr(why)
            hoist_gemm_layers(f.body.block)  # fewer program stops (lowering/vta/program_order.py)
