"""`qaccel-run`: execute a model with qaccel's interpreter, optionally against LiteRT.

    qaccel-run model.tflite --random-inputs 0 --outputs-dir out --compare-litert
    qaccel-run ir.mlir --inputs x.npy --outputs-dir out
    qaccel-run model.tflite -p legalize-tfl-to-q --outputs-dir out --compare-litert
    qaccel-run model.tflite -p vta-pipeline --verify-semantics --pass-timing --outputs-dir out
    qaccel-run OUTDIR --random-inputs 0 --outputs-dir out --compare-litert   # qaccel-compile's
    qaccel-run model.tflite --target vta --outputs-dir out --compare-litert  # compile and run
    qaccel-run OUTDIR --outputs-dir out --plot layers.png   # + per-layer cycles vs. roofline
    qaccel-run OUTDIR --inputs-dir data/ --labels labels.npy --outputs-dir res [--jobs N|--ray]

MODEL is a `.tflite` (imported first) or `.mlir` file, or an artifact folder written by
`qaccel-compile`; `-p` runs a pass pipeline before executing. With an artifact, or with
`--target vta` (which compiles MODEL with `-p`, default `vta-pipeline`, in memory), the host
program runs on the interpreter and every compiled accelerator layer on the VTA simulator; an
artifact with a run plan (`runtime.json`, backends/vta/run_plan.py) runs it without parsing
`host.mlir` or importing xDSL when only qaccel-run's own options are given. `--driver c` runs
each accelerator function's program through the generated C driver instead (`driver/model.c`
with the runner, the program runner and libqaccel_vta, compiled once by the system C compiler
and cached; without one it fails with one line). Outputs are written as DIR/output_0.npy, output_1.npy, ... in the model's output
order. `--compare-litert` (for `.tflite` input) runs LiteRT's reference kernels in a subprocess
on the same inputs, prints per-output mismatch counts and max |diff| (and the first
intermediate tensor that differs), and exits 1 on any mismatch. The pass-manager flags of
qaccel-opt (`--print-ir-after-all`, `--print-ir-after=PASS`, `--pass-timing`,
`--verify-semantics[=SEED]`) work here too. `OUTDIR --runtime litert` runs the artifact's
model for LiteRT with LiteRT itself, its CPU reference kernels running the rest of the graph:
`--litert-path dispatch` (the default) runs `model.qaccel.dispatch.tflite` through LiteRT's
Python API, our dispatch library libLiteRtDispatch_Qaccel running its DISPATCH_OPs on
libqaccel_vta; `--litert-path custom-op` runs `model.qaccel.tflite` through LiteRT's C API,
our QACCEL_VTA kernel running its custom ops. `--compare-litert` then compares it with
LiteRT's BUILTIN_REF on the original model.

Bad input (wrong number, shape or dtype of inputs, unreadable files, a model the reference
kernels refuse) ends with one line on stderr and exit code 1.

`--inputs-dir DIR` (with an artifact folder) evaluates a dataset: DIR holds one `.npy` per
input set (or one `.npz` per set for several inputs), or is one `.npz` of input sets
(`explore/dataset.py`). Every set runs, in parallel on local workers (`--jobs N`: threads of
this process when the artifact's run plan runs every accelerator function through its
program, else processes) or Ray tasks (`--ray [ADDRESS]`), against LiteRT's reference kernels
too; outputs go to DIR/<set>/output_i.npy and the agreement (bit-exact sets, max |diff|;
with `--labels FILE.npy` top-1 agreement and accuracy) to DIR/summary.json; `--no-compare`
skips LiteRT. A set that cannot be read or run ends the run with one line naming it and its
file.
Artifacts with a run plan run each accelerator layer the fast way: checked and timed once
(every check and the timing model), then per input with data only, bit-exact with the checked
simulation (`QACCEL_SIMULATION=checked` simulates every run with every check instead).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

# qaccel-run computes in integers: OpenBLAS's worker threads, started when numpy is first
# imported (just below), only spin, about 50 ms of CPU per process, and the interpreter's
# small float64 matmuls ran slower with them on a loaded machine (tests/conftest.py sets the
# same). Children (the LiteRT oracle, dataset workers) inherit it; a value set is kept.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402

from qaccel.tools.cli import (  # noqa: E402  (stdlib only)
    fail,
    one_line,
    InputError,
    OutputPathError,
    check_output_dir,
    check_output_file,
    resource_errors,
)

if TYPE_CHECKING:
    from xdsl.context import Context
    from xdsl.dialects.builtin import ModuleOp

# Imports are lazy: `qaccel-run OUTDIR` on an artifact with a run plan needs numpy, the
# reference kernels and the VTA machine only (backends/vta/run_plan.py), never xDSL.

PROG = "qaccel-run"


class RunError(Exception):
    """One line for the user."""


def _fail(message: str) -> NoReturn:
    fail(PROG, message)


def load_model(path: Path, ctx: Context) -> tuple[ModuleOp, bytes | None]:
    from qaccel.frontend.tflite_import import import_tflite
    from qaccel.tools.cli import parse_mlir

    try:
        data = path.read_bytes()
    except OSError as e:
        raise RunError(f"cannot open model '{path}': {e.strerror}") from None
    if path.suffix == ".tflite":
        return import_tflite(data, str(path)), data
    if path.suffix == ".mlir":
        module = parse_mlir(data, str(path), ctx)
        return module, None
    raise RunError(f"'{path}': unknown model extension '{path.suffix}' (expected .tflite or .mlir)")


def load_inputs(paths: Sequence[str]) -> list[np.ndarray]:
    arrays = []
    for p in paths:
        try:
            arrays.append(np.load(p, allow_pickle=False))
        except (OSError, ValueError) as e:
            raise RunError(f"cannot read input '{p}': {e}") from None
    return arrays


def _own_arguments(add_help: bool = True) -> argparse.ArgumentParser:
    """The parser with qaccel-run's own options (the pass-manager flags come on top)."""
    ap = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n\n")[0],
                                 add_help=add_help)  # fmt: skip
    ap.add_argument("model", help="a .tflite or .mlir file")
    ap.add_argument("-p", "--passes", default="", help="pass pipeline to run before executing")
    ap.add_argument("--inputs", nargs="+", default=None, metavar="A.npy", help="input arrays")
    ap.add_argument("--random-inputs", type=int, default=None, metavar="SEED",
                    help="seeded random inputs (the default, with seed 0, without --inputs)")
    ap.add_argument("--outputs-dir", required=True, metavar="DIR")
    ap.add_argument("--compare-litert", action="store_true",
                    help="compare with LiteRT's reference kernels (for .tflite models)")
    ap.add_argument("--target", choices=("cpu", "vta"), default="cpu",
                    help="vta: compile for the accelerator and run its layers on the simulator")
    ap.add_argument("--config", type=Path, help="hardware config JSON for --target vta")
    ap.add_argument("--simulator", choices=("c", "python"), default="c",
                    help="--target vta / artifacts with --driver python: run the layers on "
                         "libqaccel_vta (c, the default) or on the Python reference "
                         "simulator")  # fmt: skip
    ap.add_argument("--driver", choices=("python", "c"), default="python",
                    help="--target vta / artifacts: run the accelerator functions with the "
                         "Python runtime (the default) or through the generated C driver "
                         "(driver/model.c and the program runner on libqaccel_vta, built once "
                         "with the C compiler)")  # fmt: skip
    ap.add_argument("--runtime", choices=("interpreter", "litert"), default="interpreter",
                    help="with an artifact: litert runs its model for LiteRT with LiteRT (CPU "
                         "reference kernels, our library for the accelerator "
                         "functions)")  # fmt: skip
    ap.add_argument("--litert-path", choices=("dispatch", "custom-op"), default=None,
                    help="with --runtime litert: dispatch runs model.qaccel.dispatch.tflite, "
                         "whose DISPATCH_OPs our dispatch library runs (LiteRT's NPU vendor "
                         "path, the default); custom-op runs model.qaccel.tflite, whose "
                         "QACCEL_VTA ops our custom-op kernel runs")  # fmt: skip
    ap.add_argument("--plot", type=Path, metavar="FILE.png",
                    help="with an artifact or --target vta: each layer's cycles against its "
                         "roofline (needs matplotlib)")  # fmt: skip
    ap.add_argument("--inputs-dir", type=Path, metavar="DIR",
                    help="with an artifact: evaluate every input set of DIR (.npy/.npz files) "
                         "or of one .npz, against LiteRT")  # fmt: skip
    ap.add_argument("--labels", type=Path, metavar="FILE.npy",
                    help="with --inputs-dir: class labels, one per input set (top-1 accuracy)")
    ap.add_argument("--no-compare", action="store_true",
                    help="with --inputs-dir: do not run LiteRT's reference kernels (our "
                         "outputs, and top-1 accuracy with --labels, only)")  # fmt: skip
    ap.add_argument("--jobs", "-j", type=int, default=None, metavar="N",
                    help="with --inputs-dir: local workers, threads of this process on a "
                         "run plan, else processes (default: every core)")  # fmt: skip
    ap.add_argument("--ray", nargs="?", const="local", default=None, metavar="ADDRESS",
                    help="with --inputs-dir: run the input sets as Ray tasks")
    return ap


