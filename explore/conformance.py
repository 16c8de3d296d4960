"""Check models end to end against LiteRT's reference kernels (BUILTIN_REF), bit for bit.

For one model and a few seeded random input sets (`interpreter.random_inputs(fn, seed)`):

1. LiteRT's reference kernels compute the expected outputs; a model they refuse is not a valid
   model (for generated models: a generator bug);
2. qaccel's interpreter runs the imported `tfl` IR, then, for each hardware configuration,
   `vta-pipeline{config=...}` runs with the IR verified after every pass and the interpreter
   run again after every pass that changed it (the `--verify-semantics` instrumentation, but
   compared with LiteRT's outputs on every input set);
3. the pipeline's result is compiled for that configuration and run with its host ops on the
   interpreter and its accelerator layers on each simulator (the C machine and the Python
   reference simulator); then written as an artifact folder and run as `qaccel-run OUTDIR`
   runs it, by its run plan (numpy and the C machine), when it has one.

Every output at every stage must equal LiteRT's bit for bit. The first difference, refusal or
exception is the model's failure: one line naming the stage.

    from qaccel.explore.conformance import check_models
    from qaccel.frontend.random_models import generate
    for result in check_models([generate(seed) for seed in range(5)]):
        print(result.line())

A model committed with LiteRT's outputs (`tests/fixtures/corpus/NAME.ref.npz`) is checked
against those, without LiteRT: `check_committed("tests/fixtures/corpus/resnet8.tflite")`.
"""

from __future__ import annotations

import tempfile
import time
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from qaccel.explore.backend import compile_for, load_run_plan, run_compiled, write_artifact

CONFIGS = ("vta-default", "vta-store-requant")
"""The bundled hardware configurations."""
SIMULATORS = ("c", "python")


@dataclass
class ModelCheck:
    """The verdict on one model: `failure` is None when every stage was bit-exact."""

    name: str
    description: str = ""
    ops: Counter = field(default_factory=Counter)
    failure: str | None = None
    kind: str = "ok"
    """ok, invalid (LiteRT refuses the model), mismatch (an output differs), refused (qaccel
    stops with a diagnostic) or crash (an exception no diagnostic stands for)."""
    seconds: float = 0.0
    layers: dict[str, int] = field(default_factory=dict)
    """Accelerator layers per configuration."""
    host_ops: dict[str, int] = field(default_factory=dict)
    """Ops left on the host (fallbacks) per configuration."""
    run_plans: dict[str, bool] = field(default_factory=dict)
    """Whether the artifact has a run plan (then it was checked too), per configuration."""

    @property
    def ok(self) -> bool:
        return self.failure is None

    def line(self) -> str:
        verdict = "bit-exact" if self.ok else f"{self.kind.upper()}: {self.failure}"
        return f"{self.name}: {verdict} ({self.description})"


class _Failure(Exception):
    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


def _one_line(e: BaseException) -> str:
    for line in str(e).splitlines():
        if line.strip():
            return line.strip()
    return ""


def _classify(stage: str, e: Exception) -> _Failure:
    """A qaccel or xDSL exception is a diagnostic (a refusal); anything else is a crash."""
    module = type(e).__module__ or ""
    if module.startswith(("qaccel.", "xdsl.")):
        return _Failure("refused", f"{stage}: {_one_line(e)}")
    return _Failure("crash", f"{stage}: {type(e).__name__}: {_one_line(e)}")


def _compare(stage: str, got: Sequence[Any], want: Sequence[np.ndarray], input_set: int) -> None:
    from qaccel.pipeline.manager import compare_outputs

    difference = compare_outputs(want, got, "main")
    if difference is not None:
        raise _Failure("mismatch", f"{stage}: {difference}, input set {input_set}")


def _stage_checker(reference: list[list[np.ndarray]], inputs: list[list[np.ndarray]], config: str):
    """A pass instrumentation comparing the interpreter with `reference` after every pass that
    changed the IR, on every input set."""
    from qaccel.interpreter.interpreter import run_function
    from qaccel.pipeline.manager import PassInstrumentation, same_ir

    class StageChecker(PassInstrumentation):
        def run_before_pipeline(self, module, passes) -> None:
            self.snapshot = module.clone()

        def run_after_pass(self, index, scheduled, module) -> None:
            if same_ir(module, self.snapshot):
                return
            stage = f"{config}: interpreter after pass {scheduled.quoted}"
            for k, (xs, want) in enumerate(zip(inputs, reference)):
                try:
                    got = run_function(module, xs)
                except Exception as e:
                    raise _classify(stage, e) from None
                _compare(stage, got, want, k)
            self.snapshot = module.clone()

    return StageChecker()


def _check_config(model: bytes, module: Any, config: str, inputs: list[list[np.ndarray]],
                  reference: list[list[np.ndarray]], result: ModelCheck,
                  simulators: Sequence[str]) -> None:  # fmt: skip
    """`module` (the imported model, which the pipeline changes) for one configuration."""
    from qaccel.pipeline.manager import PassManager, expand, parse_passes, qaccel_context
    from qaccel.targets.vta.config import HardwareConfig

    passes = expand(parse_passes(f"vta-pipeline{{config={config}}}")).passes
    manager = PassManager(passes, [_stage_checker(reference, inputs, config)])
    try:
        manager.run(qaccel_context(), module)
    except _Failure:
        raise
    except Exception as e:
        raise _classify(f"{config}: vta-pipeline", e) from None
    try:
        compiled = compile_for(module, HardwareConfig.from_json(config))
    except Exception as e:
        raise _classify(f"{config}: compile", e) from None
    result.layers[config] = sum(len(layers) for layers in compiled.layers.values())
    result.host_ops[config] = len(compiled.fallbacks)
    for simulator in simulators:
        stage = f"{config}: artifact on the {simulator} simulator"
        for k, (xs, want) in enumerate(zip(inputs, reference)):
            try:
                got = run_compiled(compiled, xs, simulator)
            except Exception as e:
                raise _classify(stage, e) from None
            _compare(stage, got, want, k)
    stage = f"{config}: artifact run plan"
    with tempfile.TemporaryDirectory(prefix="qaccel-conformance-") as tmp:
        try:
            write_artifact(compiled, tmp, model)
            plan = load_run_plan(tmp)
            result.run_plans[config] = plan is not None
            for k, (xs, want) in enumerate(zip(inputs, reference) if plan else ()):
                _compare(stage, plan.run(xs), want, k)
        except _Failure:
            raise
        except Exception as e:
            raise _classify(stage, e) from None


