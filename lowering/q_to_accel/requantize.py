"""The requantization tail and table lookups (docs/isa.md §7), exact:

- **`q.bias_add`** that no accumulating op folded becomes `accel.bias_add_zp` (ALU ADD of a
  parameter row).
- **Fixed-point `q.requantize`** (TFLite's `MultiplyByQuantizedMultiplier`) becomes
  `accel.shift_left` (only where some channel's shift is positive: the left shift comes
  *before* the multiply and wraps in int32 as the C code does) + `accel.round_multiply` (SRDHM
  by M, per tensor or per channel) + `accel.round_rshift` (RoundingDivideByPOT by `-shift`),
  then the saturation: `accel.max` / `accel.min` by `[lo - zp_out, hi - zp_out]` *before*
  `accel.add` of `zp_out` (so the add cannot wrap and `clamp(x + zp)` is exact for every int32
  `x`), then `accel.narrow` (STORE OUT keeps the low 8 bits: the clamp must come first).
- **`q.relu`** becomes `accel.max` + `accel.min` by the activation range (on a widened int8
  input); canonicalization merges it into the requantization's clamp.
- **`q.lut`** (an element-wise int8 op as its 256-entry table) becomes `accel.lut` on the
  packed int8 data: a host step of the program between layers (the ALU cannot index a
  table), exact by construction.
- **FULLY_CONNECTED** (`q.requantize` with a double `scale`: LiteRT's reference kernel computes
  `round(double(acc) * scale)`, halves away from zero) is **requantized on the host**:
  `accel.host_requantize`, after the accelerator stores the int32 accumulators (STORE ACC),
  as docs/isa.md §7 plans. The naive lowering, `QuantizeMultiplier(scale)` and the
  RDMUL/RSHR sequence, is wrong on small, common accumulators: it rounds twice (scale 1/3,
  acc 4: SRDHM gives 8/3 -> 3, RSHR 3/2 -> 2, where round(4/3) = 1) and SRDHM takes negative
  halves toward zero (scale 0.5, acc -3: -1, where round(-1.5) = -2); its 31-bit multiplier also
  misses the double's 53 bits on large accumulators. A per-channel integer multiplier proved
  over the reachable accumulator range would need that range enumerated: up to 2^24.4 values
  per channel and 2^34 in all for MobileNetV2's classifier (1280 inputs), and no
  multiply-shift pair may exist at all. The host pass is one multiply and round per output.
  The clamp of a following `q.relu` folds into it (canonicalization).
"""

from __future__ import annotations

import numpy as np
from xdsl.ir import SSAValue

from qaccel.kernels import arithmetic as ar
from qaccel.dialects import accel, q
from qaccel.lowering.q_to_accel.function import FunctionLowering, LoweringError, storage_of


def lower_bias_add(fl: FunctionLowering, op: q.BiasAddOp) -> SSAValue:
    acc = fl.int32(fl.packed_of(op.input))
    bias = fl.constant_array(op.bias, "the bias").astype(np.int64)
    bias = accel.per_lane(ar.wrap_int32(bias), fl.lanes_of(acc), spread=False)
    return fl.emit(accel.BiasAddZpOp(acc, bias))


def lower_requantize(fl: FunctionLowering, op: q.RequantizeOp) -> SSAValue:
    v = fl.int32(fl.packed_of(op.input))
    result = op.output.type
    input_zp = op.int_prop("input_zero_point")
    output_zp = op.int_prop("output_zero_point")
    if op.is_double:
        scale = accel.per_lane(op.array_prop("scale"), fl.lanes_of(v), 0.0, spread=False)
        return fl.emit(
            accel.HostRequantizeOp(
                v, fl.packed_type(result), scale, (input_zp, output_zp), storage_of(result)
            )
        )
    if input_zp and op not in fl.zero_point_folded:
        v = fl.emit(accel.AddOp(v, value=ar.wrap_int32([-input_zp])))
    v = fl.requantize(v, op.array_prop("multiplier"), op.array_prop("shift"), "requantize")
    return fl.saturate(v, output_zp, result)


def lower_relu(fl: FunctionLowering, op: q.ReluOp) -> SSAValue:
    x = fl.packed_of(op.input)
    v = fl.int32(x)
    v = fl.emit(accel.MaxOp(v, value=[op.int_prop("min")]))
    v = fl.emit(accel.MinOp(v, value=[op.int_prop("max")]))
    if accel.storage_width(op.output.type) == 32:
        return v
    return fl.emit(accel.NarrowOp(v, fl.packed_type(op.output.type)))


def lower_lut(fl: FunctionLowering, op: q.LutOp) -> SSAValue:
    x = fl.packed_of(op.input)
    if accel.storage_width(x.type) != 8:
        raise LoweringError(f"a table lookup of {x.type} (int8 data only)")
    return fl.emit(
        accel.LutOp(x, fl.packed_type(op.output.type), op.array_prop("table"))
    )
