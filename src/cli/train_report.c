/* What scalelab train prints: the run's settings, each step (a JSON line or a line of text),
 * and the summary: the losses and verdicts, each GPU's ledger peaks and bytes sent beside the
 * calculator's prediction for its stage, the pipeline as it ran beside its schedule
 * (cli/train.h). */
#include "config.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "base/json.h"
#include "base/units.h"
#include "calc/sched.h"
#include "cli/fail.h"
#include "cli/train.h"
#include "par/layout.h"
#include "par/strategies.h"
#include "sim/ledger.h"

/* The layout of a run on several GPUs: its axes, dp x tp x pp x cp (ep over the dp ranks), the
 * data-parallel strategy where there is one, and what each GPU holds of the batch and the
 * model. */
static void print_layout(const struct train_opts *o, const struct cluster_spec *spec)
{
    const struct gpt_config *c = &o->shape;
    int dp = layout_dp(o), per = o->batch / dp, mb = per / o->micro_batches;
    printf("%d simulated %s GPUs\nlayout %d GPUs = dp %d x tp %d x pp %d x cp %d", o->gpus,
           spec->name, o->gpus, dp, o->tp, o->pp, o->cp);
    if (o->ep > 1)
        printf(", ep %d of the dp ranks", o->ep);
    if (dp * o->cp > 1) /* the weights' copies the gradients reduce over: dp x cp */
        printf(", %s%s",
               o->zero == 3   ? "ZeRO-3 (FSDP)"
               : o->zero == 2 ? "ZeRO-2"
               : o->zero == 1 ? "ZeRO-1"
                              : "DDP",
               o->cp > 1 ? " over dp x cp" : "");
    printf("; each GPU: %d sequence%s", per, per == 1 ? "" : "s");
    if (o->micro_batches > 1)
        printf(" (%d micro-batches of %d)", o->micro_batches, mb);
    if (o->cp > 1)
        printf(", %d of each one's %d tokens", c->seq / o->cp, c->seq);
    if (o->pp > 1)
        printf(", %d of the %d layers%s", c->layers / o->pp, c->layers,
               layout_chunks(o) > 1 ? " in chunks" : "");
    if (o->tp > 1)
        printf(", %d of each layer's %d heads", c->heads / o->tp, c->heads);
    if (o->ep > 1)
        printf(", %d of each expert layer's %d experts", c->moe.experts / o->ep, c->moe.experts);
    printf("\n");
}

/* What the simulated clock shows: the run timed as itself, or as the model --time-as names
 * (par/timeas.h). */
static void print_time(const struct train_args *r, const struct cluster_spec *spec)
{
    const struct train_opts *o = &r->o;
    if (!r->time_as) {
        printf("time: the run timed as itself, %s at the %s's peak (--time-as MODEL times it as "
               "MODEL)\n",
               r->shape.name, spec->name);
        return;
    }
    const struct model_shape *m = &r->as;
    printf("time: timed as %s on %d %s GPU%s: seq %d, micro-batch %d, each of the %d layers "
           "standing for %g of its %d, compute at %g%% of peak\n",
           m->name, o->gpus, spec->name, o->gpus == 1 ? "" : "s", m->seq, r->as_plan.micro_batch,
           o->shape.layers, (double)m->layers / o->shape.layers, m->layers,
           100 * spec->time.efficiency);
}

/* The run's settings, before its steps (text only). */
void train_print_header(const struct train_args *r, const struct cluster_spec *spec)
{
    const struct train_opts *o = &r->o;
    const struct gpt_config *c = &o->shape;
    char pc[32], ckpt[24];
    printf("model %s: %s parameters, d_model %d, %d layers, %d heads, ffn %d, vocab %d, "
           "seq %d\n",
           r->shape.name, units_format_grouped(pc, sizeof pc, gpt_param_count(c)), c->d, c->layers,
           c->heads, c->ffn, c->vocab, c->seq);
    if (c->moe.experts) {
        char ac[32], cap[32] = "no capacity limit";
        if (c->moe.capacity_factor > 0)
            snprintf(cap, sizeof cap, "capacity factor %g", c->moe.capacity_factor);
        printf("experts: %d in %d of the %d layers, top-%d, %s, aux-loss coefficient %g; %s "
               "parameters used per token\n",
               c->moe.experts, gpt_moe_layers(c), c->layers, c->moe.top_k, cap, c->moe.aux_coef,
               units_format_grouped(ac, sizeof ac, gpt_active_param_count(c)));
        printf("routing: aux is the load-balancing loss, part of the loss: each expert layer's "
               "α E Σ f_i P_i (Switch Transformer's; %g, α, when the routing is even), summed "
               "over the %d expert layers; dropped and busiest/mean over every GPU's tokens\n",
               c->moe.aux_coef, gpt_moe_layers(c));
    }
    printf("precision %s, loss scale %s, checkpoint %s, attention %s, batch %d x %d tokens, "
           "lr %g, ",
           fp_info(o->precision)->name,
           o->scaling == TRAIN_SCALE_DYNAMIC  ? "dynamic"
           : o->scaling == TRAIN_SCALE_STATIC ? "fixed"
                                              : "none",
           ckpt_name(ckpt, sizeof ckpt, &o->ckpt), train_flash(o) ? "flash" : "eager", o->batch,
           c->seq, o->lr);
    struct gpt_fp8 f8 = train_fp8(o);
    if (f8.recipe == FP8_DELAYED)
        printf("fp8 %s (amax history %d, margin %d), ", fp8_recipe_name(f8.recipe), f8.history,
               f8.margin);
    else if (f8.recipe == FP8_BLOCK)
        printf("fp8 %s (1 x %d and %d x %d tiles, %s scales), ", fp8_recipe_name(f8.recipe),
               f8.block, f8.block, f8.block, f8.pow2 ? "power-of-two" : "fp32");
    else if (f8.recipe == FP8_CURRENT)
        printf("fp8 %s (%s scales), ", fp8_recipe_name(f8.recipe),
               f8.pow2 ? "power-of-two" : "fp32");
    if (o->gpus == 1)
        printf("one simulated %s GPU\n", spec->name);
    else
        print_layout(o, spec);
    print_time(r, spec);
    fflush(stdout);
}

/* A step's figure as "key":value, written directly (the step loop allocates nothing, not even
 * a JSON tree), with base/json's policy: 10 significant digits, non-finite as strings. */
static void put_num(const char *key, double v, bool comma)
{
    printf("\"%s\":", key);
    json_put_num(stdout, v, JSON_FIGURES);
    if (comma)
        putchar(',');
}

