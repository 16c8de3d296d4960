"""Fuzz harnesses: each takes arbitrary bytes and lets escape only the errors its entry point
documents (anything else is a bug: a traceback a user would see, or a hang).

| harness  | entry point                                         | documented errors            |
| -------- | --------------------------------------------------- | ---------------------------- |
| tflite   | `frontend.tflite_import.import_tflite` + `verify`   | TFLiteImportError            |
| mlir     | `tools.cli.parse_mlir` (parse, verify, dominance)   | InputError, VerifyException  |
| config   | `HardwareConfig.from_json` / `from_dict`            | ConfigError                  |
| isa      | `isa.Program.from_bytes`, `decode`, `validate`, `simulator.simulate` | ValueError (size), SimulationError |

`fuzz/run.py` drives them with atheris (coverage-guided); `one_input` functions are plain
Python and can be replayed on any file (`python fuzz/run.py --replay FILE --harness tflite`).
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

CORPUS = Path(__file__).with_name("corpus")
# Simulated work per input, in the simulators' own steps (targets/vta/budget.py): inputs above
# it are decoded and validated, then refused by the simulator's step budget before they run.
SIM_STEP_BUDGET = 4096
SIM_DRAM_BYTES = 1 << 16


@dataclass(frozen=True)
class Harness:
    name: str
    one_input: Callable[[bytes], None]
    allowed: tuple[type[BaseException], ...]


def _tflite(data: bytes) -> None:
    from qaccel.frontend.tflite_import import import_tflite

    module = import_tflite(data, "fuzz.tflite")
    module.verify()  # what the importer builds must verify


def _mlir(data: bytes) -> None:
    from qaccel.tools.cli import parse_mlir

    parse_mlir(data, "fuzz.mlir")  # the tools' parse boundary: parse, verify, dominance


_CONFIG_FILE = Path(tempfile.gettempdir()) / f"qaccel-fuzz-config-{os.getpid()}.json"


def _config(data: bytes) -> None:
    from qaccel.targets.vta.config import HardwareConfig

    _CONFIG_FILE.write_bytes(data)
    HardwareConfig.from_json(_CONFIG_FILE)
    try:
        value = json.loads(data)
    except (ValueError, RecursionError):
        return
    if isinstance(value, dict):
        HardwareConfig.from_dict(value)


def _isa(data: bytes) -> None:
    import numpy as np

    from qaccel.targets.vta import isa
    from qaccel.targets.vta.simulator import simulate

    # First byte: the micro-op count; then the instruction stream, then the micro-ops.
    n_uops = int.from_bytes(data[:1], "little") if data else 0
    body = data[1:]
    insn_bytes = (len(body) - 4 * n_uops) // isa.INSN_BYTES * isa.INSN_BYTES
    if insn_bytes <= 0:
        return
    program = isa.Program.from_bytes(body[:insn_bytes])
    uops = np.frombuffer(body[insn_bytes: insn_bytes + 4 * n_uops], "<u4").astype(np.uint32)
    fields = isa.decode(program.words)
    if isa.validate(program.words, fields=fields):
        return  # malformed encodings are refused before simulation, as qaccel-sim does
    simulate(program, uops, np.zeros(SIM_DRAM_BYTES, np.uint8), step_limit=SIM_STEP_BUDGET)


def _allowed() -> dict[str, tuple[type[BaseException], ...]]:
    from xdsl.utils.exceptions import VerifyException

    from qaccel.frontend.errors import TFLiteImportError
    from qaccel.targets.vta.config import ConfigError
    from qaccel.targets.vta.simulator import SimulationError
    from qaccel.tools.cli import InputError

    return {
        "tflite": (TFLiteImportError,),
        "mlir": (InputError, VerifyException),
        "config": (ConfigError,),
        "isa": (SimulationError,),
    }


def harnesses() -> dict[str, Harness]:
    allowed = _allowed()
    functions = {"tflite": _tflite, "mlir": _mlir, "config": _config, "isa": _isa}
    return {name: Harness(name, fn, allowed[name]) for name, fn in functions.items()}


def checked(harness: Harness) -> Callable[[bytes], None]:
    """`harness.one_input` with its documented errors swallowed: what escapes is a finding."""

    def run(data: bytes) -> None:
        try:
            harness.one_input(data)
        except harness.allowed:
            pass

    return run


if __name__ == "__main__":  # pragma: no cover
    sys.exit("use fuzz/run.py")
