/* The calculator's view of a run's layout, and the pipeline bubble measured on its executed
 * operations (par/predict.h). */
#include "config.h"
#include "par/predict.h"

#include <math.h>
#include <string.h>

#include "calc/activ.h"
#include "model/gpt.h"

int predict_config(const struct train_opts *o, const struct model_shape *m, double capacity,
                   struct memory_config *c, struct error *e)
{
    int dp = train_dp(o);
    memset(c, 0, sizeof *c);
    c->model = m;
    c->precision = o->precision == FP_FP32   ? PREC_FP32
                   : o->precision == FP_BF16 ? PREC_BF16
                                             : PREC_FP16;
    c->optimizer = OPT_ADAMW;
    c->grad_fp32 = o->grad_fp32;
    c->dp = dp, c->tp = o->tp, c->pp = o->pp, c->zero = o->zero;
    c->sp = o->sp;
    c->micro_batch = o->batch / (dp * o->micro_batches), c->seq = m->seq;
    c->micro_batches = o->micro_batches;
    c->schedule = o->schedule;
    c->chunks = train_chunks(o);
    c->capacity = capacity;
    c->bucket_bytes = (double)o->bucket_bytes;
    c->no_prefetch = !o->prefetch;
    return activ_parse_policy(o->ckpt.name[0] ? o->ckpt.name : "none", &c->ckpt, e);
}

void predict_bubble(const struct pp_done *const *ops, const int *n, int stages,
                    struct pp_bubble *out)
{
    double t0 = INFINITY, t1 = -INFINITY, busy = 0;
    for (int s = 0; s < stages; s++)
        for (int i = 0; i < n[s]; i++) {
            t0 = fmin(t0, ops[s][i].start_s), t1 = fmax(t1, ops[s][i].end_s);
            busy += ops[s][i].end_s - ops[s][i].start_s;
        }
    *out = (struct pp_bubble){0};
    if (!(t1 > t0))
        return;
    double wall = (t1 - t0) * stages, idle = wall - busy;
    out->busy_s = busy, out->span_s = t1 - t0;
    out->over_ideal = busy > 0 ? idle / busy : 0;
    out->over_wall = idle / wall;
}

double predict_recompute_pct(const struct model_shape *m, int batch, const char *policy)
{
    struct gpt_config c;
    struct gpt_ckpt ckpt;
    if (batch < 1 || train_shape_of(m, &c, NULL) < 0 || gpt_ckpt_parse(policy, &ckpt, NULL) < 0)
        return NAN;
    struct gpt_flops fl = gpt_step_flops(&c, batch, &ckpt);
    return 100.0 * fl.recompute / (fl.forward + fl.backward);
}
