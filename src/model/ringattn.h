/* Ring attention's arithmetic: causal attention computed one key/value block at a time, so that
 * a GPU holding a C-th of a sequence's tokens attends to all of them as the other GPUs' key and
 * value blocks come round a ring (Ring Attention, Liu, Zaharia and Abbeel 2023; Megatron-LM's
 * context parallelism, megatron/core/transformer/dot_product_attention with TransformerEngine's
 * attention over a cp group).
 *
 * No T x T matrix is formed. The forward pass keeps, per query row, a running maximum m of its
 * scores, a running sum l of e^(s - m) and an output o = sum_j e^(s_j - m) v_j not yet divided
 * by l (the online softmax: Milakov and Gimelshein 2018; FlashAttention, Dao et al. 2022). A new
 * block with row maximum m' > m rescales l and o by e^(m - m') before adding its own terms, so
 * the blocks may come in any order; at the end o / l is the attention's output and lse = m +
 * ln l the log of the row's softmax denominator, all the backward pass keeps of the softmax.
 *
 * The backward pass recomputes each block's probabilities from lse, P = e^(S - lse), and with
 * D = rowsum(dO o) (FlashAttention-2, Dao 2023) gives dS = P (dO V^T - D), so that dQ = dS K,
 * dK = dS^T Q (each times the scores' 1/sqrt(hd)) and dV = P^T dO add up block by block: the
 * query's gradient stays home, the key's and value's travel with their block.
 *
 * The mask is by position in the sequence: query row i may see key j when kpos[j] <= qpos[i].
 * Positions are the GPU's tokens' places in the whole sequence (ring_positions): with the
 * balanced split a GPU holds two chunks far apart, so a block's positions are a list, not a
 * range. Only the scores the mask leaves are computed: a block no query of which may see is
 * skipped whole, and in the others each query row meets the keys it sees, a tile of rows at a
 * time (with the balanced split, half of every block, a GPU's own included: its early chunk's
 * triangle, its late chunk's triangle and the late queries against the early keys, the early
 * queries against the late keys skipped). The causal imbalance is what is left: under the naive
 * split the last GPU computes C - 1 blocks and a triangle, (2C - 1)/C times the mean for long
 * blocks, and the balanced split evens it out.
 *
 * Matrices are row-major with a leading dimension, so a head's slice of the model's [rows,
 * heads x hd] tensors is used in place: one call per (sequence, head), or ring_attn_*_heads for
 * all of a block's. */
#ifndef SCALELAB_MODEL_RINGATTN_H
#define SCALELAB_MODEL_RINGATTN_H

#include <stdbool.h>
#include <stddef.h>

/* How a sequence's T tokens are cut over C GPUs. Naive: GPU r holds chunk r of C (positions r
 * T/C to (r + 1) T/C - 1), so under the causal mask the last GPU has 2C - 1 times the first
 * one's work (picotron's context-parallel split: its data loader, picotron/data.py's
 * collate_batch, slices each sequence contiguously from cp_rank x seq_length_per_gpu).
 * Balanced: the sequence is cut in 2C chunks and GPU r holds chunks r and 2C - 1 - r, an early
 * and a late one, so every GPU has the same work (Megatron-LM's get_batch_on_this_cp_rank). */
enum ring_split { RING_BALANCED, RING_NAIVE };

/* Whether T tokens split over C GPUs the given way (T a multiple of C, or of 2C balanced). */
bool ring_split_ok(int T, int C, enum ring_split split);
/* The T / C positions GPU r of C holds, in increasing order, into pos; the i-th of them. */
void ring_positions(int T, int C, int r, enum ring_split split, int *pos);
int ring_position(int T, int C, int r, enum ring_split split, int i);

/* The scores GPU q's queries compute against GPU k's keys (T tokens over C GPUs, split as
 * given), per (sequence, head): the pairs the causal mask leaves, key position <= query
 * position, and no other (ring_attn_fwd_block's work). A block of later keys than all the
 * queries is 0, one of earlier keys n^2 (n = T / C), a GPU's own block under the naive split
 * the triangle n (n + 1) / 2. The window draws the blocks of the causal matrix from it
 * (ui/panel_cprun.c). */
