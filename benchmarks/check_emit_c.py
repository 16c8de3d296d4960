"""libqaccel_stream against its Python reference on whole models (a long sweep: the corpus).

    python benchmarks/check_emit_c.py [MODEL.tflite ...]     # default: tests/fixtures/corpus

Each model is imported, run through `vta-pipeline` at both bundled configurations and
compiled (`compile_module`, in this process) with every layer's stream encoded twice: by the
library and by `emit.resolve_stream_py`. Any difference stops the run (exit 1); the table
gives the streams compared per model and configuration, and how many used the micro-op ring.
tests/test_vta_cstream.py does the same on the fixture models.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
CONFIGS = ("vta-default", "vta-store-requant")


def main() -> None:
    os.environ["QACCEL_COMPILE_JOBS"] = "1"
    from qaccel.backends.vta.codegen import compile_module
    from qaccel.frontend.errors import TFLiteImportError
    from qaccel.frontend.tflite_import import import_tflite
    from qaccel.lowering.vta import cstream
    from qaccel.lowering.vta.emit import _Stream
    from qaccel.pipeline.manager import build_pipeline, qaccel_context
    from qaccel.targets.vta.config import HardwareConfig

    if not cstream.available():
        sys.exit(f"check_emit_c: libqaccel_stream: {cstream.unavailable_reason()}")
    models = [Path(a) for a in sys.argv[1:]] or sorted((ROOT / "tests/fixtures/corpus").glob(
        "*.tflite"))
    original = _Stream.encode_stream
    seen = {"streams": 0, "ring": 0}

    def checked(self):
        prog, loads = original(self)
        ref, ref_loads = self.encode_stream_py()
        if not (np.array_equal(prog.words, ref.words) and np.array_equal(prog.uops, ref.uops)
                and loads == ref_loads):  # fmt: skip
            raise SystemExit(f"check_emit_c: stream {seen['streams']} differs")
        seen["streams"] += 1
        seen["ring"] += loads > 1
        return prog, loads

    _Stream.encode_stream = checked
    print(f"{'model':28} {'config':18} {'streams':>7} {'ring':>5}")
    for model in models:
        for hw in CONFIGS:
            seen.update(streams=0, ring=0)
            try:
                module = import_tflite(model.read_bytes(), str(model))
            except TFLiteImportError as e:  # e.g. int16x8: refused by design
                print(f"{model.name:28} {hw:18} skipped: {str(e).splitlines()[0][-60:]}")
                continue
            build_pipeline(f"vta-pipeline{{config={hw}}}").apply(qaccel_context(), module)
            compile_module(module, HardwareConfig.from_json(hw))
            print(f"{model.name:28} {hw:18} {seen['streams']:7d} {seen['ring']:5d}", flush=True)


if __name__ == "__main__":
    main()
