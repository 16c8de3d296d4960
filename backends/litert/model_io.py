"""What running a `.tflite` with LiteRT needs to know of it, read straight from the flatbuffer:
the entry subgraph's input and output (shape, dtype) and how many operators of each custom code
it holds. Reads a few tables of the file, not the model (no `tflite` package, no weights): a
spliced MobileNetV2 takes well under a millisecond where `read_model` takes a large part of a
second, which `qaccel-run OUTDIR --runtime litert` would pay on every run.

    ins, outs = model_io(data)              # [(shape, dtype)], [(shape, dtype)]
    custom_code_counts(data)["DISPATCH_OP"]

Offsets are checked against the buffer: a malformed file is a ValueError (one line).
"""

from __future__ import annotations

import struct
from collections import Counter

import numpy as np

# TensorType codes of the schema (the ones numpy has)
_DTYPES = {0: np.float32, 1: np.float16, 2: np.int32, 3: np.uint8, 4: np.int64, 6: np.bool_,
           7: np.int16, 9: np.int8, 10: np.float64, 12: np.uint64, 15: np.uint32,
           16: np.uint16}  # fmt: skip


class _Table:
    def __init__(self, buf, pos: int):
        self.buf, self.pos = buf, pos
        self._check(pos, 4)
        vt = pos - struct.unpack_from("<i", buf, pos)[0]
        self._check(vt, 4)
        self.vt = vt
        self.vt_size = struct.unpack_from("<H", buf, vt)[0]

    def _check(self, at: int, n: int) -> None:
        if at < 0 or at + n > len(self.buf):
            raise ValueError("a flatbuffer offset beyond the end of the file")

    def _field(self, k: int) -> int:
        at = 4 + 2 * k
        if at + 2 > self.vt_size:
            return 0
        return struct.unpack_from("<H", self.buf, self.vt + at)[0]

    def scalar(self, k: int, fmt: str, default=0):
        off = self._field(k)
        if not off:
            return default
        self._check(self.pos + off, struct.calcsize(fmt))
        return struct.unpack_from("<" + fmt, self.buf, self.pos + off)[0]

    def _vector(self, k: int) -> tuple[int, int] | None:
        off = self._field(k)
        if not off:
            return None
        at = self.pos + off
        self._check(at, 4)
        vec = at + struct.unpack_from("<I", self.buf, at)[0]
        self._check(vec, 4)
        return vec + 4, struct.unpack_from("<I", self.buf, vec)[0]

    def ints(self, k: int) -> list[int]:
        v = self._vector(k)
        if v is None:
            return []
        start, n = v
        self._check(start, 4 * n)
        return list(struct.unpack_from(f"<{n}i", self.buf, start))

    def string(self, k: int) -> str | None:
        v = self._vector(k)
        if v is None:
            return None
        start, n = v
        self._check(start, n)
        return bytes(self.buf[start : start + n]).decode("utf-8", "replace")

    def tables(self, k: int) -> list[_Table]:
        v = self._vector(k)
        if v is None:
            return []
        start, n = v
        self._check(start, 4 * n)
        out = []
        for i in range(n):
            at = start + 4 * i
            out.append(_Table(self.buf, at + struct.unpack_from("<I", self.buf, at)[0]))
        return out

    def table(self, k: int, i: int) -> _Table:
        v = self._vector(k)
        if v is None or not 0 <= i < v[1]:
            raise ValueError("a flatbuffer vector without the element asked for")
        at = v[0] + 4 * i
        self._check(at, 4)
        return _Table(self.buf, at + struct.unpack_from("<I", self.buf, at)[0])


def _model(data) -> _Table:
    buf = memoryview(data)
    if len(buf) < 8 or bytes(buf[4:8]) != b"TFL3":
        raise ValueError("not a TFLite flatbuffer (file identifier is not TFL3)")
    return _Table(buf, struct.unpack_from("<I", buf, 0)[0])


def model_io(data) -> tuple[list[tuple[tuple[int, ...], np.dtype]], list[tuple[tuple[int, ...], np.dtype]]]:
    """(shape, dtype) of subgraph 0's inputs and outputs, as `runtime._io_types` gives them."""
    sg = _model(data).table(2, 0)  # Model.subgraphs[0]

    def io(k: int):
        out = []
        for t in sg.ints(k):  # SubGraph.inputs / outputs
            tensor = sg.table(0, t)  # SubGraph.tensors[t]
            code = tensor.scalar(1, "b")  # Tensor.type
            if code not in _DTYPES:
                raise ValueError(f"tensor {t}: type {code} (not supported by the runner)")
            out.append((tuple(tensor.ints(0)), np.dtype(_DTYPES[code])))
        return out

    return io(1), io(2)


def custom_code_counts(data) -> Counter:
    """How many operators (of every subgraph) have each custom code."""
    model = _model(data)
    codes = [oc.string(1) for oc in model.tables(1)]  # OperatorCode.custom_code
    counts: Counter = Counter()
    for sg in model.tables(2):
        for op in sg.tables(3):  # SubGraph.operators
            k = op.scalar(0, "I")  # Operator.opcode_index
            if 0 <= k < len(codes) and codes[k] is not None:
                counts[codes[k]] += 1
    return counts


__all__ = ["custom_code_counts", "model_io"]
