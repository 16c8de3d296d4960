"""The Python half of qaccel's LiteRT compiler plugin (`libLiteRtCompilerPlugin_Qaccel`,
backends/litert/plugin/qaccel_plugin.c), called from C through qaccel_pybridge:

    sdk_version(b"", config) -> b"qaccel 0.1.0 config 3f1c... code 9a2b..."
    partition(description, config) -> (i32 op index, i32 partition index) pairs
    compile(partitions_model, config) -> u32 n, then per partition: u32 name length, name,
                                         u64 program size, program

`config` is QACCEL_PLUGIN_CONFIG (a hardware configuration file or bundled name; empty: VTA's).
`partition` gets the subgraph LiteRT shows the plugin as the C side describes it (see
`read_description`), rebuilds it as a `.tflite` and selects the ops qaccel's partitioning puts on
the accelerator, each with the index of its accelerator partition, and keeps each partition's
program (taken from that one whole-model compile) under the digest of the partition's content.
`compile` gets LiteRT's model of outlined partitions (one subgraph per partition) and looks each
subgraph's program up by the same digest; only a subgraph with no program kept (LiteRT outlined
something else, or the kept one is gone) is compiled as a model of its own: it must become one
accelerator function whose inputs and outputs are the subgraph's. The program is what the
DISPATCH_OP that LiteRT writes for the partition runs in libLiteRtDispatch_Qaccel.

Both results, and the kept programs, are cached (in memory, and on disk under
QACCEL_PLUGIN_CACHE, default `<qaccel cache>/plugin`; `off` disables the disk cache), keyed on
the SDK version (qaccel's version, the configuration's content hash and a fingerprint of qaccel's
installed sources) and the SHA-256 of the bytes LiteRT handed over (of the partition's content
for a kept program): the second CompiledModel of a model compiles nothing.
Every failure raises `PluginError` with one line, which the plugin prints and returns to LiteRT
as a failed status.
"""

from __future__ import annotations

import hashlib
import os
import struct
from functools import cache
from pathlib import Path

import numpy as np

from qaccel import __version__

_MEMORY: dict[str, bytes] = {}
COMPILES = {"partition": 0, "compile": 0, "delegate": 0}  # how often each step really ran
RECOMPILED = {"subgraphs": 0}  # outlined subgraphs Compile compiled (no program kept)
# TfLiteType (LiteRtElementType) -> the writer's dtype
_ELEMENT_TYPES = {1: np.float32, 2: np.int32, 3: np.uint8, 4: np.int64, 6: np.bool_, 7: np.int16,
                  9: np.int8, 10: np.float16, 11: np.float64, 13: np.uint64, 16: np.uint32,
                  17: np.uint16, 5: "STRING", 18: "INT4"}  # fmt: skip
_CUSTOM = 32
OPAQUE_COMPOSITE = "QACCEL_UNSEEN_STABLEHLO_COMPOSITE"


class PluginError(Exception):
    """The plugin cannot partition or compile (one line for the user)."""


# ---- configuration and cache ---------------------------------------------------------------
@cache
def _config(text: str):
    # as api.load_config, without importing the compiler (a cached compile needs none of it)
    from qaccel.targets.vta.config import DEFAULT_CONFIG, HardwareConfig

    try:
        return HardwareConfig.from_json(text) if text else DEFAULT_CONFIG
    except Exception as e:
        raise PluginError(f"QACCEL_PLUGIN_CONFIG={text!r}: {e}") from None


