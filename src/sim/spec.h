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

/* One node of 8 NVIDIA H100 SXM 80GB, the numbers of assets/clusters/h100-80gb.ini (which
 * cites their sources): 80 GiB, 989.4 TFLOP/s dense bf16, NVLink 4 at 450 GB/s per direction
 * with α = 2 µs, 50 GB/s and α = 5 µs between nodes. For library defaults and tests that must
 * not depend on files; the command line always reads a preset. */
void spec_default(struct cluster_spec *s);

/* 0, or ERR_INVAL naming the first field out of range. */
int spec_check(const struct cluster_spec *s, struct error *e);

/* The node of a GPU and whether two GPUs share one. */
int spec_node(const struct cluster_spec *s, int gpu);

#endif
