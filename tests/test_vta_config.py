"""Hardware configurations are validated at load (targets/vta/config.py): every key's type and
range, non-finite numbers (JSON's parser accepts NaN and Infinity) and the name, each refused
with one line naming the key."""

from __future__ import annotations

import json

import pytest
from qaccel.targets.vta.config import (
    DEFAULT_CONFIG,
    ENERGY_KEYS,
    INT_RANGES,
    MAX_ENERGY_PJ,
    ConfigError,
    HardwareConfig,
)


def _load(tmp_path, text: str) -> HardwareConfig:
    path = tmp_path / "hw.json"
    path.write_text(text)
    return HardwareConfig.from_json(path)


@pytest.mark.parametrize("key, value", [
    ("clock_mhz", '"fast"'), ("clock_mhz", "NaN"), ("clock_mhz", "Infinity"),
    ("clock_mhz", "-Infinity"), ("clock_mhz", "0"), ("clock_mhz", "1e30"), ("clock_mhz", "true"),
    ("name", "{}"), ("name", "3"), ("store_requant", "1"),
    ("log_inp_buff_size", "1e30"), ("log_wgt_buff_size", str(10**30)),
    ("log_acc_buff_size", "NaN"), ("log_uop_buff_size", "15.0"),
    ("dma_setup_cycles", str(10**18)), ("dma_setup_cycles", "-1"),
    ("insn_issue_cycles", "Infinity"), ("bus_width_bytes", "0"), ("bus_width_bytes", "1e30"),
    ("gemm_cycles_per_uop", "0"), ("alu_cycles_per_uop", "null"), ("log_block", "7"),
    ("log_block", "1"), ("log_batch", "true"),
])  # fmt: skip
def test_bad_values_are_refused_at_load_naming_the_key(tmp_path, key, value):
    with pytest.raises(ConfigError) as info:
        _load(tmp_path, f'{{"{key}": {value}}}')
    message = str(info.value)
    assert key in message and "\n" not in message and len(message) < 300


def test_every_integer_key_has_a_range_and_the_defaults_are_in_it():
    for key, (lo, hi) in INT_RANGES.items():
        assert lo <= getattr(DEFAULT_CONFIG, key) <= hi, key
    for key in ENERGY_KEYS:  # picojoules: non-negative, bounded
        assert 0 <= getattr(DEFAULT_CONFIG, key) <= MAX_ENERGY_PJ, key
    assert set(INT_RANGES) | set(ENERGY_KEYS) | {"name", "clock_mhz", "store_requant"} == set(
        DEFAULT_CONFIG.to_dict()
    )


def test_valid_values_load(tmp_path):
    c = _load(tmp_path, json.dumps({"name": "x", "clock_mhz": 200, "bus_width_bytes": 8,
                                    "dma_setup_cycles": 0, "log_block": 4}))  # fmt: skip
    assert (c.name, c.clock_mhz, c.bus_width_bytes, c.dma_setup_cycles) == ("x", 200, 8, 0)


def test_dram_alignment_covers_every_element():
    for log_block, wgt in ((3, 16), (4, 18), (5, 20)):
        small = log_block == 3
        c = HardwareConfig(log_block=log_block, log_wgt_buff_size=wgt,
                           log_inp_buff_size=14 if small else 15,
                           log_acc_buff_size=16 if small else 17,
                           log_uop_buff_size=14 if small else 15)  # fmt: skip
        assert all(c.dram_align % c.elem_bytes(k) == 0 for k in ("uop", "inp", "wgt", "acc", "out"))
    assert DEFAULT_CONFIG.dram_align == 256