def parser() -> argparse.ArgumentParser:
    from qaccel.tools.pass_flags import add_pass_manager_arguments

    ap = _own_arguments()
    add_pass_manager_arguments(ap)

    def error(message: str) -> NoReturn:
        _fail(message)

    ap.error = error  # type: ignore[method-assign]
    return ap


def _inputs_for(args, function) -> list[np.ndarray]:
    from qaccel.interpreter.interpreter import random_inputs

    if args.inputs is not None and args.random_inputs is not None:
        raise RunError("give either --inputs or --random-inputs, not both")
    if args.inputs is not None:
        return load_inputs(args.inputs)
    return random_inputs(function, args.random_inputs or 0)


# --------------------------------------------------------------------------------------------
# The fast path: an artifact with a run plan


class _NotFast(Exception):
    pass


# Options the run plan honours; any other option away from its default takes the full path.
_FAST_OPTIONS = {"model", "inputs", "random_inputs", "outputs_dir", "compare_litert",
                 "simulator", "plot", "target", "runtime", "litert_path",
                 "inputs_dir", "labels", "no_compare", "jobs", "ray"}  # fmt: skip
# the dataset options that only go with --inputs-dir (the full path says so)
_DATASET_ONLY = ("labels", "no_compare", "jobs", "ray")


