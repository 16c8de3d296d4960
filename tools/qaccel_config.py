"""`qaccel-config`: what a hardware configuration of the VTA-like accelerator amounts to.

    qaccel-config show vta-default          # derived geometry: lanes, buffers, field widths
    qaccel-config show hw.json --json       # the same as JSON
    qaccel-config check hw.json             # fits, or which keys to change and to what

CONFIG is a JSON file or the name of a bundled configuration (`vta-default`,
`vta-store-requant`). `show` prints the configuration's name and content hash (SHA-256 of every
key but the name, as reports carry it), the lanes of the GEMM core and the ALU, each on-chip
buffer (bytes, element, depth, log depth: the widths of its index fields), the total SRAM, and
the fields of every instruction and of the micro-op with their widths and the bits each word
uses. `check` exits 0 when the ISA can encode the configuration, else prints each problem with
the changes that fix it (the largest buffer sizes that fit with the other keys unchanged, or a
common reduction) and exits 1. A missing or unreadable file is one line,
`qaccel-config: error: ...`, exit 1.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import NoReturn

from qaccel.tools.cli import fail, one_line_argument_errors

PROG = "qaccel-config"


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="command", required=True, metavar="{show,check}")
    show = sub.add_parser("show", help="print the derived geometry of CONFIG")
    show.add_argument("config", metavar="CONFIG", help="a configuration file or bundled name")
    show.add_argument("--json", action="store_true", help="print it as JSON")
    check = sub.add_parser("check", help="say whether CONFIG fits the ISA, and what to change "
                           "if it does not")  # fmt: skip
    check.add_argument("config", metavar="CONFIG", help="a configuration file or bundled name")
    for p in (ap, show, check):
        one_line_argument_errors(p, PROG)
    return ap


def _fail(message: str) -> NoReturn:
    fail(PROG, message)


def _source(name: str) -> Path:
    """The file of CONFIG: the path itself, or the bundled file of that name."""
    from qaccel.targets.vta.config import DEFAULT_CONFIG_PATH, ConfigError, HardwareConfig

    path = Path(name)
    if path.exists():
        return path
    bundled = DEFAULT_CONFIG_PATH.with_name(f"{name.replace('-', '_')}.json")
    if name.replace("-", "_").isidentifier() and bundled.exists():
        return bundled
    try:  # the loader's own message (it lists the bundled names)
        HardwareConfig.from_json(name)
    except ConfigError as e:
        _fail(str(e))
    _fail(f"{name}: no such hardware config file or bundled config")


def geometry(config) -> dict:
    """The derived geometry of a `HardwareConfig` as plain data (what `show` prints)."""
    from qaccel.explore.spec import sram_bytes
    from qaccel.targets.vta.isa import Opcode, layout_of

    layout = layout_of(config)
    buffers = {}
    elements = {"uop": "micro-op", "inp": f"{config.block} int8 lanes",
                "wgt": f"{config.block}x{config.block} int8 tile",
                "acc": f"{config.block} int32 lanes"}  # fmt: skip
    for key in ("uop", "inp", "wgt", "acc"):
        size = getattr(config, f"log_{key}_buff_size")
        buffers[key] = {
            "key": f"log_{key}_buff_size", "bytes": 1 << size, "element": elements[key],
            "element_bytes": config.elem_bytes(key), "depth": config.depth(key),
            "log_depth": config.depth(key).bit_length() - 1,
        }  # fmt: skip
    instructions = {}
    for opcode, fmt in layout.by_opcode.items():
        used = [0, 0]
        for f in fmt:
            for b in range(f.bit, f.bit + f.width):
                used[b // 64] += 1
        instructions[Opcode(opcode).name] = {
            "fields": [{"name": f.name, "bit": f.bit, "width": f.width, "signed": f.signed}
                       for f in fmt],
            "bits_used": used,
        }  # fmt: skip
    uop = [{"name": f.name, "bit": f.bit, "width": f.width} for f in layout.uop]
    return {
        "name": config.name, "content_hash": config.content_hash,
        "lanes": {"block_in": config.block_in, "block_out": config.block_out,
                  "batch": config.batch, "macs_per_cycle": config.macs_per_cycle,
                  "alu_lanes": config.batch * config.block},
        "clock_mhz": config.clock_mhz, "bus_width_bytes": config.bus_width_bytes,
        "store_requant": config.store_requant,
        "buffers": buffers, "sram_bytes": sram_bytes(config),
        "instructions": instructions,
        "uop": {"fields": uop, "bits_used": sum(f["width"] for f in uop)},
    }  # fmt: skip


def format_geometry(g: dict, source: str) -> str:
    lanes = g["lanes"]
    lines = [
        f"configuration {g['name']} (content hash {g['content_hash']}; {source})",
        f"lanes: BLOCK_IN = BLOCK_OUT = {lanes['block_in']}, BATCH = {lanes['batch']}: "
        f"{lanes['macs_per_cycle']} MACs per GEMM cycle, {lanes['alu_lanes']} int32 lanes per "
        "ALU row",
        f"clock {g['clock_mhz']:g} MHz, DRAM bus {g['bus_width_bytes']} bytes per cycle, store "
        f"module output stage {'on' if g['store_requant'] else 'off'}",
        "",
        "buffer  key                     bytes  element              element B   depth  log depth",
    ]
    for name, b in g["buffers"].items():
        lines.append(f"{name:<7} {b['key']:<18} {b['bytes']:>10}  {b['element']:<20} "
                     f"{b['element_bytes']:>9} {b['depth']:>7}  {b['log_depth']:>9}")  # fmt: skip
    lines.append(f"on-chip SRAM: {g['sram_bytes']} bytes ({g['sram_bytes'] / 1024:g} KiB)")
    lines.append("")
    lines.append("instructions (128 bits, two 64-bit words; field:width, s = signed):")
    for name, ins in g["instructions"].items():
        fields = " ".join(f"{f['name']}:{f['width']}{'s' if f['signed'] else ''}"
                          for f in ins["fields"])  # fmt: skip
        used = ins["bits_used"]
        lines.append(f"  {name:<6} word bits used {used[0]}/64 + {used[1]}/64: {fields}")
    uop = g["uop"]
    fields = " ".join(f"{f['name']}:{f['width']}" for f in uop["fields"])
    lines.append(f"  micro-op  {uop['bits_used']}/32 bits: {fields}")
    return "\n".join(lines)


def check(name: str) -> tuple[bool, str]:
    """(fits, report) for the configuration CONFIG."""
    from qaccel.targets.vta.config import (
        ConfigError,
        HardwareConfig,
        _unchecked,
        fixes,
        shrink_together,
    )

    path = _source(name)
    try:
        config = HardwareConfig.from_json(path)
    except ConfigError as first:
        try:
            data = json.loads(path.read_text())
        except (OSError, UnicodeDecodeError, ValueError, RecursionError):
            data = None
        lines = [f"{name}: does not fit"]
        problems = []
        if isinstance(data, dict) and _keys_valid(data):
            # every key is valid on its own: what the ISA cannot encode, and every fix
            trial = _unchecked({"name": path.stem.replace("_", "-"), **data})
            problems = trial.fit_problems()
        if not problems:
            lines.append(f"  {first}")
            return False, "\n".join(lines)
        for message, keys in problems:
            lines.append(f"  {message}")
            together = shrink_together(trial, keys)
            if together:
                lines.append("    fix: " + ", ".join(f"{k}: {v}" for k, v in together.items())
                             + "  (each reduced by the same number of steps)")  # fmt: skip
            for key, value in fixes(trial, keys):
                now = data.get(key, getattr(trial, key))
                word = "largest" if dict(keys)[key] < 0 else "smallest"
                shown = str(value).lower() if isinstance(value, bool) else value
                lines.append(f"    fix: {key}: {shown}  (was {str(now).lower() if isinstance(now, bool) else now}; "
                             f"the {word} value that fits with the other keys unchanged)")  # fmt: skip
        return False, "\n".join(lines)
    return True, (f"{name}: fits (configuration {config.name}, content hash "
                  f"{config.content_hash})")  # fmt: skip


def _keys_valid(data: dict) -> bool:
    """Every key known and of a valid type and range (so that only fitting is at stake)."""
    from dataclasses import fields

    from qaccel.targets.vta.config import INT_RANGES, HardwareConfig

    known = {f.name for f in fields(HardwareConfig)}
    for key, value in data.items():
        if key not in known:
            return False
        if key in INT_RANGES:
            lo, hi = INT_RANGES[key]
            if not isinstance(value, int) or isinstance(value, bool) or not lo <= value <= hi:
                return False
    return data.get("log_batch", 0) == 0 and (data.get("log_inp_width", 3),
                                              data.get("log_wgt_width", 3),
                                              data.get("log_acc_width", 5)) == (3, 3, 5)


def run(argv: Sequence[str] | None = None) -> int:
    from qaccel.targets.vta.config import ConfigError, HardwareConfig

    args = parser().parse_args(argv)
    if args.command == "check":
        ok, report = check(args.config)
        print(report)
        return 0 if ok else 1
    path = _source(args.config)
    try:
        config = HardwareConfig.from_json(path)
    except ConfigError as e:
        _fail(f"{e} (qaccel-config check {args.config} lists every fix)")
    g = geometry(config)
    if args.json:
        print(json.dumps(g, indent=1))
    else:
        print(format_geometry(g, str(path)))
    return 0


def main(argv: Sequence[str] | None = None) -> None:
    from qaccel.tools.cli import resource_errors

    with resource_errors(PROG):
        code = run(argv)
    sys.exit(code)


if __name__ == "__main__":
    main()
