"""Builds libqaccel_vta, the C simulator (targets/vta/machine/), and libqaccel_litert, the
QACCEL_VTA LiteRT kernel (backends/litert/kernel/), as optional parts of the install;
everything else about the package is in pyproject.toml.

The library is plain C loaded with ctypes (targets/vta/cmachine.py), not a Python extension
module: it has no Python.h dependency and the generated C driver compiles the same sources.
`optional=True`: without a working C compiler the install still succeeds, and qaccel then
compiles the library on first use or falls back to the Python simulator.
"""

import hashlib
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

MACHINE = Path("targets") / "vta" / "machine"
SOURCES, HEADERS = ("vta_machine.c",), ("vta_machine.h",)
# libqaccel_litert, the QACCEL_VTA LiteRT kernel (backends/litert/): its sources and
# libqaccel_vta's, in the order of backends/litert/runtime.py's source_hash(). It links no
# LiteRT (it resolves LiteRT's C API at run time), so it builds where LiteRT is absent.
KERNEL = Path("backends") / "litert" / "kernel"
KERNEL_FILES = (KERNEL / "qaccel_kernel.c", KERNEL / "qaccel_litert_api.h",
                MACHINE / "vta_machine.c", MACHINE / "vta_machine.h")


def source_hash() -> str:
    """As cmachine.source_hash(): lets the loader tell a stale build from a current one."""
    here = Path(__file__).parent / MACHINE
    h = hashlib.sha256()
    for name in SOURCES + HEADERS:
        h.update(name.encode() + b"\0" + (here / name).read_bytes())
    return h.hexdigest()[:16]


def kernel_hash() -> str:
    """As backends/litert/runtime.source_hash()."""
    h = hashlib.sha256()
    for path in KERNEL_FILES:
        h.update(path.name.encode() + b"\0" + (Path(__file__).parent / path).read_bytes())
    return h.hexdigest()[:16]


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
            extra_compile_args=["-std=c99", "-O2"],
            optional=True,
        ),
        Extension(
            "qaccel.backends.litert._qaccel_litert",
            sources=[str(KERNEL_FILES[0]), str(KERNEL_FILES[2])],
            depends=[str(KERNEL_FILES[1]), str(KERNEL_FILES[3])],
            include_dirs=[str(KERNEL), str(MACHINE)],
            define_macros=[("QACCEL_LITERT_SOURCE_HASH", f'"{kernel_hash()}"'),
                           ("VTA_SOURCE_HASH", f'"{kernel_hash()}"')],
            extra_compile_args=["-std=c99", "-O2", "-fvisibility=hidden"],
            libraries=["dl", "m"],
            optional=True,
        ),
    ],
    cmdclass={"build_ext": BuildCLibrary},
)
