/* Gradient checkpointing's policies: the one type and vocabulary of the model that runs them
 * (model/gpt.h), the trainer's settings (par/settings.h) and the calculator that predicts
 * their memory (calc/activ.h).
 *
 * none keeps every tensor; full (every:1) keeps each layer's input and recomputes the rest;
 * every:K keeps the input of segments of K layers (Megatron-LM's "uniform" method); sqrt
 * segments of ceil(sqrt(L)) layers (Chen et al. 2016, "Training Deep Nets with Sublinear
 * Memory Cost"); selective keeps everything but attention's softmax probabilities
 * (Korthikanti et al. 2022). */
#ifndef SCALELAB_BASE_CKPT_H
#define SCALELAB_BASE_CKPT_H

#include <stddef.h>

struct error;

enum ckpt_kind { CKPT_NONE, CKPT_FULL, CKPT_EVERY, CKPT_SQRT, CKPT_SELECTIVE };

struct ckpt_policy {
    enum ckpt_kind kind;
    int every; /* K for CKPT_EVERY */
};

/* "none", "full", "every:K" (K from 1 to 100000), "sqrt", "selective"; 0 or ERR_INVAL with
 * a message listing them. */
int ckpt_parse(const char *s, struct ckpt_policy *out, struct error *e);
/* The policy as ckpt_parse accepts it, in buf. */
char *ckpt_name(char *buf, size_t n, const struct ckpt_policy *p);
/* Layers per segment for n layers: 1 (full), K (every:K), ceil(sqrt(n)) (sqrt); 0 when the
 * policy does not segment (none, selective). */
int ckpt_every(const struct ckpt_policy *p, int n);
/* The layers a segment of n layers holds when the model runs the policy: ckpt_every's, at most
 * n (0 when it does not segment). */
int ckpt_segment(const struct ckpt_policy *p, int n);

#endif
