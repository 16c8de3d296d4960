"""The frontend's diagnostics, importable without loading the flatbuffer code (drivers catch
them at every start)."""


class TFLiteImportError(ValueError):
    """A `.tflite` file that cannot be imported, with a one-line reason."""


class TFLiteExportError(ValueError):
    """IR that cannot be written as a `.tflite` model, with a one-line reason."""
