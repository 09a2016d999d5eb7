/* The α-β (latency-bandwidth) cost of each collective: pure functions, no threads.
 *
 * The model (Hockney's): one message of m bytes over a link costs α + m/β seconds and keeps
 * the sender's one outgoing port busy for that long; a device can send and receive at the same
 * time (full duplex); β is per GPU and direction (the presets' figure), so its incoming link
 * takes one message's m bytes (m/β) at a time. The simulator (sim/cluster.h) times every
 * message the same way, so for a single-node cluster the simulated time of a ring or recursive
 * halving/doubling collective equals the formula here exactly.
 *
 * S is the collective's size in bytes as nccl-tests counts it: the whole buffer (for
 * reduce-scatter the input of each GPU, for all-gather the output of each GPU). N is the
 * number of GPUs, D = floor(log2 N) the depth of a binary tree over them.
 *
 *   op / algo                  time                                        sent in total
 *   ring reduce-scatter        (N-1) α + (N-1)/N S/β                       (N-1) S
 *   ring all-gather            (N-1) α + (N-1)/N S/β                       (N-1) S
 *   ring all-reduce            2(N-1) α + 2(N-1)/N S/β                     2(N-1) S
 *   rhd reduce-scatter         log2 N α + (N-1)/N S/β         (N = 2^k)    (N-1) S
 *   rhd all-gather             log2 N α + (N-1)/N S/β         (N = 2^k)    (N-1) S
 *   rhd all-reduce             2 log2 N α + 2(N-1)/N S/β      (N = 2^k)    2(N-1) S
 *     N not a power of two (Thakur, Rabenseifner, Gropp 2005, §4): with N' = 2^D and
 *     r = N - N', ranks 2i and 2i+1 (i < r) first fold: the even one sends its whole vector
 *     to the odd one (α + S/β); the N' survivors run the power-of-two algorithm; the odd
 *     ones send the result back (α + S/β).  Time 2Dα + 2(N'-1)/N' S/β + 2(α + S/β).
 *     reduce-scatter and all-gather by rhd need N = 2^k.
 *   ring broadcast / reduce    (P + N-2)(α + S/(Pβ))  a pipelined chain    (N-1) S
 *   tree broadcast             2(P + D-1)(α + S/(Pβ))  pipelined binary    (N-1) S
 *   tree reduce                (P + D-1)(α + 2S/(Pβ))  tree                (N-1) S
 *   tree all-reduce            D(3α + 4S/(Pβ)) + (P-1)    reduce, then    2(N-1) S
 *                                max(3α + 3S/(Pβ),     broadcast
 *                                    2α + 4S/(Pβ))     (N = 2^(D+1) - 1)
 *   dbtree all-reduce          its schedule (below)                        2(N-1) S
 *   pairwise all-to-all        (N-1)(α + S/(Nβ))              (one node)   (N-1) S
 *   direct all-to-all          (N-1)(α + S/(Nβ))              (one node)   (N-1) S
 *   point-to-point             α + S/β
 *
 * All-to-all (comm/alltoall.c): GPU i's buffer of S bytes holds N blocks of S/N, block j for
 * GPU j. Each GPU keeps its own block and sends the N-1 others, (N-1)/N S; every byte it
 * sends is a byte another GPU lacks, so no algorithm sends less. Pairwise exchange (N-1
 * steps; in step k GPU i sends its block (i+k) mod N to GPU (i+k) mod N and receives
 * block i from GPU (i-k) mod N) pays one α and S/(Nβ) per step. The direct algorithm posts
 * all N-1 sends at once, in the same staggered order (i+1, i+2, ...: MPICH's algorithm for
 * medium messages, which avoids every GPU sending to the same one at once; Thakur,
 * Rabenseifner, Gropp 2005, §3.5), then takes its N-1 receives in the order i-1, i-2, ...
 * One port sends them one after the other: on one node its k-th message arrives at
 * k(α + S/(Nβ)), when its receiver wants it, so the two take the same time. Across nodes a
 * step mixes NVLink and network messages: both are timed by their schedule (cost.c replays
 * them), and the direct algorithm's GPUs, never waiting for a step's slowest pair, may finish
 * sooner.
 *
 * Pipelining (P chunks): a chain or tree splits the buffer into P chunks and forwards chunk k
 * while chunk k+1 arrives. A node of a binary tree sends each chunk to two children one after
 * the other through its one port, so a broadcast step costs 2(α + m/β); a reduction takes
 * both children's chunks through its one incoming link, one after the other, so a step costs
 * α + 2m/β; the all-reduce is a pipelined reduce to the root followed by a pipelined
 * broadcast from it. (With N = 2 the tree is a chain.) The trees' formulas above bound a full
 * tree (N = 2^k - 1) on one node; the all-reduce's is its schedule's own: D levels to fill the
 * pipeline, then a chunk each cycle of the slower of two, one its latencies set (an inner GPU's
 * three messages a chunk through its one port, 3α + 3S/(Pβ), while a chunk's bytes take less
 * than α) and one its bytes set (2α + 4S/(Pβ)) (tests/unit/test_cost.c). The time
 * cost_collective returns for the chain, the trees and rhd is their schedule: their programs
 * replayed under the simulator's own timing rules (cost.c), which counts each node's real
 * children (for N = 2^k the root has one child: on 8 GPUs the tree all-reduce's formula is
 * 8α + 10S/(Pβ) + (P - 1) max(3α + 3S/(Pβ), 2α + 4S/(Pβ))) and each message's own link; the
 * simulated and predicted
 * times agree to rounding (tests/unit/test_coll.c). P is the one whose schedule takes the
 * least time (cost_chunks, starting at its formula's least, cost_pipe_formula); the
 * collectives use the same P, capped by the number of elements.
 * Assumption: the lab's tree finishes its reduce before it starts its broadcast, so that each
 * step of lesson 3's panel is one phase and its formula a sum; NCCL's tree kernel
 * (runTreeSplit, src/device/all_reduce.h) splits its threads so that the broadcast of the
 * first chunks runs while the last are still reduced, which takes less time than this.
 * See Sanders, Speck, Träff, "Two-tree algorithms for full bandwidth broadcast, reduction and
 * scan", Parallel Computing 35 (2009), and for NCCL's double binary tree, S. Jeaugey,
 * "Massively Scale Your Deep Learning Training with NCCL 2.4" (NVIDIA blog, 2019): two binary
 * trees, each carrying half of the data, such that a GPU that is an inner node of one is a
 * leaf of the other (the second tree is the first mirrored for even N and shifted by one for
 * odd N). The trees run on two streams that share each GPU's ports but not each other's
 * waits; its time is its schedule's.
 *
 * Two-level clusters: GPUs are numbered node by node (GPU g is on node g / gpus_per_node).
 * A message between two nodes pays the inter-node α and β, one inside a node the intra-node
 * ones. The ring's steps run in lockstep, so past one node every step takes the inter-node
 * time and the ring formulas use the inter-node link (NCCL's bottleneck bound, exact here);
 * the schedule charges the chain, the trees and rhd hop by hop: rhd's first halving step and
 * last doubling step pair GPUs N/2 apart, on different nodes, and send S/2 over the network.
 * cost_link gives the link the ring formulas use.
 *
 * Bus bandwidth (nccl-tests, doc/PERFORMANCE.md): algbw = S / t; busbw = algbw × factor with
 * factor 2(N-1)/N for all-reduce, (N-1)/N for reduce-scatter, all-gather and all-to-all, 1
 * for broadcast and reduce. For all-to-all S is each GPU's whole send buffer (nccl-tests'
 * src/alltoall.cu: count x nranks x typesize), so busbw is the rate of the (N-1)/N S each
 * GPU's link carried. */
