"""`irdl_op_definition` as xDSL's, with the op's declarative assembly format compiled when the
op is first parsed or printed instead of when its class is defined.

xDSL 0.74 parses every `assembly_format` into its format program while the decorator runs:
about a third of what defining qaccel's 126 ops costs, paid by every process that imports a
dialect, although a compile prints a handful of op kinds and parses none. Here the class is
defined by xDSL's decorator without its format, then gets the same `parse`/`print` methods
xDSL would give it, building the program from the same text on their first call. The op's
definition (`get_irdl_definition().assembly_format`) keeps the format; `format_program(cls)`
builds it at once (a test compiles every op's format, so a broken one is still found).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from xdsl.ir import Operation
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


def irdl_op_definition(cls: type[OpT]) -> type[OpT]:
    """xDSL's `irdl_op_definition`; the assembly format compiled on first use, the op's
    definition verified by `_fixed_arity_verifier` when it has a fixed number of operands and
    results and no regions or successors."""
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


def _define(cls: type[OpT]) -> type[OpT]:
    """xDSL's `irdl_op_definition`, the assembly format compiled on first use."""
    text = getattr(cls, "assembly_format", None)
    if text is None:
        return _xdsl_definition(cls)
    if cls.print is not Operation.print or getattr(cls.parse, "__func__", None) is not (
        Operation.parse.__func__  # type: ignore[attr-defined]
    ):
        raise PyRDLOpDefinitionError(
            "Cannot define both an assembly format (with the assembly_format "
            "variable) and the print and parse methods."
        )
    cls.assembly_format = None
    try:
        defined = _xdsl_definition(cls)
    finally:
        cls.assembly_format = text
    defined.get_irdl_definition().assembly_format = text
    setattr(defined, _PROGRAM, [])

    @classmethod
    def parse_with_format(op_type: type[OpT], parser: Parser) -> OpT:
        return format_program(op_type).parse(parser, op_type)

    def print_with_format(self: IRDLOperation, printer: Printer) -> None:
        return format_program(type(self)).print(printer, self)

    defined.parse = parse_with_format  # type: ignore[method-assign]
    defined.print = print_with_format  # type: ignore[method-assign]
    return defined


def format_program(cls: type[IRDLOperation]) -> FormatProgram:
    """The compiled assembly format of `cls` (defined by `irdl_op_definition` above, or a
    subclass of such an op), built on the first call."""
    from xdsl.irdl.declarative_assembly_format import FormatProgram

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


__all__ = ["format_program", "irdl_op_definition"]
