/* The Lab ("Data parallelism and ZeRO memory") and lesson 5's panel: per-GPU memory of DDP and
 * ZeRO stages 1-3 side by side, as stacked bars (weights, gradients, master weights, optimizer
 * state, activations) against the GPU's capacity, the overflow in the error colour with its
 * amount, and the communication each stage sends per GPU per step. Every number comes from
 * src/calc (memory_compute, traffic_compute), recomputed on each key: the same numbers as
 * "scalelab memory".
 *
 * Knobs (Up/Down select, Left/Right change): model preset, GPUs (data-parallel, 1-1024),
 * ZeRO stage (the highlighted row and the detail below), precision, the 16/18 bytes
 * convention, micro-batch, checkpoint policy, GPU memory, sequence length. Figures in the unit
 * that suits the largest (B, KiB, MiB or GiB). Lesson settings: model=NAME, gpus=N, zero=0-3,
 * precision=fp32|bf16|fp16, bytes=16|18, micro_batch=B,
 * checkpoint=none|selective|full|sqrt|every:K, gpu_mem=SIZE, seq=S. */
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
#include "calc/params.h"
#include "calc/preset.h"
#include "calc/traffic.h"
#include "sim/spec.h"
#include "ui/draw.h"
#include "ui/knobs.h"
#include "ui/memui.h"
#include "ui/panel.h"
#include "ui/stackbar.h"

#define GIB        MEMUI_GIB
#define MAX_MODELS 8

enum { K_MODEL, K_GPUS, K_ZERO, K_PREC, K_BYTES, K_MB, K_CKPT, K_MEM, K_SEQ, K_COUNT };

struct settings {
    int model, gpus, zero, micro_batch, seq;
    enum fp_format prec;
    bool bytes18;
    struct ckpt_policy ckpt;
    double capacity;
};

struct lab {
    struct knobs knobs; /* first: knobs_on_key and the others take the state for it */
    int nmodels;
    struct model_shape models[MAX_MODELS];
    struct cluster_spec cluster;
    struct settings s, start;
    /* the results, one per ZeRO stage */
    bool ok;
    char err[ERROR_MAX];
    struct memory_result mem[4];
    struct traffic comm[4];
};

static void compute(void *state)
{
    struct lab *l = state;
    const struct settings *s = &l->s;
    struct cluster_spec cl = l->cluster;
    cl.nodes = (s->gpus + cl.gpus_per_node - 1) / cl.gpus_per_node;
    struct error e = {0};
    l->ok = true;
    l->err[0] = '\0';
    for (int z = 0; z < 4 && l->ok; z++) {
        const struct model_shape *m = &l->models[s->model];
        struct memory_config c = {.model = m,
                                  .precision = s->prec,
                                  .optimizer = OPT_ADAMW,
                                  .grad_fp32 = s->bytes18,
                                  .dp = s->gpus,
                                  .tp = 1,
                                  .pp = 1,
                                  .zero = z,
                                  .micro_batch = s->micro_batch,
                                  .seq = s->seq,
                                  .micro_batches = 1,
                                  .schedule = SCHED_1F1B,
                                  .ckpt = s->ckpt,
                                  .capacity = s->capacity};
        if (memory_compute(&c, &l->mem[z], &e) < 0 ||
            traffic_compute(&c, &cl, l->mem[z].stage, l->mem[z].params_gpu, l->mem[z].stage_layers,
                            0, 0, &l->comm[z], &e) < 0) {
            l->ok = false;
            snprintf(l->err, sizeof l->err, "%s", e.msg);
        }
    }
}

static void defaults(struct settings *s)
{
    *s = (struct settings){.model = 0,
                           .gpus = 8,
                           .zero = 0,
                           .micro_batch = 1,
                           .prec = FP_BF16,
                           .ckpt = {CKPT_FULL, 1},
                           .capacity = 80 * GIB,
                           .seq = 2048}; /* synthetic-7b's; a model's own when it changes */
}

