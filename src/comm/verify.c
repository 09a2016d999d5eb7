/* The data a collective is tested with and its check against a double-precision reference,
 * within the rounding a format allows (comm/verify.h). */
#include "config.h"
#include "comm/verify.h"

#include <math.h>
#include <string.h>

#include "comm/coll.h"
#include "comm/reduce.h"

/* splitmix64's finaliser (Steele, Lea, Flood, "Fast splittable pseudorandom number
 * generators", OOPSLA 2014) over a counter: a value per (seed, rank, index). */
static uint64_t mix(uint64_t z)
{
    z += 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static float value(enum fp_format dt, uint64_t seed, int rank, size_t i)
{
    uint64_t h = mix(seed ^ mix(((uint64_t)rank << 48) ^ (uint64_t)i));
    float x = (float)((double)(h >> 11) * 0x1.0p-52 - 1.0);
    return fp_round(dt, x);
}

void verify_fill(enum fp_format dt, void *buf, size_t count, uint64_t seed, int rank)
{
    for (size_t i = 0; i < count; i++)
        reduce_set(dt, buf, i, value(dt, seed, rank, i));
}

static double unit(enum fp_format dt)
{
    return fp_info(dt)->epsilon / 2;
}

double verify_tolerance(enum fp_format dt, int n)
{
    double u = unit(dt) + (dt == FP_FP32 ? 0 : unit(FP_FP32));
    return (n - 1) * u;
}

static void note_bad(struct verify *v, int gpu, size_t i, double got, double want)
{
    if (v->ok) {
        v->ok = false;
        v->bad_gpu = gpu;
        v->bad_index = i;
        v->bad_got = got;
        v->bad_want = want;
    }
}

/* Elements [lo, hi) of GPU g's buffer against the sum over all GPUs. */
static void check_sum(struct verify *v, enum fp_format dt, const void *buf, int g, int n, size_t lo,
                      size_t hi, uint64_t seed)
{
    double rel = v->tolerance * (1 + 1e-3), floor = (n - 1) * fp_info(dt)->min_subnormal / 2;
    for (size_t i = lo; i < hi; i++) {
        double ref = 0, mag = 0;
        for (int r = 0; r < n; r++) {
            double x = value(dt, seed, r, i);
            ref += x;
            mag += fabs(x);
        }
        double got = reduce_get(dt, buf, i), err = fabs(got - ref);
        if (!(err <= rel * mag + floor))
            note_bad(v, g, i, got, ref);
        if (mag > 0 && err / mag > v->max_rel_error)
            v->max_rel_error = err / mag;
    }
}

/* Elements [lo, hi) of GPU g's buffer must be GPU src's input exactly. */
static void check_copy(struct verify *v, enum fp_format dt, const void *buf, int g, int src,
                       size_t lo, size_t hi, uint64_t seed)
{
    for (size_t i = lo; i < hi; i++) {
        float want = value(dt, seed, src, i), got = reduce_get(dt, buf, i);
        if (memcmp(&want, &got, sizeof got) != 0)
            note_bad(v, g, i, got, want);
    }
}

void verify_check(enum cost_op op, int root, enum fp_format dt, void *const *bufs, int n,
                  size_t count, uint64_t seed, struct verify *out)
{
    memset(out, 0, sizeof *out);
    out->ok = out->identical = true;
    out->bad_gpu = -1;
    bool sum = op == COST_ALLREDUCE || op == COST_REDUCE_SCATTER || op == COST_REDUCE;
    out->tolerance = sum ? verify_tolerance(dt, n) : 0;
    size_t es = reduce_elem_size(dt);
    switch (op) {
    case COST_ALLREDUCE:
        check_sum(out, dt, bufs[0], 0, n, 0, count, seed);
        for (int g = 1; g < n; g++)
            if (memcmp(bufs[g], bufs[0], count * es) != 0) {
                out->identical = false;
                check_sum(out, dt, bufs[g], g, n, 0, count, seed);
            }
        break;
    case COST_REDUCE_SCATTER:
        for (int g = 0; g < n; g++) {
            size_t off, len;
            coll_chunk(count, n, g, &off, &len);
            check_sum(out, dt, bufs[g], g, n, off, off + len, seed);
        }
        break;
    case COST_REDUCE: check_sum(out, dt, bufs[root], root, n, 0, count, seed); break;
    /* Copies: one GPU's buffer is checked element by element against the inputs, the others
     * byte for byte against it, and only a GPU that differs element by element again (to name
     * its first wrong element). Checking all N buffers against the inputs cost N times the
     * hashing of the fill: tens of seconds for 64 GPUs of 64 MiB. */
    case COST_ALLGATHER:
        for (int g = 0; g < n; g++)
            if (g == 0 || memcmp(bufs[g], bufs[0], count * es) != 0)
                for (int c = 0; c < n; c++) {
                    size_t off, len;
                    coll_chunk(count, n, c, &off, &len);
                    check_copy(out, dt, bufs[g], g, c, off, off + len, seed);
                }
        out->identical = out->ok;
        break;
    case COST_BROADCAST:
        check_copy(out, dt, bufs[root], root, root, 0, count, seed);
        for (int g = 0; g < n; g++)
            if (g != root && memcmp(bufs[g], bufs[root], count * es) != 0)
                check_copy(out, dt, bufs[g], g, root, 0, count, seed);
        out->identical = out->ok;
        break;
    default: out->ok = false; break;
    }
    if (!out->identical)
        out->ok = false;
}

void verify_check_rank(enum cost_op op, int root, enum fp_format dt, const void *buf, int rank,
                       int n, size_t count, uint64_t seed, struct verify *out)
{
    memset(out, 0, sizeof *out);
    out->ok = out->identical = true;
    out->bad_gpu = -1;
    bool sum = op == COST_ALLREDUCE || op == COST_REDUCE_SCATTER || op == COST_REDUCE;
    out->tolerance = sum ? verify_tolerance(dt, n) : 0;
    size_t off, len;
    switch (op) {
    case COST_ALLREDUCE: check_sum(out, dt, buf, rank, n, 0, count, seed); break;
    case COST_REDUCE_SCATTER:
        coll_chunk(count, n, rank, &off, &len);
        check_sum(out, dt, buf, rank, n, off, off + len, seed);
        break;
    case COST_REDUCE:
        if (rank == root)
            check_sum(out, dt, buf, rank, n, 0, count, seed);
        break;
    case COST_ALLGATHER:
        for (int c = 0; c < n; c++) {
            coll_chunk(count, n, c, &off, &len);
            check_copy(out, dt, buf, rank, c, off, off + len, seed);
        }
        break;
    case COST_BROADCAST: check_copy(out, dt, buf, rank, root, 0, count, seed); break;
    default: out->ok = false; break;
    }
}

void verify_merge(struct verify *all, const struct verify *one)
{
    if (!one->ok && all->ok) {
        all->ok = false;
        all->bad_gpu = one->bad_gpu;
        all->bad_index = one->bad_index;
        all->bad_got = one->bad_got;
        all->bad_want = one->bad_want;
    }
    if (one->max_rel_error > all->max_rel_error)
        all->max_rel_error = one->max_rel_error;
    all->identical = all->identical && one->identical;
}

bool verify_same_everywhere(enum cost_op op)
{
    return op == COST_ALLREDUCE || op == COST_ALLGATHER || op == COST_BROADCAST;
}

uint64_t verify_digest(const void *buf, size_t bytes)
{
    const unsigned char *p = buf;
    uint64_t h = mix(bytes), w;
    size_t i = 0;
    for (; i + 8 <= bytes; i += 8) {
        memcpy(&w, p + i, 8);
        h = mix(h ^ w);
    }
    w = 0;
    memcpy(&w, p + i, bytes - i);
    return mix(h ^ w);
}

uint64_t verify_digest_all(const uint64_t *digests, int n)
{
    return verify_digest(digests, (size_t)n * sizeof *digests);
}
