"""The `tfl` dialect: TFLite's builtin operators, one op each, as imported from a flatbuffer.

Every op keeps its TFLite options as typed properties named exactly as the schema's fields
(`stride_w`, `fused_activation_function`, ...); enum-valued options hold the schema's member
name as a string. Omitted optional inputs (TFLite's `-1`) are `none`-typed values made by
`tfl.no_value`, so operand positions match the flatbuffer's. Quantization lives in the tensor
types (`!quant.uniform<...>`), and a tensor's name in its op's location (`loc("conv/Relu")`).

    %w = tfl.const dense<"0x..."> : tensor<8x3x3x3xi8> -> tensor<8x3x3x3x!quant.uniform<i8:f32:0, {...}>>
    %y = tfl.conv_2d %x, %w, %b {padding = "SAME", stride_h = 2 : i32, ...}
         : (tensor<1x32x32x3x!quant.uniform<...>>, ...) -> tensor<1x16x16x8x!quant.uniform<...>>

Operators we have no op for are imported as `tfl.opaque`, which keeps the opcode, version
and raw options so the model survives a round trip; they run on the CPU or are rejected with
a clear message, never dropped.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
from xdsl.dialects.builtin import (
    I32,
    BoolAttr,
    BytesAttr,
    DenseArrayBase,
    DenseIntOrFPElementsAttr,
    DictionaryAttr,
    FloatAttr,
    IntegerAttr,
    IntegerType,
    NoneType,
    StringAttr,
    SymbolRefAttr,
    TensorType,
    f32,
    i8,
    i32,
    i64,
)
from xdsl.ir import Attribute, Dialect
from xdsl.irdl import (
    IRDLOperation,
    ParsePropInAttrDict,
    operand_def,
    opt_operand_def,
    opt_prop_def,
    prop_def,
    result_def,
    traits_def,
    var_operand_def,
    var_result_def,
)
from qaccel.dialects.op_definition import irdl_op_definition  # formats built on first use
from xdsl.traits import ConstantLike, Pure, SymbolUserOpInterface
from xdsl.utils.exceptions import VerifyException

from qaccel.dialects.quant import storage_type_of

# --------------------------------------------------------------------------------------------
# Option kinds: how a schema field is held as a property and read back as a Python value.


@dataclass(frozen=True)
class OptionKind:
    """How one kind of schema field maps to an attribute and back (see `Op options naming`)."""

    constraint: Any
    to_attr: Callable[[Any], Attribute]
    to_py: Callable[[Attribute], Any]
    members: tuple[str, ...] = ()

    def enum_name(self, value: Any) -> str:
        if isinstance(value, str):
            if value not in self.members:
                raise VerifyException(f"'{value}' is not one of {', '.join(self.members)}")
            return value
        return self.members[int(value)]


# Option values repeat (strides of 1 and 2, "SAME", "RELU6"): their attributes are made once
# per value (attributes are immutable values), not once per op.
@functools.lru_cache(maxsize=1024)
def _i32_attr(value: int) -> IntegerAttr:
    return IntegerAttr(value, i32)


@functools.lru_cache(maxsize=1024)
def _string_attr(value: str) -> StringAttr:
    return StringAttr(value)


def _int_kind() -> OptionKind:
    return OptionKind(IntegerAttr[I32], lambda v: _i32_attr(int(v)), lambda a: a.value.data)


def _enum_kind(*members: str) -> OptionKind:
    kind: OptionKind

    def to_attr(v: Any) -> Attribute:
        return _string_attr(kind.enum_name(v))

    kind = OptionKind(StringAttr, to_attr, lambda a: a.data, members)
    return kind


I32_OPT = _int_kind()
F32_OPT = OptionKind(FloatAttr, lambda v: FloatAttr(float(v), f32), lambda a: a.value.data)
_BOOLS: dict[bool, BoolAttr] = {}  # False, True -> their attributes, made on first use


def _bool_attr(value: bool) -> BoolAttr:
    made = _BOOLS.get(value)
    if made is None:
        made = _BOOLS[value] = IntegerAttr.from_bool(value)
    return made


BOOL_OPT = OptionKind(BoolAttr, lambda v: _bool_attr(bool(v)), lambda a: bool(a.value.data))
STR_OPT = OptionKind(StringAttr, lambda v: StringAttr(str(v)), lambda a: a.data)
I32_ARRAY_OPT = OptionKind(
    DenseArrayBase,
    lambda v: DenseArrayBase(i32, BytesAttr(np.asarray(v, dtype=np.int32).tobytes())),
    lambda a: np.frombuffer(a.data.data, dtype=np.int32).copy(),
)
PADDING = _enum_kind("SAME", "VALID")
ACTIVATION = _enum_kind("NONE", "RELU", "RELU_N1_TO_1", "RELU6", "TANH", "SIGN_BIT")
WEIGHTS_FORMAT = _enum_kind("DEFAULT", "SHUFFLED4x16INT8")
# TFLite's TensorType enum, in schema order.
TENSOR_TYPE = _enum_kind(
    "FLOAT32", "FLOAT16", "INT32", "UINT8", "INT64", "STRING", "BOOL", "INT16", "COMPLEX64",
    "INT8", "FLOAT64", "COMPLEX128", "UINT64", "RESOURCE", "VARIANT", "UINT32", "UINT16",
    "INT4", "BFLOAT16",
)  # fmt: skip

# --------------------------------------------------------------------------------------------
# Generic value conversion for option dictionaries we hold without a schema of our own
# (`tfl.opaque` options, `extra_options`, composite attributes).


def py_to_attr(value: Any) -> Attribute:
    """A Python option value (see `Op options naming`) as an attribute."""
    if isinstance(value, bool | np.bool_):
        return IntegerAttr.from_bool(bool(value))
    if isinstance(value, int | np.integer):
        return IntegerAttr(int(value), i64)
    if isinstance(value, float | np.floating):
        return FloatAttr(float(value), f32)
    if isinstance(value, str):
        return StringAttr(value)
    if isinstance(value, bytes):
        return DenseArrayBase(i8, BytesAttr(value))
    if isinstance(value, np.ndarray):
        dtype = value.dtype
        if dtype == np.float32:
            return DenseArrayBase(f32, BytesAttr(value.astype("<f4").tobytes()))
        if dtype.kind in "iu":
            return DenseArrayBase(
                IntegerType(dtype.itemsize * 8), BytesAttr(value.astype(dtype.newbyteorder("<")).tobytes())
            )
    if isinstance(value, Mapping):
        return DictionaryAttr({str(k): py_to_attr(v) for k, v in value.items()})
    if isinstance(value, list | tuple):
        from xdsl.dialects.builtin import ArrayAttr

        return ArrayAttr([py_to_attr(v) for v in value])
    raise ValueError(f"cannot hold option value {value!r} of type {type(value).__name__}")


def attr_to_py(attr: Attribute) -> Any:
    """The inverse of `py_to_attr`."""
    from xdsl.dialects.builtin import ArrayAttr

    if isinstance(attr, IntegerAttr) and attr.type == IntegerType(1):
        return bool(attr.value.data)
    if isinstance(attr, IntegerAttr):
        return attr.value.data
    if isinstance(attr, FloatAttr):
        return attr.value.data
    if isinstance(attr, StringAttr):
        return attr.data
    if isinstance(attr, DenseArrayBase):
        if attr.elt_type == i8:
            return bytes(attr.data.data)
        if attr.elt_type == f32:
            return np.frombuffer(attr.data.data, dtype="<f4").copy()
        width = attr.elt_type.width.data
        return np.frombuffer(attr.data.data, dtype=f"<i{width // 8}").copy()
    if isinstance(attr, DictionaryAttr):
        return {k: attr_to_py(v) for k, v in attr.data.items()}
    if isinstance(attr, ArrayAttr):
        return [attr_to_py(v) for v in attr.data]
    raise ValueError(f"cannot read option attribute {attr}")


# --------------------------------------------------------------------------------------------
# Base class and the decorator that turns an option table into typed properties.

TensorOrNone = TensorType | NoneType


class TflOp(IRDLOperation):
    """A TFLite builtin operator."""

    TFLITE_NAME: ClassVar[str]
    """The `BuiltinOperator` member this op stands for, e.g. "CONV_2D"."""
    OPTION_TABLE: ClassVar[dict[str, tuple[OptionKind, Any]]] = {}
    """Schema field name -> (kind, schema default)."""

    version = opt_prop_def(IntegerAttr[I32])
    """The operator version of the flatbuffer's opcode table, when it is not 1."""
    extra_options = opt_prop_def(DictionaryAttr)
    """Schema fields without a typed property here, kept when they differ from the default."""

    irdl_options = (ParsePropInAttrDict(),)
    traits = traits_def(Pure())
    assembly_format = "operands attr-dict `:` functional-type(operands, results)"

    @property
    def options(self) -> dict[str, Any]:
        """The op's TFLite options as a dict (see `Op options naming`)."""
        opts = {
            name: kind.to_py(self.properties[name])
            for name, (kind, _) in self.OPTION_TABLE.items()
        }
        if self.extra_options is not None:
            opts.update(attr_to_py(self.extra_options))
        return opts

    @property
    def op_version(self) -> int:
        return 1 if self.version is None else self.version.value.data

    @classmethod
    def properties_from_options(cls, options: Mapping[str, Any]) -> dict[str, Attribute]:
        """Typed properties from a decoded options dict, schema defaults for missing fields."""
        props: dict[str, Attribute] = {}
        extra: dict[str, Attribute] = {}
        for name, (kind, default) in cls.OPTION_TABLE.items():
            props[name] = kind.to_attr(options.get(name, default))
        for name, value in options.items():
            if name not in cls.OPTION_TABLE and not _is_default(value):
                extra[name] = py_to_attr(value)
        if extra:
            props["extra_options"] = DictionaryAttr(extra)
        return props

    def verify_(self) -> None:
        for name, (kind, _) in self.OPTION_TABLE.items():
            if kind.members:
                value = self.properties[name].data  # type: ignore[attr-defined]
                if value not in kind.members:
                    raise VerifyException(
                        f"{self.name}: {name} = \"{value}\" is not one of "
                        f"{', '.join(kind.members)}"
                    )
        options = None  # the options as a dict, made once (not once per use)
        for name in ("stride_w", "stride_h", "dilation_w_factor", "dilation_h_factor"):
            if name in self.OPTION_TABLE:
                options = self.options if options is None else options
                if options[name] < 1:
                    raise VerifyException(f"{self.name}: {name} must be at least 1")
        self.verify_output_shape(options)

    def verify_output_shape(self, options: dict[str, Any] | None = None) -> None:
        """The declared result shapes are the ones TFLite's Prepare computes from the inputs
        (`options`: `self.options`, when the caller has it)."""
        from qaccel.kernels.shape_inference import (
            CONSTANT_INPUTS,
            NEEDS_CONSTANT_INPUT_1,
            ShapeMismatch,
            infer_shapes,
        )

        if not self.results or not all(isinstance(r.type, TensorType) for r in self.results):
            return
        shapes = [tuple(v.type.get_shape()) if isinstance(v.type, TensorType) else None
                  for v in self.operands]  # fmt: skip
        consts: list[np.ndarray | None] = [None] * len(shapes)
        positions = set(CONSTANT_INPUTS.get(self.TFLITE_NAME, ()))
        if self.TFLITE_NAME in NEEDS_CONSTANT_INPUT_1:
            positions.add(1)
        for i in positions:
            if i < len(shapes):
                owner = self.operands[i].owner
                consts[i] = owner.as_array() if isinstance(owner, ConstOp) else None
        try:
            inferred = infer_shapes(self.TFLITE_NAME, shapes, consts,
                                    self.options if options is None else options,
                                    len(self.results))  # fmt: skip
        except ShapeMismatch as e:
            raise VerifyException(f"{self.name}: {e}") from None
        except (ValueError, TypeError, ZeroDivisionError):
            return  # options the kernels' Prepare checks refuse, with their own message
        if inferred is None or len(inferred) != len(self.results):
            return  # a count the kernels' Prepare checks refuse
        for k, (result, shape) in enumerate(zip(self.results, inferred)):
            declared = tuple(result.type.get_shape())
            if tuple(shape) != declared and min(declared, default=0) >= 0:
                which = "result" if len(self.results) == 1 else f"result {k}"
                raise VerifyException(
                    f"{self.name}: the {which} is declared with shape {list(declared)}, but "
                    f"the inputs give {list(shape)}"
                )


