/* Communication per GPU per step for a layout, data-, tensor- and pipeline-parallel, with
 * its alpha-beta time and what stays exposed (calc/traffic.h). */
#include "config.h"
#include "calc/traffic.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "base/error.h"
#include "calc/params.h"
#include "calc/preset.h"
#include "comm/cost.h"
#include "sim/spec.h"

/* A group of n GPUs whose ranks are `stride` apart: how many of them share a node. */
static void group_net(const struct cluster_spec *cl, int n, int stride, struct cost_net *net)
{
    preset_cost_net(cl, n, net);
    int per = cl->gpus_per_node / stride;
    net->gpus_per_node = per < 1 ? 1 : per;
}

static int ring(enum cost_op op, const struct cost_net *net, double bytes, double *t,
                struct error *e)
{
    struct cost_result r;
    int rc = cost_collective(op, COST_RING, net, bytes, &r, e);
    *t = rc < 0 ? 0 : r.time_s;
    return rc;
}

/* The tokens of a sequence one GPU holds: s, or s / cp under context parallelism. */
static double local_seq(const struct memory_config *c)
{
    return (double)c->seq / (c->cp > 1 ? c->cp : 1);
}

static double pos(double x)
{
    return x > 0 ? x : 0;
}

/* Adds a named piece to a kind's bytes. */
static void piece(struct traffic_part *t, const char *name, double bytes)
{
    if (t->npieces < TRAFFIC_PIECES && bytes > 0)
        t->piece[t->npieces++] = (struct traffic_piece){name, bytes};
    t->bytes += bytes;
}

/* The data-parallel reduction of psi parameters replicated over n GPUs `stride` ranks apart;
 * `last` of them (the embedding's, on the first stage) get their gradients last in the
 * backward pass and first use their weights in the forward pass. */
static int dp_pass(const struct memory_config *c, const struct cluster_spec *cl, double psi, int n,
                   int stride, double last, double fwd_s, double bwd_s, struct traffic_part *out,
                   struct error *e)
{
    int m = c->micro_batches;
    struct memory_states k;
    memory_bytes_per_param(c->precision, c->optimizer, c->grad_fp32, &k);
    /* the flat buffers are padded to N ceil(Ψ/N) elements (par/shard.h): every GPU sends
     * N - 1 chunks of S = ceil(Ψ/N) per pass */
    double S = ceil(psi / n), g = k.gradients, w = k.weights, f = (n - 1.0) / n;
    psi = S * n;
    struct cost_net net;
    group_net(cl, n, stride, &net);
    double t_ar, t_rs, t_ag, l_ar = 0, l_rs = 0, l_ag = 0;
    int rc = 0;
    rc |= ring(COST_ALLREDUCE, &net, psi * g, &t_ar, e);
    rc |= ring(COST_REDUCE_SCATTER, &net, psi * g, &t_rs, e);
    rc |= ring(COST_ALLGATHER, &net, psi * w, &t_ag, e);
    /* the tail and head no compute hides: the gradients completed last are reduced once the
     * backward pass has ended, the weights used first are gathered before the forward pass
     * starts (measured on runs timed as synthetic-7b: its embedding's, 1-2 ms of a 194 ms
     * step on 8 GPUs) */
    if (last > 0 && n > 1) {
        rc |= ring(COST_ALLREDUCE, &net, last * g, &l_ar, e);
        rc |= ring(COST_REDUCE_SCATTER, &net, last * g, &l_rs, e);
        rc |= ring(COST_ALLGATHER, &net, last * w, &l_ag, e);
    }
    if (rc < 0)
        return ERR_INVAL;
    switch (c->zero) {
    case 0:
        out->bytes = 2 * f * psi * g;
        out->time_s = t_ar;
        out->exposed = fmax(pos(t_ar - bwd_s), l_ar);
        snprintf(out->formula, sizeof out->formula, "all-reduce 2(N-1)/N x Ψ x %g B, N = %d", g, n);
        break;
    case 1:
        out->bytes = f * psi * (g + w);
        out->time_s = t_rs + t_ag;
        out->exposed = fmax(pos(t_rs - bwd_s), l_rs) + t_ag;
        snprintf(out->formula, sizeof out->formula,
                 "reduce-scatter + all-gather (N-1)/N x Ψ x (%g + %g) B, N = %d", g, w, n);
        break;
    case 2:
        out->bytes = f * psi * (m * g + w);
        out->time_s = m * t_rs + t_ag;
        out->exposed = m * fmax(pos(t_rs - bwd_s), l_rs) + t_ag;
        snprintf(out->formula, sizeof out->formula,
                 "(N-1)/N x Ψ x (m %g + %g) B: a reduce-scatter per micro-batch, m = %d, N = %d", g,
                 w, m, n);
        break;
    default:
        /* the gradients are reduced in their own format, as at every other stage */
        out->bytes = f * psi * m * (2 * w + g);
        out->time_s = m * (2 * t_ag + t_rs);
        /* without prefetch a unit is gathered once it is needed, and in the backward pass
         * after the unit before it has been computed, when that one's gradients start their
         * reduce-scatter on the same port: every gather and reduce-scatter is waited for */
        out->exposed =
            c->no_prefetch
                ? out->time_s
                : m * (fmax(pos(t_ag - fwd_s), l_ag) + fmax(pos(t_ag + t_rs - bwd_s), l_rs));
        snprintf(out->formula, sizeof out->formula,
                 "(N-1)/N x Ψ x m x (2 x %g + %g) B: 2 all-gathers + 1 reduce-scatter per "
                 "micro-batch (%.3gx DDP), m = %d, N = %d%s",
                 w, g, m * (2 * w + g) / (2 * g), m, n,
                 c->no_prefetch ? "; no prefetch: all of it waited for" : "");
        break;
    }
    if (n == 1)
        snprintf(out->formula, sizeof out->formula, "none: one data-parallel replica");
    return 0;
}

