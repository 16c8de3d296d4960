/* qaccel_runner (qaccel_runner.h): the generated driver's table of accelerator functions run
 * through the program runner (qaccel_program.h) on the C machine. The driver (model.c) stays
 * board-neutral: on a board, the host program hands each program state the board support
 * package's qaccel_vta.h calls as its device instead. */
#include "qaccel_runner.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vta_machine.h"

#define QACCEL_RUNNER_ERROR_LEN (QACCEL_ERROR_BYTES + 128)

typedef struct {
  uint64_t *bytes; /* the program's copy, 8-byte aligned (the runner reads it in place) */
  qaccel_program *program;
  qaccel_state *state;
} loaded_function;

struct qaccel_runner {
  loaded_function *functions; /* one per entry of qaccel_model_functions */
  int64_t cycles;
  char error[QACCEL_RUNNER_ERROR_LEN];
};

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

static void unload(loaded_function *f) {
  qaccel_state_free(f->state);
  qaccel_program_close(f->program);
  free(f->bytes);
  memset(f, 0, sizeof *f);
}

qaccel_runner *qaccel_runner_open(void) {
  size_t n = qaccel_model_n_functions > 0 ? (size_t)qaccel_model_n_functions : 1;
  qaccel_runner *r = (qaccel_runner *)calloc(1, sizeof *r);
  if (!r) return NULL;
  r->functions = (loaded_function *)calloc(n, sizeof *r->functions);
  if (!r->functions) {
    free(r);
    return NULL;
  }
  return r;
}

void qaccel_runner_close(qaccel_runner *r) {
  int fn;
  if (!r) return;
  for (fn = 0; fn < qaccel_model_n_functions; fn++) unload(&r->functions[fn]);
  free(r->functions);
  free(r);
}

static int bad_function(qaccel_runner *r, int fn) {
  if (fn >= 0 && fn < qaccel_model_n_functions) return 0;
  snprintf(r->error, sizeof r->error, "no accelerator function %d (the model has %d)", fn,
           qaccel_model_n_functions);
  return 1;
}

/* The program header's i64 config[] (bytes 64..), vta_config's order as qaccel_model_hw. */
enum { CONFIG_AT = 64 };

/* vta_config's fields, in order (both VTA_CONFIG_FIELDS), from `hw`. */
static void read_config(const int64_t *hw, vta_config *c) {
#define READ_CONFIG_FIELD(key, lowest, highest) c->key = *hw++;
  VTA_CONFIG_FIELDS(READ_CONFIG_FIELD)
#undef READ_CONFIG_FIELD
}

/* The first key where the two configurations differ (NULL: none). */
static const char *differing_key(const vta_config *a, const vta_config *b) {
#define COMPARE_CONFIG_FIELD(key, lowest, highest) \
  if (a->key != b->key) return #key;
  VTA_CONFIG_FIELDS(COMPARE_CONFIG_FIELD)
#undef COMPARE_CONFIG_FIELD
  return NULL;
}

int qaccel_runner_load(qaccel_runner *r, int fn, const void *program, uint64_t nbytes) {
  const qaccel_function *f;
  loaded_function *slot;
  char error[QACCEL_ERROR_BYTES];
  int64_t header[VTA_CONFIG_N_FIELDS];
  vta_config built, compiled;
  const char *key;
  if (bad_function(r, fn)) return -1;
  f = &qaccel_model_functions[fn];
  slot = &r->functions[fn];
  r->error[0] = '\0';
  unload(slot);
  if (!f->program) {
    snprintf(r->error, sizeof r->error, "%s has no program (see model.c)", f->name);
    return -1;
  }
  if (!program || nbytes != f->program_bytes) {
    snprintf(r->error, sizeof r->error, "%s: a program of %llu bytes, the driver's has %llu",
             f->name, (unsigned long long)nbytes, (unsigned long long)f->program_bytes);
    return -1;
  }
  slot->bytes = (uint64_t *)malloc((size_t)(nbytes + 7) / 8 * 8 + 8);
  if (!slot->bytes) {
    snprintf(r->error, sizeof r->error, "%s: out of memory", f->name);
    return -1;
  }
  memcpy(slot->bytes, program, (size_t)nbytes);
  if (qaccel_program_open(slot->bytes, (size_t)nbytes, &slot->program, error) ||
      qaccel_state_new(slot->program, &slot->state, error)) {
    snprintf(r->error, sizeof r->error, "%s: %s", f->name, error);
    unload(slot);
    return -1;
  }
  memcpy(header, (const uint8_t *)slot->bytes + CONFIG_AT, sizeof header);
  read_config(qaccel_model_hw, &built);
  read_config(header, &compiled);
  if ((key = differing_key(&built, &compiled)) != NULL) {
    snprintf(r->error, sizeof r->error,
             "%s: the program was compiled for another hardware config than %s (%s differs)",
             f->name, qaccel_model_hw_name, key);
    unload(slot);
    return -1;
  }
  if (qaccel_program_inputs(slot->program) != f->n_inputs ||
      qaccel_program_outputs(slot->program) != f->n_outputs) {
    snprintf(r->error, sizeof r->error, "%s: the program's inputs and outputs are not the driver's",
             f->name);
    unload(slot);
    return -1;
  }
  return 0;
}

int qaccel_runner_call(qaccel_runner *r, int fn, size_t n_in, const qaccel_tensor *inputs,
                       size_t n_out, const qaccel_tensor *outputs) {
  const qaccel_function *f;
  loaded_function *slot;
  if (bad_function(r, fn)) return -1;
  f = &qaccel_model_functions[fn];
  slot = &r->functions[fn];
  r->error[0] = '\0';
  if (!slot->state) {
    snprintf(r->error, sizeof r->error, "%s: program not loaded", f->name);
    return -1;
  }
  if (qaccel_state_run(slot->state, n_in, inputs, n_out, outputs)) {
    snprintf(r->error, sizeof r->error, "%s: %s", f->name, qaccel_state_error(slot->state));
    return -1;
  }
  if (qaccel_state_cycles(slot->state) > 0) r->cycles += qaccel_state_cycles(slot->state);
  return 0;
}

const char *qaccel_runner_error(const qaccel_runner *r) { return r->error; }

int64_t qaccel_runner_cycles(const qaccel_runner *r) { return r->cycles; }