def _is_default(value: Any) -> bool:
    if isinstance(value, np.ndarray | bytes | list | tuple | Mapping | str):
        return len(value) == 0
    return value == 0 or value is False


def tfl_op(tflite_name: str, **options: tuple[OptionKind, Any]):
    """Define a `tfl` op: add one typed property per schema option, then `irdl_op_definition`."""

    def wrap(cls: type[TflOp]) -> type[TflOp]:
        for name, (kind, _) in options.items():
            setattr(cls, name, prop_def(kind.constraint))
        defined = irdl_op_definition(cls)
        defined.TFLITE_NAME = tflite_name
        defined.OPTION_TABLE = dict(options)
        return defined

    return wrap


def _conv_options() -> dict[str, tuple[OptionKind, Any]]:
    return {
        "padding": (PADDING, "SAME"),
        "stride_w": (I32_OPT, 1),
        "stride_h": (I32_OPT, 1),
        "fused_activation_function": (ACTIVATION, "NONE"),
        "dilation_w_factor": (I32_OPT, 1),
        "dilation_h_factor": (I32_OPT, 1),
    }


_POOL_OPTIONS = {
    "padding": (PADDING, "SAME"),
    "stride_w": (I32_OPT, 1),
    "stride_h": (I32_OPT, 1),
    "filter_width": (I32_OPT, 0),
    "filter_height": (I32_OPT, 0),
    "fused_activation_function": (ACTIVATION, "NONE"),
}
_ACT = {"fused_activation_function": (ACTIVATION, "NONE")}
_RESIZE = {"align_corners": (BOOL_OPT, False), "half_pixel_centers": (BOOL_OPT, False)}