/* The gradients and weights over the data-parallel GPUs (dp x cp); with expert parallelism the
 * experts' over the dp / ep GPUs of their expert rank (each kind's shards even: par/dp.c's
 * packed_bounds), the others' over dp. */
static int data_parallel(const struct memory_config *c, const struct cluster_spec *cl, int stage,
                         double psi, double fwd_s, double bwd_s, struct traffic_part *out,
                         struct error *e)
{
    double x = c->ep > 1 ? memory_ep_experts(c) : 0;
    /* the first stage's embedding (its vocabulary rows under tensor parallelism) */
    double last =
        c->model && stage == 0 ? ceil((double)c->model->vocab / c->tp) * c->model->d_model : 0;
    int rc = dp_pass(c, cl, psi - x, memory_grad_ranks(c), c->tp, last, fwd_s, bwd_s, out, e);
    if (rc < 0)
        return rc;
    double bytes = out->bytes;
    out->bytes = 0;
    piece(out, "gradients_and_weights", bytes);
    if (x > 0) {
        struct traffic_part xp = {0};
        int xn = c->dp / c->ep;
        if ((rc = dp_pass(c, cl, x, xn, c->tp * c->ep, 0, fwd_s, bwd_s, &xp, e)) < 0)
            return rc;
        piece(out, "experts", xp.bytes);
        out->time_s += xp.time_s, out->exposed += xp.exposed;
        size_t len = strlen(out->formula);
        snprintf(out->formula + len, sizeof out->formula - len,
                 "; the experts' Ψ_x the same way, N = dp / ep = %d", xn);
    }
    return 0;
}

/* Stage s of a pipeline: the first stage sends activations only, the last their gradients
 * only, a middle one both; with a tied embedding the two ends hold a copy each and
 * all-reduce its gradient once per step (Megatron-LM's embedding group): a ring of two GPUs
 * sends the whole buffer, V d x g bytes (split by t under tensor parallelism). */
