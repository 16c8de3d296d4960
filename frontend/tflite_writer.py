"""Write `.tflite` flatbuffers from plain Python specs (and read them back).

The writer is deliberately dumb: it writes exactly the tensors, operators and subgraphs it is
given, in the layout LiteRT expects (file identifier `TFL3`, schema version 3, buffer 0 the
empty sentinel, one buffer per constant tensor aligned to 16 bytes, operator codes shared by
(op, version, custom_code), each code in both `deprecated_builtin_code` and `builtin_code`).
It never infers shapes or checks semantics: that is LiteRT's job, and tests want to build
models LiteRT will refuse.

    spec = ModelSpec([SubgraphSpec(
        name="main",
        tensors=[TensorSpec("x", (1, 4), np.int8, QParams.per_tensor(0.5, -3)),
                 TensorSpec("y", (1, 4), np.int8, QParams.per_tensor(0.5, -3))],
        inputs=[0], outputs=[1],
        operators=[OperatorSpec("RELU", inputs=[0], outputs=[1])])])
    data: bytes = write_model(spec)
    assert read_model(data) == spec

Constant data is copied once, straight from the numpy buffer into the flatbuffer builder (no
per-element Python work): a 25 MB model takes a few tens of milliseconds.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from qaccel.kernels.qparams import QParams
from qaccel.frontend import tflite_schema as schema

__all__ = [
    "TensorSpec",
    "OperatorSpec",
    "SubgraphSpec",
    "SignatureDefSpec",
    "ModelSpec",
    "write_model",
    "read_model",
]

SCHEMA_VERSION = 3
FILE_IDENTIFIER = b"TFL3"
# Buffer.data is declared `force_align: 16` so that mmapped weights are SIMD-aligned.
_BUFFER_ALIGNMENT = 16
# External buffers (TensorSpec.external) start at file offsets that are multiples of this.
EXTERNAL_ALIGNMENT = 64


@dataclass(eq=False)
class TensorSpec:
    """A tensor of a subgraph. `data` makes it a constant (raw little-endian bytes, or an array
    of the tensor's dtype and size); `dtype` is a numpy dtype or a TensorType member name for
    types numpy lacks ("INT4", "STRING", ...). `shape_signature` marks dynamic dims with -1.
    `external`: the data is stored after the flatbuffer at a 64-byte aligned file offset (the
    buffer's `offset`/`size` fields) instead of inside it, as LiteRT needs for a constant it
    hands to a custom op's kernel without copying."""

    name: str
    shape: tuple[int, ...]
    dtype: Any
    quant: QParams | None = None
    data: bytes | np.ndarray | None = None
    is_variable: bool = False
    shape_signature: tuple[int, ...] | None = None
    external: bool = False

    def __post_init__(self) -> None:
        self.shape = tuple(int(d) for d in self.shape)
        if self.shape_signature is not None:
            self.shape_signature = tuple(int(d) for d in self.shape_signature)
        self.dtype = _normalize_dtype(self.dtype)

    @property
    def type_code(self) -> int:
        return schema.tensor_type_code(self.dtype)

    def data_bytes(self) -> bytes | memoryview | None:
        """The constant's bytes as stored in its buffer (None for a non-constant)."""
        if self.data is None:
            return None
        if isinstance(self.data, (bytes, bytearray, memoryview)):
            return self.data
        arr = np.asarray(self.data)
        if isinstance(self.dtype, np.dtype):
            if arr.dtype != self.dtype:
                raise ValueError(
                    f"tensor {self.name!r}: data has dtype {arr.dtype}, the tensor is {self.dtype}"
                )
            if arr.size != int(np.prod(self.shape, dtype=np.int64)):
                raise ValueError(
                    f"tensor {self.name!r}: data has {arr.size} elements, shape {self.shape} "
                    f"needs {int(np.prod(self.shape, dtype=np.int64))}"
                )
        arr = np.ascontiguousarray(arr, dtype=arr.dtype.newbyteorder("<"))
        return memoryview(arr.reshape(-1).view(np.uint8))

    def array(self) -> np.ndarray | None:
        """The constant's data as an array of its dtype and shape (None for a non-constant)."""
        raw = self.data_bytes()
        if raw is None:
            return None
        if not isinstance(self.dtype, np.dtype):
            raise ValueError(f"tensor {self.name!r} of type {self.dtype} has no numpy view")
        return np.frombuffer(raw, dtype=self.dtype.newbyteorder("<")).reshape(self.shape)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, TensorSpec):
            return NotImplemented
        mine, theirs = self.data_bytes(), other.data_bytes()
        return (
            (self.name, self.shape, self.dtype, self.quant, self.is_variable, self.shape_signature,
             self.external)
            == (other.name, other.shape, other.dtype, other.quant, other.is_variable,
                other.shape_signature, other.external)
            and (mine is None) == (theirs is None)
            and (mine is None or bytes(mine) == bytes(theirs))
        )


@dataclass(eq=False)
class OperatorSpec:
    """An operator: `op` is a BuiltinOperator member name ("CONV_2D"), or "CUSTOM" with
    `custom_code`; inputs/outputs index the subgraph's tensors (-1: omitted optional input);
    `options` as in `tflite_schema` (written to the table `options_table_for(op)` names;
    fields left out take the schema defaults, and equality compares with defaults filled in)."""

    op: str
    inputs: list[int]
    outputs: list[int]
    options: dict[str, Any] = field(default_factory=dict)
    version: int = 1
    custom_code: str | None = None
    custom_options: bytes | None = None
    intermediates: list[int] = field(default_factory=list)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, OperatorSpec):
            return NotImplemented
        return (
            (self.op, list(self.inputs), list(self.outputs), self.version, self.custom_code,
             self.custom_options, list(self.intermediates))
            == (other.op, list(other.inputs), list(other.outputs), other.version,
                other.custom_code, other.custom_options, list(other.intermediates))
            and _options_equal(self._full_options(), other._full_options())
        )

    def _full_options(self) -> dict[str, Any]:
        table = schema.options_table_for(self.op)
        return schema.with_defaults(table, self.options) if table else dict(self.options)