# --------------------------------------------------------------------------------------------
# Structural ops.


@irdl_op_definition
class ConstOp(IRDLOperation):
    """A constant tensor (a weight, a bias, a shape operand).

    `value` holds the raw little-endian storage bytes; the result type may be quantized, in
    which case `value`'s element type is the quantized type's storage type.
    """

    name = "tfl.const"
    value = prop_def(DenseIntOrFPElementsAttr)
    output = result_def(TensorType)
    traits = traits_def(Pure(), ConstantLike())
    assembly_format = "$value attr-dict `->` type($output)"

    def __init__(self, value: DenseIntOrFPElementsAttr, result_type: TensorType | None = None):
        super().__init__(properties={"value": value}, result_types=[result_type or value.type])

    def verify_(self) -> None:
        out = self.output.type
        assert isinstance(out, TensorType)
        if out.get_shape() != self.value.type.get_shape():
            raise VerifyException(
                f"tfl.const: value shape {self.value.type.get_shape()} does not match the "
                f"result shape {out.get_shape()}"
            )
        if storage_type_of(out.element_type) != self.value.type.element_type:
            raise VerifyException(
                f"tfl.const: value element type {self.value.type.element_type} is not the "
                f"storage type of {out.element_type}"
            )

    def as_array(self) -> np.ndarray:
        """The value as a read-only numpy array of the storage dtype."""
        from qaccel.dialects.types import numpy_dtype

        dtype = numpy_dtype(self.value.type.element_type)
        return np.frombuffer(self.value.data.data, dtype=dtype).reshape(self.value.get_shape())


