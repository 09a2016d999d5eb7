/* The calculator's view of a run's layout, and the pipeline bubble measured on its executed
 * operations (par/predict.h). */
#include "config.h"
#include "par/predict.h"

#include <float.h>
#include <math.h>
#include <string.h>

#include "calc/activ.h"
#include "sim/spec.h"
#include "model/gpt.h"

int predict_config(const struct train_opts *o, const struct model_shape *m, double capacity,
                   struct memory_config *c, struct error *e)
{
    int dp = layout_dp(o);
    memset(c, 0, sizeof *c);
    c->model = m;
    c->precision = o->precision;
    c->optimizer = OPT_ADAMW;
    c->grad_fp32 = o->grad_fp32;
    c->dp = dp, c->tp = o->tp, c->pp = o->pp, c->zero = o->zero;
    c->sp = o->sp;
    c->cp = o->cp, c->cp_naive = o->cp_naive;
    c->attention = train_flash(o) ? ACTIV_FLASH : ACTIV_EAGER; /* the kernel the run has */
    c->ep = o->ep;
    c->micro_batch = o->batch / (dp * o->micro_batches), c->seq = m->seq;
    c->micro_batches = o->micro_batches;
    c->schedule = o->schedule;
    c->chunks = layout_chunks(o);
    c->capacity = capacity;
    c->bucket_bytes = (double)o->bucket_bytes;
    c->no_prefetch = !o->prefetch;
    (void)e;
    c->ckpt = o->ckpt;
    return 0;
}

int predict_run(const struct train_opts *o, const struct model_shape *m,
                const struct cluster_spec *spec, struct prediction *p, struct error *e)
{
    struct memory_config c;
    p->have_sched = false;
    int rc = predict_config(o, m, spec->hbm_bytes, &c, e);
    for (int st = 0; !rc && st < o->pp && st < SCHED_MAX_STAGES; st++) {
        struct memory_result *r = &p->mem[st];
        if (!(rc = memory_compute_stage(&c, st, r, e)))
            rc = traffic_compute(&c, spec, st, r->params_gpu, r->stage_layers, 0, 0, &p->comm[st],
                                 e);
        struct memory_config u = c;
        struct memory_result ru;
        u.ep_uniform = true;
        p->act_uniform[st] = !rc && !memory_compute_stage(&u, st, &ru, NULL) ? ru.activations : NAN;
    }
    if (!rc) /* a pipeline's; one stage's too, which the window draws */
        p->have_sched = sched_build(o->schedule, o->pp, o->micro_batches, layout_chunks(o),
                                    &p->sched, NULL) == 0;
    p->ok = rc == 0;
    return rc;
}

int predict_at(const struct train_opts *o, const struct model_shape *m, int st,
               const struct predict_routing *rt, struct memory_result *r, double *ep_bytes)
{
    struct memory_config c;
    if (predict_config(o, m, DBL_MAX, &c, NULL)) /* any capacity: the figures do not ask */
        return -1;
    c.ep_rows = rt->rows;
    c.ep_held = rt->held;
    if (memory_compute_stage(&c, st, r, NULL))
        return -1;
    *ep_bytes = traffic_ep_bytes_at(&c, r->stage_layers, rt->moved);
    return isnan(*ep_bytes) ? -1 : 0;
}

void predict_free(struct prediction *p)
{
    if (p->have_sched)
        sched_free(&p->sched);
    p->have_sched = false;
}

void predict_bubble(const struct pp_done *const *ops, const int *n, int stages,
                    struct pp_bubble *out)
{
    double t0 = INFINITY, t1 = -INFINITY, busy = 0, slowest = 0;
    for (int s = 0; s < stages; s++) {
        double own = 0;
        for (int i = 0; i < n[s]; i++) {
            t0 = fmin(t0, ops[s][i].start_s), t1 = fmax(t1, ops[s][i].end_s);
            own += ops[s][i].end_s - ops[s][i].start_s;
        }
        busy += own, slowest = fmax(slowest, own);
    }
    *out = (struct pp_bubble){0};
    if (!(t1 > t0))
        return;
    double wall = (t1 - t0) * stages, idle = wall - busy;
    out->busy_s = busy, out->span_s = t1 - t0, out->slowest_s = slowest;
    out->over_ideal = busy > 0 ? idle / busy : 0;
    out->over_wall = idle / wall;
}

double predict_recompute_pct(const struct model_shape *m, int batch, const char *policy)
{
    struct gpt_config c;
    struct ckpt_policy ckpt;
    if (batch < 1 || train_shape_of(m, &c, NULL) < 0 || ckpt_parse(policy, &ckpt, NULL) < 0)
        return NAN;
    struct gpt_flops fl = gpt_step_flops(&c, batch, &ckpt);
    return 100.0 * fl.recompute / (fl.forward + fl.backward);
}
