"""libqaccel_stream (lowering/vta/stream/, C99): an instruction stream resolved in one call.

    out = resolve(desc, config)     # (fields, words, LOAD UOPs), or None: use the reference
    rc, fields, words, uops, loads = gemm_call(params, config)   # a whole GEMM layer

The emitters (`emit.py`, `emit_alu.py`) describe a layer's stream as flat arrays (a
`StreamDescriptor`); the library sets its dependency tokens, places its micro-op kernels and
encodes it, as `emit.resolve_stream_py` (the reference, and the fallback) does. A GEMM
layer's stream is also described by the library (`vta_gemm_emit`, vta_gemm.c: the schedule's
loop nest walked step by step, micro-op kernels built, then resolved), from the parameters
`emit._Emitter.c_params` gives (`GEMM_PARAMS`); the emitter's Python step loop
(`_Emitter.run_py`) is its reference and fallback, and `QACCEL_NO_CGEMM=1` makes it the one
used. tests/test_vta_cstream.py checks that both give identical programs.

Finding the library, first hit wins:
  1. `QACCEL_NO_CSTREAM=1`: none (the Python reference runs; for tests and debugging);
  2. `QACCEL_CSTREAM_LIB=path`: that shared object (e.g. a sanitizer build);
  3. the extension `pip install` built next to this file (setup.py, optional);
  4. compiled on first use with the system C compiler into a per-user cache directory.
A library built from other sources than the ones next to this file is not used. When none
loads, `available()` is False and `unavailable_reason()` says why; the emitters then resolve
their streams in Python (the same programs, more slowly).
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from qaccel.targets import cbuild

LIBRARY = cbuild.STREAM_LIBRARY  # its sources, digest and extension, declared once
STREAM_DIR = LIBRARY.directory()
SOURCES, HEADERS = LIBRARY.sources, LIBRARY.headers
ABI = 2  # VTA_STREAM_ABI
NF = 34  # VTA_STREAM_NF
LIB_NAME = LIBRARY.lib_name
OK, BAD_INPUT, NOMEM, NO_QUEUE, KERNEL_TOO_BIG, OVERFLOW, NO_COMPUTE = range(7)

_I = ctypes.c_int64
_P = ctypes.c_void_p


class _IO(ctypes.Structure):  # vta_stream_io
    _fields_ = [
        ("nf", _I), ("n", _I), ("recs", _P), ("n_rows", _I), ("rows", _P), ("n_sigs", _I),
        ("sig_read_ptr", _P), ("sig_reads", _P), ("sig_write_ptr", _P), ("sig_writes", _P),
        ("sig_entries", _I * 2), ("n_slots", _I), ("n_kernels", _I), ("kernel_sizes", _P),
        ("uop_depth", _I), ("finish", _I), ("columns", _I * 8), ("token_push", _I * 9),
        ("token_pop", _I * 9), ("enc_ptr", _I * 7), ("enc_entries", _I), ("enc_col", _P),
        ("enc_lo", _P),
        ("enc_hi", _P), ("enc_shift", _P), ("enc_word", _P), ("capacity", _I),
        ("fields", _P), ("words", _P), ("n_out", _I), ("n_uop_loads", _I),
        ("error_index", _I), ("error_value", _I),
    ]  # fmt: skip


class _GemmResult(ctypes.Structure):  # vta_gemm_result
    _fields_ = [("n_out", _I), ("n_uop_loads", _I), ("n_uops", _I), ("fields", _P),
                ("words", _P), ("uops", _P)]  # fmt: skip


# The parameters of `vta_gemm_emit`, in the order of vta_stream.h's VTA_GEMM_* enum
# (tests/test_vta_cstream.py checks it); `UOP_*`, `PARAMS` and `TAIL` are runs of values.
GEMM_PARAMS = (
    "KIND", "H", "W", "KH", "KW", "SH", "SW", "DH", "DW", "PAD_T", "PAD_L", "OH", "OW", "CIB",
    "COB", "DEPTH_MULTIPLIER", "BATCH", "ROW_SUBSAMPLE", "DIAGONAL", "INT32_OUTPUT", "HAS_BIAS",
    "IZP", "TH", "TW", "TCO", "TCI", "LOOP_SPATIAL", "INP_SLOTS", "WGT_SLOTS", "ACC_SLOTS",
    "ZP", "GEMM_BIAS", "STORE_TAIL", "RUNTIME_WEIGHTS", "RUNTIME_INIT", "BIAS_MODE",
    "PARAM_ROWS", "HAS_SHIFT", "INP_CONST", "INP_BIAS", "INP_BASE", "INP_SLOT_ROWS",
    "WGT_CONST", "WGT_BIAS", "WGT_BASE", "WGT_SLOT_TILES", "ACC_BASE", "ACC_SLOT_ROWS",
    "E_INPUT", "E_OUTPUT", "E_WEIGHTS", "E_INIT", "E_BIAS", "E_PAD_ROW", "E_PARAMS",
    "PARAMS_N", "E_ONE_ROW", "E_ZP_TILE", "E_BIAS_ROW", "E_BIAS_TILES", "LSH_IMM", "RSHR_IMM",
    "CLAMP_LO", "CLAMP_HI",
)  # fmt: skip
GEMM_INDEX = {name: i for i, name in enumerate(GEMM_PARAMS)}
GEMM_INDEX["UOP_BIT"] = len(GEMM_PARAMS)
GEMM_INDEX["UOP_WIDTH"] = GEMM_INDEX["UOP_BIT"] + 3
GEMM_INDEX["PARAMS"] = GEMM_INDEX["UOP_WIDTH"] + 3  # 5 x (kind, first row, per block)
GEMM_INDEX["TAIL"] = GEMM_INDEX["PARAMS"] + 15  # 8 ops
GEMM_N = GEMM_INDEX["TAIL"] + 8
GEMM_MAX_STEPS = 1 << 14  # VTA_GEMM_MAX_STEPS: the steps of all images one call walks
GEMM_BIAS_MODES = ("alu", "dma", "gemm", "store")
GEMM_PARAM_KINDS = ("bias", "lsh", "rdmul", "rshr", "store")
GEMM_TAIL_OPS = (None, "lsh", "rdmul", "rshr", "clamp", "zp")
# The field order vta_gemm.c writes rows in (its F_* enum): isa.FIELD_NAMES'.
C_FIELDS = (
    "opcode", "pop_prev", "pop_next", "push_prev", "push_next", "memory_type", "sram_base",
    "dram_base", "y_size", "x_size", "x_stride", "y_pad_0", "y_pad_1", "x_pad_0", "x_pad_1",
    "reset", "uop_bgn", "uop_end", "iter_out", "iter_in", "dst_factor_out", "dst_factor_in",
    "src_factor_out", "src_factor_in", "wgt_factor_out", "wgt_factor_in", "alu_opcode",
    "use_imm", "imm", "pad_value", "clear", "param_row", "param_y", "param_x",
)  # fmt: skip


# The library's digest and its build, as its declaration gives them (setup.py compiles the
# same digest into it): `source_hash()`, `build_library(out_dir, cc=None, extra_flags=())`.
source_hash = LIBRARY.source_hash
build_library = LIBRARY.build


def _open(path: Path, check_hash: bool):
    lib = ctypes.CDLL(str(path))
    lib.vta_stream_abi.restype = _I
    if lib.vta_stream_abi() != ABI:
        raise OSError(f"{path}: ABI {lib.vta_stream_abi()}, expected {ABI}")
    lib.vta_stream_source_hash.restype = ctypes.c_char_p
    if check_hash and lib.vta_stream_source_hash().decode() != source_hash():
        raise OSError(f"{path} was built from other sources")
    lib.vta_stream_resolve.restype = ctypes.c_int
    lib.vta_stream_resolve.argtypes = [ctypes.POINTER(_IO)]
    lib.vta_gemm_emit.restype = ctypes.c_int
    lib.vta_gemm_emit.argtypes = [_P, _I, ctypes.POINTER(_IO), ctypes.POINTER(_GemmResult)]
    lib.vta_gemm_free.restype = None
    lib.vta_gemm_free.argtypes = [ctypes.POINTER(_GemmResult)]
    return lib


_LOADER = LIBRARY.loader(_open)
library = _LOADER.library
"""The loaded ctypes library, or None (`unavailable_reason()` says why)."""
available = _LOADER.available
unavailable_reason = _LOADER.unavailable_reason
_reset_for_tests = _LOADER.reset


@dataclass
class StreamDescriptor:
    """A stream as the library takes it (all int64): `recs` `[n][5]` (row index, module,
    access signature, kernel or -1, micro-op within it or -1), `rows` `[m][34]` the fields
    each instruction starts from, the signatures' read and written slots (CSR), the kernels'
    sizes, and whether the last instruction is FINISH."""

    recs: np.ndarray
    rows: np.ndarray
    sig_read_ptr: np.ndarray
    sig_reads: np.ndarray
    sig_write_ptr: np.ndarray
    sig_writes: np.ndarray
    n_slots: int
    kernel_sizes: np.ndarray
    finish: bool


_STATIC: dict = {}


def _static(config):
    """The configuration's constant inputs: columns, token queues, encoding plan."""
    found = _STATIC.get(config)
    if found is not None:
        return found
    from qaccel.targets.vta.isa import FIELD_NAMES, TOKEN_FIFOS, layout_of

    idx = {name: i for i, name in enumerate(FIELD_NAMES)}
    columns = [idx[n] for n in ("uop_bgn", "uop_end", "memory_type", "sram_base", "dram_base",
                                "y_size", "x_size", "x_stride")]  # fmt: skip
    push, pop = [-1] * 9, [-1] * 9
    for p, c, push_flag, pop_flag in TOKEN_FIFOS.values():
        push[3 * int(p) + int(c)], pop[3 * int(p) + int(c)] = idx[push_flag], idx[pop_flag]
    plan = layout_of(config).encode_plan
    ptr, cols, lo, hi, shift, word = [0], [], [], [], [], []
    for op in range(6):
        c_, lo_, hi_, _, shift_, word_ = plan[op]
        cols += c_.tolist()
        lo += lo_.tolist()
        hi += hi_.tolist()
        shift += [int(s) for s in shift_]
        word += word_.tolist()
        ptr.append(len(cols))
    arrays = [np.array(a, np.int64) for a in (cols, lo, hi, shift, word)]
    found = _STATIC[config] = (columns, push, pop, ptr, arrays)
    return found


