/* The collectives: one call on one range of a flat buffer, made by every device of the
 * cluster at once (inside cluster_run), built only from sim's point-to-point sends.
 *
 *   allreduce       every GPU ends with the element-wise sum of all GPUs' buffers, bit for bit
 *                   the same on every GPU (each reduced value is computed once and copied)
 *   reduce-scatter  GPU i ends with the sum in its chunk i of the buffer (coll_chunk); the
 *                   rest of its buffer holds partial sums
 *   allgather       GPU i starts with its chunk i; every GPU ends with all chunks
 *   broadcast       the root's buffer ends up everywhere
 *   reduce          the root ends with the sum; the other GPUs' buffers hold partial sums
 *   all-to-all      GPU i's buffer holds N blocks of count/N elements, block j for GPU j;
 *                   GPU i's recv buffer ends with GPU j's block i in its block j (out of
 *                   place: recv is a buffer of count elements apart from buf; count a
 *                   multiple of N), as MPI_Alltoall and a group of NCCL sends and receives;
 *                   or blocks of given sizes (struct coll's sendcounts), as MPI_Alltoallv
 *
 * Buffers are in place, as NCCL's in-place calls: a ZeRO shard of GPU i is chunk i. Chunks
 * split count elements as evenly as possible (the first count % N chunks one element
 * longer), so any count works, including counts below N (empty chunks).
 *
 * Algorithms (comm/cost.h has their α-β times):
 *   ring    reduce-scatter, all-gather, all-reduce (reduce-scatter then all-gather) around
 *           the ring 0 -> 1 -> ... -> N-1 -> 0 (ring.c); broadcast and reduce as a pipelined
 *           chain from or to the root
 *   tree    pipelined binary tree (tree 0 of comm/tree.h): all-reduce = reduce to the tree's
 *           root, then broadcast from it; broadcast, reduce rooted at the given root
 *   dbtree  NCCL's double binary tree: half of the buffer on each of two trees (all-reduce)
 *   rhd     recursive halving reduce-scatter, recursive doubling all-gather (Rabenseifner);
 *           all-reduce on any N, folding the extra GPUs in and out (see comm/cost.h)
 *   pairwise   all-to-all in N-1 exchange steps (alltoall.c)
 *   direct     all-to-all with every send posted at once (alltoall.c)
 *
 * The step numbers (dev_step, the events' step, --fail GPU@STEP) count each algorithm's
 * rounds from 0: ring N-1 per phase; rhd one per exchange (and one per fold); chains and
 * trees one per pipeline chunk and phase; pairwise N-1, direct 1. Memory: no allocation; a receive
 * combines straight from the sender's buffer.
 *
 * Time: a collective runs on one device stream (struct coll's stream, 0 by default), the double
 * binary tree on that stream and the next; when it returns, its stream's clock is when this GPU
 * is done with it. Compute on another stream (dev_compute_on) overlaps it; dev_compute or
 * dev_join waits for it. */
#ifndef SCALELAB_COMM_COLL_H
#define SCALELAB_COMM_COLL_H

#include <stdbool.h>
#include <stddef.h>

#include "comm/chunk.h"
#include "comm/cost.h"
#include "num/fp.h"
#include "comm/xport.h"
#include "sim/cluster.h"

struct error;

