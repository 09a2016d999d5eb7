/* Data parallelism, one GPU's part: its buffers, the gradient buckets launched at the model's
 * hook points, ZeRO-3's gathers, the agreement, the parameter sync (par/dp.h). */
#include "config.h"
#include "par/dp.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "comm/coll.h"
#include "num/adamw.h"
#include "num/clip.h"
#include "num/fp.h"
#include "par/layout.h"
#include "sim/cluster.h"

#define NO_UNIT (-100)
#define REC     6 /* floats per GPU in the agreement: loss (2), sum of squares (2), found-inf */

struct dp {
    int zero, prefetch, n, rank; /* the data-parallel group's size and this GPU's place in it */
    int world, wrank;            /* every GPU of the run, for the agreement */
    int stage;                   /* its pipeline stage (how its messages are timed) */
    int *group;                  /* the device ranks of the data-parallel group */
    int xn, *xgroup;             /* expert parallelism: the expert gradient group (par/layout.h) */
    bool xnorm;                  /* this GPU counts its experts in the norm (expert-dp rank 0) */
    size_t (*xr)[2];             /* the flat buffer's expert ranges, ascending */
    int nxr;
    size_t sd, sx; /* their shards: the other elements' over dp, the experts' over dp / ep */
    /* ZeRO-1 with ep: the range this GPU updates is its two packed shards, runs of the flat
     * buffer (own[k] = {off, len}, in packed order), gathered into the fp32 copies below */
    size_t (*own)[2];
    int nown;
    float *pg, *pmaster; /* its gradients; its fp32 weights (fp32 training: no master) */
    int embed_group[2];  /* pipeline: the first and last stage's GPUs of this rank */
    bool pipelined;      /* gradients are reduced once the schedule has run */
    bool accum;          /* ZeRO-2/3 with micro-batches: each one's reduced, its shard added */
    int mb;              /* accum: the micro-batch whose gradients are being reduced */
    bool has_loss;       /* this GPU computes the loss (the last pipeline stage) */
    size_t emb;          /* the tied embedding's elements at the start of the buffer */
    size_t (*skip)[2];   /* ranges [off, off + len) of the flat buffer left out of this GPU's
                            norm, ascending: another GPU counts them */
    int nskip;
    bool mixed;
    enum fp_format wdt, gdt; /* the weights' and the gradients' formats */
    size_t wes, ges;         /* their bytes per element */
    struct gpt *g;
    struct device *d; /* NULL on the host */
    struct shard_plan plan;
    struct dp_mem mem;

    void *w;         /* working weights: Ψ_pad (stages 0-2) or S (3); NULL: the model's fp32 */
    void *gr;        /* gradients: Ψ_pad (0-1) or S (2-3); NULL: the model's fp32 */
    float *master;   /* the range's fp32 master weights; NULL: the weights themselves (fp32) */
    float *mom[2];   /* Adam's m and v over the range */
    void *bucket[2]; /* stages 2-3: one being reduced, one filling */
    int ibucket, next_bucket;
    int passes, micro, last_unit; /* pipelined: backward passes done, of micro; the unit whose
                                     gradients a pass completes last */
    char *arena;                  /* stage 3: the gathered units' buffers, reserved until held */
    void *slot[2];
    int slot_unit[2];
    bool slot_held[2];
    int nslots;
    int *seq; /* stage 3: the units a step gathers, in order, for prefetch */
    int nseq, iseq;
    size_t *bounds;    /* n + 1 chunk edges */
    float *rec;        /* n records of the agreement */
    size_t roff, rlen; /* the range this GPU updates */
    size_t bytes[GPT_MEM_KINDS];
    struct error err;                /* the first failure of a hook's communication */
    uint64_t states, embed, scalars; /* bytes sent this step, by what for */
    double compute_s;
};

/* ------------------------------------------------------------------ set-up */

static enum fp_format grad_format(const struct train_opts *o)
{
    return o->precision == FP_FP32 || o->grad_fp32 ? FP_FP32 : o->precision;
}

/* Expert parallelism: the elements of the part's flat buffer holding experts (0 without). */
static size_t expert_elems(const struct train_opts *o, const struct gpt_part *part)
{
    struct gpt_part whole = {.count = o->shape.layers, .embed = true, .head = true, .slots = 1};
    const struct gpt_part *pt = part ? part : &whole;
    size_t r[1][2], n = pt->ep > 1 ? gpt_part_experts(&o->shape, pt, NULL, 0) : 0;
    if (n) /* every expert layer's range is E / ep experts long */
        gpt_part_experts(&o->shape, pt, r, 1);
    return n ? n * r[0][1] : 0;
}

void dp_model_seam(const struct train_opts *o, const struct gpt_part *part, struct gpt_alloc *seam)
{
    bool mixed = o->precision != FP_FP32;
    seam->params_workspace = mixed || o->zero >= 3;
    /* the model's fp32 gradients are the gradients when 4-byte and unsharded */
    seam->grads_workspace = grad_format(o) != FP_FP32 || o->zero >= 2;
    size_t n = gpt_part_param_count(&o->shape, part), x = expert_elems(o, part);
    /* expert parallelism: the other weights padded to a multiple of the data ranks (their
     * gradients are reduced in even shards of them, par/dp.h) */
    seam->padded =
        x ? x + shard_padded(n - x, layout_grad_ranks(o)) : shard_padded(n, layout_grad_ranks(o));
}

/* Buffers the strategy allocates for one model chunk. */
static long buffers(const struct train_opts *o)
{
    bool mixed = o->precision != FP_FP32;
    struct gpt_alloc s = {0};
    dp_model_seam(o, NULL, &s);
    long n = 2 + (o->gpus > 1 ? 2 : 0); /* Adam's moments; chunk bounds and the agreement */
    n += mixed || o->zero >= 3;         /* working weights of their own */
    n += s.grads_workspace;             /* gradients of their own */
    n += mixed;                         /* master weights */
    n += o->zero >= 2 ? 2 : 0;          /* buckets */
    n += o->zero >= 3;                  /* the gathered units' arena */
    return n;
}

/* Ring passes of one model chunk's part over its n-GPU gradient group in a step, a pass N - 1
 * sends: the buckets (cut where the expert ranges begin and end, with expert parallelism),
 * ZeRO-3's pieces and gathers, the tied embedding's all-reduce between the pipeline's ends. */
