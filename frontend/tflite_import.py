"""Import a `.tflite` flatbuffer into a `builtin.module` of `tfl` ops, one `func.func` per subgraph.

Subgraph 0 becomes the public entry function, named by its signature key (else `main`); the
other subgraphs (composite decompositions, control-flow bodies) become private functions.
The IR is built straight from the flatbuffer: weights become `tfl.const` ops whose
`DenseIntOrFPElementsAttr` wraps the buffer's bytes, never Python lists. Tensor names are kept
as `NameLoc` locations of the ops (and block arguments) that define them.

Every way a file can be malformed raises `TFLiteImportError` with one line naming the
problem (and the subgraph, operator or tensor), never a stray Python exception.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import (
    BytesAttr,
    DenseIntOrFPElementsAttr,
    DictionaryAttr,
    FusedLoc,
    IntAttr,
    IntegerAttr,
    IntegerType,
    LocationAttr,
    ModuleOp,
    NameLoc,
    StringAttr,
    SymbolRefAttr,
    TensorType,
    UnknownLoc,
    ArrayAttr,
    NoneAttr,
    i32,
)
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.utils.exceptions import VerifyException

from qaccel.dialects.quant import UniformQuantizedType, storage_type_of
from qaccel.dialects.tfl import (
    OPS_BY_TFLITE_NAME,
    ConstOp,
    NoValueOp,
    OpaqueOp,
    StableHLOCompositeOp,
    TflOp,
    py_to_attr,
)
from qaccel.dialects.types import element_type_for, numpy_dtype
from qaccel.kernels.memory import MemoryBudgetError, check_budget
from qaccel.frontend.errors import TFLiteImportError
from qaccel.frontend import tflite_schema
from qaccel.frontend.tflite_tensors import (
    OperatorFields,
    buffer_fields,
    operator_fields,
    tensor_fields,
)
from qaccel.frontend.tflite_verify import verify_model

if TYPE_CHECKING:  # pragma: no cover
    import tflite

_MAX_ELEMENTS = 1 << 40  # no real tensor comes near this; larger counts are corrupt files


def import_tflite_file(path: str) -> ModuleOp:
    with open(path, "rb") as f:
        data = f.read()
    return import_tflite(data, path)


def import_tflite(data: bytes, source: str = "<bytes>") -> ModuleOp:
    """Parse `.tflite` bytes into a module of `tfl` ops."""
    if len(data) == 0:
        raise TFLiteImportError(f"{source}: the file is empty")
    if len(data) < 8:
        raise TFLiteImportError(f"{source}: too short to be a TFLite model ({len(data)} bytes)")
    ident = bytes(data[4:8])
    if ident != b"TFL3":
        raise TFLiteImportError(
            f"{source}: not a TFLite model (file identifier {ident!r}, expected b'TFL3')"
        )
    verify_model(data, source)
    try:
        module = _Importer(data, source).run()
    except TFLiteImportError:
        raise
    except Exception as e:
        if not _raised_by_reader(e):
            raise
        raise TFLiteImportError(
            f"{source}: truncated or malformed flatbuffer ({type(e).__name__}: {e})"
        ) from e
    return module


def _raised_by_reader(e: Exception) -> bool:
    """Whether an exception comes from reading bad bytes (flatbuffers, tflite, numpy).

    Only those become "malformed flatbuffer" diagnostics; our own bugs keep their traceback.
    """
    import traceback

    frames = traceback.extract_tb(e.__traceback__)
    last = frames[-1].filename if frames else ""
    return any(part in last for part in ("/flatbuffers/", "/tflite/", "/numpy/", "struct"))


_UNKNOWN_LOC = UnknownLoc()
_I16 = IntegerType(16)


@functools.lru_cache(maxsize=1024)
def _dim(size: int) -> IntAttr:
    """A dimension's attribute, made once per size (attributes are immutable values)."""
    return IntAttr(size)


@functools.lru_cache(maxsize=4096)
def _tensor_type(element: Attribute, shape: tuple[int, ...]) -> TensorType:
    """A tensor type, made once per element type and shape (a model's tensors share a few
    shapes and element types: a constant's storage type, a per-tensor quantization)."""
    return TensorType(element, [_dim(d) for d in shape])


