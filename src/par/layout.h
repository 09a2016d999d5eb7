/* The layout of a run's GPUs: the grid of tensor, context, data and pipeline parallelism, where a
 * GPU sits in it and its groups, how the model and the batch split over it, and the checks of a
 * layout against the model and the batch.
 *
 * The grid has an axis per kind of parallelism, innermost first, and a GPU's rank is its
 * coordinates read as the digits of a mixed-radix number (Megatron-LM's RankGenerator, whose
 * order is "tp-cp-ep-dp-pp": megatron/core/parallel_state.py):
 *     rank = ((stage x dp + dprank) x cp + cprank) x tp + tprank
 * so a tensor-parallel group is T consecutive GPUs (a node's fast links), a context-parallel
 * group strides by T, a data-parallel group by C T and a pipeline stage is a block of D C T
 * GPUs; with cp 1 every rank is what it was before context parallelism. A GPU's group along an axis
 * is the GPUs whose place differs from its own along that axis only (layout_group): along tp they
 * sum a layer's partial results (par/tp.h), along cp pass keys and values round a ring (ring
 * attention, model/ringattn.h), along dp and cp together (layout_grad_group: the weights are
 * replicated over both) the gradients (par/dp.h), and the ends of the pp axis the tied
 * embedding's gradient.
 *
 * Along the pipeline axis the model's layers split evenly (a stage holds L / P of them, the
 * first the embedding, the last the head; the interleaved schedule gives each GPU v chunks,
 * virtual stages c P + s), along tp each layer's heads, FFN width and vocabulary rows (and with
 * sequence parallelism the tokens between the matmuls), along cp every sequence's tokens (T / C
 * each, model/ringattn.h's split), along dp the batch: each data-parallel rank takes batch / D
 * sequences as M micro-batches.
 *
 * Expert parallelism (a mixture of experts' E experts over ep GPUs, model/gpt.h) is no axis of
 * its own: it divides the data-parallel ranks, as Megatron-LM's expert rank generator does
 * (order "tp-cp-ep-dp-pp" with ep x expert-dp = the dp ranks, megatron/core/parallel_state.py;
 * DeepSpeed-MoE's expert-parallel and expert-data-parallel groups, deepspeed/utils/groups.py,
 * cut the data-parallel ranks the same way). Data rank q is expert rank q % ep of the
 * expert-parallel group of the ep consecutive data ranks around it (the tokens' all-to-alls),
 * and the experts it holds are replicated over the dp / ep data ranks with the same expert
 * rank (the expert-data-parallel group), over which their gradients reduce; the other weights
 * are replicated over all dp, as before. With ep 1 the expert gradient group is the gradient
 * group. */
#ifndef SCALELAB_PAR_LAYOUT_H
#define SCALELAB_PAR_LAYOUT_H

#include <stdbool.h>

#include "model/gpt.h"
#include "par/settings.h"

struct error;

/* The grid's axes, innermost first. */
enum layout_axis { LAYOUT_TP, LAYOUT_CP, LAYOUT_DP, LAYOUT_PP, LAYOUT_AXES };

/* Where a GPU sits: the grid's sizes and its coordinates, by name or by axis (size[LAYOUT_TP]
 * is tp); the micro-batch it computes and the part of the model it holds. */
struct layout_place {
    int rank;
    union {
        struct {
            int tp, cp, dp, pp;
        };
        int size[LAYOUT_AXES];
    };
    union {
        struct {
            int tprank, cprank, dprank, stage;
        };
        int at[LAYOUT_AXES];
    };
    int ep, eprank;       /* expert parallelism: eprank = dprank % ep */
    int micro;            /* sequences in a micro-batch: batch / (dp x M) */
    struct gpt_part part; /* chunk 0's layers (and ends); layout_chunk_part gives the others */
};

/* GPU rank's place in o's layout, its part holding slots micro-batches at once (the schedule's
 * most for the stage, par/pp.h; 1 without a pipeline). */
void layout_place(const struct train_opts *o, int rank, int slots, struct layout_place *out);
/* The rank of the GPU at pl's place but at coordinate `at` along axis a. */
int layout_rank(const struct layout_place *pl, enum layout_axis a, int at);
/* pl's group along axis a: the pl->size[a] ranks, in the order of that coordinate. */
void layout_group(const struct layout_place *pl, enum layout_axis a, int *ranks);

/* The data-parallel size, gpus / (tp x cp x pp) (1 where that does not divide). */
int layout_dp(const struct train_opts *o);
/* The GPUs holding the same weights, over which the gradients reduce: dp x cp. */
int layout_grad_ranks(const struct train_opts *o);
/* pl's gradient group: the dp x cp ranks sharing its stage and tensor rank, data rank major
 * (Megatron-LM's data-parallel group with context parallelism); pl's place in it is
 * layout_grad_rank. */
void layout_grad_group(const struct layout_place *pl, int *ranks);
int layout_grad_rank(const struct layout_place *pl);
/* pl's expert-parallel group: the ep data ranks dprank - eprank .. + ep - 1, in expert rank
 * order (the all-to-all's). */
void layout_ep_group(const struct layout_place *pl, int *ranks);
/* pl's expert gradient group (Megatron-LM's expert-data-parallel group): the dp / ep ranks
 * holding its experts, data ranks eprank, eprank + ep, ...; pl's place in it is dprank / ep. */
void layout_expert_grad_group(const struct layout_place *pl, int *ranks);
/* Whether a step runs as a pipeline of micro-batches (pp > 1 or M > 1): the gradients are
 * then reduced once all of them are in. */
bool layout_pipelined(const struct train_opts *o);
/* Model chunks per GPU: the interleaved schedule's v, else 1. */
int layout_chunks(const struct train_opts *o);
/* Chunk c's part of the GPU at pl (interleaved: virtual stage c pp + stage, the embedding on
 * the first virtual stage, the head on the last; else the stage's layers). */
void layout_chunk_part(const struct train_opts *o, const struct layout_place *pl, int chunk,
                       int slots, struct gpt_part *out);

/* The grid's own checks: the GPUs, each axis's size (tp, cp, pp from 1, the stages at most the
 * layers), tp x cp x pp dividing the GPUs (dp is the rest), and the GPUs --inject and --fail
 * name among them. What each axis must divide is its
 * strategy's (par/strategies.h checks a run whole). 0 or ERR_INVAL naming the setting. */
int layout_check(const struct train_opts *o, struct error *e);

/* The calls the model makes in one step of the GPU at pl (model/gpt.h's gpt_step_calls): every
 * micro-batch through each of its model chunks. */
struct gpt_calls layout_calls(const struct train_opts *o, const struct layout_place *pl);

#endif
