"""Accelerator programs for LiteRT, their ops, and the host IR's export in two flavours.

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

The program of each accelerator function (`backends/vta/program/writer.py`, `program_blob`,
where its format is documented, run by the one program runner `qaccel_program.c` beside it)
holds everything the function needs, packing of its plain inputs and unpacking of its plain
outputs included; a function the runner cannot run (a host op it does not implement, e.g. a GEMM
op left on the host) is not exported (`AotError`, one line naming the op).

Ops of the entry function other than the accelerator calls must be `tfl` ops, except `q.pad`
(a PAD the partitioner kept on the CPU), written as TFLite PAD (PADV2 when its pad value is not
the zero point), `q.reshape`, written as RESHAPE with a constant shape, and `q.slice`, written
as SLICE.
"""

from __future__ import annotations

import struct

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
from xdsl.ir import Operation

from qaccel.backends.vta.compiled import CompiledModel
from qaccel.backends.vta.program.writer import ProgramWriteError, program_blob
from qaccel.dialects import accel, q
from qaccel.dialects.names import location_name, public_functions
from qaccel.dialects.tfl import ConstOp, OpaqueOp, py_to_attr
from qaccel.dialects.types import tensor_dtype
from qaccel.frontend.tflite_export import export_tflite
from qaccel.frontend.tflite_writer import read_model, write_model

from qaccel.backends.litert.names import (  # re-exported: the names of the export
    AOT_FILE,
    CUSTOM_CODE,
    DISPATCH_CODE,
    DISPATCH_FILE,
)

CUSTOM_VERSION = 1
CUSTOM_MAGIC = b"QVTA"
OPTIONS_VERSION = 1
PROGRAM_PREFIX = "qaccel_program_"
BUILD_STAMP_KEY = "LiteRtStamp"  # metadata marking a model as compiled for a SoC
SOC_MANUFACTURER, SOC_MODEL = "Qaccel", "VTA"
BYTECODE_ALIGNMENT = 64
_OPCODE_CUSTOM, _OPCODE_PAD, _OPCODE_PADV2 = 32, 34, 60


class AotError(Exception):
    """The model cannot be exported for LiteRT (one line for the user)."""


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
    try:
        blob = program_blob(compiled, name, f, inputs, outputs)
    except ProgramWriteError as e:
        raise AotError(str(e)) from None
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


def _resize_to_tflite(op: q.ResizeNearestNeighborOp | q.ResizeBilinearOp) -> list[Operation]:
    """`q.resize_nearest_neighbor` / `q.resize_bilinear` (left on the CPU) as TFLite's
    RESIZE_NEAREST_NEIGHBOR / RESIZE_BILINEAR with a constant size."""
    from qaccel.dialects.tfl import ResizeBilinearOp, ResizeNearestNeighborOp

    kind = ResizeBilinearOp if isinstance(op, q.ResizeBilinearOp) else ResizeNearestNeighborOp
    size = np.asarray(op.output.type.get_shape()[1:3], dtype="<i4")
    stype = TensorType(IntegerType(32), [2])
    const = ConstOp(DenseIntOrFPElementsAttr(stype, BytesAttr(size.tobytes())), stype)
    const.location = _name_loc(f"{location_name(op) or 'resize'}/size")
    align_corners, half_pixel_centers = op.flags()
    new = kind.create(operands=[op.input, const.output], result_types=[op.output.type],
                      properties=kind.properties_from_options(
                          {"align_corners": align_corners,
                           "half_pixel_centers": half_pixel_centers}))  # fmt: skip
    new.location = op.location
    return [const, new]


def _attention_to_tflite(op: q.TransposeOp | q.SoftmaxOp | q.BatchMatmulOp) -> list[Operation]:
    """`q.transpose` (TRANSPOSE with a constant permutation), `q.softmax` (SOFTMAX with its
    beta) and `q.batch_matmul` (BATCH_MATMUL) left on the CPU, as TFLite's."""
    from qaccel.dialects import tfl

    if isinstance(op, q.TransposeOp):
        perm = np.asarray(q.array_values(op.perm), dtype="<i4")
        ptype = TensorType(IntegerType(32), [len(perm)])
        const = ConstOp(DenseIntOrFPElementsAttr(ptype, BytesAttr(perm.tobytes())), ptype)
        const.location = _name_loc(f"{location_name(op) or 'transpose'}/perm")
        new = tfl.TransposeOp.create(operands=[op.input, const.output],
                                     result_types=[op.output.type],
                                     properties=tfl.TransposeOp.properties_from_options({}))
        new.location = op.location
        return [const, new]
    if isinstance(op, q.SoftmaxOp):
        beta = op.properties.get("beta")
        if beta is None:
            raise AotError(f"{op.name} without its beta has no TFLite form")
        new = tfl.SoftmaxOp.create(operands=[op.input], result_types=[op.output.type],
                                   properties=tfl.SoftmaxOp.properties_from_options(
                                       {"beta": beta.value.data}))  # fmt: skip
        new.location = op.location
        return [new]
    new = tfl.BatchMatMulOp.create(
        operands=[op.lhs, op.rhs], result_types=[op.output.type],
        properties=tfl.BatchMatMulOp.properties_from_options(
            {"adj_x": bool(op.int_prop("adj_x")), "adj_y": bool(op.int_prop("adj_y")),
             "asymmetric_quantize_inputs": False}))  # fmt: skip
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
        elif isinstance(op, q.TransposeOp | q.SoftmaxOp | q.BatchMatmulOp):
            new = _attention_to_tflite(op)
            entry.body.block.insert_ops_before(new, op)
            op.output.replace_all_uses_with(new[-1].results[0])
            op.detach()
            op.erase()
        elif isinstance(op, q.ResizeNearestNeighborOp | q.ResizeBilinearOp):
            new = _resize_to_tflite(op)
            entry.body.block.insert_ops_before(new, op)
            op.output.replace_all_uses_with(new[-1].results[0])
            op.detach()
            op.erase()
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
           "read_dispatch_options"]  # fmt: skip
