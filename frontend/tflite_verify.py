"""A structural verifier of `.tflite` flatbuffers, run before the importer reads any field.

The generated flatbuffer readers trust every offset: a mutated file makes them read past the
end (IndexError, struct.error) or, worse, read garbage from elsewhere in the file and import a
model that LiteRT's verifier (`tflite::VerifyModelBuffer`) rejects. This module checks what
that verifier (flatbuffers::Verifier) checks, no more, for the tables qaccel reads: every
offset is non-zero and points inside the buffer, every table's vtable lies inside it with an
even size, every present field fits, every vector's length keeps it inside the buffer, every
string is NUL-terminated, scalars, offsets and vector lengths are aligned to their size, and
tables nest at most 64 deep; and the schema version is 3, the only one LiteRT reads. Union
members (the builtin options, quantization details, sparsity) are checked as tables whose fields
are unknown here (their decoders report bad fields).

    verify_model(data, "m.tflite")   # TFLiteImportError: m.tflite: subgraph 0: tensor 3: ...

The cross-references (buffer, tensor, opcode and subgraph indices) are checked by the importer
where it uses them.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from qaccel.frontend.errors import TFLiteImportError

_MAX_DEPTH = 64  # flatbuffers::Verifier's default max_depth
_MAX_TABLES = 1_000_000  # ... and max_tables


@dataclass(frozen=True)
class _Table:
    """A table's fields by vtable offset: an int is a scalar's size in bytes; "str" a
    string; ("vec", n) a vector of n-byte scalars; ("tables", T) a vector of tables T;
    ("table", T) a table; "any" a table of unknown type (a union member)."""

    name: str
    fields: dict


_ANY = _Table("table", {})
_TENSOR_MAP = _Table("TensorMap", {4: "str", 6: 4})
_SIGNATURE_DEF = _Table(
    "SignatureDef", {4: ("tables", _TENSOR_MAP), 6: ("tables", _TENSOR_MAP), 8: "str", 12: 4}
)
_METADATA = _Table("Metadata", {4: "str", 6: 4})
_BUFFER = _Table("Buffer", {4: ("vec", 1), 6: 8, 8: 8})
_QUANTIZATION = _Table(
    "QuantizationParameters",
    {4: ("vec", 4), 6: ("vec", 4), 8: ("vec", 4), 10: ("vec", 8), 12: 1, 14: "any", 16: 4},
)
_TENSOR = _Table(
    "Tensor",
    {4: ("vec", 4), 6: 1, 8: 4, 10: "str", 12: ("table", _QUANTIZATION), 14: 1, 16: "any",
     18: ("vec", 4), 20: 1, 22: ("tables", _ANY)},
)  # fmt: skip
_OPERATOR = _Table(
    "Operator",
    {4: 4, 6: ("vec", 4), 8: ("vec", 4), 10: 1, 12: "any", 14: ("vec", 1), 16: 1,
     18: ("vec", 1), 20: ("vec", 4), 22: 8, 24: 8, 26: 1, 28: "any", 30: 4},
)  # fmt: skip
_SUBGRAPH = _Table(
    "SubGraph",
    {4: ("tables", _TENSOR), 6: ("vec", 4), 8: ("vec", 4), 10: ("tables", _OPERATOR),
     12: "str", 14: 4},
)  # fmt: skip
_OPERATOR_CODE = _Table("OperatorCode", {4: 1, 6: "str", 8: 4, 10: 4})
_MODEL = _Table(
    "Model",
    {4: 4, 6: ("tables", _OPERATOR_CODE), 8: ("tables", _SUBGRAPH), 10: "str",
     12: ("tables", _BUFFER), 14: ("vec", 4), 16: ("tables", _METADATA),
     18: ("tables", _SIGNATURE_DEF)},
)  # fmt: skip


class _Verifier:
    def __init__(self, data: bytes, source: str):
        self.data = data
        self.size = len(data)
        self.source = source
        self.tables = 0

    def fail(self, path: list[str], message: str):
        where = ": ".join([self.source, *path]) if path else self.source
        raise TFLiteImportError(f"{where}: truncated or malformed flatbuffer: {message}")

    def u16(self, pos: int) -> int:
        return struct.unpack_from("<H", self.data, pos)[0]

    def u32(self, pos: int) -> int:
        return struct.unpack_from("<I", self.data, pos)[0]

    def i32(self, pos: int) -> int:
        return struct.unpack_from("<i", self.data, pos)[0]

    def within(self, pos: int, n: int) -> bool:
        return 0 <= pos and pos + n <= self.size

    def aligned(self, pos: int, n: int, path: list[str], what: str) -> None:
        """flatbuffers::Verifier::VerifyAlignment: scalars at multiples of their size."""
        if n in (2, 4, 8) and pos % n:
            self.fail(path, f"{what} at byte {pos} is not aligned to {n} bytes")

    def offset_target(self, pos: int, path: list[str], what: str) -> int:
        if not self.within(pos, 4):
            self.fail(path, f"{what}: offset at byte {pos} lies outside the file")
        self.aligned(pos, 4, path, what)
        offset = self.u32(pos)
        if offset == 0 or offset >= 1 << 31:
            self.fail(path, f"{what}: invalid offset {offset}")
        target = pos + offset
        if target >= self.size:
            self.fail(path, f"{what}: points to byte {target}, past the end ({self.size} bytes)")
        return target

    def vector(self, pos: int, elem: int, path: list[str], what: str) -> tuple[int, int]:
        """(first element, length) of the vector whose offset field is at `pos`."""
        start = self.offset_target(pos, path, what)
        if not self.within(start, 4):
            self.fail(path, f"{what}: vector length at byte {start} lies outside the file")
        self.aligned(start, 4, path, what)
        n = self.u32(start)
        if not self.within(start + 4, n * elem):
            self.fail(path, f"{what}: vector of {n} elements runs past the end of the file")
        return start + 4, n

    def table(self, pos: int, spec: _Table, path: list[str], depth: int) -> None:
        if depth > _MAX_DEPTH:
            self.fail(path, f"tables nested deeper than {_MAX_DEPTH}")
        self.tables += 1
        if self.tables > _MAX_TABLES:
            self.fail(path, f"more than {_MAX_TABLES} tables")
        if not self.within(pos, 4):
            self.fail(path, f"{spec.name} at byte {pos} lies outside the file")
        self.aligned(pos, 4, path, spec.name)
        vtable = pos - self.i32(pos)
        if not self.within(vtable, 4):
            self.fail(path, f"{spec.name}: vtable at byte {vtable} lies outside the file")
        self.aligned(vtable, 2, path, f"{spec.name}: vtable")
        vsize = self.u16(vtable)
        if vsize % 2 or not self.within(vtable, vsize):
            self.fail(path, f"{spec.name}: invalid vtable size {vsize}")
        for slot, kind in spec.fields.items():  # unknown fields are not read, not checked
            if slot >= vsize:
                continue
            off = self.u16(vtable + slot)
            if off == 0:
                continue
            field = f"{spec.name} field {(slot - 4) // 2}"
            size = kind if isinstance(kind, int) else 4
            if not self.within(pos + off, size):
                self.fail(path, f"{field} lies outside the file")
            self.aligned(pos + off, size, path, field)
            if not isinstance(kind, int):
                self.field(pos + off, kind, path, field, depth)

    def field(self, pos: int, kind, path: list[str], what: str, depth: int) -> None:
        if kind == "str":
            start, n = self.vector(pos, 1, path, what)
            if not self.within(start + n, 1) or self.data[start + n] != 0:
                self.fail(path, f"{what}: string is not NUL-terminated")
        elif kind == "any":
            self.table(self.offset_target(pos, path, what), _ANY, path, depth + 1)
        elif kind[0] == "vec":
            self.vector(pos, kind[1], path, what)
        elif kind[0] == "table":
            self.table(self.offset_target(pos, path, what), kind[1], path, depth + 1)
        elif kind[0] == "tables":
            start, n = self.vector(pos, 4, path, what)
            for i in range(n):
                elem = start + 4 * i
                self.table(elem + self.u32(elem), kind[1], [*path, f"{kind[1].name} {i}"],
                           depth + 1)  # fmt: skip


def verify_model(data: bytes, source: str = "<bytes>") -> None:
    """Raise TFLiteImportError (one line) unless `data` is a structurally valid TFLite model."""
    v = _Verifier(bytes(data), source)
    if v.size < 8:
        v.fail([], f"too short to be a TFLite model ({v.size} bytes)")
    if v.size >= 1 << 31:
        v.fail([], "larger than 2 GiB (flatbuffers address at most 2 GiB)")
    root = v.offset_target(0, [], "root table")
    v.table(root, _MODEL, [], 1)
    version = tflite_model_version(data, root)
    if version != SCHEMA_VERSION:
        v.fail([], f"schema version {version}, expected {SCHEMA_VERSION}")


SCHEMA_VERSION = 3  # the only one LiteRT reads ("Model provided is schema version ...")


def tflite_model_version(data: bytes, root: int) -> int:
    """Model.version (vtable offset 4), 0 when absent; `data` already verified."""
    vtable = root - struct.unpack_from("<i", data, root)[0]
    vsize = struct.unpack_from("<H", data, vtable)[0]
    off = struct.unpack_from("<H", data, vtable + 4)[0] if vsize > 4 else 0
    return struct.unpack_from("<I", data, root + off)[0] if off else 0


__all__ = ["verify_model"]
