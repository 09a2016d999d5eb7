/* Ring attention's arithmetic: blockwise causal attention with the online softmax, forward and
 * backward, one key/value block at a time (model/ringattn.h says how and why). */
#include "config.h"
#include "model/ringattn.h"

#include <cblas.h>
#include <math.h>
#include <string.h>

#include "num/exp.h"

bool ring_split_ok(int T, int C, enum ring_split split)
{
    int parts = split == RING_BALANCED ? 2 * C : C;
    return T > 0 && C > 0 && T % parts == 0;
}

int ring_position(int T, int C, int r, enum ring_split split, int i)
{
    if (split == RING_NAIVE)
        return r * (T / C) + i;
    int n = T / (2 * C); /* chunk r, then chunk 2C - 1 - r */
    return i < n ? r * n + i : (2 * C - 1 - r) * n + (i - n);
}

void ring_positions(int T, int C, int r, enum ring_split split, int *pos)
{
    for (int i = 0; i < T / C; i++)
        pos[i] = ring_position(T, C, r, split, i);
}

/* How many of keys kpos[0..nk) (increasing) query position p may see: they are a prefix. */
static int seen(const int *kpos, int nk, int p)
{
    int a = 0;
    while (a < nk && kpos[a] <= p)
        a++;
    return a;
}

/* The part of a block the mask leaves any work in: the queries from the first that sees a key
 * (*r0 of them are skipped) and the keys up to the last the last query sees, since positions
 * increase in both (with the balanced split, half of every block but a GPU's own: the early
 * chunk of an earlier GPU's keys, the late chunk of a later GPU's queries). false: none of
 * it. */
static bool trim(const struct ring_rows *qr, const struct ring_rows *kr, struct ring_rows *qt,
                 struct ring_rows *kt, int *r0)
{
    if (qr->n == 0 || kr->n == 0 || qr->pos[qr->n - 1] < kr->pos[0])
        return false;
    int r = 0;
    while (qr->pos[r] < kr->pos[0])
        r++;
    *qt = (struct ring_rows){qr->n - r, qr->ld, qr->pos + r};
    *kt = (struct ring_rows){seen(kr->pos, kr->n, qr->pos[qr->n - 1]), kr->ld, kr->pos};
    *r0 = r;
    return true;
}

long ring_block_rect(int T, int C, int q, int k, enum ring_split split, int *q0, int *k1)
{
    /* trim's rule on the two GPUs' positions: the queries from the first that sees the
     * block's first key, the keys the last query sees */
    int n = T / C, first = ring_position(T, C, k, split, 0);
    int last = ring_position(T, C, q, split, n - 1);
    *q0 = *k1 = 0;
    if (n <= 0 || last < first)
        return 0;
    while (ring_position(T, C, q, split, *q0) < first)
        ++*q0;
    while (*k1 < n && ring_position(T, C, k, split, *k1) <= last)
        ++*k1;
    return (long)(n - *q0) * *k1;
}

/* S = scale q k^T of a block (nq x nk into s). */
static void block_scores(int hd, float scale, const struct ring_rows *qr, const float *q,
                         const struct ring_rows *kr, const float *k, float *s)
{
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, qr->n, kr->n, hd, scale, q, qr->ld, k,
                kr->ld, 0.0f, s, kr->n);
}

void ring_attn_fwd_init(int nq, int hd, float *o, int ldo, float *m, float *l)
{
    for (int i = 0; i < nq; i++) {
        memset(o + (size_t)i * ldo, 0, (size_t)hd * sizeof *o);
        m[i] = -INFINITY;
        l[i] = 0.0f;
    }
}

