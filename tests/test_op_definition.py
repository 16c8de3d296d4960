"""qaccel's ops are defined by xDSL's `irdl_op_definition` with their assembly formats built on
first use (`dialects/op_definition.py`): every format still compiles, and an op defined so
parses and prints as xDSL's decorator would make it."""

from __future__ import annotations

import pytest
from xdsl.dialects.builtin import i32
from xdsl.irdl import IRDLOperation, operand_def, result_def
from xdsl.irdl import irdl_op_definition as xdsl_definition
from xdsl.irdl.declarative_assembly_format import FormatProgram
from xdsl.utils.exceptions import PyRDLOpDefinitionError

from qaccel.dialects import get_all_dialects
from qaccel.dialects.op_definition import format_program, irdl_op_definition


def test_every_format_of_our_dialects_compiles():
    count = 0
    for name, load in get_all_dialects().items():
        for op in load().operations:
            text = op.get_irdl_definition().assembly_format
            if text is None:
                continue
            assert op.assembly_format == text, op.name
            assert isinstance(format_program(op), FormatProgram), op.name
            count += 1
    assert count > 100  # tfl, q, accel and vta ops


def _pair(define):
    class Add(IRDLOperation):
        name = "test.add"
        lhs = operand_def(i32)
        rhs = operand_def(i32)
        res = result_def(i32)
        assembly_format = "$lhs `,` $rhs attr-dict `:` type($res)"

    return define(Add)


def test_same_text_as_xdsls_decorator():
    from xdsl.context import Context
    from xdsl.dialects.builtin import ModuleOp
    from xdsl.dialects.test import TestOp
    from xdsl.ir import Dialect
    from xdsl.parser import Parser
    from xdsl.printer import Printer
    import io

    texts = []
    for define in (xdsl_definition, irdl_op_definition):
        op_type = _pair(define)
        ctx = Context()
        ctx.load_dialect(Dialect("test", [op_type, TestOp]))
        ctx.load_dialect(Dialect("builtin", [ModuleOp]))
        source = ('%a = "test.op"() : () -> i32\n%b = test.add %a, %a {k = 1 : i32} : i32\n'
                  '"test.op"(%b) : (i32) -> ()')  # fmt: skip
        module = Parser(ctx, source).parse_module()
        stream = io.StringIO()
        Printer(stream=stream).print_op(module)
        texts.append(stream.getvalue())
    assert texts[0] == texts[1]
    assert "test.add %" in texts[1]


def test_a_broken_format_fails_when_built():
    class Bad(IRDLOperation):
        name = "test.bad"
        res = result_def(i32)
        assembly_format = "$nothing attr-dict"

    with pytest.raises(PyRDLOpDefinitionError):
        xdsl_definition(type("Bad", (Bad,), {}))
    op_type = irdl_op_definition(type("Bad", (Bad,), {}))
    with pytest.raises(PyRDLOpDefinitionError, match="assembly format"):
        format_program(op_type)


def test_a_format_with_its_own_print_is_refused():
    class Both(IRDLOperation):
        name = "test.both"
        assembly_format = "attr-dict"

        def print(self, printer):
            pass

    for define in (xdsl_definition, irdl_op_definition):
        with pytest.raises(PyRDLOpDefinitionError, match="Cannot define both"):
            define(type("Both", (Both,), {}))


def test_direct_accessors_return_what_xdsls_return():
    """Single operands, results and regions before any variadic one are read directly;
    every accessor gives what xDSL's would, on an op whose optional operand is present and
    absent, and its class still refuses writes."""
    from xdsl.dialects.builtin import TensorType
    from xdsl.ir import Block, Region
    from xdsl.irdl.operations import BeforeVariadicSingleAccessor
    from xdsl.utils.test_value import create_ssa_value

    from qaccel.dialects import accel
    from qaccel.dialects import vta
    from qaccel.dialects.op_definition import _DirectOperand, _DirectRegion, _DirectResult

    t = TensorType(i32, [1, 1, 2, 2, 1, 16])
    x, y = create_ssa_value(t), create_ssa_value(t)
    ops = [accel.MaxOp(x, value=[0]), accel.MaxOp(x, y), accel.RoundRShiftOp(x, [1]),
           vta.LayerOp("eltwise", [t], Region(Block()))]  # fmt: skip
    direct = 0
    for op in ops:
        for name, accessor in vars(type(op)).items():
            if isinstance(accessor, _DirectOperand | _DirectResult | _DirectRegion):
                xdsls = BeforeVariadicSingleAccessor(accessor.construct, accessor.idx)
                assert getattr(op, name) is xdsls.__get__(op, type(op)), (op.name, name)
                with pytest.raises(NotImplementedError):
                    setattr(op, name, x)
                direct += 1
    assert direct >= 7  # lhs, output of both max ops; input, output of the shift; body
    assert ops[0].rhs is None and ops[1].rhs is y  # the optional operand keeps xDSL's accessor
    # Every qaccel op with such an operand or result has the direct accessor for it.
    for load in get_all_dialects().values():
        for op_type in load().operations:
            assert not any(type(a) is BeforeVariadicSingleAccessor
                           for a in vars(op_type).values()), op_type.name  # fmt: skip
