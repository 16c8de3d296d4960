"""The program runner's C sources (`qaccel_program.h`, `qaccel_program.c`); Python reaches it
through `qaccel.backends.vta.program_runner`."""
