"""The program format: one accelerator function, whole, as the one C runner executes it
(`qaccel_program.h` / `qaccel_program.c` beside this file), and its writer.

    blob = program_blob(compiled, name, f, inputs, outputs)   # packing at the border
    blob = function_program(compiled, name)                   # the function's own boundary

A program holds everything the function needs: format version, hardware configuration, DRAM
image (constants in place, arena zero), how each input is packed into the `[N, C/B, H, W, 1,
B]` layout (padding value, split shape and transpose) and each output unpacked with its element
type and shape, the steps (write an arena slot, run a layer, read a slot back, a host op), every
layer's instruction stream and micro-ops, and a checksum of all of it. Every consumer runs it
through the one runner: the LiteRT dispatch library and custom-op kernel (the bytecode of a
DISPATCH_OP, the constant of a QACCEL_VTA op: `backends/litert/aot.py`, `partitions.py`), the
delegate (`programs/NAME.qprog`), the C driver (`driver/`, `backends/vta/cdriver.py`) and the
run plan (`backends/vta/run_plan.py`, through `backends/vta/program_runner.py`).

`program_blob` writes the io records a LiteRT op needs: plain tensors in, packed by the
runner, and plain tensors out. `function_program` writes each input and output as the
function's own packed value (an identity packing: plain shape = packed shape, split
`[d, 1]` per dimension, order unchanged, which the runner moves as one run of bytes): the form
the C driver and the run plan call, whose host program packs and unpacks at the border itself.

Format versions: 1, the first; 2 adds the checksum (the header's last u64: CRC-32, zlib's, of
the whole program with that field read as zeros; the runner verifies it before anything else,
about 1 ms per MB) and each io record's element type (TFLite's type code), which the runner
checks with the shape of every input and output it is given. The runner reads only the version
it was built for (QACCEL_PROGRAM_FORMAT).

Host ops inside an accelerator function run in the runner: `accel.host_requantize` (LiteRT's
double-precision FULLY_CONNECTED requantization) is plain IEEE double arithmetic, which C
reproduces exactly, so the function is not split around it; the other host ops that layers
leave behind (`accel.pad`, `accel.crop`, `accel.reshape`, `accel.concat`,
`accel.concat_lanes`, `accel.host_pool2d`, `accel.max_pool2d` and `accel.sum_pool2d` on the
host, the lane and binary ops, widen/narrow, `accel.reduce_sum`, the table lookup `accel.lut`,
the resizes' gather and interpolation, a transposed convolution's tap sum `accel.col2im`,
`accel.lane_sum` as a REDUCE then a PAD, `accel.lane_broadcast` as a GATHER, the attention
core's `accel.relayout`, `accel.softmax` and `accel.batch_matmul`, and a product run as GEMM
layers' `accel.bmm_operand` (a GATHER) and `accel.bmm_zp_correction` (BMM_CORRECTION))
are integer loops the runner implements as the interpreter does
(`interpreter/accel_semantics.py`). A function with any other host op (e.g. a GEMM op left on
the host), or whose host ops read constants, has no program (`ProgramWriteError`, one line
naming the op).

The format, little-endian, offsets in bytes from the program's start, every section 8-byte
aligned (the one description of it; `qaccel_program.c` reads it):

| section | each record                                                    | bytes          |
| ------- | -------------------------------------------------------------- | -------------- |
| header  | PROGRAM_MAGIC[8], u32 version, u32 header bytes, u64 total     | HEADER_BYTES   |
|         | bytes, u32 inputs, outputs, values, steps, layers, reserved,   |                |
|         | u64 DRAM bytes, DRAM offset, i64 config[11] (vta_config order, |                |
|         | CONFIG_KEYS), u64 values, io, steps, layers offsets, checksum  |                |
|         | (u32 CRC-32 in a u64, at CHECKSUM_AT)                          |                |
| values  | u32 element size (1 or 4), u32 reserved, u64 elements          | VALUE_BYTES    |
| io      | u32 value, rank, i32 pad value, u32 element size, i32 plain    | IO_BYTES       |
|         | shape[8], i32 split shape[16], i32 order[16], i32 element type |                |
|         | (ELEMENT_TYPES), u32 reserved; inputs first (plain -> packed   |                |
|         | value), then outputs (packed value -> plain)                   |                |
| steps   | u32 kind, a, b, c, i64 p[8], u64 offset, bytes (kinds below)   | STEP_BYTES     |
| layers  | u64 words offset, instructions, uops offset, uops              | LAYER_BYTES    |
| data    | DRAM image, instruction words, micro-ops, the steps' constants |                |

| step (KIND_)    | what it does with a, b, c, p and the `bytes` at `offset`                      |
| --------------- | ----------------------------------------------------------------------------- |
| 1 WRITE         | value a to DRAM[offset:+bytes]                                                |
| 2 LAYER         | run layer a                                                                   |
| 3 READ          | DRAM[offset:+bytes] into value a (b = 1: int8 widened to int32 minus p[0])    |
| 4 REQUANT       | value a into b with c f64 scales at offset; p: zero points in/out, clamp      |
|                 | min/max, lanes C/B, inner elements, B                                         |
| 5 PAD           | value a into b, rank c, pad value p[0]; at offset i64 shape, before, after (c |
|                 | each); negative widths crop                                                   |
| 6 CONCAT        | c values into a, p[0] outer elements; at offset i64 (value, elements per      |
|                 | outer index) per input                                                        |
| 7 LANE          | value a into b, operation c (OP_*: convert, or with p[0] per-lane int64       |
|                 | constants at offset, lane geometry p[1..3] as REQUANT's)                      |
| 8 BINARY        | value a with value p[0] into b, operation c; at offset i64 lhs shape, rhs     |
|                 | shape (1 = broadcast), rank each                                              |
| 9 REDUCE        | value a into b summing the dimensions flagged 1, rank c; at offset i64        |
|                 | shape, flags                                                                  |
| 10 CONCAT_LANES | c values into a along the channels, lanes moving; p[0] batch, p[1] middle     |
|                 | elements, p[2] B; at offset i64 (value, channels) per input                   |
| 11 POOL         | value a into b, c = 0 max, 1 average, 2 sum; p: images N*C/B, H, W, B, OH,    |
|                 | OW, KH, KW; at offset i64 strides h, w, top, left, min, max; int8, or int32   |
|                 | for max and sum (which wraps)                                                 |
| 12 LUT          | int8 value a into int8 b through the 256 int8 entries at offset               |
|                 | (b = table[a + 128])                                                          |
| 13 GATHER       | value a into b (same element size): element i of b is element idx[i] of a,    |
|                 | or p[0] where idx[i] is -1; at offset i64 idx, one per element of b           |
| 14 BILINEAR     | int8 value a into int8 b, LiteRT's integer bilinear resize of every lane;     |
|                 | p: images N*C/B, H, W, B, OH, OW; at offset i64 y0, y1, wy (OH each), x0, x1, |
|                 | wx (OW each): b = (sum of a[y, x] * wy' * wx' + 2^19 signed) / 2^20 with      |
|                 | C division, y in {y0, y1} weighted 1024 - wy and wy (x likewise)              |
| 15 GATHER_SUM   | int32 value a into int32 b: element i of b is the int32 (wrapping) sum of the |
|                 | elements idx[i * p[0] + j] of a, j < p[0], -1 skipped; at offset i64 idx      |
|                 | (accel.col2im: a transposed convolution's overlapping taps)                   |
| 16 SOFTMAX      | int8 value a into b, packed [N, C/B, M, B]; p: N, C/B, M, B, C, diff_min      |
|                 | (at least -256); at offset the 256 i64 Q0.31 exponentials of the differences  |
|                 | 0..-255 (LiteRT's int8 softmax: the row's Q12 sum, its reciprocal; padding    |
|                 | lanes -128)                                                                   |
| 17 BATCH_MATMUL | int8 value a [batch, A, K] times int8 value c [batch, K, C] into b [batch, A, |
|                 | C]; p: batch, A, K, C, zero points lhs, rhs, output; at offset i64            |
|                 | multiplier, shift (operands gathered plain and the result gathered packed by  |
|                 | GATHER steps around it)                                                       |
| 18 BMM_CORR    | int8 value a [M, K] and int8 value c [K, N] into int32 b [N/B, M, B]:         |
|                 | -zr * rowsum(a)[m] - zl * colsum(c)[n] + K * zl * zr, wrapped to int32,       |
|                 | padding lanes 0; p: M, K, N, B, zl, zr (a BATCH_MATMUL's zero-point           |
|                 | correction: its product runs as a GEMM layer whose weight tiles a GATHER      |
|                 | and a WRITE put in the arena, and whose accumulators a WRITE of b starts)     |
| 22 BMM_CORRS    | BMM_CORR for p[6] batch indices at once: a [batch, M, K], c [batch, K, N]     |
|                 | into b [batch, N/B, M, B] (one GEMM layer over the whole batch)               |
"""

