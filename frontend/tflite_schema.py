"""The TFLite flatbuffer schema as qaccel sees it: names, numbers and the builtin-options codec.

This is the one module that knows the schema's spelling. Everything is derived from the
generated reader/builder code of the `tflite` PyPI package (no object API), so a newer schema
needs no edits here except for the few facts the generated code cannot tell:

- which options table an operator uses where the names differ (`AVERAGE_POOL_2D` ->
  `Pool2DOptions`, `MEAN` -> `ReducerOptions`, ...; `_OPTIONS_TABLE_OF_OP`);
- which scalar fields hold an enum (`padding` -> `Padding`, ...; `_ENUM_OF_FIELD`), because the
  generated Python code stores enums as plain integers.

Options are plain dicts keyed by the schema's snake_case field names (see
briefs "Op options naming"): enum fields are member names (`padding="SAME"`), bools are bool,
ints are int, floats are the float32 value as a Python float, numeric vectors are 1-D numpy
arrays of the schema's element type, `[ubyte]` vectors (flexbuffers) are `bytes`, strings are
str. `decode_options` returns every scalar field (defaults filled in) and the vector/string
fields that are present; an absent vector is omitted rather than shown as empty because the
two can mean different things (RESHAPE without `new_shape` reads its shape tensor).

>>> from qaccel.frontend import tflite_schema as ts
>>> ts.options_table_for("CONV_2D")
'Conv2DOptions'
>>> ts.BUILTIN_OPERATOR_CODES["STABLEHLO_COMPOSITE"]
206

The `tflite` package imports all of its ~190 modules at once (tens of milliseconds), so it is
imported on first use: the name tables are module attributes computed lazily (PEP 562).
"""

from __future__ import annotations

import importlib
import sys
import types
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:  # pragma: no cover
    import flatbuffers

__all__ = [
    "BUILTIN_OPERATORS",
    "BUILTIN_OPERATOR_CODES",
    "TENSOR_TYPES",
    "TENSOR_TYPE_NAMES",
    "TENSOR_TYPE_CODES",
    "OPTIONS_TABLES",
    "OptionField",
    "OptionsTable",
    "options_table_for",
    "options_table",
    "stored_options_table",
    "decode_options",
    "decode_options_table",
    "encode_options",
    "builtin_code",
    "tensor_type_code",
    "enum_members",
    "generated_module",
    "with_defaults",
]

# Operators whose options table is not simply "<CamelCaseOpName>Options".
_OPTIONS_TABLE_OF_OP = {
    "AVERAGE_POOL_2D": "Pool2DOptions",
    "MAX_POOL_2D": "Pool2DOptions",
    "L2_POOL_2D": "Pool2DOptions",
    "UNIDIRECTIONAL_SEQUENCE_RNN": "SequenceRNNOptions",
    "MEAN": "ReducerOptions",
    "SUM": "ReducerOptions",
    "REDUCE_PROD": "ReducerOptions",
    "REDUCE_MAX": "ReducerOptions",
    "REDUCE_MIN": "ReducerOptions",
    "REDUCE_ANY": "ReducerOptions",
    "REDUCE_ALL": "ReducerOptions",
    "MAXIMUM": "MaximumMinimumOptions",
    "MINIMUM": "MaximumMinimumOptions",
    "L2_NORMALIZATION": "L2NormOptions",
    "CONV_3D_TRANSPOSE": "Conv3DOptions",
    "RANDOM_UNIFORM": "RandomOptions",
    "RANDOM_STANDARD_NORMAL": "RandomOptions",
    "MULTINOMIAL": "RandomOptions",
}

# Scalar option fields typed by a schema enum (same meaning in every table that has them; a
# vector field of the same name, e.g. StablehloConvolutionOptions.padding, stays numeric).
_ENUM_OF_FIELD = {
    "padding": "Padding",
    "fused_activation_function": "ActivationFunctionType",
    "weights_format": "FullyConnectedOptionsWeightsFormat",
    "kernel_type": "LSTMKernelType",
    "type": "LSHProjectionType",
    "combiner": "CombinerType",
    "mode": "MirrorPadMode",
    "in_data_type": "TensorType",
    "out_data_type": "TensorType",
    "output_type": "TensorType",
    "out_type": "TensorType",
    "idx_out_type": "TensorType",
    "quantized_bias_type": "TensorType",
    "key_dtype": "TensorType",
    "value_dtype": "TensorType",
    "comparison_direction": "StablehloComparisonDirection",
    "compare_type": "StablehloComparisonType",
    "algorithm": "RngAlgorithm",
    "reduce_function": "ReduceWindowFunction",
    "composite_attributes_format": "CustomOptionsFormat",
}

