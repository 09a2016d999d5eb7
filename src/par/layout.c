/* The layout of a run's GPUs: places, ranks and groups on the grid, the model and batch split
 * over it, its checks (par/layout.h). */
#include "config.h"
#include "par/layout.h"

#include <stddef.h>

#include "base/error.h"
#include "model/ringattn.h"

_Static_assert(offsetof(struct layout_place, pp) ==
                   offsetof(struct layout_place, size) + LAYOUT_PP * sizeof(int),
               "the named sizes are the axes' in order");
_Static_assert(offsetof(struct layout_place, stage) ==
                   offsetof(struct layout_place, at) + LAYOUT_PP * sizeof(int),
               "the named coordinates are the axes' in order");

int layout_dp(const struct train_opts *o)
{
    int mp = (o->pp > 0 ? o->pp : 1) * (o->tp > 0 ? o->tp : 1) * (o->cp > 0 ? o->cp : 1);
    return o->gpus % mp == 0 ? o->gpus / mp : 1;
}

int layout_grad_ranks(const struct train_opts *o)
{
    return layout_dp(o) * (o->cp > 0 ? o->cp : 1);
}

void layout_grad_group(const struct layout_place *pl, int *ranks)
{
    for (int i = 0; i < pl->dp * pl->cp; i++) {
        struct layout_place q = *pl;
        q.dprank = i / pl->cp, q.cprank = i % pl->cp;
        ranks[i] = layout_rank(&q, LAYOUT_TP, pl->tprank);
    }
}

int layout_grad_rank(const struct layout_place *pl)
{
    return pl->dprank * pl->cp + pl->cprank;
}

void layout_ep_group(const struct layout_place *pl, int *ranks)
{
    for (int i = 0; i < pl->ep; i++)
        ranks[i] = layout_rank(pl, LAYOUT_DP, pl->dprank - pl->eprank + i);
}

void layout_expert_grad_group(const struct layout_place *pl, int *ranks)
{
    for (int i = 0; i < pl->dp / pl->ep; i++)
        ranks[i] = layout_rank(pl, LAYOUT_DP, i * pl->ep + pl->eprank);
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
    out->cp = o->cp > 0 ? o->cp : 1;
    out->dp = layout_dp(o);
    out->pp = o->pp > 0 ? o->pp : 1;
    for (int a = 0, r = rank; a < LAYOUT_AXES; a++) { /* the digits, innermost first */
        out->at[a] = a == LAYOUT_AXES - 1 ? r : r % out->size[a];
        r /= out->size[a];
    }
    out->ep = o->ep > 1 && out->dp % o->ep == 0 ? o->ep : 1;
    out->eprank = out->dprank % out->ep;
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
                             .sp = o->sp && pl->tp > 1,
                             .cp = pl->cp,
                             .cprank = pl->cprank,
                             .cp_naive = o->cp_naive,
                             .flash = train_flash(o),
                             .ep = pl->ep,
                             .eprank = pl->eprank};
}

/* Context parallelism's checks: its size, the sequence it splits. */
static int cp_check(const struct train_opts *o, struct error *e)
{
    enum ring_split split = o->cp_naive ? RING_NAIVE : RING_BALANCED;
    if (o->cp < 1 || o->cp > TRAIN_MAX_GPUS)
        return error_set(e, ERR_INVAL, "--cp %d: from 1 to %d", o->cp, TRAIN_MAX_GPUS);
    if (o->cp > 1 && o->attention == TRAIN_ATTN_EAGER)
        return error_set(e, ERR_INVAL,
                         "--attention eager with --cp %d: ring attention is a flash-style kernel, "
                         "it never holds the probabilities (--attention flash)",
                         o->cp);
    if (train_flash(o) && o->ckpt.kind == CKPT_SELECTIVE)
        return error_set(e, ERR_INVAL,
                         "--checkpoint selective with flash attention%s: the trainer's flash "
                         "kernel keeps no probabilities and does not recompute its core alone "
                         "(memory --checkpoint selective counts Megatron-LM's, which does); use "
                         "full, or eager attention with --cp 1",
                         o->cp > 1 ? " (--cp's ring)" : "");
    if (o->cp_naive && o->cp == 1)
        return error_set(e, ERR_INVAL,
                         "--cp-naive splits a sequence over the context-parallel GPUs: it goes "
                         "with --cp 2 or more");
    if (o->cp == 1)
        return 0;
    if (!ring_split_ok(o->shape.seq, o->cp, split))
        return error_set(e, ERR_INVAL,
                         "--cp %d cuts the sequence of %d tokens in %d chunks%s: it must divide "
                         "it",
                         o->cp, o->shape.seq, split == RING_NAIVE ? o->cp : 2 * o->cp,
                         split == RING_NAIVE ? " (--cp-naive)" : " of T / 2C tokens");
    if (o->sp && (o->shape.seq / o->cp) % o->tp)
        return error_set(e, ERR_INVAL,
                         "--sequence-parallel splits each GPU's %d tokens (seq / --cp %d) over "
                         "--tp %d: it must divide them",
                         o->shape.seq / o->cp, o->cp, o->tp);
    return 0;
}