from __future__ import annotations

import struct
import zlib

import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import TensorType
from xdsl.ir import SSAValue

from qaccel.backends.vta.compiled import CompiledFunction, CompiledModel, resolve
from qaccel.backends.vta.runtime import (
    STEP_LAYER,
    STEP_READ,
    STEP_WRITE,
    function_steps,
)
from qaccel.dialects import accel, q, vta
from qaccel.dialects.types import tensor_dtype
from qaccel.kernels.layout import split_order, split_shape
from qaccel.targets.vta.config import MACHINE_KEYS

PROGRAM_MAGIC = b"QACCPROG"
PROGRAM_VERSION = 2  # QACCEL_PROGRAM_FORMAT of qaccel_program.h
HEADER_BYTES, VALUE_BYTES, IO_BYTES, STEP_BYTES, LAYER_BYTES = 192, 16, 184, 96, 32
CHECKSUM_AT = 184  # the header's last u64 (QACCEL_CHECKSUM_AT)
# io records' element types: TFLite's type codes (QACCEL_TYPE_* of qaccel_program.h)
ELEMENT_TYPES = {np.dtype(np.int32): 2, np.dtype(np.uint8): 3, np.dtype(np.int8): 9}
KIND_WRITE, KIND_LAYER, KIND_READ, KIND_REQUANT, KIND_PAD, KIND_CONCAT = 1, 2, 3, 4, 5, 6
KIND_LANE, KIND_BINARY, KIND_REDUCE, KIND_CONCAT_LANES, KIND_POOL, KIND_LUT = 7, 8, 9, 10, 11, 12
KIND_GATHER = 13
KIND_SOFTMAX, KIND_BATCH_MATMUL = 16, 17
KIND_BILINEAR = 14
KIND_GATHER_SUM = 15
KIND_BMM_CORRECTION = 18
KIND_BMM_CORRECTIONS = 22
# KIND_LANE / KIND_BINARY operations (the step's c)
OP_CONVERT, OP_BIAS_ADD, OP_SHIFT_LEFT, OP_ROUND_MULTIPLY, OP_ROUND_RSHIFT = 0, 1, 2, 3, 4
OP_ADD, OP_MUL, OP_MIN, OP_MAX = 5, 6, 7, 8
MAX_RANK = 8
CONFIG_KEYS = MACHINE_KEYS  # the header's i64 config[], vta_config's order


