"""Accelerator partitions of an ORIGINAL `.tflite`: which of its operators one accelerator
program replaces, that program, and the original model with each partition spliced out.

    parts = plan_partitions(model_bytes, compiler)            # list[Partition]
    done = compile_partition(model_bytes, parts[0], compiler)  # CompiledPartition (program)
    programs = compile_partition_model(outlined_bytes, compiler)  # one program per subgraph

A `Partition` is a set of whole original operators of one subgraph (`ops`, operator indices),
with the tensors entering it (`inputs`) and leaving it (`outputs`, used by an operator outside
it or a subgraph output), tensor indices of that subgraph. `compiler(model_bytes)` compiles a
`.tflite` with the normal pipeline (`qaccel.api.compile`, or `qaccel-compile`'s own
configuration: `compiler_for(config)` in `qaccel.api`) and returns its `CompiledModel`; it is
passed in because the pipeline sits beside this layer, not under it.

Partitions are decided from a compiled whole model (`partitions_of`): every accelerator
function called from the entry function maps back to original tensors at its boundary (an
`accel.pack` of a subgraph input or of a value named by the importer after its tensor; an
`accel.unpack` read by an imported `tfl` op or returned), and the partition is every original
operator between those inputs and outputs. A function whose boundary does not map back is no
partition (`PlanNote`, one line).

`compile_partitions` gives each partition its program. It takes the program of the partition's
accelerator function from the whole-model compile that decided it when that compile proves
the function computes exactly the partition (`_reused`): the call's arguments are packs of
the partition's inputs and its results are unpacked (in one layout) to its outputs, each once
and at its original shape; and, from provenance (the importer names each op after the tensor
its operator produces; legalization keeps the name on the operator's last `q` op and names
the others `NAME/q.op`; lowering moves it to the op computing the tensor), every original
operator an op of the function names is one of the partition's, and no host op or other
function computes (part of) one of them. Otherwise, or with `recompile=True`
(QACCEL_PARTITION_RECOMPILE=1), `compile_partition` checks the decision the only way that
cannot be wrong: it extracts the partition's operators into a one-subgraph model (inputs and
outputs as the partition's), compiles that, and requires exactly ONE accelerator function
taking the submodel's inputs (each packed once) and giving its outputs (each unpacked once),
with no other op on the host; its program (`program/writer.py`'s `program_blob`) computes the partition exactly,
as the compiler keeps meaning. Anything else is a `PartitionError` (one line): the partition
stays original CPU operators. Both ways give the same partitions and bit-identical programs on
every fixture and corpus model (tests/test_litert_splice.py,
benchmarks/bench_partition_reuse.py); a function fed packed results of another function
(unet's skip connections) proves nothing from the whole model and is compiled again.

A STABLEHLO_COMPOSITE operator is one operator of its subgraph like any other: qaccel's compile
fuses it (or inlines its decomposition) in place, so a partition may hold it, and its program
computes the decomposition; the partition's submodel has the decomposition inlined where the
composite stood (`_inlined`), as LiteRT inlines a composite its compiler plugin does not
select, so the plugin, the delegate and qaccel-compile compile the same operators into the same
program. A decomposition subgraph is never partitioned on its own (`decomposition_subgraphs`):
LiteRT shows it to no plugin, and the delegate skips it.

`splice` writes the two LiteRT models: the original with each compiled partition's
operators replaced by one `DISPATCH_OP` (its program after the flatbuffer, LiteRT's
`bytecode_offset`, and the `LiteRtStamp` metadata) or one `QACCEL_VTA` op (its program an
external constant tensor), in a topological order that keeps the original order elsewhere;
every other operator, tensor, buffer, signature and metadata entry is the original's (the
program tensors of the custom-op flavour are appended after the original tensors).
`partition_files` gives `partitions.json` and `programs/<name>.qprog`.

`litert_files` is two steps, so that `qaccel-compile` can begin it once the module is final,
while the layers are emitted: `prepare_litert_files` reads the module only (the model read,
the partitions decided and proven, and both models' flatbuffers made for them: neither
depends on the programs' bytes, only on fixed-width fields set once they are known), and
`finish_litert_files` takes the programs from the compile and sets those fields. A partition
set that changes on the way (a program that cannot be taken) is spliced again.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import heapq
import json
import re
import struct
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from qaccel.backends.litert.names import CUSTOM_CODE, DISPATCH_CODE

PARTITIONS_FILE = "partitions.json"
PROGRAMS_DIR = "programs"
PARTITIONS_FORMAT = 1


class PartitionError(Exception):
    """A partition the accelerator program could not cover (one line for the user)."""


@dataclass(frozen=True)
class Partition:
    """Whole original operators `ops` of subgraph `subgraph`, the tensors entering them
    (`inputs`) and leaving them (`outputs`); tensor indices of that subgraph, sorted."""

    name: str
    subgraph: int
    ops: tuple[int, ...]
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]


@dataclass(frozen=True)
class CompiledPartition:
    """A partition and its program. `inputs`/`outputs`: the partition's tensors in the order
    of the program's inputs and outputs (the order of the spliced op's operands)."""

    partition: Partition
    program: bytes
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]
    reused: bool = field(default=False, compare=False)
    """The program is the whole-model compile's (`compile_partitions`), not compiled again."""


@dataclass
class PlanNote:
    """Why an accelerator function of the compiled model is no partition (one line)."""

    function: str
    reason: str


@dataclass
class Plan:
    partitions: list[Partition] = field(default_factory=list)
    notes: list[PlanNote] = field(default_factory=list)


Compiler = Callable[[bytes], object]  # .tflite bytes -> CompiledModel (raises on failure)


# --------------------------------------------------------------------------------------------
# The original graph


def _parsed(model_bytes: bytes):
    """`read_model(model_bytes)`, parsed once for deciding the partitions, extracting them and
    both splices (never changed: `splice` changes a `_copy`)."""
    if isinstance(model_bytes, bytes):
        return _parsed_bytes(model_bytes)
    from qaccel.frontend.tflite_writer import read_model

    return read_model(model_bytes)


@functools.lru_cache(maxsize=2)
def _parsed_bytes(model_bytes: bytes):
    from qaccel.frontend.tflite_writer import read_model

    return read_model(model_bytes)


def _copy(spec):
    """A copy of a ModelSpec whose subgraphs' operator and tensor lists and metadata can be
    changed without changing `spec` (tensors and operators themselves are shared)."""
    subgraphs = [dataclasses.replace(sg, tensors=list(sg.tensors), operators=list(sg.operators))
                 for sg in spec.subgraphs]  # fmt: skip
    return dataclasses.replace(spec, subgraphs=subgraphs, metadata=dict(spec.metadata))


