"""The oracle: LiteRT's reference kernels (`OpResolverType.BUILTIN_REF`), in a subprocess.

qaccel's correctness bar is bit-exactness with these kernels. They `abort()` the process
when a check fails (e.g. int8 SOFTMAX whose `beta * input_scale * 2**26 <= 1`), so the
interpreter always runs in a child process (`python -m qaccel.backends.litert.worker`),
all input sets in one child (its start-up is the cost), with arrays exchanged through
temporary `.npz` files. A child that dies becomes `ReferenceResult.refused`, a one-line
message, not an exception.

    from qaccel.backends.litert.oracle import run_reference
    ref = run_reference(model_bytes, [[x0], [x1]])        # two input sets of one input each
    if ref.refused:
        print(ref.refused)
    else:
        y0 = ref.outputs[0][0]                             # set 0, model output 0
        conv_out = ref.tensors[0][7]                       # set 0, tensor 7 of subgraph 0
        print(ref.tensor_names[7])

    refs = run_reference_batch([(model_a, [[x0]]), (model_b, [[y0], [y1]])])  # one child

`ai-edge-litert` is a test-only dependency (the `test` extra); this module imports it only in
the child, so importing it never fails.
"""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

__all__ = [
    "ReferenceResult",
    "LiteRTUnavailable",
    "litert_available",
    "run_reference",
    "run_reference_batch",
]

DEFAULT_TIMEOUT = 600.0


class LiteRTUnavailable(ImportError):
    """The `ai-edge-litert` package (the `test` extra) is not installed."""


@dataclass
class ReferenceResult:
    """What LiteRT's reference kernels computed.

    refused: None, or a one-line reason LiteRT would not run the model (a kernel check
        aborted the interpreter, or it reported an error while loading/preparing/running).
    outputs: per input set, the model outputs in model output order.
    tensors: per input set, {tensor index: value} for every tensor of subgraph 0 that has
        data (inputs, constants, intermediates, outputs), when keep_all_tensors.
    tensor_names: {tensor index: name} for the tensors of subgraph 0.
    input_indices / output_indices: tensor indices of the model inputs / outputs.
    """

    refused: str | None = None
    outputs: list[list[np.ndarray]] = field(default_factory=list)
    tensors: list[dict[int, np.ndarray]] = field(default_factory=list)
    tensor_names: dict[int, str] = field(default_factory=dict)
    input_indices: list[int] = field(default_factory=list)
    output_indices: list[int] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.refused is None


def litert_available() -> bool:
    return importlib.util.find_spec("ai_edge_litert") is not None


def _require_litert() -> None:
    if not litert_available():
        raise LiteRTUnavailable(
            "the LiteRT oracle needs the ai-edge-litert package: install the `test` extra "
            "(pip install -e '.[test]', or pip install ai-edge-litert)"
        )


def _normalize_input_sets(input_sets) -> list[list[np.ndarray]]:
    if isinstance(input_sets, np.ndarray) or (
        len(input_sets) and isinstance(input_sets[0], np.ndarray)
    ):
        raise ValueError(
            "input_sets is a list of input sets, each a list of arrays (one per model input): "
            "wrap a single set as [[x]]"
        )
    sets = []
    for i, arrays in enumerate(input_sets):
        if isinstance(arrays, np.ndarray) or not isinstance(arrays, Sequence):
            raise ValueError(f"input set {i} must be a list of arrays, got {type(arrays).__name__}")
        # np.ascontiguousarray would make a scalar (rank-0) input an array of shape (1,).
        sets.append([np.asarray(a, order="C") for a in arrays])
    return sets


def _death(returncode: int) -> str:
    if returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = f"signal {-returncode}"
        verb = "aborted" if name == "SIGABRT" else "crashed"
        return f"the interpreter {verb} with {name}"
    return f"the interpreter process exited with code {returncode}"


def _last_line(text: str, limit: int = 200) -> str:
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    line = lines[-1] if lines else ""
    return line if len(line) <= limit else line[: limit - 3] + "..."


def run_reference(
    model: bytes | str | Path,
    input_sets: Sequence[Sequence[np.ndarray]],
    *,
    keep_all_tensors: bool = True,
    timeout: float = DEFAULT_TIMEOUT,
) -> ReferenceResult:
    """Run every input set through LiteRT's reference kernels in one subprocess.

    Raises ValueError when an input set does not match the model's inputs (count, dtype, or a
    shape its signature does not allow), LiteRTUnavailable when ai-edge-litert is missing,
    TimeoutError when the child runs longer than `timeout` seconds. A model LiteRT refuses
    (including one that makes it abort) gives a result with `.refused` set.
    """
    return run_reference_batch([(model, input_sets)], keep_all_tensors=keep_all_tensors,
                               timeout=timeout)[0]  # fmt: skip


