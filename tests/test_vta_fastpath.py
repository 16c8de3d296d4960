"""The C machine's fast path against its checked path, on whole models.

A program's timing and checks do not depend on its data, so `cmachine.Prepared` checks and
times each accelerator program once and then runs it with data only (`vta_execute`). Here:
the cycles of a program are the same for different inputs (and are the prepared ones); an
artifact's run plan (`qaccel-run OUTDIR`) gives the same outputs bit for bit on the fast path
and on the checked one (`QACCEL_SIMULATION=checked`), input after input in one process, for
the fixture models and the converter-made corpus models (`tests/fixtures/corpus/`, when
present). Layer by layer, every comparison of `test_vta_cmachine.py` (every layer of every
fixture model included) runs the fast path too.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
from conftest import FIXTURE_MODELS

from qaccel.targets.vta import cmachine

pytestmark = pytest.mark.skipif(
    os.environ.get("QACCEL_NO_CMACHINE", "") not in ("", "0"), reason="QACCEL_NO_CMACHINE set"
)

CORPUS = Path(__file__).parent / "fixtures" / "corpus"
# mobilenet_v2 is cross-checked layer by layer in test_vta_cmachine (its compile is slow);
# the collapsed MobileNet is refused by LiteRT's reference kernels (no run plan).
SKIP = {"mobilenet_v2", "mobilenetv2_035_96_collapsed"}
MODELS = [p for p in sorted(FIXTURE_MODELS.glob("*.tflite")) if p.stem not in SKIP]
MODELS += sorted(CORPUS.glob("*.tflite")) if CORPUS.is_dir() else []


def _compile(path: Path, outdir: Path):
    """The model compiled for the default configuration into `outdir`, or a skip."""
    from qaccel.backends.vta.artifact import write_artifact
    from qaccel.tools.qaccel_compile import compile_model

    try:
        compiled, data = compile_model(path, "vta-pipeline")
    except Exception as e:  # noqa: BLE001 - a model qaccel does not compile is not this test's
        pytest.skip(f"{path.name} does not compile: {str(e).splitlines()[0] if str(e) else e}")
    write_artifact(compiled, outdir, data)
    return compiled


@pytest.mark.parametrize("path", MODELS, ids=lambda p: p.stem)
def test_run_plan_fast_path_matches_checked_path(path, tmp_path, monkeypatch):
    from qaccel.backends.vta.run_plan import load_run_plan

    compiled = _compile(path, tmp_path)
    fast = load_run_plan(tmp_path)
    if fast is None:
        pytest.skip(f"{path.name}: no run plan")
    assert fast.fast
    monkeypatch.setenv("QACCEL_SIMULATION", "checked")
    checked = load_run_plan(tmp_path)
    assert not checked.fast
    cycles = compiled.report["totals"]["cycles"]
    for seed in range(3):  # one process, one prepared program, several inputs
        inputs = fast.random_inputs(seed)
        before = fast.cycles
        got, want = fast.run(inputs), checked.run(inputs)
        for x, y in zip(got, want, strict=True):
            assert x.dtype == y.dtype and x.shape == y.shape
            np.testing.assert_array_equal(x, y)
        if sum(len(f.layers) for f in fast.functions.values()) and fast.layer_runs:
            assert fast.cycles - before == cycles  # the one timing run's, every input
    assert fast.cycles == checked.cycles


def test_cycles_do_not_depend_on_the_inputs(tmp_path):
    """Every layer of a model on two different inputs: the same timing report, instruction by
    instruction, which is the prepared one."""
    from qaccel.backends.vta.codegen import compile_module
    from conftest import vta_lowered
    from qaccel.targets.vta.config import DEFAULT_CONFIG
    from qaccel.targets.vta.simulator import simulate

    module, _ = vta_lowered("cnn")
    compiled = compile_module(module, DEFAULT_CONFIG)
    rng = np.random.default_rng(3)
    cycles = {(r["function"], r["layer"]): r["cycles"] for r in compiled.report["layers"]}
    checked = 0
    for name, fn in compiled.functions.items():
        images = []
        for _ in range(2):
            image = fn.image.copy()
            for slot in fn.slots:
                if slot.host_writes:
                    image[slot.offset : slot.offset + slot.nbytes] = rng.integers(0, 256, slot.nbytes)
            images.append(image)
        assert not np.array_equal(images[0], images[1])
        for lay in fn.layers:
            a = simulate(lay.words, lay.uops, images[0], DEFAULT_CONFIG, simulator="c")
            b = simulate(lay.words, lay.uops, images[1], DEFAULT_CONFIG, simulator="c")
            prepared = cmachine.Prepared(lay.words, lay.uops, images[0].size, DEFAULT_CONFIG)
            for report in (b.timing, prepared.report):
                assert report.total_cycles == a.timing.total_cycles
                assert report.busy == a.timing.busy and report.stalled == a.timing.stalled
                assert np.array_equal(report.start, a.timing.start)
                assert np.array_equal(report.end, a.timing.end)
            assert a.timing.total_cycles == cycles[name, lay.index]  # the report's
            images = [a.dram, b.dram]
            checked += 1
    assert checked == len(cycles)


def test_prepared_program_rejects_a_dram_image_of_another_size():
    from qaccel.targets.vta.config import DEFAULT_CONFIG
    from qaccel.targets.vta.isa import Program
    from qaccel.targets.vta.simulation_result import SimulationError

    p = Program()
    p.finish()
    prepared = cmachine.Prepared(p, None, 64, DEFAULT_CONFIG)
    scratch = cmachine.Scratch(DEFAULT_CONFIG)
    prepared.execute(np.zeros(64, np.uint8), scratch)
    with pytest.raises(SimulationError, match="DRAM image of 32 bytes for a program prepared for 64"):
        prepared.execute(np.zeros(32, np.uint8), scratch)


@pytest.mark.parametrize("kernel", ["c", "avx2", "avx-vnni", "avx512-vnni"])
def test_every_fast_kernel_on_an_emitted_convolution(kernel, monkeypatch):
    """Each kernel the fast path may choose (never a faster one than asked; VNNI only on CPUs
    that have it) computes the checked path's DRAM."""
    from qaccel.lowering.vta.emit import emit
    from qaccel.lowering.vta.search import schedule
    from qaccel.targets.vta.config import DEFAULT_CONFIG
    from qaccel.targets.vta.simulator import simulate
    from test_vta_codegen import conv_layer

    monkeypatch.setattr(cmachine, "kernel", kernel)
    order = list(cmachine.KERNELS)
    rng = np.random.default_rng(17)
    layer = conv_layer(H=9, W=9, C=40, O=36, k=3, rng=rng)
    prog = emit(layer, schedule(layer, DEFAULT_CONFIG, refine=0), DEFAULT_CONFIG)
    x = rng.integers(-128, 128, layer.input_shape).astype(np.int8)
    image = prog.dram_image(x)
    want = simulate(prog.program, prog.program.uops, image, DEFAULT_CONFIG, simulator="c").dram
    scratch = cmachine.Scratch(DEFAULT_CONFIG)
    assert scratch.kernel != "sse2" and order.index(scratch.kernel) <= order.index(kernel)
    prepared = cmachine.Prepared(prog.program, prog.program.uops, image.size, DEFAULT_CONFIG)
    got = prepared.execute(np.ascontiguousarray(image).copy(), scratch)
    assert np.array_equal(got, want)


