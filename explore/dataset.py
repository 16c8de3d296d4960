"""Dataset evaluation of a compiled artifact: run every input set (host ops on the
interpreter, accelerator layers on the simulator) in parallel on an executor, compare with
LiteRT's reference kernels (BUILTIN_REF), and with labels report top-1 agreement and accuracy.

Inputs (`load_input_sets`): a folder with one `.npy` per input set (single-input models) or
one `.npz` per input set (its arrays in order, one per model input), sorted by file name; or
one `.npz` file whose arrays are input sets of a single-input model, an array with one more
(leading) dimension than the input holding that many sets.

    summary = evaluate_dataset("out", load_input_sets("data/", model_inputs), labels=labels)

A folder's files are read when their set runs, not all first. Where every set runs: an
artifact whose run plan runs every accelerator function through its program (`RunPlan.
concurrent`) runs on local threads of this process (`workers="threads"`, the default for a
local executor): the plan is loaded once, each thread has its own program states (sharing one
prepared copy of each program's layers and converted weights, read-only) and the
program runner releases the GIL, so the threads compute on every core, read their sets and
write their outputs themselves, and nothing is copied between processes. Otherwise (or with
`workers="processes"`, or Ray) the artifact's files travel to the workers as bytes (once per
worker), so Ray workers on other machines need no shared file system.

An input set that cannot be read or run ends the evaluation with one line naming it and its
file (`DatasetError`); the outputs of the sets finished before it stay written.
"""

from __future__ import annotations

import hashlib
import io
import queue
import shutil
import struct
import tempfile
import threading
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from qaccel.explore.backend import (
    is_artifact,
    load_artifact,
    load_run_plan,
    run_compiled,
    run_errors,
)
from qaccel.explore.executors import LocalExecutor, RayExecutor, TaskFailed


class DatasetError(ValueError):
    """Unusable dataset input: one line naming the file."""


_NPY_HEADER = threading.Lock()
"""np.load parses a .npy header with `ast.literal_eval`, which CPython 3.11 cannot run in two
threads at once ("AST constructor recursion depth mismatch"): dataset threads read one at a time."""


def _load(path: Path) -> Any:
    try:
        with _NPY_HEADER:
            return np.load(path, allow_pickle=False)
    except (OSError, ValueError, EOFError) as e:
        raise DatasetError(f"cannot read input '{path}': {e}") from None


def _read_npy(path: Path) -> list[np.ndarray]:
    return [_load(path)]


def _read_npz(path: Path) -> list[np.ndarray]:
    with _load(path) as npz:
        try:
            return [npz[k] for k in npz.files]
        except (OSError, ValueError, EOFError) as e:  # a damaged member
            raise DatasetError(f"cannot read input '{path}': {e}") from None


class InputSets(Sequence):
    """Named input sets, each `(name, arrays)`; a folder's files are read when their set is
    asked for (a dataset of tens of thousands of images is not held in memory).
    `source(i)` is where set i comes from, for messages."""

    def __init__(self, names: list[str], sources: list[str], read) -> None:
        self.names, self._sources, self._read = names, sources, read

    def __len__(self) -> int:
        return len(self.names)

    def __getitem__(self, i):  # type: ignore[override]
        if isinstance(i, slice):
            return [self[k] for k in range(*i.indices(len(self)))]
        return self.names[i], self._read(i)

    def source(self, i: int) -> str:
        return self._sources[i]


def load_input_sets(source: str | Path, input_shapes: Sequence[tuple[int, ...]]) -> InputSets:
    """(name, arrays) per input set; `input_shapes` are the model's inputs' shapes."""
    source = Path(source)
    if source.is_file() and source.suffix == ".npz":
        if len(input_shapes) != 1:
            raise DatasetError(f"{source}: one .npz of input sets needs a single-input model "
                               f"(this one has {len(input_shapes)}); give a folder of .npz "
                               "files, one per set")  # fmt: skip
        shape = tuple(input_shapes[0])
        sets: list[tuple[str, list[np.ndarray]]] = []
        for key, a in zip(*_npz_arrays(source)):
            if a.ndim == len(shape) + 1:
                sets.extend((f"{key}_{i}", [a[i]]) for i in range(a.shape[0]))
            else:
                sets.append((key, [a]))
        names = [name for name, _ in sets]
        result = InputSets(names, [str(source)] * len(sets), lambda i: sets[i][1])
    elif source.is_dir():
        files = sorted(p for p in source.iterdir() if p.suffix in (".npy", ".npz"))
        if len(input_shapes) != 1:
            for p in files:
                if p.suffix == ".npy":
                    raise DatasetError(f"{p}: the model has {len(input_shapes)} inputs; give "
                                       "one .npz per input set")  # fmt: skip
        readers = [_read_npy if p.suffix == ".npy" else _read_npz for p in files]
        result = InputSets([p.stem for p in files], [str(p) for p in files],
                           lambda i: readers[i](files[i]))  # fmt: skip
    else:
        raise DatasetError(f"{source}: expected a folder of .npy/.npz input sets or one .npz")
    if not len(result):
        raise DatasetError(f"{source}: no .npy or .npz input sets")
    return result


