"""qaccel as a classic TensorFlow Lite delegate for LiteRT's `Interpreter`:

    from ai_edge_litert.interpreter import Interpreter, OpResolverType, load_delegate
    delegate = load_delegate(str(delegate_library()), {"artifact": "out"})
    interp = Interpreter("model.tflite", experimental_delegates=[delegate],
                         experimental_op_resolver_type=OpResolverType.BUILTIN_REF)

`libqaccel_delegate.so` (C, `delegate/qaccel_delegate.c`) claims the operators of the original
model that `qaccel-compile` put on the accelerator, partition by partition as
`OUTDIR/partitions.json` lists them, and runs each partition's program (`programs/NAME.qprog`,
the bytes the dispatch flavour carries) through the program runner (`kernel/qaccel_program.c`)
on the C machine; the interpreter's own kernels run every other operator. The artifact is
checked against the model at Prepare (node count, operator codes, boundary tensors' types,
shapes and quantization); a mismatch, a bad option or an error of a program surfaces through
LiteRT's own error path (`load_delegate` raises ValueError, `Interpreter(...)` and `invoke()`
raise RuntimeError) with our one-line message.

`write_partitions(OUTDIR)` derives partitions.json and the program files from what
`qaccel-compile` writes today (the original `model.tflite` and `model.qaccel.dispatch.tflite`)
and lists them in manifest.json. The library is built by `pip install` next to this file, or
else on first use into the per-user cache directory (as `runtime.py`'s libraries).
`run_delegate` runs a model through the delegate in a forked child (a LiteRT abort cannot take
the caller down) and proves the delegate ran: its kernels were invoked once per run.
"""

from __future__ import annotations

import ctypes as C
import hashlib
import json
import os
import re
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from qaccel.backends.litert.runtime import (
    KERNEL_DIR,
    MACHINE_DIR,
    LiteRtError,
    built_library,
    cache_dir,
    is_current,
    source_hash,
)

DELEGATE_DIR = Path(__file__).with_name("delegate")
# The C files, then the headers (hashed in this order; setup.py builds the same list).
DELEGATE_SOURCES = (DELEGATE_DIR / "qaccel_delegate.c", DELEGATE_DIR / "qaccel_artifact.c",
                    KERNEL_DIR / "qaccel_program.c", MACHINE_DIR / "vta_machine.c",
                    DELEGATE_DIR / "qaccel_artifact.h", DELEGATE_DIR / "qaccel_tflite_api.h",
                    KERNEL_DIR / "qaccel_program.h", MACHINE_DIR / "vta_machine.h")  # fmt: skip
LIB_NAME = "libqaccel_delegate.so"
PARTITIONS_FILE = "partitions.json"
PROGRAMS_DIR = "programs"
PARTITIONS_FORMAT = 1


class DelegateArtifactError(LiteRtError):
    """An artifact from which partitions.json cannot be derived (one line)."""


def delegate_library() -> Path:
    """libqaccel_delegate.so: `QACCEL_LITERT_DELEGATE_LIB`, else the one `pip install` built next
    to this module (when built from the current sources), else compiled on first use into the
    cache directory."""
    explicit = os.environ.get("QACCEL_LITERT_DELEGATE_LIB")
    if explicit:
        return Path(explicit)
    here = Path(__file__).with_name(LIB_NAME)
    if here.is_file() and is_current(here, DELEGATE_SOURCES):
        return here
    path = cache_dir() / f"litert-delegate-{source_hash(DELEGATE_SOURCES)}" / LIB_NAME
    return built_library(path, DELEGATE_SOURCES)


# ---- partitions.json ----------------------------------------------------------------------


def _quant(tensor) -> dict:
    q = tensor.quant
    if q is None or q.axis is not None or len(q.scale) != 1:
        return {}
    return {"scale": float(q.scale[0]), "zero_point": int(q.zero_point[0])}


