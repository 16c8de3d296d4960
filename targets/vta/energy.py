"""Analytic energy of an accelerator program: what it counts, times a per-operation energy.

    counts = access_counts(program, config)          # -> AccessCounts, from the instructions
    energy = program_energy(counts, config)          # -> Energy (picojoules per component)

The model charges every operation the hardware performs once per run of the program (one
inference of a layer), at the per-operation energies of the hardware configuration
(`energy_*` keys of `HardwareConfig`, docs/configuration.md):

| counted | how often | constant |
| --- | --- | --- |
| GEMM MACs | every GEMM iteration (not reset) x BATCH x BLOCK_IN x BLOCK_OUT: every MAC the core executes (padding lanes, bias and zero-point GEMMs included) | `energy_mac_pj` |
| ALU lane operations | every ALU iteration x BATCH x BLOCK lanes; MUL/RDMUL at the multiplier's energy, the others at the adder's | `energy_alu_op_pj`, `energy_alu_mul_pj` |
| output-stage lane operations (STORE OUTQ) | per stored lane: one RDMUL, six adder-class steps (bias, shifts, zero point, clamp) | the same two |
| SRAM reads | GEMM: one INP row, one WGT tile, one ACC row, one micro-op per iteration; ALU: the destination row (and the source row unless immediate) and one micro-op per iteration; STORE: every ACC row stored, and for OUTQ the parameter rows of each distinct block once | `energy_sram_read_pj_per_byte` |
| SRAM writes | GEMM/ALU: one ACC row per iteration; LOAD: every SRAM row it fills, padding included | `energy_sram_write_pj_per_byte` |
| DRAM bytes | what LOAD reads and STORE writes (the timing model's counts) | `energy_dram_pj_per_byte` |

The counts are the timing model's (GEMM and ALU iterations, DRAM bytes per memory type) plus
the SRAM traffic those instructions imply, computed from the decoded instruction stream with
numpy (no simulation); `access_counts` checks them against a `TimingReport` when given one.
Static power, clocking, instruction fetch and the host CPU's share are not modelled.

Default energies: 45 nm at 0.9 V, from M. Horowitz, "Computing's energy problem (and what we
can do about it)", ISSCC 2014, pp. 10-14 (doi:10.1109/ISSCC.2014.6757323), per operation:
8-bit integer add 0.03 pJ, 8-bit multiply 0.2 pJ, 32-bit add 0.1 pJ, 32-bit multiply 3.1 pJ,
64-bit read of an 8 KB SRAM 10 pJ (32 KB: 20 pJ, 1 MB: 100 pJ), 64-bit DRAM access 1.3-2.6
nJ; per 32-bit access as S. Han et al., "Learning both weights and connections for efficient
neural networks", NIPS 2015 (Table 1) tabulate them: SRAM 5 pJ, DRAM 640 pJ. Hence
`energy_mac_pj` 0.3 (8-bit multiply + 32-bit accumulate), `energy_alu_op_pj` 0.1 (32-bit
add), `energy_alu_mul_pj` 3.1 (32-bit multiply), `energy_sram_read_pj_per_byte` 1.25 (5 pJ
per 4 bytes, the 8 KB array; the default buffers are 32-256 KB, which Horowitz's table puts
at 2-4x that), `energy_sram_write_pj_per_byte` 1.25 (taken equal to a read: the table gives
no write energy) and `energy_dram_pj_per_byte` 160 (640 pJ per 4 bytes, the low end of the
DRAM range). Other process nodes or memories: set the keys in the configuration file.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

import numpy as np

from qaccel.targets.vta.config import HardwareConfig
from qaccel.targets.vta.isa import (
    FIELD_NAMES,
    PARAM_ROWS,
    AluOp,
    MemType,
    Opcode,
    Program,
    decode,
)

OUTPUT_STAGE_MULS = 1
"""Multiplier operations per lane of STORE OUTQ's output stage (RDMUL)."""
OUTPUT_STAGE_OPS = 6
"""Adder-class operations per lane of the output stage: bias add, left shift, rounding right
shift, zero-point add, the two clamp bounds (docs/isa.md §6.3)."""

_MUL_OPS = (int(AluOp.MUL), int(AluOp.RDMUL))


