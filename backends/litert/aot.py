"""Accelerator programs for LiteRT, their ops, and the host IR's export in two flavours.

    blob = program_blob(compiled, name, f, inputs, outputs)   # one accelerator function's program
    data = export_dispatch(compiled)   # the host IR as a DISPATCH_OP model
    data = export_aot(compiled)        # the host IR as a QACCEL_VTA model

From a `.tflite`, qaccel-compile writes OUTDIR/model.qaccel.dispatch.tflite and
OUTDIR/model.qaccel.tflite by splicing programs into the user's ORIGINAL model
(`partitions.py`: every other operator, tensor, signature and metadata entry stays the
original's). `export_dispatch` / `export_aot` re-export the host IR instead: they remain for a
compile without an original model (MLIR text given to qaccel-compile, an in-memory compiled
model given to `api.run_litert`), and refuse (`AotError`) host IR with no TFLite form. Both
forms use the same ops, options and programs, described below.

`model.qaccel.dispatch.tflite` is what LiteRT's `apply_plugin_main` writes for an NPU vendor:
every accelerator function is one CUSTOM op `DISPATCH_OP` whose inputs and outputs are the
function's plain ones and whose custom options are LiteRT's flexbuffer map {bytecode_size,
bytecode_offset, name}: its bytecode (the function's program, below) lies after the
flatbuffer at that absolute file offset (64-byte aligned), and name is the function's. The
metadata `LiteRtStamp` (SoC "Qaccel" / "VTA") marks the model as compiled, so LiteRT applies
no compiler plugin; our dispatch library (`kernel/qaccel_dispatch.c`) runs the programs.

`model.qaccel.tflite` is the custom-op flavour, for LiteRT's custom-op kernel API:

the host program's entry function becomes the graph: its ops stay builtin TFLite ops with
their tensors (as `qaccel-opt -t tflite` writes them; so in the dispatch flavour too), and
every accelerator function, with the `accel.pack` of its inputs and the `accel.unpack` of its
outputs, becomes one CUSTOM op `QACCEL_VTA`:

    inputs:  the function's plain (unpacked) inputs, then its program (a constant uint8
             tensor whose data lies outside the flatbuffer at a 64-byte aligned offset, so that
             LiteRT hands it to the kernel without a copy)
    outputs: the function's plain outputs
    custom options: CUSTOM_MAGIC, options version, the program's size, the outputs' shapes

The program (`program_blob`, run by the one program runner,
`backends/vta/program/qaccel_program.c`, in both flavours and from Python) holds everything the
function needs: format version, hardware configuration, DRAM image (constants in place, arena
zero), how each input is packed into the `[N, C/B, H, W, 1, B]` layout (padding value, split
shape and transpose) and each output unpacked with its element type and shape, the steps (write
an arena slot, run a layer, read a slot back, a host op), every layer's instruction stream and
micro-ops, and a checksum of all of it.

Format versions: 1, the first; 2 adds the checksum (the header's last u64: CRC-32, zlib's, of
the whole program with that field read as zeros; the runner verifies it before anything else,
about 1 ms per MB) and each io record's element type (TFLite's type code), which the runner
checks with the shape of every input and output it is given. The runner reads only the version
it was built for.

Host ops inside an accelerator function run in the kernel: `accel.host_requantize` (LiteRT's
double-precision FULLY_CONNECTED requantization) is plain IEEE double arithmetic, which C
reproduces exactly, so the function is not split around it; the other host ops that layers
leave behind (`accel.pad`, `accel.concat`, `accel.concat_lanes`, `accel.host_pool2d`, the
lane and binary ops, widen/narrow, `accel.reduce_sum`, the table lookup `accel.lut`) are
integer loops the kernel implements as the interpreter does
(`interpreter/accel_semantics.py`). A function with any other host op (e.g. a GEMM op left on
the host) is not exported (`AotError`, one line naming the op).

Ops of the entry function other than the accelerator calls must be `tfl` ops, except `q.pad`
(a PAD the partitioner kept on the CPU), written as TFLite PAD (PADV2 when its pad value is not
the zero point), `q.reshape`, written as RESHAPE with a constant shape, and `q.slice`, written
as SLICE.

Little-endian layout (offsets in bytes from the blob's start; every section 8-byte aligned):

    header   PROGRAM_MAGIC[8], u32 version, u32 header bytes, u64 total bytes,
             u32 inputs, outputs, values, steps, layers, reserved,
             u64 DRAM bytes, DRAM offset, i64 config[11] (vta_config order),
             u64 values, io, steps, layers offsets, checksum (u32 CRC-32 in a u64)
                                                                       (HEADER_BYTES)
    values   u32 element size (1 or 4), u32 reserved, u64 elements     (VALUE_BYTES each)
    io       u32 value, rank, i32 pad value, u32 element size, i32 plain shape[8],
             i32 split shape[16], i32 order[16], i32 element type, u32 reserved
                                                                       (IO_BYTES each;
             inputs first: plain -> packed value; then outputs: packed value -> plain)
    steps    u32 kind, a, b, c, i64 p[8], u64 offset, bytes            (STEP_BYTES each)
             WRITE value a to DRAM[offset:+bytes]; LAYER a; READ DRAM[offset:+bytes] into
             value a (b = 1: int8 widened to int32 minus p[0]); REQUANT value a into b (c
             scales of f64 at offset; p: zero points in/out, clamp min/max, lanes C/B, inner
             elements, B); PAD value a into b (rank c, pad value p[0]; at offset i64 shape,
             before, after, c each; negative widths crop); CONCAT c values into a (p[0] outer elements; at
             offset i64 (value, elements per outer index) for each input); LANE value a into
             b, operation c (OP_*: convert, or with p[0] per-lane int64 constants at offset,
             lane geometry p[1..3] as REQUANT's); BINARY value a with value p[0] into b,
             operation c (at offset i64 lhs shape, rhs shape (1 = broadcast), rank each);
             REDUCE value a into b summing the dimensions flagged 1 (rank c; at offset i64
             shape, flags); CONCAT_LANES c values into a along the channels, lanes moving
             (p[0] batch, p[1] middle elements, p[2] B; at offset i64 (value, channels) for
             each input); POOL value a into b, c = 0 max, 1 average or 2 sum (p: images N*C/B,
             H, W, B, OH, OW, KH, KW; at offset i64 strides h, w, top, left, min, max; int8,
             or int32 for max and sum, which wraps); LUT int8
             value a into int8 b through the 256 int8 entries at offset (b = table[a + 128]);
             GATHER value a into b (same element size): element i of b is element idx[i] of
             a, or p[0] where idx[i] is -1 (i64 idx at offset, one per element of b)
    layers   u64 words offset, instructions, uops offset, uops         (LAYER_BYTES each)
    data     DRAM image, instruction words, micro-ops, the host steps' constants
"""

