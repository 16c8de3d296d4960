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
import gc
import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import NoReturn, TypeVar

T = TypeVar("T")


def linear_string_literal_lexing() -> None:
    r"""xDSL 0.74 lexes string literals with `"(?:[^"\\\n\v\f]+|\\(...))*"`: the nested
    quantifiers backtrack exponentially on an unterminated literal (`"abc...` then a newline;
    30 characters take minutes; found by fuzz/). One character per repetition matches the same
    strings in linear time, the alternatives starting with different characters."""
    import re

    from xdsl.utils.mlir_lexer import MLIRLexer

    MLIRLexer._unescaped_characters_regex = re.compile(
        r'"(?:[^"\\\n\v\f]|\\(?:["nt\\]|[0-9A-Fa-f]{2}))*"'
    )


class OutputPathError(Exception):
    """An output location that cannot be written (checked before the work starts)."""


class InputError(ValueError):
    """An input file that cannot be read as what it claims to be, as one line."""


def parse_mlir(data: bytes, source: str, ctx=None):
    """MLIR text -> a verified `ModuleOp` in SSA form, or InputError (one line) / xDSL's
    VerifyException. The one parse boundary of every tool and of the `mlir` fuzz harness:
    undecodable bytes and whatever xDSL's parser raises on malformed text (`parser_failures`)
    become one-line errors here."""
    from xdsl.parser import Parser

    from qaccel.dialects import qaccel_context
    from qaccel.dialects.ssa import verify_dominance

    linear_string_literal_lexing()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise InputError(f"'{source}': not UTF-8 text (byte {e.start})") from None
    with parser_failures(source, InputError):
        module = Parser(ctx or qaccel_context(), text, source).parse_module()
    module.verify()
    verify_dominance(module, source)
    return module


@contextmanager
def parser_failures(source: str, error: Callable[[str], Exception],
                    keep: tuple[type[BaseException], ...] = ()) -> Iterator[None]:
    """What xDSL's parser raises on malformed text, as `error(one line naming source)`: a
    ParseError; RecursionError (deep nesting); a bare ValueError or OverflowError (a literal out
    of its type's range); AssertionError (its lexer, on some malformed literals);
    NotImplementedError (a dense literal of an integer width it cannot pack, i92); MemoryError
    (the value range of i7777777777781). Exceptions in `keep` pass unchanged."""
    from xdsl.utils.exceptions import ParseError

    try:
        yield
    except keep:
        raise
    except RecursionError:
        raise error(f"'{source}': nested too deeply to parse") from None
    except ParseError as e:
        raise error(parse_error_line(e)) from None
    except (ValueError, OverflowError) as e:
        raise error(f"'{source}': {one_line(str(e))}") from None
    except AssertionError as e:
        raise error(f"'{source}': cannot parse: {one_line(str(e))}") from None
    except NotImplementedError as e:
        raise error(f"'{source}': not supported by the parser: {one_line(str(e))}") from None
    except MemoryError:
        raise error(f"'{source}': a type or literal too large to represent") from None


def parse_error_line(e) -> str:
    """`file:line:col: message` for an xDSL ParseError, instead of its multi-line excerpt."""
    try:
        loc = e.span.get_location()
        return f"{loc}: {e.msg}"
    except Exception:
        return one_line(e.msg)


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


@contextmanager
def fewer_collections(young: int = 50_000) -> Iterator[None]:
    """A command's whole run with the cyclic garbage collector mostly out of the way: every
    object that exists when it starts (the imported modules, which live as long as the
    process) is frozen out of the collector's reach, and the youngest generation is collected
    after `young` allocations instead of 700. A compile builds and drops IR by the hundred
    thousand objects; the default collections walked the whole heap again and again (about a
    tenth of `qaccel-compile`'s CPU time). Everything is as before once it ends."""
    threshold = gc.get_threshold()
    gc.freeze()
    gc.set_threshold(max(young, threshold[0]), *threshold[1:])
    try:
        yield
    finally:
        gc.set_threshold(*threshold)
        gc.unfreeze()


def end_process(code: object = 0) -> NoReturn:
    """Exit at once with `code` (as `sys.exit` takes it), the standard streams flushed, without
    the interpreter's teardown: freeing a compile's objects one by one (its IR, arrays,
    modules) took about as long as writing the artifact. Only for a command's own process
    (its console script or `python -m`), never from a library call or a test's process."""
    if code is None:
        status = 0
    elif isinstance(code, int):
        status = code
    else:  # sys.exit("message")
        print(code, file=sys.stderr)
        status = 1
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (AttributeError, OSError, ValueError):
            status = status or 120  # as the interpreter's own exit when stdout cannot be flushed
    os._exit(status)


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
    except UnicodeDecodeError as e:  # e.g. a --config file (its loader lets this escape)
        fail(prog, f"an input file is not UTF-8 text (byte {e.start}: {e.reason})")
    except OSError as e:  # e.g. an output folder that cannot be created (read-only, /proc)
        fail(prog, f"'{e.filename}': {e.strerror}" if e.filename else str(e))


__all__ = [
    "InputError",
    "OutputPathError",
    "parse_error_line",
    "parse_mlir",
    "check_output_dir",
    "check_output_file",
    "fail",
    "one_line",
    "one_line_argument_errors",
    "resource_errors",
]
