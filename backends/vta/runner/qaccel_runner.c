/* qaccel_runner: the qaccel_vta.h device on libqaccel_vta (the DRAM image in host memory, each
 * instruction stream run to FINISH on the functional simulator) and the entry points of
 * qaccel_runner.h. The generated driver (model.c) stays board-neutral: a board support package
 * implements the same two qaccel_vta.h calls on the hardware instead of this file. */
#include "qaccel_runner.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vta_machine.h"

#define QACCEL_DEVICE_ERROR_LEN 640 /* holds vta_run's error_kind and error_message */
#define QACCEL_ERROR_LEN 1024

/* A stream checked and timed once (vta_prepare), for the DRAM size it was prepared for. */
typedef struct {
    const uint64_t *insns;
    const uint32_t *uops;
    uint32_t n_insns, n_uops, dram_len;
    vta_program *program;
    int64_t cycles;
} prepared_stream;

struct qaccel_vta {
    vta_config config;
    uint8_t *dram;
    uint32_t dram_len;
    int64_t cycles;
    char error[QACCEL_DEVICE_ERROR_LEN]; /* why the last qaccel_vta_run failed */
    /* The fast path: each stream prepared on its first run, then run with data only
     * (QACCEL_SIMULATION=checked: every run simulated with every check instead). */
    prepared_stream *streams;
    int n_streams, cap_streams;
    vta_scratch *scratch;
};

struct qaccel_runner {
    qaccel_vta *devices; /* one per function of qaccel_model_functions */
    int *loaded;
    char error[QACCEL_ERROR_LEN];
};

/* ---- the device (qaccel_vta.h) -------------------------------------------------------------- */

uint8_t *qaccel_vta_dram(qaccel_vta *dev, uint32_t nbytes) {
    if (nbytes > dev->dram_len || !dev->dram) {
        uint32_t size = nbytes > dev->dram_len ? nbytes : dev->dram_len;
        uint8_t *grown = (uint8_t *)realloc(dev->dram, size ? size : 1);
        if (!grown) return NULL;
        memset(grown + dev->dram_len, 0, (size ? size : 1) - dev->dram_len);
        dev->dram = grown;
        dev->dram_len = size;
    }
    return dev->dram;
}

static int checked_by_environment(void) {
    const char *mode = getenv("QACCEL_SIMULATION");
    return mode && strcmp(mode, "checked") == 0;
}

/* The stream prepared (checked and timed) once; NULL with rc set on an error. */
static prepared_stream *prepared_for(qaccel_vta *dev, const uint64_t *insns, uint32_t n_insns,
                                     const uint32_t *uops, uint32_t n_uops, vta_run *run,
                                     int *rc) {
    int k;
    prepared_stream *s;
    for (k = 0; k < dev->n_streams; k++) {
        s = &dev->streams[k];
        if (s->insns == insns && s->n_insns == n_insns && s->uops == uops &&
            s->n_uops == n_uops && s->dram_len == dev->dram_len)
            return s;
    }
    if (!dev->scratch && (*rc = vta_scratch_new(&dev->config, run, &dev->scratch)) != VTA_OK)
        return NULL;
    if (dev->n_streams == dev->cap_streams) {
        int cap = dev->cap_streams ? 2 * dev->cap_streams : 16;
        prepared_stream *grown =
            (prepared_stream *)realloc(dev->streams, (size_t)cap * sizeof *grown);
        if (!grown) {
            *rc = VTA_ERR_NOMEM;
            return NULL;
        }
        dev->streams = grown;
        dev->cap_streams = cap;
    }
    s = &dev->streams[dev->n_streams];
    memset(run, 0, sizeof *run);
    run->uop_image = uops;
    run->uop_image_len = n_uops;
    run->dram_len = dev->dram_len;
    *rc = vta_prepare(&dev->config, insns, n_insns, run, &s->program);
    if (*rc != VTA_OK) return NULL;
    s->insns = insns;
    s->uops = uops;
    s->n_insns = n_insns;
    s->n_uops = n_uops;
    s->dram_len = dev->dram_len;
    s->cycles = run->total_cycles;
    dev->n_streams++;
    return s;
}