from __future__ import annotations

import struct
import zlib

import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import (
    BytesAttr,
    DenseIntOrFPElementsAttr,
    IntegerAttr,
    IntegerType,
    ModuleOp,
    NameLoc,
    Signedness,
    StringAttr,
    TensorType,
    UnknownLoc,
    i32,
)
from xdsl.ir import Operation, SSAValue

from qaccel.backends.vta.compiled import CompiledFunction, CompiledModel, resolve
from qaccel.backends.vta.runtime import (
    STEP_HOST,
    STEP_LAYER,
    STEP_READ,
    STEP_WRITE,
    function_steps,
)
from qaccel.dialects import accel, q
from qaccel.dialects.names import location_name, public_functions
from qaccel.dialects.tfl import ConstOp, OpaqueOp, py_to_attr
from qaccel.dialects.types import tensor_dtype
from qaccel.frontend.tflite_export import export_tflite
from qaccel.frontend.tflite_writer import read_model, write_model
from qaccel.targets.vta.config import MACHINE_KEYS
from qaccel.kernels.layout import split_order, split_shape

from qaccel.backends.litert.names import (  # re-exported: the names of the export
    AOT_FILE,
    CUSTOM_CODE,
    DISPATCH_CODE,
    DISPATCH_FILE,
)

CUSTOM_VERSION = 1
CUSTOM_MAGIC = b"QVTA"
OPTIONS_VERSION = 1
PROGRAM_MAGIC = b"QACCPROG"
PROGRAM_VERSION = 2
PROGRAM_PREFIX = "qaccel_program_"
BUILD_STAMP_KEY = "LiteRtStamp"  # metadata marking a model as compiled for a SoC
SOC_MANUFACTURER, SOC_MODEL = "Qaccel", "VTA"
BYTECODE_ALIGNMENT = 64
HEADER_BYTES, VALUE_BYTES, IO_BYTES, STEP_BYTES, LAYER_BYTES = 192, 16, 184, 96, 32
CHECKSUM_AT = 184  # the header's last u64
# io records' element types: TFLite's type codes (QACCEL_TYPE_* of qaccel_program.h)
ELEMENT_TYPES = {np.dtype(np.int32): 2, np.dtype(np.uint8): 3, np.dtype(np.int8): 9}
KIND_WRITE, KIND_LAYER, KIND_READ, KIND_REQUANT, KIND_PAD, KIND_CONCAT = 1, 2, 3, 4, 5, 6
KIND_LANE, KIND_BINARY, KIND_REDUCE, KIND_CONCAT_LANES, KIND_POOL, KIND_LUT = 7, 8, 9, 10, 11, 12
KIND_GATHER = 13
# KIND_LANE / KIND_BINARY operations (the step's c)
OP_CONVERT, OP_BIAS_ADD, OP_SHIFT_LEFT, OP_ROUND_MULTIPLY, OP_ROUND_RSHIFT = 0, 1, 2, 3, 4
OP_ADD, OP_MUL, OP_MIN, OP_MAX = 5, 6, 7, 8
MAX_RANK = 8
CONFIG_KEYS = MACHINE_KEYS  # the header's i64 config[], vta_config's order
_OPCODE_CUSTOM, _OPCODE_PAD, _OPCODE_PADV2 = 32, 34, 60