def _npz_arrays(path: Path) -> tuple[list[str], list[np.ndarray]]:
    """The arrays of an .npz of input sets, in order: each member np.savez stored uncompressed
    mapped from the file (a set is read when it runs, and ImageNet's validation set as one
    .npz is not read into memory first), the others read as np.load reads them."""
    with _load(path) as npz:
        keys = list(npz.files)
        try:
            mapped = _mapped_members(path)
            return keys, [mapped[k] if k in mapped else npz[k] for k in keys]
        except (OSError, ValueError, EOFError, zipfile.BadZipFile) as e:
            raise DatasetError(f"cannot read input '{path}': {e}") from None


def _mapped_members(path: Path) -> dict[str, np.ndarray]:
    """Memory maps of the uncompressed `.npy` members of a zip file, by np.load's key."""
    mapped: dict[str, np.ndarray] = {}
    with zipfile.ZipFile(path) as z, open(path, "rb") as f:
        for info in z.infolist():
            if info.compress_type != zipfile.ZIP_STORED or not info.filename.endswith(".npy"):
                continue
            f.seek(info.header_offset)
            local = f.read(30)  # the local file header: its name and extra field lengths
            if len(local) != 30 or local[:4] != b"PK\x03\x04":
                raise ValueError(f"member {info.filename}: no local file header")
            name_len, extra_len = struct.unpack("<HH", local[26:30])
            f.seek(info.header_offset + 30 + name_len + extra_len)
            version = np.lib.format.read_magic(f)
            read_header = (np.lib.format.read_array_header_1_0 if version == (1, 0)
                           else np.lib.format.read_array_header_2_0)  # fmt: skip
            shape, fortran, dtype = read_header(f)
            start = f.tell()
            if dtype.hasobject or fortran:
                continue  # np.load refuses object arrays; a Fortran-order one is read
            nbytes = dtype.itemsize * int(np.prod(shape, dtype=np.int64))
            if start + nbytes - (info.header_offset + 30 + name_len + extra_len) > info.file_size:
                raise ValueError(f"member {info.filename}: shorter than its array")
            mapped[info.filename[:-4]] = (np.memmap(path, dtype, "r", start, shape) if nbytes
                                          else np.zeros(shape, dtype))  # fmt: skip
    return mapped


def _where(input_sets: Sequence, i: int, name: str) -> str:
    """Input set i for a message: its name, and its file when it has one of its own."""
    source = input_sets.source(i) if isinstance(input_sets, InputSets) else None
    return f"input set '{name}'" + (f" ({source})" if source else "")


@dataclass
class DatasetSummary:
    sets: int = 0
    bit_exact: int | None = None
    """Input sets whose every output equals LiteRT's (None: not compared)."""
    max_abs_diff: int | None = None
    top1_agreement: float | None = None
    accuracy: float | None = None
    litert_accuracy: float | None = None
    per_set: list[dict[str, Any]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"sets": self.sets, "bit_exact": self.bit_exact,
                "max_abs_diff": self.max_abs_diff, "top1_agreement": self.top1_agreement,
                "accuracy": self.accuracy, "litert_accuracy": self.litert_accuracy,
                "per_set": self.per_set}  # fmt: skip

    def line(self) -> str:
        parts = [f"{self.sets} input set(s)"]
        if self.bit_exact is not None:
            parts.append(f"bit-exact with LiteRT on {self.bit_exact}/{self.sets}, "
                         f"max |diff| {self.max_abs_diff}")  # fmt: skip
        if self.top1_agreement is not None:
            parts.append(f"top-1 agreement {self.top1_agreement:.4f}")
        if self.accuracy is not None:
            parts.append(f"top-1 accuracy {self.accuracy:.4f} (LiteRT {self.litert_accuracy:.4f})"
                         if self.litert_accuracy is not None else
                         f"top-1 accuracy {self.accuracy:.4f}")  # fmt: skip
        return ", ".join(parts)


