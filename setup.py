"""Builds libqaccel_vta, the C simulator (targets/vta/machine/), as an optional part of the
install; everything else about the package is in pyproject.toml.

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


def source_hash() -> str:
    """As cmachine.source_hash(): lets the loader tell a stale build from a current one."""
    here = Path(__file__).parent / MACHINE
    h = hashlib.sha256()
    for name in SOURCES + HEADERS:
        h.update(name.encode() + b"\0" + (here / name).read_bytes())
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
        )
    ],
    cmdclass={"build_ext": BuildCLibrary},
)
