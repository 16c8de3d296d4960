"""Graph-level passes over `tfl`, `q` and `accel` IR, one pass per module, named after the pass.

The passes are registered lazily by their kebab-case names in `qaccel.pipeline.registry`.
"""