static void pipeline_stage(const struct memory_config *c, int s, double msg, double t1, int p,
                           struct traffic_part *out)
{
    int m = c->micro_batches, P = c->pp;
    int v = sched_chunks(c->schedule, c->chunks), pv = P * v, fwd = 0, bwd = 0;
    /* every chunk's output goes on, but the last virtual stage's; every chunk's input gradient
     * goes back, but the first's; none to this GPU's own other chunk (zbv's turn) */
    bool ends = false,
         apart = sched_stage_of(c->schedule, P, 0) != sched_stage_of(c->schedule, P, pv - 1);
    for (int k = 0; k < v; k++) {
        int vs = sched_vstage(c->schedule, P, s, k);
        fwd += vs < pv - 1 && sched_stage_of(c->schedule, P, vs + 1) != s;
        bwd += vs > 0 && sched_stage_of(c->schedule, P, vs - 1) != s;
        ends |= vs == 0 || vs == pv - 1;
    }
    int sends = (fwd + bwd) * m;
    int ways = (s < P - 1) + (s > 0);
    piece(out, "activations", sends * msg);
    out->time_s = sends * t1;
    /* the pipeline fills and drains through every stage: P - 1 sends forward and P - 1 back
     * on the step's critical path, whichever stage this is */
    out->exposed = 2.0 * (P - 1) * t1;
    char emb[96] = "";
    if (c->model->tied && ends && apart) {
        struct memory_states k;
        memory_bytes_per_param(c->precision, c->optimizer, c->grad_fp32, &k);
        piece(out, "tied_embedding",
              ceil((double)c->model->vocab / c->tp) * c->model->d_model * k.gradients);
        snprintf(emb, sizeof emb,
                 " + V d x %g B (the tied embedding's gradient, all-reduced "
                 "between the ends)",
                 k.gradients);
    }
    if (v > 1) {
        snprintf(out->formula, sizeof out->formula,
                 "%d x m x sbh%s x %d B (each chunk's activations on, gradients back)%s, m = %d, "
                 "v = %d",
                 fwd + bwd, c->sp ? "/t" : "", p, emb, m, v);
        return;
    }
    snprintf(out->formula, sizeof out->formula, "%sm x sbh%s x %d B (%s)%s, m = %d",
             ways == 2 ? "2 x " : "", c->sp ? "/t" : "", p,
             ways == 2 ? "activations forward, gradients back"
             : s == 0  ? "activations forward"
                       : "gradients back",
             emb, m);
}

/* Tensor parallelism on stage s, per micro-batch: two all-reduces of the b s h activations
 * per layer forward and two backward (Megatron-LM's f and g operators), two more when a full
 * recompute repeats the forward; with sequence parallelism each becomes a reduce-scatter and
 * an all-gather of the same volume, and the backward pass gathers the two norms' outputs
 * again for the weight gradients (only their shards are kept): one more all-reduce's worth
 * per layer. The ends: the first stage sums the vocabulary-parallel embedding's lookup (each
 * rank has its rows' tokens, zeros elsewhere); the last stage sums the gradient of the head's
 * input (every rank's vocabulary fed it; with sequence parallelism the final norm's output is
 * gathered again, half an all-reduce's worth more) and, for the parallel cross-entropy,
 * all-reduces three fp32 numbers per token: the logits' row maximum, the sum of their
 * exponentials and the target's logit (Megatron-LM's vocab-parallel cross-entropy). Each
 * all-reduce sends 2(t-1)/t of its buffer. Sequence parallelism also sums the norms' weight
 * gradients, partial over each rank's rows, once per step. */
