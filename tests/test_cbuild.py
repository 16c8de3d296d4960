"""Every C library qaccel builds, at run time or by `pip install`, uses one helper
(`targets/cbuild.py`): the same flags (C99, every warning an error), digest and cache."""

import shutil
from pathlib import Path

import pytest
from qaccel.backends.litert import runtime as litert_runtime
from qaccel.backends.vta import cdriver_runtime
from qaccel.targets import cbuild
from qaccel.targets.vta import cmachine

ROOT = Path(__file__).resolve().parents[1]


def test_every_c_library_builds_with_the_same_strict_flags():
    assert {"-std=c99", "-Wall", "-Wextra", "-Werror"} <= set(cbuild.CFLAGS)
    for flags in (cmachine.CFLAGS, litert_runtime.CFLAGS, cdriver_runtime.CFLAGS):
        assert tuple(flags[: len(cbuild.CFLAGS)]) == cbuild.CFLAGS
    setup = (ROOT / "setup.py").read_text()
    assert "cbuild.CFLAGS" in setup and '"-std=c99"' not in setup


def test_one_cache_and_one_digest(tmp_path, monkeypatch):
    monkeypatch.setenv("QACCEL_CACHE_DIR", str(tmp_path))
    assert litert_runtime.cache_dir() == cdriver_runtime.cache_root() == tmp_path
    assert cmachine._cache_dir().parent == tmp_path
    files = [cmachine.MACHINE_DIR / n for n in cmachine.SOURCES + cmachine.HEADERS]
    assert cmachine.source_hash() == cbuild.source_hash(files)


def test_vta_machine_compiles_with_warnings_as_errors(tmp_path):
    if shutil.which(cbuild.compiler()) is None:
        pytest.skip("no C compiler")
    assert cmachine.build_library(tmp_path).is_file()


def test_a_library_is_current_only_with_its_sources_stamp_and_a_failed_build_is_one_line(
    tmp_path,
):
    if shutil.which(cbuild.compiler()) is None:
        pytest.skip("no C compiler")
    from qaccel.backends.vta import program_runner

    path = tmp_path / "lib" / program_runner.LIB_NAME
    assert cbuild.build_once(path, program_runner.build_library) is None
    assert cbuild.is_stamped(path, "qaccel_program_source_hash",
                             program_runner.source_hash())
    assert not cbuild.is_stamped(path, "qaccel_program_source_hash", "0" * 16)
    assert not cbuild.is_stamped(tmp_path / "missing.so", "vta_source_hash", "x")
    assert cbuild.build_once(path, lambda out: 1 / 0) is None  # present: not built again
    broken = tmp_path / "broken.c"
    broken.write_text("int f(void) { return }\n")
    failure = cbuild.build_once(tmp_path / "broken.so",
                                lambda out: cbuild.build_shared(out, [broken]))
    assert failure is not None and "\n" not in failure


def test_the_program_runner_loads_the_library_pip_install_built():
    from qaccel.backends.vta import program_runner

    if not list(program_runner.PROGRAM_DIR.glob("_qaccel_program*.so")):
        pytest.skip("libqaccel_program was not built by pip install")
    assert program_runner.library_path().parent == program_runner.PROGRAM_DIR
