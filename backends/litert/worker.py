"""The subprocess side of the LiteRT oracle (`qaccel.backends.litert.oracle`); not an API.

Usage: python -m qaccel.backends.litert.worker REQUEST.json   (one request, or a batch)

Runs every input set through LiteRT's reference kernels in this one process. LiteRT calls
abort() when a kernel check fails, so the parent learns how far we got from `stage` lines
appended to the progress file before each risky step, and reads results only from the
`status` file written at the very end. Imports nothing from qaccel beyond this module, so
a crash here says nothing about the compiler.
"""

from __future__ import annotations

import json
import re
import sys
import traceback

import numpy as np


class _BadInput(Exception):
    pass


def _stage(progress, text: str) -> None:
    progress.write(text + "\n")
    progress.flush()


def _one_line(err: BaseException, limit: int = 400) -> str:
    """LiteRT's error text on one line: its reports are glued together without separators
    ("... (3 != 0)Node number 0 (CONV_2D) failed to prepare.")."""
    text = re.sub(r"(?<=\S)(Node number \d+)", r"; \1", str(err))
    text = "; ".join(ln.strip() for ln in text.splitlines() if ln.strip()) or type(err).__name__
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _set_inputs(interp, details, arrays, set_index: int) -> None:
    if len(arrays) != len(details):
        raise _BadInput(
            f"input set {set_index} has {len(arrays)} arrays, the model has {len(details)} inputs"
        )
    resized = False
    for k, (d, a) in enumerate(zip(details, arrays)):
        what = f"input set {set_index}, input {k} ('{d['name']}')"
        if a.dtype != d["dtype"]:
            raise _BadInput(f"{what}: dtype {a.dtype}, the model wants {np.dtype(d['dtype'])}")
        shape = tuple(int(s) for s in d["shape"])
        if a.shape != shape:
            signature = tuple(int(s) for s in d["shape_signature"])
            fits = len(signature) == a.ndim and all(
                s in (-1, n) for s, n in zip(signature, a.shape)
            )
            if not fits:
                raise _BadInput(f"{what}: shape {a.shape}, the model wants {shape}")
            interp.resize_tensor_input(d["index"], list(a.shape), strict=True)
            resized = True
    if resized:
        interp.allocate_tensors()
        details[:] = interp.get_input_details()
    for d, a in zip(details, arrays):
        interp.set_tensor(d["index"], a)


def run(request: dict, progress) -> dict:
    try:
        from ai_edge_litert.interpreter import Interpreter, OpResolverType
    except ImportError as err:
        return {"status": "unavailable", "message": str(err)}

    with open(request["model"], "rb") as f:
        model = f.read()
    n_tensors = None
    try:
        from tflite.Model import Model

        n_tensors = Model.GetRootAs(model, 0).Subgraphs(0).TensorsLength()
    except Exception:  # an unreadable model is LiteRT's to refuse, below
        pass
    with np.load(request["inputs"]) as npz:
        input_sets = [
            [npz[f"s{i}_{k}"] for k in range(n)] for i, n in enumerate(request["n_inputs"])
        ]

    _stage(progress, "loading the model")
    try:
        interp = Interpreter(
            model_content=model,
            experimental_op_resolver_type=OpResolverType.BUILTIN_REF,
            experimental_preserve_all_tensors=True,
        )
        _stage(progress, "preparing the model")
        interp.allocate_tensors()
    except (RuntimeError, ValueError) as err:
        return {"status": "refused", "message": _one_line(err)}

    input_details = interp.get_input_details()
    output_indices = [int(d["index"]) for d in interp.get_output_details()]
    keep = request["keep_all_tensors"]
    # The interpreter appends kernel temporaries (im2col, scratch) after the model's tensors;
    # reading those can crash it, and they mean nothing to a comparison.
    names = {
        int(d["index"]): d["name"]
        for d in interp.get_tensor_details(0)
        if n_tensors is None or d["index"] < n_tensors
    }
    tensor_ids = sorted(names)
    results: dict[str, np.ndarray] = {}
    for i, arrays in enumerate(input_sets):
        try:
            _stage(progress, f"preparing input set {i}")
            _set_inputs(interp, input_details, arrays, i)
            _stage(progress, f"running input set {i}")
            interp.invoke()
        except _BadInput as err:
            return {"status": "bad_input", "message": str(err)}
        except (RuntimeError, ValueError) as err:
            return {"status": "refused", "message": _one_line(err)}
        for k, t in enumerate(output_indices):
            results[f"o{i}_{k}"] = interp.get_tensor(t)
        if keep:
            for t in tensor_ids:
                _stage(progress, f"reading tensor {t} of input set {i}")
                try:
                    results[f"t{i}_{t}"] = interp.get_tensor(t)
                except ValueError:  # no data (an unused or omitted tensor)
                    pass
    _stage(progress, "writing results")
    np.savez(request["result"], **results)
    return {
        "status": "ok",
        "output_indices": output_indices,
        "input_indices": [int(d["index"]) for d in input_details],
        "tensor_names": {str(t): n for t, n in names.items()},
        "n_outputs": len(output_indices),
        "tensor_ids": tensor_ids if keep else [],
    }


def _run_one(request: dict) -> None:
    with open(request["progress"], "w") as progress:
        try:
            status = run(request, progress)
        except Exception:
            status = {"status": "error", "message": traceback.format_exc()}
    with open(request["status"], "w") as f:
        json.dump(status, f)


def main(argv: list[str]) -> int:
    """REQUEST.json holds one request, or `{"batch": [request, ...]}` run in order (each
    writes its own status file, so the parent knows where a crash stopped the batch)."""
    with open(argv[1]) as f:
        request = json.load(f)
    for one in request.get("batch", [request]):
        _run_one(one)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