def input_shapes(artifact: str | Path) -> list[tuple[int, ...]]:
    """The shapes of the artifact's entry function's inputs."""
    plan = _local_plan(artifact)
    if plan is not None:  # no MLIR to parse
        return [shape for shape, _ in plan.inputs]
    from qaccel.interpreter.interpreter import entry_function

    function = entry_function(load_artifact(artifact).module)
    return [tuple(t.get_shape()) for t in function.function_type.inputs.data]


def artifact_files(outdir: str | Path) -> dict[str, bytes]:
    root = Path(outdir)
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file()}  # fmt: skip


_LOADED: dict[str, Any] = {}


def content_key(files: dict[str, bytes]) -> str:
    """A digest of an artifact's files (names and contents)."""
    h = hashlib.sha256()
    for name, data in sorted(files.items()):
        h.update(name.encode() + b"\0" + hashlib.sha256(data).digest())
    return h.hexdigest()


def _runner_from(files: dict[str, bytes], simulator: str, content: str | None = None) -> Any:
    """The artifact, materialized once per worker process (cached by content, `content` its
    `content_key` when the caller has it: hashing tens of megabytes per chunk cost more than
    the chunk's inferences): a function running one input set. Its run plan (numpy and the C
    machine, each layer checked and timed once, then run with data only) when it has one, else
    the compiled model on the interpreter."""
    key = (content or content_key(files)) + simulator
    if key not in _LOADED:
        folder = Path(tempfile.mkdtemp(prefix="qaccel-artifact-"))
        try:
            for name, data in files.items():
                (folder / name).parent.mkdir(parents=True, exist_ok=True)
                (folder / name).write_bytes(data)
            plan = load_run_plan(folder, simulator)
            if plan is not None:
                _LOADED[key] = plan.run
            else:
                compiled = load_artifact(folder)
                _LOADED[key] = lambda arrays: run_compiled(compiled, arrays, simulator)
        finally:  # both hold what they run in memory: no folder left behind per worker
            shutil.rmtree(folder, ignore_errors=True)
    return _LOADED[key]


def _reference(model: bytes, sets: list[list[np.ndarray]]) -> list[list[np.ndarray]]:
    """LiteRT's outputs (BUILTIN_REF, one subprocess) for every set."""
    from qaccel.backends.litert.oracle import run_reference

    ref = run_reference(model, sets, keep_all_tensors=False)
    if ref.refused is not None:
        raise DatasetError(f"LiteRT refused the model: {ref.refused}")
    return ref.outputs


def _run_chunk(shared: dict[str, Any], chunk: list[tuple[int, str, list[np.ndarray]]]) -> list[dict]:
    """Our outputs for every set of the chunk, and LiteRT's (one subprocess per chunk); a set
    that fails ends the chunk with an entry carrying the error's line."""
    run = _runner_from(shared["files"], shared["simulator"], shared.get("content"))
    errors = run_errors()
    results = []
    for i, where, arrays in chunk:
        try:
            results.append({"index": i, "outputs": run(arrays)})
        except errors as e:
            return results + [{"index": i, "error": f"{where}: {_line(e)}"}]
    if shared["compare"]:
        refs = _reference(shared["model"], [arrays for _, _, arrays in chunk])
        for r, outs in zip(results, refs, strict=True):
            r["reference"] = outs
    return results


def _line(e: BaseException) -> str:
    text = str(e).strip().splitlines()
    return text[0] if text else type(e).__name__


class _OutputWriter:
    """DIR/<set>/output_i.npy, as np.save writes them: the header of each shape and dtype is
    made once (np.save's own, from an array of that shape), then each file is the header and
    the array's bytes, half np.save's time per file."""

    def __init__(self, outputs_dir: str | Path | None):
        self.root = None if outputs_dir is None else Path(outputs_dir)
        self._headers: dict[tuple[str, tuple[int, ...]], bytes] = {}

    def write(self, name: str, outputs: list[np.ndarray]) -> None:
        if self.root is None:
            return
        folder = self.root / name
        folder.mkdir(parents=True, exist_ok=True)
        for k, y in enumerate(outputs):
            path = folder / f"output_{k}.npy"
            if not (y.flags.c_contiguous and y.dtype.isnative and not y.dtype.hasobject):
                np.save(path, y)
                continue
            key = (y.dtype.str, y.shape)
            header = self._headers.get(key)
            if header is None:
                buf = io.BytesIO()
                np.save(buf, np.zeros(y.shape, y.dtype))
                header = self._headers[key] = buf.getvalue()[: buf.tell() - y.nbytes]
            with open(path, "wb") as f:
                f.write(header)
                f.write(y.data)