class _Graph:
    """One subgraph's producers and consumers."""

    def __init__(self, sg):
        self.sg = sg
        self.producer: dict[int, int] = {}
        self.consumers: dict[int, list[int]] = {}
        for k, op in enumerate(sg.operators):
            for t in op.outputs:
                if t >= 0:
                    self.producer[t] = k
            for t in op.inputs:
                if t >= 0:
                    self.consumers.setdefault(t, []).append(k)
        self.graph_outputs = set(sg.outputs)
        counts: dict[str, int] = {}
        for t in sg.tensors:
            counts[t.name] = counts.get(t.name, 0) + 1
        self.by_name = {t.name: i for i, t in enumerate(sg.tensors) if counts[t.name] == 1}

    def is_constant(self, t: int) -> bool:
        return self.sg.tensors[t].data is not None and t not in self.producer

    def boundary(self, ops: set[int]) -> tuple[tuple[int, ...], tuple[int, ...]]:
        """The non-constant tensors `ops` read but do not produce; those they produce that
        another operator or the subgraph's outputs read."""
        produced = {t for k in ops for t in self.sg.operators[k].outputs if t >= 0}
        inputs = {t for k in ops for t in self.sg.operators[k].inputs
                  if t >= 0 and t not in produced and not self.is_constant(t)}  # fmt: skip
        outputs = {t for t in produced
                   if t in self.graph_outputs
                   or any(c not in ops for c in self.consumers.get(t, ()))}  # fmt: skip
        return tuple(sorted(inputs)), tuple(sorted(outputs))

    def between(self, inputs: set[int], outputs: set[int]) -> set[int] | None:
        """Every operator computing `outputs` from `inputs` and constants (None: an output
        depends on another non-constant tensor)."""
        ops: set[int] = set()
        todo = list(outputs)
        seen: set[int] = set()
        while todo:
            t = todo.pop()
            if t in seen or t in inputs:
                continue
            seen.add(t)
            k = self.producer.get(t)
            if k is None:
                if self.is_constant(t):
                    continue
                return None  # a subgraph input (or a variable) the function does not take
            if k not in ops:
                ops.add(k)
                todo.extend(x for x in self.sg.operators[k].inputs if x >= 0)
        return ops


# --------------------------------------------------------------------------------------------
# Deciding partitions from a compiled whole model


class _Names:
    """Which original tensor a value of the compiled module is: a subgraph input, or the
    result of an op the importer (or a pass keeping it, as legalization does for the last
    op of an operator's decomposition) named after the tensor, seen through packs, unpacks,
    formed layers (their body's yield) and calls (the callee's return)."""

    def __init__(self, graph: _Graph, module, entry):
        from xdsl.dialects import func

        self.graph, self.entry = graph, entry
        self.functions = {op.sym_name.data: op for op in module.ops if isinstance(op, func.FuncOp)}

    def tensor(self, v, depth: int = 0) -> int | None:
        from xdsl.dialects import func
        from xdsl.dialects.builtin import FusedLoc, NameLoc
        from xdsl.ir import BlockArgument

        from qaccel.dialects import accel, vta

        if depth > 64:
            return None
        if isinstance(v, BlockArgument):
            if v.owner is self.entry.body.block and v.index < len(self.graph.sg.inputs):
                return self.graph.sg.inputs[v.index]
            return None
        op = v.owner
        if isinstance(op, accel.PackOp | accel.UnpackOp):
            return self.tensor(op.input, depth + 1)
        if isinstance(op, func.CallOp):
            callee = self.functions.get(op.callee.string_value())
            if callee is None or not callee.body.blocks:
                return None
            ret = list(callee.body.block.ops)[-1]
            return self.tensor(ret.operands[v.index], depth + 1)
        if isinstance(op, vta.LayerOp):
            body = list(op.body.block.ops)
            return self.tensor(body[-1].operands[v.index], depth + 1) if body else None
        loc = op.location
        if isinstance(loc, FusedLoc):
            locs = loc.locations.data
            loc = locs[v.index] if v.index < len(locs) else None
        elif v.index != 0:
            loc = None
        if not isinstance(loc, NameLoc):
            return None
        t = self.graph.by_name.get(loc.desc.data)
        if t is None or t not in self.graph.producer:
            return None
        return t


    def result_tensor(self, r) -> int | None:
        """The original tensor a call result is: read from its host users (an imported `tfl`
        op reads it at an operand position, or the entry function returns it), else from the
        callee's returned value."""
        seen = self.used_tensor(r)
        return seen if seen is not None else self.tensor(r)

    def used_tensor(self, value, depth: int = 0) -> int | None:
        from xdsl.dialects import func

        from qaccel.dialects import accel

        graph = self.graph
        found: set[int] = set()
        for use in value.uses:
            user = use.operation
            if isinstance(user, func.ReturnOp) and user.parent_op() is self.entry:
                found.add(graph.sg.outputs[use.index])
                continue
            if isinstance(user, accel.UnpackOp) and depth < 2:
                t = self.used_tensor(user.output, depth + 1)
                if t is None:
                    return None
                found.add(t)
                continue
            if not user.name.startswith("tfl.") or not user.results:
                return None
            produced = self.tensor(user.results[0])
            if produced is None:
                return None
            op = graph.sg.operators[graph.producer[produced]]
            if len(op.inputs) != len(user.operands) or use.index >= len(op.inputs):
                return None
            found.add(op.inputs[use.index])
        if len(found) != 1:
            return None
        (t,) = found
        return t if t >= 0 else None


def partitions_of(compiled, model_bytes: bytes) -> Plan:
    """The partitions of the original model `model_bytes` that the accelerator functions of
    `compiled` (its compile) cover, and a note for each function that maps to none."""
    return _plan(compiled, model_bytes)[0]


def _plan(compiled, model_bytes: bytes):
    """`partitions_of`'s plan, with the graph, the names and each partition's call (in the
    order of `plan.partitions`), for taking the programs from the same compile (`_reused`)."""
    return _module_plan(compiled.module, set(compiled.functions), model_bytes)


def _module_plan(module, functions: set[str], model_bytes: bytes):
    """`_plan` from the compiled module and the names of its accelerator functions (the
    compile's `functions`) alone."""
    from xdsl.dialects import func

    from qaccel.dialects.names import public_functions

    spec = _parsed(model_bytes)
    plan = Plan()
    calls: list = []
    if not spec.subgraphs:
        return plan, None, None, calls
    graph = _Graph(spec.subgraphs[0])
    public = public_functions(module)
    if not public:
        return plan, graph, None, calls
    entry = public[0]
    names = _Names(graph, module, entry)
    taken: set[int] = set()
    for call in entry.body.block.ops:
        if not isinstance(call, func.CallOp) or call.callee.string_value() not in functions:
            continue
        name = call.callee.string_value()
        inputs = [names.tensor(v) for v in call.arguments]
        outputs = [names.result_tensor(r) for r in call.results]
        if None in inputs:
            plan.notes.append(PlanNote(name, "an input is no tensor of the original model"))
            continue
        if None in outputs or not outputs:
            plan.notes.append(PlanNote(name, "a result is no tensor of the original model"))
            continue
        ops = graph.between(set(inputs), set(outputs))
        if not ops:
            plan.notes.append(PlanNote(name, "its results do not follow from its inputs in "
                                             "the original model"))  # fmt: skip
            continue
        if ops & taken:
            plan.notes.append(PlanNote(name, "it shares operators with another partition"))
            continue
        taken |= ops
        ins, outs = graph.boundary(ops)
        plan.partitions.append(Partition(name, 0, tuple(sorted(ops)), ins, outs))
        calls.append(call)
    return plan, graph, names, calls