static long passes(const struct train_opts *o, const struct gpt_part *part, int n)
{
    long L = part->count, p = 0, m = o->micro_batches; /* ZeRO-2/3: each micro-batch's */
    if (n > 1 && o->zero >= 3) /* pieces; the ends (two ranges) and each layer, gathered twice */
        p += m * ((L + 2) + 2 * (2 + L));
    else if (n > 1) {
        struct gpt_alloc seam = {0};
        dp_model_seam(o, part, &seam);
        size_t es = grad_format(o) == FP_FP32 ? 4 : 2, belems = o->bucket_bytes / es;
        belems = belems ? belems : 1;
        long buckets = (long)((seam.padded + belems - 1) / belems);
        buckets += part->ep > 1 ? 2 * (long)gpt_part_experts(&o->shape, part, NULL, 0) : 0;
        /* DDP all-reduces each bucket; ZeRO 1-2 reduce-scatter it, then all-gather the
         * weights at once, or with experts bucket by bucket (packed_update) */
        p += o->zero == 0 || part->ep > 1 ? 2 * buckets : (o->zero >= 2 ? m : 1) * buckets + 1;
    }
    return p * (n - 1) + (o->pp > 1 && (part->embed || part->head) ? 2 : 0);
}

static void *mem_alloc(struct dp *p, enum gpt_mem kind, size_t bytes, const char *what)
{
    void *q = p->mem.alloc(p->mem.ctx, kind, bytes, what);
    if (q)
        p->bytes[kind] += bytes;
    return q;
}

static void mem_free(struct dp *p, enum gpt_mem kind, void *q, size_t bytes)
{
    if (q)
        p->mem.free(p->mem.ctx, kind, q, bytes);
}

static void charge(struct dp *p, long long delta)
{
    if (p->mem.charge)
        p->mem.charge(p->mem.ctx, GPT_MEM_COMM, delta);
}

void dp_free(struct dp *p)
{
    if (!p)
        return;
    size_t pad = p->plan.padded, S = p->plan.shard, full = p->zero >= 1 ? S : pad;
    mem_free(p, GPT_MEM_WEIGHTS, p->w, (p->zero >= 3 ? S : pad) * p->wes);
    mem_free(p, GPT_MEM_GRADS, p->gr, (p->zero >= 2 ? S : pad) * p->ges);
    mem_free(p, GPT_MEM_MASTER, p->master, full * 4);
    for (int i = 0; i < 2; i++) {
        mem_free(p, GPT_MEM_OPTIMIZER, p->mom[i], full * 4);
        mem_free(p, GPT_MEM_COMM, p->bucket[i], p->plan.bucket_max * p->ges);
    }
    mem_free(p, GPT_MEM_ARENA, p->arena, (size_t)p->nslots * p->plan.unit_max * p->wes);
    mem_free(p, GPT_MEM_WORKSPACE, p->bounds, ((size_t)p->n + 1) * sizeof *p->bounds);
    mem_free(p, GPT_MEM_WORKSPACE, p->rec, (size_t)p->world * REC * 4);
    mem_free(p, GPT_MEM_WORKSPACE, p->pg, p->rlen * 4);
    mem_free(p, GPT_MEM_WORKSPACE, p->pmaster, p->rlen * 4);
    free(p->seq);
    free(p->group);
    free(p->xgroup);
    free(p->xr);
    free(p->own);
    free(p->skip);
    shard_plan_fini(&p->plan);
    free(p);
}

/* The ranges of the flat buffer this GPU leaves out of the norm, which counts every gradient
 * once: both ends of a pipeline hold the tied embedding's summed gradient (the first's
 * counts), every rank of a tensor-parallel group the same norm weights' (rank 0's count). 0
 * or ERR_NOMEM. */
static int norm_skips(struct dp *p, const struct train_opts *o, const struct layout_place *pl,
                      bool tied_copy)
{
    size_t nnorm = pl->tprank > 0 ? gpt_part_norms(&o->shape, &pl->part, NULL, 0) : 0;
    size_t *off = nnorm ? malloc(nnorm * sizeof *off) : NULL;
    p->skip = malloc((nnorm + 1) * sizeof *p->skip);
    if (!p->skip || (nnorm && !off)) {
        free(off);
        return ERR_NOMEM;
    }
    if (tied_copy && !pl->part.embed)
        p->skip[p->nskip][0] = 0, p->skip[p->nskip++][1] = p->emb;
    if (nnorm)
        gpt_part_norms(&o->shape, &pl->part, off, nnorm);
    for (size_t i = 0; i < nnorm; i++)
        p->skip[p->nskip][0] = off[i], p->skip[p->nskip++][1] = (size_t)o->shape.d;
    free(off);
    return 0;
}

/* ZeRO-3: the buffers the gathered units go into, and the order a step gathers them in: the
 * ends, each layer, the ends, each layer backwards. false when out of memory. */
static bool alloc_gathered(struct dp *p, int layers)
{
    p->nslots = p->prefetch ? 2 : 1;
    size_t slot = p->plan.unit_max * p->wes;
    p->arena = mem_alloc(p, GPT_MEM_ARENA, (size_t)p->nslots * slot, "gathered weights");
    p->seq = malloc((size_t)(2 * layers + 2) * sizeof *p->seq);
    if (!p->arena || !p->seq)
        return false;
    for (int i = 0; i < p->nslots; i++)
        p->slot[i] = p->arena + (size_t)i * slot;
    p->seq[p->nseq++] = 0;
    for (int l = 0; l < layers; l++)
        p->seq[p->nseq++] = 1 + l;
    p->seq[p->nseq++] = 0;
    for (int l = layers - 1; l >= 0; l--)
        p->seq[p->nseq++] = 1 + l;
    return true;
}

/* The strategy's buffers, by what the stage keeps (par/dp.h's table); false when out of
 * memory. */
