"""Builds libqaccel_vta, the C simulator (targets/vta/machine/), libqaccel_program, the program
runner (backends/vta/program/), libqaccel_litert, the QACCEL_VTA LiteRT kernel,
libLiteRtDispatch_Qaccel, the LiteRT dispatch library (backends/litert/kernel/), and
libqaccel_delegate, the classic TFLite delegate (backends/litert/delegate/), as optional parts
of the install; everything else about the package is in pyproject.toml.

The library is plain C loaded with ctypes (targets/vta/cmachine.py), not a Python extension
module: it has no Python.h dependency and the generated C driver compiles the same sources.
`optional=True`: without a working C compiler the install still succeeds, and qaccel then
compiles the library on first use or falls back to the Python simulator.
"""

import importlib.util
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext


def _load_cbuild():
    """targets/cbuild.py (standard library only), by path: the package is not installed yet."""
    spec = importlib.util.spec_from_file_location(
        "_qaccel_cbuild", Path(__file__).parent / "targets" / "cbuild.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


cbuild = _load_cbuild()

MACHINE = Path("targets") / "vta" / "machine"
# libqaccel_litert, the QACCEL_VTA LiteRT kernel, and libLiteRtDispatch_Qaccel, the dispatch
# library (backends/litert/): their C files, then their headers, as backends/litert/runtime.py's
# SOURCES and DISPATCH_SOURCES (hashed in this order). Neither links LiteRT (the kernel resolves
# LiteRT's C API at run time, the dispatch library gets it from LiteRT), so both build where
# LiteRT is absent. LiteRT loads any libLiteRtDispatch*.so of the directory it is given: the
# dispatch library is alone in backends/litert/libdispatch/.
KERNEL = Path("backends") / "litert" / "kernel"
PROGRAM = Path("backends") / "vta" / "program"
# libqaccel_program: the program runner alone (backends/vta/program_runner.py's SOURCES).
PROGRAM_FILES = (PROGRAM / "qaccel_program.c", MACHINE / "vta_machine.c",
                 PROGRAM / "qaccel_program.h", MACHINE / "vta_machine.h")
KERNEL_FILES = (KERNEL / "qaccel_kernel.c", KERNEL / "qaccel_litert_common.c",
                PROGRAM / "qaccel_program.c", MACHINE / "vta_machine.c",
                KERNEL / "qaccel_litert_api.h", KERNEL / "qaccel_litert_common.h",
                PROGRAM / "qaccel_program.h", MACHINE / "vta_machine.h")
DISPATCH_FILES = (KERNEL / "qaccel_dispatch.c", KERNEL / "qaccel_litert_common.c",
                  PROGRAM / "qaccel_program.c", MACHINE / "vta_machine.c",
                  KERNEL / "qaccel_dispatch_api.h", KERNEL / "qaccel_litert_api.h",
                  KERNEL / "qaccel_litert_common.h", PROGRAM / "qaccel_program.h",
                  MACHINE / "vta_machine.h")
# libLiteRtCompilerPlugin_Qaccel, the LiteRT compiler plugin (backends/litert/plugin/), with the
# C-to-Python bridge it hands partitions through (backends/litert/bridge/). It links neither
# LiteRT nor libpython: the python and libpython of the environment that builds it are recorded
# in it (QACCEL_PYTHON, QACCEL_LIBPYTHON; the environment variables of the same names override
# them at run time), for C hosts, where no interpreter runs yet. Alone in backends/litert/libplugin/.
PLUGIN = Path("backends") / "litert" / "plugin"
BRIDGE = Path("backends") / "litert" / "bridge"
PLUGIN_FILES = (PLUGIN / "qaccel_plugin.c", BRIDGE / "qaccel_pybridge.c",
                PLUGIN / "qaccel_plugin_api.h", BRIDGE / "qaccel_pybridge.h",
                KERNEL / "qaccel_dispatch_api.h", KERNEL / "qaccel_litert_api.h")
# libqaccel_delegate.so, the classic TFLite delegate: as backends/litert/delegate.py's
# DELEGATE_SOURCES. It is named as load_delegate users expect (no Python extension suffix).
# Without an artifact it compiles on the spot through the same bridge as the plugin (the
# building environment's python and libpython recorded likewise).
DELEGATE = Path("backends") / "litert" / "delegate"
DELEGATE_FILES = (DELEGATE / "qaccel_delegate.c", DELEGATE / "qaccel_artifact.c",
                  DELEGATE / "qaccel_describe.c", BRIDGE / "qaccel_pybridge.c",
                  PROGRAM / "qaccel_program.c", MACHINE / "vta_machine.c",
                  DELEGATE / "qaccel_artifact.h", DELEGATE / "qaccel_describe.h",
                  DELEGATE / "qaccel_tflite_api.h", BRIDGE / "qaccel_pybridge.h",
                  PROGRAM / "qaccel_program.h", MACHINE / "vta_machine.h")
DELEGATE_EXT = "qaccel.backends.litert.libqaccel_delegate"
# Every C library's flags (targets/cbuild.py); the LiteRT libraries export only their API.
STRICT_C = [*cbuild.CFLAGS, "-fvisibility=hidden"]


def kernel_hash(files=KERNEL_FILES) -> str:
    """As backends/litert/runtime.source_hash(files)."""
    return cbuild.source_hash(Path(__file__).parent / path for path in files)


def python_paths() -> list[tuple[str, str]]:
    """The building environment's python and shared libpython, as C string macros."""
    import sys
    import sysconfig

    lib = ""
    if sysconfig.get_config_var("Py_ENABLE_SHARED"):
        lib = str(Path(sysconfig.get_config_var("LIBDIR") or "")
                  / (sysconfig.get_config_var("LDLIBRARY") or ""))
    quoted = [json_c_string(sys.executable), json_c_string(lib)]
    return [("QACCEL_PYTHON", quoted[0]), ("QACCEL_LIBPYTHON", quoted[1])]


def json_c_string(text: str) -> str:
    import json

    return json.dumps(text)  # a valid C string literal for paths (ASCII escapes only)


def litert_library(name: str, files, macros=()) -> Extension:
    digest = kernel_hash(files)
    return Extension(
        name,
        sources=[str(f) for f in files if f.suffix == ".c"],
        depends=[str(f) for f in files if f.suffix == ".h"],
        include_dirs=[str(KERNEL), str(PROGRAM), str(MACHINE), str(PLUGIN), str(BRIDGE),
                      str(DELEGATE)],
        define_macros=[("QACCEL_LITERT_SOURCE_HASH", f'"{digest}"'),
                       ("VTA_SOURCE_HASH", f'"{digest}"'), *macros],
        extra_compile_args=STRICT_C,
        extra_link_args=["-Wl,-z,defs"],
        libraries=["dl", "m", "pthread"],
        optional=True,
    )


def reference_library(library) -> Extension:
    """A C library with a Python reference (libqaccel_vta, the C machine; libqaccel_search,
    the schedule search; libqaccel_stream, the stream resolver and GEMM emitter) as
    targets/cbuild.py declares it for the module that loads it: the same files, the same digest
    in the same macro."""
    files = library.files(Path())  # relative to this folder, as setuptools takes them
    return Extension(
        library.extension,
        sources=[str(f) for f in files if f.suffix == ".c"],
        depends=[str(f) for f in files if f.suffix == ".h"],
        define_macros=[(library.hash_macro, f'"{library.source_hash()}"')],
        extra_compile_args=list(cbuild.CFLAGS),
        optional=True,
    )


class BuildCLibrary(build_ext):
    def get_export_symbols(self, ext):
        return []  # no PyInit_ function: this is not a Python module

    def get_ext_filename(self, fullname):
        # called with the full name and with its last component (distutils' get_ext_fullpath)
        if DELEGATE_EXT.endswith(fullname) and fullname.endswith("libqaccel_delegate"):
            return str(Path(*fullname.split("."))) + ".so"
        return super().get_ext_filename(fullname)


setup(
    ext_modules=[
        reference_library(cbuild.MACHINE_LIBRARY),
        litert_library("qaccel.backends.vta.program._qaccel_program", PROGRAM_FILES),
        litert_library("qaccel.backends.litert._qaccel_litert", KERNEL_FILES),
        litert_library("qaccel.backends.litert.libdispatch.libLiteRtDispatch_Qaccel",
                       DISPATCH_FILES),
        litert_library("qaccel.backends.litert.libplugin.libLiteRtCompilerPlugin_Qaccel",
                       PLUGIN_FILES, python_paths()),
        litert_library(DELEGATE_EXT, DELEGATE_FILES, python_paths()),
        reference_library(cbuild.SEARCH_LIBRARY),
        reference_library(cbuild.STREAM_LIBRARY),
    ],
    cmdclass={"build_ext": BuildCLibrary},
)
