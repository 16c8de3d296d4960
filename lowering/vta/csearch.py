"""libqaccel_search (lowering/vta/search_c/, C99): the schedule search of one layer in C.

    found = search(g, config, modes, orders, try_modes, model_steps)
    # the schedules `search._search` models, best first, with their estimated cycles;
    # None where the C search does not run (no library, or a search it leaves to Python)

The C search enumerates, ranks and models the candidates exactly as the Python search does
(`search._Ranked`, `cost_model.quick_estimate`, `planning.plan_steps` and
`cost_model.estimate`), which stays the specification and the fallback: the grids too large
to rank at once, the exhaustive enumeration (no candidate fits) and the schedules whose loop
nest would take more than `WALK_BYTES` to walk run in Python, and so does every search when
the library is not there. tests/test_vta_csearch.py checks that both give
the same schedules on the corpus.

Finding the library, first hit wins (as `targets/vta/cmachine.py`):
  1. `QACCEL_NO_CSEARCH=1`: none (the Python search runs);
  2. `QACCEL_CSEARCH_LIB=path`: that shared object (e.g. a sanitizer build);
  3. the extension `pip install` built next to this file (setup.py, optional);
  4. compiled on first use with the system C compiler into the per-user cache directory.
A library built from other sources is not used. When none loads the Python search runs
(silently: it gives the same schedules).
"""

from __future__ import annotations

import ctypes
from pathlib import Path

import numpy as np

from qaccel.lowering.vta.bias import n_param_rows
from qaccel.lowering.vta.cost_model import _tail_insns, tail_cycles_per_row
from qaccel.lowering.vta.geometry import KINDS, LayerGeometry
from qaccel.lowering.vta.planning import (
    BIAS_MODES,
    LOOP_ORDERS,
    Schedule,
    _depths,
    available_bias_modes,
    plan_buffers,
    store_requant,
)
from qaccel.targets import cbuild
from qaccel.targets.vta.config import HardwareConfig

LIBRARY = cbuild.SEARCH_LIBRARY  # its sources, digest and extension, declared once
SEARCH_DIR = LIBRARY.directory()
SOURCES, HEADERS = LIBRARY.sources, LIBRARY.headers
ABI = 1  # VTA_SEARCH_ABI in vta_search.h
LIB_NAME = LIBRARY.lib_name
GEO_N, CFG_N, OUT_N = 24, 9, 10
INVALID, FALLBACK, NOMEM, CAPACITY, INTERNAL = -1, -2, -3, -4, -5
OUT_CAP = 1 << 16
WALK_BYTES = 64 << 20  # VTA_SEARCH_WALK_BYTES: a longer walk's search runs in Python

_I64 = ctypes.c_int64
_P = ctypes.c_void_p


# The library's digest and its build, as its declaration gives them (setup.py compiles the
# same digest into it): `source_hash()`, `build_library(out_dir, cc=None, extra_flags=())`.
source_hash = LIBRARY.source_hash
build_library = LIBRARY.build


def _open(path: Path, check_hash: bool):
    lib = ctypes.CDLL(str(path))
    lib.vta_search_abi.restype = ctypes.c_int
    if lib.vta_search_abi() != ABI:
        raise OSError(f"{path}: ABI {lib.vta_search_abi()}, expected {ABI}")
    lib.vta_search_source_hash.restype = ctypes.c_char_p
    if check_hash and lib.vta_search_source_hash().decode() != source_hash():
        raise OSError(f"{path} was built from other sources")
    lib.vta_search.restype = ctypes.c_int
    lib.vta_search.argtypes = [_P, _I64, _P, _I64, _P, _I64, _P, _I64, _P, _I64, _I64, _I64,
                               _I64, _P, _I64]  # fmt: skip
    return lib


_LOADER = LIBRARY.loader(_open)
library = _LOADER.library
"""The loaded ctypes library, or None (`unavailable_reason()` says why)."""
available = _LOADER.available
unavailable_reason = _LOADER.unavailable_reason
_reset_for_tests = _LOADER.reset


def _primary(g: LayerGeometry, c: HardwareConfig, modes: tuple[str, ...]) -> str:
    """`search._search`'s first bias mode (the cheapest the layer and hardware allow)."""
    return ("store" if store_requant(g, c) and "store" in modes
            else "gemm" if g.has_bias and g.small_bias else "alu")  # fmt: skip


