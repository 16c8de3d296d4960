"""qaccel as a classic TensorFlow Lite delegate for LiteRT's `Interpreter`:

    from ai_edge_litert.interpreter import Interpreter, OpResolverType, load_delegate
    delegate = load_delegate(str(delegate_library()), {"artifact": "out"})
    interp = Interpreter("model.tflite", experimental_delegates=[delegate],
                         experimental_op_resolver_type=OpResolverType.BUILTIN_REF)

`libqaccel_delegate.so` (C, `delegate/qaccel_delegate.c`) claims the operators of the original
model that `qaccel-compile` put on the accelerator, partition by partition as
`OUTDIR/partitions.json` lists them (`partitions.py`), and runs each partition's program
(`programs/NAME.qprog`) through the program runner (`backends/vta/program/`) on the C
machine; the interpreter's own kernels run every other operator. The artifact is checked
against the model at Prepare (each program's boundary shapes and element sizes, what each
claimed node reads and computes; with `annotate_partitions(OUTDIR)` also the node count, the
operator codes and the boundary tensors' types and quantization); a mismatch, a bad option or
an error of a program surfaces through LiteRT's own error path (`load_delegate` raises
ValueError, `Interpreter(...)` and `invoke()` raise RuntimeError) with our one-line message.

Without the `artifact` option (`load_delegate(path, {"config": "vta-default"})`, or no options)
the delegate compiles on the spot: each subgraph's Prepare describes it from the interpreter's
`TfLiteContext` in the compiler plugin's format and hands it through the plugin's bridge to
`tools/compiler_plugin.delegate_partitions` (qaccel-compile's partitions and programs, the
plugin's compile cache), then claims those operators as it claims an artifact's; a failed
compile fails Prepare with its one line.

The library is built by `pip install` next to this file, or
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
    MACHINE_DIR,
    PROGRAM_DIR,
    LiteRtError,
    built_library,
    cache_dir,
    is_current,
    source_hash,
)

DELEGATE_DIR = Path(__file__).with_name("delegate")
# The C files, then the headers (hashed in this order; setup.py builds the same list).
BRIDGE_DIR = Path(__file__).with_name("bridge")
DELEGATE_SOURCES = (DELEGATE_DIR / "qaccel_delegate.c", DELEGATE_DIR / "qaccel_artifact.c",
                    DELEGATE_DIR / "qaccel_describe.c", BRIDGE_DIR / "qaccel_pybridge.c",
                    PROGRAM_DIR / "qaccel_program.c", MACHINE_DIR / "vta_machine.c",
                    DELEGATE_DIR / "qaccel_artifact.h", DELEGATE_DIR / "qaccel_describe.h",
                    DELEGATE_DIR / "qaccel_tflite_api.h", BRIDGE_DIR / "qaccel_pybridge.h",
                    PROGRAM_DIR / "qaccel_program.h", MACHINE_DIR / "vta_machine.h")  # fmt: skip
LIB_NAME = "libqaccel_delegate.so"
PARTITIONS_FILE = "partitions.json"


class DelegateArtifactError(LiteRtError):
    """An artifact whose partitions.json cannot be annotated (one line)."""


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
    # As pip install does, the building environment's python and libpython are recorded in it
    # for C hosts (where its bridge starts that Python): part of the cache key.
    defines = python_defines()
    tag = hashlib.sha256(repr(sorted(defines.items())).encode()).hexdigest()[:8]
    path = cache_dir() / f"litert-delegate-{source_hash(DELEGATE_SOURCES)}-{tag}" / LIB_NAME
    return built_library(path, DELEGATE_SOURCES, defines)


def python_defines() -> dict[str, str]:
    """QACCEL_PYTHON and QACCEL_LIBPYTHON, this environment's python and shared libpython (the
    bridge's defaults in a C host; the variables of the same names override them at run time)."""
    import sys
    import sysconfig

    lib = ""
    if sysconfig.get_config_var("Py_ENABLE_SHARED"):
        lib = str(Path(sysconfig.get_config_var("LIBDIR") or "")
                  / (sysconfig.get_config_var("LDLIBRARY") or ""))
    return {"QACCEL_PYTHON": sys.executable, "QACCEL_LIBPYTHON": lib}


# ---- partitions.json ----------------------------------------------------------------------


def _quant(tensor) -> dict:
    q = tensor.quant
    if q is None or q.axis is not None or len(q.scale) != 1:
        return {}
    return {"scale": float(q.scale[0]), "zero_point": int(q.zero_point[0])}


