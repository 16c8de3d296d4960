"""`qaccel-compile`: compile a model for the VTA-like accelerator into a self-contained artifact.

    qaccel-compile model.tflite -o out/                  # vta-pipeline, default hardware
    qaccel-compile model.tflite -o out/ --config hw.json --quiet
    qaccel-compile model.tflite -o out/ --plot layers.png  # per-layer cycles vs. roofline
    qaccel-compile partitioned.mlir -o out/   # IR of any stage (edited): continues from there
    qaccel-run out/ --random-inputs 0 --outputs-dir res --compare-litert

Runs the passes of `vta-pipeline` that the module has not had yet (its stage is read from the
IR: a `.tflite` gets them all, MLIR text saved after `partition-graph` the ones after it, so
changes made to it are kept; `--config` goes to `attach-target`, or must match the target the
module already has) or the pipeline `-p` (with `--config`, `vta-pipeline{config=...}`, or
`attach-target{target=vta config=...}` before another pipeline; a pipeline that would run a
finished pass again is refused); the artifact is built for the module's `#accel.target`. The
report's MAC share is of the model's MACs, counted from the module's ops at its stage. Then it
emits every formed
accelerator layer (`vta.layer`) with the schedule its `#vta.<kind>_schedule` gives (the search's or
the emitter's choice for layers without one) (`backends/vta/codegen.py`) and writes
OUTDIR/host.mlir, OUTDIR/vta_fn_k/layer_i.bin and
layer_i.dram.npz, OUTDIR/report.json and OUTDIR/manifest.json, and the models for LiteRT: the
original .tflite with each accelerator partition spliced in (`backends/litert/partitions.py`),
OUTDIR/model.qaccel.dispatch.tflite (each partition one LiteRT DISPATCH_OP whose bytecode, its
program, our dispatch library runs) and OUTDIR/model.qaccel.tflite (each one QACCEL_VTA custom
op carrying its program, for our custom-op kernel), with OUTDIR/partitions.json and OUTDIR/programs/*.qprog (a partition
left on the CPU: one line why); `qaccel-run OUTDIR --runtime litert` runs them; prints the
report table
(per layer: cycles, GEMM utilization, roofline and ratio, DRAM bytes, tiling; totals, ms at the
configured clock, the cost model's estimate of the host steps and of the whole inference next
to the simulated cycles, MAC share, host fallbacks). Compiling twice gives identical files. Progress
goes to stderr when it is a terminal; `--quiet` silences progress and the table.
"""

from __future__ import annotations

import gc
import os

# The compiler computes in integers: OpenBLAS's worker threads, started when numpy is first
# imported (below), only spin, some 40 ms of CPU per process on a 2-core machine, and each
# fork of the process (the helpers on the second core) has to stop and restart them. As
# qaccel-run does; its children inherit it, and a value the user set is kept.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

# Importing the compiler makes some 60,000 objects the collector tracks, which live as long as
# the process (xDSL's and qaccel's op and attribute definitions, numpy): collections during
# the imports walk them again and again and free nothing.
# ruff: noqa: E402
_COLLECTING = gc.isenabled()
gc.disable()

import argparse
import contextlib
import io
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import NoReturn

from qaccel.backends.vta.artifact import (
    check_artifact_destination,
    check_runnable,
    module_pieces,
    write_artifact,
)
from qaccel.backends.vta.codegen import compile_module, settle_host_trees
from qaccel.backends.vta.compiled import CompileError
from qaccel.backends.vta.report import format_report
from qaccel.targets.vta.config import ConfigError
from qaccel.backends.vta.report_plot import PlotError, plot_report, require_matplotlib
from qaccel.frontend.tflite_import import TFLiteImportError, import_tflite
from qaccel.dialects import qaccel_context
from qaccel.pipeline.spec import PipelineError, available_passes
from qaccel.kernels import background
from qaccel.kernels.memory import MemoryBudgetError
from qaccel.interpreter.interpreter import ExecutionError, check_memory
from qaccel.tools.cli import (
    fail,
    InputError,
    OutputPathError,
    check_output_dir,
    check_output_file,
    end_process,
    fewer_collections,
    parse_mlir,
    resource_errors,
)
from qaccel.tools.pass_flags import add_pass_manager_arguments, normalize_argv, pass_manager_for
from xdsl.utils.exceptions import ArgSpecParseError, DiagnosticException

