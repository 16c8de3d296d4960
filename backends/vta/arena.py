"""The activation arena of an accelerator function: one DRAM region, reused by liveness.

Each accelerator function has one DRAM image: the arena `[0, arena_size)`, then every layer's
constants. Every packed tensor a layer reads or writes has a slot in the arena, alive from the
time it is written until the last layer that reads it (times are op positions in the function
body). A layer's output goes straight into the slot its consumers read, so consecutive layers
exchange activations in DRAM without the host; the host writes a slot only for a tensor it
produced (a function argument, or the result of an op that runs on the host) and reads one
back only when a host op or the function's return uses it.

Slots of tensors alive at the same time never overlap; a layer's input and output are both
alive when it runs, so they never alias. Allocation is greedy, largest tensor first, at the
lowest 256-byte-aligned offset (or the slot's own `align`, e.g. a whole weight tile for a
layer's run-time weights) that is free during its lifetime (the classic heuristic for
interval-graph packing used by TFLite's and TVM's static memory planners).

    slots = [Slot(nbytes=..., start=2, end=5), ...]
    size = allocate(slots)          # sets slot.offset; the arena's size in bytes
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

ALIGN = 256


def _align(n: int) -> int:
    return -(-n // ALIGN) * ALIGN


@dataclass
class Slot:
    """One packed tensor in the arena: `nbytes`, alive over op positions [start, end]."""

    nbytes: int
    start: int
    end: int
    offset: int = -1
    align: int = ALIGN  # a power of two: a run-time weight value needs whole weight tiles

    def overlaps_in_time(self, other: Slot) -> bool:
        return self.start <= other.end and other.start <= self.end


def allocate(slots: Sequence[Slot]) -> int:
    """Give every slot an aligned offset; slots alive at the same time get disjoint bytes.
    Returns the arena's size (aligned)."""
    placed: list[Slot] = []
    size = 0
    for s in sorted(slots, key=lambda s: (-s.nbytes, s.start, s.end)):
        busy = sorted(
            (p.offset, p.offset + _align(p.nbytes)) for p in placed if p.overlaps_in_time(s)
        )
        at = 0
        for lo, hi in busy:
            if at + s.nbytes <= lo:
                break
            at = max(at, -(-hi // s.align) * s.align)
        s.offset = at
        placed.append(s)
        size = max(size, at + _align(s.nbytes))
    return size


def check(slots: Sequence[Slot]) -> None:
    """AssertionError when two slots alive at the same time share a byte."""
    for i, a in enumerate(slots):
        for b in slots[i + 1 :]:
            if a.overlaps_in_time(b):
                assert a.offset + a.nbytes <= b.offset or b.offset + b.nbytes <= a.offset, (a, b)