/* A step's fp8 quantisations per input, over every linear layer. */
static void fp8_sum(const struct train_step *s, struct fp8_stats tot[FP8_ROLES])
{
    memset(tot, 0, FP8_ROLES * sizeof *tot);
    for (int i = 0; i < GPT_LINEARS; i++)
        for (int k = 0; k < FP8_ROLES; k++)
            if (s->fp8[i][k].n)
                fp8_stats_add(&tot[k], &s->fp8[i][k]);
}

/* What one fp8 input's quantisations did: its amax, its scale (where amax was), the fractions
 * saturated and flushed to zero, and the elements. */
static void put_fp8_one(const char *key, const struct fp8_stats *f, bool comma)
{
    double n = f->n ? (double)f->n : 1;
    printf("\"%s\":{", key);
    put_num("amax", f->amax, true);
    put_num("scale", f->scale, true);
    put_num("saturated", (double)f->saturated / n, true);
    put_num("flushed", (double)f->flushed / n, true);
    printf("\"n\":%llu}%s", (unsigned long long)f->n, comma ? "," : "");
}

/* The step's fp8 quantisations (FP8 training): per input over every linear layer, and per
 * linear layer and input (num/fp8.h's roles x, w, dy). */
static void put_fp8(const struct train_step *s)
{
    struct fp8_stats tot[FP8_ROLES];
    fp8_sum(s, tot);
    if (!tot[FP8_X].n)
        return;
    printf("\"fp8\":{");
    for (int k = 0; k < FP8_ROLES; k++)
        put_fp8_one(fp8_role_name((enum fp8_role)k), &tot[k], true);
    printf("\"tensors\":{");
    for (int i = 0; i < GPT_LINEARS; i++) {
        printf("\"%s\":{", gpt_kind_name(gpt_linear_kind(i)));
        for (int k = 0; k < FP8_ROLES; k++)
            put_fp8_one(fp8_role_name((enum fp8_role)k), &s->fp8[i][k], k + 1 < FP8_ROLES);
        printf("}%s", i + 1 < GPT_LINEARS ? "," : "");
    }
    printf("}},");
}

void train_print_step_json(const struct run_step *rs)
{
    const struct train_step *s = &rs->s;
    printf("{\"step\":%ld,", s->step);
    put_num("loss", s->loss, true);
    put_num("grad_norm", s->grad_norm, true);
    put_num("grad_sumsq", s->grad_sumsq, true);
    put_num("clip_coef", s->clip_coef, true);
    put_num("loss_scale", s->loss_scale, true);
    printf("\"skipped\":%s,\"overflow\":%s,", s->skipped ? "true" : "false",
           s->overflow ? "true" : "false");
    if (s->nonfinite[0]) {
        printf("\"nonfinite\":");
        json_put_str(stdout, s->nonfinite);
        putchar(',');
    } else
        printf("\"nonfinite\":null,");
    put_num("underflow_frac", s->underflow_frac, true);
    if (rs->gpus > 1) {
        printf("\"nonfinite_gpu\":%d,", rs->nonfinite_gpu);
        /* each GPU's part of the agreement: every one must hold the same */
        printf("\"per_gpu\":[");
        for (int g = 0; g < rs->gpus; g++) {
            const struct run_gpu_step *gs = &rs->gpu[g];
            printf("%s{\"overflow_own\":%s,\"skipped\":%s,", g ? "," : "",
                   gs->overflow_own ? "true" : "false", gs->skipped ? "true" : "false");
            put_num("next_scale", gs->next_scale, true);
            put_num("clip_coef", gs->clip_coef, true);
            put_num("grad_sumsq", gs->grad_sumsq, false);
            putchar('}');
        }
        printf("],");
    }
    printf("\"act_peak_bytes\":%zu,", s->act_peak_bytes);
    put_fp8(s);
    if (s->routed) { /* a mixture of experts: the routing's figures */
        put_num("aux_loss", s->aux_loss, true);
        put_num("aux_loss_per_layer", s->aux_layers ? s->aux_loss / s->aux_layers : 0, true);
        printf("\"routed\":%llu,\"dropped\":%llu,", (unsigned long long)s->routed,
               (unsigned long long)s->dropped);
        put_num("expert_imbalance", s->expert_imbalance, true);
    }
    put_num("sim_time_s", rs->sim_time_s, true);
    printf("\"comm_bytes_per_gpu\":%llu}\n", (unsigned long long)rs->comm_bytes_per_gpu);
}

void train_print_step_text(const struct run_step *rs)
{
    const struct train_step *s = &rs->s;
    char loss[32], norm[32], coef[32], scale[32];
    printf("step %6ld  loss %s  grad norm %s  clip %s  scale %s  underflow %.4f%%", s->step,
           units_format_num(loss, sizeof loss, "%8.4f", s->loss),
           units_format_num(norm, sizeof norm, "%9.4g", (double)s->grad_norm),
           units_format_num(coef, sizeof coef, "%6.4f", (double)s->clip_coef),
           units_format_num(scale, sizeof scale, "%8g", (double)s->loss_scale),
           100 * s->underflow_frac);
    if (s->nonfinite[0] && rs->gpus > 1)
        printf("  non-finite on GPU %d: %s", rs->nonfinite_gpu, s->nonfinite);
    else if (s->nonfinite[0])
        printf("  non-finite: %s", s->nonfinite);
    if (s->routed)
        printf("  aux %.4f (%d layers x %.4f)  dropped %.1f%%  busiest/mean %.2fx", s->aux_loss,
               s->aux_layers, s->aux_layers ? s->aux_loss / s->aux_layers : 0,
               100.0 * (double)s->dropped / (double)s->routed, s->expert_imbalance);
    struct fp8_stats tot[FP8_ROLES];
    fp8_sum(s, tot);
    if (tot[FP8_X].n) /* fp8: saturated and flushed to zero, x/w/dy */
        printf("  fp8 saturated %.3g/%.3g/%.3g%%  flushed %.3g/%.3g/%.3g%%",
               100.0 * (double)tot[0].saturated / (double)tot[0].n,
               100.0 * (double)tot[1].saturated / (double)tot[1].n,
               100.0 * (double)tot[2].saturated / (double)tot[2].n,
               100.0 * (double)tot[0].flushed / (double)tot[0].n,
               100.0 * (double)tot[1].flushed / (double)tot[1].n,
               100.0 * (double)tot[2].flushed / (double)tot[2].n);
    if (s->overflow)
        printf("  OVERFLOW");
    if (s->spike)
        printf("  SPIKE (z %.1f)", s->zscore);
    if (s->skipped)
        printf("  skipped");
    printf("\n");
}

/* Micro-batches held at once, as `pipeline` counts them: (micro-batch, chunk) pairs over v. */
static json_t *held_json(int pairs, int v)
{
    return v == 1 ? json_integer(pairs) : json_num((double)pairs / v);
}