def _name_loc(name: str) -> NameLoc:
    return NameLoc(StringAttr(name), _UNKNOWN_LOC)


@dataclass
class _Subgraph:
    index: int
    name: str
    graph: tflite.SubGraph
    func: func.FuncOp | None = None
    values: dict[int, SSAValue] = field(default_factory=dict)


def _symbol_name(name: str, fallback: str) -> str:
    return name if re.fullmatch(r"[A-Za-z_][\w.$-]*", name or "") else fallback


class _Importer:
    def __init__(self, data: bytes, source: str):
        self.data = data
        self.source = source
        root = int.from_bytes(data[0:4], "little")
        if root + 4 > len(data):
            raise TFLiteImportError(f"{source}: truncated flatbuffer (root offset {root})")
        self.model = tflite_schema.generated_module("Model").Model.GetRootAs(data, 0)
        self.buffers_len = self.model.BuffersLength()
        self.opcodes = [self.model.OperatorCodes(i) for i in range(self.model.OperatorCodesLength())]

    # -- model structure -----------------------------------------------------------------

    def run(self) -> ModuleOp:
        n_subgraphs = self.model.SubgraphsLength()
        if n_subgraphs == 0:
            raise TFLiteImportError(f"{self.source}: the model has no subgraphs")
        entry_name = "main"
        for i in range(self.model.SignatureDefsLength()):
            sig = self.model.SignatureDefs(i)
            if sig.SubgraphIndex() >= n_subgraphs:
                raise TFLiteImportError(
                    f"{self.source}: signature {i}: subgraph index {sig.SubgraphIndex()} out "
                    f"of range (the model has {n_subgraphs} subgraphs)"
                )
            for kind, length, get in (("input", sig.InputsLength, sig.Inputs),
                                      ("output", sig.OutputsLength, sig.Outputs)):
                for j in range(length()):
                    name = get(j).Name()
                    if name is not None:
                        _utf8(name, f"{self.source}: signature {i}: {kind} {j}: name")
            if sig.SubgraphIndex() == 0 and sig.SignatureKey():
                key = _utf8(sig.SignatureKey(), f"{self.source}: signature {i}: key")
                entry_name = _symbol_name(key, "main")
        taken = {entry_name}
        self.subgraphs: list[_Subgraph] = []
        for i in range(n_subgraphs):
            graph = self.model.Subgraphs(i)
            if i == 0:
                name = entry_name
            else:
                raw = _utf8(graph.Name(), f"{self.source}: subgraph {i}: name") if graph.Name() else ""
                name = _symbol_name(raw, f"subgraph_{i}")
                if name in taken:
                    name = f"{name}_{i}"
                taken.add(name)
            self.subgraphs.append(_Subgraph(i, name, graph))
        functions = [self._import_subgraph(sg) for sg in self.subgraphs]
        return ModuleOp(functions)

    def _import_subgraph(self, sg: _Subgraph) -> func.FuncOp:
        graph = sg.graph
        self.where = f"{self.source}: subgraph {sg.index}"
        if graph.TensorsIsNone() or graph.OperatorsIsNone():
            # LiteRT: "Did not get operators or tensors in subgraph N."
            raise TFLiteImportError(f"{self.where}: no tensors or no operators vector")
        n_tensors = graph.TensorsLength()
        # Each tensor's fields read once, straight from the (verified) bytes; its name
        # decoded by _tensor_type, in tensor order.
        self.tensors = tensor_fields(self.data, graph._tab.Pos)
        self.names: list[str] = []
        self.types = [self._tensor_type(t) for t in range(n_tensors)]
        try:
            check_budget(sum(_type_bytes(t) for t in self.types), self.where)
        except MemoryBudgetError as e:
            raise TFLiteImportError(str(e)) from None
        inputs = [self._check_tensor(graph.Inputs(i), n_tensors, "input") for i in range(graph.InputsLength())]
        outputs = [self._check_tensor(graph.Outputs(i), n_tensors, "output") for i in range(graph.OutputsLength())]
        # Each operator's fields read once, straight from the (verified) bytes.
        self.operators = operator_fields(self.data, graph._tab.Pos)
        self._refuse_16bit_activations(inputs, n_tensors)

        block = Block(arg_types=[self.types[t] for t in inputs])
        for arg, t in zip(block.args, inputs):
            arg.location = _name_loc(self.names[t])
            sg.values[t] = arg
        body: list[Operation] = []
        self.consts: list[Operation] = []
        self.no_value: SSAValue | None = None
        self.graph, self.sg = graph, sg
        self.shape_values: dict[int, np.ndarray] = {}
        self.known_shapes: set[int] = set(inputs)
        for k, operator in enumerate(self.operators):
            body.append(self._import_operator(k, operator, n_tensors))
        results = [self._value(t, f"output of subgraph {sg.index}") for t in outputs]
        ret = func.ReturnOp(*results)
        block.add_ops([*self.consts, *body, ret])
        function = func.FuncOp(
            sg.name,
            ([self.types[t] for t in inputs], [self.types[t] for t in outputs]),
            Region(block),
            visibility="public" if sg.index == 0 else "private",
        )
        sg.func = function
        return function

    def _refuse_16bit_activations(self, inputs: list[int], n_tensors: int) -> None:
        """int16x8 models (the converter's 16-bit-activation mode: int16 activations, int8
        weights, int64 biases) are refused: the CPU kernels are int8 (LiteRT's int16 reference
        kernels compute differently, e.g. with 64-bit accumulators) and the accelerator's GEMM
        core multiplies int8 by int8. Named by the first quantized int16 tensor that an input
        or an operator's output is."""
        produced = list(inputs)
        for operator in self.operators:
            produced += operator.outputs
        for t in produced:
            if not 0 <= t < n_tensors:
                continue  # the operator's own check names it
            element = self.types[t].element_type
            if (isinstance(element, UniformQuantizedType)
                    and storage_type_of(element) == _I16):  # fmt: skip
                raise TFLiteImportError(
                    f"{self.where}: 16-bit activations (int16x8 quantization) are not "
                    f"supported: tensor {t} '{self.names[t]}' is int16"
                )

    def _check_tensor(self, t: int, n_tensors: int, what: str) -> int:
        if not 0 <= t < n_tensors:
            raise TFLiteImportError(
                f"{self.where}: {what} tensor index {t} out of range "
                f"(the subgraph has {n_tensors} tensors)"
            )
        return t

    # -- tensors -------------------------------------------------------------------------

    def _tensor_type(self, t: int) -> TensorType:
        tensor = self.tensors[t]
        name = (tensor.name or b"").decode("utf-8", "replace")
        self.names.append(name)
        what = f"{self.where}: tensor {t} '{name}'"
        shape = [int(d) for d in tensor.shape]
        if any(d < 0 for d in shape):
            raise TFLiteImportError(f"{what}: negative dimension in shape {shape}")
        if math.prod(shape) > _MAX_ELEMENTS:
            raise TFLiteImportError(f"{what}: element count of shape {shape} overflows")
        if not 0 <= tensor.buffer < max(self.buffers_len, 1):
            raise TFLiteImportError(
                f"{what}: buffer index {tensor.buffer} out of range "
                f"(the model has {self.buffers_len} buffers)"
            )
        dtype = tflite_schema.TENSOR_TYPES.get(tensor.type)
        if not isinstance(dtype, np.dtype):
            type_name = dtype if isinstance(dtype, str) else f"#{tensor.type}"
            raise TFLiteImportError(f"{what}: tensor type {type_name} is not supported")
        try:
            element = element_type_for(dtype)
        except KeyError:
            raise TFLiteImportError(f"{what}: tensor type {dtype} is not supported") from None
        if tensor.scales is not None and dtype.kind in "iu":
            scales = tensor.scales.astype(np.float32)
            zps = (
                tensor.zero_points.astype(np.int64)
                if tensor.zero_points is not None and len(tensor.zero_points)
                else np.zeros(len(scales), np.int64)
            )
            if len(zps) != len(scales):
                raise TFLiteImportError(
                    f"{what}: {len(scales)} quantization scales but {len(zps)} zero points"
                )
            axis = -1
            if len(scales) > 1:
                axis = tensor.quantized_dimension
                if not 0 <= axis < len(shape) or shape[axis] != len(scales):
                    raise TFLiteImportError(
                        f"{what}: {len(scales)} per-axis scales do not fit dimension {axis} "
                        f"of shape {shape}"
                    )
            try:
                element = UniformQuantizedType(element, scales, zps, axis)
            except Exception as e:
                raise TFLiteImportError(f"{what}: {e}") from None
        return _tensor_type(element, tuple(shape))

    def _buffer_bytes(self, t: int) -> bytes | None:
        b = self.tensors[t].buffer
        what = f"{self.where}: tensor {t} '{self.names[t]}'"
        if b == 0:
            return None
        offset, size, start, length = buffer_fields(self.data, self.model._tab.Pos, b)
        if offset > 1:
            if offset + size > len(self.data):
                raise TFLiteImportError(
                    f"{what}: buffer {b} lies beyond the end of the file "
                    f"(offset {offset} + size {size} > {len(self.data)} bytes)"
                )
            return bytes(self.data[offset : offset + size])
        if length == 0:
            return None
        return bytes(self.data[start : start + length])

    def _value(self, t: int, user: str) -> SSAValue:
        if t in self.sg.values:
            return self.sg.values[t]
        data = self._buffer_bytes(t)
        if data is None:
            raise TFLiteImportError(
                f"{self.where}: tensor {t} '{self.names[t]}' ({user}) is used but never "
                "produced, is no input and has no data"
            )
        result_type = self.types[t]
        storage = _tensor_type(storage_type_of(result_type.element_type),
                               tuple(result_type.get_shape()))
        itemsize = numpy_dtype(storage.element_type).itemsize
        expected = math.prod(result_type.get_shape()) * itemsize
        if len(data) != expected:
            raise TFLiteImportError(
                f"{self.where}: tensor {t} '{self.names[t]}' has {len(data)} bytes of data, "
                f"its type needs {expected}"
            )
        const = ConstOp(DenseIntOrFPElementsAttr(storage, BytesAttr(data)), result_type)
        const.location = _name_loc(self.names[t])
        self.consts.append(const)
        self.sg.values[t] = const.output
        return const.output

    def _none(self) -> SSAValue:
        if self.no_value is None:
            op = NoValueOp()
            self.consts.append(op)
            self.no_value = op.output
        return self.no_value

    # -- operators -----------------------------------------------------------------------

    def _import_operator(self, k: int, operator: OperatorFields, n_tensors: int) -> Operation:
        index = operator.opcode_index
        if not 0 <= index < len(self.opcodes):
            raise TFLiteImportError(
                f"{self.where}: operator {k}: opcode index {index} out of range "
                f"(the model has {len(self.opcodes)} operator codes)"
            )
        code = self.opcodes[index]
        opcode = max(code.BuiltinCode(), code.DeprecatedBuiltinCode())
        op_name = tflite_schema.BUILTIN_OPERATORS.get(opcode, f"OPCODE_{opcode}")
        what = f"{self.where}: operator {k} ({op_name})"
        in_idx, out_idx = operator.inputs, operator.outputs
        for t in (*in_idx, *out_idx):
            if t != -1 and not 0 <= t < n_tensors:
                raise TFLiteImportError(
                    f"{what}: tensor index {t} out of range (the subgraph has {n_tensors} tensors)"
                )
        if -1 in out_idx:
            raise TFLiteImportError(f"{what}: an output tensor index is -1")
        operands = [self._none() if t == -1 else self._value(t, f"input of {op_name}") for t in in_idx]
        result_types = [self.types[t] for t in out_idx]
        version = code.Version()
        try:
            options = tflite_schema.decode_stored_options(self.data, operator)
        except Exception as e:
            raise TFLiteImportError(f"{what}: cannot read its options ({e})") from None

        self._refine_dynamic_results(op_name, in_idx, out_idx, options)
        result_types = [self.types[t] for t in out_idx]
        self._check_per_axis(what, op_name, in_idx, out_idx)
        op = self._make_op(op_name, opcode, code, operands, result_types, options, version, operator)
        if isinstance(op, TflOp):
            # The op's own checks (a zero stride; a declared output shape other than the one
            # TFLite's Prepare computes, `kernels/shape_inference.py`), so the imported IR verifies;
            # xDSL's generic constraints hold by construction (`verify` costs 15% of import).
            try:
                op.verify_()
            except VerifyException as e:
                raise TFLiteImportError(f"{what}: {str(e).strip().splitlines()[0]}") from None
        for t, result in zip(out_idx, op.results):
            if t in self.sg.values:
                raise TFLiteImportError(f"{what}: tensor {t} '{self.names[t]}' is defined twice")
            self.sg.values[t] = result
        locs: list[LocationAttr] = [_name_loc(self.names[t]) for t in out_idx]
        op.location = locs[0] if len(locs) == 1 else FusedLoc(ArrayAttr(locs), NoneAttr())
        return op

    # -- dynamic shapes ------------------------------------------------------------------
    #
    # A Keras model converted with batch None has shape_signature -1 for the batch, and the
    # converter computes RESHAPE targets at run time (SHAPE -> GATHER/STRIDED_SLICE ->
    # REDUCE_PROD -> PACK/CONCATENATION). Where a whole shape is dynamic (a Dense on a rank-3
    # input flattens to [-1, -1]), the stored shape is a placeholder such as [1, 1], and LiteRT
    # computes the real one when it runs. qaccel keeps static types: the importer evaluates
    # those small integer shape computations for the stored input shapes and gives a result
    # whose signature is dynamic the shape TFLite's Prepare computes (`kernels/shape_inference.py`).

    _SHAPE_ARITHMETIC = frozenset({"SHAPE", "GATHER", "STRIDED_SLICE", "SLICE", "PACK",
                                   "CONCATENATION", "RESHAPE", "SQUEEZE", "REDUCE_PROD"})
    _MAX_SHAPE_VALUE_ELEMENTS = 64

    def _dynamic(self, t: int) -> bool:
        return self.tensors[t].dynamic

    def _shape_value(self, t: int) -> np.ndarray | None:
        """The value of small integer tensor `t` when known at import: constant data, or a
        shape computation of known values."""
        if t in self.shape_values:
            return self.shape_values[t]
        if t == -1:
            return None
        dtype = numpy_dtype(storage_type_of(self.types[t].element_type))
        shape = self.types[t].get_shape()
        if dtype not in (np.int32, np.int64) or math.prod(shape) > self._MAX_SHAPE_VALUE_ELEMENTS:
            return None
        data = self._buffer_bytes(t)
        if data is None or len(data) != math.prod(shape) * dtype.itemsize:
            return None
        return np.frombuffer(data, dtype).reshape(shape)

    def _evaluate_shape_op(self, op_name: str, in_idx: list[int], out_idx: list[int],
                           options: dict) -> None:
        from qaccel.kernels.registry import KERNELS, OpCall, run

        if op_name not in self._SHAPE_ARITHMETIC or len(out_idx) != 1:
            return
        out = self.types[out_idx[0]]
        dtype = numpy_dtype(storage_type_of(out.element_type))
        if (dtype not in (np.int32, np.int64) or self._dynamic(out_idx[0])
                or math.prod(out.get_shape()) > self._MAX_SHAPE_VALUE_ELEMENTS):
            return
        if op_name == "SHAPE":
            if in_idx and in_idx[0] != -1 and self._shape_known(in_idx[0]):
                value = np.asarray(self.types[in_idx[0]].get_shape(), dtype)
                self.shape_values[out_idx[0]] = value.reshape(out.get_shape())
            return
        values = [None if t == -1 else self._shape_value(t) for t in in_idx]
        if any(v is None for t, v in zip(in_idx, values) if t != -1):
            return
        try:
            if op_name == "REDUCE_PROD":
                axes = tuple(int(a) % values[0].ndim for a in values[1].reshape(-1))
                value = np.prod(values[0], axis=axes, keepdims=bool(options.get("keep_dims")))
            elif op_name in KERNELS:
                call = OpCall(list(values), [None] * len(values), [None], [tuple(out.get_shape())],
                              [dtype], options)  # fmt: skip
                (value,) = run(op_name, call)
            else:
                return
            value = np.asarray(value).astype(dtype).reshape(out.get_shape())
        except Exception:
            return  # the kernels' checks report it when the model runs
        self.shape_values[out_idx[0]] = value

    def _shape_known(self, t: int) -> bool:
        """Whether `t`'s type has its run-time shape: a static signature, a subgraph input (its
        stored shape is the one LiteRT runs), or a shape the importer computed."""
        return not self._dynamic(t) or t in self.known_shapes

    def _refine_dynamic_results(self, op_name: str, in_idx: list[int], out_idx: list[int],
                                options: dict) -> None:
        from qaccel.kernels.shape_inference import ShapeMismatch, infer_shape

        self._evaluate_shape_op(op_name, in_idx, out_idx, options)
        if len(out_idx) != 1 or not self._dynamic(out_idx[0]):
            return
        t = out_idx[0]
        shapes = [None if i == -1 else tuple(self.types[i].get_shape()) for i in in_idx]
        consts = [None if i == -1 else self._shape_value(i) for i in in_idx]
        try:
            inferred = infer_shape(op_name, shapes, consts, options)
        except (ShapeMismatch, ValueError, TypeError, ZeroDivisionError):
            inferred = None
        declared = tuple(self.types[t].get_shape())
        if inferred is None or any(not self._shape_known(i) for i in in_idx if i != -1):
            return
        if tuple(inferred) == declared:
            self.known_shapes.add(t)
            return
        signature = [int(d) for d in self.graph.Tensors(t).ShapeSignatureAsNumpy()]
        if len(signature) != len(inferred) or any(
                s >= 0 and s != d for s, d in zip(signature, inferred)):
            return  # not what the signature allows: the op's own check reports it
        element = self.types[t].element_type
        if isinstance(element, UniformQuantizedType) and element.is_per_axis:
            return
        self.types[t] = TensorType(element, [int(d) for d in inferred])
        self.known_shapes.add(t)

    def _check_per_axis(self, what: str, op_name: str, in_idx: list[int], out_idx: list[int]) -> None:
        """Per-axis (per-channel) quantization is refused where TFLite's kernels (and our
        legalization) read one scale and zero point: activations of the arithmetic operators,
        pools and reductions, the data input and output of the convolutions."""
        per_tensor = _PER_TENSOR_ONLY.get(op_name)
        if per_tensor is None:
            return
        roles = [*((f"input {i}", t, i) for i, t in enumerate(in_idx)),
                 *((f"output {i}", t, -1 - i) for i, t in enumerate(out_idx))]  # fmt: skip
        for role, t, pos in roles:
            if t == -1 or (per_tensor != "all" and pos not in per_tensor):
                continue
            element = self.types[t].element_type
            if isinstance(element, UniformQuantizedType) and element.is_per_axis:
                raise TFLiteImportError(
                    f"{what}: {role}, tensor {t} '{self.names[t]}', is quantized per axis, "
                    f"which {op_name} does not accept there"
                )

    def _make_op(self, op_name, opcode, code, operands, result_types, options, version, operator):
        cls = OPS_BY_TFLITE_NAME.get(op_name)
        if cls is not None and _fits_results(cls, len(result_types)):
            fitted = _fit_operands(cls, operands, self._none)
            if fitted is not None:
                try:
                    props = cls.properties_from_options(options)
                except (IndexError, KeyError, ValueError, TypeError) as e:
                    raise TFLiteImportError(
                        f"{self.where}: {op_name}: invalid options {options} ({e})"
                    ) from None
                if version > 1:
                    props["version"] = IntegerAttr(version, i32)
                return cls.create(operands=fitted, result_types=result_types, properties=props)
        if op_name == "STABLEHLO_COMPOSITE":
            return self._make_composite(operands, result_types, options, version)
        props = {
            "op_name": StringAttr(op_name),
            "opcode": IntegerAttr(opcode, i32),
            "options": py_to_attr(options),
        }
        if version > 1:
            props["version"] = IntegerAttr(version, i32)
        if code.CustomCode():
            props["custom_code"] = StringAttr(code.CustomCode().decode("utf-8", "replace"))
        if operator.custom_options:
            props["custom_options"] = py_to_attr(operator.custom_options)
        return OpaqueOp.create(operands=operands, result_types=result_types, properties=props)

    def _make_composite(self, operands, result_types, options, version):
        where = f"{self.where}: STABLEHLO_COMPOSITE"
        index = options.get("decomposition_subgraph_index", -1)
        if not 0 < index < len(self.subgraphs):
            raise TFLiteImportError(f"{where}: decomposition subgraph {index} does not exist")
        attrs = options.get("composite_attributes", b"")
        decoded = _decode_flexbuffer(attrs) if attrs else {}
        if not isinstance(decoded, dict):
            raise TFLiteImportError(f"{where}: composite_attributes is not a flexbuffer map")
        decoded = {k: v for k, v in decoded.items() if v is not None}
        props = {
            "name": StringAttr(options.get("name", "")),
            "decomposition": SymbolRefAttr(self.subgraphs[index].name),
            "composite_attributes": DictionaryAttr({k: py_to_attr(v) for k, v in decoded.items()}),
            "version": IntegerAttr(options.get("version", 0), i32),
        }
        return StableHLOCompositeOp.create(
            operands=operands, result_types=result_types, properties=props
        )


