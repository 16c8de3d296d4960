"""The partition cost model of `vta`: a host step of the program against a partition boundary.

Some groups the VTA target accepts are not computed by the accelerator but by the host, as a
step of the accelerator program between two layers (`q.lut`'s table lookup, the copies of
`q.concat`, `q.slice` and `q.reshape`, pools the ALU cannot compute bit-exactly, the gather
of `q.resize_nearest_neighbor` and the interpolation of `q.resize_bilinear`, a mean's sum over
the channels, the broadcast of a `[..., 1]` operand over the channels). Each is a
decision point of `partition-graph`: the group either stays inside its partition, or runs on
the CPU as an ordinary operator, which moves the partition's boundary. Both choices run the op
on the host; they differ in what surrounds it:

- **inside** (a host step): the host works on the packed layout (channels padded to whole
  16-lane blocks), and when accelerator work follows that depends on it, the program stops
  for it (`sync`: the host waits for the STOREs before it, then lets the program continue);
- **outside** (on the CPU): the op works on the plain layout, as one more operator the
  runtime dispatches (its kernel invoked on its tensors), and the hop is paid: every
  value that starts crossing the boundary is packed or unpacked by the host and moved through
  the accelerator's DRAM port, and a group between two ops of its partition splits it in two
  (one more launch: the driver call, cache maintenance, the program's and micro-ops' loads and
  the wait for completion). Values that stop crossing count negatively.

Costs are accelerator cycles at the configuration's `clock_mhz`; the host's DRAM transfers
use its `bus_width_bytes`. The host's rates are those of an in-order
Cortex-A53-class core next to the accelerator (VTA's Ultra96/ZCU104 boards), as nanoseconds:
`HOST_NS`. They matter only when the two choices are close, i.e. at a partition's edge, where no
launch is at stake: there the packed layout's padded lanes decide, when they cost more than
the CPU operator's dispatch (a table lookup over 1 channel does 16 times the plain work
inside).

The same rates estimate a compiled model's host work for its report (`backends/vta/report.py`)
and `benchmarks/bench_host_steps.py`: `host_op_ns` prices each host step of an accelerator
program, `program_host_steps` adds them up with the program's stops, and `cpu_op_ns`,
`hop_cycles` and `launch_cycles` price the CPU's operators, packing and launches around the
accelerator functions. They are the cost model's estimate, never a measurement.
"""

from __future__ import annotations

import math
from collections.abc import Container, Iterable

from xdsl.ir import Operation, SSAValue

from qaccel.targets.base import HopSummary, HostStepCost, shape_of, storage_dtype

HOST_NS = {
    "copy": 0.25,  # per byte: memcpy of rows (about 4 GB/s)
    "lookup": 1.0,  # per element: load, index a 256-entry table, store
    "tap": 0.5,  # per window tap of a host pool: load, compare or add
    "interpolate": 2.0,  # per element: four loads, eight 64-bit multiplies, round, store
    "pack": 1.0,  # per packed byte: gather/scatter between NHWC and 16-lane blocks
    "dispatch": 1_000.0,  # one more CPU operator: the runtime invokes its kernel on its tensors
    "launch": 20_000.0,  # a separate accelerator invocation
    "sync": 2_000.0,  # a host step stopping the program: wait for STOREs, signal, resume
    "gather": 1.0,  # per element: load an index, load, store (relayouts, softmax's passes)
    "softmax": 4.0,  # per element: max, table lookup, sum, reciprocal share, scale
    "mac": 1.0,  # per multiply-accumulate of a host matrix product (scalar int8 loop)
}
"""The host's rates in nanoseconds (see the module docstring)."""


def _cycles(ns: float, config) -> int:
    return int(math.ceil(ns * config.clock_mhz / 1000.0))


