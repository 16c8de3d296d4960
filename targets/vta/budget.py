"""The simulators' budgets: the memory their state takes and the steps a program takes.

Both are checked before anything runs, the same way by the Python reference (`simulator.py`)
and the C machine (`machine/vta_machine.c`, which mirrors this module), so a hostile or
corrupt program is refused in one line instead of allocating tens of GiB or running for
minutes:

- **Memory**: the DRAM image, the scratchpads, the hazard trackers (per SRAM row and per
  16-byte DRAM block) and the decoded program, as the C machine lays them out, against the
  memory budget of `kernels/memory.py` (`QACCEL_MEMORY_LIMIT`, 4 GiB by default). The Python
  reference keeps its trackers in int64, so it uses somewhat more than the figure checked.
- **Steps**: one per instruction, plus `iter_out * iter_in * (uop_end - uop_bgn)` per GEMM or
  ALU (micro-op executions) and the SRAM rows a LOAD writes or a STORE reads (at most the
  buffer's depth: a larger one is refused as out of range before it moves any). Exact and
  known from the decoded program alone, so a program above the budget is refused before its
  first instruction runs, naming the instruction where the running count passes the limit.
  The budget is `QACCEL_STEP_LIMIT` (same syntax as `QACCEL_MEMORY_LIMIT`: `2G`, `none`),
  2**28 by default: the largest layer of ResNet-50 takes about 3 M steps at BLOCK 16, and the
  C machine runs 2**28 GEMM steps in about 3 s (10 s with its portable kernel). The Python
  reference, about 35x slower and holding per-iteration index arrays, defaults to 2**25 (a
  GEMM of 2**25 steps: about 17 s and 600 MB; of 2**28: 139 s and 4.1 GB); a variable that is
  set applies to both.
"""

from __future__ import annotations

import numpy as np
from qaccel.kernels.memory import ENV_VAR as MEMORY_ENV_VAR
from qaccel.kernels.memory import MemoryBudgetError, format_bytes, memory_limit, parse_limit
from qaccel.targets.vta.config import HardwareConfig
from qaccel.targets.vta.isa import FIELD_NAMES, MemType, Opcode, describe
from qaccel.targets.vta.simulation_result import SimulationError

STEP_ENV_VAR = "QACCEL_STEP_LIMIT"
DEFAULT_STEP_LIMIT = 1 << 28
PYTHON_DEFAULT_STEP_LIMIT = 1 << 25
_MAX_LIMIT = 1 << 62  # larger limits are no limit; keeps the running counts in int64
DRAM_BLOCK = 16  # hazard-tracking granularity of DRAM: every data element is a multiple of 16 B

FROM_ENVIRONMENT = "environment"


def resolve_limits(step_limit=FROM_ENVIRONMENT, memory=FROM_ENVIRONMENT,
                   default_steps: int = DEFAULT_STEP_LIMIT):  # fmt: skip
    """(steps, bytes), each None when disabled; FROM_ENVIRONMENT reads the variables (an unset
    QACCEL_STEP_LIMIT means `default_steps`). Raises SimulationError on a malformed variable."""
    try:
        if step_limit == FROM_ENVIRONMENT:
            step_limit = parse_limit(STEP_ENV_VAR, default_steps)
        if memory == FROM_ENVIRONMENT:
            memory = memory_limit()
    except MemoryBudgetError as e:
        raise SimulationError(str(e)) from None
    return step_limit, memory


def state_bytes(config: HardwareConfig, n_insns: int, dram_len: int, functional: bool):
    """(DRAM image, scratchpads and hazard trackers, decoded program) in bytes."""
    decoded = n_insns * (len(FIELD_NAMES) + 1) * 8
    if not functional:
        return 0, 0, decoded
    blk = config.block
    du, di, dw, da = (config.depth(k) for k in ("uop", "inp", "wgt", "acc"))
    sram = du * 4 + di * blk + dw * blk * blk + da * blk * 4
    trackers = 4 * (3 * du + 2 * di + 2 * dw + 3 * da) + du
    trackers += 3 * 4 * (-(-dram_len // DRAM_BLOCK))
    return dram_len, sram + trackers, decoded


def check_state(config, n_insns: int, dram_len: int, functional: bool, limit: int | None):
    """Refuse a run whose state would not fit in the memory budget `limit` (None: none)."""
    if limit is None:
        return
    dram, machine, decoded = state_bytes(config, n_insns, dram_len, functional)
    total = dram + machine + decoded
    if total > limit:
        raise SimulationError(
            f"the simulator needs {format_bytes(total)} (DRAM image {format_bytes(dram)}, "
            f"scratchpads and hazard trackers {format_bytes(machine)}, decoded program "
            f"{format_bytes(decoded)}), above the memory limit of {format_bytes(limit)} "
            f"(raise it with {MEMORY_ENV_VAR})"
        )


def instruction_steps(fields: np.ndarray, config: HardwareConfig) -> np.ndarray:
    """The steps of each instruction of a decoded, validated program (int64)."""
    op = fields["opcode"]
    compute = (op == Opcode.GEMM) | (op == Opcode.ALU)
    iters = fields["iter_out"] * fields["iter_in"] * (fields["uop_end"] - fields["uop_bgn"])
    y, x = fields["y_size"], fields["x_size"]
    rows = (fields["y_pad_0"] + y + fields["y_pad_1"]) * (fields["x_pad_0"] + x + fields["x_pad_1"])
    rows = np.where((y == 0) | (x == 0), 0, rows)
    mt = fields["memory_type"]
    depth = np.select(
        [op == Opcode.STORE, mt == MemType.UOP, mt == MemType.WGT, mt == MemType.INP],
        [config.depth("acc"), config.depth("uop"), config.depth("wgt"), config.depth("inp")],
        config.depth("acc"),
    )
    memory = (op == Opcode.LOAD) | (op == Opcode.STORE)
    return 1 + np.where(compute, iters, 0) + np.where(memory, np.minimum(rows, depth), 0)


def check_steps(fields: np.ndarray, config: HardwareConfig, limit: int | None) -> int:
    """The program's steps; refuses it at the instruction where they pass `limit`."""
    steps = np.cumsum(instruction_steps(fields, config))
    total = int(steps[-1]) if len(steps) else 0
    if limit is None or total <= min(limit, _MAX_LIMIT):
        return total
    limit = min(limit, _MAX_LIMIT)
    i = int(np.argmax(steps > limit))
    raise SimulationError(
        f"{int(steps[i])} steps up to this instruction (one per instruction, plus GEMM/ALU "
        f"micro-op iterations and LOAD/STORE rows) pass the step limit of {limit} (raise it "
        f"with {STEP_ENV_VAR})",
        i,
        describe(fields[i]),
    )