def plan_partitions(model_bytes: bytes, compiler: Compiler) -> list[Partition]:
    """The partitions qaccel-compile decides for `model_bytes` (compiled by `compiler`)."""
    return partitions_of(compiler(model_bytes), model_bytes).partitions


# --------------------------------------------------------------------------------------------
# Compiling one partition


def extract_partition(model_bytes: bytes, partition: Partition) -> bytes:
    """A one-subgraph `.tflite` of the partition's operators (in their original order), its
    inputs and outputs the partition's; tensors keep their names and constants their data."""
    return partition_submodel(model_bytes, partition)[0]


def partition_submodel(model_bytes: bytes, partition: Partition) -> tuple[bytes, dict[int, int]]:
    """`extract_partition`'s model and where each original tensor went (original index ->
    submodel index)."""
    from qaccel.frontend.tflite_writer import ModelSpec, OperatorSpec, SubgraphSpec

    spec = _parsed(model_bytes)
    if not 0 <= partition.subgraph < len(spec.subgraphs):
        raise PartitionError(f"{partition.name}: no subgraph {partition.subgraph}")
    sg = spec.subgraphs[partition.subgraph]
    index: dict[int, int] = {}
    tensors = []

    def tensor(t: int) -> int:
        if t < 0:
            return t
        if t not in index:
            if t >= len(sg.tensors):
                raise PartitionError(f"{partition.name}: no tensor {t}")
            index[t] = len(tensors)
            tensors.append(sg.tensors[t])
        return index[t]

    ins = [tensor(t) for t in partition.inputs]
    operators = []
    for k in sorted(partition.ops):
        if not 0 <= k < len(sg.operators):
            raise PartitionError(f"{partition.name}: no operator {k}")
        op = sg.operators[k]
        if op.op == COMPOSITE:
            ins_, outs_ = [tensor(t) for t in op.inputs], [tensor(t) for t in op.outputs]
            operators += _inlined(spec, op, ins_, outs_, tensors, partition.name)
            continue
        if any(key.endswith("subgraph_index") for key in op.options):
            raise PartitionError(f"{partition.name}: operator {k} ({op.op}) calls a subgraph")
        operators.append(OperatorSpec(op.op, [tensor(t) for t in op.inputs],
                                      [tensor(t) for t in op.outputs], op.options, op.version,
                                      op.custom_code, op.custom_options,
                                      [tensor(t) for t in op.intermediates]))  # fmt: skip
    outs = [tensor(t) for t in partition.outputs]
    sub = SubgraphSpec(sg.name or "main", tensors, ins, outs, operators)
    from qaccel.frontend.tflite_writer import write_model

    return write_model(ModelSpec([sub], description="qaccel partition")), index


COMPOSITE = "STABLEHLO_COMPOSITE"


def decomposition_subgraphs(spec) -> set[int]:
    """The subgraphs of `spec` that are the decomposition of a STABLEHLO_COMPOSITE operator
    (of any subgraph): never partitioned on their own, in any flow (their composite is)."""
    found = set()
    for sg in spec.subgraphs:
        for op in sg.operators:
            if op.op == COMPOSITE:
                found.add(int(op.options.get("decomposition_subgraph_index", -1)))
    return {s for s in found if 0 <= s < len(spec.subgraphs)}


def _inlined(spec, op, inputs: list[int], outputs: list[int], tensors: list, what: str,
             depth: int = 0) -> list:
    """The operators of composite `op`'s decomposition, inlined where `op` stood (as LiteRT
    inlines a composite its compiler plugin does not select): its inputs and outputs become
    the composite's operands and results (`inputs`, `outputs`: indices into `tensors`), its
    other tensors are appended to `tensors`; a composite inside is inlined in turn."""
    from qaccel.frontend.tflite_writer import OperatorSpec

    s = int(op.options.get("decomposition_subgraph_index", -1))
    if depth > 16 or not 0 <= s < len(spec.subgraphs):
        raise PartitionError(f"{what}: composite {op.options.get('name', '')!r} has no "
                             "decomposition subgraph")  # fmt: skip
    sub = spec.subgraphs[s]
    if len(sub.inputs) != len(inputs) or len(sub.outputs) != len(outputs):
        raise PartitionError(f"{what}: composite {op.options.get('name', '')!r} does not "
                             "match its decomposition's inputs and outputs")  # fmt: skip
    index = dict(zip(sub.inputs, inputs))
    index.update(zip(sub.outputs, outputs))

    def tensor(t: int) -> int:
        if t < 0:
            return t
        if t not in index:
            index[t] = len(tensors)
            tensors.append(sub.tensors[t])
        return index[t]

    operators = []
    for inner in sub.operators:
        ins, outs = [tensor(t) for t in inner.inputs], [tensor(t) for t in inner.outputs]
        if inner.op == COMPOSITE:
            operators += _inlined(spec, inner, ins, outs, tensors, what, depth + 1)
            continue
        if any(key.endswith("subgraph_index") for key in inner.options):
            raise PartitionError(f"{what}: the decomposition of composite "
                                 f"{op.options.get('name', '')!r} calls a subgraph")  # fmt: skip
        operators.append(OperatorSpec(inner.op, ins, outs, inner.options, inner.version,
                                      inner.custom_code, inner.custom_options,
                                      [tensor(t) for t in inner.intermediates]))  # fmt: skip
    return operators


def _program_of(compiled, n_inputs: int, n_outputs: int, what: str):
    """(program, input order, output order) of a compiled submodel that is one accelerator
    function (see the module docstring), else PartitionError."""
    from xdsl.dialects import func

    from qaccel.backends.vta.program.writer import ProgramWriteError, program_blob
    from qaccel.dialects import accel
    from qaccel.dialects.names import public_functions
    from qaccel.dialects.tfl import ConstOp

    if len(compiled.functions) != 1:
        raise PartitionError(f"{what}: compiled into {len(compiled.functions)} accelerator "
                             "functions, not one")  # fmt: skip
    entry = public_functions(compiled.module)[0]
    ops = [op for op in entry.body.block.ops if not isinstance(op, ConstOp)]
    calls = [op for op in ops if isinstance(op, func.CallOp)]
    host = [op for op in ops if not isinstance(op, func.CallOp | accel.PackOp | accel.UnpackOp
                                               | func.ReturnOp)]  # fmt: skip
    if host:
        raise PartitionError(f"{what}: {host[0].name} stays on the host")
    (call,) = calls
    name = call.callee.string_value()
    f = next(op for op in compiled.module.ops
             if isinstance(op, func.FuncOp) and op.sym_name.data == name)  # fmt: skip
    args = entry.body.block.args
    order_in, inputs = [], []
    for v in call.arguments:
        pack = v.owner
        if not isinstance(pack, accel.PackOp) or pack.input not in args:
            raise PartitionError(f"{what}: an input of @{name} is not a packed model input")
        pad = pack.padding_value.value.data if pack.padding_value is not None else 0
        inputs.append((pack.packing, tuple(pack.input.type.get_shape()), pad))
        order_in.append(pack.input.index)
    if sorted(order_in) != list(range(n_inputs)):
        raise PartitionError(f"{what}: @{name} does not take each input once")
    ret = ops[-1]
    order_out, outputs = [], []
    for r in call.results:
        users = [u.operation for u in r.uses]
        if len(users) != 1 or not isinstance(users[0], accel.UnpackOp):
            raise PartitionError(f"{what}: a result of @{name} is not unpacked once")
        unpack = users[0]
        places = [u.index for u in unpack.output.uses if u.operation is ret]
        if len(places) != 1 or len(list(unpack.output.uses)) != 1:
            raise PartitionError(f"{what}: a result of @{name} is not one model output")
        outputs.append((unpack.packing, tuple(unpack.output.type.get_shape())))
        order_out.append(places[0])
    if sorted(order_out) != list(range(n_outputs)):
        raise PartitionError(f"{what}: @{name} does not give each output once")
    try:
        blob = program_blob(compiled, name, f, inputs, outputs)
    except ProgramWriteError as e:
        reason = str(e).removeprefix(f"{name}: ")
        raise PartitionError(f"{what}: {reason}") from None
    return blob, order_in, order_out


