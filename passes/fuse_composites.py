"""`fuse-composites`: composite ops and implements-functions become fused ops.

TensorFlow's prepare-composite-functions for qaccel (see `FuseCompositesPass` for the rules
and `fusions.py` for the built-in fusions). The fusion registry and its `qaccel.fusions`
entry points are in `fusions/registry.py`.

Composites are processed decompositions first, so an inlined decomposition brings its own
composites already fused; a decomposition that (indirectly) uses itself fails the pass.
Inlining moves a composite's location (its output's tensor name) to the op that now makes
the value, and a constant operand a static transform replaced (an HWIO filter folded to
OHWI) is erased with the composite, so exported models keep their tensor names and no dead
weights.
"""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import (
    ArrayAttr,
    DictionaryAttr,
    FusedLoc,
    LocationAttr,
    ModuleOp,
    NameLoc,
    StringAttr,
    SymbolRefAttr,
    UnknownLoc,
)
from xdsl.ir import Attribute, Block, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter
from xdsl.utils.exceptions import PassFailedException, VerifyException

from qaccel.dialects.names import is_public, location_name
from qaccel.dialects.tfl import ConstOp, OpaqueOp, StableHLOCompositeOp, TflOp, attr_to_py
from qaccel.fusions.registry import (
    IMPLEMENTS_ARGUMENTS,
    IMPLEMENTS_ATTRIBUTES,
    Fusion,
    FusionBuilder,
    FusionRegistry,
    Signature,
    default_registry,
    parse_implements,
)

FUSED_ATTRIBUTE = "qaccel.fused"
"""Set on a function whose body a fusion replaced, to the interface it implements."""