@irdl_op_definition
class NoValueOp(IRDLOperation):
    """An omitted optional input (TFLite's tensor index -1), e.g. a convolution's missing bias."""

    name = "tfl.no_value"
    output = result_def(NoneType)
    traits = traits_def(Pure(), ConstantLike())
    assembly_format = "attr-dict"

    def __init__(self):
        super().__init__(result_types=[NoneType()])


class _DecompositionUser(SymbolUserOpInterface):
    def verify(self, op) -> None:
        from xdsl.dialects import func
        from xdsl.traits import SymbolTable

        assert isinstance(op, StableHLOCompositeOp)
        callee = SymbolTable.lookup_symbol(op, op.decomposition)
        if not isinstance(callee, func.FuncOp):
            raise VerifyException(
                f"tfl.stablehlo_composite '{op.composite_name.data}': decomposition "
                f"{op.decomposition} is not a function in this module"
            )
        inputs = callee.function_type.inputs.data
        if len(inputs) != len(op.inputs):
            raise VerifyException(
                f"tfl.stablehlo_composite '{op.composite_name.data}': {len(op.inputs)} operands "
                f"but decomposition {op.decomposition} takes {len(inputs)}"
            )


@irdl_op_definition
class StableHLOCompositeOp(IRDLOperation):
    """A composite op (STABLEHLO_COMPOSITE): a named, attributed call of its decomposition.

    The decomposition is a function of the module; `fuse-composites` replaces registered names
    by fused ops and inlines the others.
    """

    name = "tfl.stablehlo_composite"
    TFLITE_NAME: ClassVar[str] = "STABLEHLO_COMPOSITE"
    inputs = var_operand_def(TensorType)
    outputs = var_result_def(TensorType)
    composite_name = prop_def(StringAttr, prop_name="name")
    decomposition = prop_def(SymbolRefAttr)
    composite_attributes = prop_def(DictionaryAttr)
    composite_version = prop_def(IntegerAttr[I32], prop_name="version")
    irdl_options = (ParsePropInAttrDict(),)
    traits = traits_def(_DecompositionUser())
    assembly_format = "$inputs attr-dict `:` functional-type($inputs, results)"


@irdl_op_definition
class OpaqueOp(IRDLOperation):
    """An operator qaccel has no op for, kept as the flatbuffer had it so it round-trips.

    `op_name` is its `BuiltinOperator` member name ("CUSTOM" for custom ops, then
    `custom_code` names it), `opcode` its number, `options` its decoded builtin options and
    `custom_options` a custom op's raw option bytes. It runs on the CPU if the interpreter
    knows it, else execution stops with a message naming it.
    """

    name = "tfl.opaque"
    inputs = var_operand_def(TensorOrNone)
    outputs = var_result_def(TensorType)
    op_name = prop_def(StringAttr)
    opcode = prop_def(IntegerAttr[I32])
    version = opt_prop_def(IntegerAttr[I32])
    custom_code = opt_prop_def(StringAttr)
    options = prop_def(DictionaryAttr)
    custom_options = opt_prop_def(DenseArrayBase)
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$inputs attr-dict `:` functional-type($inputs, results)"

    @property
    def op_version(self) -> int:
        return 1 if self.version is None else self.version.value.data


