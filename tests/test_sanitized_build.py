"""The tests' build cache (tests/sanitized_build.py): a build is made once per content key, a
changed input or flag is built again, a failed build is not kept."""

from __future__ import annotations

import subprocess

import pytest
from sanitized_build import cached, key


@pytest.fixture
def sources(tmp_path, monkeypatch):
    monkeypatch.setenv("QACCEL_CACHE_DIR", str(tmp_path / "cache"))
    folder = tmp_path / "src"
    folder.mkdir()
    (folder / "a.c").write_text("int a;\n")
    (folder / "a.h").write_text("extern int a;\n")
    (folder / "notes.txt").write_text("not a source\n")
    return folder


def test_built_once_per_content_and_copied_where_asked(sources, tmp_path):
    builds = []

    def build(out):
        builds.append(out)
        out.write_bytes(b"library %d" % len(builds))

    for k in range(2):
        got = cached(tmp_path / f"out{k}" / "lib.so", build, label="t", inputs=[sources],
                     flags=["-O1"])  # fmt: skip
        assert got == tmp_path / f"out{k}" / "lib.so" and got.read_bytes() == b"library 1"
    assert len(builds) == 1
    (sources / "notes.txt").write_text("changed, but not a source\n")
    cached(tmp_path / "out" / "lib.so", build, label="t", inputs=[sources], flags=["-O1"])
    assert len(builds) == 1
    (sources / "a.h").write_text("extern int a; /* changed */\n")
    cached(tmp_path / "out" / "lib.so", build, label="t", inputs=[sources], flags=["-O1"])
    assert len(builds) == 2
    cached(tmp_path / "out" / "lib.so", build, label="t", inputs=[sources], flags=["-O2"])
    assert len(builds) == 3


def test_a_failed_build_is_not_kept(sources, tmp_path):
    def fail(out):
        out.write_bytes(b"half")
        raise subprocess.CalledProcessError(1, ["cc"], stderr=b"error: no")

    with pytest.raises(subprocess.CalledProcessError):
        cached(tmp_path / "lib.so", fail, label="t", inputs=[sources], flags=[])
    assert not (tmp_path / "lib.so").exists()
    assert not list((tmp_path / "cache").glob("sanitized-t-*/lib.so"))


def test_the_key_is_deterministic_and_names_every_flag(sources):
    assert key([sources], ["-O1"]) == key([sources], ["-O1"])
    assert key([sources], ["-O1"]) != key([sources], ["-O1", "-g"])