/* The first GPU of stage st (data-parallel and tensor-parallel rank 0). */
static const struct run_gpu *stage_gpu(const struct run *run, int st)
{
    return run_gpu(run, layout_rank(&run_gpu(run, 0)->place, LAYOUT_PP, st));
}

/* The bubble in seconds, measured on the stages' operations: the step's span beyond the ideal
 * (a stage's mean compute, the step without a bubble), and its two parts, as the calculator
 * names them: the slowest stage's wait, (m - 1)/m x its compute beyond the mean (in 1F1B the
 * others wait for it at every micro-batch but one; the head makes the last stage the
 * slowest), and the fill and drain, the rest, which (p - 1)/m x ideal predicts when the sends
 * between stages are small beside compute. */
static json_t *bubble_seconds(const struct pp_bubble *b, int P, int m)
{
    double ideal = b->busy_s / P, bubble = b->span_s - ideal;
    double wait = (double)(m - 1) / m * (b->slowest_s - ideal), fill = bubble - wait;
    return json_pack("{s:o, s:o, s:o, s:o, s:o}", "ideal_s", json_num(ideal), "bubble_s",
                     json_num(bubble), "slowest_wait_s", json_num(wait), "fill_drain_s",
                     json_num(fill), "fill_drain_over_ideal", json_num(fill / ideal));
}

/* The pipeline as it ran: each stage's operations (from its first GPU) in
 * simulated time, the bubble measured on them (idle time of the stages between the first
 * forward and the last backward, over their compute and over the wall), and the most
 * micro-batches each stage held; beside the calculator's. */
static json_t *pipeline_json(const struct train_opts *o, const struct run *run,
                             const struct prediction *p)
{
    int P = o->pp;
    json_t *ops = json_array(), *peak = json_array();
    const struct pp_done *done[SCHED_MAX_STAGES];
    int n[SCHED_MAX_STAGES];
    for (int st = 0; st < P; st++) {
        const struct run_gpu *g = stage_gpu(run, st);
        json_t *list = json_array();
        for (int i = 0; i < g->nops; i++) {
            const struct pp_done *d = &g->ops[i];
            char kind[2] = {sched_op_info(d->kind)->letter, 0};
            json_array_append_new(list, json_pack("{s:s, s:i, s:i, s:f, s:f}", "kind", kind,
                                                  "micro", d->micro, "chunk", d->chunk, "start_s",
                                                  d->start_s, "end_s", d->end_s));
        }
        done[st] = g->ops, n[st] = g->nops;
        json_array_append_new(ops, list);
        json_array_append_new(peak, held_json(g->peak_in_flight, layout_chunks(o)));
    }
    struct pp_bubble b;
    predict_bubble(done, n, P, &b);
    json_t *pj =
        json_pack("{s:o, s:o, s:o, s:o}", "ops", ops, "bubble_over_ideal",
                  b.busy_s > 0 ? json_num(b.over_ideal) : json_null(), "bubble_over_wall",
                  b.span_s > 0 ? json_num(b.over_wall) : json_null(), "peak_in_flight", peak);
    if (b.busy_s > 0)
        json_object_set_new(pj, "seconds", bubble_seconds(&b, P, o->micro_batches));
    if (p->have_sched) {
        json_t *pk = json_array();
        for (int st = 0; st < P; st++)
            json_array_append_new(pk, held_json(p->sched.peak_chunks[st], layout_chunks(o)));
        json_object_set_new(pj, "predicted",
                            json_pack("{s:f, s:f, s:o}", "bubble_over_ideal",
                                      p->sched.bubble_over_ideal, "bubble_over_wall",
                                      p->sched.bubble_over_wall, "peak_in_flight", pk));
    }
    return pj;
}

/* A GPU's ledger peaks under memory --json's names, and the calculator's for the same. */
static json_t *peaks_json(const uint64_t *cat, uint64_t total)
{
    uint64_t states = cat[MEM_WEIGHTS] + cat[MEM_GRADIENTS] + cat[MEM_MASTER] + cat[MEM_OPTIMIZER];
    return json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I}", "states",
                     (json_int_t)states, "weights", (json_int_t)cat[MEM_WEIGHTS], "gradients",
                     (json_int_t)cat[MEM_GRADIENTS], "master_weights", (json_int_t)cat[MEM_MASTER],
                     "optimizer", (json_int_t)cat[MEM_OPTIMIZER], "activations",
                     (json_int_t)cat[MEM_ACTIVATIONS], "communication", (json_int_t)cat[MEM_COMM],
                     "workspace", (json_int_t)cat[MEM_WORKSPACE], "reserved",
                     (json_int_t)cat[MEM_RESERVED], "total", (json_int_t)total);
}

/* The summary's "layout": the GPUs and how they are used. */
static json_t *layout_json(const struct train_opts *o)
{
    json_t *lay =
        json_pack("{s:i, s:i, s:i, s:i, s:i, s:I, s:i, s:b}", "gpus", o->gpus, "dp", layout_dp(o),
                  "tp", o->tp, "pp", o->pp, "zero", o->zero, "bucket_bytes",
                  (json_int_t)o->bucket_bytes, "prefetch", o->prefetch, "grad_fp32", o->grad_fp32);
    json_object_set_new(lay, "micro_batches", json_integer(o->micro_batches));
    json_object_set_new(lay, "schedule", json_string(sched_name(o->schedule)));
    json_object_set_new(lay, "chunks", json_integer(layout_chunks(o)));
    json_object_set_new(lay, "sequence_parallel", json_boolean(o->sp));
    if (o->ep > 1) /* expert parallelism: the same */
        json_object_set_new(lay, "ep", json_integer(o->ep));
    json_object_set_new(lay, "attention", json_string(train_flash(o) ? "flash" : "eager"));
    if (o->cp > 1) { /* context parallelism: only where it ran, so other runs read as before */
        json_object_set_new(lay, "cp", json_integer(o->cp));
        json_object_set_new(lay, "cp_split", json_string(o->cp_naive ? "naive" : "balanced"));
    }
    return lay;
}

/* The calculator's bytes of one kind (calc/traffic.h), beside a run's (par/strategy.h). */
static const struct traffic_part *traffic_of(const struct traffic *t, enum strategy_kind k)
{
    const struct traffic_part *part[STRATEGIES] = {[STRATEGY_DP] = &t->dp,
                                                   [STRATEGY_TP] = &t->tp,
                                                   [STRATEGY_PP] = &t->pp,
                                                   [STRATEGY_CP] = &t->cp,
                                                   [STRATEGY_EP] = &t->ep};
    return part[k];
}