@dataclass
class SubgraphSpec:
    name: str
    tensors: list[TensorSpec]
    inputs: list[int]
    outputs: list[int]
    operators: list[OperatorSpec]


@dataclass
class SignatureDefSpec:
    """A named entry point: signature key, {alias: tensor index} maps, and its subgraph."""

    key: str
    inputs: dict[str, int]
    outputs: dict[str, int]
    subgraph_index: int = 0


@dataclass
class ModelSpec:
    subgraphs: list[SubgraphSpec]
    description: str = "qaccel"
    signature_defs: list[SignatureDefSpec] = field(default_factory=list)
    metadata: dict[str, bytes] = field(default_factory=dict)


def _normalize_dtype(dtype: Any) -> np.dtype | str:
    if isinstance(dtype, str) and dtype in schema.TENSOR_TYPE_CODES:
        mapped = schema.TENSOR_TYPES[schema.TENSOR_TYPE_CODES[dtype]]
        return mapped
    dt = np.dtype(dtype)
    schema.tensor_type_code(dt)  # raises for dtypes TFLite lacks
    return dt


def _options_equal(a: dict, b: dict) -> bool:
    if a.keys() != b.keys():
        return False
    for k, va in a.items():
        vb = b[k]
        if isinstance(va, np.ndarray) or isinstance(vb, np.ndarray):
            va, vb = np.asarray(va), np.asarray(vb)
            if va.dtype != vb.dtype or not np.array_equal(va, vb):
                return False
        elif va != vb:
            return False
    return True


# ---------------------------------------------------------------------------------------------
# Writing