static void tensor_parallel(const struct memory_config *c, int s, int layers, double sbh, int p,
                            double t1, struct traffic_part *out)
{
    int t = c->tp, m = c->micro_batches;
    bool full = c->ckpt.kind != CKPT_NONE && c->ckpt.kind != CKPT_SELECTIVE;
    /* the stages of the first and the last virtual stage (zbv's are both stage 0) */
    int pv = c->pp * sched_chunks(c->schedule, c->chunks);
    bool first = s == 0, last = sched_stage_of(c->schedule, c->pp, pv - 1) == s;
    double ar = 2 * (t - 1.0) / t, sb4 = local_seq(c) * c->micro_batch * 4;
    int per_layer = 4 + (full ? 2 : 0);
    piece(out, "layers", (double)per_layer * layers * m * ar * sbh);
    if (c->sp)
        piece(out, "sp_regathers", ((double)layers + (last ? 0.5 : 0)) * m * ar * sbh);
    if (first)
        piece(out, "embedding", m * ar * sbh);
    if (last) {
        piece(out, "head", m * ar * sbh);
        piece(out, "loss", m * ar * 3 * sb4);
    }
    if (c->sp) {
        struct memory_states k;
        memory_bytes_per_param(c->precision, c->optimizer, c->grad_fp32, &k);
        piece(out, "norm_grads", ar * (2.0 * layers + last) * c->model->d_model * k.gradients);
    }
    out->time_s = out->exposed = ((double)(per_layer + c->sp) * layers + first + last) * m * t1;
    snprintf(out->formula, sizeof out->formula,
             "m x 2(t-1)/t x sbh x %d B x (%d x %d layers%s%s)%s%s, m = %d, t = %d", p,
             per_layer + c->sp, layers, first ? " + 1 embedding" : "",
             last ? (c->sp ? " + 1.5 head" : " + 1 head") : "",
             last ? " + m x 2(t-1)/t x 3 sb x 4 B (loss)" : "",
             c->sp ? " + the norms' weight gradients (sequence parallel)" : "", m, t);
}

/* Context parallelism on a stage of `layers` layers (ring attention; model/ringattn.h, par/cp.h):
 * S = b s kv p, one of a layer's K or V over the micro-batch's whole sequences (kv = kv_heads
 * h/a / t, a tensor-parallel rank's heads), a GPU's block S / C. Per micro-batch and layer, each
 * GPU sends in the forward pass its block of K and V on to the next GPU C - 1 times, 2 (C-1)/C
 * S; in the backward pass K and V again, and the gradients the GPUs they passed added to them as
 * often (the last send bringing them home), 4 (C-1)/C S (TransformerEngine's
 * AttnFuncWithCPAndKVP2P, which Megatron-LM's --context-parallel-size runs; Liu et al. 2023's
 * ring); a recompute runs the forward's ring again, 2 (C-1)/C S more: a full one the layer's,
 * a selective one the attention core's (Megatron-LM checkpoints core attention whole, and
 * TransformerEngine's forward is the ring). Each send is one ring step between neighbours of two
 * blocks, α + 2 block/β; without the compute's rate none of it is counted hidden (what the
 * blocks' attention hides: traffic_cp_overlap). */
static void context_parallel(const struct memory_config *c, const struct cluster_spec *cl,
                             int layers, int p, struct traffic_part *out)
{
    const struct model_shape *md = c->model;
    int C = c->cp, m = c->micro_batches;
    bool full = c->ckpt.kind != CKPT_NONE; /* the forward's ring again */
    double S =
        (double)c->micro_batch * c->seq * md->kv_heads * (md->d_model / md->heads) / c->tp * p;
    double f = (C - 1.0) / C, blk = S / C;
    piece(out, "kv_forward", 2 * f * S * layers * m);
    piece(out, "kv_backward", 2 * f * S * layers * m);
    piece(out, "kv_grads", 2 * f * S * layers * m);
    if (full)
        piece(out, "kv_recompute", 2 * f * S * layers * m);
    /* ranks: a cp group strides by t; it crosses nodes when t cp does */
    bool inter = (long long)c->tp * C > cl->gpus_per_node;
    double t1 = inter ? cl->alpha_inter + 2 * blk / cl->beta_inter
                      : cl->alpha_intra + 2 * blk / cl->beta_intra;
    double sends = (double)(C - 1) * (3 + (full ? 1 : 0)) * layers * m; /* of 2 blocks each */
    out->time_s = out->exposed = sends * t1;
    snprintf(out->formula, sizeof out->formula,
             "m x %d layers x %d x (C-1)/C x S, S = b s kv p = %.0f B (K or V of the sequence), "
             "C = %d, m = %d",
             layers, full ? 8 : 6, S, C, m);
}