static bool alloc_buffers(struct dp *p, const struct train_opts *o, const struct layout_place *pl)
{
    size_t pad = p->plan.padded, S = p->plan.shard;
    struct gpt_alloc seam = {0};
    dp_model_seam(o, &pl->part, &seam);
    bool ok = true;
    if (p->mixed || p->zero >= 3)
        ok &= (p->w = mem_alloc(p, GPT_MEM_WEIGHTS, (p->zero >= 3 ? S : pad) * p->wes,
                                "weights")) != NULL;
    if (seam.grads_workspace)
        ok &= (p->gr = mem_alloc(p, GPT_MEM_GRADS, (p->zero >= 2 ? S : pad) * p->ges,
                                 "gradients")) != NULL;
    if (p->mixed)
        ok &= (p->master = mem_alloc(p, GPT_MEM_MASTER, p->rlen * 4, "master weights")) != NULL;
    for (int i = 0; i < 2 && ok; i++)
        ok &= (p->mom[i] = mem_alloc(p, GPT_MEM_OPTIMIZER, p->rlen * 4, i ? "adam v" : "adam m")) !=
              NULL;
    if (p->zero >= 2)
        for (int i = 0; i < 2 && ok; i++)
            ok &= (p->bucket[i] = mem_alloc(p, GPT_MEM_COMM, p->plan.bucket_max * p->ges,
                                            "gradient bucket")) != NULL;
    if (p->zero >= 3 && ok)
        ok = alloc_gathered(p, pl->part.count);
    if (p->own) { /* the packed range's gradients, and its fp32 weights in fp32 training */
        ok &= (p->pg = mem_alloc(p, GPT_MEM_WORKSPACE, p->rlen * 4, "packed gradients")) != NULL;
        if (!p->mixed)
            ok &= (p->pmaster = mem_alloc(p, GPT_MEM_WORKSPACE, p->rlen * 4, "packed weights")) !=
                  NULL;
    }
    if (ok && p->world > 1) /* only to talk to other GPUs */
        ok &= (p->bounds = mem_alloc(p, GPT_MEM_WORKSPACE, ((size_t)p->n + 1) * sizeof *p->bounds,
                                     "chunk bounds")) != NULL &&
              (p->rec = mem_alloc(p, GPT_MEM_WORKSPACE, (size_t)p->world * REC * 4, "agreement")) !=
                  NULL;
    return ok;
}

/* Of the run [a, z) of the flat buffer, packed from *at, the part in packed [lo, hi): onto
 * p->own. */
static void own_part(struct dp *p, size_t a, size_t z, size_t *at, size_t lo, size_t hi)
{
    size_t x0 = *at > lo ? *at : lo, x1 = *at + (z - a) < hi ? *at + (z - a) : hi;
    if (x0 < x1)
        p->own[p->nown][0] = a + x0 - *at, p->own[p->nown++][1] = x1 - x0;
    *at += z - a;
}

/* ZeRO-1 with ep: the runs of this GPU's two packed shards, the others' then the experts'. */
static int owned_runs(struct dp *p, size_t padded, int xrank)
{
    p->own = malloc((2 * (size_t)p->nxr + 2) * sizeof *p->own);
    if (!p->own)
        return ERR_NOMEM;
    size_t at = 0, a = 0, lo = (size_t)p->rank * p->sd;
    for (int k = 0; k <= p->nxr; k++) {
        own_part(p, a, k < p->nxr ? p->xr[k][0] : padded, &at, lo, lo + p->sd);
        if (k < p->nxr)
            a = p->xr[k][0] + p->xr[k][1];
    }
    at = 0, lo = (size_t)xrank * p->sx;
    for (int k = 0; k < p->nxr; k++)
        own_part(p, p->xr[k][0], p->xr[k][0] + p->xr[k][1], &at, lo, lo + p->sx);
    return 0;
}

/* Expert parallelism: the expert gradient group, the expert ranges of the flat buffer and
 * the shards of its two kinds of elements, each kind counted as if packed together (the
 * padding ends the others'). 0 or ERR_NOMEM. */
static int experts_apart(struct dp *p, const struct train_opts *o, const struct layout_place *pl)
{
    p->xn = pl->dp / pl->ep;
    p->xnorm = pl->dprank < pl->ep;
    p->nxr = (int)gpt_part_experts(&o->shape, &pl->part, NULL, 0);
    p->xgroup = malloc((size_t)p->xn * sizeof *p->xgroup);
    p->xr = malloc(((size_t)p->nxr + 1) * sizeof *p->xr);
    if (!p->xgroup || !p->xr)
        return ERR_NOMEM;
    layout_expert_grad_group(pl, p->xgroup);
    gpt_part_experts(&o->shape, &pl->part, p->xr, (size_t)p->nxr);
    struct gpt_alloc seam = {0};
    dp_model_seam(o, &pl->part, &seam);
    size_t x = expert_elems(o, &pl->part);
    p->sd = (seam.padded - x) / (size_t)p->n, p->sx = x / (size_t)p->xn;
    if (o->zero == 1)
        return owned_runs(p, seam.padded, pl->dprank / pl->ep);
    return 0;
}

/* The buckets cut where the expert ranges begin and end, the experts' marked. 0 or ERR_NOMEM. */
static int split_buckets(struct dp *p)
{
    int nb = p->plan.nbuckets, n = 0;
    struct shard_range *b = malloc(((size_t)nb + 2 * (size_t)p->nxr) * sizeof *b);
    if (!b)
        return ERR_NOMEM;
    for (int i = 0; i < nb; i++) { /* each bucket from its end down, as the buckets go */
        struct shard_range r = p->plan.buckets[i];
        size_t end = i == 0 ? p->plan.padded : r.off + r.len; /* padded apart (dp_model_seam) */
        if (r.off >= end)
            continue;
        while (end > r.off) {
            size_t lo = r.off;
            bool expert = false;
            for (int k = 0; k < p->nxr; k++) {
                size_t a = p->xr[k][0], z = a + p->xr[k][1];
                if (a < end && z >= end)
                    expert = true, lo = a > lo ? a : lo;
                else if (z < end && z > lo)
                    lo = z;
            }
            b[n++] = (struct shard_range){lo, end - lo, shard_unit_at(&p->plan, lo), expert};
            end = lo;
        }
    }
    free(p->plan.buckets);
    p->plan.buckets = b, p->plan.nbuckets = n;
    return 0;
}