def write_model(spec: ModelSpec) -> bytes:
    """Serialize `spec` to a `.tflite` flatbuffer (then the external tensors' data, if any)."""
    external = [t.data_bytes() for sg in spec.subgraphs for t in sg.tensors
                if t.data is not None and t.external]  # fmt: skip
    if not external:
        return write_flatbuffer(spec, [])
    # Offsets are uint64 scalars: the flatbuffer's size does not depend on their values, so a
    # first pass with placeholders tells where the data goes.
    placeholders = [OFFSET_PLACEHOLDER + i for i in range(len(external))]
    head = write_flatbuffer(spec, [(p, len(d)) for p, d in zip(placeholders, external)])
    blob, places = bytearray(head), []
    for data in external:
        blob += bytes(-len(blob) % EXTERNAL_ALIGNMENT)
        places.append((len(blob), len(data)))
        blob += data
    # Each offset set in place where its placeholder's bytes occur once in the flatbuffer
    # (the field holds them), else the flatbuffer written again with the offsets.
    needles = [struct.pack("<Q", p) for p in placeholders]
    where = [head.find(n) for n in needles]
    if all(at >= 0 and head.find(n, at + 1) < 0 for n, at in zip(needles, where)):
        for at, (offset, _) in zip(where, places):
            struct.pack_into("<Q", blob, at, offset)
        return bytes(blob)
    final = write_flatbuffer(spec, places)
    if len(final) != len(head):
        raise AssertionError("tflite writer: the flatbuffer changed size between passes")
    blob[: len(final)] = final
    return bytes(blob)


OFFSET_PLACEHOLDER = 0x7151_6163_6365_6C00
"""Placeholder offsets of the first pass (distinctive bytes, found once in the flatbuffer)."""


def write_flatbuffer(spec: ModelSpec, places: list[tuple[int, int]]) -> bytes:
    """The flatbuffer; `places`: (offset, size) of each external tensor's data, in order."""
    import flatbuffers

    M = schema.generated_module("Model")
    constants = [t for sg in spec.subgraphs for t in sg.tensors if t.data is not None]
    constant_bytes = [t.data_bytes() for t in constants if not t.external]
    n_tensors = sum(len(sg.tensors) for sg in spec.subgraphs)
    size_hint = sum(len(d) + 2 * _BUFFER_ALIGNMENT for d in constant_bytes) + 256 * n_tensors
    builder = flatbuffers.Builder(min(size_hint + 65536, 2**31 - 1))

    # Buffers: 0 is the empty sentinel, then one per constant in tensor order, then metadata;
    # written first (they are the bulk) so the tables sit together at the front of the file.
    buffer_offsets = [_write_buffer(builder, None)]
    where = iter(places)
    buffer_offsets += [
        _write_buffer(builder, None, next(where)) if t.external
        else _write_buffer(builder, t.data_bytes())
        for t in constants
    ]  # fmt: skip
    metadata_buffers = list(range(len(buffer_offsets), len(buffer_offsets) + len(spec.metadata)))
    buffer_offsets += [_write_buffer(builder, raw) for raw in spec.metadata.values()]

    opcode_index: dict[tuple[str, int, str | None], int] = {}
    for sg in spec.subgraphs:
        for op in sg.operators:
            opcode_index.setdefault((op.op, op.version, op.custom_code), len(opcode_index))

    subgraph_offsets = []
    first_buffer = 1
    for sg_index, sg in enumerate(spec.subgraphs):
        subgraph_offsets.append(_write_subgraph(builder, sg, sg_index, opcode_index, first_buffer))
        first_buffer += sum(t.data is not None for t in sg.tensors)
    opcode_offsets = [_write_operator_code(builder, *key) for key in opcode_index]
    signature_offsets = [_write_signature_def(builder, sig) for sig in spec.signature_defs]
    metadata_offsets = [
        _write_metadata(builder, name, buffer)
        for name, buffer in zip(spec.metadata, metadata_buffers)
    ]

    opcodes_vec = _offset_vector(builder, opcode_offsets)
    subgraphs_vec = _offset_vector(builder, subgraph_offsets)
    buffers_vec = _offset_vector(builder, buffer_offsets)
    signatures_vec = _offset_vector(builder, signature_offsets) if signature_offsets else None
    metadata_vec = _offset_vector(builder, metadata_offsets) if metadata_offsets else None
    description = builder.CreateString(spec.description, errors="surrogateescape")
    M.ModelStart(builder)
    M.ModelAddVersion(builder, SCHEMA_VERSION)
    M.ModelAddOperatorCodes(builder, opcodes_vec)
    M.ModelAddSubgraphs(builder, subgraphs_vec)
    M.ModelAddDescription(builder, description)
    M.ModelAddBuffers(builder, buffers_vec)
    if metadata_vec is not None:
        M.ModelAddMetadata(builder, metadata_vec)
    if signatures_vec is not None:
        M.ModelAddSignatureDefs(builder, signatures_vec)
    builder.Finish(M.ModelEnd(builder), file_identifier=FILE_IDENTIFIER)
    return bytes(memoryview(builder.Bytes)[builder.Head() :])