def _fast_args(argv: list[str]) -> argparse.Namespace | None:
    """The arguments when `argv` runs an artifact folder with qaccel-run's own options only
    (else None: the full parser reports errors and pass-manager flags)."""
    ap = _own_arguments(add_help=False)  # --help: the full parser's

    def error(message: str) -> NoReturn:
        raise _NotFast(message)

    ap.error = error  # type: ignore[method-assign]
    try:
        args, extra = ap.parse_known_args(argv)
    except _NotFast:
        return None
    if extra or not Path(args.model).is_dir():
        return None
    for key, value in vars(args).items():
        if key not in _FAST_OPTIONS and value != ap.get_default(key):
            return None
    return args


def run_fast(args) -> int | None:
    """Run an artifact by its run plan (numpy and the VTA machine, no MLIR); None when it has
    no plan of this version (the caller takes the full path)."""
    if args.inputs_dir is not None:  # as the full path: the dataset, its workers on run plans
        return run_dataset(args)
    if any(getattr(args, k) not in (None, False) for k in _DATASET_ONLY):
        return None  # the full path's error
    if args.runtime == "litert" and not args.plot:
        return run_litert_artifact(args)
    from qaccel.backends.vta.run_plan import RunPlanError, load_run_plan

    if args.runtime != "interpreter" or args.litert_path is not None:
        return None  # the full path runs or refuses it
    path = Path(args.model)
    try:
        plan = load_run_plan(path, args.simulator)
        if plan is None:
            return None
        check_output_dir(args.outputs_dir, "--outputs-dir")  # before the work, not after it
        if args.plot:
            check_output_file(args.plot, "--plot")
            from qaccel.backends.vta.report_plot import require_matplotlib

            require_matplotlib(args.plot)
        if args.inputs is not None and args.random_inputs is not None:
            raise RunError("give either --inputs or --random-inputs, not both")
        if args.inputs is not None:
            inputs = load_inputs(args.inputs)
        else:
            inputs = plan.random_inputs(args.random_inputs or 0)
        outputs = plan.run(inputs)
    except RunPlanError as e:
        raise RunError(str(e)) from None
    except Exception as e:
        from qaccel.targets.vta.simulation_result import SimulationError

        if isinstance(e, SimulationError):
            raise RunError(f"an accelerator layer failed: {e}") from None
        raise
    if args.plot:
        import json

        from qaccel.backends.vta.report_plot import plot_report

        report = json.loads(plan.read("report.json"))
        plot_report(report, args.plot, path.name)
        print(f"wrote {args.plot}")
    _write_outputs(outputs, Path(args.outputs_dir))
    print(f"ran {plan.layer_count} accelerator layer(s) on the simulator ({plan.cycles} "
          f"cycles), {plan.fallback_count} op(s) of accelerator functions on the host")  # fmt: skip
    if not args.compare_litert:
        return 0
    model_file = path / "model.tflite"
    model_bytes = model_file.read_bytes() if model_file.is_file() else None
    return _compare_with_litert(model_bytes, inputs, outputs, path)


