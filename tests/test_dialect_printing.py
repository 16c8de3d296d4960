"""`FastPrinter` / `op_text` (host.mlir of qaccel-compile) print exactly xDSL's text."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pytest
from conftest import context
from qaccel.dialects import tfl
from qaccel.dialects.printing import op_text
from qaccel.frontend.tflite_import import import_tflite
from xdsl.dialects.builtin import (
    BytesAttr,
    DenseIntOrFPElementsAttr,
    IndexType,
    ModuleOp,
    TensorType,
    f32,
    i1,
    i8,
    i16,
    i32,
    i64,
)
from xdsl.parser import Parser
from xdsl.printer import Printer

RNG = np.random.default_rng(7)


def _xdsl_text(op) -> str:
    out = io.StringIO()
    Printer(stream=out).print_op(op)
    return out.getvalue() + "\n"


def _const(element, dtype, values) -> tfl.ConstOp:
    array = np.asarray(values, dtype)
    attr = DenseIntOrFPElementsAttr(TensorType(element, array.shape), BytesAttr(array.tobytes()))
    return tfl.ConstOp(attr)


def test_dense_attributes_print_as_xdsl_prints_them():
    consts = [
        _const(i8, np.int8, RNG.integers(-128, 128, (10, 20))),  # hex
        _const(i8, np.int8, np.full(300, -3)),  # splat
        _const(i8, np.int8, [5] * 100 + [6]),  # 101 elements, splat but for the last
        _const(i8, np.int8, RNG.integers(-128, 128, 100)),  # 100: a list
        _const(i16, np.int16, RNG.integers(-(2**15), 2**15, 101)),
        _const(i32, np.int32, RNG.integers(-(2**31), 2**31, (3, 67))),
        _const(i32, np.int32, np.full((4, 40), 70000)),
        _const(i64, np.int64, RNG.integers(-(2**40), 2**40, 120)),
        _const(IndexType(), np.int64, np.arange(150)),
        _const(i1, np.int8, RNG.integers(0, 2, 130)),
        _const(f32, np.float32, RNG.standard_normal(130)),  # floats: xDSL's own path
        _const(i8, np.int8, RNG.integers(-128, 128, 7)),
    ]
    module = ModuleOp(consts)
    text = op_text(module)
    assert text == _xdsl_text(module)
    assert 'dense<"0x' in text
    parsed = Parser(context(), text).parse_module()
    for a, b in zip(module.walk(), parsed.walk()):
        if isinstance(a, tfl.ConstOp):
            assert a.value == b.value


def test_pipeline_module_prints_as_xdsl_prints_it():
    """Array properties of the accel ops (per-channel rows) and quantized types."""
    from qaccel.pipeline.manager import available_passes
    from qaccel.tools.qaccel_compile import parser
    from qaccel.tools.pass_flags import pass_manager_for

    path = Path(__file__).parent / "fixtures" / "models" / "small_cnn.tflite"
    module = import_tflite(path.read_bytes(), str(path))
    assert op_text(module) == _xdsl_text(module)
    args = parser().parse_args([str(path), "-o", "unused"])
    manager, _ = pass_manager_for(args, available_passes(), "test")
    manager.run(context(), module)
    text = op_text(module)
    assert text == _xdsl_text(module)
    assert "accel." in text
    assert op_text(Parser(context(), text).parse_module()) == text


def test_array_checks_are_remembered_only_while_printing():
    """op_text answers xDSL's dense-array `isa` questions once per kind of array, and puts
    xDSL's `isa` back afterwards, also when printing fails."""
    from xdsl.irdl import declarative_assembly_format as formats

    isa = formats.isa
    path = Path(__file__).parent / "fixtures" / "models" / "small_cnn.tflite"
    module = import_tflite(path.read_bytes(), str(path))
    op_text(module)
    assert formats.isa is isa

    class Broken(tfl.ConstOp):
        def print(self, printer):
            raise RuntimeError("cannot print")

    with pytest.raises(RuntimeError, match="cannot print"):
        op_text(ModuleOp([Broken(_const(i8, np.int8, [1]).value)]))
    assert formats.isa is isa


def test_host_ir_bytes_are_the_text_encoded(monkeypatch):
    """`op_bytes` (host.mlir's bytes, its large constants' digits made as bytes) is
    `op_text(...).encode()`: large constants, repeated and equal tensor types; and when the
    mark left for the digits occurs in the text elsewhere, the text is printed plainly.
    `op_pieces` gives the same bytes in pieces, a large constant's digits in several."""
    from qaccel.dialects import printing
    from qaccel.dialects.printing import op_bytes, op_pieces

    consts = [
        _const(i8, np.int8, RNG.integers(-128, 128, (10, 20))),
        _const(i8, np.int8, RNG.integers(-128, 128, (10, 20))),  # an equal type, not the same
        _const(i32, np.int32, RNG.integers(-(2**31), 2**31, (3, 67))),
        _const(i8, np.int8, np.full(300, -3)),
    ]
    module = ModuleOp(consts)
    assert op_bytes(module) == op_text(module).encode() == _xdsl_text(module).encode()
    path = Path(__file__).parent / "fixtures" / "models" / "small_cnn.tflite"
    small = import_tflite(path.read_bytes(), str(path))
    assert op_bytes(small) == _xdsl_text(small).encode()
    monkeypatch.setattr(printing, "_HEX_CHUNK", 64)  # the (10, 20) constants: 4 pieces each
    pieces = list(op_pieces(module))
    assert all(type(p) is bytes for p in pieces) and len(pieces) > 3 * 4
    assert b"".join(pieces) == _xdsl_text(module).encode()
    monkeypatch.setattr(printing, "_BLOB", "%")  # every SSA name holds one
    assert op_bytes(module) == _xdsl_text(module).encode()
    assert b"".join(op_pieces(module)) == _xdsl_text(module).encode()