class AotError(Exception):
    """The model cannot be exported for LiteRT (one line for the user)."""


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


def _io_record(value: int, packing: accel.Packing, plain: tuple[int, ...], pad: int,
               dtype) -> bytes:  # fmt: skip
    rank = len(plain)
    dtype = np.dtype(dtype)
    if dtype not in ELEMENT_TYPES:
        raise AotError(f"a {dtype} input or output (the kernel moves int8 and int32)")
    if rank > MAX_RANK:
        raise AotError(f"a tensor of rank {rank} (the kernel packs up to rank {MAX_RANK})")
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
            raise AotError(f"{name}: accel.lut (#{i}) of {op.input.type} (int8 tables only)")
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
            raise AotError(f"{name}: {op.name} (#{i}) broadcasts its lhs")
        other = [1] * (len(shape) - len(other)) + other
        if any(o not in (1, d) for o, d in zip(other, shape)):
            raise AotError(f"{name}: {op.name} (#{i}) with shapes {shape} and {other}")
        src, rhs_value = values[x], values[rhs]
        return (KIND_BINARY, dict(a=src, b=new_value(op.output), c=code, p=[rhs_value],
                                  data=np.asarray([shape, other], "<i8").tobytes()))  # fmt: skip
    consts = np.asarray(op.values, dtype="<i8").reshape(-1)
    geometry = _lane_geometry(shape)
    if consts.size not in (1, geometry[0] * geometry[2]):
        raise AotError(f"{name}: {op.name} (#{i}) with {consts.size} values for {shape}")
    src = values[x]
    return (KIND_LANE, dict(a=src, b=new_value(op.output), c=code, p=[consts.size, *geometry],
                            data=consts.tobytes()))  # fmt: skip


