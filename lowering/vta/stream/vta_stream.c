/* An accelerator layer's instruction stream resolved in one call: dependency tokens, micro-op
 * placement and encoding (lowering/vta/cstream.py loads it; lowering/vta/emit.py's
 * `resolve_stream_py` is the reference it must match exactly).
 *
 * The emitter describes the stream as flat arrays (see vta_stream.h): per instruction the
 * row of fields it starts from, its module, the buffer slots it reads and writes (an access
 * signature) and its micro-op kernel. Every index is checked before anything is written. */
#include "vta_stream.h"

#include <stdlib.h>
#include <string.h>

#ifndef VTA_STREAM_SOURCE_HASH
#define VTA_STREAM_SOURCE_HASH "unknown"
#endif

int64_t vta_stream_abi(void) { return VTA_STREAM_ABI; }

const char *vta_stream_source_hash(void) { return VTA_STREAM_SOURCE_HASH; }

static int fail(vta_stream_io *io, int code, int64_t index) {
    io->error_index = index;
    return code;
}

/* A field's range of values, hi - lo, in unsigned arithmetic (2^63 at most once checked). */
static uint64_t span(const vta_stream_io *io, int64_t j) {
    return (uint64_t)io->enc_hi[j] - (uint64_t)io->enc_lo[j];
}

static int power_of_two(uint64_t v) { return v != 0 && (v & (v - 1)) == 0; }

