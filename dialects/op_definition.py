"""`irdl_op_definition` as xDSL's, with the op's definition completed when the op is first used
instead of when its class is defined, and its declarative assembly format compiled when the op
is first parsed or printed.

xDSL 0.74 builds an op's whole definition while the decorator runs (`OpDef.from_pyrdl`: every
field's constraint, the accessors, the verifier) and parses its `assembly_format` into its
format program: some 40 ms for qaccel's 126 ops, paid by every process that imports a dialect,
although a compile uses about a quarter of the op kinds, prints a handful and parses none.

Here the decorator only marks the class as pending (after the cheap check xDSL makes at once)
and gives it hooks (`_hooks`), each of which completes the definition the way xDSL's decorator
would have (`define_now`: the same `OpDef`, accessors, traits and verifier, from the class as
the decorator saw it) and then does what was asked: making an instance (`Op(...)`,
`Op.create(...)`, `Op.build(...)`: no op object exists before its class is complete) and
reading the definition (`get_irdl_definition`: the parser, the verifier, the docs
generators). The class's `traits` are given without completing it (the interpreter's `impl`
asks every op whether it is a terminator). `complete(cls)` completes one at once;
`tests/test_op_definition.py` checks that every op of our dialects gets the definition
xDSL's decorator gives it.

The format program is built from the same text on the first call of the op's `parse` or
`print`, which are the methods xDSL would give it; the op's definition
(`get_irdl_definition().assembly_format`) keeps the format; `format_program(cls)` builds it at
once (a test compiles every op's format, so a broken one is still found).
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from xdsl.ir import Operation, OpTraits
from xdsl.irdl import IRDLOperation
from xdsl.irdl import irdl_op_definition as _xdsl_definition
from xdsl.irdl.operations import BeforeVariadicSingleAccessor, VarIRConstruct
from xdsl.utils.exceptions import ParseError, PyRDLOpDefinitionError

if TYPE_CHECKING:  # pragma: no cover
    from xdsl.irdl.declarative_assembly_format import FormatProgram
    from xdsl.irdl.operations import OpDef
    from xdsl.parser import Parser
    from xdsl.printer import Printer

OpT = TypeVar("OpT", bound=IRDLOperation)

_PROGRAM = "_qaccel_format_program"
"""Class attribute holding the op's compiled format program (a one-element list once built)."""


_PENDING = "_qaccel_pending_definition"
"""In a pending op class's own `__dict__`: what its definition needs restored when completed."""

_ABSENT = object()
_LOCK = threading.RLock()  # two threads asking for one pending class complete it once


def irdl_op_definition(cls: type[OpT]) -> type[OpT]:
    """xDSL's `irdl_op_definition`, completed on the op's first use (see the module's
    docstring); the class is returned as is, as xDSL's decorator returns it."""
    text = getattr(cls, "assembly_format", None)
    if text is not None:
        _refuse_format_with_methods(cls)
    hooks = _hooks(cls)
    if text is not None:  # the methods xDSL gives an op with a format, usable while pending
        hooks["parse"] = classmethod(_parse_with_format)
        hooks["print"] = _print_with_format
    saved = {name: cls.__dict__.get(name, _ABSENT) for name in hooks}
    body = frozenset(cls.__dict__)
    for name, hook in hooks.items():
        setattr(cls, name, hook)
    setattr(cls, _PENDING, (saved, body))
    return cls


def complete(cls: type[IRDLOperation]) -> None:
    """Complete the definitions of `cls` and of every pending op class it derives from, bases
    first (a no-op for a complete class)."""
    if not any(_PENDING in c.__dict__ for c in cls.__mro__):
        return
    with _LOCK:
        for owner in reversed(cls.__mro__):
            pending = owner.__dict__.get(_PENDING)
            if pending is not None:
                _complete_one(owner, pending)


def is_pending(cls: type[IRDLOperation]) -> bool:
    """Whether the definition of `cls` (or of a pending op class it derives from) waits for
    its first use."""
    return any(_PENDING in c.__dict__ for c in cls.__mro__)