def _ptr(a: np.ndarray) -> int:
    return a.ctypes.data


_STATIC_IO: dict = {}


def _statics_io(config) -> _IO:
    """A `_IO` with the configuration's constant inputs set (the rest zero), made once per
    configuration (`vta_gemm_emit` only reads it). The record points into the encoding plan's
    arrays, so the cache entry holds them too: they live as long as the record."""
    found = _STATIC_IO.get(config)
    if found is not None:
        return found[0]
    io = _IO()
    io.nf = NF
    arrays = _set_statics(io, config)
    _STATIC_IO[config] = (io, arrays)
    return io


def _set_statics(io: _IO, config) -> tuple:
    """Set the configuration's constant inputs of `io` (the columns, the tokens, the encoding
    plan); the encoding plan's arrays `io` points into, which the caller keeps alive."""
    columns, push, pop, ptr, arrays = _static(config)
    io.uop_depth = config.depth("uop")
    for k in range(8):
        io.columns[k] = columns[k]
    for k in range(9):
        io.token_push[k], io.token_pop[k] = push[k], pop[k]
    for k in range(7):
        io.enc_ptr[k] = ptr[k]
    io.enc_entries = len(arrays[0])
    io.enc_col, io.enc_lo, io.enc_hi, io.enc_shift, io.enc_word = (_ptr(a) for a in arrays)
    return arrays


