"""The fields of a subgraph's tensors that the importer reads for every tensor, read straight
from the flatbuffer's bytes.

The generated `tflite` readers go through flatbuffers' generic `Table` for every field (a
vtable lookup, a checked scalar read and an object per nested table): for MobileNetV2's 173
tensors, reading their names, shapes, types, buffers and quantization took about as long as
building their xDSL types. These are the same reads (flatbuffers' vtable rule: a field the
vtable does not reach, or whose slot is 0, is absent and takes its default) done with
`struct` and `numpy.frombuffer`. Only for bytes `tflite_verify.verify_model` accepted: every
table, field and vector read here is then known to lie inside the buffer.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

import numpy as np

_U16 = struct.Struct("<H").unpack_from
_I32 = struct.Struct("<i").unpack_from
_U32 = struct.Struct("<I").unpack_from
_I8 = struct.Struct("<b").unpack_from

_INT32 = np.dtype("<i4")
_FLOAT32 = np.dtype("<f4")
_INT64 = np.dtype("<i8")

# Tensor's and QuantizationParameters' fields by vtable slot (tflite's schema.fbs).
_SHAPE, _TYPE, _BUFFER, _NAME, _QUANTIZATION, _SHAPE_SIGNATURE = 4, 6, 8, 10, 12, 18
_SCALE, _ZERO_POINT, _QUANTIZED_DIMENSION = 8, 10, 16


@dataclass(frozen=True, slots=True)
class TensorFields:
    """What `tflite.Tensor` would answer: `Name()`, `ShapeAsNumpy()` (empty when absent),
    `Type()`, `Buffer()`; and, when the tensor has quantization parameters with scales,
    `ScaleAsNumpy()`, `ZeroPointAsNumpy()` (None when it has none) and
    `QuantizedDimension()`; `dynamic`: whether its `ShapeSignatureAsNumpy()` has a
    dimension below 0 (one known only at run time)."""

    name: bytes | None
    shape: np.ndarray
    type: int
    buffer: int
    scales: np.ndarray | None
    zero_points: np.ndarray | None
    quantized_dimension: int
    dynamic: bool = False


class _Table:
    __slots__ = ("data", "pos", "vtable", "vsize")

    def __init__(self, data, pos: int):
        self.data, self.pos = data, pos
        self.vtable = pos - _I32(data, pos)[0]
        self.vsize = _U16(data, self.vtable)[0]

    def at(self, slot: int) -> int:
        """The field's position in the buffer, 0 when absent."""
        if slot >= self.vsize:
            return 0
        off = _U16(self.data, self.vtable + slot)[0]
        return self.pos + off if off else 0

    def vector(self, slot: int, dtype: np.dtype) -> np.ndarray | None:
        at = self.at(slot)
        if not at:
            return None
        start = at + _U32(self.data, at)[0]
        n = _U32(self.data, start)[0]
        return np.frombuffer(self.data, dtype=dtype, count=n, offset=start + 4)

    def table(self, slot: int) -> _Table | None:
        at = self.at(slot)
        return _Table(self.data, at + _U32(self.data, at)[0]) if at else None


_NO_SHAPE = np.zeros(0, np.int32)


def tensor_fields(data, graph_pos: int) -> list[TensorFields]:
    """Every tensor of the subgraph table at `graph_pos` (`SubGraph._tab.Pos`), in order."""
    return [_tensor(data, pos) for pos in _tables(data, _Table(data, graph_pos).at(_TENSORS))]


def _tables(data, at: int) -> list[int]:
    """The positions of the tables of the vector of tables whose offset field is at `at`
    (none when the field is absent, `at` 0)."""
    if not at:
        return []
    start = at + _U32(data, at)[0]
    return [elem + _U32(data, elem)[0]
            for elem in range(start + 4, start + 4 + 4 * _U32(data, start)[0], 4)]  # fmt: skip


def _tensor(data, pos: int) -> TensorFields:
    t = _Table(data, pos)
    name_at = t.at(_NAME)
    name = None
    if name_at:
        start = name_at + _U32(data, name_at)[0]
        name = bytes(data[start + 4 : start + 4 + _U32(data, start)[0]])
    shape = t.vector(_SHAPE, _INT32)
    signature = t.vector(_SHAPE_SIGNATURE, _INT32)
    type_at, buffer_at = t.at(_TYPE), t.at(_BUFFER)
    scales = zero_points = None
    dimension = 0
    quant = t.table(_QUANTIZATION)
    if quant is not None:
        scales = quant.vector(_SCALE, _FLOAT32)
        if scales is not None and len(scales):
            zero_points = quant.vector(_ZERO_POINT, _INT64)
            dim_at = quant.at(_QUANTIZED_DIMENSION)
            dimension = _I32(data, dim_at)[0] if dim_at else 0
        else:
            scales = None
    return TensorFields(
        name=name,
        shape=_NO_SHAPE if shape is None or len(shape) == 0 else shape,
        type=_I8(data, type_at)[0] if type_at else 0,
        buffer=_U32(data, buffer_at)[0] if buffer_at else 0,
        scales=scales,
        zero_points=zero_points,
        quantized_dimension=dimension,
        dynamic=signature is not None and bool((signature < 0).any()),
    )