long ring_attn_fwd_block(int hd, float scale, const struct ring_rows *qfull, const float *q,
                         const struct ring_rows *kfull, const float *k, const float *v, float *o,
                         int ldo, float *m, float *l, float *s)
{
    struct ring_rows qt, kt, *qr = &qt, *kr = &kt;
    int r0;
    if (!trim(qfull, kfull, qr, kr, &r0))
        return 0;
    q += (size_t)r0 * qr->ld, o += (size_t)r0 * ldo, m += r0, l += r0;
    int nq = qr->n, nk = kr->n;
    block_scores(hd, scale, qr, q, kr, k, s);
    for (int i = 0; i < nq; i++) {
        float *row = s + (size_t)i * nk;
        int a = seen(kr->pos, nk, qr->pos[i]);
        if (a > 0) {
            float mx = row[0], sum = 0.0f;
            for (int j = 1; j < a; j++)
                mx = row[j] > mx ? row[j] : mx;
            float mnew = mx > m[i] ? mx : m[i];
            for (int j = 0; j < a; j++)
                row[j] -= mnew;
            exp_n(row, row, (size_t)a);
            for (int j = 0; j < a; j++)
                sum += row[j];
            /* the terms so far were weighed by e^-m: e^(m - mnew) makes them e^-mnew's */
            float alpha = expf(m[i] - mnew);
            l[i] = l[i] * alpha + sum;
            m[i] = mnew;
            if (alpha != 1.0f)
                for (int c = 0; c < hd; c++)
                    o[(size_t)i * ldo + c] *= alpha;
        }
        memset(row + a, 0, (size_t)(nk - a) * sizeof *row);
    }
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, nq, hd, nk, 1.0f, s, nk, v, kr->ld, 1.0f,
                o, ldo);
    return (long)nq * nk;
}

void ring_attn_fwd_finish(int nq, int hd, float *o, int ldo, const float *m, const float *l,
                          float *lse)
{
    for (int i = 0; i < nq; i++) {
        float li = l[i], inv = 1.0f / li;
        for (int c = 0; c < hd; c++)
            o[(size_t)i * ldo + c] *= inv;
        lse[i] = m[i] + logf(li);
    }
}

void ring_attn_bwd_delta(int nq, int hd, const float *dout, const float *o, int ld, float *D)
{
    for (int i = 0; i < nq; i++) {
        float sum = 0.0f;
        for (int c = 0; c < hd; c++)
            sum += dout[(size_t)i * ld + c] * o[(size_t)i * ld + c];
        D[i] = sum;
    }
}

long ring_attn_bwd_block(int hd, float scale, const struct ring_rows *qfull, const float *q,
                         const float *dout, const float *lse, const float *D, float *dq,
                         const struct ring_rows *kfull, const float *k, const float *v, float *dk,
                         float *dv, float *s, float *dp)
{
    struct ring_rows qt, kt, *qr = &qt, *kr = &kt;
    int r0;
    if (!trim(qfull, kfull, qr, kr, &r0))
        return 0;
    q += (size_t)r0 * qr->ld, dout += (size_t)r0 * qr->ld, dq += (size_t)r0 * qr->ld;
    lse += r0, D += r0;
    int nq = qr->n, nk = kr->n;
    /* P = e^(S - lse): the block's probabilities as the whole row's softmax has them */
    block_scores(hd, scale, qr, q, kr, k, s);
    for (int i = 0; i < nq; i++) {
        float *row = s + (size_t)i * nk;
        int a = seen(kr->pos, nk, qr->pos[i]);
        for (int j = 0; j < a; j++)
            row[j] -= lse[i];
        exp_n(row, row, (size_t)a);
        memset(row + a, 0, (size_t)(nk - a) * sizeof *row);
    }
    /* O = P V: dV += P^T dO, dP = dO V^T */
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, nk, hd, nq, 1.0f, s, nk, dout, qr->ld,
                1.0f, dv, kr->ld);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, nq, nk, hd, 1.0f, dout, qr->ld, v, kr->ld,
                0.0f, dp, nk);
    /* dS_ij = P_ij (dP_ij - sum_k P_ik dP_ik), and sum_k P_ik dP_ik = sum_c dO_ic O_ic = D_i over
     * the whole row: P_ik dP_ik summed is dO_i . (sum_k P_ik v_k) */
    for (int i = 0; i < nq; i++) {
        float *pr = s + (size_t)i * nk, *dr = dp + (size_t)i * nk;
        for (int j = 0; j < nk; j++)
            dr[j] = pr[j] * (dr[j] - D[i]);
    }
    /* S = Q K^T scale: dQ += scale dS K, dK += scale dS^T Q */
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, nq, hd, nk, scale, dp, nk, k, kr->ld,
                1.0f, dq, qr->ld);
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, nk, hd, nq, scale, dp, nk, q, qr->ld, 1.0f,
                dk, kr->ld);
    return (long)nq * nk;
}

