"""The built-in fusions of `fuse-composites` (see `registry.py` for the API).

| interface (aliases)                          | fused op                     | exact when      |
|----------------------------------------------|------------------------------|-----------------|
| `embedding_lookup` (`odml.embedding_lookup`) | `tfl.embedding_lookup`       | copying rows    |
| `hard_swish` (`aten.hardswish.default`)      | `tfl.hard_swish`             | proved (int8)   |
| `conv2d_bias_relu`                           | `tfl.conv_2d` + fused RELU.. | rounding once   |

A fusion replaces the decomposition by what the interface means, as TensorFlow's
prepare-composite-functions does; it keeps the decomposition's numbers only where the fused
op's integer arithmetic is the decomposition's, and `fuse-composites` applies it by default
only there (`allow-inexact=true` applies it everywhere, as TensorFlow does):

- an embedding lookup copies rows: exact when the decomposition copies them too (GATHER, then
  for a float result DEQUANTIZE, which rounds `scale * q` once as the hybrid lookup does);
- HARD_SWISH computes `x * relu6(x + 3) / 6` in one int16 fixed-point pass, where an int8
  decomposition (ADD+RELU6, MUL by 1/6, MUL) rounds after every op: they differ by one output
  step on 1-2% of the elements of our fixtures, so such a composite is inlined unless
  inexact fusions are allowed. The fusion proves exactness by running the decomposition and
  HARD_SWISH on every int8 input (a decomposition that is HARD_SWISH passes); float
  decompositions are never provably exact;
- a convolution with a fused activation requantizes once; it equals (TRANSPOSE +) CONV_2D +
  RELU/RELU6 when the convolution's output already has the activation's quantization (what
  the TFLite converter produces) and the activation op clamps as the fused activation does
  (checked on every int8 value); with a second rounding in between it is inexact.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import Float32Type, IntegerType, TensorType
from xdsl.ir import Attribute, SSAValue

from qaccel.dialects.quant import UniformQuantizedType
from qaccel.dialects.tfl import (
    ConstOp,
    Conv2DOp,
    DequantizeOp,
    EmbeddingLookupOp,
    GatherOp,
    HardSwishOp,
    NoValueOp,
    Relu6Op,
    ReluOp,
    TransposeOp,
)
from qaccel.fusions.registry import (
    Fusion,
    FusionBuilder,
    Signature,
    agrees_on_every_int8_value,
)


def _is_int(element: Attribute, width: int) -> bool:
    return isinstance(element, IntegerType) and element.width.data == width


def _is_quantized(element: Attribute, width: int = 8) -> bool:
    return isinstance(element, UniformQuantizedType) and element.storage_type.width.data == width


def _is_per_tensor_int8(element: Attribute) -> bool:
    return _is_quantized(element) and not element.is_per_axis


# --------------------------------------------------------------------------------------------
# embedding_lookup


class EmbeddingLookupFusion(Fusion):
    """Rows of a table selected by int32 ids -> `tfl.embedding_lookup`.

    The ids and the table may come in either order: TensorFlow's `embedding_lookup` functions
    take `(table, ids)`, ai-edge-torch's `odml.embedding_lookup` composites `(ids, table)`;
    the fused op takes `(ids, table)`. A float result from an int8 table is the hybrid lookup
    (rows dequantized on the fly).
    """

    name = "embedding_lookup"
    aliases = ("odml.embedding_lookup",)

    @staticmethod
    def _is_ids(t: Attribute) -> bool:
        return isinstance(t, TensorType) and t.get_num_dims() == 1 and _is_int(t.element_type, 32)

    def _split(self, sig: Signature) -> tuple[int, int]:
        """(ids operand, table operand)."""
        return (1, 0) if self._is_ids(sig.operand_types[1]) else (0, 1)

    def check(self, sig: Signature) -> str | None:
        if reason := sig.expect_arity(2, 1):
            return reason
        if not any(self._is_ids(t) for t in sig.operand_types):
            return (f"no operand is a 1-D int32 tensor of ids (got "
                    f"{', '.join(str(t) for t in sig.operand_types)})")
        ids_i, table_i = self._split(sig)
        ids, table, result = sig.tensor(ids_i), sig.tensor(table_i), sig.result()
        if table.get_num_dims() < 2:
            return f"the table must have rank 2 or more, got {table}"
        expected = [ids.get_shape()[0], *table.get_shape()[1:]]
        if list(result.get_shape()) != expected:
            return f"the result shape {list(result.get_shape())} is not {expected} (ids x row)"
        te, re_ = table.element_type, result.element_type
        hybrid = isinstance(re_, Float32Type) and _is_quantized(te)
        if hybrid:
            q = te.qparams
            if np.any(q.zero_point != 0):
                return "a hybrid (int8 table, float result) lookup needs table zero points 0"
            if te.is_per_axis and te.axis.data != 0:
                return "a per-channel quantized table must be quantized along its rows (axis 0)"
        elif te != re_:
            return f"the result element type {re_} differs from the table's {te}"
        return None

    def exact(self, sig: Signature) -> bool:
        """Exact when the decomposition copies rows too: a GATHER of the table's rows (or an
        EMBEDDING_LOOKUP), then for a hybrid lookup a DEQUANTIZE of them with the table's
        per-tensor quantization (`scale * q` rounded once to float32, as the fused op does)."""
        d = sig.decomposition
        if d is None or len(d.body.blocks) != 1:
            return False
        ids_i, table_i = self._split(sig)
        args = list(d.body.block.args)
        ops = [op for op in d.body.block.ops if not isinstance(op, ConstOp | NoValueOp)]
        ret = ops.pop() if ops else None
        if not (isinstance(ret, func.ReturnOp) and len(ret.arguments) == 1 and ops):
            return False
        rows, rest = ops[0], ops[1:]
        if isinstance(rows, GatherOp):
            copies = (rows.params is args[table_i] and rows.indices is args[ids_i]
                      and rows.options["axis"] == 0 and rows.options["batch_dims"] == 0)
        elif isinstance(rows, EmbeddingLookupOp):
            copies = rows.lookup is args[ids_i] and rows.value is args[table_i]
        else:
            copies = False
        if not copies:
            return False
        if not rest:
            return ret.arguments[0] is rows.output
        table = sig.tensor(table_i).element_type
        return (len(rest) == 1 and isinstance(rest[0], DequantizeOp)
                and rest[0].input is rows.output and ret.arguments[0] is rest[0].output
                and rows.output.type.element_type == table
                and _is_per_tensor_int8(table))

    def build(self, b: FusionBuilder, operands: Sequence[SSAValue],
              sig: Signature) -> Sequence[SSAValue]:
        ids_i, table_i = self._split(sig)
        op = EmbeddingLookupOp.create(
            operands=[operands[ids_i], operands[table_i]], result_types=[sig.result()],
            properties=EmbeddingLookupOp.properties_from_options({}),
        )
        return [b.insert(op).output]


# --------------------------------------------------------------------------------------------
# hard_swish


class HardSwishFusion(Fusion):
    """x * relu6(x + 3) / 6 -> `tfl.hard_swish` (int8 per-tensor or float32).

    Not bit-exact with an int8 decomposition: see the module docstring.
    """

    name = "hard_swish"
    aliases = ("aten.hardswish.default",)

    def check(self, sig: Signature) -> str | None:
        if reason := sig.expect_arity(1, 1):
            return reason
        x, y = sig.tensor(0), sig.result()
        if x.get_shape() != y.get_shape():
            return (f"the result shape {list(y.get_shape())} differs from the operand's "
                    f"{list(x.get_shape())}")
        xe, ye = x.element_type, y.element_type
        if isinstance(xe, Float32Type) and isinstance(ye, Float32Type):
            return None
        if _is_per_tensor_int8(xe) and _is_per_tensor_int8(ye):
            return None
        return f"needs float32 or per-tensor int8 operand and result, got {xe} -> {ye}"

    def exact(self, sig: Signature) -> bool:
        # Float decompositions order their multiplications differently: never provably equal.
        return agrees_on_every_int8_value(self, sig)

    def build(self, b: FusionBuilder, operands: Sequence[SSAValue],
              sig: Signature) -> Sequence[SSAValue]:
        op = HardSwishOp.create(operands=[operands[0]], result_types=[sig.result()],
                                properties=HardSwishOp.properties_from_options({}))
        return [b.insert(op).output]


# --------------------------------------------------------------------------------------------
# conv2d_bias_relu

_FILTER_LAYOUTS = {"OHWI": (0, 1, 2, 3), "HWIO": (3, 0, 1, 2)}
"""Filter layout -> the permutation that makes it TFLite's OHWI."""
_ACTIVATIONS = ("NONE", "RELU", "RELU6", "RELU_N1_TO_1")