/* The descriptors' indices and sizes, all checked; 0 or VTA_STREAM_BAD_INPUT. */
static int check(vta_stream_io *io) {
    if (io->nf != VTA_STREAM_NF || io->n < 0 || io->n_rows < 0 || io->n_sigs < 0 ||
        io->n_slots < 0 || io->n_kernels < 0 || io->uop_depth < 0 || io->capacity < 0)
        return fail(io, VTA_STREAM_BAD_INPUT, -1);
    if (io->n > 0 && (!io->recs || !io->rows || !io->fields || !io->words))
        return fail(io, VTA_STREAM_BAD_INPUT, -1);
    if (!io->sig_read_ptr || !io->sig_write_ptr || (io->n_kernels > 0 && !io->kernel_sizes))
        return fail(io, VTA_STREAM_BAD_INPUT, -1);
    if (io->sig_entries[0] < 0 || io->sig_entries[1] < 0 ||
        (io->sig_entries[0] > 0 && !io->sig_reads) || (io->sig_entries[1] > 0 && !io->sig_writes))
        return fail(io, VTA_STREAM_BAD_INPUT, -1);
    for (int k = 0; k < 8; k++)
        if (io->columns[k] < 0 || io->columns[k] >= VTA_STREAM_NF)
            return fail(io, VTA_STREAM_BAD_INPUT, -1);
    for (int k = 0; k < 9; k++)
        if ((io->token_push[k] < -1 || io->token_push[k] >= VTA_STREAM_NF) ||
            (io->token_pop[k] < -1 || io->token_pop[k] >= VTA_STREAM_NF) ||
            ((io->token_push[k] < 0) != (io->token_pop[k] < 0)))
            return fail(io, VTA_STREAM_BAD_INPUT, -1);
    if (io->enc_ptr[0] != 0 || io->enc_ptr[VTA_STREAM_OPCODES] != io->enc_entries ||
        (io->enc_entries > 0 && (!io->enc_col || !io->enc_lo || !io->enc_hi ||
                                 !io->enc_shift || !io->enc_word)))
        return fail(io, VTA_STREAM_BAD_INPUT, -1);
    for (int op = 0; op < VTA_STREAM_OPCODES; op++)
        if (io->enc_ptr[op + 1] < io->enc_ptr[op] ||
            io->enc_ptr[op + 1] > VTA_STREAM_OPCODES * VTA_STREAM_NF)
            return fail(io, VTA_STREAM_BAD_INPUT, -1);
    for (int64_t j = 0; j < io->enc_ptr[VTA_STREAM_OPCODES]; j++)
        if (io->enc_col[j] < 0 || io->enc_col[j] >= VTA_STREAM_NF || io->enc_word[j] < 0 ||
            io->enc_word[j] > 1 || io->enc_shift[j] < 0 || io->enc_shift[j] > 63 ||
            io->enc_lo[j] >= io->enc_hi[j] || io->enc_lo[j] < -((int64_t)1 << 62) ||
            io->enc_hi[j] > ((int64_t)1 << 62) || !power_of_two(span(io, j)))
            return fail(io, VTA_STREAM_BAD_INPUT, -1);
    if (io->sig_read_ptr[0] != 0 || io->sig_write_ptr[0] != 0)
        return fail(io, VTA_STREAM_BAD_INPUT, -1);
    for (int64_t s = 0; s < io->n_sigs; s++) {
        const int64_t *ptrs[2] = {io->sig_read_ptr, io->sig_write_ptr};
        const int64_t *slots[2] = {io->sig_reads, io->sig_writes};
        for (int w = 0; w < 2; w++) {
            if (ptrs[w][s + 1] < ptrs[w][s] || ptrs[w][s + 1] > io->sig_entries[w])
                return fail(io, VTA_STREAM_BAD_INPUT, -1);
            for (int64_t j = ptrs[w][s]; j < ptrs[w][s + 1]; j++)
                if (slots[w][j] < 0 || slots[w][j] >= io->n_slots)
                    return fail(io, VTA_STREAM_BAD_INPUT, -1);
        }
    }
    int64_t total = 0; /* the kernels laid end to end (`place`): bounded, never overflowing */
    for (int64_t k = 0; k < io->n_kernels; k++) {
        if (io->kernel_sizes[k] < 1 || io->kernel_sizes[k] > ((int64_t)1 << 40))
            return fail(io, VTA_STREAM_BAD_INPUT, -1);
        total += io->kernel_sizes[k];
        if (total > ((int64_t)1 << 62))
            return fail(io, VTA_STREAM_BAD_INPUT, -1);
    }
    for (int64_t i = 0; i < io->n; i++) {
        const int64_t *r = io->recs + 5 * i;
        if (r[0] < 0 || r[0] >= io->n_rows || r[1] < 0 || r[1] > 2 || r[2] < 0 ||
            r[2] >= io->n_sigs || r[3] < -1 || r[3] >= io->n_kernels || r[4] < -1 ||
            (r[3] < 0 && r[4] != -1) || (r[3] >= 0 && r[4] >= io->kernel_sizes[r[3]]))
            return fail(io, VTA_STREAM_BAD_INPUT, i);
    }
    if (io->finish && (io->n == 0 || io->recs[5 * (io->n - 1) + 1] != 1))
        return fail(io, VTA_STREAM_BAD_INPUT, io->n - 1);
    return 0;
}

/* Tokens: every instruction waits for the latest instruction of another module that last
 * wrote a slot it accesses or read a slot it writes (`_Stream.add`'s rule). */
