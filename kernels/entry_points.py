"""Entry points by group, read once per import path.

`importlib.metadata.entry_points()` reads the metadata of every installed distribution at each
call (about 15 ms in an environment of a few hundred), and a compile asks several times (each
pass that reads the module's target, the pass registry, the dialects). The answer can only
change when the import path does, so it is kept per `sys.path`: a test that puts another
distribution on the path (`monkeypatch.syspath_prepend`) sees it at once.

Importing `importlib.metadata` itself (with the `email` package it parses metadata with) costs
more than reading the entry points, and a compile needs only the `entry_points.txt` files. So
where the distributions are the plain ones `importlib.metadata` finds (`*.dist-info` and
`*.egg-info` folders on the path's directories, no other finder of distributions), they are
read here, in the same order and with the same rules (the first distribution of a name on the
path wins; the same file syntax); anything else (a zip on the path, an egg, another finder,
a line this reader would not take as `importlib.metadata` does) is read by
`importlib.metadata`, as before. `tests/test_entry_points.py` checks that both give the same
entry points.
"""

from __future__ import annotations

import functools
import os
import re
import sys
from collections.abc import Iterable
from importlib import import_module
from typing import Any

_kept: dict[tuple[str, ...], Any] = {}


class EntryPoint:
    """An entry point as `importlib.metadata.EntryPoint` has it: `name`, `value` (`module`,
    `module:attr` or `module:attr.attr`, optionally with `[extras]`) and `group`; `load()`
    imports the module and returns the named object (the module when there is none)."""

    # importlib.metadata's syntax of a value, lenient about whitespace as it is.
    pattern = re.compile(
        r"(?P<module>[\w.]+)\s*(:\s*(?P<attr>[\w.]+)\s*)?((?P<extras>\[.*\])\s*)?$"
    )

    __slots__ = ("name", "value", "group")

    def __init__(self, name: str, value: str, group: str):
        self.name, self.value, self.group = name, value, group

    def load(self) -> Any:
        match = self.pattern.match(self.value)
        if match is None:  # as importlib.metadata fails on it
            raise AttributeError(f"'NoneType' object has no attribute 'group' (entry point "
                                 f"{self.name} = {self.value})")  # fmt: skip
        module = import_module(match.group("module"))
        attrs = filter(None, (match.group("attr") or "").split("."))
        return functools.reduce(getattr, attrs, module)

    @property
    def module(self) -> str:
        match = self.pattern.match(self.value)
        return match.group("module") if match else ""

    @property
    def attr(self) -> str | None:
        match = self.pattern.match(self.value)
        return match.group("attr") if match else None

    def __repr__(self) -> str:
        return f"EntryPoint(name={self.name!r}, value={self.value!r}, group={self.group!r})"


class _NotPlain(Exception):
    """The environment has distributions this reader leaves to importlib.metadata."""


def _normalized(name: str) -> str:
    """PEP 503 normalization with dashes as underscores (importlib.metadata's)."""
    return re.sub(r"[-_.]+", "-", name).lower().replace("-", "_")


def _metadata_dirs(paths: Iterable[str]) -> list[str]:
    """Each distribution's metadata folder, first of its name, in importlib.metadata's order:
    path by path, a path's folders grouped by name in the order the directory lists them."""
    from importlib.machinery import PathFinder

    for finder in sys.meta_path:
        if finder is not PathFinder and hasattr(finder, "find_distributions"):
            raise _NotPlain  # another finder of distributions
    seen: set[str] = set()
    found: list[str] = []
    for root in paths:
        if not isinstance(root, str):
            raise _NotPlain
        try:
            children = os.listdir(root or ".")
        except NotADirectoryError:
            raise _NotPlain from None  # a zip on the path
        except OSError:
            if os.path.isfile(root or "."):
                raise _NotPlain from None
            continue  # missing: nothing there
        base = os.path.basename(root).lower()
        if base.endswith(".egg") and any(c.lower() == "egg-info" for c in children):
            raise _NotPlain  # an egg's EGG-INFO
        groups: dict[str, list[str]] = {}
        for child in children:
            low = child.lower()
            if low.endswith((".dist-info", ".egg-info")):
                if os.path.splitext(child)[1] not in (".dist-info", ".egg-info"):
                    raise _NotPlain  # named from its METADATA by importlib.metadata
                groups.setdefault(_normalized(low.rpartition(".")[0].partition("-")[0]),
                                  []).append(child)  # fmt: skip
        for group in groups.values():
            for child in group:
                name = _normalized(os.path.splitext(child)[0].partition("-")[0])
                if name not in seen:
                    seen.add(name)
                    found.append(os.path.join(root, child))
    return found