/* ------------------------------------------------------------------ knobs */

static void zero_text(const void *f, char *out, size_t n)
{
    int z = *(const int *)f;
    snprintf(out, n, z ? "stage %d" : "DDP (0)", z);
}

static void prec_text(const void *f, char *out, size_t n)
{
    snprintf(out, n, "%s", fp_info(*(const enum fp_format *)f)->name);
}

static void prec_step(void *f, int dir)
{
    enum fp_format *p = f;
    *p = fp_precision_step(*p, dir);
}

static int prec_parse(const char *value, void *f, struct error *e)
{
    enum fp_format p;
    int rc = fp_parse_precision(value, &p, e);
    if (rc == 0)
        *(enum fp_format *)f = p;
    return rc;
}

static void bytes_text(const void *f, char *out, size_t n)
{
    snprintf(out, n, "%s", *(const bool *)f ? "18 (fp32 grad)" : "16 (ZeRO)");
}

static void bytes_step(void *f, int dir)
{
    (void)dir;
    *(bool *)f = !*(bool *)f;
}

static int bytes_parse(const char *value, void *f, struct error *e)
{
    long long v;
    int rc = units_parse_int(value, 16, 18, &v, e);
    if (rc == 0 && v != 16 && v != 18)
        rc = error_set(e, ERR_INVAL, "bytes is 16 or 18, not %s", value);
    if (rc == 0)
        *(bool *)f = v == 18;
    return rc;
}

/* a row of the table below: the knob's name on screen, its setting, its kind, its field */
#define ROW(F, NAME, SETTING, KIND)                                                                \
    .name = NAME, .setting = SETTING, .kind = KIND, .offset = offsetof(struct settings, F)

static const struct knob lab_knobs[K_COUNT] = {
    [K_MODEL] = {ROW(model, "model", "model", KNOB_MODEL)},
    [K_GPUS] = {ROW(gpus, "GPUs", "gpus", KNOB_TWICE), .min = 1, .max = 1024},
    [K_ZERO] = {ROW(zero, "ZeRO", "zero", KNOB_ROUND), .min = 0, .max = 3, .text = zero_text},
    [K_PREC] = {ROW(prec, "precision", "precision", KNOB_OWN), .brief = "prec", .text = prec_text,
                .step = prec_step, .parse = prec_parse},
    [K_BYTES] = {ROW(bytes18, "bytes/par", "bytes", KNOB_OWN), .brief = "bytes", .text = bytes_text,
                 .step = bytes_step, .parse = bytes_parse},
    [K_MB] = {ROW(micro_batch, "batch b", "micro_batch", KNOB_TWICE), .brief = "batch", .min = 1,
              .max = 64},
    [K_CKPT] = {ROW(ckpt, "checkpoint", "checkpoint", KNOB_CKPT), .brief = "ckpt"},
    [K_MEM] = {ROW(capacity, "GPU mem", "gpu_mem", KNOB_CAPACITY), .brief = "mem"},
    [K_SEQ] = {ROW(seq, "seq", "seq", KNOB_TWICE), .min = 16, .max = 131072},
};

/* the letters the Lab's run mode takes for the same things (z Z g f p m), and its own */
static const struct knob_letter lab_letters[] = {
    {'z', K_ZERO, +1}, {'Z', K_ZERO, -1}, {'m', K_MODEL, +1}, {'g', K_GPUS, +1}, {'f', K_GPUS, -1},
    {'p', K_PREC, +1}, {'c', K_CKPT, +1}, {'b', K_BYTES, +1}, {0, 0, 0},
};

static const struct knobs_spec lab_spec = {
    .knobs = lab_knobs,
    .count = K_COUNT,
    .letters = lab_letters,
    .who = "lab",
    .title = "the memory lab",
    .compute = compute,
    .seq = K_SEQ,
};

