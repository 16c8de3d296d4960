"""qaccel's Python facade: what the tools do, as functions a notebook can call.

    from qaccel import api

    module = api.import_model("tests/fixtures/models/small_cnn.tflite")
    outputs = api.run_interpreter(module, seed=0)             # the imported model, on the CPU
    compiled = api.compile("tests/fixtures/models/small_cnn.tflite", config="vta-store-requant")
    outputs = api.run_simulator(compiled, seed=0)             # accelerator layers simulated
    outputs = api.run_litert(compiled, seed=0)                # run by LiteRT (dispatch library)
    table = api.sweep(["tests/fixtures/models/small_cnn.tflite"],
                      {"grid": {"log_inp_buff_size": [14, 15]}}, jobs=1)
    table.to_pandas()                                         # with pandas installed

Hardware configurations are `HardwareConfig` objects, files or bundled names
(`vta-default`, `vta-store-requant`) everywhere. See docs/python-api.md.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from qaccel.explore import backend as _backend
from qaccel.explore.dataset import DatasetSummary, evaluate_dataset, input_shapes, load_input_sets
from qaccel.explore.evaluate import import_model as _import_bytes
from qaccel.explore.evaluate import run_pipeline as _run_pipeline
from qaccel.explore.executors import make_executor
from qaccel.explore.results import ResultTable
from qaccel.explore.spec import SweepSpec
from qaccel.explore.sweep import run_sweep
from qaccel.targets.vta.config import DEFAULT_CONFIG, HardwareConfig

ConfigLike = HardwareConfig | str | Path | None
ModelLike = str | Path | bytes

__all__ = [
    "DatasetSummary", "HardwareConfig", "ResultTable", "SweepSpec", "compile", "evaluate",
    "import_model", "load_config", "run_interpreter", "run_litert", "run_pipeline",
    "run_simulator", "sweep", "write_artifact",
]  # fmt: skip


def load_config(config: ConfigLike = None) -> HardwareConfig:
    """A `HardwareConfig` from an object, a JSON file, a bundled name, or None (VTA's)."""
    if config is None:
        return DEFAULT_CONFIG
    if isinstance(config, HardwareConfig):
        return config
    return HardwareConfig.from_json(config)


@contextlib.contextmanager
def _config_file(config: HardwareConfig) -> Iterator[str]:
    fd, path = tempfile.mkstemp(prefix="qaccel-config-", suffix=".json")
    try:
        with os.fdopen(fd, "w") as f:
            json.dump(config.to_dict(), f)
        yield path
    finally:
        os.unlink(path)


def import_model(model: ModelLike, name: str = "model.tflite"):
    """The `tfl` module of a `.tflite` file (or its bytes)."""
    if isinstance(model, bytes):
        return _import_bytes(model, name)
    path = Path(model)
    return _import_bytes(path.read_bytes(), str(path))


def run_pipeline(module, pipeline: str = "vta-pipeline", config: ConfigLike = None,
                 **options: Any):  # fmt: skip
    """Run a pass pipeline on `module` in place and return it. For `vta-pipeline`, `config`
    becomes its `config` and `options` (e.g. `bias_placement="preload"`) its options."""
    if pipeline == "vta-pipeline" and (config is not None or options):
        with _config_file(load_config(config)) as path:
            opts = [f'config="{path}"'] + [f"{k.replace('_', '-')}={v}"
                                              for k, v in options.items()]  # fmt: skip
            _run_pipeline(module, "vta-pipeline{" + " ".join(opts) + "}")
        return module
    if options or config is not None:
        raise ValueError("config and options go with pipeline='vta-pipeline'")
    _run_pipeline(module, pipeline)
    return module


def _inputs(function, inputs: Sequence[np.ndarray] | None, seed: int) -> list[np.ndarray]:
    from qaccel.interpreter.interpreter import random_inputs

    return list(inputs) if inputs is not None else random_inputs(function, seed)


def run_interpreter(module, inputs: Sequence[np.ndarray] | None = None,
                    seed: int = 0) -> list[np.ndarray]:  # fmt: skip
    """Execute `module` (any stage) on the interpreter; seeded random inputs by default."""
    from qaccel.interpreter.interpreter import entry_function, run_function

    return run_function(module, _inputs(entry_function(module), inputs, seed))


def compile(model: ModelLike, config: ConfigLike = None, **options: Any):
    """Compile a `.tflite` model as `qaccel-compile` does: the compiled model, whose `.report`
    is report.json's content (`report["totals"]["cycles"]`, ...)."""
    from qaccel.dialects.macs import op_macs

    hw = load_config(config)
    module = import_model(model)
    total_macs = sum(op_macs(op) for op in module.walk())
    run_pipeline(module, "vta-pipeline", hw, **options)
    return _backend.compile_for(module, hw, total_macs)


def write_artifact(compiled, outdir: str | Path, model: ModelLike | None = None) -> Path:
    """Write the artifact folder (with the model, for LiteRT comparisons) and return it."""
    source = model if isinstance(model, bytes) or model is None else Path(model).read_bytes()
    _backend.write_artifact(compiled, outdir, source)
    return Path(outdir)


def run_simulator(compiled, inputs: Sequence[np.ndarray] | None = None, seed: int = 0,
                  simulator: str = "c") -> list[np.ndarray]:  # fmt: skip
    """Run a compiled model (or an artifact folder): host ops on the interpreter, accelerator
    layers on the simulator (`c`: libqaccel_vta when built, else `python`, the reference)."""
    from qaccel.interpreter.interpreter import entry_function

    if isinstance(compiled, str | Path):
        compiled = _backend.load_artifact(compiled)
    inputs = _inputs(entry_function(compiled.module), inputs, seed)
    return _backend.run_compiled(compiled, inputs, simulator)


def run_litert(compiled, inputs: Sequence[np.ndarray] | None = None, seed: int = 0,
               path: str = "dispatch") -> list[np.ndarray]:  # fmt: skip
    """Run a compiled model (or an artifact folder) with LiteRT itself, as `qaccel-run OUTDIR
    --runtime litert` does: `path` "dispatch" (its DISPATCH_OPs run by our dispatch library,
    libLiteRtDispatch_Qaccel) or "custom-op" (its QACCEL_VTA ops run by our custom-op kernel);
    LiteRT's CPU reference kernels run the rest."""
    from qaccel.interpreter.interpreter import entry_function

    loaded = _backend.load_artifact(compiled) if isinstance(compiled, str | Path) else compiled
    inputs = _inputs(entry_function(loaded.module), inputs, seed)
    return _backend.run_litert(compiled, inputs, path)


def sweep(models: Sequence[str | Path] | dict[str, bytes], spec: SweepSpec | dict | str | Path,
          outdir: str | Path | None = None, *, jobs: int | None = None,
          ray: str | None = None, progress: bool = False,
          timeout_s: float | None = None) -> ResultTable:  # fmt: skip
    """Sweep `models` over `spec` (a `SweepSpec`, its dict form, or a spec file): the result
    table. With `outdir`, results are cached there and the files of `qaccel-sweep` written."""
    if isinstance(spec, dict):
        spec = SweepSpec.from_dict(spec)
    elif not isinstance(spec, SweepSpec):
        spec = SweepSpec.load(spec)
    return run_sweep(models, spec, outdir, make_executor(jobs, ray), progress=progress,
                     timeout_s=timeout_s).table  # fmt: skip


def evaluate(artifact: str | Path, inputs: str | Path | Sequence[np.ndarray],
             labels: np.ndarray | None = None, *, jobs: int | None = None,
             ray: str | None = None, compare: bool = True) -> DatasetSummary:  # fmt: skip
    """Dataset evaluation of an artifact folder: `inputs` is a folder or `.npz` (see
    `qaccel-run --inputs-dir`) or a list of arrays of a single-input model."""
    if isinstance(inputs, str | Path):
        sets = load_input_sets(inputs, input_shapes(artifact))
    else:
        sets = [(f"set_{i}", [np.asarray(x)]) for i, x in enumerate(inputs)]
    return evaluate_dataset(artifact, sets, labels=labels, executor=make_executor(jobs, ray),
                            compare=compare)  # fmt: skip