# --------------------------------------------------------------------------------------------


def run_vta(args) -> int:
    """An artifact folder, or a .tflite compiled with `--target vta`: layers on the simulator."""
    from qaccel.backends.vta.artifact import is_artifact, load_artifact
    from qaccel.backends.vta.compiled import CompileError
    from qaccel.backends.vta.runtime import run_compiled
    from qaccel.interpreter.interpreter import entry_function
    from qaccel.targets.vta.config import ConfigError
    from qaccel.targets.vta.simulation_result import SimulationError
    from qaccel.tools.qaccel_compile import compile_model

    path = Path(args.model)
    if args.driver == "c" and args.simulator == "python":
        raise RunError("--simulator python needs --driver python (the C driver runs its "
                       "layers on libqaccel_vta)")  # fmt: skip
    if args.driver == "c" and args.runtime == "litert":
        raise RunError("--driver c runs the host program on the interpreter: it needs "
                       "--runtime interpreter")  # fmt: skip
    try:
        if is_artifact(path):
            compiled = load_artifact(path)
            model_file = path / "model.tflite"
            model_bytes = model_file.read_bytes() if model_file.is_file() else None
        else:
            compiled, model_bytes = compile_model(path, args.passes or None,
                                                  config_path=args.config)  # fmt: skip
        function = entry_function(compiled.module)
        inputs = _inputs_for(args, function)
        if args.runtime == "litert":
            outputs = _run_litert(path, inputs, args.litert_path)
        elif args.driver == "c":
            from qaccel.backends.vta.cdriver_runtime import run_compiled_c

            outputs = run_compiled_c(compiled, inputs, path if is_artifact(path) else None)
        else:
            outputs = run_compiled(compiled, inputs, simulator=args.simulator)
    except (CompileError, ConfigError) as e:
        raise RunError(str(e)) from None
    except SimulationError as e:  # a malformed layer (the C driver names function and layer)
        raise RunError(f"an accelerator layer failed: {e}") from None
    if args.plot:
        from qaccel.backends.vta.report_plot import plot_report

        plot_report(compiled.report, args.plot, path.name)
        print(f"wrote {args.plot}")
    _write_outputs(outputs, Path(args.outputs_dir))
    layers = sum(len(v) for v in compiled.layers.values())
    if args.runtime == "litert":
        from qaccel.backends.litert.paths import PATHS

        way = PATHS[args.litert_path]
        print(f"ran {path / way.model_file} with LiteRT: {_accelerated(path, _litert_model(path, way.model_file)[0])} "
              f"{way.ops} run by {way.library} on libqaccel_vta, the rest on LiteRT's CPU "
              "kernels")  # fmt: skip
    else:
        where = "through the C driver" if args.driver == "c" else "on the simulator"
        cycles = compiled.report.get("totals", {}).get("cycles")  # the one timing run's
        where += f" ({cycles} cycles)" if cycles is not None else ""
        print(f"ran {layers} accelerator layer(s) {where}, "
              f"{len(compiled.fallbacks)} op(s) of accelerator functions on the host")  # fmt: skip
    if not args.compare_litert:
        return 0
    return _compare_with_litert(model_bytes, inputs, outputs, path)