# --------------------------------------------------------------------------------------------
# Compute ops.


@tfl_op("CONV_2D", **_conv_options())
class Conv2DOp(TflOp):
    """2-D convolution, NHWC input, OHWI filter, optional bias, fused activation."""

    name = "tfl.conv_2d"
    input = operand_def(TensorType)
    filter = operand_def(TensorType)
    bias = operand_def(TensorOrNone)
    output = result_def(TensorType)


@tfl_op("DEPTHWISE_CONV_2D", **_conv_options(), depth_multiplier=(I32_OPT, 0))
class DepthwiseConv2DOp(TflOp):
    """Depthwise 2-D convolution, filter `[1, KH, KW, C * depth_multiplier]`."""

    name = "tfl.depthwise_conv_2d"
    input = operand_def(TensorType)
    filter = operand_def(TensorType)
    bias = operand_def(TensorOrNone)
    output = result_def(TensorType)


@tfl_op(
    "FULLY_CONNECTED",
    **_ACT,
    weights_format=(WEIGHTS_FORMAT, "DEFAULT"),
    keep_num_dims=(BOOL_OPT, False),
    asymmetric_quantize_inputs=(BOOL_OPT, False),
)
class FullyConnectedOp(TflOp):
    """Matrix multiply by `[O, I]` weights, optional bias, fused activation."""

    name = "tfl.fully_connected"
    input = operand_def(TensorType)
    filter = operand_def(TensorType)
    bias = operand_def(TensorOrNone)
    output = result_def(TensorType)


class _BinaryOp(TflOp):
    lhs = operand_def(TensorType)
    rhs = operand_def(TensorType)
    output = result_def(TensorType)


@tfl_op("ADD", **_ACT, pot_scale_int16=(BOOL_OPT, True))
class AddOp(_BinaryOp):
    """Element-wise addition with broadcasting and fused activation."""

    name = "tfl.add"


@tfl_op("SUB", **_ACT, pot_scale_int16=(BOOL_OPT, True))
class SubOp(_BinaryOp):
    """Element-wise subtraction with broadcasting and fused activation."""

    name = "tfl.sub"


@tfl_op("MUL", **_ACT)
class MulOp(_BinaryOp):
    """Element-wise multiplication with broadcasting and fused activation."""

    name = "tfl.mul"


class _UnaryOp(TflOp):
    input = operand_def(TensorType)
    output = result_def(TensorType)


@tfl_op("AVERAGE_POOL_2D", **_POOL_OPTIONS)
class AveragePool2DOp(_UnaryOp):
    """Average pooling over in-image taps (padding does not count)."""

    name = "tfl.average_pool_2d"


@tfl_op("MAX_POOL_2D", **_POOL_OPTIONS)
class MaxPool2DOp(_UnaryOp):
    """Max pooling over in-image taps."""

    name = "tfl.max_pool_2d"


class _ReduceOp(TflOp):
    input = operand_def(TensorType)
    axis = operand_def(TensorType)
    output = result_def(TensorType)


@tfl_op("MEAN", keep_dims=(BOOL_OPT, False))
class MeanOp(_ReduceOp):
    """Mean over the axes given by the second operand."""

    name = "tfl.mean"


@tfl_op("SUM", keep_dims=(BOOL_OPT, False))
class SumOp(_ReduceOp):
    """Sum over the axes given by the second operand."""

    name = "tfl.sum"


@tfl_op("RESHAPE", new_shape=(I32_ARRAY_OPT, ()))
class ReshapeOp(TflOp):
    """Reshape; the shape comes from the optional second operand or `new_shape`."""

    name = "tfl.reshape"
    input = operand_def(TensorType)
    shape = opt_operand_def(TensorType)
    output = result_def(TensorType)


@tfl_op("SQUEEZE", squeeze_dims=(I32_ARRAY_OPT, ()))
class SqueezeOp(_UnaryOp):
    """Remove size-1 dimensions (`squeeze_dims`, or all when empty)."""

    name = "tfl.squeeze"


@tfl_op("SOFTMAX", beta=(F32_OPT, 0.0))
class SoftmaxOp(_UnaryOp):
    """Softmax over the last dimension with inverse temperature `beta`."""

    name = "tfl.softmax"


@tfl_op("CONCATENATION", axis=(I32_OPT, 0), **_ACT)
class ConcatenationOp(TflOp):
    """Concatenate along `axis`; int8 inputs must share the output's quantization."""

    name = "tfl.concatenation"
    values = var_operand_def(TensorType)
    output = result_def(TensorType)


