"""What every qaccel command-line tool shares: one-line errors, argument errors in the same
form, checks of output locations before any work, and the last line of defence against inputs
that exhaust Python itself (nesting deeper than the recursion limit, memory).

    qaccel-compile: error: 'out': exists and is not a directory
    qaccel-sim: error: the following arguments are required: program

Every tool reports bad input as exactly one line `<tool>: error: ...` on stderr and exits with
status 1 (argparse's usage errors included, which would otherwise print the usage and exit 2).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import NoReturn, TypeVar

T = TypeVar("T")


class OutputPathError(Exception):
    """An output location that cannot be written (checked before the work starts)."""


def one_line(message: str) -> str:
    """The first non-empty line of `message` (diagnostics are one line)."""
    for line in str(message).splitlines():
        if line.strip():
            return line.strip()
    return "unknown error"


def fail(prog: str, message: str) -> NoReturn:
    print(f"{prog}: error: {one_line(message)}", file=sys.stderr)
    sys.exit(1)


def one_line_argument_errors(ap: argparse.ArgumentParser, prog: str,
                             raise_as: Callable[[str], Exception] | None = None) -> None:
    """Make `ap` report argument errors as `<prog>: error: ...`, exit 1 (not usage + exit 2);
    with `raise_as`, raise that exception instead of exiting."""

    def error(message: str) -> NoReturn:
        if raise_as is not None:
            raise raise_as(message)
        fail(prog, message)

    ap.error = error  # type: ignore[method-assign]


def _nearest_existing(path: Path) -> Path:
    """`path` or its closest existing ancestor."""
    p = path.absolute()
    while not p.exists() and p != p.parent:
        p = p.parent
    return p


def check_output_dir(path: str | os.PathLike, option: str) -> None:
    """Raise OutputPathError unless `path` is, or can be created as, a writable directory."""
    p = Path(path)
    if p.exists() and not p.is_dir():
        raise OutputPathError(f"{option} '{p}': exists and is not a directory")
    base = _nearest_existing(p)
    if not base.is_dir():
        raise OutputPathError(f"{option} '{p}': '{base}' is not a directory")
    if not os.access(base, os.W_OK | os.X_OK):
        raise OutputPathError(f"{option} '{p}': '{base}' is not writable")


def check_output_file(path: str | os.PathLike, option: str) -> None:
    """Raise OutputPathError unless `path` can be written as a file (its folder exists)."""
    p = Path(path)
    if p.is_dir():
        raise OutputPathError(f"{option} '{p}': is a directory")
    parent = p.absolute().parent
    if not parent.is_dir():
        raise OutputPathError(f"{option} '{p}': folder '{parent}' does not exist")
    if p.exists() and not os.access(p, os.W_OK):
        raise OutputPathError(f"{option} '{p}': is not writable")
    if not p.exists() and not os.access(parent, os.W_OK | os.X_OK):
        raise OutputPathError(f"{option} '{p}': folder '{parent}' is not writable")


@contextmanager
def resource_errors(prog: str) -> Iterator[None]:
    """Turn the failures no input check can foresee into one line: nesting beyond Python's
    recursion limit (e.g. thousands of nested brackets), exhausted memory, an output location
    that vanished or filled up while writing."""
    try:
        yield
    except RecursionError:
        fail(prog, "input nested too deeply (Python's recursion limit reached)")
    except MemoryError:
        fail(prog, "out of memory (see QACCEL_MEMORY_LIMIT in README.md)")
    except OutputPathError as e:
        fail(prog, str(e))
    except OSError as e:  # e.g. an output folder that cannot be created (read-only, /proc)
        fail(prog, f"'{e.filename}': {e.strerror}" if e.filename else str(e))


__all__ = [
    "OutputPathError",
    "check_output_dir",
    "check_output_file",
    "fail",
    "one_line",
    "one_line_argument_errors",
    "resource_errors",
]
