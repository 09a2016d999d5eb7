/* The alpha-beta time of each collective and algorithm, and the choice among them
 * (comm/cost.h): pure functions, no threads. Under ThreadSanitizer this file is not instrumented
 * (Makefile.am's libpure): each entry point names what it reads and writes of its caller's
 * memory instead (base/race.h). */
#include "config.h"
#include "comm/cost.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "base/race.h"
#include "comm/tree.h"
#include "sim/port.h"

static const char *const op_names[COST_OP_COUNT] = {"allreduce", "reduce-scatter", "allgather",
                                                    "broadcast", "reduce",         "alltoall"};
static const char *const algo_names[COST_ALGO_COUNT] = {"ring", "tree",     "dbtree",
                                                        "rhd",  "pairwise", "direct"};

const char *cost_op_name(enum cost_op op)
{
    return op < COST_OP_COUNT ? op_names[op] : "?";
}

const char *cost_algo_name(enum cost_algo algo)
{
    return algo < COST_ALGO_COUNT ? algo_names[algo] : algo == COST_AUTO ? "auto" : "?";
}

int cost_parse_op(const char *s, enum cost_op *out, struct error *e)
{
    RACE_WRITE(out, sizeof *out);
    for (int i = 0; i < COST_OP_COUNT; i++)
        if (!strcmp(s, op_names[i])) {
            *out = (enum cost_op)i;
            return 0;
        }
    return error_set(e, ERR_INVAL,
                     "unknown collective '%s' (allreduce, reduce-scatter, allgather, broadcast, "
                     "reduce, alltoall)",
                     s);
}

int cost_parse_algo(const char *s, enum cost_algo *out, struct error *e)
{
    RACE_WRITE(out, sizeof *out);
    if (!strcmp(s, "auto")) {
        *out = COST_AUTO;
        return 0;
    }
    for (int i = 0; i < COST_ALGO_COUNT; i++)
        if (!strcmp(s, algo_names[i])) {
            *out = (enum cost_algo)i;
            return 0;
        }
    return error_set(e, ERR_INVAL,
                     "unknown algorithm '%s' (ring, tree, dbtree, rhd, pairwise, direct, auto)", s);
}

static bool is_pow2(int n)
{
    return n > 0 && (n & (n - 1)) == 0;
}

int cost_log2(int n)
{
    int k = 0;
    while (n > 1)
        n /= 2, k++;
    return k;
}

bool cost_supported(enum cost_op op, enum cost_algo algo, int n, struct error *e)
{
    switch (op) {
    case COST_ALLREDUCE:
        if (algo <= COST_RHD)
            return true;
        break;
    case COST_REDUCE_SCATTER:
    case COST_ALLGATHER:
        if (algo == COST_RING)
            return true;
        if (algo == COST_RHD) {
            if (is_pow2(n))
                return true;
            error_set(e, ERR_INVAL, "%s by rhd needs a power-of-two number of GPUs, not %d",
                      cost_op_name(op), n);
            return false;
        }
        error_set(e, ERR_INVAL, "%s runs by ring or rhd, not %s", cost_op_name(op),
                  cost_algo_name(algo));
        return false;
    case COST_BROADCAST:
    case COST_REDUCE:
        if (algo == COST_RING || algo == COST_TREE)
            return true;
        error_set(e, ERR_INVAL, "%s runs by ring (a pipelined chain) or tree, not %s",
                  cost_op_name(op), cost_algo_name(algo));
        return false;
    case COST_ALLTOALL:
        if (algo == COST_PAIRWISE || algo == COST_DIRECT)
            return true;
        error_set(e, ERR_INVAL, "alltoall runs by pairwise or direct, not %s",
                  cost_algo_name(algo));
        return false;
    default: break;
    }
    error_set(e, ERR_INVAL, "no algorithm '%s' for %s", cost_algo_name(algo), cost_op_name(op));
    return false;
}

void cost_link(const struct cost_net *net, double *alpha, double *beta)
{
    RACE_READ(net, sizeof *net);
    RACE_WRITE(alpha, sizeof *alpha);
    RACE_WRITE(beta, sizeof *beta);
    bool one_node = net->gpus <= net->gpus_per_node;
    *alpha = one_node ? net->alpha_intra : net->alpha_inter;
    *beta = one_node ? net->beta_intra : net->beta_inter;
}