@tfl_op("PAD")
class PadOp(TflOp):
    """Pad with the output zero point; `padding` is `[rank, 2]` (before, after)."""

    name = "tfl.pad"
    input = operand_def(TensorType)
    padding = operand_def(TensorType)
    output = result_def(TensorType)


@tfl_op("PADV2")
class PadV2Op(TflOp):
    """Pad with an explicit constant value."""

    name = "tfl.padv2"
    input = operand_def(TensorType)
    padding = operand_def(TensorType)
    constant_values = operand_def(TensorType)
    output = result_def(TensorType)


@tfl_op("QUANTIZE")
class QuantizeOp(_UnaryOp):
    """Quantize a float tensor, or requantize a quantized one to the result's parameters."""

    name = "tfl.quantize"


@tfl_op("DEQUANTIZE")
class DequantizeOp(_UnaryOp):
    """`scale * (q - zero_point)` in float32."""

    name = "tfl.dequantize"


@tfl_op("RELU")
class ReluOp(_UnaryOp):
    """max(x, 0), requantized to the output's parameters."""

    name = "tfl.relu"


@tfl_op("RELU6")
class Relu6Op(_UnaryOp):
    """min(max(x, 0), 6), requantized to the output's parameters."""

    name = "tfl.relu6"


@tfl_op("LEAKY_RELU", alpha=(F32_OPT, 0.0))
class LeakyReluOp(_UnaryOp):
    """x for x >= 0, alpha * x otherwise."""

    name = "tfl.leaky_relu"


@tfl_op("LOGISTIC")
class LogisticOp(_UnaryOp):
    """The sigmoid function."""

    name = "tfl.logistic"


@tfl_op("TANH")
class TanhOp(_UnaryOp):
    """The hyperbolic tangent."""

    name = "tfl.tanh"


@tfl_op("HARD_SWISH")
class HardSwishOp(_UnaryOp):
    """x * relu6(x + 3) / 6."""

    name = "tfl.hard_swish"


# Element-wise, reduction and float-island ops (one block; kernels in kernels/elementwise.py and
# kernels/reduce.py).


@tfl_op("NEG")
class NegOp(_UnaryOp):
    """-x on the stored values (an int8 tensor's quantization is not consulted)."""

    name = "tfl.neg"


@tfl_op("SQRT")
class SqrtOp(_UnaryOp):
    """The square root (int8: in float, truncated to the output scale)."""

    name = "tfl.sqrt"


@tfl_op("RSQRT")
class RsqrtOp(_UnaryOp):
    """1 / sqrt(x) (int8: gemmlowp's fixed-point inverse square root)."""

    name = "tfl.rsqrt"


@tfl_op("GELU", approximate=(BOOL_OPT, False))
class GeluOp(_UnaryOp):
    """x * Phi(x), with erfc or (`approximate`) the tanh formula; int8 through a table."""

    name = "tfl.gelu"


@tfl_op("LOG_SOFTMAX")
class LogSoftmaxOp(_UnaryOp):
    """log(softmax(x)) over the last dimension; int8 output scale 16/256, zero point 127."""

    name = "tfl.log_softmax"


@tfl_op("PRELU")
class PReluOp(TflOp):
    """x for x >= 0, alpha * x otherwise, `alpha` a tensor broadcast to the input's shape."""

    name = "tfl.prelu"
    input = operand_def(TensorType)
    alpha = operand_def(TensorType)
    output = result_def(TensorType)


@tfl_op("SQUARED_DIFFERENCE")
class SquaredDifferenceOp(_BinaryOp):
    """(lhs - rhs)^2 with broadcasting."""

    name = "tfl.squared_difference"


@tfl_op("MAXIMUM")
class MaximumOp(_BinaryOp):
    """The larger stored value, element-wise with broadcasting."""

    name = "tfl.maximum"


@tfl_op("MINIMUM")
class MinimumOp(_BinaryOp):
    """The smaller stored value, element-wise with broadcasting."""

    name = "tfl.minimum"


@tfl_op("DIV", **_ACT)
class DivOp(_BinaryOp):
    """Element-wise division with broadcasting and fused activation."""

    name = "tfl.div"


@tfl_op("POW")
class PowOp(_BinaryOp):
    """lhs raised to the power rhs, element-wise with broadcasting."""

    name = "tfl.pow"


@tfl_op("REDUCE_MAX", keep_dims=(BOOL_OPT, False))
class ReduceMaxOp(_ReduceOp):
    """Maximum over the axes given by the second operand."""

    name = "tfl.reduce_max"


@tfl_op("REDUCE_MIN", keep_dims=(BOOL_OPT, False))
class ReduceMinOp(_ReduceOp):
    """Minimum over the axes given by the second operand."""

    name = "tfl.reduce_min"


