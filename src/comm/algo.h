/* Private to comm/: the algorithms behind coll_run, one file per family (ring.c, rhd.c,
 * pipe.c, alltoall.c). Each is called by every device with the same arguments. */
#ifndef SCALELAB_COMM_ALGO_H
#define SCALELAB_COMM_ALGO_H

#include <stddef.h>

#include "num/fp.h"
#include "comm/xport.h"

struct error;

struct algo {
    const struct xport *x; /* the transport of this member */
    char *buf;
    char *recv;       /* all-to-all: where the blocks arrive (struct coll's recv) */
    size_t count, es; /* elements, bytes per element */
    enum fp_format dt;
    int n, rank, root;
    int chunks;             /* pipeline chunks (chains and trees) */
    int stream;             /* the device stream (dbtree also uses stream + 1) */
    const size_t *bounds;   /* NULL, or the n chunks' edges in elements (struct coll) */
    const int *group;       /* NULL, or the device ranks of the group, indexed 0..n-1 */
    dev_combine_fn combine; /* the reduction: reduce_sum or reduce_max (ctx: &dt) */
    const char *phase;      /* all-to-all: its sends' phase (struct coll's, or the default) */
    const size_t *sendcounts, *recvcounts; /* all-to-all: blocks' elements (NULL: count / n) */
};

/* Point-to-point between members of the algorithm's group: peers are group indices
 * (0..n-1), translated to device ranks. */
int algo_sendrecv(const struct algo *a, int to, const void *sbuf, size_t sbytes, int from,
                  void *rbuf, size_t rbytes, const struct dev_tag *tag, dev_combine_fn combine,
                  void *ctx, struct error *e);
int algo_isend(const struct algo *a, int peer, const void *buf, size_t bytes,
               const struct dev_tag *tag, struct dev_req *req, struct error *e);
int algo_recv(const struct algo *a, int peer, void *buf, size_t bytes, const struct dev_tag *tag,
              dev_combine_fn combine, void *ctx, struct error *e);

/* The member starts step `step` (--fail GPU@STEP); waits for a posted send. */
int algo_step(const struct algo *a, int step, struct error *e);
int algo_wait(const struct algo *a, struct dev_req *req, struct error *e);

/* Bytes offset and length of chunk i of n over the whole buffer. */
void algo_chunk(const struct algo *a, int n, int i, char **p, size_t *bytes);

/* ring.c */
int ring_reduce_scatter(const struct algo *a, int step0, struct error *e);
int ring_allgather(const struct algo *a, int step0, struct error *e);
int ring_allreduce(const struct algo *a, struct error *e);
int ring_broadcast(const struct algo *a, struct error *e); /* pipelined chain */
int ring_reduce(const struct algo *a, struct error *e);    /* pipelined chain */

/* rhd.c */
int rhd_allreduce(const struct algo *a, struct error *e);
int rhd_reduce_scatter(const struct algo *a, int step0, struct error *e); /* N = 2^k */
int rhd_allgather(const struct algo *a, int step0, struct error *e);      /* N = 2^k */

/* pipe.c: the pipelined binary trees */
int pipe_broadcast(const struct algo *a, struct error *e);
int pipe_reduce(const struct algo *a, struct error *e);
int pipe_allreduce(const struct algo *a, struct error *e);
int pipe_dbtree_allreduce(const struct algo *a, struct error *e);

/* alltoall.c: count a multiple of n, or blocks of sendcounts and recvcounts */
int a2a_pairwise(const struct algo *a, struct error *e);
int a2a_direct(const struct algo *a, struct error *e);

#endif
