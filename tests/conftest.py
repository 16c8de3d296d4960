"""Shared test helpers: fixture models, IR parsing/printing, and the LiteRT oracle."""

from __future__ import annotations

import functools
import io
import os
from pathlib import Path

# OpenBLAS's worker threads spin against each other on a loaded 2-core machine: the
# interpreter's small float64 convolution matmuls ran up to 6x slower with them than on one
# thread. Read when numpy is first imported, which is after this point.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import pytest
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.parser import Parser
from xdsl.printer import Printer

FIXTURE_MODELS = Path(__file__).parent / "fixtures" / "models"


def pytest_configure(config):
    """Compile qaccel's modules to bytecode once, before the workers start. Where the
    environment sets PYTHONDONTWRITEBYTECODE, no process writes bytecode, so every worker and
    every tool, LiteRT oracle or runner process a test starts compiled the source of each module
    it imports again (about 0.2 s CPU per process for qaccel-compile's); bytecode present is
    still read. A no-op when it is current; a package that cannot be written is left alone."""
    if hasattr(config, "workerinput"):  # a pytest-xdist worker: the controller did it
        return
    import compileall
    import re

    import qaccel

    root = Path(qaccel.__file__).parent
    compileall.compile_dir(str(root), quiet=2, rx=re.compile(r"[/\\]tests[/\\]"))
    _write_rewritten_test_modules(config)


def _write_rewritten_test_modules(config) -> None:
    """pytest's rewritten test modules (asserts made explanatory), written once by the
    controller. pytest reads a current one whatever the environment, but writes one only where
    bytecode may be written: under PYTHONDONTWRITEBYTECODE each worker rewrote every test
    module at every run (about 4 CPU s per process). Skipped when asserts are not rewritten or
    pytest's internals differ; the workers then rewrite as before."""
    try:
        from _pytest.assertion import rewrite

        state = config.stash[rewrite.assertstate_key]
        if state.mode != "rewrite":
            return
        here = Path(__file__).parent
        for source in sorted([here / "conftest.py", *here.glob("test_*.py")]):
            pyc = rewrite.get_cache_dir(source) / (source.name[:-3] + rewrite.PYC_TAIL)
            if rewrite._read_pyc(source, pyc) is not None:
                continue
            if not rewrite.try_makedirs(pyc.parent):
                return
            source_hash, code = rewrite._rewrite_test(source, config)
            rewrite._write_pyc(state, code, source_hash, pyc)
    except (ImportError, AttributeError, KeyError, TypeError, OSError, SyntaxError):
        return


def fixture_models() -> list[Path]:
    """Every committed fixture model."""
    return sorted(FIXTURE_MODELS.glob("*.tflite"))


def context() -> Context:
    from qaccel.pipeline.manager import qaccel_context

    return qaccel_context()


def parse_module(text: str) -> ModuleOp:
    module = Parser(context(), text).parse_module()
    module.verify()
    return module


def vta_lowered(name: str, config: str = "", fresh: bool = False) -> tuple[ModuleOp, bytes]:
    """A fixture model imported and run through `vta-pipeline` (for the hardware config file
    or bundled config name `config`), and the model's bytes.

    Each (name, config) is lowered once per test process (`""` and `"vta-default"` are one
    entry: `vta-pipeline` without a config attaches VTA's default configuration); every call
    gets its own clone, so a test may change it. `fresh=True` lowers again (to check that
    lowering is deterministic)."""
    if fresh:
        return _lower(name, config)
    module, data = _cached_lowering(name, "" if config == "vta-default" else config)
    return module.clone(), data


# Room for every fixture model at three configurations: a worker runs many test files, and
# test_vta_cmachine and test_vta_cdriver alone ask for every fixture at both bundled
# configurations (with 8 entries those evicted MobileNetV2 before the next file asked for it).
@functools.lru_cache(maxsize=32)
def _cached_lowering(name: str, config: str) -> tuple[ModuleOp, bytes]:
    return _lower(name, config)


def _lower(name: str, config: str) -> tuple[ModuleOp, bytes]:
    from qaccel.frontend.tflite_import import import_tflite
    from qaccel.pipeline.manager import build_pipeline, qaccel_context

    path = FIXTURE_MODELS / f"{name}.tflite"
    data = path.read_bytes()
    module = import_tflite(data, str(path))
    pipeline = f"vta-pipeline{{config={config}}}" if config else "vta-pipeline"
    build_pipeline(pipeline).apply(qaccel_context(), module)
    return module, data


def attach_vta(module: ModuleOp, block: int = 16) -> ModuleOp:
    """Put `#accel.target<"vta", ...>` on `module` (what `attach-target` does): VTA's default
    configuration, or for another channel block one with that block and buffers small enough
    for the ISA's fields."""
    from qaccel.dialects.accel import MODULE_TARGET_ATTR
    from qaccel.targets.base import target_attr
    from qaccel.targets.vta.config import DEFAULT_CONFIG, HardwareConfig
    from qaccel.targets.vta.target import vta_target

    config = DEFAULT_CONFIG
    if block != DEFAULT_CONFIG.block:
        config = HardwareConfig(name=f"vta-block{block}", log_block=block.bit_length() - 1,
                                log_inp_buff_size=13, log_wgt_buff_size=14,
                                log_acc_buff_size=15)  # fmt: skip
        assert config.block == block, f"block {block} is not a power of two"
    module.attributes[MODULE_TARGET_ATTR] = target_attr(vta_target(config))
    return module


def print_module(module: ModuleOp) -> str:
    out = io.StringIO()
    Printer(stream=out).print_op(module)
    return out.getvalue()


@pytest.fixture(scope="session")
def mobilenet_v2_compiled():
    """MobileNetV2 1.0/224 lowered and compiled for VTA's default configuration, once per test
    process, for the modules that only read the result (shared: do not change it)."""
    from qaccel.backends.vta.codegen import compile_module

    return compile_module(vta_lowered("mobilenet_v2")[0])


@pytest.fixture(scope="session")
def oracle():
    """`run_reference(model, input_sets)`: LiteRT's reference kernels, in a subprocess."""
    pytest.importorskip("ai_edge_litert")
    from qaccel.backends.litert.oracle import run_reference

    return run_reference


# Test modules whose oracle runs start a new process each, as outside the tests: they check
# the oracle's own handling of its child (abort, timeout).
_ORACLE_OWN_PROCESS = frozenset({"test_litert_oracle"})


@pytest.fixture(scope="session")
def _litert_forkserver():
    """The LiteRT oracle's children forked from one preloaded process per test process
    (litert_forkserver.py): the same worker on the same request files, without starting Python
    and importing LiteRT each time. QACCEL_TEST_ORACLE_SERVER=0 starts a process per run."""
    import litert_forkserver
    from qaccel.backends.litert import oracle as oracle_module

    litert_forkserver.install(oracle_module)
    yield litert_forkserver
    litert_forkserver.shutdown()


@pytest.fixture(autouse=True)
def _oracle_children(request, _litert_forkserver):
    _litert_forkserver.enabled = (request.module.__name__ not in _ORACLE_OWN_PROCESS
                                  and os.environ.get("QACCEL_TEST_ORACLE_SERVER") != "0")
