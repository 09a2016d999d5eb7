/* Lesson 4's panel: a dp x tp x pp layout of a model, the memory of one GPU of each pipeline
 * stage as stacked bars against its capacity, and the pipeline schedule as a Gantt chart with
 * its bubble. The numbers come from src/calc (memory_compute_stage, sched_build), as
 * 'scalelab memory' and 'scalelab pipeline' print them.
 *
 * Knobs (Up/Down select, Left/Right change): model, dp, tp, pp, micro-batches, schedule
 * (gpipe, 1f1b, interleaved with 2 model chunks a stage, or zb-h1), ZeRO stage, checkpoint policy,
 * GPU memory, sequence length; and the letters lesson 4's run panel takes for the same things:
 * o model, s schedule, p / P, d / D, t / T, m / M twice / half pp, dp, tp and micro-batches.
 * Lesson settings: model=NAME, dp=N, tp=N, pp=N, micro_batches=M,
 * schedule=gpipe|1f1b|interleaved|zb-h1, zero=0-3, checkpoint=none|selective|full|sqrt|every:K,
 * gpu_mem=SIZE, seq=S. */
#include "config.h"

#include <curses.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "base/units.h"
#include "calc/activ.h"
#include "calc/memory.h"
#include "calc/preset.h"
#include "calc/sched.h"
#include "ui/draw.h"
#include "ui/gantt.h"
#include "ui/knobs.h"
#include "ui/memui.h"
#include "ui/panel.h"
#include "ui/stackbar.h"

#define GIB        MEMUI_GIB
#define MAX_MODELS 8
#define MAX_SHOWN  8 /* stages drawn as bars (the first ones and the last) */

enum { K_MODEL, K_DP, K_TP, K_PP, K_M, K_SCHED, K_ZERO, K_CKPT, K_MEM, K_SEQ, K_COUNT };

#define CHUNKS 2 /* the interleaved schedule's model chunks a stage, as lesson 4's run has */

struct settings {
    int model, dp, tp, pp, m, zero, seq;
    enum calc_schedule sched;
    struct ckpt_policy ckpt;
    double capacity;
};

struct par {
    struct knobs knobs; /* first: knobs_on_key and the others take the state for it */
    int nmodels;
    struct model_shape models[MAX_MODELS];
    struct settings s, start;
    bool ok;
    char err[ERROR_MAX];
    struct memory_result stage[MAX_SHOWN];
    int shown[MAX_SHOWN], nshown;
    struct sched sched;
    bool have_sched;
};

/* The model chunks a stage holds: 2 with the interleaved schedule and zbv, else 1. */
static int chunks(const struct settings *s)
{
    return sched_chunks(s->sched, CHUNKS);
}

static void compute(void *state)
{
    struct par *p = state;
    const struct settings *s = &p->s;
    const struct model_shape *m = &p->models[s->model];
    struct memory_config c = {.model = m,
                              .precision = FP_BF16,
                              .optimizer = OPT_ADAMW,
                              .dp = s->dp,
                              .tp = s->tp,
                              .pp = s->pp,
                              .zero = s->zero,
                              .micro_batch = 1,
                              .seq = s->seq,
                              .micro_batches = s->m,
                              .schedule = s->sched,
                              .chunks = chunks(s),
                              .sp = s->tp > 1,
                              .ckpt = s->ckpt,
                              .capacity = s->capacity};
    struct error e = {0};
    p->ok = true;
    p->err[0] = '\0';
    /* the first stages, and the last one */
    p->nshown = s->pp < MAX_SHOWN ? s->pp : MAX_SHOWN;
    for (int i = 0; i < p->nshown; i++)
        p->shown[i] = i;
    if (s->pp > MAX_SHOWN)
        p->shown[MAX_SHOWN - 1] = s->pp - 1;
    for (int i = 0; i < p->nshown && p->ok; i++)
        if (memory_compute_stage(&c, p->shown[i], &p->stage[i], &e) < 0) {
            p->ok = false;
            snprintf(p->err, sizeof p->err, "%s", e.msg);
        }
    if (p->have_sched)
        sched_free(&p->sched);
    p->have_sched = p->ok && sched_build(s->sched, s->pp, s->m, chunks(s), &p->sched, &e) == 0;
    if (p->ok && !p->have_sched) {
        p->ok = false;
        snprintf(p->err, sizeof p->err, "%s", e.msg);
    }
}