def annotate_partitions(outdir: str | Path) -> Path:
    """Add to the artifact's partitions.json what the delegate checks the interpreter's model
    against beyond the programs' own shapes: the model's operator and tensor counts, the
    configuration's name, and per partition its operators' builtin codes and its boundary
    tensors' type, shape and quantization (from the artifact's `model.tflite`); manifest.json
    gets the file's new hash. The path written."""
    from qaccel.backends.vta.artifact_files import read_artifact_file
    from qaccel.frontend import tflite_schema as schema
    from qaccel.frontend.tflite_writer import read_model

    root = Path(outdir)
    try:
        manifest = json.loads(read_artifact_file(root, "manifest.json", DelegateArtifactError))
        files = manifest["files"]
        text = read_artifact_file(root, PARTITIONS_FILE, DelegateArtifactError)
        if files.get(PARTITIONS_FILE) != hashlib.sha256(text).hexdigest():
            raise DelegateArtifactError(f"'{root}': {PARTITIONS_FILE} does not match its SHA-256 "
                                        f"in manifest.json")  # fmt: skip
        doc = json.loads(text)
        model = read_artifact_file(root, "model.tflite", DelegateArtifactError)
        if files.get("model.tflite") != hashlib.sha256(model).hexdigest():
            raise DelegateArtifactError(f"'{root}': model.tflite does not match its SHA-256 in "
                                        f"manifest.json")  # fmt: skip
        subgraphs = read_model(model).subgraphs
        sg = subgraphs[0]
        codes = schema.enum_members("BuiltinOperator")
        doc["model"] = {"operators": len(sg.operators), "tensors": len(sg.tensors)}
        doc["config"] = manifest.get("config", {}).get("name")
        for part in doc["partitions"]:
            sg = subgraphs[part.get("subgraph", 0)]
            part["op_codes"] = [codes[sg.operators[o].op] for o in part["ops"]]
            part["tensors"] = [{"index": t, "type": sg.tensors[t].type_code,
                                "shape": list(sg.tensors[t].shape), **_quant(sg.tensors[t])}
                               for t in part["inputs"] + part["outputs"]]  # fmt: skip
    except (ValueError, KeyError, TypeError, IndexError) as e:
        raise DelegateArtifactError(f"'{root}': {PARTITIONS_FILE} or manifest.json is not "
                                    f"what qaccel-compile writes "
                                    f"({type(e).__name__})") from None  # fmt: skip
    text = (json.dumps(doc, indent=1, sort_keys=True) + "\n").encode()
    (root / PARTITIONS_FILE).write_bytes(text)
    files[PARTITIONS_FILE] = hashlib.sha256(text).hexdigest()
    (root / "manifest.json").write_text(json.dumps(manifest, indent=1, sort_keys=True))
    return root / PARTITIONS_FILE


# ---- running -------------------------------------------------------------------------------


def _counters(lib: C.CDLL, delegate) -> dict:
    ptr = C.c_void_p(delegate._delegate_ptr)
    out = {}
    for name in ("invocations", "kernels", "kernels_ran", "claimed_nodes", "partitions",
                 "compiled_subgraphs", "skipped_subgraphs"):
        f = getattr(lib, f"qaccel_delegate_{name}")
        f.restype, f.argtypes = C.c_long, [C.c_void_p]
        out[name] = int(f(ptr))
    return out


def delegate_run(model: str | Path, artifact: str | Path | None,
                 input_sets: Sequence[Sequence[np.ndarray]], options: dict | None = None) -> dict:
    """In this process: the delegate over `model` with `artifact` (None: compiled on the spot,
    at Prepare) under BUILTIN_REF, every input set run; {"outputs": [[array, ...], ...], "counters": {...}, "load_s" (load_delegate: the
    artifact read and checked), "prepare_s" (the Interpreter built with the delegate, its
    Prepare included, and its tensors allocated), "invoke_s" (per input set); "load_cpu_s" and
    "prepare_cpu_s": the same in this process's CPU time (their cost on an idle machine)}.
    Raises LiteRtError (one line) for what LiteRT or the delegate refuse."""
    from ai_edge_litert.interpreter import Interpreter, OpResolverType, load_delegate

    path = delegate_library()
    opts = {**({"artifact": str(artifact)} if artifact is not None else {}), **(options or {})}
    t0, c0 = time.perf_counter(), time.process_time()
    try:
        delegate = load_delegate(str(path), opts)
    except ValueError as e:
        raise LiteRtError(_one_line(e)) from None
    lib = C.CDLL(str(path))
    load_s, load_cpu_s = time.perf_counter() - t0, time.process_time() - c0
    t0, c0 = time.perf_counter(), time.process_time()
    try:
        interp = Interpreter(model_path=str(model), experimental_delegates=[delegate],
                             experimental_op_resolver_type=OpResolverType.BUILTIN_REF)
        interp.allocate_tensors()
    except (RuntimeError, ValueError) as e:
        raise LiteRtError(_one_line(e)) from None
    prepare_s, prepare_cpu_s = time.perf_counter() - t0, time.process_time() - c0
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
            "load_cpu_s": load_cpu_s, "prepare_cpu_s": prepare_cpu_s,
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


def run_delegate(model: str | Path, artifact: str | Path | None,
                 input_sets: Sequence[Sequence[np.ndarray]], options: dict | None = None) -> dict:
    """`delegate_run` in a forked child (`isolated.run_isolated`); raises LiteRtError when the
    delegate did not run every one of its kernels on every input set."""
    from qaccel.backends.litert.isolated import run_isolated

    result = run_isolated(delegate_run, model, artifact, input_sets, options)
    c = result["counters"]
    # A kernel in a loop body (WHILE) runs once per iteration: every kernel ran, each at least
    # once per run.
    if c["partitions"] and (c["kernels_ran"] != c["kernels"]
                            or c["invocations"] < c["kernels"] * len(input_sets)):
        raise LiteRtError(f"the delegate ran {c['kernels_ran']} of its {c['kernels']} kernel(s), "
                          f"{c['invocations']} invocation(s) in {len(input_sets)} "
                          f"run(s)")  # fmt: skip
    return result


__all__ = ["DELEGATE_SOURCES", "LIB_NAME", "PARTITIONS_FILE", "DelegateArtifactError",
           "annotate_partitions", "delegate_library", "delegate_run", "run_delegate"]  # fmt: skip
