/* Real data for a collective and its check against a double-precision reference.
 *
 * GPU r's element i is a value in [-1, 1) drawn from a hash of (seed, r, i), rounded to the
 * data's format; the reference sum of element i over N GPUs is computed in double from the
 * same values, so no copy of the inputs is kept.
 *
 * Tolerance, for a sum over N GPUs: each of the N-1 additions is done in fp32 and rounded
 * once to the storage format, a relative error of at most u_fmt + u_fp32 (u = 2^-24 for
 * fp32, 2^-11 for fp16, 2^-8 for bf16: half an ulp at 1), plus, in fp16, an absolute error
 * of half the smallest subnormal when a sum underflows. Whatever the order of the
 * additions (ring, tree, halving), the classic bound (Higham, "Accuracy and Stability of
 * Numerical Algorithms", 2002, §4.2) gives
 *     |got - ref| <= (N-1) ((u_fmt + u_fp32)(1 + 1e-3) sum|x_r| + s_fmt/2),
 * where 1e-3 covers the second-order terms. The error is reported relative to sum|x_r| (the
 * sum's scale; the sum itself may be near zero): max_rel_error <= (N-1)(u_fmt + u_fp32).
 * Copies (all-gather, broadcast, all-to-all) must be exact. After an all-to-all the buffers
 * checked are the receive buffers: GPU g's block j must be GPU j's input block g. */
#ifndef SCALELAB_COMM_VERIFY_H
#define SCALELAB_COMM_VERIFY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "comm/cost.h"
#include "num/fp.h"

struct verify {
    bool ok;              /* every checked element within tolerance */
    bool identical;       /* every GPU's result bit for bit the same (all-reduce, copies) */
    double max_rel_error; /* max |got - ref| / sum|x| over the checked elements */
    double tolerance;     /* (N-1)(u_fmt + u_fp32) relative, 0 for copies */
    int bad_gpu;          /* the first GPU out of tolerance, or -1 */
    size_t bad_index;
    double bad_got, bad_want;
};

/* GPU rank's input for the collective, count elements of dt. */
void verify_fill(enum fp_format dt, void *buf, size_t count, uint64_t seed, int rank);
/* Its elements first .. first+count-1, into buf (which holds element first). */
void verify_fill_range(enum fp_format dt, void *buf, size_t first, size_t count, uint64_t seed,
                       int rank);

/* The relative tolerance for a sum over n GPUs. */
double verify_tolerance(enum fp_format dt, int n);

/* Checks the n buffers after op (with root for broadcast and reduce). */
void verify_check(enum cost_op op, int root, enum fp_format dt, void *const *bufs, int n,
                  size_t count, uint64_t seed, struct verify *out);

/* The same check on one GPU's buffer alone, for its part of the result (all of it for
 * all-reduce, all-gather, broadcast and all-to-all, its chunk for reduce-scatter, nothing off
 * the root for reduce): what an MPI rank, holding only its own buffer, can check. identical
 * is left true: the caller compares the GPUs' digests. */
void verify_check_rank(enum cost_op op, int root, enum fp_format dt, const void *buf, int rank,
                       int n, size_t count, uint64_t seed, struct verify *out);

/* GPU g's share of verify_check, for the N GPUs to check a result in parallel, each from its
 * own thread: a chunk of the result each (coll_chunk's), so the N shares check every element
 * once -- all-reduce and reduce-scatter: chunk g of GPU g's buffer; reduce: chunk g of the
 * root's; all-gather: chunk g + 1 of GPU g's (a received one); broadcast: chunk g of GPU g's;
 * all-to-all: GPU g's whole receive buffer (every GPU's result is its own).
 * Where the result must be the same everywhere, the shares speak for every GPU only when all
 * the buffers are equal: the caller compares their digests. identical is left true. */
void verify_share(enum cost_op op, int root, enum fp_format dt, void *const *bufs, int g, int n,
                  size_t count, uint64_t seed, struct verify *out);

/* Folds GPU rank's check into all's (all starts as verify_check_rank's out of GPU 0). */
void verify_merge(struct verify *all, const struct verify *one);

/* Whether op leaves every GPU with the same bits (all-reduce, all-gather, broadcast; not
 * reduce-scatter, reduce, all-to-all). */
bool verify_same_everywhere(enum cost_op op);

/* A 64-bit digest of bytes: equal buffers give equal digests, and buffers that differ in one
 * 8-byte word always differ (more: by chance, 2^-64); a run's results are compared across GPUs
 * and across transports by them. Several GB/s. */
uint64_t verify_digest(const void *buf, size_t bytes);
/* The digest of a whole run: of its GPUs' digests, in rank order. */
uint64_t verify_digest_all(const uint64_t *digests, int n);

#endif
