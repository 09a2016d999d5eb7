/* Lesson 3's run, made on a job's thread (ui/collrun.h). */
#include "config.h"
#include "ui/collrun.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "comm/coll.h"
#include "comm/trial.h"
#include "sim/cluster.h"

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* A tree's panel steps are its pipeline's stages: the sends that arrive at the same moment
 * form one step (a level of the reduce, one child of a level of the broadcast), in the order
 * of time, which respects every dependency. */
static void stage_steps(struct coll_run *p)
{
    double *t = malloc((size_t)(p->nhops ? p->nhops : 1) * sizeof *t);
    if (!t)
        return;
    for (int i = 0; i < p->nhops; i++)
        t[i] = p->hops[i].t_end;
    qsort(t, (size_t)p->nhops, sizeof *t, cmp_double);
    int u = 0;
    for (int i = 0; i < p->nhops; i++)
        if (u == 0 || t[i] > t[u - 1] * (1 + 1e-9))
            t[u++] = t[i];
    for (int i = 0; i < p->nhops; i++) {
        int lo = 0, hi = u - 1;
        while (lo < hi) { /* the last stage at or before this hop's arrival */
            int mid = (lo + hi + 1) / 2;
            if (t[mid] <= p->hops[i].t_end * (1 + 1e-9))
                lo = mid;
            else
                hi = mid - 1;
        }
        p->hops[i].step = lo;
    }
    p->nsteps = u;
    free(t);
}

/* The plot's grid: size j of COLLRUN_PLOT_GRID, 1 KiB to 1 GiB evenly on a log axis. */
static double grid_size(int j)
{
    return COLLRUN_PLOT_LO *
           pow(COLLRUN_PLOT_HI / COLLRUN_PLOT_LO, (double)j / (COLLRUN_PLOT_GRID - 1));
}

void collrun_plot_algos(enum cost_op op, enum cost_algo a[2])
{
    a[0] = op == COST_ALLTOALL ? COST_PAIRWISE : COST_RING;
    a[1] = op == COST_ALLTOALL ? COST_DIRECT : COST_TREE;
}

size_t collrun_real_count(const struct coll_settings *s, bool *scaled)
{
    *scaled = !(s->size <= COLLRUN_REAL_MAX && fmod(s->size, 4) == 0 && s->size >= 4 &&
                (s->op != COST_ALLTOALL || fmod(s->size / 4, s->gpus) == 0));
    return *scaled ? (size_t)s->gpus * 256 : (size_t)(s->size / 4);
}

/* The plot's curves and the crossover for p's op, GPUs and cluster, unless p goes stale. */
static void make_curves(struct coll_run *p, const struct cost_net *net)
{
    enum cost_algo pa[2];
    collrun_plot_algos(p->s.op, pa);
    p->crossover = cost_crossover(p->s.op, pa[0], pa[1], net, 1024, 1e12);
    int j = 0;
    for (; j < COLLRUN_PLOT_GRID && !atomic_load(&p->stale); j++) {
        struct cost_result r;
        cost_collective(p->s.op, pa[0], net, grid_size(j), &r, NULL);
        p->tr[j] = r.time_s;
        cost_collective(p->s.op, pa[1], net, grid_size(j), &r, NULL);
        p->tt[j] = r.time_s;
    }
    p->curves_done = j == COLLRUN_PLOT_GRID;
}

/* The run's send events (in the order they were sent) as the panel's hops. The panel's
 * chunks: the ring's N; a tree's pipeline chunks, the second tree of a double binary tree
 * after the first's; rhd's 2^k blocks, a send of a range of them a hop per block (its
 * fold-in and fold-out carry them all); an all-to-all's N blocks of a receive buffer, the
 * block from GPU i landing in place i. */
