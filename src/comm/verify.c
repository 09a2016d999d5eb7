/* The data a collective is tested with and its check against a double-precision reference,
 * within the rounding a format allows (comm/verify.h). */
#include "config.h"
#include "comm/verify.h"

#include <math.h>
#include <string.h>

#include "base/cpu.h"
#include "comm/coll.h"
#include "comm/reduce.h"

/* splitmix64's finaliser (Steele, Lea, Flood, "Fast splittable pseudorandom number
 * generators", OOPSLA 2014) over a counter: a value per (seed, rank, index). */
static inline CPU_INLINE uint64_t mix(uint64_t z)
{
    z += 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* GPU rank's elements i0 .. i0+n-1 before rounding to the format: (h >> 11) 2^-52 - 1 for the
 * hash h, a double in [-1, 1) rounded to float. The double is built from the bits instead of
 * converted (AVX2 has no 64-bit integer conversion): with t = h's top bit and m its next 52
 * bits, (h >> 11) 2^-52 - 1 = (1.m - 2) + t, each step exact (1.m - 2 lies in [-1, 0) and
 * adding 0 or 1 to a multiple of 2^-52 below 1 in magnitude stays exact). A loop the compiler
 * vectorizes on every path (64-bit multiplies: AVX-512DQ's, or pieced together from 32-bit
 * ones), the same bits as the scalar formula. */
static inline CPU_INLINE void raw_body(float *x, size_t n, uint64_t seed, uint64_t key, size_t i0)
{
    for (size_t j = 0; j < n; j++) {
        uint64_t h = mix(seed ^ mix(key ^ (uint64_t)(i0 + j)));
        uint64_t m = (h >> 11 & 0xfffffffffffffull) | 0x3ff0000000000000ull;
        uint64_t t = (h >> 63) * 0x3ff0000000000000ull; /* 1.0 or +0.0 */
        double a, b;
        memcpy(&a, &m, 8);
        memcpy(&b, &t, 8);
        x[j] = (float)((a - 2.0) + b);
    }
}
CPU_CLONES(raw, (float *x, size_t n, uint64_t seed, uint64_t key, size_t i0), (x, n, seed, key, i0))

/* Elements are made, summed and compared in blocks of this many, on the stack. */
#define BLOCK 1024

/* GPU rank's elements i0 .. i0+n-1 (n <= BLOCK) as floats rounded to dt. */
static void values(enum fp_format dt, float *x, size_t n, uint64_t seed, int rank, size_t i0)
{
    raw(x, n, seed, (uint64_t)rank << 48, i0);
    if (dt != FP_FP32)
        fp_round_n(dt, x, x, n);
}

/* Elements i0 .. i0+n-1 of buf (n <= BLOCK) as floats. */
static void load(enum fp_format dt, float *x, const void *buf, size_t i0, size_t n)
{
    if (dt == FP_FP32)
        memcpy(x, (const float *)buf + i0, n * 4);
    else if (dt == FP_BF16)
        bf16_to_f32_n(x, (const uint16_t *)buf + i0, n);
    else
        fp16_to_f32_n(x, (const uint16_t *)buf + i0, n);
}

void verify_fill_range(enum fp_format dt, void *buf, size_t first, size_t count, uint64_t seed,
                       int rank)
{
    float x[BLOCK];
    for (size_t i = 0; i < count; i += BLOCK) {
        size_t m = count - i < BLOCK ? count - i : BLOCK;
        if (dt == FP_FP32) { /* made in place */
            raw((float *)buf + i, m, seed, (uint64_t)rank << 48, first + i);
            continue;
        }
        raw(x, m, seed, (uint64_t)rank << 48, first + i); /* rounded once, as stored */
        if (dt == FP_BF16)
            bf16_from_f32_n((uint16_t *)buf + i, x, m);
        else
            fp16_from_f32_n((uint16_t *)buf + i, x, m);
    }
}

void verify_fill(enum fp_format dt, void *buf, size_t count, uint64_t seed, int rank)
{
    verify_fill_range(dt, buf, 0, count, seed, rank);
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

/* A GPU's inputs x into the reference sums and magnitudes of m elements. */
static inline CPU_INLINE void sum_in_body(double *ref, double *mag, const float *x, size_t m)
{
    for (size_t j = 0; j < m; j++) {
        ref[j] += x[j];
        mag[j] += fabs((double)x[j]);
    }
}
CPU_CLONES(sum_in, (double *ref, double *mag, const float *x, size_t m), (ref, mag, x, m))

/* Elements [lo, hi) of GPU g's buffer against the sum over all GPUs: each element's reference
 * is its N inputs added in GPU order in double, as are their magnitudes, a block at a time. */
static void check_sum(struct verify *v, enum fp_format dt, const void *buf, int g, int n, size_t lo,
                      size_t hi, uint64_t seed)
{
    double rel = v->tolerance * (1 + 1e-3), floor = (n - 1) * fp_info(dt)->min_subnormal / 2;
    float x[BLOCK];
    double ref[BLOCK], mag[BLOCK];
    for (size_t i = lo; i < hi; i += BLOCK) {
        size_t m = hi - i < BLOCK ? hi - i : BLOCK;
        memset(ref, 0, m * sizeof *ref);
        memset(mag, 0, m * sizeof *mag);
        for (int r = 0; r < n; r++) {
            values(dt, x, m, seed, r, i);
            sum_in(ref, mag, x, m);
        }
        load(dt, x, buf, i, m);
        for (size_t j = 0; j < m; j++) {
            double got = x[j], err = fabs(got - ref[j]);
            if (!(err <= rel * mag[j] + floor))
                note_bad(v, g, i + j, got, ref[j]);
            if (mag[j] > 0 && err / mag[j] > v->max_rel_error)
                v->max_rel_error = err / mag[j];
        }
    }
}

/* Elements [lo, hi) of GPU g's buffer must be GPU src's input elements from src_lo on,
 * exactly. */
static void check_copy_from(struct verify *v, enum fp_format dt, const void *buf, int g, int src,
                            size_t lo, size_t hi, size_t src_lo, uint64_t seed)
{
    float want[BLOCK], got[BLOCK];
    for (size_t i = lo; i < hi && v->ok; i += BLOCK) {
        size_t m = hi - i < BLOCK ? hi - i : BLOCK;
        values(dt, want, m, seed, src, src_lo + (i - lo));
        load(dt, got, buf, i, m);
        if (memcmp(want, got, m * sizeof *got) == 0)
            continue;
        for (size_t j = 0; j < m; j++)
            if (memcmp(&want[j], &got[j], sizeof *got) != 0) {
                note_bad(v, g, i + j, got[j], want[j]);
                break;
            }
    }
}

/* Elements [lo, hi) of GPU g's buffer must be GPU src's input exactly. */
static void check_copy(struct verify *v, enum fp_format dt, const void *buf, int g, int src,
                       size_t lo, size_t hi, uint64_t seed)
{
    check_copy_from(v, dt, buf, g, src, lo, hi, lo, seed);
}

/* GPU g's received blocks after an all-to-all: its block j must be GPU j's block g. */
static void check_alltoall(struct verify *v, enum fp_format dt, const void *buf, int g, int n,
                           size_t count, uint64_t seed)
{
    size_t b = count / (size_t)n;
    for (int j = 0; j < n; j++)
        check_copy_from(v, dt, buf, g, j, (size_t)j * b, (size_t)(j + 1) * b, (size_t)g * b, seed);
}

/* A check not yet failed, with op's tolerance over n GPUs. */
static void start(struct verify *out, enum cost_op op, enum fp_format dt, int n)
{
    memset(out, 0, sizeof *out);
    out->ok = out->identical = true;
    out->bad_gpu = -1;
    bool sum = op == COST_ALLREDUCE || op == COST_REDUCE_SCATTER || op == COST_REDUCE;
    out->tolerance = sum ? verify_tolerance(dt, n) : 0;
}

void verify_check(enum cost_op op, int root, enum fp_format dt, void *const *bufs, int n,
                  size_t count, uint64_t seed, struct verify *out)
{
    start(out, op, dt, n);
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
    case COST_ALLTOALL: /* every GPU ends with different blocks: nothing to compare */
        for (int g = 0; g < n; g++)
            check_alltoall(out, dt, bufs[g], g, n, count, seed);
        break;
    default: out->ok = false; break;
    }
    if (!out->identical)
        out->ok = false;
}

void verify_check_rank(enum cost_op op, int root, enum fp_format dt, const void *buf, int rank,
                       int n, size_t count, uint64_t seed, struct verify *out)
{
    start(out, op, dt, n);
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
    case COST_ALLTOALL: check_alltoall(out, dt, buf, rank, n, count, seed); break;
    default: out->ok = false; break;
    }
}

