"""Make the real-data example: a small CNN trained on handwritten digits, quantized to int8.

    python tools/make_digits_example.py            # writes tests/fixtures/digits/
    python tools/make_digits_example.py --out DIR

scikit-learn's bundled digits (1797 grey 8x8 images of 0-9, no download) are split 80/20,
stratified and seeded; a Keras CNN (two 3x3 convolutions, a max pool, a dense classifier with
softmax) is trained on the 80 % and converted with TensorFlow's converter to full int8
(`Optimize.DEFAULT`, int8 kernels only, int8 input and output, calibrated on training images).
The folder gets

- `model.tflite`: the int8 model (input 1x8x8x1, output 1x10 class probabilities);
- `inputs/img_NNN.npy`: every test image, quantized with the model's input scale and zero
  point, int8 `[1, 8, 8, 1]`, in test-split order (file names sort in that order);
- `labels.npy`: the test images' digits (int32, same order).

which is what `qaccel-run OUTDIR --inputs-dir DIR/inputs --labels DIR/labels.npy` takes
(`explore/dataset.py`). The script prints the float model's test accuracy and that of the int8
model on LiteRT's reference kernels (BUILTIN_REF). Everything is seeded; needs the `fixtures`
extra (`tensorflow-cpu`) and scikit-learn. qaccel's tests use the committed files, never this
script.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
DEFAULT_OUT = REPO / "tests" / "fixtures" / "digits"
SEED = 0
EPOCHS = 40


def _data():
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    digits = load_digits()
    images = (digits.images / 16.0).astype(np.float32)[..., None]  # [N, 8, 8, 1] in [0, 1]
    return train_test_split(images, digits.target.astype(np.int32), test_size=0.2,
                            random_state=SEED, stratify=digits.target)  # fmt: skip


def _train(x_train: np.ndarray, y_train: np.ndarray):
    from qaccel.tools.make_fixtures import _fresh_keras_session

    keras = _fresh_keras_session(SEED)
    layers = keras.layers
    inputs = keras.Input((8, 8, 1), name="image")
    x = layers.Conv2D(16, 3, padding="same", activation="relu", name="conv1")(inputs)
    x = layers.Conv2D(32, 3, padding="same", activation="relu", name="conv2")(x)
    x = layers.MaxPooling2D(2, name="pool")(x)
    x = layers.Flatten(name="flatten")(x)
    x = layers.Dense(10, name="logits")(x)
    outputs = layers.Softmax(name="probabilities")(x)
    model = keras.Model(inputs, outputs, name="digits_cnn")
    model.compile(optimizer=keras.optimizers.Adam(2e-3),
                  loss="sparse_categorical_crossentropy", metrics=["accuracy"])  # fmt: skip
    model.fit(x_train, y_train, epochs=EPOCHS, batch_size=32, shuffle=True, verbose=0)
    return model


def _quantize_inputs(model: bytes, images: np.ndarray) -> np.ndarray:
    """The images as the int8 model's input: `round(x / scale) + zero_point`, clamped."""
    from qaccel.frontend.tflite_import import import_tflite
    from qaccel.interpreter.interpreter import entry_function
    from qaccel.dialects.quant import element_qparams

    function = entry_function(import_tflite(model, "digits.tflite"))
    qp = element_qparams(function.function_type.inputs.data[0])
    scale, zero_point = float(qp.scale[0]), int(qp.zero_point[0])
    q = np.round(images / scale) + zero_point
    return np.clip(q, -128, 127).astype(np.int8)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT, help="default: %(default)s")
    args = ap.parse_args(argv)

    from qaccel.backends.litert.oracle import run_reference
    from qaccel.tools.make_fixtures import check_with_reference, convert_keras

    x_train, x_test, y_train, y_test = _data()
    model = _train(x_train, y_train)
    float_accuracy = float(np.mean(np.argmax(model.predict(x_test, verbose=0), -1) == y_test))
    tflite = convert_keras(model, (8, 8, 1), x_train[:300])
    check_with_reference("digits", tflite)
    inputs = _quantize_inputs(tflite, x_test)

    out = args.out
    (out / "inputs").mkdir(parents=True, exist_ok=True)
    for old in (out / "inputs").glob("*.npy"):
        old.unlink()
    (out / "model.tflite").write_bytes(tflite)
    for i, image in enumerate(inputs):
        np.save(out / "inputs" / f"img_{i:03d}.npy", image[None])
    np.save(out / "labels.npy", y_test)

    ref = run_reference(tflite, [[image[None]] for image in inputs], keep_all_tensors=False)
    if ref.refused is not None:
        print(f"make_digits_example: error: LiteRT refused the model: {ref.refused}",
              file=sys.stderr)  # fmt: skip
        return 1
    top1 = np.array([int(np.argmax(outs[0])) for outs in ref.outputs])
    print(f"wrote {out}: model.tflite ({len(tflite)} bytes), {len(inputs)} test images, "
          f"labels.npy; test accuracy: float {float_accuracy:.4f}, int8 on LiteRT BUILTIN_REF "
          f"{np.mean(top1 == y_test):.4f}")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