def program_blob(
    compiled: CompiledModel,
    name: str,
    f: func.FuncOp,
    inputs: list[tuple[accel.Packing, tuple[int, ...], int]],
    outputs: list[tuple[accel.Packing, tuple[int, ...]]],
) -> bytes:
    """The program of accelerator function `name` (body `f`); `inputs`: (packing, plain shape,
    padding value) of each argument; `outputs`: (packing, plain shape) of each result."""
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
            raise AotError(f"{name}: a {tensor_dtype(t)} value (the kernel moves int8 and int32)")
        values[v] = len(value_records)
        for other in ids:
            values[other] = len(value_records)
        value_records.append(struct.pack("<IIQ", elem, 0, int(np.prod(t.get_shape()))))
        return values[v]

    for arg in f.body.block.args:
        new_value(arg)
    if plan.host_constants:
        raise AotError(f"{name}: host ops read constants ({ops[plan.host_constants[0]].name})")
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
                if isinstance(ops[i], accel.LayerOp):
                    segment += [(i, inner) for inner in ops[i].body_ops()]
                    segment.append((i, ops[i]))
                else:
                    segment.append((i, ops[i]))
            for i, op in segment:
                if isinstance(op, accel.LayerOp):  # its results are its yielded values
                    yielded = op.body.block.last_op.operands  # type: ignore[union-attr]
                    for r, v in zip(op.results, yielded, strict=True):
                        if r.type != v.type:
                            raise AotError(f"{name}: accel.layer (#{i}) yields {v.type} as "
                                           f"{r.type}")  # fmt: skip
                        values[r] = values[v]
                    continue
                if isinstance(op, accel.PadOp):
                    shape = list(op.input.type.get_shape())
                    spatial = [int(v) for v in op.array_prop("padding")]
                    before = [0, 0, *spatial[0::2], 0, 0]
                    after = [0, 0, *spatial[1::2], 0, 0]
                    if len(before) != len(shape) or len(shape) > MAX_RANK:
                        raise AotError(f"{name}: accel.pad (#{i}) of rank {len(shape)}")
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
                        raise AotError(f"{name}: accel.crop (#{i}) of rank {len(shape)}")
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
                step = _elementwise_step(op, values, new_value, name, i)
                if step is not None:
                    steps.append(step)
                    continue
                if not isinstance(op, accel.HostRequantizeOp):
                    raise AotError(f"{name}: host op {op.name} (#{i}) is not supported by the "
                                   f"{CUSTOM_CODE} kernel")  # fmt: skip
                shape = op.input.type.get_shape()
                scales = np.asarray(q.array_values(op.scale), dtype="<f8").reshape(-1)
                lanes = shape[1] * shape[-1]
                if scales.size not in (1, lanes) or len(shape) < 3:
                    raise AotError(f"{name}: host_requantize (#{i}) with {scales.size} scales "
                                   f"for shape {list(shape)}")  # fmt: skip
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
            raise AotError(f"{name}: a result the kernel does not read back")
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
    return seal(tables + b"".join(data.parts))


def custom_options(program_bytes: int, output_shapes: list[tuple[int, ...]]) -> bytes:
    """The QACCEL_VTA op's custom options: magic, version, program size, output shapes (the
    kernel's GetOutputLayouts has no node identity: it finds the node by its program's size)."""
    out = CUSTOM_MAGIC + struct.pack("<III", OPTIONS_VERSION, program_bytes, len(output_shapes))
    for shape in output_shapes:
        out += struct.pack(f"<I{len(shape)}i", len(shape), *shape)
    return out


def dispatch_options(name: str, offset: int, size: int) -> bytes:
    """A DISPATCH_OP's custom options as LiteRT writes them: a flexbuffer map {bytecode_size,
    bytecode_offset (from the start of the file), name (the function in the bytecode)}, every
    integer 64 bits wide so that LiteRT can update the offsets in place."""
    from flatbuffers import flexbuffers

    builder = flexbuffers.Builder(force_min_bit_width=flexbuffers.BitWidth.W64)
    with builder.Map():
        builder.UInt("bytecode_size", size)
        builder.UInt("bytecode_offset", offset)
        builder.String("name", name)
    return bytes(builder.Finish())


def read_dispatch_options(data: bytes) -> dict:
    """{bytecode_size, bytecode_offset, name} of a DISPATCH_OP's custom options."""
    from flatbuffers import flexbuffers

    m = flexbuffers.GetRoot(bytearray(data)).AsMap
    return {"bytecode_size": m["bytecode_size"].AsInt,
            "bytecode_offset": m["bytecode_offset"].AsInt, "name": m["name"].AsString}


def build_stamp() -> bytes:
    """LiteRT's build stamp (metadata `LiteRtStamp`): SoC manufacturer and model, each a
    NUL-padded field of 125 bytes. LiteRT applies no compiler plugin to a stamped model."""
    field = 125
    return (SOC_MANUFACTURER.encode().ljust(field, b"\0")
            + SOC_MODEL.encode().ljust(field, b"\0"))  # fmt: skip


def _name_loc(name: str) -> NameLoc:
    return NameLoc(StringAttr(name), UnknownLoc())


