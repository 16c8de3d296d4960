"""What a run of the VTA machine reports, whichever machine ran it: the timing report, the
result (DRAM, SRAM, leftover tokens) and the error. The Python reference (`simulator.py`) and
libqaccel_vta (`cmachine.py`) both build these.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from qaccel.targets.vta.config import HardwareConfig
from qaccel.targets.vta.isa import TOKEN_FIFOS, Module

MODULE_NAMES = ("load", "compute", "store")
LOAD, COMPUTE, STORE = int(Module.LOAD), int(Module.COMPUTE), int(Module.STORE)
FIFOS = {name: (int(p), int(c), push, pop) for name, (p, c, push, pop) in TOKEN_FIFOS.items()}


class SimulationError(Exception):
    """A program the hardware would not run correctly; `index` is the instruction index."""

    def __init__(self, message: str, index: int | None = None, kind: str | None = None):
        self.index = index
        self.kind = kind
        self.detail = message
        where = "" if index is None else f"instruction {index}" + (f" ({kind})" if kind else "")
        super().__init__(f"{where}: {message}" if where else message)


@dataclass
class TimingReport:
    """Cycle counts of one run; `start`/`end` are per instruction (cycle numbers)."""

    config: HardwareConfig
    total_cycles: int
    busy: dict[str, int]
    stalled: dict[str, int]
    bus_wait: dict[str, int]
    gemm_iterations: int
    alu_iterations: int
    dram_read_bytes: dict[str, int]
    dram_write_bytes: dict[str, int]
    start: np.ndarray
    end: np.ndarray
    module: np.ndarray

    @property
    def gemm_macs(self) -> int:
        return self.gemm_iterations * self.config.macs_per_cycle

    @property
    def gemm_utilization(self) -> float:
        """Executed MACs (every MAC the GEMM core performs) over cycles x MACs per cycle: the
        compile report's `executed_utilization`; its `gemm_utilization` counts useful MACs
        (the model's) instead."""
        if self.total_cycles == 0:
            return 0.0
        return self.gemm_macs / (self.total_cycles * self.config.macs_per_cycle)

    @property
    def dram_bytes(self) -> int:
        return sum(self.dram_read_bytes.values()) + sum(self.dram_write_bytes.values())

    @property
    def seconds(self) -> float:
        return self.total_cycles / (self.config.clock_mhz * 1e6)

    def format(self) -> str:
        c = self.config
        lines = [
            f"config:            {c.name} ({c.clock_mhz:g} MHz, {c.bus_width_bytes}-byte bus)",
            f"total cycles:      {self.total_cycles}  ({self.seconds * 1e6:.3f} us)",
        ]
        for m in MODULE_NAMES:
            lines.append(
                f"{m + ':':<18} busy {self.busy[m]}  stalled {self.stalled[m]}"
                f"  (dram bus wait {self.bus_wait[m]})"
            )
        lines += [
            f"gemm iterations:   {self.gemm_iterations}  ({self.gemm_macs} MACs)",
            f"gemm utilization:  {self.gemm_utilization:.2%} of executed MACs (every MAC the "
            f"GEMM core performs, padding lanes and bias/zero-point GEMMs included, / (cycles x "
            f"{c.macs_per_cycle})); qaccel-compile's report gives useful MACs, the model's own",
            f"alu iterations:    {self.alu_iterations}",
            f"dram bytes read:   {sum(self.dram_read_bytes.values())}  "
            + " ".join(f"{k}={v}" for k, v in self.dram_read_bytes.items() if v),
            f"dram bytes written: {sum(self.dram_write_bytes.values())}  "
            + " ".join(f"{k}={v}" for k, v in self.dram_write_bytes.items() if v),
        ]
        return "\n".join(lines)

    def format_trace(self, program) -> str:
        """One line per instruction, in program order: index, module, start and end cycle."""
        from qaccel.targets.vta.asm import disassemble_lines

        text = disassemble_lines(program)
        return "\n".join(
            f"{i:6d} {MODULE_NAMES[self.module[i]]:<8} {self.start[i]:>10d} {self.end[i]:>10d}"
            f"  {text[i]}"
            for i in range(len(self.start))
        )


@dataclass
class SimResult:
    dram: np.ndarray  # uint8, the DRAM image after FINISH
    timing: TimingReport
    leftover_tokens: dict[str, int]  # tokens pushed but never popped, per FIFO
    sram: dict[str, np.ndarray] = field(repr=False)  # final buffers: uop, inp, wgt, acc