/* Expert parallelism's checks: experts to share, the data ranks and the experts it divides,
 * the static shape its all-to-alls send, what it composes with on the thread-GPUs. */
static int ep_check(const struct train_opts *o, struct error *e)
{
    const struct gpt_moe *m = &o->shape.moe;
    int dp = layout_dp(o);
    if (o->ep < 1 || o->ep > TRAIN_MAX_GPUS)
        return error_set(e, ERR_INVAL, "--ep %d: from 1 to %d", o->ep, TRAIN_MAX_GPUS);
    if (o->ep == 1)
        return 0;
    if (!m->experts)
        return error_set(e, ERR_INVAL, "--ep %d goes with --experts: the model has none", o->ep);
    if (m->experts % o->ep)
        return error_set(e, ERR_INVAL, "--ep %d must divide the %d experts", o->ep, m->experts);
    if (dp % o->ep)
        return error_set(e, ERR_INVAL,
                         "--ep %d must divide the %d data-parallel ranks (expert parallelism "
                         "splits them, as Megatron-LM's expert-model-parallel size does)",
                         o->ep, dp);
    size_t x = (size_t)gpt_moe_layers(&o->shape) * (size_t)(m->experts / o->ep) * 3 *
               (size_t)o->shape.d * (size_t)o->shape.ffn;
    if (x % (size_t)(dp / o->ep))
        return error_set(e, ERR_INVAL,
                         "--dp %d / --ep %d GPUs hold the same %zu expert parameters and reduce "
                         "their gradients in even shards: they must divide them",
                         dp, o->ep, x);
    if (!(m->capacity_factor > 0))
        return error_set(e, ERR_INVAL,
                         "--ep %d needs --capacity-factor > 0: the all-to-alls send each expert's "
                         "static [capacity, d] rows",
                         o->ep);
    if (o->tp > 1 || o->cp > 1 || o->pp > 1)
        return error_set(e, ERR_INVAL,
                         "--ep %d runs with data parallelism only on the thread-GPUs (not --tp, "
                         "--cp, --pp)",
                         o->ep);
    if (o->zero > 1)
        return error_set(e, ERR_INVAL,
                         "--ep %d with --zero %d: the thread-GPUs run expert parallelism with "
                         "DDP and ZeRO-1 (--zero 0 or 1) for now",
                         o->ep, o->zero);
    return 0;
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
    int crc = cp_check(o, e);
    if (crc)
        return crc;
    if (o->gpus % (o->pp * o->tp * o->cp) != 0) {
        if (o->cp == 1)
            return error_set(e, ERR_INVAL,
                             "--tp %d x --pp %d does not divide the %d GPUs (dp x tp x pp)", o->tp,
                             o->pp, o->gpus);
        return error_set(e, ERR_INVAL,
                         "--tp %d x --cp %d x --pp %d does not divide the %d GPUs (dp x cp x tp "
                         "x pp)",
                         o->tp, o->cp, o->pp, o->gpus);
    }
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
    return ep_check(o, e);
}