@tfl_op("REDUCE_PROD", keep_dims=(BOOL_OPT, False))
class ReduceProdOp(_ReduceOp):
    """Product over the axes given by the second operand."""

    name = "tfl.reduce_prod"


@tfl_op("ARG_MAX", output_type=(TENSOR_TYPE, "FLOAT32"))
class ArgMaxOp(TflOp):
    """Index of the largest value along the one-element `axis` operand (`output_type` INT32
    or INT64; the schema's default FLOAT32 is refused by the kernel, as by LiteRT)."""

    name = "tfl.arg_max"
    input = operand_def(TensorType)
    axis = operand_def(TensorType)
    output = result_def(TensorType)


@tfl_op("ARG_MIN", output_type=(TENSOR_TYPE, "FLOAT32"))
class ArgMinOp(TflOp):
    """Index of the smallest value along the one-element `axis` operand."""

    name = "tfl.arg_min"
    input = operand_def(TensorType)
    axis = operand_def(TensorType)
    output = result_def(TensorType)


@tfl_op(
    "STRIDED_SLICE",
    begin_mask=(I32_OPT, 0),
    end_mask=(I32_OPT, 0),
    ellipsis_mask=(I32_OPT, 0),
    new_axis_mask=(I32_OPT, 0),
    shrink_axis_mask=(I32_OPT, 0),
    offset=(BOOL_OPT, False),
)
class StridedSliceOp(TflOp):
    """NumPy-style strided slice with TensorFlow's masks."""

    name = "tfl.strided_slice"
    input = operand_def(TensorType)
    begin = operand_def(TensorType)
    end = operand_def(TensorType)
    strides = operand_def(TensorType)
    output = result_def(TensorType)


@tfl_op("SLICE")
class SliceOp(TflOp):
    """Slice `size` elements from `begin` (-1: to the end)."""

    name = "tfl.slice"
    input = operand_def(TensorType)
    begin = operand_def(TensorType)
    size = operand_def(TensorType)
    output = result_def(TensorType)


@tfl_op("SHAPE", out_type=(TENSOR_TYPE, "INT32"))
class ShapeOp(_UnaryOp):
    """The shape of the input as a 1-D tensor."""

    name = "tfl.shape"


@tfl_op("PACK", values_count=(I32_OPT, 0), axis=(I32_OPT, 0))
class PackOp(TflOp):
    """Stack `values_count` tensors along a new `axis`."""

    name = "tfl.pack"
    values = var_operand_def(TensorType)
    output = result_def(TensorType)


@tfl_op("TRANSPOSE")
class TransposeOp(TflOp):
    """Permute dimensions by `perm`."""

    name = "tfl.transpose"
    input = operand_def(TensorType)
    perm = operand_def(TensorType)
    output = result_def(TensorType)


@tfl_op("GATHER", axis=(I32_OPT, 0), batch_dims=(I32_OPT, 0))
class GatherOp(TflOp):
    """Gather slices of `params` along `axis` at `indices`."""

    name = "tfl.gather"
    params = operand_def(TensorType)
    indices = operand_def(TensorType)
    output = result_def(TensorType)


@tfl_op("EMBEDDING_LOOKUP")
class EmbeddingLookupOp(TflOp):
    """Rows of the table `value` selected by the int32 ids `lookup`."""

    name = "tfl.embedding_lookup"
    lookup = operand_def(TensorType)
    value = operand_def(TensorType)
    output = result_def(TensorType)


class _ResizeOp(TflOp):
    input = operand_def(TensorType)
    size = operand_def(TensorType)
    output = result_def(TensorType)


@tfl_op("RESIZE_NEAREST_NEIGHBOR", **_RESIZE)
class ResizeNearestNeighborOp(_ResizeOp):
    """Nearest-neighbour resize of the H and W dimensions to `size`."""

    name = "tfl.resize_nearest_neighbor"


@tfl_op("RESIZE_BILINEAR", **_RESIZE)
class ResizeBilinearOp(_ResizeOp):
    """Bilinear resize of the H and W dimensions to `size`."""

    name = "tfl.resize_bilinear"


# --------------------------------------------------------------------------------------------
# Transposed convolution, batched matrix multiplication, tiling, splitting and block moves.


@tfl_op(
    "TRANSPOSE_CONV",
    padding=(PADDING, "SAME"),
    stride_w=(I32_OPT, 1),
    stride_h=(I32_OPT, 1),
    fused_activation_function=(ACTIVATION, "NONE"),
    quantized_bias_type=(TENSOR_TYPE, "FLOAT32"),
)
class TransposeConvOp(TflOp):
    """Transposed 2-D convolution: the input scattered through OHWI `weights` into an output
    of the constant shape `output_shape` (NHWC), optional bias, fused activation."""

    name = "tfl.transpose_conv"
    output_shape = operand_def(TensorType)
    weights = operand_def(TensorType)
    input = operand_def(TensorType)
    bias = operand_def(TensorOrNone)
    output = result_def(TensorType)