def _elements(v: SSAValue, block: int | None = None) -> int:
    shape = shape_of(v)
    if not shape:
        return 1
    if block is None:
        return int(math.prod(shape))
    lanes = -(-shape[-1] // block) * block
    return int(math.prod(shape[:-1])) * lanes


def _bytes(values: Iterable[SSAValue], block: int) -> int:
    total = 0
    for v in values:
        dtype = storage_dtype(v)
        total += _elements(v, block) * (dtype.itemsize if dtype is not None else 1)
    return total


def _ints(op: Operation, name: str) -> list[int]:
    return [int(v) for v in op.array_prop(name)]  # type: ignore[attr-defined]


def _lane_broadcast(shape, out) -> bool:
    shape, out = tuple(shape or ()), tuple(out or ())
    return len(shape) == len(out) >= 2 and shape[-1] == 1 and out[-1] > 1 and \
        shape[:-1] == out[:-1]  # fmt: skip


def _batch_matmul_gemm_units(op: Operation) -> int | None:
    """Host work per output element of a `q.batch_matmul` that runs as GEMM layers
    (`lower_batch_matmul_gemm`: both operands gathered twice, as GEMM operands and plain for
    their row and column sums, and the correction written per element; the products and the
    requantization are the GEMM layer's), or None when it stays the host step."""
    from qaccel.kernels.bmm_gemm import GEMM_MAX_DIM, dims

    a, b = shape_of(op.operands[0]), shape_of(op.operands[1])
    if not a or not b or len(a) < 2 or len(b) < 2:
        return None
    props = op.properties
    try:
        batch, m, k, n = dims(a, b, bool(props["adj_x"].value.data),  # type: ignore[attr-defined]
                              bool(props["adj_y"].value.data))  # type: ignore[attr-defined]
    except (KeyError, ValueError):
        return None
    if max(batch, m, k, n) > GEMM_MAX_DIM:
        return None
    return 1 + -(-4 * (m * k + k * n) // (m * n))


def host_step_kind(ops: Iterable[Operation], block: int = 16) -> tuple[str, str, int] | None:
    """(what the host step is, its rate's key in `HOST_NS`, units of work per output element)
    when the group is a host step of the program; None when the accelerator runs it."""
    for op in ops:
        name = op.name
        if name == "q.lut":
            return "a table lookup", "lookup", 1
        if name == "q.concat":
            return "a copy (concatenation)", "copy", 1
        if name == "q.slice":
            return "a copy (spatial crop)", "copy", 1
        if name == "q.reshape":
            from qaccel.kernels.layout import reshape_is_view

            a, b = shape_of(op.operands[0]), shape_of(op.results[0])
            if not reshape_is_view(a, b, block):
                return "a gather (reshape moving lanes)", "gather", 1
            return "a copy (reshape)", "copy", 1
        if name == "q.transpose":
            return "a gather (transpose)", "gather", 1
        if name == "q.softmax":
            return "a softmax", "softmax", 1
        if name == "q.batch_matmul":
            gemm = _batch_matmul_gemm_units(op)
            if gemm is not None:
                return "a matrix product on the GEMM core (operands gathered, zero-point " \
                    "terms)", "gather", gemm  # fmt: skip
            x = shape_of(op.operands[0])
            adj_x = op.properties["adj_x"].value.data  # type: ignore[attr-defined]
            return "a matrix product", "mac", int(x[-2] if adj_x else x[-1])
            return "a copy (reshape)", "copy", 1
        if name == "q.mean":
            shape = shape_of(op.operands[0])
            axes = sorted(int(a) % len(shape) for a in _ints(op, "axes")) if shape else []
            if shape and axes == [len(shape) - 1]:  # the lanes summed (accel.lane_sum)
                return "a channel sum (reduction)", "tap", max(1, -(-shape[-1] // 16))
        if name in ("q.mul", "q.add", "q.sub", "q.squared_difference"):
            out = shape_of(op.results[0])
            if any(_lane_broadcast(shape_of(v), out) for v in op.operands):
                return "a lane broadcast (gather)", "copy", 1
        if name == "q.resize_nearest_neighbor":
            return "a gather (nearest-neighbour resize)", "gather", 1
        if name == "q.resize_bilinear":
            return "an interpolation (bilinear resize)", "interpolate", 1
        if name in ("q.max_pool2d", "q.avg_pool2d"):
            kh, kw = _ints(op, "filter")
            taps = kh * kw
            padded = any(_ints(op, "padding"))
            if padded or (name == "q.avg_pool2d" and taps & (taps - 1)):
                why = "padded taps" if padded else f"divisor {taps}"
                return f"a pool ({why})", "tap", taps
    return None


def vta_host_step_cost(summary: HopSummary, config) -> HostStepCost | None:
    """Both choices of one decision point priced (see the module docstring)."""
    kind = host_step_kind(summary.ops, config.block)
    if kind is None:
        return None
    step, rate, per_element = kind
    block = config.block
    inside_ops = set(summary.ops)
    results = [r for op in summary.ops for r in op.results
               if any(u.operation not in inside_ops for u in r.uses)]  # fmt: skip
    work_packed = sum(_elements(r, block) for r in results) * per_element
    work_plain = sum(_elements(r) for r in results) * per_element
    cpu_rate = rate
    bmm = [op for op in summary.ops if op.name == "q.batch_matmul"]
    if bmm and _batch_matmul_gemm_units(bmm[0]) is not None:
        # On the CPU the whole product is the host's: K multiply-accumulates per element.
        x = shape_of(bmm[0].operands[0])
        adj_x = bmm[0].properties["adj_x"].value.data  # type: ignore[attr-defined]
        work_plain = sum(_elements(r) for r in results) * int(x[-2] if adj_x else x[-1])
        cpu_rate = "mac"
    inside = [("host step", _cycles(work_packed * HOST_NS[rate], config))]
    if summary.interior:
        inside.append(("sync", _cycles(HOST_NS["sync"], config)))
    if cpu_rate != rate:  # the products on the GEMM core: one block x block tile per cycle
        from qaccel.kernels.bmm_gemm import dims

        a, b = shape_of(bmm[0].operands[0]), shape_of(bmm[0].operands[1])
        props = bmm[0].properties
        batch, m, k, n = dims(a, b, bool(props["adj_x"].value.data),  # type: ignore[attr-defined]
                              bool(props["adj_y"].value.data))  # type: ignore[attr-defined]
        inside.append(("GEMM", batch * m * -(-k // block) * -(-n // block)))
    packed = _bytes(summary.inputs_without, block) - _bytes(summary.inputs, block)
    unpacked = _bytes(summary.outputs_without, block) - _bytes(summary.outputs, block)
    # The host writes what it packs into the accelerator's DRAM and reads what it unpacks
    # from it, over the one shared port; the accelerator's own LOADs and STOREs of the values
    # are the same either way (every value between layers is in DRAM).
    dram = -(-(packed + unpacked) // config.bus_width_bytes)
    outside = [
        ("CPU op", _cycles(work_plain * HOST_NS[cpu_rate] + HOST_NS["dispatch"], config)),
        ("pack", _cycles(packed * HOST_NS["pack"], config)),
        ("unpack", _cycles(unpacked * HOST_NS["pack"], config)),
        ("DRAM", int(dram)),
        ("launch", (summary.parts - 1) * _cycles(HOST_NS["launch"], config)),
    ]
    return HostStepCost(step, tuple(inside), tuple(outside))


_WINDOWED = ("accel.max_pool2d", "accel.sum_pool2d")


def host_tree_cycles(ops: Iterable[Operation], config) -> int:
    """What an element-wise tree or a pool (`accel` ALU ops, a global sum, a windowed pool,
    widenings and narrowings) costs as a host step of the program, in accelerator cycles: one
    operation per element of each op's result (of its operand for a sum; per window tap for a
    pool) at the rate of a pool tap (load, add or compare, store), on the packed layout. The program's stop for the step is not counted: it is
    priced against the layer's cycles, and a host step next to other host steps shares
    their stop."""
    work = 0
    for op in ops:
        if not op.results or op.name == "vta.yield":
            continue
        v = op.operands[0] if op.name == "accel.reduce_sum" else op.results[0]
        taps = math.prod(_ints(op, "window")) if op.name in _WINDOWED else 1
        work += _elements(v) * taps
    return _cycles(work * HOST_NS["tap"], config)


def host_sync_cycles(config) -> int:
    """One stop of the program for a host step (`HOST_NS["sync"]`), in accelerator cycles."""
    return _cycles(HOST_NS["sync"], config)


# --------------------------------------------------------------------------------------------
# The estimate of a compiled model's host work: the report's and bench_host_steps.py's one
# pricing.

_ELEMENTWISE_HOST = ("accel.add", "accel.mul", "accel.min", "accel.max", "accel.shift_left",
                     "accel.round_multiply", "accel.round_rshift", "accel.bias_add_zp",
                     "accel.widen", "accel.narrow")  # fmt: skip
_COPIES = ("accel.concat", "accel.concat_lanes", "accel.crop", "accel.reshape", "accel.pad")
_NOT_HOST_WORK = ("tfl.const", "vta.yield", "func.return")


def host_op_ns(op: Operation) -> float:
    """What one op of an accelerator function costs the host as a step of the program, in
    nanoseconds at `HOST_NS`'s rates, on the packed layout: per element of its result an
    element-wise op (`accel` ALU ops, widenings and narrowings) at a pool tap's rate, a
    windowed pool per window tap, a sum (global or over the lanes) per element of its operand,
    a table lookup, a softmax, a host matrix product per multiply-accumulate, a copy
    (concatenation, crop, reshape, padding) per element at the copy rate (a byte of int8), and
    anything else (gathers, relayouts,
    requantizations, the matrix products' operand gathers and corrections) per element at
    the gather rate. Constants, yields and returns cost nothing. (`host_tree_cycles`, which
    prices a formed layer's body for `alu_or_host`'s choice, agrees on every op a layer holds
    except a pool layer's padding, which it counts at the tap rate.)"""
    if op.name in _NOT_HOST_WORK or not op.results:
        return 0.0
    out = op.results[0].type
    if not hasattr(out, "get_shape"):
        return 0.0
    n = math.prod(out.get_shape())  # type: ignore[attr-defined]
    name = op.name
    if name in _ELEMENTWISE_HOST:
        return n * HOST_NS["tap"]
    if name in _WINDOWED or name == "accel.host_pool2d":
        return n * math.prod(_ints(op, "window")) * HOST_NS["tap"]
    if name in ("accel.reduce_sum", "accel.lane_sum"):
        summed = op.operands[0].type.get_shape()  # type: ignore[attr-defined]
        return math.prod(summed) * HOST_NS["tap"]
    if name == "accel.lut":
        return n * HOST_NS["lookup"]
    if name == "accel.softmax":
        return n * HOST_NS["softmax"]
    if name == "accel.batch_matmul":
        k = op.operands[0].type.get_shape()[-1]  # type: ignore[attr-defined]
        return n * k * HOST_NS["mac"]
    if name in _COPIES:
        return n * HOST_NS["copy"]
    return n * HOST_NS["gather"]


def program_host_steps(ops: Iterable[Operation], on_accelerator: Container[Operation]
                       ) -> tuple[float, int]:  # fmt: skip
    """(the host's nanoseconds, the program's stops) for the host steps of one accelerator
    function whose body's top-level ops are `ops`: every op the accelerator does not run
    (`on_accelerator`: the emitted layers) is a host step, priced by `host_op_ns` (an op with
    a body, such as a formed layer the emitter refused, by each op in it and by itself); a
    run of host steps between two layers stops the program once (steps before the first
    layer or after the last one run before the program starts or after it ends)."""
    ns, stops = 0.0, 0
    seen_layer = pending = False
    for op in ops:
        if op.name in _NOT_HOST_WORK:
            continue
        if op in on_accelerator:
            stops += pending and seen_layer
            pending, seen_layer = False, True
            continue
        ns += sum(host_op_ns(o) for o in op.walk()) if op.regions else host_op_ns(op)
        pending = True
    return ns, stops


def host_steps_cycles(ns: float, stops: int, config) -> int:
    """Host steps' `ns` and their program's `stops` (`HOST_NS["sync"]` each) in accelerator
    cycles."""
    return _cycles(ns + stops * HOST_NS["sync"], config)


def cpu_op_ns(op: Operation, block: int = 16) -> float:
    """What one operator outside the accelerator functions costs the CPU, in nanoseconds at
    `HOST_NS`'s rates, on the plain layout: the runtime's dispatch, and its work: a GEMM-shaped
    op per multiply-accumulate, an op `host_step_kind` knows at its rate and units per element
    of its results (`block`: the configuration's, as `vta_host_step_cost` prices the CPU
    operator), anything else per element of its results at the gather rate."""
    from qaccel.dialects.macs import op_macs

    macs = op_macs(op)
    if macs:
        return HOST_NS["dispatch"] + macs * HOST_NS["mac"]
    elements = sum(_elements(r) for r in op.results)
    kind = host_step_kind([op], block)
    if kind is None:
        return HOST_NS["dispatch"] + elements * HOST_NS["gather"]
    _, rate, units = kind
    return HOST_NS["dispatch"] + elements * units * HOST_NS[rate]


def hop_cycles(nbytes: int, config) -> int:
    """Packing or unpacking `nbytes` of packed values between the CPU's tensors and the
    accelerator's DRAM, in accelerator cycles: the host's gather or scatter
    (`HOST_NS["pack"]` per packed byte) and the transfer over the one DRAM port
    (`bus_width_bytes` per cycle)."""
    return _cycles(nbytes * HOST_NS["pack"], config) + -(-nbytes // config.bus_width_bytes)


def launch_cycles(config) -> int:
    """One invocation of an accelerator function (`HOST_NS["launch"]`), in accelerator
    cycles."""
    return _cycles(HOST_NS["launch"], config)


def cpu_cycles(ns: float, config) -> int:
    """The CPU's `ns` (e.g. `cpu_op_ns`'s, summed) in accelerator cycles."""
    return _cycles(ns, config)


__all__ = ["HOST_NS", "cpu_cycles", "cpu_op_ns", "hop_cycles", "host_op_ns", "host_step_kind",
           "host_steps_cycles", "host_sync_cycles", "host_tree_cycles", "launch_cycles",
           "program_host_steps", "vta_host_step_cost"]
