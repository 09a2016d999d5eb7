/* Lesson 2's panel: activation memory under a checkpoint policy, measured on a real step.
 *
 * Each time the policy changes, the panel runs one real training step of the tiny GPT
 * (src/model) with an allocator seam that records every activation charge and every piece of
 * compute: the live activation bytes over the step's time (time = matmul FLOPs done so far,
 * as a simulated GPU's clock counts it) draw the sawtooth of the forward pass filling memory
 * and the backward pass emptying it, with the recomputation's teeth, and its peak. Beside it:
 * each layer's bytes kept by the forward pass and recomputed by the backward pass, the
 * recomputation's cost in FLOPs, the calculator's prediction for the same step (calc/activ.h,
 * equal to the measurement), and the calculator's figure for synthetic-7b under the policy.
 *
 * Keys: p the policy (none, full, every:2, sqrt, selective), f the precision (fp32, bf16).
 * Settings: policy=POLICY, precision=fp32|bf16, batch=B. */
#include "config.h"

#include <curses.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "base/units.h"
#include "calc/activ.h"
#include "calc/preset.h"
#include "model/gpt.h"
#include "par/trainer.h"
#include "ui/draw.h"
#include "ui/eventlog.h"
#include "ui/panel.h"

#define MAX_POINTS 4096
#define MAX_LAYERS 64

static const char *const policies[] = {"none", "full", "every:2", "sqrt", "selective"};
#define NPOLICIES 5

struct point {
    double t, bytes;
};

struct ckpt_panel {
    struct eventlog *log;
    bool check_only; /* settings only checked (scalelab run): nothing is measured */
    int policy, batch;
    enum fp_format fmt;
    struct model_shape tiny, big;
    bool have_big;
    char err[ERROR_MAX];
    /* the measured step */
    struct point pts[MAX_POINTS];
    int npts;
    double flops_done, live, peak, predicted;
    double none_peak; /* the calculator's peak without checkpointing: the ghost line */
    struct gpt_flops fl;
    int layers;
    double stored[MAX_LAYERS], recomputed[MAX_LAYERS], ends;
    /* synthetic-7b under the policy and under none */
    double big_peak, big_none;
};

static void record(struct ckpt_panel *p)
{
    if (p->npts < MAX_POINTS)
        p->pts[p->npts++] = (struct point){p->flops_done, p->live};
}

static void rec_charge(void *ctx, enum gpt_mem kind, long long delta)
{
    struct ckpt_panel *p = ctx;
    (void)kind;
    record(p); /* a vertical edge: before and after */
    p->live += (double)delta;
    p->peak = fmax(p->peak, p->live);
    record(p);
}

static void rec_compute(void *ctx, double flops, const char *what, int layer)
{
    struct ckpt_panel *p = ctx;
    (void)what, (void)layer;
    p->flops_done += flops;
    record(p);
}

static double big_activ(const struct ckpt_panel *p, const char *policy)
{
    struct activ_policy pol;
    struct activ_total tot;
    struct activ_config ac = {1, p->big.seq, 1, false, 2};
    if (activ_parse_policy(policy, &pol, NULL) != 0)
        return NAN;
    activ_total(&p->big, &ac, &pol, p->big.layers, true, true, &tot);
    return tot.peak;
}