int dp_new(struct dp **out, const struct train_opts *o, struct gpt *g, struct device *d,
           const struct layout_place *pl, const struct dp_mem *mem, struct error *e)
{
    *out = NULL;
    struct dp *p = calloc(1, sizeof *p);
    if (!p)
        return error_set(e, ERR_NOMEM, "out of memory");
    p->mem = *mem;
    p->zero = o->zero;
    p->prefetch = o->prefetch;
    p->n = pl->dp * pl->cp; /* the weights' copies: the gradients reduce over dp x cp */
    p->rank = layout_grad_rank(pl);
    p->world = o->gpus > 0 ? o->gpus : 1;
    p->wrank = pl->rank;
    /* ZeRO 2 and 3 keep a shard of the gradients only: with micro-batches (one stage), each
     * micro-batch's backward pass reduce-scatters its buckets as they complete and each GPU
     * adds its part to its shard (DeepSpeed's gradient accumulation at stages 2 and 3) */
    p->accum = o->zero >= 2 && o->micro_batches > 1 && o->pp == 1;
    p->pipelined = layout_pipelined(o) && !p->accum;
    /* a pass completes the embedding's gradients last, or its first layer's */
    p->micro = o->micro_batches;
    p->last_unit = pl->part.embed ? GPT_UNIT_EMBED : pl->part.first;
    p->has_loss = pl->part.head && pl->tprank == 0; /* the ranks of a tp group agree */
    const struct gpt_config *c = &o->shape;
    bool tied_copy = pl->pp > 1 && (pl->part.embed || pl->part.head);
    p->emb = tied_copy ? (size_t)(c->vocab / pl->tp) * (size_t)c->d : 0; /* its vocabulary rows */
    p->stage = pl->stage;
    p->embed_group[0] = layout_rank(pl, LAYOUT_PP, 0);
    /* the last virtual stage's GPU: the last stage's, or zbv's stage 0 (calc/sched.h) */
    int last = pl->pp * layout_chunks(o) - 1;
    p->embed_group[1] = layout_rank(pl, LAYOUT_PP, sched_stage_of(o->schedule, pl->pp, last));
    p->group = malloc((size_t)p->n * sizeof *p->group);
    if (!p->group || norm_skips(p, o, pl, tied_copy)) {
        dp_free(p);
        return error_set(e, ERR_NOMEM, "out of memory");
    }
    layout_grad_group(pl, p->group);
    if (pl->ep > 1 && experts_apart(p, o, pl)) {
        dp_free(p);
        return error_set(e, ERR_NOMEM, "out of memory");
    }
    p->mixed = o->precision != FP_FP32;
    p->wdt = o->precision;
    p->gdt = grad_format(o);
    p->wes = p->mixed ? 2 : 4;
    p->ges = p->gdt == FP_FP32 ? 4 : 2;
    p->g = g;
    p->d = d;
    p->slot_unit[0] = p->slot_unit[1] = NO_UNIT;
    /* stages 0-2 reduce buckets of the size asked for; stage 3 one piece per unit */
    size_t belems = o->bucket_bytes / p->ges;
    if (p->zero >= 3)
        belems = 0;
    else if (belems == 0)
        belems = 1;
    int rc = shard_plan_init(&p->plan, &o->shape, &pl->part, p->n, belems, e);
    if (!rc && p->nxr) {
        struct gpt_alloc seam = {0};
        dp_model_seam(o, &pl->part, &seam);
        p->plan.padded = seam.padded;
    }
    if (!rc && p->nxr && split_buckets(p))
        rc = error_set(e, ERR_NOMEM, "out of memory");
    if (rc) {
        dp_free(p);
        return rc;
    }
    p->roff = p->zero >= 1 ? (size_t)p->rank * p->plan.shard : 0;
    p->rlen = p->zero >= 1 ? p->plan.shard : p->plan.padded;
    if (p->own) /* its two packed shards */
        p->roff = 0, p->rlen = p->sd + p->sx;
    if (!alloc_buffers(p, o, pl)) {
        dp_free(p);
        return error_set(e, ERR_NOMEM, "out of memory allocating the strategy's buffers");
    }
    *out = p;
    return 0;
}

/* ------------------------------------------------------------------ communication */

/* A ring collective over a group (NULL: every GPU) of size n, its bytes sent added to *sent:
 * the states', the tied embedding's or the agreement's. Timed, in a run timed as another model
 * (sim/spec.h), as the parameters or the embedding they carry stand for; the agreement's
 * numbers as sent. */
static int ring_over(struct dp *p, const int *group, int n, uint64_t *sent, struct coll *c)
{
    if (!p->d || n <= 1 || p->err.code)
        return p->err.code;
    c->group = group, c->group_size = group ? n : 0;
    struct time_msg_scale as = {1, 1, 0, TIME_MSG_NONE};
    if (sent != &p->scalars)
        as = time_msg(&dev_spec(p->d)->time, p->stage,
                      sent == &p->embed ? TIME_MSG_TIED : TIME_MSG_PARAMS);
    /* its chunks are cut where the shards cut the buffer (the same sums at every stage), so a
     * bucket or unit inside one GPU's shard is one chunk carried round the whole ring; the
     * framework it stands for cuts the collective in n even chunks (PyTorch DDP's buckets,
     * FSDP's units), and the time is theirs */
    if (sent == &p->states && dev_spec(p->d)->time.as[0])
        as.each = (double)c->count * fp_bytes(c->dtype) / n;
    struct time_msg_scale was = dev_time_msgs(p->d, as);
    uint64_t before = dev_stats(p->d).bytes_sent;
    int rc = coll_run(p->d, c, &p->err);
    *sent += dev_stats(p->d).bytes_sent - before;
    dev_time_msgs(p->d, was);
    return rc;
}

/* A ring collective of the data-parallel group on buf (count elements of fmt), chunks cut by
 * the shards where range [off, off + count) of the flat buffer lies (else even chunks). */
static int ring(struct dp *p, enum cost_op op, void *buf, size_t count, enum fp_format fmt,
                size_t off, bool by_shards, int stream)
{
    if (by_shards && p->n > 1)
        shard_bounds(&p->plan, off, count, p->bounds);
    struct coll c = {.op = op,
                     .algo = COST_RING,
                     .buf = buf,
                     .count = count,
                     .dtype = fmt,
                     .stream = stream,
                     .bounds = by_shards ? p->bounds : NULL};
    return ring_over(p, p->group, p->n, &p->states, &c);
}