def arguments(g: LayerGeometry, c: HardwareConfig, modes: tuple[str, ...],
              orders: tuple[str, ...], try_modes: bool) -> tuple:  # fmt: skip
    """The C entry point's arrays for a search (geo, cfg, modes_info, rank_modes, orders,
    primary)."""
    geo = np.array([
        KINDS.index(g.kind), g.H, g.W, g.KH, g.KW, g.sh, g.sw, g.dh, g.dw, g.pad_t, g.pad_b,
        g.pad_l, g.pad_r, g.OH, g.OW, g.block, g.depth_multiplier, g.CIB, g.COB,
        g.has_bias, g.small_bias, g.int32_output, g.runtime_init, "zp" in g.tail,
    ], np.int64)  # fmt: skip
    cfg = np.array([c.insn_issue_cycles, c.dma_setup_cycles, c.bus_width_bytes,
                    c.gemm_cycles_per_uop, c.alu_cycles_per_uop, *_depths(c)],
                   np.int64)  # fmt: skip
    usable = available_bias_modes(g, c)
    info = np.array([[n_param_rows(g, m), tail_cycles_per_row(g, m, c), _tail_insns(g, m),
                      m in usable] for m in BIAS_MODES], np.int64).reshape(-1)  # fmt: skip
    primary = _primary(g, c, modes)
    first = (primary,) if try_modes else modes
    ranked = available_bias_modes(g, c, first) or ["alu"]
    rank_modes = np.array([BIAS_MODES.index(m) for m in ranked], np.int64)
    order_ix = np.array([LOOP_ORDERS.index(o) for o in orders], np.int64)
    return geo, cfg, info, rank_modes, order_ix, BIAS_MODES.index(primary)


def run(lib, geo, cfg, info, rank_modes, orders, primary: int, try_modes: bool,
        model_steps: int, out_cap: int = OUT_CAP) -> tuple[int, np.ndarray]:
    """The C search on these arrays: (return code, out rows)."""
    arrays = [np.ascontiguousarray(a, np.int64) for a in (geo, cfg, info, rank_modes, orders)]
    out = np.empty((max(out_cap, 1), OUT_N), np.int64)
    pointers = [x for a in arrays for x in (a.ctypes.data, a.size)]
    rc = lib.vta_search(*pointers, int(primary), int(try_modes), int(model_steps),
                        out.ctypes.data, int(out_cap))
    return rc, out


def search(g: LayerGeometry, c: HardwareConfig, modes: tuple[str, ...], orders: tuple[str, ...],
           try_modes: bool, model_steps: int,
           first: bool = False, strict: bool = False) -> list[Schedule] | None:  # fmt: skip
    """`search._search(g, c, modes, orders, try_modes, model_steps)` in C, or None where the
    Python search must run (no library; a batch; a search the C code leaves to Python).
    `first`: only the best schedule (the others are not placed on chip by `plan_buffers`).
    A refusal of its arguments, an inconsistency the C search finds in itself (INTERNAL), or
    a schedule `plan_buffers` would place otherwise, is a bug of the C search: the Python
    search runs then, and `strict` (the tests) raises instead. Running out of memory (NOMEM)
    is not a bug: the Python search runs, whatever `strict`."""
    lib = library()
    if lib is None or g.batch != 1:
        return None
    # Every modeled schedule walks one loop step at least: model_steps + 3 of them at most.
    rc, out = run(lib, *arguments(g, c, modes, orders, try_modes), try_modes, model_steps,
                  min(OUT_CAP, max(0, model_steps) + 4))  # fmt: skip
    if rc in (FALLBACK, NOMEM, CAPACITY):
        return None
    if rc < 0:
        if strict:
            what = ("found itself inconsistent" if rc == INTERNAL
                    else "refused its arguments")  # fmt: skip
            raise ValueError(f"the C schedule search {what} (code {rc})")
        return None
    found = []
    if rc == 0:  # (the C search models one schedule at least)
        return None
    rows = out[: 1 if first else rc].tolist()
    for th, tw, tco, tci, order, mode, inp, wgt, acc, cycles in rows:
        o, m = LOOP_ORDERS[order], BIAS_MODES[mode]
        planned = plan_buffers(g, th, tw, tco, tci, o, m, c)
        if planned is None or list(planned[:3]) != [inp, wgt, acc]:
            if not strict:
                return None
            raise AssertionError(f"the C search's schedule {th}x{tw}x{tco}x{tci} {o} {m} "
                                 f"slots {inp}/{wgt}/{acc} differs from plan_buffers")  # fmt: skip
        found.append(Schedule(g, th, tw, tco, tci, o, m, inp, wgt, acc, planned[3],
                              estimated_cycles=cycles))  # fmt: skip
    return found
