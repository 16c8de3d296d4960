"""qaccel: an xDSL compiler that deploys pre-quantized int8 TFLite models onto a VTA-like
tensor accelerator, with every op the accelerator cannot run falling back to the CPU."""

__version__ = "0.1.0"
