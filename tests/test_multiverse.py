"""`dialects._read_multiverse` is xDSL's `Universe.get_multiverse()` read without importing
`importlib.metadata` (about 30 ms less per process start): the same dialects, passes and
targets, in the same order and with the same factories, for the installed entry points (every
dialect and pass qaccel registers among them) and with other universes on the path; the same
error for a name two universes define and for an entry point that is not a universe."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest
from qaccel.dialects import _read_multiverse
from qaccel.universe import QACCEL_UNIVERSE
from xdsl.universe import Universe

KINDS = ("all_dialects", "all_passes", "all_targets")


def _xdsls():
    importlib.invalidate_caches()
    return Universe.get_multiverse()


def _assert_same(mine: Universe, theirs: Universe) -> None:
    for kind in KINDS:
        assert list(getattr(mine, kind).items()) == list(getattr(theirs, kind).items()), kind


def _raised(read) -> str:
    with pytest.raises(ValueError) as e:
        read()
    return str(e.value)


def test_the_installed_multiverse_is_xdsls():
    mine = _read_multiverse()
    _assert_same(mine, _xdsls())
    for kind in KINDS:
        ours = getattr(QACCEL_UNIVERSE, kind)
        assert ours and all(getattr(mine, kind)[name] is ours[name] for name in ours), kind


def _plugin(where: Path, dist: str, universes: dict[str, str]) -> None:
    """A distribution on `where` declaring `xdsl.universe` entry points name -> attribute of
    the module qaccel_test_universes."""
    info = where / f"{dist}-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 1.0\n")
    lines = "".join(f"{name} = qaccel_test_universes:{attr}\n" for name, attr in universes.items())
    (info / "entry_points.txt").write_text(f"[xdsl.universe]\n{lines}")


UNIVERSES = '''
from xdsl.universe import Universe


def _never():
    raise AssertionError("not loaded by reading the multiverse")


FIRST = Universe(all_dialects={"qaccel_test_first": _never},
                 all_passes={"qaccel-test-first": _never}, all_targets={"qaccel-test": _never})
LAST = Universe(all_dialects={"qaccel_test_last": _never}, all_passes={"qaccel-test-last": _never})
CLASHES = Universe(all_passes={"qaccel-test-first": _never})
NOT_A_UNIVERSE = {"all_dialects": {}}
'''


def test_other_universes_read_as_xdsl_reads_them(tmp_path, monkeypatch):
    (tmp_path / "qaccel_test_universes.py").write_text(UNIVERSES)
    # names before and after qaccel's and xDSL's own: the universes are taken by name
    _plugin(tmp_path / "a", "zz_plugin", {"zz_last": "LAST"})
    _plugin(tmp_path / "a", "aa_plugin", {"aa_first": "FIRST"})
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.syspath_prepend(str(tmp_path / "a"))
    mine = _read_multiverse()
    _assert_same(mine, _xdsls())
    assert list(mine.all_dialects)[0] == "qaccel_test_first"
    assert list(mine.all_dialects)[-1] == "qaccel_test_last"
    assert "qaccel-test" in mine.all_targets and "vta-pipeline" in mine.all_passes

    _plugin(tmp_path / "b", "clash_plugin", {"mm_clash": "CLASHES"})
    monkeypatch.syspath_prepend(str(tmp_path / "b"))
    importlib.invalidate_caches()
    message = _raised(_read_multiverse)
    assert message == _raised(_xdsls) and "qaccel-test-first" in message

    _plugin(tmp_path / "c", "odd_plugin", {"bb_odd": "NOT_A_UNIVERSE"})
    monkeypatch.syspath_prepend(str(tmp_path / "c"))
    importlib.invalidate_caches()
    message = _raised(_read_multiverse)
    assert message == _raised(_xdsls) and "bb_odd is not an instance of Universe" in message