@dataclass(frozen=True)
class AccessCounts:
    """What one run of a program performs (`access_counts`)."""

    macs: int
    """Executed MACs: GEMM iterations x BATCH x BLOCK_IN x BLOCK_OUT."""
    alu_ops: int
    """Adder-class lane operations (ALU MIN/MAX/ADD/SHR/RSHR and the output stage's)."""
    alu_muls: int
    """Multiplier lane operations (ALU MUL/RDMUL and the output stage's RDMUL)."""
    sram_read_bytes: int
    sram_write_bytes: int
    dram_read_bytes: int
    dram_write_bytes: int
    gemm_iterations: int
    alu_iterations: int


@dataclass(frozen=True)
class Energy:
    """Picojoules of one run, per component; `total_pj` is their sum."""

    mac_pj: float
    alu_pj: float
    sram_pj: float
    dram_pj: float

    @property
    def total_pj(self) -> float:
        return self.mac_pj + self.alu_pj + self.sram_pj + self.dram_pj

    def as_report(self) -> dict[str, float]:
        """The report's keys: `energy_pj` and one `energy_<component>_pj` per component."""
        out = {"energy_pj": self.total_pj}
        out.update({f"energy_{f.name}": float(getattr(self, f.name)) for f in fields(self)})
        return out


ENERGY_COMPONENTS = ("mac", "alu", "sram", "dram")
"""The components of `Energy`, as in the report's `energy_<component>_pj` keys."""


def _distinct_blocks(y: np.ndarray, x: np.ndarray, py: np.ndarray, px: np.ndarray) -> int:
    """Distinct values of `i*py + j*px` over i < y, j < x, summed over instructions."""
    from qaccel.targets.vta.simulator import distinct_offsets

    total = 0
    for n_out, n_in, f_out, f_in in zip(y.tolist(), x.tolist(), py.tolist(), px.tolist()):
        if f_out == 0 and f_in == 0:
            total += 1
        elif f_in == 0 or n_in == 1:
            total += n_out if f_out else 1
        elif f_out == 0 or n_out == 1:
            total += n_in
        else:
            total += len(distinct_offsets(n_out, n_in, f_out, f_in))
    return total


_FIELD = {name: k for k, name in enumerate(FIELD_NAMES)}
_COLUMNS = [_FIELD[n] for n in (
    "opcode", "memory_type", "reset", "use_imm", "alu_opcode", "iter_out", "iter_in", "uop_bgn",
    "uop_end", "y_size", "x_size", "y_pad_0", "y_pad_1", "x_pad_0", "x_pad_1", "param_y",
    "param_x")]  # fmt: skip


