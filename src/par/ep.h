/* Expert parallelism's communication, one GPU's part: the all-to-alls the model's
 * mixture-of-experts layers ask for (model/gpt.h's ep_alltoallv) over the GPU's
 * expert-parallel group (par/layout.h's layout_ep_group): the tokens' rows sent to their
 * experts' GPUs and the experts' outputs sent back in the forward pass (dispatch, combine),
 * and the outputs' and the inputs' gradients in the backward pass. Each is the static
 * [E, cap, d] shape of the layer's rows, ep equal blocks (GShard's dispatch, Lepikhin et al.
 * 2020; Megatron-LM's all-to-all token dispatcher with moe_pad_expert_input_to_capacity), in
 * the training format: packed into a send buffer and received into another, E cap d elements
 * each, communication memory. Without a capacity factor it is dropless (model/gpt.h): the
 * counts first, then blocks of the routing's sizes, the two buffers reserved for the most that
 * can come (base/experts.h's experts_rows_held) and charged to communication by what each
 * exchange holds. */
#ifndef SCALELAB_PAR_EP_H
#define SCALELAB_PAR_EP_H

#include <stddef.h>
#include <stdint.h>

#include "model/gpt.h"
#include "par/strategy.h"

struct device;
struct dp_mem;
struct error;
struct layout_place;
struct train_opts;

struct ep_group;

/* The all-to-alls of the GPU at place pl on device d, its buffers through mem; *out NULL
 * (nothing to do) with every expert on each GPU. 0 or ERR_NOMEM. */
int ep_new(struct ep_group **out, const struct train_opts *o, const struct layout_place *pl,
           struct device *d, const struct dp_mem *mem, struct error *e);
void ep_free(struct ep_group *x);

/* The model's all-to-all (model/gpt.h's ep_alltoallv): sendcounts[j] floats of send to the
 * group's GPU j, recvcounts[j] from it into recv, blocks back to back: with a capacity the static
 * shape's equal blocks through the two held buffers; dropless (no capacity factor) blocks of the
 * routing's sizes, the reserved block charged to communication by what it holds. A failure is
 * kept for its face's failed; later calls of the step do nothing. Dropless, before each
 * dispatch, the counts themselves (ep_counts): n 4-byte words in ep equal blocks, from the
 * model's buffers. */
void ep_alltoallv(struct ep_group *x, const float *send, const size_t *sendcounts, float *recv,
                  const size_t *recvcounts, const char *what);
void ep_counts(struct ep_group *x, const int32_t *send, int32_t *recv, size_t n, const char *what);
/* Dropless: the rows the step's dispatches sent the group's other GPUs and received from them
 * (recomputed passes included), and the most rows one exchange held since the run began (its
 * rows out and in, its own block both ways: what its buffers' ledger peak is of); 0 without
 * expert parallelism or with a capacity. */
void ep_rows(const struct ep_group *x, uint64_t *out, uint64_t *in, uint64_t *held);

/* Its face (par/strategy.h), through which the trainer begins its steps, hears of its
 * failures and reads its bytes sent and held: a model with experts, P dividing them and the
 * data-parallel ranks, data parallelism alone beside it; per
 * GPU its two buffers and a pairwise all-to-all's P - 1 sends for every all-to-all the model asks
 * for. */
extern const struct strategy ep_strategy;

#endif
