"""The fusion registry of `fuse-composites`: which implemented interface becomes which fused op.

A *fusion* turns one interface, named by a composite op (`tfl.stablehlo_composite`) or by a
function's implements attribute (`tf._implements`, `tf.api_implements`, `qaccel.implements`),
into a fused op. It builds from the interface alone, never from the decomposition's body: the
operand and result types, the composite's attributes and any statically known operand values
(a `Signature`). `check` says why a signature does not fit (or None); `build` emits the fused
op, plus the static operand transforms it needs (a weight transpose, a zero bias), through a
`FusionBuilder` that folds transforms of constants on the spot; `exact` says whether the fused
op computes bit for bit what the decomposition (`Signature.decomposition`) computes, which
`fuse-composites` requires unless run with `allow-inexact=true`.

    from qaccel.fusions.registry import (
        Fusion, FusionBuilder, Signature, agrees_on_every_int8_value, register_fusion)
    from qaccel.dialects.tfl import HardSwishOp

    @register_fusion("my.hard_swish")
    class MyHardSwish(Fusion):
        '''x * relu6(x + 3) / 6 as one tfl.hard_swish.'''

        def check(self, sig: Signature) -> str | None:
            if reason := sig.expect_arity(1, 1):
                return reason
            if sig.tensor(0).get_shape() != sig.result().get_shape():
                return "the result shape differs from the operand's"
            return None

        def exact(self, sig: Signature) -> bool:
            return agrees_on_every_int8_value(self, sig)

        def build(self, b: FusionBuilder, operands, sig):
            op = HardSwishOp.create(operands=[operands[0]], result_types=[sig.result()])
            return [b.insert(op).output]

Other packages add fusions without touching qaccel, through the `qaccel.fusions` entry point
group; each entry point names a `Fusion` instance or subclass, a list of them, or a function
`register(registry)` that registers its fusions itself (e.g. to replace a built-in):

    [project.entry-points."qaccel.fusions"]
    my_fusions = "my_package.fusions:register"

The built-in fusions (`qaccel.fusions.builtin`) and the entry points are loaded once, on the
first lookup, so importing this module costs nothing.
"""

from __future__ import annotations

import re
from importlib import import_module
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import (
    BytesAttr,
    DenseIntOrFPElementsAttr,
    FusedLoc,
    LocationAttr,
    ModuleOp,
    NameLoc,
    StringAttr,
    SymbolRefAttr,
    TensorType,
    UnknownLoc,
)
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.rewriter import InsertPoint, Rewriter
from xdsl.utils.exceptions import DiagnosticException

from qaccel.dialects.names import location_name
from qaccel.dialects.quant import UniformQuantizedType, storage_type_of
from qaccel.dialects.tfl import ConstOp, NoValueOp, TransposeOp

ENTRY_POINT_GROUP = "qaccel.fusions"
BUILTIN_MODULE = "qaccel.fusions.builtin"


class FusionRegistryError(DiagnosticException):
    """A fusion that cannot be registered, or a `qaccel.fusions` plugin that fails to load."""


# --------------------------------------------------------------------------------------------
# What a fusion sees: the interface


