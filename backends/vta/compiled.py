"""What `compile_module` produces and `load_artifact` reads back: the compiled model.

    CompiledModel            the host module, the hardware config, per accelerator function a
      .functions[name]       CompiledFunction: its layers, arena slots and DRAM image,
      .fallbacks             the ops that run on the host and why, and
      .report                the cycle report (`backends/vta/report.py`).

Layers and arena slots refer to the accelerator function's body by position (`value_ref`):
op positions in `func.body.block.ops`, stable across print and parse.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from qaccel.dialects.annotations import TARGET_ATTR, accelerator_functions
from qaccel.dialects.types import tensor_dtype
from qaccel.lowering.vta.emit import LayerProgram
from qaccel.lowering.vta.emit_alu import AluProgram
from qaccel.targets.vta.config import HardwareConfig
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.ir import Operation, SSAValue



class CompileError(Exception):
    """The module cannot be compiled (one line for the user)."""


# --------------------------------------------------------------------------------------------
# Value references: positions in a function body, stable across print and parse.


def value_ref(value: SSAValue, index_of: dict[Operation, int]) -> list[int]:
    """["arg", i] is not JSON-homogeneous; use [-1, i] for block argument i, [op, result]."""
    owner = value.owner
    if isinstance(owner, Operation):
        return [index_of[owner], value.index]  # type: ignore[attr-defined]
    return [-1, value.index]  # type: ignore[attr-defined]


def resolve(ref: Sequence[int], ops: list[Operation], f: func.FuncOp) -> SSAValue:
    op_index, result = ref
    if op_index < 0:
        return f.body.block.args[result]
    return ops[op_index].results[result]


def top_level(op: Operation, block) -> Operation:
    """The op of `block` that is `op` or holds it (an op inside a formed layer: the layer)."""
    while op.parent_block() is not block and op.parent_op() is not None:
        op = op.parent_op()  # type: ignore[assignment]
    return op



# --------------------------------------------------------------------------------------------
# The compiled model


@dataclass
class CompiledLayer:
    function: str
    index: int
    ops: list[int]  # body positions of the layer's ops (its `vta.layer`), skipped by the host
    anchor: int  # body position of the `vta.layer` whose result 0 the layer produces
    inputs: list[int]  # arena slots (indices into the function's `slots`) the layer reads
    output: int  # arena slot the layer writes
    widened: int | None  # body position of the layer whose result 1 (int32) is widen(output)
    offset: int | None  # the anchor is int32 = the stored int8 values - offset (None: as stored)
    program: LayerProgram | AluProgram | None  # None after `load_artifact`
    words: np.ndarray  # the instruction stream
    uops: np.ndarray  # the micro-op image
    description: str = ""
    report: dict = field(default_factory=dict)


@dataclass
class ArenaSlot:
    """A packed tensor in a function's arena: where, how long it lives, who moves it."""

    value: list[int]  # value reference (see `value_ref`)
    offset: int
    nbytes: int
    start: int
    end: int
    host_writes: bool  # produced on the host: written before the first layer reads it
    host_reads: bool  # read back after the layer that writes it (a host op or return uses it)


@dataclass
class CompiledFunction:
    name: str
    layers: list[CompiledLayer]
    slots: list[ArenaSlot]
    arena_nbytes: int
    image: np.ndarray  # the DRAM image: arena zero, then every layer's constants

    def run_layer(self, lay: CompiledLayer, image: np.ndarray, config: HardwareConfig,
                  simulator: str = "c"):  # fmt: skip
        """Simulate one layer on `image` (not modified); the DRAM after it. `simulator`: "c"
        (libqaccel_vta) or "python" (the reference)."""
        from qaccel.targets.vta.simulator import simulate

        result = simulate(lay.words, lay.uops, image, config, simulator=simulator)
        if any(result.leftover_tokens.values()):
            raise CompileError(f"{self.name} layer {lay.index}: tokens left over "
                               f"{result.leftover_tokens}")  # fmt: skip
        return result.dram

    def read(self, image: np.ndarray, lay: CompiledLayer, out_type: TensorType) -> np.ndarray:
        """The layer's output as the accel op's value (int32 minus `offset` when widened)."""
        slot = self.slots[lay.output]
        raw = image[slot.offset : slot.offset + slot.nbytes]
        if lay.offset is None:
            return raw.view(tensor_dtype(out_type)).reshape(out_type.get_shape()).copy()
        y = raw.view(np.int8).astype(np.int32) - np.int32(lay.offset)
        return y.reshape(out_type.get_shape())

    def write(self, image: np.ndarray, slot_index: int, x: np.ndarray) -> None:
        slot = self.slots[slot_index]
        data = np.ascontiguousarray(x).reshape(-1).view(np.uint8)
        if data.size != slot.nbytes:
            raise CompileError(f"{self.name}: a tensor of {data.size} bytes for an arena slot "
                               f"of {slot.nbytes}")  # fmt: skip
        image[slot.offset : slot.offset + slot.nbytes] = data


@dataclass
class Fallback:
    function: str
    op: str  # op name
    position: int
    reason: str

    def line(self) -> str:
        return f"host fallback inside {self.function}: {self.op} (#{self.position}): {self.reason}"


@dataclass
class CompiledModel:
    module: ModuleOp
    config: HardwareConfig
    functions: dict[str, CompiledFunction]
    fallbacks: list[Fallback]
    report: dict

    @property
    def layers(self) -> dict[str, list[CompiledLayer]]:
        return {name: f.layers for name, f in self.functions.items()}


__all__ = [
    "TARGET_ATTR", "ArenaSlot", "CompileError", "CompiledFunction", "CompiledLayer",
    "CompiledModel", "Fallback", "accelerator_functions", "resolve", "top_level", "value_ref",
]  # fmt: skip
