"""qaccel's LiteRT compiler plugin: compile times, and every model through both plugin flows.

    python benchmarks/bench_plugin.py                   # figures + every fixture and corpus model
    python benchmarks/bench_plugin.py --figures         # only the MobileNetV2 compile times
    python benchmarks/bench_plugin.py --models A.tflite ...
    python benchmarks/bench_plugin.py --sanitizers      # the C host under ASan/UBSan

Figures (MobileNetV2-1.0/224, tests/fixtures/models/mobilenet_v2.tflite), each in a fresh
process with an empty compile cache: `CompiledModel.from_file` of the ORIGINAL model with our
plugin and dispatch library (NPU | CPU) the first time (Partition + Compile through the Python
compiler), a second CompiledModel of the same model in the same process (both steps cached in
memory), one in a new process (the disk cache), and the same `from_file` on the CPU alone, the
cost of LiteRT itself.

Models: for each, AOT (`apply_plugin_main` with our plugin, then the model through our dispatch
library) and on-device compilation (`plugin_flows.run_on_device`), each compared with
BUILTIN_REF on the original model; a model qaccel puts nothing on the accelerator, or one the
plugin or LiteRT refuses, is reported with its one line.

`--sanitizers` builds the plugin (with the C-to-Python bridge), the dispatch library and
tests/litert/plugin_host.c with -fsanitize=address,undefined and runs the on-device flow of
small_cnn in that C host (which starts its own Python through the bridge). LiteRT opens
plugins with RTLD_DEEPBIND, which the ASan runtime refuses: tests/litert/no_deepbind.c,
preloaded, drops the flag.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
MOBILENET = ROOT / "tests" / "fixtures" / "models" / "mobilenet_v2.tflite"

FIGURE_CHILD = r"""
import json, os, sys, time
from ai_edge_litert.compiled_model import CompiledModel
from ai_edge_litert.cpu_kernel_mode import CpuKernelMode
from ai_edge_litert.cpu_options import CpuOptions
from ai_edge_litert.environment import Environment
from ai_edge_litert.hardware_accelerator import HardwareAccelerator as HW
from ai_edge_litert.options import Options
from qaccel.backends.litert.dispatch import dispatch_library_dir
from qaccel.backends.litert.plugin_flows import plugin_library, plugin_library_dir
model, mode, times = sys.argv[1], sys.argv[2], int(sys.argv[3])
lib = plugin_library()
cpu = CpuOptions(num_threads=1, kernel_mode=CpuKernelMode.REFERENCE)
out = []
for _ in range(times):
    if mode == "cpu":
        env = Environment.create(dispatch_library_path=str(dispatch_library_dir()))
        options = Options(HW.CPU, cpu_options=cpu)
    else:
        env = Environment.create(compiler_plugin_path=str(plugin_library_dir()),
                                 dispatch_library_path=str(dispatch_library_dir()))
        options = Options(HW.NPU | HW.CPU, cpu_options=cpu)
    t = time.perf_counter()
    compiled = CompiledModel.from_file(model, environment=env, options=options)
    out.append(time.perf_counter() - t)
    del compiled, env
from qaccel.tools import compiler_plugin
print(json.dumps({"times": out, "compiles": lib.qaccel_plugin_compile_calls(),
                  "python": compiler_plugin.COMPILES,
                  "error": lib.qaccel_plugin_last_error().decode()}))
