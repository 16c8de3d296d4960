"""`kernels/entry_points.py` reads the entry points `importlib.metadata` finds, in its order,
without importing it where the environment is plain folders (and through it otherwise)."""

from __future__ import annotations

import importlib
import importlib.metadata
import sys
import zipfile
from pathlib import Path

from qaccel.kernels import entry_points as eps


def _by_group(entries) -> dict[str, list[tuple[str, str]]]:
    groups: dict[str, list[tuple[str, str]]] = {}
    for ep in entries:
        groups.setdefault(ep.group, []).append((ep.name, ep.value))
    return groups


def _importlib_by_group(groups) -> dict[str, list[tuple[str, str]]]:
    return {g: [(ep.name, ep.value) for ep in importlib.metadata.entry_points(group=g)]
            for g in groups}  # fmt: skip


def _same_as_importlib() -> None:
    importlib.invalidate_caches()
    mine = _by_group(eps.read_entry_points())
    theirs = _importlib_by_group([*mine, "qaccel.test.none"])
    assert {g: v for g, v in theirs.items() if v} == mine


def _dist(where: Path, folder: str, entry_points: str | None) -> None:
    info = where / folder
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {folder.split('-')[0]}\n"
                                   "Version: 1.0\n")  # fmt: skip
    if entry_points is not None:
        (info / "entry_points.txt").write_text(entry_points)


def test_the_installed_entry_points_are_importlib_metadatas():
    _same_as_importlib()


def test_first_distribution_of_a_name_wins_and_the_file_reads_as_importlib_reads_it(
        tmp_path, monkeypatch):  # fmt: skip
    first, second = tmp_path / "first", tmp_path / "second"
    _dist(first, "Acme_Tools-1.0.dist-info",
          "# a comment\nstray = before.any:section\n\n[qaccel.test.a]\n  one = acme.one:make \n"
          "two=acme.two [extra]\n[qaccel.test.b]\nthree = acme.three:obj.attr\n")
    _dist(first, "other.egg-info", "[qaccel.test.a]\nfour = other\n")
    _dist(first, "nothing-2.0.dist-info", None)  # no entry_points.txt
    (first / "plain.egg-info").write_text("Metadata-Version: 1.0\nName: plain\n")  # a file
    # The same distribution (its name normalized) again, later on the path: not read.
    _dist(second, "acme.tools-2.0.dist-info", "[qaccel.test.a]\nshadowed = acme.old:x\n")
    _dist(second, "later-1.0.dist-info", "[qaccel.test.b]\nfive = later.mod:y\n")
    monkeypatch.syspath_prepend(str(second))
    monkeypatch.syspath_prepend(str(first))
    _same_as_importlib()
    found = _by_group(eps.read_entry_points())
    # (one folder's distributions come in the order the directory lists them)
    assert sorted(found["qaccel.test.a"]) == [("four", "other"), ("one", "acme.one:make"),
                                              ("two", "acme.two [extra]")]  # fmt: skip
    assert found["qaccel.test.b"] == [("three", "acme.three:obj.attr"), ("five", "later.mod:y")]
    assert [ep.name for ep in eps.entry_points("qaccel.test.b")] == ["three", "five"]


def test_a_zip_on_the_path_is_read_by_importlib_metadata(tmp_path, monkeypatch):
    archive = tmp_path / "bundle.zip"
    with zipfile.ZipFile(archive, "w") as z:
        z.writestr("zipped-1.0.dist-info/METADATA", "Metadata-Version: 2.1\nName: zipped\n")
        z.writestr("zipped-1.0.dist-info/entry_points.txt", "[qaccel.test.z]\nz = zipped:z\n")
    monkeypatch.syspath_prepend(str(archive))
    _same_as_importlib()
    assert _by_group(eps.read_entry_points())["qaccel.test.z"] == [("z", "zipped:z")]


def test_an_entry_point_loads_its_object(tmp_path, monkeypatch):
    (tmp_path / "qaccel_test_ep_module.py").write_text("class Outer:\n    inner = 42\n")
    _dist(tmp_path, "qaccel_test_ep-0.1.dist-info",
          "[qaccel.test.load]\nobj = qaccel_test_ep_module:Outer.inner\n"
          "mod = qaccel_test_ep_module\n")  # fmt: skip
    monkeypatch.syspath_prepend(str(tmp_path))
    loaded = {ep.name: ep for ep in eps.entry_points("qaccel.test.load")}
    assert loaded["obj"].load() == 42
    assert loaded["mod"].load() is sys.modules["qaccel_test_ep_module"]
    assert (loaded["obj"].module, loaded["obj"].attr) == ("qaccel_test_ep_module", "Outer.inner")


def test_distribution_versions_are_importlib_metadatas(tmp_path, monkeypatch):
    import pytest

    for name in ("qaccel", "xdsl", "numpy", "pytest"):
        assert eps.distribution_version(name) == importlib.metadata.version(name)
    where = tmp_path / "dists"
    for folder, file, text in (
        ("Plain_Dist-1.0.dist-info", "METADATA", ("Metadata-Version: 2.1\nName: plain-dist\n"
                                                 "Version: 1.0rc1 \n\nbody: Version: 9\n")),
        ("older.egg-info", "PKG-INFO", "Metadata-Version: 1.0\nName: older\nversion:\t2.0\n"),
        ("folded-1.0.dist-info", "METADATA", "Name: folded\nVersion: 3.0\n  .post1\n"),
        ("odd-1.0.dist-info", "METADATA", "Name: odd\nSummary: a\rb\nVersion: 4.0\n"),
        ("noversion-1.0.dist-info", "METADATA", "Name: noversion\n"),
    ):
        (where / folder).mkdir(parents=True)
        (where / folder / file).write_text(text, newline="")
    monkeypatch.syspath_prepend(str(where))
    importlib.invalidate_caches()
    for name in ("plain.dist", "PLAIN-DIST", "older", "folded", "odd", "noversion"):
        assert eps.distribution_version(name) == importlib.metadata.version(name), name
    assert eps.distribution_version("plain_dist") == "1.0rc1 "
    with pytest.raises(importlib.metadata.PackageNotFoundError):
        eps.distribution_version("qaccel-no-such-distribution")
