"""The memory budget for declared tensor sizes, checked before anything is allocated.

A model declares its tensors' shapes; a corrupt or hostile one can declare tensors of hundreds
of GiB, which numpy would try to allocate (and the machine would swap or kill us). The importer
and the interpreter add up the bytes a module's tensors declare and refuse, in one line, a
module above the budget:

    model.tflite: subgraph 0 declares 447.0 GiB of tensors, above the memory limit of 4.0 GiB
    (raise it with QACCEL_MEMORY_LIMIT)

The budget is 4 GiB unless the environment variable `QACCEL_MEMORY_LIMIT` sets another, in
bytes or with a K/M/G/T suffix (`QACCEL_MEMORY_LIMIT=16G`); `0` or `none` disables the check.
An environment variable rather than a flag: every tool and library entry point (qaccel-opt's
`--verify-semantics`, qaccel-run, qaccel-compile, tests) honours it without plumbing.
"""

from __future__ import annotations

import math
import os

ENV_VAR = "QACCEL_MEMORY_LIMIT"
DEFAULT_LIMIT = 4 << 30
_SUFFIXES = {"": 1, "B": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}


class MemoryBudgetError(ValueError):
    """Declared tensors above the memory budget, or an unreadable budget, as one line."""


def memory_limit() -> int | None:
    """The budget in bytes, None when disabled."""
    text = os.environ.get(ENV_VAR, "").strip()
    if not text:
        return DEFAULT_LIMIT
    if text.lower() == "none":
        return None
    number, unit = text.rstrip("BbKkMmGgTtIi"), text[len(text.rstrip("BbKkMmGgTtIi")):]
    unit = unit.upper().removesuffix("IB").removesuffix("B") if unit.upper() not in ("B",) else ""
    try:
        value = float(number)
    except ValueError:
        value = math.nan
    if unit not in _SUFFIXES or not math.isfinite(value) or value < 0:
        raise MemoryBudgetError(
            f"{ENV_VAR}={text!r}: expected a number of bytes, optionally with K, M, G or T"
        )
    limit = int(value * _SUFFIXES[unit])
    return None if limit == 0 else limit


def format_bytes(n: int) -> str:
    for unit, size in (("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{n} bytes"


def check_budget(total_bytes: int, what: str) -> None:
    """Raise MemoryBudgetError if `what` (e.g. "model.tflite: subgraph 0") declares more
    tensor bytes than the budget allows."""
    limit = memory_limit()
    if limit is not None and total_bytes > limit:
        raise MemoryBudgetError(
            f"{what} declares {format_bytes(total_bytes)} of tensors, above the memory limit "
            f"of {format_bytes(limit)} (raise it with {ENV_VAR})"
        )
