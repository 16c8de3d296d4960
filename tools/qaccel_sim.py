"""qaccel-sim: run a VTA-like program on the functional simulator and print the timing report.

    qaccel-sim PROGRAM [--dram IMAGE.npz] [--uops UOPS.bin] [--config HW.json] [--trace]
               [--dump OFF:COUNT[:TYPE]]
    qaccel-sim PROGRAM --disasm          # print the canonical assembly and stop
    qaccel-sim PROGRAM --timing-only     # cycle counts from the instruction stream alone

PROGRAM is assembly text (see docs/isa.md) or a binary stream of 16-byte little-endian
instructions (`.bin`, or any file that is not UTF-8 text). IMAGE.npz holds `dram` (flat uint8)
and optionally `uops` (uint32 micro-op image); UOPS.bin is a micro-op image as raw little-endian
uint32 (`qaccel-compile` writes one per layer beside the function's `dram.npz`); without them
the program's `.dram`/`.i8`/`.i32`/`.uop` directives build them. `--output OUT.npz` saves the final DRAM. Errors are one line
naming the file and the instruction index, with exit status 1; so are files, DRAM images and
simulator states above the memory budget (`QACCEL_MEMORY_LIMIT`) and programs above the step
budget (`QACCEL_STEP_LIMIT`), refused before anything is allocated or run.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

_DUMP_TYPES = {"i8": "i1", "u8": "u1", "i32": "<i4", "u32": "<u4"}


def _load_program(path: Path, fmt: str, config):
    from qaccel.kernels.memory import check_bytes
    from qaccel.targets.vta.asm import assemble
    from qaccel.targets.vta.isa import Program

    check_bytes(path.stat().st_size, f"{path}: the program")
    data = path.read_bytes()
    if fmt == "auto":
        fmt = "bin" if path.suffix == ".bin" else "asm"
        if fmt == "asm":
            try:
                data.decode("utf-8")
            except UnicodeDecodeError:
                fmt = "bin"
    if fmt == "bin":
        return Program.from_bytes(data, config)
    return assemble(data.decode("utf-8"), config)


def _parse_dump(spec: str):
    parts = spec.split(":")
    if len(parts) not in (2, 3):
        raise ValueError(f"--dump {spec!r}: expected OFFSET:COUNT[:i8|u8|i32|u32]")
    kind = parts[2] if len(parts) == 3 else "u8"
    if kind not in _DUMP_TYPES:
        raise ValueError(f"--dump {spec!r}: unknown type {kind!r}")
    return int(parts[0], 0), int(parts[1], 0), kind


def _energy_line(program, config) -> str:
    """The analytic energy of one run (targets/vta/energy.py) at the configuration's
    per-operation energies."""
    from qaccel.targets.vta.energy import access_counts, program_energy

    e = program_energy(access_counts(program, config), config)
    total = e.total_pj
    split = ", ".join(f"{name} {part / total:.1%}" if total else f"{name} 0"
                      for name, part in (("MACs", e.mac_pj), ("ALU", e.alu_pj),
                                         ("SRAM", e.sram_pj), ("DRAM", e.dram_pj)))  # fmt: skip
    return f"energy:            {total / 1e6:.6f} uJ  ({split})"


class _ArgumentError(Exception):
    """A command-line mistake (argparse's), reported in one line with exit status 1."""


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="qaccel-sim", description=__doc__.splitlines()[0])
    ap.add_argument("program", type=Path)
    ap.add_argument("--dram", type=Path, help=".npz with 'dram' (uint8) and optional 'uops'")
    ap.add_argument("--uops", type=Path, help="micro-op image: raw little-endian uint32")
    ap.add_argument("--config", type=Path, help="hardware config JSON (default: VTA default)")
    ap.add_argument("--format", choices=("auto", "asm", "bin"), default="auto")
    ap.add_argument("--disasm", action="store_true", help="print the canonical assembly only")
    ap.add_argument("--timing-only", action="store_true", help="no data, no hazard checks")
    ap.add_argument("--trace", action="store_true", help="each instruction's start/end cycle")
    ap.add_argument("--dump", action="append", default=[], metavar="OFF:COUNT[:TYPE]",
                    help="print COUNT elements of the final DRAM from byte OFF")  # fmt: skip
    ap.add_argument("--output", type=Path, help="write the final DRAM to this .npz")
    ap.add_argument("--simulator", choices=("c", "python"), default="c",
                    help="c: libqaccel_vta (default); python: the reference simulator")  # fmt: skip
    from qaccel.tools.cli import OutputPathError, check_output_file, one_line_argument_errors

    one_line_argument_errors(ap, "qaccel-sim", raise_as=_ArgumentError)
    try:
        args = ap.parse_args(argv)
    except _ArgumentError as e:
        print(f"qaccel-sim: error: {e}", file=sys.stderr)
        return 1

    from qaccel.targets.vta.asm import AsmError, disassemble
    from qaccel.targets.vta.config import DEFAULT_CONFIG, ConfigError, HardwareConfig
    from qaccel.targets.vta.simulator import SimulationError, simulate, timing

    def fail(message: str) -> int:
        print(f"qaccel-sim: error: {message}", file=sys.stderr)
        return 1

    try:
        config = HardwareConfig.from_json(args.config) if args.config else DEFAULT_CONFIG
        dumps = [_parse_dump(d) for d in args.dump]
        if args.output:
            check_output_file(args.output, "--output")
    except (ConfigError, ValueError, OutputPathError) as e:
        return fail(str(e))
    from qaccel.kernels.memory import MemoryBudgetError, check_bytes, check_npz

    try:
        program = _load_program(args.program, args.format, config)
    except OSError as e:
        return fail(f"{args.program}: {e.strerror or e}")
    except MemoryBudgetError as e:
        return fail(str(e))
    except (AsmError, ValueError) as e:
        return fail(f"{args.program}: {e}")
    if args.disasm:
        sys.stdout.write(disassemble(program))
        return 0
    uops = dram = None
    if args.dram:
        try:
            check_npz(args.dram, f"{args.dram}: the DRAM image")
            with np.load(args.dram) as image:
                if "dram" not in image:
                    return fail(f"{args.dram}: no 'dram' array in the image")
                dram = np.ascontiguousarray(image["dram"]).reshape(-1)
                if dram.dtype != np.uint8:
                    return fail(f"{args.dram}: 'dram' must be uint8, got {dram.dtype}")
                if "uops" in image:
                    uops = np.asarray(image["uops"]).astype(np.uint32).reshape(-1)
        except MemoryBudgetError as e:
            return fail(str(e))
        except (OSError, ValueError) as e:
            return fail(f"{args.dram}: cannot read DRAM image: {e}")
    if args.uops:
        try:
            check_bytes(args.uops.stat().st_size, f"{args.uops}: the micro-op image")
            raw = args.uops.read_bytes()
        except MemoryBudgetError as e:
            return fail(str(e))
        except OSError as e:
            return fail(f"{args.uops}: {e.strerror or e}")
        if len(raw) % 4:
            return fail(f"{args.uops}: {len(raw)} bytes is not a whole number of micro-ops")
        uops = np.frombuffer(raw, "<u4").astype(np.uint32)
    try:
        if args.timing_only:
            report, result = timing(program, config, simulator=args.simulator), None
        else:
            result = simulate(program, uops, dram, config, simulator=args.simulator)
            report = result.timing
    except SimulationError as e:
        return fail(f"{args.program}: {e}")
    print(report.format())
    print(_energy_line(program, config))
    if result is not None:
        leftover = {k: v for k, v in result.leftover_tokens.items() if v}
        if leftover:
            print("leftover tokens:   " + " ".join(f"{k}={v}" for k, v in leftover.items()))
    if args.trace:
        print("trace:  index module        start        end  instruction")
        print(report.format_trace(program))
    if result is not None:
        for offset, count, kind in dumps:
            dt = np.dtype(_DUMP_TYPES[kind])
            end = offset + count * dt.itemsize
            if offset < 0 or end > len(result.dram):
                return fail(f"--dump {offset}:{count}: outside the {len(result.dram)}-byte DRAM")
            values = result.dram[offset:end].view(dt)
            print(f"dram[{offset}:{end}] {kind}: " + " ".join(str(int(v)) for v in values))
        if args.output:
            try:
                np.savez(args.output, dram=result.dram)
            except OSError as e:
                return fail(f"--output '{args.output}': {e.strerror or e}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
