/* One collective run start to finish on a fresh cluster: buffers through each GPU's ledger,
 * real data, the run, its check and its figures (comm/trial.h). */
#include "config.h"
#include "comm/trial.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "base/error.h"
#include "comm/coll.h"
#include "comm/reduce.h"

void trial_args_init(struct trial_args *a)
{
    memset(a, 0, sizeof *a);
    a->algo = COST_RING;
    a->gpus = 2;
    a->dtype = FP_FP32;
    spec_default(&a->spec);
    a->seed = 1;
    a->repeat = 1;
    a->verify = true;
    a->fail_gpu = a->fail_step = -1;
}

/* Progress shared by the GPU threads: units of work done and how many there are. */
struct progress {
    void (*fn)(void *ctx, const char *what, double done);
    void *ctx;
    pthread_mutex_t lock; /* taken with trylock: whoever holds it reports */
    double last;          /* clock_now() of the last report; the lock's */
    uint64_t done, total; /* atomic */
};

static void progress_add(struct progress *p, const char *what, uint64_t units)
{
    if (!p->fn)
        return;
    uint64_t done = __atomic_add_fetch(&p->done, units, __ATOMIC_RELAXED);
    if (pthread_mutex_trylock(&p->lock) != 0)
        return;
    double now = clock_now();
    if (now - p->last >= 0.25) {
        p->last = now;
        p->fn(p->ctx, what, p->total ? (double)done / (double)p->total : -1);
    }
    pthread_mutex_unlock(&p->lock);
}

/* Starts counting a new phase of `total` units (GPU 0, between barriers). */
static void progress_phase(struct progress *p, const char *what, uint64_t total)
{
    if (!p->fn)
        return;
    pthread_mutex_lock(&p->lock);
    __atomic_store_n(&p->done, 0, __ATOMIC_RELAXED);
    p->total = total;
    p->last = clock_now();
    p->fn(p->ctx, what, total ? 0 : -1);
    pthread_mutex_unlock(&p->lock);
}

struct ctx {
    const struct trial_args *a;
    enum cost_algo algo;
    void **bufs;
    void **rbufs;         /* all-to-all: the receive buffers (else NULL) */
    double *best;         /* per GPU: best single repetition */
    struct verify *share; /* per GPU: its share of the check */
    uint64_t *dig;        /* per GPU: its buffer's digest */
    double go, done;      /* clock_now() when the GPUs start the collective, and end it */
    struct progress pr;
};

/* Elements a GPU fills or checks between two reports. */
#define STRIDE ((size_t)1 << 20)

static int body(struct device *d, void *arg, struct error *e)
{
    struct ctx *c = arg;
    const struct trial_args *a = c->a;
    int r = dev_rank(d), n = dev_count(d), rc;
    size_t es = reduce_elem_size(a->dtype);
    struct coll op = {.op = a->op,
                      .algo = c->algo,
                      .buf = c->bufs[r],
                      .count = a->count,
                      .dtype = a->dtype,
                      .root = a->root,
                      .recv = c->rbufs ? c->rbufs[r] : NULL};
    void **out = c->rbufs ? c->rbufs : c->bufs; /* where the result is */
    c->best[r] = 1e300;
    /* each GPU fills its own buffer, in parallel, before anything is timed */
    if (r == 0)
        progress_phase(&c->pr, "filling the buffers", (uint64_t)n * a->count);
    if ((rc = dev_barrier(d, e)))
        return rc;
    for (size_t i = 0; i < a->count; i += STRIDE) {
        size_t m = a->count - i < STRIDE ? a->count - i : STRIDE;
        verify_fill_range(a->dtype, (char *)c->bufs[r] + i * es, i, m, a->seed, r);
        progress_add(&c->pr, "filling the buffers", m);
    }
    if ((rc = dev_barrier(d, e)))
        return rc;
    if (r == 0) {
        c->go = clock_now();
        progress_phase(&c->pr, "the collective", 0);
    }
    for (int i = 0; i < a->repeat; i++) {
        double t0 = clock_now();
        if ((rc = coll_run(d, &op, e)))
            return rc;
        double t = clock_now() - t0;
        if (t < c->best[r])
            c->best[r] = t;
    }
    if ((rc = dev_barrier(d, e))) /* every result complete: a reduce's root is read by all */
        return rc;
    if (r == 0) {
        c->done = clock_now();
        progress_phase(&c->pr, "checking the result", (uint64_t)n * a->count);
    }
    if (!a->verify)
        return 0;
    if ((rc = dev_barrier(d, e)))
        return rc;
    verify_share(a->op, a->root, a->dtype, out, r, n, a->count, a->seed, &c->share[r]);
    size_t off, len;
    coll_chunk(a->count, n, a->op == COST_ALLGATHER ? (r + 1) % n : r, &off, &len);
    if (a->op == COST_ALLTOALL) /* its whole buffer, each element one input */
        len = a->count / (size_t)n;
    progress_add(&c->pr, "checking the result", (uint64_t)len * (uint64_t)n);
    c->dig[r] = verify_digest(out[r], a->count * es);
    return 0;
}