# Operand positions (outputs as -1, -2, ...) that must be quantized per tensor, or "all".
_PER_TENSOR_ONLY: dict[str, set[int] | str] = {
    **{op: "all" for op in (
        "ADD", "SUB", "MUL", "DIV", "MAXIMUM", "MINIMUM", "SQUARED_DIFFERENCE",
        "AVERAGE_POOL_2D", "MAX_POOL_2D", "L2_POOL_2D", "MEAN", "SUM", "REDUCE_MAX",
        "REDUCE_MIN", "SOFTMAX", "LOG_SOFTMAX", "LOGISTIC", "TANH", "RELU", "RELU6",
        "RELU_N1_TO_1", "HARD_SWISH", "LEAKY_RELU", "PRELU", "CONCATENATION", "PAD", "PADV2",
    )},
    "CONV_2D": {0, -1},
    "DEPTHWISE_CONV_2D": {0, -1},
    "FULLY_CONNECTED": {0, -1},
    "TRANSPOSE_CONV": {2, -1},
}  # fmt: skip


def _utf8(raw: bytes, what: str) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise TFLiteImportError(f"{what} is not UTF-8 (byte {e.start})") from None


def _type_bytes(t: TensorType) -> int:
    try:
        itemsize = numpy_dtype(storage_type_of(t.element_type)).itemsize
    except Exception:
        itemsize = 8
    return math.prod(t.get_shape()) * itemsize