/* Runs one step of tiny under the current policy and records it. */
static void measure(struct ckpt_panel *p)
{
    struct error e = {0};
    struct gpt_ckpt ck;
    struct gpt *g = NULL;
    struct gpt_config c;
    p->npts = 0, p->flops_done = p->live = p->peak = 0;
    p->err[0] = 0;
    if (p->check_only)
        return;
    struct gpt_alloc seam = {.alloc = gpt_host_alloc,
                             .free = gpt_host_free,
                             .charge = rec_charge,
                             .compute = rec_compute,
                             .ctx = p};
    if (train_shape_of(&p->tiny, &c, &e) || gpt_ckpt_parse(policies[p->policy], &ck, &e) ||
        gpt_new(&g, &c, p->batch, p->fmt, &ck, &seam, &e)) {
        snprintf(p->err, sizeof p->err, "%s", e.msg);
        return;
    }
    gpt_init_params(&c, 1, gpt_params(g));
    gpt_set_weights(g, gpt_params(g));
    size_t bt = (size_t)p->batch * c.seq;
    int32_t *tok = calloc(bt, sizeof *tok), *tgt = calloc(bt, sizeof *tgt);
    if (!tok || !tgt) {
        snprintf(p->err, sizeof p->err, "out of memory");
        free(tok), free(tgt), gpt_free(g);
        return;
    }
    for (size_t i = 0; i < bt; i++)
        tok[i] = (int32_t)(i * 7 % (size_t)c.vocab), tgt[i] = (int32_t)(i * 5 % (size_t)c.vocab);
    record(p);
    gpt_step(g, tok, tgt, 1.0f, NULL);
    record(p);
    p->fl = gpt_flops(g);
    /* what each layer keeps and what the backward pass rebuilds */
    struct gpt_act_sizes sz = gpt_act_sizes(g);
    p->layers = c.layers < MAX_LAYERS ? c.layers : MAX_LAYERS;
    int seg = gpt_ckpt_segment(&ck, c.layers);
    for (int l = 0; l < p->layers; l++) {
        if (ck.kind == GPT_CKPT_NONE)
            p->stored[l] = (double)sz.layer, p->recomputed[l] = 0;
        else if (ck.kind == GPT_CKPT_SELECTIVE)
            p->stored[l] = (double)(sz.layer - sz.core), p->recomputed[l] = (double)sz.core;
        else if (l % seg == 0)
            p->stored[l] = (double)sz.input, p->recomputed[l] = (double)(sz.layer - sz.input);
        else
            p->stored[l] = 0, p->recomputed[l] = (double)sz.layer;
    }
    p->ends = (double)sz.ends;
    struct activ_policy pol;
    struct activ_total tot;
    struct activ_config ac = {p->batch, c.seq, 1, false, p->fmt == FP_FP32 ? 4 : 2};
    p->predicted = p->none_peak = NAN;
    if (activ_parse_policy(policies[p->policy], &pol, NULL) == 0) {
        activ_total(&p->tiny, &ac, &pol, c.layers, true, true, &tot);
        p->predicted = tot.peak;
    }
    if (activ_parse_policy("none", &pol, NULL) == 0) { /* the ghost line: nothing recomputed */
        activ_total(&p->tiny, &ac, &pol, c.layers, true, true, &tot);
        p->none_peak = tot.peak;
    }
    if (p->have_big) {
        p->big_peak = big_activ(p, policies[p->policy]);
        p->big_none = big_activ(p, "none");
    }
    free(tok), free(tgt);
    gpt_free(g);
}

static int ckpt_init(void **state, const struct panel_env *env, struct error *e)
{
    struct ckpt_panel *p = calloc(1, sizeof *p);
    if (!p)
        return error_set(e, ERR_NOMEM, "out of memory");
    p->log = env->log;
    p->check_only = env->check_only;
    p->batch = 4;
    p->fmt = FP_BF16;
    if (preset_load_model("tiny", &p->tiny, e) != 0) {
        free(p);
        return ERR_INVAL;
    }
    p->have_big = preset_load_model("synthetic-7b", &p->big, NULL) == 0;
    measure(p);
    *state = p;
    return 0;
}

static void ckpt_fini(void *state)
{
    free(state);
}

static int ckpt_set(void *state, const char *name, const char *value, struct error *e)
{
    struct ckpt_panel *p = state;
    long long n;
    if (!strcmp(name, "policy")) {
        int i = 0;
        struct gpt_ckpt ck;
        if (gpt_ckpt_parse(value, &ck, e))
            return ERR_INVAL;
        while (i < NPOLICIES && strcmp(policies[i], value))
            i++;
        if (i == NPOLICIES)
            return error_set(e, ERR_INVAL, "policy: none, full, every:2, sqrt or selective");
        p->policy = i;
    } else if (!strcmp(name, "precision")) {
        if (!strcmp(value, "fp32"))
            p->fmt = FP_FP32;
        else if (!strcmp(value, "bf16"))
            p->fmt = FP_BF16;
        else
            return error_set(e, ERR_INVAL, "precision: fp32 or bf16, not '%s'", value);
    } else if (!strcmp(name, "batch")) {
        if (units_parse_int(value, 1, 64, &n, e))
            return ERR_INVAL;
        p->batch = (int)n;
    } else
        return error_set(e, ERR_INVAL,
                         "the checkpoint panel knows policy, precision and batch; not '%s'", name);
    measure(p);
    return 0;
}

