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


def test_the_libraries_with_a_python_reference_are_found_one_way(tmp_path, monkeypatch):
    """`cbuild.Loader`, shared by the C machine, the schedule search and the stream resolver:
    off by `QACCEL_NO_<KEY>`, a named file by `QACCEL_<KEY>_LIB`, else setup.py's current
    extension, else the current sources built once into the cache; each outcome's reason."""
    from qaccel.lowering.vta import csearch, cstream

    monkeypatch.setenv("QACCEL_CACHE_DIR", str(tmp_path / "cache"))
    opened, built = [], []

    def open_(path, check_hash):
        opened.append((path.name, check_hash))
        if path.read_text() != "current":
            raise OSError("built from other sources")
        return path.name

    def build(folder):
        built.append(folder.name)
        (folder / "libx.so").write_text("current")

    here = tmp_path / "pkg"
    here.mkdir()
    monkeypatch.setattr(cbuild, "build_once",
                        lambda path, fn: (path.parent.mkdir(parents=True, exist_ok=True),
                                          fn(path))[0] if not path.is_file() else None)  # fmt: skip
    loader = cbuild.Loader("CTEST", here, "_x", "x", "libx.so", lambda: "d1", build, open_)
    monkeypatch.setenv("QACCEL_NO_CTEST", "1")
    assert loader.library() is None and loader.unavailable_reason() == "QACCEL_NO_CTEST is set"
    monkeypatch.setenv("QACCEL_NO_CTEST", "0")
    named = tmp_path / "named.so"
    named.write_text("old")
    monkeypatch.setenv("QACCEL_CTEST_LIB", str(named))
    loader.reset()
    assert not loader.available() and "cannot load QACCEL_CTEST_LIB" in loader.unavailable_reason()
    monkeypatch.delenv("QACCEL_CTEST_LIB")
    import importlib.machinery

    ext = here / f"_x{importlib.machinery.EXTENSION_SUFFIXES[0]}"
    ext.write_text("current")
    loader.reset()
    assert loader.library() == ext.name and opened[-1] == (ext.name, True) and not built
    ext.write_text("stale")  # a stale extension: the current sources are built once
    loader.reset()
    assert loader.library() == "libx.so" and built == ["x-d1"]
    assert loader.cache_dir() == tmp_path / "cache" / "x-d1"
    loader.reset()
    assert loader.library() == "libx.so" and built == ["x-d1"]  # cached: not built again
    notices = []
    failing = cbuild.Loader("CTEST", here, "_none", "y", "liby.so", lambda: "d2",
                            lambda folder: 1 / 0, open_, notices.append)  # fmt: skip
    monkeypatch.setattr(cbuild, "build_once", lambda path, fn: "error: no compiler")
    assert failing.library() is None and notices == ["compiling it failed (error: no compiler)"]
    for module in (cmachine, csearch, cstream):
        assert isinstance(module._LOADER, cbuild.Loader)
        assert module.library == module._LOADER.library


def test_each_library_with_a_reference_is_declared_once_for_its_module_and_setup_py(
    monkeypatch,
):
    """cbuild's declarations of libqaccel_vta, libqaccel_search and libqaccel_stream: the
    module that loads each hashes, builds and finds it by the declaration, and setup.py (run
    here with `setup()` stood in) builds the same C files, with the same digest in the same
    macro, from the same declaration (no copy of the file lists in setup.py)."""
    import runpy

    import setuptools
    from qaccel.lowering.vta import csearch, cstream

    captured = {}
    monkeypatch.setattr(setuptools, "setup", lambda **kwargs: captured.update(kwargs))
    runpy.run_path(str(ROOT / "setup.py"), run_name="qaccel_setup")
    built = {ext.name: ext for ext in captured["ext_modules"]}
    setup_text = (ROOT / "setup.py").read_text()
    pairs = ((cmachine, cbuild.MACHINE_LIBRARY), (csearch, cbuild.SEARCH_LIBRARY),
             (cstream, cbuild.STREAM_LIBRARY))  # fmt: skip
    assert tuple(lib for _, lib in pairs) == cbuild.REFERENCE_LIBRARIES
    for module, lib in pairs:
        here, extension = Path(module.__file__).parent, lib.extension.rsplit(".", 1)[-1]
        folder = here / lib.folder.rsplit("/", 1)[-1]  # the sources beside the module
        files = [folder / name for name in lib.sources + lib.headers]
        assert module.LIBRARY is lib and module.source_hash() == cbuild.source_hash(files)
        assert (module._LOADER.here, module._LOADER.extension) == (here, extension)
        assert module._LOADER.digest() == lib.source_hash() == module.source_hash()
        ext = built[lib.extension]
        assert ext.sources == [f"{lib.folder}/{name}" for name in lib.sources]
        assert ext.depends == [f"{lib.folder}/{name}" for name in lib.headers]
        assert ext.define_macros == [(lib.hash_macro, f'"{lib.source_hash()}"')]
        assert ext.extra_compile_args == list(cbuild.CFLAGS) and ext.optional
        assert extension not in setup_text
    for lib in (cbuild.SEARCH_LIBRARY, cbuild.STREAM_LIBRARY):
        assert lib.hash_macro not in setup_text
        assert not any(name in setup_text for name in lib.sources + lib.headers)
