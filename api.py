"""qaccel's Python facade: what the tools do, as functions a notebook can call.

    from qaccel import api

    module = api.import_model("tests/fixtures/models/small_cnn.tflite")
    outputs = api.run_interpreter(module, seed=0)             # the imported model, on the CPU
    compiled = api.compile("tests/fixtures/models/small_cnn.tflite", config="vta-store-requant")
    api.run_pipeline(module, "vta-pipeline{stop-after=partition-graph}")  # stop anywhere,
    api.run_pipeline(module, MyPass())                        # change it with your own pass,
    compiled = api.compile(module)                            # and compile from that stage
    print(api.print_ir(module, elide_larger_than=16))         # readable IR
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
from qaccel.explore.result_store import ResultTable
from qaccel.explore.spec import SweepSpec
from qaccel.explore.sweep import run_sweep
from qaccel.pipeline.spec import PipelineLike
from qaccel.pipeline.stage import Stage, continuation, module_stage
from qaccel.targets.vta.config import DEFAULT_CONFIG, HardwareConfig
from xdsl.dialects.builtin import ModuleOp

ConfigLike = HardwareConfig | str | Path | None
ModelLike = str | Path | bytes

__all__ = [
    "DatasetSummary", "HardwareConfig", "ResultTable", "Stage", "SweepSpec", "compile",
    "compile_partition_model", "evaluate", "partition_compiler", "plan_partitions", "import_model", "load_config", "load_module", "print_ir", "run_interpreter",
    "run_litert", "run_pipeline", "run_simulator", "stage", "sweep", "write_artifact",
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


def run_pipeline(module, pipeline: PipelineLike = "vta-pipeline", config: ConfigLike = None,
                 **options: Any):  # fmt: skip
    """Run a pass pipeline on `module` in place and return it. `pipeline` is text
    (`"vta-pipeline{stop-after=partition-graph}"`), a pass instance (a researcher's own
    `ModulePass`, registered or not) or a list of either. For `vta-pipeline`, `config`
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


def load_module(model: ModelLike | ModuleOp):
    """The module of a `.tflite` file or its bytes, of MLIR text (`.mlir`, any stage of the
    flow), or a copy of an in-memory module."""
    if isinstance(model, ModuleOp):
        return model.clone()
    if isinstance(model, bytes):
        return import_model(model)
    path = Path(model)
    if path.suffix == ".mlir":
        return _parse_mlir(path.read_text(), str(path))
    if path.suffix != ".tflite":
        raise ValueError(f"'{path}': expected a .tflite model or .mlir text")
    return import_model(path)


def _parse_mlir(text: str, source: str):
    from xdsl.parser import Parser
    from xdsl.utils.exceptions import ParseError

    from qaccel.dialects import qaccel_context
    from qaccel.dialects.ssa import verify_dominance

    try:
        module = Parser(qaccel_context(), text, source).parse_module()
    except ParseError as e:
        raise ValueError(f"{source}: {e.msg}") from None
    module.verify()
    verify_dominance(module, source)
    return module


def stage(module) -> Stage:
    """Where `module` is in `vta-pipeline` (`.name`, `.last`, `.remaining()`, `.describe()`),
    read from its IR."""
    return module_stage(module)


def print_ir(module, elide_larger_than: int | None = None) -> str:
    """The module as MLIR text; constants (dense elements and arrays) of more than
    `elide_larger_than` elements print as `dense_resource<__elided__>` (MLIR's
    `--mlir-elide-elementsattrs-if-larger`): readable, but it does not parse back."""
    from qaccel.dialects.printing import op_text

    return op_text(module, elide_larger_than=elide_larger_than)


def _inputs(function, inputs: Sequence[np.ndarray] | None, seed: int) -> list[np.ndarray]:
    from qaccel.interpreter.interpreter import random_inputs

    return list(inputs) if inputs is not None else random_inputs(function, seed)