double cost_p2p(const struct cost_net *net, int from, int to, double bytes)
{
    RACE_READ(net, sizeof *net);
    int g = net->gpus_per_node > 0 ? net->gpus_per_node : 1;
    bool same = from / g == to / g;
    return same ? net->alpha_intra + bytes / net->beta_intra
                : net->alpha_inter + bytes / net->beta_inter;
}

/* The busiest GPU's bytes in a tree collective: `up` bytes to its parent, `down` to each
 * child, in tree `which` (and with other, the second tree's up and down); *least the least
 * busy GPU's. */
static double tree_max_bytes(int n, int which, int root, double up, double down,
                             const double *other, double *least)
{
    double max = 0, min = INFINITY;
    for (int r = 0; r < n; r++) {
        struct tree_node t;
        tree_node(n, which, root, r, &t);
        double b = (t.parent >= 0 ? up : 0) + t.nchild * down;
        if (other) {
            tree_node(n, 1, -1, r, &t);
            b += (t.parent >= 0 ? other[0] : 0) + t.nchild * other[1];
        }
        max = b > max ? b : max;
        min = b < min ? b : min;
    }
    *least = min;
    return max;
}

/* ---- the schedule: the simulator's timing rules, replayed without threads ----
 *
 * The trees, the chain and recursive halving/doubling are timed by running their programs
 * (src/comm/pipe.c, ring.c, rhd.c) through the simulator's rules (src/sim/cluster.h): a
 * send of m bytes on a stream is ready at that stream's clock, books the sender's one port
 * for α + m/β from the earliest moment it is free that long, and arrives when it ends; α and
 * β are the link's own (inside a node or between nodes); a receive takes the first message
 * from that peer and moves its stream's clock to the arrival; waiting for a send moves the
 * stream's clock to its arrival. So the time predicted is the time simulated, whatever the
 * tree's shape (inner nodes with one child) and wherever the node boundaries fall, and one
 * model serves the simulation's check, the window, the sweep and the lessons. Chunks are
 * S/P bytes (the simulation rounds them to whole elements). */
enum { SOP_SEND, SOP_RECV, SOP_WAIT, SOP_SYNC };

struct sop {
    unsigned char kind, stream;
    int peer;
    double bytes;
};

struct smsg {
    int from;
    bool taken;
    int next;       /* 1 + the index of the next message from the same sender (0: none) */
    double arrival; /* a free link's; once taken, the one it got */
    double cross;   /* m/β: its bytes on the receiver's incoming link */
};

struct spend { /* a send not yet waited for: its receiver, its inbox index, its stream */
    int to, msg, stream;
};

struct sdev {
    struct sop *ops;
    int nops, cap, pc;
    double clock[2];
    struct spend *pend;
    int npend, cappend;
    struct smsg *inbox;
    int ninbox, capinbox;
    int *head, *tail; /* per sender: 1 + the index of its first untaken and last message */
    struct port_busy *port, *inport;
    int nport, capport, ninport, capinport;
};

struct sched {
    const struct cost_net *net;
    int n;
    struct sdev *d;
    bool nomem;
    double *arrived; /* every message's arrival, when counting rounds (else NULL) */
    int narrived, caparrived;
    int *links; /* the devices' head and tail arrays, n x 2n */
};

static void *grow(void *p, int *cap, int need, size_t size, bool *nomem)
{
    if (need <= *cap)
        return p;
    int c = *cap ? *cap * 2 : 16;
    while (c < need)
        c *= 2;
    void *q = realloc(p, (size_t)c * size);
    if (!q) {
        *nomem = true;
        return NULL;
    }
    *cap = c;
    return q;
}

static void emit(struct sched *s, int rank, int kind, int stream, int peer, double bytes)
{
    struct sdev *d = &s->d[rank];
    struct sop *ops = grow(d->ops, &d->cap, d->nops + 1, sizeof *ops, &s->nomem);
    if (!ops)
        return;
    d->ops = ops;
    d->ops[d->nops++] = (struct sop){(unsigned char)kind, (unsigned char)stream, peer, bytes};
}

static double link_time(const struct cost_net *net, int from, int to, double bytes)
{
    return cost_p2p(net, from, to, bytes);
}

/* m/β over the link between two GPUs. */
static double link_cross(const struct cost_net *net, int from, int to, double bytes)
{
    return cost_p2p(net, from, to, bytes) - cost_p2p(net, from, to, 0);
}

