/* A board support package for tests: qaccel_vta.h's two calls, the DRAM image in host memory
   and each instruction stream run on the C machine's checked simulator (as a board runs it on
   the accelerator), every stream also appended to DUMP. It runs the program of the table's
   first function through qaccel_program.h with this device, as a host program on a board does.
   Usage: harness PROGRAM IN.bin OUT.bin DUMP (inputs and outputs: their bytes, one after the
   other). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"
#include "vta_machine.h"

struct qaccel_vta {
    vta_config config;
    uint8_t *dram;
    uint32_t size;
    FILE *dump;
};

uint8_t *qaccel_vta_dram(qaccel_vta *dev, uint32_t nbytes) {
    if (!dev->dram) {
        dev->dram = calloc(nbytes ? nbytes : 1, 1);
        dev->size = nbytes;
    }
    return nbytes <= dev->size ? dev->dram : NULL;
}

int qaccel_vta_run(qaccel_vta *dev, const uint64_t *insns, uint32_t n_insns,
                   const uint32_t *uops, uint32_t n_uops) {
    vta_run run;
    fwrite(&n_insns, 4, 1, dev->dump);
    fwrite(insns, 16, n_insns, dev->dump);
    fwrite(&n_uops, 4, 1, dev->dump);
    fwrite(uops, 4, n_uops, dev->dump);
    memset(&run, 0, sizeof run);
    run.uop_image = uops;
    run.uop_image_len = n_uops;
    run.dram = dev->dram;
    run.dram_len = dev->size;
    return vta_simulate(&dev->config, insns, n_insns, 1, &run) != VTA_OK;
}

/* The adapter qaccel_vta.h shows: the board's calls as the program runner's device. */
static uint8_t *device_dram(void *ctx, uint64_t n) {
    return qaccel_vta_dram((qaccel_vta *)ctx, (uint32_t)n);
}

static int device_run(void *ctx, const uint64_t *insns, uint32_t n, const uint32_t *uops,
                      uint32_t n_uops, char error[QACCEL_ERROR_BYTES]) {
    (void)error;
    return qaccel_vta_run((qaccel_vta *)ctx, insns, n, uops, n_uops);
}

static long read_file(const char *path, uint8_t **out) {
    FILE *f = fopen(path, "rb");
    long n;
    if (!f) return -1;
    fseek(f, 0, SEEK_END);
    n = ftell(f);
    fseek(f, 0, SEEK_SET);
    *out = malloc(n ? (size_t)n : 1); /* 16-byte aligned: the runner reads the program in place */
    if (fread(*out, 1, (size_t)n, f) != (size_t)n) n = -1;
    fclose(f);
    return n;
}

static size_t tensor_of(const qaccel_program *p, int is_output, uint32_t k, qaccel_tensor *t) {
    int32_t d;
    size_t count = 1;
    memset(t, 0, sizeof *t);
    qaccel_program_tensor(p, is_output, k, &t->type, &t->rank, t->dims);
    for (d = 0; d < t->rank; d++) count *= (size_t)t->dims[d];
    t->bytes = count * (t->type == QACCEL_TYPE_INT32 ? 4 : 1);
    t->data = calloc(t->bytes ? t->bytes : 1, 1);
    return t->bytes;
}

int main(int argc, char **argv) {
    struct qaccel_vta dev;
    qaccel_device device = {&dev, device_dram, device_run};
    const int64_t *hw = qaccel_model_hw;
    char error[QACCEL_ERROR_BYTES];
    qaccel_program *program;
    qaccel_state *state;
    qaccel_tensor in[8], out[8];
    uint8_t *bytes, *x;
    long n, nx, at = 0;
    uint32_t k, n_in, n_out;
    FILE *o;
    memset(&dev, 0, sizeof dev);
#define READ_CONFIG_FIELD(key, lowest, highest) dev.config.key = *hw++;
    VTA_CONFIG_FIELDS(READ_CONFIG_FIELD)
#undef READ_CONFIG_FIELD
    if (argc != 5 || !(dev.dump = fopen(argv[4], "wb"))) return 2;
    if ((n = read_file(argv[1], &bytes)) < 0 || (nx = read_file(argv[2], &x)) < 0) return 2;
    if ((uint64_t)n != qaccel_model_functions[0].program_bytes) return 3;
    if (qaccel_program_open(bytes, (size_t)n, &program, error) ||
        qaccel_state_new(program, &state, error)) {
        fprintf(stderr, "%s\n", error);
        return 4;
    }
    if (qaccel_state_set_device(state, &device)) {
        fprintf(stderr, "%s\n", qaccel_state_error(state));
        return 5;
    }
    n_in = qaccel_program_inputs(program);
    n_out = qaccel_program_outputs(program);
    if (n_in > 8 || n_out > 8) return 6;
    for (k = 0; k < n_in; k++) {
        size_t size = tensor_of(program, 0, k, &in[k]);
        if (at + (long)size > nx) return 7;
        memcpy(in[k].data, x + at, size);
        at += (long)size;
    }
    for (k = 0; k < n_out; k++) tensor_of(program, 1, k, &out[k]);
    if (qaccel_state_run(state, n_in, in, n_out, out)) {
        fprintf(stderr, "%s\n", qaccel_state_error(state));
        return 8;
    }
    if (!(o = fopen(argv[3], "wb"))) return 2;
    for (k = 0; k < n_out; k++) fwrite(out[k].data, 1, out[k].bytes, o);
    fclose(o);
    fclose(dev.dump);
    for (k = 0; k < n_in; k++) free(in[k].data);
    for (k = 0; k < n_out; k++) free(out[k].data);
    qaccel_state_free(state);
    qaccel_program_close(program);
    free(dev.dram);
    free(bytes);
    free(x);
    return 0;
}