def _opaque(op_name: str, opcode: int, operands, result_types, version: int = 1,
            custom_code: str | None = None, options: bytes | None = None) -> OpaqueOp:  # fmt: skip
    props = {"op_name": StringAttr(op_name), "opcode": IntegerAttr(opcode, i32),
             "options": py_to_attr({})}  # fmt: skip
    if version > 1:
        props["version"] = IntegerAttr(version, i32)
    if custom_code is not None:
        props["custom_code"] = StringAttr(custom_code)
    if options is not None:
        props["custom_options"] = py_to_attr(options)
    return OpaqueOp.create(operands=list(operands), result_types=list(result_types),
                           properties=props)  # fmt: skip


def _replace_call(compiled: CompiledModel, module: ModuleOp, call: func.CallOp, used: set[int],
                  bytecodes: dict[str, bytes] | None = None):
    """Put one QACCEL_VTA op (and its program constant) in place of `call` and its packs and
    unpacks, or with `bytecodes` one DISPATCH_OP whose program goes to bytecodes[name] (placed
    after the flatbuffer later); returns the ops that became dead."""
    name = call.callee.string_value()
    f = next(op for op in module.ops if isinstance(op, func.FuncOp) and op.sym_name.data == name)
    inputs, plain_inputs, dead = [], [], []
    for v in call.arguments:
        pack = v.owner
        if not isinstance(pack, accel.PackOp):
            raise AotError(f"@{name}: an input that is not an accel.pack of a plain tensor")
        pad = pack.padding_value.value.data if pack.padding_value is not None else 0
        inputs.append((pack.packing, tuple(pack.input.type.get_shape()), pad))
        plain_inputs.append(pack.input)
        dead.append(pack)
    outputs, unpacks = [], []
    for r in call.results:
        users = [u.operation for u in r.uses]
        if not users or not all(isinstance(u, accel.UnpackOp) for u in users):
            raise AotError(f"@{name}: a result that is not only unpacked to a plain tensor")
        first = users[0]
        if any(u.packing != first.packing or u.output.type != first.output.type for u in users):
            raise AotError(f"@{name}: a result unpacked in two ways")
        outputs.append((first.packing, tuple(first.output.type.get_shape())))
        unpacks.append(users)
    blob = program_blob(compiled, name, f, inputs, outputs)
    result_types = [users[0].output.type for users in unpacks]
    if bytecodes is not None:
        bytecodes[name] = blob
        new_ops = [_opaque("CUSTOM", _OPCODE_CUSTOM, plain_inputs, result_types, 1,
                           DISPATCH_CODE, dispatch_options(name, 0, 0))]  # fmt: skip
    else:
        while len(blob) in used:  # the kernel tells nodes apart by their programs' sizes
            blob += bytes(8)
        used.add(len(blob))
        u8 = IntegerType(8, Signedness.UNSIGNED)
        ptype = TensorType(u8, [len(blob)])
        const = ConstOp(DenseIntOrFPElementsAttr(ptype, BytesAttr(blob)), ptype)
        const.location = _name_loc(PROGRAM_PREFIX + name)
        new_ops = [const, _opaque("CUSTOM", _OPCODE_CUSTOM, [*plain_inputs, const.output],
                                  result_types, CUSTOM_VERSION, CUSTOM_CODE,
                                  custom_options(len(blob), [shape for _, shape in outputs]))]
    op = new_ops[-1]
    named = unpacks[0][0] if unpacks else None
    op.location = named.location if location_name(named) else _name_loc(name)
    block = call.parent_block()
    block.insert_ops_before(new_ops, call)
    for users, res in zip(unpacks, op.results):
        for u in users:
            u.output.replace_all_uses_with(res)
            u.detach()
            u.erase()
    call.detach()
    call.erase()
    return dead


def _reshape_to_tflite(op: q.ReshapeOp) -> list[Operation]:
    """`q.reshape` (a RESHAPE the partitioner left on the CPU) as TFLite's RESHAPE with a
    constant shape."""
    from qaccel.dialects.tfl import ReshapeOp

    shape = np.asarray(op.output.type.get_shape(), dtype="<i4")
    stype = TensorType(IntegerType(32), [len(shape)])
    const = ConstOp(DenseIntOrFPElementsAttr(stype, BytesAttr(shape.tobytes())), stype)
    const.location = _name_loc(f"{location_name(op) or 'reshape'}/shape")
    new = ReshapeOp.create(operands=[op.input, const.output], result_types=[op.output.type],
                           properties=ReshapeOp.properties_from_options(
                               {"new_shape": shape.tolist()}))  # fmt: skip
    new.location = op.location
    return [const, new]