def _partitions(original, dispatch, programs: dict[str, bytes]) -> list[dict]:
    """Each DISPATCH_OP of the dispatch flavour as the original operators it replaces.

    The dispatch flavour keeps every host op with its output tensors' names and feeds each
    DISPATCH_OP the original tensors (by name); a DISPATCH_OP's outputs are named after its
    function, so they are found through their consumers (host ops and graph outputs), which
    read the original tensors at the same positions. The operators of a partition are those
    between its outputs and its inputs."""
    from qaccel.backends.litert.aot import read_dispatch_options
    from qaccel.backends.litert.names import DISPATCH_CODE

    osg, dsg = original.subgraphs[0], dispatch.subgraphs[0]
    by_name: dict[str, int] = {}
    for i, t in enumerate(osg.tensors):
        by_name.setdefault(t.name, i)
    producer = {t: k for k, op in enumerate(osg.operators) for t in op.outputs if t >= 0}
    host_of: dict[int, int] = {}  # dispatch op index -> original op index
    for k, op in enumerate(dsg.operators):
        if op.custom_code == DISPATCH_CODE:
            continue
        names = [dsg.tensors[t].name for t in op.outputs]
        match = producer.get(by_name.get(names[0], -1)) if names else None
        if match is None or osg.operators[match].op != op.op:
            raise DelegateArtifactError(f"host operator {k} ({op.op}) of the compiled model has "
                                        f"no counterpart in the original model")  # fmt: skip
        host_of[k] = match
    parts = []
    for k, op in enumerate(dsg.operators):
        if op.custom_code != DISPATCH_CODE:
            continue
        name = read_dispatch_options(op.custom_options or b"")["name"]
        inputs = []
        for t in op.inputs:
            if dsg.tensors[t].name not in by_name:
                raise DelegateArtifactError(f"partition {name}: input {dsg.tensors[t].name!r} "
                                            f"is not a tensor of the original model")  # fmt: skip
            inputs.append(by_name[dsg.tensors[t].name])
        outputs = []
        for t in op.outputs:
            found = None
            for j, other in enumerate(dsg.operators):
                if j in host_of and t in other.inputs:
                    found = osg.operators[host_of[j]].inputs[other.inputs.index(t)]
                    break
            if found is None and t in dsg.outputs:
                found = osg.outputs[dsg.outputs.index(t)]
            if found is None:
                raise DelegateArtifactError(f"partition {name}: output {dsg.tensors[t].name!r} "
                                            f"has no counterpart in the original "
                                            f"model")  # fmt: skip
            outputs.append(found)
        ops, stack, stop = set(), list(outputs), set(inputs)
        while stack:
            t = stack.pop()
            if t in stop or t not in producer or producer[t] in ops:
                continue
            ops.add(producer[t])
            stack.extend(i for i in osg.operators[producer[t]].inputs if i >= 0)
        if set(host_of.values()) & ops:
            raise DelegateArtifactError(f"partition {name} overlaps operators the compiled "
                                        f"model keeps on the CPU")  # fmt: skip
        parts.append((name, sorted(ops), inputs, outputs))
    return _described(original, parts, programs)


def _described(original, found: list[tuple], programs: dict[str, bytes]) -> list[dict]:
    """partitions.json's entries for (name, ops, inputs, outputs) of each partition."""
    from qaccel.frontend import tflite_schema as schema

    osg = original.subgraphs[0]
    codes = schema.enum_members("BuiltinOperator")
    parts = []
    for name, ops, inputs, outputs in found:
        tensors = []
        for t in inputs + outputs:
            spec = osg.tensors[t]
            tensors.append({"index": t, "type": spec.type_code, "shape": list(spec.shape),
                            **_quant(spec)})  # fmt: skip
        parts.append({
            "name": name, "subgraph": 0, "ops": ops,
            "op_codes": [codes[osg.operators[o].op] for o in ops],
            "inputs": inputs, "outputs": outputs, "tensors": tensors,
            "program": f"{PROGRAMS_DIR}/{name}.qprog",
            "program_sha256": hashlib.sha256(programs[name]).hexdigest(),
        })  # fmt: skip
    claimed = sorted(o for p in parts for o in p["ops"])
    if len(claimed) != len(set(claimed)):
        raise DelegateArtifactError("two partitions claim the same operator")
    return parts