static void stream_wait(struct dp *p, int waiter, int on)
{
    if (p->d)
        dev_stream_wait(p->d, waiter, on);
}

/* Expert parallelism: where the shards of bucket b's kind cut it. The elements of a kind are
 * counted as if packed together, the experts' (E / ep experts of each expert layer, X in all)
 * and the others' (the padding last): GPU i of a group of n reduces packed elements [i S, (i +
 * 1) S), S the kind's shard (X / (dp / ep), or the others' padded count / dp). Summed over
 * the buckets every GPU's chunks then hold S elements of each kind: a ring all-reduce sends
 * 2 (n - 1) S of them from every GPU (calc/traffic.h). */
static void packed_bounds(struct dp *p, const struct shard_range *b)
{
    size_t before = 0; /* expert elements before the bucket */
    for (int k = 0; k < p->nxr && p->xr[k][0] < b->off; k++)
        before += b->off < p->xr[k][0] + p->xr[k][1] ? b->off - p->xr[k][0] : p->xr[k][1];
    size_t at = b->expert ? before : b->off - before, S = b->expert ? p->sx : p->sd;
    int n = b->expert ? p->xn : p->n;
    for (int i = 0; i <= n; i++) {
        size_t edge = i == n ? SIZE_MAX : (size_t)i * S;
        p->bounds[i] = edge <= at ? 0 : edge - at >= b->len ? b->len : edge - at;
    }
}

/* ZeRO-2/3: n elements of this GPU's part of a reduced bucket, src, into its shard at dst (in
 * the gradients' format), or added to what the earlier micro-batches left there. */
static void keep_own(struct dp *p, char *dst, const char *src, size_t n)
{
    if (!p->accum || p->mb == 0) {
        memcpy(dst, src, n * p->ges);
        return;
    }
    float x[256], y[256];
    for (size_t i = 0; i < n; i += 256) {
        size_t k = n - i < 256 ? n - i : 256;
        fp_unpack_n(p->gdt, x, dst + i * p->ges, k);
        fp_unpack_n(p->gdt, y, src + i * p->ges, k);
        for (size_t j = 0; j < k; j++)
            x[j] += y[j];
        fp_pack_n(p->gdt, dst + i * p->ges, x, k);
    }
}

/* Bucket b's gradients are complete in the model's fp32 buffer (or, encoded, already in the
 * gradient buffer): reduce them. */
static void launch(struct dp *p, const struct shard_range *b, bool encoded)
{
    float *src = gpt_grads(p->g) + b->off;
    stream_wait(p, DP_STREAM_GRADS, DP_STREAM_COMPUTE); /* they exist once computed */
    if (p->zero <= 1) {
        char *dst = p->gr ? (char *)p->gr + b->off * p->ges : (char *)src;
        if (p->gr && !encoded)
            fp_pack_n(p->gdt, dst, src, b->len);
        if (p->nxr) { /* expert parallelism: the experts over their own group */
            packed_bounds(p, b);
            struct coll c = {.op = p->zero == 0 ? COST_ALLREDUCE : COST_REDUCE_SCATTER,
                             .algo = COST_RING,
                             .buf = dst,
                             .count = b->len,
                             .dtype = p->gdt,
                             .stream = DP_STREAM_GRADS,
                             .bounds = p->bounds};
            ring_over(p, b->expert ? p->xgroup : p->group, b->expert ? p->xn : p->n, &p->states,
                      &c);
            return;
        }
        ring(p, p->zero == 0 ? COST_ALLREDUCE : COST_REDUCE_SCATTER, dst, b->len, p->gdt, b->off,
             true, DP_STREAM_GRADS);
        return;
    }
    /* stages 2-3: into a bucket buffer, reduce-scattered, this GPU's part kept (added to
     * the earlier micro-batches' with micro-batches; the model's buffer then starts again) */
    char *buf = p->bucket[p->ibucket];
    p->ibucket ^= 1;
    fp_pack_n(p->gdt, buf, src, b->len);
    if (p->accum)
        memset(src, 0, b->len * sizeof *src);
    ring(p, COST_REDUCE_SCATTER, buf, b->len, p->gdt, b->off, true, DP_STREAM_GRADS);
    size_t S = p->plan.shard, lo = (size_t)p->rank * S, hi = lo + S;
    size_t a = b->off > lo ? b->off : lo, z = b->off + b->len < hi ? b->off + b->len : hi;
    if (a < z)
        keep_own(p, (char *)p->gr + (a - lo) * p->ges, buf + (a - b->off) * p->ges, z - a);
}

/* ZeRO-3: unit u (shard_plan's index) gathered into slot s and decoded into the model's
 * fp32 weights. */
static void gather(struct dp *p, int s, int u)
{
    const struct shard_unit *un = &p->plan.units[u];
    charge(p, (long long)(un->elems * p->wes));
    p->slot_unit[s] = u;
    stream_wait(p, DP_STREAM_GATHER, DP_STREAM_COMPUTE); /* the slot's last unit is done */
    char *buf = p->slot[s];
    size_t S = p->plan.shard, lo = (size_t)p->rank * S;
    for (int i = 0; i < un->nr; i++) {
        const struct shard_range *r = &un->r[i];
        size_t one[2], *bounds = p->bounds ? p->bounds : one;
        shard_bounds(&p->plan, r->off, r->len, bounds);
        size_t a = bounds[p->rank], z = bounds[p->rank + 1];
        memcpy(buf + a * p->wes, (char *)p->w + (r->off + a - lo) * p->wes, (z - a) * p->wes);
        ring(p, COST_ALLGATHER, buf, r->len, p->wdt, r->off, true, DP_STREAM_GATHER);
        fp_unpack_n(p->wdt, gpt_params(p->g) + r->off, buf, r->len);
        buf += r->len * p->wes;
    }
}

static int slot_of(const struct dp *p, int u)
{
    for (int s = 0; s < p->nslots; s++)
        if (p->slot_unit[s] == u)
            return s;
    return -1;
}

static int free_slot(const struct dp *p)
{
    for (int s = 0; s < p->nslots; s++)
        if (!p->slot_held[s] && p->slot_unit[s] == NO_UNIT)
            return s;
    return -1;
}

