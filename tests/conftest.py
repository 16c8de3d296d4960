"""Shared test helpers: fixture models, IR parsing/printing, and the LiteRT oracle."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.parser import Parser
from xdsl.printer import Printer

FIXTURE_MODELS = Path(__file__).parent / "fixtures" / "models"


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


def vta_lowered(name: str, hw_config: str = "") -> tuple[ModuleOp, bytes]:
    """A fixture model imported and run through `vta-pipeline` (for the hardware config file
    or bundled config name `hw_config`), and the model's bytes."""
    from qaccel.frontend.tflite_import import import_tflite
    from qaccel.pipeline.manager import build_pipeline, qaccel_context

    path = FIXTURE_MODELS / f"{name}.tflite"
    data = path.read_bytes()
    module = import_tflite(data, str(path))
    pipeline = f"vta-pipeline{{hw-config={hw_config}}}" if hw_config else "vta-pipeline"
    build_pipeline(pipeline).apply(qaccel_context(), module)
    return module, data


def print_module(module: ModuleOp) -> str:
    out = io.StringIO()
    Printer(stream=out).print_op(module)
    return out.getvalue()


@pytest.fixture(scope="session")
def oracle():
    """`run_reference(model, input_sets)`: LiteRT's reference kernels, in a subprocess."""
    pytest.importorskip("ai_edge_litert")
    from qaccel.backends.litert.oracle import run_reference

    return run_reference
