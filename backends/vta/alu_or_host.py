"""Whether an element-wise or pool layer that reads a host step's result runs on the ALU or
stays a host step.

On the ALU an element-wise or pool layer costs its program's cycles (loads of every input row, the
steps, the store); on the host, the host's work on its elements (`targets/vta/host_cost.py`'s
`host_tree_cycles`). The program stops once for each run of host steps between two layers.
Only layers that read a host step's result (a table lookup's, a host pool's, or a tree's
still to be decided) are priced: a layer between layers keeps its place on the ALU.

They are decided for the whole program at once (`place_trees`): the cheapest placement by the
cost model, each layer's ALU cycles or host work plus one stop per run of host steps, found in
one pass over the program (`_best`). A tree whose ALU program saves no stop stays with the host
steps around it, and the trees between two layers (a squeeze-excite block around its table
lookups) are decided together, not one by one in program order. A tree kept on the host goes
back into the program as host steps (`dissolve`), without the narrowing and the widening
copies `form-vta-layers` added so that it could be a layer; when a layer on the ALU reads its
int32 result it stays a layer the host runs, which stores the int8 value, and that cost is
weighed too. The report gives each kept tree's figures.
"""

from __future__ import annotations

from qaccel.backends.vta.compiled import top_level
from qaccel.dialects import tfl, vta
from qaccel.targets.vta.host_cost import (host_op_ns, host_steps_cycles, host_sync_cycles,
                                          host_tree_cycles)
from xdsl.dialects import func
from xdsl.ir import Operation


def tree_end(op: Operation) -> Operation | None:
    """The narrowing to int8 (or the formed layer holding it) that an ALU op's result flows
    to through ops of one user each, at the top level of its block; None when there is none."""
    from qaccel.dialects import accel

    block = op.parent_block()
    seen = 0
    while seen < 256 and op.results:
        seen += 1
        if isinstance(op, accel.NarrowOp | vta.LayerOp):
            return op
        users = {top_level(u.operation, block) for r in op.results for u in r.uses}
        if len(users) != 1:
            return None
        op = users.pop()
        if not isinstance(op, accel._ComputeOp | vta.LayerOp):
            return None
    return None


# --------------------------------------------------------------------------------------------
# Deciding the trees that read host steps together, per run of host steps


def reads_host_step(op: vta.LayerOp, on_accel: set[Operation]) -> bool:
    """An input of the layer is computed by a top-level op of the program outside `on_accel`
    (a host step, a layer that runs on the host or one still to be decided), not by a layer
    of `on_accel`, a constant or the function's argument."""
    block = op.parent_block()
    inside = set(op.body_ops())
    for inner in inside:
        for v in inner.operands:
            owner = v.owner
            if owner in inside or not isinstance(owner, Operation) or isinstance(owner, tfl.ConstOp):
                continue
            if top_level(owner, block) not in on_accel:
                return True
    return False


_LAYER, _HOST = 0, 1


def _best(seq: list[tuple[int, int, int]], stop: int) -> tuple[int, list[int]]:
    """The cheapest placement of a program's ops `seq` (per op: its kind, `_LAYER` / `_HOST` for a
    fixed one or -1 for a choice, with its ALU and host cycles): (its cycles, each op's place).
    A run of host steps between two layers stops the program once (`stop` cycles); fixed
    ops' own cycles are not counted. Ties go to the ALU."""
    inf = float("inf")
    # states: 0 no layer yet, 1 after a layer, 2 host steps pending after a layer
    cost = [0.0, inf, inf]
    back: list[list[tuple[int, int]]] = []  # per op and state reached: (state before, place)
    for kind, alu, host in seq:
        new, choice = [inf, inf, inf], [(-1, -1)] * 3
        for s, c in enumerate(cost):
            if c == inf:
                continue
            if kind != _HOST:  # on the accelerator
                t, c2 = 1, c + (stop if s == 2 else 0) + (alu if kind < 0 else 0)
                if c2 < new[t] or (c2 == new[t] and choice[t][1] == _HOST):
                    new[t], choice[t] = c2, (s, _LAYER)
            if kind != _LAYER:  # on the host
                t, c2 = (0 if s == 0 else 2), c + (host if kind < 0 else 0)
                if c2 < new[t]:
                    new[t], choice[t] = c2, (s, _HOST)
        cost = new
        back.append(choice)
    s = min(range(3), key=lambda i: (cost[i], i))
    total, places = cost[s], [0] * len(seq)
    for i in range(len(seq) - 1, -1, -1):
        s, places[i] = back[i][s]
    return int(total), places


def _cost(seq: list[tuple[int, int, int]], places: list[int], stop: int,
          pairs: list[tuple[int, int, int]]) -> int:
    """The cycles of the placement `places` of `seq` (as `_best` counts them), plus each of
    `pairs`' (i, j, cycles) when op i is on the host and op j on the accelerator."""
    total, state = 0, 0
    for (kind, alu, host), place in zip(seq, places, strict=True):
        if place == _LAYER:
            total += (stop if state == 2 else 0) + (alu if kind < 0 else 0)
            state = 1
        else:
            total += host if kind < 0 else 0
            state = 0 if state == 0 else 2
    return total + sum(extra for i, j, extra in pairs
                       if places[i] == _HOST and places[j] == _LAYER)  # fmt: skip