static void acquire(struct dp *p, int u)
{
    int s = slot_of(p, u);
    if (s < 0) {
        s = free_slot(p);
        if (s < 0) { /* cannot happen: a unit is released before the next is asked for */
            error_set(&p->err, ERR_RUN, "ZeRO-3: no free buffer to gather a unit into");
            return;
        }
        gather(p, s, u);
    }
    p->slot_held[s] = true;
    stream_wait(p, DP_STREAM_COMPUTE, DP_STREAM_GATHER); /* it must have arrived */
    /* where this unit stands in the step's order; the next one is prefetched */
    int i = p->iseq;
    while (i < p->nseq && p->seq[i] != u)
        i++;
    for (i = i < p->nseq ? i : 0; i < p->nseq && p->seq[i] != u; i++) /* the next micro-batch */
        ;
    if (i < p->nseq) {
        p->iseq = i + 1;
        if (p->prefetch && i + 1 < p->nseq && slot_of(p, p->seq[i + 1]) < 0) {
            int t = free_slot(p);
            if (t >= 0)
                gather(p, t, p->seq[i + 1]);
        }
    }
}

static void release(struct dp *p, int u)
{
    int s = slot_of(p, u);
    if (s < 0)
        return;
    charge(p, -(long long)(p->plan.units[u].elems * p->wes));
    p->slot_unit[s] = NO_UNIT;
    p->slot_held[s] = false;
}

static int unit_index(const struct dp *p, int unit)
{
    return unit < 0 ? 0 : 1 + unit - p->plan.first;
}

void dp_hook(struct dp *p, enum gpt_hook h, int unit)
{
    if (p->pipelined) {
        /* each unit's gradients are complete once the last micro-batch's backward pass has
         * computed them: its buckets are reduced then, behind the rest of that pass (PyTorch
         * DDP's no_sync leaves the last pass to reduce, Megatron-LM overlaps it), but the tied
         * embedding's, which a pipeline's two ends sum first (flush) */
        if (h != GPT_HOOK_GRADS)
            return;
        if (p->passes < p->micro - 1) {
            p->passes += unit == p->last_unit;
            return;
        }
        while (p->next_bucket < p->plan.nbuckets && p->plan.buckets[p->next_bucket].unit == unit &&
               p->plan.buckets[p->next_bucket].off >= p->emb)
            launch(p, &p->plan.buckets[p->next_bucket++], false);
        return;
    }
    if (p->zero >= 3) {
        if (h == GPT_HOOK_FORWARD || h == GPT_HOOK_BACKWARD)
            acquire(p, unit_index(p, unit));
        else if (h == GPT_HOOK_FORWARD_DONE || (h == GPT_HOOK_GRADS && unit >= 0))
            release(p, unit_index(p, unit));
    }
    if (h != GPT_HOOK_GRADS)
        return;
    if (p->accum && p->next_bucket == p->plan.nbuckets) /* the next micro-batch's backward */
        p->next_bucket = 0, p->mb++;
    while (p->next_bucket < p->plan.nbuckets && p->plan.buckets[p->next_bucket].unit == unit)
        launch(p, &p->plan.buckets[p->next_bucket++], false);
}

/* ------------------------------------------------------------------ the step */

/* ZeRO-1 with ep: the packed range from the flat buffer flat (in), or into it. */
static void packed_copy(const struct dp *p, float *packed, float *flat, bool in)
{
    for (int k = 0; k < p->nown; k++) {
        float *f = flat + p->own[k][0];
        size_t n = p->own[k][1];
        memcpy(in ? packed : f, in ? f : packed, n * 4);
        packed += n;
    }
}

void dp_load_weights(struct dp *p, const float *all)
{
    size_t pad = p->plan.padded, S = p->plan.shard, lo = (size_t)p->rank * S;
    float *params = gpt_params(p->g);
    if (all != params)
        memcpy(params, all, p->plan.params * 4);
    if (p->own)
        packed_copy(p, p->master ? p->master : p->pmaster, params, true);
    else if (p->master)
        memcpy(p->master, params + p->roff, p->rlen * 4);
    if (p->zero >= 3) {
        if (p->mixed)
            fp_pack_n(p->wdt, p->w, params + lo, S); /* the master rounded to the format */
        else
            memcpy(p->w, params + lo, S * 4);
    } else if (p->mixed)
        fp_pack_n(p->wdt, p->w, params, pad);
    if (p->mixed) /* the model computes with the rounded weights */
        fp_round_n(p->wdt, params, params, pad);
}

void dp_add_compute(struct dp *p, double seconds)
{
    p->compute_s += seconds;
}

double dp_compute_s(const struct dp *p)
{
    return p->compute_s;
}

/* Pipelined: every micro-batch's gradients are in the model's fp32 buffer. Those of the
 * buckets the last backward pass did not reduce (dp_hook) go into the gradient buffer's
 * format; the two ends sum the tied embedding's (an all-reduce between the first and the last
 * stage, as Megatron-LM's embedding group does); then those buckets are reduced over the
 * data-parallel group. */
static void flush(struct dp *p)
{
    /* the buckets the last pass left: the buffer's start, up to those it reduced */
    size_t left = p->next_bucket ? p->plan.buckets[p->next_bucket - 1].off : p->plan.padded;
    p->passes = 0;
    if (p->gr && p->zero <= 1)
        fp_pack_n(p->gdt, p->gr, gpt_grads(p->g), left);
    stream_wait(p, DP_STREAM_GRADS, DP_STREAM_COMPUTE);
    if (p->emb && p->embed_group[0] != p->embed_group[1]) { /* one GPU's two ends: dp_tie */
        void *buf = p->gr ? p->gr : (void *)gpt_grads(p->g);
        struct coll c = {.op = COST_ALLREDUCE,
                         .algo = COST_RING,
                         .buf = buf,
                         .count = p->emb,
                         .dtype = p->gdt,
                         .stream = DP_STREAM_GRADS};
        ring_over(p, p->embed_group, 2, &p->embed, &c);
    }
    for (; p->next_bucket < p->plan.nbuckets; p->next_bucket++)
        launch(p, &p->plan.buckets[p->next_bucket], true);
}