/* Dropless expert parallelism (its buffers, kept expert tensors and bytes follow each step's
 * routing): GPU g's memory (into r) and all-to-all bytes (*ep_bytes) as the calculator gives
 * them at the rows its expert layers held in the pass of its peak (the rows in rows[]), its
 * largest all-to-all held and its last step's dispatches moved: true; false for the others. */
static bool dropless_at(const struct train_opts *o, const struct model_shape *m,
                        const struct run_gpu *g, double *rows, struct memory_result *r,
                        double *ep_bytes)
{
    int ml = gpt_moe_layers(&o->shape);
    if (o->ep <= 1 || o->shape.moe.capacity_factor > 0 || ml > TRAIN_MAX_EXPERT_LAYERS)
        return false;
    for (int i = 0; i < ml; i++)
        rows[i] = g->ep_rows_kept[i];
    struct predict_routing rt = {rows, (double)g->ep_rows[2],
                                 (double)g->ep_rows[0] + (double)g->ep_rows[1]};
    return predict_at(o, m, g->place.stage, &rt, r, ep_bytes) == 0;
}

/* "per_gpu": each GPU's place, ledger peaks and bytes sent per step by kind. */
static json_t *per_gpu_json(const struct train_opts *o, const struct model_shape *m,
                            const struct run *run)
{
    json_t *per = json_array();
    for (int i = 0; i < o->gpus; i++) {
        const struct run_gpu *g = run_gpu(run, i);
        json_t *gj = json_pack("{s:i, s:{s:i, s:i, s:i}, s:o, s:I}", "gpu", i, "coord", "dp",
                               g->place.dprank, "tp", g->place.tprank, "pp", g->place.stage, "peak",
                               peaks_json(g->peak_cat, g->peak), "sent_bytes_per_step",
                               (json_int_t)g->sent_per_step[STRATEGY_DP]);
        /* every kind's bytes; context and expert parallelism's only where they ran, so other
         * runs read as before */
        json_t *kinds = json_object();
        for (int k = 0; k < STRATEGIES; k++)
            if (!(k == STRATEGY_CP && o->cp == 1) && !(k == STRATEGY_EP && o->ep == 1))
                json_object_set_new(kinds, strategy_name(k),
                                    json_integer((json_int_t)g->sent_per_step[k]));
        json_object_set_new(gj, "comm_bytes_per_step", kinds);
        if (o->cp > 1) {
            json_object_set_new(json_object_get(gj, "coord"), "cp", json_integer(g->place.cprank));
            json_object_set_new(gj, "ring_scores_per_step",
                                json_integer((json_int_t)g->ring_scores_per_step));
        }
        if (o->ep > 1)
            json_object_set_new(json_object_get(gj, "coord"), "ep", json_integer(g->place.eprank));
        if (o->ep > 1 && !(o->shape.moe.capacity_factor > 0)) { /* dropless: its routing's */
            json_object_set_new(gj, "expert_rows_per_step",
                                json_pack("{s:I, s:I}", "sent", (json_int_t)g->ep_rows[0],
                                          "received", (json_int_t)g->ep_rows[1]));
            json_object_set_new(gj, "expert_rows_held_peak",
                                json_integer((json_int_t)g->ep_rows[2]));
            double rows[TRAIN_MAX_EXPERT_LAYERS], bytes;
            struct memory_result at;
            if (dropless_at(o, m, g, rows, &at, &bytes)) { /* its kept expert tensors: the rows of
                                                          its peak's pass */
                json_t *kept = json_array();
                for (int l = 0; l < gpt_moe_layers(&o->shape); l++)
                    json_array_append_new(kept, json_integer((json_int_t)rows[l]));
                json_object_set_new(gj, "expert_rows_kept", kept);
                json_object_set_new(gj, "predicted_activations", json_whole(at.activations));
                json_object_set_new(gj, "predicted_communication", json_whole(at.comm));
                json_object_set_new(gj, "predicted_expert_parallel_bytes", json_whole(bytes));
            }
        }
        json_array_append_new(per, gj);
    }
    return per;
}

/* "predicted": the calculator's figures for each stage's GPUs (the first stage's also as
 * "per_gpu"); and into m, "measured_minus_predicted": every GPU against its stage's
 * prediction, bytes of difference summed (0 when all agree). */
static void predicted_json(json_t *m, const struct train_opts *o, const struct model_shape *shape,
                           const struct run *run, const struct prediction *p)
{
    json_t *stages = json_array();
    for (int st = 0; st < o->pp; st++) {
        const struct memory_result *pm = &p->mem[st];
        const struct traffic *pt = &p->comm[st];
        json_t *pg =
            json_pack("{s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o}", "weights",
                      json_whole(pm->states.weights), "gradients", json_whole(pm->states.gradients),
                      "master_weights", json_whole(pm->states.master), "optimizer",
                      json_whole(pm->states.optimizer), "activations", json_whole(pm->activations),
                      "communication", json_whole(pm->comm), "total", json_whole(pm->total),
                      "in_flight", held_json(pm->in_flight, layout_chunks(o)));
        json_object_set_new(pg, "comm_bytes_per_step",
                            json_pack("{s:o, s:o, s:o}", "data_parallel", json_whole(pt->dp.bytes),
                                      "tensor_parallel", json_whole(pt->tp.bytes), "pipeline",
                                      json_whole(pt->pp.bytes)));
        if (o->cp > 1)
            json_object_set_new(json_object_get(pg, "comm_bytes_per_step"), "context_parallel",
                                json_whole(pt->cp.bytes));
        if (o->ep > 1) {
            json_object_set_new(json_object_get(pg, "comm_bytes_per_step"), "expert_parallel",
                                json_whole(pt->ep.bytes));
            json_object_set_new(pg, "expert_parallel_formula", json_string(pt->ep.formula));
            if (pt->ep.worst != pt->ep.bytes) /* dropless: the bytes are uniform routing's */
                json_object_set_new(pg, "expert_parallel_worst", json_whole(pt->ep.worst));
            if (!(o->shape.moe.capacity_factor > 0)) /* and activations are the bound */
                json_object_set_new(pg, "activations_uniform", json_whole(p->act_uniform[st]));
        }
        json_object_set_new(pg, "pipeline_formula", json_string(pt->pp.formula));
        json_array_append_new(stages, pg);
    }
    json_t *pred = json_pack("{s:O, s:o, s:s, s:o}", "per_gpu", json_array_get(stages, 0),
                             "comm_bytes_per_gpu", json_whole(p->comm[0].dp.bytes), "comm_formula",
                             p->comm[0].dp.formula, "per_stage", stages);
    json_object_set_new(m, "predicted", pred);
    const enum ledger_cat cats[] = {MEM_WEIGHTS,   MEM_GRADIENTS,   MEM_MASTER,
                                    MEM_OPTIMIZER, MEM_ACTIVATIONS, MEM_COMM};
    double dmem = 0, dcomm = 0;
    for (int i = 0; i < o->gpus; i++) {
        const struct run_gpu *g = run_gpu(run, i);
        const struct memory_result *pm = &p->mem[g->place.stage];
        const struct traffic *pt = &p->comm[g->place.stage];
        double rows[TRAIN_MAX_EXPERT_LAYERS], ep_bytes = NAN;
        struct memory_result at;
        if (dropless_at(o, shape, g, rows, &at, &ep_bytes)) /* its own routing's */
            pm = &at;
        const double want[] = {pm->states.weights,   pm->states.gradients, pm->states.master,
                               pm->states.optimizer, pm->activations,      pm->comm};
        for (int k = 0; k < 6; k++)
            dmem += fabs((double)g->peak_cat[cats[k]] - want[k]);
        for (int k = 0; k < STRATEGIES; k++)
            dcomm +=
                fabs((double)g->sent_per_step[k] -
                     (k == STRATEGY_EP && !isnan(ep_bytes) ? ep_bytes : traffic_of(pt, k)->bytes));
    }
    json_object_set_new(
        m, "measured_minus_predicted",
        json_pack("{s:o, s:o}", "memory_bytes", json_whole(dmem), "comm_bytes", json_whole(dcomm)));
}