def gemm_call(params: np.ndarray, config):
    """Run `vta_gemm_emit` on `params` (int64, `GEMM_N` of them): (return code, fields
    `[n][34]`, words `[n][2]`, micro-ops, LOAD UOPs); the arrays None unless it succeeded."""
    lib = library()
    if lib is None:
        raise RuntimeError(f"libqaccel_stream is unavailable: {unavailable_reason()}")
    params = np.ascontiguousarray(params, np.int64)
    io = _statics_io(config)
    res = _GemmResult()
    rc = lib.vta_gemm_emit(_ptr(params), len(params), ctypes.byref(io), ctypes.byref(res))
    if rc != OK:
        return rc, None, None, None, 0
    try:
        n, k = res.n_out, res.n_uops
        fields = np.ctypeslib.as_array((ctypes.c_int64 * (n * NF)).from_address(res.fields))
        words = np.ctypeslib.as_array((ctypes.c_uint64 * (2 * n)).from_address(res.words))
        uops = (np.ctypeslib.as_array((ctypes.c_uint32 * k).from_address(res.uops)).copy()
                if k else np.zeros(0, np.uint32))  # fmt: skip
        out = fields.reshape(n, NF).copy(), words.reshape(n, 2).copy(), uops, res.n_uop_loads
    finally:
        lib.vta_gemm_free(ctypes.byref(res))
    return (rc, *out)