static int ckpt_on_key(void *state, int key)
{
    struct ckpt_panel *p = state;
    if (key == 'p')
        p->policy = (p->policy + 1) % NPOLICIES;
    else if (key == 'f')
        p->fmt = p->fmt == FP_FP32 ? FP_BF16 : FP_FP32;
    else
        return 0;
    measure(p);
    if (p->log)
        eventlog_add(p->log, "checkpoint %s: activation peak %.0f bytes, +%.1f%% FLOPs",
                     policies[p->policy], p->peak,
                     100 * p->fl.recompute / (p->fl.forward + p->fl.backward));
    return PANEL_HANDLED | PANEL_REDRAW;
}

static void ckpt_draw(const void *state, struct ui_canvas *c)
{
    const struct ckpt_panel *p = state;
    int W = c->r.w, H = c->r.h, y = 0;
    char a[32], b[32];
    canvas_printf(c, y++, 0, ROLE_TEXT, "policy %s   tiny GPT, batch %d x %d, %s",
                  policies[p->policy], p->batch, p->tiny.seq, fp_info(p->fmt)->name);
    if (p->err[0]) {
        canvas_wrap(c, y + 1, ROLE_ERROR, p->err, 0);
        return;
    }
    /* Lines that may be wider than the panel wrap rather than lose their numbers. */
    char line[256];
    snprintf(line, sizeof line, "activation peak %s measured, %s predicted",
             units_format_bytes(a, sizeof a, p->peak, UNITS_BINARY),
             units_format_bytes(b, sizeof b, p->predicted, UNITS_BINARY));
    y += canvas_wrap(c, y, ROLE_TEXT, line, 0);
    snprintf(line, sizeof line, "recomputed %.3g FLOPs: +%.1f%% on forward + backward",
             p->fl.recompute, 100 * p->fl.recompute / (p->fl.forward + p->fl.backward));
    y += canvas_wrap(c, y, p->fl.recompute > 0 ? ROLE_WARN : ROLE_DIM, line, 0);
    y++;
    /* per layer: kept (bar) and recomputed (dim) */
    double mx = 0;
    for (int l = 0; l < p->layers; l++)
        mx = fmax(mx, p->stored[l] + p->recomputed[l]);
    y += canvas_wrap(c, y, ROLE_TITLE, "per layer: kept by the forward pass, recomputed", 0);
    int bw = W - 30 > 10 ? W - 30 : 10;
    const struct ui_glyphs *gl = theme_glyphs();
    for (int l = 0; l < p->layers && y < H; l++, y++) {
        canvas_printf(c, y, 0, ROLE_DIM, "layer %d", l);
        int ks = (int)lround(p->stored[l] / mx * bw), rs = (int)lround(p->recomputed[l] / mx * bw);
        for (int i = 0; i < ks; i++)
            canvas_text(c, y, 9 + i, ROLE_BAR, gl->bar);
        for (int i = 0; i < rs; i++)
            canvas_text(c, y, 9 + ks + i, ROLE_DIM, gl->bar_empty);
        canvas_printf(c, y, 10 + bw, ROLE_DIM, "%s",
                      units_format_bytes(a, sizeof a, p->stored[l], UNITS_BINARY));
    }
    snprintf(line, sizeof line, "ends (final norm, fp32 probabilities): %s kept",
             units_format_bytes(a, sizeof a, p->ends, UNITS_BINARY));
    y += canvas_wrap(c, y, ROLE_DIM, line, 0);
    y++;
    /* the sawtooth: live activation bytes over the step's FLOPs, on the scale of the peak
     * without checkpointing (the ghost line), so that what a policy saves shows */
    int h = H - y - 4;
    if (h >= 4 && p->npts > 1 && W > 20) {
        canvas_printf(c, y++, 0, ROLE_TITLE, "activation memory over one step (time = FLOPs)");
        int x0 = 10, w = W - x0 - 1;
        double tmax = p->pts[p->npts - 1].t;
        double top = fmax(p->peak, isfinite(p->none_peak) ? p->none_peak : 0);
        canvas_printf(c, y, 0, ROLE_DIM, "%s", units_format_bytes(a, sizeof a, top, UNITS_BINARY));
        int ghost = -1; /* the row of the no-checkpointing peak */
        if (p->policy != 0 && isfinite(p->none_peak) && top > 0)
            ghost = y + h - (int)lround(p->none_peak / top * h);
        for (int col = 0; col < w; col++) {
            double t0 = tmax * col / w, t1 = tmax * (col + 1) / w, lo = INFINITY, hi = 0;
            for (int i = 0; i < p->npts; i++)
                if (p->pts[i].t >= t0 && p->pts[i].t <= t1)
                    lo = fmin(lo, p->pts[i].bytes), hi = fmax(hi, p->pts[i].bytes);
            /* between points the level holds: the last point before t0 */
            for (int i = p->npts - 1; i >= 0; i--)
                if (p->pts[i].t < t0) {
                    lo = fmin(lo, p->pts[i].bytes), hi = fmax(hi, p->pts[i].bytes);
                    break;
                }
            if (!isfinite(lo))
                lo = hi;
            /* full up to the column's lowest level, shaded up to its highest: a tooth's
             * drop shows even where a column holds the whole drop */
            int full = top > 0 ? (int)lround(lo / top * h) : 0;
            int fill = top > 0 ? (int)lround(hi / top * h) : 0;
            for (int r = 0; r < fill; r++)
                canvas_text(c, y + h - 1 - r, x0 + col,
                            hi >= p->peak ? ROLE_WARN
                            : r < full    ? ROLE_BAR
                                          : ROLE_DIM,
                            r < full ? gl->bar : gl->shade);
            if (ghost >= y && ghost < y + h && fill < y + h - ghost)
                canvas_text(c, ghost, x0 + col, ROLE_DIM, "-");
        }
        if (ghost >= y && ghost < y + h)
            canvas_printf(c, ghost + (ghost == y), 0, ROLE_DIM, "- none");
        y += h;
        canvas_printf(c, y++, x0, ROLE_DIM, "forward %s backward%s", gl->dot,
                      p->fl.recompute > 0 ? " (with recomputation)" : "");
    } else if (y < H) {
        y += canvas_wrap(c, y, ROLE_DIM, "(a larger window shows the memory over the step)", 0);
    }
    if (p->have_big && y < H) {
        snprintf(line, sizeof line, "synthetic-7b (calculator, 1 x %d, bf16): %s; none %s",
                 p->big.seq, units_format_bytes(a, sizeof a, p->big_peak, UNITS_BINARY),
                 units_format_bytes(b, sizeof b, p->big_none, UNITS_BINARY));
        canvas_wrap(c, y, ROLE_TEXT, line, 0);
    }
}

static const struct panel_key ckpt_keys[] = {
    {"p", "checkpoint policy: none, full, every:2, sqrt, selective", "policy"},
    {"f", "precision of the activations: fp32, bf16", "precision"},
    {NULL, NULL, NULL},
};

const struct panel_ops panel_checkpoint = {
    .name = "checkpoint",
    .title = "Activation memory",
    .about = "One real training step of the tiny GPT under a checkpoint policy: each layer's "
             "activations kept or recomputed, the live activation memory over the step (the "
             "sawtooth) with its peak as measured and as the calculator predicts, the "
             "recomputation's extra FLOPs, and the calculator's figure for synthetic-7b.",
    .init = ckpt_init,
    .fini = ckpt_fini,
    .on_key = ckpt_on_key,
    .on_event = NULL,
    .set = ckpt_set,
    .draw = ckpt_draw,
    .keys = ckpt_keys,
};
