/* The quantities of the collectives (comm/cost.h's α-β model on the h100-80gb preset: the
 * ring's, the trees', rhd's, the all-to-alls') and of ring attention's work (model/ringattn.h),
 * a part of the quantity table (lesson/quantity_table.h). */
#include "config.h"

#include <math.h>

#include "calc/preset.h"
#include "comm/cost.h"
#include "lesson/quantity_table.h"
#include "model/ringattn.h"
#include "sim/spec.h"

/* n GPUs of the h100-80gb preset (assets/clusters; sim/spec.h's built-in copy of its numbers
 * if it cannot be read), the α-β model of comm/cost.h. */
static struct cost_net h100(double n)
{
    struct cluster_spec s;
    if (preset_load_cluster(PRESET_CLUSTER, &s, NULL) < 0)
        spec_default(&s);
    struct cost_net net;
    preset_cost_net(&s, (int)n, &net);
    return net;
}

static struct cost_result collective(enum cost_op op, enum cost_algo algo, double n, double bytes)
{
    struct cost_result r = {0};
    struct cost_net net = h100(n);
    /* at most 1024 GPUs: a tree's time replays its messages, for each chunk count it tries */
    if (!quantity_whole(n, 1, 1024) || cost_collective(op, algo, &net, bytes, &r, NULL))
        r.time_s = r.bytes_total = r.bytes_max_per_gpu = r.bytes_min_per_gpu = NAN,
        r.steps = r.rounds = -1;
    return r;
}

static struct cost_result allreduce(enum cost_algo algo, double n, double bytes)
{
    return collective(COST_ALLREDUCE, algo, n, bytes);
}

static double ring_sent_per_gpu(double n, double bytes)
{
    return allreduce(COST_RING, n, bytes).bytes_max_per_gpu;
}

static double ring_sent_total(double n, double bytes)
{
    return allreduce(COST_RING, n, bytes).bytes_total;
}

static double ring_steps(double n)
{
    struct cost_result r = allreduce(COST_RING, n, 0);
    return r.steps < 0 ? NAN : r.steps;
}

static double ring_time(double n, double bytes)
{
    return allreduce(COST_RING, n, bytes).time_s;
}

static double tree_time(double n, double bytes)
{
    return allreduce(COST_TREE, n, bytes).time_s;
}

/* The steps lesson 3's panel and collective count: the moments its messages arrive. */
static double tree_steps(double n, double bytes)
{
    struct cost_result r = allreduce(COST_TREE, n, bytes);
    return r.rounds < 0 ? NAN : r.rounds;
}

static double tree_chunks(double n, double bytes)
{
    struct cost_result r = allreduce(COST_TREE, n, bytes);
    return r.rounds < 0 ? NAN : r.chunks;
}

/* The tree all-reduce's own formula on n GPUs of one node (comm/cost.h, cost_pipe_formula):
 * fill_a α + fill_b S/(Pβ) + (P - 1) max(a0 α + b0 S/(Pβ), a1 α + b1 S/(Pβ)), the counts of
 * α and of a chunk's S/(Pβ) in the fill and in the two cycles (k 0: the one the latencies set,
 * 1: the one the bytes set). */
static bool tree_formula(double n, struct cost_pipe *f, double *a, double *sb)
{
    struct cost_net net = h100(n);
    double S = 1 << 20;
    *a = net.alpha_intra, *sb = S / net.beta_intra;
    return quantity_whole(n, 2, net.gpus_per_node) &&
           cost_pipe_formula(COST_ALLREDUCE, COST_TREE, &net, S, f) == 0;
}

/* A count read off the schedule, to the millionth (the replay's rounding). */
static double count_of(double v)
{
    return round(v * 1e6) / 1e6;
}

static double tree_fill_alpha(double n)
{
    struct cost_pipe f;
    double a, sb;
    return tree_formula(n, &f, &a, &sb) ? count_of(f.fill_lat / a) : NAN;
}

static double tree_fill_beta(double n)
{
    struct cost_pipe f;
    double a, sb;
    return tree_formula(n, &f, &a, &sb) ? count_of(f.fill_bw / sb) : NAN;
}

static double tree_pace_alpha(double n, double k)
{
    struct cost_pipe f;
    double a, sb;
    if (!quantity_whole(k, 0, 1) || !tree_formula(n, &f, &a, &sb))
        return NAN;
    return count_of((k == 0 ? f.lat_pace_lat : f.bw_pace_lat) / a);
}

static double tree_pace_beta(double n, double k)
{
    struct cost_pipe f;
    double a, sb;
    if (!quantity_whole(k, 0, 1) || !tree_formula(n, &f, &a, &sb))
        return NAN;
    return count_of((k == 0 ? f.lat_pace_bw : f.bw_pace_bw) / sb);
}

