/* The synthetic training data: an order-2 Markov source over the vocabulary and its exact
 * entropy rate, the loss floor (model/markov.h). */
#include "config.h"
#include "model/markov.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"

#define SUCC    4
#define CLASSES 2
#define EPS     0.02
#define BURN_IN 16

struct markov {
    int V;
    int *succ;      /* [V][SUCC] */
    int *cls;       /* [V] */
    double *w;      /* [CLASSES][V][SUCC]: the structured part, sums to 1 */
    double *cum;    /* the same, cumulative, for sampling */
    double entropy; /* computed at the first markov_entropy, NAN before */
};

void markov_free(struct markov *m)
{
    if (!m)
        return;
    free(m->succ);
    free(m->cls);
    free(m->w);
    free(m->cum);
    free(m);
}

/* The probability of each successor slot after (a, b); other tokens get EPS / V. */
static double slot_p(const struct markov *m, int a, int b, int j)
{
    return (1 - EPS) * m->w[((size_t)m->cls[a] * m->V + b) * SUCC + j] + EPS / m->V;
}

static int compute_entropy(struct markov *m)
{
    int V = m->V;
    size_t n = (size_t)V * V;
    double *pi = malloc(n * sizeof *pi), *nx = malloc(n * sizeof *nx);
    if (!pi || !nx) {
        free(pi);
        free(nx);
        return ERR_NOMEM;
    }
    for (size_t i = 0; i < n; i++)
        pi[i] = 1.0 / (double)n;
    /* power iteration: nx(b, c) = sum_a pi(a, b) P(c | a, b) */
    for (int it = 0; it < 100000; it++) {
        for (int b = 0; b < V; b++) {
            double colsum = 0;
            for (int a = 0; a < V; a++)
                colsum += pi[(size_t)a * V + b];
            for (int c = 0; c < V; c++)
                nx[(size_t)b * V + c] = colsum * EPS / V;
            for (int a = 0; a < V; a++) {
                double p = pi[(size_t)a * V + b];
                for (int j = 0; j < SUCC; j++)
                    nx[(size_t)b * V + m->succ[b * SUCC + j]] +=
                        p * (1 - EPS) * m->w[((size_t)m->cls[a] * V + b) * SUCC + j];
            }
        }
        double diff = 0;
        for (size_t i = 0; i < n; i++)
            diff += fabs(nx[i] - pi[i]);
        memcpy(pi, nx, n * sizeof *pi);
        if (diff < 1e-12)
            break;
    }
    double h = 0;
    for (int a = 0; a < V; a++)
        for (int b = 0; b < V; b++) {
            double hab = 0, rest = EPS / V;
            for (int j = 0; j < SUCC; j++) {
                double p = slot_p(m, a, b, j);
                hab -= p * log(p);
            }
            hab -= (V - SUCC) * rest * log(rest);
            h += pi[(size_t)a * V + b] * hab;
        }
    m->entropy = h;
    free(pi);
    free(nx);
    return 0;
}

int markov_check(int vocab, struct error *e)
{
    if (vocab < 8)
        return error_set(e, ERR_INVAL, "the synthetic data needs a vocabulary of at least 8");
    return 0;
}

int markov_new(struct markov **out, int vocab, uint64_t seed, struct error *e)
{
    *out = NULL;
    int rc = markov_check(vocab, e);
    if (rc)
        return rc;
    struct markov *m = calloc(1, sizeof *m);
    if (!m)
        return error_set(e, ERR_NOMEM, "out of memory");
    int V = m->V = vocab;
    m->succ = malloc((size_t)V * SUCC * sizeof *m->succ);
    m->cls = malloc((size_t)V * sizeof *m->cls);
    m->w = malloc((size_t)CLASSES * V * SUCC * sizeof *m->w);
    m->cum = malloc((size_t)CLASSES * V * SUCC * sizeof *m->cum);
    if (!m->succ || !m->cls || !m->w || !m->cum) {
        markov_free(m);
        return error_set(e, ERR_NOMEM, "out of memory");
    }
    struct rng r;
    rng_seed(&r, seed, 0x6d61726b);
    for (int b = 0; b < V; b++) {
        for (int j = 0; j < SUCC; j++) {
            int c, dup;
            do { /* distinct successors */
                c = (int)rng_below(&r, (uint64_t)V);
                dup = 0;
                for (int k = 0; k < j; k++)
                    dup |= m->succ[b * SUCC + k] == c;
            } while (dup);
            m->succ[b * SUCC + j] = c;
        }
        m->cls[b] = (int)rng_below(&r, CLASSES);
    }
    for (size_t i = 0; i < (size_t)CLASSES * V; i++) {
        double *w = m->w + i * SUCC, s = 0;
        for (int j = 0; j < SUCC; j++)
            s += w[j] = exp(1.5 * rng_normal(&r));
        double c = 0;
        for (int j = 0; j < SUCC; j++)
            m->cum[i * SUCC + j] = c += w[j] /= s;
    }
    m->entropy = NAN;
    *out = m;
    return 0;
}

double markov_entropy(struct markov *m)
{
    if (isnan(m->entropy) && compute_entropy(m))
        return NAN;
    return m->entropy;
}

static int next(const struct markov *m, struct rng *r, int a, int b)
{
    double u = rng_uniform(r);
    if (u < EPS)
        return (int)rng_below(r, (uint64_t)m->V);
    u = (u - EPS) / (1 - EPS);
    const double *cum = m->cum + ((size_t)m->cls[a] * m->V + b) * SUCC;
    int j = 0;
    while (j < SUCC - 1 && u >= cum[j])
        j++;
    return m->succ[b * SUCC + j];
}

void markov_batch(const struct markov *m, struct rng *r, int batch, int seq, int32_t *tokens,
                  int32_t *targets)
{
    for (int i = 0; i < batch; i++) {
        int a = (int)rng_below(r, (uint64_t)m->V), b = (int)rng_below(r, (uint64_t)m->V);
        for (int k = 0; k < BURN_IN; k++) {
            int c = next(m, r, a, b);
            a = b, b = c;
        }
        for (int t = 0; t < seq; t++) {
            int c = next(m, r, a, b);
            tokens[(size_t)i * seq + t] = b;
            targets[(size_t)i * seq + t] = c;
            a = b, b = c;
        }
    }
}
