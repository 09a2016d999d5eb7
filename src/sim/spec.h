/* A cluster as the simulator needs it: how many GPUs per node, the links inside and between
 * nodes, memory and compute of one GPU. The preset loader (calc/) fills it from
 * assets/clusters/NAME.ini; sim/ itself reads no files. */
#ifndef SCALELAB_SIM_SPEC_H
#define SCALELAB_SIM_SPEC_H

struct error;

struct cluster_spec {
    char name[64];
    int gpus_per_node;              /* >= 1 */
    int nodes;                      /* >= 1: the cluster's size (a run may use fewer GPUs) */
    double hbm_bytes;               /* memory capacity of one GPU */
    double peak_flops;              /* one GPU's dense peak for training math, FLOP/s */
    double alpha_intra, beta_intra; /* one message inside a node: α s, β bytes/s */
    double alpha_inter, beta_inter; /* between nodes */
};

/* One node of 8 NVIDIA H100 SXM 80GB, used only when no preset is given:
 * 80 GiB HBM3; 989 TFLOP/s dense bf16 (H100 SXM datasheet); NVLink 4 at 900 GB/s both
 * directions together, 450 GB/s each way (datasheet); between nodes one 400 Gb/s NDR
 * InfiniBand adapter per GPU, 50 GB/s each way. α (the fixed cost of one message) is taken as
 * 3 µs inside a node and 10 µs between nodes, the order of NCCL's own latency estimates
 * (src/graph/tuning.cc: a few µs base latency per collective step). */
void spec_default(struct cluster_spec *s);

/* 0, or ERR_INVAL naming the first field out of range. */
int spec_check(const struct cluster_spec *s, struct error *e);

/* The node of a GPU and whether two GPUs share one. */
int spec_node(const struct cluster_spec *s, int gpu);

#endif
