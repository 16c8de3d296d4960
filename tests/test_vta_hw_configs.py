"""Every hardware configuration that validates compiles to programs the simulator runs
bit-exactly, or the compiler refuses a layer with a one-line reason (the layer stays on the
host): block sizes 4, 8, 16 and 32 (`log_block` 2 to 5) on the small fixtures, and a sweep of
random valid configurations (small buffers, with and without the store module's output stage,
other bus widths and DMA costs). Never a simulator error."""

from __future__ import annotations

import json

import numpy as np
import pytest
from conftest import vta_lowered
from qaccel.backends.vta.codegen import compile_module
from qaccel.dialects import accel
from qaccel.interpreter.interpreter import entry_function, random_inputs
from qaccel.targets.vta.config import ConfigError, HardwareConfig
from test_vta_compile import assert_same_calls

FIXTURES = ["small_cnn", "cnn", "residual", "mlp", "composite", "pad_concat_slice"]
# Buffers of VTA's default sizes in elements, so the ISA's fields keep their widths.
BLOCKS = {
    2: {"log_uop_buff_size": 15, "log_inp_buff_size": 13, "log_wgt_buff_size": 14,
        "log_acc_buff_size": 15},
    3: {"log_uop_buff_size": 15, "log_inp_buff_size": 14, "log_wgt_buff_size": 16,
        "log_acc_buff_size": 16},
    5: {"log_uop_buff_size": 15, "log_inp_buff_size": 16, "log_wgt_buff_size": 20,
        "log_acc_buff_size": 18},
}  # fmt: skip


def _write(tmp_path, data: dict) -> tuple[str, HardwareConfig]:
    path = tmp_path / f"{data['name']}.json"
    path.write_text(json.dumps(data))
    return str(path), HardwareConfig.from_json(path)


def _compile_and_run(name: str, path: str, config: HardwareConfig, seed: int = 0):
    module, _ = vta_lowered(name, f'"{path}"')
    compiled = compile_module(module, config)
    assert_same_calls(module, compiled, random_inputs(entry_function(module), seed))
    return module, compiled


@pytest.mark.parametrize("log_block", sorted(BLOCKS))
@pytest.mark.parametrize("name", FIXTURES)
def test_fixture_bit_exact_with_block_size(tmp_path, name, log_block):
    data = {"name": f"block{1 << log_block}", "log_block": log_block, **BLOCKS[log_block]}
    path, config = _write(tmp_path, data)
    module, compiled = _compile_and_run(name, path, config)
    assert sum(len(v) for v in compiled.layers.values()) >= 1
    blocks = {accel._values(op.inner_tiles)[-1] for op in module.walk()
              if isinstance(op, accel.PackOp) and op.inner_tiles is not None}  # fmt: skip
    assert blocks == {1 << log_block}
    gemm_refusals = [fb.line() for fb in compiled.fallbacks
                     if fb.op in ("accel.conv2d_zp", "accel.dense_zp")]  # fmt: skip
    assert not gemm_refusals, gemm_refusals


def _random_config(rng: np.random.Generator, i: int) -> dict | None:
    log_block = int(rng.choice([3, 4, 5]))
    elem = {"uop": 2, "inp": log_block, "wgt": 2 * log_block, "acc": log_block + 2}
    data = {"name": f"random{i}", "log_block": log_block,
            "store_requant": bool(rng.integers(2)),
            "bus_width_bytes": int(rng.choice([4, 8, 16, 32, 64])),
            "dma_setup_cycles": int(rng.integers(0, 100)),
            "insn_issue_cycles": int(rng.integers(0, 4)),
            "gemm_cycles_per_uop": int(rng.integers(1, 3)),
            "alu_cycles_per_uop": int(rng.integers(1, 4)),
            "clock_mhz": float(rng.uniform(50, 1000))}  # fmt: skip
    for key, e in elem.items():  # small buffers: 2**8 .. 2**11 elements
        data[f"log_{key}_buff_size"] = e + int(rng.integers(8, 12))
    try:
        HardwareConfig.from_dict(data)
    except ConfigError:
        return None  # fields wider than the ISA's words: refused at load, as it should
    return data


def test_random_valid_configs_run_bit_exact_or_refuse_in_one_line(tmp_path):
    rng = np.random.default_rng(2026)
    configs = []
    while len(configs) < 5:
        data = _random_config(rng, len(configs))
        if data is not None:
            configs.append(data)
    assert {c["log_block"] for c in configs} == {3, 4, 5}
    for data in configs:
        path, config = _write(tmp_path, data)
        _, compiled = _compile_and_run("small_cnn", path, config, seed=1)
        for fb in compiled.fallbacks:
            line = fb.line()
            assert "\n" not in line and line.strip(), (data, line)