class ProgramWriteError(Exception):
    """The accelerator function has no program (one line for the user)."""



def _align8(n: int) -> int:
    return n + (-n % 8)


class _Blob:
    """Data sections appended after the tables, each 8-byte aligned."""

    def __init__(self, start: int):
        self.parts: list[bytes] = []
        self.end = start

    def add(self, data: bytes) -> int:
        at = self.end
        data = bytes(data) + bytes(-len(data) % 8)
        self.parts.append(data)
        self.end += len(data)
        return at


def _io_record(value: int, packing: accel.Packing | None, plain: tuple[int, ...], pad: int,
               dtype) -> bytes:  # fmt: skip
    rank = len(plain)
    dtype = np.dtype(dtype)
    if dtype not in ELEMENT_TYPES:
        raise ProgramWriteError(f"a {dtype} input or output (the kernel moves int8 and int32)")
    if rank > MAX_RANK:
        raise ProgramWriteError(f"a tensor of rank {rank} (the kernel packs up to rank {MAX_RANK})")
    if packing is None:  # the value as it is: one run of bytes
        split = [n for d in plain for n in (d, 1)]
        order = list(range(2 * rank))
    else:
        split, order = split_shape(packing, plain), split_order(packing)

    def ints(xs, n):
        return list(xs) + [0] * (n - len(xs))

    return struct.pack("<IIiI8i16i16iiI", value, rank, pad, dtype.itemsize, *ints(plain, 8),
                       *ints(split, 16), *ints(order, 16), ELEMENT_TYPES[dtype], 0)  # fmt: skip


def seal(program: bytes) -> bytes:
    """`program` with its checksum: CRC-32 of the whole with the checksum field as zeros."""
    blob = bytearray(program)
    blob[CHECKSUM_AT : CHECKSUM_AT + 8] = bytes(8)
    struct.pack_into("<Q", blob, CHECKSUM_AT, zlib.crc32(blob))
    return bytes(blob)


def _sealed(head: bytes, parts: list[bytes]) -> bytes:
    """`seal(head + b"".join(parts))` (the checksum field within `head`), with the data
    parts copied once."""
    assert len(head) >= CHECKSUM_AT + 8
    first = bytearray(head)
    first[CHECKSUM_AT : CHECKSUM_AT + 8] = bytes(8)
    crc = zlib.crc32(first)
    for part in parts:
        crc = zlib.crc32(part, crc)
    struct.pack_into("<Q", first, CHECKSUM_AT, crc)
    return b"".join([first, *parts])


def _step(kind: int, a=0, b=0, c=0, p=(), offset=0, nbytes=0) -> bytes:
    p = list(p) + [0] * (8 - len(p))
    return struct.pack("<IIII8qQQ", kind, a, b, c, *p, offset, nbytes)


def _lane_geometry(shape) -> list[int]:
    """(C/B, elements between lanes, B) of a packed `[N, C/B, ..., B]` shape: the lane of flat
    index i is ((i // (mid * B)) % (C/B)) * B + i % B."""
    if len(shape) < 3:
        return [1, int(np.prod(shape[1:-1])) if len(shape) > 1 else 1, int(shape[-1])]
    return [int(shape[1]), int(np.prod(shape[2:-1])), int(shape[-1])]