@dataclass(frozen=True)
class Signature:
    """The interface of one composite op or implements-function, as a fusion sees it."""

    name: str
    """The implemented interface's name as written (e.g. "odml.embedding_lookup")."""
    where: str
    """How diagnostics name the composite or function, e.g. `func @lookup`."""
    operand_types: tuple[Attribute, ...]
    result_types: tuple[Attribute, ...]
    attributes: Mapping[str, Any] = field(default_factory=dict)
    """The composite's attributes as Python values (ints, floats, bools, strs, lists)."""
    constants: tuple[np.ndarray | None, ...] = ()
    """Each operand's value when it is a `tfl.const` (storage dtype), else None."""
    version: int = 0
    decomposition: func.FuncOp | None = field(default=None, compare=False)
    """The composite's decomposition, or the implements-function itself before fusion; only
    for deciding exactness (`Fusion.exact`): fusions never rewrite from it."""

    # Small checks shared by fusions; each returns a reason, or None when the check passes.

    def expect_arity(self, operands: int | Sequence[int], results: int = 1) -> str | None:
        allowed = (operands,) if isinstance(operands, int) else tuple(operands)
        if len(self.operand_types) not in allowed:
            want = " or ".join(str(n) for n in allowed)
            return f"expected {want} operands, got {len(self.operand_types)}"
        if len(self.result_types) != results:
            return f"expected {results} results, got {len(self.result_types)}"
        return None

    def tensor(self, i: int) -> TensorType:
        """Operand `i`'s type (results are `result(i)`); fusions call it after `expect_arity`."""
        t = self.operand_types[i]
        assert isinstance(t, TensorType)
        return t

    def result(self, i: int = 0) -> TensorType:
        t = self.result_types[i]
        assert isinstance(t, TensorType)
        return t

    def constant(self, i: int) -> np.ndarray | None:
        return self.constants[i] if i < len(self.constants) else None

    def attr(self, name: str, default: Any = None) -> Any:
        return self.attributes.get(name, default)


# --------------------------------------------------------------------------------------------
# How a fusion builds: ops inserted before the composite (or into the emptied function)


class FusionBuilder:
    """Inserts a fusion's ops at one place, located where the composite (or function) was.

    The fused op gets that location (its result keeps the composite's tensor name); helper
    ops get derived names (`<name>/transposed`, `<name>/zero_bias`) so that no two tensors of
    an exported model share a name. Static operand transforms go through `transpose`, `const`
    and friends: applied to a constant they fold at once (the new weights are a `tfl.const`),
    applied to a function argument they become `tfl` ops that a later constant folding can
    remove, as in TensorFlow.
    """

    def __init__(self, insert_point: InsertPoint, location: LocationAttr):
        self.insert_point = insert_point
        self.location = location
        self.inserted: list[Operation] = []

    def derived_location(self, suffix: str, base: Attribute | None = None) -> NameLoc:
        """`<base name>/<suffix>`, printed the way the base location is."""
        base = self.location if base is None else base
        if isinstance(base, FusedLoc) and base.locations.data:
            base = base.locations.data[0]
        if not isinstance(base, NameLoc):
            return NameLoc(StringAttr(suffix), UnknownLoc())
        return NameLoc(StringAttr(f"{base.desc.data}/{suffix}"), base.location)

    def insert(self, op: _OpT, name: str | None = None) -> _OpT:
        """Insert `op`; a helper op is given a `name`, the fused op none (it takes the
        composite's location)."""
        if name is not None:
            op.location = self.derived_location(name)
        elif isinstance(op.location, UnknownLoc):
            op.location = self.location
        Rewriter.insert_op(op, self.insert_point)
        self.inserted.append(op)
        return op

    @staticmethod
    def constant_value(value: SSAValue) -> np.ndarray | None:
        """The value of a `tfl.const` result (storage dtype), else None."""
        return value.owner.as_array() if isinstance(value.owner, ConstOp) else None

    def const(self, array: np.ndarray, result_type: TensorType | None = None,
              name: str = "const") -> SSAValue:
        """A `tfl.const` holding `array` (its bytes), typed `result_type` (quantized or not)."""
        array = np.ascontiguousarray(array)
        if result_type is None:
            from qaccel.dialects.types import element_type_for

            result_type = TensorType(element_type_for(array.dtype), array.shape)
        storage = TensorType(storage_type_of(result_type.element_type), array.shape)
        op = ConstOp(DenseIntOrFPElementsAttr(storage, BytesAttr(array.tobytes())), result_type)
        return self.insert(op, name).output

    def no_value(self) -> SSAValue:
        return self.insert(NoValueOp(), "none").output

    def transpose(self, value: SSAValue, perm: Sequence[int],
                  name: str = "transposed") -> SSAValue:
        """`value` with its dimensions permuted; a per-axis quantization follows its axis."""
        t = value.type
        assert isinstance(t, TensorType)
        perm = [int(p) for p in perm]
        if perm == list(range(len(perm))):
            return value
        result_type = transposed_type(t, perm)
        data = self.constant_value(value)
        if data is not None:
            folded = self.const(np.transpose(data, perm), result_type, name)
            if location_name(value.owner.location):
                folded.owner.location = self.derived_location(name, value.owner.location)
            return folded
        perm_value = self.const(np.asarray(perm, np.int32), name=f"{name}/perm")
        return self.insert(TransposeOp.create(operands=[value, perm_value],
                                              result_types=[result_type]), name).output