def _graph_partition(osg, name: str, ops: set[int], inputs: list[int],
                     returned: list[str | None]) -> tuple[list[int], list[int]]:
    """The operators and outputs of the partition made of original operators `ops`, its outputs
    in the order of the names its function returns (a single output needs none)."""
    inside = {t for k in ops for t in osg.operators[k].outputs if t >= 0}
    used_outside = {t for k, op in enumerate(osg.operators) if k not in ops for t in op.inputs}
    outputs = sorted(t for t in inside if t in used_outside or t in osg.outputs)
    if len(outputs) != len(returned):
        raise DelegateArtifactError(f"partition {name}: {len(outputs)} tensors leave its "
                                    f"operators, its program has {len(returned)} "
                                    f"outputs")  # fmt: skip
    if len(outputs) > 1:
        names = {osg.tensors[t].name: t for t in outputs}
        if any(r not in names for r in returned):
            raise DelegateArtifactError(f"partition {name}: its outputs cannot be told apart")
        outputs = [names[r] for r in returned]
    return sorted(ops), outputs


def _compiled_partitions(compiled, partitioned, original) -> tuple[list, dict, list]:
    """(name, ops, inputs, outputs) of each accelerator function of `compiled` in terms of the
    original model, the functions' programs (the bytes the dispatch flavour carries), and the
    functions that have no program ({name, reason}: their operators stay on the CPU).

    `partitioned` is the module `compiled` was compiled from, as `partition-graph` left it: its
    functions' ops still carry the locations of the original tensors they compute
    (legalization names the ops it adds NAME/OP), so the original operators of a function are
    those whose first output one of its ops names; its inputs are its call's operands."""
    from xdsl.dialects import func

    from qaccel.backends.litert.aot import AotError, _replace_call
    from qaccel.dialects.names import location_name, public_functions

    def name_of(v) -> str | None:
        return location_name(v.owner if hasattr(v, "op") else v)

    osg = original.subgraphs[0]
    by_name: dict[str, int] = {}
    for i, t in enumerate(osg.tensors):
        by_name.setdefault(t.name, i)
    funcs = {op.sym_name.data: op for op in partitioned.ops if isinstance(op, func.FuncOp)}
    calls = {op.callee.string_value(): op for op in public_functions(partitioned)[0].walk()
             if isinstance(op, func.CallOp)}  # fmt: skip
    module = compiled.module.clone()
    programs: dict[str, bytes] = {}
    skipped: list[dict] = []
    for call in [op for op in public_functions(module)[0].body.block.ops
                 if isinstance(op, func.CallOp)]:  # fmt: skip
        name = call.callee.string_value()
        if name in compiled.functions:
            try:
                _replace_call(compiled, module, call, set(), programs)
            except AotError as e:  # a function with no program: its operators stay on the CPU
                skipped.append({"name": name, "reason": str(e)})
    found = []
    for name in programs:
        if name not in funcs or name not in calls:
            raise DelegateArtifactError(f"partition {name} is not in the partitioned module")
        inputs = [by_name.get(name_of(v) or "") for v in calls[name].arguments]
        if None in inputs:
            raise DelegateArtifactError(f"partition {name}: an input that is not a tensor of "
                                        f"the original model")  # fmt: skip
        names = set()
        for op in funcs[name].walk():
            loc = op.location
            for part in list(loc.locations.data) if hasattr(loc, "locations") else [loc]:
                if location_name(part):
                    names.add(location_name(part))
        ops = set()
        for k, op in enumerate(osg.operators):
            outs = [osg.tensors[t].name for t in op.outputs if t >= 0]
            if outs and (outs[0] in names or any(n.startswith(outs[0] + "/") for n in names)):
                ops.add(k)
        ret = next(op for op in funcs[name].walk() if isinstance(op, func.ReturnOp))
        returned = [name_of(v) for v in ret.arguments]
        ops_sorted, outputs = _graph_partition(osg, name, ops, inputs, returned)
        found.append((name, ops_sorted, inputs, outputs))
    return found, programs, skipped


