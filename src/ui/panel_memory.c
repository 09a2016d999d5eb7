/* The Lab ("Data parallelism and ZeRO memory") and lesson 5's panel: per-GPU memory of DDP and
 * ZeRO stages 1-3 side by side, as stacked bars (weights, gradients, master weights, optimizer
 * state, activations) against the GPU's capacity, the overflow in the error colour with its
 * amount, and the communication each stage sends per GPU per step. Every number comes from
 * src/calc (memory_compute, traffic_compute), recomputed on each key: the same numbers as
 * "scalelab memory".
 *
 * Knobs (Up/Down select, Left/Right change): model preset, GPUs (data-parallel, 1-1024),
 * ZeRO stage (the highlighted row and the detail below), precision, the 16/18 bytes
 * convention, micro-batch, checkpoint policy, GPU memory. Lesson settings: model=NAME,
 * gpus=N, zero=0-3, precision=fp32|bf16|fp16, bytes=16|18, micro_batch=B,
 * checkpoint=none|selective|full|sqrt|every:K, gpu_mem=SIZE. */
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

enum { K_MODEL, K_GPUS, K_ZERO, K_PREC, K_BYTES, K_MB, K_CKPT, K_MEM, K_COUNT };

struct settings {
    int model, gpus, zero, micro_batch;
    enum calc_precision prec;
    bool bytes18;
    struct activ_policy ckpt;
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
                                  .seq = m->seq,
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
                           .prec = PREC_BF16,
                           .ckpt = {ACTIV_FULL, 1},
                           .capacity = 80 * GIB};
}

/* ------------------------------------------------------------------ knobs */

static void zero_text(const void *f, char *out, size_t n)
{
    int z = *(const int *)f;
    snprintf(out, n, z ? "stage %d" : "DDP (0)", z);
}

static void prec_text(const void *f, char *out, size_t n)
{
    snprintf(out, n, "%s", memory_precision_name(*(const enum calc_precision *)f));
}

static void prec_step(void *f, int dir)
{
    enum calc_precision *p = f;
    *p = (enum calc_precision)((*p + 3 + dir) % 3);
}

static int prec_parse(const char *value, void *f, struct error *e)
{
    enum calc_precision p;
    int rc = memory_parse_precision(value, &p, e);
    if (rc == 0)
        *(enum calc_precision *)f = p;
    return rc;
}

static void bytes_text(const void *f, char *out, size_t n)
{
    snprintf(out, n, "%s", *(const bool *)f ? "18 (fp32 grads)" : "16 (ZeRO)");
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
    [K_PREC] = {ROW(prec, "precision", "precision", KNOB_OWN), .text = prec_text, .step = prec_step,
                .parse = prec_parse},
    [K_BYTES] = {ROW(bytes18, "bytes/par", "bytes", KNOB_OWN), .text = bytes_text,
                 .step = bytes_step, .parse = bytes_parse},
    [K_MB] = {ROW(micro_batch, "batch b", "micro_batch", KNOB_TWICE), .min = 1, .max = 64},
    [K_CKPT] = {ROW(ckpt, "checkpoint", "checkpoint", KNOB_CKPT)},
    [K_MEM] = {ROW(capacity, "GPU mem", "gpu_mem", KNOB_CAPACITY)},
};

static const struct knob_letter lab_letters[] = {
    {'z', K_ZERO, +1}, {'m', K_MODEL, +1}, {'g', K_GPUS, +1}, {'f', K_GPUS, -1},
    {'c', K_CKPT, +1}, {'b', K_BYTES, +1}, {0, 0, 0},
};

static const struct knobs_spec lab_spec = {
    .knobs = lab_knobs,
    .count = K_COUNT,
    .letters = lab_letters,
    .who = "lab",
    .title = "the memory lab",
    .compute = compute,
};

