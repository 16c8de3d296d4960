"""Functional simulator and timing model of the VTA-like accelerator (semantics: docs/isa.md).

    result = simulate(program, uops, dram, config)   # -> SimResult (dram after FINISH + timing)
    report = timing(program, config)                 # -> TimingReport, no data needed

Fetch routes each instruction to the load, compute or store module; each module executes its
queue in order and synchronizes with the others only through the four token FIFOs. The run is
a discrete-event simulation: at every step the module whose next instruction can start
earliest executes it (ties: load, compute, store), which is an order the hardware can take.
Every instruction executes atomically at its start, vectorized with numpy.

A program that works only thanks to that particular order is rejected: the simulator keeps a
vector clock per module (merged when a token is popped) and records, for every SRAM row and
every 16-byte DRAM block, the last instruction that wrote it and the last that read it. An
access by one module to data another module wrote (or still has to read) without a token
chain ordering the two is a hazard and raises `SimulationError`, as are deadlocks, pops of
tokens never pushed, out-of-range SRAM/DRAM/micro-op accesses, reads of never-written SRAM,
two consecutive GEMM micro-ops writing the same accumulator row, out-of-range shift operands
and malformed encodings. Every error names the instruction index. Before any of it, a run
whose state would not fit in the memory budget or whose program takes more steps than the
step budget is refused (`budget.py`: `QACCEL_MEMORY_LIMIT`, `QACCEL_STEP_LIMIT`).
"""

from __future__ import annotations

from typing import Literal

import numpy as np
from qaccel.targets.vta import budget
from qaccel.targets.vta.budget import DRAM_BLOCK
from qaccel.targets.vta._blas import single_threaded_blas
from qaccel.targets.vta.alu import ALU_FUNCTIONS, AluRangeError, output_stage
from qaccel.targets.vta.config import DEFAULT_CONFIG, HardwareConfig
from qaccel.targets.vta.isa import (
    FIELD_NAMES,
    PARAM_ROWS,
    AluOp,
    MemType,
    Opcode,
    Program,
    decode,
    decode_uops,
    describe,
    module_of,
    validate,
)
from qaccel.targets.vta.simulation_result import (  # noqa: F401  (re-exported)
    COMPUTE,
    FIFOS,
    LOAD,
    MODULE_NAMES,
    STORE,
    SimResult,
    SimulationError,
    TimingReport,
)


# --------------------------------------------------------------------------------------------
# GEMM kernel: index arithmetic over (iter_out, iter_in, uop), no per-micro-op Python loop.
# --------------------------------------------------------------------------------------------

_CHUNK = 1 << 21  # elements of the gathered operand per matmul batch


def loop_offsets(n_out: int, n_in: int, f_out: int, f_in: int) -> np.ndarray:
    """`o * f_out + i * f_in` for every (outer o, inner i) in loop order, flattened."""
    o = np.arange(n_out, dtype=np.int64)[:, None] * f_out
    return (o + np.arange(n_in, dtype=np.int64)[None, :] * f_in).reshape(-1)


def distinct_offsets(n_out: int, n_in: int, f_out: int, f_in: int) -> np.ndarray:
    """The distinct values of `loop_offsets`, cheaply for the common loop shapes."""
    if f_out == 0 or n_out == 1:
        return np.arange(n_in if f_in else 1, dtype=np.int64) * f_in
    if f_in == 0 or n_in == 1:
        return np.arange(n_out, dtype=np.int64) * f_out
    if f_out >= f_in * n_in or f_in >= f_out * n_out:  # no two (o, i) collide
        return loop_offsets(n_out, n_in, f_out, f_in)
    return np.unique(loop_offsets(n_out, n_in, f_out, f_in))


def _dst_groups(n_out, n_in, dfo, dfi):
    """Blocks (flattened (o, i) iterations) grouped by destination offset.

    Returns (offsets, blocks) with `blocks` a (groups, m) array when every group has m blocks,
    else (offsets, inverse) with `inverse` the group of each block."""
    b = np.arange(n_out * n_in).reshape(n_out, n_in)
    if dfo == 0 and dfi == 0:
        return np.zeros(1, np.int64), b.reshape(1, -1)
    if dfi == 0 or n_in == 1:
        return np.arange(n_out, dtype=np.int64) * dfo, b
    if dfo == 0 or n_out == 1:
        return np.arange(n_in, dtype=np.int64) * dfi, b.T
    if dfo >= dfi * n_in or dfi >= dfo * n_out:  # all offsets distinct
        return loop_offsets(n_out, n_in, dfo, dfi), b.reshape(-1, 1)
    uniq, inv = np.unique(loop_offsets(n_out, n_in, dfo, dfi), return_inverse=True)
    counts = np.bincount(inv)
    if np.all(counts == counts[0]):
        return uniq, np.argsort(inv, kind="stable").reshape(len(uniq), -1)
    return uniq, inv


def _scatter_add(acc: np.ndarray, rows: np.ndarray, values: np.ndarray):
    """acc[rows] += values modulo 2**32 (values: exact integers, possibly float)."""
    rows = rows.reshape(-1)
    values = values.reshape(len(rows), -1)
    counts = np.bincount(rows)
    if counts.max(initial=0) <= 1:
        if values.dtype == np.float32:  # |values| < 2**24
            add = values.astype(np.int32)
        else:
            add = values.astype(np.int64).astype(np.int32)
        new = np.take(acc, rows, axis=0)
        new += add
        rowv = np.dtype((np.void, acc.shape[1] * 4))
        np.put(acc.view(rowv).reshape(-1), rows, new.view(rowv).reshape(-1))
        return
    uniq = np.flatnonzero(counts)
    sums = np.empty((len(uniq), values.shape[1]), np.int64)
    for j in range(values.shape[1]):
        sums[:, j] = np.bincount(rows, weights=values[:, j], minlength=len(counts))[uniq]
    acc[uniq] += sums.astype(np.int32)