#ifndef SCALELAB_COMM_COST_H
#define SCALELAB_COMM_COST_H

#include <stdbool.h>

struct error;

enum cost_op {
    COST_ALLREDUCE,
    COST_REDUCE_SCATTER,
    COST_ALLGATHER,
    COST_BROADCAST,
    COST_REDUCE,
    COST_ALLTOALL,
    COST_OP_COUNT
};

enum cost_algo {
    COST_RING,
    COST_TREE,
    COST_DBTREE,
    COST_RHD,
    COST_PAIRWISE, /* all-to-all: N-1 exchange steps */
    COST_DIRECT,   /* all-to-all: every send posted at once */
    COST_ALGO_COUNT,
    COST_AUTO
};

#define COST_MAX_CHUNKS 64

/* A cluster as the cost model sees it. α in seconds, β in bytes per second. */
struct cost_net {
    int gpus;          /* N, >= 1 */
    int gpus_per_node; /* >= 1; N <= gpus_per_node means one node */
    double alpha_intra, beta_intra;
    double alpha_inter, beta_inter;
};

struct cost_result {
    double time_s;            /* predicted time */
    double bytes_total;       /* bytes sent by all GPUs together */
    double bytes_max_per_gpu; /* bytes sent by the busiest GPU */
    double bytes_min_per_gpu; /* by the least busy (the trees'; the others' the same) */
    int steps;                /* α terms on the critical path (messages in sequence) */
    int rounds;         /* the moments at which its messages arrive: what lesson 3's panel steps
                           through and collective reports as steps (the ring's and rhd's steps; a
                           tree's pipeline stages, a parent's second child's chunk its own) */
    int chunks;         /* P for the pipelined algorithms, else 1 */
    double alpha, beta; /* the link the formula used */
};

/* "allreduce", "reduce-scatter", "allgather", "broadcast", "reduce", "alltoall"; "ring",
 * "tree", "dbtree", "rhd", "pairwise", "direct" ("auto" parses to COST_AUTO). */
const char *cost_op_name(enum cost_op op);
const char *cost_algo_name(enum cost_algo algo);
int cost_parse_op(const char *s, enum cost_op *out, struct error *e);
int cost_parse_algo(const char *s, enum cost_algo *out, struct error *e);