def _compare_with_litert(model_bytes, inputs, outputs, path: Path) -> int:
    if model_bytes is None:
        raise RunError("--compare-litert needs the .tflite model (the artifact has none)")
    from qaccel.backends.litert.compare import compare_outputs
    from qaccel.backends.litert.oracle import LiteRTUnavailable, run_reference

    try:
        ref = run_reference(model_bytes, [inputs], keep_all_tensors=False)
    except LiteRTUnavailable as e:
        raise RunError(str(e)) from None
    if ref.refused is not None:
        raise RunError(f"LiteRT refused {path}: {ref.refused}")
    diffs = compare_outputs(outputs, ref.outputs[0])
    print("\n".join(d.line() for d in diffs))
    return 0 if all(d.mismatches == 0 for d in diffs) else 1


def run_dataset(args) -> int:
    """`--inputs-dir`: every input set on the artifact, compared with LiteRT."""
    import json

    from qaccel.explore.dataset import DatasetError, evaluate_dataset, input_shapes, load_input_sets
    from qaccel.explore.executors import ExecutorError, make_executor

    path = Path(args.model)
    if not path.is_dir():
        raise RunError("--inputs-dir needs an artifact folder written by qaccel-compile")
    if args.inputs is not None or args.random_inputs is not None:
        raise RunError("give either --inputs-dir or --inputs/--random-inputs, not both")
    if args.jobs is not None and args.jobs < 1:
        raise RunError("--jobs must be at least 1")
    try:
        sets = load_input_sets(args.inputs_dir, input_shapes(path))
        labels = load_inputs([str(args.labels)])[0] if args.labels else None
        compare = (path / "model.tflite").is_file() and not args.no_compare
        if not compare and not args.no_compare:
            print(f"{PROG}: note: {path} has no model.tflite; not comparing with LiteRT",
                  file=sys.stderr)  # fmt: skip
        summary = evaluate_dataset(path, sets, labels=labels,
                                   executor=make_executor(args.jobs, args.ray),
                                   outputs_dir=args.outputs_dir, compare=compare,
                                   progress=sys.stderr.isatty(),
                                   simulator=args.simulator)  # fmt: skip
    except (DatasetError, ExecutorError) as e:
        raise RunError(str(e)) from None
    out = Path(args.outputs_dir)
    (out / "summary.json").write_text(json.dumps(summary.to_dict(), indent=1) + "\n")
    print(summary.line())
    print(f"wrote {summary.sets} set(s) of outputs and summary.json to {out}")
    return 0 if summary.bit_exact in (None, summary.sets) else 1


def run_litert_artifact(args) -> int:
    """`--runtime litert` on an artifact: only the manifest, the LiteRT model (and, for
    `--compare-litert`, the source model) are read; no MLIR is parsed, xDSL is not imported."""
    from qaccel.backends.litert.paths import PATHS

    path = Path(args.model)
    way = PATHS[args.litert_path or "dispatch"]
    check_output_dir(args.outputs_dir, "--outputs-dir")  # before the work, not after it
    manifest, blob = _litert_model(path, way.model_file)
    if args.inputs is not None and args.random_inputs is not None:
        raise RunError("give either --inputs or --random-inputs, not both")
    if args.inputs is not None:
        inputs = load_inputs(args.inputs)
    else:
        from qaccel.backends.litert.model_io import model_io
        from qaccel.kernels.packed import random_arrays

        try:
            specs, _ = model_io(blob)
        except Exception as e:  # noqa: BLE001  the manifest vouches for it; still one line
            raise RunError(f"'{path / way.model_file}': not a readable model ({e})") from None
        inputs = random_arrays(specs, args.random_inputs or 0)
    del blob
    outputs = _run_litert(path, inputs, args.litert_path or "dispatch", checked=True)
    _write_outputs(outputs, Path(args.outputs_dir))
    print(f"ran {path / way.model_file} with LiteRT: {_accelerated(path, manifest)} {way.ops} "
          f"run by {way.library} on libqaccel_vta, the rest on LiteRT's CPU kernels")
    if not args.compare_litert:
        return 0
    source = None
    if "model.tflite" in manifest["files"]:
        from qaccel.backends.vta.artifact_files import read_artifact_file

        source = read_artifact_file(path, "model.tflite", RunError)
    return _compare_with_litert(source, inputs, outputs, path)