def _gemm_group(acc, inp, wgt, dk, sk, w_base, groups, soff, woff):
    """All iterations of the micro-ops (dk, sk) that share the weight field `w_base`."""
    k = len(dk)
    blk = inp.shape[1]
    uniq, blocks = groups
    if blocks.ndim == 2:
        # Blocks that write the same rows are folded into the matmul's reduction dimension,
        # at most _CHUNK gathered elements at a time (int32 sums modulo 2**32 split freely).
        g, m = blocks.shape
        width = max(1, _CHUNK // max(1, k * blk))
        if m > width:
            for lo in range(0, m, width):
                part = (uniq, blocks[:, lo : lo + width])
                _gemm_group(acc, inp, wgt, dk, sk, w_base, part, soff, woff)
            return
        dtype = np.float32 if m * blk * 128 * 128 < 1 << 24 else np.float64  # exact sums
        step = max(1, _CHUNK // max(1, m * k * blk))
        for lo in range(0, g, step):
            gb = blocks[lo : lo + step]
            c = len(gb)
            idx = soff[gb][:, None, :] + sk[None, :, None]  # (c, k, m)
            x = np.take(inp, idx.reshape(-1), axis=0).reshape(c, k, m * blk).astype(dtype)
            w = np.take(wgt, w_base + woff[gb].reshape(-1), axis=0)  # (c*m, out, in)
            w = w.reshape(c, m, blk, blk).transpose(0, 1, 3, 2).reshape(c, m * blk, blk)
            s = np.matmul(x, w.astype(dtype))  # (c, k, out)
            _scatter_add(acc, uniq[lo : lo + step, None] + dk[None, :], s)
        return
    inv = blocks
    n_blocks = len(inv)
    sums = np.zeros((len(uniq), k, blk), np.float64)
    step = max(1, _CHUNK // max(1, k * blk))
    for lo in range(0, n_blocks, step):
        b = np.arange(lo, min(n_blocks, lo + step))
        idx = soff[b][:, None] + sk[None, :]
        x = np.take(inp, idx.reshape(-1), axis=0).reshape(len(b), k, blk).astype(np.float32)
        w = np.take(wgt, w_base + woff[b], axis=0).transpose(0, 2, 1).astype(np.float32)
        np.add.at(sums, inv[b], np.matmul(x, w))
    _scatter_add(acc, uniq[:, None] + dk[None, :], sums)


def _stack_parts(parts, dk, sk, groups):
    """The micro-ops of `parts` (one per weight field) as (P, k) arrays when every part has k
    of them and the destination groups are a (groups, m) array; else None."""
    sizes = {len(sel) for sel, _ in parts}
    if len(sizes) != 1 or groups[1].ndim != 2:
        return None
    sel = np.stack([sel for sel, _ in parts])
    return dk[sel], sk[sel], np.array([w for _, w in parts], np.int64)


def _gemm_stacked(acc, inp, wgt, dk, sk, w_base, groups, soff, woff):
    """`_gemm_group` for P weight fields at once: `dk`, `sk` (P, k), `w_base` (P,). One gather,
    one batched matmul and one scatter per batch of destination groups, where a loop over the
    parts made as many small ones (programs name a few dozen weight tiles per instruction)."""
    n_parts, k = sk.shape
    blk = inp.shape[1]
    uniq, blocks = groups
    g, m = blocks.shape
    dtype = np.float32 if m * blk * 128 * 128 < 1 << 24 else np.float64  # exact sums
    step = max(1, _CHUNK // max(1, n_parts * m * (k + blk) * blk))
    for lo in range(0, g, step):
        gb = blocks[lo : lo + step]
        c = len(gb)
        idx = soff[gb][:, None, None, :] + sk[None, :, :, None]  # (c, P, k, m)
        x = np.take(inp, idx.reshape(-1), axis=0).reshape(c, n_parts, k, m * blk).astype(dtype)
        widx = w_base[None, :, None] + woff[gb][:, None, :]  # (c, P, m)
        w = np.take(wgt, widx.reshape(-1), axis=0).reshape(c, n_parts, m, blk, blk)
        w = w.transpose(0, 1, 2, 4, 3).reshape(c, n_parts, m * blk, blk)
        s = np.matmul(x, w.astype(dtype))  # (c, P, k, out)
        _scatter_add(acc, uniq[lo : lo + step, None, None] + dk[None, :, :], s)


class GemmPlan:
    """Index arithmetic of one GEMM shape (micro-ops, loop counts, factors), computed once.

    `run(acc, inp, wgt)` performs acc[d] += inp[s] @ wgt[w].T over every (outer, inner, uop)
    iteration, modulo 2**32: `acc` (rows, 16) int32, `inp` (rows, 16) int8, `wgt` (rows, 16 out,
    16 in) int8. Indices must be in range. Accumulation order does not matter: int32 addition
    modulo 2**32 is associative.
    """

    def __init__(self, dk, sk, wk, n_out, n_in, factors):
        dfo, dfi, sfo, sfi, wfo, wfi = factors
        self.dk, self.sk, self.wk = dk, sk, wk
        self.soff = loop_offsets(n_out, n_in, sfo, sfi)
        self.woff = loop_offsets(n_out, n_in, wfo, wfi)
        self.groups = _dst_groups(n_out, n_in, dfo, dfi)
        self.parts = None  # None: one tile per iteration (gather path)
        self.stacked = None  # the parts as one batch: (dk, sk) per part, weight field per part
        if wk.min() == wk.max():
            self.parts = [(None, int(wk[0]))]
        else:
            values, inverse = np.unique(wk, return_inverse=True)
            if len(values) <= 64:
                self.parts = [(np.flatnonzero(inverse == j), int(v)) for j, v in enumerate(values)]
                self.stacked = _stack_parts(self.parts, dk, sk, self.groups)
        if self.parts is None:
            doff = loop_offsets(n_out, n_in, dfo, dfi)
            self.d = (doff[:, None] + dk[None, :]).reshape(-1)
            self.s = (self.soff[:, None] + sk[None, :]).reshape(-1)
            self.w = (self.woff[:, None] + wk[None, :]).reshape(-1)

    def run(self, acc, inp, wgt):
        stacked = self.stacked
        m = self.groups[1].shape[1] if self.groups[1].ndim == 2 else 0
        if stacked is not None and m * stacked[1].size * inp.shape[1] <= _CHUNK:
            _gemm_stacked(acc, inp, wgt, *stacked, self.groups, self.soff, self.woff)
            return
        if self.parts is not None:
            for sel, w_base in self.parts:
                dk = self.dk if sel is None else self.dk[sel]
                sk = self.sk if sel is None else self.sk[sel]
                _gemm_group(acc, inp, wgt, dk, sk, w_base, self.groups, self.soff, self.woff)
            return
        # Many distinct weight tiles per micro-op range: gather a tile per iteration.
        step = max(1, _CHUNK // 256)
        for lo in range(0, len(self.d), step):
            sl = slice(lo, lo + step)
            x = np.take(inp, self.s[sl], axis=0).astype(np.float32)[:, None, :]
            t = np.take(wgt, self.w[sl], axis=0).transpose(0, 2, 1).astype(np.float32)
            _scatter_add(acc, self.d[sl], np.matmul(x, t)[:, 0, :])


_PLANS: dict = {}
_PLANS_KEPT = 4096


def gemm_plan(dk, sk, wk, n_out, n_in, factors) -> GemmPlan:
    """The `GemmPlan` of these micro-op fields, loop counts and factors, shared by every run
    in the process (a plan is only read; the layers of a network repeat their shapes)."""
    key = (dk.tobytes(), sk.tobytes(), wk.tobytes(), n_out, n_in, factors)
    plan = _PLANS.get(key)
    if plan is None:
        if len(_PLANS) >= _PLANS_KEPT:
            _PLANS.clear()
        # copies: the fields are views of a machine's micro-op buffer, which LOAD UOP rewrites
        plan = _PLANS[key] = GemmPlan(dk.copy(), sk.copy(), wk.copy(), n_out, n_in, factors)
    return plan


# --------------------------------------------------------------------------------------------
# The machine
# --------------------------------------------------------------------------------------------


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


class _Machine:
    def __init__(self, program, config, uops, dram, functional: bool,
                 limits=(budget.FROM_ENVIRONMENT, budget.FROM_ENVIRONMENT)):  # fmt: skip
        if isinstance(program, Program):
            config = config or program.config
        self.config = c = config or DEFAULT_CONFIG
        self.program = program if isinstance(program, Program) else Program(c, program)
        step_limit, memory_limit = budget.resolve_limits(*limits, budget.PYTHON_DEFAULT_STEP_LIMIT)
        dram_len = 0
        if functional:
            given = dram is not None
            dram_len = np.asarray(dram).nbytes if given else self.program.initial_dram_bytes()
        budget.check_state(c, len(self.program), dram_len, functional, memory_limit)
        self.f = decode(self.program.words, c)
        self.n = len(self.f)
        self.functional = functional
        for index, message in validate(self.program.words, c, self.f):
            kind = describe(self.f[index]) if index < self.n else None
            raise SimulationError(f"malformed instruction: {message}", index, kind)
        self.rows = [dict(zip(FIELD_NAMES, t)) for t in self.f.tolist()]
        self.module = module_of(self.f)
        self.queues = [np.flatnonzero(self.module == m).tolist() for m in range(3)]
        self._check_token_counts()
        budget.check_steps(self.f, c, step_limit)
        self.blk = c.block
        if functional:
            self._init_state(uops, dram)

    def kind(self, i: int) -> str:
        return describe(self.f[i])

    def error(self, i: int, message: str) -> SimulationError:
        return SimulationError(message, i, self.kind(i))

    # --- static checks ----------------------------------------------------------------------
    def _check_token_counts(self):
        for name, (prod, cons, push, pop) in FIFOS.items():
            pushes = [i for i in self.queues[prod] if self.rows[i][push]]
            pops = [i for i in self.queues[cons] if self.rows[i][pop]]
            if len(pops) > len(pushes):
                i = pops[len(pushes)]
                raise self.error(
                    i,
                    f"pops {name} token #{len(pushes) + 1} ({pop}) but the program pushes only "
                    f"{len(pushes)} {name} token(s) ({push} on {MODULE_NAMES[prod]} instructions)",
                )

    # --- state ------------------------------------------------------------------------------
    def _init_state(self, uops, dram):
        c, blk = self.config, self.blk
        self.uop_image = np.asarray(
            self.program.uops if uops is None else uops, dtype=np.uint32
        ).reshape(-1)
        if dram is None:
            dram = self.program.initial_dram()
        dram = np.asarray(dram)
        if dram.dtype != np.uint8 or dram.ndim != 1:
            raise SimulationError("the DRAM image must be a flat uint8 array")
        self.dram = dram.copy()
        self.uop_mem = np.zeros(c.depth("uop"), np.uint32)
        self.uop_valid = np.zeros(c.depth("uop"), bool)
        self.uop_fields = tuple(np.zeros(c.depth("uop"), np.int64) for _ in range(3))
        self.uop_generation = 0
        self.shape_cache = {}
        self.inp = np.zeros((c.depth("inp"), blk), np.int8)
        self.wgt = np.zeros((c.depth("wgt"), blk, blk), np.int8)
        self.acc = np.zeros((c.depth("acc"), blk), np.int32)
        # Hazard tracking: last writer / reader instruction index per row, -1 = none.
        self.inp_writer = np.full(c.depth("inp"), -1, np.int64)
        self.inp_reader = np.full(c.depth("inp"), -1, np.int64)
        self.wgt_writer = np.full(c.depth("wgt"), -1, np.int64)
        self.wgt_reader = np.full(c.depth("wgt"), -1, np.int64)
        self.acc_writer = np.full(c.depth("acc"), -1, np.int64)
        self.acc_store_reader = np.full(c.depth("acc"), -1, np.int64)
        self.acc_clearer = np.full(c.depth("acc"), -1, np.int64)  # STORE ... clear
        nblocks = _ceil_div(len(self.dram), DRAM_BLOCK)
        self.dram_writer = np.full(nblocks, -1, np.int64)
        self.dram_reader = {LOAD: np.full(nblocks, -1, np.int64), COMPUTE: None}
        self.dram_reader[COMPUTE] = np.full(nblocks, -1, np.int64)
        self.pad_value = 0

    # --- hazard helpers ---------------------------------------------------------------------
    def _after(self, i: int, me: int, other: int, indices: np.ndarray, what: str, how: str):
        """Require every instruction index in `indices` (of module `other`) to happen before
        instruction `i` of module `me`, through tokens."""
        if len(indices) == 0:
            return
        last = int(indices.max())
        if last > self.vc[me][other]:
            raise self.error(
                i,
                f"{how} {what} {'touched' if how == 'overwrites' else 'written'} by "
                f"{MODULE_NAMES[other]} instruction {last} ({self.kind(last)}) with no token "
                f"chain ordering the two (missing push/pop of a dependency token?)",
            )

    def _read_rows(self, i, me, writer, rows, buf, writer_module):
        w = writer[rows]
        if len(w) == 0 or (w.min() >= 0 and (writer_module == me or w.max() <= self.vc[me][writer_module])):
            return
        if w.min() < 0:
            r = int(rows[np.flatnonzero(w < 0)[0]])
            raise self.error(i, f"reads {buf} row {r} before any instruction wrote it (uninitialized, "
                f"or a missing dependency token lets this instruction run first)",
            )
        if writer_module != me:
            bad = w > self.vc[me][writer_module]
            if bad.any():
                r = int(rows[np.flatnonzero(bad)[0]])
                self._after(i, me, writer_module, w[bad], f"{buf} row {r}", "reads")

    # --- the event loop ---------------------------------------------------------------------
    def run(self) -> tuple[TimingReport, dict[str, int]]:
        c, n = self.config, self.n
        start = np.zeros(n, np.int64)
        end = np.zeros(n, np.int64)
        heads = [0, 0, 0]
        free = [0, 0, 0]
        busy = [0, 0, 0]
        stalled = [0, 0, 0]
        bus_wait = [0, 0, 0]
        bus_free = 0
        fifo = {name: [] for name in FIFOS}  # entries (available cycle, vector clock)
        fifo_head = {name: 0 for name in FIFOS}
        self.vc = [[-1, -1, -1] for _ in range(3)]
        gemm_iters = alu_iters = 0
        mem_names = [m.name.lower() for m in MemType]
        read_bytes = dict.fromkeys(mem_names, 0)
        write_bytes = dict.fromkeys(mem_names, 0)
        pops_of = {m: [] for m in range(3)}
        pushes_of = {m: [] for m in range(3)}
        for name, (prod, cons, push, pop) in FIFOS.items():
            pushes_of[prod].append((push, name))
            pops_of[cons].append((pop, name))

        while True:
            best = None
            blocked = []
            for m in range(3):
                if heads[m] >= len(self.queues[m]):
                    continue
                i = self.queues[m][heads[m]]
                r = self.rows[i]
                t = free[m]
                waiting = None
                for flag, name in pops_of[m]:
                    if r[flag]:
                        if fifo_head[name] >= len(fifo[name]):
                            waiting = name
                            break
                        t = max(t, fifo[name][fifo_head[name]][0])
                if waiting is not None:
                    blocked.append((m, i, waiting))
                elif best is None or t < best[0]:
                    best = (t, m, i)
            if best is None:
                if blocked:
                    detail = "; ".join(
                        f"{MODULE_NAMES[m]} waits at instruction {i} ({self.kind(i)}) for a "
                        f"{name} token"
                        for m, i, name in blocked
                    )
                    raise SimulationError(
                        f"deadlock: {detail}", blocked[0][1], self.kind(blocked[0][1])
                    )
                break
            t0, m, i = best
            r = self.rows[i]
            heads[m] += 1
            stalled[m] += t0 - free[m]
            for flag, name in pops_of[m]:
                if r[flag]:
                    _, clock = fifo[name][fifo_head[name]]
                    fifo_head[name] += 1
                    mine = self.vc[m]
                    for k in range(3):
                        mine[k] = max(mine[k], clock[k])
            op = r["opcode"]
            t = t0 + c.insn_issue_cycles
            if op == Opcode.LOAD or op == Opcode.STORE:
                nbytes, pad_bytes, key = self._mem_cost(r)
                if nbytes:
                    (read_bytes if op == Opcode.LOAD else write_bytes)[key] += nbytes
                    data_start = max(t + c.dma_setup_cycles, bus_free)
                    bus_wait[m] += data_start - (t + c.dma_setup_cycles)
                    bus_free = data_start + _ceil_div(nbytes, c.bus_width_bytes)
                    t = bus_free + _ceil_div(pad_bytes, c.bus_width_bytes)
            elif op == Opcode.GEMM:
                iters = r["iter_out"] * r["iter_in"] * (r["uop_end"] - r["uop_bgn"])
                if not r["reset"]:
                    gemm_iters += iters
                t += iters * c.gemm_cycles_per_uop
            elif op == Opcode.ALU:
                iters = r["iter_out"] * r["iter_in"] * (r["uop_end"] - r["uop_bgn"])
                alu_iters += iters
                t += iters * c.alu_cycles_per_uop
            if self.functional:
                self.execute(i, m, r)
            elif op == Opcode.FINISH:
                self._finish(i)
            self.vc[m][m] = i
            start[i], end[i] = t0, t
            busy[m] += t - t0
            free[m] = t
            for flag, name in pushes_of[m]:
                if r[flag]:
                    fifo[name].append((t, tuple(self.vc[m])))

        total = int(end.max(initial=0))
        report = TimingReport(
            config=c,
            total_cycles=total,
            busy=dict(zip(MODULE_NAMES, busy)),
            stalled=dict(zip(MODULE_NAMES, stalled)),
            bus_wait=dict(zip(MODULE_NAMES, bus_wait)),
            gemm_iterations=int(gemm_iters),
            alu_iterations=int(alu_iters),
            dram_read_bytes=read_bytes,
            dram_write_bytes=write_bytes,
            start=start,
            end=end,
            module=self.module,
        )
        leftover = {name: len(fifo[name]) - fifo_head[name] for name in FIFOS}
        return report, leftover

    def _mem_cost(self, r):
        """(DRAM bytes moved, padding bytes written, memory type name) of a LOAD/STORE."""
        mem = MemType(r["memory_type"])
        if r["x_size"] == 0 or r["y_size"] == 0:
            return 0, 0, mem.name.lower()
        eb = self._dram_elem_bytes(mem)
        n = r["y_size"] * r["x_size"]
        total = (r["y_pad_0"] + r["y_size"] + r["y_pad_1"]) * (
            r["x_pad_0"] + r["x_size"] + r["x_pad_1"]
        )
        return n * eb, (total - n) * self._sram_elem_bytes(mem), mem.name.lower()

    def _dram_elem_bytes(self, mem) -> int:
        c = self.config
        return {
            MemType.UOP: 4,
            MemType.WGT: c.elem_bytes("wgt"),
            MemType.INP: c.elem_bytes("inp"),
            MemType.ACC: c.elem_bytes("acc"),
            MemType.OUT: c.elem_bytes("out"),
            MemType.OUTQ: c.elem_bytes("out"),
            MemType.ACC8: c.elem_bytes("out"),
        }[mem]

    def _sram_elem_bytes(self, mem) -> int:
        c = self.config
        key = {MemType.UOP: "uop", MemType.WGT: "wgt", MemType.INP: "inp"}.get(mem, "acc")
        return c.elem_bytes(key)

    # --- functional execution ---------------------------------------------------------------
    def execute(self, i, m, r):
        op = r["opcode"]
        if op == Opcode.LOAD:
            self._load(i, m, r)
        elif op == Opcode.STORE:
            self._store(i, r)
        elif op == Opcode.GEMM:
            self._gemm(i, r)
        elif op == Opcode.ALU:
            self._alu(i, r)
        elif op == Opcode.SETPAD:
            self.pad_value = r["pad_value"]
        elif op == Opcode.FINISH:
            self._finish(i)

    def _finish(self, i):
        for other in (LOAD, STORE):
            q = self.queues[other]
            if q and self.vc[COMPUTE][other] < q[-1]:
                raise self.error(
                    i,
                    f"FINISH does not wait for {MODULE_NAMES[other]} instruction {q[-1]} "
                    f"({self.kind(q[-1])}): no token chain orders it before FINISH, so the "
                    f"host could see the accelerator idle before it completes",
                )

    def _dram_elements(self, i, r, eb, limit, what):
        """Element indices (y, x) of a 2-D DRAM access, range-checked against `limit` bytes."""
        y, x, stride, base = r["y_size"], r["x_size"], r["x_stride"], r["dram_base"]
        last = base + (y - 1) * stride + x - 1
        if (last + 1) * eb > limit:
            raise self.error(
                i,
                f"{what} access out of range: element {last} of {eb} bytes ends at byte "
                f"{(last + 1) * eb} > {what} size {limit}",
            )
        return base + np.arange(y, dtype=np.int64)[:, None] * stride + np.arange(x)[None, :]

    def _dram_blocks(self, elements, eb):
        if eb < DRAM_BLOCK:  # BLOCK 8: 8-byte INP/OUT/ACC8 elements share 16-byte blocks
            return elements.reshape(-1) * eb // DRAM_BLOCK
        per = eb // DRAM_BLOCK
        return (elements.reshape(-1, 1) * per + np.arange(per)).reshape(-1)

    def _load(self, i, m, r):
        mem = MemType(r["memory_type"])
        if r["x_size"] == 0 or r["y_size"] == 0:
            return
        c = self.config
        yp0, yp1, xp0, xp1 = r["y_pad_0"], r["y_pad_1"], r["x_pad_0"], r["x_pad_1"]
        ytot, xtot = yp0 + r["y_size"] + yp1, xp0 + r["x_size"] + xp1
        sram_key = {MemType.UOP: "uop", MemType.WGT: "wgt", MemType.INP: "inp"}.get(mem, "acc")
        depth = c.depth(sram_key)
        base = r["sram_base"]
        if base + ytot * xtot > depth:
            raise self.error(
                i,
                f"{sram_key.upper()} SRAM out of range: rows {base}..{base + ytot * xtot - 1} "
                f"(depth {depth})",
            )
        rows = np.arange(base, base + ytot * xtot)
        if mem == MemType.UOP:
            el = self._dram_elements(i, r, 4, 4 * len(self.uop_image), "micro-op image")
            self.uop_mem[rows] = self.uop_image[el.reshape(-1)]
            self.uop_valid[rows] = True
            for mine, new in zip(self.uop_fields, decode_uops(self.uop_mem[rows], self.config)):
                mine[rows] = new
            self.uop_generation += 1
            return
        eb = self._dram_elem_bytes(mem)
        el = self._dram_elements(i, r, eb, len(self.dram), "DRAM")
        blocks = self._dram_blocks(el, eb)
        if self.dram_writer[blocks].max() > self.vc[m][STORE]:
            bad = blocks[np.flatnonzero(self.dram_writer[blocks] > self.vc[m][STORE])[0]]
            self._after(i, m, STORE, self.dram_writer[blocks], f"DRAM byte {bad * DRAM_BLOCK}",
                        "reads")  # fmt: skip
        self.dram_reader[m][blocks] = i
        usable = len(self.dram) // eb * eb
        data = self.dram[:usable].reshape(-1, eb)[el]  # (y, x, eb) bytes
        tile_shape = (ytot, xtot)
        interior = (slice(yp0, yp0 + r["y_size"]), slice(xp0, xp0 + r["x_size"]))
        if mem == MemType.INP:
            self._war(i, m, COMPUTE, self.inp_reader[rows], "INP", rows)
            tile = np.full(tile_shape + (self.blk,), self.pad_value, np.int8)
            tile[interior] = data.view(np.int8)
            self.inp[rows] = tile.reshape(-1, self.blk)
            self.inp_writer[rows] = i
        elif mem == MemType.WGT:
            self._war(i, m, COMPUTE, self.wgt_reader[rows], "WGT", rows)
            tile = np.zeros(tile_shape + (self.blk, self.blk), np.int8)
            tile[interior] = data.view(np.int8).reshape(data.shape[:2] + (self.blk, self.blk))
            self.wgt[rows] = tile.reshape(-1, self.blk, self.blk)
            self.wgt_writer[rows] = i
        else:
            self._war(i, m, STORE, self.acc_store_reader[rows], "ACC", rows)
            tile = np.zeros(tile_shape + (self.blk,), np.int32)
            if mem == MemType.ACC:
                tile[interior] = data.view("<i4").reshape(data.shape[:2] + (self.blk,))
            else:  # ACC8: int8 sign-extended
                tile[interior] = data.view(np.int8)
            self.acc[rows] = tile.reshape(-1, self.blk)
            self.acc_writer[rows] = i

    def _war(self, i, me, other, readers, buf, rows):
        if len(readers) == 0 or readers.max() <= self.vc[me][other]:
            return
        bad = readers > self.vc[me][other]
        if bad.any():
            j = np.flatnonzero(bad)[0]
            self._after(i, me, other, readers[bad], f"{buf} row {int(rows[j])}", "overwrites")

    def _store(self, i, r):
        if r["x_size"] == 0 or r["y_size"] == 0:
            return
        mem = MemType(r["memory_type"])
        c = self.config
        n = r["y_size"] * r["x_size"]
        base, depth = r["sram_base"], c.depth("acc")
        if base + n > depth:
            raise self.error(
                i, f"ACC SRAM out of range: rows {base}..{base + n - 1} (depth {depth})"
            )
        if r["y_size"] > 1 and r["x_stride"] < r["x_size"]:
            raise self.error(
                i, f"x_stride {r['x_stride']} < x_size {r['x_size']}: the rows overlap in DRAM"
            )
        rows = np.arange(base, base + n)
        self._read_rows(i, STORE, self.acc_writer, rows, "ACC", COMPUTE)
        eb = self._dram_elem_bytes(mem)
        el = self._dram_elements(i, r, eb, len(self.dram), "DRAM")
        blocks = self._dram_blocks(el, eb)
        for other in (LOAD, COMPUTE):
            rd = self.dram_reader[other][blocks]
            bad = rd > self.vc[STORE][other]
            if bad.any():
                b = blocks[np.flatnonzero(bad)[0]]
                self._after(i, STORE, other, rd[bad], f"DRAM byte {b * DRAM_BLOCK}", "overwrites")
        vals = self.acc[rows]
        if mem == MemType.OUTQ:
            vals = self._requantize(i, r, vals)
        self.acc_store_reader[rows] = i
        self.dram_writer[blocks] = i
        if r["clear"]:
            self.acc[rows] = 0
            self.acc_clearer[rows] = i
        out = vals.astype("<i4") if mem == MemType.ACC else vals.astype(np.int8)
        usable = len(self.dram) // eb * eb
        self.dram[:usable].reshape(-1, eb)[el.reshape(-1)] = out.view(np.uint8).reshape(n, eb)

    def _requantize(self, i, r, vals):
        """The output stage of STORE OUTQ (docs/isa.md §6.3) on the `(y*x, 16)` rows read."""
        y, x = r["y_size"], r["x_size"]
        block = (np.arange(y)[:, None] * r["param_y"] + np.arange(x)[None, :] * r["param_x"])
        first = r["param_row"] + PARAM_ROWS * block.reshape(-1)
        depth = self.config.depth("acc")
        if int(first.max()) + PARAM_ROWS > depth:
            raise self.error(i, f"parameter rows up to {int(first.max()) + PARAM_ROWS - 1} "
                                f"exceed the ACC depth {depth}")  # fmt: skip
        rows = first[:, None] + np.arange(PARAM_ROWS)
        self._read_rows(i, STORE, self.acc_writer, rows.reshape(-1), "ACC", COMPUTE)
        self.acc_store_reader[rows] = i
        try:
            return output_stage(vals, self.acc[rows])
        except AluRangeError as e:
            row, lane = divmod(e.lane, self.blk)
            raise self.error(i, f"output stage: {e} (row {row} of the store, lane {lane}); the "
                                f"hardware result is undefined")  # fmt: skip

    def _check_range(self, i, r, base, fo, fi, depth, buf):
        """Range-check every `base[k] + o*fo + i*fi` (factors are unsigned: check the max)."""
        hi = int(base.max()) + (r["iter_out"] - 1) * fo + (r["iter_in"] - 1) * fi
        if hi >= depth:
            raise self.error(
                i,
                f"{buf} SRAM index {hi} out of range (depth {depth}): micro-op index + "
                f"iter_out*factor_out + iter_in*factor_in",
            )

    def _rows(self, i, r, base, role, depth, buf):
        """Range-checked distinct rows touched through `base` with the `role` factors."""
        fo, fi = r[role + "_factor_out"], r[role + "_factor_in"]
        self._check_range(i, r, base, fo, fi, depth, buf)
        off = distinct_offsets(r["iter_out"], r["iter_in"], fo, fi)
        return (off[:, None] + base[None, :]).reshape(-1)

    def _uops(self, i, r):
        bgn, end = r["uop_bgn"], r["uop_end"]
        depth = self.config.depth("uop")
        if end > depth:
            raise self.error(i, f"micro-op range {bgn}:{end} exceeds the micro-op buffer ({depth})")
        valid = self.uop_valid[bgn:end]
        if not valid.all():
            k = bgn + int(np.flatnonzero(~valid)[0])
            raise self.error(i, f"micro-op {k} was never loaded (LOAD UOP)")
        return tuple(f[bgn:end] for f in self.uop_fields)

    _LOOP_KEYS = ("reset", "uop_bgn", "uop_end", "iter_out", "iter_in", "dst_factor_out",
                  "dst_factor_in", "src_factor_out", "src_factor_in", "wgt_factor_out",
                  "wgt_factor_in", "alu_opcode", "use_imm")  # fmt: skip

    def _shape(self, i, r, build):
        """Per-shape derived index arrays, cached until the next LOAD UOP (programs repeat
        the same GEMM/ALU shapes tile after tile)."""
        key = (r["opcode"], self.uop_generation) + tuple(r[k] for k in self._LOOP_KEYS)
        shape = self.shape_cache.get(key)
        if shape is None:
            shape = build(i, r)
            self.shape_cache[key] = shape
        return shape

    def _gemm_shape(self, i, r):
        c = self.config
        dk, sk, wk = self._uops(i, r)
        n_out, n_in = r["iter_out"], r["iter_in"]
        if n_out == 0 or n_in == 0:
            return None
        acc_rows = self._rows(i, r, dk, "dst", c.depth("acc"), "ACC")
        if r["reset"]:
            return acc_rows, None, None, None
        inp_rows = self._rows(i, r, sk, "src", c.depth("inp"), "INP")
        wgt_rows = self._rows(i, r, wk, "wgt", c.depth("wgt"), "WGT")
        doff = loop_offsets(n_out, n_in, r["dst_factor_out"], r["dst_factor_in"])
        self._check_consecutive(i, r, dk, doff)
        factors = tuple(
            r[k] for k in ("dst_factor_out", "dst_factor_in", "src_factor_out", "src_factor_in",
                           "wgt_factor_out", "wgt_factor_in")
        )  # fmt: skip
        return acc_rows, inp_rows, wgt_rows, gemm_plan(dk, sk, wk, n_out, n_in, factors)

    def _gemm(self, i, r):
        shape = self._shape(i, r, self._gemm_shape)
        if shape is None:
            return
        acc_rows, inp_rows, wgt_rows, plan = shape
        self._war(i, COMPUTE, STORE, self.acc_store_reader[acc_rows], "ACC", acc_rows)
        if plan is None:  # reset
            self.acc[acc_rows] = 0
            self.acc_writer[acc_rows] = i
            return
        self._read_rows(i, COMPUTE, self.acc_writer, acc_rows, "ACC", COMPUTE)
        self._read_rows(i, COMPUTE, self.inp_writer, inp_rows, "INP", LOAD)
        self._read_rows(i, COMPUTE, self.wgt_writer, wgt_rows, "WGT", LOAD)
        self.inp_reader[inp_rows] = i
        self.wgt_reader[wgt_rows] = i
        plan.run(self.acc, self.inp, self.wgt)
        self.acc_writer[acc_rows] = i

    def _check_consecutive(self, i, r, dk, doff):
        same = np.flatnonzero(dk[1:] == dk[:-1])
        if len(same):
            u = r["uop_bgn"] + int(same[0])
            raise self.error(
                i,
                f"micro-ops {u} and {u + 1} write the same accumulator row consecutively "
                f"(the GEMM pipeline cannot accumulate back to back into one row)",
            )
        seam = np.flatnonzero(dk[-1] + doff[:-1] == dk[0] + doff[1:])
        if len(seam):
            b = int(seam[0])
            o, ii = divmod(b, r["iter_in"])
            raise self.error(
                i,
                f"the last micro-op of iteration (outer {o}, inner {ii}) and the first of the next "
                f"write the same accumulator row {int(dk[-1] + doff[b])} consecutively",
            )

    def _alu_shape(self, i, r):
        dk, sk, _ = self._uops(i, r)
        n_out, n_in = r["iter_out"], r["iter_in"]
        if n_out == 0 or n_in == 0:
            return None
        depth = self.config.depth("acc")
        dst_rows = self._rows(i, r, dk, "dst", depth, "ACC")
        doff = loop_offsets(n_out, n_in, r["dst_factor_out"], r["dst_factor_in"])
        dst = (doff[:, None] + dk[None, :]).reshape(-1)
        src = src_rows = None
        if not r["use_imm"]:
            src_rows = self._rows(i, r, sk, "src", depth, "ACC")
            soff = loop_offsets(n_out, n_in, r["src_factor_out"], r["src_factor_in"])
            src = (soff[:, None] + sk[None, :]).reshape(-1)
        counts = np.bincount(dst)
        independent = bool(counts.max() <= 1)
        if independent and src is not None:
            written = (src < len(counts)) & (counts[np.minimum(src, len(counts) - 1)] > 0)
            independent = bool(np.all(~written | (src == dst)))
        return dk, dst_rows, dst, src_rows, src, independent

    def _alu(self, i, r):
        shape = self._shape(i, r, self._alu_shape)
        if shape is None:
            return
        dk, dst_rows, dst, src_rows, src, independent = shape
        use_imm = src is None
        self._read_rows(i, COMPUTE, self.acc_writer, dst_rows, "ACC", COMPUTE)
        if not use_imm:
            self._read_rows(i, COMPUTE, self.acc_writer, src_rows, "ACC", COMPUTE)
            cleared = self.acc_clearer[src_rows]
            self._after(i, COMPUTE, STORE, cleared[cleared >= 0], "ACC rows", "reads")
        self._war(i, COMPUTE, STORE, self.acc_store_reader[dst_rows], "ACC", dst_rows)
        fn = ALU_FUNCTIONS[AluOp(r["alu_opcode"])]
        imm = np.int32(r["imm"])
        try:
            if independent:
                y = imm if use_imm else np.take(self.acc, src, axis=0)
                new = fn(np.take(self.acc, dst, axis=0), y)
                rowv = np.dtype((np.void, self.blk * 4))
                np.put(self.acc.view(rowv).reshape(-1), dst, new.view(rowv).reshape(-1))
            else:  # an iteration reads a row an earlier one wrote: keep the sequential order
                for n, d in enumerate(dst):
                    y = imm if use_imm else self.acc[src[n]]
                    try:
                        self.acc[d] = fn(self.acc[d], y)
                    except AluRangeError as e:
                        e.lane += n * self.blk
                        raise
        except AluRangeError as e:
            n, lane = divmod(e.lane, self.blk)
            k = n % len(dk)
            o, ii = divmod(n // len(dk), r["iter_in"])
            raise self.error(
                i,
                f"{e} (iteration outer {o}, inner {ii}, micro-op {r['uop_bgn'] + k}, lane "
                f"{lane}, accumulator row {int(dst[n])}); the hardware result is undefined",
            ) from None
        self.acc_writer[dst_rows] = i


SIMULATORS = ("c", "python")


def _use_c(simulator: str) -> bool:
    """The C machine (targets/vta/cmachine.py) unless `simulator` is "python" or it cannot
    load (then one notice on stderr and the Python reference runs)."""
    if simulator not in SIMULATORS:
        raise ValueError(f"simulator must be one of {', '.join(SIMULATORS)}, got {simulator!r}")
    if simulator == "python":
        return False
    from qaccel.targets.vta import cmachine

    return cmachine.available()


def simulate(program, uops=None, dram=None, config: HardwareConfig | None = None,
             simulator: Literal["c", "python"] = "c", *,
             step_limit=budget.FROM_ENVIRONMENT,
             memory_limit=budget.FROM_ENVIRONMENT) -> SimResult:  # fmt: skip
    """Run `program` (a `Program` or `(n, 2)` uint64 words) to FINISH.

    `uops`: uint32 micro-op image read by LOAD UOP (default: `program.uops`); `dram`: flat uint8
    DRAM image, not modified (default: built from the program's assembler data directives).
    Returns the DRAM after FINISH and the timing report; raises `SimulationError`.
    `simulator`: "c" (libqaccel_vta, the default) or "python" (this module, the reference).
    `step_limit` (steps) and `memory_limit` (bytes) override `QACCEL_STEP_LIMIT` and
    `QACCEL_MEMORY_LIMIT` (None: no limit; unset, this module's default is 2**25 steps, the C
    machine's 2**28); see `budget.py`.
    """
    if _use_c(simulator):
        from qaccel.targets.vta import cmachine

        return cmachine.simulate(program, uops, dram, config, step_limit=step_limit,
                                 memory_limit=memory_limit)  # fmt: skip
    machine = _Machine(program, config, uops, dram, True, (step_limit, memory_limit))
    with single_threaded_blas():
        report, leftover = machine.run()
    sram = {"uop": machine.uop_mem, "inp": machine.inp, "wgt": machine.wgt, "acc": machine.acc}
    return SimResult(machine.dram, report, leftover, sram)


def timing(program, config: HardwareConfig | None = None,
           simulator: Literal["c", "python"] = "c", *,
           step_limit=budget.FROM_ENVIRONMENT,
           memory_limit=budget.FROM_ENVIRONMENT) -> TimingReport:  # fmt: skip
    """The timing model alone: token protocol and cycle counts, no data or hazard checks
    (the same step budget as `simulate`; its memory is the decoded program's)."""
    if _use_c(simulator):
        from qaccel.targets.vta import cmachine

        return cmachine.timing(program, config, step_limit=step_limit,
                               memory_limit=memory_limit)  # fmt: skip
    machine = _Machine(program, config, None, None, False, (step_limit, memory_limit))
    report, _ = machine.run()
    return report
