"""Every C host of the LiteRT flows and the classic delegate under AddressSanitizer and UBSan.

    python benchmarks/bench_sanitizers.py [MODEL.tflite] [--keep DIR]

Builds with `-fsanitize=address,undefined -fno-sanitize-recover=all` (C99, every warning an
error) and runs on the model (default tests/fixtures/models/small_cnn.tflite, one int8 input
and one int8 output), each compared bit for bit with LiteRT's BUILTIN_REF:

- `host`: tests/litert/host.c linked with the QACCEL_VTA kernel's sources, on the custom-op
  flavour `model.qaccel.tflite` (qaccel-compile);
- `dispatch_host`: tests/litert/dispatch_host.c, libLiteRt.so only, loading the sanitized
  dispatch library, on `model.qaccel.dispatch.tflite`;
- `plugin_host`: tests/litert/plugin_host.c compiling the ORIGINAL model on the device through
  the sanitized compiler plugin (and its C-to-Python bridge, which starts the environment's
  Python inside the host) and running it through the sanitized dispatch library, once with the
  configuration from the environment, once from the plugin options (`config=vta-default`);
- `delegate`: libqaccel_delegate built sanitized, in a Python with ASan preloaded, with the
  artifact and compiled on the spot;
- `delegate_host`: tests/litert/delegate_host.c, libLiteRt.so only, the sanitized delegate
  compiling on the spot (its bridge starting the environment's Python inside the host) as an
  accelerator of LiteRT's CompiledModel, on the ORIGINAL model and on composite.tflite (the
  composite nodes claimed with their decompositions), once with a configuration option.

A line per run: exit code, `clean` or `SANITIZER REPORT`, bit-exact or not, seconds. Exit 1 when
any run is not clean and bit-exact. The suite runs the dispatch host and the delegate the same
way (tests/test_litert_aot.py, tests/test_litert_delegate.py); the plugin host's embedded Python
under ASan takes too long for it.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
HOSTS = ROOT / "tests" / "litert"
FLAGS = ["-g", "-O1", "-fno-omit-frame-pointer", "-fsanitize=address,undefined",
         "-fno-sanitize-recover=all", "-Wall", "-Wextra", "-Werror", "-std=c99"]  # fmt: skip


def _gcc(*args) -> None:
    subprocess.run(["gcc", *FLAGS, *map(str, args)], check=True)


def _print_file(name: str) -> str:
    return subprocess.run(["gcc", f"-print-file-name={name}"], capture_output=True, text=True,
                          check=True).stdout.strip()  # fmt: skip


def _report(what: str, run: subprocess.CompletedProcess, exact: bool, seconds: float) -> bool:
    clean = "Sanitizer" not in run.stderr and "runtime error" not in run.stderr
    print(f"{what:34} exit {run.returncode}  {'clean' if clean else 'SANITIZER REPORT':16} "
          f"{'bit-exact' if exact else 'NOT bit-exact':13} {seconds:6.1f} s", flush=True)
    if not (clean and exact and run.returncode == 0):
        print(run.stderr[-3000:])
    return clean and exact and run.returncode == 0


_DELEGATE_RUN = """
import sys, numpy as np
from qaccel.backends.litert.delegate import delegate_run
model, artifact, inp, out = sys.argv[1:5]
x = [[np.load(inp)]]
a = delegate_run(model, artifact, x)
b = delegate_run(model, None, x)
np.save(out, np.stack([a["outputs"][0][0], b["outputs"][0][0]]))
c = b["counters"]
print(a["counters"]["invocations"], c["invocations"], c["compiled_subgraphs"])
"""


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("model", nargs="?", type=Path,
                    default=ROOT / "tests" / "fixtures" / "models" / "small_cnn.tflite")
    ap.add_argument("--keep", type=Path, help="build and run in DIR (kept) instead of a temporary one")
    args = ap.parse_args(argv)

    from qaccel.backends.litert.delegate import DELEGATE_SOURCES
    from qaccel.backends.litert.oracle import run_reference
    from qaccel.backends.litert.runtime import (DISPATCH_SOURCES, KERNEL_DIR, MACHINE_DIR,
                                                PROGRAM_DIR, SOURCES, litert_library)
    from qaccel.frontend.tflite_writer import read_model
    from qaccel.tools.qaccel_compile import run as compile_run

    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = args.keep or Path(tmp_name)
        tmp.mkdir(parents=True, exist_ok=True)
        sg = read_model(args.model.read_bytes()).subgraphs[0]
        (t_in,), (t_out,) = ([sg.tensors[i] for i in sg.inputs], [sg.tensors[i] for i in sg.outputs])
        x = np.random.default_rng(7).integers(-128, 128, t_in.shape).astype(np.int8)
        (tmp / "in.bin").write_bytes(x.tobytes())
        np.save(tmp / "in.npy", x)
        shape_in, shape_out = ("x".join(map(str, t.shape)) for t in (t_in, t_out))
        want = run_reference(args.model, [[x]], keep_all_tensors=False).outputs[0][0].tobytes()
        artifact = tmp / "artifact"
        if compile_run([str(args.model), "-o", str(artifact), "--quiet"]) != 0:
            return 1
        lrt = litert_library().parent
        plugin_dir, bridge = ROOT / "backends" / "litert" / "plugin", ROOT / "backends" / "litert" / "bridge"
        for sub in ("plugin", "dispatch", "delegate"):
            (tmp / sub).mkdir(exist_ok=True)
        includes = [f"-I{d}" for d in (KERNEL_DIR, PROGRAM_DIR, MACHINE_DIR, plugin_dir, bridge)]
        libpython = str(Path(sysconfig.get_config_var("LIBDIR")) / sysconfig.get_config_var("LDLIBRARY"))
        t0 = time.perf_counter()
        _gcc(*includes, HOSTS / "host.c", *(p for p in SOURCES if p.suffix == ".c"), f"-L{lrt}",
             "-lLiteRt", f"-Wl,-rpath,{lrt}", "-ldl", "-lm", "-lpthread", "-o", tmp / "host")
        _gcc(*includes, HOSTS / "dispatch_host.c", f"-L{lrt}", "-lLiteRt", f"-Wl,-rpath,{lrt}",
             "-o", tmp / "dispatch_host")
        _gcc(*includes, HOSTS / "plugin_host.c", f"-L{lrt}", "-lLiteRt", f"-Wl,-rpath,{lrt}", "-ldl",
             "-o", tmp / "plugin_host")
        _gcc("-fPIC", "-shared", "-fvisibility=hidden", *includes,
             *(p for p in DISPATCH_SOURCES if p.suffix == ".c"), "-o",
             tmp / "dispatch" / "libLiteRtDispatch_Qaccel.so", "-lm", "-lpthread")
        _gcc("-fPIC", "-shared", "-fvisibility=hidden", *includes, f'-DQACCEL_PYTHON="{sys.executable}"',
             f'-DQACCEL_LIBPYTHON="{libpython}"', plugin_dir / "qaccel_plugin.c",
             bridge / "qaccel_pybridge.c", "-o", tmp / "plugin" / "libLiteRtCompilerPlugin_Qaccel.so",
             "-ldl", "-lpthread")
        _gcc("-fPIC", "-shared", "-fvisibility=hidden", *includes,
             f'-DQACCEL_PYTHON="{sys.executable}"', f'-DQACCEL_LIBPYTHON="{libpython}"',
             *(p for p in DELEGATE_SOURCES if p.suffix == ".c"), "-o",
             tmp / "delegate" / "libqaccel_delegate.so", "-ldl", "-lm", "-lpthread")
        _gcc(*includes, HOSTS / "delegate_host.c", f"-L{lrt}", "-lLiteRt", f"-Wl,-rpath,{lrt}",
             "-ldl", "-o", tmp / "delegate_host")
        subprocess.run(["gcc", "-std=c99", "-Wall", "-Wextra", "-Werror", "-fPIC", "-shared",
                        str(HOSTS / "no_deepbind.c"), "-o", str(tmp / "no_deepbind.so"), "-ldl"],
                       check=True)  # fmt: skip
        print(f"built in {time.perf_counter() - t0:.1f} s", flush=True)
        asan = _print_file("libasan.so")
        base = {**os.environ, "ASAN_OPTIONS": "detect_leaks=0:abort_on_error=1",
                "UBSAN_OPTIONS": "print_stacktrace=1:halt_on_error=1",
                "QACCEL_PLUGIN_CACHE": str(tmp / "cache")}  # fmt: skip
        # LiteRT hands the plugin its serialized partitions from operator new[] and the plugin
        # frees them with free() (the same allocator underneath), which ASan would flag; LiteRT
        # opens plugins with RTLD_DEEPBIND, which ASan refuses: no_deepbind.so drops it.
        plugin_env = {**base, "LD_PRELOAD": f"{tmp / 'no_deepbind.so'}:{asan}",
                      "ASAN_OPTIONS": "detect_leaks=0:alloc_dealloc_mismatch=0:abort_on_error=1:"
                                      "verify_asan_link_order=0"}  # fmt: skip
        out = tmp / "out.bin"
        ok = True

        def host(what, cmd, env):
            nonlocal ok
            out.unlink(missing_ok=True)
            t = time.perf_counter()
            run = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, env=env,
                                 timeout=3600)  # fmt: skip
            exact = out.is_file() and out.read_bytes() == want
            ok &= _report(what, run, exact, time.perf_counter() - t)

        host("host (custom-op kernel)", [tmp / "host", artifact / "model.qaccel.tflite",
                                         tmp / "in.bin", shape_in, out, shape_out], base)
        host("dispatch_host (dispatch library)",
             [tmp / "dispatch_host", artifact / "model.qaccel.dispatch.tflite", tmp / "dispatch",
              tmp / "in.bin", shape_in, out, shape_out], base)
        plugin_args = [tmp / "plugin_host", args.model, tmp / "plugin" / "libLiteRtCompilerPlugin_Qaccel.so",
                       tmp / "dispatch" / "libLiteRtDispatch_Qaccel.so", tmp / "in.bin", shape_in,
                       out, shape_out]  # fmt: skip
        host("plugin_host (environment)", plugin_args, plugin_env)
        host("plugin_host (plugin options)", [*plugin_args, "config=vta-default"],
             {**plugin_env, "QACCEL_PLUGIN_CONFIG": "no-such-configuration"})
        # libstdc++ preloaded too: ASan must find the __cxa_throw LiteRT's errors go through
        env = {**base, "LD_PRELOAD": f"{asan} {_print_file('libstdc++.so.6')}",
               "QACCEL_LITERT_DELEGATE_LIB": str(tmp / "delegate" / "libqaccel_delegate.so")}
        t = time.perf_counter()
        run = subprocess.run([sys.executable, "-c", _DELEGATE_RUN, str(args.model), str(artifact),
                              str(tmp / "in.npy"), str(tmp / "delegate.npy")],
                             capture_output=True, text=True, env=env, timeout=3600)  # fmt: skip
        exact = (tmp / "delegate.npy").is_file() and all(
            a.tobytes() == want for a in np.load(tmp / "delegate.npy"))
        ok &= _report("delegate (artifact, on the spot)", run, exact, time.perf_counter() - t)
        # The C host: no Python until the delegate's bridge starts one (under the host's ASan;
        # C++ frees of what operator new[] made in LiteRT are not ours to report).
        host_env = {**base, "ASAN_OPTIONS": "detect_leaks=0:alloc_dealloc_mismatch=0:"
                                            "abort_on_error=1:verify_asan_link_order=0"}
        delegate_lib = tmp / "delegate" / "libqaccel_delegate.so"
        host("delegate_host (on the spot)", [tmp / "delegate_host", args.model, delegate_lib,
                                             tmp / "in.bin", shape_in, out, shape_out], host_env)
        host("delegate_host (config option)", [tmp / "delegate_host", args.model, delegate_lib,
                                               tmp / "in.bin", shape_in, out, shape_out,
                                               "vta-default"], host_env)  # fmt: skip
        composite = ROOT / "tests" / "fixtures" / "models" / "composite.tflite"
        xc = np.random.default_rng(7).integers(-128, 128, (1, 16, 16, 8)).astype(np.int8)
        (tmp / "in_composite.bin").write_bytes(xc.tobytes())
        want = run_reference(composite, [[xc]], keep_all_tensors=False).outputs[0][0].tobytes()
        host("delegate_host (composite.tflite)", [tmp / "delegate_host", composite, delegate_lib,
                                                  tmp / "in_composite.bin", "1x16x16x8", out,
                                                  "1x8x8x16"], host_env)  # fmt: skip
    print("all clean and bit-exact" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