def _write_buffer(builder, raw, place: tuple[int, int] | None = None) -> int:
    B = schema.generated_module("Buffer")
    data = _aligned_byte_vector(builder, raw) if raw is not None else None
    B.BufferStart(builder)
    if data is not None:
        B.BufferAddData(builder, data)
    if place is not None:  # external data: offset (> 1) and size in the file
        B.BufferAddOffset(builder, place[0])
        B.BufferAddSize(builder, place[1])
    return B.BufferEnd(builder)


def _write_subgraph(builder, sg: SubgraphSpec, sg_index: int, opcode_index, first_buffer: int) -> int:
    SG = schema.generated_module("SubGraph")
    tensor_offsets = []
    buffer = first_buffer
    for t in sg.tensors:
        tensor_offsets.append(_write_tensor(builder, t, buffer if t.data is not None else 0))
        buffer += t.data is not None
    operator_offsets = [
        _write_operator(builder, op, opcode_index[(op.op, op.version, op.custom_code)],
                        f"subgraph {sg_index} operator {i} ({op.op})")
        for i, op in enumerate(sg.operators)
    ]
    tensors_vec = _offset_vector(builder, tensor_offsets)
    operators_vec = _offset_vector(builder, operator_offsets)
    inputs_vec = builder.CreateNumpyVector(np.asarray(sg.inputs, dtype=np.int32).reshape(-1))
    outputs_vec = builder.CreateNumpyVector(np.asarray(sg.outputs, dtype=np.int32).reshape(-1))
    name = builder.CreateString(sg.name, errors="surrogateescape")
    SG.SubGraphStart(builder)
    SG.SubGraphAddTensors(builder, tensors_vec)
    SG.SubGraphAddInputs(builder, inputs_vec)
    SG.SubGraphAddOutputs(builder, outputs_vec)
    SG.SubGraphAddOperators(builder, operators_vec)
    SG.SubGraphAddName(builder, name)
    return SG.SubGraphEnd(builder)


def _write_operator_code(builder, op_name: str, version: int, custom_code: str | None) -> int:
    OC = schema.generated_module("OperatorCode")
    code = schema.BUILTIN_OPERATOR_CODES.get(op_name)
    if code is None:
        raise ValueError(f"unknown operator {op_name!r} (not a BuiltinOperator member)")
    custom = builder.CreateString(custom_code, errors="surrogateescape") if custom_code is not None else None
    OC.OperatorCodeStart(builder)
    # Readers take max(deprecated_builtin_code, builtin_code); the byte-sized field saturates
    # at 127 (PLACEHOLDER_FOR_GREATER_OP_CODES) for newer operators.
    OC.OperatorCodeAddDeprecatedBuiltinCode(builder, min(code, 127))
    if custom is not None:
        OC.OperatorCodeAddCustomCode(builder, custom)
    OC.OperatorCodeAddVersion(builder, version)
    OC.OperatorCodeAddBuiltinCode(builder, code)
    return OC.OperatorCodeEnd(builder)