static int lab_init(void **state, const struct panel_env *env, struct error *e)
{
    struct lab *l = calloc(1, sizeof *l);
    if (!l)
        return error_set(e, ERR_NOMEM, "out of memory");
    l->nmodels = memui_load_models(l->models, MAX_MODELS);
    int rc = preset_load_cluster(PRESET_CLUSTER, &l->cluster, e);
    if (rc == 0 && l->nmodels == 0)
        rc = error_set(e, ERR_IO, "no model presets found under assets/models");
    if (rc < 0) {
        free(l);
        return rc;
    }
    defaults(&l->s);
    l->start = l->s;
    knobs_init(&l->knobs, &lab_spec, &l->s, &l->start, sizeof l->s, env->log);
    l->knobs.models = l->models;
    l->knobs.nmodels = l->nmodels;
    compute(l);
    *state = l;
    return 0;
}

static void lab_fini(void *state)
{
    free(state);
}

/* ------------------------------------------------------------------ drawing */

/* The traffic formula without a ratio to DDP written into it ("(1.5x DDP)"): the panel
 * prints the ratio it computes from the bytes instead, which holds for every setting. */
static void comm_formula(char *out, size_t n, const char *formula)
{
    snprintf(out, n, "%s", formula);
    char *end = strstr(out, "x DDP)");
    if (!end)
        return;
    char *open = end;
    while (open > out && *open != '(')
        open--;
    if (open > out && open[-1] == ' ')
        open--;
    memmove(open, end + 6, strlen(end + 6) + 1);
}

/* v with two decimals in 7 columns, fewer when it is larger (the narrow rows). */
static char *figure(char *buf, size_t n, double v)
{
    snprintf(buf, n, v < 9999.995 ? "%.2f" : v < 99999.95 ? "%.1f" : "%.0f", v);
    return buf;
}

/* The legend and a bar per ZeRO stage on one scale, each with its total in unit (uf bytes), its
 * verdict against the GPU and its traffic, from row y; the next row. */
static int draw_stages(const struct lab *l, struct ui_canvas *c, int y, int knob_rows,
                       double largest, const char *unit, double uf)
{
    const struct ui_glyphs *g = theme_glyphs();
    int w = c->r.w, h = c->r.h;
    char b2[32];
    /* legend (a blank line before it when there are rows to spare) */
    if (h >= knob_rows + 2 + 8 + 1 + 3)
        y++;
    int x = 0;
    bool narrow = w < 70;
    static const char *part_long[MEMUI_PARTS] = {"weights",   "grads",  "master",
                                                 "optimizer", "activ.", "buffers"};
    static const char *part_short[MEMUI_PARTS] = {"wt", "grad", "mst", "opt", "act", "buf"};
    const char *const *part_name = narrow ? part_short : part_long;
    for (int i = 0; i < MEMUI_PARTS && x < w; i++) {
        char cell[2] = {memui_part_letter[i], 0};
        x = canvas_text(c, y, x, memui_part_role[i], theme_color() ? g->bar : cell);
        x = canvas_printf(c, y, x + 1, ROLE_DIM, "%s ", part_name[i]);
    }
    /* one bar per stage, on one scale */
    double scale = stackbar_scale(largest, l->s.capacity);
    if (l->s.capacity <= scale) {
        x = canvas_text(c, y, x, ROLE_WARN, g->v);
        canvas_printf(c, y++, x + 1, ROLE_DIM, "%.0f GiB", l->s.capacity / GIB);
    } else { /* the capacity's mark lies beyond the bars */
        canvas_printf(c, y++, x, ROLE_DIM, narrow ? ">%.0f GiB" : "GPU %.0f GiB: beyond",
                      l->s.capacity / GIB);
    }
    static const char *label[4] = {"DDP", "ZeRO-1", "ZeRO-2", "ZeRO-3"};
    for (int z = 0; z < 4 && y + 1 < h; z++) {
        const struct memory_result *r = &l->mem[z];
        bool sel = z == l->s.zero;
        if (sel)
            canvas_text(c, y, 0, ROLE_SELECTED, g->sel);
        x = canvas_printf(c, y, 2, sel ? ROLE_SELECTED : ROLE_TITLE, "%-7s", label[z]);
        units_format_bytes(b2, sizeof b2, l->comm[z].bytes, UNITS_BINARY);
        if (w < 60) { /* 80x24: fewer words and digits, and the traffic still on the row */
            char f1[16], f2[16];
            x = canvas_printf(c, y, x, ROLE_TEXT, "%7s", figure(f1, sizeof f1, r->total / uf));
            if (r->fits)
                x = canvas_printf(c, y, x + 1, ROLE_GOOD, "fits");
            else
                x = canvas_printf(c, y, x + 1, ROLE_ERROR, "over %s",
                                  figure(f2, sizeof f2, r->over / uf));
            canvas_printf(c, y, x + 2, ROLE_DIM, "comm %s", b2);
        } else {
            x = canvas_printf(c, y, x, ROLE_TEXT, "%8.2f %s", r->total / uf, unit);
            if (r->fits)
                x = canvas_printf(c, y, x + 1, ROLE_GOOD, "fits");
            else
                x = canvas_printf(c, y, x + 1, ROLE_ERROR, "over by %.2f %s", r->over / uf, unit);
            int cx = x + 2 > 40 ? x + 2 : 40;
            if (cx + 16 + (int)strlen(b2) <= w)
                canvas_printf(c, y, cx, ROLE_DIM, "comm %s/step", b2);
        }
        memui_draw_bar(c, y + 1, 2, w - 3, r, scale);
        y += 2;
    }
    return y;
}