/* Dropless expert parallelism (no capacity factor; model/gpt.h, par/ep.h): a GPU routes its k n
 * choices packed, sends each GPU of its group its counts for that GPU's E/P experts, (P-1) E/P
 * 4-byte words before each dispatch (Megatron-Core's dropless dispatcher exchanges them too,
 * all of them), then the rows the routing gives each GPU, and takes back as many outputs; the
 * backward pass the same ways. What a GPU sends depends on the routing:
 *   uniform    each of the P GPUs gets (P-1)/P of every GPU's k n rows: per expert layer and
 *              micro-batch 4 (P-1)/P k n d p, the static formula with k n rows for E cap (6
 *              with full recompute, which dispatches and combines again);
 *   worst      its own k n choices all to other GPUs (at most min(k, E - E/P) a token) while
 *              every other GPU's tokens come to it (at most min(k, E/P) a token): per pass
 *              (n min(k, E - E/P) + (P-1) n min(k, E/P)) d p, four passes (six), the most any
 *              routing makes one GPU send.
 * The time is uniform routing's: a pairwise all-to-all of k n d p, and one of E words. */
static int expert_parallel_dropless(const struct memory_config *c, const struct cluster_spec *cl,
                                    int moe, int p, bool full, struct traffic_part *out,
                                    struct error *e)
{
    const struct model_shape *md = c->model;
    int P = c->ep, m = c->micro_batches, E = md->experts, k = md->top_k, mine = E / P;
    double n = (double)c->micro_batch * c->seq, h = md->d_model, f = (P - 1.0) / P;
    double X = k * n * h * p, passes = full ? 6 : 4, counts = (P - 1.0) * mine * 4;
    double out_max = n * fmin(k, E - mine), in_max = (P - 1.0) * n * fmin(k, mine);
    piece(out, "dispatch_combine", 2 * f * X * moe * m);
    piece(out, "backward", 2 * f * X * moe * m);
    if (full)
        piece(out, "recompute", 2 * f * X * moe * m);
    piece(out, "counts", counts * (full ? 2 : 1) * moe * m);
    out->worst = ((out_max + in_max) * h * p * passes / 2 + counts * (full ? 2 : 1)) * moe * m;
    struct cost_net net;
    group_net(cl, P, c->tp, &net);
    struct cost_result r, rc;
    if (cost_collective(COST_ALLTOALL, COST_PAIRWISE, &net, X, &r, e) < 0 ||
        cost_collective(COST_ALLTOALL, COST_PAIRWISE, &net, E * 4.0, &rc, e) < 0)
        return ERR_INVAL;
    out->time_s = out->exposed = (passes * r.time_s + (full ? 2 : 1) * rc.time_s) * moe * m;
    snprintf(out->formula, sizeof out->formula,
             "dropless: m x %d expert layers x (%g x (P-1)/P x k n d p + %d x (P-1) E/P x 4 B of "
             "counts) under uniform routing, k n = %.0f rows of d %.0f x %d B, P = %d, m = %d; "
             "at worst %.0f B (its tokens all to other GPUs, every other GPU's to it)",
             moe, passes, full ? 2 : 1, k * n, h, p, P, m, out->worst);
    return 0;
}

/* The forward FLOPs of ring attention's block at step t on the GPU on the ring's path, per
 * micro-batch and layer: 4 (h/t) b pairs, the pairs of queries and keys the causal mask leaves
 * of n = s/C tokens each (model/ringattn.h's ring_block_scores). Balanced, every GPU's: its own
 * block two triangles and a square of n/2, n^2/2 + n/2, every other block half, n^2/2. Naive,
 * the busiest GPU's, the last, on whose blocks the others wait: its own triangle n (n + 1)/2,
 * then every other block whole, n^2. */