/* A mixture of experts' shape and its routing over the run. */
static json_t *moe_json(const struct gpt_config *c, const struct train_summary *sum)
{
    json_t *x =
        json_pack("{s:i, s:i, s:i, s:o, s:o}", "experts", c->moe.experts, "top_k", c->moe.top_k,
                  "moe_every", c->moe.every, "capacity_factor", json_num(c->moe.capacity_factor),
                  "aux_loss_coef", json_num(c->moe.aux_coef));
    json_object_set_new(x, "routed", json_integer((json_int_t)sum->routed));
    json_object_set_new(x, "dropped", json_integer((json_int_t)sum->dropped));
    json_object_set_new(x, "last_aux_loss", json_num(sum->last_aux));
    /* a layer's loss, and what Switch Transformer's formula gives it when the routing is even */
    json_object_set_new(x, "last_aux_loss_per_layer", json_num(sum->last_aux / gpt_moe_layers(c)));
    json_object_set_new(x, "aux_loss_per_layer_even", json_num(c->moe.aux_coef));
    json_object_set_new(x, "last_expert_imbalance", json_num(sum->last_imbalance));
    return x;
}

/* A step's terms, the run's beside the calculator's (plan_time's, calc/plan.h), in the order
 * of term_names: the run's exposed time by kind (par/run.h's enum run_wait) and its MFU, the
 * model FLOPs the calculator's MFU is of over the run's step. */
enum { TERMS = 10 };
static const char *const term_names[TERMS] = {
    "step",       "compute",    "bubble (calculator: + slowest stage's wait)",
    "exposed dp", "exposed tp", "exposed pp",
    "exposed cp", "exposed ep", "other (the agreement's scalars)",
    "MFU"};

static void terms(const struct train_args *r, const struct train_summary *sum, double run[TERMS],
                  double calc[TERMS])
{
    const struct plan_layout *l = &r->as_plan;
    const struct traffic *t = &l->traffic;
    const double *w = sum->exposed_by;
    /* the calculator's compute is the mean GPU's, its bubble and the slowest stage's wait
     * what the mean GPU would wait besides communication: the run's, the step less the mean
     * GPU's compute and the exposed communication of the GPU on the step's path (with one
     * stage, that GPU's waits for a pipeline's messages: none) */
    double bubble = sum->sim_step - sum->compute_mean;
    for (int k = 0; k < RUN_WAITS; k++)
        bubble -= k == RUN_WAIT_BUBBLE ? 0 : w[k];
    if (fabs(bubble) < 1e-9 * sum->sim_step) /* a difference of sums' rounding: none */
        bubble = 0;
    double rv[TERMS] = {sum->sim_step,
                        sum->compute_mean,
                        bubble,
                        w[RUN_WAIT_DP],
                        w[RUN_WAIT_TP],
                        w[RUN_WAIT_PP],
                        w[RUN_WAIT_CP],
                        w[RUN_WAIT_EP],
                        w[RUN_WAIT_OTHER],
                        l->mfu * l->step_time_s / sum->sim_step};
    double cv[TERMS] = {l->step_time_s, l->compute_s,  l->bubble_s + l->imbalance_s,
                        t->dp.exposed,  t->tp.exposed, t->pp.exposed,
                        t->cp.exposed,  t->ep.exposed, 0,
                        l->mfu};
    memcpy(run, rv, sizeof rv);
    memcpy(calc, cv, sizeof cv);
}

/* A run timed as a model: its step beside the calculator's for that model and layout
 * (plan_time's terms, what plan ranks layouts by). */
static void print_timed_as(const struct train_args *r, const struct train_summary *sum)
{
    if (!r->time_as)
        return;
    const struct plan_layout *l = &r->as_plan;
    const struct traffic *t = &l->traffic;
    char a[32], b[32], c[32], d[32], x[6][32];
    /* the mean GPU's compute, the one the calculator counts (and the table's), so the rest is
     * the table's bubble and exposed communication; the busiest GPU's beside it (a pipeline's
     * last stage with the head, the naive split's GPU of the last chunk) */
    bool even = sum->compute_busiest - sum->compute_mean <= 1e-9 * sum->compute_mean;
    printf("timed as %s: step %s = the mean GPU's compute %s + the rest (not hidden, bubble "
           "included) %s; %s%s\n",
           r->as.name, units_format_seconds(a, sizeof a, sum->sim_step),
           units_format_seconds(b, sizeof b, sum->compute_mean),
           units_format_seconds(c, sizeof c, sum->sim_step - sum->compute_mean),
           even ? "every GPU computes as much" : "the busiest GPU computes ",
           even ? "" : units_format_seconds(d, sizeof d, sum->compute_busiest));
    printf("the calculator for %s in this layout: step %s = compute %s + bubble %s + the "
           "slowest stage's wait %s + exposed communication %s (dp %s, tp %s, pp %s, cp %s, ep "
           "%s), MFU %.1f%%; the run is %+.1f%% of it\n",
           r->as.name, units_format_seconds(a, sizeof a, l->step_time_s),
           units_format_seconds(b, sizeof b, l->compute_s),
           units_format_seconds(c, sizeof c, l->bubble_s),
           units_format_seconds(x[5], sizeof x[5], l->imbalance_s),
           units_format_seconds(d, sizeof d, l->comm_exposed_s),
           units_format_seconds(x[0], sizeof x[0], t->dp.exposed),
           units_format_seconds(x[1], sizeof x[1], t->tp.exposed),
           units_format_seconds(x[2], sizeof x[2], t->pp.exposed),
           units_format_seconds(x[3], sizeof x[3], t->cp.exposed),
           units_format_seconds(x[4], sizeof x[4], t->ep.exposed), 100 * l->mfu,
           100 * (sum->sim_step / l->step_time_s - 1));
    double run[TERMS], calc[TERMS];
    terms(r, sum, run, calc);
    printf("  %-44s %10s %10s %8s\n", "term, seconds per step", "run", "calculator", "apart");
    for (int i = 0; i < TERMS; i++) {
        char dd[32] = "";
        if (i == TERMS - 1)
            printf("  %-44s %9.1f%% %9.1f%%", term_names[i], 100 * run[i], 100 * calc[i]);
        else
            printf("  %-44s %10s %10s", term_names[i], units_format_seconds(a, sizeof a, run[i]),
                   units_format_seconds(b, sizeof b, calc[i]));
        if (calc[i] > 0)
            snprintf(dd, sizeof dd, "%+.1f%%", 100 * (run[i] / calc[i] - 1));
        printf(" %8s\n", dd);
    }
}

