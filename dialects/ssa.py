"""SSA dominance of parsed and imported IR, which xDSL 0.74's verifier does not check.

In a single-block region a value may be used only after its definition: by a later op of the
same block, inside the regions of a later op, or as a block argument of an enclosing block.
A value used by its own defining op, or before its definition, is refused:

    %4 = q.bias_add %4, %b : ...
    f.mlir: @f: op 0 (q.bias_add) uses its own result as operand 0

A region with several blocks (control flow: `cf.br`, `cf.cond_br`, ... inside a `func.func`)
follows MLIR's rules, from the dominator tree of its control-flow graph (the successors of
each block's terminator, from the entry block; Cooper, Harvey and Kennedy's iterative
algorithm): a block's arguments dominate it, and a value defined in block A may be used in
block B != A (directly or in the regions of its ops) only when A strictly dominates B:

    f.mlir: @f: block 2 op 0 (cf.br): operand 0 (%x) is defined in block 1, which does not
    dominate block 2

As in MLIR's verifier, the ops of a block unreachable from the entry block are not checked
against the values of their region (an unreachable block is dominated by every block); a value
defined in an unreachable block dominates no other block. The check is linear in the size of
the IR plus the dominator computation, which is linear for the usual reducible control flow;
single-block regions (every imported module) take the ordered walk alone.
"""

from __future__ import annotations

from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.utils.exceptions import VerifyException


def verify_dominance(root: Operation, source: str = "<input>") -> None:
    """Raise VerifyException naming the first op that uses a value not dominating it."""
    visible: set[SSAValue] = set()
    for region in root.regions:
        _check_region(region, visible, source)


def _where(op: Operation) -> str:
    """`@f: op 3 (q.bias_add)`: the op's function (if any) and its index in its block (with
    the block's index when its region has several)."""
    index = list(op.parent.ops).index(op) if op.parent is not None else 0
    block = ""
    region = op.parent.parent if op.parent is not None else None
    if region is not None and region.first_block is not region.last_block:
        block = f"block {list(region.blocks).index(op.parent)} "
    parent = op.parent_op()
    while parent is not None and "sym_name" not in parent.properties:
        parent = parent.parent_op()
    fn = f"@{parent.properties['sym_name'].data}: " if parent is not None else ""
    return f"{fn}{block}op {index} ({op.name})"


def _defining_block(value: SSAValue) -> Block | None:
    owner = value.owner
    return owner if isinstance(owner, Block) else owner.parent


def _error(source: str, op: Operation, i: int, value: SSAValue) -> VerifyException:
    name = f"%{value.name_hint}" if value.name_hint else "its value"
    if value.owner is op:
        return VerifyException(f"{source}: {_where(op)} uses its own result as operand {i}")
    home = _defining_block(value)
    region = home.parent if home is not None else None
    user = op  # the ancestor of `op` in the value's region
    while user is not None and (user.parent is None or user.parent.parent is not region):
        user = user.parent_op()
    if region is not None and user is not None and user.parent is not home:
        blocks = list(region.blocks)
        return VerifyException(
            f"{source}: {_where(op)}: operand {i} ({name}) is defined in block "
            f"{blocks.index(home)}, which does not dominate block {blocks.index(user.parent)}"
        )
    if isinstance(value.owner, Operation) and value.owner.parent is not None:
        return VerifyException(
            f"{source}: {_where(op)}: operand {i} ({name}) is used before its definition by "
            f"{_where(value.owner).split(': ')[-1]}"
        )
    return VerifyException(f"{source}: {_where(op)}: operand {i} is not visible here")


def _check_block(block: Block, visible: set[SSAValue], added: list[SSAValue], source: str):
    """The ops of `block` in order; its arguments and results stay visible (in `added`)."""
    visible.update(block.args)
    added.extend(block.args)
    for op in block.ops:
        for i, operand in enumerate(op.operands):
            if operand not in visible:
                raise _error(source, op, i, operand)
        for inner in op.regions:
            _check_region(inner, visible, source)
        visible.update(op.results)
        added.extend(op.results)


def _check_region(region: Region, visible: set[SSAValue], source: str) -> None:
    if region.first_block is None:
        return
    if region.first_block is region.last_block:
        added: list[SSAValue] = []
        try:
            _check_block(region.first_block, visible, added, source)
        finally:
            visible.difference_update(added)
        return
    _check_cfg(region, visible, source)


def _successors(block: Block, region: Region) -> list[Block]:
    last = block.last_op
    return [s for s in last.successors if s.parent is region] if last is not None else []


def dominator_tree(region: Region) -> tuple[list[Block], dict[Block, Block]]:
    """(the blocks reachable from the entry in reverse postorder, the immediate dominator of
    each; the entry's is itself)."""
    entry = region.first_block
    assert entry is not None
    order: list[Block] = []  # postorder
    seen = {entry}
    stack = [(entry, iter(_successors(entry, region)))]
    while stack:
        block, successors = stack[-1]
        for succ in successors:
            if succ not in seen:
                seen.add(succ)
                stack.append((succ, iter(_successors(succ, region))))
                break
        else:
            order.append(block)
            stack.pop()
    order.reverse()
    number = {b: k for k, b in enumerate(order)}
    preds: dict[Block, list[Block]] = {b: [] for b in order}
    for b in order:
        for succ in _successors(b, region):
            preds[succ].append(b)
    idom = {entry: entry}
    changed = True
    while changed:
        changed = False
        for b in order[1:]:
            new = None
            for p in preds[b]:
                if p not in idom:
                    continue
                if new is None:
                    new = p
                    continue
                a, c = p, new  # the nearest common dominator of the two
                while a is not c:
                    while number[a] > number[c]:
                        a = idom[a]
                    while number[c] > number[a]:
                        c = idom[c]
                new = a
            if idom.get(b) is not new:
                idom[b] = new
                changed = True
    return order, idom


def _check_cfg(region: Region, visible: set[SSAValue], source: str) -> None:
    order, idom = dominator_tree(region)
    children: dict[Block, list[Block]] = {b: [] for b in order}
    for b in order[1:]:
        children[idom[b]].append(b)
    # Walk the dominator tree: a block sees what its dominators define.
    stack: list[tuple[Block, list[SSAValue] | None]] = [(order[0], None)]
    try:
        while stack:
            block, added = stack.pop()
            if added is not None:  # leaving the block's subtree
                visible.difference_update(added)
                continue
            added = []
            stack.append((block, added))
            _check_block(block, visible, added, source)
            stack.extend((child, None) for child in reversed(children[block]))
    finally:
        for _, added in stack:
            if added:
                visible.difference_update(added)
    reachable = set(order)
    unreachable = [b for b in region.blocks if b not in reachable]
    if not unreachable:
        return
    # MLIR's verifier checks no op of an unreachable block against its region's values.
    everything = [v for b in region.blocks for v in b.args]
    everything += [r for b in region.blocks for op in b.ops for r in op.results]
    fresh = [v for v in everything if v not in visible]
    visible.update(fresh)
    try:
        for block in unreachable:
            _check_block(block, visible, [], source)  # adds only values already in `fresh`
    finally:
        visible.difference_update(fresh)
