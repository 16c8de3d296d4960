"""Corrupt the programs of an AOT model at random (1 to 3 bytes of the header and tables) and
run each through libqaccel_litert's qaccel_litert_run_program: it must return an error or run,
never crash. Usage: python fuzz_program.py MODEL SEED [ITERATIONS]; prints error counts."""
import ctypes, numpy as np, struct, sys
from qaccel.backends.litert.runtime import kernel_library
from qaccel.frontend.tflite_writer import read_model
lib = ctypes.CDLL(str(kernel_library()))
f = lib.qaccel_litert_run_program
f.restype = ctypes.c_int
f.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_size_t, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p, ctypes.c_void_p]
lib.qaccel_litert_last_error.restype = ctypes.c_char_p
sg = read_model(open(sys.argv[1],'rb').read()).subgraphs[0]
ops = [o for o in sg.operators if o.op == "CUSTOM"]
rng = np.random.default_rng(int(sys.argv[2]))
errs = {}
for op in ops:
    blob = np.frombuffer(bytes(sg.tensors[op.inputs[-1]].data_bytes()), np.uint8)
    ins = [sg.tensors[i] for i in op.inputs[:-1]]; outs = [sg.tensors[i] for i in op.outputs]
    xs = [np.zeros(t.shape, np.int8) for t in ins]; ys = [np.zeros(t.shape, np.int8) for t in outs]
    layers_at = struct.unpack_from("<Q", blob, 176)[0]
    for it in range(int(sys.argv[3]) if len(sys.argv) > 3 else 300):
        b = blob.copy()
        for _ in range(rng.integers(1, 4)):
            pos = rng.integers(0, min(len(b), layers_at + 64))
            b[pos] = rng.integers(0, 256)
        lib.qaccel_litert_clear_error()
        I = (ctypes.c_void_p * len(xs))(*[x.ctypes.data for x in xs]); IB = (ctypes.c_size_t * len(xs))(*[x.nbytes for x in xs])
        O = (ctypes.c_void_p * len(ys))(*[y.ctypes.data for y in ys]); OB = (ctypes.c_size_t * len(ys))(*[y.nbytes for y in ys])
        rc = f(b.ctypes.data, b.size, len(xs), I, IB, len(ys), O, OB)
        e = lib.qaccel_litert_last_error().decode()
        errs[e.split(' (')[0][:60]] = errs.get(e.split(' (')[0][:60], 0) + 1
for k, v in sorted(errs.items(), key=lambda kv: -kv[1]): print(v, k)