static double ring_block_flops(const struct memory_config *c, int t)
{
    double n = (double)c->seq / c->cp, pairs;
    if (t == 0)
        pairs = n * n / 2 + n / 2;
    else
        pairs = c->cp_naive ? n * n : n * n / 2;
    return 4.0 * c->model->d_model / c->tp * c->micro_batch * pairs;
}

void traffic_cp_overlap(const struct memory_config *c, const struct cluster_spec *cl, int layers,
                        double rate, struct traffic *t, double *imbalance_s)
{
    *imbalance_s = 0;
    if (c->cp <= 1 || !c->model || !(rate > 0) || layers <= 0)
        return;
    int C = c->cp, p = fp_bytes(c->precision);
    const struct model_shape *md = c->model;
    double S = (double)c->micro_batch * c->seq * md->kv_heads * (md->d_model / md->heads) / c->tp *
               p,
           blk = S / C;
    bool inter = (long long)c->tp * C > cl->gpus_per_node;
    double x = inter ? cl->alpha_inter + 2 * blk / cl->beta_inter
                     : cl->alpha_intra + 2 * blk / cl->beta_intra;
    /* a pass of the ring, per layer and micro-batch (model/gpt_ring.c's order): forward, each
     * step's K, V posted before its block and waited for after it, x hidden by the block's
     * compute but what exceeds it; the last block sends nothing. Backward, the same for K and V,
     * then each block's gradients sent after it (the next GPU adds to them), x wholly. */
    double fwd = 0, bwd = 0;
    for (int k = 0; k < C; k++) {
        double cf = ring_block_flops(c, k) / rate, cb = 2 * cf;
        if (k < C - 1) {
            fwd += pos(x - cf);
            bwd += pos(x - cb);
        }
        if (k > 0)
            bwd += x;
    }
    bool full = c->ckpt.kind != CKPT_NONE;
    int m = c->micro_batches;
    t->cp.exposed = (double)layers * m * ((full ? 2 : 1) * fwd + bwd);
    /* the naive split: the busiest GPU computes (C-1) n^2/2 more pairs a pass than the mean,
     * (2C-1)/C of it for long blocks, and the ring waits for it */
    if (c->cp_naive) {
        double n = (double)c->seq / C;
        double more = 4.0 * md->d_model / c->tp * c->micro_batch * (C - 1) * n * n / 2;
        *imbalance_s = (double)layers * m * (3 + (full ? 1 : 0)) * more / rate;
    }
    t->exposed = t->dp.exposed + t->tp.exposed + t->pp.exposed + t->cp.exposed + t->ep.exposed;
    size_t len = strlen(t->cp.formula);
    snprintf(t->cp.formula + len, sizeof t->cp.formula - len,
             "; each step's %.3g s hidden behind its block's attention but what exceeds it, the "
             "backward's gradients not%s",
             x, c->cp_naive ? "; the naive split's busiest GPU waited for" : "");
}

/* Expert parallelism on a stage (par/ep.h; pp 1): a GPU routes its micro-batch's n = b s
 * tokens into the static [E, cap, d] rows of each expert layer, cap = min(n, ceil(C k n / E))
 * (model/moe.h; GShard's dispatch tensor, Megatron-LM's drop-and-pad), and the rows bound for
 * the experts of the P - 1 other GPUs of its group, (P-1)/P of them, go there in the dispatch
 * all-to-all; as many rows of outputs come back in the combine. The backward pass sends the
 * outputs' gradients the dispatch's way and the inputs' gradients the combine's way: per
 * expert layer and micro-batch 4 (P-1)/P E cap d p bytes from every GPU, whatever the routing
 * (the padding travels too), and a full recompute's forward sends its two again (6). Each is a
 * pairwise all-to-all on the critical path (nothing computes while it runs). */