void dp_tie(struct dp *a, struct dp *b)
{
    if (!a->emb || a->emb != b->emb || a->embed_group[0] != a->embed_group[1])
        return;
    float *x = gpt_grads(a->g), *y = gpt_grads(b->g);
    for (size_t i = 0; i < a->emb; i++)
        x[i] = y[i] = x[i] + y[i];
}

int dp_grad_sync(struct dp *p, struct error *e)
{
    if (p->pipelined)
        flush(p);
    if (p->d)
        dev_join(p->d); /* the optimizer waits for every bucket */
    if (p->err.code) {
        *e = p->err;
        return p->err.code;
    }
    return 0;
}

/* Expert parallelism's part of the norm (DDP, unscaled gradients g): this GPU's packed shard
 * of the elements that are no experts', and every expert it holds when it is expert-data rank
 * 0 (those GPUs hold every expert once between them). */
static double packed_sumsq(const struct dp *p, const float *g)
{
    size_t lo = (size_t)p->rank * p->sd, hi = lo + p->sd, at = 0, a = 0;
    double s = 0;
    for (int k = 0; k <= p->nxr; k++) { /* the others' elements [a, z), packed from at */
        size_t z = k < p->nxr ? p->xr[k][0] : p->plan.padded;
        size_t x0 = at > lo ? at : lo, x1 = at + (z - a) < hi ? at + (z - a) : hi;
        for (size_t i = x0; i < x1; i++)
            s += (double)g[a + i - at] * g[a + i - at];
        at += z - a;
        if (k < p->nxr) {
            for (size_t i = 0; i < p->xr[k][1] && p->xnorm; i++)
                s += (double)g[z + i] * g[z + i];
            a = z + p->xr[k][1];
        }
    }
    return s;
}

float *dp_unscale(struct dp *p, float inv, bool *found, double *sumsq)
{
    /* the fp32 gradients of the range: the model's own buffer (in place) or decoded into it */
    float *ug = gpt_grads(p->g) + p->roff;
    if (p->own) { /* its packed shards, reduced in the flat buffers */
        if (p->gr)
            fp_unpack_n(p->gdt, ug, p->gr, p->plan.padded);
        packed_copy(p, p->pg, ug, true);
        double sq = 0;
        *found = clip_unscale(p->pg, p->rlen, inv, &sq);
        *sumsq = sq;
        return p->pg;
    }
    if (p->gr) {
        const char *src = (const char *)p->gr + (p->zero >= 2 ? 0 : p->roff * p->ges);
        fp_unpack_n(p->gdt, ug, src, p->rlen);
    }
    /* unscale and look for inf/NaN over the range, and sum the squares of this GPU's shard in
     * order (the global norm is the shards' sums added in GPU order), but what another GPU
     * counts: [done, rlen) is still to unscale */
    size_t lo = p->zero >= 1 ? 0 : (size_t)p->rank * p->plan.shard, hi = lo + p->plan.shard;
    bool bad = false;
    double s = 0;
    size_t a = lo, done = 0;
    for (int k = 0; k <= p->nskip && a < hi; k++) {
        /* [a, z): up to the next skipped range (relative to the range this GPU holds) */
        size_t x0 = k < p->nskip ? p->skip[k][0] : SIZE_MAX,
               x1 = k < p->nskip ? x0 + p->skip[k][1] : 0;
        x0 = x0 == SIZE_MAX ? hi : x0 > p->roff ? x0 - p->roff : 0;
        x1 = x1 > p->roff ? x1 - p->roff : 0;
        size_t z = x0 < hi ? x0 : hi;
        if (a < z) {
            bad |= clip_unscale(ug + done, a - done, inv, NULL);
            bad |= clip_unscale(ug + a, z - a, inv, &s);
            done = a = z;
        }
        if (x1 > a)
            a = x1;
    }
    bad |= clip_unscale(ug + done, p->rlen - done, inv, NULL);
    if (p->nxr) /* expert parallelism: its packed shards instead */
        s = packed_sumsq(p, ug);
    *found = bad;
    *sumsq = s;
    return ug;
}

int dp_agree(struct dp *p, double loss, double sumsq, bool found, double *gloss, double *gsumsq,
             bool *gfound, struct error *e)
{
    if (p->world == 1) {
        *gloss = loss, *gsumsq = sumsq, *gfound = found;
        return 0;
    }
    float *mine = p->rec + (size_t)p->wrank * REC;
    memset(mine, 0, REC * 4);
    memcpy(mine, &loss, 8);
    memcpy(mine + 2, &sumsq, 8);
    mine[4] = found ? 1.0f : 0.0f;
    mine[5] = p->has_loss ? 1.0f : 0.0f;
    /* an all-gather over every GPU is a copy: the doubles travel as their bits */
    struct coll c = {.op = COST_ALLGATHER,
                     .algo = COST_RING,
                     .buf = p->rec,
                     .count = (size_t)p->world * REC,
                     .dtype = FP_FP32};
    int rc = ring_over(p, NULL, p->world, &p->scalars, &c);
    if (rc) {
        *e = p->err;
        return rc;
    }
    /* the loss is the mean over the GPUs that compute one (the last pipeline stage's) */
    double l = 0, s = 0;
    int nl = 0;
    bool f = false;
    for (int i = 0; i < p->world; i++) {
        const float *r = p->rec + (size_t)i * REC;
        double li, si;
        memcpy(&li, r, 8);
        memcpy(&si, r + 2, 8);
        if (r[5] != 0.0f)
            l += li, nl++;
        s += si;
        f |= r[4] != 0.0f;
    }
    *gloss = l / nl;
    *gsumsq = s;
    *gfound = f;
    return 0;
}

void dp_range(const struct dp *p, size_t *off, size_t *n)
{
    *off = p->roff;
    *n = p->rlen;
}

float *dp_master(struct dp *p)
{
    if (p->master)
        return p->master;
    if (p->pmaster)
        return p->pmaster;
    return p->zero >= 3 ? p->w : gpt_params(p->g) + p->roff;
}

size_t dp_flat_index(const struct dp *p, size_t i)
{
    for (int k = 0; k < p->nown; k++) {
        if (i < p->own[k][1])
            return p->own[k][0] + i;
        i -= p->own[k][1];
    }
    return p->own ? SIZE_MAX : i;
}

float *dp_moment(struct dp *p, int which)
{
    return p->mom[which ? 1 : 0];
}

