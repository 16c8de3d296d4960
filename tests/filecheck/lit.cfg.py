# lit configuration for qaccel's FileCheck tests: `lit tests/filecheck`.
import os

import lit.formats

config.name = "qaccel"
config.test_format = lit.formats.ShTest()
config.suffixes = [".mlir", ".test"]
config.test_source_root = os.path.dirname(__file__)
config.excludes = ["lit.cfg.py", "Inputs"]

# The tools come from the environment qaccel is installed in.
config.environment["PATH"] = os.environ.get("PATH", "")
for var in ("HOME", "TMPDIR", "PYTHONPATH", "VIRTUAL_ENV"):
    if var in os.environ:
        config.environment[var] = os.environ[var]

fixtures = os.path.join(os.path.dirname(os.path.dirname(__file__)), "fixtures", "models")
config.substitutions.append(("%fixtures", fixtures))
