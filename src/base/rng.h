/* A small, fast, seedable random number generator (xoshiro256**, seeded with splitmix64;
 * Blackman and Vigna, "Scrambled linear pseudorandom number generators", 2021).
 * Randomness is owned: each device or run keeps its own struct rng, so threaded runs
 * reproduce bit for bit from a seed. */
#ifndef SCALELAB_BASE_RNG_H
#define SCALELAB_BASE_RNG_H

#include <stdint.h>

struct rng {
    uint64_t s[4];
};

/* Seeds from one 64-bit value; stream picks an independent sequence for the same seed
 * (e.g. one per device). */
void rng_seed(struct rng *r, uint64_t seed, uint64_t stream);
uint64_t rng_u64(struct rng *r);
/* Uniform in [0, 1), 53 random bits. */
double rng_uniform(struct rng *r);
/* Uniform in [0, n), n > 0, without modulo bias. */
uint64_t rng_below(struct rng *r, uint64_t n);
/* Standard normal (Box-Muller). */
double rng_normal(struct rng *r);

#endif
