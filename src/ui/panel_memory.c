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
#include "ui/eventlog.h"
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
    struct eventlog *log;
    int nmodels;
    struct model_shape models[MAX_MODELS];
    struct cluster_spec cluster;
    struct settings s, start;
    int sel;
    /* the results, one per ZeRO stage */
    bool ok;
    char err[ERROR_MAX];
    struct memory_result mem[4];
    struct traffic comm[4];
};

static void compute(struct lab *l)
{
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
            traffic_compute(&c, &cl, l->mem[z].params_gpu, l->mem[z].stage_layers, 0, 0,
                            &l->comm[z], &e) < 0) {
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

static int lab_init(void **state, const struct panel_env *env, struct error *e)
{
    struct lab *l = calloc(1, sizeof *l);
    if (!l)
        return error_set(e, ERR_NOMEM, "out of memory");
    l->log = env->log;
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
    compute(l);
    *state = l;
    return 0;
}

static void lab_fini(void *state)
{
    free(state);
}

/* ------------------------------------------------------------------ knobs */

static void knob_text(const struct lab *l, int k, char *name, size_t nn, char *val, size_t vn)
{
    const struct settings *s = &l->s;
    static const char *names[K_COUNT] = {"model",     "GPUs",    "ZeRO",       "precision",
                                         "bytes/par", "batch b", "checkpoint", "GPU mem"};
    snprintf(name, nn, "%s", names[k]);
    switch (k) {
    case K_MODEL: snprintf(val, vn, "%s", l->models[s->model].name); break;
    case K_GPUS: snprintf(val, vn, "%d", s->gpus); break;
    case K_ZERO: snprintf(val, vn, s->zero ? "stage %d" : "DDP (0)", s->zero); break;
    case K_PREC: snprintf(val, vn, "%s", memory_precision_name(s->prec)); break;
    case K_BYTES: snprintf(val, vn, "%s", s->bytes18 ? "18 (fp32 grads)" : "16 (ZeRO)"); break;
    case K_MB: snprintf(val, vn, "%d", s->micro_batch); break;
    case K_CKPT: activ_policy_name(val, vn, &s->ckpt); break;
    default: snprintf(val, vn, "%.0f GiB", s->capacity / GIB); break;
    }
}

static void change(struct lab *l, int k, int dir)
{
    struct settings *s = &l->s;
    char name[32], was[48], val[48];
    knob_text(l, k, name, sizeof name, was, sizeof was);
    switch (k) {
    case K_MODEL: s->model = (s->model + l->nmodels + dir) % l->nmodels; break;
    case K_GPUS:
        if (dir > 0 && s->gpus < 1024)
            s->gpus = s->gpus * 2 > 1024 ? 1024 : s->gpus * 2;
        else if (dir < 0 && s->gpus > 1)
            s->gpus /= 2;
        break;
    case K_ZERO: s->zero = (s->zero + 4 + dir) % 4; break;
    case K_PREC: s->prec = (enum calc_precision)((s->prec + 3 + dir) % 3); break;
    case K_BYTES: s->bytes18 = !s->bytes18; break;
    case K_MB:
        if (dir > 0 && s->micro_batch < 64)
            s->micro_batch *= 2;
        else if (dir < 0 && s->micro_batch > 1)
            s->micro_batch /= 2;
        break;
    case K_CKPT: memui_step_ckpt(&s->ckpt, dir); break;
    default: memui_step_capacity(&s->capacity, dir); break;
    }
    knob_text(l, k, name, sizeof name, val, sizeof val);
    compute(l);
    memui_log_knob(l->log, "lab", name, was, val);
}

static int lab_on_key(void *state, int key)
{
    struct lab *l = state;
    int dir;
    if (memui_knob_key(key, &l->sel, K_COUNT, &dir)) {
        if (dir)
            change(l, l->sel, dir);
        return PANEL_HANDLED | PANEL_REDRAW;
    }
    switch (key) {
    case 'z': change(l, K_ZERO, +1); break;
    case 'm': change(l, K_MODEL, +1); break;
    case 'g': change(l, K_GPUS, +1); break;
    case 'f': change(l, K_GPUS, -1); break;
    case 'c': change(l, K_CKPT, +1); break;
    case 'b': change(l, K_BYTES, +1); break;
    default: return 0;
    }
    return PANEL_HANDLED | PANEL_REDRAW;
}

static int lab_on_event(void *state, const struct panel_event *ev)
{
    struct lab *l = state;
    if (ev->kind != PANEL_RESET)
        return 0;
    l->s = l->start;
    compute(l);
    eventlog_add(l->log, "lab: reset");
    return PANEL_REDRAW;
}

static int lab_set(void *state, const char *name, const char *value, struct error *e)
{
    struct lab *l = state;
    struct settings s = l->s;
    long long v;
    int rc = 0;
    if (!strcmp(name, "model")) {
        int found = memui_find_model(l->models, l->nmodels, value);
        if (found < 0)
            return error_set(e, ERR_INVAL, "the lab has no model '%s'", value);
        s.model = found;
    } else if (!strcmp(name, "gpus")) {
        if ((rc = units_parse_int(value, 1, 1024, &v, e)) == 0)
            s.gpus = (int)v;
    } else if (!strcmp(name, "zero")) {
        if ((rc = units_parse_int(value, 0, 3, &v, e)) == 0)
            s.zero = (int)v;
    } else if (!strcmp(name, "micro_batch")) {
        if ((rc = units_parse_int(value, 1, 64, &v, e)) == 0)
            s.micro_batch = (int)v;
    } else if (!strcmp(name, "bytes")) {
        if ((rc = units_parse_int(value, 16, 18, &v, e)) == 0 && v != 16 && v != 18)
            rc = error_set(e, ERR_INVAL, "bytes is 16 or 18, not %s", value);
        s.bytes18 = v == 18;
    } else if (!strcmp(name, "precision")) {
        rc = memory_parse_precision(value, &s.prec, e);
    } else if (!strcmp(name, "checkpoint")) {
        rc = activ_parse_policy(value, &s.ckpt, e);
    } else if (!strcmp(name, "gpu_mem")) {
        rc = memui_parse_capacity(value, &s.capacity, e);
    } else {
        return error_set(e, ERR_INVAL,
                         "the memory lab knows model, gpus, zero, precision, bytes, micro_batch, "
                         "checkpoint and gpu_mem, not '%s'",
                         name);
    }
    if (rc < 0) {
        error_prefix(e, "%s", name);
        return ERR_INVAL;
    }
    l->s = l->start = s;
    compute(l);
    return 0;
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
    char name[32], val[48], b1[32], b2[32];

    /* the knobs: two columns when wide enough */
    bool two = w >= 56;
    int colw = two ? w / 2 : w;
    for (int k = 0; k < K_COUNT; k++) {
        int row = two ? k / 2 : k, x = two ? (k % 2) * colw : 0;
        knob_text(l, k, name, sizeof name, val, sizeof val);
        memui_draw_knob(c, y + row, x, 10, name, val, k == l->sel);
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

const struct panel_ops panel_memory = {
    .name = "memory",
    .title = "Data parallelism and ZeRO memory",
    .about = LAB_ABOUT,
    .init = lab_init,
    .fini = lab_fini,
    .on_key = lab_on_key,
    .on_event = lab_on_event,
    .set = lab_set,
    .draw = lab_draw,
    .keys = lab_keys,
};

/* Lesson 5 shows the same lab under its own name. */
const struct panel_ops panel_zero = {
    .name = "zero",
    .title = "ZeRO stages",
    .about = LAB_ABOUT,
    .init = lab_init,
    .fini = lab_fini,
    .on_key = lab_on_key,
    .on_event = lab_on_event,
    .set = lab_set,
    .draw = lab_draw,
    .keys = lab_keys,
};