_OpT = TypeVar("_OpT", bound=Operation)


def transposed_type(t: TensorType, perm: Sequence[int]) -> TensorType:
    shape = t.get_shape()
    element = t.element_type
    if isinstance(element, UniformQuantizedType) and element.is_per_axis:
        q = element.qparams
        element = UniformQuantizedType(element.storage_type, q.scale, q.zero_point,
                                       list(perm).index(element.axis.data))
    return TensorType(element, [shape[p] for p in perm])


# --------------------------------------------------------------------------------------------
# Fusions


class Fusion:
    """One interface -> fused op conversion. Subclass and override `check`, `build` and,
    for a fusion that keeps the decomposition's numbers, `exact`.

    By default `fuse-composites` applies a fusion only where `exact` says the fused op
    computes bit for bit what the decomposition computes; the others also apply with
    `fuse-composites{allow-inexact=true}` (TensorFlow's behaviour: the fused op's numerics).
    """

    name: str = ""
    """The canonical interface name."""
    aliases: tuple[str, ...] = ()
    """Other names of the same interface (e.g. what ai-edge-torch calls it)."""

    @property
    def summary(self) -> str:
        doc = (type(self).__doc__ or "").strip()
        return doc.splitlines()[0] if doc else self.name

    def check(self, sig: Signature) -> str | None:
        """Why `sig` does not fit this fusion (one line), or None when it does."""
        return None

    def build(self, b: FusionBuilder, operands: Sequence[SSAValue],
              sig: Signature) -> Sequence[SSAValue]:
        """Emit the fused op for operands typed as `sig` says; return values of the result types."""
        raise NotImplementedError(f"fusion '{self.name}' has no build method")

    def exact(self, sig: Signature) -> bool:
        """Whether the fused op computes bit for bit what `sig.decomposition` computes (called
        after `check` accepted `sig`). False, the safe answer, unless a fusion knows better:
        by construction (a lookup copies bytes either way), by the decomposition's structure,
        or by proof (`agrees_on_every_int8_value`)."""
        return False

    def __repr__(self) -> str:
        return f"<fusion {self.name} ({type(self).__module__}.{type(self).__qualname__})>"


class FunctionFusion(Fusion):
    """A fusion made from a build function (and an optional check function)."""

    def __init__(self, name: str, build: Callable[..., Sequence[SSAValue]],
                 check: Callable[[Signature], str | None] | None = None,
                 aliases: Sequence[str] = (),
                 exact: bool | Callable[[Signature], bool] = False):
        self.name = name
        self.aliases = tuple(aliases)
        self._build = build
        self._check = check
        self._exact = exact

    @property
    def summary(self) -> str:
        doc = (self._build.__doc__ or "").strip()
        return doc.splitlines()[0] if doc else self.name

    def check(self, sig: Signature) -> str | None:
        return self._check(sig) if self._check is not None else None

    def build(self, b, operands, sig):
        return self._build(b, operands, sig)

    def exact(self, sig: Signature) -> bool:
        return bool(self._exact(sig) if callable(self._exact) else self._exact)

    def __repr__(self) -> str:
        return f"<fusion {self.name} ({self._build.__module__}.{self._build.__qualname__})>"


# --------------------------------------------------------------------------------------------
# Proving exactness


