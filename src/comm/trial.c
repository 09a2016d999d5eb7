/* One collective run start to finish on a fresh cluster: buffers through each GPU's ledger,
 * real data, the run, its check and its figures (comm/trial.h). */
#include "config.h"
#include "comm/trial.h"

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

struct ctx {
    const struct trial_args *a;
    enum cost_algo algo;
    void **bufs;
    double *start, *end; /* host seconds per GPU around the timed repetitions */
    double *best;        /* per GPU: best single repetition */
};

static int body(struct device *d, void *arg, struct error *e)
{
    struct ctx *c = arg;
    int r = dev_rank(d);
    struct coll op = {c->a->op, c->algo, c->bufs[r], c->a->count, c->a->dtype, c->a->root,
                      0,        NULL,    NULL,       0,           false};
    c->best[r] = 1e300;
    /* each GPU fills its own buffer, in parallel, before anything is timed */
    verify_fill(c->a->dtype, c->bufs[r], c->a->count, c->a->seed, r);
    for (int i = 0; i < c->a->repeat; i++) {
        double t0 = clock_now();
        if (i == 0)
            c->start[r] = t0;
        int rc = coll_run(d, &op, e);
        if (rc)
            return rc;
        double t1 = clock_now();
        if (t1 - t0 < c->best[r])
            c->best[r] = t1 - t0;
        c->end[r] = t1;
    }
    return 0;
}

int trial_run(const struct trial_args *a, struct trial *t, struct error *e)
{
    memset(t, 0, sizeof *t);
    size_t es = reduce_elem_size(a->dtype);
    if (es == 0)
        return error_set(e, ERR_INVAL, "collectives carry fp32, bf16 or fp16 data");
    if (a->gpus < 1 || a->gpus > CLUSTER_MAX_GPUS)
        return error_set(e, ERR_INVAL, "the number of GPUs must be 1 to %d, not %d",
                         CLUSTER_MAX_GPUS, a->gpus);
    if (a->repeat < 1 || (a->verify && a->repeat != 1))
        return error_set(e, ERR_INVAL, "a checked trial runs once");
    t->bytes = (double)a->count * (double)es;
    t->algo = coll_resolve(&a->spec, a->gpus, a->op, a->algo, t->bytes);
    struct cost_net net;
    coll_net(&a->spec, a->gpus, &net);
    int rc = cost_collective(a->op, t->algo, &net, t->bytes, &t->predicted, e);
    if (rc)
        return rc;
    t->steps = t->predicted.rounds;
    t->rounds = coll_steps(&a->spec, a->gpus, a->op, t->algo, a->count, a->dtype);

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
    t->cluster = cluster_new(&cfg, e);
    if (!t->cluster)
        return e && e->code ? e->code : ERR_RUN;
    int n = a->gpus;
    struct ctx c = {a,
                    t->algo,
                    calloc((size_t)n, sizeof(void *)),
                    calloc((size_t)n, sizeof(double)),
                    calloc((size_t)n, sizeof(double)),
                    calloc((size_t)n, sizeof(double))};
    t->sent = calloc((size_t)n, sizeof *t->sent);
    if (!c.bufs || !c.start || !c.end || !c.best || !t->sent) {
        rc = error_set(e, ERR_NOMEM, "no memory for %d GPUs", n);
        goto out;
    }
    for (int g = 0; g < n; g++) {
        c.bufs[g] =
            ledger_alloc(dev_ledger(cluster_device(t->cluster, g)), MEM_COMM, a->count * es, e);
        if (!c.bufs[g]) {
            rc = e && e->code ? e->code : ERR_NOMEM;
            goto out;
        }
    }
    rc = cluster_run(t->cluster, body, &c, e);
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
    if (a->verify) {
        verify_check(a->op, a->root, a->dtype, c.bufs, n, a->count, a->seed, &t->check);
        uint64_t *dig = calloc((size_t)n, sizeof *dig);
        if (!dig) {
            rc = error_set(e, ERR_NOMEM, "no memory for %d GPUs", n);
            goto out;
        }
        for (int g = 0; g < n; g++)
            dig[g] = verify_digest(c.bufs[g], a->count * es);
        t->digest = verify_digest_all(dig, n);
        free(dig);
    }
out:
    for (int g = 0; g < n && c.bufs; g++)
        if (c.bufs[g])
            ledger_free(dev_ledger(cluster_device(t->cluster, g)), c.bufs[g]);
    free(c.bufs);
    free(c.start);
    free(c.end);
    free(c.best);
    return rc;
}

void trial_fini(struct trial *t)
{
    free(t->sent);
    cluster_free(t->cluster);
    memset(t, 0, sizeof *t);
}
