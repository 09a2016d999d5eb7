/* All-to-all from point-to-point sends: pairwise exchange and the direct algorithm.
 *
 * GPU i's buffer holds N blocks of count/N elements, block j for GPU j; after the call GPU
 * i's receive buffer holds, in its block j, GPU j's block i (MPI_Alltoall's layout). Each
 * GPU copies its own block across and sends the other N-1: (N-1)/N of the buffer.
 *
 * Pairwise exchange (N-1 steps): in step k, GPU i sends block (i+k) mod N to GPU (i+k) mod N
 * and receives from GPU (i-k) mod N, which sends it block i. Every GPU sends one message and
 * receives one in each step, so no link carries two at once; each step's pairs form a
 * permutation (Thakur, Rabenseifner, Gropp, "Optimization of Collective Communication
 * Operations in MPICH", IJHPCA 2005, §3.5: MPICH's algorithm for long messages).
 *
 * Direct: all N-1 sends posted at once, staggered the same way (to i+1, i+2, ...) so that no
 * GPU is every other's first destination, then the N-1 receives (from i-1, i-2, ...), then a
 * wait for every send: MPICH's algorithm for medium messages, and what a group of NCCL sends
 * and receives (ncclGroupStart ... ncclGroupEnd) asks of the library. It has N-1 messages in
 * flight where pairwise has one, and one round: --fail's step 0.
 *
 * With blocks of given sizes (struct coll's sendcounts and recvcounts, MPI_Alltoallv's) both
 * run the same messages, each of its block's size; an empty block is still a message (no
 * bytes), so every GPU sends and receives N-1 whatever the sizes.
 *
 * Both copy into a receive buffer apart from the send buffer: a block is received into the
 * place of the block another GPU still has to be sent (in step k, block i-k arrives where
 * block i-k waits for step N-k), so an in-place all-to-all would need a block of scratch. */
#include "config.h"
#include "comm/algo.h"

#include <stdbool.h>
#include <string.h>

#include "base/error.h"
#include "comm/coll.h"
#include "sim/cluster.h"

static int mod(int a, int n)
{
    return ((a % n) + n) % n;
}

/* Block j of the send buffer (recv false) or of the receive buffer: count / n elements each,
 * or the blocks of struct coll's sendcounts / recvcounts, back to back; its bytes in *bytes. */
static char *block(const struct algo *a, bool recv, int j, size_t *bytes)
{
    char *base = recv ? a->recv : a->buf;
    const size_t *counts = recv ? a->recvcounts : a->sendcounts;
    if (!counts) {
        *bytes = a->count / (size_t)a->n * a->es;
        return base + (size_t)j * *bytes;
    }
    size_t off = 0;
    for (int i = 0; i < j; i++)
        off += counts[i];
    *bytes = counts[j] * a->es;
    return base + off * a->es;
}

/* Its own block, across. */
static void own_block(const struct algo *a)
{
    size_t sb, rb;
    char *from = block(a, false, a->rank, &sb), *to = block(a, true, a->rank, &rb);
    if (sb)
        memcpy(to, from, sb < rb ? sb : rb);
}

int a2a_pairwise(const struct algo *a, struct error *e)
{
    int n = a->n, r = a->rank;
    own_block(a);
    for (int k = 1; k < n; k++) {
        int to = mod(r + k, n), from = mod(r - k, n);
        struct dev_tag tag = {k - 1, to, a->phase, a->stream};
        size_t sb, rb;
        char *sp = block(a, false, to, &sb), *rp = block(a, true, from, &rb);
        int rc = algo_step(a, k - 1, e);
        if (!rc)
            rc = algo_sendrecv(a, to, sp, sb, from, rp, rb, &tag, NULL, NULL, e);
        if (rc)
            return rc;
    }
    return 0;
}

int a2a_direct(const struct algo *a, struct error *e)
{
    int n = a->n, r = a->rank, rc = algo_step(a, 0, e);
    struct dev_req req[CLUSTER_MAX_GPUS];
    int posted = 0;
    if (rc)
        return rc;
    own_block(a);
    /* the tag's chunk is the block: the one sent is the receiver's */
    for (int k = 1; k < n && !rc; k++, posted++) {
        int to = mod(r + k, n);
        struct dev_tag tag = {0, to, a->phase, a->stream};
        size_t sb;
        char *sp = block(a, false, to, &sb);
        rc = algo_isend(a, to, sp, sb, &tag, &req[posted], e);
    }
    for (int k = 1; k < n && !rc; k++) {
        int from = mod(r - k, n);
        struct dev_tag tag = {0, r, a->phase, a->stream};
        size_t rb;
        char *rp = block(a, true, from, &rb);
        rc = algo_recv(a, from, rp, rb, &tag, NULL, NULL, e);
    }
    /* every posted send is waited for, a failed run's too: its buffer is read until then */
    for (int i = 0; i < posted; i++) {
        struct error we = {0};
        int wrc = algo_wait(a, &req[i], rc ? &we : e);
        rc = rc ? rc : wrc;
    }
    return rc;
}
