"""What the program format's checksum costs: CRC-32 of each accelerator function's program
(`backends/vta/program/writer.py`, format version 2) computed by the C runner when it opens the program
(`qaccel_program_checksum`) and by the writer (`writer.seal`, zlib), against the whole open
(every check) and one run.

    python benchmarks/bench_program_checksum.py [--model tests/fixtures/models/mobilenet_v2.tflite]
                                                [--repeat 50]

Prints per program its size, the C checksum time, zlib's, the open time and one run's time
(medians of --repeat).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
import zlib
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]


def _median_ms(f, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        f()
        times.append(time.perf_counter() - t)
    return 1e3 * statistics.median(times)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default=str(ROOT / "tests" / "fixtures" / "models" / "mobilenet_v2.tflite"))
    ap.add_argument("--repeat", type=int, default=50)
    args = ap.parse_args(argv)
    from qaccel.backends.litert import aot
    from qaccel.backends.vta.program_runner import Program, checksum
    from qaccel.frontend.tflite_writer import read_model
    from qaccel.tools.qaccel_compile import run

    with tempfile.TemporaryDirectory() as tmp:
        art = Path(tmp) / "art"
        if run([args.model, "-o", str(art), "--quiet"]) != 0:
            return 1
        sg = read_model((art / aot.AOT_FILE).read_bytes()).subgraphs[0]
        blobs = [bytes(sg.tensors[op.inputs[-1]].data_bytes()) for op in sg.operators
                 if op.custom_code == aot.CUSTOM_CODE]  # fmt: skip
    total = {"bytes": 0, "c": 0.0, "zlib": 0.0, "open": 0.0, "run": 0.0}
    print(f"{'program':>8} {'bytes':>10} {'C crc ms':>9} {'zlib ms':>8} {'open ms':>8} "
          f"{'run ms':>8} {'crc/open':>8}")  # fmt: skip
    for k, blob in enumerate(blobs):
        c = _median_ms(lambda: checksum(blob), args.repeat)
        z = _median_ms(lambda: zlib.crc32(blob), args.repeat)
        opened = _median_ms(lambda: Program(blob).close(), args.repeat)
        program = Program(blob)
        state = program.state()
        rng = np.random.default_rng(0)
        xs = [rng.integers(-128, 128, shape).astype(dtype) for shape, dtype in program.inputs]
        state.run(xs)  # the layers checked and timed once
        ran = _median_ms(lambda: state.run(xs), max(3, args.repeat // 10))
        print(f"{k:>8} {len(blob):>10} {c:>9.3f} {z:>8.3f} {opened:>8.3f} {ran:>8.2f} "
              f"{c / opened:>8.0%}")  # fmt: skip
        for key, v in zip(total, (len(blob), c, z, opened, ran)):
            total[key] += v
    print(f"{'total':>8} {total['bytes']:>10} {total['c']:>9.3f} {total['zlib']:>8.3f} "
          f"{total['open']:>8.3f} {total['run']:>8.2f} {total['c'] / total['open']:>8.0%}; C "
          f"CRC-32 {total['bytes'] / total['c'] / 1e6:.2f} GB/s")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
