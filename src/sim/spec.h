/* A cluster as the simulator needs it: how many GPUs per node, the links inside and between
 * nodes, memory and compute of one GPU. The preset loader (calc/) fills it from
 * assets/clusters/NAME.ini; sim/ itself reads no files. */
#ifndef SCALELAB_SIM_SPEC_H
#define SCALELAB_SIM_SPEC_H

struct error;

/* A run that stands for a larger model (train --time-as MODEL; par/timeas.h derives the
 * figures): it computes its own small model, and its clock charges each operation and message
 * what the one it stands for costs in MODEL. An operation's FLOPs are multiplied by its kind's
 * factor and run at peak x efficiency; a message of m bytes stands for `alphas` messages of m x
 * `bytes` bytes in all: it takes alphas x α + m x bytes / β (or `each` in place of m). Per pipeline
 * stage (the layers a stage holds, and so its parameters, differ), by what the message carries. */
enum time_op {
    TIME_OP_LAYER, /* a layer's forward, backward or recomputed forward */
    TIME_OP_ENDS,  /* the embedding, the final norm and the head */
    TIME_OP_CORE,  /* selective recompute: the attention core alone */
    TIME_OP_ATTN,  /* a block of ring attention: the scores the causal mask leaves */
    TIME_OPS
};
enum time_msg {
    TIME_MSG_NONE,       /* none said: timed as sent (the agreement's scalars) */
    TIME_MSG_PARAMS,     /* gradients and weights of data parallelism (buckets, ZeRO units) */
    TIME_MSG_LAYER_ROWS, /* tensor parallelism's b s h sums and gathers inside a layer */
    TIME_MSG_END_ROWS,   /* the same at the ends (the embedding's lookup, the head's input) */
    TIME_MSG_TOKENS,     /* the parallel cross-entropy's fp32 numbers per token */
    TIME_MSG_NORMS,      /* sequence parallelism's norm weight gradients */
    TIME_MSG_ACTS,       /* a pipeline's activations and their gradients */
    TIME_MSG_TIED,       /* the tied embedding's gradient between a pipeline's ends */
    TIME_MSG_RING,       /* context parallelism's K and V blocks and their gradients */
    TIME_MSGS
};
struct time_msg_scale {
    double bytes, alphas; /* {1, 1}: as sent */
    /* > 0: every message is timed as this many bytes (times `bytes`) whatever it carries: a
     * collective whose chunks the run cuts unevenly, timed as the even chunks a framework's
     * ring cuts (par/dp.c) */
    double each;
    enum time_msg kind; /* what the messages carry (TIME_MSG_NONE unless said): the kind a
                         * device's waits for them are counted as (dev_waited) */
};
#define TIME_STAGES 16
struct time_scale {
    char as[64];       /* the model the run is timed as; "": as itself (the rest unused) */
    double efficiency; /* the share of peak compute reaches (the calculator's) */
    double flops[TIME_OPS];
    struct time_msg_scale msg[TIME_STAGES][TIME_MSGS];
};

struct cluster_spec {
    char name[64];
    int gpus_per_node;              /* >= 1 */
    int nodes;                      /* >= 1: the cluster's size (a run may use fewer GPUs) */
    double hbm_bytes;               /* memory capacity of one GPU */
    double peak_flops;              /* one GPU's dense peak for training math, FLOP/s */
    double alpha_intra, beta_intra; /* one message inside a node: α s, β bytes/s */
    double alpha_inter, beta_inter; /* between nodes */
    struct time_scale time;         /* zeros: the run is timed as itself */
};

/* One node of 8 NVIDIA H100 SXM 80GB, the numbers of assets/clusters/h100-80gb.ini (which
 * cites their sources): 80 GiB, 989.4 TFLOP/s dense bf16, NVLink 4 at 450 GB/s per direction
 * with α = 2 µs, 50 GB/s and α = 5 µs between nodes. For library defaults and tests that must
 * not depend on files; the command line always reads a preset. */
void spec_default(struct cluster_spec *s);

/* 0, or ERR_INVAL naming the first field out of range. */
int spec_check(const struct cluster_spec *s, struct error *e);

/* The simulated seconds an operation of `flops` (as charged, after time_flops) takes: flops /
 * peak, or flops / (peak x efficiency) when the run is timed as another model. */
double spec_compute_time(const struct cluster_spec *s, double flops);
/* The FLOPs charged for an operation of kind op that computed `flops`: flops, or what it
 * stands for in the model the run is timed as. */
double time_flops(const struct time_scale *t, enum time_op op, double flops);
/* How a message of kind k from a GPU of pipeline stage `stage` is timed: {1, 1} unless the run
 * is timed as another model. */
struct time_msg_scale time_msg(const struct time_scale *t, int stage, enum time_msg k);

/* The node of a GPU and whether two GPUs share one. */
int spec_node(const struct cluster_spec *s, int gpu);

#endif