/* The simulated cluster trial a runs on; NULL after saying why. */
static struct cluster *cluster_of(const struct trial_args *a, struct error *e)
{
    struct cluster_config cfg;
    cluster_config_init(&cfg);
    cfg.spec = a->spec;
    cfg.gpus = a->gpus;
    cfg.seed = a->seed;
    cfg.record_events = a->record_events;
    cfg.fail_gpu = a->fail_gpu;
    cfg.fail_step = a->fail_step;
    if (a->deadline_s > 0)
        cfg.deadline_s = a->deadline_s;
    return cluster_new(&cfg, e);
}

/* The GPUs' checks of their shares merged into t's verdict, and their digests into its. */
static void merge_checks(const struct ctx *c, struct trial *t)
{
    const struct trial_args *a = c->a;
    int n = a->gpus;
    t->check = c->share[0];
    for (int g = 1; g < n; g++)
        verify_merge(&t->check, &c->share[g]);
    for (int g = 1; g < n && verify_same_everywhere(a->op); g++)
        t->check.identical &= c->dig[g] == c->dig[0];
    /* wrong: the whole check again, serially, to name the first wrong element as it always has
     * (which GPU, which index, GPUs disagreeing) */
    if (!t->check.ok || !t->check.identical)
        verify_check(a->op, a->root, a->dtype, c->rbufs ? c->rbufs : c->bufs, n, a->count, a->seed,
                     &t->check);
    t->digest = verify_digest_all(c->dig, n);
    t->check_s = clock_now() - c->done;
}