/* Books a port as the simulator does (sim/port.h). An interval that starts where the one
 * before it ends is merged into it: the same busy time, so the same answers, and a port that
 * sends N-1 messages back to back (the direct all-to-all) keeps one interval, not N-1 to scan
 * on every booking. */
static double port_book(struct sched *s, struct port_busy **busy, int *n, int *cap, double ready,
                        double dur)
{
    int i;
    double t = port_earliest(*busy, *n, ready, dur, &i);
    if (i > 0 && (*busy)[i - 1].t1 == t && (i == *n || t + dur < (*busy)[i].t0)) {
        (*busy)[i - 1].t1 = t + dur;
        return t;
    }
    struct port_busy *p = grow(*busy, cap, *n + 1, sizeof *p, &s->nomem);
    if (!p)
        return t;
    *busy = p;
    memmove(p + i + 1, p + i, (size_t)(*n - i) * sizeof *p);
    p[i] = (struct port_busy){t, t + dur, 0};
    (*n)++;
    return t;
}

/* Runs one op of GPU r; false when it is a receive whose message has not been sent yet. */
static bool step_op(struct sched *s, int r)
{
    struct sdev *d = &s->d[r];
    const struct sop *o = &d->ops[d->pc];
    switch (o->kind) {
    case SOP_SEND: {
        struct sdev *to = &s->d[o->peer];
        double dur = link_time(s->net, r, o->peer, o->bytes);
        double t = port_book(s, &d->port, &d->nport, &d->capport, d->clock[o->stream], dur);
        struct smsg *m = grow(to->inbox, &to->capinbox, to->ninbox + 1, sizeof *m, &s->nomem);
        struct spend *pd = grow(d->pend, &d->cappend, d->npend + 1, sizeof *pd, &s->nomem);
        if (!m || !pd)
            return true;
        to->inbox = m, d->pend = pd;
        int k = to->ninbox++;
        to->inbox[k] =
            (struct smsg){r, false, 0, t + dur, link_cross(s->net, r, o->peer, o->bytes)};
        if (to->tail[r])
            to->inbox[to->tail[r] - 1].next = k + 1;
        else
            to->head[r] = k + 1;
        to->tail[r] = k + 1;
        d->pend[d->npend++] = (struct spend){o->peer, k, o->stream};
        break;
    }
    case SOP_RECV: {
        if (!d->head[o->peer])
            return false;
        int i = d->head[o->peer] - 1;
        struct smsg *m = &d->inbox[i];
        m->taken = true;
        d->head[o->peer] = m->next;
        if (!m->next)
            d->tail[o->peer] = 0;
        /* the incoming link carries one message's bytes at a time, in the order taken */
        if (m->cross > 0)
            m->arrival = port_book(s, &d->inport, &d->ninport, &d->capinport, m->arrival - m->cross,
                                   m->cross) +
                         m->cross;
        if (s->arrived) {
            double *a = grow(s->arrived, &s->caparrived, s->narrived + 1, sizeof *a, &s->nomem);
            if (!a)
                return true;
            s->arrived = a;
            s->arrived[s->narrived++] = m->arrival;
        }
        if (m->arrival > d->clock[o->stream])
            d->clock[o->stream] = m->arrival;
        break;
    }
    case SOP_WAIT: /* as dev_wait: until the receivers have taken them */
        for (int i = 0; i < d->npend; i++)
            if (!s->d[d->pend[i].to].inbox[d->pend[i].msg].taken)
                return false;
        for (int i = 0; i < d->npend; i++) {
            double a = s->d[d->pend[i].to].inbox[d->pend[i].msg].arrival;
            if (a > d->clock[d->pend[i].stream])
                d->clock[d->pend[i].stream] = a;
        }
        d->npend = 0;
        break;
    default: { /* SOP_SYNC */
        double t = d->clock[0] > d->clock[1] ? d->clock[0] : d->clock[1];
        d->clock[0] = d->clock[1] = t;
    }
    }
    d->pc++;
    return true;
}

/* Runs every GPU's program to its end; the latest clock, or NAN (out of memory, a bug). */
static double sched_run(struct sched *s)
{
    bool more = true, moved = true;
    while (more && moved && !s->nomem) {
        more = moved = false;
        for (int r = 0; r < s->n && !s->nomem; r++) {
            struct sdev *d = &s->d[r];
            while (d->pc < d->nops && step_op(s, r))
                moved = true;
            more |= d->pc < d->nops;
        }
    }
    double t = 0;
    for (int r = 0; r < s->n; r++)
        for (int k = 0; k < 2; k++)
            if (s->d[r].clock[k] > t)
                t = s->d[r].clock[k];
    return s->nomem || more ? NAN : t;
}

