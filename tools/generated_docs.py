"""What the generators of `docs/` pages share (`gen_pass_docs`, `gen_ops_docs`): the staleness
check the tests run and the command line (`--check`, `-o`)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from pathlib import Path


def stale(path: Path, render: Callable[[], str], command: str, what: str) -> str | None:
    """None if `path` holds what `render()` gives, else the one-line reason (naming `what`
    changed) and the command that fixes it."""
    try:
        current = path.read_text()
    except OSError as e:
        return f"cannot read {path}: {e.strerror}; generate it with `{command}`"
    if current != render():
        return f"{path} is stale ({what} changed): regenerate it with `{command}` and commit it"
    return None


def main(argv: Sequence[str] | None, prog: str, description: str, default: Path,
         render: Callable[[], str], check: Callable[[Path], str | None]) -> None:  # fmt: skip
    """`prog [--check] [-o FILE]`: write the page, or exit 1 with one line when it is stale."""
    ap = argparse.ArgumentParser(prog=prog, description=description)
    ap.add_argument("--check", action="store_true", help="exit 1 if the file is stale")
    ap.add_argument("-o", "--output", type=Path, default=default, help="default: %(default)s")
    args = ap.parse_args(argv)
    if args.check:
        problem = check(args.output)
        if problem is not None:
            print(f"{prog}: error: {problem}", file=sys.stderr)
            sys.exit(1)
        return
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(render())
    print(f"wrote {args.output}")
