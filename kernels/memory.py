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

The same budget bounds what the VTA simulators allocate (`targets/vta/budget.py`: the DRAM
image, the scratchpads and the hazard trackers) and the arrays an artifact's `.npz` files
declare (`check_npz`, read from their headers before loading them). The C machine reads the
variable itself (`vta_machine.c`, `env_limit`), with the same grammar: a whole or decimal
number (at most three decimals) with an optional K, M, G or T (powers of 1024), optionally
followed by `B` or `iB`; `none` or `0` disables. This module sits in `kernels/` (the bottom
layer) because the simulators and the run plan must not import xDSL.
"""

from __future__ import annotations

import io
import math
import os
import re
import zipfile

ENV_VAR = "QACCEL_MEMORY_LIMIT"
DEFAULT_LIMIT = 4 << 30
_SUFFIXES = {"": 1, "B": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}


class MemoryBudgetError(ValueError):
    """Declared tensors above the memory budget, or an unreadable budget, as one line."""


_LIMIT = re.compile(r"([0-9]{1,30})(?:\.([0-9]{0,3}))?[ \t]*(?:([KMGT])(?:I?B)?|B)?", re.IGNORECASE)


def parse_limit(env_var: str, default: int, error=None) -> int | None:
    """The limit `env_var` sets (`default` when unset), None when disabled.

    Raises `error` (a ValueError subclass, MemoryBudgetError by default) on a malformed value.
    """
    text = os.environ.get(env_var, "").strip(" \t\n\r\f\v")  # C's isspace
    if not text:
        return default
    if text.lower() == "none":
        return None
    match = _LIMIT.fullmatch(text)
    if match is None:
        raise (error or MemoryBudgetError)(
            f"{env_var}={text!r}: expected a number, optionally with K, M, G or T, or none"
        )
    whole, frac, unit = match.group(1), match.group(2) or "", (match.group(3) or "").upper()
    scale = 10 ** len(frac)
    limit = int(whole + frac) * _SUFFIXES[unit] // scale
    return None if limit == 0 else limit


def memory_limit() -> int | None:
    """The budget in bytes, None when disabled."""
    return parse_limit(ENV_VAR, DEFAULT_LIMIT)


def format_bytes(n: int) -> str:
    for unit, size in (("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{n} bytes"


def _check(total_bytes: int, claim: str) -> None:
    """Raise MemoryBudgetError ("{claim}, above the memory limit of ...") above the budget."""
    limit = memory_limit()
    if limit is not None and total_bytes > limit:
        raise MemoryBudgetError(
            f"{claim}, above the memory limit of {format_bytes(limit)} (raise it with {ENV_VAR})"
        )


def check_budget(total_bytes: int, what: str) -> None:
    """Raise MemoryBudgetError if `what` (e.g. "model.tflite: subgraph 0") declares more
    tensor bytes than the budget allows."""
    _check(total_bytes, f"{what} declares {format_bytes(total_bytes)} of tensors")


def check_bytes(total_bytes: int, what: str) -> None:
    """Raise MemoryBudgetError if `what` (e.g. "the simulator state (DRAM image 5.0 GiB, ...)")
    needs more bytes than the budget allows."""
    _check(total_bytes, f"{what} needs {format_bytes(total_bytes)}")


def npz_declared_bytes(source) -> int:
    """The bytes the arrays of an `.npz` (a path, bytes or a binary file) declare in their
    headers, without inflating them. Raises ValueError when it is not a readable `.npz`."""
    import numpy as np

    if isinstance(source, bytes | bytearray | memoryview):
        source = io.BytesIO(bytes(source))
    total = 0
    try:
        with zipfile.ZipFile(source) as z:
            for info in z.infolist():
                if not info.filename.endswith(".npy"):
                    continue
                with z.open(info) as f:
                    version = np.lib.format.read_magic(f)
                    if version == (1, 0):
                        shape, _, dtype = np.lib.format.read_array_header_1_0(f)
                    else:
                        shape, _, dtype = np.lib.format.read_array_header_2_0(f)
                total += math.prod(shape) * dtype.itemsize
    except (zipfile.BadZipFile, OSError, EOFError, ValueError, KeyError, TypeError) as e:
        raise ValueError(f"not a readable .npz ({e})") from None
    return total


def check_npz(source, what: str) -> None:
    """Refuse, before loading it, an `.npz` whose arrays declare more than the budget."""
    check_bytes(npz_declared_bytes(source), what)
