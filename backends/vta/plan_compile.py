"""Build the run plan of a compiled model (`backends/vta/run_plan.py` runs it).

    meta, arrays = build_run_plan(compiled)     # runtime.json, runtime.npz; None: no plan

Everything `run_compiled` (runtime.py) does at run time that does not depend on the inputs
is done here, once: each host op becomes a step with its parameters read off the op (a `tfl`
op: its kernel name and static `OpCall`, as `interpreter/prepare.py` builds it, Prepare-time
checks included; `accel.pack`/`unpack`: the pad, split and transpose of
`interpreter/accel_semantics.py`; the host ALU ops: their lane values broadcast as
`accel.lane_values` shapes them), every accelerator function its `function_steps`, constants
host ops read become named arrays; the `q` element-wise ops and the GEMM ops left on the
host store the arguments of their `kernels/` functions (`qhost`, `packed`), read off the op
by the interpreter's own helpers (`q_semantics.add_sub_params` ...). A module holding an op
the plan cannot express (an op without semantics here) gets no plan: `qaccel-run` then runs
the artifact the full way. An accelerator function with a program (`driver/<fn>.qprog`, the C
driver's) names it: the plan runs it through the program runner, its steps remaining for the
Python simulator and for a function without a program.

Example (MobileNetV2's entry function):

    %3 = accel.unpack %2 inner_dims_pos = [0, 1] inner_tiles = [1, 16]
           : tensor<1x63x1x16x!q> -> tensor<1x1000x!q>
    %4 = tfl.softmax %3 {beta = 1.000000e+00 : f32, ...} : (...) -> tensor<1x1000x!q2>

becomes, in `runtime.json` (registers 2, 3, 4; arrays named in `runtime.npz`)

    ["unpack", [2], [3], {"order": [0, 2, 1, 3], "padded": [1, 1008], "shape": [1, 1000],
                          "view": [1, 63, 1, 16]}]
    ["kernel", [3], [4], {"name": "SOFTMAX", "module": "qaccel.kernels.elementwise",
                          "call": {"input_q": [{"scale": "scale.0", ...}], "options":
                          {"__dict__": {"beta": 1.0}}, "output_shapes": [[1, 1000]], ...}}]
"""

from __future__ import annotations

from typing import Any

import numpy as np
from xdsl.dialects import func
from xdsl.ir import Operation, SSAValue

from qaccel.backends.vta.cdriver import function_programs, program_file
from qaccel.backends.vta.compiled import CompiledModel
from qaccel.backends.vta.run_plan import RUN_PLAN_FORMAT
from qaccel.backends.vta.runtime import STEP_LAYER, STEP_READ, STEP_WRITE, function_steps
from qaccel.dialects import accel, q, tfl, vta
from qaccel.dialects.types import tensor_dtype


class NoPlan(Exception):
    """The module holds something the run plan cannot express (the message says what)."""


def encode_value(v: Any, arrays: dict[str, np.ndarray], key: str) -> Any:
    """A kernel option as JSON: arrays go to `arrays` (named after `key`), bytes and tuples
    are tagged (`run_plan.decode_value` reverses it exactly)."""
    if isinstance(v, np.ndarray):
        arrays[key] = v
        return {"__array__": key}
    if isinstance(v, bytes):
        return {"__bytes__": v.hex()}
    if isinstance(v, tuple):
        return {"__tuple__": [encode_value(x, arrays, f"{key}.{i}") for i, x in enumerate(v)]}
    if isinstance(v, list):
        return [encode_value(x, arrays, f"{key}.{i}") for i, x in enumerate(v)]
    if isinstance(v, dict):
        return {"__dict__": {k: encode_value(x, arrays, f"{key}.{k}") for k, x in v.items()}}
    if v is None or type(v) in (bool, int, float, str):
        return v
    if isinstance(v, np.generic):
        arrays[key] = np.asarray(v)
        return {"__array__": key}
    raise NoPlan(f"an option value of type {type(v).__name__}")


