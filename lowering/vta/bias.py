"""Bias and requantization parameters of an accelerator layer (docs/isa.md §7).

Inputs are fed raw and padded with the input zero point (SETPAD), so the zero-point term is
folded into the bias: `fused_bias` is `bias - zp_in * sum(w) - requant_input_zero_point` per
output channel. The bias modes add it to the accumulators differently:

* "alu": reset, GEMM, ALU ADD of a bias parameter row (3 cycles per row);
* "dma": LOAD ACC of the bias rows into the tile, the GEMM accumulates onto them (4 bus
  cycles per row, on the compute module);
* "gemm": reset, then a one-cycle GEMM of the constant input row `bias_row()` ([127] * 15 +
  [1]) with per-block int8 "digit" tiles (`bias_tiles`), available when every |fused bias| <=
  ~241,000 (97% of MobileNetV2's accumulator rows, 40% of ResNet-50's);
* "store" (hardware configs with `store_requant`, docs/isa.md §6.3): the store module's output
  stage adds the bias and requantizes (STORE OUTQ, one parameter block of `PARAM_ROWS` rows
  per output block).

`param_layout` places the int32 parameter rows (bias, shifts, multipliers) in the ACC buffer.
FULLY_CONNECTED is requantized in double by LiteRT's reference kernel: no fixed-point
multiplier is provably equal over the accumulator range, so the accelerator stores the int32
accumulators (bias included, STORE ACC) and `dense_requantize_host` finishes on the host.

`fused_bias` and `bias_tiles` live with the layer (`lowering/vta/geometry.py`): the geometry
records whether the bias is zero and whether it fits the one-cycle bias GEMM.
"""

from __future__ import annotations

import numpy as np
from qaccel.lowering.vta.geometry import BIAS_DIGIT, ConvLayer, LayerGeometry
from qaccel.targets.vta.isa import PARAM_ROWS


def bias_row(block: int = 16) -> np.ndarray:
    """The constant input row of the "gemm" bias mode."""
    row = np.full(block, BIAS_DIGIT, np.int8)
    row[-1] = 1
    return row

def dense_requantize_host(layer: ConvLayer, acc: np.ndarray) -> np.ndarray:
    """The host half of a dense layer with double-precision requantization: int32
    accumulators that already include the fused bias -> int8, as LiteRT's reference
    FULLY_CONNECTED (and `q.requantize` with `scale` + `q.relu`) computes it."""
    from qaccel.kernels import arithmetic as ar

    scale = np.asarray(layer.scale, np.float64).reshape(-1)
    # requant_input_zero_point is already folded into the accumulators.
    scaled = ar.float_to_int32(ar.round_half_away(acc.astype(np.float64) * scale))
    out = ar.wrap_int32(scaled + layer.output_zero_point)
    lo, hi = max(layer.act_min, -128), min(layer.act_max, 127)
    return np.clip(out, lo, hi).astype(np.int8)

def param_layout(g: LayerGeometry, bias_mode: str) -> dict[str, tuple[int, int]]:
    """ACC parameter rows: kind -> (first row, rows per output block; 0 = one shared row).
    Bias mode "store" has one kind, "store": `PARAM_ROWS` rows per block, read by the
    store module's output stage (STORE OUTQ)."""
    rows: dict[str, tuple[int, int]] = {}
    if bias_mode == "store":
        return {"store": (0, PARAM_ROWS)}
    at = 0
    cob = g.COB
    if g.has_bias and bias_mode == "alu":
        rows["bias"] = (at, 1)
        at += cob
    if g.int32_output:
        return rows
    per = 1 if g.per_channel else 0
    for kind in ("lsh", "rdmul", "rshr"):
        if kind in g.tail and (kind == "rdmul" or g.per_channel):
            rows[kind] = (at, per)
            at += cob if per else 1
    return rows


def n_param_rows(g: LayerGeometry, bias_mode: str) -> int:
    key = ("param_rows", bias_mode)
    rows = g._memo.get(key)
    if rows is None:
        lay = param_layout(g, bias_mode)
        rows = max((start + (g.COB * per if per else 1) for start, per in lay.values()), default=0)
        g._memo[key] = rows
    return rows