/* The pipelined trees of src/comm/pipe.c: ntrees trees (1, or 2 for the double binary tree,
 * on streams 0 and 1), chunks of `chunk` bytes; reduce and/or broadcast. */
static void prog_trees(struct sched *s, int ntrees, int root, int P, double chunk, bool up,
                       bool down)
{
    for (int r = 0; r < s->n; r++) {
        struct tree_node t[2];
        for (int i = 0; i < ntrees; i++)
            tree_node(s->n, i, ntrees == 1 ? root : -1, r, &t[i]);
        for (int phase = 0; phase < 2; phase++) {
            if (phase == 0 ? !up : !down)
                continue;
            for (int k = 0; k < P; k++) {
                for (int i = 0; i < ntrees; i++) {
                    if (phase == 0) {
                        for (int c = 0; c < 2; c++)
                            if (t[i].child[c] >= 0)
                                emit(s, r, SOP_RECV, i, t[i].child[c], 0);
                        if (t[i].parent >= 0)
                            emit(s, r, SOP_SEND, i, t[i].parent, chunk);
                    } else {
                        if (t[i].parent >= 0)
                            emit(s, r, SOP_RECV, i, t[i].parent, 0);
                        for (int c = 0; c < 2; c++)
                            if (t[i].child[c] >= 0)
                                emit(s, r, SOP_SEND, i, t[i].child[c], chunk);
                    }
                }
                emit(s, r, SOP_WAIT, 0, 0, 0);
            }
        }
        if (ntrees == 2)
            emit(s, r, SOP_SYNC, 0, 0, 0);
    }
}

/* src/comm/ring.c's pipelined chain from GPU 0 (broadcast) or to it (reduce). */
static void prog_chain(struct sched *s, int P, double chunk, bool reduce)
{
    for (int r = 0; r < s->n; r++) {
        int from = reduce ? r + 1 : r - 1, to = reduce ? r - 1 : r + 1;
        for (int k = 0; k < P; k++) {
            if (from >= 0 && from < s->n)
                emit(s, r, SOP_RECV, 0, from, 0);
            if (to >= 0 && to < s->n) {
                emit(s, r, SOP_SEND, 0, to, chunk);
                emit(s, r, SOP_WAIT, 0, 0, 0);
            }
        }
    }
}

/* The GPU that plays number i among the 2^k of recursive halving/doubling (rhd.c's real[]). */
static int rhd_real(int i, int rem)
{
    return i < rem ? 2 * i + 1 : i + rem;
}

static void exchange(struct sched *s, int r, int peer, double bytes)
{
    emit(s, r, SOP_SEND, 0, peer, bytes);
    emit(s, r, SOP_RECV, 0, peer, 0);
    emit(s, r, SOP_WAIT, 0, 0, 0);
}