if _COLLECTING:
    # Everything the imports made (and all that existed before) out of the collector's reach,
    # as main()'s fewer_collections() does: enabling the collector with them still in the
    # youngest generation made its next allocation walk them all (some 60 ms).
    gc.freeze()
    gc.enable()

PROG = "qaccel-compile"


def _fail(message: str) -> NoReturn:
    fail(PROG, message)


class _GivenPipeline(argparse.Action):
    """`-p` given explicitly (else the module continues from its stage)."""

    def __call__(self, parser, namespace, values, option_string=None):
        setattr(namespace, self.dest, values)
        namespace.passes_given = True


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n\n")[0])
    ap.add_argument("model", help="a .tflite model, or MLIR text (.mlir) at any stage of the flow")
    ap.add_argument("-o", "--output", required=True, metavar="OUTDIR", help="artifact folder")
    ap.add_argument("-p", "--passes", default="vta-pipeline", action=_GivenPipeline,
                    help="pass pipeline (default: the passes of vta-pipeline after the "
                    "module's stage; one that would redo a finished pass is refused)")
    ap.add_argument("--config", type=Path, help="hardware config JSON (default: VTA default)")
    ap.add_argument("--quiet", action="store_true", help="no progress, no report table")
    ap.add_argument("--plot", type=Path, metavar="FILE.png",
                    help="draw each layer's cycles against its roofline (needs matplotlib)")
    add_pass_manager_arguments(ap)

    def error(message: str) -> NoReturn:
        _fail(message)

    ap.error = error  # type: ignore[method-assign]
    return ap


def compile_model(
    model_path: Path,
    passes: str | None = None,
    progress=None,
    args: argparse.Namespace | None = None,
    config_path: Path | None = None,
    scheduled=None,
    image_ready=None,
):
    """Import, run the pipeline, compile: the `CompiledModel` and the model's bytes.
    `scheduled(module, source)` (`source`: the model's bytes, None for MLIR text) is called
    once the pipeline ran and codegen's one change to the module (`settle_host_trees`) is
    made: the module is final, the emission only reads it."""
    from xdsl.dialects import func

    from qaccel.dialects.macs import model_macs
    from qaccel.pipeline.stage import check_no_redo, continuation

    try:
        data = model_path.read_bytes()
    except OSError as e:
        raise CompileError(f"cannot open model '{model_path}': {e.strerror}") from None
    if model_path.suffix == ".mlir":
        module = _parse_mlir(data, model_path)
        source = None
    elif model_path.suffix == ".tflite":
        module = import_tflite(data, str(model_path))
        source = data
    else:
        raise CompileError(f"'{model_path}': expected a .tflite model or .mlir text")
    if not any(isinstance(op, func.FuncOp) and op.body.blocks for op in module.ops):
        raise CompileError(f"'{model_path}': the module has no function to compile")
    try:
        check_memory(module, str(model_path))
    except ExecutionError as e:
        raise CompileError(str(e)) from None
    total_macs = model_macs(module)  # the model's, from its ops at whatever stage it is
    explicit = passes is not None
    if not explicit:  # continue from the module's stage
        passes = continuation(module, None if config_path is None else str(config_path))
    elif config_path is not None:  # the module's #accel.target: every pass and the emitter use it
        config = f'"{config_path}"'
        if passes == "vta-pipeline":
            passes = f"vta-pipeline{{config={config}}}"
        else:
            passes = ",".join(p for p in (f"attach-target{{target=vta config={config}}}", passes) if p)
    ns = args or parser().parse_args([str(model_path), "-o", "unused", "-p", passes])
    ns.passes = passes
    ns.report_partitioning = True  # partition-graph's summary on stderr (--quiet drops stderr)
    manager, _ = pass_manager_for(ns, available_passes(), PROG)
    if explicit:
        check_no_redo(module, [s.name for s in manager.passes], f"-p '{passes}'")
    # The passes' summaries go to stderr once the model compiled: a model that is refused
    # (e.g. one that could not run) gets its one error line and nothing else. Output asked
    # for (IR dumps, timings, explanations) is never held back.
    asked = (ns.print_ir_after_all or ns.print_ir_after or ns.pass_timing
             or getattr(ns, "explain_partitioning", False))  # fmt: skip
    # Verifying every intermediate module cost about a tenth of the compile: the input and
    # the pipeline's result are verified, each pass only when a developer's flag is given.
    manager.verify_each = bool(asked or getattr(ns, "verify_semantics", None) is not None)
    # The input was verified where it was made (parse_mlir; the importer's IR verifies).
    manager.verify_input = manager.verify_each
    summaries = io.StringIO()
    with contextlib.nullcontext() if asked else contextlib.redirect_stderr(summaries):
        manager.run(qaccel_context(), module)
        check_runnable(module)  # before the compile's work (write_artifact checks it too)
        settled = settle_host_trees(module)
        if scheduled is not None:
            scheduled(module, source)
        compiled = compile_module(module, total_macs=total_macs, progress=progress,
                                  settled=settled, image_ready=image_ready)  # fmt: skip
    sys.stderr.write(summaries.getvalue())
    return compiled, source


