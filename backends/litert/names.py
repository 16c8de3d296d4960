"""The names of the LiteRT models qaccel-compile writes and of their accelerator ops, apart from
the exporter (`aot.py`) so that running an artifact's LiteRT model does not import xDSL."""

AOT_FILE = "model.qaccel.tflite"
DISPATCH_FILE = "model.qaccel.dispatch.tflite"
CUSTOM_CODE = "QACCEL_VTA"
DISPATCH_CODE = "DISPATCH_OP"  # LiteRT's custom code of every vendor's compiled partition

__all__ = ["AOT_FILE", "CUSTOM_CODE", "DISPATCH_CODE", "DISPATCH_FILE"]
