"""The hardware configuration's schema has one source, `targets/vta/config.py`: the keys the C
machine reads (`MACHINE_KEYS`), in one order, each with one range (`INT_RANGES`). Every copy of
it, in C and in Python, is generated from it or checked here against it."""

from __future__ import annotations

import ctypes
import re
import struct
from pathlib import Path

import pytest
from qaccel.backends.vta.program import writer
from qaccel.backends.vta import cdriver
from qaccel.targets.vta import cmachine
from qaccel.targets.vta.config import (
    DEFAULT_CONFIG,
    INT_RANGES,
    MACHINE_KEYS,
    ConfigError,
    HardwareConfig,
    c_config_fields,
    machine_range,
)

ROOT = Path(__file__).resolve().parents[1]
HEADER = ROOT / "targets" / "vta" / "machine" / "vta_machine.h"
PROGRAM_C = ROOT / "backends" / "vta" / "program" / "qaccel_program.c"
RUNNER_C = ROOT / "backends" / "vta" / "runner" / "qaccel_runner.c"


def _generated_region(text: str) -> str:
    begin, end = "/* BEGIN VTA_CONFIG_FIELDS */\n", "/* END VTA_CONFIG_FIELDS */"
    return text[text.index(begin) + len(begin) : text.index(end)]


def test_c_header_table_is_generated_from_config():
    assert _generated_region(HEADER.read_text()) == c_config_fields(), (
        "vta_machine.h's VTA_CONFIG_FIELDS differs from targets/vta/config.py: paste "
        "c_config_fields() between its BEGIN/END markers"
    )


def test_c_struct_is_declared_from_the_table():
    body = HEADER.read_text()
    struct_text = body[body.index("typedef struct vta_config {") : body.index("} vta_config;")]
    assert "VTA_CONFIG_FIELDS(VTA_CONFIG_MEMBER)" in struct_text
    assert re.findall(r"int64_t\s+\w+;", struct_text) == ["int64_t key;"]


@pytest.mark.parametrize("path", [PROGRAM_C, RUNNER_C], ids=lambda p: p.name)
def test_c_readers_read_through_the_table(path):
    text = path.read_text()
    assert "VTA_CONFIG_FIELDS(READ_CONFIG_FIELD)" in text
    assert "&p->cfg.log_block" not in text  # no struct written as if it were an array
    assert not re.search(r"qaccel_model_hw\[\d+\]", text)  # no key read by its index


def test_python_copies_follow_machine_keys():
    assert [name for name, _ in cmachine._Config._fields_] == list(MACHINE_KEYS)
    assert all(t is ctypes.c_int64 for _, t in cmachine._Config._fields_)
    assert cdriver.HW_KEYS == MACHINE_KEYS
    assert writer.CONFIG_KEYS == MACHINE_KEYS
    # The C driver's generated header lists the keys in the same order and size.
    listed = re.search(r"HardwareConfig's name and, in this order, (.*?) \(QACCEL_HW_",
                       cdriver.RUNTIME_HEADER, re.S).group(1)  # fmt: skip
    assert [k.strip() for k in listed.split(",")] == list(MACHINE_KEYS)
    assert f"qaccel_model_hw[{len(MACHINE_KEYS)}]" in cdriver.RUNTIME_HEADER
    # The LiteRT program header: i64 config[] at bytes 64.., then the table offsets at 152.
    assert f"i64 config[{len(MACHINE_KEYS)}]" in writer.__doc__
    assert 64 + 8 * len(MACHINE_KEYS) == 152
    assert re.search(rf"field != b \+ {64 + 8 * len(MACHINE_KEYS)}\b", PROGRAM_C.read_text())


def test_every_machine_key_is_a_configuration_key_with_one_range():
    keys = set(DEFAULT_CONFIG.to_dict())
    assert set(MACHINE_KEYS) <= keys
    for key in MACHINE_KEYS:
        lo, hi = machine_range(key)
        if key != "store_requant":
            assert (lo, hi) == INT_RANGES[key]


@pytest.mark.parametrize("key", [k for k in MACHINE_KEYS if k != "store_requant"])
def test_python_and_c_refuse_the_same_values(key):
    lib = cmachine.library()
    if lib is None:
        pytest.skip("no C machine")
    lib.vta_config_check.restype = ctypes.c_int
    lib.vta_config_check.argtypes = [ctypes.POINTER(cmachine._Config)]
    lo, hi = machine_range(key)
    base = {k: int(getattr(DEFAULT_CONFIG, k)) for k in MACHINE_KEYS}
    for value in (lo - 1, hi + 1):
        c = cmachine._Config(**{**base, key: value})
        assert lib.vta_config_check(ctypes.byref(c)) == cmachine.VTA_ERR_CONFIG, (key, value)
        with pytest.raises(ConfigError, match=key):
            HardwareConfig(**{key: value})
    for value in (lo, hi):
        c = cmachine._Config(**{**base, key: value})
        assert lib.vta_config_check(ctypes.byref(c)) == cmachine.VTA_OK, (key, value)


def test_program_header_packs_keys_in_machine_order():
    config = DEFAULT_CONFIG.to_dict()
    packed = struct.pack(f"<{len(writer.CONFIG_KEYS)}q", *(int(config[k]) for k in writer.CONFIG_KEYS))
    assert struct.unpack(f"<{len(MACHINE_KEYS)}q", packed) == tuple(
        int(getattr(DEFAULT_CONFIG, k)) for k in MACHINE_KEYS
    )
