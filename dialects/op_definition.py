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

from typing import TYPE_CHECKING, Any, TypeVar

from xdsl.ir import Operation
from xdsl.irdl import IRDLOperation
from xdsl.irdl import irdl_op_definition as _xdsl_definition
from xdsl.utils.exceptions import ParseError, PyRDLOpDefinitionError

if TYPE_CHECKING:  # pragma: no cover
    from xdsl.irdl.declarative_assembly_format import FormatProgram
    from xdsl.parser import Parser
    from xdsl.printer import Printer

OpT = TypeVar("OpT", bound=IRDLOperation)

_PROGRAM = "_qaccel_format_program"
"""Class attribute holding the op's compiled format program (a one-element list once built)."""


def irdl_op_definition(cls: type[OpT]) -> type[OpT]:
    """xDSL's `irdl_op_definition`; the assembly format compiled on first use."""
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
