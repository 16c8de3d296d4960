"""Time the bit-exact CPU kernels on the layers of MobileNetV2 1.0/224 and ResNet-50 (int8).

Every layer of both networks is built with random int8 weights and realistic per-channel
quantization and run through `qaccel.kernels.registry` (prepare + kernel, as the
interpreter does), so the totals are whole-model inference times of the kernels alone.
Targets: MobileNetV2 under 2 s, ResNet-50 under 10 s on a 2-core machine.

    python benchmarks/bench_cpu_kernels.py [--repeat 3] [--model mobilenet_v2|resnet50|all]
"""

from __future__ import annotations

import argparse
import time
from collections import defaultdict
from dataclasses import dataclass

import numpy as np

from qaccel.kernels.base import window_geometry
from qaccel.kernels.registry import KERNELS, OpCall, prepare
from qaccel.kernels.qparams import QParams

ACT_Q = QParams.per_tensor(0.0235, -128)  # a ReLU6 activation: [0, 6]
LIN_Q = QParams.per_tensor(0.12, 3)  # a linear bottleneck output


@dataclass
class Layer:
    op: str
    call: OpCall  # activation inputs are None; the benchmark fills them with random data
    in_shape: tuple[int, ...]
    label: str


def _weights(rng, shape, channels: int, axis: int):
    w = rng.integers(-127, 127, size=shape, endpoint=True, dtype=np.int8)
    q = QParams.per_axis(np.float32(rng.uniform(0.002, 0.02, channels)), np.zeros(channels, np.int64),
                         axis)
    return w, q


def _bias(rng, in_q: QParams, w_q: QParams) -> tuple[np.ndarray, QParams]:
    b = rng.integers(-5000, 5000, size=w_q.scale.size, dtype=np.int32)
    return b, QParams.per_axis(np.float32(in_q.s) * w_q.scale, np.zeros(w_q.scale.size, np.int64), 0)


class Net:
    """Builds the layer list while tracking the activation shape and quantization."""

    def __init__(self, seed: int, shape: tuple[int, ...]):
        self.rng = np.random.default_rng(seed)
        self.shape = shape
        self.q = QParams.per_tensor(0.0078125, 0)
        self.layers: list[Layer] = []

    def _add(self, op, inputs, input_q, out_shape, out_q, options, label):
        call = OpCall(inputs, input_q, [out_q], [out_shape], [np.dtype(np.int8)], options)
        self.layers.append(Layer(op, call, self.shape, f"{label} {self.shape}->{out_shape}"))
        self.shape, self.q = out_shape, out_q

    def conv(self, cout: int, k: int, stride: int = 1, act: str = "RELU6", depthwise=False):
        n, h, w, cin = self.shape
        out_h, _ = window_geometry("SAME", h, k, stride)
        out_w, _ = window_geometry("SAME", w, k, stride)
        if depthwise:
            wt, wq = _weights(self.rng, (1, k, k, cout), cout, 3)
        else:
            wt, wq = _weights(self.rng, (cout, k, k, cin), cout, 0)
        b, bq = _bias(self.rng, self.q, wq)
        out_q = ACT_Q if act == "RELU6" else (LIN_Q if act == "NONE" else
                                              QParams.per_tensor(0.05, -128))
        options = {"padding": "SAME", "stride_h": stride, "stride_w": stride,
                   "dilation_h_factor": 1, "dilation_w_factor": 1,
                   "fused_activation_function": act}
        op = "DEPTHWISE_CONV_2D" if depthwise else "CONV_2D"
        if depthwise:
            options["depth_multiplier"] = cout // cin
        self._add(op, [None, wt, b], [self.q, wq, bq], (n, out_h, out_w, cout), out_q, options,
                  f"{op} {k}x{k}/{stride}")

    def add(self, other_q: QParams, act: str = "NONE"):
        self._add("ADD", [None, None], [self.q, other_q], self.shape, LIN_Q,
                  {"fused_activation_function": act}, "ADD")

    def pool(self, op: str, k: int, stride: int, padding: str = "VALID"):
        n, h, w, c = self.shape
        out_h, _ = window_geometry(padding, h, k, stride)
        out_w, _ = window_geometry(padding, w, k, stride)
        options = {"padding": padding, "stride_h": stride, "stride_w": stride,
                   "filter_height": k, "filter_width": k, "fused_activation_function": "NONE"}
        self._add(op, [None], [self.q], (n, out_h, out_w, c), self.q, options, op)

    def head(self, classes: int = 1000):
        n = self.shape[0]
        depth = int(np.prod(self.shape[1:]))
        wt, wq = _weights(self.rng, (classes, depth), classes, 0)
        b, bq = _bias(self.rng, self.q, wq)
        self._add("FULLY_CONNECTED", [None, wt, b], [self.q, wq, bq], (n, classes),
                  QParams.per_tensor(0.15, 20), {"fused_activation_function": "NONE"}, "FC")
        self._add("SOFTMAX", [None], [self.q], (n, classes), QParams.per_tensor(1 / 256, -128),
                  {"beta": 1.0}, "SOFTMAX")


