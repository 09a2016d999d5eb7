/* Parameter count of a model shape, tensor by tensor.
 *
 * The list is the layout of the real model's flat parameter buffer (src/model) and of the
 * per-GPU shards: y = x W with W stored as [rows = input dim, cols = output dim].
 *
 * swiglu (LLaMA conventions, no biases, no positional parameters):
 *   embedding [vocab, d]                          (also the output layer when tied)
 *   per layer: attn_norm [d]; wq [d, d]; wk [d, kv]; wv [d, kv]; wo [d, d];
 *              mlp_norm [d]; w_gate [d, ffn]; w_up [d, ffn]; w_down [ffn, d]
 *   final_norm [d]; lm_head [d, vocab] only when untied
 *   with kv = kv_heads x d / heads (grouped-query attention shares key/value heads).
 * gelu (GPT-2/GPT-3 conventions): the same names plus pos_embedding [seq, d], a bias beside
 * every norm weight and linear matrix (attn_norm_bias, bq, bk, bv, bo, mlp_norm_bias, b_up,
 * b_down, final_norm_bias), and no w_gate.
 *
 * synthetic-7b: 51200*4096 + 32*(2*4096 + 4*4096^2 + 3*4096*12544) + 4096 = 7,289,966,592.
 *
 * A mixture of experts (swiglu, model_shape's experts E, top_k k, moe_every): a layer with
 * experts holds E copies of w_gate, w_up, w_down and a router [d, E] where a dense layer holds
 * one feed-forward: E (3 d ffn) + d E in place of 3 d ffn, in the order of the model's buffer
 * (model/gpt.h). A token goes through k experts of each such layer, so the parameters it uses
 * (active, what a step's FLOPs count) are the total less (E - k) 3 d ffn per expert layer:
 * Mixtral 8x7B's 47B in all, 13B active (Jiang et al. 2024; assets/models/mixtral-8x7b.ini,
 * tests/unit/test_calc.c). */
#ifndef SCALELAB_CALC_PARAMS_H
#define SCALELAB_CALC_PARAMS_H

#include <stdbool.h>

#include "calc/preset.h"

enum params_where { PARAMS_FIRST, PARAMS_LAYER, PARAMS_LAST };

struct params_tensor {
    const char *name;
    long long rows, cols;    /* cols 1 for vectors */
    enum params_where where; /* first pipeline stage, once per layer, or last stage */
    bool tp_split;           /* sharded by tensor parallelism (else replicated) */
};

#define PARAMS_MAX_TENSORS 24

struct params_breakdown {
    int n;
    struct params_tensor t[PARAMS_MAX_TENSORS];
    double first;     /* embeddings (first stage) */
    double per_layer; /* one layer (a dense one: t[]'s) */
    double last;      /* final norm and an untied output layer (last stage) */
    double total;     /* first + the layers + last */
    /* a mixture of experts: the layers with experts, one of them, the parameters a token
     * uses; without experts 0, per_layer and total */
    int moe_layers;
    double moe_layer, active;
    int moe_every;
};

/* The tensors of a shape, in buffer order (first, one layer's, last), and their sums. */
void params_count(const struct model_shape *m, struct params_breakdown *out);

/* The whole count. */
double params_total(const struct model_shape *m);
/* The parameters a token uses: the total less the experts it does not go to. */
double params_active(const struct model_shape *m);
/* Layers with experts among first .. first + count - 1 (layer l has when l % moe_every is 0). */
int params_moe_layers(const struct model_shape *m, int first, int count);

/* Parameters held by one GPU of pipeline stage `stage` of pp, tensor-parallel rank of tp:
 * its layers (calc_stage_layers), the embedding on the first stage, the final norm and the
 * output layer on the last stage (a tied embedding is kept on both ends when pp > 1, as
 * Megatron-LM does, its gradients summed between them). Sharded tensors count
 * ceil(size / tp) (a vocabulary that tp does not divide is padded). */
double params_per_gpu(const struct params_breakdown *b, int layers, int stage, int pp, int tp,
                      bool tied);

/* What one GPU of tensor-parallel rank tp holds of the first stage's tensors and of one
 * layer's (sharded tensors count ceil(size / tp)). */
void params_shards(const struct params_breakdown *b, int tp, double *first, double *per_layer);

/* The layers of stage s of pp: [*first, *first + count); the first layers % pp stages take
 * one layer more. */
void params_stage_layers(int layers, int stage, int pp, int *first, int *count);

#endif
