"""Printing whole models as text quickly, with exactly the text of xDSL's `Printer`.

xDSL 0.74 prints every integer of an array property (`accel` ops carry per-channel bias,
multiplier and shift rows) through one `print_string` call each, and decides whether a dense
weight tensor is a splat by unpacking all of its elements into Python integers before
printing the bytes as hex anyway. `FastPrinter` joins integer lists into one string and tests
integer splats on the raw bytes: MobileNetV2's `host.mlir` (9.7 MB) prints in about a third of
the time. Everything else is xDSL's printer, so the text parses back with xDSL's `Parser`.

`elide_larger_than=N` makes IR readable: a dense elements attribute of more than N elements
prints as `dense_resource<__elided__> : type` (MLIR's `--mlir-elide-elementsattrs-if-larger`)
and a dense array of more than N as `array<i32: __elided__>`; that text does not parse back.
"""

from __future__ import annotations

import base64
import io
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Any

from dataclasses import dataclass, field

from xdsl.dialects.builtin import (
    DenseArrayBase,
    DenseIntOrFPElementsAttr,
    IndexType,
    IntegerType,
    TensorType,
)
from xdsl.ir import Attribute, Operation
from xdsl.printer import Printer

# xDSL prints dense attributes with more elements than this as a hex string.
_HEX_ABOVE = 100


ELIDED = "dense_resource<__elided__>"

_BLOB = "\x00"
"""Where `op_bytes`' printer leaves out a large constant's hex digits (put in as bytes)."""


@dataclass(eq=False, repr=False)
class FastPrinter(Printer):
    elide_larger_than: int | None = None
    """Print dense elements and arrays of more elements than this elided (not parseable)."""
    blobs: list[bytes] | None = None
    """When a list, a large integer constant's bytes are appended to it and `_BLOB` printed
    in place of their hex digits (`op_bytes` puts the digits in, as bytes)."""
    _type_texts: dict[int, tuple[Attribute, str]] = field(default_factory=dict, init=False)
    """Each tensor type's text by the type's identity (with the type, kept alive): a model
    names the same type objects over and over, and xDSL prints a type piece by piece."""
    _type_values: dict[TensorType, tuple[Attribute, str]] = field(default_factory=dict,
                                                                  init=False)  # fmt: skip
    """The same by the type's value (equal types print the same text)."""

    def print_string(self, text: str, *, indent: int | None = None) -> None:
        # Most strings hold no newline: written straight to the stream (what `print(text,
        # end="", file=stream)` in xDSL's does, without `print`'s own work per call).
        if "\n" in text or self.stream is None:
            super().print_string(text, indent=indent)
            return
        self._current_column += len(text)
        self.stream.write(text)

    def print_list(
        self, elems: Iterable[Any], print_fn: Callable[[Any], Any], delimiter: str = ", "
    ) -> None:
        if print_fn == self.print_int:  # untyped integers: `print_int` writes f"{value:d}"
            values = list(elems)
            if self.elide_larger_than is not None and len(values) > self.elide_larger_than:
                self.print_string("__elided__")  # e.g. the lanes of `accel.bias_add_zp ... by`
                return
            # int.__repr__ is f"{v:d}" for every int (a bool too: "1"), and raises as it
            # does for anything else.
            self.print_string(delimiter.join(map(int.__repr__, values)))
            return
        super().print_list(elems, print_fn, delimiter)

    def print_attribute(self, attribute: Attribute) -> None:
        if self.elide_larger_than is not None and self._print_elided(attribute):
            return
        if type(attribute) is TensorType:
            self._print_tensor_type(attribute)
            return
        if isinstance(attribute, DenseIntOrFPElementsAttr) and self._print_dense_hex(attribute):
            return
        super().print_attribute(attribute)

    def _print_tensor_type(self, attribute: TensorType) -> None:
        """The type's text as xDSL prints it, made once per type (by identity, else by
        value: equal types print the same text)."""
        known = self._type_texts.get(id(attribute))
        if known is None:
            known = self._type_values.get(attribute)
            if known is None:
                text = self._captured(attribute)
                if text is None:  # not text to repeat (never seen): printed as xDSL does
                    super().print_attribute(attribute)
                    return
                known = self._type_values[attribute] = (attribute, text)
            self._type_texts[id(attribute)] = (attribute, known[1])
        self.print_string(known[1])

    def _captured(self, attribute: Attribute) -> str | None:
        """`attribute`'s text, printed aside (None, nothing printed, when it holds a
        newline or a large constant left out)."""
        stream, column = self.stream, self._current_column
        blobs = None if self.blobs is None else len(self.blobs)
        self.stream = io.StringIO()
        try:
            super().print_attribute(attribute)
            text = self.stream.getvalue()
        finally:
            self.stream, self._current_column = stream, column
        if "\n" in text or _BLOB in text:
            if blobs is not None:
                del self.blobs[blobs:]  # type: ignore[index]
            return None
        return text

    def _print_elided(self, attribute: Attribute) -> bool:
        assert self.elide_larger_than is not None
        if isinstance(attribute, DenseIntOrFPElementsAttr):
            if len(attribute) <= self.elide_larger_than:
                return False
            self.print_string(f"{ELIDED} : ")
            self.print_attribute(attribute.get_type())
            return True
        if isinstance(attribute, DenseArrayBase):
            if len(attribute) <= self.elide_larger_than:
                return False
            self.print_string("array<")
            self.print_attribute(attribute.elt_type)
            self.print_string(": __elided__>")
            return True
        return False

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
        if self.blobs is not None:
            self.print_string('dense<"0x')
            self.stream.write(_BLOB)  # type: ignore[union-attr]
            self._current_column += 2 * len(data)
            self.blobs.append(data)
            self.print_string('"> : ')
        else:
            self.print_string(f'dense<"0x{data.hex().upper()}"> : ')
        self.print_attribute(attr.get_type())
        return True