@tfl_op(
    "BATCH_MATMUL",
    adj_x=(BOOL_OPT, False),
    adj_y=(BOOL_OPT, False),
    asymmetric_quantize_inputs=(BOOL_OPT, False),
)
class BatchMatMulOp(TflOp):
    """`x @ y` over the last two dimensions (each transposed first if `adj_x` / `adj_y`),
    batch dimensions broadcast; ranks 2 to 5."""

    name = "tfl.batch_matmul"
    x = operand_def(TensorType)
    y = operand_def(TensorType)
    output = result_def(TensorType)


@tfl_op("TILE")
class TileOp(TflOp):
    """Repeat the input `multiples[d]` times along each dimension d."""

    name = "tfl.tile"
    input = operand_def(TensorType)
    multiples = operand_def(TensorType)
    output = result_def(TensorType)


@tfl_op("BROADCAST_TO")
class BroadcastToOp(TflOp):
    """Broadcast the input to `shape`."""

    name = "tfl.broadcast_to"
    input = operand_def(TensorType)
    shape = operand_def(TensorType)
    output = result_def(TensorType)


@tfl_op("EXPAND_DIMS")
class ExpandDimsOp(TflOp):
    """Insert a dimension of size 1 at `dim` (negative counts from the end)."""

    name = "tfl.expand_dims"
    input = operand_def(TensorType)
    dim = operand_def(TensorType)
    output = result_def(TensorType)


@tfl_op("SPLIT", num_splits=(I32_OPT, 0))
class SplitOp(TflOp):
    """Split `value` into `num_splits` equal pieces along the axis `split_dim`."""

    name = "tfl.split"
    split_dim = operand_def(TensorType)
    value = operand_def(TensorType)
    outputs = var_result_def(TensorType)


@tfl_op("SPLIT_V", num_splits=(I32_OPT, 0))
class SplitVOp(TflOp):
    """Split `value` along `split_dim` into pieces of the sizes `size_splits` (one -1: the
    rest)."""

    name = "tfl.split_v"
    value = operand_def(TensorType)
    size_splits = operand_def(TensorType)
    split_dim = operand_def(TensorType)
    outputs = var_result_def(TensorType)


@tfl_op("UNPACK", num=(I32_OPT, 0), axis=(I32_OPT, 0))
class UnpackOp(TflOp):
    """The `num` slices of the input along `axis`, that dimension removed."""

    name = "tfl.unpack"
    input = operand_def(TensorType)
    outputs = var_result_def(TensorType)


@tfl_op("DEPTH_TO_SPACE", block_size=(I32_OPT, 0))
class DepthToSpaceOp(_UnaryOp):
    """Move channel blocks into `block_size` x `block_size` spatial blocks (NHWC)."""

    name = "tfl.depth_to_space"


@tfl_op("SPACE_TO_DEPTH", block_size=(I32_OPT, 0))
class SpaceToDepthOp(_UnaryOp):
    """Move `block_size` x `block_size` spatial blocks into channels (NHWC)."""

    name = "tfl.space_to_depth"


TFL_OPS: tuple[type[TflOp], ...] = (
    Conv2DOp, DepthwiseConv2DOp, FullyConnectedOp, AddOp, SubOp, MulOp, AveragePool2DOp,
    MaxPool2DOp, MeanOp, SumOp, ReshapeOp, SqueezeOp, SoftmaxOp, ConcatenationOp, PadOp, PadV2Op,
    QuantizeOp, DequantizeOp, ReluOp, Relu6Op, LeakyReluOp, LogisticOp, TanhOp, HardSwishOp,
    StridedSliceOp, SliceOp, ShapeOp, PackOp, TransposeOp, GatherOp, EmbeddingLookupOp,
    ResizeNearestNeighborOp, ResizeBilinearOp,
    TransposeConvOp, BatchMatMulOp, TileOp, BroadcastToOp, ExpandDimsOp, SplitOp, SplitVOp,
    UnpackOp, DepthToSpaceOp, SpaceToDepthOp,
    NegOp, SqrtOp, RsqrtOp, GeluOp, LogSoftmaxOp, PReluOp, SquaredDifferenceOp, MaximumOp,
    MinimumOp, DivOp, PowOp, ReduceMaxOp, ReduceMinOp, ReduceProdOp, ArgMaxOp, ArgMinOp,
)  # fmt: skip

OPS_BY_TFLITE_NAME: dict[str, type[TflOp]] = {op.TFLITE_NAME: op for op in TFL_OPS}

TFL = Dialect(
    "tfl", [ConstOp, NoValueOp, StableHLOCompositeOp, OpaqueOp, *TFL_OPS], []
)
