"""Analytical rooflines of the VTA-like accelerator (docs/isa.md §9): lower bounds on the cycles
of a workload from the GEMM core's throughput (one BATCH x BLOCK_IN x BLOCK_OUT block per cycle)
and the DRAM bus (`bus_width_bytes` per cycle). The scheduler's bounds, the compile report and
the benchmarks compare the simulator's timing with them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from qaccel.targets.vta.config import DEFAULT_CONFIG, HardwareConfig


@dataclass(frozen=True)
class Roofline:
    compute_cycles: int
    memory_cycles: int

    @property
    def cycles(self) -> int:
        return max(self.compute_cycles, self.memory_cycles)

    @property
    def bound(self) -> str:
        return "compute" if self.compute_cycles >= self.memory_cycles else "memory"


def roofline(macs: int, dram_bytes: int, config: HardwareConfig | None = None) -> Roofline:
    """Lower bound on cycles: `macs` at one GEMM block per cycle, `dram_bytes` over the bus."""
    c = config or DEFAULT_CONFIG
    return Roofline(math.ceil(macs / c.macs_per_cycle), math.ceil(dram_bytes / c.bus_width_bytes))


def conv2d_roofline(height, width, in_channels, out_channels, kernel_h, kernel_w, stride=1,
                    padding=0, config: HardwareConfig | None = None) -> Roofline:  # fmt: skip
    """Roofline of one NHWC int8 convolution (batch 1) on the accelerator: channels padded to
    BLOCK multiples; each input, weight and output byte crosses the bus once (int32 bias and
    requantization parameters: 3 rows of int32 per output block)."""
    c = config or DEFAULT_CONFIG
    blk = c.block
    ci = -(-in_channels // blk) * blk
    co = -(-out_channels // blk) * blk
    oh = (height + 2 * padding - kernel_h) // stride + 1
    ow = (width + 2 * padding - kernel_w) // stride + 1
    macs = oh * ow * co * ci * kernel_h * kernel_w
    nbytes = height * width * ci + kernel_h * kernel_w * ci * co + oh * ow * co + co * 4 * 3
    return roofline(macs, nbytes, c)


def gemm_roofline(rows, inner, cols, config: HardwareConfig | None = None) -> Roofline:
    """Roofline of an int8 (rows x inner) @ (inner x cols) product with int8 output."""
    c = config or DEFAULT_CONFIG
    blk = c.block
    k = -(-inner // blk) * blk
    n = -(-cols // blk) * blk
    return roofline(rows * k * n, rows * k + k * n + rows * n + n * 4 * 3, c)