/* The bytes the busiest and the least busy GPU send in a double-binary-tree all-reduce. */
/* That formula's time for y bytes on x GPUs of a node, at the P the lab chooses. */
static double tree_formula_time(double n, double bytes)
{
    struct cost_net net = h100(n);
    struct cost_pipe f;
    struct cost_result r = allreduce(COST_TREE, n, bytes);
    if (r.rounds < 0 || !quantity_whole(n, 2, net.gpus_per_node) ||
        cost_pipe_formula(COST_ALLREDUCE, COST_TREE, &net, bytes, &f) != 0)
        return NAN;
    return cost_pipe_time(&f, r.chunks);
}

static double dbtree_sent_max(double n, double bytes)
{
    return allreduce(COST_DBTREE, n, bytes).bytes_max_per_gpu;
}

static double dbtree_sent_min(double n, double bytes)
{
    return allreduce(COST_DBTREE, n, bytes).bytes_min_per_gpu;
}

static double dbtree_time(double n, double bytes)
{
    return allreduce(COST_DBTREE, n, bytes).time_s;
}

static double rhd_time(double n, double bytes)
{
    return allreduce(COST_RHD, n, bytes).time_s;
}

static double rhd_steps(double n)
{
    struct cost_result r = allreduce(COST_RHD, n, 0);
    return r.steps < 0 ? NAN : r.steps;
}

static double tree_faster(double n, double bytes)
{
    return tree_time(n, bytes) < ring_time(n, bytes);
}

static double crossover(double n)
{
    struct cost_net net = h100(n);
    if (!quantity_whole(n, 2, 1024))
        return NAN;
    return cost_crossover(COST_ALLREDUCE, COST_RING, COST_TREE, &net, 1, 1e12);
}

static double busbw_factor(double n)
{
    return n >= 1 ? cost_busbw_factor(COST_ALLREDUCE, (int)n) : NAN;
}

/* All-to-all: each GPU keeps its own block and sends the N-1 others (comm/cost.h). */
static double a2a_sent_per_gpu(double n, double bytes)
{
    return collective(COST_ALLTOALL, COST_PAIRWISE, n, bytes).bytes_max_per_gpu;
}

static double a2a_sent_total(double n, double bytes)
{
    return collective(COST_ALLTOALL, COST_PAIRWISE, n, bytes).bytes_total;
}

static double a2a_steps(double n)
{
    struct cost_result r = collective(COST_ALLTOALL, COST_PAIRWISE, n, 0);
    return r.steps < 0 ? NAN : r.steps;
}

static double a2a_time(double n, double bytes)
{
    return collective(COST_ALLTOALL, COST_PAIRWISE, n, bytes).time_s;
}

static double a2a_direct_time(double n, double bytes)
{
    return collective(COST_ALLTOALL, COST_DIRECT, n, bytes).time_s;
}

static double a2a_direct_faster(double n, double bytes)
{
    return a2a_direct_time(n, bytes) < a2a_time(n, bytes);
}

static double a2a_busbw_factor(double n)
{
    return n >= 1 ? cost_busbw_factor(COST_ALLTOALL, (int)n) : NAN;
}

/* nccl-tests' bus bandwidth of an all-reduce of y bytes on x GPUs that took t seconds:
 * algbw y/t times 2(x-1)/x (nccl-tests, doc/PERFORMANCE.md). */
static double busbw(double n, double bytes, double t)
{
    return t > 0 && bytes >= 0 ? bytes / t * busbw_factor(n) : NAN;
}

/* The attention scores GPU r of c computes in one pass over one sequence's t tokens and one
 * head, what the causal mask leaves of its blocks (model/ringattn.h), under a split. */
static double ring_scores_of(double t, double c, double r, enum ring_split split)
{
    if (!quantity_whole(c, 1, 1024) || !quantity_whole(t, 1, 1 << 20) ||
        !quantity_whole(r, 0, c - 1) || !ring_split_ok((int)t, (int)c, split))
        return NAN;
    double sum = 0;
    for (int k = 0; k < (int)c; k++)
        sum += (double)ring_block_scores((int)t, (int)c, (int)r, k, split);
    return sum;
}

static double ring_scores_balanced(double t, double c, double r)
{
    return ring_scores_of(t, c, r, RING_BALANCED);
}

static double ring_scores_naive(double t, double c, double r)
{
    return ring_scores_of(t, c, r, RING_NAIVE);
}

