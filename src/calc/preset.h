/* Model shapes and cluster descriptions, read from INI files.
 *
 * A model is a shape: a [model] section with every one of the keys
 *   name, layers, d_model, heads, kv_heads, ffn, ffn_kind (swiglu|gelu), vocab,
 *   tied (true|false), seq
 * and, for a mixture of experts (swiglu only), the optional keys
 *   experts (E >= 2: each of its layers' feed-forward is E SwiGLU experts of width ffn and a
 *   router), top_k (1 or 2, needed with experts: the experts a token goes to), moe_every
 *   (default 1: layer l has experts when l % moe_every == 0, Megatron-LM's moe_layer_freq),
 *   capacity_factor (default 0, no limit: an expert takes at most ceil(C k tokens / E))
 * and nothing else. Its parameter count is computed from the shape (calc/params.h).
 * ffn_kind also fixes the conventions of the layer: swiglu means the LLaMA family (RMSNorm with
 * a weight only, three feed-forward matrices, no biases, rotary positions: no positional
 * parameters); gelu means the GPT-2/GPT-3 family (LayerNorm with weight and bias, a bias on
 * every linear layer, two feed-forward matrices, learned positional embeddings of seq x d_model).
 *
 * A cluster is a [cluster] section with the keys
 *   name, gpus_per_node, nodes, hbm (a size: "80GiB"),
 *   peak_flops (dense bf16 FLOP/s), intra_latency, inter_latency (α, seconds),
 *   intra_bandwidth, inter_bandwidth (β, bytes per second per GPU and direction).
 * filling the simulator's struct cluster_spec (sim/spec.h), which the planner, the simulated
 * cluster and the cost model all use. assets/clusters/ cites where each number comes from.
 *
 * A name without '/' and without ".ini" is a preset, read from datadir()/assets/models/NAME.ini
 * or datadir()/assets/clusters/NAME.ini; anything else is a file path. A malformed file gets
 * ERR_INVAL and "file:line: what was expected". */
#ifndef SCALELAB_CALC_PRESET_H
#define SCALELAB_CALC_PRESET_H

#include <stdbool.h>
#include <stddef.h>

struct cluster_spec; /* sim/spec.h: the cluster as the simulator and the cost model see it */
struct cost_net;
struct error;

enum ffn_kind { FFN_SWIGLU, FFN_GELU };

#define PRESET_NAME_MAX 64

struct model_shape {
    char name[PRESET_NAME_MAX];
    int layers, d_model, heads, kv_heads, ffn, vocab, seq;
    enum ffn_kind ffn_kind;
    bool tied;
    int experts, top_k, moe_every; /* experts 0: a dense model (top_k, moe_every unused) */
    double capacity_factor;        /* 0: no capacity limit */
};

/* Limits of a shape (beyond them a file is "absurd" and refused). */
enum {
    PRESET_MAX_LAYERS = 10000,
    PRESET_MAX_D_MODEL = 1 << 20,
    PRESET_MAX_FFN = 1 << 24,
    PRESET_MAX_VOCAB = 1 << 24,
    PRESET_MAX_SEQ = 1 << 24,
    PRESET_MAX_GPUS = 1 << 20, /* gpus_per_node x nodes */
    PRESET_MAX_EXPERTS = 1024,
};

/* The GPUs the lab simulates unless told: every command's --cluster default, the window's. */
#define PRESET_CLUSTER "h100-80gb"

/* A preset name or a file path (see above). */
int preset_load_model(const char *name_or_path, struct model_shape *m, struct error *e);
int preset_load_cluster(const char *name_or_path, struct cluster_spec *c, struct error *e);

/* The same from text already in memory; file names the text in messages. */
int preset_parse_model(const char *text, const char *file, struct model_shape *m, struct error *e);
int preset_parse_cluster(const char *text, const char *file, struct cluster_spec *c,
                         struct error *e);

/* The preset names of a kind ("models" or "clusters"), comma-separated and sorted, in buf. */
char *preset_list(char *buf, size_t n, const char *kind);

/* "swiglu" or "gelu". */
const char *preset_ffn_kind_name(enum ffn_kind k);

/* The cost model's view (comm/cost.h) of `gpus` GPUs of the cluster. */
void preset_cost_net(const struct cluster_spec *c, int gpus, struct cost_net *out);

#endif
