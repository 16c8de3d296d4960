"""Export a module of `tfl` ops back to a `.tflite` flatbuffer (`qaccel-opt -t tflite`).

The inverse of `tflite_import`: the public function becomes subgraph 0 (with a signature def
named after it), every other function a further subgraph; SSA values become tensors named by
their locations; `tfl.const` data is written as buffers straight from its bytes; `none`
values are the omitted-input index -1. Only `tfl` ops can be exported: anything else stops the
export with a message naming the op.
"""

from __future__ import annotations

from typing import IO

import numpy as np
from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import FusedLoc, ModuleOp, NoneType, TensorType
from xdsl.ir import Operation, SSAValue
from xdsl.utils.target import Target

from qaccel.dialects.names import location_name, public_functions
from qaccel.frontend.errors import TFLiteExportError
from qaccel.dialects.quant import element_qparams
from qaccel.dialects.tfl import ConstOp, NoValueOp, OpaqueOp, StableHLOCompositeOp, TflOp, attr_to_py
from qaccel.dialects.types import tensor_dtype
from qaccel.frontend.tflite_writer import (
    ModelSpec,
    OperatorSpec,
    SignatureDefSpec,
    SubgraphSpec,
    TensorSpec,
    write_model,
)


def export_tflite(module: ModuleOp) -> bytes:
    """Serialize a module of `tfl` ops as `.tflite` bytes."""
    functions = [op for op in module.ops if isinstance(op, func.FuncOp)]
    public = public_functions(module)
    if not public:
        raise TFLiteExportError("tflite export: the module has no public function to be subgraph 0")
    entry = public[0]
    ordered = [entry, *(f for f in functions if f is not entry)]
    index_of = {f.sym_name.data: i for i, f in enumerate(ordered)}
    subgraphs = [_Subgraph(f, index_of).spec() for f in ordered]
    entry_spec = subgraphs[0]
    signature = SignatureDefSpec(
        key=entry.sym_name.data,
        inputs={entry_spec.tensors[t].name: t for t in entry_spec.inputs},
        outputs={entry_spec.tensors[t].name: t for t in entry_spec.outputs},
    )
    return write_model(ModelSpec(subgraphs, signature_defs=[signature]))


class _Subgraph:
    def __init__(self, function: func.FuncOp, index_of: dict[str, int]):
        self.function = function
        self.index_of = index_of
        self.tensors: list[TensorSpec] = []
        self.index: dict[SSAValue, int] = {}
        self.names: set[str] = set()

    def _fresh_name(self, name: str | None) -> str:
        base = name or f"tensor_{len(self.tensors)}"
        result, k = base, 1
        while result in self.names:
            result, k = f"{base}_{k}", k + 1
        self.names.add(result)
        return result

    def _add_tensor(self, value: SSAValue, name: str | None, data: bytes | None = None) -> int:
        t = value.type
        if not isinstance(t, TensorType):
            raise TFLiteExportError(f"tflite export: value of type {t} is not a tensor")
        spec = TensorSpec(
            self._fresh_name(name), t.get_shape(), tensor_dtype(t), element_qparams(t), data
        )
        self.tensors.append(spec)
        self.index[value] = len(self.tensors) - 1
        return self.index[value]

    def _tensor_of(self, value: SSAValue) -> int:
        if isinstance(value.type, NoneType):
            return -1
        return self.index[value]

    def spec(self) -> SubgraphSpec:
        block = self.function.body.block
        inputs = [self._add_tensor(arg, location_name(arg)) for arg in block.args]
        operators: list[OperatorSpec] = []
        outputs: list[int] = []
        for op in block.ops:
            if isinstance(op, func.ReturnOp):
                outputs = [self._tensor_of(v) for v in op.arguments]
            elif isinstance(op, ConstOp):
                self._add_tensor(op.output, location_name(op), op.value.data.data)
            elif isinstance(op, NoValueOp):
                continue
            else:
                operators.append(self._operator(op))
        return SubgraphSpec(self.function.sym_name.data, self.tensors, inputs, outputs, operators)

    def _operator(self, op: Operation) -> OperatorSpec:
        ins = [self._tensor_of(v) for v in op.operands]
        name = location_name(op)
        names = _result_names(op)
        outs = [
            self._add_tensor(r, names[i] if names else
                             name if i == 0 else (f"{name}:{i}" if name else None))
            for i, r in enumerate(op.results)
        ]
        if isinstance(op, TflOp):
            return OperatorSpec(op.TFLITE_NAME, ins, outs, op.options, op.op_version)
        if isinstance(op, OpaqueOp):
            return OperatorSpec(
                op.op_name.data,
                ins,
                outs,
                attr_to_py(op.options),
                op.op_version,
                custom_code=op.custom_code.data if op.custom_code else None,
                custom_options=attr_to_py(op.custom_options) if op.custom_options else None,
            )
        if isinstance(op, StableHLOCompositeOp):
            callee = op.decomposition.root_reference.data
            options = {
                "name": op.composite_name.data,
                "decomposition_subgraph_index": self.index_of[callee],
                "composite_attributes": _encode_flexbuffer(attr_to_py(op.composite_attributes)),
                "composite_attributes_format": "FLEXBUFFERS",
                "version": op.composite_version.value.data,
            }
            return OperatorSpec("STABLEHLO_COMPOSITE", ins, outs, options)
        raise TFLiteExportError(
            f"tflite export: cannot export '{op.name}' (only tfl ops have a TFLite form)"
        )


def _result_names(op: Operation) -> list[str] | None:
    """One name per result from a fused location of name locations (how the importer names a
    multiple-output op's tensors), else None."""
    loc = op.location
    if not isinstance(loc, FusedLoc) or len(loc.locations.data) != len(op.results):
        return None
    names = [location_name(part) for part in loc.locations.data]
    return None if any(n is None for n in names) else names  # type: ignore[return-value]


def _encode_flexbuffer(attributes: dict) -> bytes:
    if not attributes:
        return b""
    from flatbuffers import flexbuffers

    plain = {k: (v.tolist() if isinstance(v, np.ndarray) else v) for k, v in attributes.items()}
    return bytes(flexbuffers.Dumps(plain))


class TFLiteTarget(Target):
    """`-t tflite`: write the module as a `.tflite` flatbuffer (binary; use `-o FILE`)."""

    name = "tflite"

    def emit(self, ctx: Context, module: ModuleOp, output: IO[str]) -> None:
        raise TFLiteExportError("tflite export writes bytes: qaccel-opt handles it directly")