@pytest.mark.parametrize("kernel", ["c", "avx2"])
def test_constant_weights_converted_once(kernel, monkeypatch):
    """`Prepared.constants(image, start, end)`: the weight tiles from those bytes are
    converted once, and every execution uses them as they were then (the checked path's DRAM,
    run after run, in a scratch another program uses too)."""
    from qaccel.lowering.vta.emit import emit
    from qaccel.lowering.vta.search import schedule
    from qaccel.targets.vta.config import DEFAULT_CONFIG
    from qaccel.targets.vta.simulator import simulate
    from qaccel.targets.vta.simulation_result import SimulationError
    from test_vta_codegen import conv_layer

    monkeypatch.setattr(cmachine, "kernel", kernel)
    rng = np.random.default_rng(5)
    layer = conv_layer(H=7, W=7, C=40, O=36, k=3, rng=rng)
    prog = emit(layer, schedule(layer, DEFAULT_CONFIG, refine=0), DEFAULT_CONFIG)
    scratch = cmachine.Scratch(DEFAULT_CONFIG)
    x0 = rng.integers(-128, 128, layer.input_shape).astype(np.int8)
    image0 = prog.dram_image(x0)
    prepared = cmachine.Prepared(prog.program, prog.program.uops, image0.size, DEFAULT_CONFIG)
    other = cmachine.Prepared(prog.program, prog.program.uops, image0.size, DEFAULT_CONFIG)
    start, nbytes = prog.regions["weights"]
    prepared.constants(image0, start, start + nbytes)
    for seed in range(3):
        x = np.random.default_rng(seed).integers(-128, 128, layer.input_shape).astype(np.int8)
        image = prog.dram_image(x)
        want = simulate(prog.program, prog.program.uops, image, DEFAULT_CONFIG,
                        simulator="c").dram  # fmt: skip
        assert np.array_equal(prepared.execute(image.copy(), scratch), want)
        assert np.array_equal(other.execute(image.copy(), scratch), want)  # converts its own
    # the promise broken on purpose: the weights converted from image0 are the ones used
    changed = image0.copy()
    changed[start : start + nbytes] = rng.integers(-128, 128, nbytes).astype(np.int8).view(np.uint8)
    got = prepared.execute(changed.copy(), scratch)
    want = prepared.execute(image0.copy(), scratch)
    assert np.array_equal(got[start + nbytes :], want[start + nbytes :])
    assert not np.array_equal(got, other.execute(changed.copy(), scratch))
    with pytest.raises(SimulationError, match="prepared for"):
        prepared.constants(np.zeros(8, np.uint8), 0)
