/* Ring collectives (Patarasuk and Yuan, "Bandwidth optimal all-reduce algorithms for clusters
 * of workstations", JPDC 2009) and the pipelined chain for broadcast and reduce.
 *
 * Ring reduce-scatter: in step s (0 <= s < N-1) GPU r sends chunk (r-s-1) mod N to GPU r+1 and
 * receives chunk (r-s-2) mod N from GPU r-1, adding it into its own copy. The chunk GPU r
 * sends in step s is the one it received in step s-1, so after N-1 steps the chunk it last
 * received, (r-N) mod N = r, holds the sum of all N contributions: GPU r owns chunk r.
 * All-gather then passes the finished chunks on: in step s GPU r sends chunk (r-s) mod N and
 * receives chunk (r-s-1) mod N, a plain copy, so every GPU ends with the owners' bits.
 * Each GPU sends N-1 chunks per phase: (N-1)/N of the buffer, up to one element. */
#include "config.h"
#include "comm/algo.h"

#include "base/error.h"
#include "comm/reduce.h"

static int mod(int a, int n)
{
    return ((a % n) + n) % n;
}

int ring_reduce_scatter(const struct algo *a, int step0, struct error *e)
{
    int n = a->n, r = a->rank, next = mod(r + 1, n), prev = mod(r - 1, n);
    enum fp_format dt = a->dt;
    for (int s = 0; s < n - 1; s++) {
        int sc = mod(r - s - 1, n), rc = mod(r - s - 2, n);
        char *sp, *rp;
        size_t sb, rb;
        algo_chunk(a, n, sc, &sp, &sb);
        algo_chunk(a, n, rc, &rp, &rb);
        struct dev_tag tag = {step0 + s, sc, "reduce-scatter", a->stream};
        int rc2 = algo_step(a, step0 + s, e);
        if (!rc2)
            rc2 = algo_sendrecv(a, next, sp, sb, prev, rp, rb, &tag, a->combine, &dt, e);
        if (rc2)
            return rc2;
    }
    return 0;
}

int ring_allgather(const struct algo *a, int step0, struct error *e)
{
    int n = a->n, r = a->rank, next = mod(r + 1, n), prev = mod(r - 1, n);
    for (int s = 0; s < n - 1; s++) {
        int sc = mod(r - s, n), rc = mod(r - s - 1, n);
        char *sp, *rp;
        size_t sb, rb;
        algo_chunk(a, n, sc, &sp, &sb);
        algo_chunk(a, n, rc, &rp, &rb);
        struct dev_tag tag = {step0 + s, sc, "all-gather", a->stream};
        int rc2 = algo_step(a, step0 + s, e);
        if (!rc2)
            rc2 = algo_sendrecv(a, next, sp, sb, prev, rp, rb, &tag, NULL, NULL, e);
        if (rc2)
            return rc2;
    }
    return 0;
}

int ring_allreduce(const struct algo *a, struct error *e)
{
    int rc = ring_reduce_scatter(a, 0, e);
    return rc ? rc : ring_allgather(a, a->n - 1, e);
}

/* The chain: position v = (rank - root) mod N; data flows 0 -> 1 -> ... -> N-1 (broadcast)
 * or N-1 -> ... -> 0 (reduce), in a->chunks pipeline chunks. A GPU forwards chunk k as soon as
 * it has it; its one port sends chunk k before chunk k+1. */
static int chain(const struct algo *a, bool reduce, struct error *e)
{
    int n = a->n, v = mod(a->rank - a->root, n);
    int up = reduce ? v + 1 : v - 1;   /* where chunks come from */
    int down = reduce ? v - 1 : v + 1; /* where they go */
    bool has_up = up >= 0 && up < n, has_down = down >= 0 && down < n;
    int from = mod(up + a->root, n), to = mod(down + a->root, n);
    enum fp_format dt = a->dt;
    const char *phase = reduce ? "reduce" : "broadcast";
    for (int k = 0; k < a->chunks; k++) {
        char *p;
        size_t b;
        algo_chunk(a, a->chunks, k, &p, &b);
        struct dev_tag tag = {k, k, phase, a->stream};
        int rc = algo_step(a, k, e);
        if (!rc && has_up)
            rc = algo_recv(a, from, p, b, &tag, reduce ? a->combine : NULL, &dt, e);
        if (!rc && has_down) {
            struct dev_req req;
            rc = algo_isend(a, to, p, b, &tag, &req, e);
            if (!rc)
                rc = algo_wait(a, &req, e);
        }
        if (rc)
            return rc;
    }
    return 0;
}

int ring_broadcast(const struct algo *a, struct error *e)
{
    return chain(a, false, e);
}

int ring_reduce(const struct algo *a, struct error *e)
{
    return chain(a, true, e);
}
