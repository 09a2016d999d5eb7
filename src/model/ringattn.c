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
 * increase in both. false: none of it. */
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

long ring_block_scores(int T, int C, int q, int k, enum ring_split split)
{
    /* each query row sees a prefix of the block's keys, longer as the rows go on */
    int n = T / C;
    long sum = 0;
    for (int i = 0, a = 0; i < n; i++) {
        int p = ring_position(T, C, q, split, i);
        while (a < n && ring_position(T, C, k, split, a) <= p)
            a++;
        sum += a;
    }
    return sum;
}

/* A block is computed a tile of query rows at a time. The rows of a tile all see the keys
 * [0, a0) the tile's first row sees, one matrix product for the tile, and each row the few
 * keys more it sees one by one (the causal staircase on a diagonal: at most RING_TILE - 1
 * more), so no score the mask hides is computed: flash attention's causal kernels skip the
 * tiles above the diagonal and TransformerEngine's context parallelism (AttnFuncWithCPAndKVP2P)
 * runs the diagonal step with the causal mask and the others on the half the mask leaves.
 * Full blocks are one tile: every row sees every key. */
#define RING_TILE 16

struct tile {
    int i0, i1, a0; /* rows [i0, i1), all seeing keys [0, a0) */
};

static bool tile_next(const struct ring_rows *qr, const struct ring_rows *kr, struct tile *t)
{
    if (t->i1 >= qr->n)
        return false;
    t->i0 = t->i1;
    t->a0 = seen(kr->pos, kr->n, qr->pos[t->i0]);
    t->i1 = t->i0 + 1;
    while (t->i1 < qr->n && seen(kr->pos, kr->n, qr->pos[t->i1]) - t->a0 < RING_TILE)
        t->i1++;
    return true;
}

/* The scores of a tile's rows over the keys each sees into s (row i at s + i nk): scale q k^T.
 * Returns how many. */
static long tile_scores(int hd, float scale, const struct ring_rows *qr, const float *q,
                        const struct ring_rows *kr, const float *k, const struct tile *t, float *s)
{
    int nk = kr->n, rows = t->i1 - t->i0;
    long work = 0;
    if (t->a0 > 0)
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, rows, t->a0, hd, scale,
                    q + (size_t)t->i0 * qr->ld, qr->ld, k, kr->ld, 0.0f, s + (size_t)t->i0 * nk,
                    nk);
    for (int i = t->i0; i < t->i1; i++) {
        int a = seen(kr->pos, nk, qr->pos[i]);
        if (a > t->a0)
            cblas_sgemv(CblasRowMajor, CblasNoTrans, a - t->a0, hd, scale,
                        k + (size_t)t->a0 * kr->ld, kr->ld, q + (size_t)i * qr->ld, 1, 0.0f,
                        s + (size_t)i * nk + t->a0, 1);
        work += a;
    }
    return work;
}

/* y[i] += alpha sum_j p[i, j] m[j] over the keys j row i sees (o += P V, dq += dS K): rows of
 * y with leading dimension ldy, m's with ldm. */
static void tile_times(int hd, float alpha, const struct ring_rows *qr, const struct ring_rows *kr,
                       const struct tile *t, const float *p, const float *m, float *y, int ldy)
{
    int nk = kr->n, rows = t->i1 - t->i0;
    if (t->a0 > 0)
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, rows, hd, t->a0, alpha,
                    p + (size_t)t->i0 * nk, nk, m, kr->ld, 1.0f, y + (size_t)t->i0 * ldy, ldy);
    for (int i = t->i0; i < t->i1; i++) {
        int a = seen(kr->pos, nk, qr->pos[i]);
        if (a > t->a0)
            cblas_sgemv(CblasRowMajor, CblasTrans, a - t->a0, hd, alpha, m + (size_t)t->a0 * kr->ld,
                        kr->ld, p + (size_t)i * nk + t->a0, 1, 1.0f, y + (size_t)i * ldy, 1);
    }
}

/* z[j] += alpha sum_i p[i, j] x[i] over the rows that see key j (dv += P^T dO, dk += dS^T Q):
 * x's rows with leading dimension ldx, z's with the keys'. */