def write_partitions(outdir: str | Path, compiled=None, partitioned=None) -> Path:
    """Write OUTDIR/partitions.json and OUTDIR/programs/NAME.qprog for the artifact of
    `qaccel-compile` at `outdir`, and list them in its manifest.json; the path written.

    The partitions and programs come from the artifact's dispatch flavour when it has one; an
    artifact without one (a CPU op with no TFLite form) needs `compiled`, the compiled model
    it was written from, and `partitioned`, the module it was compiled from as
    `vta-pipeline{stop-after=partition-graph}` left it (see benchmarks/bench_delegate.py); a
    function that has no program then stays on the CPU, listed with the reason under
    "not_delegated"."""
    from qaccel.backends.litert.aot import DISPATCH_FILE, read_dispatch_options
    from qaccel.backends.litert.names import DISPATCH_CODE
    from qaccel.backends.vta.artifact_files import read_artifact_file
    from qaccel.frontend.tflite_writer import read_model

    root = Path(outdir)
    manifest_bytes = read_artifact_file(root, "manifest.json", DelegateArtifactError)
    try:
        manifest = json.loads(manifest_bytes)
        files = manifest["files"]
    except (ValueError, KeyError, TypeError):
        raise DelegateArtifactError(f"'{root}': manifest.json is not an artifact "
                                    f"manifest") from None

    def checked(rel: str) -> bytes:
        data = read_artifact_file(root, rel, DelegateArtifactError)
        if files.get(rel) != hashlib.sha256(data).hexdigest():
            raise DelegateArtifactError(f"'{root}': {rel} does not match its SHA-256 in "
                                        f"manifest.json")  # fmt: skip
        return data

    original = read_model(checked("model.tflite"))
    if compiled is not None:
        found, programs, skipped = _compiled_partitions(compiled, partitioned, original)
        return _write(root, manifest, original, _described(original, found, programs), programs,
                      skipped)
    if DISPATCH_FILE not in files:
        raise DelegateArtifactError(f"'{root}' has no {DISPATCH_FILE} (qaccel-compile said why): "
                                    f"give write_partitions the compiled model")  # fmt: skip
    dispatch_bytes = checked(DISPATCH_FILE)
    dispatch = read_model(dispatch_bytes)
    programs = {}
    for op in dispatch.subgraphs[0].operators:
        if op.custom_code == DISPATCH_CODE:
            o = read_dispatch_options(op.custom_options or b"")
            start, size = o["bytecode_offset"], o["bytecode_size"]
            if start < 0 or size <= 0 or start + size > len(dispatch_bytes):
                raise DelegateArtifactError(f"'{root}': {DISPATCH_FILE}: program {o['name']!r} "
                                            f"lies outside the file")  # fmt: skip
            programs[o["name"]] = dispatch_bytes[start:start + size]
    parts = _partitions(original, dispatch, programs)
    return _write(root, manifest, original, parts, programs)


def _write(root: Path, manifest: dict, original, parts: list[dict], programs,
           skipped: list[dict] | None = None) -> Path:
    files = manifest["files"]
    osg = original.subgraphs[0]
    doc = {"format": PARTITIONS_FORMAT,
           "model": {"operators": len(osg.operators), "tensors": len(osg.tensors)},
           "config": manifest.get("config", {}).get("name"), "partitions": parts,
           "not_delegated": skipped or []}  # fmt: skip
    (root / PROGRAMS_DIR).mkdir(exist_ok=True)
    for part in parts:
        data = programs[part["name"]]
        (root / part["program"]).write_bytes(data)
        files[part["program"]] = part["program_sha256"]
    text = json.dumps(doc, indent=1).encode()
    (root / PARTITIONS_FILE).write_bytes(text)
    files[PARTITIONS_FILE] = hashlib.sha256(text).hexdigest()
    (root / "manifest.json").write_text(json.dumps(manifest, indent=1, sort_keys=True))
    return root / PARTITIONS_FILE


# ---- running -------------------------------------------------------------------------------