struct coll {
    enum cost_op op;
    enum cost_algo algo; /* COST_AUTO: the α-β model's choice for this size */
    void *buf;
    size_t count;         /* elements */
    enum fp_format dtype; /* fp32, bf16 or fp16 */
    int root;             /* broadcast and reduce */
    int stream;           /* the device stream it runs on (sim/cluster.h); dbtree also uses
                             stream + 1. 0 unless compute overlaps it on another stream */
    /* NULL: chunks split count evenly (coll_chunk). Else N + 1 element offsets, 0 = bounds[0]
     * <= ... <= bounds[N] = count: chunk i is [bounds[i], bounds[i+1]), which may be empty.
     * Ring reduce-scatter, all-gather and all-reduce only. The data-parallel trainer
     * (par/shard.h) cuts each gradient bucket where the ZeRO shards cut the flat buffer, so
     * that every element is reduced around the same ring, in the same order, at every stage. */
    const size_t *bounds;
    /* NULL: every GPU of the cluster takes part, in rank order. Else the group_size device
     * ranks that take part, in the order the algorithm numbers them (a ring goes group[0] ->
     * group[1] -> ...; root and chunk i are group indices): a communicator, as NCCL's, e.g.
     * the data-parallel GPUs of one tensor-parallel rank. Only its members call it. */
    const int *group;
    int group_size;
    /* Reduce by the element-wise maximum instead of the sum (fp32 all-reduce, reduce-scatter
     * and reduce): tensor parallelism's cross-entropy takes the row maximum over the group. */
    bool max;
    /* All-to-all only (required there): where the blocks arrive, count elements not
     * overlapping buf. */
    void *recv;
    /* All-to-all: the phase its sends and receives carry in their events (sim/event.h), a
     * static string naming what it moves ("expert dispatch", for the traces and the panel that
     * watches expert parallelism's all-to-alls, ui/panel_eprun.c); NULL: COLL_ALLTOALL_PHASE. */
    const char *phase;
    /* All-to-all only. NULL (both): count / N elements to and from each member. Else N counts
     * each (MPI_Alltoallv's): block j of buf, sendcounts[j] elements, goes to member j, and
     * member j's block for this GPU arrives as block j of recv, recvcounts[j] elements; blocks
     * lie back to back in member order, count = the sum of sendcounts, and each recvcounts[j]
     * is member j's sendcounts for this GPU (the caller exchanged them first). A block may be
     * empty: its message is still sent, as a zero-byte send and receive of a group of NCCL
     * calls are still matched. */
    const size_t *sendcounts, *recvcounts;
};

/* The phase of an all-to-all's sends and receives that name none of their own. */
#define COLL_ALLTOALL_PHASE "all-to-all"

/* Every device calls it with the same op, algo, count, dtype and root. 0, ERR_INVAL (an
 * unsupported combination), or ERR_RUN (the run was aborted or failed). */
int coll_run(struct device *d, const struct coll *c, struct error *e);
/* The same over any transport (comm/xport.h): coll_run is this with the device's thread
 * transport; an MPI rank calls it with its own (comm/mpi.h). */
int coll_run_on(const struct xport *x, const struct coll *c, struct error *e);
/* Whether count elements split into the n equal blocks an all-to-all sends (a trial asks
 * before it allocates, coll_run_on before it runs): 0 or ERR_INVAL saying so. */
int coll_alltoall_check(size_t count, int n, struct error *e);

int coll_allreduce(struct device *d, void *buf, size_t count, enum fp_format dt,
                   enum cost_algo algo, struct error *e);
int coll_reduce_scatter(struct device *d, void *buf, size_t count, enum fp_format dt,
                        enum cost_algo algo, struct error *e);
int coll_allgather(struct device *d, void *buf, size_t count, enum fp_format dt,
                   enum cost_algo algo, struct error *e);
int coll_broadcast(struct device *d, void *buf, size_t count, enum fp_format dt, int root,
                   enum cost_algo algo, struct error *e);
int coll_reduce(struct device *d, void *buf, size_t count, enum fp_format dt, int root,
                enum cost_algo algo, struct error *e);

/* The cost model's view of a spec with n GPUs. */
void coll_net(const struct cluster_spec *s, int n, struct cost_net *net);

/* The algorithm COST_AUTO means for this op, size and cluster. */
enum cost_algo coll_resolve(const struct cluster_spec *s, int n, enum cost_op op,
                            enum cost_algo algo, double bytes);

/* The number of pipeline chunks a chain or tree uses for count elements of bytes in all:
 * cost_chunks, at most the elements it cuts (at least 1). */
int coll_pipeline_chunks(const struct cluster_spec *s, int n, enum cost_op op, enum cost_algo algo,
                         double bytes, size_t count);

/* The number of steps (rounds) the algorithm takes, as numbered above. */
int coll_steps(const struct cluster_spec *s, int n, enum cost_op op, enum cost_algo algo,
               size_t count, enum fp_format dt);

#endif