def _complete_one(cls: type[IRDLOperation], pending: tuple[dict[str, Any], frozenset]) -> None:
    """Put back the class as the decorator saw it, define it as the decorator would have, then
    put back what was set on the class since (e.g. `tfl_op`'s `TFLITE_NAME`), as it would
    have been set after the definition."""
    saved, body = pending
    delattr(cls, _PENDING)
    for name, value in saved.items():
        if value is _ABSENT:
            delattr(cls, name)
        else:
            setattr(cls, name, value)
    later = {name: value for name, value in cls.__dict__.items() if name not in body}
    for name in later:
        delattr(cls, name)
    try:
        define_now(cls)
    except Exception:
        for name, value in later.items():
            setattr(cls, name, value)
        irdl_op_definition(cls)  # still pending: each use raises the definition's error again
        raise
    for name, value in later.items():
        setattr(cls, name, value)


def _hooks(owner: type[IRDLOperation]) -> dict[str, Any]:
    """The class attributes that complete a pending `owner` on first use, each then doing what
    the attribute it stands for does. Every way xDSL makes an op goes through one of them:
    `Op(...)` through `__init__`, `Op.create(...)` (the parser, `clone`) and `Op.build(...)`
    through theirs. (`__new__` is not hooked: a class whose `__new__` was once set keeps
    CPython's slower generic allocation even after it is removed.)"""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        complete(type(self))
        owner.__init__(self, *args, **kwargs)  # owner's own, now that it is complete

    functools.update_wrapper(__init__, owner.__init__)  # its signature and docstring

    @classmethod
    def create(cls, *args: Any, **kwargs: Any):
        complete(cls)
        return cls.create(*args, **kwargs)

    @classmethod
    def build(cls, *args: Any, **kwargs: Any):
        complete(cls)
        return cls.build(*args, **kwargs)

    @classmethod
    def get_irdl_definition(cls) -> OpDef:
        complete(cls)
        return cls.get_irdl_definition()

    return {
        "__init__": __init__,
        "create": create,
        "build": build,
        "get_irdl_definition": get_irdl_definition,
        "traits": _PendingTraits(),
    }


class _PendingTraits:
    """A pending class's `traits`: the `OpTraits` its definition will have, found without
    completing it (xDSL's `impl` asks every op it registers whether it is a terminator, and
    the interpreter registers every op). As `OpDef.from_pyrdl` does, the `traits` of every
    class in the MRO (but `Operation`'s own and `Generic`): one of them as it is, several
    merged, none an empty set."""

    def __get__(self, instance: object, owner: type[IRDLOperation]) -> OpTraits:
        from typing import Generic

        from xdsl.irdl import traits_def

        skip = set(Operation.mro()) | {Generic}
        found: list[OpTraits] = []
        for c in owner.__mro__:
            if c in skip:
                continue
            pending = c.__dict__.get(_PENDING)
            value = pending[0]["traits"] if pending is not None else c.__dict__.get("traits")
            if value is not None and value is not _ABSENT:
                found.append(value)
        if not found:
            return traits_def()
        if len(found) == 1:
            return found[0]
        return OpTraits(lambda: tuple(t for traits in found for t in traits.gen_traits()))


def _parse_with_format(op_type: type[OpT], parser: Parser) -> OpT:
    return format_program(op_type).parse(parser, op_type)


def _print_with_format(self: IRDLOperation, printer: Printer) -> None:
    return format_program(type(self)).print(printer, self)


def define_now(cls: type[OpT]) -> type[OpT]:
    """xDSL's `irdl_op_definition` at once (what a pending class's first use runs); the
    assembly format compiled on first use, the op's definition verified by
    `_fixed_arity_verifier` when it has a fixed number of operands and results and no regions
    or successors."""
    custom_verify = getattr(cls, "verify_", None)
    defined = _define(cls)
    _direct_accessors(defined)
    fast = _fixed_arity_verifier(defined.get_irdl_definition())
    if fast is not None:
        if custom_verify is None or custom_verify is Operation.verify_:
            defined.verify_ = fast  # type: ignore[method-assign]
        else:

            def verify_(self: IRDLOperation) -> None:
                fast(self)
                custom_verify(self)

            defined.verify_ = verify_  # type: ignore[method-assign]
    return defined