/* src/comm/rhd.c: fold in (N not a power of two), halving, doubling, fold out. */
static void prog_rhd(struct sched *s, double S, bool halve, bool dbl)
{
    int n = s->n, k = cost_log2(n), np = 1 << k, rem = n - np;
    for (int r = 0; r < n; r++) {
        bool extra = r < 2 * rem && r % 2 == 0;
        int me = r < 2 * rem ? r / 2 : r - rem;
        if (rem > 0 && extra) {
            emit(s, r, SOP_SEND, 0, r + 1, S);
            emit(s, r, SOP_WAIT, 0, 0, 0);
        } else if (rem > 0 && r < 2 * rem) {
            emit(s, r, SOP_RECV, 0, r - 1, 0);
        }
        if (!extra) {
            for (int d = np / 2; halve && d >= 1; d /= 2)
                exchange(s, r, rhd_real(me ^ d, rem), S * d / np);
            for (int d = 1; dbl && d < np; d *= 2)
                exchange(s, r, rhd_real(me ^ d, rem), S * d / np);
        }
        if (rem > 0 && extra) {
            emit(s, r, SOP_RECV, 0, r + 1, 0);
        } else if (rem > 0 && r < 2 * rem) {
            emit(s, r, SOP_SEND, 0, r - 1, S);
            emit(s, r, SOP_WAIT, 0, 0, 0);
        }
    }
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The moments at which the n messages arrived (times within 1e-9 of each other are one). */
static int distinct_moments(double *t, int n)
{
    qsort(t, (size_t)n, sizeof *t, cmp_double);
    int u = 0;
    for (int i = 0; i < n; i++)
        if (u == 0 || t[i] > t[u - 1] * (1 + 1e-9))
            t[u++] = t[i];
    return u;
}

/* src/comm/alltoall.c: blocks of `block` bytes; pairwise, N-1 exchanges (step k: send to
 * r + k, receive from r - k, wait); direct, every send posted in that order, then the
 * receives, then one wait for all the sends. */
static void prog_alltoall(struct sched *s, double block, bool direct)
{
    int n = s->n;
    for (int r = 0; r < n; r++) {
        for (int k = 1; k < n; k++) {
            emit(s, r, SOP_SEND, 0, (r + k) % n, block);
            if (!direct) {
                emit(s, r, SOP_RECV, 0, (r - k + n) % n, 0);
                emit(s, r, SOP_WAIT, 0, 0, 0);
            }
        }
        for (int k = 1; k < n && direct; k++)
            emit(s, r, SOP_RECV, 0, (r - k + n) % n, 0);
        if (direct)
            emit(s, r, SOP_WAIT, 0, 0, 0);
    }
}

/* The simulated time of op by algo (not the ring's reduce-scatter, all-gather and
 * all-reduce, whose formula is already exact) with P chunks; NAN when out of memory. With
 * rounds, the moments at which its messages arrive (cost_result.rounds). */
static double sched_time_rounds(enum cost_op op, enum cost_algo algo, const struct cost_net *net,
                                double S, int P, int *rounds)
{
    int n = net->gpus;
    struct sched s = {net, n, calloc((size_t)n, sizeof(struct sdev)),        false, NULL,
                      0,   0, calloc((size_t)n * 2 * (size_t)n, sizeof(int))};
    if (!s.d || !s.links) {
        free(s.d);
        free(s.links);
        return NAN;
    }
    for (int r = 0; r < n; r++) /* calloc'd zeros: pages a sparse program never touches */
        s.d[r].head = s.links + (size_t)r * 2 * n, s.d[r].tail = s.d[r].head + n;
    if (rounds && !(s.arrived = malloc(16 * sizeof *s.arrived)))
        s.nomem = true;
    s.caparrived = 16;
    bool ar = op == COST_ALLREDUCE;
    if (op == COST_ALLTOALL)
        prog_alltoall(&s, S / n, algo == COST_DIRECT);
    else if (algo == COST_RHD)
        prog_rhd(&s, S, ar || op == COST_REDUCE_SCATTER, ar || op == COST_ALLGATHER);
    else if (algo == COST_RING)
        prog_chain(&s, P, S / P, op == COST_REDUCE);
    else if (algo == COST_DBTREE)
        prog_trees(&s, 2, -1, P, S / 2 / P, true, true);
    else
        prog_trees(&s, 1, ar ? -1 : 0, P, S / P, op != COST_BROADCAST, op != COST_REDUCE);
    double t = sched_run(&s);
    if (rounds)
        *rounds = isnan(t) ? -1 : distinct_moments(s.arrived, s.narrived);
    free(s.arrived);
    for (int r = 0; r < s.n; r++) {
        free(s.d[r].ops);
        free(s.d[r].pend);
        free(s.d[r].inbox);
        free(s.d[r].port);
        free(s.d[r].inport);
    }
    free(s.links);
    free(s.d);
    return t;
}

static double sched_time(enum cost_op op, enum cost_algo algo, const struct cost_net *net, double S,
                         int P)
{
    return sched_time_rounds(op, algo, net, S, P, NULL);
}

/* Whether op by algo is pipelined in chunks: the chain (the ring's broadcast and reduce) and
 * the trees. */
static bool pipelined(enum cost_op op, enum cost_algo algo)
{
    return algo == COST_TREE || algo == COST_DBTREE ||
           (algo == COST_RING && (op == COST_BROADCAST || op == COST_REDUCE));
}

/* One cycle of the pipeline with chunks of m bytes on net: two chunks' time less one's. */
static double pace(enum cost_op op, enum cost_algo algo, const struct cost_net *net, double m)
{
    return sched_time(op, algo, net, 2 * m, 2) - sched_time(op, algo, net, m, 1);
}

int cost_pipe_formula(enum cost_op op, enum cost_algo algo, const struct cost_net *net,
                      double bytes, struct cost_pipe *out)
{
    RACE_READ(net, sizeof *net);
    RACE_WRITE(out, sizeof *out);
    memset(out, 0, sizeof *out);
    if (!pipelined(op, algo) || net->gpus < 2 || !(bytes >= 0))
        return ERR_INVAL;
    struct cost_net free_alpha = *net, small_alpha = *net;
    free_alpha.alpha_intra = free_alpha.alpha_inter = 0;
    /* the fill: one chunk through, its latencies and its bytes */
    out->fill_lat = sched_time(op, algo, net, 0, 1);
    out->fill_bw = sched_time(op, algo, &free_alpha, bytes, 1);
    /* the cycle the latencies set: with no bytes, and its bytes' share from chunks of a
     * thousandth of the smallest α β (the latencies still set the pace) */
    double ab = fmin(net->alpha_intra * net->beta_intra, net->alpha_inter * net->beta_inter);
    double m = 1e-3 * ab;
    out->lat_pace_lat = pace(op, algo, net, 0);
    if (bytes > 0 && m > 0)
        out->lat_pace_bw = (pace(op, algo, net, m) - out->lat_pace_lat) / m * bytes;
    /* the cycle the bytes set: with α = 0, and its latencies' share from an α a thousandth of
     * a chunk's time (the bytes still set the pace) */
    out->bw_pace_bw = pace(op, algo, &free_alpha, bytes);
    double eps = net->alpha_intra > 0 ? 1e-3 * (bytes / net->beta_intra) / net->alpha_intra : 0;
    if (bytes > 0 && eps > 0) {
        small_alpha.alpha_intra *= eps, small_alpha.alpha_inter *= eps;
        out->bw_pace_lat = (pace(op, algo, &small_alpha, bytes) - out->bw_pace_bw) / eps;
    } else /* no bytes: one cycle, the latencies' */
        out->bw_pace_lat = out->lat_pace_lat, out->bw_pace_bw = out->lat_pace_bw;
    double all[] = {out->fill_lat,    out->fill_bw,     out->lat_pace_lat,
                    out->lat_pace_bw, out->bw_pace_lat, out->bw_pace_bw};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++)
        if (isnan(all[i]))
            return ERR_NOMEM;
    return 0;
}

