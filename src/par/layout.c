/* The layout of a run's GPUs: places, ranks and groups on the grid, the model and batch split
 * over it, its checks (par/layout.h). */
#include "config.h"
#include "par/layout.h"

#include <stddef.h>

#include "base/error.h"

_Static_assert(offsetof(struct layout_place, pp) ==
                   offsetof(struct layout_place, size) + LAYOUT_PP * sizeof(int),
               "the named sizes are the axes' in order");
_Static_assert(offsetof(struct layout_place, stage) ==
                   offsetof(struct layout_place, at) + LAYOUT_PP * sizeof(int),
               "the named coordinates are the axes' in order");

int layout_dp(const struct train_opts *o)
{
    int mp = (o->pp > 0 ? o->pp : 1) * (o->tp > 0 ? o->tp : 1);
    return o->gpus % mp == 0 ? o->gpus / mp : 1;
}

bool layout_pipelined(const struct train_opts *o)
{
    return o->pp > 1 || o->micro_batches > 1;
}

int layout_chunks(const struct train_opts *o)
{
    return o->schedule == SCHED_INTERLEAVED && o->chunks > 1 ? o->chunks : 1;
}

void layout_place(const struct train_opts *o, int rank, int slots, struct layout_place *out)
{
    int m = o->micro_batches > 0 ? o->micro_batches : 1;
    out->rank = rank;
    out->tp = o->tp > 0 ? o->tp : 1;
    out->dp = layout_dp(o);
    out->pp = o->pp > 0 ? o->pp : 1;
    for (int a = 0, r = rank; a < LAYOUT_AXES; a++) { /* the digits, innermost first */
        out->at[a] = a == LAYOUT_AXES - 1 ? r : r % out->size[a];
        r /= out->size[a];
    }
    out->micro = o->batch / (out->dp * m);
    layout_chunk_part(o, out, 0, slots, &out->part);
}

int layout_rank(const struct layout_place *pl, enum layout_axis a, int at)
{
    int rank = 0;
    for (int k = LAYOUT_AXES - 1; k >= 0; k--)
        rank = rank * pl->size[k] + (k == (int)a ? at : pl->at[k]);
    return rank;
}

void layout_group(const struct layout_place *pl, enum layout_axis a, int *ranks)
{
    for (int i = 0; i < pl->size[a]; i++)
        ranks[i] = layout_rank(pl, a, i);
}

void layout_chunk_part(const struct train_opts *o, const struct layout_place *pl, int chunk,
                       int slots, struct gpt_part *out)
{
    int pv = pl->pp * layout_chunks(o), vs = chunk * pl->pp + pl->stage;
    int per = o->shape.layers / pv;
    *out = (struct gpt_part){.first = vs * per,
                             .count = per,
                             .embed = vs == 0,
                             .head = vs == pv - 1,
                             .slots = slots > 0 ? slots : 1,
                             .tp = pl->tp,
                             .tprank = pl->tprank,
                             .sp = o->sp && pl->tp > 1};
}

int layout_check(const struct train_opts *o, struct error *e)
{
    if (o->gpus < 1 || o->gpus > TRAIN_MAX_GPUS)
        return error_set(e, ERR_INVAL, "--gpus %d: from 1 to %d GPUs", o->gpus, TRAIN_MAX_GPUS);
    if (o->pp < 1 || o->pp > o->shape.layers || o->shape.layers % o->pp != 0)
        return error_set(e, ERR_INVAL,
                         "--pp %d: the pipeline's stages must divide the model's %d layers", o->pp,
                         o->shape.layers);
    if (o->tp < 1 || o->tp > TRAIN_MAX_GPUS)
        return error_set(e, ERR_INVAL, "--tp %d: from 1 to %d", o->tp, TRAIN_MAX_GPUS);
    if (o->shape.heads % o->tp || o->shape.ffn % o->tp || o->shape.vocab % o->tp)
        return error_set(e, ERR_INVAL,
                         "--tp %d must divide the attention heads (%d) and the FFN width (%d), "
                         "which it splits, and the vocabulary (%d)",
                         o->tp, o->shape.heads, o->shape.ffn, o->shape.vocab);
    if (o->sp && o->shape.seq % o->tp)
        return error_set(e, ERR_INVAL,
                         "--sequence-parallel splits the sequence of %d tokens over --tp %d: it "
                         "must divide it",
                         o->shape.seq, o->tp);
    if (o->gpus % (o->pp * o->tp) != 0)
        return error_set(e, ERR_INVAL,
                         "--tp %d x --pp %d does not divide the %d GPUs (dp x tp x pp)", o->tp,
                         o->pp, o->gpus);
    if (o->micro_batches < 1 || o->micro_batches > SCHED_MAX_MICRO)
        return error_set(e, ERR_INVAL, "--micro-batches %d: from 1 to %d", o->micro_batches,
                         SCHED_MAX_MICRO);
    int dp = layout_dp(o), split = dp * o->micro_batches;
    /* the data-parallel ranks split the batch; a rank's tensor-parallel GPUs share its part
     * and its pipeline stages pass it on */
    if (o->batch % dp != 0 && o->pp == 1 && o->micro_batches == 1)
        return error_set(e, ERR_INVAL,
                         "--batch %d does not split over %d data-parallel ranks: each takes "
                         "batch / %d sequences, which its tensor-parallel GPUs share (try "
                         "--batch %d)",
                         o->batch, dp, dp, (o->batch / dp + 1) * dp);
    if (o->batch % split != 0)
        return error_set(e, ERR_INVAL,
                         "--batch %d does not split into %d data-parallel share%s of %d "
                         "micro-batch%s (try --batch %d)",
                         o->batch, dp, dp > 1 ? "s" : "", o->micro_batches,
                         o->micro_batches > 1 ? "es each" : "", (o->batch / split + 1) * split);
    if (o->schedule == SCHED_INTERLEAVED) {
        /* one stage has no other stage to interleave its chunks with (and, with one
         * micro-batch, no pipeline would run its chunks at all) */
        if (o->pp < 2)
            return error_set(e, ERR_INVAL,
                             "--schedule interleaved needs --pp 2 or more: it interleaves the "
                             "model chunks of several stages");
        int rc = sched_check(o->schedule, o->pp, o->micro_batches, o->chunks, e);
        if (rc)
            return rc;
        if (o->shape.layers % (o->pp * o->chunks) != 0)
            return error_set(e, ERR_INVAL,
                             "--pp %d x --chunks %d does not divide the model's %d layers", o->pp,
                             o->chunks, o->shape.layers);
        if (dp > 1)
            return error_set(e, ERR_INVAL,
                             "--schedule interleaved runs on one data-parallel copy (--dp 1) on "
                             "the thread-GPUs");
    }
    /* ZeRO-2 would reduce-scatter every micro-batch's gradients (DeepSpeed's pipeline engine
     * refuses stages 2 and 3 with pipeline parallelism altogether) */
    if (layout_pipelined(o) && o->zero >= 2)
        return error_set(e, ERR_INVAL,
                         "--zero %d with %s: stages 2 and 3 keep only a shard of the gradients, "
                         "so they reduce every micro-batch's; the thread-GPUs run ZeRO 0 and 1 "
                         "with micro-batches",
                         o->zero, o->pp > 1 ? "pipeline stages" : "several micro-batches");
    if (o->zero < 0 || o->zero > 3)
        return error_set(e, ERR_INVAL, "--zero %d: the ZeRO stage is 0, 1, 2 or 3", o->zero);
    return 0;
}