def _parse(text: str) -> list[tuple[str, str, str]]:
    """(group, name, value) of an entry_points.txt, as importlib.metadata reads it."""
    entries = []
    section = None
    for line in map(str.strip, text.splitlines()):
        if not line or line.startswith("#"):
            continue
        if line.startswith("[") and line.endswith("]"):
            section = line.strip("[]")
            continue
        if section is None:
            continue
        if "=" not in line:
            raise _NotPlain  # importlib.metadata raises on it: let it say so
        name, value = line.split("=", 1)
        entries.append((section, name.strip(), value.strip()))
    return entries


def read_entry_points() -> list[EntryPoint]:
    """Every entry point of the distributions on `sys.path`; within a group, in
    `importlib.metadata.entry_points(group=...)`'s order."""
    try:
        found = []
        for folder in kept("metadata folders", lambda: _metadata_dirs(sys.path)):
            try:
                with open(os.path.join(folder, "entry_points.txt"), encoding="utf-8") as f:
                    text = f.read()
            except (FileNotFoundError, IsADirectoryError, NotADirectoryError, PermissionError):
                continue
            found += [EntryPoint(name, value, group) for group, name, value in _parse(text)]
        return found
    except _NotPlain:
        from importlib.metadata import entry_points as read_all

        every = read_all()
        if isinstance(every, dict):  # Python 3.11: the groups by name
            every = [ep for group in dict.values(every) for ep in group]
        return [EntryPoint(ep.name, ep.value, ep.group) for ep in every]


_HEADER_NAME = re.compile(r"[\041-\071\073-\176]+")  # printable, no ':' (RFC 5322's)


def _version_header(text: str) -> str:
    """The first `Version` header of a METADATA / PKG-INFO text, as `email` parses it (the
    text after the colon, leading blanks dropped); _NotPlain for anything it might read
    otherwise (another line break, a continued or malformed header line)."""
    head = text.split("\n\n", 1)[0]
    if any(c in head for c in "\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"):
        raise _NotPlain
    lines = head.split("\n")
    for i, line in enumerate(lines):
        name, colon, value = line.partition(":")
        if not colon or not _HEADER_NAME.fullmatch(name):
            raise _NotPlain
        if name.lower() == "version":
            if i + 1 < len(lines) and lines[i + 1][:1] in (" ", "\t"):
                raise _NotPlain  # continued on the next line
            return value.lstrip(" \t")
    raise _NotPlain


def distribution_version(name: str) -> str:
    """`importlib.metadata.version(name)`: the version of the first distribution of that name
    on `sys.path` (`importlib.metadata.PackageNotFoundError` when there is none); read here
    where the environment is plain folders, by importlib.metadata otherwise."""
    try:
        wanted = _normalized(name) if name else None
        for folder in kept("metadata folders", lambda: _metadata_dirs(sys.path)):
            stem = os.path.basename(folder)
            if _normalized(os.path.splitext(stem)[0].partition("-")[0]) != wanted:
                continue
            for file in ("METADATA", "PKG-INFO"):
                try:
                    with open(os.path.join(folder, file), encoding="utf-8") as f:
                        text = f.read()
                except (FileNotFoundError, IsADirectoryError, NotADirectoryError,
                        PermissionError):  # fmt: skip
                    continue
                if text:
                    return _version_header(text)
            raise _NotPlain  # no metadata text: left to importlib.metadata
        raise _NotPlain  # not found: importlib.metadata says so
    except _NotPlain:
        from importlib.metadata import version

        return version(name)


def entry_points(group: str) -> list[EntryPoint]:
    """`importlib.metadata.entry_points(group=group)`, the distributions read once per path."""
    key = tuple(sys.path)
    every = _kept.get(key)
    if every is None:
        _kept.clear()
        every = _kept[key] = read_entry_points()
    return [ep for ep in every if ep.group == group]


def kept(key: str, make: Any) -> Any:
    """`make()`, computed once per import path under `key` (e.g. the multiverse of the
    `xdsl.universe` entry points)."""
    path = (key, *sys.path)
    found = _kept.get(path)
    if found is None:
        found = _kept[path] = make()
    return found


__all__ = ["EntryPoint", "distribution_version", "entry_points", "kept", "read_entry_points"]