static int expert_parallel(const struct memory_config *c, const struct cluster_spec *cl, int layers,
                           int p, struct traffic_part *out, struct error *e)
{
    const struct model_shape *md = c->model;
    int P = c->ep, m = c->micro_batches, moe = params_moe_layers(md, 0, layers);
    bool full = c->ckpt.kind != CKPT_NONE && c->ckpt.kind != CKPT_SELECTIVE;
    if (memory_ep_dropless(c))
        return expert_parallel_dropless(c, cl, moe, p, full, out, e);
    double rows = memory_ep_rows(c), X = rows * md->d_model * p, f = (P - 1.0) / P;
    piece(out, "dispatch_combine", 2 * f * X * moe * m);
    piece(out, "backward", 2 * f * X * moe * m);
    if (full)
        piece(out, "recompute", 2 * f * X * moe * m);
    struct cost_net net;
    group_net(cl, P, c->tp, &net);
    struct cost_result r;
    if (cost_collective(COST_ALLTOALL, COST_PAIRWISE, &net, X, &r, e) < 0)
        return ERR_INVAL;
    out->time_s = out->exposed = (4.0 + (full ? 2 : 0)) * moe * m * r.time_s;
    snprintf(out->formula, sizeof out->formula,
             "m x %d expert layers x %d x (P-1)/P x E cap d p, E cap = %.0f rows of d %d x %d B "
             "(the static [E, cap, d] shape), P = %d, m = %d",
             moe, full ? 6 : 4, rows, md->d_model, p, P, m);
    out->worst = out->bytes;
    return 0;
}

double traffic_ep_bytes_at(const struct memory_config *c, int layers, double moved)
{
    const struct model_shape *md = c->model;
    if (!memory_ep_dropless(c))
        return NAN;
    int P = c->ep, moe = params_moe_layers(md, 0, layers), f = 1;
    if (c->ckpt.kind != CKPT_NONE && c->ckpt.kind != CKPT_SELECTIVE)
        f = 2; /* a full recompute's forward dispatches and combines again */
    double counts = (P - 1.0) * (md->experts / P) * 4.0 * f * moe * c->micro_batches;
    return moved * (f + 1.0) / f * md->d_model * fp_bytes(c->precision) + counts;
}

/* The compute a layer's passes run before their first tensor-parallel sum without sequence
 * parallelism (model/gpt_step.c's order), a micro-batch's forward pass taking fwd_s over
 * `layers` layers (the ends' share neglected: the head's 2 V h of a layer's 24 h^2 + 4 s h
 * per token): the attention's matmuls in the forward pass, 2 Ψ_attn b s + 4 b s^2 h of the
 * layer's 2 Ψ_layer b s + 4 b s^2 h, into *fwd; the MLP's in the backward pass, twice its
 * forward's 2 Ψ_mlp b s, into *bwd. */
static void open_gaps(const struct memory_config *c, double fwd_s, int layers, double *fwd,
                      double *bwd)
{
    struct params_breakdown pb;
    params_count(c->model, &pb);
    double mlp = 0;
    for (int i = 0; i < pb.n; i++)
        if (pb.t[i].where == PARAMS_LAYER &&
            (!strncmp(pb.t[i].name, "w_", 2) || !strncmp(pb.t[i].name, "b_", 2) ||
             !strncmp(pb.t[i].name, "mlp_norm", 8)))
            mlp += (double)pb.t[i].rows * pb.t[i].cols;
    double attn = 2 * (pb.per_layer - mlp) + 4.0 * c->seq * c->model->d_model, ffn = 2 * mlp;
    *fwd = fwd_s / layers * attn / (attn + ffn);
    *bwd = fwd_s / layers * 2 * ffn / (attn + ffn);
}

/* Of the data-parallel traffic hidden behind compute, what holds the port past a layer's
 * opening matmuls (open_gaps) without sequence parallelism: ZeRO-3's gathers of the forward
 * pass (w of its 2 w + g bytes per parameter) behind the attention's, the rest behind the
 * MLP's backward, a layer's share at a time. */