double cost_schedule_time(enum cost_op op, enum cost_algo algo, const struct cost_net *net,
                          double bytes, int chunks)
{
    RACE_READ(net, sizeof *net);
    bool replayed = algo == COST_RHD || op == COST_ALLTOALL || pipelined(op, algo);
    if (!replayed || !cost_supported(op, algo, net->gpus, NULL) || chunks < 1 || net->gpus < 1)
        return NAN;
    return sched_time(op, algo, net, bytes, chunks);
}

double cost_pipe_time(const struct cost_pipe *f, int chunks)
{
    RACE_READ(f, sizeof *f);
    double P = chunks;
    return f->fill_lat + f->fill_bw / P +
           (P - 1) * fmax(f->lat_pace_lat + f->lat_pace_bw / P, f->bw_pace_lat + f->bw_pace_bw / P);
}

int cost_chunks(enum cost_op op, enum cost_algo algo, const struct cost_net *net, double bytes)
{
    RACE_READ(net, sizeof *net);
    /* the start: the least of the schedule's latencies (no bytes), a P + b, plus its bytes
     * (α = 0), c + d / P, at P* = sqrt(d / a): a bound of the schedule for the trees whose
     * cycles are more than two (cost_pipe_formula's are exact for two), and as good a start */
    if (!pipelined(op, algo) || net->gpus < 2 || !(bytes >= 0))
        return 1;
    struct cost_net free_alpha = *net;
    free_alpha.alpha_intra = free_alpha.alpha_inter = 0;
    double lat = sched_time(op, algo, net, 0, 2) - sched_time(op, algo, net, 0, 1);
    double split = 2 * (sched_time(op, algo, &free_alpha, bytes, 1) -
                        sched_time(op, algo, &free_alpha, bytes, 2));
    if (!(split > 0))
        return 1;
    if (!(lat > 0))
        return COST_MAX_CHUNKS;
    double pstar = sqrt(split / lat);
    int p = !(pstar < COST_MAX_CHUNKS) ? COST_MAX_CHUNKS : pstar < 1 ? 1 : (int)lround(pstar);
    /* the formula bounds the schedule, which decides: from P*, towards fewer or more chunks
     * while the replayed time falls */
    double t = sched_time(op, algo, net, bytes, p);
    double down = p > 1 ? sched_time(op, algo, net, bytes, p - 1) : INFINITY;
    int dir = down < t ? -1 : 1;
    if (dir < 0)
        p--, t = down;
    for (int q = p + dir; q >= 1 && q <= COST_MAX_CHUNKS; q += dir) {
        double tq = sched_time(op, algo, net, bytes, q);
        if (!(tq < t))
            break;
        p = q, t = tq;
    }
    return p;
}

