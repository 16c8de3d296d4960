/* A qaccel_vta.h implementation for tests: DRAM in host memory; every run appends its
   instruction words and micro-ops to DUMP; host callbacks print the step they are asked for.
   Usage: harness DUMP CONSTANTS.bin (one accelerator function: vta_fn_0). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"

struct qaccel_vta {
    uint8_t *dram;
    uint32_t size;
    FILE *dump;
};

uint8_t *qaccel_vta_dram(qaccel_vta *dev, uint32_t nbytes) {
    if (dev->size < nbytes) {
        free(dev->dram);
        dev->dram = calloc(nbytes, 1);
        dev->size = nbytes;
    }
    return dev->dram;
}

int qaccel_vta_run(qaccel_vta *dev, const uint64_t *insns, uint32_t n_insns,
                   const uint32_t *uops, uint32_t n_uops) {
    fwrite(&n_insns, 4, 1, dev->dump);
    fwrite(insns, 16, n_insns, dev->dump);
    fwrite(&n_uops, 4, 1, dev->dump);
    fwrite(uops, 4, n_uops, dev->dump);
    printf("L\n");
    return 0;
}

static int write_slot(void *ctx, int slot, uint8_t *dst, uint32_t nbytes) {
    (void)ctx, (void)dst;
    printf("W %d %u\n", slot, nbytes);
    return 0;
}

static int read_slot(void *ctx, int slot, const uint8_t *src, uint32_t nbytes) {
    (void)ctx, (void)src;
    printf("R %d %u\n", slot, nbytes);
    return 0;
}

static int host_ops(void *ctx, int segment) {
    (void)ctx;
    printf("H %d\n", segment);
    return 0;
}

int main(int argc, char **argv) {
    struct qaccel_vta dev = {0, 0, 0};
    qaccel_host host = {0, write_slot, read_slot, host_ops};
    FILE *f;
    uint8_t *constants;
    long n;
    if (argc != 3 || !(dev.dump = fopen(argv[1], "wb")) || !(f = fopen(argv[2], "rb"))) return 2;
    fseek(f, 0, SEEK_END);
    n = ftell(f);
    fseek(f, 0, SEEK_SET);
    constants = malloc(n ? n : 1);
    if (fread(constants, 1, n, f) != (size_t)n) return 2;
    if (vta_fn_0_init(&dev, constants, (uint32_t)n) != 0) return 3;
    if (memcmp(dev.dram + VTA_FN_0_ARENA_BYTES, constants, (size_t)n) != 0) return 4;
    if (vta_fn_0_run(&dev, &host, NULL) != 0) return 5;
    fclose(dev.dump);
    return 0;
}