def _depth_to_space_to_tflite(op: q.DepthToSpaceOp) -> list[Operation]:
    """`q.depth_to_space` (left on the CPU) as TFLite's DEPTH_TO_SPACE."""
    from qaccel.dialects.tfl import DepthToSpaceOp

    new = DepthToSpaceOp.create(operands=[op.input], result_types=[op.output.type],
                                properties=DepthToSpaceOp.properties_from_options(
                                    {"block_size": op.int_prop("block_size")}))  # fmt: skip
    new.location = op.location
    return [new]


def _slice_to_tflite(op: q.SliceOp) -> list[Operation]:
    """`q.slice` (a STRIDED_SLICE the partitioner left on the CPU) as TFLite's SLICE."""
    from qaccel.dialects.tfl import SliceOp

    name = location_name(op) or "slice"
    consts = []
    for what, values in (("begin", q.array_values(op.begin)), ("size", op.output.type.get_shape())):
        arr = np.asarray(values, dtype="<i4")
        stype = TensorType(IntegerType(32), [len(arr)])
        const = ConstOp(DenseIntOrFPElementsAttr(stype, BytesAttr(arr.tobytes())), stype)
        const.location = _name_loc(f"{name}/{what}")
        consts.append(const)
    new = SliceOp.create(operands=[op.input, *(c.output for c in consts)],
                         result_types=[op.output.type], properties=SliceOp.properties_from_options({}))
    new.location = op.location
    return [*consts, new]


def _pad_to_tflite(op: q.PadOp) -> list[Operation]:
    """`q.pad` (a PAD the partitioner left on the CPU) as TFLite's PAD (pad value = the output
    zero point) or PADV2 (another pad value)."""
    from qaccel.dialects.quant import element_qparams

    pads = np.asarray(q.array_values(op.padding), dtype=np.int32).reshape(-1, 2)
    i32t = IntegerType(32)
    ptype = TensorType(i32t, list(pads.shape))
    consts = [ConstOp(DenseIntOrFPElementsAttr(ptype, BytesAttr(pads.astype("<i4").tobytes())),
                      ptype)]  # fmt: skip
    name = location_name(op) or "pad"
    consts[0].location = _name_loc(f"{name}/paddings")
    qp = element_qparams(op.output.type)
    pad_value = op.int_prop("pad_value")
    rank = len(op.input.type.get_shape())
    version = 4 if rank > 4 else 3
    if qp is not None and np.size(qp.zero_point) == 1 and int(np.ravel(qp.zero_point)[0]) == pad_value:
        new = _opaque("PAD", _OPCODE_PAD, [op.input, consts[0].output], [op.output.type], version)
    else:
        vtype = TensorType(op.output.type.element_type, [])
        dtype = np.dtype(tensor_dtype(op.output.type))
        raw = np.asarray([pad_value], dtype=dtype).tobytes()
        storage = TensorType(IntegerType(8 * dtype.itemsize), [])
        consts.append(ConstOp(DenseIntOrFPElementsAttr(storage, BytesAttr(raw)), vtype))
        consts[1].location = _name_loc(f"{name}/constant_values")
        new = _opaque("PADV2", _OPCODE_PADV2, [op.input, consts[0].output, consts[1].output],
                      [op.output.type], 2)  # fmt: skip
    new.location = op.location
    return [*consts, new]


def export_aot(compiled: CompiledModel) -> bytes:
    """`model.qaccel.tflite` (see the module docstring); raises AotError."""
    spec = _aot_spec(compiled, None)
    for sg in spec.subgraphs:
        for t in sg.tensors:
            if t.data is not None and t.name.startswith(PROGRAM_PREFIX):
                t.external = True
    spec.description = "qaccel AOT: accelerator functions as QACCEL_VTA custom ops"
    return write_model(spec)


