"""Scheduled VTA layers of MobileNetV2 1.0/224 and ResNet-50: cycles vs roofline, compile time.

    python benchmarks/bench_vta_layers.py [--model mobilenet|resnet|all] [--simulate]
        [--refine N] [--config vta.json] [--all-layers] [--verbose]

For every accelerator layer of the bundled models (`tests/fixtures/models/mobilenet_v2.tflite`,
`tests/fixtures/generated/resnet50.tflite`, imported and legalized to `q`), schedules it
(`lowering.vta.search.schedule`), emits it (`lowering.vta.emit.emit`) and runs the timing
model. Per layer: simulated cycles, the roofline bound (`conv2d_roofline`: MACs at one 16x16
block per cycle vs each byte once over the 16-byte bus), the ISA bound (the compute module
must also run the requantization tail of every accumulator row: max(GEMM + tail, memory)),
their ratios, the cost model's estimate and the compile time (schedule + emit). The headline
set is the issue's: conv layers with at least 16 input channels; `--all-layers` also reports
the 3-channel stem convs, depthwise and dense layers. `--simulate` also runs the functional
simulator on random inputs, checks the result against the q-dialect reference bit for bit and
reports the simulator's run time per layer.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
MODELS = {
    "mobilenet": ROOT / "tests/fixtures/models/mobilenet_v2.tflite",
    "resnet": ROOT / "tests/fixtures/generated/resnet50.tflite",
}


def model_layers(path):
    from qaccel.frontend.tflite_import import import_tflite_file
    from qaccel.lowering.vta.q_layers import layers_from_q
    from qaccel.passes.legalize_tfl_to_q import LegalizeTflToQPass
    from xdsl.context import Context

    module = import_tflite_file(str(path))
    LegalizeTflToQPass().apply(Context(), module)
    return layers_from_q(module)


def headline(layer) -> bool:
    g = layer.geometry
    return g.kind == "conv" and g.C >= 16


def main(argv=None):
    from qaccel.targets.vta.config import DEFAULT_CONFIG, HardwareConfig
    from qaccel.lowering.vta.emit import emit
    from qaccel.targets.vta.simulator import timing
    from qaccel.lowering.vta.cost_model import alu_bound_cycles, roofline_cycles
    from qaccel.lowering.vta.q_layers import reference
    from qaccel.lowering.vta.search import schedule

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", choices=["mobilenet", "resnet", "all"], default="all")
    ap.add_argument("--simulate", action="store_true", help="functional run, bit-exact check")
    ap.add_argument("--refine", type=int, default=0, help="candidates timed by the timing model")
    ap.add_argument("--config", help="hardware config JSON (default: VTA's default)")
    ap.add_argument("--all-layers", action="store_true", help="also stem, depthwise, dense layers")
    ap.add_argument("--verbose", action="store_true", help="print each layer's schedule")
    args = ap.parse_args(argv)
    config = HardwareConfig.from_json(args.config) if args.config else DEFAULT_CONFIG
    names = ["mobilenet", "resnet"] if args.model == "all" else [args.model]
    rng = np.random.default_rng(0)
    for name in names:
        layers = model_layers(MODELS[name])
        print(f"== {name}: {MODELS[name].name}, {len(layers)} accelerator layers, "
              f"config {config.name}")  # fmt: skip
        print(f"{'layer':<12} {'shape':<46} {'cycles':>9} {'roofline':>9} {'x':>5} "
              f"{'isa bnd':>9} {'x':>5} {'est':>9} {'ms':>6}"
              + (" sim_s" if args.simulate else ""))  # fmt: skip
        total = {"cycles": 0, "roof": 0, "isa": 0, "compile": 0.0}
        ratios, isa_ratios = [], []
        all_compile = 0.0
        for layer in layers:
            t0 = time.perf_counter()
            sched = schedule(layer, config, refine=args.refine)
            prog = emit(layer, sched, config)
            dt = time.perf_counter() - t0
            all_compile += dt
            if not (args.all_layers or headline(layer)):
                continue
            rep = timing(prog.program, config)
            roof = roofline_cycles(layer.geometry, config)
            isa = alu_bound_cycles(layer.geometry, config)
            line = (f"{layer.name:<12} {layer.describe():<46} {rep.total_cycles:>9} {roof:>9} "
                    f"{rep.total_cycles / roof:>5.2f} {isa:>9} {rep.total_cycles / isa:>5.2f} "
                    f"{sched.estimated_cycles:>9} {dt * 1e3:>6.1f}")  # fmt: skip
            if args.simulate:
                x = rng.integers(-128, 128, layer.input_shape).astype(np.int8)
                t1 = time.perf_counter()
                y = prog.run(x)
                sim = time.perf_counter() - t1
                ok = np.array_equal(y, reference(layer, x))
                line += f" {sim:5.2f}" + ("" if ok else "  MISMATCH")
            print(line)
            if args.verbose:
                print(f"{'':14}{sched.describe()}; {len(prog.program)} insns, "
                      f"{len(prog.uops)} uops ({prog.uop_loads} loads), util "
                      f"{rep.gemm_utilization:.2f}")  # fmt: skip
            if headline(layer):
                total["cycles"] += rep.total_cycles
                total["roof"] += roof
                total["isa"] += isa
                total["compile"] += dt
                ratios.append(rep.total_cycles / roof)
                isa_ratios.append(rep.total_cycles / isa)
        if ratios:
            print(
                f"-- {name}: {len(ratios)} conv layers with >= 16 input channels: "
                f"cycles / roofline "
                f"mean {np.mean(ratios):.3f}, whole set {total['cycles'] / total['roof']:.3f}; "
                f"cycles / ISA bound mean {np.mean(isa_ratios):.3f}, whole set "
                f"{total['cycles'] / total['isa']:.3f}"
            )
            print(
                f"-- {name}: {total['cycles']} cycles = "
                f"{total['cycles'] / config.clock_mhz / 1e3:.2f} ms at {config.clock_mhz:g} MHz; "
                f"compile (schedule + emit) {total['compile']:.2f} s for "
                f"these, {all_compile:.2f} s for all {len(layers)} layers"
            )


if __name__ == "__main__":
    main()