void verify_share(enum cost_op op, int root, enum fp_format dt, void *const *bufs, int g, int n,
                  size_t count, uint64_t seed, struct verify *out)
{
    start(out, op, dt, n);
    size_t off, len;
    coll_chunk(count, n, op == COST_ALLGATHER ? (g + 1) % n : g, &off, &len);
    switch (op) {
    case COST_ALLREDUCE:
    case COST_REDUCE_SCATTER: check_sum(out, dt, bufs[g], g, n, off, off + len, seed); break;
    case COST_REDUCE: check_sum(out, dt, bufs[root], root, n, off, off + len, seed); break;
    case COST_ALLGATHER: /* a chunk it received (its own when alone) */
        check_copy(out, dt, bufs[g], g, (g + 1) % n, off, off + len, seed);
        break;
    case COST_BROADCAST: check_copy(out, dt, bufs[g], g, root, off, off + len, seed); break;
    case COST_ALLTOALL: check_alltoall(out, dt, bufs[g], g, n, count, seed); break;
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

/* LANES lanes, each taking every LANES-th 8-byte word: lane = rotl(lane ^ w, 29) K. For a given
 * word the step is one-to-one in the lane (xor, rotation and an odd multiplier each are), and
 * for a given lane one-to-one in the word, so two buffers that differ in one word end with
 * different lanes whatever the word, and the lanes go into the result through one-to-one
 * steps: a single changed word always changes the digest. The lanes' chains are independent,
 * so the CPU keeps many multiplies in flight: over 20 GB/s in cache with AVX2 or AVX-512,
 * where one chain through mix took 15 cycles per word (0.5 GB/s). */
#define LANES 32
static inline CPU_INLINE void lanes_body(uint64_t *lane, const unsigned char *p, size_t words)
{
    for (size_t i = 0; i + LANES <= words; i += LANES)
        for (int k = 0; k < LANES; k++) {
            uint64_t w, x;
            memcpy(&w, p + 8 * (i + (size_t)k), 8);
            x = lane[k] ^ w;
            lane[k] = (x << 29 | x >> 35) * 0x9e3779b97f4a7c15ull;
        }
}
CPU_CLONES(lanes, (uint64_t * lane, const unsigned char *p, size_t words), (lane, p, words))

uint64_t verify_digest(const void *buf, size_t bytes)
{
    const unsigned char *p = buf;
    uint64_t lane[LANES], w;
    for (int k = 0; k < LANES; k++)
        lane[k] = mix(bytes + (uint64_t)k);
    size_t words = bytes / 8, full = words / LANES * LANES;
    lanes(lane, p, full);
    for (size_t i = full; i < words; i++) { /* the last words, then the last bytes */
        memcpy(&w, p + 8 * i, 8);
        lane[i % LANES] = mix(lane[i % LANES] ^ w);
    }
    w = 0;
    memcpy(&w, p + 8 * words, bytes % 8);
    uint64_t h = mix(bytes ^ w);
    for (int k = 0; k < LANES; k++)
        h = mix(h ^ lane[k]);
    return h;
}

uint64_t verify_digest_all(const uint64_t *digests, int n)
{
    return verify_digest(digests, (size_t)n * sizeof *digests);
}
