"""Host arithmetic of the `accel` ops the host runs on packed int32 tensors, numpy only.

`interpreter/accel_semantics.py` (from the IR) and the artifact's run plan
(`backends/vta/run_plan.py`, without xDSL) both call these, so they cannot drift apart.
"""

from __future__ import annotations

import numpy as np

from qaccel.kernels import arithmetic as ar


def host_requantize(x: np.ndarray, scale: np.ndarray, input_zero_point: int,
                    output_zero_point: int, lo: int, hi: int, dtype) -> np.ndarray:  # fmt: skip
    """LiteRT's double-precision requantization (`accel.host_requantize`), then the clamp."""
    centred = x.astype(np.int64) - input_zero_point
    scaled = ar.float_to_int32(ar.round_half_away(centred.astype(np.float64) * scale))
    out = ar.wrap_int32(scaled + output_zero_point)
    return np.clip(out, lo, hi).astype(dtype)


def window_pool(x: np.ndarray, window, strides, out_hw, kind: str) -> np.ndarray:
    """Max or sum over each window of a packed `[N, C/B, H, W, 1, B]` tensor (already padded),
    as int32 (sums wrap)."""
    (kh, kw), (sh, sw), (oh, ow) = window, strides, out_hw
    xi = x.astype(np.int64)
    taps = (
        xi[:, :, ky : ky + (oh - 1) * sh + 1 : sh, kx : kx + (ow - 1) * sw + 1 : sw]
        for ky in range(kh)
        for kx in range(kw)
    )
    if kind == "max":
        out = next(taps).copy()
        for tap in taps:
            np.maximum(out, tap, out=out)
    else:
        out = sum(taps)
    return ar.wrap_int32(out).astype(np.int32)


def random_arrays(specs, seed: int) -> list[np.ndarray]:
    """Seeded random arrays for `(shape, dtype)` specs, covering each integer type's whole
    range (wider ones: [-1000, 1000])."""
    rng = np.random.default_rng(seed)
    arrays = []
    for shape, dtype in specs:
        dtype = np.dtype(dtype)
        if dtype.kind in "iu":
            info = np.iinfo(dtype)
            lo, hi = (info.min, info.max) if info.bits <= 16 else (-1000, 1000)
            arrays.append(rng.integers(lo, hi, size=shape, endpoint=True, dtype=dtype))
        elif dtype == np.bool_:
            arrays.append(rng.integers(0, 2, size=shape).astype(np.bool_))
        else:
            arrays.append(rng.standard_normal(size=shape).astype(dtype))
    return arrays