int qaccel_vta_run(qaccel_vta *dev, const uint64_t *insns, uint32_t n_insns,
                   const uint32_t *uops, uint32_t n_uops) {
    vta_run run;
    int rc = VTA_OK, q;
    memset(&run, 0, sizeof run);
    run.uop_image = uops;
    run.uop_image_len = n_uops;
    run.dram = dev->dram;
    run.dram_len = dev->dram_len;
    run.kernel = VTA_KERNEL_AUTO;
    dev->error[0] = '\0';
    if (checked_by_environment()) {
        rc = vta_simulate(&dev->config, insns, n_insns, 1, &run);
    } else {
        prepared_stream *s = prepared_for(dev, insns, n_insns, uops, n_uops, &run, &rc);
        if (s) {
            memset(&run, 0, sizeof run);
            run.dram = dev->dram;
            run.dram_len = dev->dram_len;
            rc = vta_execute(s->program, dev->scratch, &run); /* the prepared statistics */
        }
    }
    if (rc == VTA_ERROR) {
        if (run.error_index >= 0 && run.error_kind[0])
            snprintf(dev->error, sizeof dev->error, "instruction %lld (%s): %s",
                     (long long)run.error_index, run.error_kind, run.error_message);
        else if (run.error_index >= 0)
            snprintf(dev->error, sizeof dev->error, "instruction %lld: %s",
                     (long long)run.error_index, run.error_message);
        else
            snprintf(dev->error, sizeof dev->error, "%s", run.error_message);
        return rc;
    }
    if (rc == VTA_ERR_CONFIG) {
        snprintf(dev->error, sizeof dev->error, "the C machine cannot run hardware config %s",
                 qaccel_model_hw_name);
        return rc;
    }
    if (rc != VTA_OK) {
        snprintf(dev->error, sizeof dev->error, "the C machine ran out of memory");
        return rc;
    }
    dev->cycles += run.total_cycles;
    for (q = 0; q < VTA_FIFOS; q++) {
        if (run.leftover_tokens[q]) {
            snprintf(dev->error, sizeof dev->error,
                     "tokens left over (load->compute %lld, compute->load %lld, "
                     "store->compute %lld, compute->store %lld)",
                     (long long)run.leftover_tokens[0], (long long)run.leftover_tokens[1],
                     (long long)run.leftover_tokens[2], (long long)run.leftover_tokens[3]);
            return -1;
        }
    }
    return 0;
}

/* ---- the runner (qaccel_runner.h) ----------------------------------------------------------- */

int qaccel_runner_abi(void) { return QACCEL_RUNNER_ABI; }

int qaccel_runner_function_count(void) { return qaccel_model_n_functions; }

const char *qaccel_runner_function_name(int fn) {
    if (fn < 0 || fn >= qaccel_model_n_functions) return NULL;
    return qaccel_model_functions[fn].name;
}

int qaccel_runner_find(const char *name) {
    int fn;
    for (fn = 0; name && fn < qaccel_model_n_functions; fn++)
        if (strcmp(qaccel_model_functions[fn].name, name) == 0) return fn;
    return -1;
}

qaccel_runner *qaccel_runner_open(void) {
    size_t n = qaccel_model_n_functions > 0 ? (size_t)qaccel_model_n_functions : 1;
    qaccel_runner *r = (qaccel_runner *)calloc(1, sizeof *r);
    int fn;
    if (!r) return NULL;
    r->devices = (qaccel_vta *)calloc(n, sizeof *r->devices);
    r->loaded = (int *)calloc(n, sizeof *r->loaded);
    if (!r->devices || !r->loaded) {
        qaccel_runner_close(r);
        return NULL;
    }
    for (fn = 0; fn < qaccel_model_n_functions; fn++) {
        /* vta_config's fields are qaccel_model_hw's, in order (both VTA_CONFIG_FIELDS) */
        vta_config *c = &r->devices[fn].config;
        const int64_t *hw = qaccel_model_hw;
#define READ_CONFIG_FIELD(key, lowest, highest) c->key = *hw++;
        VTA_CONFIG_FIELDS(READ_CONFIG_FIELD)
#undef READ_CONFIG_FIELD
    }
    return r;
}

