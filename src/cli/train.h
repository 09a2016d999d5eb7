/* scalelab train in parts: its options (cli/train_args.c: train's own and the run's settings,
 * checked together), step 1 written for PyTorch (cli/train_dump.c: --dump), what it prints
 * (cli/train_report.c: the steps, the summary beside the calculator's prediction), and the
 * command that runs them (cli/cmd_train.c: the run, its steps as they come, --trace). */
#ifndef SCALELAB_CLI_TRAIN_H
#define SCALELAB_CLI_TRAIN_H

#include <stdbool.h>
#include <stdint.h>

#include "calc/preset.h"
#include "par/predict.h"
#include "par/run.h"
#include "par/timeas.h"

struct error;
struct opts_spec;

/* What train was told. */
struct train_args {
    struct train_opts o;
    struct model_shape shape;
    bool json, summary_only;
    unsigned long long given; /* the run's settings given, a bit per line of train_settings */
    int dp;                   /* --dp, 0 if not given */
    const char *dump, *trace, *cluster, *nodes;
    bool mpi;          /* --transport mpi: this process is one GPU, an MPI rank */
    int ranks, hosts;  /* and the ranks mpirun started, on so many hosts (set before the
                          options are read) */
    double deadline_s; /* --deadline: the longest wait for one message (0: the run's 600 s) */
    /* --time-as MODEL: the model the run is timed as (par/timeas.h), and the calculator's step
     * for it in the run's layout */
    const char *time_as;
    struct model_shape as;
    struct plan_layout as_plan;
};

/* The options into r and rcfg (the run's options, the simulated cluster, whether step 1 is
 * kept), checked alone and together, and against this host's memory: 0, or the exit status
 * after the error was said. */
int train_args_read(int argc, char **argv, struct train_args *r, struct run_config *rcfg);
extern const struct opts_spec opts_train;

/* --dump DIR: a folder that can be written, or made in one (0 or ERR_INVAL); and step 1's
 * weights, batch, loss and gradients written in it (0, or ERR_IO, ERR_NOMEM). */
int train_dump_check(const char *dir, struct error *e);
int train_dump_write(const struct train_args *r, const struct run *run, struct error *e);

#define FINAL_STEPS 10 /* the final loss is the mean of the last FINAL_STEPS applied */

/* The run as it went, for the summary. */
struct train_summary {
    double final_loss, floor, seconds, sim_seconds, tokens_per_s, flops, recompute, overhead;
    double predicted, first_loss, max_norm, min_coef, max_underflow, sim_step, exposed;
    double exposed_by[RUN_WAITS]; /* exposed by kind (par/run.h's enum run_wait) */
    double compute_mean;          /* a GPU's compute, the mean of every GPU's */
    double compute_busiest;       /* the busiest GPU's compute (each step's) */
    char first_nonfinite[48];
    long steps, skipped, overflows, spikes;
    int nlast;              /* the steps the final loss is the mean of */
    uint64_t underflow[65]; /* per layer over the run (the last: embedding and norms) */
    int layers;
    float last_scale;
    uint64_t scalars;
    /* a mixture of experts: the choices routed and dropped over the run; the last step's
     * load-balancing loss and imbalance */
    uint64_t routed, dropped;
    double last_aux, last_imbalance;
};

/* The run's settings before its steps (text). */
void train_print_header(const struct train_args *r, const struct cluster_spec *spec);
/* A step, as a JSON line or a line of text. */
void train_print_step_json(const struct run_step *rs);
void train_print_step_text(const struct run_step *rs);
/* The summary: what the run's FLOPs and the calculator say before it starts; each step into
 * it (step i); the summary printed, JSON or text, each GPU beside its prediction. */
void train_summary_start(const struct train_args *r, const struct prediction *pred,
                         struct train_summary *sum);
void train_summary_add(struct train_summary *sum, const struct train_args *r,
                       const struct run_step *rs, long i);
void train_print_summary(const struct train_args *r, const struct run *run,
                         const struct train_summary *sum, const struct prediction *p,
                         const struct cluster_spec *spec);

#endif
