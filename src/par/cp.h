/* Context parallelism's communication, one GPU's part: the ring steps the model's attention
 * asks for (model/gpt.h's cp_shift) over the GPU's context-parallel group (par/layout.h's
 * group along cp): its keys and values, and in the backward pass their gradients, sent to the
 * next GPU of the group while the one before sends it its own (ring attention, Liu et al.
 * 2023; model/ringattn.h). The values travel in the training format: packed into a send
 * buffer and received into another, each room for a block's K, V, dK and dV (4 b s/C h/T
 * elements), which a GPU would hold as its two ring buffers (TransformerEngine's
 * p2p_comm_buffers): communication memory. */
#ifndef SCALELAB_PAR_CP_H
#define SCALELAB_PAR_CP_H

#include <stddef.h>
#include <stdint.h>

#include "model/gpt.h"

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

/* A step begins: its bytes are counted from here. */
void cp_step_begin(struct cp_ring *c);
/* The model's ring step: n floats of send to the next GPU, n from the one before into recv. A
 * failure is kept for cp_failed; later steps of the step do nothing. */
void cp_shift(struct cp_ring *c, const float *send, float *recv, size_t n, const char *what);
/* The first failed ring step: 0, or its code with e set. */
int cp_failed(const struct cp_ring *c, struct error *e);
/* Bytes this GPU sent round its ring since the step began. */
uint64_t cp_sent(const struct cp_ring *c);
/* Bytes of the buffers it allocated in a category. */
size_t cp_mem_bytes(const struct cp_ring *c, enum gpt_mem kind);

#endif