static int tokens(vta_stream_io *io, int64_t *work) {
    int64_t *state = malloc(sizeof(int64_t) * 5 * (size_t)(io->n_slots ? io->n_slots : 1));
    if (!state)
        return fail(io, VTA_STREAM_NOMEM, -1);
    for (int64_t s = 0; s < io->n_slots; s++) {
        int64_t *st = state + 5 * s; /* last writer, its module, last reader per module */
        st[0] = -1, st[1] = 3, st[2] = st[3] = st[4] = -1;
    }
    int64_t synced[9];
    for (int k = 0; k < 9; k++)
        synced[k] = -1;
    int64_t last[3] = {-1, -1, -1}; /* the latest instruction of each module */
    for (int64_t i = 0; i < io->n; i++) {
        const int64_t *r = io->recs + 5 * i;
        int64_t module = r[1], sig = r[2];
        int64_t *row = work + VTA_STREAM_NF * i;
        int64_t latest[4] = {-1, -1, -1, -1};
        const int64_t *reads = io->sig_reads + io->sig_read_ptr[sig];
        int64_t n_reads = io->sig_read_ptr[sig + 1] - io->sig_read_ptr[sig];
        const int64_t *writes = io->sig_writes + io->sig_write_ptr[sig];
        int64_t n_writes = io->sig_write_ptr[sig + 1] - io->sig_write_ptr[sig];
        for (int64_t j = 0; j < n_reads; j++) {
            const int64_t *st = state + 5 * reads[j];
            if (st[0] > latest[st[1]])
                latest[st[1]] = st[0];
        }
        for (int64_t j = 0; j < n_writes; j++) {
            int64_t *st = state + 5 * writes[j];
            if (st[0] > latest[st[1]])
                latest[st[1]] = st[0];
            for (int m = 0; m < 3; m++)
                if (st[2 + m] > latest[m])
                    latest[m] = st[2 + m];
            st[0] = i, st[1] = module, st[2] = st[3] = st[4] = -1;
        }
        for (int64_t j = 0; j < n_reads; j++)
            state[5 * reads[j] + 2 + module] = i;
        if (io->finish && i == io->n - 1) { /* FINISH: after the last of every other module */
            for (int m = 0; m < 3; m++)
                if (m != module && last[m] > latest[m])
                    latest[m] = last[m];
        }
        latest[module] = -1;
        for (int p = 0; p < 3; p++) {
            int64_t d = latest[p];
            if (d < 0)
                continue;
            int pair = 3 * p + (int)module;
            if (io->token_push[pair] < 0) {
                free(state);
                return fail(io, VTA_STREAM_NO_QUEUE, i);
            }
            if (d > synced[pair]) {
                synced[pair] = d;
                work[VTA_STREAM_NF * d + io->token_push[pair]] = 1;
                row[io->token_pop[pair]] = 1;
            }
        }
        last[module] = i;
    }
    free(state);
    return 0;
}

static int emit_row(vta_stream_io *io, const int64_t *row) {
    if (io->n_out >= io->capacity)
        return fail(io, VTA_STREAM_BAD_INPUT, io->n_out);
    memcpy(io->fields + VTA_STREAM_NF * io->n_out, row, sizeof(int64_t) * VTA_STREAM_NF);
    io->n_out++;
    return 0;
}

static int emit_uop_load(vta_stream_io *io, int64_t sram, int64_t dram, int64_t n) {
    int64_t row[VTA_STREAM_NF];
    memset(row, 0, sizeof row);
    const int64_t *c = io->columns; /* uop_bgn, uop_end, mem, sram, dram, y, x, stride */
    row[c[2]] = 0;                  /* LOAD UOP: opcode 0, memory type 0 */
    row[c[3]] = sram, row[c[4]] = dram, row[c[5]] = 1, row[c[6]] = n, row[c[7]] = n;
    io->n_uop_loads++;
    return emit_row(io, row);
}

/* Micro-ops: every kernel once up front when they all fit, else each loaded before use into
 * a ring (`_Stream.place_uops`). */