/* ------------------------------------------------------------------ knobs */

static void schedule_text(const void *f, char *out, size_t n)
{
    snprintf(out, n, "%s", sched_name(*(const enum calc_schedule *)f));
}

/* gpipe, 1f1b, interleaved (2 chunks a stage), zb-h1 (B and W apart), round the circle */
static void schedule_step(void *f, int dir)
{
    enum calc_schedule *k = f;
    *k = (enum calc_schedule)((*k + 4 + dir) % 4);
}

static int schedule_parse(const char *value, void *f, struct error *e)
{
    enum calc_schedule k;
    int rc = sched_parse(value, &k, e);
    if (rc == 0)
        *(enum calc_schedule *)f = k;
    return rc;
}

/* a row of the table below: the knob's name on screen, its setting, its kind, its field */
#define ROW(F, NAME, SETTING, KIND)                                                                \
    .name = NAME, .setting = SETTING, .kind = KIND, .offset = offsetof(struct settings, F)

static const struct knob par_knobs[K_COUNT] = {
    [K_MODEL] = {ROW(model, "model", "model", KNOB_MODEL)},
    [K_DP] = {ROW(dp, "dp", "dp", KNOB_TWICE), .min = 1, .max = 1024},
    [K_TP] = {ROW(tp, "tp", "tp", KNOB_TWICE), .min = 1, .max = 64},
    [K_PP] = {ROW(pp, "pp", "pp", KNOB_TWICE), .min = 1, .max = SCHED_MAX_STAGES},
    [K_M] = {ROW(m, "micro m", "micro_batches", KNOB_TWICE), .min = 1, .max = 256},
    [K_SCHED] = {ROW(sched, "schedule", "schedule", KNOB_OWN), .text = schedule_text,
                 .step = schedule_step, .parse = schedule_parse},
    [K_ZERO] = {ROW(zero, "ZeRO", "zero", KNOB_ROUND), .min = 0, .max = 3},
    [K_CKPT] = {ROW(ckpt, "ckpt", "checkpoint", KNOB_CKPT)},
    [K_MEM] = {ROW(capacity, "GPU mem", "gpu_mem", KNOB_CAPACITY)},
    [K_SEQ] = {ROW(seq, "seq", "seq", KNOB_TWICE), .min = 16, .max = 131072},
};

/* the letters of lesson 4's run panel for the same things */
static const struct knob_letter par_letters[] = {
    {'o', K_MODEL, +1}, {'s', K_SCHED, +1}, {'p', K_PP, +1}, {'P', K_PP, -1},
    {'d', K_DP, +1},    {'D', K_DP, -1},    {'t', K_TP, +1}, {'T', K_TP, -1},
    {'m', K_M, +1},     {'M', K_M, -1},     {0, 0, 0},
};

static const struct knobs_spec par_spec = {
    .knobs = par_knobs,
    .count = K_COUNT,
    .letters = par_letters,
    .who = "layout",
    .title = "the layout panel",
    .compute = compute,
    .seq = K_SEQ,
};

static int par_init(void **state, const struct panel_env *env, struct error *e)
{
    struct par *p = calloc(1, sizeof *p);
    if (!p)
        return error_set(e, ERR_NOMEM, "out of memory");
    p->nmodels = memui_load_models(p->models, MAX_MODELS);
    if (p->nmodels == 0) {
        free(p);
        return error_set(e, ERR_IO, "no model presets found under assets/models");
    }
    p->s = (struct settings){.model = 0,
                             .dp = 1,
                             .tp = 2,
                             .pp = 4,
                             .m = 8,
                             .zero = 0,
                             .sched = SCHED_1F1B,
                             .ckpt = {CKPT_NONE, 0},
                             .capacity = 80 * GIB,
                             .seq = p->models[0].seq};
    p->start = p->s;
    knobs_init(&p->knobs, &par_spec, &p->s, &p->start, sizeof p->s, env->log);
    p->knobs.models = p->models;
    p->knobs.nmodels = p->nmodels;
    compute(p);
    *state = p;
    return 0;
}

static void par_fini(void *state)
{
    struct par *p = state;
    if (p->have_sched)
        sched_free(&p->sched);
    free(p);
}

/* ------------------------------------------------------------------ drawing */

/* The schedule's chart in rows h at row y: the first stages and the last when they do not
 * all fit, every operation of each (ui/gantt.h); returns its scale. */
