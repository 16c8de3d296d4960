"""libqaccel_stream against its Python reference on whole models (a long sweep: the corpus).

    python benchmarks/check_emit_c.py [MODEL.tflite ...]     # default: tests/fixtures/corpus

Each model is imported, run through `vta-pipeline` at both bundled configurations and
compiled (`compile_module`, in this process) with every GEMM layer emitted twice, by the
library (`vta_gemm_emit`) and by the emitter's Python step loop (`run_py`), and every stream
the Python emitters describe encoded twice: by the library and by `emit.resolve_stream_py`.
Any difference stops the run (exit 1); the table gives the GEMM layers and the streams
compared per model and configuration, and how many streams used the micro-op ring.
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
    from qaccel.lowering.vta.emit import _Emitter, _Stream
    from qaccel.pipeline.manager import build_pipeline, qaccel_context
    from qaccel.targets.vta.config import HardwareConfig

    if not cstream.available():
        sys.exit(f"check_emit_c: libqaccel_stream: {cstream.unavailable_reason()}")
    models = [Path(a) for a in sys.argv[1:]] or sorted((ROOT / "tests/fixtures/corpus").glob(
        "*.tflite"))
    original = _Stream.encode_stream
    seen = {"gemm": 0, "streams": 0, "ring": 0}

    def checked(self):
        prog, loads = original(self)
        ref, ref_loads = self.encode_stream_py()
        if not (np.array_equal(prog.words, ref.words) and np.array_equal(prog.uops, ref.uops)
                and loads == ref_loads):  # fmt: skip
            raise SystemExit(f"check_emit_c: stream {seen['streams']} differs")
        seen["streams"] += 1
        seen["ring"] += loads > 1
        return prog, loads

    def both_ways(self):
        prog = self.run_c()
        twin = _Emitter(self.layer, self.s, self.c)
        twin.regions, twin.constants = dict(self.regions), self.constants
        twin.dram_size, twin.constants_offset = self.dram_size, self.constants_offset
        ref = twin.run_py()
        if prog is None or not (np.array_equal(prog.program.words, ref.program.words)
                                and np.array_equal(prog.uops, ref.uops)
                                and prog.uop_loads == ref.uop_loads):  # fmt: skip
            raise SystemExit(f"check_emit_c: GEMM layer {seen['gemm']} differs")
        seen["gemm"] += 1
        return prog

    _Stream.encode_stream = checked
    _Emitter.run = both_ways
    print(f"{'model':28} {'config':18} {'gemm':>5} {'streams':>7} {'ring':>5}")
    for model in models:
        for hw in CONFIGS:
            seen.update(gemm=0, streams=0, ring=0)
            try:
                module = import_tflite(model.read_bytes(), str(model))
            except TFLiteImportError as e:  # e.g. int16x8: refused by design
                print(f"{model.name:28} {hw:18} skipped: {str(e).splitlines()[0][-60:]}")
                continue
            build_pipeline(f"vta-pipeline{{config={hw}}}").apply(qaccel_context(), module)
            compile_module(module, HardwareConfig.from_json(hw))
            print(f"{model.name:28} {hw:18} {seen['gemm']:5d} {seen['streams']:7d} "
                  f"{seen['ring']:5d}", flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