def run_reference_batch(
    jobs: Sequence[tuple[bytes | str | Path, Sequence[Sequence[np.ndarray]]]],
    *,
    keep_all_tensors: bool = False,
    timeout: float = DEFAULT_TIMEOUT,
) -> list[ReferenceResult]:
    """`run_reference` for several `(model, input_sets)` jobs, run one after another in as few
    child processes as possible (a child's start-up costs about 0.2 s): one, unless a model
    makes LiteRT abort, in which case that model is refused and the jobs after it run in a new
    child. `timeout` is per child. Raises as `run_reference` does."""
    _require_litert()
    normalized = [_normalize_input_sets(sets) for _, sets in jobs]
    results: list[ReferenceResult | None] = [None] * len(jobs)
    with tempfile.TemporaryDirectory(prefix="qaccel-litert-") as tmp:
        tmpdir = Path(tmp)
        requests = [
            _write_request(tmpdir / f"job{j}", model, sets, keep_all_tensors)
            for j, ((model, _), sets) in enumerate(zip(jobs, normalized))
        ]
        pending = list(range(len(jobs)))
        while pending:
            proc = _run_child(tmpdir, [requests[j] for j in pending], timeout)
            for n, j in enumerate(pending):
                if not Path(requests[j]["status"]).exists():
                    # The child died on this job: it is refused; the rest run in a new child.
                    detail = _last_line(proc.stderr)
                    message = (
                        f"LiteRT's reference kernels refused the model "
                        f"({_death(proc.returncode)} while {_stage(requests[j])})"
                    )
                    results[j] = ReferenceResult(
                        refused=message + (f": {detail}" if detail else ""))
                    pending = pending[n + 1:]
                    break
                results[j] = _read_result(requests[j], len(normalized[j]), keep_all_tensors)
            else:
                pending = []
    return [r for r in results if r is not None]


def _write_request(folder: Path, model, sets: list[list[np.ndarray]],
                   keep_all_tensors: bool) -> dict:  # fmt: skip
    folder.mkdir()
    if isinstance(model, (bytes, bytearray, memoryview)):
        model_path = folder / "model.tflite"
        model_path.write_bytes(model)
    else:
        model_path = Path(model)
        if not model_path.is_file():
            raise FileNotFoundError(f"no model file {str(model_path)!r}")
    np.savez(folder / "inputs.npz",
             **{f"s{i}_{k}": a for i, arrays in enumerate(sets) for k, a in enumerate(arrays)})
    return {
        "model": str(model_path.resolve()),
        "inputs": str(folder / "inputs.npz"),
        "n_inputs": [len(arrays) for arrays in sets],
        "keep_all_tensors": bool(keep_all_tensors),
        "progress": str(folder / "progress.txt"),
        "status": str(folder / "status.json"),
        "result": str(folder / "result.npz"),
    }


def _run_child(tmpdir: Path, requests: list[dict], timeout: float) -> subprocess.CompletedProcess:
    request_path = tmpdir / "request.json"
    request_path.write_text(json.dumps({"batch": requests}))
    env = dict(os.environ)
    env.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    cmd = [sys.executable, "-m", "qaccel.backends.litert.worker", str(request_path)]
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        running = next((r for r in requests if not Path(r["status"]).exists()), requests[-1])
        raise TimeoutError(
            f"LiteRT's reference interpreter did not finish within {timeout:g} s "
            f"(it was {_stage(running)})"
        ) from None


def _read_result(request: dict, n_sets: int, keep_all_tensors: bool) -> ReferenceResult:
    status = json.loads(Path(request["status"]).read_text())
    kind = status["status"]
    if kind == "refused":
        return ReferenceResult(
            refused=f"LiteRT's reference kernels refused the model: {status['message']}"
        )
    if kind == "bad_input":
        raise ValueError(f"LiteRT oracle: {status['message']}")
    if kind == "unavailable":
        raise LiteRTUnavailable(
            f"the LiteRT oracle cannot import ai_edge_litert ({status['message']}): "
            "install the `test` extra"
        )
    if kind != "ok":
        raise RuntimeError(f"the LiteRT worker failed: {_last_line(status['message'])}")
    result = ReferenceResult(
        tensor_names={int(k): v for k, v in status["tensor_names"].items()},
        input_indices=status["input_indices"],
        output_indices=status["output_indices"],
    )
    with np.load(request["result"]) as npz:
        available = set(npz.files)
        for i in range(n_sets):
            result.outputs.append([npz[f"o{i}_{k}"] for k in range(status["n_outputs"])])
            if keep_all_tensors:
                result.tensors.append({
                    t: npz[f"t{i}_{t}"] for t in status["tensor_ids"]
                    if f"t{i}_{t}" in available
                })
    return result


def _stage(request: dict) -> str:
    try:
        lines = Path(request["progress"]).read_text().splitlines()
    except OSError:
        lines = []
    return lines[-1] if lines else "starting"
