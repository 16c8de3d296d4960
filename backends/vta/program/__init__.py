"""The program format of a compiled accelerator function: its writer (`writer.py`, where the
format is documented) and its one runner's C sources (`qaccel_program.h`, `qaccel_program.c`);
Python runs programs through `qaccel.backends.vta.program_runner`."""
