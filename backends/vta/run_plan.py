"""The run plan of a compiled artifact: run it with numpy and the VTA machine only.

    plan = load_run_plan(outdir)           # None: no plan, or one of another format
    outputs = plan.run(inputs)             # bit-exact with `run_compiled` (runtime.py)

`qaccel-compile` writes the plan beside `host.mlir` (`backends/vta/plan_compile.py` builds it
from the compiled module): `runtime.json` says, per function, what `run_compiled` would do,
precomputed, and `runtime.npz` holds the arrays it needs (constants host ops read, the lane
values of host ALU ops, quantization parameters). The layers' instruction streams and the
DRAM images are the artifact's own `vta_fn_k/` files, read from there. No MLIR is parsed and
xDSL is never imported: `qaccel-run OUTDIR` starts in a fraction of the time.

A function is a register machine: `args` and `consts` fill registers, each step reads its
`in` registers and sets its `out` registers, `results` are returned. Steps:

    ["kernel", in, out, {"name", "call": static OpCall}]   a tfl op: KERNELS[name] (kernels/)
    ["none", [], [r], {}]                                   tfl.no_value
    ["call", in, out, {"fn"}]                               func.call
    ["pack" | "unpack", [x], [y], {layout}]                 accel.pack / accel.unpack
    ["write", [x], [], {"offset", "nbytes"}]                fill an arena slot (STEP_WRITE)
    ["layer", [], [], {"index"}]                            run a layer on the VTA machine
    ["read", [], [y] or [y, y32], {"offset", "nbytes", "dtype", "shape", "zp"}]   STEP_READ
    ["astype", "lane", "binary", "requantize", "pool", "reduce_sum", "pad", "clip",
     "concat", "concat_lanes", "host_pool", "reshape", "slice", "depth_to_space",
     "resize_nearest", "resize_bilinear", "col2im",
     "qpool", "lut", "lane_sum", "lane_broadcast"]          the other host ops (accel, q)
    ["qadd_sub" | "qmul" | "qmean", in, [y], {kwargs}]     q.add/sub, q.mul, q.mean (qhost)
    ["qsquared_difference", [a, b], [y], {kwargs}]         q.squared_difference (qhost)
    ["dense_zp" | "conv2d_zp", [x, w], [y], {"bias", ...}] a GEMM on the host (packed)
    ["relayout" | "softmax" | "batch_matmul" | "transpose", in, [y], {...}]   the attention
                                                            core (kernels/attention.py)
    ["bmm_operand" | "bmm_zp_correction", in, [y], {...}]   a BATCH_MATMUL's GEMM-layer
                                                            operands (kernels/bmm_gemm.py)

An accelerator function whose entry names a program (`"accel": {"program":
"driver/<fn>.qprog", ...}`, the C driver's program of it) runs through the program runner
(`program_runner.py`, `program/qaccel_program.c`): its packed arguments in, its packed results
out, every layer and host op of it in C (one state per function of a plan). Its "write",
"layer", "read" and host steps run instead with the Python simulator (`simulator="python"`),
when the program runner's library cannot be built, and for a function without a program.

The plan has its own format number (`RUN_PLAN_FORMAT`, the plans of earlier formats run too);
a plan of a format this reader does not know is ignored (`load_run_plan` returns None) and the
caller runs the artifact the full way.
"""

from __future__ import annotations

import functools
import hashlib
import io
import json
import os
import threading
from pathlib import Path
from typing import Any

import numpy as np

from qaccel.backends.vta.artifact_files import read_artifact_file

RUN_PLAN_FORMAT = 4
"""1: the first run plan (runtime.json + runtime.npz, artifact format 4); 2: the steps of
the `q` element-wise ops and of host GEMMs (a reader of format 1 would refuse them, so it
ignores these plans); 3: table lookups (`lut`, of `accel.lut` / `q.lut`), lane
concatenations, host pools, reshapes and crops; 4: a BATCH_MATMUL's gathers and correction
for every batch index at once (index -1) and read through relayouts (`lhs_view`,
`rhs_view`), which a reader of format 3 would take for something else. This reader runs all
four."""
_READS = (1, 2, 3, 4)
PLAN_JSON = "runtime.json"
PLAN_ARRAYS = "runtime.npz"


class RunPlanError(Exception):
    """The plan cannot run on these inputs, or a file of it is damaged (one line)."""


def _check_memory(nbytes: int, what: str) -> None:
    """The memory budget (QACCEL_MEMORY_LIMIT) before allocating what the plan declares."""
    from qaccel.kernels.memory import MemoryBudgetError, check_bytes

    try:
        check_bytes(nbytes, what)
    except MemoryBudgetError as e:
        raise RunPlanError(str(e)) from None