static int place(vta_stream_io *io, int64_t *work) {
    int64_t nk = io->n_kernels, depth = io->uop_depth, at = 0;
    int64_t *offsets = malloc(sizeof(int64_t) * 2 * (size_t)(nk ? nk : 1));
    if (!offsets)
        return fail(io, VTA_STREAM_NOMEM, -1);
    int64_t *resident = offsets + nk;
    for (int64_t k = 0; k < nk; k++) {
        offsets[k] = at;
        at += io->kernel_sizes[k];
        resident[k] = -1;
    }
    int64_t bgn = io->columns[0], end = io->columns[1];
    int rc = 0;
    io->n_out = 0;
    io->n_uop_loads = 0;
    if (at <= depth) {
        int64_t first = -1;
        for (int64_t i = 0; i < io->n && first < 0; i++)
            if (io->recs[5 * i + 1] == 1)
                first = i;
        if (first < 0 && io->n > 0) {
            free(offsets);
            return fail(io, VTA_STREAM_NO_COMPUTE, -1);
        }
        for (int64_t i = 0; i < io->n && !rc; i++) {
            const int64_t *r = io->recs + 5 * i;
            int64_t *row = work + VTA_STREAM_NF * i;
            if (i == first && at)
                rc = emit_uop_load(io, 0, 0, at);
            if (r[3] >= 0) {
                int64_t base = offsets[r[3]] + (r[4] >= 0 ? r[4] : 0);
                row[bgn] = base;
                row[end] = r[4] >= 0 ? base + 1 : offsets[r[3]] + io->kernel_sizes[r[3]];
            }
            if (!rc)
                rc = emit_row(io, row);
        }
        if (!at)
            io->n_uop_loads = 0;
        free(offsets);
        return rc;
    }
    int64_t ptr = 0;
    for (int64_t i = 0; i < io->n && !rc; i++) {
        const int64_t *r = io->recs + 5 * i;
        int64_t *row = work + VTA_STREAM_NF * i;
        int64_t k = r[3];
        if (k >= 0) {
            int64_t n = io->kernel_sizes[k];
            if (n > depth) {
                io->error_value = n;
                rc = fail(io, VTA_STREAM_KERNEL_TOO_BIG, i);
                break;
            }
            if (resident[k] < 0) {
                if (ptr + n > depth)
                    ptr = 0;
                int64_t lo = ptr, hi = ptr + n;
                for (int64_t o = 0; o < nk; o++)
                    if (resident[o] >= 0 && resident[o] < hi &&
                        lo < resident[o] + io->kernel_sizes[o])
                        resident[o] = -1;
                resident[k] = ptr;
                rc = emit_uop_load(io, ptr, offsets[k], n);
                ptr += n;
            }
            int64_t base = resident[k] + (r[4] >= 0 ? r[4] : 0);
            row[bgn] = base;
            row[end] = r[4] >= 0 ? base + 1 : resident[k] + n;
        }
        if (!rc)
            rc = emit_row(io, row);
    }
    free(offsets);
    return rc;
}

/* The 128-bit encodings of the output rows (`isa.encode`): a field outside its range is an
 * error the caller reports by encoding in Python. The rows are left as `isa.decode` gives
 * the encodings back: the fields the opcode's format does not have are zeroed. */
static int encode(vta_stream_io *io) {
    for (int64_t i = 0; i < io->n_out; i++) {
        int64_t *row = io->fields + VTA_STREAM_NF * i;
        int64_t clean[VTA_STREAM_NF];
        memset(clean, 0, sizeof clean);
        uint64_t w[2] = {0, 0};
        int64_t op = row[0];
        if (op < 0 || op >= VTA_STREAM_OPCODES)
            return fail(io, VTA_STREAM_OVERFLOW, i);
        for (int64_t j = io->enc_ptr[op]; j < io->enc_ptr[op + 1]; j++) {
            int64_t v = row[io->enc_col[j]];
            if (v < io->enc_lo[j] || v >= io->enc_hi[j])
                return fail(io, VTA_STREAM_OVERFLOW, i);
            uint64_t mask = span(io, j) - 1;
            w[io->enc_word[j]] |= ((uint64_t)v & mask) << io->enc_shift[j];
            clean[io->enc_col[j]] = v;
        }
        clean[0] = op;
        memcpy(row, clean, sizeof clean);
        io->words[2 * i] = w[0];
        io->words[2 * i + 1] = w[1];
    }
    return 0;
}

int vta_stream_resolve(vta_stream_io *io) {
    if (!io)
        return VTA_STREAM_BAD_INPUT;
    io->error_index = -1;
    io->error_value = 0;
    io->n_out = 0;
    io->n_uop_loads = 0;
    int rc = check(io);
    if (rc)
        return rc;
    int64_t *work = malloc(sizeof(int64_t) * VTA_STREAM_NF * (size_t)(io->n ? io->n : 1));
    if (!work)
        return fail(io, VTA_STREAM_NOMEM, -1);
    for (int64_t i = 0; i < io->n; i++)
        memcpy(work + VTA_STREAM_NF * i, io->rows + VTA_STREAM_NF * io->recs[5 * i],
               sizeof(int64_t) * VTA_STREAM_NF);
    rc = tokens(io, work);
    if (!rc)
        rc = place(io, work);
    free(work);
    if (!rc)
        rc = encode(io);
    return rc;
}