/* Whether algo implements op on n GPUs (e.g. rhd reduce-scatter needs a power of two);
 * if not, fills e (ERR_INVAL) with what is allowed. */
bool cost_supported(enum cost_op op, enum cost_algo algo, int n, struct error *e);

/* The link the formulas use: intra-node if all GPUs are on one node, else inter-node. */
void cost_link(const struct cost_net *net, double *alpha, double *beta);

/* A pipelined chain or tree's own α-β formula in its number of chunks P, read off its schedule
 * (its messages replayed as the simulator times them): the first chunk's way through, the fill,
 * then each further chunk one cycle of the slower of the two the schedule repeats, one its
 * latencies set (while a chunk's bytes take less than α) and one its bytes set:
 *
 *   t(P) = fill_lat + fill_bw / P + (P - 1) max(lat_pace_lat + lat_pace_bw / P,
 *                                                bw_pace_lat + bw_pace_bw / P)
 *
 * each *_lat a time of latencies, each *_bw the time of the whole buffer's bytes (a chunk's is
 * that over P), read off the schedule with no bytes, with α = 0, and near each (so the
 * coefficients are the schedule's counts). The lab's tree all-reduce on 8 GPUs of one node is
 * 8α + 10S/(Pβ) + (P - 1) max(3α + 3S/(Pβ), 2α + 4S/(Pβ)): its root has one child, and a
 * parent takes its two children's chunks one after the other through its incoming link. On one
 * node it is the schedule's time exactly (to rounding) for the chain, the tree's broadcast,
 * and the tree's reduce and all-reduce on N = 2^k or 2^k - 1 GPUs, where every inner GPU but
 * the root has two children (tests/unit/test_cost.c); a tree with GPUs of one child, the
 * double binary tree and a tree across nodes repeat more than two cycles and follow it less
 * closely (the lab times their schedule). ERR_INVAL for an algorithm that is not
 * pipelined. */
struct cost_pipe {
    double fill_lat, fill_bw;
    double lat_pace_lat, lat_pace_bw; /* the cycle the latencies set */
    double bw_pace_lat, bw_pace_bw;   /* the cycle the bytes set */
};
int cost_pipe_formula(enum cost_op op, enum cost_algo algo, const struct cost_net *net,
                      double bytes, struct cost_pipe *out);
double cost_pipe_time(const struct cost_pipe *f, int chunks);

/* The time of the schedule of op by a pipelined algorithm, rhd or an all-to-all cut in
 * `chunks` chunks (1 for rhd and all-to-all), its messages replayed as the simulator times
 * them; NAN for the ring's own collectives. */
double cost_schedule_time(enum cost_op op, enum cost_algo algo, const struct cost_net *net,
                          double bytes, int chunks);

/* The chunks P a pipelined chain or tree cuts `bytes` into: from the least of its schedule's
 * latencies (no bytes) plus its bytes (α = 0), a P + b + c + d / P at P* = sqrt(d / a) rounded,
 * the P whose replayed schedule takes the least
 * time, found by stepping to fewer or more chunks while it falls (between 1 and
 * COST_MAX_CHUNKS); 1 for the others. For the chain and the tree, whose time falls then rises
 * in P, this is the least of all P; the double binary tree's two trees share each GPU's
 * ports and its time is not smooth in P (a P some percent off the best may be kept).
 * cost_collective and the collectives (comm/coll.h) use it. */
int cost_chunks(enum cost_op op, enum cost_algo algo, const struct cost_net *net, double bytes);

/* floor(log2 n) for n >= 1. */
int cost_log2(int n);

/* The α-β time and traffic of op by algo on net for bytes; 0, or ERR_INVAL if unsupported
 * or the arguments are out of range. COST_AUTO is resolved with cost_best_algo first. */
int cost_collective(enum cost_op op, enum cost_algo algo, const struct cost_net *net, double bytes,
                    struct cost_result *out, struct error *e);

/* The supported algorithm with the least predicted time (ties: the first in enum order). */
enum cost_algo cost_best_algo(enum cost_op op, const struct cost_net *net, double bytes);

/* The size in bytes, between lo and hi, where algorithm a stops being faster than b or starts
 * to be (the first change of sign of t_a - t_b, found on a grid of 32 points per factor of 2
 * and refined by bisection to 1e-6 relative), or -1 if one is faster throughout. */
double cost_crossover(enum cost_op op, enum cost_algo a, enum cost_algo b,
                      const struct cost_net *net, double lo, double hi);

/* α + S/β over the link between two GPUs (intra- or inter-node). */
double cost_p2p(const struct cost_net *net, int from, int to, double bytes);

/* nccl-tests: busbw = algbw × cost_busbw_factor(op, n). */
double cost_busbw_factor(enum cost_op op, int n);
/* S / t in bytes per second (0 if t <= 0). */
double cost_algbw(double bytes, double time_s);

#endif
