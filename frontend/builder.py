"""Make small int8 TFLite models in pure Python, for tests and sweeps (no TensorFlow).

A single-op model: every input with `data` becomes a constant, the others become the model's
inputs in order; `None` is an omitted optional input.

    import numpy as np
    from qaccel.frontend.builder import (
        QParams, TensorSpec, bias_tensor, per_axis_qparams, random_weights, single_op_model)

    rng = np.random.default_rng(0)
    x_q = QParams.per_tensor(0.05, -3)
    w_q = per_axis_qparams(rng, channels=8, axis=0)            # symmetric, one scale per filter
    model: bytes = single_op_model(
        "CONV_2D",
        inputs=[
            TensorSpec("x", (1, 16, 16, 4), np.int8, x_q),
            TensorSpec("w", (8, 3, 3, 4), np.int8, w_q, data=random_weights(rng, (8, 3, 3, 4))),
            bias_tensor("b", rng, x_q, w_q),                       # int32, scale x_s * w_s[c]
        ],
        outputs=[TensorSpec("y", (1, 16, 16, 8), np.int8, QParams.per_tensor(0.1, 5))],
        options={"padding": "SAME", "stride_w": 1, "stride_h": 1,
                 "fused_activation_function": "RELU6"},
    )

Several ops, or several subgraphs (e.g. a STABLEHLO_COMPOSITE and its decomposition):

    q = QParams.per_tensor(0.1, 0)
    mb = ModelBuilder()
    main, body = mb.subgraph("main"), mb.subgraph("add_decomposition")
    a, b = body.input("a", (1, 4), q=q), body.input("b", (1, 4), q=q)
    body.output(body.op("ADD", [a, b], TensorSpec("s", (1, 4), np.int8, q)))
    x, y = main.input("x", (1, 4), q=q), main.input("y", (1, 4), q=q)
    out = main.op("STABLEHLO_COMPOSITE", [x, y], TensorSpec("z", (1, 4), np.int8, q),
                  composite_options("my.add", body, {"alpha": 1.0}))
    main.output(out)
    model = mb.build()

Shapes, quantization and options are written as given: LiteRT, not the builder, decides
whether the model is valid (tests need models LiteRT refuses, too).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from qaccel.kernels.qparams import QParams
from qaccel.frontend.tflite_writer import (
    ModelSpec,
    OperatorSpec,
    SignatureDefSpec,
    SubgraphSpec,
    TensorSpec,
    write_model,
)

__all__ = [
    "QParams",
    "TensorSpec",
    "ModelBuilder",
    "GraphBuilder",
    "single_op_model",
    "random_int8",
    "random_weights",
    "per_axis_qparams",
    "bias_qparams",
    "random_bias",
    "bias_tensor",
    "weights_tensor",
    "composite_options",
]


class GraphBuilder:
    """One subgraph under construction; tensors are referred to by their index (int)."""

    def __init__(self, name: str, index: int) -> None:
        self.name = name
        self.index = index  # the subgraph's index in the model (for CALL/WHILE/composites)
        self.tensors: list[TensorSpec] = []
        self.inputs: list[int] = []
        self.outputs: list[int] = []
        self.operators: list[OperatorSpec] = []

    def add_tensor(self, spec: TensorSpec) -> int:
        self.tensors.append(spec)
        return len(self.tensors) - 1

    def input(self, name: str, shape: Sequence[int], dtype: Any = np.int8, q: QParams | None = None) -> int:
        """A new subgraph input."""
        t = self.add_tensor(TensorSpec(name, tuple(shape), dtype, q))
        self.inputs.append(t)
        return t

    def const(self, name: str, data: np.ndarray, q: QParams | None = None) -> int:
        """A constant holding `data` (its dtype and shape)."""
        data = np.asarray(data)
        return self.add_tensor(TensorSpec(name, data.shape, data.dtype, q, data=data))

    def op(
        self,
        op: str,
        inputs: Sequence[int | TensorSpec | None],
        outputs: TensorSpec | int | Sequence[TensorSpec | int],
        options: dict[str, Any] | None = None,
        *,
        version: int = 1,
        custom_code: str | None = None,
        custom_options: bytes | None = None,
    ) -> int | list[int]:
        """Append an operator. Inputs are tensor indices, TensorSpecs (added here: a constant
        if it has data, else it must be produced elsewhere) or None (omitted, index -1).
        Outputs are TensorSpecs (added) or existing indices. Returns the output index, or the
        list of them when `outputs` is a sequence."""
        in_idx = [
            -1 if t is None else (self.add_tensor(t) if isinstance(t, TensorSpec) else int(t))
            for t in inputs
        ]
        single = isinstance(outputs, (TensorSpec, int))
        outs = [outputs] if single else list(outputs)
        out_idx = [self.add_tensor(t) if isinstance(t, TensorSpec) else int(t) for t in outs]
        self.operators.append(
            OperatorSpec(op, in_idx, out_idx, dict(options or {}), version, custom_code,
                         custom_options)
        )
        return out_idx[0] if single else out_idx

    def output(self, *tensors: int | Sequence[int]) -> None:
        """Mark tensors as subgraph outputs (in call order)."""
        for t in tensors:
            if isinstance(t, (list, tuple)):
                self.outputs.extend(int(i) for i in t)
            else:
                self.outputs.append(int(t))

    def spec(self) -> SubgraphSpec:
        return SubgraphSpec(self.name, list(self.tensors), list(self.inputs),
                            list(self.outputs), list(self.operators))


class ModelBuilder:
    """A model of one or more subgraphs; the first subgraph made is the main one."""

    def __init__(self, description: str = "qaccel builder") -> None:
        self.description = description
        self.graphs: list[GraphBuilder] = []

    def subgraph(self, name: str | None = None) -> GraphBuilder:
        g = GraphBuilder(name or f"subgraph_{len(self.graphs)}", len(self.graphs))
        self.graphs.append(g)
        return g

    def spec(self) -> ModelSpec:
        if not self.graphs:
            raise ValueError("the model has no subgraph")
        main = self.graphs[0]
        signature = SignatureDefSpec(
            "serving_default",
            {main.tensors[t].name: t for t in main.inputs},
            {main.tensors[t].name: t for t in main.outputs},
        )
        return ModelSpec([g.spec() for g in self.graphs], self.description, [signature])

    def build(self) -> bytes:
        return write_model(self.spec())


def single_op_model(
    op: str,
    inputs: Sequence[TensorSpec | None],
    outputs: Sequence[TensorSpec],
    options: dict[str, Any] | None = None,
    *,
    version: int = 1,
    custom_code: str | None = None,
    custom_options: bytes | None = None,
) -> bytes:
    """A one-operator model: inputs with data are constants, the others are the model inputs
    (in order), None is an omitted optional input; outputs are the model outputs."""
    mb = ModelBuilder()
    g = mb.subgraph("main")
    in_idx: list[int | None] = []
    for spec in inputs:
        if spec is None:
            in_idx.append(None)
            continue
        t = g.add_tensor(spec)
        if spec.data is None:
            g.inputs.append(t)
        in_idx.append(t)
    out_idx = g.op(op, in_idx, list(outputs), options, version=version,
                   custom_code=custom_code, custom_options=custom_options)
    g.output(out_idx)
    return mb.build()


def composite_options(
    name: str, decomposition: GraphBuilder | int, attributes: dict | None = None, version: int = 0
) -> dict[str, Any]:
    """Options of a STABLEHLO_COMPOSITE: LiteRT requires `composite_attributes`, a
    flexbuffer map (empty by default)."""
    from flatbuffers import flexbuffers

    index = decomposition.index if isinstance(decomposition, GraphBuilder) else int(decomposition)
    return {
        "name": name,
        "decomposition_subgraph_index": index,
        "composite_attributes": bytes(flexbuffers.Dumps(dict(attributes or {}))),
        "composite_attributes_format": "FLEXBUFFERS",
        "version": version,
    }


# ---------------------------------------------------------------------------------------------
# Random data with chosen quantization


def random_int8(rng: np.random.Generator, shape: Sequence[int], low: int = -128, high: int = 127) -> np.ndarray:
    """Uniform int8 values in [low, high] (an input set)."""
    return rng.integers(low, high, size=tuple(shape), endpoint=True, dtype=np.int8)


def random_weights(rng: np.random.Generator, shape: Sequence[int], limit: int = 127) -> np.ndarray:
    """Symmetric int8 weights, uniform in [-limit, limit] (TFLite weights never use -128)."""
    return rng.integers(-limit, limit, size=tuple(shape), endpoint=True, dtype=np.int8)


def per_axis_qparams(
    rng: np.random.Generator,
    channels: int,
    axis: int,
    scale_range: tuple[float, float] = (0.002, 0.02),
) -> QParams:
    """Symmetric per-axis weight quantization: log-uniform scales, zero points 0."""
    lo, hi = np.log(scale_range[0]), np.log(scale_range[1])
    scales = np.exp(rng.uniform(lo, hi, size=channels)).astype(np.float32)
    return QParams.per_axis(scales, np.zeros(channels, np.int64), axis)


def bias_qparams(input_q: QParams, weight_q: QParams) -> QParams:
    """Bias quantization as the TFLite converter makes it: scale input_s * weight_s (per
    weight channel, computed in float32), zero point 0; per-axis on dim 0 if the weights are."""
    scale = np.float32(input_q.s) * np.asarray(weight_q.scale, np.float32)
    zps = np.zeros(len(scale), np.int64)
    if weight_q.is_per_axis:
        return QParams.per_axis(scale, zps, 0)
    return QParams(scale.astype(np.float32), zps, None)


def random_bias(
    rng: np.random.Generator, channels: int, magnitude: int = 1 << 12
) -> np.ndarray:
    """int32 bias values, uniform in [-magnitude, magnitude]."""
    return rng.integers(-magnitude, magnitude, size=channels, endpoint=True, dtype=np.int32)


def weights_tensor(
    name: str, rng: np.random.Generator, shape: Sequence[int], q: QParams, limit: int = 127
) -> TensorSpec:
    """A constant int8 weight tensor of random symmetric values with quantization `q`."""
    return TensorSpec(name, tuple(shape), np.int8, q, data=random_weights(rng, shape, limit))


def bias_tensor(
    name: str,
    rng: np.random.Generator,
    input_q: QParams,
    weight_q: QParams,
    channels: int | None = None,
    magnitude: int = 1 << 12,
) -> TensorSpec:
    """A constant int32 bias with the converter's quantization for `input_q` x `weight_q`.
    `channels` defaults to the number of weight scales (give it for per-tensor weights)."""
    q = bias_qparams(input_q, weight_q)
    n = channels if channels is not None else len(q.scale)
    return TensorSpec(name, (n,), np.int32, q, data=random_bias(rng, n, magnitude))