def access_counts(program, config: HardwareConfig | None = None, timing=None) -> AccessCounts:
    """The operations and memory traffic of one run of `program` (a `Program` or its words).
    With `timing` (the program's `TimingReport`), its GEMM/ALU iteration and DRAM byte counts
    must equal these (they are the same instructions counted twice).

    Each instruction gets a class key (opcode, memory type, reset, immediate, multiply), and
    its iterations, rows and padded rows are summed per key in one call: a layer's program
    costs a few numpy calls, not one per field and mask (`access_counts_reference`, which
    gives the same counts)."""
    if isinstance(program, Program):
        config = config or program.config
    c = config or HardwareConfig()
    f = decode(program, c, copy=False)
    (op, mem, reset, use_imm, alu_op, iter_out, iter_in, uop_bgn, uop_end, ys, xs, yp0, yp1, xp0,
     xp1, _, _) = cols = f.view(np.int64).reshape(len(f), len(FIELD_NAMES)).T[_COLUMNS]  # fmt: skip
    if ((op | mem) & ~7).any():  # not what decode gives: no class key for it
        return access_counts_reference(program, c, timing)
    lanes = c.batch * c.block
    inp_row, wgt_row, acc_row = c.elem_bytes("inp"), c.elem_bytes("wgt"), c.elem_bytes("acc")
    uop_row = c.elem_bytes("uop")

    is_mul = alu_op == _MUL_OPS[0]
    for code in _MUL_OPS[1:]:
        is_mul |= alu_op == code
    key = op << 6
    key |= mem << 3
    key |= (reset != 0) << 2
    key |= (use_imm != 0) << 1
    key |= is_mul
    per = np.empty((3, len(f)), np.int64)
    np.multiply(iter_out, iter_in, out=per[0])
    per[0] *= uop_end - uop_bgn  # iterations
    rows = np.multiply(ys, xs, out=per[1])
    np.multiply(yp0 + ys + yp1, xp0 + xs + xp1, out=per[2])
    per[2][rows <= 0] = 0  # padded rows
    totals = np.zeros((512, 3), np.int64)
    np.add.at(totals, key, per.T)
    used = np.flatnonzero(totals.any(axis=1))

    def dram_row(mt: int) -> int:
        if mt == MemType.UOP:
            return uop_row
        if mt == MemType.WGT:
            return wgt_row
        if mt == MemType.ACC:
            return acc_row
        return inp_row  # INP, OUT, OUTQ, ACC8: one int8 row

    def sram_row(mt: int) -> int:
        return {MemType.UOP: uop_row, MemType.WGT: wgt_row, MemType.INP: inp_row}.get(mt, acc_row)

    gemm_iters = reset_iters = alu_iters = alu_muls_iters = alu_with_src = 0
    dram_read = dram_write = sram_fill = stored_rows = outq_rows = 0
    for k, (it, r, p) in zip(used.tolist(), totals[used].tolist()):
        o, mt = k >> 6, (k >> 3) & 7
        if o == Opcode.GEMM:
            if k & 4:
                reset_iters += it
            else:
                gemm_iters += it
        elif o == Opcode.ALU:
            alu_iters += it
            if k & 1:
                alu_muls_iters += it
            if not k & 2:
                alu_with_src += it
        elif o == Opcode.LOAD:
            dram_read += r * dram_row(mt)
            sram_fill += p * sram_row(mt)
        elif o == Opcode.STORE:
            dram_write += r * dram_row(mt)
            stored_rows += r
            if mt == MemType.OUTQ:
                outq_rows += r
    alu_ops = (alu_iters - alu_muls_iters) * lanes
    alu_muls = alu_muls_iters * lanes
    outq_lanes = outq_rows * lanes
    alu_ops += outq_lanes * OUTPUT_STAGE_OPS
    alu_muls += outq_lanes * OUTPUT_STAGE_MULS
    param_blocks = 0
    if outq_rows:
        outq = np.flatnonzero(((key >> 3) == (int(Opcode.STORE) << 3 | int(MemType.OUTQ)))
                              & (rows > 0))  # fmt: skip
        param_blocks = _distinct_blocks(ys[outq], xs[outq], cols[-2, outq], cols[-1, outq])

    sram_read = (
        gemm_iters * (inp_row + wgt_row + acc_row + uop_row)
        + reset_iters * uop_row
        + alu_iters * (acc_row + uop_row)
        + alu_with_src * acc_row
        + stored_rows * acc_row
        + param_blocks * PARAM_ROWS * acc_row
    )
    sram_write = (gemm_iters + reset_iters + alu_iters) * acc_row + sram_fill
    counts = AccessCounts(
        macs=gemm_iters * c.macs_per_cycle, alu_ops=alu_ops, alu_muls=alu_muls,
        sram_read_bytes=int(sram_read), sram_write_bytes=int(sram_write),
        dram_read_bytes=dram_read, dram_write_bytes=dram_write,
        gemm_iterations=gemm_iters, alu_iterations=alu_iters,
    )  # fmt: skip
    if timing is not None:
        theirs = (timing.gemm_iterations, timing.alu_iterations,
                  sum(timing.dram_read_bytes.values()), sum(timing.dram_write_bytes.values()))
        ours = (counts.gemm_iterations, counts.alu_iterations, dram_read, dram_write)
        if theirs != ours:
            raise AssertionError(f"energy counts {ours} disagree with the timing model's "
                                 f"{theirs} (GEMM, ALU iterations, DRAM bytes read, written)")
    return counts