def _write_signature_def(builder, sig: SignatureDefSpec) -> int:
    SD, TM = schema.generated_module("SignatureDef"), schema.generated_module("TensorMap")
    maps = []
    for aliases in (sig.inputs, sig.outputs):
        entries = []
        for alias, index in aliases.items():
            alias_off = builder.CreateString(alias, errors="surrogateescape")
            TM.TensorMapStart(builder)
            TM.TensorMapAddName(builder, alias_off)
            TM.TensorMapAddTensorIndex(builder, index)
            entries.append(TM.TensorMapEnd(builder))
        maps.append(_offset_vector(builder, entries))
    key = builder.CreateString(sig.key, errors="surrogateescape")
    SD.SignatureDefStart(builder)
    SD.SignatureDefAddInputs(builder, maps[0])
    SD.SignatureDefAddOutputs(builder, maps[1])
    SD.SignatureDefAddSignatureKey(builder, key)
    SD.SignatureDefAddSubgraphIndex(builder, sig.subgraph_index)
    return SD.SignatureDefEnd(builder)


def _write_metadata(builder, name: str, buffer: int) -> int:
    MD = schema.generated_module("Metadata")
    name_off = builder.CreateString(name, errors="surrogateescape")
    MD.MetadataStart(builder)
    MD.MetadataAddName(builder, name_off)
    MD.MetadataAddBuffer(builder, buffer)
    return MD.MetadataEnd(builder)


def _aligned_byte_vector(builder, raw) -> int:
    """Like Builder.CreateByteVector, but 16-byte aligned and without an intermediate copy."""
    raw = memoryview(raw).cast("B")
    n = len(raw)
    builder.StartVector(1, n, _BUFFER_ALIGNMENT)
    builder.head -= n
    builder.Bytes[builder.head : builder.head + n] = raw
    return builder.EndVector()


def _offset_vector(builder, offsets: list[int]) -> int:
    builder.StartVector(4, len(offsets), 4)
    for off in reversed(offsets):
        builder.PrependUOffsetTRelative(off)
    return builder.EndVector()


def _write_tensor(builder, t: TensorSpec, buffer: int) -> int:
    T = schema.generated_module("Tensor")
    shape = builder.CreateNumpyVector(np.asarray(t.shape, dtype=np.int32).reshape(-1))
    signature = None
    if t.shape_signature is not None:
        signature = builder.CreateNumpyVector(np.asarray(t.shape_signature, dtype=np.int32))
    name = builder.CreateString(t.name, errors="surrogateescape")
    quant = _write_quantization(builder, t.quant) if t.quant is not None else None
    T.TensorStart(builder)
    T.TensorAddShape(builder, shape)
    T.TensorAddType(builder, t.type_code)
    T.TensorAddBuffer(builder, buffer)
    T.TensorAddName(builder, name)
    if quant is not None:
        T.TensorAddQuantization(builder, quant)
    T.TensorAddIsVariable(builder, bool(t.is_variable))
    if signature is not None:
        T.TensorAddShapeSignature(builder, signature)
    return T.TensorEnd(builder)


def _write_quantization(builder, q: QParams) -> int:
    Q = schema.generated_module("QuantizationParameters")
    scale = builder.CreateNumpyVector(np.asarray(q.scale, dtype=np.float32).reshape(-1))
    zero_point = builder.CreateNumpyVector(np.asarray(q.zero_point, dtype=np.int64).reshape(-1))
    Q.QuantizationParametersStart(builder)
    Q.QuantizationParametersAddScale(builder, scale)
    Q.QuantizationParametersAddZeroPoint(builder, zero_point)
    Q.QuantizationParametersAddQuantizedDimension(builder, q.axis or 0)
    return Q.QuantizationParametersEnd(builder)