def call(desc: StreamDescriptor, config, capacity: int | None = None):
    """Run the library on `desc`: (return code, the `_IO` record, fields, words)."""
    lib = library()
    if lib is None:
        raise RuntimeError(f"libqaccel_stream is unavailable: {unavailable_reason()}")
    arrs = [np.ascontiguousarray(a, np.int64) for a in (
        desc.recs, desc.rows, desc.sig_read_ptr, desc.sig_reads, desc.sig_write_ptr,
        desc.sig_writes, desc.kernel_sizes)]  # fmt: skip
    recs, rows, rptr, reads, wptr, writes, ksizes = arrs
    if not _well_shaped(recs, rows, rptr, wptr, reads, writes, ksizes):
        return BAD_INPUT, None, None, None  # the library reads the arrays by these sizes
    n = len(recs)
    if capacity is None:
        capacity = n + int((recs[:, 3] >= 0).sum()) + 1 if n else 1
    fields = np.zeros((capacity, NF), np.int64)
    words = np.zeros((capacity, 2), np.uint64)
    io = _IO()
    io.nf, io.n, io.recs = NF, n, _ptr(recs)
    io.n_rows, io.rows = len(rows), _ptr(rows)
    io.n_sigs = len(rptr) - 1
    io.sig_read_ptr, io.sig_reads = _ptr(rptr), _ptr(reads)
    io.sig_write_ptr, io.sig_writes = _ptr(wptr), _ptr(writes)
    io.sig_entries[0], io.sig_entries[1] = len(reads), len(writes)
    io.n_slots = desc.n_slots
    io.n_kernels, io.kernel_sizes = len(ksizes), _ptr(ksizes)
    io.finish = int(desc.finish)
    _set_statics(io, config)  # (its arrays are `_static`'s, cached for the process)
    io.capacity, io.fields, io.words = capacity, _ptr(fields), _ptr(words)
    rc = lib.vta_stream_resolve(ctypes.byref(io))
    return rc, io, fields, words


def _well_shaped(recs, rows, rptr, wptr, reads, writes, ksizes) -> bool:
    """Whether the arrays have the shapes the sizes handed to the library say."""
    return (recs.ndim == 2 and recs.shape[1] == 5 and rows.ndim == 2 and rows.shape[1] == NF
            and rptr.ndim == wptr.ndim == reads.ndim == writes.ndim == ksizes.ndim == 1
            and len(rptr) >= 1 and len(wptr) == len(rptr))  # fmt: skip


def resolve(desc: StreamDescriptor, config):
    """(fields `[n][34]`, words `[n][2]`, LOAD UOPs) of the resolved stream, or None when the
    library is unavailable or refuses (the reference then resolves it, raising as it does)."""
    if library() is None:
        return None
    rc, io, fields, words = call(desc, config)
    if rc != OK:
        return None
    n = io.n_out
    return fields[:n], words[:n], io.n_uop_loads