def compile_partition(model_bytes: bytes, partition: Partition,
                      compiler: Compiler) -> CompiledPartition:  # fmt: skip
    """The partition's program (see the module docstring); PartitionError when the submodel
    is not one accelerator function."""
    sub = extract_partition(model_bytes, partition)
    try:
        compiled = compiler(sub)
    except PartitionError:
        raise
    except Exception as e:  # noqa: BLE001  the compiler's own one-line messages
        raise PartitionError(f"{partition.name}: {str(e).splitlines()[0] if str(e) else e!r}") from None
    blob, order_in, order_out = _program_of(compiled, len(partition.inputs),
                                            len(partition.outputs), partition.name)  # fmt: skip
    return CompiledPartition(partition, blob, tuple(partition.inputs[i] for i in order_in),
                             tuple(partition.outputs[i] for i in order_out))  # fmt: skip


# --------------------------------------------------------------------------------------------
# Taking a partition's program from the compile that decided it


class _NotProven(Exception):
    """The whole-model compile does not show that @f computes exactly the partition."""


_OP_SUFFIX = re.compile(r"[a-z_][a-z0-9_]*\.[a-z0-9_.]+")


class _Provenance:
    """Which original operators an op of the compiled module computes (part of), read from
    its location: the importer names an op after the tensor its operator produces,
    legalization keeps that name on an operator's last `q` op and names the ones before it
    `NAME/q.op`, and lowering moves it to the op computing the tensor. A location naming no
    (uniquely named) tensor an operator produces tells nothing."""

    def __init__(self, graph: _Graph):
        self.graph = graph
        self.memo: dict[str, int | None] = {}

    def operator(self, name: str) -> int | None:
        if name not in self.memo:
            graph = self.graph
            t = graph.by_name.get(name)
            if t is None and "/" in name:
                head, tail = name.rsplit("/", 1)
                if _OP_SUFFIX.fullmatch(tail):
                    t = graph.by_name.get(head)
            self.memo[name] = graph.producer.get(t) if t is not None else None
        return self.memo[name]

    def of(self, op) -> set[int]:
        from xdsl.dialects.builtin import FusedLoc, NameLoc

        loc = op.location
        locs = loc.locations.data if isinstance(loc, FusedLoc) else (loc,)
        found = set()
        for part in locs:
            if isinstance(part, NameLoc):
                k = self.operator(part.desc.data)
                if k is not None:
                    found.add(k)
        return found

    def by_function(self, module, entry) -> dict[str, dict[int, str]]:
        """For each function, the original operators its ops compute (operator -> the name of
        one op computing it); in the entry function only the host ops (not its packs,
        unpacks, calls and constants)."""
        from xdsl.dialects import func

        from qaccel.dialects import accel
        from qaccel.dialects.tfl import ConstOp

        skip = (func.CallOp, func.ReturnOp, accel.PackOp, accel.UnpackOp, ConstOp)
        out: dict[str, dict[int, str]] = {}
        for f in module.ops:
            if not isinstance(f, func.FuncOp):
                continue
            seen: dict[int, str] = {}
            for op in f.walk():
                if op is f or (f is entry and isinstance(op, skip)):
                    continue
                for k in self.of(op):
                    seen.setdefault(k, op.name)
            out[f.sym_name.data] = seen
        return out


def _reused(compiled, graph: _Graph, names: _Names, computed: dict[str, dict[int, str]],
            call, part: Partition) -> CompiledPartition:  # fmt: skip
    """The program of the accelerator function `call` calls, taken from the whole-model
    compile `compiled` when that compile shows it computes exactly `part`: its arguments are
    packs of the partition's inputs (each once), its results are each unpacked (one layout)
    to the partition's outputs (each once), at their original shapes; every original operator
    the function's ops name is one of the partition's, and no host op nor other function
    computes (part of) one of them. Else `_NotProven`."""
    from qaccel.backends.vta.program.writer import ProgramWriteError

    proof = _proof(graph, names, computed, call, part)
    try:
        return _proven_program(compiled, proof)
    except ProgramWriteError as e:
        raise _NotProven(str(e)) from None


@dataclass(frozen=True)
class _Proof:
    """What `_reused` needs of the module to take a partition's program from the compile:
    the function, the (packing, shape, padding) of each argument and (packing, shape) of each
    result, and the partition's tensors in their order."""

    part: Partition
    name: str
    function: object
    inputs: tuple
    outputs: tuple
    order_in: tuple[int, ...]
    order_out: tuple[int, ...]


def _proven_program(compiled, proof: _Proof) -> CompiledPartition:
    """The proven partition's program from `compiled` (ProgramWriteError: none)."""
    from qaccel.backends.vta.program.writer import program_blob

    blob = program_blob(compiled, proof.name, proof.function, list(proof.inputs),
                        list(proof.outputs))  # fmt: skip
    return CompiledPartition(proof.part, blob, proof.order_in, proof.order_out, reused=True)


