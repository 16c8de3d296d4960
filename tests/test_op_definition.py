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


# --------------------------------------------------------------------------------------------
# Definitions completed on first use: the same as xDSL's decorator makes them.

_SIGNATURES = r"""
import json, re, sys
import qaccel.dialects.op_definition as od
if sys.argv[1] == "eager":  # every op defined as the class statement runs, as xDSL does
    od.irdl_op_definition = od.define_now
from qaccel.dialects import get_all_dialects

ops = [op for load in get_all_dialects().values() for op in load().operations]
pending = sum(od.is_pending(op) for op in ops)
traits_before = {op.name: sorted(map(repr, op.traits)) for op in ops}
addresses = re.compile(r" at 0x[0-9a-f]+")

def text(value):
    return addresses.sub("", repr(value))

def signature(op):
    d = op.get_irdl_definition()
    members = {name: getattr(value, "__qualname__", type(value).__qualname__)
               for name, value in vars(op).items() if name not in ("__doc__", "__dict__")}
    return {
        "name": d.name, "operands": text(d.operands), "results": text(d.results),
        "properties": text(d.properties), "attributes": text(d.attributes),
        "regions": text(d.regions), "successors": text(d.successors),
        "options": text(d.options), "accessors": text(d.accessor_names),
        "format": d.assembly_format, "directives": sorted(d.custom_directives),
        "traits": sorted(map(text, d.traits)), "class_traits": sorted(map(text, op.traits)),
        "members": sorted(members.items()),
    }

# bases of derived ops last in this order: a derived op completes its bases first itself
got = {op.name: signature(op) for op in reversed(ops)}
after = {op.name: sorted(map(repr, op.traits)) for op in ops}
print(json.dumps({"pending": pending, "ops": got, "traits_unchanged": traits_before == after}))
"""


def _signatures(mode: str) -> dict:
    import json
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", _SIGNATURES, mode], capture_output=True,
                          text=True, check=True)  # fmt: skip
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_every_op_completed_on_first_use_is_defined_as_xdsls_decorator_defines_it():
    eager, lazy = _signatures("eager"), _signatures("lazy")
    assert eager["pending"] == 0
    assert lazy["pending"] == len(lazy["ops"]) > 100  # nothing completed by importing
    assert lazy["traits_unchanged"] and eager["traits_unchanged"]
    assert sorted(lazy["ops"]) == sorted(eager["ops"])
    for name, signature in eager["ops"].items():
        assert lazy["ops"][name] == signature, name


def _pending_op():
    from xdsl.irdl import traits_def
    from xdsl.traits import Pure

    class Unary(IRDLOperation):  # a base class of ops, as tfl's TflOp
        lhs = operand_def(i32)
        res = result_def(i32)
        traits = traits_def(Pure())

        def __init__(self, value):
            super().__init__(operands=[value], result_types=[i32])

    class Negate(Unary):
        name = "test.negate"
        assembly_format = "$lhs attr-dict `:` type($res)"

    op_type = irdl_op_definition(Negate)
    op_type.LATER = "set after the decorator"  # as `tfl_op` sets TFLITE_NAME
    return op_type


def test_each_use_completes_a_pending_op():
    from xdsl.dialects.test import TestOp
    from xdsl.traits import Pure

    from qaccel.dialects.op_definition import is_pending

    value = TestOp(result_types=[i32]).results[0]
    op_type = _pending_op()
    assert op_type.has_trait(Pure)  # its traits are known without completing it
    assert is_pending(op_type)
    op = op_type(value)  # making an instance completes it
    assert not is_pending(op_type)
    assert op.lhs is value and op.res.type == i32 and op_type.LATER == "set after the decorator"
    assert op_type.get_irdl_definition().assembly_format == "$lhs attr-dict `:` type($res)"
    op.verify()
    # create, build, the definition and the format each complete it too.
    for use in (lambda t: t.create(operands=[value], result_types=[i32]),
                lambda t: t.build(operands=[value], result_types=[i32]),
                lambda t: t.get_irdl_definition(),
                format_program):  # fmt: skip
        op_type = _pending_op()
        use(op_type)
        assert not is_pending(op_type)
        assert op_type.get_irdl_definition().operands[0][0] == "lhs"


def test_a_broken_definition_fails_at_each_use():
    class Broken(IRDLOperation):
        name = "test.broken"
        res = result_def(i32)
        stray = 3  # neither a field nor a ClassVar

    op_type = irdl_op_definition(Broken)
    for _ in range(2):
        with pytest.raises(PyRDLOpDefinitionError, match="stray"):
            op_type.get_irdl_definition()
        with pytest.raises(PyRDLOpDefinitionError, match="stray"):
            op_type.create(result_types=[i32])


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
    # Every qaccel op with such an operand or result has the direct accessor for it, once its
    # definition is complete.
    for load in get_all_dialects().values():
        for op_type in load().operations:
            op_type.get_irdl_definition()  # completes an op defined on first use
            assert not any(type(a) is BeforeVariadicSingleAccessor
                           for a in vars(op_type).values()), op_type.name  # fmt: skip