def export_dispatch(compiled: CompiledModel) -> bytes:
    """`model.qaccel.dispatch.tflite` (see the module docstring); raises AotError."""
    bytecodes: dict[str, bytes] = {}
    spec = _aot_spec(compiled, bytecodes)
    spec.description = "qaccel AOT: accelerator functions as LiteRT DISPATCH ops"
    spec.metadata[BUILD_STAMP_KEY] = build_stamp()
    ops = [op for sg in spec.subgraphs for op in sg.operators if op.custom_code == DISPATCH_CODE]
    names = [read_dispatch_options(op.custom_options)["name"] for op in ops]
    # The options' integers are 64-bit whatever their values, so the flatbuffer's size does not
    # depend on where the bytecode goes: a first pass with placeholders tells where it goes.
    head = write_model(spec)
    places, end = {}, len(head)
    for name in names:
        end += -end % BYTECODE_ALIGNMENT
        places[name] = end
        end += len(bytecodes[name])
    for op, name in zip(ops, names):
        op.custom_options = dispatch_options(name, places[name], len(bytecodes[name]))
    data = bytearray(write_model(spec))
    if len(data) != len(head):
        raise AssertionError("dispatch export: the flatbuffer changed size between passes")
    for name in names:
        data += bytes(places[name] - len(data)) + bytecodes[name]
    return bytes(data)


def _aot_spec(compiled: CompiledModel, bytecodes: dict[str, bytes] | None):
    """The AOT model's ModelSpec: QACCEL_VTA ops (`bytecodes` None) or DISPATCH_OPs whose
    programs go to `bytecodes`."""
    module = compiled.module.clone()
    public = public_functions(module)
    if not public:
        raise AotError("the module has no public function")
    entry = public[0]
    used: set[int] = set()
    for op in list(entry.body.block.ops):
        if isinstance(op, func.CallOp) and op.callee.string_value() in compiled.functions:
            for d in _replace_call(compiled, module, op, used, bytecodes):
                if not d.results[0].uses:
                    d.detach()
                    d.erase()
        elif isinstance(op, q.PadOp | q.ReshapeOp | q.SliceOp | q.DepthToSpaceOp):
            new = (_pad_to_tflite(op) if isinstance(op, q.PadOp) else _reshape_to_tflite(op)
                   if isinstance(op, q.ReshapeOp) else _depth_to_space_to_tflite(op)
                   if isinstance(op, q.DepthToSpaceOp) else _slice_to_tflite(op))  # fmt: skip
            entry.body.block.insert_ops_before(new, op)
            op.output.replace_all_uses_with(new[-1].results[0])
            op.detach()
            op.erase()
    for op in list(module.ops):
        if isinstance(op, func.FuncOp) and op.sym_name.data in compiled.functions:
            op.detach()
            op.erase()
    for op in entry.body.block.ops:
        if not isinstance(op, ConstOp | OpaqueOp | func.ReturnOp) and not op.name.startswith("tfl."):
            raise AotError(f"{op.name} in @{entry.sym_name.data} has no TFLite form")
    try:
        return read_model(export_tflite(module))
    except Exception as e:  # the exporter's own one-line messages
        raise AotError(str(e)) from None


def custom_ops(data: bytes) -> list[dict]:
    """The QACCEL_VTA ops or DISPATCH_OPs of an AOT model: name of the first output, program
    (the program tensor's name, or the DISPATCH_OP's function name), program bytes, inputs,
    outputs."""
    spec = read_model(data)
    out = []
    sg = spec.subgraphs[0]
    for op in sg.operators:
        if op.op == "CUSTOM" and op.custom_code == CUSTOM_CODE:
            prog = sg.tensors[op.inputs[-1]]
            out.append({"name": sg.tensors[op.outputs[0]].name, "program": prog.name,
                        "program_bytes": len(prog.data_bytes()), "inputs": len(op.inputs) - 1,
                        "outputs": len(op.outputs)})  # fmt: skip
        elif op.op == "CUSTOM" and op.custom_code == DISPATCH_CODE:
            opts = read_dispatch_options(op.custom_options or b"")
            out.append({"name": sg.tensors[op.outputs[0]].name, "program": opts["name"],
                        "program_bytes": opts["bytecode_size"], "inputs": len(op.inputs),
                        "outputs": len(op.outputs)})  # fmt: skip
    return out


__all__ = ["AOT_FILE", "CUSTOM_CODE", "DISPATCH_CODE", "DISPATCH_FILE", "AotError", "build_stamp",
           "custom_ops", "custom_options", "dispatch_options", "export_aot", "export_dispatch",
           "program_blob", "read_dispatch_options"]  # fmt: skip