def _proof(graph: _Graph, names: _Names, computed: dict[str, dict[int, str]], call,
           part: Partition) -> _Proof:  # fmt: skip
    """`_reused`'s checks, which read only the module (`_NotProven` when one fails)."""
    from qaccel.dialects import accel

    name = call.callee.string_value()
    f = names.functions.get(name)
    if f is None or not f.body.blocks:
        raise _NotProven(f"no body of @{name}")
    for k in part.ops:  # as compile_partition: the spliced op could not carry the subgraph
        op = graph.sg.operators[k]  # (a composite's program computes its decomposition)
        if op.op != COMPOSITE and any(key.endswith("subgraph_index") for key in op.options):
            raise _NotProven(f"operator {k} calls a subgraph")
    entry = names.entry
    if sum(1 for op in entry.body.block.ops if op.name == "func.call"
           and op.callee.string_value() == name) != 1:  # fmt: skip
        raise _NotProven(f"@{name} is called more than once")
    tensors = graph.sg.tensors

    def same_shape(value, t: int) -> bool:
        return tuple(value.type.get_shape()) == tuple(tensors[t].shape)

    order_in, inputs = [], []
    for v in call.arguments:
        pack = v.owner
        if not isinstance(pack, accel.PackOp):
            raise _NotProven(f"an argument of @{name} is no accel.pack")
        t = names.tensor(pack.input)
        if t is None or not same_shape(pack.input, t):
            raise _NotProven(f"an argument of @{name} packs no partition input")
        pad = pack.padding_value.value.data if pack.padding_value is not None else 0
        inputs.append((pack.packing, tuple(pack.input.type.get_shape()), pad))
        order_in.append(t)
    if sorted(order_in) != sorted(part.inputs) or len(set(order_in)) != len(order_in):
        raise _NotProven(f"@{name} does not take each partition input once")
    order_out, outputs = [], []
    for r in call.results:
        unpacks = [u.operation for u in r.uses]
        if not unpacks or not all(isinstance(u, accel.UnpackOp) for u in unpacks):
            raise _NotProven(f"a result of @{name} is not only unpacked")
        forms = {(u.packing, tuple(u.output.type.get_shape())) for u in unpacks}
        if len(forms) != 1:
            raise _NotProven(f"a result of @{name} is unpacked in several layouts")
        t = names.result_tensor(r)
        if t is None or not same_shape(unpacks[0].output, t):
            raise _NotProven(f"a result of @{name} is no partition output")
        outputs.append(forms.pop())
        order_out.append(t)
    if sorted(order_out) != sorted(part.outputs) or len(set(order_out)) != len(order_out):
        raise _NotProven(f"@{name} does not give each partition output once")
    ops = set(part.ops)
    inside = computed.get(name, {})
    foreign = sorted(set(inside) - ops)
    if foreign:
        k = foreign[0]
        raise _NotProven(f"{inside[k]} in @{name} computes operator {k} "
                         f"({graph.sg.operators[k].op}), outside the partition")  # fmt: skip
    for other, seen in computed.items():
        if other != name and ops & set(seen):
            k = min(ops & set(seen))
            where = "the host" if other == entry.sym_name.data else f"@{other}"
            raise _NotProven(f"{seen[k]} on {where} computes operator {k} "
                             f"({graph.sg.operators[k].op}) of the partition")  # fmt: skip
    return _Proof(part, name, f, tuple(inputs), tuple(outputs), tuple(order_in),
                  tuple(order_out))  # fmt: skip


def compile_partition_model(model_bytes: bytes, compiler: Compiler) -> list[bytes]:
    """One program per subgraph of `model_bytes` (LiteRT's outlined form: every subgraph one
    partition, its inputs and outputs the subgraph's, in their order); PartitionError (one
    line) when a subgraph is not wholly one accelerator program."""
    from qaccel.frontend.tflite_writer import read_model

    try:
        spec = read_model(model_bytes)
    except Exception as e:  # noqa: BLE001
        raise PartitionError(f"not a readable model ({e})") from None
    programs = []
    for s, sg in enumerate(spec.subgraphs):
        part = Partition(f"subgraph_{s}", s, tuple(range(len(sg.operators))),
                         tuple(sg.inputs), tuple(sg.outputs))  # fmt: skip
        sub = extract_partition(model_bytes, part)
        try:
            compiled = compiler(sub)
        except Exception as e:  # noqa: BLE001
            raise PartitionError(f"subgraph {s}: {str(e).splitlines()[0] if str(e) else e!r}") from None
        blob, order_in, order_out = _program_of(compiled, len(sg.inputs), len(sg.outputs),
                                                f"subgraph {s}")  # fmt: skip
        if order_in != list(range(len(sg.inputs))) or order_out != list(range(len(sg.outputs))):
            raise PartitionError(f"subgraph {s}: the program orders its inputs or outputs "
                                 "differently from the subgraph")  # fmt: skip
        programs.append(blob)
    return programs


RECOMPILE_ENV = "QACCEL_PARTITION_RECOMPILE"


def recompile_default() -> bool:
    """Whether `compile_partitions` compiles every partition again by default
    (QACCEL_PARTITION_RECOMPILE=1), instead of taking its program from the whole-model
    compile where that compile proves it."""
    import os

    return os.environ.get(RECOMPILE_ENV, "").strip().lower() in ("1", "true", "yes", "on")


def compile_partitions(model_bytes: bytes, compiled, compiler: Compiler,
                       recompile: bool | None = None
                       ) -> tuple[list[CompiledPartition], list[str]]:  # fmt: skip
    """qaccel-compile's partitions of `model_bytes` (whose compile is `compiled`), each with
    its program; and one line per accelerator function that stays CPU operators.

    A partition's program is the program of its accelerator function in `compiled` when that
    compile proves the function computes exactly the partition (`_reused`: its boundary, and
    the original operators its ops and the host's name); otherwise, or with `recompile`
    (default: QACCEL_PARTITION_RECOMPILE=1), the partition is extracted and compiled again
    (`compile_partition`), the check that cannot be wrong."""
    proven = _prove_partitions(model_bytes, compiled.module, set(compiled.functions), recompile)
    return _partition_programs(model_bytes, compiled, compiler, proven)


@dataclass
class _Proven:
    """`compile_partitions`' first step, which reads only the module: the partitions, each
    with its `_Proof` (None: compiled again), and the plan's lines."""

    partitions: list[tuple[Partition, _Proof | None]]
    lines: list[str]
    functions: set[str]


def _prove_partitions(model_bytes: bytes, module, functions: set[str],
                      recompile: bool | None = None) -> _Proven:  # fmt: skip
    plan, graph, names, calls = _module_plan(module, functions, model_bytes)
    lines = [f"@{n.function} stays on the CPU in the LiteRT models: {n.reason}" for n in plan.notes]
    if recompile is None:
        recompile = recompile_default()
    computed = None
    partitions: list[tuple[Partition, _Proof | None]] = []
    for part, call in zip(plan.partitions, calls):
        proof = None
        if not recompile:
            if computed is None:
                computed = _Provenance(graph).by_function(module, names.entry)
            try:
                proof = _proof(graph, names, computed, call, part)
            except _NotProven:
                pass
        partitions.append((part, proof))
    return _Proven(partitions, lines, functions)


def _partition_programs(model_bytes: bytes, compiled, compiler: Compiler, proven: _Proven
                        ) -> tuple[list[CompiledPartition], list[str]]:  # fmt: skip
    """`compile_partitions`' second step: each partition's program, from `compiled` when
    proven (and it has one), else compiled again."""
    from qaccel.backends.vta.program.writer import ProgramWriteError

    if set(compiled.functions) != proven.functions:  # not the compile the proofs read
        raise AssertionError("the partitions were proven for another compile")
    lines = list(proven.lines)
    done = []
    for part, proof in proven.partitions:
        if proof is not None:
            try:
                done.append(_proven_program(compiled, proof))
                continue
            except ProgramWriteError:
                pass
        try:
            done.append(compile_partition(model_bytes, part, compiler))
        except PartitionError as e:
            reason = str(e).removeprefix(f"{part.name}: ")
            lines.append(f"@{part.name} stays on the CPU in the LiteRT models: {reason}")
    return done, lines


# --------------------------------------------------------------------------------------------
# The other subgraphs: each a model of its own


