"""Builds libqaccel_vta, the C simulator (targets/vta/machine/), libqaccel_litert, the
QACCEL_VTA LiteRT kernel, and libLiteRtDispatch_Qaccel, the LiteRT dispatch library
(backends/litert/kernel/), as optional parts of the install; everything else about the package
is in pyproject.toml.

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
SOURCES, HEADERS = ("vta_machine.c",), ("vta_machine.h",)
# libqaccel_litert, the QACCEL_VTA LiteRT kernel, and libLiteRtDispatch_Qaccel, the dispatch
# library (backends/litert/): their C files, then their headers, as backends/litert/runtime.py's
# SOURCES and DISPATCH_SOURCES (hashed in this order). Neither links LiteRT (the kernel resolves
# LiteRT's C API at run time, the dispatch library gets it from LiteRT), so both build where
# LiteRT is absent. LiteRT loads any libLiteRtDispatch*.so of the directory it is given: the
# dispatch library is alone in backends/litert/libdispatch/.
KERNEL = Path("backends") / "litert" / "kernel"
KERNEL_FILES = (KERNEL / "qaccel_kernel.c", KERNEL / "qaccel_program.c", MACHINE / "vta_machine.c",
                KERNEL / "qaccel_litert_api.h", KERNEL / "qaccel_program.h",
                MACHINE / "vta_machine.h")
DISPATCH_FILES = (KERNEL / "qaccel_dispatch.c", KERNEL / "qaccel_program.c",
                  MACHINE / "vta_machine.c", KERNEL / "qaccel_dispatch_api.h",
                  KERNEL / "qaccel_litert_api.h", KERNEL / "qaccel_program.h",
                  MACHINE / "vta_machine.h")
# Every C library's flags (targets/cbuild.py); the LiteRT libraries export only their API.
STRICT_C = [*cbuild.CFLAGS, "-fvisibility=hidden"]


def source_hash() -> str:
    """As cmachine.source_hash(): lets the loader tell a stale build from a current one."""
    here = Path(__file__).parent / MACHINE
    return cbuild.source_hash(here / name for name in SOURCES + HEADERS)


def kernel_hash(files=KERNEL_FILES) -> str:
    """As backends/litert/runtime.source_hash(files)."""
    return cbuild.source_hash(Path(__file__).parent / path for path in files)


def litert_library(name: str, files) -> Extension:
    digest = kernel_hash(files)
    return Extension(
        name,
        sources=[str(f) for f in files if f.suffix == ".c"],
        depends=[str(f) for f in files if f.suffix == ".h"],
        include_dirs=[str(KERNEL), str(MACHINE)],
        define_macros=[("QACCEL_LITERT_SOURCE_HASH", f'"{digest}"'),
                       ("VTA_SOURCE_HASH", f'"{digest}"')],
        extra_compile_args=STRICT_C,
        extra_link_args=["-Wl,-z,defs"],
        libraries=["dl", "m"],
        optional=True,
    )


class BuildCLibrary(build_ext):
    def get_export_symbols(self, ext):
        return []  # no PyInit_ function: this is not a Python module


setup(
    ext_modules=[
        Extension(
            "qaccel.targets.vta._vta_machine",
            sources=[str(MACHINE / s) for s in SOURCES],
            depends=[str(MACHINE / h) for h in HEADERS],
            define_macros=[("VTA_SOURCE_HASH", f'"{source_hash()}"')],
            extra_compile_args=list(cbuild.CFLAGS),
            optional=True,
        ),
        litert_library("qaccel.backends.litert._qaccel_litert", KERNEL_FILES),
        litert_library("qaccel.backends.litert.libdispatch.libLiteRtDispatch_Qaccel",
                       DISPATCH_FILES),
    ],
    cmdclass={"build_ext": BuildCLibrary},
)
