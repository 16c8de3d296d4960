"""Corrupt the programs of an AOT model at random (1 to 3 bytes of the header and tables; the
checksum made right again, as a forger would, every other mutant) and open and run each through
the program runner: it must return an error or run, never crash. Usage: python fuzz_program.py
MODEL SEED [ITERATIONS]; prints error counts."""
import numpy as np, struct, sys
from qaccel.backends.vta.program.writer import seal
from qaccel.backends.vta.program_runner import Program, ProgramError
from qaccel.frontend.tflite_writer import read_model
sg = read_model(open(sys.argv[1], "rb").read()).subgraphs[0]
ops = [o for o in sg.operators if o.op == "CUSTOM"]
rng = np.random.default_rng(int(sys.argv[2]))
errs = {}
for op in ops:
    blob = np.frombuffer(bytes(sg.tensors[op.inputs[-1]].data_bytes()), np.uint8)
    xs = [np.zeros(sg.tensors[i].shape, np.int8) for i in op.inputs[:-1]]
    layers_at = struct.unpack_from("<Q", blob, 176)[0]
    for it in range(int(sys.argv[3]) if len(sys.argv) > 3 else 300):
        b = blob.copy()
        for _ in range(rng.integers(1, 4)):
            pos = rng.integers(0, min(len(b), layers_at + 64))
            b[pos] = rng.integers(0, 256)
        data = seal(b.tobytes()) if it % 2 else b.tobytes()
        try:
            Program(data).state().run(xs)
            e = ""
        except ProgramError as x:
            e = str(x)
        errs[e.split(" (")[0][:60]] = errs.get(e.split(" (")[0][:60], 0) + 1
for k, v in sorted(errs.items(), key=lambda kv: -kv[1]): print(v, k)