def subgraph_model(model_bytes: bytes, s: int) -> bytes:
    """Subgraph `s` of `model_bytes` as a model of its own (its subgraph 0), with the
    decomposition subgraphs its composites name (renumbered); PartitionError when one of its
    operators calls another subgraph (control flow), which that model could not hold."""
    from qaccel.frontend.tflite_writer import ModelSpec, write_model

    spec = _parsed(model_bytes)
    order, todo = [s], [s]
    while todo:
        for op in spec.subgraphs[todo.pop()].operators:
            calls = [v for k, v in op.options.items() if k.endswith("subgraph_index")]
            if calls and op.op != COMPOSITE:
                raise PartitionError(f"subgraph {s}: operator {op.op} calls a subgraph")
            for callee in calls:
                if not 0 <= int(callee) < len(spec.subgraphs):
                    raise PartitionError(f"subgraph {s}: a composite names no subgraph")
                if int(callee) not in order:
                    order.append(int(callee))
                    todo.append(int(callee))
    where = {old: new for new, old in enumerate(order)}
    subgraphs = []
    for old in order:
        sg = spec.subgraphs[old]
        key = "decomposition_subgraph_index"
        ops = [dataclasses.replace(op, options={**op.options, key: where[int(op.options[key])]})
               if op.op == COMPOSITE else op for op in sg.operators]  # fmt: skip
        subgraphs.append(dataclasses.replace(sg, operators=ops))
    return write_model(ModelSpec(subgraphs, description="qaccel subgraph"))


def other_subgraph_partitions(model_bytes: bytes, compiler: Compiler
                              ) -> tuple[list[CompiledPartition], list[str]]:  # fmt: skip
    """The partitions of every subgraph but the main one that is no composite's decomposition
    (the body and condition of a WHILE, the branches of an IF, ...), each subgraph compiled as
    a model of its own, as LiteRT's plugin partitions and the delegate compiles each subgraph it
    is shown: renamed `s<S>_<name>`, in subgraph S. One line per subgraph or accelerator
    function that stays on the CPU."""
    spec = _parsed(model_bytes)
    skip = decomposition_subgraphs(spec)
    done, lines = [], []
    for s in range(1, len(spec.subgraphs)):
        if s in skip or not spec.subgraphs[s].operators:
            continue
        try:
            sub = subgraph_model(model_bytes, s)
            compiled = compiler(sub)
        except PartitionError as e:
            lines.append(f"{e}: it stays on the CPU in the LiteRT models")
            continue
        except Exception as e:  # noqa: BLE001  the compiler's own one-line messages
            text = str(e).splitlines()[0] if str(e) else repr(e)
            lines.append(f"subgraph {s} stays on the CPU in the LiteRT models: {text}")
            continue
        parts, notes = compile_partitions(sub, compiled, compiler)
        lines += [f"subgraph {s}: {line}" for line in notes]
        for p in parts:
            part = dataclasses.replace(p.partition, name=f"s{s}_{p.partition.name}", subgraph=s)
            done.append(dataclasses.replace(p, partition=part))
    return done, lines


# --------------------------------------------------------------------------------------------
# Splicing


def _spliced_order(sg, parts: Sequence[CompiledPartition]) -> list[tuple[str, int]]:
    """A topological order of the kept operators ("op", k) and the partitions ("part", i),
    each at the earliest place the original order allows (a heap keyed by original index)."""
    in_part = {k: i for i, p in enumerate(parts) for k in p.partition.ops}
    nodes: list[tuple[str, int]] = [("op", k) for k in range(len(sg.operators)) if k not in in_part]
    nodes += [("part", i) for i in range(len(parts))]

    def node_inputs(n):
        return (sg.operators[n[1]].inputs if n[0] == "op" else parts[n[1]].inputs)

    def node_outputs(n):
        return (sg.operators[n[1]].outputs if n[0] == "op" else parts[n[1]].outputs)

    def key(n):
        return n[1] if n[0] == "op" else min(parts[n[1]].partition.ops)

    made_by = {t: n for n in nodes for t in node_outputs(n) if t >= 0}
    waiting = {n: {made_by[t] for t in node_inputs(n) if t >= 0 and t in made_by} for n in nodes}
    waiting = {n: {m for m in w if m != n} for n, w in waiting.items()}
    users: dict = {}
    for n, w in waiting.items():
        for m in w:
            users.setdefault(m, []).append(n)
    ready = [(key(n), n) for n, w in waiting.items() if not w]
    heapq.heapify(ready)
    order = []
    while ready:
        _, n = heapq.heappop(ready)
        order.append(n)
        for u in users.get(n, ()):
            waiting[u].discard(n)
            if not waiting[u]:
                heapq.heappush(ready, (key(u), u))
    if len(order) != len(nodes):
        raise PartitionError("the partitions leave no topological order of the operators")
    return order


def splice(model_bytes: bytes, parts: Sequence[CompiledPartition], flavour: str) -> bytes:
    """The original model with each partition one `DISPATCH_OP` (`flavour` "dispatch") or one
    `QACCEL_VTA` op ("custom-op"); see the module docstring."""
    if flavour == "dispatch":
        return _dispatch_model(_dispatch_head(model_bytes, parts), [p.program for p in parts])
    return _spliced(model_bytes, parts, flavour)


@dataclass
class _DispatchHead:
    """The dispatch model's flatbuffer before its programs are known: its DISPATCH_OP options
    hold placeholders for where each program goes (`_dispatch_pieces` sets them)."""

    spec: object
    head: bytes
    ops: list  # (the DISPATCH_OP's OperatorSpec, the partition's name), in program order
    where: list[int] | None
    """Where each op's placeholder options are in `head` (None: not each found once)."""


def _dispatch_head(model_bytes: bytes, parts: Sequence[CompiledPartition]) -> _DispatchHead:
    """`splice(..., "dispatch")`'s flatbuffer, which does not depend on the programs' bytes:
    the options' integers are 64 bits whatever their values, so the flatbuffer's size does
    not depend on where the bytecode goes (a first pass with placeholders tells where)."""
    from qaccel.backends.litert import aot

    spec, dispatch_ops = _spliced(model_bytes, parts, "dispatch")
    spec.metadata[aot.BUILD_STAMP_KEY] = aot.build_stamp()
    from qaccel.frontend.tflite_writer import write_model

    head = write_model(spec)
    ops = [(op, name) for op, name, _ in dispatch_ops]
    return _DispatchHead(spec, head, ops, _found_once(head, [op.custom_options for op, _ in ops]))


def _found_once(data: bytes, marks: Sequence[bytes]) -> list[int] | None:
    """Where each of `marks` is in `data`, when each occurs there exactly once."""
    where = [data.find(mark) for mark in marks]
    if any(at < 0 or data.find(mark, at + 1) >= 0 for mark, at in zip(marks, where)):
        return None
    return where


def _patched(data: bytes, patches: Sequence[tuple[int, bytes]]) -> list | None:
    """`data` with each (place, bytes) of `patches` set, as pieces (views of `data` between
    them); None when they overlap."""
    view, out, pos = memoryview(data), [], 0
    for at, value in sorted(patches, key=lambda p: p[0]):
        if at < pos:
            return None
        out += [view[pos:at], value]
        pos = at + len(value)
    out.append(view[pos:])
    return out