# TensorType members that numpy has no dtype for; they are named by their member name.
_NUMPY_DTYPE_OF_TENSOR_TYPE = {
    "FLOAT32": np.float32,
    "FLOAT16": np.float16,
    "INT32": np.int32,
    "UINT8": np.uint8,
    "INT64": np.int64,
    "BOOL": np.bool_,
    "INT16": np.int16,
    "COMPLEX64": np.complex64,
    "INT8": np.int8,
    "FLOAT64": np.float64,
    "COMPLEX128": np.complex128,
    "UINT64": np.uint64,
    "UINT32": np.uint32,
    "UINT16": np.uint16,
}

_DTYPE_OF_FLAGS = {
    "BoolFlags": np.dtype(np.bool_),
    "Uint8Flags": np.dtype(np.uint8),
    "Int8Flags": np.dtype(np.int8),
    "Uint16Flags": np.dtype(np.uint16),
    "Int16Flags": np.dtype(np.int16),
    "Uint32Flags": np.dtype(np.uint32),
    "Int32Flags": np.dtype(np.int32),
    "Uint64Flags": np.dtype(np.uint64),
    "Int64Flags": np.dtype(np.int64),
    "Float32Flags": np.dtype(np.float32),
    "Float64Flags": np.dtype(np.float64),
}


def generated_module(name: str):
    """The `tflite` package's generated module for schema type `name` ("Model", "Tensor",
    "Conv2DOptions", ...), holding the reader class and the builder functions."""
    # `tflite/__init__.py` star-imports every class over its submodule attribute, so
    # `tflite.Conv2DOptions` is the class; the module itself lives in sys.modules.
    found = sys.modules.get(f"tflite.{name}")
    if found is not None:
        return found
    _package()
    return importlib.import_module(f"tflite.{name}")


class _DeferredPackage(types.ModuleType):
    """The `tflite` package before its `__init__` ran. Importing its submodules reads only
    its dunder attributes (`__path__`, `__spec__`); any other attribute (`tflite.Model`,
    `tflite.__version__` excepted) runs `__init__` first, so `import tflite` users see the
    whole package, with its classes over the submodules imported before."""

    def __getattribute__(self, name: str):
        if name.startswith("__") and name.endswith("__") and name != "__version__":
            return super().__getattribute__(name)
        self.__class__ = types.ModuleType  # once: from here on a plain module
        self.__spec__.loader.exec_module(self)  # type: ignore[union-attr]
        return getattr(self, name)


def _package():
    """The `tflite` package. Its `__init__` imports all of its ~190 modules (about 0.1 s),
    and a model uses a dozen of them: when nothing imported it yet, the package is put in
    place without running `__init__` (`_DeferredPackage`)."""
    package = sys.modules.get("tflite")
    if package is not None:
        return package
    import importlib.util

    spec = importlib.util.find_spec("tflite")
    if spec is None or spec.loader is None or spec.submodule_search_locations is None:
        return importlib.import_module("tflite")  # not a plain package: import it whole
    package = importlib.util.module_from_spec(spec)
    package.__class__ = _DeferredPackage
    sys.modules["tflite"] = package
    return package


_module = generated_module


@cache
def enum_members(enum_name: str) -> dict[str, int]:
    """Members of a schema enum (or union) as {name: value}, e.g. enum_members("Padding")."""
    cls = getattr(_module(enum_name), enum_name)
    return {k: v for k, v in vars(cls).items() if not k.startswith("_") and isinstance(v, int)}


@cache
def _enum_names(enum_name: str) -> dict[int, str]:
    return {v: k for k, v in enum_members(enum_name).items()}


@cache  # tensor_type_code asks for a table on every tensor written
def _lazy_tables() -> dict[str, Any]:
    ops = enum_members("BuiltinOperator")
    types = enum_members("TensorType")
    tables: dict[str, tuple[int, int]] = {}
    for union_number, union in ((1, "BuiltinOptions"), (2, "BuiltinOptions2")):
        for name, code in enum_members(union).items():
            if code != 0:
                tables[name] = (union_number, code)
    return {
        "BUILTIN_OPERATORS": {code: name for name, code in ops.items()},
        "BUILTIN_OPERATOR_CODES": dict(ops),
        "TENSOR_TYPE_NAMES": {code: name for name, code in types.items()},
        "TENSOR_TYPE_CODES": dict(types),
        "TENSOR_TYPES": {
            code: np.dtype(_NUMPY_DTYPE_OF_TENSOR_TYPE[name])
            if name in _NUMPY_DTYPE_OF_TENSOR_TYPE
            else name
            for name, code in types.items()
        },
        "OPTIONS_TABLES": tables,
    }