@dataclass(frozen=True)
class FuseCompositesPass(ModulePass):
    """Replace composite ops and implements-functions by the fused ops of the fusion registry.

    Every `tfl.stablehlo_composite` op, and every `func.func` with an implements attribute
    (`qaccel.implements`, `tf._implements`, `tf.api_implements`; attributes from TensorFlow's
    `name: "..." attr {...}` form or a `qaccel.implements_attributes` dictionary), is looked
    up by name in the fusion registry. A registered fusion checks the interface (operand and
    result types, attributes) first, and a signature that does not fit fails the pass with a
    one-line reason. Then, if the fused op computes bit for bit what the decomposition
    computes (each fusion knows or proves it; `allow-inexact=true` skips that test), the
    fused op plus any static operand transforms replace the composite op, or the body of the
    function (which is kept, marked `qaccel.fused`). Composites without such a fusion are
    inlined from their decomposition (or kept: `keep-unregistered=true`); other
    implements-functions stay as they are. Private decompositions left unused are erased.

        %y = tfl.stablehlo_composite %ids, %table {name = "odml.embedding_lookup",
               decomposition = @lookup, composite_attributes = {}, version = 0 : i32}
               : (tensor<4xi32>, tensor<10x8x!q>) -> tensor<4x8x!q>
        func.func private @lookup(%ids: tensor<4xi32>, %table: tensor<10x8x!q>) -> tensor<4x8x!q> {
          %0 = tfl.gather %table, %ids {axis = 0 : i32, batch_dims = 0 : i32} : ...
          func.return %0 : tensor<4x8x!q>
        }

    becomes

        %y = tfl.embedding_lookup %ids, %table : (tensor<4xi32>, tensor<10x8x!q>) -> tensor<4x8x!q>

    and, with `allow-inexact=true` (an int8 ADD/MUL chain rounds differently from HARD_SWISH),

        func.func @hswish(%x: tensor<8x!q>) -> tensor<8x!p>
            attributes {tf._implements = "hard_swish"} {
          ... tfl.add, tfl.mul, tfl.mul ...
        }

    becomes

        func.func @hswish(%x: tensor<8x!q>) -> tensor<8x!p>
            attributes {qaccel.fused = "hard_swish"} {
          %0 = tfl.hard_swish %x : (tensor<8x!q>) -> tensor<8x!p>
          func.return %0 : tensor<8x!p>
        }

    Built-in fusions: `embedding_lookup` (`odml.embedding_lookup`), `hard_swish`
    (`aten.hardswish.default`), `conv2d_bias_relu`; other packages add theirs through the
    `qaccel.fusions` entry point group.
    """

    name = "fuse-composites"

    keep_unregistered: bool = False
    """Keep composites without an (exact) fusion instead of inlining their decompositions."""

    allow_inexact: bool = False
    """Also apply fusions whose fused op rounds differently from the decomposition, as
    TensorFlow's converter does (e.g. one HARD_SWISH for an int8 ADD/MUL chain)."""

    report: bool = False
    """Print which fusions fired (name, count, where each comes from) as one line on stderr."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        fuser = _Fuser(op, default_registry(), self.keep_unregistered, self.allow_inexact)
        fuser.run()
        if self.report:
            print(fuser.summary(), file=sys.stderr)


def _fail(message: str) -> PassFailedException:
    return PassFailedException(f"fuse-composites: {message}")


def _describe_composite(op: StableHLOCompositeOp) -> str:
    name = location_name(op.location)
    return f'tfl.stablehlo_composite "{name}"' if name else "tfl.stablehlo_composite"


def _symbol_refs(attr: Attribute) -> Iterator[str]:
    if isinstance(attr, SymbolRefAttr):
        yield attr.root_reference.data
    elif isinstance(attr, ArrayAttr):
        for a in attr.data:
            yield from _symbol_refs(a)
    elif isinstance(attr, DictionaryAttr):
        for a in attr.data.values():
            yield from _symbol_refs(a)


class _Fuser:
    def __init__(self, module: ModuleOp, registry: FusionRegistry, keep_unregistered: bool,
                 allow_inexact: bool):
        self.module = module
        self.registry = registry
        self.keep_unregistered = keep_unregistered
        self.allow_inexact = allow_inexact
        self.functions: dict[str, func.FuncOp] = {
            f.sym_name.data: f for f in module.ops if isinstance(f, func.FuncOp)
        }
        self.replaced_decompositions: set[str] = set()
        self.fired: Counter[str] = Counter()
        """Interface name -> how many composites or functions its fusion replaced."""

    def summary(self) -> str:
        if not self.fired:
            return "fuse-composites: no fusion fired"
        parts = [f"{name} x{n} ({self.registry.origin(name) or 'the API'})"
                 for name, n in sorted(self.fired.items())]  # fmt: skip
        return f"fuse-composites: {sum(self.fired.values())} fused: {', '.join(parts)}"

    def plugin(self, sig: Signature) -> str:
        """How diagnostics name where a fusion comes from (its entry point, for a plugin)."""
        return f" from {self.registry.origin(sig.name) or 'the API'}"

    def run(self) -> None:
        for f in list(self.functions.values()):
            self.fuse_function(f)
        for f in self.callees_first():
            for op in [o for o in f.walk() if isinstance(o, StableHLOCompositeOp)]:
                self.rewrite_composite(op)
        self.erase_dead_decompositions()

    # -- functions with an implements attribute ------------------------------------------------

    def implemented_interface(self, f: func.FuncOp) -> tuple[str, str, dict] | None:
        """(attribute, interface name, interface attributes) of an implements-function."""
        for key in IMPLEMENTS_ATTRIBUTES:
            attr = f.attributes.get(key)
            if attr is None:
                continue
            where = f"func @{f.sym_name.data}"
            if not isinstance(attr, StringAttr):
                raise _fail(f"{where}: {key} must be a string, got {attr}")
            try:
                name, arguments = parse_implements(attr.data)
            except ValueError as e:
                raise _fail(f"{where}: {key}: {e}") from None
            extra = f.attributes.get(IMPLEMENTS_ARGUMENTS)
            if extra is not None:
                if not isinstance(extra, DictionaryAttr):
                    raise _fail(f"{where}: {IMPLEMENTS_ARGUMENTS} must be a dictionary")
                arguments.update(attr_to_py(extra))
            return key, name, arguments
        return None

    def fuse_function(self, f: func.FuncOp) -> None:
        found = self.implemented_interface(f)
        if found is None:
            return
        key, name, arguments = found
        fusion = self.registry.lookup(name)
        if fusion is None or f.is_declaration:
            return
        sig = Signature(
            name=name,
            where=f"func @{f.sym_name.data}",
            operand_types=tuple(f.function_type.inputs.data),
            result_types=tuple(f.function_type.outputs.data),
            attributes=arguments,
            constants=(None,) * len(f.function_type.inputs.data),
            decomposition=f,
        )
        if not self.applies(fusion, sig):
            return
        block = f.body.blocks.first
        assert block is not None
        location = self.function_result_location(f)
        for extra in list(f.body.blocks)[1:]:
            f.body.erase_block(extra, safe_erase=False)
        for op in reversed(list(block.ops)):
            block.erase_op(op, safe_erase=False)
        # The fused ops go before a placeholder terminator, so each verifies as it is built.
        placeholder = func.ReturnOp()
        block.add_op(placeholder)
        results = self.build(fusion, sig, list(block.args), InsertPoint.before(placeholder),
                             location)
        Rewriter.replace_op(placeholder, func.ReturnOp(*results))
        del f.attributes[key]
        f.attributes.pop(IMPLEMENTS_ARGUMENTS, None)
        f.attributes[FUSED_ATTRIBUTE] = StringAttr(name)

    @staticmethod
    def function_result_location(f: func.FuncOp) -> LocationAttr:
        """Where the fused op of a function's body is: where its first result was made."""
        ret = f.body.blocks.first.last_op if f.body.blocks.first else None
        if isinstance(ret, func.ReturnOp) and ret.arguments:
            owner = ret.arguments[0].owner
            if isinstance(owner, Operation) and not isinstance(owner.location, UnknownLoc):
                return owner.location
        return NameLoc(StringAttr(f.sym_name.data), UnknownLoc())

    # -- composites ----------------------------------------------------------------------------

    def decomposition_of(self, op: StableHLOCompositeOp) -> func.FuncOp:
        callee = op.decomposition.root_reference.data
        f = self.functions.get(callee)
        if f is None or len(op.decomposition.nested_references.data) > 0:
            raise _fail(
                f"{_describe_composite(op)} ('{op.composite_name.data}'): decomposition "
                f"{op.decomposition} is not a function of this module"
            )
        return f

    def callees_first(self) -> list[func.FuncOp]:
        """The functions, every decomposition before the functions using it."""
        order: list[func.FuncOp] = []
        state: dict[str, str] = {}

        def visit(name: str, path: list[str]) -> None:
            state[name] = "active"
            f = self.functions[name]
            for op in f.walk():
                if not isinstance(op, StableHLOCompositeOp):
                    continue
                callee = self.decomposition_of(op).sym_name.data
                if state.get(callee) == "active":
                    cycle = " -> ".join(f"@{n}" for n in [*path, name, callee][
                        [*path, name].index(callee):])
                    raise _fail(f"decompositions call themselves: {cycle}")
                if callee not in state:
                    visit(callee, [*path, name])
            state[name] = "done"
            order.append(f)

        for name in self.functions:
            if name not in state:
                visit(name, [])
        return order

    def rewrite_composite(self, op: StableHLOCompositeOp) -> None:
        name = op.composite_name.data
        decomposition = self.decomposition_of(op)
        fusion = self.registry.lookup(name)
        sig = None
        if fusion is not None:
            sig = Signature(
                name=name,
                where=_describe_composite(op),
                operand_types=tuple(v.type for v in op.operands),
                result_types=tuple(r.type for r in op.results),
                attributes=attr_to_py(op.composite_attributes),
                constants=tuple(
                    v.owner.as_array() if isinstance(v.owner, ConstOp) else None
                    for v in op.operands
                ),
                version=op.composite_version.value.data,
                decomposition=decomposition,
            )
        if fusion is not None and self.applies(fusion, sig):
            results = self.build(fusion, sig, list(op.operands), InsertPoint.before(op),
                                 op.location)
        elif self.keep_unregistered:
            return
        else:
            results = self.inline(op, decomposition)
        for old, new in zip(op.results, results, strict=True):
            old.replace_all_uses_with(new)
        operands = set(op.operands)
        Rewriter.erase_op(op)
        # Weights a static transform replaced (an HWIO filter now folded to OHWI) are dead.
        for value in operands:
            if isinstance(value.owner, ConstOp) and not value.uses:
                Rewriter.erase_op(value.owner)
        self.replaced_decompositions.add(decomposition.sym_name.data)

    def inline(self, op: StableHLOCompositeOp, callee: func.FuncOp) -> list[SSAValue]:
        """Clone the decomposition's body in place of `op`; return the values it returns."""
        where = f"{_describe_composite(op)} ('{op.composite_name.data}')"
        inputs = list(callee.function_type.inputs.data)
        outputs = list(callee.function_type.outputs.data)
        operand_types = [v.type for v in op.operands]
        result_types = [r.type for r in op.results]
        if inputs != operand_types or outputs != result_types:
            raise _fail(
                f"{where}: cannot inline @{callee.sym_name.data}: it has type "
                f"({', '.join(map(str, inputs))}) -> ({', '.join(map(str, outputs))}), the "
                f"composite ({', '.join(map(str, operand_types))}) -> "
                f"({', '.join(map(str, result_types))})"
            )
        blocks = list(callee.body.blocks)
        if len(blocks) != 1:
            raise _fail(f"{where}: cannot inline @{callee.sym_name.data}: it has "
                        f"{len(blocks)} blocks, not one")
        block: Block = blocks[0]
        mapping: dict[SSAValue, SSAValue] = dict(zip(block.args, op.operands))
        returned: list[SSAValue] | None = None
        for inner in block.ops:
            if isinstance(inner, func.ReturnOp):
                returned = [mapping.get(v, v) for v in inner.arguments]
                break
            Rewriter.insert_op(inner.clone(value_mapper=mapping), InsertPoint.before(op))
        if returned is None:
            raise _fail(f"{where}: cannot inline @{callee.sym_name.data}: no func.return")
        # The composite's result names (its outputs' tensor names) move to the ops now
        # producing those values, so traces and exports still find them.
        names = self.result_locations(op)
        for value, loc in zip(returned, names):
            owner = value.owner
            if (isinstance(owner, Operation) and owner.parent_block() is op.parent_block()
                    and len(owner.results) == 1 and loc is not None
                    and not isinstance(owner, ConstOp)):
                owner.location = loc
        return returned

    @staticmethod
    def result_locations(op: Operation) -> list[LocationAttr | None]:
        loc = op.location
        if isinstance(loc, FusedLoc):
            locs = list(loc.locations.data)
            return [locs[i] if i < len(locs) else None for i in range(len(op.results))]
        return [loc if i == 0 else None for i in range(len(op.results))]

    # -- fusing --------------------------------------------------------------------------------

    def applies(self, fusion: Fusion, sig: Signature) -> bool:
        """Whether `fusion` replaces `sig`'s composite or function: it must fit the signature
        (else the pass fails) and, unless inexact fusions are allowed, be exact."""
        try:
            reason = fusion.check(sig)
        except Exception as e:
            raise _fail(f"{sig.where}: fusion {fusion!r}{self.plugin(sig)} failed checking '{sig.name}': "
                        f"{type(e).__name__}: {e}") from e
        if reason:
            raise _fail(f"{sig.where} implements '{sig.name}', which does not fit the fused "
                        f"op: {reason}")
        if self.allow_inexact:
            return True
        try:
            return bool(fusion.exact(sig))
        except Exception as e:
            raise _fail(f"{sig.where}: fusion {fusion!r}{self.plugin(sig)} failed deciding whether '{sig.name}' "
                        f"is exact: {type(e).__name__}: {e}") from e

    def build(self, fusion: Fusion, sig: Signature, operands: Sequence[SSAValue],
              where: InsertPoint, location: LocationAttr) -> list[SSAValue]:
        """Build the fused ops, then make sure they are what the interface promised."""
        builder = FusionBuilder(where, location)
        try:
            results = list(fusion.build(builder, operands, sig))
        except Exception as e:
            raise _fail(f"{sig.where}: fusion {fusion!r}{self.plugin(sig)} failed building '{sig.name}': "
                        f"{type(e).__name__}: {e}") from e
        types = [r.type for r in results]
        if types != list(sig.result_types):
            raise _fail(
                f"{sig.where}: fusion {fusion!r} built ({', '.join(map(str, types))}), the "
                f"interface '{sig.name}' returns ({', '.join(map(str, sig.result_types))})"
            )
        for op in builder.inserted:
            try:
                op.verify()
            except VerifyException as e:
                raise _fail(f"{sig.where}: fusion {fusion!r} built an invalid {op.name}: "
                            f"{str(e).strip().splitlines()[0]}") from None
            self.check_kernel_accepts(op, fusion, sig)
        self.fired[sig.name] += 1
        return results

    @staticmethod
    def check_kernel_accepts(op: Operation, fusion: Fusion, sig: Signature) -> None:
        """A fused op LiteRT's reference kernel would refuse (its Prepare checks) does not
        fit: better a clear error now than a model that no runtime loads."""
        if not isinstance(op, TflOp | OpaqueOp):
            return
        from qaccel.kernels import registry as kernels
        from qaccel.interpreter.prepare import ExecutionError, prepare_op

        try:
            prepare_op(op)
        except ExecutionError:
            return  # no CPU kernel for this op: nothing to check it against
        except kernels.Refusal as e:
            raise _fail(f"{sig.where} implements '{sig.name}', which does not fit the fused "
                        f"op: {e}") from None

    # -- clean-up ------------------------------------------------------------------------------

    def symbol_uses(self) -> Counter[str]:
        uses: Counter[str] = Counter()
        for op in self.module.walk():
            for attr in (*op.properties.values(), *op.attributes.values()):
                uses.update(_symbol_refs(attr))
        return uses

    def erase_dead_decompositions(self) -> None:
        while True:
            uses = self.symbol_uses()
            dead = [
                name for name in self.replaced_decompositions
                if name in self.functions and uses[name] == 0
                and not is_public(self.functions[name])
            ]
            if not dead:
                return
            for name in dead:
                Rewriter.erase_op(self.functions.pop(name))