def place_trees(ops: list[Operation], on_accel: set[Operation],
                costs: dict[Operation, tuple[int, int]], config) -> dict[Operation, str]:  # fmt: skip
    """Which of the layers of `costs` (element-wise and pool layers reading host steps, each
    with its ALU program's and its host work's cycles) stay on the host, each with why.

    The layers of `on_accel` run on the accelerator and every other op of `ops` (constants
    and the return aside) on the host. The choice is the cheapest for the whole program by
    the cost model: each layer's ALU cycles or host work, plus one stop per run of host steps
    between two layers (`_best`). So a tree whose ALU program saves no stop stays with the
    host steps around it, and trees between two host steps (a squeeze-excite block around
    its table lookups) are decided together. A tree on the host whose int32 result a layer
    on the accelerator reads stays a layer run by the host (`dissolve`): it stores the int8
    value for it, copying its results, else its ops go back in the program without the
    narrowing nobody reads; the choice is then improved one such layer or reader at a time
    (the best change first) with that counted."""
    from qaccel.dialects import accel

    seq_ops = [o for o in ops if not isinstance(o, tfl.ConstOp | func.ReturnOp)]
    index = {o: i for i, o in enumerate(seq_ops)}
    host_of: dict[Operation, int] = {}
    pairs: list[tuple[int, int, int]] = []
    for o, (alu, host) in costs.items():
        assert isinstance(o, vta.LayerOp)
        # a layer the host runs also copies its results out: priced as the report prices it
        wrapped = host_steps_cycles(host_op_ns(o), 0, config)
        end = o.body_ops()[-1]
        if isinstance(end, accel.NarrowOp) and not o.results[0].uses:
            dissolved = host - host_tree_cycles([end], config)
        else:
            dissolved = host
        block = o.parent_block()
        readers = {top_level(u.operation, block) for r in o.results[1:] for u in r.uses}
        if any(r in on_accel for r in readers):
            host_of[o] = host + wrapped
            continue
        host_of[o] = dissolved
        pairs += [(index[o], index[r], host + wrapped - dissolved) for r in readers
                  if r in costs and r in index]  # fmt: skip
    seq = [(-1, costs[o][0], host_of[o]) if o in costs
           else ((_LAYER if o in on_accel else _HOST), 0, 0) for o in seq_ops]  # fmt: skip
    stop = host_sync_cycles(config)
    places = _best(seq, stop)[1]
    total = _cost(seq, places, stop, pairs)
    choices = sorted({i for pair in pairs for i in pair[:2]})
    for _ in range(len(choices)):  # the best single change while one pays
        flips = []
        for i in choices:
            places[i] ^= 1
            flips.append((_cost(seq, places, stop, pairs), i))
            places[i] ^= 1
        c, i = min(flips, default=(total, -1))
        if c >= total:
            break
        total, places[i] = c, places[i] ^ 1
    out: dict[Operation, str] = {}
    for i, o in enumerate(seq_ops):
        if o not in costs or places[i] != _HOST:
            continue
        alu, host = costs[o][0], host_of[o]
        before = i > 0 and places[i - 1] == _HOST
        after = i + 1 >= len(seq) or places[i + 1] == _HOST  # the return is the host's
        local_host = host + (0 if before or after else stop)
        local_alu = alu + (stop if before and after else 0)
        if local_alu > local_host:
            out[o] = (f"kept on the host: the cost model prices it at {local_host} cycles of host "
                      f"work against {local_alu} on the ALU (its program"
                      + (", and the program's stop between the host steps around it)"
                         if before and after else ")"))
            continue
        places[i] = _LAYER
        more = _cost(seq, places, stop, pairs) - total
        places[i] = _HOST
        out[o] = (f"kept on the host with the trees around it: {host} cycles of host work "
                  f"against {alu} on the ALU, but with it on the ALU the program would cost "
                  f"{more} cycles more by the cost model (the host work, ALU programs and "
                  "program stops of the trees around it, decided together)")
    return out


def dissolve(layer: vta.LayerOp, on_host: set[Operation]) -> list[Operation] | None:
    """Put the ops of an element-wise or pool layer that runs on the host back in the block in
    its place (its `vta.layer` is only a wrapper then: the host would copy its results), and
    drop the narrowing `form-vta-layers` put back when nothing reads it now. The ops moved,
    or None (nothing changed) when a later layer not in `on_host` reads its int32 result from
    DRAM: that needs the int8 value the layer stores."""
    block = layer.parent_block()
    assert block is not None
    yielded = list(layer.body.block.last_op.operands)  # type: ignore[union-attr]
    if any(r.type != v.type for r, v in zip(layer.results, yielded, strict=True)):
        return None
    readers = {top_level(u.operation, block) for r in layer.results[1:] for u in r.uses}
    if any(isinstance(r, vta.LayerOp) and r not in on_host for r in readers):
        return None
    moved = layer.body_ops()
    for o in moved:
        o.detach()
        block.insert_op_before(o, layer)
    for r, v in zip(layer.results, yielded, strict=True):
        r.replace_all_uses_with(v)
    block.erase_op(layer)
    end = yielded[0].owner
    from qaccel.dialects import accel

    if isinstance(end, accel.NarrowOp) and not end.output.uses:
        moved.remove(end)
        block.erase_op(end)
    return moved


def merge_widenings(block, ops: list[Operation]) -> int:
    """Give the host's widenings of one int8 value in `block` one op again (`form-vta-layers`
    copies a widening per tree; trees back on the host share it): the later of `ops` that
    widen a value an earlier top-level widening of `block` widens read that one. The number
    of widenings removed."""
    from qaccel.dialects import accel

    candidates = set(ops)
    first: dict[tuple, Operation] = {}
    removed = 0
    for o in list(block.ops):
        if not isinstance(o, accel.WidenOp):
            continue
        key = (o.input, o.output.type)
        if key not in first:
            first[key] = o
        elif o in candidates:
            o.output.replace_all_uses_with(first[key].output)
            block.erase_op(o)
            removed += 1
    return removed


__all__ = ["dissolve", "merge_widenings", "place_trees", "reads_host_step",
           "tree_end"]