_U64 = struct.Struct("<Q").unpack_from
# Model.buffers; Buffer's fields (data, offset, size) by vtable slot.
_BUFFERS = 12
_DATA, _OFFSET, _SIZE = 4, 6, 8


def buffer_fields(data, model_pos: int, index: int) -> tuple[int, int, int, int]:
    """What `Model.Buffers(index)` would answer: `(Offset(), Size(), start, length)`, the
    last two the position and length of its `Data()` vector in `data` (0, 0 when absent).
    `index` must be a buffer of the model."""
    model = _Table(data, model_pos)
    at = model.at(_BUFFERS)
    start = at + _U32(data, at)[0]
    elem = start + 4 + 4 * index
    buffer = _Table(data, elem + _U32(data, elem)[0])
    offset_at, size_at, data_at = buffer.at(_OFFSET), buffer.at(_SIZE), buffer.at(_DATA)
    vector = length = 0
    if data_at:
        vector = data_at + _U32(data, data_at)[0]
        length = _U32(data, vector)[0]
        vector += 4
    return (_U64(data, offset_at)[0] if offset_at else 0, _U64(data, size_at)[0] if size_at else 0,
            vector, length)  # fmt: skip


# Operator's fields by vtable slot: opcode_index, inputs, outputs, builtin_options (type, table),
# custom_options, builtin_options_2 (type, table).
_OPCODE_INDEX, _INPUTS, _OUTPUTS, _OPTIONS_TYPE, _OPTIONS = 4, 6, 8, 10, 12
_CUSTOM_OPTIONS, _OPTIONS_2_TYPE, _OPTIONS_2 = 14, 26, 28
_U8 = struct.Struct("<B").unpack_from


class OperatorFields:
    """What `tflite.Operator` would answer: `OpcodeIndex()`, `InputsAsNumpy()` and
    `OutputsAsNumpy()` as lists (empty when absent), `BuiltinOptionsType()` and
    `BuiltinOptions2Type()` with the position of each options table (0 when absent: the
    generated `BuiltinOptions()` gives None), `CustomOptionsAsNumpy()` as bytes (b"" when
    absent or empty)."""

    __slots__ = ("opcode_index", "inputs", "outputs", "options_type", "options_pos",
                 "options_2_type", "options_2_pos", "custom_options")  # fmt: skip

    def __init__(self, data, pos: int):
        t = _Table(data, pos)
        at = t.at(_OPCODE_INDEX)
        self.opcode_index = _U32(data, at)[0] if at else 0
        self.inputs = _int_list(t.vector(_INPUTS, _INT32))
        self.outputs = _int_list(t.vector(_OUTPUTS, _INT32))
        self.options_type, self.options_pos = _union(t, _OPTIONS_TYPE, _OPTIONS)
        self.options_2_type, self.options_2_pos = _union(t, _OPTIONS_2_TYPE, _OPTIONS_2)
        custom = t.vector(_CUSTOM_OPTIONS, np.dtype(np.uint8))
        self.custom_options = b"" if custom is None else custom.tobytes()


def _int_list(vector: np.ndarray | None) -> list[int]:
    return [] if vector is None else vector.tolist()


def _union(t: _Table, type_slot: int, value_slot: int) -> tuple[int, int]:
    at = t.at(type_slot)
    kind = _U8(t.data, at)[0] if at else 0
    at = t.at(value_slot)
    return kind, (at + _U32(t.data, at)[0] if at else 0)


def operator_fields(data, graph_pos: int) -> list[OperatorFields]:
    """Every operator of the subgraph table at `graph_pos` (`SubGraph._tab.Pos`), in order."""
    return [OperatorFields(data, pos)
            for pos in _tables(data, _Table(data, graph_pos).at(_OPERATORS))]  # fmt: skip


_TENSORS, _OPERATORS = 4, 10  # SubGraph.tensors, SubGraph.operators


__all__ = ["OperatorFields", "TensorFields", "buffer_fields", "operator_fields", "tensor_fields"]