class _Builder:
    def __init__(self, compiled: CompiledModel, programs: dict):
        self.compiled = compiled
        self.programs = programs
        self.arrays: dict[str, np.ndarray] = {}
        self.functions: dict[str, dict] = {}

    def array(self, prefix: str, a: np.ndarray) -> str:
        key = f"{prefix}.{len(self.arrays)}"
        # ascontiguousarray would make a 0-d array 1-d (a scalar PACK input, a scalar axis).
        self.arrays[key] = np.ascontiguousarray(a).reshape(np.shape(a))
        return key

    # ------------------------------------------------------------------------------------

    def function(self, f: func.FuncOp) -> None:
        name = f.sym_name.data
        ops = list(f.body.block.ops)
        if not ops or not isinstance(ops[-1], func.ReturnOp):
            raise NoPlan(f"@{name} has no func.return")
        regs: dict[SSAValue, int] = {}

        def reg(v: SSAValue) -> int:
            r = regs.get(v)
            if r is None:
                r = regs[v] = len(regs)
            return r

        entry: dict[str, Any] = {"args": [reg(a) for a in f.body.block.args], "consts": []}
        steps: list = []
        fn = self.compiled.functions.get(name)
        if fn is None:
            for op in ops[:-1]:
                self.op(op, reg, entry, steps)
        else:
            plan = function_steps(fn, ops)
            for i in plan.host_constants:
                self.op(ops[i], reg, entry, steps)
            for kind, arg in plan.steps:
                if kind == STEP_WRITE:
                    slot = fn.slots[arg]
                    op_index, result = slot.value
                    v = f.body.block.args[result] if op_index < 0 else ops[op_index].results[result]
                    steps.append(["write", [reg(v)], [],
                                  {"offset": slot.offset, "nbytes": slot.nbytes}])  # fmt: skip
                elif kind == STEP_LAYER:
                    lay = fn.layers[arg]
                    steps.append(["layer", [], [], {"index": arg}])
                elif kind == STEP_READ:
                    result = ops[lay.anchor].results[0]
                    outs = [reg(result)]
                    if lay.widened is not None:
                        outs.append(reg(ops[lay.widened].results[1]))
                    slot = fn.slots[arg]
                    steps.append(["read", [], outs, {
                        "offset": slot.offset, "nbytes": slot.nbytes,
                        "dtype": tensor_dtype(result.type).str,
                        "shape": list(result.type.get_shape()), "zp": lay.offset,
                    }])  # fmt: skip
                else:
                    for i in plan.segments[arg]:
                        self.op(ops[i], reg, entry, steps)
            entry["accel"] = {
                "image": f"{name}/dram.npz",  # = arena_bytes zeros, then constants.bin
                "constants": f"{name}/constants.bin", "arena_bytes": fn.arena_nbytes,
                "layers": [{"program": f"{name}/layer_{lay.index}.bin",
                            "uops": f"{name}/layer_{lay.index}.uops.bin"}
                           for lay in fn.layers],
            }  # fmt: skip
            if self.programs.get(name, (None, ""))[0] is not None:
                entry["accel"]["program"] = program_file(name)
        entry["steps"] = steps
        entry["results"] = [reg(v) for v in ops[-1].operands]
        entry["registers"] = len(regs)
        self.functions[name] = entry

    # ------------------------------------------------------------------------------------

    def op(self, op: Operation, reg, entry: dict, steps: list) -> None:
        """Append the steps of host op `op`."""
        if isinstance(op, tfl.ConstOp):
            entry["consts"].append([reg(op.results[0]), self.array("const", op.as_array())])
            return
        if isinstance(op, vta.LayerOp):  # a layer that runs on the host: its body
            for inner in op.body_ops():
                self.op(inner, reg, entry, steps)
            yielded = op.body.block.last_op.operands  # type: ignore[union-attr]
            for r, v in zip(op.results, yielded):
                steps.append(["astype", [reg(v)], [reg(r)], {"dtype": tensor_dtype(r.type).str}])
            return
        ins = [reg(v) for v in op.operands]
        outs = [reg(r) for r in op.results]
        kind, params = self.step(op)
        steps.append([kind, ins, outs, params])

    def qparams(self, qp) -> dict | None:
        if qp is None:
            return None
        return {"scale": self.array("scale", qp.scale),
                "zero_point": self.array("zero_point", qp.zero_point),
                "axis": qp.axis}  # fmt: skip

    def step(self, op: Operation) -> tuple[str, dict]:
        from qaccel.interpreter import accel_semantics as sem
        from qaccel.kernels.layout import split_order, split_shape
        from qaccel.interpreter import q_semantics as qsem
        from qaccel.interpreter.prepare import _kernel_name, describe, prepare_op

        if isinstance(op, tfl.NoValueOp):
            return "none", {}
        if isinstance(op, tfl.StableHLOCompositeOp):
            raise NoPlan("a stablehlo.composite on the host")
        if isinstance(op, tfl.TflOp | tfl.OpaqueOp) and not isinstance(op, tfl.ConstOp):
            call = prepare_op(op)
            n = len(self.arrays)
            static = {
                "input_q": [self.qparams(x) for x in call.input_q],
                "output_q": [self.qparams(x) for x in call.output_q],
                "output_shapes": [list(s) for s in call.output_shapes],
                "output_dtypes": [np.dtype(d).str for d in call.output_dtypes],
                "options": encode_value(call.options, self.arrays, f"options.{n}"),
            }
            from qaccel.kernels.registry import KERNELS

            name = _kernel_name(op)
            return "kernel", {"name": name, "module": KERNELS[name].__module__,
                              "op": describe(op), "call": static}  # fmt: skip
        if isinstance(op, func.CallOp):
            return "call", {"fn": op.callee.string_value()}
        if isinstance(op, accel.PackOp):
            packing = op.packing
            shape = tuple(op.operands[0].type.get_shape())
            pad = None
            if packing.needs_padding(shape):
                pad = [[0, -size % packing.tile_of(d)] for d, size in enumerate(shape)]
            value = 0 if op.padding_value is None else op.padding_value.value.data
            return "pack", {"pad": pad, "value": value,
                            "split": split_shape(packing, shape),
                            "order": split_order(packing),
                            "shape": list(packing.packed_shape(shape))}  # fmt: skip
        if isinstance(op, accel.UnpackOp):
            packing = op.packing
            shape = tuple(op.output.type.get_shape())
            split, order = split_shape(packing, shape), split_order(packing)
            return "unpack", {"view": [split[k] for k in order],
                              "order": [int(k) for k in np.argsort(order)],
                              "padded": [n * t for n, t in zip(split[::2], split[1::2])],
                              "shape": list(shape)}  # fmt: skip
        if isinstance(op, accel.WidenOp):
            return "astype", {"dtype": "<i4"}
        if isinstance(op, accel.NarrowOp):
            return "astype", {"dtype": tensor_dtype(op.output.type).str}
        if isinstance(op, accel._LaneOp):
            kind = {accel.BiasAddZpOp: "bias_add", accel.ShiftLeftOp: "shift_left",
                    accel.RoundMultiplyOp: "round_multiply",
                    accel.RoundRShiftOp: "round_rshift"}[type(op)]  # fmt: skip
            shape = op.operands[0].type.get_shape()
            values = accel.lane_values(op.values.astype(np.int64), shape)
            return "lane", {"kind": kind, "values": self.array("lanes", values)}
        if isinstance(op, accel._BinaryOp):
            kind = {accel.AddOp: "add", accel.MulOp: "mul", accel.MinOp: "min",
                    accel.MaxOp: "max"}[type(op)]  # fmt: skip
            values = None
            if len(op.operands) == 1:
                shape = op.operands[0].type.get_shape()
                lanes = accel.lane_values(op.values.astype(np.int64), shape)  # type: ignore
                values = self.array("lanes", lanes)
            return "binary", {"kind": kind, "values": values}
        if isinstance(op, accel.HostRequantizeOp):
            shape = op.operands[0].type.get_shape()
            scale = accel.lane_values(q.array_values(op.scale), shape)
            return "requantize", {
                "values": self.array("scale", scale),
                "input_zero_point": op.int_prop("input_zero_point"),
                "output_zero_point": op.int_prop("output_zero_point"),
                "min": op.int_prop("min"), "max": op.int_prop("max"),
                "dtype": tensor_dtype(op.output.type).str,
            }  # fmt: skip
        if isinstance(op, accel.LutOp | q.LutOp):
            table = op.array_prop("table").astype(tensor_dtype(op.output.type))
            return "lut", {"values": self.array("table", table)}
        if isinstance(op, accel.MaxPool2DOp | accel.SumPool2DOp):
            _, _, oh, ow, _, _ = op.output.type.get_shape()
            return "pool", {
                "kind": "max" if isinstance(op, accel.MaxPool2DOp) else "sum",
                "window": [int(v) for v in op.array_prop("window")],
                "strides": [int(v) for v in op.array_prop("strides")], "oh": oh, "ow": ow,
            }  # fmt: skip
        if isinstance(op, accel.ReduceSumOp):
            return "reduce_sum", {"axes": [int(a) for a in op.array_prop("axes")],
                                  "shape": list(op.output.type.get_shape())}  # fmt: skip
        if isinstance(op, accel.PadOp):
            padding = [int(v) for v in op.array_prop("padding")]
            spatial = [[padding[2 * k], padding[2 * k + 1]] for k in range(len(padding) // 2)]
            widths = [[0, 0], [0, 0], *spatial, [0, 0], [0, 0]]
            return "pad", {"widths": widths, "value": op.pad_value.value.data, "typed": True}
        if isinstance(op, q.PadOp):
            widths = op.array_prop("padding").reshape(-1, 2)
            return "pad", {"widths": [[int(v) for v in w] for w in widths],
                           "value": op.int_prop("pad_value"), "typed": False}  # fmt: skip
        if isinstance(op, q.MaxPool2DOp | q.AvgPool2DOp):
            return "qpool", qsem.pool_params(op)
        if isinstance(op, q.ReluOp):
            return "clip", {"min": op.int_prop("min"), "max": op.int_prop("max")}
        if isinstance(op, accel.CropOp | q.SliceOp):
            out = list(op.output.type.get_shape())
            if isinstance(op, accel.CropOp):
                begin = [0, 0, *(int(o) for o in op.array_prop("offsets")), 0, 0]
            else:
                begin = [int(b) for b in op.array_prop("begin")]
            return "slice", {"begin": begin, "shape": out}
        if isinstance(op, accel.ReshapeOp | q.ReshapeOp):
            return "reshape", {"shape": list(op.output.type.get_shape())}
        if isinstance(op, accel.DepthToSpaceOp):
            return "depth_to_space", {"shape": list(op.output.type.get_shape()),
                                      "block_size": op.int_prop("block_size"),
                                      "channels": op.int_prop("channels"),
                                      "fill": op.int_prop("pad_value")}  # fmt: skip
        bmm = _bmm_gemm_params(op)
        if bmm is not None:
            return bmm
        attention = _attention_params(op)
        if attention is not None:
            return attention
        if isinstance(op, accel.ResizeNearestNeighborOp | accel.ResizeBilinearOp |
                      q.ResizeNearestNeighborOp | q.ResizeBilinearOp):  # fmt: skip
            # q (NHWC, left on the CPU) runs as the packed kernel of one channel block
            kind = ("resize_nearest" if isinstance(op, accel.ResizeNearestNeighborOp |
                                                   q.ResizeNearestNeighborOp)
                    else "resize_bilinear")  # fmt: skip
            align_corners, half_pixel_centers = op.flags()
            return kind, {"shape": list(op.output.type.get_shape()),
                          "align_corners": align_corners,
                          "half_pixel_centers": half_pixel_centers}  # fmt: skip
        if isinstance(op, accel.Col2ImOp):
            return "col2im", {"shape": list(op.output.type.get_shape()),
                              "kernel": [int(v) for v in op.array_prop("kernel")],
                              "strides": [int(v) for v in op.array_prop("strides")],
                              "padding": [int(v) for v in op.array_prop("padding")],
                              "channels": op.int_prop("channels")}  # fmt: skip
        if isinstance(op, accel.HostPool2DOp):
            return "host_pool", {
                "kind": op.kind.data, "window": [int(v) for v in op.array_prop("window")],
                "strides": [int(v) for v in op.array_prop("strides")],
                "padding": [int(v) for v in op.array_prop("padding")],
                "lo": op.int_prop("min"), "hi": op.int_prop("max"),
                "shape": list(op.output.type.get_shape()),
            }  # fmt: skip
        if isinstance(op, accel.ConcatLanesOp):
            return "concat_lanes", {"channels": [int(c) for c in op.array_prop("channels")]}
        if isinstance(op, accel.ConcatOp | q.ConcatOp):
            return "concat", {"axis": op.int_prop("axis")}
        if isinstance(op, q.AddOp | q.SubOp):
            return "qadd_sub", qsem.add_sub_params(op)
        if isinstance(op, q.MulOp):
            return "qmul", qsem.mul_params(op)
        if isinstance(op, q.MeanOp):
            return "qmean", qsem.mean_params(op)
        if isinstance(op, q.SquaredDifferenceOp):
            return "qsquared_difference", qsem.squared_difference_params(op)
        if isinstance(op, accel.LaneSumOp):
            return "lane_sum", {}
        if isinstance(op, accel.LaneBroadcastOp):
            return "lane_broadcast", {"shape": list(op.output.type.get_shape())}
        if isinstance(op, accel.Conv2DZpOp | accel.DenseZpOp):
            bias = sem.bias_lanes(op)
            params = {"bias": None if bias is None else self.array("bias", bias)}
            if isinstance(op, accel.DenseZpOp):
                return "dense_zp", {**params, "out_shape": list(op.output.type.get_shape())}
            return "conv2d_zp", {**params, **sem.conv2d_zp_params(op)}
        raise NoPlan(f"no run-plan step for {op.name}")


def _bmm_gemm_params(op: Operation) -> tuple[str, dict] | None:
    """The run-plan step of a BATCH_MATMUL's GEMM-layer operand gather or zero-point
    correction (`kernels/bmm_gemm.py`), else None."""
    if not isinstance(op, accel.BmmOperandOp | accel.BmmZpCorrectionOp):
        return None
    params = {"lhs_shape": op.array_prop("lhs_shape").tolist(),
              "rhs_shape": op.array_prop("rhs_shape").tolist(),
              **{n: op.int_prop(n) for n in ("adj_x", "adj_y", "index")}}  # fmt: skip
    for name in ("lhs_view", "rhs_view"):  # operands read through relayouts
        if op.properties.get(name) is not None:
            params[name] = op.array_prop(name).tolist()
    if isinstance(op, accel.BmmOperandOp):
        return "bmm_operand", params | {"operand": op.int_prop("operand")}
    return "bmm_zp_correction", params | {n: op.int_prop(n) for n in ("lhs_zero_point",
                                                                       "rhs_zero_point")}


def _attention_params(op: Operation) -> tuple[str, dict] | None:
    """The run-plan step of an attention-core op (`accel` packed, `q` plain), else None."""
    if isinstance(op, q.TransposeOp):
        return "transpose", {"perm": [int(v) for v in op.array_prop("perm")]}
    if isinstance(op, accel.RelayoutOp):
        return "relayout", {name: op.array_prop(name).tolist()
                            for name in ("in_shape", "shape", "perm")} | {
            "fill": op.int_prop("pad_value")}  # fmt: skip
    if isinstance(op, q.SoftmaxOp | accel.SoftmaxOp):
        packed = isinstance(op, accel.SoftmaxOp)
        return "softmax", {"packed": packed,
                           "channels": op.int_prop("channels") if packed else 0,
                           **{n: op.int_prop(n) for n in ("multiplier", "left_shift",
                                                          "diff_min")}}  # fmt: skip
    if isinstance(op, q.BatchMatmulOp | accel.BatchMatmulOp):
        packed = isinstance(op, accel.BatchMatmulOp)
        names = ("lhs_zero_point", "rhs_zero_point", "multiplier", "shift", "output_zero_point")
        params = {n: op.int_prop(n) for n in names}
        params |= {"packed": packed, "adj_x": bool(op.int_prop("adj_x")),
                   "adj_y": bool(op.int_prop("adj_y"))}  # fmt: skip
        if packed:
            params |= {"lhs_shape": op.array_prop("lhs_shape").tolist(),
                       "rhs_shape": op.array_prop("rhs_shape").tolist(),
                       "out_shape": op.plain_output_shape(),
                       "pad_value": op.int_prop("pad_value")}  # fmt: skip
        else:
            params |= {"out_shape": list(op.output.type.get_shape())}
        return "batch_matmul", params
    return None


def build_run_plan(compiled: CompiledModel, programs: dict | None = None,
                   ) -> tuple[dict, dict[str, np.ndarray]] | None:  # fmt: skip
    """The run plan of `compiled` (`runtime.json`'s dict and `runtime.npz`'s arrays), or None
    when the module holds something the plan cannot express. `programs`: the accelerator
    functions' programs (`cdriver.function_programs`, computed when not given)."""
    from qaccel.interpreter.interpreter import ExecutionError, entry_function
    from qaccel.kernels.registry import Refusal, UnsupportedOp

    try:
        if programs is None:
            programs = function_programs(compiled)
        b = _Builder(compiled, programs)
        entry = entry_function(compiled.module)
        for op in compiled.module.ops:
            if isinstance(op, func.FuncOp) and not op.is_declaration:
                b.function(op)
        for f in b.functions.values():
            for kind, _, _, params in f["steps"]:
                if kind == "call" and params["fn"] not in b.functions:
                    raise NoPlan(f"a call of @{params['fn']}, which has no body")
    except (NoPlan, Refusal, ExecutionError, UnsupportedOp):
        return None  # the full way runs it (and reports what it refuses)
    meta = {
        "format": RUN_PLAN_FORMAT,
        "entry": entry.sym_name.data,
        "inputs": [{"shape": list(t.get_shape()), "dtype": tensor_dtype(t).str}
                   for t in entry.function_type.inputs.data],
        "config": compiled.config.to_dict(),
        "functions": b.functions,
    }  # fmt: skip
    return meta, b.arrays


__all__ = ["NoPlan", "build_run_plan", "encode_value"]
