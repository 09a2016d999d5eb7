/* Expert parallelism's communication, one GPU's part: the all-to-alls the model's
 * mixture-of-experts layers ask for (model/gpt.h's ep_alltoall) over the GPU's
 * expert-parallel group (par/layout.h's layout_ep_group): the tokens' rows sent to their
 * experts' GPUs and the experts' outputs sent back in the forward pass (dispatch, combine),
 * and the outputs' and the inputs' gradients in the backward pass. Each is the static
 * [E, cap, d] shape of the layer's rows, ep equal blocks (GShard's dispatch, Lepikhin et al.
 * 2020; Megatron-LM's all-to-all token dispatcher with moe_pad_expert_input_to_capacity), in
 * the training format: packed into a send buffer and received into another, E cap d elements
 * each, communication memory. */
#ifndef SCALELAB_PAR_EP_H
#define SCALELAB_PAR_EP_H

#include <stddef.h>
#include <stdint.h>

#include "model/gpt.h"

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

/* A step begins: its bytes are counted from here. */
void ep_step_begin(struct ep_group *x);
/* The model's all-to-all: n floats of send in ep blocks, one per GPU of the group, into recv.
 * A failure is kept for ep_failed; later calls of the step do nothing. */
void ep_alltoall(struct ep_group *x, const float *send, float *recv, size_t n, const char *what);
/* The first failed all-to-all: 0, or its code with e set. */
int ep_failed(const struct ep_group *x, struct error *e);
/* Bytes this GPU sent in its group since the step began. */
uint64_t ep_sent(const struct ep_group *x);
/* Bytes of the buffers it allocated in a category. */
size_t ep_mem_bytes(const struct ep_group *x, enum gpt_mem kind);

#endif