def _elementwise_step(op, values, new_value, name: str, i: int):
    """The step of a host lane op, binary op, widen/narrow, reduce_sum or table lookup (None:
    not one)."""
    lane_ops = {accel.BiasAddZpOp: OP_BIAS_ADD, accel.ShiftLeftOp: OP_SHIFT_LEFT,
                accel.RoundMultiplyOp: OP_ROUND_MULTIPLY, accel.RoundRShiftOp: OP_ROUND_RSHIFT,
                accel.AddOp: OP_ADD, accel.MulOp: OP_MUL, accel.MinOp: OP_MIN,
                accel.MaxOp: OP_MAX}  # fmt: skip
    if isinstance(op, accel.WidenOp | accel.NarrowOp):
        src = values[op.input]
        return (KIND_LANE, dict(a=src, b=new_value(op.output), c=OP_CONVERT))
    if isinstance(op, accel.LutOp):
        if np.dtype(tensor_dtype(op.input.type)) != np.int8 or \
                np.dtype(tensor_dtype(op.output.type)) != np.int8:  # fmt: skip
            raise ProgramWriteError(f"{name}: accel.lut (#{i}) of {op.input.type} "
                                    "(int8 tables only)")
        table = op.array_prop("table").astype(np.int8)
        return (KIND_LUT, dict(a=values[op.input], b=new_value(op.output), data=table.tobytes()))
    if isinstance(op, accel.ReduceSumOp):
        shape = list(op.input.type.get_shape())
        axes = {int(a) % len(shape) for a in op.array_prop("axes")}
        flags = [1 if d in axes else 0 for d in range(len(shape))]
        src = values[op.input]
        return (KIND_REDUCE, dict(a=src, b=new_value(op.output), c=len(shape),
                                  data=np.asarray([shape, flags], "<i8").tobytes()))  # fmt: skip
    code = lane_ops.get(type(op))
    if code is None:
        return None
    x = op.operands[0]
    shape = list(x.type.get_shape())
    rhs = getattr(op, "rhs", None)
    if rhs is not None:
        other = list(rhs.type.get_shape())
        if len(other) > len(shape):
            raise ProgramWriteError(f"{name}: {op.name} (#{i}) broadcasts its lhs")
        other = [1] * (len(shape) - len(other)) + other
        if any(o not in (1, d) for o, d in zip(other, shape)):
            raise ProgramWriteError(f"{name}: {op.name} (#{i}) with shapes {shape} and {other}")
        src, rhs_value = values[x], values[rhs]
        return (KIND_BINARY, dict(a=src, b=new_value(op.output), c=code, p=[rhs_value],
                                  data=np.asarray([shape, other], "<i8").tobytes()))  # fmt: skip
    consts = np.asarray(op.values, dtype="<i8").reshape(-1)
    geometry = _lane_geometry(shape)
    if consts.size not in (1, geometry[0] * geometry[2]):
        raise ProgramWriteError(f"{name}: {op.name} (#{i}) with {consts.size} values for {shape}")
    src = values[x]
    return (KIND_LANE, dict(a=src, b=new_value(op.output), c=code, p=[consts.size, *geometry],
                            data=consts.tobytes()))  # fmt: skip


def _resize_step(op: accel.ResizeNearestNeighborOp | accel.ResizeBilinearOp, src: int,
                 dst: int) -> tuple:  # fmt: skip
    """A nearest-neighbour resize as a GATHER step, a bilinear one as a BILINEAR step."""
    from qaccel.kernels import packed

    shape, out = op.input.type.get_shape(), op.output.type.get_shape()
    if isinstance(op, accel.ResizeNearestNeighborOp):
        index = packed.resize_nearest_index(shape, out, *op.flags())
        return (KIND_GATHER, dict(a=src, b=dst, p=[0], data=index.astype("<i8").tobytes()))
    if np.dtype(tensor_dtype(op.input.type)) != np.int8:
        raise ProgramWriteError(f"accel.resize_bilinear of {op.input.type} (int8 only)")
    n, cb, h, w, _, b = shape
    tables = packed.resize_bilinear_tables((h, w), out[2:4], *op.flags())
    return (KIND_BILINEAR, dict(a=src, b=dst, p=[n * cb, h, w, b, out[2], out[3]],
                                data=tables.astype("<i8").tobytes()))  # fmt: skip


def _col2im_step(op: accel.Col2ImOp, src: int, dst: int) -> tuple:
    """A transposed convolution's tap sum as a GATHER_SUM step."""
    from qaccel.kernels import packed

    index = packed.col2im_index(op.input.type.get_shape(), op.output.type.get_shape(),
                                op.array_prop("kernel"), op.array_prop("strides"),
                                op.array_prop("padding"), op.int_prop("channels"))  # fmt: skip
    return (KIND_GATHER_SUM, dict(a=src, b=dst, p=[index.shape[1]],
                                  data=index.astype("<i8").tobytes()))  # fmt: skip


def _lane_steps(op, values, new_value, temp_value) -> list[tuple] | None:
    """The steps of `accel.lane_sum` (a REDUCE over the blocks and lanes into one value per
    pixel, then a PAD of the lanes with 0) or `accel.lane_broadcast` (a GATHER of each
    pixel's lane 0); None: neither."""
    if isinstance(op, accel.LaneSumOp):
        shape = [int(d) for d in op.input.type.get_shape()]
        rank = len(shape)
        flags = [1 if d in (1, rank - 1) else 0 for d in range(rank)]
        summed = [1 if f else n for n, f in zip(shape, flags)]
        temp = temp_value(4, int(np.prod(summed)))
        after = [0] * (rank - 1) + [shape[-1] - 1]
        return [(KIND_REDUCE, dict(a=values[op.input], b=temp, c=rank,
                                   data=np.asarray([shape, flags], "<i8").tobytes())),
                (KIND_PAD, dict(a=temp, b=new_value(op.output), c=rank, p=[0],
                                data=np.asarray([summed, [0] * rank, after], "<i8").tobytes()))]
    if isinstance(op, accel.LaneBroadcastOp):
        from qaccel.kernels.packed import lane_broadcast_index

        index = lane_broadcast_index(op.input.type.get_shape(), op.output.type.get_shape())
        return [(KIND_GATHER, dict(a=values[op.input], b=new_value(op.output), p=[0],
                                   data=index.astype("<i8").tobytes()))]
    return None