static enum gantt_scale draw_gantt(const struct par *p, struct ui_canvas *c, int y, int h,
                                   double *per)
{
    const struct sched *s = &p->sched;
    int w = c->r.w - 3, rows = s->p < h ? s->p : h;
    if (s->makespan <= w) /* whole columns a slot when the slots fit */
        w = s->makespan * (w / s->makespan);
    static struct gantt_item it[8 * 2 * 256 * CHUNKS]; /* 8 rows, m <= 256; UI thread */
    int n = 0, cap = (int)(sizeof it / sizeof it[0]);
    for (int r = 0; r < rows; r++) {
        int st = r == rows - 1 ? s->p - 1 : r;
        for (int i = 0; i < s->count[st] && n < cap; i++)
            it[n++] = (struct gantt_item){r, s->ops[st][i].start,
                                          s->ops[st][i].start + s->ops[st][i].duration, 0, 0};
    }
    enum gantt_scale sc = gantt_layout(it, n, w, per);
    for (int r = 0; r < rows; r++) {
        int st = r == rows - 1 ? s->p - 1 : r;
        canvas_printf(c, y + r, 0, ROLE_DIM, "%2d", st);
        for (int col = 0; col < w; col++)
            canvas_text(c, y + r, 3 + col, ROLE_DIM, ".");
    }
    for (int k = 0, i = 0; k < n; k++) {
        i = k > 0 && it[k - 1].row == it[k].row ? i + 1 : 0;
        int st = it[k].row == rows - 1 ? s->p - 1 : it[k].row;
        const struct sched_op *op = &s->ops[st][i];
        char cell[2] = {gantt_char(op->kind, op->micro, op->chunk, s->m, s->v), 0};
        for (int col = it[k].c0; col >= 0 && col <= it[k].c1; col++)
            canvas_text(c, y + it[k].row, 3 + col, op->kind == SCHED_OP_F ? ROLE_EXP : ROLE_MAN,
                        cell);
    }
    return sc;
}

