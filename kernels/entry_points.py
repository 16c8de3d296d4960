"""Entry points by group, read once per import path.

`importlib.metadata.entry_points()` reads the metadata of every installed distribution at each
call (about 15 ms in an environment of a few hundred), and a compile asks several times (each
pass that reads the module's target, the pass registry, the dialects). The answer can only
change when the import path does, so it is kept per `sys.path`: a test that puts another
distribution on the path (`monkeypatch.syspath_prepend`) sees it at once.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    from importlib.metadata import EntryPoints

_kept: dict[tuple[str, ...], Any] = {}


def entry_points(group: str) -> EntryPoints:
    """`importlib.metadata.entry_points(group=group)`, the distributions read once per path."""
    from importlib.metadata import entry_points as read_all

    key = tuple(sys.path)
    every = _kept.get(key)
    if every is None:
        _kept.clear()
        every = _kept[key] = read_all()
    return every.select(group=group)


def kept(key: str, make: Any) -> Any:
    """`make()`, computed once per import path under `key` (e.g. xDSL's multiverse, which
    reads the `xdsl.universe` entry points)."""
    path = (key, *sys.path)
    found = _kept.get(path)
    if found is None:
        found = _kept[path] = make()
    return found


__all__ = ["entry_points", "kept"]