int trial_run(const struct trial_args *a, struct trial *t, struct error *e)
{
    double started = clock_now();
    memset(t, 0, sizeof *t);
    size_t es = reduce_elem_size(a->dtype);
    if (es == 0)
        return error_set(e, ERR_INVAL, "collectives carry fp32, bf16 or fp16 data");
    if (a->gpus < 1 || a->gpus > CLUSTER_MAX_GPUS)
        return error_set(e, ERR_INVAL, "the number of GPUs must be 1 to %d, not %d",
                         CLUSTER_MAX_GPUS, a->gpus);
    if (a->repeat < 1 || (a->verify && a->repeat != 1))
        return error_set(e, ERR_INVAL, "a checked trial runs once");
    if (a->op == COST_ALLTOALL && coll_alltoall_check(a->count, a->gpus, e))
        return ERR_INVAL;
    t->bytes = (double)a->count * (double)es;
    t->algo = coll_resolve(&a->spec, a->gpus, a->op, a->algo, t->bytes);
    struct cost_net net;
    coll_net(&a->spec, a->gpus, &net);
    int rc = cost_collective(a->op, t->algo, &net, t->bytes, &t->predicted, e);
    if (rc)
        return rc;
    t->steps = t->predicted.rounds;
    t->rounds = coll_steps(&a->spec, a->gpus, a->op, t->algo, a->count, a->dtype);

    t->cluster = cluster_of(a, e);
    if (!t->cluster)
        return e && e->code ? e->code : ERR_RUN;
    int n = a->gpus;
    struct ctx c = {.a = a,
                    .algo = t->algo,
                    .bufs = calloc((size_t)n, sizeof(void *)),
                    .rbufs = a->op == COST_ALLTOALL ? calloc((size_t)n, sizeof(void *)) : NULL,
                    .best = calloc((size_t)n, sizeof(double)),
                    .share = calloc((size_t)n, sizeof(struct verify)),
                    .dig = calloc((size_t)n, sizeof(uint64_t)),
                    .pr = {.fn = a->progress, .ctx = a->progress_ctx}};
    pthread_mutex_init(&c.pr.lock, NULL);
    t->sent = calloc((size_t)n, sizeof *t->sent);
    if (!c.bufs || !c.best || !c.share || !c.dig || !t->sent ||
        (a->op == COST_ALLTOALL && !c.rbufs)) {
        rc = error_set(e, ERR_NOMEM, "no memory for %d GPUs", n);
        goto out;
    }
    c.pr.total = (uint64_t)n;
    for (int g = 0; g < n; g++) { /* here, not in the GPUs' threads: the kernel's page faults
                                   * take their turns anyway, and an error names GPU 0 first */
        c.bufs[g] =
            ledger_alloc(dev_ledger(cluster_device(t->cluster, g)), MEM_COMM, a->count * es, e);
        if (!c.bufs[g]) {
            rc = e && e->code ? e->code : ERR_NOMEM;
            goto out;
        }
        if (c.rbufs && !(c.rbufs[g] = ledger_alloc(dev_ledger(cluster_device(t->cluster, g)),
                                                   MEM_COMM, a->count * es, e))) {
            rc = e && e->code ? e->code : ERR_NOMEM;
            goto out;
        }
        progress_add(&c.pr, "allocating the buffers", 1);
    }
    rc = cluster_run(t->cluster, body, &c, e);
    t->setup_s = c.go > 0 ? c.go - started : 0;
    t->check_s = c.done > 0 ? clock_now() - c.done : 0;
    t->simulated_s = cluster_time(t->cluster) / a->repeat;
    for (int g = 0; g < n; g++) {
        struct dev_stats s = dev_stats(cluster_device(t->cluster, g));
        t->sent[g] = s.bytes_sent / (uint64_t)a->repeat;
        t->sent_total += t->sent[g];
        /* a copy reads the sender's byte and writes the receiver's; a sum also reads the
         * receiver's */
        t->traffic += (2 * s.bytes_received + s.bytes_combined) / (uint64_t)a->repeat;
    }
    if (rc)
        goto out;
    double best = 0;
    for (int g = 0; g < n; g++)
        if (c.best[g] > best)
            best = c.best[g]; /* a repetition ends when its slowest GPU does */
    t->wall_s = best;
    if (a->verify)
        merge_checks(&c, t);
out:
    for (int g = 0; g < n && c.bufs; g++) {
        if (c.bufs[g])
            ledger_free(dev_ledger(cluster_device(t->cluster, g)), c.bufs[g]);
        if (c.rbufs && c.rbufs[g])
            ledger_free(dev_ledger(cluster_device(t->cluster, g)), c.rbufs[g]);
    }
    pthread_mutex_destroy(&c.pr.lock);
    free(c.bufs);
    free(c.rbufs);
    free(c.best);
    free(c.share);
    free(c.dig);
    return rc;
}

void trial_fini(struct trial *t)
{
    free(t->sent);
    cluster_free(t->cluster);
    memset(t, 0, sizeof *t);
}
