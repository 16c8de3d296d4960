"""Element types <-> numpy dtypes, for values the interpreter and the frontend hold as arrays."""

from __future__ import annotations

import numpy as np
from xdsl.dialects.builtin import (
    Float16Type,
    Float32Type,
    Float64Type,
    IntegerType,
    Signedness,
    TensorType,
    f16,
    f32,
    f64,
    i1,
)
from xdsl.ir import Attribute

from qaccel.dialects.quant import UniformQuantizedType


_INTEGER_DTYPES: dict[tuple[int, bool], np.dtype] = {}
"""`numpy_dtype` of the integer types by (width, unsigned): the passes ask some 1,500 times
per model, and building a dtype from its name parses it each time."""


def numpy_dtype(element_type: Attribute) -> np.dtype:
    """The numpy dtype a value of this element type is stored as (quantized: its storage)."""
    if isinstance(element_type, UniformQuantizedType):
        element_type = element_type.storage_type
    if isinstance(element_type, IntegerType):
        width = element_type.width.data
        if width == 1:
            return np.dtype(np.bool_)
        unsigned = element_type.signedness.data == Signedness.UNSIGNED
        found = _INTEGER_DTYPES.get((width, unsigned))
        if found is None:  # dtypes are immutable: one per width and signedness
            found = _INTEGER_DTYPES[width, unsigned] = np.dtype(
                f"{'u' if unsigned else 'i'}{width // 8}"
            )
        return found
    if isinstance(element_type, Float32Type):
        return np.dtype(np.float32)
    if isinstance(element_type, Float16Type):
        return np.dtype(np.float16)
    if isinstance(element_type, Float64Type):
        return np.dtype(np.float64)
    raise ValueError(f"no numpy dtype for element type {element_type}")


def element_type_for(dtype: np.dtype) -> Attribute:
    """The builtin element type of a numpy dtype (signed integers are signless, as in MLIR)."""
    dtype = np.dtype(dtype)
    made = _ELEMENT_TYPES.get(dtype)
    if made is None:
        made = _ELEMENT_TYPES[dtype] = _element_type_for(dtype)
    return made


# dtype -> its element type, made once (the importer asks for every tensor)
_ELEMENT_TYPES: dict[np.dtype, Attribute] = {}


def _element_type_for(dtype: np.dtype) -> Attribute:
    if dtype == np.bool_:
        return i1
    if dtype.kind == "i":
        return IntegerType(dtype.itemsize * 8)
    if dtype.kind == "u":
        return IntegerType(dtype.itemsize * 8, Signedness.UNSIGNED)
    return {np.dtype(np.float32): f32, np.dtype(np.float16): f16, np.dtype(np.float64): f64}[dtype]


def tensor_dtype(t: Attribute) -> np.dtype:
    assert isinstance(t, TensorType), f"expected a tensor type, got {t}"
    return numpy_dtype(t.element_type)