def _write_operator(builder, op: OperatorSpec, opcode_index: int, where: str) -> int:
    O = schema.generated_module("Operator")
    table = schema.options_table_for(op.op)
    options = None
    if table is not None:
        try:
            options = schema.encode_options(builder, table, op.options)
        except ValueError as err:
            raise ValueError(f"{where}: {err}") from None
    elif op.options:
        raise ValueError(f"{where}: {op.op} takes no builtin options, got {sorted(op.options)}")
    inputs = builder.CreateNumpyVector(np.asarray(op.inputs, dtype=np.int32).reshape(-1))
    outputs = builder.CreateNumpyVector(np.asarray(op.outputs, dtype=np.int32).reshape(-1))
    intermediates = None
    if op.intermediates:
        intermediates = builder.CreateNumpyVector(np.asarray(op.intermediates, dtype=np.int32))
    custom = None
    if op.custom_options is not None:
        custom = builder.CreateByteVector(bytes(op.custom_options))
    O.OperatorStart(builder)
    O.OperatorAddOpcodeIndex(builder, opcode_index)
    O.OperatorAddInputs(builder, inputs)
    O.OperatorAddOutputs(builder, outputs)
    if options is not None:
        union, type_code = schema.OPTIONS_TABLES[table]
        if union == 1:
            O.OperatorAddBuiltinOptionsType(builder, type_code)
            O.OperatorAddBuiltinOptions(builder, options)
        else:
            O.OperatorAddBuiltinOptions2Type(builder, type_code)
            O.OperatorAddBuiltinOptions2(builder, options)
    if custom is not None:
        O.OperatorAddCustomOptions(builder, custom)
    if intermediates is not None:
        O.OperatorAddIntermediates(builder, intermediates)
    return O.OperatorEnd(builder)


# ---------------------------------------------------------------------------------------------
# Reading back (for round trips and for editing existing models)


def read_model(data: bytes) -> ModelSpec:
    """Parse a `.tflite` flatbuffer into a ModelSpec (constant data as zero-copy views of
    `data`). The inverse of write_model for everything write_model writes; other fields
    (sparsity, min/max, debug metadata, >2 GB external buffers) are not represented."""
    M = schema.generated_module("Model")
    if len(data) < 8 or bytes(data[4:8]) != FILE_IDENTIFIER:
        raise ValueError("not a TFLite flatbuffer (file identifier is not TFL3)")
    model = M.Model.GetRootAs(data, 0)
    buffers = []
    external: set[int] = set()
    for i in range(model.BuffersLength()):
        buf = model.Buffers(i)
        if buf.Offset() > 1:  # external data (TensorSpec.external)
            if buf.Offset() + buf.Size() > len(data):
                raise ValueError(f"buffer {i}: external data beyond the end of the file")
            buffers.append(memoryview(data)[buf.Offset() : buf.Offset() + buf.Size()])
            external.add(i)
        elif buf.DataIsNone() or buf.DataLength() == 0:
            buffers.append(None)
        else:
            arr = buf.DataAsNumpy()
            buffers.append(memoryview(arr).cast("B"))
    opcodes = []
    for i in range(model.OperatorCodesLength()):
        oc = model.OperatorCodes(i)
        code = schema.builtin_code(oc)
        name = schema.BUILTIN_OPERATORS.get(code)
        if name is None:
            raise ValueError(f"operator code {code} is not in the schema this build knows")
        custom = oc.CustomCode()
        opcodes.append((name, oc.Version(), custom.decode("utf-8", "surrogateescape") if custom is not None else None))
    subgraphs = [_read_subgraph(model.Subgraphs(i), buffers, opcodes, external)
                 for i in range(model.SubgraphsLength())]
    signatures = []
    for i in range(model.SignatureDefsLength()):
        sd = model.SignatureDefs(i)
        signatures.append(SignatureDefSpec(
            key=(sd.SignatureKey() or b"").decode("utf-8", "surrogateescape"),
            inputs={sd.Inputs(j).Name().decode("utf-8", "surrogateescape"): sd.Inputs(j).TensorIndex()
                    for j in range(sd.InputsLength())},
            outputs={sd.Outputs(j).Name().decode("utf-8", "surrogateescape"): sd.Outputs(j).TensorIndex()
                     for j in range(sd.OutputsLength())},
            subgraph_index=sd.SubgraphIndex(),
        ))
    metadata = {}
    for i in range(model.MetadataLength()):
        md = model.Metadata(i)
        raw = buffers[md.Buffer()]
        metadata[md.Name().decode("utf-8", "surrogateescape")] = bytes(raw) if raw is not None else b""
    description = model.Description()
    return ModelSpec(subgraphs, description.decode("utf-8", "surrogateescape") if description is not None else "",
                     signatures, metadata)