def _accelerated(path: Path, manifest: dict) -> int:
    """How many accelerator ops the artifact's LiteRT models hold: its spliced partitions
    (`partitions.json`), or (a model exported from MLIR's host IR) its functions."""
    import json

    from qaccel.backends.vta.artifact_files import read_artifact_file

    if "partitions.json" in manifest["files"]:
        try:
            index = json.loads(read_artifact_file(path, "partitions.json", RunError))
            return len(index["partitions"])
        except (ValueError, KeyError, TypeError):
            raise RunError(f"'{path / 'partitions.json'}': not a partition index") from None
    return len(manifest.get("functions") or {})


def _run_litert(path: Path, inputs, litert_path: str = "dispatch",
                checked: bool = False) -> list[np.ndarray]:  # fmt: skip
    """The artifact's model for LiteRT run by LiteRT the `litert_path` way
    (backends/litert/paths.py), in a child process."""
    from qaccel.backends.litert.paths import PATHS
    from qaccel.backends.litert.runtime import LiteRtError

    if not (path / "manifest.json").is_file():
        raise RunError("--runtime litert runs an artifact folder written by qaccel-compile")
    way = PATHS[litert_path]
    if not checked:  # the model's hash, once
        _litert_model(path, way.model_file)
    try:
        return way.run(path / way.model_file, inputs)
    except LiteRtError as e:
        raise RunError(str(e)) from None


def _litert_model(path: Path, name: str) -> tuple[dict, bytes]:
    """The manifest and the artifact's LiteRT model `name`, which must be the one its compile
    wrote: listed in the manifest, with the hash listed there (a stale model of an earlier
    compile is refused, never run)."""
    import hashlib
    import json

    from qaccel.backends.vta.artifact_files import read_artifact_file

    if not (path / "manifest.json").is_file():
        raise RunError("--runtime litert runs an artifact folder written by qaccel-compile")
    try:
        manifest = json.loads(read_artifact_file(path, "manifest.json", RunError))
        files = manifest["files"]
    except (ValueError, KeyError, TypeError):
        raise RunError(f"'{path / 'manifest.json'}': not a qaccel-compile manifest") from None
    digest = files.get(name) if isinstance(files, dict) else None
    if digest is None and os.path.lexists(path / name):
        raise RunError(f"'{path / name}' is not in the artifact's manifest (an older "
                       "qaccel-compile, or added later): compile the model again")  # fmt: skip
    if digest is None and "model.tflite" in files:
        raise RunError(f"'{path}': the artifact has no {name}: the qaccel-compile that wrote it "
                       "wrote no LiteRT model (an older version; compile the model again)")
    if digest is None:
        raise RunError(f"'{path}': the artifact has no {name}: qaccel-compile wrote no LiteRT "
                       "model for MLIR text whose host IR has no TFLite form (compile the "
                       ".tflite model)")  # fmt: skip
    blob = read_artifact_file(path, name, RunError)
    if hashlib.sha256(blob).hexdigest() != digest:
        raise RunError(f"'{path / name}' does not match the manifest's hash")
    return manifest, blob


def _write_outputs(outputs: Sequence[np.ndarray], out_dir: Path) -> None:
    out_dir.mkdir(parents=True, exist_ok=True)
    for i, y in enumerate(outputs):
        np.save(out_dir / f"output_{i}.npy", y)
    print(f"wrote {len(outputs)} output(s) to {out_dir}")