void qaccel_runner_close(qaccel_runner *r) {
    int fn;
    if (!r) return;
    for (fn = 0; r->devices && fn < qaccel_model_n_functions; fn++) {
        qaccel_vta *dev = &r->devices[fn];
        int k;
        for (k = 0; k < dev->n_streams; k++) vta_program_free(dev->streams[k].program);
        free(dev->streams);
        vta_scratch_free(dev->scratch);
        free(dev->dram);
    }
    free(r->devices);
    free(r->loaded);
    free(r);
}

static int bad_function(qaccel_runner *r, int fn) {
    if (fn >= 0 && fn < qaccel_model_n_functions) return 0;
    snprintf(r->error, sizeof r->error, "no accelerator function %d (the model has %d)", fn,
             qaccel_model_n_functions);
    return 1;
}

int qaccel_runner_load(qaccel_runner *r, int fn, const uint8_t *constants, uint32_t nbytes) {
    const qaccel_function *f;
    if (bad_function(r, fn)) return -1;
    f = &qaccel_model_functions[fn];
    r->error[0] = '\0';
    if (nbytes != f->constants_bytes) {
        snprintf(r->error, sizeof r->error, "%s: %u bytes of constants, expected %u", f->name,
                 (unsigned)nbytes, (unsigned)f->constants_bytes);
        return -1;
    }
    if (f->init(&r->devices[fn], constants, nbytes) != 0) {
        snprintf(r->error, sizeof r->error, "%s: no DRAM image of %u bytes", f->name,
                 (unsigned)f->dram_bytes);
        return -1;
    }
    r->loaded[fn] = 1;
    return 0;
}

static const char *const STEP_NAMES[4] = {"write slot", "layer", "read slot", "host segment"};

int qaccel_runner_call(qaccel_runner *r, int fn, const qaccel_host *host) {
    const qaccel_function *f;
    qaccel_vta *dev;
    qaccel_where where = {-1, -1, -1};
    int rc;
    if (bad_function(r, fn)) return -1;
    f = &qaccel_model_functions[fn];
    dev = &r->devices[fn];
    r->error[0] = '\0';
    if (!r->loaded[fn]) {
        snprintf(r->error, sizeof r->error, "%s: constants not loaded", f->name);
        return -1;
    }
    memset(dev->dram, 0, f->arena_bytes); /* every call starts from a zero arena */
    rc = f->run(dev, host, &where);
    if (rc == 0) return 0;
    r->loaded[fn] = 0; /* a failed stream may have written anywhere: load the constants again */
    if (where.kind == QACCEL_STEP_LAYER)
        snprintf(r->error, sizeof r->error, "%s layer %d: %s", f->name, where.arg,
                 dev->error[0] ? dev->error : "the device failed");
    else if (where.kind >= 0 && where.kind < 4)
        snprintf(r->error, sizeof r->error, "%s step %d (%s %d): the host failed (rc %d)",
                 f->name, where.step, STEP_NAMES[where.kind], where.arg, rc);
    else
        snprintf(r->error, sizeof r->error, "%s: failed (rc %d)", f->name, rc);
    return rc;
}

const char *qaccel_runner_error(const qaccel_runner *r) { return r->error; }

int64_t qaccel_runner_cycles(const qaccel_runner *r) {
    int64_t total = 0;
    int fn;
    for (fn = 0; fn < qaccel_model_n_functions; fn++) total += r->devices[fn].cycles;
    return total;
}