def _dispatch_model(head: _DispatchHead, programs: Sequence[bytes]) -> bytes:
    """The dispatch model: `head` with each program after the flatbuffer (LiteRT's
    `bytecode_offset`), its place and size set in its DISPATCH_OP's options."""
    return b"".join(_dispatch_pieces(head, programs))


def _dispatch_pieces(head: _DispatchHead, programs: Sequence[bytes]) -> list:
    """`_dispatch_model`'s bytes as pieces (the flatbuffer's between the options, the
    programs), never joined: written and hashed as they are."""
    from qaccel.backends.litert import aot
    from qaccel.frontend.tflite_writer import write_model

    places, end = [], len(head.head)
    for program in programs:
        end += -end % aot.BYTECODE_ALIGNMENT
        places.append(end)
        end += len(program)
    patches = []
    for (op, name), program, at in zip(head.ops, programs, places):
        placeholder = op.custom_options
        op.custom_options = aot.dispatch_options(name, at, len(program))
        if len(op.custom_options) == len(placeholder) and head.where is not None:
            patches.append((head.where[len(patches)], op.custom_options))
    # The options are a byte vector of the flatbuffer, at the same size: set in place (as
    # LiteRT updates them), unless the placeholders' bytes were not found exactly once.
    pieces = _patched(head.head, patches) if len(patches) == len(head.ops) else None
    if pieces is None:
        flat = write_model(head.spec)
        if len(flat) != len(head.head):
            raise AssertionError("splice: the flatbuffer changed size between passes")
        pieces = [flat]
    end = len(head.head)
    for program, at in zip(programs, places):
        pieces += [bytes(at - end), program]
        end = at + len(program)
    return pieces


@dataclass
class _CustomHead:
    """The custom-op model's flatbuffer before its programs are known: each program's size
    (its tensor's shape, its buffer's size, its op's options) and place are placeholders
    (`_custom_marks`), found once each at `where`; `order`: the partitions (indices) in the
    order of their programs."""

    head: bytes
    order: list[int]
    where: list[int]


def _custom_mark_values(k: int) -> tuple[int, int, int, int]:
    """The k-th program's placeholders: its buffer's offset (the writer's own first-pass
    placeholder) and size, its tensor's one dimension, its op's options' program size."""
    from qaccel.frontend.tflite_writer import OFFSET_PLACEHOLDER

    return (OFFSET_PLACEHOLDER + k, 0x5C3E_7A61_0000_0000 + k, 0x3E5A_9C00 + 2 * k,
            0x3E5A_9C01 + 2 * k)  # fmt: skip


def _custom_marks(k: int) -> list[bytes]:
    """`_custom_mark_values(k)` as they are stored (u64, u64, i32, u32, little-endian)."""
    offset, size, dim, option = _custom_mark_values(k)
    return [struct.pack("<Q", offset), struct.pack("<Q", size), struct.pack("<i", dim),
            struct.pack("<I", option)]  # fmt: skip


def _custom_head(model_bytes: bytes, parts: Sequence[CompiledPartition]) -> _CustomHead | None:
    """`splice(..., "custom-op")`'s flatbuffer with the programs' sizes and places left as
    placeholders: every field they set is a fixed-width scalar, so the flatbuffer's layout
    does not depend on them (None: the model has external data of its own, or a
    placeholder's bytes do not occur exactly once)."""
    from qaccel.frontend.tflite_writer import write_flatbuffer

    if any(t.external for sg in _parsed(model_bytes).subgraphs for t in sg.tensors):
        return None
    spec, order = _spliced(model_bytes, parts, "custom-op", marked=True)
    head = write_flatbuffer(spec, [_custom_mark_values(k)[:2] for k in range(len(order))])
    where = _found_once(head, [b for k in range(len(order)) for b in _custom_marks(k)])
    return None if where is None else _CustomHead(head, order, where)


def _custom_pieces(head: _CustomHead, programs: Sequence[bytes]) -> list | None:
    """The custom-op model as pieces, never joined: `head` with its placeholders set for
    `programs` (in the partitions' order) and the programs after it, as `write_model` places
    external data (None: a program too large for the tensor's int32 dimension)."""
    from qaccel.frontend.tflite_writer import EXTERNAL_ALIGNMENT

    blobs, used_sizes = [], set()
    for i in head.order:
        blob = programs[i]
        while len(blob) in used_sizes:  # as `_spliced`
            blob += bytes(8)
        used_sizes.add(len(blob))
        blobs.append(blob)
    if any(len(blob) >= 2**31 for blob in blobs):  # no int32 dimension: as `_spliced` says
        return None
    values, tail, end = [], [], len(head.head)
    for blob in blobs:
        pad = -end % EXTERNAL_ALIGNMENT
        tail += [bytes(pad), blob]
        values += [struct.pack("<Q", end + pad), struct.pack("<Q", len(blob)),
                   struct.pack("<i", len(blob)), struct.pack("<I", len(blob))]  # fmt: skip
        end += pad + len(blob)
    pieces = _patched(head.head, list(zip(head.where, values)))
    return None if pieces is None else pieces + tail


def _spliced(model_bytes: bytes, parts: Sequence[CompiledPartition], flavour: str,
             marked: bool = False):  # fmt: skip
    """The custom-op model (`flavour` "custom-op"); for "dispatch", its spec and its
    DISPATCH_OPs (with placeholder options), (op, partition name, program) each. `marked`
    (custom-op): its spec with `_custom_marks` for the programs' sizes, and the partitions
    (indices into `parts`) in the order of their programs."""
    from qaccel.backends.litert import aot
    from qaccel.frontend.tflite_writer import OperatorSpec, TensorSpec, write_model

    spec = _copy(_parsed(model_bytes))
    order: list[int] = []
    by_subgraph: dict[int, list[CompiledPartition]] = {}
    for p in parts:
        by_subgraph.setdefault(p.partition.subgraph, []).append(p)
    used_sizes: set[int] = set()
    dispatch_ops: list[tuple[OperatorSpec, str, bytes]] = []
    for s, sg_parts in sorted(by_subgraph.items()):
        sg = spec.subgraphs[s]
        new_ops = []
        for kind, i in _spliced_order(sg, sg_parts):
            if kind == "op":
                new_ops.append(sg.operators[i])
                continue
            p = sg_parts[i]
            shapes = [tuple(sg.tensors[t].shape) for t in p.outputs]
            if flavour == "dispatch":
                op = OperatorSpec("CUSTOM", list(p.inputs), list(p.outputs), {}, 1, DISPATCH_CODE,
                                  aot.dispatch_options(p.partition.name, 0, 0))  # fmt: skip
                dispatch_ops.append((op, p.partition.name, p.program))
            else:
                blob = p.program
                while len(blob) in used_sizes:  # the kernel tells nodes apart by program size
                    blob += bytes(8)
                used_sizes.add(len(blob))
                size = option = len(blob)
                if marked:
                    _, _, size, option = _custom_mark_values(len(order))
                    blob = b""
                order.append(next(j for j, q in enumerate(parts) if q is p))
                sg.tensors.append(TensorSpec(aot.PROGRAM_PREFIX + p.partition.name, (size,),
                                             np.uint8, data=blob, external=True))  # fmt: skip
                op = OperatorSpec("CUSTOM", [*p.inputs, len(sg.tensors) - 1], list(p.outputs),
                                  {}, aot.CUSTOM_VERSION, CUSTOM_CODE,
                                  aot.custom_options(option, shapes))  # fmt: skip
            new_ops.append(op)
        sg.operators = new_ops
    if marked:
        return spec, order
    if flavour != "dispatch":
        return write_model(spec)
    return spec, dispatch_ops


