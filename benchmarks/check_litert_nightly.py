"""Our dispatch library under a newer LiteRT: a compiled model's DISPATCH_OPs through another
LiteRT's `CompiledModel`, compared with LiteRT's reference kernels (BUILTIN_REF).

    python benchmarks/check_litert_nightly.py --python /path/to/venv/bin/python
                                              [MODEL.tflite] [--out DIR] [--seed N]
                                              [--library-dir DIR] [--plugin aot|on-device]

Not part of the test suite: it needs a second Python environment holding the LiteRT to check
(e.g. `python3 -m venv V && V/bin/pip install ai-edge-litert-nightly numpy`; it needs no qaccel).
This Python (with qaccel and its own ai-edge-litert) compiles MODEL (default
tests/fixtures/models/small_cnn.tflite) with `qaccel-compile MODEL -o OUT`, builds our dispatch
library (`dispatch_library_dir()`) and computes the reference outputs with BUILTIN_REF; a child
of `--python` then runs OUT/model.qaccel.dispatch.tflite with that library's directory as the
environment's dispatch library directory (NPU | CPU, CPU reference kernels), as README's
"Deploying with LiteRT" shows, and reports the LiteRT version, its log lines about loading the
dispatch library, how many programs our library ran and whether the outputs are bit-exact.
Exit status 0 only when every output is bit-exact and every DISPATCH_OP ran in our library.

`--plugin aot` compiles with our compiler plugin instead, through the other LiteRT's
`apply_plugin_main` (which starts this environment's Python through the plugin's bridge);
`--plugin on-device` has the other LiteRT's `CompiledModel` compile the ORIGINAL model through
the plugin (qaccel is imported from this environment's site-packages, after the other
environment's own packages). With ai-edge-litert-nightly 2.4.0.dev20261026 both load the plugin
through `LiteRtCompilerPluginQueryInterface` and are bit-exact on small_cnn (2 of 2 programs ran).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_MODEL = ROOT / "tests" / "fixtures" / "models" / "small_cnn.tflite"

# Runs in the other Python: only LiteRT, numpy and ctypes (no qaccel there).
CHILD = r"""
import ctypes, glob, json, os, sys
import numpy as np
req = json.load(open(sys.argv[1]))
report = {}
try:
    from importlib.metadata import distributions
    report["litert"] = sorted(f"{d.metadata['Name']} {d.version}" for d in distributions()
                              if "litert" in (d.metadata["Name"] or "").lower())
except Exception as e:
    report["litert"] = [f"unknown ({e})"]
from ai_edge_litert.compiled_model import CompiledModel
from ai_edge_litert.cpu_kernel_mode import CpuKernelMode
from ai_edge_litert.cpu_options import CpuOptions
from ai_edge_litert.environment import Environment
from ai_edge_litert.hardware_accelerator import HardwareAccelerator as HW
from ai_edge_litert.options import Options
lib = ctypes.CDLL(glob.glob(os.path.join(req["dir"], "libLiteRtDispatch_Qaccel*.so"))[0])
lib.qaccel_litert_last_error.restype = ctypes.c_char_p
before = lib.qaccel_dispatch_invocations()
if req.get("plugin_dir"):  # on-device compilation: the plugin calls qaccel in this Python
    import site
    site.addsitedir(req["site"])  # after this environment's own packages (its numpy wins)
    plugin = ctypes.CDLL(glob.glob(os.path.join(req["plugin_dir"], "libLiteRtCompilerPlugin_Qaccel*.so"))[0])
    plugin.qaccel_plugin_last_error.restype = ctypes.c_char_p
    env = Environment.create(compiler_plugin_path=req["plugin_dir"], dispatch_library_path=req["dir"])
else:
    plugin = None
    env = Environment.create(dispatch_library_path=req["dir"])
options = Options(HW.NPU | HW.CPU, cpu_options=CpuOptions(num_threads=1,
                                                          kernel_mode=CpuKernelMode.REFERENCE))
