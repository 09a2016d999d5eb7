/* A training run on the simulated cluster: the one engine behind `scalelab train` and the
 * window's training panels.
 *
 * run_new sets up a cluster of o.gpus device threads; run_start starts them in the
 * background, each allocating its model, optimizer and strategy buffers through its own
 * ledger (every byte accounted, in the ledger's categories) and running trainer steps
 * together. The caller reads the steps as they complete with run_next: one record per step,
 * merged from every GPU (the global loss, norm, scale, verdict; the first non-finite tensor
 * and the GPU it appeared on; the most bytes any GPU sent; the step's simulated time), and
 * at the end a summary with each GPU's ledger peaks. Reading never blocks the GPUs for long:
 * they run up to RUN_AHEAD steps ahead of the reader, then wait for it.
 *
 * A paced run (the window) starts each step only when the reader allows it (run_allow), so
 * that a knob turned now (run_inject, run_set_clip, run_set_lr) acts on the next step the
 * screen shows: a command applies from the first step no GPU has started yet. run_stop ends
 * a run at the next step boundary, on every GPU at the same step.
 *
 * Every wait has a deadline or watches the run's stop flag; a failed GPU (out of memory,
 * --fail, a communication deadline) aborts the cluster, every thread is joined and every
 * buffer freed; run_finish reports the failure. */
#ifndef SCALELAB_PAR_RUN_H
#define SCALELAB_PAR_RUN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "par/pp.h"
#include "par/trainer.h"
#include "sim/event.h"
#include "sim/ledger.h"
#include "sim/spec.h"

struct error;
struct run;

#define RUN_AHEAD 8

struct run_config {
    struct train_opts o;
    struct cluster_spec spec; /* the simulated GPUs (gpus_per_node, capacity, peak, links) */
    bool paced;               /* steps start only when run_allow lets them */
    bool keep_first_step;     /* keep step 1's batch and full gradients (run_first_step) */
    double deadline_s;        /* the longest wait for one message (0: 600 s) */
    /* Every event of every GPU, as it happens, on that GPU's thread: must not block. */
    void (*on_event)(void *ctx, const struct event *ev);
    void *event_ctx;
    /* NULL: every GPU is a thread of this process. Else one GPU per process (an MPI rank:
     * comm/mpiwire.h), GPU `local` here, its messages over the wire (sim/cluster.h); after each
     * step the GPUs share their records over it, so every process merges the same steps and
     * the same summary (run_gpu of every GPU) as a run on threads. */
    const struct dev_wire *wire;
    int local;
};

/* One GPU's part of a step. */
struct run_gpu_step {
    /* bytes sent by kind (par/strategy.h): gradients and weights, in its tensor-parallel
     * group, between pipeline stages, round its context-parallel ring, in its experts'
     * all-to-alls */
    uint64_t sent[STRATEGIES];
    uint64_t ring_scores; /* the attention scores its ring computed (0 without cp) */
    /* a mixture of experts: its tokens' choices routed and dropped past a capacity, and per
     * expert (summed over the expert layers) those routed to it and those it took */
    uint64_t routed, dropped;
    uint32_t expert_load[GPT_MAX_EXPERTS], expert_kept[GPT_MAX_EXPERTS];
    double aux_loss;    /* its load-balancing loss (over its tokens, part of its loss) */
    char nonfinite[48]; /* its first non-finite tensor, "" if none */
    bool nonfinite_forward;
    /* its part of the agreement, which must be every GPU's: the verdict, the scale after the
     * step, the global sum of squares and the clip coefficient */
    bool skipped;
    float next_scale, clip_coef;
    double grad_sumsq;
    bool overflow_own; /* what it found in its own range before the agreement */
};

/* A step's time not computing, by what it waited for, as the calculator names its terms
 * (calc/plan.h): each kind of communication's messages posted (their transfer and the queue
 * for the port; a stream waited for, as what it last carried), the pipeline's bubble (a
 * pipeline's message its sender had not posted yet: that stage still busy, filling, draining
 * or slower), and the rest (the agreement's scalars; what no message accounts for). */
enum run_wait {
    RUN_WAIT_DP,
    RUN_WAIT_TP,
    RUN_WAIT_PP,
    RUN_WAIT_CP,
    RUN_WAIT_EP,
    RUN_WAIT_BUBBLE,
    RUN_WAIT_OTHER,
    RUN_WAITS
};
extern const char *const run_wait_names[RUN_WAITS];

/* One step, every GPU's. */
struct run_step {
    struct train_step s;         /* the global figures (GPU 0's record; nonfinite: the first GPU's;
                                    a mixture's routing and aux loss over every GPU: par/run.c) */
    int nonfinite_gpu;           /* -1 when nothing was non-finite */
    uint64_t comm_bytes_per_gpu; /* the most any GPU sent: gradients and weights */
    uint64_t scalar_bytes;       /* the agreement's, per GPU */
    double sim_time_s;           /* the step's simulated time (the slowest GPU) */
    double exposed_s;            /* of it, time not computing (communication not hidden) */
    /* the exposed time by kind (enum run_wait) of the GPU on the step's path (par/run.c):
     * when its compute ended, its number (by_set: one merged); every GPU's compute summed,
     * and the busiest GPU's */
    double exposed_by[RUN_WAITS], by_end_s, compute_sum_s, compute_max_s;
    int by_gpu;
    bool by_set;
    uint64_t underflow[65]; /* summed over GPUs, per layer (the last: embedding, norms) */
    struct fp8_stats fp8[GPT_LINEARS][FP8_ROLES]; /* every GPU's, into s.fp8 when merged */
    int gpus;
    struct run_gpu_step gpu[64];
};