_PLAN: list[tuple[tuple[str, str, bytes], Any]] = []


def _local_plan(artifact: str | Path, simulator: str = "c") -> Any:
    """The artifact's run plan (None without one), loaded once in this process for
    `input_shapes` and `evaluate_dataset` alike; loaded again when its manifest changed."""
    root = Path(artifact).resolve()
    try:
        manifest = (root / "manifest.json").read_bytes()
    except OSError:
        manifest = b""
    key = (str(root), simulator, hashlib.sha256(manifest).digest())
    if not _PLAN or _PLAN[0][0] != key:
        plan = load_run_plan(root, simulator)
        _PLAN[:] = [(key, plan)]
    return _PLAN[0][1]


def _in_threads(plan: Any, input_sets: Sequence, jobs: int, compare: bool, model: bytes | None,
                done: Any) -> None:
    """Every input set through `plan` on `jobs` threads of this process (the calling thread
    when 1): each takes the next set (the next chunk, when comparing: LiteRT runs a chunk in
    one subprocess), reads it and runs it, and hands `done(indices, outputs, references)` to
    the calling thread, which writes them (file writes that wait on the disk keep no worker
    from computing). The first error stops them all and is raised."""
    n = len(input_sets)
    size = 1 if not compare else max(1, min(64, -(-n // (2 * jobs))))
    chunks = iter(range(0, n, size))
    take = threading.Lock()
    stop = threading.Event()
    errors = run_errors()

    def work(deliver) -> None:
        try:
            while not stop.is_set():
                with take:
                    start = next(chunks, None)
                if start is None:
                    return
                indices = list(range(start, min(n, start + size)))
                ins, outs = [], []
                for i in indices:
                    name, arrays = input_sets[i]  # DatasetError names the file
                    try:
                        ys = plan.run(arrays)
                    except errors as e:
                        raise DatasetError(f"{_where(input_sets, i, name)}: {_line(e)}") from None
                    outs.append(ys)
                    if compare:
                        ins.append(arrays)
                deliver((indices, outs, _reference(model, ins) if compare else None))
        except BaseException as e:  # noqa: BLE001 - handed to the calling thread
            stop.set()
            deliver(e)

    def handle(item) -> None:
        if isinstance(item, BaseException):
            raise item
        done(*item)

    if jobs == 1:
        work(handle)
        return
    results: queue.SimpleQueue = queue.SimpleQueue()
    threads = [threading.Thread(target=lambda: (work(results.put), results.put(None)),
                                name=f"qaccel-dataset-{k}", daemon=True)
               for k in range(min(jobs, n))]  # fmt: skip
    for t in threads:
        t.start()
    running, failure = len(threads), None
    try:
        while running:
            item = results.get()
            if item is None:
                running -= 1
            elif isinstance(item, BaseException):
                failure = failure or item
            elif failure is None:
                done(*item)
    finally:
        stop.set()
    for t in threads:
        t.join()
    if failure is not None:
        raise failure


def evaluate_dataset(
    artifact: str | Path,
    input_sets: Sequence[tuple[str, list[np.ndarray]]],
    *,
    labels: np.ndarray | None = None,
    executor: LocalExecutor | RayExecutor | None = None,
    outputs_dir: str | Path | None = None,
    compare: bool = True,
    progress: bool = False,
    simulator: str = "c",
    workers: str = "auto",
) -> DatasetSummary:
    """Run every input set on the artifact, compare with LiteRT (needs the artifact's
    model.tflite), write DIR/<set>/output_i.npy when `outputs_dir` is given. `workers`:
    "threads" (threads of this process, on the artifact's run plan), "processes" (the
    executor's), or "auto": threads where the plan runs every accelerator function through
    its program and the executor is local, else processes (module docstring)."""
    if workers not in ("auto", "threads", "processes"):
        raise ValueError(f"workers is auto, threads or processes, not {workers!r}")
    if not is_artifact(artifact):
        raise DatasetError(f"{artifact}: not a qaccel-compile artifact folder")
    if labels is not None and len(labels) != len(input_sets):
        raise DatasetError(f"{len(labels)} label(s) for {len(input_sets)} input set(s)")
    executor = executor or LocalExecutor()
    local = isinstance(executor, LocalExecutor)
    plan = _local_plan(artifact, simulator) if local and workers != "processes" else None
    if workers == "threads" and plan is None:
        raise DatasetError(f"{artifact}: threads run an artifact's run plan, and "
                           + ("it has none" if local else "the executor is not local"))
    threads = plan is not None and (workers == "threads" or plan.concurrent)
    jobs = getattr(executor, "jobs", None) or 2
    ours: dict[int, list[np.ndarray]] = {}
    refs: dict[int, list[np.ndarray]] = {}
    bar = None
    if progress:
        from tqdm import tqdm

        tqdm.monitor_interval = 0
        bar = tqdm(total=len(input_sets), desc="inputs", unit="set", dynamic_ncols=True)

    names = _names(input_sets)
    writer = _OutputWriter(outputs_dir)

    def done(indices: list[int], outputs: list, references: list | None) -> None:
        for k, i in enumerate(indices):
            writer.write(names[i], outputs[k])
            ours[i] = outputs[k]
            if references is not None:
                refs[i] = references[k]
        if bar is not None:
            bar.update(len(indices))

    try:
        if threads:
            model = None
            if compare:
                model_file = Path(artifact) / "model.tflite"
                if not model_file.is_file():
                    raise DatasetError(f"{artifact}: no model.tflite to compare with LiteRT")
                model = model_file.read_bytes()
            _in_threads(plan, input_sets, jobs, compare, model, done)
        else:
            _in_processes(artifact, input_sets, executor, jobs, compare, simulator, done)
    finally:
        if bar is not None:
            bar.close()
    summary = DatasetSummary(sets=len(input_sets))
    exact = 0
    worst = 0
    top_ours = [int(np.argmax(ours[i][0].reshape(-1))) for i in range(len(input_sets))]
    for i, name in enumerate(_names(input_sets)):
        entry: dict[str, Any] = {"name": name, "top1": top_ours[i]}
        if compare:
            diffs = [int(np.max(np.abs(a.astype(np.int64) - b.astype(np.int64)), initial=0))
                     if a.shape == b.shape else -1
                     for a, b in zip(ours[i], refs[i], strict=True)]  # fmt: skip
            entry["max_abs_diff"] = max(diffs, default=0)
            entry["bit_exact"] = all(d == 0 for d in diffs)
            entry["litert_top1"] = int(np.argmax(refs[i][0].reshape(-1)))
            exact += entry["bit_exact"]
            worst = max(worst, abs(entry["max_abs_diff"]))
        if labels is not None:
            entry["label"] = int(labels[i])
        summary.per_set.append(entry)
    n = max(1, len(input_sets))
    if compare:
        summary.bit_exact, summary.max_abs_diff = exact, worst
        summary.top1_agreement = sum(e["top1"] == e["litert_top1"] for e in summary.per_set) / n
    if labels is not None:
        summary.accuracy = sum(e["top1"] == e["label"] for e in summary.per_set) / n
        if compare:
            summary.litert_accuracy = sum(e["litert_top1"] == e["label"]
                                          for e in summary.per_set) / n  # fmt: skip
    return summary


def _names(input_sets: Sequence) -> list[str]:
    """The sets' names, without reading a folder's files."""
    if isinstance(input_sets, InputSets):
        return list(input_sets.names)
    return [name for name, _ in input_sets]


def _in_processes(artifact: str | Path, input_sets: Sequence, executor: Any, jobs: int,
                  compare: bool, simulator: str, done: Any) -> None:  # fmt: skip
    """Every input set on the executor's workers (processes, or Ray tasks), in chunks; the
    artifact's files go to each worker once, as bytes."""
    files = artifact_files(artifact)
    model = files.get("model.tflite")
    if compare and model is None:
        raise DatasetError(f"{artifact}: no model.tflite to compare with LiteRT")
    names = _names(input_sets)
    size = max(1, min(64, -(-len(input_sets) // (2 * jobs))))
    chunks = [[(i, _where(input_sets, i, names[i]), input_sets[i][1])
               for i in range(start, min(len(input_sets), start + size))]
              for start in range(0, len(input_sets), size)]  # fmt: skip
    shared = {"files": files, "model": model, "compare": compare, "simulator": simulator,
              "content": content_key(files)}  # fmt: skip
    for _, results in executor.map(_run_chunk, shared, chunks):
        if isinstance(results, TaskFailed):
            raise DatasetError(f"a worker failed: {results.reason}")
        for r in results:
            if "error" in r:
                raise DatasetError(r["error"])
        done([r["index"] for r in results], [r["outputs"] for r in results],
             [r["reference"] for r in results] if compare else None)
