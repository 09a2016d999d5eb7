/* The tiny GPT's attention under context parallelism: each GPU holds T / cp of every
 * sequence's tokens, and its queries meet every GPU's keys and values as they come round the
 * context-parallel group's ring (model/ringattn.h's arithmetic, the seam's cp_shift). With cp
 * 1 and flash attention, the same kernel on the GPU's own block alone. */
#include "config.h"

#include <math.h>
#include <string.h>

#include "base/prof.h"
#include "model/gpt_impl.h"
#include "model/ringattn.h"

static struct ring_heads heads_of(const struct gpt *g)
{
    return (struct ring_heads){g->B, g->hl, g->hd, (float)(1.0 / sqrt((double)g->hd))};
}

/* The places of the tokens of GPU src's block (kpos). */
static void block_places(struct gpt *g, int src)
{
    ring_positions(g->c.seq, g->ring.cp, src, g->part.cp_naive ? RING_NAIVE : RING_BALANCED,
                   g->ring.kpos);
}

/* The ring step's halves (the seam's cp_post and cp_wait): the block at send goes on to the
 * next GPU while this one computes, and the one before's lands in recv at the wait. */
static void post(struct gpt *g, const float *send, size_t n, const char *what)
{
    prof_leave(); /* the ring's waits are not attention's arithmetic */
    g->alloc.cp_post(g->alloc.ctx, send, n, what);
    prof_enter(PROF_ATTENTION);
}

static void wait(struct gpt *g, float *recv, size_t n)
{
    prof_leave();
    g->alloc.cp_wait(g->alloc.ctx, recv, n);
    prof_enter(PROF_ATTENTION);
}

/* A block's attention charged as it runs, between its ring step's post and wait: its scores'
 * FLOPs (QK^T and P V, 2 x 2 hd each; the backward pass twice that), the kind "attention
 * forward" or "attention backward" (gpt_alloc's compute), which a run timed as another model
 * charges as that model's causal blocks. */
static void charge_block(struct gpt *g, long scores, bool fwd, int l)
{
    double flops = (fwd ? 1 : 2) * 2.0 * 2.0 * (double)scores * g->hd;
    op_compute(g, flops, fwd ? GPT_ATTN_FORWARD : GPT_ATTN_BACKWARD, l);
}

/* att and the rows' log-sum-exp (into w[A_P]) of layer l's queries over every GPU's keys and
 * values. At ring step t this GPU holds GPU (cpr - t)'s block; it posts the block's send on and
 * the next one's receive, computes with it, then waits (the block it computes on is the one it
 * sent: the send took a copy), C - 1 sends of K and V in all. */
void op_ring_forward(struct gpt *g, int l)
{
    struct ring_heads rh = heads_of(g);
    int T = g->T, C = g->ring.cp;
    size_t blk = (size_t)g->N * g->dl; /* one of K or V of this GPU's tokens */
    float *att = g->s.w[A_ATT], *lse = g->s.w[A_P], *cur = g->ring.kv[0], *nxt = g->ring.kv[1];
    if (g->inj && g->inj->nan_scores_layer == l && g->ring.cpr == 0) {
        /* the lessons' injected NaN: in the first query, so its row's scores are NaN, named as
         * the full attention names it */
        g->s.w[A_Q][0] = NAN;
        op_check(g, g->s.w[A_Q], 1, l, "attn scores");
    }
    prof_enter(PROF_ATTENTION);
    memcpy(cur, g->s.w[A_K], blk * sizeof *cur);
    memcpy(cur + blk, g->s.w[A_V], blk * sizeof *cur);
    ring_attn_fwd_init_heads(&rh, T, att, lse, g->ring.l);
    long scores = 0;
    for (int t = 0; t < C; t++) {
        if (t < C - 1)
            post(g, cur, 2 * blk, RING_SEND_KV);
        block_places(g, (g->ring.cpr - t + C) % C);
        long k = ring_attn_fwd_heads(&rh, T, g->ring.pos, g->s.w[A_Q], T, g->ring.kpos, cur,
                                     cur + blk, att, lse, g->ring.l, g->s.dscores);
        charge_block(g, k, true, l);
        scores += k;
        if (t < C - 1)
            wait(g, nxt, 2 * blk);
        float *x = cur;
        cur = nxt, nxt = x;
    }
    ring_attn_fwd_finish_heads(&rh, T, att, lse, g->ring.l, lse);
    g->ring.scores += (uint64_t)scores;
    prof_leave();
    op_produced(g, att, blk, l, "attn out");
}