/* The selected stage in detail from row y: its parts, its traffic and formula, one layer's
 * activations; wrapped where narrow (80x24), what does not fit left to a larger window. */
static void draw_detail(const struct lab *l, struct ui_canvas *c, int y)
{
    static const char *label[4] = {"DDP", "ZeRO-1", "ZeRO-2", "ZeRO-3"};
    int w = c->r.w, h = c->r.h;
    char b1[32], b2[32];
    const struct memory_result *r = &l->mem[l->s.zero];
    const char *unit =
        units_auto_unit(r->total, UNITS_BINARY); /* the stage's own, as its figures go */
    if (units_factor(unit) > GIB)
        unit = "GiB";
    double uf = units_factor(unit);
    if (y + 1 < h && w >= 56) {
        y++;
        canvas_printf(c, y++, 0, ROLE_TEXT, "%s: W %.2f  G %.2f  M %.2f  O %.2f  A %.2f  C %.2f %s",
                      label[l->s.zero], r->states.weights / uf, r->states.gradients / uf,
                      r->states.master / uf, r->states.optimizer / uf, r->activations / uf,
                      r->comm / uf, unit);
    } else if (y < h) {
        canvas_printf(c, y++, 0, ROLE_TEXT, "W %.1f G %.1f M %.1f O %.1f A %.1f C %.1f %s",
                      r->states.weights / uf, r->states.gradients / uf, r->states.master / uf,
                      r->states.optimizer / uf, r->activations / uf, r->comm / uf, unit);
    }
    char line[2][512];
    units_format_bytes(b2, sizeof b2, l->comm[l->s.zero].bytes, UNITS_BINARY);
    char f[sizeof l->comm[0].dp.formula], ratio[32] = "";
    comm_formula(f, sizeof f, l->comm[l->s.zero].dp.formula);
    if (l->s.zero > 0 && l->comm[0].bytes > 0)
        snprintf(ratio, sizeof ratio, " (%.3gx DDP)", l->comm[l->s.zero].bytes / l->comm[0].bytes);
    snprintf(line[0], sizeof line[0], "comm %s/step%s: %s", b2, ratio, f);
    /* one layer's list, the figure a question may ask for, then its formula */
    snprintf(line[1], sizeof line[1], "activations/layer, flash attention: %s = %s",
             units_format_bytes(b1, sizeof b1, r->layer.total, UNITS_BINARY), r->layer.formula);
    for (int i = 0; i < 2 && y < h; i++) {
        struct ui_canvas rest = canvas_make(c->win, (struct ui_rect){c->r.y + y, c->r.x, h - y, w});
        y += canvas_wrap(&rest, 0, ROLE_DIM, line[i], 0);
    }
}