def _pair(value, what: str) -> tuple[int, int] | str:
    if isinstance(value, int) and not isinstance(value, bool):
        value = [value, value]
    if isinstance(value, np.ndarray):
        value = value.tolist()
    if (not isinstance(value, list | tuple) or len(value) != 2
            or not all(isinstance(v, int) and not isinstance(v, bool) and v >= 1 for v in value)):
        return f"{what} must be one or two positive integers, got {value!r}"
    return int(value[0]), int(value[1])


def conv_output_size(size: int, kernel: int, stride: int, dilation: int, padding: str) -> int:
    """TFLite's `ComputeOutSize`."""
    effective = (kernel - 1) * dilation + 1
    if padding == "SAME":
        return (size + stride - 1) // stride
    return (size - effective + stride) // stride


class Conv2DBiasReluFusion(Fusion):
    """conv2d + bias + activation -> one `tfl.conv_2d` with a fused activation.

    Operands `(input NHWC, filter[, bias])`; attributes `padding` ("SAME" or "VALID",
    required), `strides` and `dilations` (`[h, w]` or one int, default 1), `activation`
    ("RELU" by default, "RELU6", "RELU_N1_TO_1", "NONE") and `filter_layout` ("OHWI", TFLite's
    and the default, or "HWIO", TensorFlow's). Static operand transforms: an HWIO filter is
    transposed to OHWI, and a missing bias becomes a zero bias of the convolution's bias
    quantization (the reference kernel requires one).
    """

    name = "conv2d_bias_relu"

    def _options(self, sig: Signature) -> dict | str:
        padding = sig.attr("padding")
        if padding not in ("SAME", "VALID"):
            return f"padding must be \"SAME\" or \"VALID\", got {padding!r}"
        strides = _pair(sig.attr("strides", 1), "strides")
        if isinstance(strides, str):
            return strides
        dilations = _pair(sig.attr("dilations", 1), "dilations")
        if isinstance(dilations, str):
            return dilations
        activation = sig.attr("activation", "RELU")
        if activation not in _ACTIVATIONS:
            return f"activation must be one of {', '.join(_ACTIVATIONS)}, got {activation!r}"
        layout = sig.attr("filter_layout", "OHWI")
        if layout not in _FILTER_LAYOUTS:
            return f"filter_layout must be one of {', '.join(_FILTER_LAYOUTS)}, got {layout!r}"
        return {
            "padding": padding, "stride_h": strides[0], "stride_w": strides[1],
            "dilation_h_factor": dilations[0], "dilation_w_factor": dilations[1],
            "fused_activation_function": activation, "layout": layout,
        }

    def check(self, sig: Signature) -> str | None:
        if reason := sig.expect_arity((2, 3), 1):
            return reason
        opts = self._options(sig)
        if isinstance(opts, str):
            return opts
        x, w, y = sig.tensor(0), sig.tensor(1), sig.result()
        for what, t in (("input", x), ("filter", w), ("result", y)):
            if t.get_num_dims() != 4:
                return f"the {what} must be 4-D, got {t}"
        perm = _FILTER_LAYOUTS[opts["layout"]]
        o, kh, kw, i = (w.get_shape()[p] for p in perm)
        n, h, wd, c = x.get_shape()
        if i <= 0 or c % i != 0 or o % (c // i) != 0:
            return (f"a {opts['layout']} filter of shape {list(w.get_shape())} does not fit "
                    f"{c} input channels")
        expected = [n, conv_output_size(h, kh, opts["stride_h"], opts["dilation_h_factor"],
                                        opts["padding"]),
                    conv_output_size(wd, kw, opts["stride_w"], opts["dilation_w_factor"],
                                     opts["padding"]), o]
        if list(y.get_shape()) != expected:
            return f"the result shape {list(y.get_shape())} is not the convolution's {expected}"
        bias = sig.tensor(2) if len(sig.operand_types) == 3 else None
        if bias is not None and list(bias.get_shape()) != [o]:
            return f"the bias must have shape [{o}], got {list(bias.get_shape())}"
        return self._check_types(x, w, bias, y, opts["layout"])

    @staticmethod
    def _check_types(x: TensorType, w: TensorType, bias: TensorType | None, y: TensorType,
                     layout: str) -> str | None:
        xe, we, ye = x.element_type, w.element_type, y.element_type
        if isinstance(ye, Float32Type):
            if not (isinstance(xe, Float32Type) and isinstance(we, Float32Type)
                    and (bias is None or isinstance(bias.element_type, Float32Type))):
                return "a float32 convolution needs float32 input, filter and bias"
            return None
        if not (_is_per_tensor_int8(xe) and _is_per_tensor_int8(ye)):
            return f"needs per-tensor int8 input and result (or float32), got {xe} -> {ye}"
        if not _is_quantized(we):
            return f"an int8 convolution needs an int8 quantized filter, got {we}"
        if np.any(we.qparams.zero_point != 0):
            return "the filter's zero points must be 0"
        if we.is_per_axis and we.axis.data != layout.index("O"):
            return (f"the filter must be quantized per output channel (axis "
                    f"{layout.index('O')} of {layout}), not along axis {we.axis.data}")
        if bias is not None and not (
            _is_int(bias.element_type, 32) or _is_quantized(bias.element_type, 32)
        ):
            return f"an int8 convolution needs an int32 bias, got {bias.element_type}"
        return None

    def exact(self, sig: Signature) -> bool:
        """Exact when the decomposition is (TRANSPOSE of an HWIO filter +) CONV_2D with this
        interface's options, followed by the activation op without changing quantization:
        the convolution then rounds once either way, and the activation op is the clamp the
        fused activation applies (checked on every int8 value)."""
        d = sig.decomposition
        if d is None or len(d.body.blocks) != 1:
            return False
        opts = self._options(sig)
        assert isinstance(opts, dict)
        args = list(d.body.block.args)
        ops = [op for op in d.body.block.ops if not isinstance(op, ConstOp | NoValueOp)]
        ret = ops.pop() if ops else None
        if not isinstance(ret, func.ReturnOp) or len(ret.arguments) != 1:
            return False
        filt: SSAValue = args[1]
        if opts["layout"] != "OHWI":
            transpose = ops.pop(0) if ops else None
            perm = _constant(transpose.perm) if isinstance(transpose, TransposeOp) else None
            if not (perm is not None and transpose.input is filt
                    and perm.tolist() == list(_FILTER_LAYOUTS[opts["layout"]])):
                return False
            filt = transpose.output
        conv = ops.pop(0) if ops else None
        if not (isinstance(conv, Conv2DOp) and conv.input is args[0] and conv.filter is filt):
            return False
        if len(args) == 3:
            if conv.bias is not args[2]:
                return False
        elif not (isinstance(conv.bias.owner, NoValueOp)
                  or (_constant(conv.bias) is not None and not _constant(conv.bias).any())):
            return False
        conv_opts = conv.options
        if any(conv_opts[k] != v for k, v in opts.items()
               if k not in ("layout", "fused_activation_function")):
            return False
        activation = opts["fused_activation_function"]
        if not ops:
            return (conv_opts["fused_activation_function"] == activation
                    and ret.arguments[0] is conv.output)
        act = ops.pop(0)
        return (not ops and conv_opts["fused_activation_function"] == "NONE"
                and isinstance(act, _ACTIVATION_OPS.get(activation, ()))
                and act.input is conv.output and ret.arguments[0] is act.output
                and act.output.type == conv.output.type
                and _activation_is_the_fused_clamp(act, activation))

    def build(self, b: FusionBuilder, operands: Sequence[SSAValue],
              sig: Signature) -> Sequence[SSAValue]:
        opts = self._options(sig)
        assert isinstance(opts, dict)
        x = operands[0]
        w = b.transpose(operands[1], _FILTER_LAYOUTS[opts.pop("layout")], "filter_ohwi")
        bias = operands[2] if len(operands) == 3 else self._zero_bias(b, x.type, w.type)
        op = Conv2DOp.create(operands=[x, w, bias], result_types=[sig.result()],
                             properties=Conv2DOp.properties_from_options(opts))
        return [b.insert(op).output]

    @staticmethod
    def _zero_bias(b: FusionBuilder, x: TensorType, w: TensorType) -> SSAValue:
        channels = w.get_shape()[0]
        we = w.element_type
        if isinstance(we, Float32Type):
            return b.const(np.zeros(channels, np.float32), name="zero_bias")
        # The converter's bias quantization: input scale times each filter scale, in float32.
        wq = we.qparams
        scales = np.float32(x.element_type.qparams.scale[0]) * wq.scale.astype(np.float32)
        q = UniformQuantizedType(IntegerType(32), scales, np.zeros(len(scales), np.int64),
                                 0 if we.is_per_axis else -1)
        return b.const(np.zeros(channels, np.int32), TensorType(q, [channels]), "zero_bias")


_ACTIVATION_OPS = {"RELU": ReluOp, "RELU6": Relu6Op}


def _constant(value: SSAValue) -> np.ndarray | None:
    return value.owner.as_array() if isinstance(value.owner, ConstOp) else None


def _activation_is_the_fused_clamp(act: ReluOp | Relu6Op, activation: str) -> bool:
    """Whether a RELU/RELU6 op whose input and output share one quantization computes the
    clamp a convolution's fused activation applies, on every int8 value (floats: always)."""
    t = act.output.type
    assert isinstance(t, TensorType)
    if isinstance(t.element_type, Float32Type):
        return True
    if not _is_per_tensor_int8(t.element_type):
        return False
    from qaccel.kernels import arithmetic
    from qaccel.kernels import registry as kernels

    q = t.element_type.qparams
    values = np.arange(-128, 128).astype(np.int8)
    call = kernels.OpCall([values], [q], [q], [values.shape], [np.dtype(np.int8)], {})
    try:
        out = kernels.run(act.TFLITE_NAME, call)[0]
    except Exception:
        return False
    lo, hi = arithmetic.activation_range_quantized(activation, q.s, q.zp, np.int8)
    return np.array_equal(out, np.clip(values, lo, hi).astype(np.int8))


BUILTIN_FUSIONS: tuple[Fusion, ...] = (
    EmbeddingLookupFusion(),
    HardSwishFusion(),
    Conv2DBiasReluFusion(),
)
