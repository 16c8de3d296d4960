"""Quantization parameters as plain numpy data, the currency of the CPU kernels.

The `quant.uniform` types of the IR convert to `QParams` (see `dialects/quant.py`), so the
kernels in this package never import xDSL and can be tested and benchmarked on their own.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True, eq=False)
class QParams:
    """Affine quantization `real = scale * (q - zero_point)`.

    `scale` is float32 as TFLite stores it (kernels widen it to double where TFLite does);
    `zero_point` is int64. Both are 1-D: length 1 for per-tensor quantization, one entry per
    slice of dimension `axis` for per-axis quantization (`axis` is None for per-tensor).
    """

    scale: np.ndarray
    zero_point: np.ndarray
    axis: int | None = None

    @staticmethod
    def per_tensor(scale: float, zero_point: int) -> QParams:
        return QParams(
            np.asarray([scale], dtype=np.float32), np.asarray([zero_point], dtype=np.int64)
        )

    @staticmethod
    def per_axis(scales, zero_points, axis: int) -> QParams:
        return QParams(
            np.asarray(scales, dtype=np.float32).reshape(-1),
            np.asarray(zero_points, dtype=np.int64).reshape(-1),
            axis,
        )

    @property
    def is_per_axis(self) -> bool:
        return self.axis is not None

    @property
    def s(self) -> float:
        """The scale of a per-tensor quantization, as TFLite's float."""
        assert self.axis is None, "per-axis quantization has no single scale"
        return float(self.scale[0])

    @property
    def zp(self) -> int:
        """The zero point of a per-tensor quantization."""
        assert self.axis is None, "per-axis quantization has no single zero point"
        return int(self.zero_point[0])

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, QParams)
            and self.axis == other.axis
            and np.array_equal(self.scale, other.scale)
            and np.array_equal(self.zero_point, other.zero_point)
        )

    def __hash__(self) -> int:
        return hash((self.axis, self.scale.tobytes(), self.zero_point.tobytes()))