def _attention_steps(op, values, new_value, new_temp) -> list[tuple] | None:
    """The steps of `accel.relayout` (GATHER), `accel.softmax` (SOFTMAX) and
    `accel.batch_matmul` (GATHERs into plain operands, BATCH_MATMUL, GATHER into the packed
    result); None for any other op."""
    from qaccel.kernels import attention as at
    from qaccel.kernels.layout import Packing, pack, unpack

    if isinstance(op, accel.RelayoutOp):
        block = op.input.type.get_shape()[-1]
        index = at.relayout_index(op.array_prop("in_shape").tolist(),
                                  op.array_prop("shape").tolist(),
                                  op.array_prop("perm").tolist(), block)  # fmt: skip
        src = values[op.input]
        return [(KIND_GATHER, dict(a=src, b=new_value(op.output), p=[op.int_prop("pad_value")],
                                   data=index.astype("<i8").tobytes()))]  # fmt: skip
    if isinstance(op, accel.SoftmaxOp):
        shape = list(op.input.type.get_shape())
        table = at.softmax_exp_table(op.int_prop("multiplier"), op.int_prop("left_shift"),
                                     op.int_prop("diff_min"))  # fmt: skip
        geometry = [shape[0], shape[1], int(np.prod(shape[2:-2])), shape[-1],
                    op.int_prop("channels"), max(op.int_prop("diff_min"), -256)]  # fmt: skip
        src = values[op.input]
        return [(KIND_SOFTMAX, dict(a=src, b=new_value(op.output), p=geometry,
                                    data=table.astype("<i8").tobytes()))]  # fmt: skip
    if not isinstance(op, accel.BatchMatmulOp):
        return None
    ls, rs = op.array_prop("lhs_shape").tolist(), op.array_prop("rhs_shape").tolist()
    block = op.lhs.type.get_shape()[-1]
    sources = []
    for v, plain in ((op.lhs, ls), (op.rhs, rs)):
        count = int(np.prod(v.type.get_shape()))
        source = np.arange(count, dtype=np.int64).reshape(v.type.get_shape())
        sources.append(unpack(source, Packing.activations(len(plain), block), tuple(plain)))
    lhs_index, rhs_index = at.batch_matmul_operands(
        sources[0], sources[1], bool(op.int_prop("adj_x")), bool(op.int_prop("adj_y")))
    batch, rows, depth = lhs_index.shape
    cols = rhs_index.shape[-1]
    out_plain = op.plain_output_shape()
    out_index = pack(np.arange(batch * rows * cols, dtype=np.int64).reshape(out_plain),
                     Packing.activations(len(out_plain), block), -1).reshape(-1)
    lhs_t, rhs_t = new_temp(lhs_index.size), new_temp(rhs_index.size)
    out_t = new_temp(batch * rows * cols)
    steps = [
        (KIND_GATHER, dict(a=values[op.lhs], b=lhs_t, p=[0],
                           data=lhs_index.astype("<i8").reshape(-1).tobytes())),
        (KIND_GATHER, dict(a=values[op.rhs], b=rhs_t, p=[0],
                           data=rhs_index.astype("<i8").reshape(-1).tobytes())),
        (KIND_BATCH_MATMUL, dict(
            a=lhs_t, b=out_t, c=rhs_t,
            p=[batch, rows, depth, cols, op.int_prop("lhs_zero_point"),
               op.int_prop("rhs_zero_point"), op.int_prop("output_zero_point")],
            data=np.asarray([op.int_prop("multiplier"), op.int_prop("shift")],
                            "<i8").tobytes())),
    ]  # fmt: skip
    steps.append((KIND_GATHER, dict(a=out_t, b=new_value(op.output), p=[op.int_prop("pad_value")],
                                    data=out_index.astype("<i8").tobytes())))  # fmt: skip
    return steps