def agrees_on_every_int8_value(fusion: Fusion, sig: Signature) -> bool:
    """Whether the fused op and the decomposition agree on every possible input, for an
    element-wise interface of one 8-bit per-tensor quantized operand (hard-swish, GELU, ...).

    Both run in the CPU interpreter on all 256 input values; since each output element of an
    element-wise op depends on its input element alone, agreement is a proof of exactness.
    Anything that keeps the comparison from running (a decomposition the interpreter cannot
    execute, a shape mismatch) answers False.
    """
    d = sig.decomposition
    if d is None or d.is_declaration or len(sig.operand_types) != 1 or len(sig.result_types) != 1:
        return False
    if (tuple(d.function_type.inputs.data) != tuple(sig.operand_types)
            or tuple(d.function_type.outputs.data) != tuple(sig.result_types)):
        return False
    x = sig.tensor(0)
    element = x.element_type
    if not (isinstance(element, UniformQuantizedType) and not element.is_per_axis
            and element.storage_type.width.data == 8):
        return False
    from qaccel.interpreter.interpreter import run_function
    from qaccel.dialects.types import numpy_dtype

    n = int(np.prod(x.get_shape()))
    if n == 0:
        return True
    dtype = numpy_dtype(element)
    info = np.iinfo(dtype)
    values = np.arange(info.min, info.max + 1).astype(dtype)
    batches = np.resize(values, -(-len(values) // n) * n).reshape(-1, *x.get_shape())
    try:
        module, fused_name = _proof_module(fusion, sig, d)
        for batch in batches:
            ours = run_function(module, [batch], entry=fused_name)
            theirs = run_function(module, [batch], entry=d.sym_name.data)
            if not all(np.array_equal(a, b) for a, b in zip(ours, theirs, strict=True)):
                return False
    except Exception:
        return False
    return True


def _proof_module(fusion: Fusion, sig: Signature, d: func.FuncOp) -> tuple[ModuleOp, str]:
    """A module with the decomposition, every function it refers to, and the fused op alone
    in a function of the interface's type."""
    parent = d.parent_op()
    functions = {f.sym_name.data: f for f in parent.ops if isinstance(f, func.FuncOp)} \
        if isinstance(parent, ModuleOp) else {d.sym_name.data: d}
    needed, todo = [], [d.sym_name.data]
    while todo:
        name = todo.pop()
        if name in needed or name not in functions:
            continue
        needed.append(name)
        for op in functions[name].walk():
            for attr in (*op.properties.values(), *op.attributes.values()):
                if isinstance(attr, SymbolRefAttr):
                    todo.append(attr.root_reference.data)
    fused_name = "__fused"
    while fused_name in functions:
        fused_name += "_"
    block = Block(arg_types=sig.operand_types)
    placeholder = func.ReturnOp()
    block.add_op(placeholder)
    results = fusion.build(FusionBuilder(InsertPoint.before(placeholder), UnknownLoc()),
                           list(block.args), sig)
    Rewriter.replace_op(placeholder, func.ReturnOp(*results))
    fused = func.FuncOp(fused_name, (sig.operand_types, sig.result_types), Region(block))
    return ModuleOp([*(functions[n].clone() for n in needed), fused]), fused_name


# --------------------------------------------------------------------------------------------
# The registry


class FusionRegistry:
    """Fusions by interface name (canonical names and aliases).

    The built-in fusions and the `qaccel.fusions` entry points are loaded on first use; a
    registry made with `builtins=False, entry_points=False` starts empty (for tests).
    """

    def __init__(self, *, builtins: bool = True, entry_points: bool = True):
        self._by_name: dict[str, Fusion] = {}
        self._origin: dict[str, str] = {}
        self._load_builtins = builtins
        self._load_entry_points = entry_points
        self._loaded = False
        self._loading_origin = "the API"

    # -- registration ----------------------------------------------------------------------

    def register(self, fusion: Fusion | type[Fusion], *, replace: bool = False) -> Fusion:
        """Add a fusion under its name and aliases; a taken name is an error unless `replace`."""
        if isinstance(fusion, type) and issubclass(fusion, Fusion):
            fusion = fusion()
        if not isinstance(fusion, Fusion):
            raise FusionRegistryError(
                f"cannot register {fusion!r} as a fusion (expected a qaccel Fusion)"
            )
        if not fusion.name:
            raise FusionRegistryError(f"cannot register {fusion!r}: it has no name")
        names = (fusion.name, *fusion.aliases)
        if not replace:
            for n in names:
                if n in self._by_name and self._by_name[n] is not fusion:
                    raise FusionRegistryError(
                        f"fusion name '{n}' from {self._loading_origin} is already taken by "
                        f"{self._by_name[n]!r} from {self._origin[n]} (register with "
                        "replace=True to override it)"
                    )
        for n in names:
            old = self._by_name.get(n)
            if old is not None and old is not fusion:
                self._forget(old)
        for n in names:
            self._by_name[n] = fusion
            self._origin[n] = self._loading_origin
        return fusion

    def _forget(self, fusion: Fusion) -> None:
        for n in [n for n, f in self._by_name.items() if f is fusion]:
            del self._by_name[n]
            del self._origin[n]

    def unregister(self, name: str) -> None:
        """Remove the fusion that `name` (a name or alias) refers to, with all its names."""
        fusion = self._by_name.get(name)
        if fusion is not None:
            self._forget(fusion)

    # -- lookup ------------------------------------------------------------------------------

    def lookup(self, name: str) -> Fusion | None:
        self.ensure_loaded()
        return self._by_name.get(name)

    def fusions(self) -> list[Fusion]:
        """Every registered fusion once, in registration order."""
        self.ensure_loaded()
        seen: dict[int, Fusion] = {}
        for f in self._by_name.values():
            seen.setdefault(id(f), f)
        return list(seen.values())

    def origin(self, name: str) -> str | None:
        """Where the fusion named `name` came from ("built-in", "entry point ...", "the API")."""
        self.ensure_loaded()
        return self._origin.get(name)

    # -- loading -----------------------------------------------------------------------------

    def ensure_loaded(self) -> None:
        if self._loaded:
            return
        self._loaded = True
        if self._load_builtins:
            # Loaded by name, as plugins are: the built-ins build on this module.
            builtin = import_module(BUILTIN_MODULE)
            self._loading_origin = "built-in"
            try:
                for f in builtin.BUILTIN_FUSIONS:
                    self.register(f)
            finally:
                self._loading_origin = "the API"
        if self._load_entry_points:
            self.load_entry_points()

    def load_entry_points(self) -> None:
        """Register the fusions of every `qaccel.fusions` entry point (done once, lazily)."""
        from importlib.metadata import entry_points

        for ep in sorted(entry_points(group=ENTRY_POINT_GROUP), key=lambda e: e.name):
            origin = f"entry point '{ep.name} = {ep.value}'"
            self._loading_origin = origin
            try:
                self._register_plugin_object(ep.load())
            except FusionRegistryError:
                raise
            except Exception as e:
                message = str(e).strip().splitlines()[0] if str(e).strip() else ""
                raise FusionRegistryError(
                    f"fusion plugin {origin} (group {ENTRY_POINT_GROUP}) failed to load: "
                    f"{type(e).__name__}{': ' + message if message else ''}"
                ) from e
            finally:
                self._loading_origin = "the API"

    def _register_plugin_object(self, obj: Any) -> None:
        if isinstance(obj, Fusion) or (isinstance(obj, type) and issubclass(obj, Fusion)):
            self.register(obj)
        elif isinstance(obj, list | tuple):
            for item in obj:
                self._register_plugin_object(item)
        elif callable(obj):
            returned = obj(self)
            if returned is not None:
                self._register_plugin_object(returned)
        else:
            raise FusionRegistryError(
                f"fusion plugin {self._loading_origin} names {obj!r}, which is no Fusion, list "
                "of fusions or register(registry) function"
            )


_default: FusionRegistry | None = None


def default_registry() -> FusionRegistry:
    """The registry `fuse-composites` uses: built-ins, entry points, and API registrations."""
    global _default
    if _default is None:
        _default = FusionRegistry()
    return _default


def set_default_registry(registry: FusionRegistry | None) -> FusionRegistry | None:
    """Make `registry` the one `fuse-composites` uses (None: a fresh default); return the old."""
    global _default
    old, _default = _default, registry
    return old


def lookup_fusion(name: str) -> Fusion | None:
    return default_registry().lookup(name)


def register_fusion(
    target: Fusion | type[Fusion] | str | None = None,
    *,
    aliases: Sequence[str] = (),
    check: Callable[[Signature], str | None] | None = None,
    exact: bool | Callable[[Signature], bool] = False,
    replace: bool = False,
    registry: FusionRegistry | None = None,
):
    """Register a fusion in the default registry (or `registry`).

    - `register_fusion(MyFusion())` or `@register_fusion` on a `Fusion` subclass;
    - `@register_fusion("name", aliases=...)` on a `Fusion` subclass: sets its name;
    - `@register_fusion("name", check=fn, exact=...)` on a function
      `build(builder, operands, sig)`; `exact` is a bool or a function of the signature.

    Returns what it decorates (the instance when given an instance).
    """
    reg = registry if registry is not None else default_registry()
    if isinstance(target, Fusion):
        return reg.register(target, replace=replace)
    if isinstance(target, type):
        reg.register(target(), replace=replace)
        return target
    if target is not None and not isinstance(target, str):
        raise FusionRegistryError(f"register_fusion: cannot register {target!r}")
    name = target

    def decorate(obj):
        if isinstance(obj, type) and issubclass(obj, Fusion):
            if name is not None:
                obj.name = name
            if aliases:
                obj.aliases = tuple(aliases)
            reg.register(obj(), replace=replace)
            return obj
        if callable(obj):
            if name is None:
                raise FusionRegistryError(
                    f"register_fusion: give a name to register the build function {obj!r}"
                )
            reg.register(FunctionFusion(name, obj, check, aliases, exact), replace=replace)
            return obj
        raise FusionRegistryError(f"register_fusion: cannot register {obj!r}")

    return decorate


# --------------------------------------------------------------------------------------------
# Implements attributes of functions

IMPLEMENTS_ATTRIBUTES = ("qaccel.implements", "tf._implements", "tf.api_implements")
"""Function attributes naming the interface a function implements, in order of precedence."""
IMPLEMENTS_ARGUMENTS = "qaccel.implements_attributes"
"""A function attribute (dictionary) with the interface's attributes."""


def parse_implements(text: str) -> tuple[str, dict[str, Any]]:
    """The name and attributes of an implements string: a plain name, or TensorFlow's
    `NameAttrList` text, `name: "op" attr {key: "k" value { i: 10 } } ...`."""
    if not text.lstrip().startswith("name:"):
        return text, {}
    m = _NAME_RE.match(text)
    if m is None:
        raise ValueError(f"cannot read implements signature '{text}'")
    name, rest = m.group(1), text[m.end():]
    attributes: dict[str, Any] = {}
    while rest.strip():
        a = _ATTR_RE.match(rest)
        if a is None:
            raise ValueError(f"cannot read implements signature '{text}' at '{rest.strip()}'")
        key, kind, raw = a.groups()
        attributes[key] = _attr_value(kind, raw)
        rest = rest[a.end():]
    return name, attributes


_NAME_RE = re.compile(r'\s*name:\s*"([^"]*)"')
_ATTR_RE = re.compile(
    r'\s*attr\s*\{\s*key:\s*"([^"]*)"\s*value\s*\{\s*([ifbs]):\s*("(?:[^"\\]|\\.)*"|[^\s}]+)'
    r"\s*\}\s*\}"
)


def _attr_value(kind: str, raw: str) -> Any:
    if kind == "i":
        return int(raw)
    if kind == "f":
        return float(raw)
    if kind == "b":
        if raw not in ("true", "false"):
            raise ValueError(f"bad bool value '{raw}' in implements signature")
        return raw == "true"
    return raw[1:-1].encode().decode("unicode_escape") if raw.startswith('"') else raw


__all__ = [
    "ENTRY_POINT_GROUP", "FusionRegistryError", "Signature", "FusionBuilder", "Fusion",
    "FunctionFusion", "FusionRegistry", "default_registry", "set_default_registry",
    "lookup_fusion", "register_fusion", "transposed_type", "parse_implements",
    "agrees_on_every_int8_value",
    "IMPLEMENTS_ATTRIBUTES", "IMPLEMENTS_ARGUMENTS",
]  # fmt: skip