def _counters(lib: C.CDLL, delegate) -> dict:
    ptr = C.c_void_p(delegate._delegate_ptr)
    out = {}
    for name in ("invocations", "kernels", "claimed_nodes", "partitions"):
        f = getattr(lib, f"qaccel_delegate_{name}")
        f.restype, f.argtypes = C.c_long, [C.c_void_p]
        out[name] = int(f(ptr))
    return out


def delegate_run(model: str | Path, artifact: str | Path,
                 input_sets: Sequence[Sequence[np.ndarray]], options: dict | None = None) -> dict:
    """In this process: the delegate over `model` with `artifact` under BUILTIN_REF, every input
    set run; {"outputs": [[array, ...], ...], "counters": {...}, "load_s" (load_delegate: the
    artifact read and checked), "prepare_s" (the Interpreter built with the delegate, its
    Prepare included, and its tensors allocated), "invoke_s" (per input set)}.
    Raises LiteRtError (one line) for what LiteRT or the delegate refuse."""
    from ai_edge_litert.interpreter import Interpreter, OpResolverType, load_delegate

    path = delegate_library()
    opts = {"artifact": str(artifact), **(options or {})}
    t0 = time.perf_counter()
    try:
        delegate = load_delegate(str(path), opts)
    except ValueError as e:
        raise LiteRtError(_one_line(e)) from None
    lib = C.CDLL(str(path))
    load_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    try:
        interp = Interpreter(model_path=str(model), experimental_delegates=[delegate],
                             experimental_op_resolver_type=OpResolverType.BUILTIN_REF)
        interp.allocate_tensors()
    except (RuntimeError, ValueError) as e:
        raise LiteRtError(_one_line(e)) from None
    prepare_s = time.perf_counter() - t0
    ins = interp.get_input_details()
    outs = interp.get_output_details()
    results, invoke_s = [], []
    for inputs in input_sets:
        for d, x in zip(ins, inputs):
            interp.set_tensor(d["index"], np.asarray(x, dtype=d["dtype"]).reshape(d["shape"]))
        t0 = time.perf_counter()
        try:
            interp.invoke()
        except RuntimeError as e:
            raise LiteRtError(_one_line(e)) from None
        invoke_s.append(time.perf_counter() - t0)
        results.append([interp.get_tensor(d["index"]).copy() for d in outs])
    counters = _counters(lib, delegate)
    del interp
    return {"outputs": results, "counters": counters, "load_s": load_s, "prepare_s": prepare_s,
            "invoke_s": invoke_s}  # fmt: skip


_LITERT_SUFFIX = re.compile(r"(?<=\S)(?:Node number \d+ \(|Restored original execution plan)")


def _one_line(e: BaseException) -> str:
    """LiteRT's exception text reduced to our message (its first line that names the delegate),
    else its first line."""
    lines = [line.strip() for line in str(e).splitlines() if line.strip()]
    for line in lines:
        if "qaccel delegate:" in line:  # LiteRT appends its own words without a separator
            line = line[line.index("qaccel delegate:"):]
            return _LITERT_SUFFIX.split(line)[0]
    return lines[0] if lines else type(e).__name__


def run_delegate(model: str | Path, artifact: str | Path,
                 input_sets: Sequence[Sequence[np.ndarray]], options: dict | None = None) -> dict:
    """`delegate_run` in a forked child (`isolated.run_isolated`); raises LiteRtError when the
    delegate did not run every one of its kernels on every input set."""
    from qaccel.backends.litert.isolated import run_isolated

    result = run_isolated(delegate_run, model, artifact, input_sets, options)
    c = result["counters"]
    if c["partitions"] and c["invocations"] != c["kernels"] * len(input_sets):
        raise LiteRtError(f"the delegate ran {c['invocations']} kernel invocation(s), expected "
                          f"{c['kernels']} kernel(s) x {len(input_sets)} run(s)")  # fmt: skip
    return result


__all__ = ["DELEGATE_SOURCES", "LIB_NAME", "PARTITIONS_FILE", "DelegateArtifactError",
           "delegate_library", "delegate_run", "run_delegate", "write_partitions"]  # fmt: skip
