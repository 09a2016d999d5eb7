/* Synthetic training data: an order-2 Markov source over the vocabulary, with structure a
 * small transformer can find, and its exact entropy rate (the loss floor).
 *
 * Each token b has S = 4 successors succ[b][0..3] (distinct, drawn at random). Each token a
 * belongs to one of C = 2 classes (markov.c's CLASSES). The next token after the pair (a, b) is
 * succ[b][j] with probability (1 - eps) w[class(a)][b][j] + eps / V, any other token with
 * probability eps / V (eps = 0.02: every transition is possible, so the pair chain is irreducible
 * and aperiodic and its stationary distribution unique). w[c][b] are random weights over the four
 * successors (softmax of 1.5 x standard normals). To predict well the model must learn, per token,
 * its successors (the previous token) and how the token before modulates them (its class): an
 * attention head looking one step back is enough.
 *
 * The entropy rate H = sum_{a,b} pi(a, b) H(next | a, b), with pi the stationary distribution
 * of the pair chain (a, b) -> (b, c), found by power iteration to 1e-12. A model that sees the
 * whole history can do no better than H nats per token on average. */
#ifndef SCALELAB_MODEL_MARKOV_H
#define SCALELAB_MODEL_MARKOV_H

#include <stdint.h>

#include "base/rng.h"

struct error;
struct markov;

/* 0, ERR_INVAL (vocab < 8) or ERR_NOMEM. */
int markov_new(struct markov **out, int vocab, uint64_t seed, struct error *e);
/* Whether markov_new takes a vocabulary of this size: 0, or ERR_INVAL saying why. */
int markov_check(int vocab, struct error *e);
void markov_free(struct markov *m);

/* The entropy rate in nats per token (NAN without the memory to compute it). It takes a power
 * iteration over the V^2 pairs, about 0.2 s for V = 256, so it is computed at the first call,
 * not by markov_new: of a run's GPUs, only the first asks (the loss floor). Not thread-safe:
 * one thread asks of one chain. */
double markov_entropy(struct markov *m);

/* Fills batch rows of seq inputs and targets (targets[t] = inputs[t + 1] of the stream); each
 * row is a fresh stretch of the chain after a burn-in from a random pair. */
void markov_batch(const struct markov *m, struct rng *r, int batch, int seq, int32_t *tokens,
                  int32_t *targets);

#endif