def _read_subgraph(sg, buffers, opcodes, external=frozenset()) -> SubgraphSpec:
    tensors = []
    for i in range(sg.TensorsLength()):
        t = sg.Tensors(i)
        code = t.Type()
        dtype = schema.TENSOR_TYPES.get(code)
        if dtype is None:
            raise ValueError(f"tensor {i}: type {code} is not in the schema this build knows")
        name = t.Name()
        signature = None if t.ShapeSignatureIsNone() else tuple(t.ShapeSignatureAsNumpy().tolist())
        raw = buffers[t.Buffer()] if t.Buffer() < len(buffers) else None
        tensors.append(TensorSpec(
            name=name.decode("utf-8", "surrogateescape") if name is not None else "",
            shape=tuple(t.ShapeAsNumpy().tolist()) if not t.ShapeIsNone() else (),
            dtype=dtype,
            quant=_read_quantization(t.Quantization()),
            data=raw,
            is_variable=t.IsVariable(),
            shape_signature=signature,
            external=t.Buffer() in external,
        ))
    operators = []
    for i in range(sg.OperatorsLength()):
        o = sg.Operators(i)
        op, version, custom_code = opcodes[o.OpcodeIndex()]
        operators.append(OperatorSpec(
            op=op,
            inputs=o.InputsAsNumpy().tolist() if not o.InputsIsNone() else [],
            outputs=o.OutputsAsNumpy().tolist() if not o.OutputsIsNone() else [],
            options=schema.decode_options(o),
            version=version,
            custom_code=custom_code,
            custom_options=o.CustomOptionsAsNumpy().tobytes() if not o.CustomOptionsIsNone() else None,
            intermediates=o.IntermediatesAsNumpy().tolist() if not o.IntermediatesIsNone() else [],
        ))
    name = sg.Name()
    return SubgraphSpec(
        name=name.decode("utf-8", "surrogateescape") if name is not None else "",
        tensors=tensors,
        inputs=sg.InputsAsNumpy().tolist() if not sg.InputsIsNone() else [],
        outputs=sg.OutputsAsNumpy().tolist() if not sg.OutputsIsNone() else [],
        operators=operators,
    )


def _read_quantization(q) -> QParams | None:
    if q is None or q.ScaleIsNone() or q.ScaleLength() == 0:
        return None
    scale = q.ScaleAsNumpy().astype(np.float32)
    zero_point = (q.ZeroPointAsNumpy().astype(np.int64) if not q.ZeroPointIsNone()
                  else np.zeros(len(scale), np.int64))
    axis = q.QuantizedDimension()
    if len(scale) > 1 or axis != 0:
        return QParams(scale, zero_point, axis)
    return QParams(scale, zero_point, None)
