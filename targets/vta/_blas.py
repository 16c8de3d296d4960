"""Run numpy's BLAS single-threaded inside the simulator.

The simulator issues many small matrix products. Multi-threaded OpenBLAS hands each to a
thread pool, which on a loaded 2-core machine occasionally stalls a 0.1 ms product for 60 ms;
one thread is both faster and predictable. This finds the OpenBLAS numpy loaded (any of the
usual symbol prefixes) and sets its thread count for the duration of a `with` block. Where no
OpenBLAS is found (other BLAS, other OS) it does nothing.
"""

from __future__ import annotations

import contextlib
import ctypes
import re
import threading

_PREFIXES = ("scipy_openblas_", "openblas_")
_SUFFIXES = ("64_", "")
_lock = threading.Lock()
_handles: list | None = None


def _find():
    handles = []
    try:
        with open("/proc/self/maps") as f:
            paths = sorted(set(re.findall(r"(/\S*openblas\S*\.so\S*)", f.read())))
    except OSError:
        return handles
    for path in paths:
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        for prefix in _PREFIXES:
            for suffix in _SUFFIXES:
                get = getattr(lib, f"{prefix}get_num_threads{suffix}", None)
                put = getattr(lib, f"{prefix}set_num_threads{suffix}", None)
                if get is not None and put is not None:
                    get.restype = ctypes.c_int
                    put.argtypes = [ctypes.c_int]
                    handles.append((get, put))
                    break
            else:
                continue
            break
    return handles


@contextlib.contextmanager
def single_threaded_blas():
    global _handles
    with _lock:
        if _handles is None:
            import numpy  # noqa: F401  (loads its BLAS)

            _handles = _find()
        saved = [(get(), put) for get, put in _handles]
        for _, put in saved:
            put(1)
    try:
        yield
    finally:
        with _lock:
            for n, put in saved:
                put(n)
