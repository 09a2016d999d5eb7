/* The router of a mixture-of-experts layer: which experts each token goes to, with what
 * weight, in which row of the experts' buffer, and the load-balancing loss. Pure functions over
 * arrays, no threads; the experts themselves (SwiGLU feed-forwards) run in model/gpt.c.
 *
 * For n tokens and E experts, from the router's logits z = x Wr^T (x the layer's MLP-norm
 * output, Wr [E, d]), computed and kept in fp32 whatever the training precision (Switch
 * Transformer's "selective precision", Fedus et al. 2021, §2.4):
 *
 *   probabilities   p = softmax(z) per token (in double, kept as fp32)
 *   choices         the k most probable experts, most probable first (ties: the lower index)
 *   gate weights    k = 1: g = p of the chosen expert, as Switch Transformer does (Fedus et al.
 *                   2021, eq. 2: the router's gradient reaches it through the gate); k = 2:
 *                   g_j = p_j / (p_1 + p_2), the softmax over the top-k logits, as Mixtral does
 *                   (Jiang et al. 2024, "Mixtral of Experts", eq. 1: Softmax(TopK(x Wg)))
 *   capacity        an expert takes at most cap = ceil(C k n / E) tokens (base/experts.h's
 *                   rule: Switch's expert capacity, with the k choices of each token counted,
 *                   as Megatron-LM's get_capacity is called with n k); the
 *                   first choices of every token, in token order, take their rows before any
 *                   second choice (GShard, Lepikhin et al. 2020, Algorithm 1); a choice past an
 *                   expert's capacity is dropped: that token gets nothing from that expert and
 *                   passes through the residual alone (its other choice still counts, with the
 *                   weight it had). C = 0: no limit (cap = n, nothing dropped)
 *   rows            expert e's tokens are rows off[e] .. off[e] + kept[e] - 1 of a buffer of
 *                   experts_rows rows: with a capacity, E x cap rows, expert e's from e cap (the
 *                   static [E, cap, d] shape of GShard's dispatch); without, the k n choices
 *                   packed expert by expert
 *   load-balancing  aux = α E Σ_i f_i P_i (Fedus et al. 2021, eq. 4-6), f_i the share of the
 *     loss          k n choices that went to expert i (before capacity), P_i the mean of p_i
 *                   over the tokens; written as Megatron-LM's switch_load_balancing_loss_func
 *                   (megatron/core/transformer/moe/moe_utils.py): α E / (k n^2) Σ_i load_i
 *                   Σ_t p_{t,i}. Even routing gives aux = α for any k. Its gradient treats the
 *                   counts as constants: d aux / d p_{t,i} = α E load_i / (k n^2).
 */
#ifndef SCALELAB_MODEL_MOE_H
#define SCALELAB_MODEL_MOE_H

#include <stddef.h>
#include <stdint.h>

/* A layer's routing as its backward pass needs it, in a block of moe_table_words 4-byte words
 * (what the layer keeps, model/gpt_impl.h's A_ROUTE): each of the n k choices' expert, row and
 * gate, then each expert's first row, kept tokens and load. Dropless expert parallelism keeps E
 * words more after them (recv: the rows each GPU of the group sent each of this GPU's experts,
 * model/gpt.h), which only a block sized for them holds. */
struct moe_table {
    int32_t *choice, *row;
    float *gate;
    int32_t *off, *kept, *load;
    int32_t *recv;
};
size_t moe_table_words(int n, int k, int experts);
struct moe_table moe_table_at(void *block, int n, int k, int experts);

/* One layer's routing of n tokens. The arrays are the caller's: probs [n E], choice, row,
 * gate [n k], off, kept, load [E] (a struct moe_table's). */
struct moe_route {
    int n, experts, k, cap;
    float *probs;
    int32_t *choice; /* expert of each choice */
    int32_t *row;    /* its row in the experts' buffer, -1 when dropped */
    float *gate;     /* its weight in the output (kept for the backward pass) */
    int32_t *off, *kept, *load;
    long dropped; /* choices dropped past a capacity */
};

/* Routes n tokens from their logits [n, E]: fills r (whose n, experts, k and arrays are set)
 * and returns the load-balancing loss with coefficient aux_coef. */
double moe_route(struct moe_route *r, const float *logits, double capacity_factor, double aux_coef);

/* The backward pass of the routing: from d loss / d gate [n, k] (0 for a dropped choice) and
 * aux_scale, the weight of the load-balancing loss in the loss differentiated (the loss scale,
 * and this share of the batch's tokens), to d loss / d logits [n, E]. */
void moe_route_backward(const struct moe_route *r, const float *dgate, double aux_coef,
                        double aux_scale, float *dlogits);

#endif