def _check_npz(blob: bytes, what: str) -> None:
    """The arrays an .npz of the plan declares, from their headers, before inflating them."""
    from qaccel.kernels.memory import npz_declared_bytes

    try:
        nbytes = npz_declared_bytes(blob)
    except ValueError as e:
        raise RunPlanError(f"{what}: {e}") from None
    _check_memory(nbytes, what)


# --------------------------------------------------------------------------------------------
# Encoding of kernel options and quantization parameters (JSON + named arrays)


def decode_value(v: Any, arrays) -> Any:
    """The inverse of `plan_compile.encode_value`: tagged dicts are arrays, bytes, tuples."""
    if isinstance(v, dict):
        if "__array__" in v:
            return arrays[v["__array__"]]
        if "__bytes__" in v:
            return bytes.fromhex(v["__bytes__"])
        if "__tuple__" in v:
            return tuple(decode_value(x, arrays) for x in v["__tuple__"])
        return {k: decode_value(x, arrays) for k, x in v["__dict__"].items()}
    if isinstance(v, list):
        return [decode_value(x, arrays) for x in v]
    return v


def _qparams(q, arrays):
    if q is None:
        return None
    from qaccel.kernels.qparams import QParams

    return QParams(arrays[q["scale"]], arrays[q["zero_point"]], q["axis"])


# --------------------------------------------------------------------------------------------
# The host ops of accelerator functions, on numpy arrays (as interpreter/accel_semantics.py)


def _lane(kind: str, x: np.ndarray, values: np.ndarray) -> np.ndarray:
    from qaccel.kernels import arithmetic as ar

    xi = x.astype(np.int64)
    if kind == "bias_add":
        out = ar.wrap_int32(xi + values)
    elif kind == "shift_left":
        out = ar.wrap_int32(xi << values)
    elif kind == "round_multiply":
        out = ar.saturating_rounding_doubling_high_mul(xi, values)
    else:
        out = ar.rounding_divide_by_pot(xi, np.broadcast_to(values, xi.shape))
    return out.astype(np.int32)