def mobilenet_v2(batch: int = 1) -> list[Layer]:
    net = Net(0, (batch, 224, 224, 3))
    net.conv(32, 3, 2)
    cin = 32
    for t, c, n, s in [(1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2),
                       (6, 96, 3, 1), (6, 160, 3, 2), (6, 320, 1, 1)]:
        for i in range(n):
            stride = s if i == 0 else 1
            block_in_q = net.q
            if t != 1:
                net.conv(cin * t, 1)
            net.conv(cin * t, 3, stride, depthwise=True)
            net.conv(c, 1, act="NONE")
            if stride == 1 and cin == c:
                net.add(block_in_q)
            cin = c
    net.conv(1280, 1)
    net.pool("AVERAGE_POOL_2D", 7, 1)
    net.head()
    return net.layers


def resnet50(batch: int = 1) -> list[Layer]:
    net = Net(1, (batch, 224, 224, 3))
    net.conv(64, 7, 2, act="RELU")
    net.pool("MAX_POOL_2D", 3, 2, "SAME")
    cin = 64
    for width, blocks, stride in [(64, 3, 1), (128, 4, 2), (256, 6, 2), (512, 3, 2)]:
        for i in range(blocks):
            s = stride if i == 0 else 1
            block_in = (net.shape, net.q)
            net.conv(width, 1, act="RELU")
            net.conv(width, 3, s, act="RELU")
            net.conv(width * 4, 1, act="NONE")
            main_q = net.q
            if i == 0:  # projection shortcut, from the block input
                net.shape, net.q = block_in
                net.conv(width * 4, 1, s, act="NONE")
            net.q = main_q
            net.add(QParams.per_tensor(0.1, -5), act="RELU")
            cin = width * 4
    net.pool("AVERAGE_POOL_2D", 7, 1)
    net.head()
    assert cin == 2048
    return net.layers


def run_layers(layers: list[Layer], rng) -> tuple[dict[str, float], list[tuple[float, str]]]:
    """Run every layer once: seconds per op type, and (seconds, label) per layer."""
    times: dict[str, float] = defaultdict(float)
    per_layer = []
    for layer in layers:
        call = layer.call
        inputs = [rng.integers(-128, 127, size=layer.in_shape, dtype=np.int8) if x is None else x
                  for x in call.inputs]
        t0 = time.perf_counter()
        prepare(layer.op, OpCall(call.inputs, call.input_q, call.output_q, call.output_shapes,
                                 call.output_dtypes, call.options))
        out = KERNELS[layer.op](OpCall(inputs, call.input_q, call.output_q, call.output_shapes,
                                       call.output_dtypes, call.options))[0]
        elapsed = time.perf_counter() - t0
        times[layer.op] += elapsed
        per_layer.append((elapsed, layer.label))
        assert out.shape == tuple(call.output_shapes[0]), (layer.label, out.shape)
    return times, per_layer


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--model", default="all", choices=["all", "mobilenet_v2", "resnet50"])
    parser.add_argument("--slowest", type=int, default=5, help="list the N slowest layers")
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    models = {"mobilenet_v2": mobilenet_v2, "resnet50": resnet50}
    for name, build in models.items():
        if args.model not in ("all", name):
            continue
        layers = build()
        best, best_times, best_layers = float("inf"), {}, []
        for _ in range(args.repeat):
            times, per_layer = run_layers(layers, rng)
            total = sum(times.values())
            if total < best:
                best, best_times, best_layers = total, times, per_layer
        print(f"{name}: {len(layers)} layers, best of {args.repeat}: {best:.3f} s")
        for op, t in sorted(best_times.items(), key=lambda kv: -kv[1]):
            print(f"  {op:20s} {t:7.3f} s")
        print("  slowest layers:")
        for t, label in sorted(best_layers, reverse=True)[: args.slowest]:
            print(f"    {t * 1000:7.1f} ms  {label}")


if __name__ == "__main__":
    main()
