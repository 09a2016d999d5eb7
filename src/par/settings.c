/* A training run's settings: the defaults, and the tiny GPT's shape from a preset
 * (par/settings.h). */
#include "config.h"
#include "par/settings.h"

#include <string.h>

#include "base/error.h"
#include "calc/preset.h"

void train_opts_default(struct train_opts *o)
{
    memset(o, 0, sizeof *o); /* the shape too: the caller's train_shape sets it */
    o->batch = 16;
    o->steps = 300;
    o->seed = 1;
    o->precision = FP_FP32;
    o->ckpt = (struct ckpt_policy){CKPT_NONE, 0};
    o->lr = 1e-3, o->beta1 = 0.9, o->beta2 = 0.999, o->eps = 1e-8, o->wd = 0.01;
    o->scaling = TRAIN_SCALE_NONE;
    o->scale = 65536.0;
    o->growth_interval = 2000;
    o->hysteresis = 1;
    o->spike_window = 64;
    o->spike_z = 5.0;
    o->gpus = 1;
    o->bucket_bytes = 25u << 20;
    o->prefetch = 1;
    o->fail_gpu = -1;
    o->pp = 1;
    o->tp = 1;
    o->chunks = 2;
    o->micro_batches = 1;
    o->schedule = SCHED_1F1B;
}

int train_shape_of(const struct model_shape *m, struct gpt_config *out, struct error *e)
{
    memset(out, 0, sizeof *out);
    if (m->ffn_kind != FFN_SWIGLU || m->kv_heads != m->heads || !m->tied)
        return error_set(e, ERR_INVAL,
                         "%s: the tiny GPT trains swiglu models with tied embeddings and "
                         "kv_heads = heads",
                         m->name);
    *out = (struct gpt_config){m->vocab, m->d_model, m->layers, m->heads, m->ffn, m->seq};
    return 0;
}

int train_shape(const char *model, struct gpt_config *out, struct error *e)
{
    struct model_shape m;
    int rc = preset_load_model(model, &m, e);
    if (rc) {
        memset(out, 0, sizeof *out);
        return rc;
    }
    return train_shape_of(&m, out, e);
}
