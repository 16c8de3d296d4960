"""Lane semantics of the ALU opcodes, vectorized over int32 numpy arrays (see docs/isa.md).

Each function takes the destination lanes `x` and the operand lanes `y` (an accumulator row or
the sign-extended immediate, broadcast) as int32 arrays and returns int32. `rdmul` and `rshr`
are bit-exact with gemmlowp's `SaturatingRoundingDoublingHighMul` and `RoundingDivideByPOT`,
so `rshr(rdmul(shr(x, -left), M), right)` is TFLite's `MultiplyByQuantizedMultiplier`.
`output_stage` is STORE OUTQ's requantization (`store_requant` configs) on the parameter rows
`output_stage_block` lays out.

Operands the hardware leaves undefined (a shift amount out of range) raise `AluRangeError`
with the flat index of the first offending lane.
"""

from __future__ import annotations

import numpy as np
from qaccel.targets.vta.isa import PARAM_ROWS, AluOp

INT32_MIN = -(2**31)
INT32_MAX = 2**31 - 1


class AluRangeError(ValueError):
    def __init__(self, message: str, lane: int, value: int):
        super().__init__(message)
        self.lane = lane
        self.value = value


def _wrap32(v: np.ndarray) -> np.ndarray:
    # int64 -> int32 keeps the low 32 bits (two's complement), like the hardware's adders.
    return v.astype(np.int32)


def alu_min(x, y):
    return np.minimum(x, y).astype(np.int32)


def alu_max(x, y):
    return np.maximum(x, y).astype(np.int32)


def alu_add(x, y):
    return _wrap32(x.astype(np.int64) + y.astype(np.int64))


def alu_mul(x, y):
    return _wrap32(x.astype(np.int64) * y.astype(np.int64))


def _check_range(a: np.ndarray, lo: int, hi: int, what: str):
    bad = (a < lo) | (a > hi)
    if bad.any():
        i = int(np.flatnonzero(bad.reshape(-1))[0])
        v = int(a.reshape(-1)[i])
        raise AluRangeError(f"{what} {v} outside [{lo}, {hi}]", i, v)


def alu_shr(x, y):
    """Arithmetic shift right by `y` in [0, 31]; `y` in [-31, -1] shifts left by `-y`,
    keeping the low 32 bits (VTA's SHR)."""
    x64 = x.astype(np.int64)
    y64 = np.broadcast_to(y, np.broadcast_shapes(x.shape, np.shape(y))).astype(np.int64)
    _check_range(y64, -31, 31, "SHR shift amount")
    right = x64 >> np.maximum(y64, 0)
    left = x64 << np.maximum(-y64, 0)
    return _wrap32(np.where(y64 >= 0, right, left))


def alu_rdmul(x, y):
    """gemmlowp SaturatingRoundingDoublingHighMul(x, y): round-half-away high word of 2xy."""
    a = x.astype(np.int64)
    b = np.asarray(y).astype(np.int64)
    ab = a * b  # |ab| <= 2**62: exact in int64
    nudge = np.where(ab >= 0, 1 << 30, 1 - (1 << 30))
    s = ab + nudge
    # C division truncates toward zero; numpy's >> floors, so correct negatives with a remainder.
    q = s >> 31
    q = q + ((s < 0) & ((s & ((1 << 31) - 1)) != 0))
    sat = (a == INT32_MIN) & (b == INT32_MIN)
    return np.where(sat, INT32_MAX, q).astype(np.int32)


def alu_rshr(x, y):
    """gemmlowp RoundingDivideByPOT(x, y), exponent `y` in [0, 31]: halves away from zero."""
    x64 = x.astype(np.int64)
    e = np.broadcast_to(y, np.broadcast_shapes(x.shape, np.shape(y))).astype(np.int64)
    _check_range(e, 0, 31, "RSHR exponent")
    mask = (np.int64(1) << e) - 1
    rem = x64 & mask
    threshold = (mask >> 1) + (x64 < 0)
    return ((x64 >> e) + (rem > threshold)).astype(np.int32)


ALU_FUNCTIONS = {
    AluOp.MIN: alu_min,
    AluOp.MAX: alu_max,
    AluOp.ADD: alu_add,
    AluOp.SHR: alu_shr,
    AluOp.MUL: alu_mul,
    AluOp.RDMUL: alu_rdmul,
    AluOp.RSHR: alu_rshr,
}


def multiply_by_quantized_multiplier(x, multiplier, shift):
    """TFLite's MultiplyByQuantizedMultiplier as the ALU sequence SHR(-left), RDMUL, RSHR."""
    x = np.asarray(x, np.int32)
    shift = np.asarray(shift, np.int64)
    left = np.maximum(shift, 0)
    right = np.maximum(-shift, 0)
    v = alu_shr(x, -left)
    v = alu_rdmul(v, np.asarray(multiplier, np.int32))
    return alu_rshr(v, right)


def output_stage_block(bias, multiplier, shift, zero_point: int, lo: int, hi: int,
                       block: int = 16) -> np.ndarray:  # fmt: skip
    """STORE OUTQ's parameter rows (docs/isa.md §6.3): `[..., PARAM_ROWS, block]` int32 from
    lanes `bias`, `multiplier`, `shift` (`[..., block]`, broadcast; TFLite's shift sign) and
    the per-tensor zero point and clamp bounds (lanes 0-2 of the last row)."""
    lead = np.broadcast_shapes(np.shape(bias), np.shape(multiplier), np.shape(shift),
                               (block,))[:-1]  # fmt: skip
    rows = np.zeros(lead + (PARAM_ROWS, block), np.int64)
    rows[..., 0, :], rows[..., 1, :], rows[..., 2, :] = bias, multiplier, shift
    rows[..., 3, :3] = zero_point, lo, hi
    return rows.astype(np.int32)


def output_stage(x, rows):
    """STORE OUTQ's lanes: int32 accumulator rows `x` `[n, block]`, each with its parameter
    block `rows` `[n, PARAM_ROWS, block]`: `clamp(MBQM(x + bias, M, shift) + zp, lo, hi)`."""
    bias, multiplier, shift, consts = (rows[:, k] for k in range(PARAM_ROWS))
    v = multiply_by_quantized_multiplier(alu_add(x, bias), multiplier, shift).astype(np.int64)
    return np.clip(v + consts[:, :1], consts[:, 1:2], consts[:, 2:3]).astype(np.int32)