/* ZeRO-1 with ep: AdamW over the packed range, its weights back where the flat buffer has
 * them (rounded to the format), then each bucket's weights all-gathered over its kind's group
 * in the packed shards. */
static int packed_update(struct dp *p, const struct adamw *a, const float *g, float coef,
                         struct error *e)
{
    float *params = gpt_params(p->g), *m = dp_master(p);
    adamw_update(a, m, g, coef, p->mom[0], p->mom[1], p->rlen);
    for (int k = 0; k < p->nown; k++) {
        float *f = params + p->own[k][0];
        size_t n = p->own[k][1];
        if (p->mixed) { /* the bits the others receive, and the values this GPU computes with */
            fp_pack_n(p->wdt, (char *)p->w + p->own[k][0] * p->wes, m, n);
            fp_round_n(p->wdt, f, m, n);
        } else
            memcpy(f, m, n * 4);
        m += n;
    }
    for (int i = 0; i < p->plan.nbuckets; i++) {
        const struct shard_range *b = &p->plan.buckets[i];
        packed_bounds(p, b);
        char *buf = p->mixed ? (char *)p->w + b->off * p->wes : (char *)(params + b->off);
        struct coll c = {.op = COST_ALLGATHER,
                         .algo = COST_RING,
                         .buf = buf,
                         .count = b->len,
                         .dtype = p->wdt,
                         .stream = DP_STREAM_GRADS,
                         .bounds = p->bounds};
        if (ring_over(p, b->expert ? p->xgroup : p->group, b->expert ? p->xn : p->n, &p->states,
                      &c)) {
            *e = p->err;
            return p->err.code;
        }
    }
    if (p->mixed)
        fp_unpack_n(p->wdt, params, p->w, p->plan.padded);
    if (p->d)
        dev_join(p->d);
    return 0;
}

int dp_update(struct dp *p, const struct adamw *a, const float *g, float coef, struct error *e)
{
    size_t pad = p->plan.padded;
    float *params = gpt_params(p->g);
    if (p->own)
        return packed_update(p, a, g, coef, e);
    if (!p->mixed)
        adamw_update(a, dp_master(p), g, coef, p->mom[0], p->mom[1], p->rlen);
    else { /* and the range's master weights rounded into the working weights at once; in DDP
            * the range is every weight, so the model's fp32 copy of them follows too */
        char *w = (char *)p->w + (p->zero >= 3 ? 0 : p->roff * p->wes);
        adamw_update_round(a, p->master, g, coef, p->mom[0], p->mom[1], p->rlen, p->wdt, w,
                           p->zero == 0 ? params : NULL);
    }
    if (p->zero == 1 || p->zero == 2) {
        void *buf = p->mixed ? p->w : (void *)params;
        if (ring(p, COST_ALLGATHER, buf, pad, p->wdt, 0, false, DP_STREAM_GRADS)) {
            *e = p->err;
            return p->err.code;
        }
        if (p->mixed)
            fp_unpack_n(p->wdt, params, p->w, pad);
    }
    if (p->d)
        dev_join(p->d);
    return 0;
}

/* ------------------------------------------------------------------ its face */

static int check(const struct train_opts *o, struct error *e)
{
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
    /* with stages, ZeRO-2 would reduce-scatter every micro-batch's gradients in the pipeline's
     * order (DeepSpeed's pipeline engine refuses stages 2 and 3 with pipeline parallelism
     * altogether); on one stage each micro-batch's are reduced as its backward pass ends */
    if (o->pp > 1 && o->zero >= 2)
        return error_set(e, ERR_INVAL,
                         "--zero %d with pipeline stages: stages 2 and 3 keep only a shard of the "
                         "gradients, so they would reduce every micro-batch's; the thread-GPUs "
                         "run ZeRO 0 and 1 with pipeline stages",
                         o->zero);
    if (o->zero < 0 || o->zero > 3)
        return error_set(e, ERR_INVAL, "--zero %d: the ZeRO stage is 0, 1, 2 or 3", o->zero);
    if (o->bucket_bytes < 4)
        return error_set(e, ERR_INVAL, "--bucket must be at least 4 bytes");
    if (o->prefetch < 0 || o->prefetch > 1)
        return error_set(e, ERR_INVAL, "--prefetch is 0 or 1");
    char name[24];
    if (o->zero >= 3 && ckpt_segment(&o->ckpt, o->shape.layers) > 1)
        return error_set(e, ERR_INVAL,
                         "--zero 3 with --checkpoint %s: recomputing a segment of several layers "
                         "would gather each layer a third time; use full, selective or none",
                         ckpt_name(name, sizeof name, &o->ckpt));
    return 0;
}

static void count(const struct train_opts *o, const struct layout_place *pl,
                  struct strategy_count *c)
{
    int v = layout_chunks(o), L = o->shape.layers;
    for (int k = 0; k < v; k++) {
        struct gpt_part part;
        layout_chunk_part(o, pl, k, 1, &part);
        c->buffers += buffers(o);
        c->messages += passes(o, &part, pl->dp * pl->cp);
    }
    if (o->gpus > 1) /* the agreement: an all-gather over every GPU */
        c->messages += o->gpus - 1;
    if (o->zero >= 3) /* each gather moves reserved bytes to communication and back */
        c->charges += 2L * (2L * L + 2) * o->micro_batches;
}

static void step_begin(void *self)
{
    struct dp *p = self;
    p->next_bucket = 0;
    p->mb = 0;
    p->iseq = 0;
    p->ibucket = 0;
    p->compute_s = 0;
    p->states = p->embed = p->scalars = 0;
    if (p->d)
        dev_join(p->d);
}

static void sent(const void *self, struct strategy_sent *s)
{
    const struct dp *p = self;
    s->bytes[STRATEGY_DP] += p->states;
    s->bytes[STRATEGY_PP] += p->embed; /* the tied embedding's: between the pipeline's ends */
    s->scalars += p->scalars;
}

static size_t mem_bytes(const void *self, enum gpt_mem kind)
{
    const struct dp *p = self;
    return kind < GPT_MEM_KINDS ? p->bytes[kind] : 0;
}

const struct strategy dp_strategy = {STRATEGY_DP, check, count, step_begin, NULL, sent, mem_bytes};