def _decode_flexbuffer(data: bytes):
    from flatbuffers import flexbuffers

    return flexbuffers.Loads(bytearray(data))


def _fit_operands(cls: type[TflOp], operands: Sequence[SSAValue], none) -> list[SSAValue] | None:
    """Operands laid out for `cls`, padding omitted trailing optional inputs; None if they don't fit."""
    op_def = cls.get_irdl_definition()
    defs = [d for _, d in op_def.operands]
    from xdsl.irdl import OptOperandDef, VarOperandDef

    if any(isinstance(d, VarOperandDef) and not isinstance(d, OptOperandDef) for d in defs):
        return list(operands)
    required = [d for d in defs if not isinstance(d, OptOperandDef)]
    optional = len(defs) - len(required)
    if len(required) <= len(operands) <= len(defs):
        return list(operands)
    if len(operands) < len(required) and optional == 0:
        # TFLite lets a trailing bias be left out entirely (CONV_2D with two inputs).
        missing = len(required) - len(operands)
        if missing == 1 and cls.__name__ in _OPTIONAL_BIAS:
            return [*operands, none()]
    return None


_OPTIONAL_BIAS = {"Conv2DOp", "DepthwiseConv2DOp", "FullyConnectedOp", "TransposeConvOp"}


def _fits_results(cls: type[TflOp], count: int) -> bool:
    """Whether `cls` can have `count` results: one, or any number >= 1 for a variadic one."""
    variadic, fixed = _result_arity(cls)
    return count >= 1 if variadic else count == fixed


@functools.cache
def _result_arity(cls: type[TflOp]) -> tuple[bool, int]:
    from xdsl.irdl import VarResultDef

    defs = [d for _, d in cls.get_irdl_definition().results]
    return len(defs) == 1 and isinstance(defs[0], VarResultDef), len(defs)