/* The calculator's step for the model a run is timed as, for train --json. */
static json_t *timed_as_json(const struct train_args *r, const struct train_summary *sum)
{
    const struct plan_layout *l = &r->as_plan;
    const struct traffic *t = &l->traffic;
    json_t *p = json_pack(
        "{s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o}", "step_time_s",
        json_num(l->step_time_s), "compute_s", json_num(l->compute_s), "bubble_s",
        json_num(l->bubble_s), "imbalance_s", json_num(l->imbalance_s), "comm_exposed_s",
        json_num(l->comm_exposed_s), "dp_exposed_s", json_num(t->dp.exposed), "tp_exposed_s",
        json_num(t->tp.exposed), "pp_exposed_s", json_num(t->pp.exposed), "cp_exposed_s",
        json_num(t->cp.exposed), "ep_exposed_s", json_num(t->ep.exposed), "mfu", json_num(l->mfu));
    /* the run's terms under the calculator's names (terms) */
    double run[TERMS], calc[TERMS];
    terms(r, sum, run, calc);
    static const char *const keys[TERMS] = {
        "step_time_s",  "compute_s",    "bubble_s",     "dp_exposed_s", "tp_exposed_s",
        "pp_exposed_s", "cp_exposed_s", "ep_exposed_s", "other_s",      "mfu"};
    json_t *m = json_object();
    for (int i = 0; i < TERMS; i++)
        json_object_set_new(m, keys[i], json_num(run[i]));
    return json_pack("{s:s, s:o, s:o, s:o, s:o}", "model", r->as.name, "sim_compute_s",
                     json_num(sum->compute_mean), "busiest_compute_s",
                     json_num(sum->compute_busiest), "run", m, "predicted", p);
}

static void print_summary_json(const struct train_args *r, const struct run *run,
                               const struct train_summary *sum, const struct prediction *p)
{
    const struct train_opts *o = &r->o;
    const struct gpt_config *c = &o->shape;
    double gflops = sum->flops * (double)sum->steps / sum->seconds / 1e9;
    const struct run_gpu *g0 = run_gpu(run, 0);
    json_t *m = json_object();
    json_object_set_new(m, "first_loss", json_num(sum->first_loss));
    json_object_set_new(m, "final_loss", json_num(sum->final_loss));
    json_object_set_new(m, "loss_floor", json_num(sum->floor));
    json_object_set_new(m, "skipped_steps", json_integer(sum->skipped));
    json_object_set_new(m, "tokens_per_s", json_num(sum->tokens_per_s));
    json_object_set_new(m, "steps", json_integer(sum->steps));
    json_object_set_new(m, "model", json_string(r->shape.name));
    json_object_set_new(m, "parameters", json_integer((json_int_t)gpt_param_count(c)));
    if (c->moe.experts) {
        json_object_set_new(m, "active_parameters",
                            json_integer((json_int_t)gpt_active_param_count(c)));
        json_object_set_new(m, "moe", moe_json(c, sum));
    }
    json_object_set_new(m, "precision", json_string(fp_info(o->precision)->key));
    struct gpt_fp8 f8 = train_fp8(o);
    if (f8.recipe != FP8_OFF) /* the linear layers' GEMMs in fp8 over the bf16 model */
        json_object_set_new(m, "fp8",
                            json_pack("{s:s, s:i, s:i, s:i, s:b}", "recipe",
                                      fp8_recipe_name(f8.recipe), "history", f8.history, "margin",
                                      f8.margin, "block", f8.block, "pow2", f8.pow2));
    char ckpt[24];
    json_object_set_new(m, "checkpoint", json_string(ckpt_name(ckpt, sizeof ckpt, &o->ckpt)));
    json_object_set_new(m, "overflow_steps", json_integer(sum->overflows));
    json_object_set_new(m, "spikes", json_integer(sum->spikes));
    json_object_set_new(m, "final_loss_scale", json_num(sum->last_scale));
    json_object_set_new(m, "max_grad_norm", json_num(sum->max_norm));
    json_object_set_new(m, "min_clip_coef", json_num(sum->min_coef));
    json_object_set_new(m, "max_underflow_frac", json_num(sum->max_underflow));
    json_t *ul = json_array();
    int nl = sum->layers < 64 ? sum->layers : 64;
    for (int l = 0; l <= nl; l++)
        json_array_append_new(ul, json_integer((json_int_t)sum->underflow[l]));
    json_object_set_new(m, "underflow_by_layer", ul);
    json_object_set_new(m, "first_nonfinite",
                        sum->first_nonfinite[0] ? json_string(sum->first_nonfinite) : json_null());
    json_object_set_new(m, "act_peak_bytes",
                        json_integer((json_int_t)g0->peak_cat[MEM_ACTIVATIONS]));
    json_object_set_new(m, "act_predicted_bytes", json_num(sum->predicted));
    json_t *mem = json_object();
    for (int i = 0; i < MEM_CAT_COUNT; i++)
        json_object_set_new(mem, ledger_cat_name((enum ledger_cat)i),
                            json_integer((json_int_t)g0->peak_cat[i]));
    json_object_set_new(mem, "total", json_integer((json_int_t)g0->peak));
    json_object_set_new(m, "memory_peak_bytes", mem);
    json_object_set_new(m, "flops_per_step", json_num(sum->flops));
    json_object_set_new(m, "recompute_flops", json_num(sum->recompute));
    json_object_set_new(m, "recompute_overhead_pct", json_num(sum->overhead));
    json_object_set_new(m, "gflops", json_num(gflops));
    json_object_set_new(m, "seconds", json_num(sum->seconds));
    json_object_set_new(m, "simulated_seconds", json_num(sum->sim_seconds));
    json_object_set_new(m, "transport", json_string(r->mpi ? "mpi" : "thread"));
    if (r->mpi) {
        json_object_set_new(m, "ranks", json_integer(r->ranks));
        json_object_set_new(m, "hosts", json_integer(r->hosts));
    }
    json_object_set_new(m, "sim_step_time_s", json_num(sum->sim_step));
    json_object_set_new(m, "comm_exposed_s", json_num(sum->exposed));
    json_object_set_new(m, "timed_as", r->time_as ? timed_as_json(r, sum) : json_null());
    json_object_set_new(m, "layout", layout_json(o));
    json_object_set_new(m, "per_gpu", per_gpu_json(o, &r->shape, run));
    json_object_set_new(m, "scalar_bytes_per_step", json_integer((json_int_t)sum->scalars));
    if (p->ok)
        predicted_json(m, o, &r->shape, run, p);
    if (layout_pipelined(o))
        json_object_set_new(m, "pipeline", pipeline_json(o, run, p));
    json_t *top = json_object();
    json_object_set_new(top, "summary", m);
    errno = 0;
    if (json_write_line(stdout, top, JSON_FIGURES) != 0)
        cli_output_failed();
}