/* One GPU over the run. */
struct run_gpu {
    uint64_t peak_cat[MEM_CAT_COUNT], peak; /* the ledger's peaks */
    uint64_t sent_per_step[STRATEGIES];     /* bytes sent in its last step, by kind */
    uint64_t ring_scores_per_step;          /* the attention scores its ring computed, last step */
    uint64_t ep_rows[3]; /* dropless experts: its last step's rows out and in, the most held */
    uint32_t ep_rows_kept[TRAIN_MAX_EXPERT_LAYERS]; /* and each expert layer's at its peak */
    struct layout_place place;                      /* where it sits in the layout */
    struct pp_done *ops;                            /* pipelined: its last step's operations */
    int nops, peak_in_flight;
};

/* A run of cfg, its options checked (train_opts_check) and the host's memory too
 * (run_reserve). 0, or ERR_INVAL, ERR_NOMEM. */
int run_new(struct run **out, const struct run_config *cfg, struct error *e);
/* What a run takes from the host beyond OpenBLAS's buffers, at most: each GPU's buffers (the
 * model's for its share of the batch, as gpt_estimate_bytes counts them for the whole model,
 * and five fp32 copies of every parameter: master weights, Adam's moments, the strategy's
 * buffers), each GPU's thread stack and the driver's, step 1's copy when kept. The one
 * figure of the host-memory guard below. */
double run_host_bytes(const struct run_config *cfg);
/* Whether this host can hold a run of cfg at all: run_host_bytes within half of its physical
 * memory. 0, or ERR_INVAL saying "the run's buffers need SIZE, more than half of this host's
 * SIZE": a setting too large for the machine, which train and the run panels say in their
 * own words (an option, a key) before they make a run; run_reserve asks it first. */
int run_host_check(const struct run_config *cfg, struct error *e);
/* The host-memory guard of a run (run_new) or of a trainer of cfg's options on this thread
 * (bench): run_host_check, then what the process may still map under its limits (ulimit -v,
 * -d: base/hostmem.h) against run_host_bytes and OpenBLAS's buffers, one per GPU up to one
 * per CPU, which it claims (model/blasbuf.h). 0 with *claimed of them claimed (blasbuf_release
 * gives them back), or ERR_INVAL (run_host_check's), or ERR_NOMEM: "the run (...) needs N
 * MiB, the process may use M MiB more (its address space: ulimit -v)". */
int run_reserve(const struct run_config *cfg, int *claimed, struct error *e);
void run_free(struct run *r);
int run_start(struct run *r, struct error *e);

/* The next step, in order: 1 and *out filled, 0 if none came within timeout_s (0: do not
 * wait), -1 when the run has ended (run_finish says how). */
int run_next(struct run *r, struct run_step *out, double timeout_s);

/* A paced run may start steps up to `step`. */
void run_allow(struct run *r, long step);
/* GPUs waiting at a step's gate (for the pace or the reader): every GPU of a paced run not yet
 * allowed its first step, once each has built its trainer and allocated its buffers. */
int run_waiting(struct run *r);
/* From the next step no GPU has started: an injection on a GPU, the clip (0: off), the lr. */
void run_inject(struct run *r, enum train_inject_kind kind, double factor, int gpu);
void run_set_clip(struct run *r, double clip);
void run_set_lr(struct run *r, double lr);
/* Ends the run at the next step boundary. */
void run_stop(struct run *r);

/* Waits for the run's threads: 0, or the failure that ended it (e). */
int run_finish(struct run *r, struct error *e);
/* Whether the run has ended (stopped, finished or failed): run_finish and run_free then
 * return at once. Never waits. */
bool run_ended(struct run *r);

/* After run_finish. */
const struct run_gpu *run_gpu(const struct run *r, int gpu);
/* The data's entropy rate in nats per token: NAN until GPU 0 has set up (its trainer computes
 * it), and after a run that failed before. */
double run_loss_floor(const struct run *r);
/* The same for the data a run over a vocabulary of vocab tokens with that seed draws, without
 * a run (the lessons quote it); NAN when it cannot be made. */
double run_data_floor(int vocab, uint64_t seed);
double run_wall_s(const struct run *r); /* host seconds from run_start to the end */

/* Step 1's global batch (tokens, then targets: batch x seq each), global loss and full
 * unscaled gradients (params of them), when keep_first_step was set and step 1 ran. */
bool run_first_step(const struct run *r, const int32_t **tokens, const int32_t **targets,
                    double *loss, const float **grads);

/* Events a run records for --trace, counted before it starts from what each GPU's trainer
 * and strategies say they do (trainer_count, par/strategy.h): each buffer's allocation and
 * release, the compute, charge, send, receive, pipeline and step events of every step, and at
 * most one non-finite value per GPU per step and one failure. */
double run_trace_events(const struct run_config *cfg);

#endif
