"""The fixed-arity verifier `irdl_op_definition` gives qaccel's ops (`dialects/op_definition.py`)
accepts and refuses exactly what xDSL's `OpDef.verify` does, with the same message: on the ops
of the fixture models at every stage of `vta-pipeline`, and on broken copies of them (an operand
or result too many or too few, a result of the wrong type, a property missing, unknown or of the
wrong kind, an attribute of the wrong kind). (Speed itself is measured by benchmarks/.)"""

from __future__ import annotations

import functools

import pytest
from xdsl.dialects.builtin import StringAttr, UnitAttr, i32
from xdsl.irdl import IRDLOperation
from xdsl.utils.exceptions import VerifyException

from conftest import FIXTURE_MODELS, context
from qaccel.dialects import accel, q, tfl, vta
from qaccel.dialects.op_definition import _fixed_arity_verifier

STAGES = ("", "legalize-tfl-to-q", "insert-pack-unpack", "lower-q-to-accel", "schedule-vta")


@functools.lru_cache(maxsize=None)
def _ops_of(name: str) -> tuple[IRDLOperation, ...]:
    """One op of each kind (and of each arity) of `name` after each stage."""
    from qaccel.frontend.tflite_import import import_tflite
    from qaccel.pipeline.manager import build_pipeline

    path = FIXTURE_MODELS / f"{name}.tflite"
    seen: dict[tuple, IRDLOperation] = {}
    for stage in STAGES:
        module = import_tflite(path.read_bytes(), str(path))
        if stage:
            build_pipeline(f"vta-pipeline{{stop-after={stage}}}").apply(context(), module)
        for op in module.walk():
            if isinstance(op, IRDLOperation) and type(op).__module__.startswith("qaccel."):
                key = (type(op), len(op.operands), len(op.results), tuple(op.properties))
                seen.setdefault(key, op)
    return tuple(seen.values())


def _outcome(check, op) -> str | None:
    try:
        check(op)
    except VerifyException as e:
        return str(e)
    return None


def _broken(op: IRDLOperation) -> list[IRDLOperation]:
    """Copies of `op` built without its constructor's checks, each wrong in one way."""
    cls = type(op)
    operands, types = list(op.operands), list(op.result_types)
    props, attrs = dict(op.properties), dict(op.attributes)

    def build(operands=operands, types=types, props=props, attrs=attrs) -> IRDLOperation:
        return cls.create(operands=operands, result_types=types, properties=props,
                          attributes=attrs)  # fmt: skip

    out = [build()]
    if operands:
        out += [build(operands=operands[:-1]), build(operands=operands[1:])]
    out.append(build(operands=operands + operands[:1]))
    if types:
        out += [build(types=types[:-1]), build(types=[i32, *types[1:]])]
    out.append(build(types=[*types, *types[:1]] if types else [i32]))
    for name in props:
        out.append(build(props={k: v for k, v in props.items() if k != name}))
        out.append(build(props={**props, name: StringAttr("wrong")}))
    for name in attrs:
        out.append(build(attrs={**attrs, name: StringAttr("wrong")}))
    out.append(build(props={**props, "unknown": UnitAttr()}))
    return out


@pytest.mark.parametrize("name", ["small_cnn", "residual", "mlp", "pad_concat_slice"])
def test_fixed_arity_verifier_is_opdef_verify(name):
    checked = 0
    for op in _ops_of(name):
        op_def = type(op).get_irdl_definition()
        fast = _fixed_arity_verifier(op_def)
        if fast is None:
            continue
        for candidate in _broken(op):
            assert _outcome(fast, candidate) == _outcome(op_def.verify, candidate), candidate.name
            checked += 1
    assert checked > 100


def test_ops_verify_through_it(monkeypatch):
    """A valid op of fixed arity is verified without `OpDef.verify`; its own `verify_` still
    runs after it, and an op with regions keeps xDSL's verifier."""
    op = next(o for o in _ops_of("small_cnn") if isinstance(o, accel.UnpackOp))
    op_def = type(op).get_irdl_definition()
    called = []
    monkeypatch.setattr(op_def, "verify", lambda o: called.append(o))
    fast = _fixed_arity_verifier(op_def)  # it holds xDSL's verifier (here the stand-in)
    assert fast is not None
    fast(op)
    assert called == []
    extra = _broken(op)[3]  # one operand too many: left to xDSL's verifier
    fast(extra)
    assert called == [extra]
    called.clear()
    op.verify_()  # the op's own verification: through the fast one too
    assert called == []
    assert _fixed_arity_verifier(vta.LayerOp.get_irdl_definition()) is None
    defined = [c for m in (accel, q, tfl, vta) for c in vars(m).values()
               if isinstance(c, type) and issubclass(c, IRDLOperation)
               and c.__module__ == m.__name__ and hasattr(c, "name")]  # fmt: skip
    fast = [c for c in defined if _fixed_arity_verifier(c.get_irdl_definition()) is not None]
    assert len(fast) > len(defined) * 3 // 4


def test_custom_verifier_still_runs():
    """An op's own `verify_` runs after the definition's checks (here: a bad packing)."""
    op = next(o for o in _ops_of("small_cnn") if isinstance(o, accel.UnpackOp))
    bad = type(op).create(operands=list(op.operands), result_types=[op.input.type],
                          properties=dict(op.properties))  # fmt: skip
    with pytest.raises(VerifyException):
        bad.verify_()
