/* Parameter counts of a model shape, tensor by tensor, and per pipeline stage and
 * tensor-parallel rank (calc/params.h). */
#include "config.h"
#include "calc/params.h"

#include <math.h>

static void add(struct params_breakdown *b, const char *name, long long rows, long long cols,
                enum params_where where, bool split)
{
    b->t[b->n++] = (struct params_tensor){name, rows, cols, where, split};
}

void params_count(const struct model_shape *m, struct params_breakdown *b)
{
    long long d = m->d_model, kv = (long long)m->kv_heads * (m->d_model / m->heads);
    long long f = m->ffn, v = m->vocab;
    bool gelu = m->ffn_kind == FFN_GELU;
    b->n = 0;
    add(b, "embedding", v, d, PARAMS_FIRST, true); /* vocabulary-parallel */
    if (gelu)
        add(b, "pos_embedding", m->seq, d, PARAMS_FIRST, false);
    add(b, "attn_norm", d, 1, PARAMS_LAYER, false);
    if (gelu)
        add(b, "attn_norm_bias", d, 1, PARAMS_LAYER, false);
    /* Megatron: q, k, v and gate/up are column-parallel (split, with their biases), wo and
     * w_down row-parallel (split; their bias is added after the all-reduce: replicated). */
    add(b, "wq", d, d, PARAMS_LAYER, true);
    if (gelu)
        add(b, "bq", d, 1, PARAMS_LAYER, true);
    add(b, "wk", d, kv, PARAMS_LAYER, true);
    if (gelu)
        add(b, "bk", kv, 1, PARAMS_LAYER, true);
    add(b, "wv", d, kv, PARAMS_LAYER, true);
    if (gelu)
        add(b, "bv", kv, 1, PARAMS_LAYER, true);
    add(b, "wo", d, d, PARAMS_LAYER, true);
    if (gelu)
        add(b, "bo", d, 1, PARAMS_LAYER, false);
    add(b, "mlp_norm", d, 1, PARAMS_LAYER, false);
    if (gelu)
        add(b, "mlp_norm_bias", d, 1, PARAMS_LAYER, false);
    if (!gelu)
        add(b, "w_gate", d, f, PARAMS_LAYER, true);
    add(b, "w_up", d, f, PARAMS_LAYER, true);
    if (gelu)
        add(b, "b_up", f, 1, PARAMS_LAYER, true);
    add(b, "w_down", f, d, PARAMS_LAYER, true);
    if (gelu)
        add(b, "b_down", d, 1, PARAMS_LAYER, false);
    add(b, "final_norm", d, 1, PARAMS_LAST, false);
    if (gelu)
        add(b, "final_norm_bias", d, 1, PARAMS_LAST, false);
    if (!m->tied)
        add(b, "lm_head", d, v, PARAMS_LAST, true);

    b->first = b->per_layer = b->last = 0;
    for (int i = 0; i < b->n; i++) {
        double c = (double)b->t[i].rows * (double)b->t[i].cols;
        if (b->t[i].where == PARAMS_FIRST)
            b->first += c;
        else if (b->t[i].where == PARAMS_LAYER)
            b->per_layer += c;
        else
            b->last += c;
    }
    b->total = b->first + (double)m->layers * b->per_layer + b->last;
    b->moe_layers = params_moe_layers(m, 0, m->layers);
    b->moe_every = m->moe_every;
    b->moe_layer = b->per_layer, b->active = b->total;
    if (b->moe_layers) { /* E feed-forwards and a router where a dense layer has one */
        double ffn = 3.0 * d * f, E = m->experts;
        b->moe_layer = b->per_layer - ffn + E * ffn + (double)d * E;
        b->total += b->moe_layers * (b->moe_layer - b->per_layer);
        b->active = b->total - b->moe_layers * (E - m->top_k) * ffn;
    }
}

int params_moe_layers(const struct model_shape *m, int first, int count)
{
    if (m->experts <= 0 || count <= 0)
        return 0;
    int k = m->moe_every > 0 ? m->moe_every : 1, end = first + count;
    return (end + k - 1) / k - (first + k - 1) / k; /* multiples of k in [first, end) */
}

double params_total(const struct model_shape *m)
{
    struct params_breakdown b;
    params_count(m, &b);
    return b.total;
}

double params_active(const struct model_shape *m)
{
    struct params_breakdown b;
    params_count(m, &b);
    return b.active;
}

void params_stage_layers(int layers, int stage, int pp, int *first, int *count)
{
    int base = layers / pp, extra = layers % pp;
    *count = base + (stage < extra);
    *first = stage * base + (stage < extra ? stage : extra);
}

static double shard(const struct params_tensor *t, int tp)
{
    double c = (double)t->rows * (double)t->cols;
    if (!t->tp_split || tp <= 1)
        return c;
    /* Split along the dimension tp divides (vocabulary rows are padded up). */
    return ceil((double)t->rows / tp) * (double)t->cols;
}

void params_shards(const struct params_breakdown *b, int tp, double *first, double *per_layer)
{
    *first = *per_layer = 0;
    for (int i = 0; i < b->n; i++) {
        if (b->t[i].where == PARAMS_FIRST)
            *first += shard(&b->t[i], tp);
        else if (b->t[i].where == PARAMS_LAYER)
            *per_layer += shard(&b->t[i], tp);
    }
}

double params_per_gpu(const struct params_breakdown *b, int layers, int stage, int pp, int tp,
                      bool tied)
{
    int first, count;
    params_stage_layers(layers, stage, pp, &first, &count);
    double n = 0;
    for (int i = 0; i < b->n; i++) {
        const struct params_tensor *t = &b->t[i];
        double s = shard(t, tp);
        if (t->where == PARAMS_LAYER)
            n += count * s;
        else if (t->where == PARAMS_FIRST && stage == 0)
            n += s;
        else if (t->where == PARAMS_LAST && stage == pp - 1)
            n += s;
        /* The tied embedding doubles as the output layer: the last stage keeps a copy. */
        if (tied && pp > 1 && stage == pp - 1 && i == 0)
            n += s;
    }
    /* the stage's layers with experts (whole: the calculator splits no expert over tp) */
    int moe = 0, k = b->moe_every > 0 ? b->moe_every : 1;
    if (b->moe_layers)
        moe = (first + count + k - 1) / k - (first + k - 1) / k;
    return n + moe * (b->moe_layer - b->per_layer);
}