static int lab_init(void **state, const struct panel_env *env, struct error *e)
{
    struct lab *l = calloc(1, sizeof *l);
    if (!l)
        return error_set(e, ERR_NOMEM, "out of memory");
    l->nmodels = memui_load_models(l->models, MAX_MODELS);
    int rc = preset_load_cluster("h100-80gb", &l->cluster, e);
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

static void lab_draw(const void *state, struct ui_canvas *c)
{
    const struct lab *l = state;
    const struct ui_glyphs *g = theme_glyphs();
    int w = c->r.w, h = c->r.h, y = 0;
    char b1[32], b2[32];

    /* the knobs: two columns when wide enough */
    bool two = w >= 56;
    int colw = two ? w / 2 : w;
    for (int k = 0; k < K_COUNT; k++) {
        int row = two ? k / 2 : k, x = two ? (k % 2) * colw : 0;
        knobs_draw(&l->knobs, k, c, y + row, x, 10);
    }
    y += two ? (K_COUNT + 1) / 2 : K_COUNT;
    const struct model_shape *m = &l->models[l->s.model];
    units_format_grouped(b1, sizeof b1, (unsigned long long)params_total(m));
    canvas_printf(c, y++, 0, ROLE_DIM, "Ψ = %s, N_d = %d, AdamW", b1, l->s.gpus);
    if (!l->ok) {
        canvas_wrap(c, y + 1, ROLE_ERROR, l->err, 0);
        return;
    }

    /* legend (a blank line before it when there are rows to spare) */
    int knob_rows = two ? (K_COUNT + 1) / 2 : K_COUNT;
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
    x = canvas_text(c, y, x, ROLE_WARN, g->v);
    canvas_printf(c, y++, x + 1, ROLE_DIM, "%.0f GiB", l->s.capacity / GIB);

    /* one bar per stage, on one scale */
    double largest = 0;
    for (int z = 0; z < 4; z++)
        largest = fmax(largest, l->mem[z].total);
    double scale = stackbar_scale(largest, l->s.capacity);
    static const char *label[4] = {"DDP", "ZeRO-1", "ZeRO-2", "ZeRO-3"};
    for (int z = 0; z < 4 && y + 1 < h; z++) {
        const struct memory_result *r = &l->mem[z];
        bool sel = z == l->s.zero;
        if (sel)
            canvas_text(c, y, 0, ROLE_SELECTED, g->sel);
        x = canvas_printf(c, y, 2, sel ? ROLE_SELECTED : ROLE_TITLE, "%-7s", label[z]);
        units_format_bytes_in(b2, sizeof b2, l->comm[z].bytes, "GiB");
        if (w < 60) { /* 80x24: fewer words, and the traffic still on the row (GiB) */
            x = canvas_printf(c, y, x, ROLE_TEXT, "%7.2f", r->total / GIB);
            if (r->fits)
                x = canvas_printf(c, y, x + 1, ROLE_GOOD, "fits");
            else
                x = canvas_printf(c, y, x + 1, ROLE_ERROR, "over %.2f", r->over / GIB);
            canvas_printf(c, y, x + 2, ROLE_DIM, "comm %s", b2);
        } else {
            x = canvas_printf(c, y, x, ROLE_TEXT, "%8.2f GiB", r->total / GIB);
            if (r->fits)
                x = canvas_printf(c, y, x + 1, ROLE_GOOD, "fits");
            else
                x = canvas_printf(c, y, x + 1, ROLE_ERROR, "over by %.2f GiB", r->over / GIB);
            int cx = x + 2 > 40 ? x + 2 : 40;
            if (cx + 16 + (int)strlen(b2) <= w)
                canvas_printf(c, y, cx, ROLE_DIM, "comm %s/step", b2);
        }
        memui_draw_bar(c, y + 1, 2, w - 3, r, scale);
        y += 2;
    }

    /* the selected stage in detail */
    const struct memory_result *r = &l->mem[l->s.zero];
    if (y + 1 < h) {
        y++;
        canvas_printf(c, y++, 0, ROLE_TEXT,
                      "%s: W %.2f  G %.2f  M %.2f  O %.2f  A %.2f  C %.2f GiB", label[l->s.zero],
                      r->states.weights / GIB, r->states.gradients / GIB, r->states.master / GIB,
                      r->states.optimizer / GIB, r->activations / GIB, r->comm / GIB);
    }
    if (y < h) {
        units_format_bytes_in(b2, sizeof b2, l->comm[l->s.zero].bytes, "GiB");
        char f[sizeof l->comm[0].dp.formula], ratio[32] = "";
        comm_formula(f, sizeof f, l->comm[l->s.zero].dp.formula);
        if (l->s.zero > 0 && l->comm[0].bytes > 0)
            snprintf(ratio, sizeof ratio, " (%.3gx DDP)",
                     l->comm[l->s.zero].bytes / l->comm[0].bytes);
        canvas_printf(c, y++, 0, ROLE_DIM, "comm %s/step%s: %s", b2, ratio, f);
    }
    if (y < h) /* one layer's list, the figure a question may ask for, then its formula */
        canvas_printf(c, y++, 0, ROLE_DIM, "activations/layer: %.2f GiB = %s", r->layer.total / GIB,
                      r->layer.formula);
}

static const struct panel_key lab_keys[] = {
    {"Up/Down j/k", "select a knob", "knob"},
    {"Left/Right h/l", "change the selected knob", "change"},
    {"z", "next ZeRO stage", NULL},
    {"m", "next model", NULL},
    {"g f", "twice / half as many GPUs", NULL},
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
