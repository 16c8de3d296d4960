"""Named pipelines: passes that expand to a documented list of passes (see docs/passes.md)."""

# pipeline name -> class name in this module
PIPELINES: dict[str, str] = {}
