/* The data-parallel cut of the flat buffers: padding, shards, buckets, ZeRO-3 units
 * (par/shard.h). */
#include "config.h"
#include "par/shard.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"

size_t shard_size(size_t params, int n)
{
    return n > 0 ? (params + (size_t)n - 1) / (size_t)n : params;
}

size_t shard_padded(size_t params, int n)
{
    return shard_size(params, n) * (size_t)(n > 0 ? n : 1);
}

void shard_bounds(const struct shard_plan *p, size_t off, size_t len, size_t *bounds)
{
    for (int i = 0; i <= p->n; i++) {
        size_t edge = (size_t)i * p->shard;
        bounds[i] = edge <= off ? 0 : edge >= off + len ? len : edge - off;
    }
}

int shard_unit_at(const struct shard_plan *p, size_t off)
{
    size_t emb = p->units[0].r[0].len, fin = p->units[0].r[1].off;
    if (off < emb)
        return GPT_UNIT_EMBED;
    if (off >= fin)
        return GPT_UNIT_HEAD;
    int k = 0; /* layers differ in size when some have experts */
    while (k + 1 < p->layers && p->units[2 + k].r[0].off <= off)
        k++;
    return p->first + k;
}

/* Elements of the part's first k layers (they differ in size when some have experts). */
static size_t layers_before(const struct gpt_config *c, const struct gpt_part *pt, int k)
{
    struct gpt_part some = *pt;
    some.count = k, some.embed = some.head = false;
    return gpt_part_param_count(c, &some);
}

int shard_plan_init(struct shard_plan *p, const struct gpt_config *c, const struct gpt_part *part,
                    int n, size_t bucket_elems, struct error *e)
{
    struct gpt_part whole = {.count = c->layers, .embed = true, .head = true, .slots = 1, .tp = 1};
    const struct gpt_part *pt = part ? part : &whole;
    memset(p, 0, sizeof *p);
    p->n = n;
    p->first = pt->first;
    p->layers = pt->count;
    p->params = gpt_part_param_count(c, pt);
    p->shard = shard_size(p->params, n);
    p->padded = shard_padded(p->params, n);
    size_t nb =
        bucket_elems ? (p->padded + bucket_elems - 1) / bucket_elems : (size_t)pt->count + 2;
    p->buckets = calloc(nb, sizeof *p->buckets);
    p->units = calloc((size_t)pt->count + 1, sizeof *p->units);
    if (!p->buckets || !p->units) {
        shard_plan_fini(p);
        return error_set(e, ERR_NOMEM, "out of memory");
    }

    /* Units: the ends (embedding; final norm and padding), then each layer. A middle
     * pipeline stage has no embedding and no final norm: its ends are the padding. */
    struct gpt_part ends = *pt; /* the embedding's parameters */
    ends.count = 0, ends.embed = pt->embed || pt->head, ends.head = false;
    size_t emb = gpt_part_param_count(c, &ends), fin = emb + layers_before(c, pt, pt->count);
    p->units[0] = (struct shard_unit){
        {{0, emb, GPT_UNIT_EMBED, false}, {fin, p->padded - fin, GPT_UNIT_HEAD, false}},
        2,
        emb + p->padded - fin};
    for (int k = 0; k < pt->count; k++) {
        size_t at = emb + layers_before(c, pt, k), lp = layers_before(c, pt, k + 1) - at + emb;
        p->units[1 + k] = (struct shard_unit){{{at, lp, pt->first + k, false}}, 1, lp};
    }
    for (int u = 0; u <= pt->count; u++)
        if (p->units[u].elems > p->unit_max)
            p->unit_max = p->units[u].elems;
    /* Buckets: slices of bucket_elems from the end of the padded buffer, or (0) one piece
     * per unit: the final norm and padding, each layer, the embedding. */
    if (bucket_elems) {
        for (size_t end = p->padded; end > 0;) {
            size_t off = end > bucket_elems ? end - bucket_elems : 0;
            p->buckets[p->nbuckets++] =
                (struct shard_range){off, end - off, shard_unit_at(p, off), false};
            end = off;
        }
    } else {
        if (p->padded > fin)
            p->buckets[p->nbuckets++] =
                (struct shard_range){fin, p->padded - fin, GPT_UNIT_HEAD, false};
        for (int k = pt->count - 1; k >= 0; k--)
            p->buckets[p->nbuckets++] = p->units[1 + k].r[0];
        if (emb)
            p->buckets[p->nbuckets++] = (struct shard_range){0, emb, GPT_UNIT_EMBED, false};
    }
    for (int b = 0; b < p->nbuckets; b++)
        if (p->buckets[b].len > p->bucket_max)
            p->bucket_max = p->buckets[b].len;

    return 0;
}

void shard_plan_fini(struct shard_plan *p)
{
    free(p->buckets);
    free(p->units);
    memset(p, 0, sizeof *p);
}
