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
    return sched_chunks(o->schedule, o->chunks);
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
    int pv = pl->pp * layout_chunks(o), vs = sched_vstage(o->schedule, pl->pp, pl->stage, chunk);
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

int layout_check(const struct train_opts *o, struct error *e)
{
    if (o->gpus < 1 || o->gpus > TRAIN_MAX_GPUS)
        return error_set(e, ERR_INVAL, "--gpus %d: from 1 to %d GPUs", o->gpus, TRAIN_MAX_GPUS);
    if (o->pp < 1 || o->pp > o->shape.layers)
        return error_set(e, ERR_INVAL,
                         "--pp %d: the pipeline's stages must divide the model's %d layers", o->pp,
                         o->shape.layers);
    if (o->tp < 1 || o->tp > TRAIN_MAX_GPUS)
        return error_set(e, ERR_INVAL, "--tp %d: from 1 to %d", o->tp, TRAIN_MAX_GPUS);
    if (o->cp < 1 || o->cp > TRAIN_MAX_GPUS)
        return error_set(e, ERR_INVAL, "--cp %d: from 1 to %d", o->cp, TRAIN_MAX_GPUS);
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
    for (int i = 0; i < o->ninject; i++)
        if (o->inject[i].gpu < 0 || o->inject[i].gpu >= o->gpus)
            return error_set(e, ERR_INVAL, "--inject: GPU %d is not one of the %d GPUs",
                             o->inject[i].gpu, o->gpus);
    if (o->fail_gpu >= o->gpus)
        return error_set(e, ERR_INVAL, "--fail: GPU %d is not one of the %d GPUs", o->fail_gpu,
                         o->gpus);
    return 0;
}

struct gpt_calls layout_calls(const struct train_opts *o, const struct layout_place *pl)
{
    struct gpt_calls n = {0};
    for (int c = 0; c < layout_chunks(o); c++) {
        struct gpt_part part;
        layout_chunk_part(o, pl, c, 1, &part);
        part.wslots = sched_splits(o->schedule) && layout_pipelined(o); /* B and W apart */
        struct gpt_calls k = gpt_step_calls(&o->shape, &o->ckpt, &part);
        long m = o->micro_batches > 0 ? o->micro_batches : 1; /* each runs every chunk */
        n.compute += m * k.compute, n.charge += m * k.charge;
        n.tp_sum += m * k.tp_sum, n.tp_half += m * k.tp_half;
        n.cp_shift += m * k.cp_shift, n.ep_a2a += m * k.ep_a2a, n.ep_counts += m * k.ep_counts;
    }
    return n;
}