def _parse_mlir(data: bytes, path: Path):
    try:
        return parse_mlir(data, str(path))
    except InputError as e:
        raise CompileError(str(e)) from None


def run(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(normalize_argv(argv))
    check_output_dir(args.output, "-o")  # before the compile, not after it
    check_artifact_destination(args.output)
    if args.plot:
        check_output_file(args.plot, "--plot")
        require_matplotlib(args.plot)  # before the compile, not after it
    stderr = sys.stderr
    tty = stderr.isatty() and not args.quiet

    def progress(line: str) -> None:
        print(f"\r\033[K{PROG}: {line}", end="", file=stderr, flush=True)

    start = time.perf_counter()
    host_text = litert = None
    # The artifact's folder, made once the module is final: the helpers write their files
    # (host.mlir, the LiteRT models) into it themselves and hand back only their digests.
    from qaccel.backends.vta.artifact import ImageAhead, Staging

    staging: list[Staging] = []
    # Each accelerator function's DRAM image is made into its dram.npz and written into the
    # artifact's folder on a thread from the moment its layout is known, while its streams
    # are emitted (write_artifact takes it when the emitter kept that layout).
    images_ahead: dict[str, ImageAhead] = {}

    def image_ready(name: str, image) -> None:
        if litert is not None:  # nothing forks after the emission (else the thread waits)
            _settle(images_ahead.get(name))  # (laid out again: the earlier one writes first)
            images_ahead[name] = ImageAhead(image, staged(), f"{name}/dram.npz")

    def staged() -> Staging:
        if not staging:
            staging.append(Staging(args.output))
        return staging[0]

    def print_host_ir(module, source: bytes | None) -> None:
        # The module is final once the pipeline ran and the host trees are settled (the
        # emission only reads it): its text is printed on the second core from then on,
        # alongside the emission; and the LiteRT models of a .tflite are begun (the model
        # read, its partitions proven, the dispatch model's flatbuffer made), to be finished
        # with the emitted functions, which are fed to them.
        nonlocal host_text, litert
        host_text = background.start(_write_host_ir, module, staged())
        if source is not None:
            litert = background.start_fed(_write_spliced_models, module, source, staged())

    try:
        # --quiet: the passes' summaries (e.g. partition-graph's) too; errors still raise.
        with (contextlib.redirect_stderr(io.StringIO()) if args.quiet
              else contextlib.nullcontext()):  # fmt: skip
            passes = args.passes if getattr(args, "passes_given", False) else None
            compiled, data = compile_model(Path(args.model), passes, progress if tty else None,
                                           args, args.config, print_host_ir,
                                           image_ready)  # fmt: skip
        if tty:
            print("\r\033[K", end="", file=stderr, flush=True)
        # The LiteRT models are made on the second core while the artifact's own files are
        # (during the emission, the second core prints the host IR and begins them);
        # write_artifact asks for them last.
        if host_text is None or litert is None:
            for early in images_ahead.values():  # a process forks with no other thread
                early.result()
        if host_text is None:
            host_text = background.start(_write_host_ir, compiled.module, staged())
        fed = litert is not None  # `_write_spliced_models`, which writes model.tflite too
        if litert is None:
            litert = background.start(_write_aot_models, compiled, data, staged())
        else:
            litert.feed(_emitted(compiled))
        aot_lines: list[str] = []

        def litert_models():
            models, lines = litert.result()
            aot_lines.append(lines)
            return models

        write_artifact(compiled, args.output, data, extra=litert_models,
                       host_text=host_text.result, staging=staged(),
                       images_ahead=images_ahead, source_by_helper=fed)  # fmt: skip
        aot = aot_lines[0]
    finally:
        for pending in (host_text, litert):
            if pending is not None:
                pending.cancel()
        for early in images_ahead.values():  # no thread writes into a folder discarded
            _settle(early)
        if staging:  # nothing once the artifact is in place
            staging[0].discard()
    if args.plot:
        plot_report(compiled.report, args.plot, Path(args.model).name)
    if not args.quiet:
        print(format_report(compiled.report))
        print(aot)
        plot = f" and {args.plot}" if args.plot else ""
        print(f"wrote {args.output}{plot} in {time.perf_counter() - start:.1f} s")
    return 0


def _settle(early) -> None:
    """Wait for an `ImageAhead`'s thread to be done, whatever it ended with (its error, if
    any, is the caller's when it asks for the result)."""
    if early is not None:
        with contextlib.suppress(Exception):
            early.result()


def _write_host_ir(module, staging):
    """OUTDIR/host.mlir written into the artifact's folder (by a helper process)."""
    return staging.write("host.mlir", module_pieces(module))


def _write_aot_models(compiled, source: bytes | None, staging):
    """`_aot_models`' files written into the artifact's folder (by a helper process)."""
    models, lines = _aot_models(compiled, source)
    return _written(models, staging), lines


def _emitted(compiled):
    """What `_write_spliced_models` needs of the compile besides its module: the hardware
    configuration and the accelerator functions (their layers' emitters left out)."""
    from dataclasses import replace

    from qaccel.backends.vta.compiled import CompiledFunction

    functions = {name: CompiledFunction(fn.name, [replace(lay, program=None) for lay in fn.layers],
                                        fn.slots, fn.arena_nbytes, fn.image)
                 for name, fn in compiled.functions.items()}  # fmt: skip
    return compiled.config, functions


def _write_spliced_models(module, source: bytes, staging, receive):
    """`_write_aot_models` for a .tflite, begun from the final module alone (by a helper
    process started before the emission): the rest once `receive()` gives `_emitted`. Writes
    OUTDIR/model.tflite (`source`) too, meanwhile."""
    from qaccel.backends.litert.partitions import finish_litert_files, prepare_litert_files
    from qaccel.backends.vta.compiled import CompiledModel, accelerator_functions

    names = {f.sym_name.data for f in accelerator_functions(module)}
    prepared = prepare_litert_files(source, module, names)
    # OUTDIR/model.tflite too, while the emission runs (write_artifact leaves it to this).
    original = staging.write("model.tflite", source)
    config, functions = receive()
    if set(functions) != names:  # (never seen) decided again for the compile's functions
        prepared = prepare_litert_files(source, module, set(functions))
    compiled = CompiledModel(module, config, functions, [], {})
    models, lines = finish_litert_files(prepared, compiled, _partition_compiler(compiled),
                                        joined=False)  # fmt: skip
    return {"model.tflite": original, **_written(models, staging)}, "\n".join(lines)


def _written(models: dict[str, bytes | list], staging):
    """Each file of `models` (its bytes, or pieces of them) written into the artifact's
    folder; their digests."""
    import json

    from qaccel.backends.litert.partitions import PARTITIONS_FILE

    known = {}  # each program's digest, as partitions.json records it
    if PARTITIONS_FILE in models:
        known = {p["program"]: p["program_sha256"]
                 for p in json.loads(models[PARTITIONS_FILE])["partitions"]}  # fmt: skip
    return {rel: staging.write(rel, blob, known.get(rel)) for rel, blob in models.items()}


def _aot_models(compiled, source: bytes | None) -> tuple[dict[str, bytes], str]:
    """OUTDIR/model.qaccel.dispatch.tflite and OUTDIR/model.qaccel.tflite for LiteRT, with
    OUTDIR/partitions.json and OUTDIR/programs/*.qprog, written and hashed with the artifact;
    the report's lines. From a .tflite: the original model with each accelerator partition
    spliced in (backends/litert/partitions.py); a partition the accelerator program could not
    cover stays CPU operators (one line each). From MLIR text (no original model): the host
    IR exported (backends/litert/aot.py)."""
    from qaccel.backends.litert.aot import AOT_FILE, DISPATCH_FILE, AotError, custom_ops
    from qaccel.backends.litert.paths import PATHS

    if source is not None:
        return _spliced_models(compiled, source)
    try:
        models = {way.model_file: way.export(compiled) for way in PATHS.values()}
    except AotError as e:
        return {}, f"no LiteRT AOT model: {e}"
    ops = ", ".join(f"{o['name']} ({o['program_bytes']} B program)"
                    for o in custom_ops(models[DISPATCH_FILE]))  # fmt: skip
    return models, (f"LiteRT AOT models {DISPATCH_FILE} (DISPATCH_OP) and {AOT_FILE} "
                    f"(QACCEL_VTA custom op) from the host IR: accelerator function(s) "
                    f"{ops or 'none'}")  # fmt: skip


def _spliced_models(compiled, source: bytes) -> tuple[dict[str, bytes], str]:
    from qaccel.backends.litert.partitions import litert_files

    models, lines = litert_files(source, compiled, _partition_compiler(compiled))
    return models, "\n".join(lines)


def _partition_compiler(compiled):
    def compile_bytes(model: bytes):
        # `qaccel.api` (with the sweep machinery it imports) only for a model with another
        # subgraph to compile; a single-subgraph model never asks.
        from qaccel.api import partition_compiler

        return partition_compiler(compiled.config)(model)

    return compile_bytes


def main(argv: Sequence[str] | None = None) -> None:
    # The command's own process may fork helpers (the host IR printed and half of the
    # schedule searches run on the second core); a caller's process only while in here.
    background.allow()
    try:
        with resource_errors(PROG), fewer_collections():
            code = run(argv)
    except (CompileError, PipelineError, TFLiteImportError, DiagnosticException,
            ConfigError, PlotError, OutputPathError, MemoryBudgetError) as e:  # fmt: skip
        _fail(str(e))
    except ArgSpecParseError as e:
        _fail(f"invalid pass pipeline: {str(e).splitlines()[-1].strip()}")
    finally:
        background.allow(False)
    sys.exit(code)


if __name__ == "__main__":
    try:
        main()
    except SystemExit as e:
        end_process(e.code)  # without the interpreter's teardown