static double past_gaps(const struct memory_config *c, double hidden, double fwd_s, int layers)
{
    struct memory_states k;
    memory_bytes_per_param(c->precision, c->optimizer, c->grad_fp32, &k);
    double f = c->zero >= 3 ? k.weights / (2 * k.weights + k.gradients) : 0, gf, gb;
    open_gaps(c, fwd_s, layers, &gf, &gb);
    return layers * (pos(f * hidden / layers - gf) + pos((1 - f) * hidden / layers - gb));
}

int traffic_compute(const struct memory_config *c, const struct cluster_spec *cl, int stage,
                    double psi_gpu, int stage_layers, double fwd_s, double bwd_s,
                    struct traffic *out, struct error *e)
{
    memset(out, 0, sizeof *out);
    if (stage < 0 || stage >= c->pp)
        return error_set(e, ERR_INVAL, "stage %d of a pipeline of %d", stage, c->pp);
    int rc = data_parallel(c, cl, stage, psi_gpu, fwd_s, bwd_s, &out->dp, e);
    if (rc < 0)
        return rc;
    snprintf(out->tp.formula, sizeof out->tp.formula, "none: tp = 1");
    snprintf(out->pp.formula, sizeof out->pp.formula, "none: pp = 1");
    snprintf(out->cp.formula, sizeof out->cp.formula, "none: cp = 1");
    snprintf(out->ep.formula, sizeof out->ep.formula, "none: ep = 1");
    if (c->model) {
        int p = fp_bytes(c->precision), t = c->tp;
        double sbh = local_seq(c) * c->micro_batch * c->model->d_model * p;
        if (t > 1) {
            struct cost_net net;
            group_net(cl, t, 1, &net);
            double t1;
            if (ring(COST_ALLREDUCE, &net, sbh, &t1, e) < 0)
                return ERR_INVAL;
            tensor_parallel(c, stage, stage_layers, sbh, p, t1, &out->tp);
        }
        if (c->pp > 1) {
            double msg = c->sp ? sbh / t : sbh;
            bool inter = (long long)t * c->dp >= cl->gpus_per_node;
            double t1 = inter ? cl->alpha_inter + msg / cl->beta_inter
                              : cl->alpha_intra + msg / cl->beta_intra;
            pipeline_stage(c, stage, msg, t1, p, &out->pp);
        }
        if (c->cp > 1)
            context_parallel(c, cl, stage_layers, p, &out->cp);
        if (c->ep > 1 && (rc = expert_parallel(c, cl, stage_layers, p, &out->ep, e)) < 0)
            return rc;
    }
    /* A GPU sends through one port (sim/cluster.h): the data-parallel traffic hidden behind
     * compute still holds it while tensor parallelism's sums, on the step's path, wait for it
     * (timed as synthetic-7b, tp 4 x dp 2 ran 3.7% longer than the calculator said without
     * this). It is posted as a layer's pass begins; under sequence parallelism the pass opens
     * with a gather, which waits for it; without, with matmuls, behind which the layer's
     * share of it goes out, holding the port past them by what exceeds them only (past_gaps)
     * (timed as synthetic-7b, tp 2 x dp 4 ran 4.4% (ZeRO-1) and 4.7% (ZeRO-3) shorter than the
     * calculator said when it counted all of it) */
    double hidden = out->dp.time_s - out->dp.exposed;
    if (out->tp.time_s > 0 && hidden > 0) {
        double shared = fmin(hidden, out->tp.time_s);
        if (!c->sp && c->model && stage_layers > 0)
            shared = fmin(shared, past_gaps(c, hidden, fwd_s, stage_layers));
        out->dp.exposed += shared;
        size_t len = strlen(out->dp.formula);
        if (shared > 0)
            snprintf(out->dp.formula + len, sizeof out->dp.formula - len,
                     "; %.3g s of it hidden behind compute shares the port with tp's sums", shared);
    }
    out->bytes = out->dp.bytes + out->tp.bytes + out->pp.bytes + out->cp.bytes + out->ep.bytes;
    out->exposed =
        out->dp.exposed + out->tp.exposed + out->pp.exposed + out->cp.exposed + out->ep.exposed;
    return 0;
}