static void tile_times_t(int hd, float alpha, const struct ring_rows *qr,
                         const struct ring_rows *kr, const struct tile *t, const float *p,
                         const float *x, int ldx, float *z)
{
    int nk = kr->n, rows = t->i1 - t->i0;
    if (t->a0 > 0)
        cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, t->a0, hd, rows, alpha,
                    p + (size_t)t->i0 * nk, nk, x + (size_t)t->i0 * ldx, ldx, 1.0f, z, kr->ld);
    for (int i = t->i0; i < t->i1; i++) {
        int a = seen(kr->pos, nk, qr->pos[i]);
        if (a > t->a0)
            cblas_sger(CblasRowMajor, a - t->a0, hd, alpha, p + (size_t)i * nk + t->a0, 1,
                       x + (size_t)i * ldx, 1, z + (size_t)t->a0 * kr->ld, kr->ld);
    }
}

void ring_attn_fwd_init(int nq, int hd, float *o, int ldo, float *m, float *l)
{
    for (int i = 0; i < nq; i++) {
        memset(o + (size_t)i * ldo, 0, (size_t)hd * sizeof *o);
        m[i] = -INFINITY;
        l[i] = 0.0f;
    }
}

/* Row i's scores (a of them) into the running state: e^(s - m') in place, l and o rescaled. */
static void online_row(int hd, float *row, int a, float *o, float *m, float *l)
{
    float mx = row[0], sum = 0.0f;
    for (int j = 1; j < a; j++)
        mx = row[j] > mx ? row[j] : mx;
    float mnew = mx > *m ? mx : *m;
    for (int j = 0; j < a; j++)
        row[j] -= mnew;
    exp_n(row, row, (size_t)a);
    for (int j = 0; j < a; j++)
        sum += row[j];
    /* the terms so far were weighed by e^-m: e^(m - mnew) makes them e^-mnew's */
    float alpha = expf(*m - mnew);
    *l = *l * alpha + sum;
    *m = mnew;
    if (alpha != 1.0f)
        for (int c = 0; c < hd; c++)
            o[c] *= alpha;
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
    int nk = kr->n;
    long work = 0;
    for (struct tile t = {0, 0, 0}; tile_next(qr, kr, &t);) {
        work += tile_scores(hd, scale, qr, q, kr, k, &t, s);
        for (int i = t.i0; i < t.i1; i++)
            online_row(hd, s + (size_t)i * nk, seen(kr->pos, nk, qr->pos[i]), o + (size_t)i * ldo,
                       &m[i], &l[i]);
        tile_times(hd, 1.0f, qr, kr, &t, s, v, o, ldo);
    }
    return work;
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
    int nk = kr->n;
    long work = 0;
    for (struct tile t = {0, 0, 0}; tile_next(qr, kr, &t);) {
        /* P = e^(S - lse): the block's probabilities as the whole row's softmax has them */
        work += tile_scores(hd, scale, qr, q, kr, k, &t, s);
        for (int i = t.i0; i < t.i1; i++) {
            float *row = s + (size_t)i * nk;
            int a = seen(kr->pos, nk, qr->pos[i]);
            for (int j = 0; j < a; j++)
                row[j] -= lse[i];
            exp_n(row, row, (size_t)a);
        }
        /* O = P V: dV += P^T dO, dP = dO V^T (the scores' staircase again) */
        tile_times_t(hd, 1.0f, qr, kr, &t, s, dout, qr->ld, dv);
        tile_scores(hd, 1.0f, qr, dout, kr, v, &t, dp);
        /* dS_ij = P_ij (dP_ij - sum_k P_ik dP_ik), and sum_k P_ik dP_ik = sum_c dO_ic O_ic =
         * D_i over the whole row: P_ik dP_ik summed is dO_i . (sum_k P_ik v_k) */
        for (int i = t.i0; i < t.i1; i++) {
            float *pr = s + (size_t)i * nk, *dr = dp + (size_t)i * nk;
            int a = seen(kr->pos, nk, qr->pos[i]);
            for (int j = 0; j < a; j++)
                dr[j] = pr[j] * (dr[j] - D[i]);
        }
        /* S = Q K^T scale: dQ += scale dS K, dK += scale dS^T Q */
        tile_times(hd, scale, qr, kr, &t, dp, k, dq, qr->ld);
        tile_times_t(hd, scale, qr, kr, &t, dp, q, qr->ld, dk);
    }
    return work;
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