static void par_draw(const void *state, struct ui_canvas *c)
{
    const struct par *p = state;
    int w = c->r.w, h = c->r.h, y = 0;

    /* knobs, three to a row when there is room */
    int per_row = w >= 78 ? 3 : w >= 44 ? 2 : 1, colw = w / per_row;
    /* the model on a row of its own (its name is long), then the other knobs */
    for (int k = 0; k < K_COUNT; k++) {
        int i = k == K_MODEL ? 0 : k - 1 + per_row;
        int row = i / per_row, x = (i % per_row) * colw;
        knobs_draw(&p->knobs, k, c, y + row, x, 9);
    }
    y += 1 + (K_COUNT - 1 + per_row - 1) / per_row;
    const struct settings *s = &p->s;
    char head[2][96]; /* the layout, and the attention the calculator counts (its default) */
    snprintf(head[0], sizeof head[0], "%d GPUs: dp %d x tp %d x pp %d%s, flash attention",
             s->dp * s->tp * s->pp, s->dp, s->tp, s->pp, s->tp > 1 ? " (+ seq. parallel)" : "");
    snprintf(head[1], sizeof head[1], "%d GPUs: dp %d x tp %d x pp %d%s, flash",
             s->dp * s->tp * s->pp, s->dp, s->tp, s->pp, s->tp > 1 ? " + sp" : "");
    canvas_text(c, y++, 0, ROLE_DIM, head[layout_text_width(head[0]) > c->r.w]);
    if (!p->ok) {
        canvas_wrap(c, y + 1, ROLE_ERROR, p->err, 0);
        return;
    }

    /* memory of one GPU per stage */
    double largest = 0;
    for (int i = 0; i < p->nshown; i++)
        largest = fmax(largest, p->stage[i].total);
    double scale = stackbar_scale(largest, s->capacity);
    /* rows: the bars (at least the first and the last stage), the chart's title, its rows
     * and its legend share what is left */
    int avail = h - y - 2;
    int gantt_rows = s->pp < 8 ? s->pp : 8;
    int bars = p->nshown;
    if (bars + gantt_rows > avail) {
        bars = avail - gantt_rows;
        if (bars < 2)
            bars = p->nshown < 2 ? p->nshown : 2;
        gantt_rows = avail - bars;
    }
    for (int i = 0; i < bars; i++) {
        const struct memory_result *r = &p->stage[i == bars - 1 ? p->nshown - 1 : i];
        int x = canvas_printf(c, y, 0, ROLE_DIM, "st%-2d", r->stage);
        int bw = w - x - 24;
        if (bw > 4)
            memui_draw_bar(c, y, x, bw, r, scale);
        x += bw > 4 ? bw + 1 : 0;
        char tot[32]; /* in the unit that suits it: a tiny model's MiB */
        units_format_bytes(tot, sizeof tot, r->total, UNITS_BINARY);
        x = canvas_printf(c, y, x, r->fits ? ROLE_TEXT : ROLE_ERROR, "%10s", tot);
        canvas_printf(c, y, x + 1, ROLE_DIM, "%d in fl.", r->in_flight);
        y++;
    }

    /* the schedule: none to draw on one stage */
    if (p->have_sched && s->pp == 1 && y < h) {
        char line[2][96];
        snprintf(line[0], sizeof line[0],
                 "one stage: no pipeline, no bubble; its %d micro-batch%s run one after the other",
                 s->m, s->m == 1 ? "" : "es");
        snprintf(line[1], sizeof line[1], "one stage: no pipeline, no bubble");
        canvas_text(c, y, 0, ROLE_DIM, line[layout_text_width(line[0]) > w]);
    } else if (p->have_sched && y + 2 < h) {
        const struct sched *sc = &p->sched;
        int v = chunks(s);
        char vm[16] = "";
        if (v > 1 || sched_splits(s->sched)) /* zb-h1: (p-1)(F+B-W) over m(F+B+W), in slots */
            snprintf(vm, sizeof vm, "(%dx%d)", v > 1 ? v : 3, s->m);
        else
            snprintf(vm, sizeof vm, "%d", s->m);
        canvas_printf(c, y++, 0, ROLE_TITLE, "%s bubble %d/%s: %.1f%% ideal, %.1f%% wall",
                      sched_name(s->sched), s->pp - 1, vm,
                      100 * sched_formula_over_ideal(s->sched, s->pp, s->m, v),
                      100 * sched_formula_over_wall(s->sched, s->pp, s->m, v));
        int rows = gantt_rows < h - y - 1 ? gantt_rows : h - y - 1;
        double per;
        enum gantt_scale g = draw_gantt(p, c, y, rows, &per);
        y += rows;
        if (y < h) { /* what the letters are, and the scale */
            char legend[64], says[96], slots[32];
            snprintf(slots, sizeof slots, "%.3g slot%s", per, per == 1 ? "" : "s");
            gantt_legend(legend, sizeof legend, s->m, v, sched_splits(s->sched), w < 60);
            gantt_scale_text(says, sizeof says, g, slots, w - 3, w < 60);
            int x = canvas_printf(c, y, 0, ROLE_DIM, "%s; %d slots", legend, sc->makespan);
            if (x + 2 + layout_text_width(says) <= w)
                canvas_printf(c, y, x, ROLE_DIM, "; %s", says);
            else if (g != GANTT_LINEAR && y + 1 < h)
                canvas_text(c, ++y, 0, ROLE_DIM, says);
        }
    }
}

static const struct panel_key par_keys[] = {
    {"j/k Up/Down", "select a knob", "knob"},
    {"h/l Left/Right", "change the selected knob", "change"},
    {"p P", "twice / half the pipeline stages", "stages"},
    {"m M", "twice / half the micro-batches", "micro"},
    {"d D", "twice / half the data-parallel GPUs", "dp"},
    {"t T", "twice / half the tensor-parallel GPUs", "tp"},
    {"s", "schedule: GPipe, 1F1B, interleaved (2 chunks a stage), ZB-H1 (B and W apart)",
     "schedule"},
    {"o", "next model", "model"},
    {NULL, NULL, NULL},
};

const struct panel_ops panel_parallel = {
    .name = "parallel",
    .title = "Parallel layouts",
    .about = "A dp x tp x pp layout: the memory of one GPU of each pipeline stage (weights, "
             "gradients, master weights, optimizer state, activations) against its capacity, "
             "and the pipeline schedule with its bubble, every operation drawn. GPipe and 1F1B "
             "have the same bubble; 1F1B's first stage holds p micro-batches instead of m; "
             "interleaving 2 model chunks a stage halves the bubble.",
    .init = par_init,
    .fini = par_fini,
    .on_key = knobs_on_key,
    .on_event = knobs_on_event,
    .set = knobs_on_set,
    .draw = par_draw,
    .keys = par_keys,
};