const struct quantity quantity_comm[] = {
    Q2("ring.allreduce_sent_per_gpu", "B",
       "bytes each of x GPUs sends in a ring all-reduce of y bytes: 2(x-1)/x y", ring_sent_per_gpu),
    Q2("ring.allreduce_sent_total", "B",
       "bytes all x GPUs send together in a ring all-reduce of y bytes: 2(x-1) y", ring_sent_total),
    Q3("ring.scores", "",
       "attention scores GPU r of c computes a pass, one sequence of t tokens, one head: balanced",
       ring_scores_balanced),
    Q3("ring.scores_naive", "", "the same with the naive split (chunk r of c)", ring_scores_naive),
    Q1("ring.allreduce_steps", "", "steps of a ring all-reduce on x GPUs: 2(x-1)", ring_steps),
    Q2("ring.allreduce_time", "s",
       "α-β time of a ring all-reduce of y bytes on x GPUs of h100-80gb", ring_time),
    Q2("tree.allreduce_time", "s",
       "α-β time of a pipelined binary-tree all-reduce of y bytes on x GPUs of h100-80gb",
       tree_time),
    Q2("tree.allreduce_steps", "",
       "steps of that tree all-reduce: the moments its messages arrive (lesson 3's panel)",
       tree_steps),
    Q2("tree.allreduce_chunks", "", "the pipeline chunks P that tree all-reduce cuts y bytes into",
       tree_chunks),
    Q1("tree.fill_alpha", "",
       "a in the tree all-reduce's formula aα + bS/(Pβ) + (P - 1) max(cycle 0, cycle 1) on x "
       "GPUs of a node: the first chunk's latencies",
       tree_fill_alpha),
    Q1("tree.fill_beta", "", "b in that formula: the first chunk's S/(Pβ)", tree_fill_beta),
    Q2("tree.pace_alpha", "",
       "the α of a cycle of that formula, x GPUs: y 0 the cycle the latencies set, 1 the bytes",
       tree_pace_alpha),
    Q2("tree.formula_time", "s",
       "that formula's time for y bytes on x GPUs of a node, at the P the lab cuts them in",
       tree_formula_time),
    Q2("tree.pace_beta", "", "the S/(Pβ) of a cycle of that formula (x, y as above)",
       tree_pace_beta),
    Q2("dbtree.allreduce_time", "s",
       "α-β time of a double-binary-tree all-reduce of y bytes on x GPUs of h100-80gb",
       dbtree_time),
    Q2("dbtree.allreduce_sent_max", "B",
       "bytes the busiest GPU sends in a double-binary-tree all-reduce of y bytes on x GPUs",
       dbtree_sent_max),
    Q2("dbtree.allreduce_sent_min", "B", "the same for the least busy GPU", dbtree_sent_min),
    Q2("rhd.allreduce_time", "s",
       "α-β time of a recursive halving/doubling all-reduce of y bytes on x GPUs of h100-80gb",
       rhd_time),
    Q1("rhd.allreduce_steps", "", "steps of a recursive halving/doubling all-reduce on x GPUs",
       rhd_steps),
    Q2("allreduce.tree_faster", "bool",
       "1 if the tree all-reduce of y bytes on x GPUs of h100-80gb beats the ring", tree_faster),
    Q1("allreduce.crossover", "B",
       "the all-reduce size above which a ring beats a tree on x GPUs of h100-80gb", crossover),
    Q1("allreduce.busbw_factor", "",
       "nccl-tests' busbw / algbw for an all-reduce on x GPUs: 2(x-1)/x", busbw_factor),
    Q3("allreduce.busbw", "B/s", "busbw of an all-reduce of y bytes on x GPUs in t s: y/t 2(x-1)/x",
       busbw),
    Q2("alltoall.sent_per_gpu", "B",
       "bytes each of x GPUs sends in an all-to-all of y bytes (each GPU's buffer): (x-1)/x y",
       a2a_sent_per_gpu),
    Q2("alltoall.sent_total", "B", "bytes all x GPUs send together in it: (x-1) y", a2a_sent_total),
    Q1("alltoall.steps", "", "steps of a pairwise all-to-all on x GPUs: x-1", a2a_steps),
    Q2("alltoall.time", "s",
       "α-β time of a pairwise all-to-all of y bytes on x GPUs of h100-80gb, its messages "
       "replayed as the simulator times them",
       a2a_time),
    Q2("alltoall.direct_time", "s", "the same for the direct all-to-all (every send at once)",
       a2a_direct_time),
    Q2("alltoall.direct_faster", "bool",
       "1 if the direct all-to-all of y bytes on x GPUs of h100-80gb beats pairwise exchange",
       a2a_direct_faster),
    Q1("alltoall.busbw_factor", "",
       "nccl-tests' busbw / algbw for an all-to-all on x GPUs: (x-1)/x", a2a_busbw_factor),
};

const size_t quantity_comm_count = sizeof quantity_comm / sizeof quantity_comm[0];