long ring_block_scores(int T, int C, int q, int k, enum ring_split split);

/* The phases the ring's sends are tagged with (model/gpt_ring.c, par/cp.c): the forward's K and
 * V, the backward's K and V sent on ahead of the blocks after the GPU's own, the gradients the
 * GPUs a block passed added (one send after each of those blocks, the last home). The
 * backward's first send (K and V, before its own block) is tagged as the forward's. */
#define RING_SEND_KV    "attn k v"
#define RING_SEND_KV_ON "attn k v on"
#define RING_SEND_GRADS "grad attn k v"

/* A block of rows of one (sequence, head): n rows with leading dimension ld, at the sequence
 * positions pos[0..n), increasing (so the keys a query may see are a prefix of a block). */
struct ring_rows {
    int n, ld;
    const int *pos;
};

/* Start a forward pass over nq query rows: o 0 (nq x hd, leading dimension ldo), m -inf, l 0. */
void ring_attn_fwd_init(int nq, int hd, float *o, int ldo, float *m, float *l);
/* Add key/value block (k, v) to the running state of queries q, with the scores' scale (1 /
 * sqrt(hd)); s is scratch of nq x nk floats. Only the scores the mask leaves are computed, each
 * query row against the keys it sees (ring_block_scores). Returns their number (0: the block
 * was skipped): the work. */
long ring_attn_fwd_block(int hd, float scale, const struct ring_rows *qr, const float *q,
                         const struct ring_rows *kr, const float *k, const float *v, float *o,
                         int ldo, float *m, float *l, float *s);
/* End the forward pass: o divided by l, and lse = m + ln l per row (may alias m). */
void ring_attn_fwd_finish(int nq, int hd, float *o, int ldo, const float *m, const float *l,
                          float *lse);

/* D = rowsum(dO o) per query row, once before the backward pass's blocks. */
void ring_attn_bwd_delta(int nq, int hd, const float *dout, const float *o, int ld, float *D);
/* Add key/value block (k, v)'s part of dq (rows of q), and its own dk, dv (rows of k, v), from
 * dout, lse and D of the queries (dout and dq with q's leading dimension, dk and dv with k's); s
 * and dp are scratch of nq x nk floats each. The same scores as the forward pass; returns their
 * number (0: skipped, nothing added). */
long ring_attn_bwd_block(int hd, float scale, const struct ring_rows *qr, const float *q,
                         const float *dout, const float *lse, const float *D, float *dq,
                         const struct ring_rows *kr, const float *k, const float *v, float *dk,
                         float *dv, float *s, float *dp);

/* The same over B sequences and H heads of hd: q, o, dq, dout are [B nq, H hd] (leading
 * dimension H hd), k, v, dk, dv [B nk, H hd]; m, l, lse, D are [B H nq]. The positions are the
 * same for every sequence. Scratch: nq x nk floats (two for the backward pass). */
struct ring_heads {
    int B, H, hd;
    float scale;
};
void ring_attn_fwd_init_heads(const struct ring_heads *rh, int nq, float *o, float *m, float *l);
long ring_attn_fwd_heads(const struct ring_heads *rh, int nq, const int *qpos, const float *q,
                         int nk, const int *kpos, const float *k, const float *v, float *o,
                         float *m, float *l, float *s);
void ring_attn_fwd_finish_heads(const struct ring_heads *rh, int nq, float *o, const float *m,
                                const float *l, float *lse);
void ring_attn_bwd_delta_heads(const struct ring_heads *rh, int nq, const float *dout,
                               const float *o, float *D);
long ring_attn_bwd_heads(const struct ring_heads *rh, int nq, const int *qpos, const float *q,
                         const float *dout, const float *lse, const float *D, float *dq, int nk,
                         const int *kpos, const float *k, const float *v, float *dk, float *dv,
                         float *s, float *dp);

#endif
