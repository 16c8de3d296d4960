"""Printing whole models as text quickly, with exactly the text of xDSL's `Printer`.

xDSL 0.74 prints every integer of an array property (`accel` ops carry per-channel bias,
multiplier and shift rows) through one `print_string` call each, and decides whether a dense
weight tensor is a splat by unpacking all of its elements into Python integers before
printing the bytes as hex anyway. `FastPrinter` joins integer lists into one string and tests
integer splats on the raw bytes: MobileNetV2's `host.mlir` (9.7 MB) prints in about a third of
the time. Everything else is xDSL's printer, so the text parses back with xDSL's `Parser`.
"""

from __future__ import annotations

import io
from collections.abc import Callable, Iterable
from typing import Any

from xdsl.dialects.builtin import DenseIntOrFPElementsAttr, IndexType, IntegerType
from xdsl.ir import Attribute, Operation
from xdsl.printer import Printer

# xDSL prints dense attributes with more elements than this as a hex string.
_HEX_ABOVE = 100


class FastPrinter(Printer):
    def print_list(
        self, elems: Iterable[Any], print_fn: Callable[[Any], Any], delimiter: str = ", "
    ) -> None:
        if print_fn == self.print_int:  # untyped integers: `print_int` writes f"{value:d}"
            self.print_string(delimiter.join([f"{v:d}" for v in elems]))
            return
        super().print_list(elems, print_fn, delimiter)

    def print_attribute(self, attribute: Attribute) -> None:
        if isinstance(attribute, DenseIntOrFPElementsAttr) and self._print_dense_hex(attribute):
            return
        super().print_attribute(attribute)

    def _print_dense_hex(self, attr: DenseIntOrFPElementsAttr) -> bool:
        """Print a large non-splat integer tensor as xDSL does (`dense<"0x..."> : type`);
        False, printing nothing, for any other dense attribute."""
        el = attr.get_element_type()
        if isinstance(el, IndexType):
            size = 8
        elif isinstance(el, IntegerType) and el.width.data in (8, 16, 32, 64):
            size = el.width.data // 8
        else:
            return False
        data = attr.data.data
        n = len(data) // size
        # Integers are equal exactly when their bytes are: a splat repeats its first element.
        if n <= _HEX_ABOVE or data == data[:size] * n:
            return False
        self.print_string(f'dense<"0x{data.hex().upper()}"> : ')
        self.print_attribute(attr.get_type())
        return True


def op_text(op: Operation) -> str:
    """`op` printed as `Printer().print_op(op)` prints it, followed by a newline."""
    stream = io.StringIO()
    FastPrinter(stream=stream).print_op(op)
    stream.write("\n")
    return stream.getvalue()


__all__ = ["FastPrinter", "op_text"]