def run(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    fast = _fast_args(argv)
    if fast is not None:
        code = run_fast(fast)
        if code is not None:
            return code
    from qaccel.interpreter.interpreter import entry_function, run_function
    from qaccel.pipeline.manager import available_passes, qaccel_context
    from qaccel.tools.qaccel_opt import normalize_argv, pass_manager_for

    args = parser().parse_args(normalize_argv(argv))
    if args.inputs_dir is not None:
        return run_dataset(args)
    if args.labels is not None or args.ray is not None or args.jobs is not None:
        raise RunError("--labels, --jobs and --ray go with --inputs-dir")
    if args.no_compare:
        raise RunError("--no-compare goes with --inputs-dir (--compare-litert compares one run)")
    vta = args.target == "vta" or Path(args.model).is_dir()
    if args.litert_path is not None and args.runtime != "litert":
        raise RunError("--litert-path goes with --runtime litert")
    args.litert_path = args.litert_path or "dispatch"
    if args.runtime == "litert" and not Path(args.model).is_dir():
        raise RunError("--runtime litert runs an artifact folder written by qaccel-compile")
    check_output_dir(args.outputs_dir, "--outputs-dir")  # before the work, not after it
    if args.plot:
        check_output_file(args.plot, "--plot")
        if not vta:
            raise RunError("--plot needs an accelerator compile (an artifact folder or "
                           "--target vta)")  # fmt: skip
        from qaccel.backends.vta.report_plot import require_matplotlib

        require_matplotlib(args.plot)  # before the run, not after it
    if vta:
        return run_vta(args)
    ctx = qaccel_context()
    manager, timing = pass_manager_for(args, available_passes(), PROG)
    start = time.perf_counter()
    model_path = Path(args.model)
    module, model_bytes = load_model(model_path, ctx)
    if timing is not None:
        timing.add(("input",), f"Load ({model_path.suffix[1:]})", time.perf_counter() - start)
    manager.run(ctx, module)
    function = entry_function(module)
    inputs = _inputs_for(args, function)
    run_start = time.perf_counter()
    outputs = run_function(module, inputs)
    if timing is not None:
        timing.add(("output",), "Run (interpreter)", time.perf_counter() - run_start)
        timing.total = time.perf_counter() - start
        timing.report(sys.stderr)
    _write_outputs(outputs, Path(args.outputs_dir))
    if not args.compare_litert:
        return 0
    if model_bytes is None:
        raise RunError("--compare-litert needs a .tflite model (LiteRT runs the original file)")
    from qaccel.backends.litert.compare import compare_with_reference
    from qaccel.backends.litert.oracle import LiteRTUnavailable

    try:
        report = compare_with_reference(model_bytes, module, [inputs])
    except LiteRTUnavailable as e:
        raise RunError(str(e)) from None
    print(report.summary())
    if report.refused is not None:
        raise RunError(f"LiteRT refused {model_path}: {report.refused}")
    return 0 if report.bit_exact else 1


def main(argv: Sequence[str] | None = None) -> None:
    try:
        with resource_errors(PROG):
            code = run(argv)
    except (RunError, OutputPathError, InputError) as e:
        _fail(str(e))
    except Exception as e:
        _fail_known(e)
        artifact = _artifact_argument(argv)
        if artifact is not None:  # untrusted input: its damage is one line, not a traceback
            said = one_line(str(e))
            said = said if len(said) <= 200 else said[:197] + "..."
            _fail(f"'{artifact}': a damaged or inconsistent artifact ({type(e).__name__}: "
                  f"{said})")  # fmt: skip
        raise
    sys.exit(code)


def _artifact_argument(argv: Sequence[str] | None) -> Path | None:
    """The artifact folder among the arguments, if any."""
    for a in list(sys.argv[1:] if argv is None else argv):
        if not str(a).startswith("-") and (Path(a) / "manifest.json").is_file():
            return Path(a)
    return None


def _fail_known(e: Exception) -> None:
    """One line for the errors the full path reports (imported only once one happened)."""
    from xdsl.utils.exceptions import ArgSpecParseError, DiagnosticException, ParseError

    from qaccel.backends.vta.report_plot import PlotError
    from qaccel.kernels.memory import MemoryBudgetError
    from qaccel.frontend.tflite_import import TFLiteImportError
    from qaccel.interpreter.interpreter import ExecutionError
    from qaccel.kernels import registry as kernels
    from qaccel.pipeline.manager import PipelineError, SemanticsError
    from qaccel.tools.cli import parse_error_line

    if isinstance(e, ExecutionError | PipelineError | TFLiteImportError | DiagnosticException
                  | SemanticsError | PlotError | MemoryBudgetError):  # fmt: skip
        _fail(str(e))
    if isinstance(e, kernels.Refusal):
        _fail(f"LiteRT's reference kernels refuse this model: {e}")
    if isinstance(e, ParseError):
        _fail(parse_error_line(e))
    if isinstance(e, ArgSpecParseError):
        _fail(f"invalid pass pipeline: {str(e).splitlines()[-1].strip()}")


if __name__ == "__main__":
    main()
