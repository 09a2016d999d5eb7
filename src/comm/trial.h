/* One collective on a simulated cluster, start to finish: the buffers (allocated once,
 * through each GPU's ledger, as communication buffers; an all-to-all's receive buffers
 * beside them), real data, the run, its check
 * against a double-precision reference, the bytes each GPU sent, the simulated and the
 * α-β predicted times and the host's wall time. `scalelab collective`, its benchmark, its
 * tests and the lesson 3 panel all go through here.
 *
 * The GPU threads do the work around the collective themselves, in parallel: each fills its
 * own buffer; they meet (dev_barrier), run the collective, meet again, and each checks its
 * share of the result (verify_share: a chunk against the reference, N inputs per element,
 * computed as it goes) and takes its buffer's digest. The digests say whether the GPUs hold
 * the same bits; only a result found wrong is checked again whole (verify_check), to name the
 * first wrong element as before. Memory: the buffers, nothing in proportion to them besides. */
#ifndef SCALELAB_COMM_TRIAL_H
#define SCALELAB_COMM_TRIAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "comm/cost.h"
#include "comm/verify.h"
#include "num/fp.h"
#include "sim/cluster.h"

struct error;

struct trial_args {
    enum cost_op op;
    enum cost_algo algo; /* COST_AUTO allowed */
    int gpus;
    size_t count; /* elements */
    enum fp_format dtype;
    int root;
    struct cluster_spec spec;
    uint64_t seed;
    int repeat;              /* timed repetitions (>= 1); data is checked after a single one */
    bool verify;             /* check the result (repeat must be 1) */
    bool record_events;      /* keep the events (for --steps, --trace, tests) */
    int fail_gpu, fail_step; /* -1: none */
    double deadline_s;       /* 0: the default */
    /* Called now and then from a GPU's thread (one at a time, at most 4 times a second) with
     * what is being done ("filling the buffers", "the collective", "checking the result")
     * and the share of it done, 0 to 1 (-1: not counted); NULL: nothing. It must not block. */
    void (*progress)(void *ctx, const char *what, double done);
    void *progress_ctx;
};

void trial_args_init(struct trial_args *a);

struct trial {
    enum cost_algo algo; /* resolved */
    double bytes;        /* the collective's size S, nccl-tests' convention */
    struct verify check;
    uint64_t *sent; /* bytes sent by each GPU (in one repetition) */
    uint64_t sent_total;
    uint64_t traffic; /* bytes read + written by the copies and sums, one repetition */
    int steps;        /* the moments at which messages arrive (cost_result.rounds) */
    int rounds;       /* the algorithm's own rounds (coll_steps): where --fail stops a GPU */
    struct cost_result predicted;
    double simulated_s;      /* the cluster's simulated time, one repetition */
    double wall_s;           /* host seconds per repetition (best of the repetitions) */
    double setup_s;          /* host seconds before the collective: cluster, buffers, data */
    double check_s;          /* host seconds after it: the check and the digests */
    uint64_t digest;         /* verify_digest_all of the GPUs' buffers after a checked run */
    struct cluster *cluster; /* kept for its events; trial_fini frees it */
};

/* 0; ERR_INVAL for bad arguments; ERR_RUN when the run failed (e names the GPU), in which
 * case the trial holds what was measured so far and must still be finished. */
int trial_run(const struct trial_args *a, struct trial *t, struct error *e);
void trial_fini(struct trial *t);

#endif
