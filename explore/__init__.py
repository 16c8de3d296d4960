"""Design-space exploration: sweeps of hardware configurations and pipeline options over a
set of models (`spec.py`, `sweep.py`), their executors (`executors.py`: local processes or
Ray), the result store, table and Pareto frontier (`result_store.py`), dataset evaluation of a
compiled artifact (`dataset.py`), and the end-to-end check of models against LiteRT's reference kernels
at every stage (`conformance.py`, for generated models). Above `pipeline/` and `backends/`,
below `api.py` and the tools."""
