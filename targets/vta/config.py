"""Hardware configuration of the VTA-like accelerator: buffer geometry and timing constants.

`HardwareConfig()` is VTA's default configuration (1x16x16 GEMM core, 32 KiB micro-op and input
buffers, 256 KiB weight buffer, 128 KiB accumulator) on a 16-byte (128-bit AXI) bus at 333 MHz,
as in VTA's Ultra96/ZCU104 packaging. `HardwareConfig.from_json(path)` reads the same keys as
`vta_default.json` (packaged next to this file; `vta_store_requant.json` adds the store
module's output stage, docs/isa.md §6.3), or the name of a bundled file; missing keys take the
defaults. The ISA's field widths derive from the buffer depths exactly as in VTA's `hw_spec.h`, and a configuration whose
fields do not fit in 128-bit instructions / 32-bit micro-ops is rejected. See `docs/isa.md`.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, fields
from pathlib import Path

DEFAULT_CONFIG_PATH = Path(__file__).with_name("vta_default.json")


class ConfigError(ValueError):
    """A hardware configuration that the ISA cannot describe (names the offending key)."""


MAX_CLOCK_MHZ = 100_000.0
# Per-operation energies (picojoules) are finite numbers in [0, MAX_ENERGY_PJ]: a DRAM byte
# costs ~1e2 pJ, so 1e6 leaves room for any technology while totals stay far below 2**53.
MAX_ENERGY_PJ = 1_000_000.0
ENERGY_KEYS = (
    "energy_mac_pj", "energy_alu_op_pj", "energy_alu_mul_pj", "energy_sram_read_pj_per_byte",
    "energy_sram_write_pj_per_byte", "energy_dram_pj_per_byte",
)  # fmt: skip
# The accepted range of every integer key. Buffer sizes are bytes as log2 (at most 16 MiB);
# cycle counts and the bus width stay within what a timing model of real hardware needs, so
# that cycle totals stay exact integers far below 2**53.
INT_RANGES = {
    "log_inp_width": (0, 10),  # only 3, 3, 5 (int8, int8, int32): refused below
    "log_wgt_width": (0, 10),
    "log_acc_width": (0, 10),
    "log_batch": (0, 10),  # only 0: refused below
    "log_block": (2, 5),
    "log_uop_buff_size": (0, 24),
    "log_inp_buff_size": (0, 24),
    "log_wgt_buff_size": (0, 24),
    "log_acc_buff_size": (0, 24),
    "bus_width_bytes": (1, 4096),
    "dma_setup_cycles": (0, 100_000),
    "insn_issue_cycles": (0, 100_000),
    "gemm_cycles_per_uop": (1, 100_000),
    "alu_cycles_per_uop": (1, 100_000),
}

FIELD_DOCS = {
    "name": "the configuration's name (reports and sweep tables show it)",
    "log_inp_width": "log2 of the input element's bits: 3 (int8) is the only value supported",
    "log_wgt_width": "log2 of the weight element's bits: 3 (int8) is the only value supported",
    "log_acc_width": "log2 of the accumulator's bits: 5 (int32) is the only value supported",
    "log_batch": "log2 of BATCH, the rows of one GEMM block: 0 (BATCH = 1) is the only value "
                 "supported",
    "log_block": "log2 of BLOCK_IN = BLOCK_OUT, the lanes of one GEMM block (2 to 5: 4 to 32 "
                 "lanes); the GEMM core does BATCH x BLOCK_IN x BLOCK_OUT MACs per cycle",
    "log_uop_buff_size": "log2 of the micro-op buffer's bytes",
    "log_inp_buff_size": "log2 of the input buffer's bytes",
    "log_wgt_buff_size": "log2 of the weight buffer's bytes",
    "log_acc_buff_size": "log2 of the accumulator buffer's bytes",
    "clock_mhz": "clock frequency in MHz: turns cycles into seconds",
    "bus_width_bytes": "bytes the one shared DRAM port moves per cycle",
    "dma_setup_cycles": "fixed latency of every LOAD/STORE before its data moves",
    "insn_issue_cycles": "decode/dispatch cost of every instruction",
    "gemm_cycles_per_uop": "cycles of one GEMM micro-op iteration (one BATCH x BLOCK x BLOCK "
                           "block)",
    "alu_cycles_per_uop": "cycles of one ALU micro-op iteration (one accumulator row)",
    "store_requant": "the store module has an output stage: STORE OUTQ requantizes while it "
                     "stores, so the requantization leaves the compute module (docs/isa.md "
                     "§6.3)",
    "energy_mac_pj": "energy of one GEMM MAC (int8 multiply + int32 accumulate), charged for "
                     "every MAC the core executes (padding lanes, bias and zero-point GEMMs "
                     "included)",
    "energy_alu_op_pj": "energy of one adder-class ALU lane operation (ADD, MIN, MAX, SHR, "
                        "RSHR; also the output stage's)",
    "energy_alu_mul_pj": "energy of one multiplier ALU lane operation (MUL, RDMUL; also the "
                         "output stage's)",
    "energy_sram_read_pj_per_byte": "energy of reading one byte of an on-chip buffer",
    "energy_sram_write_pj_per_byte": "energy of writing one byte of an on-chip buffer",
    "energy_dram_pj_per_byte": "energy of moving one byte between DRAM and the accelerator "
                               "(LOAD or STORE)",
}
"""The meaning of every key (docs/configuration.md is generated from it, with `key_range`)."""


def key_range(name: str) -> str:
    """The values a key accepts, as text."""
    if name == "name":
        return "any string"
    if name == "store_requant":
        return "true or false"
    if name == "clock_mhz":
        return f"number in (0, {MAX_CLOCK_MHZ:g}]"
    if name in ENERGY_KEYS:
        return f"number in [0, {MAX_ENERGY_PJ:g}] (picojoules)"
    lo, hi = INT_RANGES[name]
    only = {"log_inp_width": 3, "log_wgt_width": 3, "log_acc_width": 5, "log_batch": 0}
    if name in only:
        return f"integer, only {only[name]}"
    return f"integer in [{lo}, {hi}]"


@dataclass(frozen=True)
class HardwareConfig:
    name: str = ""
    """Reports and errors call the configuration this. Left empty, it is `vta-default` when
    every other key has VTA's default value and `custom` otherwise."""
    # Geometry, as log2 like VTA's vta_config.json.
    log_inp_width: int = 3  # int8 inputs
    log_wgt_width: int = 3  # int8 weights
    log_acc_width: int = 5  # int32 accumulators
    log_batch: int = 0  # BATCH = 1
    log_block: int = 4  # BLOCK_IN = BLOCK_OUT = 16
    log_uop_buff_size: int = 15  # bytes
    log_inp_buff_size: int = 15
    log_wgt_buff_size: int = 18
    log_acc_buff_size: int = 17
    # Timing model.
    clock_mhz: float = 333.0
    bus_width_bytes: int = 16  # one shared DRAM port, bytes per cycle
    dma_setup_cycles: int = 32  # fixed latency of every LOAD/STORE before data moves
    insn_issue_cycles: int = 1  # decode/dispatch cost of every instruction
    gemm_cycles_per_uop: int = 1  # one BATCHxBLOCK_INxBLOCK_OUT block per cycle
    alu_cycles_per_uop: int = 2  # one accumulator row every two cycles
    # Extension (docs/isa.md §6.3): the store module requantizes while it stores (memory type
    # OUTQ) and can clear the accumulator rows it has read, so the requantization tail leaves
    # the compute module. Off in VTA's configuration, where the tail is the method's ALU
    # sequence.
    store_requant: bool = False
    # Energy model (targets/vta/energy.py, docs/configuration.md): picojoules per operation,
    # 45 nm figures of Horowitz, "Computing's energy problem (and what we can do about it)",
    # ISSCC 2014, as tabulated per 32-bit access by Han et al., NIPS 2015 (Table 1).
    energy_mac_pj: float = 0.3  # int8 multiply (0.2 pJ) + int32 accumulate (0.1 pJ)
    energy_alu_op_pj: float = 0.1  # int32 add (also min, max, shifts)
    energy_alu_mul_pj: float = 3.1  # int32 multiply
    energy_sram_read_pj_per_byte: float = 1.25  # 8 KB SRAM, 5 pJ per 32-bit read
    energy_sram_write_pj_per_byte: float = 1.25  # taken equal to a read
    energy_dram_pj_per_byte: float = 160.0  # DRAM, 640 pJ per 32-bit access

    def __post_init__(self):
        if self.name == "":
            default = all(getattr(self, f.name) == f.default for f in fields(self)
                          if f.name != "name")  # fmt: skip
            object.__setattr__(self, "name", "vta-default" if default else "custom")
        for f in fields(self):
            value = getattr(self, f.name)
            shown = repr(value) if len(repr(value)) <= 40 else repr(value)[:37] + "..."
            if f.name == "name":
                if not isinstance(value, str):
                    raise ConfigError(f"hardware config: name must be a string, got {shown}")
                continue
            if f.name == "store_requant":
                if not isinstance(value, bool):
                    raise ConfigError(
                        f"hardware config: store_requant must be true or false, got {shown}"
                    )
                continue
            if f.name in ENERGY_KEYS:
                ok = isinstance(value, int | float) and not isinstance(value, bool)
                if not ok or not math.isfinite(value) or not 0 <= value <= MAX_ENERGY_PJ:
                    raise ConfigError(f"hardware config: {f.name} must be a number of picojoules "
                                      f"in [0, {MAX_ENERGY_PJ:g}], got {shown}")  # fmt: skip
                continue
            if f.name == "clock_mhz":
                ok = isinstance(value, int | float) and not isinstance(value, bool)
                if not ok or not math.isfinite(value) or not 0 < value <= MAX_CLOCK_MHZ:
                    raise ConfigError(f"hardware config: clock_mhz must be a number in "
                                      f"(0, {MAX_CLOCK_MHZ}], got {shown}")  # fmt: skip
                continue
            lo, hi = INT_RANGES[f.name]
            if not isinstance(value, int) or isinstance(value, bool) or not lo <= value <= hi:
                raise ConfigError(
                    f"hardware config: {f.name} must be a non-negative integer in [{lo}, {hi}], "
                    f"got {shown}"
                )
        if (self.log_inp_width, self.log_wgt_width, self.log_acc_width) != (3, 3, 5):
            raise ConfigError(
                "hardware config: only int8 inputs/weights and int32 accumulators are supported "
                "(log_inp_width=3, log_wgt_width=3, log_acc_width=5)"
            )
        if self.log_batch != 0:
            raise ConfigError("hardware config: only log_batch=0 (BATCH=1) is supported")
        problems = self.fit_problems()
        if problems:
            message, keys = problems[0]
            raise ConfigError(f"{message}; {describe_fixes(self, keys)}")

    def fit_problems(self) -> list[tuple[str, tuple[tuple[str, int], ...]]]:
        """What keeps this configuration's ISA from encoding it: (message, the keys that can
        fix it, each with +1 if it must grow or -1 if it must shrink), in check order."""
        out: list[tuple[str, tuple[tuple[str, int], ...]]] = []
        who = f"hardware config {self.name!r}"
        for key in ("uop", "inp", "wgt", "acc"):
            if self.depth(key) < 1:
                out.append((f"hardware config: log_{key}_buff_size is too small for one element "
                            f"({self.elem_bytes(key)} bytes)", ((f"log_{key}_buff_size", +1),)))  # fmt: skip
        if out:
            return out
        la, li, lw, lu = self.log_acc_depth, self.log_inp_depth, self.log_wgt_depth, self.log_uop_depth
        word0 = 7 + 1 + lu + (lu + 1) + 14 + 14
        word1_gemm = 2 * (la + li + lw)
        word1_alu = 4 * la + 3 + 1 + 16
        uop_bits = la + self.uop_src_bits + lw
        grow_block = ("log_block", +1)  # wider blocks: fewer, larger rows in the same bytes
        if word0 > 64:
            out.append((f"{who}: GEMM/ALU fields need {word0}+{max(word1_gemm, word1_alu)} bits, "
                        f"more than two 64-bit words: the first word needs 2 x log uop depth "
                        f"{lu} + 37 = {word0} bits > 64", (("log_uop_buff_size", -1),)))  # fmt: skip
        if word1_gemm > 64:
            out.append((f"{who}: GEMM/ALU fields need {word0}+{max(word1_gemm, word1_alu)} bits, "
                        f"more than two 64-bit words: the GEMM word needs 2 x (log depths acc "
                        f"{la} + inp {li} + wgt {lw}) = {word1_gemm} bits > 64",
                        (("log_acc_buff_size", -1), ("log_inp_buff_size", -1),
                         ("log_wgt_buff_size", -1), grow_block)))  # fmt: skip
        if word1_alu > 64:
            out.append((f"{who}: GEMM/ALU fields need {word0}+{max(word1_gemm, word1_alu)} bits, "
                        f"more than two 64-bit words: the ALU word needs 4 x log acc depth {la} "
                        f"+ 20 = {word1_alu} bits > 64",
                        (("log_acc_buff_size", -1), grow_block)))  # fmt: skip
        if uop_bits > 32:
            out.append((f"{who}: micro-op fields need {uop_bits} bits > 32 (log depths acc {la} "
                        f"+ max(acc, inp) {self.uop_src_bits} + wgt {lw})",
                        (("log_acc_buff_size", -1), ("log_inp_buff_size", -1),
                         ("log_wgt_buff_size", -1), grow_block)))  # fmt: skip
        if self.store_requant and la + 2 > 16:
            out.append((f"{who}: store_requant needs a parameter row field of {la} bits plus 2 "
                        "step bits in 16", (("log_acc_buff_size", -1), ("store_requant", -1),
                                            grow_block)))  # fmt: skip
        for key in ("inp", "acc"):
            if self.depth(key) > 1 << 16:
                out.append((f"hardware config: log_{key}_buff_size makes the {key} buffer "
                            f"{self.depth(key)} rows deep, more than the 16-bit sram_base field "
                            "addresses", ((f"log_{key}_buff_size", -1), grow_block)))  # fmt: skip
        return out

    # --- derived geometry -------------------------------------------------------------------
    @property
    def batch(self) -> int:
        return 1 << self.log_batch

    @property
    def block(self) -> int:
        return 1 << self.log_block

    @property
    def block_in(self) -> int:
        return self.block

    @property
    def block_out(self) -> int:
        return self.block

    def elem_bytes(self, key: str) -> int:
        """Bytes of one element (buffer row) of memory `key` in uop/inp/wgt/acc/out."""
        b, blk = self.batch, self.block
        return {"uop": 4, "inp": b * blk, "wgt": blk * blk, "acc": 4 * b * blk, "out": b * blk}[key]

    @property
    def dram_align(self) -> int:
        """Byte alignment of every DRAM region the compiler lays out: a multiple of every
        element size (so any memory type can address the region), at least 256."""
        return max(256, *(self.elem_bytes(k) for k in ("uop", "inp", "wgt", "acc", "out")))

    def depth(self, key: str) -> int:
        size = {
            "uop": self.log_uop_buff_size,
            "inp": self.log_inp_buff_size,
            "wgt": self.log_wgt_buff_size,
            "acc": self.log_acc_buff_size,
        }[key]
        return (1 << size) // self.elem_bytes(key)

    @property
    def log_uop_depth(self) -> int:
        return self.depth("uop").bit_length() - 1

    @property
    def log_inp_depth(self) -> int:
        return self.depth("inp").bit_length() - 1

    @property
    def log_wgt_depth(self) -> int:
        return self.depth("wgt").bit_length() - 1

    @property
    def log_acc_depth(self) -> int:
        return self.depth("acc").bit_length() - 1

    @property
    def uop_src_bits(self) -> int:
        return max(self.log_acc_depth, self.log_inp_depth)

    @property
    def macs_per_cycle(self) -> int:
        return self.batch * self.block_in * self.block_out

    # --- (de)serialization ------------------------------------------------------------------
    @staticmethod
    def from_dict(data: dict, default_name: str = "custom") -> HardwareConfig:
        """The configuration of `data`; without a `name` it is called `default_name` (never
        `vta-default`, which is VTA's own configuration)."""
        known = {f.name for f in fields(HardwareConfig)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ConfigError(f"hardware config: unknown key(s) {', '.join(unknown)}")
        return HardwareConfig(**{"name": default_name, **data})

    @staticmethod
    def from_json(path: str | Path) -> HardwareConfig:
        """Read a configuration file; a name without a file (`vta-default`,
        `vta-store-requant`) is the bundled configuration of that name."""
        name = str(path)
        if not Path(path).exists() and name.replace("-", "_").isidentifier():
            bundled = DEFAULT_CONFIG_PATH.with_name(f"{name.replace('-', '_')}.json")
            if not bundled.exists():
                known = sorted(f.stem.replace("_", "-")
                               for f in DEFAULT_CONFIG_PATH.parent.glob("*.json"))  # fmt: skip
                raise ConfigError(f"{name}: no such hardware config file or bundled config "
                                  f"(bundled: {', '.join(known)})")  # fmt: skip
            path = bundled
        try:
            data = json.loads(Path(path).read_text())
        except (OSError, UnicodeDecodeError, json.JSONDecodeError, RecursionError) as e:
            raise ConfigError(f"{path}: cannot read hardware config: {e}") from None
        if not isinstance(data, dict):
            raise ConfigError(f"{path}: hardware config must be a JSON object")
        try:  # a file without a name is called after the file (`small.json`: `small`)
            return HardwareConfig.from_dict(data, Path(path).stem.replace("_", "-"))
        except ConfigError as e:
            raise ConfigError(f"{path}: {e}") from None

    def to_dict(self) -> dict:
        return asdict(self)

    @property
    def content_hash(self) -> str:
        """12 hex digits of SHA-256 over every key but `name`: two configurations compile
        alike exactly when their hashes are equal, whatever they are called."""
        import hashlib

        data = {k: v for k, v in self.to_dict().items() if k != "name"}
        return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()[:12]


def _unchecked(values: dict) -> HardwareConfig:
    """A configuration with `values`, without the checks (to test candidate fixes)."""
    config = object.__new__(HardwareConfig)
    for f in fields(HardwareConfig):
        object.__setattr__(config, f.name, values.get(f.name, f.default))
    return config


def fixes(config: HardwareConfig, keys) -> list[tuple[str, object]]:
    """For each (key, direction) of a problem: the nearest value in that direction, within the
    key's range, that makes the whole configuration fit with every other key unchanged."""
    values = config.to_dict()
    out: list[tuple[str, object]] = []
    for key, direction in keys:
        if key == "store_requant":
            candidates: list[object] = [False] if values[key] else []
        else:
            lo, hi = INT_RANGES[key]
            stop = lo - 1 if direction < 0 else hi + 1
            candidates = list(range(values[key] + direction, stop, direction))
        for value in candidates:
            trial = _unchecked({**values, key: value})
            try:
                if not trial.fit_problems():
                    out.append((key, value))
                    break
            except (ZeroDivisionError, ValueError, KeyError):  # noqa: PERF203 - a few trials
                continue
    return out


def shrink_together(config: HardwareConfig, keys) -> dict[str, int] | None:
    """The buffer sizes among `keys` that must shrink, each reduced by the same smallest
    number of steps that makes the configuration fit (None if no such number)."""
    values = config.to_dict()
    shrink = [k for k, d in keys if d < 0 and k.startswith("log_")]
    if len(shrink) < 2:
        return None
    for step in range(1, 25):
        trial = {**values, **{k: values[k] - step for k in shrink}}
        if any(trial[k] < INT_RANGES[k][0] for k in shrink):
            return None
        try:
            if not _unchecked(trial).fit_problems():
                return {k: trial[k] for k in shrink}
        except (ZeroDivisionError, ValueError, KeyError):
            continue
    return None


def describe_fixes(config: HardwareConfig, keys) -> str:
    """`set log_inp_buff_size to 13 (or less), or log_block to 5 ...`: what `fixes` and
    `shrink_together` find."""
    found = fixes(config, keys)
    together = shrink_together(config, keys)
    names = ", ".join(k for k, _ in keys)
    if not found and not together:
        return f"no change of one key alone fits ({names}): change several"
    parts = []
    if together:
        step = config.to_dict()[next(iter(together))] - next(iter(together.values()))
        parts.append(" and ".join(f"{k} to {v}" for k, v in together.items())
                     + f" ({step} less each)")  # fmt: skip
    for key, value in found:
        if isinstance(value, bool):
            parts.append(f"{key} to {str(value).lower()}")
        else:
            more = dict(keys)[key] < 0
            parts.append(f"{key} to {value} ({'or less' if more else 'or more'}; now "
                         f"{getattr(config, key)})")  # fmt: skip
    return "set " + ", or ".join(parts)


DEFAULT_CONFIG = HardwareConfig()
