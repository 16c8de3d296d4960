"""What `qaccel-compile` does after the emission, piece by piece (CPU seconds, median of N).

    python benchmarks/bench_artifact_tail.py [--repeat N] [MODEL.tflite]

Compiles the model once in this process (default MobileNetV2 1.0/224), then measures, each in
a freshly forked child as `qaccel-compile`'s helpers run (cold caches, copy-on-write pages):

- host IR: `_write_host_ir`'s host.mlir (`module_pieces` written and hashed as it is made),
  `module_bytes` (host.mlir's bytes whole), and `module_text(...).encode()` for comparison;
- LiteRT models of the original .tflite: the plain `litert_files` (what a helper started after
  the emission did), and its two steps as `qaccel-compile` runs them now:
  `prepare_litert_files` (begun once the module is final, alongside the emission) and
  `finish_litert_files` (once fed the emitted functions), without and with writing and
  hashing the files (`_written`);
- `write_artifact` in the caller, its main thread only (the DRAM images' .npz are made on a
  thread beside it), with the helpers' files given as written.

CPU time is the figure to compare on a loaded machine.
"""

from __future__ import annotations

import argparse
import os
import pickle
import resource
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT = ROOT / "tests/fixtures/models/mobilenet_v2.tflite"


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def _in_child(fn) -> float:
    """`fn()`'s CPU seconds (user + system) in a forked child."""
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read_fd)
        start = _cpu()
        fn()
        os.write(write_fd, pickle.dumps(_cpu() - start))
        os._exit(0)
    os.close(write_fd)
    with os.fdopen(read_fd, "rb") as pipe:
        data = pipe.read()
    os.waitpid(pid, 0)
    return pickle.loads(data)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("model", nargs="?", type=Path, default=DEFAULT)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    os.environ["QACCEL_COMPILE_JOBS"] = "1"

    import gc

    from qaccel.backends.litert import partitions
    from qaccel.backends.vta import artifact
    from qaccel.tools import qaccel_compile as qc

    compiled, source = qc.compile_model(args.model)
    gc.collect()
    gc.freeze()
    gc.disable()
    module, names = compiled.module, set(compiled.functions)
    fed = pickle.dumps(qc._emitted(compiled))  # as the helper is fed
    compiler = qc._partition_compiler(compiled)
    tmp = Path(tempfile.mkdtemp())

    def prepared():
        return partitions.prepare_litert_files(source, module, names)

    def finish_only():
        ready = prepared()
        start = _cpu()
        partitions.finish_litert_files(ready, compiled, compiler, joined=False)
        return _cpu() - start

    def finish_and_write():
        ready = prepared()
        staging = artifact.Staging(tmp / f"w{os.getpid()}")
        start = _cpu()
        pickle.loads(fed)  # what the helper receives
        files, _ = partitions.finish_litert_files(ready, compiled, compiler, joined=False)
        qc._written(files, staging)
        spent = _cpu() - start
        staging.discard()
        return spent

    def plain_and_write():
        staging = artifact.Staging(tmp / f"p{os.getpid()}")
        qc._write_aot_models(compiled, source, staging)
        staging.discard()

    def write_artifact_main():
        out = tmp / f"a{os.getpid()}"
        staging = artifact.Staging(out)
        start = time.thread_time()
        artifact.write_artifact(compiled, out, source, host_text=artifact.Written("0" * 64),
                                extra={}, staging=staging)  # fmt: skip
        spent = time.thread_time() - start
        shutil.rmtree(out)
        return spent

    def child_value(fn) -> float:
        read_fd, write_fd = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(read_fd)
            os.write(write_fd, pickle.dumps(fn()))
            os._exit(0)
        os.close(write_fd)
        with os.fdopen(read_fd, "rb") as pipe:
            data = pipe.read()
        os.waitpid(pid, 0)
        return pickle.loads(data)

    def host_ir_written():
        staging = artifact.Staging(tmp / f"h{os.getpid()}")
        staging.write("host.mlir", artifact.module_pieces(module))
        staging.discard()

    rows = {
        "host IR: written as made (helper)": lambda: _in_child(host_ir_written),
        "host IR: module_bytes": lambda: _in_child(lambda: artifact.module_bytes(module)),
        "host IR: module_text().encode()": lambda: _in_child(
            lambda: artifact.module_text(module).encode()),
        "LiteRT plain, written (old helper)": lambda: _in_child(plain_and_write),
        "LiteRT prepare (before emission ends)": lambda: _in_child(prepared),
        "LiteRT finish, not written": lambda: child_value(finish_only),
        "LiteRT finish + write + hash (after)": lambda: child_value(finish_and_write),
        "write_artifact, main thread": lambda: child_value(write_artifact_main),
    }
    print(f"{args.model.name}: CPU seconds, median of {args.repeat} (each in a fresh child)")
    try:
        for name, measure in rows.items():
            values = [measure() for _ in range(args.repeat)]
            print(f"  {name:40s} {statistics.median(values):.3f}  (best {min(values):.3f})")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    sys.stdout.flush()


if __name__ == "__main__":
    main()