static void keep_hops(struct coll_run *p, const struct event *ev, size_t n)
{
    bool a2a = p->s.op == COST_ALLTOALL;
    int np = 1, per_tree = 1;
    while (np * 2 <= p->s.gpus)
        np *= 2;
    for (size_t i = 0; i < n; i++)
        if (ev[i].type == EV_SEND && ev[i].chunk + 1 > per_tree)
            per_tree = ev[i].chunk + 1;
    double block = p->real_bytes / np;
    size_t cap = n * (p->s.algo == COST_RHD ? (size_t)np : 1) + 1;
    p->hops = calloc(cap, sizeof *p->hops);
    double *arrival = malloc((n ? n : 1) * sizeof *arrival);
    if (!arrival || event_send_arrivals(ev, n, arrival) < 0) {
        free(p->hops);
        p->hops = NULL;
    }
    for (size_t i = 0; i < n && p->hops; i++) {
        if (ev[i].type != EV_SEND || ev[i].chunk < 0)
            continue;
        int first = ev[i].chunk, count = 1;
        if (p->s.algo == COST_DBTREE)
            first += (ev[i].stream > 0) * per_tree; /* tree 1 runs on the second stream */
        if (p->s.algo == COST_RHD && block > 0) {
            count = (int)lround((double)ev[i].bytes / block);
            count = count < 1 ? 1 : count;
        }
        const char *ph = ev[i].phase ? ev[i].phase : "";
        if (a2a) /* the block lands in the receiver's place for its sender */
            first = ev[i].device;
        for (int j = 0; j < count && first + j < COLLRUN_MAX_CHUNKS; j++) {
            struct coll_hop *h = &p->hops[p->nhops++];
            h->step = ev[i].step;
            h->from = ev[i].device;
            h->to = ev[i].peer;
            h->chunk = first + j;
            h->phase = ev[i].phase;
            h->reduce =
                !strcmp(ph, "reduce-scatter") || !strcmp(ph, "reduce") || !strcmp(ph, "fold-in");
            h->bytes = (double)ev[i].bytes / count;
            h->t_end = arrival[i]; /* when its receiver's link let its bytes in */
            if (h->step + 1 > p->nsteps)
                p->nsteps = h->step + 1;
            if (h->chunk + 1 > p->nchunks)
                p->nchunks = h->chunk + 1;
        }
    }
    if (p->s.algo == COST_RING || a2a)
        p->nchunks = p->s.gpus;
    else if (p->s.algo == COST_RHD)
        p->nchunks = np < COLLRUN_MAX_CHUNKS ? np : COLLRUN_MAX_CHUNKS;
    free(arrival);
    if (p->s.algo != COST_RING)
        stage_steps(p);
}

void collrun_make(void *arg)
{
    struct coll_run *p = arg;
    double t0 = clock_now();
    struct cost_net net;
    coll_net(&p->spec, p->s.gpus, &net);
    if (p->curves && !atomic_load(&p->stale))
        make_curves(p, &net);
    if (atomic_load(&p->stale)) { /* (the run itself, once started, cannot be cut short) */
        p->ok = false;
        p->took = clock_now() - t0;
        return;
    }
    struct trial_args a;
    trial_args_init(&a);
    a.op = p->s.op;
    a.algo = p->s.algo;
    a.gpus = p->s.gpus;
    a.count = collrun_real_count(&p->s, &p->scaled);
    a.dtype = FP_FP32;
    a.spec = p->spec;
    a.record_events = true;
    p->real_bytes = (double)a.count * 4;
    double scale = p->real_bytes / p->s.size;
    a.spec.beta_intra *= scale;
    a.spec.beta_inter *= scale;
    p->hops = NULL;
    p->nhops = p->nsteps = 0;
    p->nchunks = 1;
    p->ok = true;
    p->err[0] = 0;

    struct trial t;
    struct error e = {0};
    if (trial_run(&a, &t, &e) != 0) {
        p->ok = false;
        snprintf(p->err, sizeof p->err, "%s", e.msg);
    } else {
        p->verified = t.check.ok;
        p->max_rel_error = t.check.max_rel_error;
        p->tolerance = t.check.tolerance;
        p->sim_time = t.simulated_s;
        size_t n;
        const struct event *ev = cluster_events(t.cluster, &n); /* in the order they were sent */
        keep_hops(p, ev, n);
    }
    trial_fini(&t);
    p->took = clock_now() - t0;
}