/* Every GPU's ledger peaks and bytes sent per step beside the calculator's figures for its
 * stage; the communication formulas; a pipeline's micro-batches held, measured and scheduled. */
static void print_gpu_table(const struct train_opts *o, const struct run *run,
                            const struct prediction *p)
{
    bool piped = o->pp > 1, tp = o->tp > 1, cp = o->cp > 1, ep = o->ep > 1;
    printf(
        "\nper GPU, peak bytes (measured by each GPU's ledger; the CPU's fp32 workspace apart)\n");
    printf("%-10s %12s %12s %12s %12s %12s %12s %12s %14s", "GPU", "weights", "gradients", "master",
           "optimizer", "activations", "comm", "workspace", "sent/step");
    printf(tp ? " %14s" : "", "tensor/step");
    printf(cp ? " %14s" : "", "context/step");
    printf(ep ? " %14s" : "", "expert/step");
    printf(piped ? " %14s\n" : "\n", "pipeline/step");
    for (int i = 0; i < o->gpus; i++) {
        const struct run_gpu *g = run_gpu(run, i);
        char name[24];
        if (piped)
            snprintf(name, sizeof name, "%d (s%d)", i, g->place.stage);
        else
            snprintf(name, sizeof name, "%d", i);
        printf("%-10s %12llu %12llu %12llu %12llu %12llu %12llu %12llu %14llu", name,
               (unsigned long long)g->peak_cat[MEM_WEIGHTS],
               (unsigned long long)g->peak_cat[MEM_GRADIENTS],
               (unsigned long long)g->peak_cat[MEM_MASTER],
               (unsigned long long)g->peak_cat[MEM_OPTIMIZER],
               (unsigned long long)g->peak_cat[MEM_ACTIVATIONS],
               (unsigned long long)g->peak_cat[MEM_COMM],
               (unsigned long long)g->peak_cat[MEM_WORKSPACE],
               (unsigned long long)g->sent_per_step[STRATEGY_DP]);
        if (tp)
            printf(" %14llu", (unsigned long long)g->sent_per_step[STRATEGY_TP]);
        if (cp)
            printf(" %14llu", (unsigned long long)g->sent_per_step[STRATEGY_CP]);
        if (ep)
            printf(" %14llu", (unsigned long long)g->sent_per_step[STRATEGY_EP]);
        if (piped)
            printf(" %14llu", (unsigned long long)g->sent_per_step[STRATEGY_PP]);
        printf("\n");
    }
    for (int st = 0; p->ok && st < o->pp; st++) {
        const struct memory_result *m = &p->mem[st];
        char name[24];
        snprintf(name, sizeof name, piped ? "stage %d" : "predicted", st);
        printf("%-10s %12.0f %12.0f %12.0f %12.0f %12.0f %12.0f %12s %14.0f", name,
               m->states.weights, m->states.gradients, m->states.master, m->states.optimizer,
               m->activations, m->comm, "-", p->comm[st].dp.bytes);
        if (tp)
            printf(" %14.0f", p->comm[st].tp.bytes);
        if (cp)
            printf(" %14.0f", p->comm[st].cp.bytes);
        if (ep)
            printf(" %14.0f", p->comm[st].ep.bytes);
        if (piped)
            printf(" %14.0f", p->comm[st].pp.bytes);
        printf("\n");
    }
    if (p->ok) {
        printf("communication: %s\n", p->comm[0].dp.formula);
        if (cp)
            printf("context parallel: %s\n", p->comm[0].cp.formula);
        if (ep)
            printf("expert parallel: %s\n", p->comm[0].ep.formula);
        if (ep && !(o->shape.moe.capacity_factor > 0))
            printf("dropless: the measured bytes, buffers and kept expert tensors follow each "
                   "step's routing;\nthe predicted comm and activations are the bound (every "
                   "token of the group to one GPU),\nthe predicted expert/step uniform "
                   "routing's; uniform routing's activations %.0f, and each\nGPU's peaks the "
                   "calculator's at the rows its peak's pass and largest all-to-all held\n(--json: "
                   "predicted_activations, predicted_communication)\n",
                   p->act_uniform[0]);
    }
    if (cp) { /* the causal mask's work, GPU by GPU: what the balanced split evens out */
        uint64_t lo = UINT64_MAX, hi = 0, sum = 0;
        for (int i = 0; i < o->gpus; i++) {
            uint64_t s = run_gpu(run, i)->ring_scores_per_step;
            lo = s < lo ? s : lo, hi = s > hi ? s : hi, sum += s;
        }
        printf("ring attention (%s split): scores computed per GPU per step %llu to %llu, the "
               "busiest %.3gx the mean\n",
               o->cp_naive ? "naive" : "balanced", (unsigned long long)lo, (unsigned long long)hi,
               sum ? (double)hi * o->gpus / (double)sum : 0.0);
        for (int st = 0; piped && st < o->pp; st++)
            printf("pipeline, stage %d: %s\n", st, p->comm[st].pp.formula);
    }
    if (layout_pipelined(o) && p->have_sched) {
        printf("schedule %s, %d micro-batches of %d sequences; micro-batches held at once, per "
               "stage:",
               sched_name(o->schedule), o->micro_batches,
               o->batch / (layout_dp(o) * o->micro_batches));
        for (int st = 0; st < o->pp; st++)
            printf(" %g", (double)stage_gpu(run, st)->peak_in_flight / layout_chunks(o));
        printf(" (the schedule's:");
        for (int st = 0; st < o->pp; st++)
            printf(" %g", (double)p->sched.peak_chunks[st] / layout_chunks(o));
        printf(")\n");
    }
}