/* The closed formulas of algo's op on n > 1 GPUs over one link of latency a and bandwidth b:
 * its steps, chunks, time and bytes into out. 0, or ERR_INVAL for no such algorithm. */
static int closed_form(enum cost_op op, enum cost_algo algo, const struct cost_net *net, double S,
                       double a, double b, struct cost_result *out, struct error *e)
{
    int n = net->gpus;
    double N = n;
    int D = cost_log2(n), P;
    bool reduce_all = op == COST_ALLREDUCE;
    switch (algo) {
    case COST_RING:
        if (op == COST_BROADCAST || op == COST_REDUCE) {
            P = cost_chunks(op, algo, net, S);
            out->chunks = P;
            out->steps = P + n - 2;
            out->time_s = out->steps * (a + S / P / b);
            out->bytes_total = (N - 1) * S;
            out->bytes_max_per_gpu = S;
        } else {
            int k = reduce_all ? 2 : 1;
            out->steps = k * (n - 1);
            out->time_s = k * (N - 1) * a + k * (N - 1) / N * S / b;
            out->bytes_total = k * (N - 1) * S;
            out->bytes_max_per_gpu = k * (N - 1) / N * S;
        }
        break;
    case COST_RHD: {
        int k = reduce_all ? 2 : 1;
        double np = 1 << D;
        out->steps = k * D;
        out->time_s = k * D * a + k * (np - 1) / np * S / b;
        out->bytes_total = k * (np - 1) * S;
        out->bytes_max_per_gpu = k * (np - 1) / np * S;
        if (n != (1 << D)) { /* fold in, fold out (all-reduce only) */
            double r = N - np;
            out->steps += 2;
            out->time_s += 2 * (a + S / b);
            out->bytes_total += 2 * r * S;
            out->bytes_max_per_gpu += S;
        }
        break;
    }
    case COST_TREE: {
        int fan = n == 2 ? 1 : 2; /* sends per chunk of an inner node; 2 GPUs are a chain */
        P = cost_chunks(op, algo, net, S);
        out->chunks = P;
        if (op == COST_BROADCAST) {
            out->steps = fan * (P + D - 1);
            out->bytes_max_per_gpu = tree_max_bytes(n, 0, 0, 0, S, NULL, &out->bytes_min_per_gpu);
        } else if (op == COST_REDUCE) {
            out->steps = P + D - 1;
            out->bytes_max_per_gpu = S;
        } else {
            out->steps = (1 + fan) * (P + D - 1);
            out->bytes_max_per_gpu = tree_max_bytes(n, 0, -1, S, S, NULL, &out->bytes_min_per_gpu);
        }
        out->time_s = out->steps * (a + S / P / b);
        out->bytes_total = (reduce_all ? 2 : 1) * (N - 1) * S;
        break;
    }
    case COST_DBTREE: {
        P = cost_chunks(op, algo, net, S);
        out->chunks = P;
        out->steps = (n == 2 ? 2 : 4) * (P + D - 1);
        out->time_s = out->steps * (a + S / 2 / P / b);
        out->bytes_total = 2 * (N - 1) * S;
        double half[2] = {S / 2, S / 2};
        out->bytes_max_per_gpu =
            tree_max_bytes(n, 0, -1, S / 2, S / 2, half, &out->bytes_min_per_gpu);
        break;
    }
    case COST_PAIRWISE:
    case COST_DIRECT: /* N-1 blocks of S/N, one after the other through the port */
        out->steps = n - 1;
        out->time_s = (N - 1) * (a + S / N / b);
        out->bytes_total = (N - 1) * S;
        out->bytes_max_per_gpu = (N - 1) / N * S;
        break;
    default: return error_set(e, ERR_INVAL, "no such algorithm");
    }
    return 0;
}