def run_interpreter(module, inputs: Sequence[np.ndarray] | None = None,
                    seed: int = 0) -> list[np.ndarray]:  # fmt: skip
    """Execute `module` (any stage) on the interpreter; seeded random inputs by default."""
    from qaccel.interpreter.interpreter import entry_function, run_function

    return run_function(module, _inputs(entry_function(module), inputs, seed))


def compile(model: ModelLike | ModuleOp, config: ConfigLike = None, **options: Any):
    """Compile a model as `qaccel-compile` does: the compiled model, whose `.report` is
    report.json's content (`report["totals"]["cycles"]`, ...).

    `model` is a `.tflite` file (or its bytes), MLIR text (`.mlir`) or an in-memory module, at
    any stage of `vta-pipeline` (`stage(module)`): only the passes after its stage run, so a
    module changed by a researcher's own pass keeps the change. `config` and `options` go to
    the passes still to run (`config` must match the target of a module that has one). The
    report's MAC share is of the model's MACs, counted from the module's ops at its stage."""
    from qaccel.dialects.macs import model_macs

    module = load_module(model)
    total_macs = model_macs(module)
    hw = load_config(config) if config is not None else None
    with _config_file(hw) if hw is not None else contextlib.nullcontext() as path:
        spec = continuation(module, path, **options)
        if spec:
            _run_pipeline(module, spec)
    return _backend.compile_for(module, None, total_macs)


def partition_compiler(config: ConfigLike = None):
    """The compiler `backends/litert/partitions.py` takes: a `.tflite`'s bytes -> its
    `CompiledModel` (vta-pipeline with `config`, as `qaccel-compile --config` does)."""
    hw = load_config(config)

    def compile_bytes(model: bytes):
        return compile(model, hw)

    return compile_bytes


def plan_partitions(model_bytes: bytes, config: ConfigLike = None):
    """The accelerator partitions qaccel-compile decides for a `.tflite` (its bytes): a list
    of `Partition(name, subgraph, ops, inputs, outputs)`, original operator and tensor indices
    (`backends/litert/partitions.py`)."""
    from qaccel.backends.litert.partitions import plan_partitions as plan

    return plan(model_bytes, partition_compiler(config))


def compile_partition_model(model_bytes: bytes, config: ConfigLike = None) -> list[bytes]:
    """One accelerator program per subgraph of a `.tflite` whose every subgraph is one
    partition (LiteRT's outlined form); `PartitionError` (one line) when a subgraph is not
    wholly one accelerator program."""
    from qaccel.backends.litert.partitions import compile_partition_model as compile_all

    return compile_all(model_bytes, partition_compiler(config))


def write_artifact(compiled, outdir: str | Path, model: ModelLike | None = None) -> Path:
    """Write the artifact folder and return it. With the `.tflite` the model was compiled
    from (its path or bytes): the model, for LiteRT comparisons, and the LiteRT models, that
    model with each accelerator partition spliced in, as qaccel-compile writes them."""
    from qaccel.backends.litert.partitions import litert_files

    source = model if isinstance(model, bytes) or model is None else Path(model).read_bytes()
    extra = None
    if source is not None:
        extra, _ = litert_files(source, compiled, partition_compiler(compiled.config))
    _backend.write_artifact(compiled, outdir, source, extra)
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
             ray: str | None = None, compare: bool = True,
             workers: str = "auto") -> DatasetSummary:  # fmt: skip
    """Dataset evaluation of an artifact folder: `inputs` is a folder or `.npz` (see
    `qaccel-run --inputs-dir`) or a list of arrays of a single-input model. `workers`:
    "threads" of this process, "processes", or "auto" (threads when the artifact's run plan
    runs every accelerator function through its program; `explore/dataset.py`)."""
    if isinstance(inputs, str | Path):
        sets = load_input_sets(inputs, input_shapes(artifact))
    else:
        sets = [(f"set_{i}", [np.asarray(x)]) for i, x in enumerate(inputs)]
    return evaluate_dataset(artifact, sets, labels=labels, executor=make_executor(jobs, ray),
                            compare=compare, workers=workers)  # fmt: skip