def _fixed_arity_verifier(op_def: OpDef) -> Callable[[IRDLOperation], None] | None:
    """`op_def.verify` for an op of fixed arity (every operand and result a single value, but
    for at most one optional operand and one optional result; no region, no successor), or
    None for any other op. It checks the counts directly instead of through xDSL's
    variadic-size bookkeeping (most of what verifying such an op costs), then each operand's
    and result's constraint, the properties, the attributes and the traits, in
    `OpDef.verify`'s order and with one `VerificationContext` as there. On any failure it runs
    `op_def.verify`, so the error is xDSL's own, word for word."""
    from xdsl.irdl.constraints import VerificationContext
    from xdsl.irdl.operations import (
        AttrSizedSegments,
        OptAttributeDef,
        OptionalDef,
        OptPropertyDef,
        VariadicDef,
    )
    from xdsl.utils.exceptions import VerifyException

    def arity(defs) -> tuple[int, int] | None:
        """(number of defs, index of the one optional def or -1); None if not supported."""
        optional = [i for i, (_, d) in enumerate(defs) if isinstance(d, VariadicDef)]
        if not optional:
            return len(defs), -1
        if len(optional) == 1 and isinstance(defs[optional[0]][1], OptionalDef):
            return len(defs), optional[0]
        return None

    operand_arity, result_arity = arity(op_def.operands), arity(op_def.results)
    if (op_def.regions or op_def.successors or operand_arity is None or result_arity is None
            or any(isinstance(o, AttrSizedSegments) for o in op_def.options)):  # fmt: skip
        return None
    operand_constraints = tuple(d.constr.verify for _, d in op_def.operands)
    result_constraints = tuple(d.constr.verify for _, d in op_def.results)
    properties = tuple((name, isinstance(d, OptPropertyDef), d.constr.verify)
                       for name, d in op_def.properties.items())  # fmt: skip
    known_properties = op_def.properties.keys()
    attributes = tuple((name, isinstance(d, OptAttributeDef), d.constr.verify)
                       for name, d in op_def.attributes.items())  # fmt: skip
    trait_verifiers = tuple(t.verify for t in op_def.traits)
    generic = op_def.verify

    def types_of(values, shape: tuple[int, int]) -> list[tuple] | None:
        """Each def's types (as `irdl_op_verify_arg_list` gives them), None for a wrong count."""
        n, optional = shape
        count = len(values)
        if count == n:
            return [(v.type,) for v in values]
        if optional < 0 or count != n - 1:
            return None
        types: list[tuple] = [(v.type,) for v in values]
        types.insert(optional, ())
        return types

    def verify_definition(op: IRDLOperation) -> None:
        if op.regions or op.successors:
            return generic(op)
        operand_types = types_of(op.operands, operand_arity)
        result_types = types_of(op.results, result_arity)
        if operand_types is None or result_types is None:
            return generic(op)
        context = VerificationContext()
        try:
            for check, types in zip(operand_constraints, operand_types):
                check(types, context)
            for check, types in zip(result_constraints, result_types):
                check(types, context)
            props = op.properties
            for name, optional, check in properties:
                attr = props.get(name)
                if attr is None:
                    if optional:
                        continue
                    return generic(op)
                check(attr, context)
            if any(name not in known_properties for name in props):
                return generic(op)
            attrs = op.attributes
            for name, optional, check in attributes:
                attr = attrs.get(name)
                if attr is None:
                    if optional:
                        continue
                    return generic(op)
                check(attr, context)
        except VerifyException:
            return generic(op)  # xDSL's message (with the operand's or result's position)
        for verify_trait in trait_verifiers:
            verify_trait(op)

    return verify_definition


class _DirectOperand(BeforeVariadicSingleAccessor):
    """xDSL's accessor of an operand before any variadic one (`op.operands[idx]`), reading
    the op's operand tuple directly: xDSL's builds an `OpOperands` view and goes through
    three calls to index it, some 1 µs per `op.input`, and the passes read operands by name
    tens of thousands of times per model."""

    def __get__(self, obj: Operation | None, objtype=None) -> Any:
        if obj is None:
            return super().__get__(obj, objtype)  # as xDSL's does on the class
        return obj._operands[self.idx]  # pyright: ignore[reportPrivateUsage]


