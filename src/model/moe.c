/* The router of a mixture-of-experts layer: softmax, top-k, gate weights, capacity and the
 * load-balancing loss, forward and backward (model/moe.h). */
#include "config.h"
#include "model/moe.h"

#include <math.h>
#include <stdbool.h>
#include <string.h>

#include "base/experts.h"

size_t moe_table_words(int n, int k, int experts)
{
    return 3 * (size_t)n * (size_t)k + 3 * (size_t)experts;
}

struct moe_table moe_table_at(void *block, int n, int k, int experts)
{
    size_t nk = (size_t)n * (size_t)k, E = (size_t)experts;
    int32_t *w = block; /* 4-byte words: int32_t and float alike */
    return (struct moe_table){.choice = w,
                              .row = w + nk,
                              .gate = (float *)(void *)(w + 2 * nk),
                              .off = w + 3 * nk,
                              .kept = w + 3 * nk + E,
                              .load = w + 3 * nk + 2 * E,
                              .recv = w + 3 * nk + 3 * E};
}

/* The k largest of p[0..E-1], largest first; ties go to the lower index. */
static void top_k(const float *p, int E, int k, int32_t *out)
{
    for (int j = 0; j < k; j++) {
        int best = -1;
        for (int e = 0; e < E; e++) {
            bool taken = false;
            for (int m = 0; m < j; m++)
                taken |= out[m] == e;
            if (!taken && (best < 0 || p[e] > p[best]))
                best = e;
        }
        out[j] = best;
    }
}

double moe_route(struct moe_route *r, const float *logits, double capacity_factor, double aux_coef)
{
    int n = r->n, E = r->experts, k = r->k;
    r->cap = (int)experts_capacity(n, E, k, capacity_factor);
    r->dropped = 0;
    memset(r->load, 0, (size_t)E * sizeof *r->load);
    memset(r->kept, 0, (size_t)E * sizeof *r->kept);
    for (int t = 0; t < n; t++) {
        const float *z = logits + (size_t)t * E;
        float *p = r->probs + (size_t)t * E;
        double mx = z[0], s = 0;
        for (int e = 1; e < E; e++)
            mx = z[e] > mx ? z[e] : mx;
        for (int e = 0; e < E; e++)
            s += exp((double)z[e] - mx);
        for (int e = 0; e < E; e++)
            p[e] = (float)(exp((double)z[e] - mx) / s);
        int32_t *c = r->choice + (size_t)t * k;
        float *g = r->gate + (size_t)t * k;
        top_k(p, E, k, c);
        double sum = 0;
        for (int j = 0; j < k; j++)
            sum += p[c[j]], r->load[c[j]]++;
        for (int j = 0; j < k; j++) /* Switch: p itself; top-2: renormalised (Mixtral) */
            g[j] = k == 1 ? p[c[j]] : (float)(p[c[j]] / sum);
    }
    /* the rows: expert e's from e cap (a capacity), or packed after the experts before it */
    for (int e = 0, next = 0; e < E; e++) {
        r->off[e] = capacity_factor > 0 ? e * r->cap : next;
        next += r->load[e];
    }
    for (int j = 0; j < k; j++) /* every token's first choice before any second one */
        for (int t = 0; t < n; t++) {
            int e = r->choice[(size_t)t * k + j];
            int32_t *row = &r->row[(size_t)t * k + j];
            if (r->kept[e] < r->cap)
                *row = r->off[e] + r->kept[e]++;
            else
                *row = -1, r->dropped++;
        }
    /* aux = α E / (k n^2) Σ_i load_i Σ_t p_{t,i}, the sums in double, expert by expert */
    double aux = 0;
    for (int e = 0; e < E; e++) {
        double ps = 0;
        for (int t = 0; t < n; t++)
            ps += r->probs[(size_t)t * E + e];
        aux += (double)r->load[e] * ps;
    }
    return aux_coef * E / ((double)k * n * n) * aux;
}

void moe_route_backward(const struct moe_route *r, const float *dgate, double aux_coef,
                        double aux_scale, float *dlogits)
{
    int n = r->n, E = r->experts, k = r->k;
    double dp[256], aux = aux_coef * aux_scale * E / ((double)k * n * n);
    for (int t = 0; t < n; t++) {
        const float *p = r->probs + (size_t)t * E;
        const int32_t *c = r->choice + (size_t)t * k;
        const float *g = r->gate + (size_t)t * k, *dg = dgate + (size_t)t * k;
        for (int e = 0; e < E; e++) /* the load-balancing loss: the counts are constants */
            dp[e] = aux * r->load[e];
        if (k == 1) { /* g = p_c */
            dp[c[0]] += dg[0];
        } else { /* g_j = p_j / S, S = Σ_m p_m: dg_j/dp_i = (δ_ij - g_j) / S */
            double s = 0, dot = 0;
            for (int j = 0; j < k; j++)
                s += p[c[j]], dot += (double)dg[j] * g[j];
            for (int j = 0; j < k; j++)
                dp[c[j]] += ((double)dg[j] - dot) / s;
        }
        /* p = softmax(z): dz_i = p_i (dp_i - Σ_m p_m dp_m) */
        double dot = 0;
        for (int e = 0; e < E; e++)
            dot += (double)p[e] * dp[e];
        float *dz = dlogits + (size_t)t * E;
        for (int e = 0; e < E; e++)
            dz[e] = (float)(p[e] * (dp[e] - dot));
    }
}