def litert_files(model_bytes: bytes, compiled, compiler: Compiler) -> tuple[dict[str, bytes], list[str]]:
    """Every file of the LiteRT deployment of `model_bytes` (compiled as `compiled`): both
    spliced models, `partitions.json` and the programs; and the report's lines (the first
    names the partitions, then one per accelerator function left on the CPU)."""
    return finish_litert_files(prepare_litert_files(model_bytes, compiled.module,
                                                    set(compiled.functions)),
                               compiled, compiler)  # fmt: skip


@dataclass
class PreparedLiteRT:
    """`litert_files`' work that reads only the compiled module (`prepare_litert_files`):
    `qaccel-compile` does it while the module's layers are emitted."""

    model_bytes: bytes
    proven: _Proven
    others: bool
    """Another subgraph to partition (compiled as a model of its own)."""
    head: _DispatchHead | None
    """The dispatch model's flatbuffer for the partitions as proven (None: not made)."""
    custom: _CustomHead | None = None
    """The custom-op model's flatbuffer for them (None: not made)."""


def prepare_litert_files(model_bytes: bytes, module, functions: set[str]) -> PreparedLiteRT:
    """What `litert_files` does before it needs the emitted layers: the original model read,
    the partitions decided and proven from `module` (the final module of the compile, whose
    accelerator functions are `functions`), and the dispatch model's flatbuffer made for them
    (it does not depend on the programs' bytes) when every partition is proven and the model
    has no other subgraph to partition."""
    proven = _prove_partitions(model_bytes, module, functions)
    spec = _parsed(model_bytes)
    skip = decomposition_subgraphs(spec)
    others = any(s not in skip and spec.subgraphs[s].operators
                 for s in range(1, len(spec.subgraphs)))  # fmt: skip
    head = custom = None
    if not others and all(proof is not None for _, proof in proven.partitions):
        guessed = [_placeholder(proof) for _, proof in proven.partitions]  # type: ignore[arg-type]
        try:
            head = _dispatch_head(model_bytes, guessed)
            custom = _custom_head(model_bytes, guessed)
        except PartitionError:  # `finish_litert_files` splices again, and says why
            head = custom = None
    return PreparedLiteRT(model_bytes, proven, others, head, custom)


def _placeholder(proof: _Proof) -> CompiledPartition:
    """The proven partition with no program yet (the dispatch flatbuffer does not read it)."""
    return CompiledPartition(proof.part, b"", proof.order_in, proof.order_out, reused=True)


def finish_litert_files(prepared: PreparedLiteRT, compiled, compiler: Compiler,
                        joined: bool = True) -> tuple[dict[str, bytes | list], list[str]]:  # fmt: skip
    """`litert_files` from its prepared part (see `prepare_litert_files`) and the compile.
    `joined=False`: a model made from a prepared flatbuffer is given as a list of pieces
    (bytes-like, their concatenation the file) instead of one copy of them all."""
    from qaccel.backends.litert.names import AOT_FILE, DISPATCH_FILE

    model_bytes = prepared.model_bytes
    done, lines = _partition_programs(model_bytes, compiled, compiler, prepared.proven)
    others, other_lines = ([], []) if not prepared.others else other_subgraph_partitions(
        model_bytes, compiler)  # fmt: skip
    done, lines = done + others, lines + other_lines
    head, custom = prepared.head, prepared.custom
    if head is not None and [_placeholder_key(p) for p in done] != [
            _placeholder_key(_placeholder(proof)) for _, proof in prepared.proven.partitions  # type: ignore[arg-type]
    ]:  # fmt: skip
        head = custom = None  # a proven partition's program could not be written: spliced again
    try:
        programs = [p.program for p in done]
        dispatch: bytes | list = (_dispatch_pieces(head, programs) if head is not None
                                  else splice(model_bytes, done, "dispatch"))  # fmt: skip
        aot_model = _custom_pieces(custom, programs) if custom is not None else None
        if aot_model is None:
            aot_model = splice(model_bytes, done, "custom-op")
        models: dict[str, bytes | list] = {DISPATCH_FILE: dispatch, AOT_FILE: aot_model}
        if joined:
            models = {rel: b"".join(m) if isinstance(m, list) else m for rel, m in models.items()}
    except PartitionError as e:
        lines.append(f"every accelerator function stays on the CPU in the LiteRT models: {e}")
        done = []
        models = {DISPATCH_FILE: splice(model_bytes, done, "dispatch"),
                  AOT_FILE: splice(model_bytes, done, "custom-op")}  # fmt: skip
    models.update(partition_files(done))
    parts = ", ".join(f"{p.partition.name} ({len(p.partition.ops)} op(s), "
                      f"{len(p.program)} B program)" for p in done)  # fmt: skip
    lines.insert(0, f"LiteRT models {DISPATCH_FILE} (DISPATCH_OP) and {AOT_FILE} (QACCEL_VTA "
                    f"custom op), the original model with partition(s) {parts or 'none'}")
    return models, lines


def _placeholder_key(p: CompiledPartition) -> tuple:
    return (p.partition, p.inputs, p.outputs)


def partition_files(parts: Sequence[CompiledPartition]) -> dict[str, bytes]:
    """`partitions.json` and `programs/<name>.qprog` (relative paths -> bytes)."""
    files: dict[str, bytes] = {}
    entries = []
    for p in parts:
        rel = f"{PROGRAMS_DIR}/{p.partition.name}.qprog"
        files[rel] = p.program
        entries.append({"name": p.partition.name, "subgraph": p.partition.subgraph,
                        "ops": list(p.partition.ops), "inputs": list(p.inputs),
                        "outputs": list(p.outputs), "program": rel,
                        "program_sha256": hashlib.sha256(p.program).hexdigest()})  # fmt: skip
    files[PARTITIONS_FILE] = (json.dumps({"format": PARTITIONS_FORMAT, "partitions": entries},
                                         indent=1, sort_keys=True) + "\n").encode()  # fmt: skip
    return files


__all__ = ["PARTITIONS_FILE", "PROGRAMS_DIR", "CompiledPartition", "Compiler", "Partition",
           "PartitionError", "Plan", "PlanNote", "compile_partition", "compile_partition_model",
           "compile_partitions", "decomposition_subgraphs", "extract_partition", "litert_files",
           "PreparedLiteRT", "finish_litert_files", "prepare_litert_files",
           "other_subgraph_partitions", "partition_files", "partition_submodel", "partitions_of",
           "plan_partitions", "splice", "subgraph_model"]  # fmt: skip
