"""Dataset evaluation of a compiled artifact: run every input set (host ops on the
interpreter, accelerator layers on the simulator) in parallel on an executor, compare with
LiteRT's reference kernels (BUILTIN_REF), and with labels report top-1 agreement and accuracy.

Inputs (`load_input_sets`): a folder with one `.npy` per input set (single-input models) or
one `.npz` per input set (its arrays in order, one per model input), sorted by file name; or
one `.npz` file whose arrays are input sets of a single-input model, an array with one more
(leading) dimension than the input holding that many sets.

    summary = evaluate_dataset("out", load_input_sets("data/", model_inputs), labels=labels)

The artifact's files travel to the workers as bytes (once per worker), so Ray workers on other
machines need no shared file system.
"""

from __future__ import annotations

import hashlib
import shutil
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from qaccel.explore.backend import is_artifact, load_artifact, load_run_plan, run_compiled
from qaccel.explore.executors import LocalExecutor, RayExecutor


class DatasetError(ValueError):
    """Unusable dataset input: one line naming the file."""


def _load(path: Path) -> Any:
    try:
        return np.load(path, allow_pickle=False)
    except (OSError, ValueError) as e:
        raise DatasetError(f"cannot read input '{path}': {e}") from None


def load_input_sets(
    source: str | Path, input_shapes: Sequence[tuple[int, ...]]
) -> list[tuple[str, list[np.ndarray]]]:
    """(name, arrays) per input set; `input_shapes` are the model's inputs' shapes."""
    source = Path(source)
    sets: list[tuple[str, list[np.ndarray]]] = []
    if source.is_file() and source.suffix == ".npz":
        if len(input_shapes) != 1:
            raise DatasetError(f"{source}: one .npz of input sets needs a single-input model "
                               f"(this one has {len(input_shapes)}); give a folder of .npz "
                               "files, one per set")  # fmt: skip
        shape = tuple(input_shapes[0])
        with _load(source) as npz:
            for key in npz.files:
                a = npz[key]
                if a.ndim == len(shape) + 1:
                    sets.extend((f"{key}_{i}", [a[i]]) for i in range(a.shape[0]))
                else:
                    sets.append((key, [a]))
    elif source.is_dir():
        files = sorted(p for p in source.iterdir() if p.suffix in (".npy", ".npz"))
        for p in files:
            if p.suffix == ".npy":
                if len(input_shapes) != 1:
                    raise DatasetError(f"{p}: the model has {len(input_shapes)} inputs; give "
                                       "one .npz per input set")  # fmt: skip
                sets.append((p.stem, [_load(p)]))
            else:
                with _load(p) as npz:
                    sets.append((p.stem, [npz[k] for k in npz.files]))
    else:
        raise DatasetError(f"{source}: expected a folder of .npy/.npz input sets or one .npz")
    if not sets:
        raise DatasetError(f"{source}: no .npy or .npz input sets")
    return sets


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
    plan = load_run_plan(artifact)
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


def _run_chunk(shared: dict[str, Any], chunk: list[tuple[int, list[np.ndarray]]]) -> list[dict]:
    """Our outputs for every set of the chunk, and LiteRT's (one subprocess per chunk)."""
    run = _runner_from(shared["files"], shared["simulator"], shared.get("content"))
    results = [{"index": i, "outputs": run(arrays)} for i, arrays in chunk]
    if shared["compare"]:
        from qaccel.backends.litert.oracle import run_reference

        ref = run_reference(shared["model"], [arrays for _, arrays in chunk],
                            keep_all_tensors=False)  # fmt: skip
        if ref.refused is not None:
            raise DatasetError(f"LiteRT refused the model: {ref.refused}")
        for r, outs in zip(results, ref.outputs, strict=True):
            r["reference"] = outs
    return results


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
) -> DatasetSummary:
    """Run every input set on the artifact, compare with LiteRT (needs the artifact's
    model.tflite), write DIR/<set>/output_i.npy when `outputs_dir` is given."""
    if not is_artifact(artifact):
        raise DatasetError(f"{artifact}: not a qaccel-compile artifact folder")
    files = artifact_files(artifact)
    model = files.get("model.tflite")
    if compare and model is None:
        raise DatasetError(f"{artifact}: no model.tflite to compare with LiteRT")
    if labels is not None and len(labels) != len(input_sets):
        raise DatasetError(f"{len(labels)} label(s) for {len(input_sets)} input set(s)")
    executor = executor or LocalExecutor()
    jobs = getattr(executor, "jobs", None) or 2
    size = max(1, min(64, -(-len(input_sets) // (2 * jobs))))
    indexed = list(enumerate(arrays for _, arrays in input_sets))
    chunks = [indexed[i:i + size] for i in range(0, len(indexed), size)]
    shared = {"files": files, "model": model, "compare": compare, "simulator": simulator,
              "content": content_key(files)}  # fmt: skip
    ours: dict[int, list[np.ndarray]] = {}
    refs: dict[int, list[np.ndarray]] = {}
    bar = None
    if progress:
        from tqdm import tqdm

        tqdm.monitor_interval = 0
        bar = tqdm(total=len(input_sets), desc="inputs", unit="set", dynamic_ncols=True)
    try:
        for _, results in executor.map(_run_chunk, shared, chunks):
            for r in results:
                ours[r["index"]] = r["outputs"]
                if "reference" in r:
                    refs[r["index"]] = r["reference"]
            if bar is not None:
                bar.update(len(results))
    finally:
        if bar is not None:
            bar.close()
    summary = DatasetSummary(sets=len(input_sets))
    if outputs_dir is not None:
        for i, (name, _) in enumerate(input_sets):
            folder = Path(outputs_dir) / name
            folder.mkdir(parents=True, exist_ok=True)
            for k, y in enumerate(ours[i]):
                np.save(folder / f"output_{k}.npy", y)
    exact = 0
    worst = 0
    top_ours = [int(np.argmax(ours[i][0].reshape(-1))) for i in range(len(input_sets))]
    for i, (name, _) in enumerate(input_sets):
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