int cost_collective(enum cost_op op, enum cost_algo algo, const struct cost_net *net, double bytes,
                    struct cost_result *out, struct error *e)
{
    RACE_READ(net, sizeof *net);
    RACE_WRITE(out, sizeof *out);
    memset(out, 0, sizeof *out);
    int n = net->gpus;
    if (n < 1 || net->gpus_per_node < 1)
        return error_set(e, ERR_INVAL, "the cost model needs at least one GPU and one per node");
    if (!(bytes >= 0))
        return error_set(e, ERR_INVAL, "the size must be a number of bytes >= 0");
    if (!(net->beta_intra > 0 && net->beta_inter > 0 && net->alpha_intra >= 0 &&
          net->alpha_inter >= 0))
        return error_set(e, ERR_INVAL, "the cost model needs α >= 0 and β > 0");
    if (algo == COST_AUTO)
        algo = cost_best_algo(op, net, bytes);
    if (!cost_supported(op, algo, n, e))
        return ERR_INVAL;
    double a, b;
    cost_link(net, &a, &b);
    out->alpha = a, out->beta = b, out->chunks = 1;
    if (n == 1)
        return 0;
    double S = bytes;
    int rc = closed_form(op, algo, net, S, a, b, out, e);
    if (rc)
        return rc;
    /* The closed formulas above hold for full trees on one node; the schedule is the time
     * the simulation takes, for every shape and across nodes. */
    bool ring_coll = algo == COST_RING && op != COST_BROADCAST && op != COST_REDUCE;
    out->rounds = out->steps; /* the ring's steps run in lockstep */
    if (algo != COST_TREE && algo != COST_DBTREE)
        out->bytes_min_per_gpu = out->bytes_max_per_gpu;
    if (!ring_coll) {
        int rounds;
        double t = sched_time_rounds(op, algo, net, S, out->chunks, &rounds);
        if (!isnan(t))
            out->time_s = t, out->rounds = rounds;
    }
    return 0;
}

enum cost_algo cost_best_algo(enum cost_op op, const struct cost_net *net, double bytes)
{
    RACE_READ(net, sizeof *net);
    enum cost_algo best = COST_RING;
    double best_t = INFINITY;
    for (int i = 0; i < COST_ALGO_COUNT; i++) {
        struct cost_result r;
        if (!cost_supported(op, (enum cost_algo)i, net->gpus, NULL))
            continue;
        if (cost_collective(op, (enum cost_algo)i, net, bytes, &r, NULL) == 0 && r.time_s < best_t)
            best = (enum cost_algo)i, best_t = r.time_s;
    }
    return best;
}

static double diff(enum cost_op op, enum cost_algo a, enum cost_algo b, const struct cost_net *net,
                   double bytes)
{
    struct cost_result ra, rb;
    if (cost_collective(op, a, net, bytes, &ra, NULL) ||
        cost_collective(op, b, net, bytes, &rb, NULL))
        return NAN;
    return ra.time_s - rb.time_s;
}

double cost_crossover(enum cost_op op, enum cost_algo a, enum cost_algo b,
                      const struct cost_net *net, double lo, double hi)
{
    RACE_READ(net, sizeof *net);
    if (!(lo > 0 && hi > lo))
        return -1;
    double step = pow(2, 1.0 / 32), x0 = lo, d0 = diff(op, a, b, net, lo);
    if (isnan(d0))
        return -1;
    for (double x1 = lo * step; x0 < hi; x0 = x1, x1 *= step) {
        if (x1 > hi)
            x1 = hi;
        double d1 = diff(op, a, b, net, x1);
        if ((d0 < 0) != (d1 < 0)) { /* the pipelines' chunk counts make t a step function:
                                        bisect on the sign, not on a root */
            double l = x0, h = x1;
            while (h - l > 1e-6 * h) {
                double m = (l + h) / 2;
                if ((diff(op, a, b, net, m) < 0) == (d0 < 0))
                    l = m;
                else
                    h = m;
            }
            return (l + h) / 2;
        }
        d0 = d1;
    }
    return -1;
}

double cost_busbw_factor(enum cost_op op, int n)
{
    switch (op) {
    case COST_ALLREDUCE: return 2.0 * (n - 1) / n;
    case COST_REDUCE_SCATTER:
    case COST_ALLGATHER:
    case COST_ALLTOALL: return (double)(n - 1) / n;
    default: return 1.0;
    }
}

double cost_algbw(double bytes, double time_s)
{
    return time_s > 0 ? bytes / time_s : 0;
}
