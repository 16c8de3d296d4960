"""`frontend/tflite_tensors.py` reads each tensor's fields (and each buffer's) as the
generated `tflite` readers do: compared field by field on every tensor and buffer of the
fixture models and corpus."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from qaccel.frontend import tflite_schema
from qaccel.frontend.tflite_tensors import buffer_fields, operator_fields, tensor_fields
from qaccel.frontend.tflite_verify import verify_model

FIXTURES = Path(__file__).parent / "fixtures"
MODELS = sorted(FIXTURES.glob("models/*.tflite")) + sorted(FIXTURES.glob("corpus/*.tflite"))


@pytest.mark.parametrize("path", MODELS[:: max(1, len(MODELS) // 8)], ids=lambda p: p.stem)
def test_fields_as_the_generated_readers_give_them(path):
    data = path.read_bytes()
    verify_model(data, str(path))
    model = tflite_schema.generated_module("Model").Model.GetRootAs(data, 0)
    for s in range(model.SubgraphsLength()):
        graph = model.Subgraphs(s)
        fields = tensor_fields(data, graph._tab.Pos)
        assert len(fields) == graph.TensorsLength()
        for t, got in enumerate(fields):
            tensor = graph.Tensors(t)
            assert got.name == tensor.Name()
            signature = (tensor.ShapeSignatureAsNumpy() if tensor.ShapeSignatureLength()
                         else np.zeros(0, np.int32))  # fmt: skip
            assert got.dynamic == bool((signature < 0).any())
            shape = tensor.ShapeAsNumpy() if tensor.ShapeLength() else np.zeros(0, np.int32)
            assert got.shape.tolist() == shape.tolist()
            assert (got.type, got.buffer) == (tensor.Type(), tensor.Buffer())
            quant = tensor.Quantization()
            if quant is None or quant.ScaleLength() == 0:
                assert got.scales is None
                continue
            assert got.scales.tobytes() == quant.ScaleAsNumpy().astype(np.float32).tobytes()
            if quant.ZeroPointLength():
                assert got.zero_points.tolist() == quant.ZeroPointAsNumpy().tolist()
            else:
                assert got.zero_points is None or len(got.zero_points) == 0
            assert got.quantized_dimension == quant.QuantizedDimension()


@pytest.mark.parametrize("path", MODELS[:: max(1, len(MODELS) // 8)], ids=lambda p: p.stem)
def test_buffers_as_the_generated_readers_give_them(path):
    data = path.read_bytes()
    verify_model(data, str(path))
    model = tflite_schema.generated_module("Model").Model.GetRootAs(data, 0)
    for b in range(model.BuffersLength()):
        buffer = model.Buffers(b)
        offset, size, start, length = buffer_fields(data, model._tab.Pos, b)
        assert (offset, size, length) == (buffer.Offset(), buffer.Size(), buffer.DataLength())
        if length:
            assert data[start : start + length] == buffer.DataAsNumpy().tobytes()


@pytest.mark.parametrize("path", MODELS[:: max(1, len(MODELS) // 8)], ids=lambda p: p.stem)
def test_operators_as_the_generated_readers_give_them(path):
    data = path.read_bytes()
    verify_model(data, str(path))
    model = tflite_schema.generated_module("Model").Model.GetRootAs(data, 0)
    for s in range(model.SubgraphsLength()):
        graph = model.Subgraphs(s)
        fields = operator_fields(data, graph._tab.Pos)
        assert len(fields) == graph.OperatorsLength()
        for k, got in enumerate(fields):
            op = graph.Operators(k)
            assert got.opcode_index == op.OpcodeIndex()
            assert got.inputs == (op.InputsAsNumpy().tolist() if op.InputsLength() else [])
            assert got.outputs == (op.OutputsAsNumpy().tolist() if op.OutputsLength() else [])
            assert (got.options_type, got.options_2_type) == (op.BuiltinOptionsType(),
                                                              op.BuiltinOptions2Type())  # fmt: skip
            for pos, table in ((got.options_pos, op.BuiltinOptions()),
                               (got.options_2_pos, op.BuiltinOptions2())):  # fmt: skip
                assert pos == (table.Pos if table is not None else 0)
            assert got.custom_options == (op.CustomOptionsAsNumpy().tobytes()
                                          if op.CustomOptionsLength() else b"")  # fmt: skip
            assert _plain(tflite_schema.decode_stored_options(data, got)) == _plain(
                tflite_schema.decode_options(op))


def _plain(options: dict) -> dict:
    return {k: v.tolist() if isinstance(v, np.ndarray) else v for k, v in options.items()}