def _binary(kind: str, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    from qaccel.kernels import arithmetic as ar

    x, y = a.astype(np.int64), b.astype(np.int64)
    if kind == "add":
        out = ar.wrap_int32(x + y)
    elif kind == "mul":
        out = ar.wrap_int32(x * y)
    elif kind == "min":
        out = np.minimum(x, y)
    else:
        out = np.maximum(x, y)
    return np.broadcast_to(out, a.shape).astype(np.int32)


def _requantize(p: dict, x: np.ndarray, scale: np.ndarray) -> np.ndarray:
    from qaccel.kernels.packed import host_requantize

    return host_requantize(x, scale, p["input_zero_point"], p["output_zero_point"], p["min"],
                           p["max"], p["dtype"])  # fmt: skip


def _pool(p: dict, x: np.ndarray) -> np.ndarray:
    from qaccel.kernels.packed import window_pool

    return window_pool(x, p["window"], p["strides"], (p["oh"], p["ow"]), p["kind"])


# --------------------------------------------------------------------------------------------
# The plan


class _Function:
    def __init__(self, name: str, entry: dict, plan: RunPlan):
        self.name = name
        self.args: list[int] = entry["args"]
        self.results: list[int] = entry["results"]
        self.size: int = entry["registers"]
        self.consts = [(r, plan.arrays[k]) for r, k in entry["consts"]]
        self.steps = [self._prepare(step, plan) for step in entry["steps"]]
        accel = entry.get("accel")
        self._work: np.ndarray | None = None  # the fast path's DRAM buffer (_fresh_image)
        self._dirty = 0
        self.image = None
        self.layers: list[tuple[np.ndarray, np.ndarray]] = []
        self.program = None  # the function's program, opened (program_runner.Program)
        self._states = threading.local()  # its run state (program_runner.State), per thread
        self._state = None  # a state prepared by the plan (_open_program), for the first run
        # that state again: every other thread's state shares its prepared layers (read-only)
        self._owner = None
        self._unprepared: Exception | None = None  # why it could not be (raised at a run)
        self.layer_count = len(accel["layers"]) if accel is not None else 0
        # a program is opened by the plan (_open_program, in a thread beside its other work)
        self.program_file = accel.get("program") if accel is not None and plan.programs else None
        if accel is not None and self.program_file is None:
            if accel.get("constants") in plan.digests:  # raw bytes: no inflating of dram.npz
                constants = np.frombuffer(plan.read(accel["constants"]), np.uint8)
                arena = accel["arena_bytes"]
                if not isinstance(arena, int) or arena < 0:
                    raise RunPlanError(f"{name}: arena_bytes must be a byte count, got {arena!r}")
                _check_memory(arena + constants.size, f"{name}: the DRAM image")
                self.image = np.zeros(arena + constants.size, np.uint8)
                self.image[arena:] = constants
            else:
                blob = plan.read(accel["image"])
                _check_npz(blob, f"{name}: the DRAM image {accel['image']}")
                with np.load(io.BytesIO(blob)) as z:
                    self.image = z["dram"]
            self.layers = [
                (np.frombuffer(plan.read(lay["program"]), "<u8").reshape(-1, 2),
                 np.frombuffer(plan.read(lay["uops"]), "<u4"))
                for lay in accel["layers"]
            ]  # fmt: skip

    def _fresh_image(self, plan: RunPlan) -> np.ndarray | None:
        """The DRAM image as the run starts. On the fast path one buffer serves every run:
        only the bytes a run can write (arena slots the host fills, what the layers store) are
        restored from the image."""
        if self.image is None:
            return None
        if not plan.fast or not self.layers:
            return self.image.copy()
        if self._work is None:
            self._work = self.image.copy()
            plan.prepare_all(self.name)
            dirty = max(plan.prepared(self.name, i).dram_written for i in range(len(self.layers)))
            for kind, _, _, p in self.steps:
                if kind == "write":
                    dirty = max(dirty, int(p["offset"]) + int(p["nbytes"]))
            self._dirty = min(dirty, self.image.size)
            for i in range(len(self.layers)):  # what no run changes: its weights, converted once
                plan.prepared(self.name, i).constants(self.image, self._dirty, self.image.size)
            return self._work
        self._work[: self._dirty] = self.image[: self._dirty]
        return self._work

    @staticmethod
    def _prepare(step: list, plan: RunPlan) -> tuple:
        kind, ins, outs, p = step
        if kind == "kernel":
            # Only a name looked up in the registry: nothing the plan says selects code to
            # import (its "module" entry is informative).
            from qaccel.kernels.registry import KERNELS

            kernel = KERNELS.get(p.get("name")) if isinstance(p.get("name"), str) else None
            if kernel is None:
                raise RunPlanError(f"a step names the kernel {p.get('name')!r}, which qaccel "
                                   "does not have")  # fmt: skip
            c = p["call"]
            call = (
                [_qparams(q, plan.arrays) for q in c["input_q"]],
                [_qparams(q, plan.arrays) for q in c["output_q"]],
                [tuple(s) for s in c["output_shapes"]],
                [np.dtype(d) for d in c["output_dtypes"]],
                decode_value(c["options"], plan.arrays),
            )
            p = {**p, "kernel": kernel, "static": call}
        elif kind in ("lane", "binary", "requantize", "lut") and p.get("values") is not None:
            p = {**p, "array": plan.arrays[p["values"]]}
        elif kind in ("dense_zp", "conv2d_zp") and p.get("bias") is not None:
            p = {**p, "bias": plan.arrays[p["bias"]]}  # the array's name -> the array
        elif kind in ("astype", "read"):
            p = {**p, "dtype": np.dtype(p["dtype"])}
        return kind, ins, outs, p

    def _run_program(self, plan: RunPlan, args: list) -> list:
        """The function's program through the program runner (one state per function and
        thread, reused: threads run it in parallel, the runner releasing the GIL)."""
        from qaccel.backends.vta.program_runner import ProgramError

        try:
            if self._unprepared is not None:  # as a first run that prepares reports it
                self._unprepared, error = None, self._unprepared
                raise error
            state = getattr(self._states, "state", None)
            if state is None:
                state = self._states.state = self._take_state(plan)
            ys = state.run(args)
        except ProgramError as e:
            raise RunPlanError(f"{self.name}: {e}") from None
        with plan._counting:
            plan.layer_runs += self.layer_count
            plan.cycles += max(0, state.cycles)
        return ys

    def _take_state(self, plan: RunPlan):
        """A state for this thread: the one the plan prepared, for the first thread that asks;
        for each other thread a state sharing that one's prepared layers (one copy of the
        converted weights and micro-ops for every thread: half the cache footprint on two
        cores, and no preparation per thread), or else a kept preparation of the program (or
        a fresh one)."""
        from qaccel.backends.vta.program_runner import ProgramError, kept_state

        with plan._counting:
            state, self._state = self._state, None
            owner = self._owner
        if state is None and owner is not None:
            state = self.program.state()
            try:
                state.share(owner)
            except ProgramError:  # not prepared after all: this thread prepares its own
                state.close()
                state = None
        if state is None:
            state = kept_state(self.program, plan.digests.get(self.program_file))
        return state

    def run(self, plan: RunPlan, args: list) -> list:
        if self.program is not None:
            return self._run_program(plan, args)
        regs: list[Any] = [None] * self.size
        for r, x in zip(self.args, args):
            regs[r] = x
        for r, x in self.consts:
            regs[r] = x
        image = self._fresh_image(plan)  # the layers run in place
        for kind, ins, outs, p in self.steps:
            if kind == "layer":
                image = plan.run_layer(self.name, p["index"], self.layers[p["index"]], image)
                continue
            if kind == "write":
                data = np.ascontiguousarray(regs[ins[0]]).reshape(-1).view(np.uint8)
                if data.size != p["nbytes"]:
                    raise RunPlanError(f"{self.name}: a tensor of {data.size} bytes for an "
                                       f"arena slot of {p['nbytes']}")  # fmt: skip
                image[p["offset"] : p["offset"] + p["nbytes"]] = data
                continue
            if kind == "read":
                raw = image[p["offset"] : p["offset"] + p["nbytes"]]
                if p["zp"] is None:
                    y = raw.view(p["dtype"]).reshape(p["shape"]).copy()
                else:
                    y = (raw.view(np.int8).astype(np.int32) - np.int32(p["zp"]))
                    y = y.reshape(p["shape"])
                regs[outs[0]] = y
                if len(outs) > 1:
                    regs[outs[1]] = y.astype(np.int32)
                continue
            xs = [regs[r] for r in ins]
            if kind == "call":
                ys = plan.functions[p["fn"]].run(plan, xs)
            elif kind == "kernel":
                ys = _run_host_op(kind, p, xs)
            else:
                ys = (_run_host_op(kind, p, xs),)
            for r, y in zip(outs, ys):
                regs[r] = y
        return [regs[r] for r in self.results]


def _pad_constant(x: np.ndarray, pad: list, value) -> np.ndarray:
    """np.pad(x, pad, constant_values=value), about five times faster on an image's few
    channels padded to the lanes: numpy's copy loops over the innermost axis, so a short one
    (3 channels) is copied one channel at a time, each a long strided loop."""
    widths = [(int(lo), int(hi)) for lo, hi in pad]
    padded = np.full([lo + n + hi for n, (lo, hi) in zip(x.shape, widths)],
                     np.asarray(value, dtype=x.dtype), x.dtype)  # fmt: skip
    inner = padded[tuple(slice(lo, lo + n) for n, (lo, _) in zip(x.shape, widths))]
    if x.ndim > 1 and x.shape[-1] < 16 and x.size >= 4096:
        for c in range(x.shape[-1]):
            inner[..., c] = x[..., c]
    else:
        inner[...] = x
    return padded


def _run_host_op(kind: str, p: dict, xs: list):
    if kind == "kernel":
        from qaccel.kernels.base import KernelError, OpCall, Refusal, UnsupportedOp

        input_q, output_q, shapes, dtypes, options = p["static"]
        call = OpCall(list(xs), input_q, output_q, shapes, dtypes, options)
        try:
            return p["kernel"](call)
        except (Refusal, KernelError, UnsupportedOp) as e:
            raise RunPlanError(f"{p['op']}: {e}") from None
    if kind == "none":
        return None
    x = xs[0] if xs else None
    if kind == "pack":
        if p["pad"] is not None:
            x = _pad_constant(x, p["pad"], p["value"])
        view = x.reshape(p["split"]).transpose(p["order"])
        return np.ascontiguousarray(view).reshape(p["shape"])
    if kind == "unpack":
        plain = x.reshape(p["view"]).transpose(p["order"]).reshape(p["padded"])
        return np.asarray(plain[tuple(slice(0, n) for n in p["shape"])], order="C")
    if kind == "astype":
        return x.astype(p["dtype"])
    if kind == "lane":
        return _lane(p["kind"], x, p["array"])
    if kind == "binary":
        return _binary(p["kind"], x, xs[1] if len(xs) > 1 else p["array"])
    if kind == "requantize":
        return _requantize(p, x, p["array"])
    if kind == "pool":
        return _pool(p, x)
    if kind == "qpool":
        from qaccel.kernels import qhost

        old_names = {"min": "lo", "max": "hi"}  # format 1 named the storage bounds min, max
        return qhost.pool2d(x, **{old_names.get(k, k): v for k, v in p.items()})
    if kind == "reduce_sum":
        from qaccel.kernels import arithmetic as ar

        total = x.astype(np.int64).sum(axis=tuple(p["axes"]))
        return ar.wrap_int32(total).astype(np.int32).reshape(p["shape"])
    if kind in ("lane_sum", "lane_broadcast"):
        from qaccel.kernels import packed

        return packed.lane_sum(x) if kind == "lane_sum" else packed.lane_broadcast(x, p["shape"])
    if kind == "qsquared_difference":
        from qaccel.kernels import qhost

        return qhost.squared_difference(*xs, **p)
    if kind == "pad":
        value = np.asarray(p["value"], x.dtype) if p["typed"] else p["value"]
        return np.pad(x, [tuple(w) for w in p["widths"]], constant_values=value)
    if kind == "lut":
        return p["array"][x.astype(np.int16) + 128]
    if kind == "clip":
        return np.clip(x, p["min"], p["max"]).astype(x.dtype)
    if kind == "concat":
        return np.concatenate(xs, axis=p["axis"])
    if kind == "slice":
        box = tuple(slice(b, b + n) for b, n in zip(p["begin"], p["shape"]))
        return np.ascontiguousarray(x[box])
    if kind == "reshape":
        return np.reshape(x, p["shape"])
    if kind == "host_pool":
        from qaccel.kernels import packed

        return packed.host_pool2d(x, p["kind"], p["window"], p["strides"], p["padding"],
                                  p["lo"], p["hi"], p["shape"])  # fmt: skip
    if kind == "concat_lanes":
        from qaccel.kernels import packed

        return packed.concat_lanes(xs, p["channels"])
    if kind == "depth_to_space":
        from qaccel.kernels import packed

        return packed.depth_to_space(x, p["shape"], p["block_size"], p["channels"], p["fill"])
    if kind == "col2im":
        from qaccel.kernels import packed

        return packed.col2im(x, p["shape"], p["kernel"], p["strides"], p["padding"],
                             p["channels"])  # fmt: skip
    if kind in ("resize_nearest", "resize_bilinear"):
        from qaccel.kernels import packed

        fn = packed.resize_nearest if kind == "resize_nearest" else packed.resize_bilinear
        out = p["shape"]
        if x.ndim == 4:  # NHWC (a q op): one block of all channels
            n, h, w, c = x.shape
            y = fn(x.reshape(n, 1, h, w, 1, c), [n, 1, out[1], out[2], 1, c],
                   p["align_corners"], p["half_pixel_centers"])  # fmt: skip
            return y.reshape(out)
        return fn(x, out, p["align_corners"], p["half_pixel_centers"])
    if kind in ("qadd_sub", "qmul", "qmean"):
        from qaccel.kernels import qhost

        fn = {"qadd_sub": qhost.add_sub, "qmul": qhost.mul, "qmean": qhost.mean}[kind]
        return fn(*xs, **p)
    if kind in ("relayout", "softmax", "batch_matmul", "transpose"):
        return _attention_step(kind, xs, p)
    if kind in ("bmm_operand", "bmm_zp_correction"):
        return _bmm_gemm_step(kind, xs, p)
    if kind in ("dense_zp", "conv2d_zp"):
        from qaccel.kernels import packed

        fn = packed.dense_zp if kind == "dense_zp" else packed.conv2d_zp
        return fn(xs[0], xs[1], **p)
    raise RunPlanError(f"unknown run-plan step '{kind}'")


class RunPlan:
    """A loaded run plan (see the module docstring)."""

    def __init__(self, root: Path, manifest: dict, meta: dict, simulator: str = "c",
                 programs: bool = True):  # fmt: skip
        self.root = root
        self.meta = meta
        self.digests: dict[str, str] = manifest["files"]
        self.simulator = simulator
        self.layer_count = sum(len(f["layers"]) for f in manifest["functions"].values())
        self.fallback_count = len(manifest["fallbacks"])
        self.layer_runs = 0
        self.cycles = 0  # the accelerator cycles of the layers run so far (timing model)
        self._config = None
        # The fast path (simulator "c", unless QACCEL_SIMULATION=checked): each layer checked
        # and timed once (cmachine.Prepared), then run with data only, in one scratch.
        self._fast = simulator == "c" and os.environ.get("QACCEL_SIMULATION") != "checked"
        self._prepared: dict[tuple[str, int], Any] = {}
        self._scratch = None
        # one run at a time per plan walking layers itself (its scratch and images are the
        # plan's; see `concurrent`); plans loaded separately run in parallel threads
        self._running = threading.Lock()
        self._counting = threading.Lock()  # layer_runs and cycles
        self.programs = programs and simulator == "c" and _program_runner_loads()
        self.functions: dict[str, _Function] = {}
        # The programs are read, opened and prepared in a thread (C work: hashing, checking,
        # importing a kept preparation, without the GIL) while this one reads the arrays and
        # prepares the host steps; opened here when the thread did not get to them.
        opener = _Opener(self, meta) if self.programs else None
        try:
            blob = self.read(PLAN_ARRAYS)
            _check_npz(blob, f"'{self.root / PLAN_ARRAYS}'")
            with np.load(io.BytesIO(blob)) as z:
                self.arrays = {k: z[k] for k in z.files}
            functions = {name: _Function(name, e, self) for name, e in meta["functions"].items()}
        finally:
            if opener is not None:
                opener.join()
        if opener is not None and opener.error is not None:
            raise opener.error
        for name, f in functions.items():
            if f.program_file is not None:
                opened = opener.opened.get(name) if opener is not None else None
                if opened is None or opened[0] != f.program_file:
                    opened = _open_program(self, name, f.program_file)
                _, f.program, f._state, f._unprepared = opened
                f._owner = f._state if self._fast else None  # prepared (_open_program)
        self.functions = functions
        # Runs of a plan whose accelerator functions all run through programs share nothing but
        # the counters (each thread has its own program states): they go in parallel threads.
        self.concurrent = all(f.program is not None or f.image is None
                              for f in self.functions.values())  # fmt: skip

    def read(self, rel: str) -> bytes:
        """A file of the artifact, checked against the manifest's SHA-256."""
        blob = read_artifact_file(self.root, rel, RunPlanError)
        if hashlib.sha256(blob).hexdigest() != self.digests.get(rel):
            raise RunPlanError(f"'{self.root / rel}' does not match the manifest's hash")
        return blob

    @property
    def config(self):
        if self._config is None:
            from qaccel.targets.vta.config import HardwareConfig

            self._config = HardwareConfig.from_dict(self.meta["config"])
        return self._config

    @property
    def inputs(self) -> list[tuple[tuple[int, ...], np.dtype]]:
        return [(tuple(s["shape"]), np.dtype(s["dtype"])) for s in self.meta["inputs"]]

    def run_layer(self, fn: str, index: int, layer, image: np.ndarray) -> np.ndarray:
        """Run one layer on `image` (modified in place by the C machine); the DRAM after it."""
        words, uops = layer
        if self.fast:
            return self._run_prepared(fn, index, layer, image)
        if self.simulator == "c":
            from qaccel.targets.vta import cmachine

            if cmachine.available():
                result = cmachine.simulate(words, uops, image, self.config, in_place=True)
            else:  # the notice is printed; the reference runs
                from qaccel.targets.vta.simulator import simulate

                result = simulate(words, uops, image, self.config, simulator="python")
        else:
            from qaccel.targets.vta.simulator import simulate

            result = simulate(words, uops, image, self.config, simulator=self.simulator)
        if any(result.leftover_tokens.values()):
            raise RunPlanError(f"{fn} layer {index}: tokens left over {result.leftover_tokens}")
        self.layer_runs += 1
        self.cycles += result.timing.total_cycles
        return result.dram

    @property
    def fast(self) -> bool:
        """Whether layers take the fast path (the C machine loads, and no one asked for the
        checked one with QACCEL_SIMULATION=checked)."""
        if self._fast:
            from qaccel.targets.vta import cmachine

            self._fast = cmachine.available()
        return self._fast

    def prepared(self, fn: str, index: int):
        """Layer `index` of function `fn` checked and timed once (`cmachine.Prepared`)."""
        from qaccel.targets.vta import cmachine

        key = (fn, index)
        if key not in self._prepared:
            words, uops = self.functions[fn].layers[index]
            image = self.functions[fn].image
            p = cmachine.Prepared(words, uops, 0 if image is None else image.size, self.config)
            if any(p.leftover_tokens.values()):
                raise RunPlanError(f"{fn} layer {index}: tokens left over {p.leftover_tokens}")
            self._prepared[key] = p
        return self._prepared[key]

    def prepare_all(self, fn: str) -> None:
        """Every layer of `fn` checked and timed, on every core (the C machine releases the
        GIL): what a run's start waits for."""
        todo = [i for i in range(len(self.functions[fn].layers)) if (fn, i) not in self._prepared]
        jobs = min(len(todo), os.cpu_count() or 1)
        if jobs < 2:
            return
        from concurrent.futures import ThreadPoolExecutor

        from qaccel.targets.vta import cmachine

        cmachine.library(), self.config  # loaded (or built) once, before the threads
        with ThreadPoolExecutor(jobs) as pool:
            # each lands in self._prepared; the first layer that fails raises, as in order
            for _ in pool.map(lambda i: self.prepared(fn, i), todo):
                pass

    def _run_prepared(self, fn: str, index: int, layer, image: np.ndarray) -> np.ndarray:
        from qaccel.targets.vta import cmachine

        p = self.prepared(fn, index)
        if self._scratch is None:
            self._scratch = cmachine.Scratch(self.config)
        image = np.ascontiguousarray(image)
        if not image.flags.writeable:
            image = image.copy()
        p.execute(image, self._scratch)
        self.layer_runs += 1
        self.cycles += p.report.total_cycles
        return image

    def check_inputs(self, inputs) -> list[np.ndarray]:
        """As `interpreter.check_inputs`: the inputs, or a one-line RunPlanError."""
        name, specs = self.meta["entry"], self.inputs
        if len(inputs) != len(specs):
            raise RunPlanError(f"@{name} takes {len(specs)} inputs, got {len(inputs)}")
        checked = []
        for i, (x, (shape, dtype)) in enumerate(zip(inputs, specs)):
            x = np.asarray(x)
            if x.dtype != dtype:
                raise RunPlanError(f"@{name} input {i}: expected dtype {dtype}, got {x.dtype}")
            if tuple(x.shape) != shape:
                raise RunPlanError(f"@{name} input {i}: expected shape {list(shape)}, "
                                   f"got {list(x.shape)}")  # fmt: skip
            checked.append(x)
        return checked

    def random_inputs(self, seed: int) -> list[np.ndarray]:
        """The same arrays as `interpreter.random_inputs` for the entry function."""
        from qaccel.kernels.packed import random_arrays

        return random_arrays(self.inputs, seed)

    def run(self, inputs) -> list[np.ndarray]:
        args = self.check_inputs(inputs)
        entry = self.functions[self.meta["entry"]]
        if self.concurrent:
            outputs = entry.run(self, args)
        else:
            with self._running:
                outputs = entry.run(self, args)
        return [np.asarray(y) for y in outputs]


def _open_program(plan: RunPlan, name: str, rel: str) -> tuple:
    """Function `name`'s program `rel` read, opened and checked, and a state of it prepared (as
    kept in the cache, or checked and timed): (rel, program, state, None), or (rel, program,
    None, the ProgramError) when the preparation failed, for the first run to report as a run
    that prepares reports it. C work, mostly without the GIL."""
    from qaccel.backends.vta.program_runner import Program, ProgramError, kept_state

    blob = plan.read(rel)
    try:
        program = Program(blob)
    except ProgramError as e:
        raise RunPlanError(f"{name}: {e}") from None
    try:
        state = kept_state(program, plan.digests[rel])  # plan.read checked the digest
        if state.cycles < 0:  # nothing could be kept: prepared now, for other threads to share
            state.prepare()
        return rel, program, state, None
    except ProgramError as e:
        return rel, program, None, e


class _Opener(threading.Thread):
    """`_open_program` for every function of `meta` that names a program, in order, in a
    thread (`opened`: name -> its result); the first error stops it (`error`)."""

    def __init__(self, plan: RunPlan, meta: dict):
        super().__init__(name="qaccel-open-programs", daemon=True)
        self.plan = plan
        self.opened: dict[str, tuple] = {}
        self.error: BaseException | None = None
        functions = meta.get("functions")
        self.todo = [
            (name, entry["accel"]["program"])
            for name, entry in (functions.items() if isinstance(functions, dict) else ())
            if isinstance(entry, dict) and isinstance(entry.get("accel"), dict)
            and isinstance(entry["accel"].get("program"), str)
        ]  # fmt: skip
        if self.todo:
            self.start()

    def run(self) -> None:
        try:
            for name, rel in self.todo:
                self.opened[name] = _open_program(self.plan, name, rel)
        except BaseException as e:  # noqa: BLE001 (raised in the plan's thread, after join)
            self.error = e

    def join(self, timeout=None) -> None:
        if self.todo:
            super().join(timeout)


def _program_runner_loads() -> bool:
    """Whether the program runner's library loads (it is built on first use when pip install
    did not build it); without it the plan walks the functions' steps."""
    from qaccel.backends.vta.program_runner import ProgramError, library

    try:
        library()
    except (ProgramError, OSError):
        return False
    return True


def load_run_plan(outdir: str | Path, simulator: str = "c",
                  programs: bool = True) -> RunPlan | None:  # fmt: skip
    """The artifact's run plan, or None when it has none or one of another format (the caller
    then runs the artifact the full way). Damaged files raise RunPlanError. `programs=False`
    walks every function's steps, also where it has a program."""
    root = Path(outdir)
    try:
        manifest = json.loads(read_artifact_file(root, "manifest.json", RunPlanError))
        digests = manifest["files"]
    except (RunPlanError, ValueError, KeyError, TypeError):
        return None
    if not isinstance(digests, dict) or PLAN_JSON not in digests or PLAN_ARRAYS not in digests:
        return None
    blob = read_artifact_file(root, PLAN_JSON, RunPlanError)
    if hashlib.sha256(blob).hexdigest() != digests[PLAN_JSON]:
        raise RunPlanError(f"'{root / PLAN_JSON}' does not match the manifest's hash")
    try:
        meta = json.loads(blob)
    except ValueError:
        return None
    if not isinstance(meta, dict) or meta.get("format") not in _READS:
        return None
    return RunPlan(root, manifest, meta, simulator, programs)


__all__ = ["PLAN_ARRAYS", "PLAN_JSON", "RUN_PLAN_FORMAT", "RunPlan", "RunPlanError",
           "load_run_plan"]  # fmt: skip


@functools.lru_cache(maxsize=64)
def _bmm_sources(lhs_shape: tuple, rhs_shape: tuple, adj_x: bool, adj_y: bool, block: int,
                 views: tuple = (None, None)):  # fmt: skip
    """A product's operand index arrays, built once per shape rather than at every run (each
    of its batch indices' steps asks for them again)."""
    from qaccel.kernels import bmm_gemm as bg

    decoded = tuple(None if v is None else bg.decode_view(v) for v in views)
    return bg.operand_sources(lhs_shape, rhs_shape, adj_x, adj_y, block, decoded)


def _bmm_gemm_step(kind: str, xs, p: dict) -> np.ndarray:
    """A BATCH_MATMUL's GEMM-layer operand gather or zero-point correction
    (`kernels/bmm_gemm.py`)."""
    from qaccel.kernels import bmm_gemm as bg

    block = int(xs[0].shape[-1])
    views = tuple(None if p.get(k) is None else tuple(p[k]) for k in ("lhs_view", "rhs_view"))
    sources = _bmm_sources(tuple(p["lhs_shape"]), tuple(p["rhs_shape"]), bool(p["adj_x"]),
                           bool(p["adj_y"]), block, views)  # fmt: skip
    i = p["index"]
    if kind == "bmm_operand":
        return bg.gather(xs[0], bg.operand_index(sources, p["operand"], i, block))
    return bg.correction(xs[0], xs[1], sources, i, p["lhs_zero_point"], p["rhs_zero_point"],
                         block)  # fmt: skip


def _attention_step(kind: str, xs, p: dict) -> np.ndarray:
    """The attention core's run-plan steps, packed (`accel`) or plain (`q`)."""
    from qaccel.kernels import attention as at
    from qaccel.kernels.layout import Packing, unpack

    x = xs[0]
    if kind == "transpose":
        return np.ascontiguousarray(np.transpose(x, p["perm"]))
    if kind == "relayout":
        return at.relayout_packed(x, p["in_shape"], p["shape"], p["perm"], p["fill"])
    if kind == "softmax":
        plain = at.plain_of(x, p["channels"]) if p["packed"] else x
        y = at.softmax_int8(plain, p["multiplier"], p["left_shift"], p["diff_min"])
        return at.packed_of(y, int(x.shape[-1]), -128) if p["packed"] else y
    lhs, rhs = xs
    if p["packed"]:
        block = int(lhs.shape[-1])
        lhs = unpack(lhs, Packing.activations(len(p["lhs_shape"]), block), tuple(p["lhs_shape"]))
        rhs = unpack(rhs, Packing.activations(len(p["rhs_shape"]), block), tuple(p["rhs_shape"]))
    y = at.batch_matmul_int8(lhs, rhs, p["adj_x"], p["adj_y"], p["lhs_zero_point"],
                             p["rhs_zero_point"], p["multiplier"], p["shift"],
                             p["output_zero_point"], p["out_shape"])  # fmt: skip
    return at.packed_of(y, int(xs[0].shape[-1]), p["pad_value"]) if p["packed"] else y