def _bmm_gemm_steps(op, values, new_value, new_temp) -> list[tuple] | None:
    """The steps of `accel.bmm_operand` (a GATHER) and `accel.bmm_zp_correction` (GATHERs of
    the plain operands, then BMM_CORRECTION); None for any other op."""
    if isinstance(op, accel.BmmOperandOp):
        index = op.index_array().reshape(-1)
        return [(KIND_GATHER, dict(a=values[op.input], b=new_value(op.output), p=[0],
                                   data=index.astype("<i8").tobytes()))]  # fmt: skip
    if not isinstance(op, accel.BmmZpCorrectionOp):
        return None
    from qaccel.kernels import bmm_gemm as bg

    block = op.lhs.type.get_shape()[-1]
    lhs, rhs = bg.operand_sources(op.array_prop("lhs_shape").tolist(),
                                  op.array_prop("rhs_shape").tolist(),
                                  bool(op.int_prop("adj_x")), bool(op.int_prop("adj_y")),
                                  block, op.views())  # fmt: skip
    i = op.int_prop("index")
    batch = op.stacked()
    if batch is None:
        lhs, rhs = lhs[i : i + 1], rhs[i : i + 1]
    _, m, k = lhs.shape
    n = rhs.shape[2]
    lhs_t, rhs_t = new_temp(len(lhs) * m * k), new_temp(len(rhs) * k * n)
    p = [m, k, n, block, op.int_prop("lhs_zero_point"), op.int_prop("rhs_zero_point")]
    return [
        (KIND_GATHER, dict(a=values[op.lhs], b=lhs_t, p=[0],
                           data=lhs.astype("<i8").reshape(-1).tobytes())),
        (KIND_GATHER, dict(a=values[op.rhs], b=rhs_t, p=[0],
                           data=rhs.astype("<i8").reshape(-1).tobytes())),
        (KIND_BMM_CORRECTION, dict(a=lhs_t, b=new_value(op.output), c=rhs_t, p=p))
        if batch is None else
        (KIND_BMM_CORRECTIONS, dict(a=lhs_t, b=new_value(op.output), c=rhs_t, p=[*p, batch])),
    ]  # fmt: skip