_tuple_item = tuple.__getitem__


class _DirectResult(BeforeVariadicSingleAccessor):
    """xDSL's accessor of a result before any variadic one (`op.results[idx]`), without the
    dispatch on the construct kind."""

    def __get__(self, obj: Operation | None, objtype=None) -> Any:
        if obj is None:
            return super().__get__(obj, objtype)
        return _tuple_item(obj.results, self.idx)  # SSAValues.__getitem__ is a Python call


class _DirectRegion(BeforeVariadicSingleAccessor):
    """xDSL's accessor of a region before any variadic one (`op.regions[idx]`), without the
    dispatch on the construct kind."""

    def __get__(self, obj: Operation | None, objtype=None) -> Any:
        if obj is None:
            return super().__get__(obj, objtype)
        return obj.regions[self.idx]


_DIRECT = {
    VarIRConstruct.OPERAND: _DirectOperand,
    VarIRConstruct.RESULT: _DirectResult,
    VarIRConstruct.REGION: _DirectRegion,
}


_DIRECT_MADE: dict[tuple[VarIRConstruct, int], BeforeVariadicSingleAccessor] = {}


def _direct_accessors(cls: type[IRDLOperation]) -> None:
    """The op's accessors of single operands, results and regions before any variadic one
    (exactly `BeforeVariadicSingleAccessor`s) replaced by ones that return the same value
    directly."""
    op_def = cls.get_irdl_definition()
    own = vars(cls)
    for defs in (op_def.operands, op_def.results, op_def.regions):
        for name, _ in defs:
            accessor = own.get(name)
            if type(accessor) is BeforeVariadicSingleAccessor:
                key = (accessor.construct, accessor.idx)
                direct = _DIRECT_MADE.get(key)
                if direct is None:  # immutable and stateless: one per construct and index
                    direct = _DIRECT_MADE[key] = _DIRECT[key[0]](*key)
                setattr(cls, name, direct)


def _refuse_format_with_methods(cls: type[IRDLOperation]) -> None:
    if cls.print is not Operation.print or getattr(cls.parse, "__func__", None) is not (
        Operation.parse.__func__  # type: ignore[attr-defined]
    ):
        raise PyRDLOpDefinitionError(
            "Cannot define both an assembly format (with the assembly_format "
            "variable) and the print and parse methods."
        )


def _define(cls: type[OpT]) -> type[OpT]:
    """xDSL's `irdl_op_definition`, the assembly format compiled on first use."""
    text = getattr(cls, "assembly_format", None)
    if text is None:
        return _xdsl_definition(cls)
    _refuse_format_with_methods(cls)
    cls.assembly_format = None
    try:
        defined = _xdsl_definition(cls)
    finally:
        cls.assembly_format = text
    defined.get_irdl_definition().assembly_format = text
    if _PROGRAM not in defined.__dict__:
        setattr(defined, _PROGRAM, [])
    defined.parse = classmethod(_parse_with_format)  # type: ignore[method-assign, assignment]
    defined.print = _print_with_format  # type: ignore[method-assign]
    return defined


def format_program(cls: type[IRDLOperation]) -> FormatProgram:
    """The compiled assembly format of `cls` (defined by `irdl_op_definition` above, or a
    subclass of such an op), built on the first call."""
    from xdsl.irdl.declarative_assembly_format import FormatProgram

    owner = next((c for c in cls.__mro__ if _PROGRAM in c.__dict__), None)
    if owner is None:  # a pending op: its definition first (it gives the op its program)
        complete(cls)
        owner = next(c for c in cls.__mro__ if _PROGRAM in c.__dict__)
    built: list[Any] = owner.__dict__[_PROGRAM]
    if not built:
        op_def = owner.get_irdl_definition()
        try:
            built.append(FormatProgram.from_str(op_def.assembly_format, op_def))
        except ParseError as e:
            raise PyRDLOpDefinitionError(
                "Error during the parsing of the assembly format: ", e.args
            ) from e
    return built[0]


__all__ = ["complete", "define_now", "format_program", "irdl_op_definition", "is_pending"]