@cache
def _code_fingerprint() -> str:
    """Changes whenever an installed qaccel source file does (paths, sizes, mtimes)."""
    root = Path(__file__).resolve().parents[1]
    h = hashlib.sha256()
    for p in sorted(root.rglob("*.py")):
        if p.relative_to(root).parts[0] in ("tests", "benchmarks", "fuzz", "build", "docs"):
            continue
        st = p.stat()
        h.update(f"{p.relative_to(root)}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
    return h.hexdigest()[:12]


def sdk_version_text(config: str) -> str:
    return (f"qaccel {__version__} config {_config(config).content_hash} "
            f"code {_code_fingerprint()}")


def sdk_version(_: bytes, config: str) -> bytes:
    return sdk_version_text(config).encode()


def cache_dir() -> Path | None:
    env = os.environ.get("QACCEL_PLUGIN_CACHE")
    if env and env.lower() == "off":
        return None
    if env:
        return Path(env)
    from qaccel.backends.litert.runtime import cache_dir as qaccel_cache

    return qaccel_cache() / "plugin"


def _cached(kind: str, data: bytes, config: str, make) -> bytes:
    key = hashlib.sha256(f"{kind}\0{sdk_version_text(config)}\0".encode() + data).hexdigest()
    if key in _MEMORY:
        return _MEMORY[key]
    directory = cache_dir()
    path = directory / f"{kind}-{key[:40]}.bin" if directory is not None else None
    if path is not None and path.is_file():
        result = path.read_bytes()
    else:
        result = make()
        COMPILES[kind] += 1
        if path is not None:
            _write_cache(path, result)
    _MEMORY[key] = result
    return result


def _write_cache(path: Path, data: bytes) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_bytes(data)
        os.replace(tmp, path)
    except OSError:
        pass  # a cache that cannot be written only costs time


# ---- the subgraph description ----------------------------------------------------------------
class _Reader:
    def __init__(self, data: bytes):
        self.data, self.at = memoryview(data), 0

    def take(self, fmt: str):
        values = struct.unpack_from("<" + fmt, self.data, self.at)
        self.at += struct.calcsize("<" + fmt)
        return values

    def u32(self) -> int:
        return self.take("I")[0]

    def i32(self) -> int:
        return self.take("i")[0]

    def raw(self, n: int) -> bytes:
        if self.at + n > len(self.data):
            raise PluginError("truncated subgraph description")
        out = bytes(self.data[self.at:self.at + n])
        self.at += n
        return out

    def str(self) -> str:
        return self.raw(self.u32()).decode("utf-8", "replace")


@cache
def _enum_names(enum: str) -> dict[int, str]:
    from qaccel.frontend import tflite_schema as ts

    return {v: k for k, v in ts.enum_members(enum).items()}


def _options(op_name: str, raw: dict) -> dict:
    from qaccel.frontend import tflite_schema as ts

    table = ts.options_table_for(op_name)
    if table is None:
        return {}
    fields = {f.name: f for f in ts.options_table(table).fields}
    out = {}
    for name, value in raw.items():
        f = fields.get(name)
        if f is None:
            continue
        if f.kind == "enum":
            value = _enum_names(f.enum).get(int(value))
            if value is None:
                continue
        elif f.kind == "bool":
            value = bool(value)
        elif isinstance(value, np.ndarray):
            value = value.astype(f.dtype) if f.dtype is not None else value
        out[name] = value
    return out


def read_description(data: bytes):
    """The ModelSpec of the subgraph the C side describes (see qaccel_plugin.c `describe`):
    "QPD1" and one subgraph, or "QPD2" (the delegate's, qaccel_describe.c): the main subgraph,
    u32 n, then n decomposition subgraphs its STABLEHLO_COMPOSITE operators name (1..n)."""
    from qaccel.frontend.tflite_writer import ModelSpec

    r = _Reader(data)
    magic = r.raw(4)
    if magic not in (b"QPD1", b"QPD2"):
        raise PluginError("not a qaccel subgraph description")
    subgraphs = [_read_subgraph(r, "main")]
    if magic == b"QPD2":
        n = r.u32()
        if n > 64:
            raise PluginError("subgraph description: too many decompositions")
        subgraphs += [_read_subgraph(r, f"decomposition_{k + 1}") for k in range(n)]
    if r.at != len(r.data):
        raise PluginError("subgraph description: trailing bytes")
    for sg in subgraphs:
        for op in sg.operators:
            s = op.options.get("decomposition_subgraph_index")
            if op.op == "STABLEHLO_COMPOSITE" and not 1 <= int(s) < len(subgraphs):
                raise PluginError(f"subgraph description: a composite names subgraph {s}")
    return ModelSpec(subgraphs)


def _read_subgraph(r: _Reader, sg_name: str):
    from qaccel.frontend import tflite_schema as ts
    from qaccel.frontend.tflite_writer import OperatorSpec, SubgraphSpec, TensorSpec
    from qaccel.kernels.qparams import QParams

    n_tensors, n_ops, n_in, n_out = r.take("IIII")
    inputs = [r.i32() for _ in range(n_in)]
    outputs = [r.i32() for _ in range(n_out)]
    names = {v: k for k, v in ts.BUILTIN_OPERATOR_CODES.items()}
    ops = []
    for _ in range(n_ops):
        code = r.i32()
        custom = r.str()
        op_in = [r.i32() for _ in range(r.u32())]
        op_out = [r.i32() for _ in range(r.u32())]
        raw = {}
        for _ in range(r.u32()):
            field, kind = r.str(), r.u32()
            if kind == 0:
                raw[field] = r.take("q")[0]
            elif kind == 1:
                raw[field] = float(np.float32(r.take("d")[0]))
            elif kind == 3:
                raw[field] = r.raw(r.u32())
            else:
                raw[field] = np.frombuffer(r.raw(4 * r.u32()), "<i4").copy()
        custom_options = r.raw(r.u32()) if r.u32() else None
        name = names.get(code)
        if name is None:
            raise PluginError(f"unknown TFLite builtin operator {code}")
        if name == "STABLEHLO_COMPOSITE" and "decomposition_subgraph_index" in raw:
            # described with its decomposition (the delegate's QPD2): the op as in the model
            options = {"name": raw.get("name", b"").decode("utf-8", "replace"),
                       "decomposition_subgraph_index": int(raw["decomposition_subgraph_index"]),
                       "composite_attributes": raw.get("composite_attributes", b""),
                       "composite_attributes_format": "FLEXBUFFERS",
                       "version": int(raw.get("version", 0))}  # fmt: skip
            ops.append(OperatorSpec(name, op_in, op_out, options))
            continue
        if name == "STABLEHLO_COMPOSITE":
            # Its decomposition is another subgraph, which Partition does not see: the op stays
            # opaque (on the CPU) in the rebuilt model.
            name, custom, raw = "CUSTOM", OPAQUE_COMPOSITE, {}
            code = _CUSTOM
        ops.append(OperatorSpec(name, op_in, op_out, _options(name, raw),
                                custom_code=custom or None if code == _CUSTOM else None,
                                custom_options=custom_options))  # fmt: skip
    tensors = []
    for i in range(n_tensors):
        name = r.str() or f"tensor_{i}"
        elem = r.i32()
        shape = tuple(r.i32() for _ in range(r.u32()))
        dtype = _ELEMENT_TYPES.get(elem)
        if dtype is None:
            raise PluginError(f"tensor {name!r}: element type {elem}")
        kind = r.u32()
        quant = None
        if kind == 1:
            scale, zp = r.take("dq")
            quant = QParams.per_tensor(scale, zp)
        elif kind == 2:
            axis, n = r.i32(), r.u32()
            scales = np.frombuffer(r.raw(8 * n), "<f8")
            zps = np.frombuffer(r.raw(8 * n), "<i8")
            quant = QParams.per_axis(scales, zps, axis)
        data = r.raw(r.take("q")[0]) if r.u32() else None
        # LiteRT shows a dynamic dimension (the shape signature's -1) as -1; the model's shape
        # has 1 there, as the converter writes it.
        signature = shape if any(d < 0 for d in shape) else None
        shape = tuple(1 if d < 0 else d for d in shape)
        tensors.append(TensorSpec(name, shape, dtype, quant, data, shape_signature=signature))
    return SubgraphSpec(sg_name, tensors, inputs, outputs, ops)


# ---- partition ---------------------------------------------------------------------------------
# Partition compiles the whole model once and keeps each partition's program (taken from that
# compile, backends/litert/partitions.py), in memory and in the disk cache, under the digest of
# the partition's content (`_content_key`): the Compile that follows finds the program of each
# subgraph LiteRT outlined as we selected it there, and compiles nothing.
_PROGRAMS: dict[str, bytes] = {}


def _data_bytes(data) -> bytes:
    if isinstance(data, np.ndarray):
        return np.ascontiguousarray(data).tobytes()
    return bytes(data)


def _option_value(value):
    if isinstance(value, np.ndarray):
        return tuple(value.reshape(-1).tolist())
    if isinstance(value, bool | np.bool_):
        return bool(value)
    if isinstance(value, float | np.floating):
        return float(np.float32(value))
    if isinstance(value, int | np.integer):
        return int(value)
    return str(value)


def _content_key(config: str, sg, inputs, outputs, ops) -> str:
    """The digest of the operators `ops` of subgraph `sg` with inputs `inputs` and outputs
    `outputs`: each operator (kind, custom code, options) with its tensors (name, shape, type,
    quantization, constant data), in an order that does not depend on the operators' or
    tensors' places, and the SDK version (qaccel, the configuration's hash, its code). The same
    for a partition of the original model and for the subgraph LiteRT outlines from it."""
    h = hashlib.sha256(f"{sdk_version_text(config)}\0".encode())
    data_digests: dict[int, str] = {}

    def tensor(t: int) -> str:
        if t < 0:
            return "-"
        spec = sg.tensors[t]
        q = spec.quant
        quant = ("-" if q is None else
                 (tuple(np.asarray(q.scale, np.float32).tolist()),
                  tuple(np.asarray(q.zero_point, np.int64).tolist()), q.axis))  # fmt: skip
        if spec.data is not None and t not in data_digests:
            data_digests[t] = hashlib.sha256(_data_bytes(spec.data)).hexdigest()
        return repr((spec.name, tuple(int(d) for d in spec.shape), str(spec.dtype), quant,
                     data_digests.get(t, "-")))  # fmt: skip

    described = sorted(
        repr((op.op, op.custom_code or "", sorted((k, _option_value(v)) for k, v in op.options.items()),
              [tensor(t) for t in op.inputs], [tensor(t) for t in op.outputs]))
        for op in (sg.operators[k] for k in ops))  # fmt: skip
    for part in (*sorted(tensor(t) for t in inputs), "|", *sorted(tensor(t) for t in outputs),
                 "|", *described):  # fmt: skip
        h.update(part.encode() + b"\0")
    return h.hexdigest()


def _keep_program(key: str, program: bytes) -> None:
    _PROGRAMS[key] = program
    directory = cache_dir()
    if directory is not None:
        _write_cache(directory / f"program-{key[:40]}.bin", program)


def _kept_program(key: str) -> bytes | None:
    if key in _PROGRAMS:
        return _PROGRAMS[key]
    directory = cache_dir()
    path = directory / f"program-{key[:40]}.bin" if directory is not None else None
    if path is not None and path.is_file():
        _PROGRAMS[key] = path.read_bytes()
        return _PROGRAMS[key]
    return None


def _accelerator_ops(model: bytes, config: str) -> list[tuple[int, int]]:
    """(op index, partition index) of the operators qaccel-compile puts on the accelerator
    (backends/litert/partitions.py: whole original operators, each partition's program taken
    from the whole-model compile or checked by compiling it again); the partitions that stay
    on the CPU are reported, one line each."""
    import sys

    from qaccel import api
    from qaccel.backends.litert.partitions import compile_partitions
    from qaccel.frontend.tflite_writer import read_model

    compiler = api.partition_compiler(_config(config))
    done, notes = compile_partitions(model, compiler(model), compiler)
    for line in notes:
        print(f"qaccel plugin: {line}", file=sys.stderr)
    sg = read_model(model).subgraphs[0]
    pairs = []
    for k, cp in enumerate(c for c in done if c.partition.subgraph == 0):
        _keep_program(_content_key(config, sg, cp.inputs, cp.outputs, cp.partition.ops),
                      cp.program)  # fmt: skip
        pairs += [(int(op), k) for op in cp.partition.ops]
    return sorted(pairs)


def partition(description: bytes, config: str) -> bytes:
    _debug_dump("partition", description)

    def make() -> bytes:
        from qaccel.frontend.tflite_writer import write_model

        model = write_model(read_description(description))
        pairs = _accelerator_ops(model, config)
        return b"".join(struct.pack("<ii", op, part) for op, part in pairs)

    return _guarded(lambda: _cached("partition", description, config, make))


# ---- compile -------------------------------------------------------------------------------------
def compile(model: bytes, config: str) -> bytes:  # noqa: A001 - the plugin entry point's name
    _debug_dump("compile", model)

    def make() -> bytes:
        from qaccel import api
        from qaccel.frontend.tflite_writer import read_model

        spec = read_model(model)
        programs = [_kept_program(_content_key(config, sg, sg.inputs, sg.outputs,
                                               range(len(sg.operators))))
                    for sg in spec.subgraphs]  # fmt: skip
        if any(p is None for p in programs):
            programs = api.compile_partition_model(model, _config(config))
            RECOMPILED["subgraphs"] += len(programs)
        out = [struct.pack("<I", len(programs))]
        for i, program in enumerate(programs):
            name = f"qaccel_partition_{i}".encode()
            out += [struct.pack("<I", len(name)), name, struct.pack("<Q", len(program)), program]
        return b"".join(out)

    return _guarded(lambda: _cached("compile", model, config, make))


# ---- the classic delegate, compiling on the spot -------------------------------------------------
def delegate_partitions(description: bytes, config: str) -> bytes:
    """For libqaccel_delegate without an artifact: the subgraph its Prepare describes (the
    format `read_description` reads), rebuilt as a `.tflite`, partitioned and compiled as
    `qaccel-compile` does (`backends/litert/partitions.py`). Returns b"QDP1", u32 n, then per
    partition: str name, u32 n + i32 op indices, u32 n + i32 input tensor ids, u32 n + i32
    output tensor ids (ids of the description; inputs and outputs in the program's order),
    u64 size + program. Cached as `partition` and `compile` are (same key, same directory)."""
    _debug_dump("delegate", description)
    try:
        _config(config)
    except PluginError as e:  # named as the delegate's option, not the plugin's variable
        raise PluginError(str(e).replace("QACCEL_PLUGIN_CONFIG=", "option config=", 1)) from None

    def make() -> bytes:
        import sys

        from qaccel import api
        from qaccel.backends.litert.partitions import compile_partitions
        from qaccel.frontend.tflite_writer import write_model

        model = write_model(read_description(description))
        compiler = api.partition_compiler(_config(config))
        done, notes = compile_partitions(model, compiler(model), compiler)
        for line in notes:
            print(f"qaccel delegate: {line}", file=sys.stderr)
        out = [b"QDP1", struct.pack("<I", len(done))]
        for cp in done:
            name = cp.partition.name.encode()
            out += [struct.pack("<I", len(name)), name]
            for ids in (cp.partition.ops, cp.inputs, cp.outputs):
                out += [struct.pack("<I", len(ids)), struct.pack(f"<{len(ids)}i", *ids)]
            out += [struct.pack("<Q", len(cp.program)), cp.program]
        return b"".join(out)

    return _guarded(lambda: _cached("delegate", description, config, make))


def _debug_dump(kind: str, data: bytes) -> None:
    """QACCEL_PLUGIN_DEBUG=DIR keeps what LiteRT handed over (DIR/partition-N.bin, ...)."""
    directory = os.environ.get("QACCEL_PLUGIN_DEBUG")
    if directory and os.path.isdir(directory):
        n = len(list(Path(directory).glob(f"{kind}-*.bin")))
        (Path(directory) / f"{kind}-{n}.bin").write_bytes(data)


def _guarded(run):
    """Every failure as one PluginError line (the C side prints it)."""
    try:
        return run()
    except PluginError:
        raise
    except Exception as e:  # the compiler's own one-line errors, and anything unexpected
        if os.environ.get("QACCEL_PLUGIN_DEBUG"):
            import traceback

            traceback.print_exc()
        text = str(e).strip().splitlines()
        raise PluginError(f"{type(e).__name__}: {text[0] if text else ''}") from None


__all__ = ["PluginError", "cache_dir", "compile", "delegate_partitions", "partition",
           "read_description", "sdk_version", "sdk_version_text"]  # fmt: skip