def program_blob(
    compiled: CompiledModel,
    name: str,
    f: func.FuncOp,
    inputs: list[tuple[accel.Packing | None, tuple[int, ...], int]],
    outputs: list[tuple[accel.Packing | None, tuple[int, ...]]],
) -> bytes:
    """The program of accelerator function `name` (body `f`); `inputs`: (packing, plain shape,
    padding value) of each argument; `outputs`: (packing, plain shape) of each result. A
    packing None passes the value as it is (its shape given as the plain shape)."""
    fn: CompiledFunction = compiled.functions[name]
    ops = list(f.body.block.ops)
    plan = function_steps(fn, ops)
    values: dict[SSAValue, int] = {}
    value_records: list[bytes] = []

    def new_value(v: SSAValue, ids=()) -> int:
        t = v.type
        assert isinstance(t, TensorType)
        elem = np.dtype(tensor_dtype(t)).itemsize
        if elem not in (1, 4):
            raise ProgramWriteError(f"{name}: a {tensor_dtype(t)} value (the kernel moves int8 "
                                    "and int32)")
        values[v] = len(value_records)
        for other in ids:
            values[other] = len(value_records)
        value_records.append(struct.pack("<IIQ", elem, 0, int(np.prod(t.get_shape()))))
        return values[v]

    def temp_value(elem: int, count: int) -> int:
        value_records.append(struct.pack("<IIQ", elem, 0, count))
        return len(value_records) - 1

    def new_temp(count: int, elem: int = 1) -> int:
        value_records.append(struct.pack("<IIQ", elem, 0, int(count)))
        return len(value_records) - 1

    for arg in f.body.block.args:
        new_value(arg)
    if plan.host_constants:
        first = ops[plan.host_constants[0]].name
        raise ProgramWriteError(f"{name}: host ops read constants ({first})")
    steps: list[tuple] = []  # (kind, fields) with data to place later
    lay = None
    for kind, arg in plan.steps:
        if kind == STEP_WRITE:
            slot = fn.slots[arg]
            steps.append((KIND_WRITE, dict(a=values[resolve(slot.value, ops, f)],
                                           offset=slot.offset, nbytes=slot.nbytes)))  # fmt: skip
        elif kind == STEP_LAYER:
            lay = fn.layers[arg]
            steps.append((KIND_LAYER, dict(a=arg)))
        elif kind == STEP_READ:
            assert lay is not None
            result = ops[lay.anchor].results[0]
            also = [ops[lay.widened].results[1]] if lay.widened is not None else []
            v = new_value(result, also)
            slot = fn.slots[arg]
            mode = 0 if lay.offset is None else 1
            steps.append((KIND_READ, dict(a=v, b=mode, p=[lay.offset or 0],
                                          offset=slot.offset, nbytes=slot.nbytes)))  # fmt: skip
        else:
            segment = []
            for i in plan.segments[arg]:  # a layer left on the host runs its body
                if isinstance(ops[i], vta.LayerOp):
                    segment += [(i, inner) for inner in ops[i].body_ops()]
                    segment.append((i, ops[i]))
                else:
                    segment.append((i, ops[i]))
            for i, op in segment:
                if isinstance(op, vta.LayerOp):  # its results are its yielded values
                    yielded = op.body.block.last_op.operands  # type: ignore[union-attr]
                    for r, v in zip(op.results, yielded, strict=True):
                        if r.type != v.type:
                            raise ProgramWriteError(f"{name}: vta.layer (#{i}) yields "
                                                    f"{v.type} as {r.type}")  # fmt: skip
                        values[r] = values[v]
                    continue
                if isinstance(op, accel.PadOp):
                    shape = list(op.input.type.get_shape())
                    spatial = [int(v) for v in op.array_prop("padding")]
                    before = [0, 0, *spatial[0::2], 0, 0]
                    after = [0, 0, *spatial[1::2], 0, 0]
                    if len(before) != len(shape) or len(shape) > MAX_RANK:
                        raise ProgramWriteError(f"{name}: accel.pad (#{i}) of rank {len(shape)}")
                    src = values[op.input]
                    dst = new_value(op.output)
                    geometry = np.asarray([shape, before, after], dtype="<i8").tobytes()
                    steps.append((KIND_PAD, dict(a=src, b=dst, c=len(shape),
                                                 p=[op.pad_value.value.data],
                                                 data=geometry)))  # fmt: skip
                    continue
                if isinstance(op, accel.ConcatOp):
                    axis = op.int_prop("axis")
                    shape = list(op.output.type.get_shape())
                    outer = int(np.prod(shape[:axis]))
                    chunks = []
                    for x in op.inputs:
                        chunks += [values[x], int(np.prod(x.type.get_shape()[axis:]))]
                    dst = new_value(op.output)
                    steps.append((KIND_CONCAT, dict(a=dst, c=len(op.inputs), p=[outer],
                                                    data=np.asarray(chunks, "<i8").tobytes())))
                    continue
                if isinstance(op, accel.CropOp):  # a padding by negative widths
                    shape = list(op.input.type.get_shape())
                    out = list(op.output.type.get_shape())
                    offsets = [int(o) for o in op.array_prop("offsets")]
                    before = [0, 0, *(-o for o in offsets), 0, 0]
                    after = [0, 0, *(o + n - s for o, n, s in zip(offsets, out[2:-2],
                                                                  shape[2:-2])), 0, 0]  # fmt: skip
                    if len(shape) > MAX_RANK:
                        raise ProgramWriteError(f"{name}: accel.crop (#{i}) of rank {len(shape)}")
                    src = values[op.input]
                    dst = new_value(op.output)
                    geometry = np.asarray([shape, before, after], dtype="<i8").tobytes()
                    steps.append((KIND_PAD, dict(a=src, b=dst, c=len(shape), p=[0],
                                                 data=geometry)))  # fmt: skip
                    continue
                if isinstance(op, accel.ReshapeOp):  # a copy: a concatenation of one input
                    count = int(np.prod(op.input.type.get_shape()))
                    src = values[op.input]
                    dst = new_value(op.output)
                    steps.append((KIND_CONCAT, dict(a=dst, c=1, p=[1], data=np.asarray(
                        [src, count], "<i8").tobytes())))  # fmt: skip
                    continue
                if isinstance(op, accel.HostPool2DOp):
                    n, cb, h, w, _, b = op.input.type.get_shape()
                    _, _, oh, ow, _, _ = op.output.type.get_shape()
                    kh, kw = (int(v) for v in op.array_prop("window"))
                    sh, sw = (int(v) for v in op.array_prop("strides"))
                    top, _, left, _ = (int(v) for v in op.array_prop("padding"))
                    src = values[op.input]
                    dst = new_value(op.output)
                    geometry = [sh, sw, top, left, op.int_prop("min"), op.int_prop("max")]
                    steps.append((KIND_POOL, dict(
                        a=src, b=dst, c=0 if op.kind.data == "max" else 1,
                        p=[n * cb, h, w, b, oh, ow, kh, kw],
                        data=np.asarray(geometry, "<i8").tobytes())))  # fmt: skip
                    continue
                if isinstance(op, accel.MaxPool2DOp | accel.SumPool2DOp):  # int32, no padding
                    n, cb, h, w, _, b = op.input.type.get_shape()
                    _, _, oh, ow, _, _ = op.output.type.get_shape()
                    kh, kw = (int(v) for v in op.array_prop("window"))
                    sh, sw = (int(v) for v in op.array_prop("strides"))
                    src = values[op.input]
                    dst = new_value(op.output)
                    geometry = [sh, sw, 0, 0, -(2**31), 2**31 - 1]
                    steps.append((KIND_POOL, dict(
                        a=src, b=dst, c=0 if isinstance(op, accel.MaxPool2DOp) else 2,
                        p=[n * cb, h, w, b, oh, ow, kh, kw],
                        data=np.asarray(geometry, "<i8").tobytes())))  # fmt: skip
                    continue
                if isinstance(op, accel.DepthToSpaceOp):
                    from qaccel.kernels.packed import depth_to_space_index

                    index = depth_to_space_index(op.input.type.get_shape(),
                                                 op.output.type.get_shape(),
                                                 op.int_prop("block_size"),
                                                 op.int_prop("channels"))  # fmt: skip
                    src = values[op.input]
                    dst = new_value(op.output)
                    steps.append((KIND_GATHER, dict(a=src, b=dst, p=[op.int_prop("pad_value")],
                                                    data=index.astype("<i8").tobytes())))
                    continue
                if isinstance(op, accel.Col2ImOp):
                    steps.append(_col2im_step(op, values[op.input], new_value(op.output)))
                    continue
                if isinstance(op, accel.ResizeNearestNeighborOp | accel.ResizeBilinearOp):
                    steps.append(_resize_step(op, values[op.input], new_value(op.output)))
                    continue
                bmm = _bmm_gemm_steps(op, values, new_value, new_temp)
                if bmm is not None:
                    steps += bmm
                    continue
                attention = _attention_steps(op, values, new_value, new_temp)
                if attention is not None:
                    steps += attention
                    continue
                if isinstance(op, accel.ConcatLanesOp):
                    shape = list(op.output.type.get_shape())
                    chunks = []
                    for x, c in zip(op.inputs, op.array_prop("channels"), strict=True):
                        chunks += [values[x], int(c)]
                    dst = new_value(op.output)
                    steps.append((KIND_CONCAT_LANES, dict(
                        a=dst, c=len(op.inputs),
                        p=[shape[0], int(np.prod(shape[2:-2])), shape[-1]],
                        data=np.asarray(chunks, "<i8").tobytes())))  # fmt: skip
                    continue
                lane_steps = _lane_steps(op, values, new_value, temp_value)
                if lane_steps is not None:
                    steps.extend(lane_steps)
                    continue
                step = _elementwise_step(op, values, new_value, name, i)
                if step is not None:
                    steps.append(step)
                    continue
                if not isinstance(op, accel.HostRequantizeOp):
                    raise ProgramWriteError(f"{name}: host op {op.name} (#{i}) is not supported by "
                                            "the program runner")  # fmt: skip
                shape = op.input.type.get_shape()
                scales = np.asarray(q.array_values(op.scale), dtype="<f8").reshape(-1)
                lanes = shape[1] * shape[-1]
                if scales.size not in (1, lanes) or len(shape) < 3:
                    raise ProgramWriteError(f"{name}: host_requantize (#{i}) with {scales.size} "
                                            f"scales for shape {list(shape)}")  # fmt: skip
                src = values[op.input]
                dst = new_value(op.output)
                mid = int(np.prod(shape[2:-1]))
                steps.append((KIND_REQUANT, dict(
                    a=src, b=dst, c=int(scales.size),
                    p=[op.int_prop("input_zero_point"), op.int_prop("output_zero_point"),
                       op.int_prop("min"), op.int_prop("max"), shape[1], mid, shape[-1]],
                    data=scales.tobytes())))  # fmt: skip
    returned = list(ops[-1].operands)
    io: list[bytes] = []
    for k, (packing, plain, pad) in enumerate(inputs):
        arg = f.body.block.args[k]
        io.append(_io_record(values[arg], packing, plain, pad, tensor_dtype(arg.type)))
    for v, (packing, plain) in zip(returned, outputs):
        if v not in values:
            raise ProgramWriteError(f"{name}: a result the kernel does not read back")
        io.append(_io_record(values[v], packing, plain, 0, tensor_dtype(v.type)))

    n_values, n_io, n_steps, n_layers = len(value_records), len(io), len(steps), len(fn.layers)
    values_at = HEADER_BYTES
    io_at = values_at + VALUE_BYTES * n_values
    steps_at = io_at + IO_BYTES * n_io
    layers_at = steps_at + STEP_BYTES * n_steps
    data = _Blob(_align8(layers_at + LAYER_BYTES * n_layers))
    image = np.ascontiguousarray(fn.image).view(np.uint8).reshape(-1)
    dram_at = data.add(image.tobytes())
    layer_records = []
    for layer in fn.layers:
        words = np.ascontiguousarray(layer.words, dtype="<u8").reshape(-1)
        uops = np.ascontiguousarray(layer.uops, dtype="<u4").reshape(-1)
        w_at = data.add(words.tobytes())
        u_at = data.add(uops.tobytes())
        layer_records.append(struct.pack("<QQQQ", w_at, words.size // 2, u_at, uops.size))
    step_records = []
    for kind, fields in steps:
        blob = fields.pop("data", None)
        if blob is not None:
            fields["offset"], fields["nbytes"] = data.add(blob), len(blob)
        step_records.append(_step(kind, **fields))
    config = compiled.config.to_dict()
    header = struct.pack(
        f"<8sIIQ6IQQ{len(CONFIG_KEYS)}q5Q", PROGRAM_MAGIC, PROGRAM_VERSION, HEADER_BYTES, data.end,
        len(inputs), len(outputs), n_values, n_steps, n_layers, 0, image.size, dram_at,
        *(int(config[k]) for k in CONFIG_KEYS), values_at, io_at, steps_at, layers_at, 0,
    )  # fmt: skip
    assert len(header) == HEADER_BYTES
    tables = header + b"".join(value_records) + b"".join(io) + b"".join(step_records)
    tables += b"".join(layer_records)
    tables += bytes(_align8(len(tables)) - len(tables))
    return _sealed(tables, data.parts)



def function_program(compiled: CompiledModel, name: str) -> bytes:
    """The program of accelerator function `name` with its own boundary: each argument and
    result its packed value as it is (see the module docstring); raises ProgramWriteError."""
    f = next((op for op in compiled.module.ops
              if isinstance(op, func.FuncOp) and op.sym_name.data == name), None)  # fmt: skip
    if f is None:
        raise ProgramWriteError(f"{name}: no such function in the module")
    inputs = [(None, tuple(a.type.get_shape()), 0) for a in f.body.block.args]
    outputs = [(None, tuple(t.get_shape())) for t in f.function_type.outputs.data]
    return program_blob(compiled, name, f, inputs, outputs)


__all__ = ["CHECKSUM_AT", "PROGRAM_MAGIC", "PROGRAM_VERSION", "ProgramWriteError",
           "function_program", "program_blob", "seal"]  # fmt: skip
