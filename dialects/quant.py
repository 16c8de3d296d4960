"""The `quant` dialect: uniform quantized element types in the style of MLIR's `quant` dialect.

Per-tensor and per-axis affine quantization, usable as a tensor element type:

    tensor<1x32x32x3x!quant.uniform<i8:f32, 0.0078431377:-1>>
    tensor<16x3x3x3x!quant.uniform<i8:f32:0, {0.1:0, 0.2:0, ...}>>

The storage type is one of `i8`, `u8`, `i16`, `u16`, `i32`, `u32`, `i64`, `u64`: every integer
tensor type a TFLite model can quantize (int8 activations and weights, uint8 legacy models,
int16 activations and the int64 biases of int16x8 models, int32 biases), so any IR qaccel
prints parses back; the expressed type is `f32`. Scales are
kept as TFLite's float32 values and printed in their shortest float32 form, so a
print-parse round trip is exact.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
import numpy as np
from xdsl.dialects.builtin import (
    ArrayAttr,
    BytesAttr,
    DenseArrayBase,
    Float32Type,
    IntAttr,
    IntegerType,
    Signedness,
    TensorType,
    f32,
    f64,
    i64,
)
from xdsl.ir import Attribute, Dialect, ParametrizedAttribute, TypeAttribute
from xdsl.irdl import irdl_attr_definition
from xdsl.parser import AttrParser
from xdsl.printer import Printer
from xdsl.utils.exceptions import VerifyException

from qaccel.kernels.qparams import QParams

_STORAGE_NAMES = {
    f"{'i' if signed else 'u'}{width}": (width, signed)
    for width in (8, 16, 32, 64) for signed in (True, False)
}  # fmt: skip
_STORAGE_TEXT = "i8, u8, i16, u16, i32, u32, i64 or u64"


def storage_range(storage: IntegerType) -> tuple[int, int]:
    """The representable range of a storage type (signless counts as signed, as in MLIR)."""
    width = storage.width.data
    if storage.signedness.data == Signedness.UNSIGNED:
        return 0, (1 << width) - 1
    return -(1 << (width - 1)), (1 << (width - 1)) - 1


def _storage_name(storage: IntegerType) -> str:
    unsigned = storage.signedness.data == Signedness.UNSIGNED
    return f"{'u' if unsigned else 'i'}{storage.width.data}"


def _format_scale(scale: np.float32) -> str:
    """The shortest text that parses back to the same float32 (the lexer needs a '.')."""
    if 1e-4 <= scale < 1e6:
        return np.format_float_positional(scale, unique=True, trim="0")
    return np.format_float_scientific(scale, unique=True, trim="0")


@functools.lru_cache(maxsize=4096)
def _parameters_text(storage: str, axis: int, scale_bytes: bytes, zp_bytes: bytes) -> str:
    """`<i8:f32, scale:zp>` or `<i8:f32:axis, {scale:zp, ...}>`: the type's parameters as
    text, once per distinct type (a model prints the same per-channel types many times, and
    formatting each float32 shortest is most of the cost)."""
    scale = np.frombuffer(scale_bytes, dtype=np.float32)
    zero_point = np.frombuffer(zp_bytes, dtype=np.int64)
    head = f"<{storage}:f32"
    if axis < 0:
        return f"{head}, {_format_scale(scale[0])}:{zero_point[0]}>"
    pairs = ", ".join(f"{_format_scale(s)}:{z}" for s, z in zip(scale, zero_point, strict=True))
    return f"{head}:{axis}, {{{pairs}}}>"


@functools.lru_cache(maxsize=64)
def _axis_attr(axis: int) -> IntAttr:
    return IntAttr(axis)


@functools.lru_cache(maxsize=4096)
def _zero_points_attr(zp_bytes: bytes) -> DenseArrayBase:
    """The zero points' array attribute, made once per distinct row (attributes are
    immutable values; a model repeats a few rows, e.g. -128 or a row of zeros, many times)."""
    return DenseArrayBase(i64, BytesAttr(zp_bytes))


@irdl_attr_definition
class UniformQuantizedType(ParametrizedAttribute, TypeAttribute):
    """Affine quantization `real = scale * (stored - zero_point)`, per tensor or per axis.

    `axis` is -1 for per-tensor quantization (one scale and zero point) and the quantized
    dimension otherwise (one scale and zero point per slice of that dimension).
    """

    name = "quant.uniform"

    storage_type: IntegerType
    expressed_type: Float32Type
    axis: IntAttr
    scales: DenseArrayBase
    zero_points: DenseArrayBase

    def __init__(
        self,
        storage_type: IntegerType,
        scales: Sequence[float] | np.ndarray,
        zero_points: Sequence[int] | np.ndarray,
        axis: int = -1,
    ):
        scale_bytes = np.asarray(scales, dtype=np.float32).reshape(-1).tobytes()
        zp_bytes = np.asarray(zero_points, dtype=np.int64).reshape(-1).tobytes()
        super().__init__(
            storage_type,
            f32,
            _axis_attr(int(axis)),
            DenseArrayBase(f32, BytesAttr(scale_bytes)),
            _zero_points_attr(zp_bytes),
        )

    @staticmethod
    def from_qparams(storage_type: IntegerType, q: QParams) -> UniformQuantizedType:
        return UniformQuantizedType(
            storage_type, q.scale, q.zero_point, -1 if q.axis is None else q.axis
        )

    @property
    def qparams(self) -> QParams:
        scale = np.frombuffer(self.scales.data.data, dtype=np.float32)
        zero_point = np.frombuffer(self.zero_points.data.data, dtype=np.int64)
        axis = self.axis.data
        return QParams(scale, zero_point, None if axis < 0 else axis)

    @property
    def is_per_axis(self) -> bool:
        return self.axis.data >= 0

    def verify(self) -> None:
        if _storage_name(self.storage_type) not in _STORAGE_NAMES:
            raise VerifyException(f"quant.uniform: storage type must be {_STORAGE_TEXT}")
        if self.scales.elt_type != f32 or self.zero_points.elt_type != i64:
            raise VerifyException("quant.uniform: scales must be f32 and zero points i64")
        q = self.qparams
        if len(q.scale) == 0 or len(q.scale) != len(q.zero_point):
            raise VerifyException(
                f"quant.uniform: {len(q.scale)} scales but {len(q.zero_point)} zero points"
            )
        if not self.is_per_axis and len(q.scale) != 1:
            raise VerifyException("quant.uniform: per-tensor quantization has one scale")
        lo, hi = storage_range(self.storage_type)
        if len(q.scale) == 1 and 0 < float(q.scale[0]) < math.inf and lo <= q.zero_point[0] <= hi:
            return  # one valid scale and zero point (most types), checked without reductions
        if not np.all(q.scale > 0) or not np.all(np.isfinite(q.scale)):
            bad = q.scale[~((q.scale > 0) & np.isfinite(q.scale))][0]
            raise VerifyException(f"quant.uniform: scale must be positive and finite, got {bad}")
        if np.any(q.zero_point < lo) or np.any(q.zero_point > hi):
            bad = q.zero_point[(q.zero_point < lo) | (q.zero_point > hi)][0]
            raise VerifyException(
                f"quant.uniform: zero point {bad} outside the {_storage_name(self.storage_type)}"
                f" range [{lo}, {hi}]"
            )

    def print_parameters(self, printer: Printer) -> None:
        printer.print_string(_parameters_text(_storage_name(self.storage_type), self.axis.data,
                                              self.scales.data.data, self.zero_points.data.data))

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> list[Attribute]:
        with parser.in_angle_brackets():
            storage_name = parser.parse_optional_identifier()
            if storage_name not in _STORAGE_NAMES:
                parser.raise_error(f"quant.uniform: storage type must be {_STORAGE_TEXT}")
            width, signed = _STORAGE_NAMES[storage_name]
            storage = IntegerType(width, Signedness.SIGNLESS if signed else Signedness.UNSIGNED)
            parser.parse_punctuation(":")
            expressed = parser.parse_type()
            if expressed not in (f32, f64):
                parser.raise_error("quant.uniform: expressed type must be f32")
            axis = -1
            if parser.parse_optional_punctuation(":") is not None:
                axis = parser.parse_integer(allow_boolean=False, allow_negative=False)
            parser.parse_punctuation(",")

            def parse_pair() -> tuple[float, int]:
                scale = parser.parse_float()
                parser.parse_punctuation(":")
                return scale, parser.parse_integer(allow_boolean=False)

            if axis >= 0:
                pairs = parser.parse_comma_separated_list(parser.Delimiter.BRACES, parse_pair)
            else:
                pairs = [parse_pair()]
        scales = np.asarray([p[0] for p in pairs], dtype=np.float32)
        zps = np.asarray([p[1] for p in pairs], dtype=np.int64)
        made = UniformQuantizedType(storage, scales, zps, axis)
        return list(made.parameters)


def element_qparams(type_: Attribute) -> QParams | None:
    """The quantization of a tensor type's elements, or None when they are not quantized."""
    element = type_.element_type if isinstance(type_, TensorType) else type_
    return element.qparams if isinstance(element, UniformQuantizedType) else None


def storage_type_of(element: Attribute) -> Attribute:
    """The type a value is stored in: the storage type of a quantized type, else itself."""
    return element.storage_type if isinstance(element, UniformQuantizedType) else element


Quant = Dialect("quant", [], [UniformQuantizedType])