static void lab_draw(const void *state, struct ui_canvas *c)
{
    const struct lab *l = state;
    int w = c->r.w, y = 0;
    char b1[32];

    /* the knobs in two columns, with their brief names when narrow (80x24): the model, whose
     * name is long, on a row of its own there */
    bool brief = w < 56;
    int colw = w / 2, first = brief; /* knobs before the two columns */
    if (brief)
        knobs_draw(&l->knobs, K_MODEL, c, y, 0, 5);
    for (int k = first; k < K_COUNT; k++) {
        int i = k - first;
        knobs_draw(&l->knobs, k, c, y + first + i / 2, (i % 2) * (colw - brief), brief ? 5 : 10);
    }
    int knob_rows = first + (K_COUNT - first + 1) / 2;
    y += knob_rows;
    const struct model_shape *m = &l->models[l->s.model];
    units_format_grouped(b1, sizeof b1, (unsigned long long)params_total(m));
    /* the figures in the unit that suits the largest (a tiny model's MiB, not 0.00 GiB),
     * GiB at most; narrow rows leave it out, so it is said here */
    double largest = 0;
    for (int z = 0; z < 4; z++)
        largest = fmax(largest, l->mem[z].total);
    const char *unit = units_auto_unit(largest, UNITS_BINARY);
    if (units_factor(unit) > GIB) /* GPUs hold GiB: 1034.47 GiB reads better than 1.01 TiB */
        unit = "GiB";
    double uf = units_factor(unit);
    canvas_printf(c, y++, 0, ROLE_DIM,
                  w < 60 ? "Ψ = %s, N_d = %d, AdamW, in %s" : "Ψ = %s, N_d = %d, AdamW", b1,
                  l->s.gpus, unit);
    if (!l->ok) {
        canvas_wrap(c, y + 1, ROLE_ERROR, l->err, 0);
        return;
    }

    y = draw_stages(l, c, y, knob_rows, largest, unit, uf);
    draw_detail(l, c, y);
}

static const struct panel_key lab_keys[] = {
    {"j/k Up/Down", "select a knob", "knob"},
    {"h/l Left/Right", "change the selected knob", "change"},
    {"z Z", "next / previous ZeRO stage", "ZeRO"},
    {"g f", "twice / half as many GPUs (1 to 1024)", "GPUs"},
    {"p", "precision: bf16, fp16, fp32", "precision"},
    {"m", "next model", "model"},
    {"c", "next checkpoint policy", NULL},
    {"b", "16 or 18 bytes per parameter", NULL},
    {NULL, NULL, NULL},
};

#define LAB_ABOUT                                                                                  \
    "Per-GPU memory of DDP and ZeRO stages 1-3 side by side: weights, gradients, fp32 master "     \
    "weights, optimizer state and activations, stacked against the GPU's memory (the mark); "      \
    "what overflows is drawn in the error colour. Communication is per GPU per step. The "         \
    "numbers are those of 'scalelab memory'."

#define LAB_PANEL(NAME, TITLE)                                                                     \
    {                                                                                              \
        .name = NAME, .title = TITLE, .about = LAB_ABOUT, .init = lab_init, .fini = lab_fini,      \
        .on_key = knobs_on_key, .on_event = knobs_on_event, .set = knobs_on_set, .draw = lab_draw, \
        .keys = lab_keys,                                                                          \
    }

const struct panel_ops panel_memory = LAB_PANEL("memory", "Data parallelism and ZeRO memory");

/* Lesson 5 shows the same lab under its own name. */
const struct panel_ops panel_zero = LAB_PANEL("zero", "ZeRO stages");