def op_text(op: Operation, elide_larger_than: int | None = None, **options: Any) -> str:
    """`op` printed as `Printer(**options).print_op(op)` prints it, followed by a newline;
    with `elide_larger_than`, larger constants elided (see the module docstring)."""
    stream = io.StringIO()
    with _array_checks_remembered():
        FastPrinter(stream=stream, elide_larger_than=elide_larger_than, **options).print_op(op)
    stream.write("\n")
    return stream.getvalue()


def op_bytes(op: Operation) -> bytes:
    """`op_text(op).encode()`, made faster: the large constants' hex digits (most of a
    model's text) are made as bytes and joined once, never held as text."""
    return b"".join(op_pieces(op))


_HEX_CHUNK = 1 << 15
"""Bytes of a large constant whose hex digits `op_pieces` makes at a time."""


def op_pieces(op: Operation) -> Iterator[bytes]:
    """`op_bytes(op)` as consecutive pieces, made as they are asked for: the text between
    the large constants, and each constant's upper-case hex digits `_HEX_CHUNK` bytes at a
    time (a writer that writes and hashes each piece as it comes never holds the digits
    whole: some 10 MB for MobileNetV2, made and copied into fresh memory otherwise)."""
    stream = io.StringIO()
    blobs: list[bytes] = []
    with _array_checks_remembered():
        FastPrinter(stream=stream, blobs=blobs).print_op(op)
    stream.write("\n")
    parts = stream.getvalue().split(_BLOB)
    if len(parts) != len(blobs) + 1:  # a NUL printed elsewhere (never seen): text
        yield op_text(op).encode()
        return
    yield parts[0].encode()
    for data, part in zip(blobs, parts[1:]):
        view = memoryview(data)
        for start in range(0, len(view), _HEX_CHUNK):
            # upper-case hex digits, as xDSL prints them
            yield base64.b16encode(view[start : start + _HEX_CHUNK])
        yield part.encode()


@contextmanager
def _array_checks_remembered() -> Iterator[None]:
    """xDSL 0.74's declarative formats print each dense array property after asking
    `isa(attr, DenseArrayBase[IntegerType])` (then `[AnyFloat]`), which builds the generic
    type's constraint again at every call: a quarter of the time `host.mlir` took. The answer
    depends only on the hint and the classes of the array and of its element type, so it is
    asked once per such triple while `op_text` prints (any other question goes to `isa`)."""
    from xdsl.irdl import declarative_assembly_format as formats

    isa = formats.isa
    answers: dict[tuple, bool] = {}

    def remembered(arg: Any, hint: Any) -> bool:
        if type(arg) is not DenseArrayBase:
            return isa(arg, hint)
        key = (hint, type(arg.elt_type))
        found = answers.get(key)
        if found is None:
            found = answers[key] = isa(arg, hint)
        return found

    formats.isa = remembered
    try:
        yield
    finally:
        formats.isa = isa


__all__ = ["ELIDED", "FastPrinter", "op_bytes", "op_pieces", "op_text"]
