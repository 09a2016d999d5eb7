/* How data parallelism cuts the flat buffers: the padding, the shards, the gradient buckets
 * and the units ZeRO-3 gathers. Pure functions of the model's shape and the GPU count.
 *
 * The flat buffers (weights, gradients, master weights, Adam's moments: model/gpt.h's
 * order) are padded with zeros to Ψ_pad = N ceil(Ψ/N) elements, as DeepSpeed's flat
 * partitions and FSDP's flat parameters are, so that every shard, and every ring chunk of a
 * pass over the whole buffer, is the same size: GPU i owns [i S, (i + 1) S) with
 * S = ceil(Ψ/N), the last one holding the padding. A ring reduce-scatter or all-gather over
 * the whole buffer then sends (N - 1) S elements from every GPU.
 *
 * Buckets (DDP and ZeRO-1/2) are slices of the flat buffer of the bucket's size, cut from its
 * end, in the order the backward pass completes them (the last one takes what is left).
 * PyTorch's DDP packs whole tensors into its buckets; equal slices keep every bucket but one
 * the size asked for, which the calculator then counts from the size alone. A bucket is ready
 * when the unit holding its first element has its gradients (model/gpt.h's GRADS points):
 * the backward pass runs from the end of the flat buffer to its start. Its ring chunks are
 * cut where the shards cut the flat buffer (shard_bounds), so that whatever the buckets, an
 * element is reduced around the same ring in the same order: every stage then gives the same
 * bits (comm/coll.h, struct coll's bounds).
 *
 * ZeRO-3 gathers units: each layer, and the ends (the embedding, used by the lookup and by
 * the tied head, with the final norm and the padding). Its gradients are reduce-scattered per
 * piece as they complete: the final norm and padding, each layer, then the embedding. The
 * units and pieces partition [0, Ψ_pad), so each full pass over them also sends (N - 1) S
 * elements per GPU. */
#ifndef SCALELAB_PAR_SHARD_H
#define SCALELAB_PAR_SHARD_H

#include <stdbool.h>
#include <stddef.h>

#include "model/gpt.h"

/* A range of the flat buffer, and the model/gpt.h unit whose GRADS point completes it (or
 * whose weights it holds). */
struct shard_range {
    size_t off, len;
    int unit;    /* a layer, GPT_UNIT_EMBED or GPT_UNIT_HEAD */
    bool expert; /* a bucket of experts, reduced over their own group (par/dp.h) */
};

#define SHARD_MAX_RANGES 2 /* the ends: the embedding and the final norm */

/* What ZeRO-3 gathers at once: one or two ranges. */
struct shard_unit {
    struct shard_range r[SHARD_MAX_RANGES];
    int nr;
    size_t elems;
};

struct shard_plan {
    int n;                        /* GPUs */
    size_t params, padded, shard; /* Ψ, Ψ_pad, S */
    int first, layers;            /* the layers of the part: first..first+layers-1 */
    struct shard_range *buckets;  /* in the order they are ready */
    int nbuckets;
    size_t bucket_max;        /* elements of the largest bucket */
    struct shard_unit *units; /* [0] the ends, [1 + l] layer l */
    size_t unit_max;          /* elements of the largest unit */
};

/* Plans for n GPUs holding the part (NULL: the whole model; a pipeline stage's part holds
 * its layers and ends, model/gpt.h). bucket_elems: a bucket's size in elements (0: one bucket per
 * ZeRO-3 piece). 0 or ERR_NOMEM. */
int shard_plan_init(struct shard_plan *p, const struct gpt_config *c, const struct gpt_part *part,
                    int n, size_t bucket_elems, struct error *e);
void shard_plan_fini(struct shard_plan *p);

/* Ψ_pad and S for Ψ parameters on n GPUs. */
size_t shard_padded(size_t params, int n);
size_t shard_size(size_t params, int n);

/* The n + 1 chunk edges of range [off, off + len) where the shards of S elements cut it,
 * relative to off: chunk i is the part GPU i owns. */
void shard_bounds(const struct shard_plan *p, size_t off, size_t len, size_t *bounds);

/* The unit whose GRADS point completes element off's gradient. */
int shard_unit_at(const struct shard_plan *p, size_t off);

#endif