/* ------------------------------------------------------------------ every sequence and head */

/* Offsets of sequence b, head h in the [B n, H hd] tensors and in the [B H n] row vectors. */
static size_t off_mat(const struct ring_heads *rh, int n, int b, int h)
{
    return (size_t)b * n * rh->H * rh->hd + (size_t)h * rh->hd;
}

static size_t off_vec(const struct ring_heads *rh, int n, int b, int h)
{
    return ((size_t)b * rh->H + h) * n;
}

void ring_attn_fwd_init_heads(const struct ring_heads *rh, int nq, float *o, float *m, float *l)
{
    for (int b = 0; b < rh->B; b++)
        for (int h = 0; h < rh->H; h++)
            ring_attn_fwd_init(nq, rh->hd, o + off_mat(rh, nq, b, h), rh->H * rh->hd,
                               m + off_vec(rh, nq, b, h), l + off_vec(rh, nq, b, h));
}

long ring_attn_fwd_heads(const struct ring_heads *rh, int nq, const int *qpos, const float *q,
                         int nk, const int *kpos, const float *k, const float *v, float *o,
                         float *m, float *l, float *s)
{
    int ld = rh->H * rh->hd;
    struct ring_rows qr = {nq, ld, qpos}, kr = {nk, ld, kpos};
    long scores = 0;
    for (int b = 0; b < rh->B; b++)
        for (int h = 0; h < rh->H; h++) {
            size_t qo = off_mat(rh, nq, b, h), ko = off_mat(rh, nk, b, h);
            size_t mo = off_vec(rh, nq, b, h);
            scores += ring_attn_fwd_block(rh->hd, rh->scale, &qr, q + qo, &kr, k + ko, v + ko,
                                          o + qo, ld, m + mo, l + mo, s);
        }
    return scores;
}

void ring_attn_fwd_finish_heads(const struct ring_heads *rh, int nq, float *o, const float *m,
                                const float *l, float *lse)
{
    for (int b = 0; b < rh->B; b++)
        for (int h = 0; h < rh->H; h++) {
            size_t mo = off_vec(rh, nq, b, h);
            ring_attn_fwd_finish(nq, rh->hd, o + off_mat(rh, nq, b, h), rh->H * rh->hd, m + mo,
                                 l + mo, lse + mo);
        }
}

void ring_attn_bwd_delta_heads(const struct ring_heads *rh, int nq, const float *dout,
                               const float *o, float *D)
{
    for (int b = 0; b < rh->B; b++)
        for (int h = 0; h < rh->H; h++) {
            size_t qo = off_mat(rh, nq, b, h);
            ring_attn_bwd_delta(nq, rh->hd, dout + qo, o + qo, rh->H * rh->hd,
                                D + off_vec(rh, nq, b, h));
        }
}

long ring_attn_bwd_heads(const struct ring_heads *rh, int nq, const int *qpos, const float *q,
                         const float *dout, const float *lse, const float *D, float *dq, int nk,
                         const int *kpos, const float *k, const float *v, float *dk, float *dv,
                         float *s, float *dp)
{
    int ld = rh->H * rh->hd;
    struct ring_rows qr = {nq, ld, qpos}, kr = {nk, ld, kpos};
    long scores = 0;
    for (int b = 0; b < rh->B; b++)
        for (int h = 0; h < rh->H; h++) {
            size_t qo = off_mat(rh, nq, b, h), ko = off_mat(rh, nk, b, h);
            size_t mo = off_vec(rh, nq, b, h);
            scores +=
                ring_attn_bwd_block(rh->hd, rh->scale, &qr, q + qo, dout + qo, lse + mo, D + mo,
                                    dq + qo, &kr, k + ko, v + ko, dk + ko, dv + ko, s, dp);
        }
    return scores;
}