model = CompiledModel.from_file(req["model"], environment=env, options=options)
ins, outs = model.create_input_buffers(0), model.create_output_buffers(0)
for buf, path in zip(ins, req["inputs"]):
    buf.write(np.load(path))
model.run_by_index(0, ins, outs)
for k, (buf, (shape, dtype)) in enumerate(zip(outs, req["outputs"])):
    np.save(os.path.join(req["tmp"], f"out{k}.npy"),
            buf.read(int(np.prod(shape)), np.dtype(dtype)).reshape(shape))
report["invocations"] = lib.qaccel_dispatch_invocations() - before
report["error"] = lib.qaccel_litert_last_error().decode()
if plugin is not None:
    report["error"] = report["error"] or plugin.qaccel_plugin_last_error().decode()
    report["programs"] = plugin.qaccel_plugin_last_programs()
    report["compiles"] = plugin.qaccel_plugin_compile_calls()
print("REPORT " + json.dumps(report))
"""


def _exports(library: Path) -> list[str]:
    try:
        out = subprocess.run(["nm", "-D", "--defined-only", str(library)], capture_output=True,
                             text=True, check=True).stdout  # fmt: skip
    except (OSError, subprocess.CalledProcessError) as e:
        return [f"(nm failed: {e})"]
    return sorted(w.split("@")[0] for w in out.split() if w.startswith("LiteRtDispatch"))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("model", nargs="?", type=Path, default=DEFAULT_MODEL)
    ap.add_argument("--python", required=True, help="the Python of the LiteRT to check")
    ap.add_argument("--out", type=Path, help="artifact directory (default: a temporary one)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--library-dir", type=Path,
                    help="folder of the dispatch library to check (default: ours, built now)")
    ap.add_argument("--plugin", choices=("aot", "on-device"),
                    help="compile with our compiler plugin instead of qaccel-compile: 'aot' with "
                         "the other LiteRT's apply_plugin_main, 'on-device' with its "
                         "CompiledModel on the original model (qaccel imported from this "
                         "environment's site-packages)")
    args = ap.parse_args(argv)

    from qaccel.backends.litert.dispatch import dispatch_library_dir
    from qaccel.backends.litert.names import DISPATCH_FILE
    from qaccel.backends.litert.oracle import run_reference
    from qaccel.frontend.tflite_writer import read_model

    with tempfile.TemporaryDirectory(prefix="qaccel-nightly-") as tmp_name:
        tmp = Path(tmp_name)
        out = args.out or tmp / "out"
        plugin_dir = None
        if args.plugin:
            from qaccel.backends.litert.plugin_flows import plugin_library_dir

            plugin_dir = plugin_library_dir().resolve()
            print(f"compiler plugin: {next(plugin_dir.glob('libLiteRtCompilerPlugin_Qaccel*.so'))}")
        if args.plugin == "aot":
            other = subprocess.run([args.python, "-c", "import ai_edge_litert, os; "
                                    "print(os.path.dirname(ai_edge_litert.__file__))"],
                                   capture_output=True, text=True, check=True).stdout.strip()  # fmt: skip
            out.mkdir(parents=True, exist_ok=True)
            dispatch_model = out / "model.plugin.tflite"
            applied = subprocess.run([os.path.join(other, "tools", "apply_plugin_main"),
                                      "--cmd=apply", f"--model={args.model}", f"--o={dispatch_model}",
                                      "--soc_manufacturer=Qaccel", "--soc_model=VTA",
                                      f"--libs={plugin_dir}", "--err=--"],
                                     capture_output=True, text=True)  # fmt: skip
            log = (applied.stdout + applied.stderr).splitlines()
            for line in log:
                if "legacy" in line or "plugin api" in line or "SDK version" in line or (
                        "Partitioned" in line) or line.startswith("qaccel plugin"):  # fmt: skip
                    print(f"  apply_plugin_main: {line.strip()}")
            if applied.returncode or not dispatch_model.is_file():
                print(f"the other LiteRT's apply_plugin_main failed (exit {applied.returncode})")
                return 1
        elif args.plugin == "on-device":
            dispatch_model = args.model
        else:
            tool = Path(sys.executable).with_name("qaccel-compile")
            compiled = subprocess.run([str(tool), str(args.model), "-o", str(out)],
                                      capture_output=True, text=True)  # fmt: skip
            if compiled.returncode:
                print(f"qaccel-compile failed: {compiled.stderr.strip()}")
                return 1
            dispatch_model = out / DISPATCH_FILE
        directory = (args.library_dir or dispatch_library_dir()).resolve()
        library = next(directory.glob("libLiteRtDispatch_Qaccel*.so"))
        print(f"dispatch library: {library}")
        print(f"  exports: {', '.join(_exports(library))}")

        spec = read_model(args.model.read_bytes())
        graph = spec.subgraphs[0]
        rng = np.random.default_rng(args.seed)
        inputs = []
        for k, t in enumerate(graph.inputs):
            tensor = graph.tensors[t]
            dtype = np.dtype(tensor.dtype)
            info = np.iinfo(dtype) if np.issubdtype(dtype, np.integer) else None
            x = (rng.integers(info.min, info.max + 1, size=tensor.shape, dtype=dtype)
                 if info else rng.standard_normal(tensor.shape).astype(dtype))  # fmt: skip
            inputs.append(x)
            np.save(tmp / f"in{k}.npy", x)
        reference = run_reference(args.model, [inputs], keep_all_tensors=False)
        if reference.refused:
            print(f"BUILTIN_REF refused the model: {reference.refused}")
            return 1
        expected = reference.outputs[0]

        request = {"dir": str(directory), "model": str(dispatch_model), "tmp": str(tmp),
                   "inputs": [str(tmp / f"in{k}.npy") for k in range(len(inputs))],
                   "outputs": [[list(e.shape), e.dtype.str] for e in expected]}  # fmt: skip
        if args.plugin == "on-device":
            import site

            request.update(plugin_dir=str(plugin_dir), site=site.getsitepackages()[0])
        (tmp / "request.json").write_text(json.dumps(request))
        (tmp / "child.py").write_text(CHILD)
        child = subprocess.run([args.python, str(tmp / "child.py"), str(tmp / "request.json")],
                               capture_output=True, text=True, timeout=300)  # fmt: skip
        lines = [ln for ln in child.stdout.splitlines() if ln.startswith("REPORT ")]
        if child.returncode or not lines:
            print(f"the other LiteRT failed (exit {child.returncode}):")
            tail = [ln for ln in child.stderr.splitlines() if ln.strip()][-15:]
            print("\n".join("  " + ln for ln in tail))
            return 1
        report = json.loads(lines[-1][len("REPORT "):])
        print(f"LiteRT: {', '.join(report['litert'])}")
        for line in child.stderr.splitlines():  # LiteRT's own log of the dispatch library
            if "ispatch" in line and ("version" in line or "vendor" in line.lower()
                                      or "legacy" in line or "Loading" in line):  # fmt: skip
                print(f"  LiteRT log: {line.strip()}")
        if args.plugin == "on-device":
            n_ops = report.get("programs", -1)
            print(f"  plugin: {report.get('compiles')} compile(s), {n_ops} program(s)")
        else:
            n_ops = sum(op.custom_code == "DISPATCH_OP" for sg in read_model(
                dispatch_model.read_bytes()).subgraphs for op in sg.operators)  # fmt: skip
        print(f"  programs our library ran: {report['invocations']} of {n_ops} DISPATCH_OP(s)")
        if report["error"]:
            print(f"  library error: {report['error']}")
        ok = report["invocations"] == n_ops and not report["error"]
        for k, e in enumerate(expected):
            got = np.load(tmp / f"out{k}.npy")
            same = got.shape == e.shape and got.dtype == e.dtype and np.array_equal(got, e)
            diff = "" if same else f" ({int(np.count_nonzero(got != e))} of {e.size} differ)"
            print(f"  output {k} {e.dtype}{list(e.shape)}: "
                  f"{'bit-exact' if same else 'DIFFERS'} vs BUILTIN_REF{diff}")  # fmt: skip
            ok &= same
        print("OK" if ok else "FAILED")
        return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