static void print_summary_text(const struct train_args *r, const struct run *run,
                               const struct train_summary *sum, const struct prediction *p,
                               const struct cluster_spec *spec)
{
    const struct train_opts *o = &r->o;
    char a[32], b[32];
    double gflops = sum->flops * (double)sum->steps / sum->seconds / 1e9;
    const struct run_gpu *g0 = run_gpu(run, 0);
    printf("\nfinal loss %s (mean of the last %d steps applied), floor %.4f: %s nats above\n",
           units_format_num(a, sizeof a, "%.4f", sum->final_loss), sum->nlast, sum->floor,
           units_format_num(b, sizeof b, "%.4f", sum->final_loss - sum->floor));
    printf("skipped steps %ld (overflow %ld, spikes %ld), final loss scale %g\n", sum->skipped,
           sum->overflows, sum->spikes, (double)sum->last_scale);
    printf("activation memory: peak %s measured by the ledger, %s predicted by the "
           "calculator\n",
           units_format_bytes(a, sizeof a, (double)g0->peak_cat[MEM_ACTIVATIONS], UNITS_BINARY),
           units_format_bytes(b, sizeof b, sum->predicted, UNITS_BINARY));
    printf("GPU memory peak %s (", units_format_bytes(a, sizeof a, (double)g0->peak, UNITS_BINARY));
    /* the arena is reserved memory whole when allocated; live activations are inside it */
    bool first = true;
    for (int i = 0; i < MEM_CAT_COUNT; i++)
        if (g0->peak_cat[i] && i != MEM_ACTIVATIONS && i != MEM_RESERVED) {
            printf("%s%s %s", first ? "" : ", ", ledger_cat_name((enum ledger_cat)i),
                   units_format_bytes(b, sizeof b, (double)g0->peak_cat[i], UNITS_BINARY));
            first = false;
        }
    printf(", arenas %s holding at most %s of live activations)\n",
           units_format_bytes(a, sizeof a, (double)g0->peak_cat[MEM_RESERVED], UNITS_BINARY),
           units_format_bytes(b, sizeof b, (double)g0->peak_cat[MEM_ACTIVATIONS], UNITS_BINARY));
    if (o->precision != FP_FP32) {
        printf("gradient elements that underflowed to 0 over the run:");
        int nl = sum->layers < 64 ? sum->layers : 64;
        for (int l = 0; l < nl; l++)
            printf(" layer %d: %llu,", l, (unsigned long long)sum->underflow[l]);
        printf(" embedding and norms: %llu\n", (unsigned long long)sum->underflow[nl]);
    }
    printf("matmul FLOPs per step %.4g, recomputed %.4g (%.1f%% overhead)\n", sum->flops,
           sum->recompute, sum->overhead);
    printf("%.0f tokens/s, %.2f GFLOP/s, %s wall; %s simulated on %s\n", sum->tokens_per_s, gflops,
           units_format_seconds(a, sizeof a, sum->seconds),
           units_format_seconds(b, sizeof b, sum->sim_seconds), spec->name);
    if (r->mpi)
        printf("over %d MPI ranks on %d host%s: the wall time is theirs, sends between real "
               "processes; the simulated time is the %s GPUs'\n",
               r->ranks, r->hosts, r->hosts == 1 ? "" : "s", spec->name);
    if (o->gpus == 1 && !layout_pipelined(o)) {
        print_timed_as(r, sum);
        return;
    }
    print_gpu_table(o, run, p);
    printf("simulated step %s, of which %s not hidden behind compute; the agreement (loss, "
           "norm, inf/NaN) %llu bytes per GPU\n",
           units_format_seconds(a, sizeof a, sum->sim_step),
           units_format_seconds(b, sizeof b, sum->exposed), (unsigned long long)sum->scalars);
    print_timed_as(r, sum);
}

/* One step into the summary, and printed. */
void train_summary_add(struct train_summary *sum, const struct train_args *r,
                       const struct run_step *rs, long i)
{
    const struct train_step *s = &rs->s;
    const struct train_opts *o = &r->o;
    sum->skipped += s->skipped;
    sum->overflows += s->overflow;
    sum->spikes += s->spike;
    if (i == 1)
        sum->first_loss = s->loss, sum->min_coef = s->clip_coef;
    if (isfinite(s->grad_norm) && s->grad_norm > sum->max_norm) /* of the finite ones */
        sum->max_norm = s->grad_norm;
    if (s->clip_coef < sum->min_coef)
        sum->min_coef = s->clip_coef;
    int nl = o->shape.layers < 64 ? o->shape.layers : 64;
    for (int l = 0; l <= nl; l++)
        sum->underflow[l] += rs->underflow[l];
    if (s->underflow_frac > sum->max_underflow)
        sum->max_underflow = s->underflow_frac;
    if (s->nonfinite[0] && !sum->first_nonfinite[0])
        snprintf(sum->first_nonfinite, sizeof sum->first_nonfinite, "%s", s->nonfinite);
    sum->sim_step += rs->sim_time_s;
    sum->exposed += rs->exposed_s;
    for (int w = 0; w < RUN_WAITS; w++)
        sum->exposed_by[w] += rs->exposed_by[w];
    sum->compute_mean += rs->gpus > 0 ? rs->compute_sum_s / rs->gpus : 0;
    sum->compute_busiest += rs->compute_max_s;
    sum->scalars = rs->scalar_bytes;
    sum->last_scale = s->next_scale; /* after the last update, as get_scale() says */
    sum->routed += s->routed, sum->dropped += s->dropped;
    sum->last_aux = s->aux_loss, sum->last_imbalance = s->expert_imbalance;
    sum->steps = i;
}

/* What the run's FLOPs and the calculator say before it starts. */
void train_summary_start(const struct train_args *r, const struct prediction *pred,
                         struct train_summary *sum)
{
    const struct train_opts *o = &r->o;
    /* matmul FLOPs of the global batch, as the model counts them */
    struct gpt_flops fl = gpt_step_flops(&o->shape, o->batch, &o->ckpt);
    sum->layers = o->shape.layers;
    sum->recompute = fl.recompute;
    sum->flops = fl.forward + fl.backward + fl.recompute;
    sum->overhead = 100.0 * fl.recompute / (fl.forward + fl.backward);
    sum->predicted = pred->ok ? pred->mem[0].activations : NAN;
}

void train_print_summary(const struct train_args *r, const struct run *run,
                         const struct train_summary *sum, const struct prediction *p,
                         const struct cluster_spec *spec)
{
    if (r->json)
        print_summary_json(r, run, sum, p);
    else
        print_summary_text(r, run, sum, p, spec);
}
