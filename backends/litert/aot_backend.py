"""qaccel as a backend of LiteRT's Python AOT API (`ai_edge_litert.aot.aot_compile`):

    from ai_edge_litert.aot import aot_compile
    from qaccel.backends.litert.aot_backend import QaccelTarget, register

    register()
    result = aot_compile.aot_compile("model.tflite", output_dir="out", target=QaccelTarget())
    # result.models[0]: the model with DISPATCH_OPs (out/model_Qaccel_VTA_apply_plugin.tflite)

The backend's only component is LiteRT's own apply-plugin step (the wheel's `apply_plugin_main`)
with `--libs` naming the directory of our compiler plugin; LiteRT's MLIR transforms step is a
copy (qaccel compiles pre-quantized models as they are) and quantization is refused.
`QACCEL_PLUGIN_CONFIG` chooses the hardware configuration, as for every plugin flow.
Registration is explicit (`register()`), so importing qaccel does not import LiteRT.
"""

from __future__ import annotations

import shutil
from typing import Any

BACKEND_ID = "qaccel"
SOC_MANUFACTURER, SOC_MODEL = "Qaccel", "VTA"
_REGISTERED: dict[str, Any] = {}


def _classes():
    from ai_edge_litert.aot.core import aot_types

    if _REGISTERED:
        return _REGISTERED["target"], _REGISTERED["backend"]

    class QaccelTarget(aot_types.Target):
        """The VTA-like accelerator qaccel compiles for."""

        soc_manufacturer, soc_model = SOC_MANUFACTURER, SOC_MODEL

        def __hash__(self) -> int:
            return hash((self.soc_manufacturer, self.soc_model))

        def __eq__(self, other) -> bool:
            return isinstance(other, QaccelTarget)

        def __repr__(self) -> str:
            return f"{self.soc_manufacturer}_{self.soc_model}"

        def flatten(self) -> dict[str, Any]:
            return {"backend_id": BACKEND_ID, "soc_manufacturer": self.soc_manufacturer,
                    "soc_model": self.soc_model}  # fmt: skip

        @classmethod
        def backend_id(cls) -> str:
            return BACKEND_ID

    class QaccelBackend(aot_types.Backend):
        """Applies libLiteRtCompilerPlugin_Qaccel with LiteRT's apply-plugin component."""

        @classmethod
        def id(cls) -> str:
            return BACKEND_ID

        @classmethod
        def create(cls, config) -> QaccelBackend:
            if config.get("backend_id", "") != cls.id():
                raise ValueError("Invalid backend id")
            return cls(config)

        @property
        def target(self) -> QaccelTarget:
            return QaccelTarget()

        @property
        def target_id(self) -> str:
            return repr(self.target)

        def call_component(self, input_model, output_model, component):
            from qaccel.backends.litert.plugin_flows import plugin_library_dir

            name = getattr(component, "component_name", "")
            if name == "apply_plugin":
                return component(input_model, output_model, SOC_MANUFACTURER, SOC_MODEL,
                                 libs=str(plugin_library_dir()))  # fmt: skip
            if name == "mlir_transforms":
                if input_model.in_memory:
                    input_model.save(output_model.path)
                else:
                    shutil.copyfile(input_model.path, output_model.path)
                return output_model
            raise NotImplementedError(f"the qaccel backend does not support the {name} component "
                                      "(qaccel compiles pre-quantized int8 models)")

    _REGISTERED.update(target=QaccelTarget, backend=QaccelBackend)
    return QaccelTarget, QaccelBackend


def register():
    """Register the qaccel backend with ai_edge_litert.aot (idempotent); returns its class."""
    from ai_edge_litert.aot.vendors import import_vendor

    _, backend = _classes()
    import_vendor.register_backend(backend)
    return backend


def QaccelTarget():  # noqa: N802 - reads as the class it makes
    """A target for `aot_compile(..., target=QaccelTarget())`."""
    return _classes()[0]()


__all__ = ["BACKEND_ID", "QaccelTarget", "register"]