"""


def _child(model: Path, mode: str, times: int, cache: str) -> dict:
    env = {**os.environ, "QACCEL_PLUGIN_CACHE": cache}
    out = subprocess.run([sys.executable, "-c", FIGURE_CHILD, str(model), mode, str(times)],
                         capture_output=True, text=True, env=env, timeout=1800)  # fmt: skip
    lines = [line for line in out.stdout.splitlines() if line.startswith("{")]
    if out.returncode != 0 or not lines:
        raise SystemExit(f"bench_plugin: error: child failed: {out.stderr.strip()[-500:]}")
    return json.loads(lines[-1])


def figures(model: Path) -> None:
    with tempfile.TemporaryDirectory() as cache:
        jit = _child(model, "npu", 2, cache)
        again = _child(model, "npu", 1, cache)
        cpu = _child(model, "cpu", 1, cache)
    first, second = jit["times"]
    print(f"{model.name}: CompiledModel.from_file with the plugin (NPU|CPU)")
    print(f"  first (empty cache):            {first:7.3f} s   (plugin error: {jit['error'] or '-'})")
    print(f"  second, same process:           {second:7.3f} s")
    print(f"  new process, disk cache:        {again['times'][0]:7.3f} s   (steps not cached: "
          f"{again['python']})")
    print(f"  CPU only (no plugin), for scale: {cpu['times'][0]:7.3f} s")
    print(f"  compile added by a cached second one: {second - cpu['times'][0]:+.3f} s "
          f"(same process), {again['times'][0] - cpu['times'][0]:+.3f} s (new process)")


def _inputs(model: Path, seed: int = 0) -> list[np.ndarray]:
    from qaccel.frontend.tflite_writer import read_model

    sg = read_model(model.read_bytes()).subgraphs[0]
    rng = np.random.default_rng(seed)
    xs = []
    for i in sg.inputs:
        t = sg.tensors[i]
        if t.dtype == np.float32:
            xs.append(rng.standard_normal(t.shape).astype(np.float32))
        else:
            info = np.iinfo(t.dtype)
            xs.append(rng.integers(info.min, info.max + 1, t.shape).astype(t.dtype))
    return xs


def models(paths: list[Path]) -> int:
    from qaccel.backends.litert.dispatch import run_dispatch
    from qaccel.backends.litert.oracle import run_reference
    from qaccel.backends.litert.plugin_flows import apply_plugin, run_on_device

    bad = 0
    print(f"{'model':34} {'AOT':>22} {'on-device':>22}")
    with tempfile.TemporaryDirectory() as tmp:
        for path in paths:
            x = _inputs(path)
            ref = run_reference(path, [x], keep_all_tensors=False)
            if ref.refused:
                print(f"{path.stem:34} BUILTIN_REF refuses it: {ref.refused}")
                continue
            want = ref.outputs[0]
            cells = []
            for flow in ("aot", "jit"):
                t = time.perf_counter()
                try:
                    if flow == "aot":
                        got = run_dispatch(apply_plugin(path, Path(tmp) / f"{path.stem}.tflite"), x)
                    else:
                        got = run_on_device(path, x)
                    ok = all(np.array_equal(a, b) for a, b in zip(got, want))
                    cells.append(f"{'bit-exact' if ok else 'DIFFERS'} {time.perf_counter() - t:6.1f} s")
                    bad += not ok
                except Exception as e:  # noqa: BLE001 - one line per model
                    cells.append(f"-- {str(e).splitlines()[0][:150]}")
            print(f"{path.stem:34} {cells[0]:>22} {cells[1]:>22}", flush=True)
    return bad


def sanitizers() -> int:
    from qaccel.backends.litert.runtime import (DISPATCH_SOURCES, KERNEL_DIR, MACHINE_DIR,
                                                PROGRAM_DIR, litert_library)

    plugin_dir = ROOT / "backends" / "litert" / "plugin"
    bridge = ROOT / "backends" / "litert" / "bridge"
    flags = ["-g", "-O1", "-fno-omit-frame-pointer", "-fsanitize=address,undefined",
             "-fno-sanitize-recover=all", "-Wall", "-Wextra", "-Werror", "-std=c99"]  # fmt: skip
    import sysconfig

    libpython = str(Path(sysconfig.get_config_var("LIBDIR")) / sysconfig.get_config_var("LDLIBRARY"))
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        (tmp / "plugin").mkdir()
        (tmp / "dispatch").mkdir()
        subprocess.run(["gcc", *flags, "-fPIC", "-shared", "-fvisibility=hidden",
                        f"-I{KERNEL_DIR}", f"-I{plugin_dir}", f"-I{bridge}",
                        f'-DQACCEL_PYTHON="{sys.executable}"', f'-DQACCEL_LIBPYTHON="{libpython}"',
                        str(plugin_dir / "qaccel_plugin.c"), str(bridge / "qaccel_pybridge.c"),
                        "-o", str(tmp / "plugin" / "libLiteRtCompilerPlugin_Qaccel.so"), "-ldl",
                        "-lpthread"], check=True)  # fmt: skip
        subprocess.run(["gcc", *flags, "-fPIC", "-shared", "-fvisibility=hidden",
                        f"-I{KERNEL_DIR}", f"-I{PROGRAM_DIR}", f"-I{MACHINE_DIR}",
                        *(str(p) for p in DISPATCH_SOURCES if p.suffix == ".c"),
                        "-o", str(tmp / "dispatch" / "libLiteRtDispatch_Qaccel.so"), "-lm"],
                       check=True)  # fmt: skip
        lrt = litert_library().parent
        subprocess.run(["gcc", *flags, f"-I{KERNEL_DIR}", str(ROOT / "tests" / "litert" / "plugin_host.c"),
                        f"-L{lrt}", "-lLiteRt", f"-Wl,-rpath,{lrt}", "-ldl", "-o", str(tmp / "host")],
                       check=True)  # fmt: skip
        subprocess.run(["gcc", "-std=c99", "-Wall", "-Wextra", "-Werror", "-fPIC", "-shared",
                        str(ROOT / "tests" / "litert" / "no_deepbind.c"), "-o",
                        str(tmp / "no_deepbind.so"), "-ldl"], check=True)  # fmt: skip
        libasan = subprocess.run(["gcc", "-print-file-name=libasan.so"], capture_output=True,
                                 text=True, check=True).stdout.strip()  # fmt: skip
        model = ROOT / "tests" / "fixtures" / "models" / "small_cnn.tflite"
        x = _inputs(model, seed=7)[0]
        (tmp / "in.bin").write_bytes(x.tobytes())
        # LiteRT hands the plugin its serialized partitions from operator new[]; the plugin
        # frees them with free() (the same allocator underneath), which ASan would flag.
        # LiteRT opens plugins with RTLD_DEEPBIND, which ASan refuses: no_deepbind.so drops it.
        env = {**os.environ, "QACCEL_PLUGIN_CACHE": "off",
               "LD_PRELOAD": f"{tmp / 'no_deepbind.so'}:{libasan}",
               "ASAN_OPTIONS": "detect_leaks=0:alloc_dealloc_mismatch=0:abort_on_error=1:"
                               "verify_asan_link_order=0",
               "UBSAN_OPTIONS": "print_stacktrace=1:halt_on_error=1"}  # fmt: skip
        run = subprocess.run([str(tmp / "host"), str(model),
                              str(tmp / "plugin" / "libLiteRtCompilerPlugin_Qaccel.so"),
                              str(tmp / "dispatch" / "libLiteRtDispatch_Qaccel.so"),
                              str(tmp / "in.bin"), "1x32x32x3", str(tmp / "out.bin"), "1x10"],
                             capture_output=True, text=True, env=env, timeout=1800)  # fmt: skip
        from qaccel.backends.litert.oracle import run_reference

        want = run_reference(model, [[x]], keep_all_tensors=False).outputs[0][0]
        clean = "Sanitizer" not in run.stderr and "runtime error" not in run.stderr
        exact = run.returncode == 0 and (tmp / "out.bin").read_bytes() == want.tobytes()
        print(f"C host under ASan/UBSan: exit {run.returncode}, "
              f"{'clean' if clean else 'SANITIZER REPORT'}, {'bit-exact' if exact else 'NOT bit-exact'}")
        if not (clean and exact):
            print(run.stderr[-3000:])
        return 0 if clean and exact else 1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--figures", action="store_true", help="only the compile-time figures")
    parser.add_argument("--sanitizers", action="store_true", help="only the ASan/UBSan C host run")
    parser.add_argument("--models", nargs="*", type=Path, help="these models instead of all")
    args = parser.parse_args()
    if args.sanitizers:
        return sanitizers()
    figures(MOBILENET)
    if args.figures:
        return 0
    paths = args.models or sorted((ROOT / "tests" / "fixtures" / "models").glob("*.tflite")) + sorted(
        (ROOT / "tests" / "fixtures" / "corpus").glob("*.tflite"))
    with tempfile.TemporaryDirectory() as cache:
        os.environ["QACCEL_PLUGIN_CACHE"] = cache
        return 1 if models(paths) else 0


if __name__ == "__main__":
    sys.exit(main())