def access_counts_reference(program, config: HardwareConfig | None = None, timing=None) -> AccessCounts:
    """`access_counts` computed field by field, mask by mask: the reference its grouped sums
    are tested against."""
    if isinstance(program, Program):
        config = config or program.config
    c = config or HardwareConfig()
    f = decode(program, c)
    op = f["opcode"]
    lanes = c.batch * c.block
    inp_row, wgt_row, acc_row = c.elem_bytes("inp"), c.elem_bytes("wgt"), c.elem_bytes("acc")
    uop_row = c.elem_bytes("uop")
    iters = f["iter_out"] * f["iter_in"] * (f["uop_end"] - f["uop_bgn"])

    gemm = op == Opcode.GEMM
    compute = gemm & (f["reset"] == 0)
    gemm_iters = int(iters[compute].sum())
    reset_iters = int(iters[gemm & (f["reset"] != 0)].sum())

    alu = op == Opcode.ALU
    alu_iters = iters[alu]
    is_mul = np.isin(f["alu_opcode"][alu], _MUL_OPS)
    with_src = f["use_imm"][alu] == 0
    alu_ops = int(alu_iters[~is_mul].sum()) * lanes
    alu_muls = int(alu_iters[is_mul].sum()) * lanes

    rows = f["y_size"] * f["x_size"]
    padded = (f["y_pad_0"] + f["y_size"] + f["y_pad_1"]) * (f["x_pad_0"] + f["x_size"] + f["x_pad_1"])
    padded = np.where(rows > 0, padded, 0)
    mem = f["memory_type"]
    load, store = op == Opcode.LOAD, op == Opcode.STORE

    def dram_row(m: int) -> int:
        if m == MemType.UOP:
            return uop_row
        if m == MemType.WGT:
            return wgt_row
        if m == MemType.ACC:
            return acc_row
        return inp_row  # INP, OUT, OUTQ, ACC8: one int8 row

    def sram_row(m: int) -> int:
        return {MemType.UOP: uop_row, MemType.WGT: wgt_row, MemType.INP: inp_row}.get(m, acc_row)

    dram_read = dram_write = sram_fill = 0
    # The memory types in order: sorted(set(...)), as np.unique gives them (whose first call
    # imports numpy.ma, ~10 ms of a compile for two small lists).
    for m in sorted(set(mem[load].tolist())):
        sel = load & (mem == m)
        dram_read += int(rows[sel].sum()) * dram_row(m)
        sram_fill += int(padded[sel].sum()) * sram_row(m)
    stored_rows = 0
    for m in sorted(set(mem[store].tolist())):
        sel = store & (mem == m)
        dram_write += int(rows[sel].sum()) * dram_row(m)
        stored_rows += int(rows[sel].sum())
    outq = store & (mem == MemType.OUTQ) & (rows > 0)
    outq_lanes = int(rows[outq].sum()) * lanes
    alu_ops += outq_lanes * OUTPUT_STAGE_OPS
    alu_muls += outq_lanes * OUTPUT_STAGE_MULS
    param_blocks = _distinct_blocks(f["y_size"][outq], f["x_size"][outq], f["param_y"][outq],
                                    f["param_x"][outq])  # fmt: skip

    sram_read = (
        gemm_iters * (inp_row + wgt_row + acc_row + uop_row)
        + reset_iters * uop_row
        + int(alu_iters.sum()) * (acc_row + uop_row)
        + int(alu_iters[with_src].sum()) * acc_row
        + stored_rows * acc_row
        + param_blocks * PARAM_ROWS * acc_row
    )
    sram_write = (gemm_iters + reset_iters + int(alu_iters.sum())) * acc_row + sram_fill
    counts = AccessCounts(
        macs=gemm_iters * c.macs_per_cycle, alu_ops=alu_ops, alu_muls=alu_muls,
        sram_read_bytes=int(sram_read), sram_write_bytes=int(sram_write),
        dram_read_bytes=dram_read, dram_write_bytes=dram_write,
        gemm_iterations=gemm_iters, alu_iterations=int(alu_iters.sum()),
    )  # fmt: skip
    if timing is not None:
        theirs = (timing.gemm_iterations, timing.alu_iterations,
                  sum(timing.dram_read_bytes.values()), sum(timing.dram_write_bytes.values()))
        ours = (counts.gemm_iterations, counts.alu_iterations, dram_read, dram_write)
        if theirs != ours:
            raise AssertionError(f"energy counts {ours} disagree with the timing model's "
                                 f"{theirs} (GEMM, ALU iterations, DRAM bytes read, written)")
    return counts


def program_energy(counts: AccessCounts, config: HardwareConfig) -> Energy:
    """The picojoules of `counts` at `config`'s per-operation energies."""
    c = config
    return Energy(
        mac_pj=counts.macs * c.energy_mac_pj,
        alu_pj=counts.alu_ops * c.energy_alu_op_pj + counts.alu_muls * c.energy_alu_mul_pj,
        sram_pj=counts.sram_read_bytes * c.energy_sram_read_pj_per_byte
        + counts.sram_write_bytes * c.energy_sram_write_pj_per_byte,
        dram_pj=(counts.dram_read_bytes + counts.dram_write_bytes) * c.energy_dram_pj_per_byte,
    )


__all__ = ["ENERGY_COMPONENTS", "AccessCounts", "Energy", "access_counts", "access_counts_reference",
           "program_energy"]