def _inputs(model: bytes, name: str, input_sets: int) -> list[list[np.ndarray]]:
    from qaccel.frontend.tflite_import import import_tflite
    from qaccel.interpreter.interpreter import entry_function, random_inputs

    function = entry_function(import_tflite(model, name))
    return [random_inputs(function, seed) for seed in range(input_sets)]


def check_model(model: bytes, reference: Any, inputs: list[list[np.ndarray]], result: ModelCheck,
                configs: Sequence[str] = CONFIGS,
                simulators: Sequence[str] = SIMULATORS) -> ModelCheck:  # fmt: skip
    """Check `model` against `reference` (a `ReferenceResult` for `inputs`); fills `result`."""
    from qaccel.frontend.tflite_import import import_tflite
    from qaccel.interpreter.interpreter import run_function

    start = time.perf_counter()
    try:
        if reference.refused is not None:
            raise _Failure("invalid", reference.refused)
        expected = reference.outputs
        try:
            module = import_tflite(model, result.name)
        except Exception as e:
            raise _classify("import", e) from None
        for k, (xs, want) in enumerate(zip(inputs, expected)):
            try:
                got = run_function(module, xs)
            except Exception as e:
                raise _classify("tfl: interpreter", e) from None
            _compare("tfl: interpreter", got, want, k)
        for config in configs:
            _check_config(model, module.clone(), config, inputs, expected, result, simulators)
    except _Failure as f:
        result.failure, result.kind = str(f), f.kind
    result.seconds += time.perf_counter() - start
    return result


def committed_reference(path: str | Path) -> tuple[list[list[np.ndarray]], Any]:
    """The input sets and LiteRT's outputs for them stored in a `NAME.ref.npz` (arrays
    `input_S_K` and `output_S_K`: input set S, model input or output K), as the reference
    `check_model` takes: a model with committed outputs is checked without running LiteRT."""
    from qaccel.backends.litert.oracle import ReferenceResult

    with np.load(path) as data:
        arrays = {key: data[key] for key in data.files}

    def ordered(prefix: str, s: int) -> list[np.ndarray]:
        keys = [k for k in arrays if k.startswith(f"{prefix}_{s}_")]
        return [arrays[k] for k in sorted(keys, key=lambda k: int(k.rsplit("_", 1)[1]))]

    sets = sorted({int(k.split("_")[1]) for k in arrays if k.startswith("input_")})
    inputs = [ordered("input", s) for s in sets]
    return inputs, ReferenceResult(outputs=[ordered("output", s) for s in sets])


def check_committed(model_path: str | Path, input_sets: int | None = None,
                    configs: Sequence[str] = CONFIGS,
                    simulators: Sequence[str] = SIMULATORS) -> ModelCheck:  # fmt: skip
    """Check the model at `model_path` against the outputs committed next to it
    (`NAME.ref.npz`, see `committed_reference`), on its first `input_sets` input sets (all by
    default)."""
    model_path = Path(model_path)
    inputs, reference = committed_reference(model_path.with_suffix(".ref.npz"))
    if input_sets is not None:
        inputs, reference.outputs = inputs[:input_sets], reference.outputs[:input_sets]
    return check_model(model_path.read_bytes(), reference, inputs, ModelCheck(model_path.stem),
                       configs, simulators)


def check_models(models: Iterable[Any], input_sets: int = 2, configs: Sequence[str] = CONFIGS,
                 simulators: Sequence[str] = SIMULATORS) -> list[ModelCheck]:  # fmt: skip
    """Check every model: a `GeneratedModel` (from `frontend.random_models`) or `(name, bytes)`.
    LiteRT runs all of them in as few child processes as it can."""
    from qaccel.backends.litert.oracle import run_reference_batch

    items = []
    for m in models:
        if isinstance(m, tuple):
            name, data = m
            items.append((data, ModelCheck(str(name))))
        else:
            items.append((m.model, ModelCheck(f"seed {m.seed}", m.description, Counter(m.ops))))
    inputs, requests = [], []
    for data, result in items:
        start = time.perf_counter()
        try:
            xs = _inputs(data, result.name, input_sets)
        except Exception as e:
            failure = _classify("import", e)
            result.failure, result.kind = str(failure), failure.kind
            xs = None
        result.seconds += time.perf_counter() - start
        inputs.append(xs)
        if xs is not None:
            requests.append((data, xs))
    start = time.perf_counter()
    references = iter(run_reference_batch(requests))
    oracle_share = (time.perf_counter() - start) / max(len(requests), 1)
    for (data, result), xs in zip(items, inputs):
        if xs is None:
            continue
        result.seconds += oracle_share
        check_model(data, next(references), xs, result, configs, simulators)
    return [result for _, result in items]
