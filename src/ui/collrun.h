/* Lesson 3's run, made off the window's frame loop (a job of ui/bgjob.h) from a copy of the
 * panel's settings: the real all-reduce or all-to-all on the chosen cluster preset
 * (comm/trial.h), checked against its reference, its send events kept as hops for the panel to
 * replay; and, when the op, the GPUs or the cluster changed, the α-β plot's curves at
 * COLLRUN_PLOT_GRID sizes and their crossover (ring's with tree, or pairwise's with direct),
 * which depend on nothing else. At 64 GPUs the run alone takes longer
 * than a frame. The panel is ui/panel_collective.c. */
#ifndef SCALELAB_UI_COLLRUN_H
#define SCALELAB_UI_COLLRUN_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

#include "base/error.h"
#include "comm/cost.h"
#include "sim/spec.h"

#define COLLRUN_MAX_CHUNKS 128       /* a double binary tree: two trees of up to 64 chunks */
#define COLLRUN_REAL_MAX   (1 << 20) /* the largest size run for real (bytes); above, scaled */
#define COLLRUN_PLOT_GRID  256       /* the sizes the plot's curves are computed at */
#define COLLRUN_PLOT_LO    1024.0
#define COLLRUN_PLOT_HI    (1024.0 * 1024 * 1024)

/* A chunk sent, as the panel replays it: in panel step `step`, from GPU to GPU. An
 * all-to-all's chunk is the receiver's block for its sender: chunk == from. */
struct coll_hop {
    int step, from, to, chunk;
    bool reduce;
    const char *phase; /* the algorithm's name for it: "reduce-scatter", "broadcast", ... */
    double bytes, t_end;
};

/* What the panel runs: the GPUs, the cluster (by the panel's number), the size, the op and
 * its algorithm. */
struct coll_settings {
    int gpus, cluster;
    double size;
    enum cost_op op; /* COST_ALLREDUCE or COST_ALLTOALL */
    enum cost_algo algo;
};

/* The plot's two algorithms for op: ring and tree, or pairwise and direct. */
void collrun_plot_algos(enum cost_op op, enum cost_algo a[2]);

/* One run for settings s on cluster spec, the curves too when asked; the results out. */
struct coll_run {
    /* in */
    struct coll_settings s;
    struct cluster_spec spec;
    bool curves;
    atomic_bool stale; /* the settings moved on: what is left to do is not wanted */
    /* out */
    bool curves_done;
    double took; /* host seconds the job took */
    bool ok;
    char err[ERROR_MAX];
    struct coll_hop *hops;
    int nhops, nsteps, nchunks;
    double real_bytes, sim_time, max_rel_error, tolerance;
    bool verified, scaled;
    double crossover, tr[COLLRUN_PLOT_GRID], tt[COLLRUN_PLOT_GRID]; /* the plot's two */
};

/* The fp32 elements that run for real for settings s: the size itself when small (up to
 * COLLRUN_REAL_MAX; an all-to-all's must also split into N blocks of whole elements), else
 * N x 256 with the links scaled to take as long (*scaled). */
size_t collrun_real_count(const struct coll_settings *s, bool *scaled);

/* The job (arg a struct coll_run): runs the collective for its settings and keeps its send
 * events as hops; the curves and the crossover too when asked. Touches nothing but the run. */
void collrun_make(void *arg);

#endif
