/* Context parallelism's communication, one GPU's part: the ring steps the model's attention
 * asks for (model/gpt.h's cp_shift) over the GPU's context-parallel group (par/layout.h's
 * group along cp): its keys and values, and in the backward pass their gradients, sent to the
 * next GPU of the group while the one before sends it its own (ring attention, Liu et al.
 * 2023; model/ringattn.h). The values travel in the training format: packed into a send
 * buffer and received into another, each room for a block's K, V, dK and dV (4 b s/C h/T
 * elements), which a GPU would hold as its two ring buffers (TransformerEngine's
 * p2p_comm_buffers): communication memory. Each GPU computes on its own tokens of every
 * sequence (model/ringattn.h's split): the ring keeps them, and their targets, for the step. */
#ifndef SCALELAB_PAR_CP_H
#define SCALELAB_PAR_CP_H

#include <stddef.h>
#include <stdint.h>

#include "model/gpt.h"
#include "par/strategy.h"

struct device;
struct dp_mem;
struct error;
struct layout_place;
struct train_opts;

struct cp_ring;

/* The ring of the GPU at place pl on device d, its buffers through mem; *out NULL (nothing to
 * do) with one GPU per sequence. 0 or ERR_NOMEM. */
int cp_new(struct cp_ring **out, const struct train_opts *o, const struct layout_place *pl,
           struct device *d, const struct dp_mem *mem, struct error *e);
void cp_free(struct cp_ring *c);

/* This GPU's tokens and targets (*tokens, *targets) of `rows` sequences whose whole tokens
 * and targets are at tokens and targets: its places of each (ring_positions), in a buffer of
 * the ring's (workspace). */
void cp_share(struct cp_ring *c, int rows, const int32_t **tokens, const int32_t **targets);
/* The model's ring step in two halves (model/gpt.h's cp_post and cp_wait): n floats of send
 * packed and posted to the next GPU; then, after the GPU computed, the n from the one before
 * received into recv and the send waited for. A failure is kept for its face's failed; later
 * steps of the step do nothing. */
void cp_post(struct cp_ring *c, const float *send, size_t n, const char *what);
void cp_wait(struct cp_ring *c, float *recv, size_t n);

/* Its face (par/strategy.h), through which the trainer begins its steps, hears of its
 * failures and reads its bytes sent and held: C dividing the sequence into its chunks, no selective
 * recomputation (no probabilities are kept), C dividing a GPU's tokens under sequence
 * parallelism; per GPU three buffers (the ring's two, the tokens' share) and one send for
 * every ring step the model asks for. */
extern const struct strategy cp_strategy;

#endif