/* The ring's steps of the backward pass after the GPU's own block (C > 1), whose K and V the
 * caller posted before computing it (they are in kv[0]): each other GPU's block's share added
 * to its gradients, which come from the GPU before, the block's K and V posted on ahead of its
 * compute and its gradients after it (the next GPU adds its share to them), the last ones home.
 * Returns the scores computed. */
static long ring_backward_blocks(struct gpt *g, int l, const float *D, float *s, float *dp)
{
    struct ring_heads rh = heads_of(g);
    int T = g->T, C = g->ring.cp;
    size_t blk = (size_t)g->N * g->dl;
    float *cur = g->ring.kv[0], *nxt = g->ring.kv[1];
    float **w = g->s.w;
    long scores = 0;
    wait(g, nxt, 2 * blk);
    memset(nxt + 2 * blk, 0, 2 * blk * sizeof *nxt); /* the block's gradients start here */
    for (int t = 1; t < C; t++) {
        float *x = cur;
        cur = nxt, nxt = x;
        if (t < C - 1)
            post(g, cur, 2 * blk, RING_SEND_KV_ON);
        block_places(g, (g->ring.cpr - t + C) % C);
        long k =
            ring_attn_bwd_heads(&rh, T, g->ring.pos, w[A_Q], g->s.datt, w[A_P], D, g->s.dq, T,
                                g->ring.kpos, cur, cur + blk, cur + 2 * blk, cur + 3 * blk, s, dp);
        charge_block(g, k, false, l);
        scores += k;
        op_rnd(g, cur + 2 * blk, 2 * blk); /* they travel in the training format */
        if (t < C - 1)
            wait(g, nxt, 2 * blk);
        /* the block's gradients on; the last step's to their owner, this GPU's from the one
         * before */
        post(g, cur + 2 * blk, 2 * blk, RING_SEND_GRADS);
        wait(g, nxt + 2 * blk, 2 * blk);
    }
    for (size_t i = 0; i < blk; i++) {
        g->s.dk[i] += nxt[2 * blk + i];
        g->s.dv[i] += nxt[3 * blk + i];
    }
    return scores;
}

/* The attention core's backward under context parallelism, from datt to dq, dk, dv (rounded,
 * turned back from RoPE), with layer l's q, k, v, att and log-sum-exp in the workspace. The
 * keys and values travel the ring again, and with them the gradients the GPUs they passed gave
 * them (as TransformerEngine's AttnFuncWithCPAndKVP2P, which Megatron-LM's context parallelism
 * runs): step 0 posts this GPU's K and V on and computes its own block into dk, dv; step t of 1
 * to C - 1 posts the K and V it holds on (but the last), adds its share to the gradients of the
 * block of GPU cpr - t, which came from the GPU before (zero at step 1), and sends them on, the
 * last step's to their owner. So K and V go C - 1 times and their gradients C - 1 times, and
 * the gradients come home to add to the owner's own share. With flash attention at cp 1 the
 * own block is all. */
void op_ring_backward(struct gpt *g, int l)
{
    struct ring_heads rh = heads_of(g);
    int T = g->T;
    size_t blk = (size_t)g->N * g->dl, TT = (size_t)T * T;
    float *D = g->ring.l, *s = g->s.dscores, *dp = g->s.dscores + TT;
    float **w = g->s.w;
    prof_enter(PROF_ATTENTION);
    ring_attn_bwd_delta_heads(&rh, T, g->s.datt, w[A_ATT], D);
    memset(g->s.dq, 0, blk * sizeof *g->s.dq);
    memset(g->s.dk, 0, blk * sizeof *g->s.dk);
    memset(g->s.dv, 0, blk * sizeof *g->s.dv);
    if (g->ring.cp > 1) {
        float *cur = g->ring.kv[0];
        memcpy(cur, w[A_K], blk * sizeof *cur);
        memcpy(cur + blk, w[A_V], blk * sizeof *cur);
        post(g, cur, 2 * blk, RING_SEND_KV);
    }
    long scores = ring_attn_bwd_heads(&rh, T, g->ring.pos, w[A_Q], g->s.datt, w[A_P], D, g->s.dq, T,
                                      g->ring.pos, w[A_K], w[A_V], g->s.dk, g->s.dv, s, dp);
    charge_block(g, scores, false, l);
    if (g->ring.cp > 1)
        scores += ring_backward_blocks(g, l, D, s, dp);
    g->ring.scores += (uint64_t)scores;
    prof_leave();
    op_attn_grads_done(g, l);
}
