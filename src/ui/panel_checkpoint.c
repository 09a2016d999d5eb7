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
 * Keys: p the policy (none, full, every:2, sqrt, selective), f the precision (fp32, bf16),
 * s / S twice / half synthetic-7b's sequence length (256 to 32768, the calculator's line).
 * Settings: policy=POLICY, precision=fp32|bf16, batch=B, seq=S (synthetic-7b's). */
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
#include "par/settings.h"
#include "par/trainer.h"
#include "ui/draw.h"
#include "ui/eventlog.h"
#include "ui/layout.h"
#include "ui/panel.h"
#include "ui/runpace.h"

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
    int seq; /* synthetic-7b's sequence length, for the calculator's line */
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

#define SEQ_MIN 256
#define SEQ_MAX 32768

static double big_activ(const struct ckpt_panel *p, const char *policy)
{
    struct ckpt_policy pol;
    struct activ_total tot;
    /* eager attention, as the lesson counts it: the probabilities kept */
    struct activ_config ac = {.micro_batch = 1,
                              .seq = p->seq,
                              .tp = 1,
                              .sp = false,
                              .bytes = 2,
                              .attention = ACTIV_EAGER};
    if (ckpt_parse(policy, &pol, NULL) != 0)
        return NAN;
    activ_total(&p->big, &ac, &pol, p->big.layers, true, true, &tot);
    return tot.peak;
}

/* Runs one step of tiny under the current policy and records it. */
static void measure(struct ckpt_panel *p)
{
    struct error e = {0};
    struct ckpt_policy ck;
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
    if (train_shape_of(&p->tiny, &c, &e) || ckpt_parse(policies[p->policy], &ck, &e) ||
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
    int seg = ckpt_segment(&ck, c.layers);
    for (int l = 0; l < p->layers; l++) {
        if (ck.kind == CKPT_NONE)
            p->stored[l] = (double)sz.layer, p->recomputed[l] = 0;
        else if (ck.kind == CKPT_SELECTIVE)
            p->stored[l] = (double)(sz.layer - sz.core), p->recomputed[l] = (double)sz.core;
        else if (l % seg == 0)
            p->stored[l] = (double)sz.input, p->recomputed[l] = (double)(sz.layer - sz.input);
        else
            p->stored[l] = 0, p->recomputed[l] = (double)sz.layer;
    }
    p->ends = (double)sz.ends;
    struct activ_total tot;
    struct activ_config ac = {.micro_batch = p->batch,
                              .seq = c.seq,
                              .tp = 1,
                              .sp = false,
                              .bytes = p->fmt == FP_FP32 ? 4 : 2,
                              .attention = ACTIV_EAGER}; /* the trainer's, cp 1 */
    activ_total(&p->tiny, &ac, &ck, c.layers, true, true, &tot);
    p->predicted = tot.peak;
    /* the ghost line: nothing recomputed */
    activ_total(&p->tiny, &ac, &(struct ckpt_policy){CKPT_NONE, 0}, c.layers, true, true, &tot);
    p->none_peak = tot.peak;
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
    if (preset_load_model(TRAIN_LAB_MODEL, &p->tiny, e) != 0) {
        free(p);
        return ERR_INVAL;
    }
    p->have_big = preset_load_model("synthetic-7b", &p->big, NULL) == 0;
    p->seq = p->have_big ? p->big.seq : 2048;
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
    if (!strcmp(name, "seq")) { /* the calculator's line's, not the run's */
        long long n;
        if (units_parse_int(value, SEQ_MIN, SEQ_MAX, &n, e)) {
            error_prefix(e, "seq");
            return ERR_INVAL;
        }
        p->seq = (int)n;
        measure(p);
        return 0;
    }
    /* the run's settings (par/settings.h reads them), within what this panel shows */
    if (strcmp(name, "policy") && strcmp(name, "precision") && strcmp(name, "batch"))
        return error_set(e, ERR_INVAL,
                         "the checkpoint panel knows policy, precision, batch and seq; not '%s'",
                         name);
    struct train_opts t = {.precision = p->fmt, .batch = p->batch};
    int rc = ckpt_parse(policies[p->policy], &t.ckpt, e);
    if (rc || (rc = settings_set(&t, name, value, e)))
        return rc;
    char want[24];
    ckpt_name(want, sizeof want, &t.ckpt);
    int i = 0;
    while (i < NPOLICIES && strcmp(policies[i], want))
        i++;
    if (i == NPOLICIES)
        return error_set(e, ERR_INVAL, "policy: none, full, every:2, sqrt or selective");
    if (t.precision != FP_FP32 && t.precision != FP_BF16)
        return error_set(e, ERR_INVAL, "precision: fp32 or bf16, not '%s'", value);
    if ((rc = runpace_within("batch", t.batch, 1, RUNPACE_MAX_BATCH, e)))
        return rc;
    p->policy = i, p->fmt = t.precision, p->batch = t.batch;
    measure(p);
    return 0;
}

static int ckpt_on_key(void *state, int key)
{
    struct ckpt_panel *p = state;
    if (key == 's' || key == 'S') { /* the calculator's line only: nothing to measure again */
        int seq = key == 's' ? p->seq * 2 : p->seq / 2;
        if (seq < SEQ_MIN || seq > SEQ_MAX) {
            eventlog_add_once(p->log, "checkpoint: seq stays %d, its limit (%d to %d)", p->seq,
                              SEQ_MIN, SEQ_MAX);
            return PANEL_HANDLED | PANEL_REDRAW;
        }
        p->seq = seq;
        if (p->have_big) {
            p->big_peak = big_activ(p, policies[p->policy]);
            p->big_none = big_activ(p, "none");
        }
        eventlog_add(p->log, "checkpoint: synthetic-7b at seq %d", p->seq);
        return PANEL_HANDLED | PANEL_REDRAW;
    }
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

/* The longest of n texts (most words first) that fits in w columns, else the last. */
static const char *fitting(char (*text)[256], int n, int w)
{
    int i = 0;
    while (i < n - 1 && layout_text_width(text[i]) > w)
        i++;
    return text[i];
}

/* The sawtooth: live activation bytes over the step's FLOPs in h rows from row y, columns x0
 * on, on the scale of the peak without checkpointing (the ghost line), so that what a policy
 * saves shows. */
static void draw_sawtooth(const struct ckpt_panel *p, struct ui_canvas *c, int y, int h)
{
    const struct ui_glyphs *gl = theme_glyphs();
    int W = c->r.w, x0 = 10, w = W - x0 - 1;
    char a[32];
    double tmax = p->pts[p->npts - 1].t;
    double top = fmax(p->peak, isfinite(p->none_peak) ? p->none_peak : 0);
    canvas_printf(c, y, 0, ROLE_DIM, "%s", units_format_bytes(a, sizeof a, top, UNITS_BINARY));
    canvas_text(c, y + h - 1, 0, ROLE_DIM, "0");
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
        /* full up to the column's lowest level, shaded up to its highest: a tooth's drop
         * shows even where a column holds the whole drop */
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
    if (ghost >= y && ghost < y + h) /* its label off the rows of the axis' labels */
        canvas_printf(c,
                      ghost == y           ? y + 1
                      : ghost == y + h - 1 ? ghost - 1
                                           : ghost,
                      0, ROLE_DIM, "- none");
}

static void ckpt_draw(const void *state, struct ui_canvas *c)
{
    const struct ckpt_panel *p = state;
    int W = c->r.w, H = c->r.h, y = 0;
    char a[32], b[32], t[4][256];
    canvas_printf(c, y++, 0, ROLE_TEXT, "policy %s   tiny GPT, batch %d x %d, %s",
                  policies[p->policy], p->batch, p->tiny.seq, fp_info(p->fmt)->name);
    if (p->err[0]) {
        canvas_wrap(c, y + 1, ROLE_ERROR, p->err, 0);
        return;
    }
    /* Each line in the most words that fit: nothing cut, no number lost. */
    units_format_bytes(a, sizeof a, p->peak, UNITS_BINARY);
    units_format_bytes(b, sizeof b, p->predicted, UNITS_BINARY);
    snprintf(t[0], sizeof t[0], "activation peak %s measured, %s predicted", a, b);
    snprintf(t[1], sizeof t[1], "peak %s measured, %s predicted", a, b);
    snprintf(t[2], sizeof t[2], "peak %s measured, calc %s", a, b);
    canvas_text(c, y++, 0, ROLE_TEXT, fitting(t, 3, W));
    double pct = 100 * p->fl.recompute / (p->fl.forward + p->fl.backward);
    snprintf(t[0], sizeof t[0], "recomputed %.3g FLOPs: +%.1f%% on forward + backward",
             p->fl.recompute, pct);
    snprintf(t[1], sizeof t[1], "recomputed %.3g FLOPs: +%.1f%% compute", p->fl.recompute, pct);
    canvas_text(c, y++, 0, p->fl.recompute > 0 ? ROLE_WARN : ROLE_DIM, fitting(t, 2, W));
    /* the rows: the layers' bars and the ends, the sawtooth (4 rows at the least, its title and
     * foot), the synthetic-7b line; blank rows between them where there is room */
    int need = 1 + p->layers + 1 + 1 + 4 + 1 + 1;
    bool airy = H - y - need >= 2 + 4;
    y += airy;
    /* per layer: kept (bar) and recomputed (dim) */
    double mx = 0;
    for (int l = 0; l < p->layers; l++)
        mx = fmax(mx, p->stored[l] + p->recomputed[l]);
    snprintf(t[0], sizeof t[0], "per layer: kept by the forward pass, recomputed");
    snprintf(t[1], sizeof t[1], "per layer: kept, recomputed");
    canvas_text(c, y++, 0, ROLE_TITLE, fitting(t, 2, W));
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
    units_format_bytes(a, sizeof a, p->ends, UNITS_BINARY);
    snprintf(t[0], sizeof t[0], "ends (final norm, fp32 probabilities): %s kept", a);
    snprintf(t[1], sizeof t[1], "ends (norm, fp32 probs): %s kept", a);
    canvas_text(c, y++, 0, ROLE_DIM, fitting(t, 2, W));
    y += airy;
    /* the synthetic-7b line at the bottom, the sawtooth takes the rows between */
    char line[2][256];
    units_format_bytes(a, sizeof a, p->big_peak, UNITS_BINARY);
    units_format_bytes(b, sizeof b, p->big_none, UNITS_BINARY);
    snprintf(line[0], sizeof line[0], "synthetic-7b (calculator, 1 x %d, bf16): %s; none %s",
             p->seq, a, b);
    snprintf(line[1], sizeof line[1], "7B 1x%d calc: %s; none %s", p->seq, a, b);
    int h = H - y - 2 - (p->have_big ? 1 : 0);
    if (h >= 3 && p->npts > 1 && W > 20) {
        snprintf(t[0], sizeof t[0], "activation memory over one step (time = FLOPs)");
        snprintf(t[1], sizeof t[1], "activations over the step (time = FLOPs)");
        canvas_text(c, y++, 0, ROLE_TITLE, fitting(t, 2, W));
        draw_sawtooth(p, c, y, h);
        y += h;
        canvas_printf(c, y++, 10, ROLE_DIM, "forward %s backward%s", gl->dot,
                      p->fl.recompute > 0 ? (W >= 50 ? " (with recomputation)" : " (+recompute)")
                                          : "");
    } else if (y < H) {
        y += canvas_wrap(c, y, ROLE_DIM, "(a larger window shows the memory over the step)", 0);
    }
    if (p->have_big && y < H)
        canvas_text(c, y, 0, ROLE_TEXT, line[layout_text_width(line[0]) > W]);
}

static const struct panel_key ckpt_keys[] = {
    {"p", "checkpoint policy: none, full, every:2, sqrt, selective", "policy"},
    {"f", "precision of the activations: fp32, bf16", "precision"},
    {"s S", "twice / half synthetic-7b's sequence (256 to 32768): the calculator's line", "seq"},
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
