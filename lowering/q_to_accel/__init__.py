"""The per-op-kind lowerings of `lower-q-to-accel` (`lowering/lower_q_to_accel.py`)."""