_LAZY_NAMES = (
    "BUILTIN_OPERATORS",  # dict[int, str]: BuiltinOperator code -> member name
    "BUILTIN_OPERATOR_CODES",  # dict[str, int]: member name -> code
    "TENSOR_TYPES",  # dict[int, np.dtype | str]: TensorType code -> dtype, or name if numpy lacks it
    "TENSOR_TYPE_NAMES",  # dict[int, str]: TensorType code -> member name ("INT8")
    "TENSOR_TYPE_CODES",  # dict[str, int]: member name -> TensorType code
    "OPTIONS_TABLES",  # dict[str, (union 1|2, union type code)]: every builtin options table
)


def __getattr__(name: str) -> Any:
    if name in _LAZY_NAMES:
        values = _lazy_tables()
        globals().update(values)
        return values[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def builtin_code(opcode) -> int:
    """The operator code of a `tflite.OperatorCode`: the larger of the two code fields (old
    files set only the byte-sized deprecated one, new files park it at 127 for large codes)."""
    return max(opcode.BuiltinCode(), opcode.DeprecatedBuiltinCode())


def tensor_type_code(dtype: np.dtype | type | str) -> int:
    """TensorType code of a numpy dtype, or of a TensorType member name ("INT4", "INT8")."""
    if isinstance(dtype, str) and dtype in __getattr__("TENSOR_TYPE_CODES"):
        return __getattr__("TENSOR_TYPE_CODES")[dtype]
    try:
        dt = np.dtype(dtype)
    except TypeError:
        raise ValueError(f"not a TFLite tensor type: {dtype!r}") from None
    for name, np_type in _NUMPY_DTYPE_OF_TENSOR_TYPE.items():
        if np.dtype(np_type) == dt:
            return __getattr__("TENSOR_TYPE_CODES")[name]
    raise ValueError(f"numpy dtype {dt} has no TFLite tensor type")


# ---------------------------------------------------------------------------------------------
# Options tables by reflection


@dataclass(frozen=True)
class OptionField:
    """One field of an options table, as read off the generated code."""

    name: str  # snake_case schema name
    accessor: str  # generated CamelCase accessor / Add suffix
    slot: int
    kind: str  # "int", "float", "bool", "enum", "string", "vector", "bytes"
    dtype: np.dtype  # scalar type, or vector element type (uint8 for bytes, object for string)
    default: Any  # scalar default (enum: member name); None for vectors and strings
    enum: str | None = None
    prepend: str | None = None  # builder method writing the scalar slot


@dataclass(frozen=True)
class OptionsTable:
    name: str
    union: int  # 1: Operator.builtin_options, 2: Operator.builtin_options_2
    type_code: int  # the union's type tag
    fields: tuple[OptionField, ...]

    def field(self, name: str) -> OptionField:
        for f in self.fields:
            if f.name == name:
                return f
        raise KeyError(name)


class _CallRecorder:
    """Stands in for a flatbuffers.Builder to see which slot an Add function writes."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, tuple]] = []

    def __getattr__(self, method: str):
        def record(*args):
            self.calls.append((method, args))

        return record


def _snake(camel: str) -> str:
    return "".join("_" + c.lower() if c.isupper() and i else c.lower() for i, c in enumerate(camel))


def _flags_dtype(func) -> np.dtype:
    flags = [n for n in func.__code__.co_names if n in _DTYPE_OF_FLAGS]
    if len(flags) != 1:
        raise NotImplementedError(f"cannot tell the element type of {func.__qualname__}")
    return _DTYPE_OF_FLAGS[flags[0]]


@cache
def options_table(table_name: str) -> OptionsTable:
    """The field layout of a builtin options table, e.g. options_table("Conv2DOptions")."""
    tables = __getattr__("OPTIONS_TABLES")
    if table_name not in tables:
        raise ValueError(f"unknown builtin options table {table_name!r}")
    union, type_code = tables[table_name]
    module = _module(table_name)
    cls = getattr(module, table_name)
    prefix = f"{table_name}Add"
    fields = []
    for fn_name, fn in vars(module).items():
        if not fn_name.startswith(prefix) or not callable(fn):
            continue
        accessor = fn_name[len(prefix) :]
        rec = _CallRecorder()
        fn(rec, 0)
        (method, args) = rec.calls[0]
        slot = args[0]
        name = _snake(accessor)
        reader = getattr(cls, accessor)
        if method == "PrependUOffsetTRelativeSlot":
            if hasattr(module, f"{table_name}Start{accessor}Vector"):
                dtype = _flags_dtype(reader)
                kind = "bytes" if dtype == np.uint8 else "vector"
                fields.append(OptionField(name, accessor, slot, kind, dtype, None))
            elif "String" in reader.__code__.co_names:
                fields.append(OptionField(name, accessor, slot, "string", np.dtype(object), None))
            else:
                raise NotImplementedError(f"{table_name}.{name}: nested tables are not supported")
            continue
        dtype = _DTYPE_OF_FLAGS[method[len("Prepend") : -len("Slot")] + "Flags"]
        default = args[2]
        if name in _ENUM_OF_FIELD:
            enum = _ENUM_OF_FIELD[name]
            default = _enum_names(enum).get(default, default)
            fields.append(OptionField(name, accessor, slot, "enum", dtype, default, enum, method))
        elif dtype == np.bool_:
            fields.append(OptionField(name, accessor, slot, "bool", dtype, bool(default), None, method))
        elif dtype.kind == "f":
            fields.append(OptionField(name, accessor, slot, "float", dtype, float(default), None, method))
        else:
            fields.append(OptionField(name, accessor, slot, "int", dtype, int(default), None, method))
    fields.sort(key=lambda f: f.slot)
    return OptionsTable(table_name, union, type_code, tuple(fields))


def _normalized(name: str) -> str:
    return name.replace("_", "").lower()


@cache
def _table_by_normalized_name() -> dict[str, str]:
    return {_normalized(t[: -len("Options")]): t for t in __getattr__("OPTIONS_TABLES")}


def options_table_for(op_name: str) -> str | None:
    """Name of the builtin options table operator `op_name` uses, or None if it has none."""
    if op_name in _OPTIONS_TABLE_OF_OP:
        return _OPTIONS_TABLE_OF_OP[op_name]
    return _table_by_normalized_name().get(_normalized(op_name))


def stored_options_table(operator) -> str | None:
    """Name of the options table a `tflite.Operator` actually stores (union 1, then 2)."""
    code = operator.BuiltinOptionsType()
    if code:
        return _union_member_name(1, code)
    code = operator.BuiltinOptions2Type()
    if code:
        return _union_member_name(2, code)
    return None


@cache
def _union_member_name(union: int, code: int) -> str:
    names = _enum_names("BuiltinOptions" if union == 1 else "BuiltinOptions2")
    if code not in names:
        raise ValueError(f"builtin_options{'_2' if union == 2 else ''} type {code} is not in the schema")
    return names[code]


def decode_options(operator) -> dict[str, Any]:
    """Builtin options of a `tflite.Operator` as a dict ({} when it stores none)."""
    table_name = stored_options_table(operator)
    if table_name is None:
        return {}
    tab = operator.BuiltinOptions() if operator.BuiltinOptionsType() else operator.BuiltinOptions2()
    return decode_options_table(table_name, tab)


def decode_stored_options(data, fields) -> dict[str, Any]:
    """`decode_options` of the operator whose fields `tflite_tensors.OperatorFields` read
    from `data`."""
    if fields.options_type:
        table_name, pos = _union_member_name(1, fields.options_type), fields.options_pos
    elif fields.options_2_type:
        table_name, pos = _union_member_name(2, fields.options_2_type), fields.options_2_pos
    else:
        return {}
    from flatbuffers.table import Table

    return decode_options_table(table_name, Table(data, pos) if pos else None)


def decode_options_table(table_name: str, tab: flatbuffers.table.Table) -> dict[str, Any]:
    """Decode the options table `table_name` located by the flatbuffers Table `tab`."""
    layout = options_table(table_name)
    obj = getattr(_module(table_name), table_name)()
    obj.Init(tab.Bytes, tab.Pos)
    out: dict[str, Any] = {}
    for f in layout.fields:
        if f.kind in ("vector", "bytes"):
            if getattr(obj, f"{f.accessor}IsNone")():
                continue
            arr = getattr(obj, f"{f.accessor}AsNumpy")()
            if isinstance(arr, int):  # the generated code returns 0 for an absent vector
                arr = np.zeros(0, f.dtype)
            out[f.name] = arr.tobytes() if f.kind == "bytes" else np.array(arr, dtype=f.dtype)
        elif f.kind == "string":
            s = getattr(obj, f.accessor)()
            if s is not None:
                out[f.name] = s.decode("utf-8")
        else:
            value = getattr(obj, f.accessor)()
            if f.kind == "enum":
                out[f.name] = _enum_names(f.enum).get(value, value)
            elif f.kind == "bool":
                out[f.name] = bool(value)
            elif f.kind == "float":
                out[f.name] = float(value)
            else:
                out[f.name] = int(value)
    return out


def with_defaults(table_name: str, fields: dict[str, Any]) -> dict[str, Any]:
    """`fields` completed with the defaults of every scalar field it leaves out, in schema
    order: what `decode_options` would return after `encode_options(table_name, fields)`."""
    layout = options_table(table_name)
    out = {}
    for f in layout.fields:
        value = fields.get(f.name)
        if value is None:
            if f.default is not None:
                out[f.name] = f.default
        else:
            out[f.name] = value
    out.update((k, v) for k, v in fields.items() if k not in out and v is not None)
    return out


def encode_options(builder: flatbuffers.Builder, table_name: str, fields: dict[str, Any]) -> int:
    """Write the options table `table_name` holding `fields`; returns its offset.

    Inverse of `decode_options_table`. Fields left out (or None) take the schema default /
    stay absent. Raises ValueError naming the table and field for unknown names or values
    that do not fit the field's type.
    """
    layout = options_table(table_name)
    known = {f.name for f in layout.fields}
    unknown = [k for k in fields if k not in known]
    if unknown:
        raise ValueError(
            f"{table_name} has no field {unknown[0]!r} (fields: {', '.join(sorted(known)) or 'none'})"
        )
    # Vectors and strings must be written before the table is started.
    offsets: dict[str, int] = {}
    for f in layout.fields:
        value = fields.get(f.name)
        if value is None or f.kind not in ("vector", "bytes", "string"):
            continue
        if f.kind == "string":
            if not isinstance(value, str):
                raise ValueError(f"{table_name}.{f.name} must be a str, got {type(value).__name__}")
            offsets[f.name] = builder.CreateString(value)
        elif f.kind == "bytes":
            if isinstance(value, np.ndarray):
                value = value.astype(np.uint8, copy=False).tobytes()
            offsets[f.name] = builder.CreateByteVector(bytes(value))
        else:
            offsets[f.name] = builder.CreateNumpyVector(_as_vector(table_name, f, value))
    module = _module(table_name)
    getattr(module, f"{table_name}Start")(builder)
    for f in layout.fields:
        value = fields.get(f.name)
        if value is None:
            continue
        add = getattr(module, f"{table_name}Add{f.accessor}")
        if f.name in offsets:
            add(builder, offsets[f.name])
            continue
        try:
            add(builder, _as_scalar(table_name, f, value))
        except (TypeError, ValueError, OverflowError) as err:
            if isinstance(err, ValueError) and str(err).startswith(table_name):
                raise
            raise ValueError(f"{table_name}.{f.name}: {value!r} does not fit {f.dtype}") from None
    return getattr(module, f"{table_name}End")(builder)


def _as_vector(table_name: str, f: OptionField, value) -> np.ndarray:
    arr = np.asarray(value)
    if arr.ndim > 1:
        raise ValueError(f"{table_name}.{f.name} must be 1-D, got shape {arr.shape}")
    arr = arr.reshape(-1)
    if arr.size == 0:
        return np.zeros(0, f.dtype)
    try:
        out = arr.astype(f.dtype)
    except (TypeError, ValueError):
        raise ValueError(f"{table_name}.{f.name}: {value!r} is not a vector of {f.dtype}") from None
    if not np.array_equal(out, arr):
        raise ValueError(f"{table_name}.{f.name}: {value!r} does not fit {f.dtype}")
    return out


def _as_scalar(table_name: str, f: OptionField, value):
    if f.kind == "enum":
        members = enum_members(f.enum)
        if isinstance(value, str):
            if value not in members:
                raise ValueError(
                    f"{table_name}.{f.name}: {value!r} is not a {f.enum} "
                    f"(one of {', '.join(members)})"
                )
            return members[value]
        return int(value)
    if f.kind == "bool":
        if not isinstance(value, (bool, np.bool_)) and value not in (0, 1):
            raise ValueError(f"{table_name}.{f.name} must be a bool, got {value!r}")
        return bool(value)
    if f.kind == "float":
        return float(value)
    if isinstance(value, (bool, np.bool_)) or not float(value).is_integer():
        raise ValueError(f"{table_name}.{f.name} must be an integer, got {value!r}")
    return int(value)
