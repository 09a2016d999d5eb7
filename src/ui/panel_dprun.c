/* The Lab's run mode: a real data-parallel training run of the tiny (or small) GPT on the
 * Lab's thread-GPUs, DDP or ZeRO stage 1-3, beside the calculator's prediction.
 *
 * The run is the engine of `scalelab train --gpus N --zero S` (src/par/run.h), paced by the
 * screen as lesson 4's run panel's is (ui/runpace.h): each tick lets it start a step or two
 * beyond the one shown and takes the records of the steps done, never waiting for a step. A
 * tiny step lasts about a millisecond of host time, too quick to see, so every GPU's memory and
 * send events are recorded as they happen (on the GPUs' threads, into a ring under a lock of
 * its own: ui/runfeed.h) and each step is replayed over about a second of the screen's time (at
 * 1x), in simulated-time order (clock_moments says how this panel's clock runs): the
 * activations rise in the forward pass and fall in the backward, ZeRO-3's gathered layers
 * (communication) appear and vanish layer by layer, ZeRO-2's buckets fill and drain, and each
 * GPU says whether it is reduce-scattering or all-gathering. At the end of a step each bar
 * holds its GPU's ledger exactly.
 *
 * Drawn: one stacked bar per GPU from its own ledger (weights, gradients, master weights,
 * optimizer state, activations, communication buffers) on one scale for every stage, so
 * the bars shrink stage by stage; the bytes each GPU sent in the step shown; GPU 0's ledger
 * peaks beside the calculator's figures for the same layout (src/calc, as `scalelab train`
 * predicts them), with a verdict over every GPU; the loss curve; and, one key away,
 * synthetic-7b's calculator figures for the same GPUs, stage and precision.
 *
 * Keys (those of the Lab's calculator for the same things): z / Z next / previous ZeRO stage,
 * g / f twice / half the GPUs (2 to 16; at a bound the status line says so), p precision
 * (bf16, fp16, fp32), m model (tiny, small), s synthetic-7b's figures, w the last step's
 * timeline and synthetic-7b's step at each stage (ui/timeline.h); each but s and w restarts the
 * run. The run is timed as synthetic-7b where the engine can (runpace_time), and says so. Settings:
 * model=tiny|small gpus=N zero=S precision=P batch=B (the global batch, raised to a multiple of the
 * GPUs). */
#include "config.h"

#include <curses.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "base/units.h"
#include "calc/memory.h"
#include "calc/preset.h"
#include "calc/traffic.h"
#include "par/predict.h"
#include "par/run.h"
#include "par/timeas.h"
#include "sim/event.h"
#include "sim/ledger.h"
#include "ui/draw.h"
#include "ui/eventlog.h"
#include "ui/memui.h"
#include "ui/panel.h"
#include "ui/plot.h"
#include "ui/runfeed.h"
#include "ui/runpace.h"

#define MAX_GPUS 16
#define HIST     2048 /* losses kept */
#define REPLAY_S 1.0  /* wall seconds one step's replay takes at 1x */

enum { PH_NONE, PH_RS, PH_AG };

/* The replay's clock: a moment of the step (a simulated time at which memory changed) and
 * the share of the replay that has gone by when it comes. */
struct moment {
    double t, at;
};

struct settings {
    int model; /* 0 tiny, 1 small */
    int gpus, zero, batch;
    enum fp_format prec;
};

/* The calculator's figures for one layout. */
struct figures {
    bool ok;
    struct memory_result m;
    struct traffic t;
};

struct dprun {
    struct settings s, start;
    struct model_shape big;
    bool have_big;
    int batch;           /* the run's global batch: a multiple of the GPUs */
    struct runpace pace; /* the run, its models and GPUs, the step replayed, the ledgers */
    /* the calculator: this layout, every stage (for the bars' scale), the 7B */
    struct figures pred, big_pred;
    struct prediction calc; /* the calculator's work space */
    double scale;
    bool show_big, show_time;
    /* the calculator's synthetic-7b in the same layout at each ZeRO stage: its memory per GPU
     * and its step (timeas_predict), or why not */
    struct plan_layout as_stage[4];
    bool as_ok[4];
    /* the step being replayed: its clock */
    struct moment *mom;
    size_t nmom, capmom;
    /* each GPU's current send */
    unsigned char phase[MAX_GPUS];
    double phase_until[MAX_GPUS];
    /* the losses of the steps shown */
    float loss[HIST];
    bool said_verdict;
};

static const int gpu_steps[] = {2, 4, 8, 16};

/* ------------------------------------------------------------------ the screen's side */

/* A send at its moment of the replay: its GPU's phase, until it arrives. */
static void apply_send(void *panel, const struct runrec *r)
{
    struct dprun *p = panel;
    if (r->type != EV_SEND)
        return;
    int g = r->device;
    p->phase[g] = !r->phase                             ? PH_NONE
                  : !strcmp(r->phase, "reduce-scatter") ? PH_RS
                  : !strcmp(r->phase, "all-gather")     ? PH_AG
                                                        : PH_NONE;
    p->phase_until[g] = fmax(r->t_end, r->t);
}

/* The calculator's figures for model m on this layout (micro-batch mb, checkpoint ckpt): the
 * prediction beside a run (par/predict.h) of the run this panel would start. */
static void figures(struct dprun *p, const struct model_shape *m, int zero, int mb,
                    struct ckpt_policy ckpt, struct figures *out)
{
    struct train_opts o;
    runpace_options(&p->pace, p->s.model, p->s.prec, mb * p->s.gpus, p->s.gpus, &o);
    o.zero = zero, o.ckpt = ckpt;
    struct cluster_spec cl = p->pace.spec;
    cl.nodes = (p->s.gpus + cl.gpus_per_node - 1) / cl.gpus_per_node;
    out->ok = predict_run(&o, m, &cl, &p->calc, NULL) == 0;
    out->m = p->calc.mem[0], out->t = p->calc.comm[0];
    predict_free(&p->calc);
}

static void predict(struct dprun *p)
{
    const struct model_shape *m = &p->pace.models[p->s.model];
    int mb = p->batch / p->s.gpus;
    const struct ckpt_policy none = {CKPT_NONE, 0}, full = {CKPT_FULL, 1};
    figures(p, m, p->s.zero, mb, none, &p->pred);
    /* one scale for every stage, so that the bars shrink stage by stage */
    p->scale = 0;
    for (int z = 0; z < 4; z++) {
        struct figures f;
        figures(p, m, z, mb, none, &f);
        if (f.ok)
            p->scale = fmax(p->scale, f.m.total);
    }
    p->scale = p->scale > 0 ? p->scale * 1.1 : 1;
    if (p->have_big)
        figures(p, &p->big, p->s.zero, 1, full, &p->big_pred);
    /* the model the run is timed as, at every stage of the run's layout */
    for (int z = 0; z < 4; z++) {
        struct train_opts o;
        struct error e = {0};
        runpace_options(&p->pace, p->s.model, p->s.prec, p->batch, p->s.gpus, &o);
        o.zero = z;
        struct cluster_spec cl = p->pace.spec;
        cl.nodes = (p->s.gpus + cl.gpus_per_node - 1) / cl.gpus_per_node;
        p->as_ok[z] =
            p->pace.have_as && timeas_predict(&o, &p->pace.as, &cl, &p->as_stage[z], &e) == 0;
    }
}

/* (Re)starts the run with p->s: nothing runs until the screen allows a step, but the GPUs
 * allocate their buffers at once, so the bars show them from the start. */
static void restart(void *panel)
{
    struct dprun *p = panel;
    runpace_clear(&p->pace);
    p->said_verdict = false;
    memset(p->phase, 0, sizeof p->phase);
    int n = p->s.gpus;
    p->batch = p->s.batch < n ? n : (p->s.batch + n - 1) / n * n;

    const struct model_shape *m = &p->pace.models[p->s.model];
    struct train_opts o;
    runpace_options(&p->pace, p->s.model, p->s.prec, p->batch, n, &o);
    o.zero = p->s.zero;
    runpace_time(&p->pace, &o, m); /* before the calculator: the bucket may be the model's */
    predict(p);
    struct error e = {0};
    /* the host holds every GPU's buffers (run_host_check, which run_new asks too): said with
     * the keys that make the run smaller */
    struct run_config rc = {.o = o};
    if (run_host_check(&rc, &e)) {
        error_prefix(&e, "%s on %d GPUs", m->name, n);
        snprintf(p->pace.err, sizeof p->pace.err, "%.*s: fewer GPUs (f) or the tiny model (m)",
                 (int)sizeof p->pace.err - 48, e.msg);
        return;
    }
    runpace_start(&p->pace, &o);
}

static const char *stage_name(int z)
{
    static const char *const names[4] = {"DDP", "ZeRO-1", "ZeRO-2", "ZeRO-3"};
    return names[z & 3];
}

static void say_restart(void *panel)
{
    struct dprun *p = panel;
    eventlog_add(p->pace.log, "run: %s, %d GPUs, %s, %s, batch %d: restarted",
                 runpace_model_names[p->s.model], p->s.gpus, stage_name(p->s.zero),
                 fp_info(p->s.prec)->name, p->batch);
}

/* Whether every GPU's ledger peaks equal the calculator's: -1 if so, else the first part
 * that differs (and on which GPU). */
static int verdict(const struct dprun *p, int *gpu)
{
    return runfeed_verdict(&p->pace.feed, &p->pace.o, &p->pred.m, gpu);
}

/* A step replayed: its loss, and once a run whether the ledgers are the calculator's. */
static void end_step(void *panel)
{
    struct dprun *p = panel;
    memset(p->phase, 0, sizeof p->phase);
    p->loss[(p->pace.shown - 1) % HIST] = (float)p->pace.last.s.loss;
    if (!p->said_verdict && p->pred.ok) {
        int g = 0, i = verdict(p, &g);
        char b[32];
        units_format_grouped(b, sizeof b, p->pace.feed.peak[0][MEM_WEIGHTS]);
        if (i < 0)
            eventlog_add(p->pace.log,
                         "run: %s on %d GPUs: every ledger = the calculator, to the byte "
                         "(weights %s B per GPU)",
                         stage_name(p->s.zero), p->s.gpus, b);
        else
            eventlog_add(p->pace.log, "run: GPU %d's %s: ledger %llu B, calculator %.0f B", g,
                         ledger_cat_name(runfeed_part_cat[i]),
                         (unsigned long long)p->pace.feed.peak[g][runfeed_part_cat[i]],
                         runfeed_predicted_part(&p->pred.m, i));
        p->said_verdict = true;
    }
}

/* The replay's clock. A tiny step computes for a fraction of a microsecond and then talks
 * for tens (each message pays the link's latency), so a clock that ran in proportion to
 * simulated time would show the activations for a frame. Half the replay goes in proportion
 * to simulated time, the other half in equal shares between the moments when memory
 * changes: every change is seen, in simulated-time order, and the time shown is the
 * simulated one. */
static void clock_moments(void *panel)
{
    struct dprun *p = panel;
    const struct runfeed *f = &p->pace.feed;
    size_t k = 0;
    if (p->capmom < f->nrep + 2) {
        struct moment *m = realloc(p->mom, (f->nrep + 2) * sizeof *m);
        if (!m) {
            p->nmom = 0;
            return;
        }
        p->mom = m, p->capmom = f->nrep + 2;
    }
    p->mom[k++].t = f->t0;
    for (size_t i = 0; i < f->nrep; i++)
        if (f->rep[i].type == EV_MEMORY && f->rep[i].t > p->mom[k - 1].t && f->rep[i].t < f->t1)
            p->mom[k++].t = f->rep[i].t;
    p->mom[k++].t = f->t1;
    double span = f->t1 - f->t0, at = 0;
    for (size_t j = 0; j < k; j++) {
        p->mom[j].at = at;
        if (j + 1 < k)
            at += 0.5 / (double)(k - 1) +
                  (span > 0 ? 0.5 * (p->mom[j + 1].t - p->mom[j].t) / span : 0.5 / (double)(k - 1));
    }
    p->nmom = k;
}

/* The simulated time shown when a share frac of the replay has gone by. */
static double clock_at(const void *panel, double frac)
{
    const struct dprun *p = panel;
    const struct runfeed *f = &p->pace.feed;
    if (p->nmom < 2)
        return f->t0 + frac * (f->t1 - f->t0);
    size_t lo = 0, hi = p->nmom - 1; /* mom[lo].at <= frac < mom[hi].at */
    if (frac >= p->mom[hi].at)
        return f->t1;
    while (hi - lo > 1) {
        size_t mid = (lo + hi) / 2;
        if (p->mom[mid].at <= frac)
            lo = mid;
        else
            hi = mid;
    }
    double w = p->mom[hi].at - p->mom[lo].at;
    double u = w > 0 ? (frac - p->mom[lo].at) / w : 1;
    return p->mom[lo].t + u * (p->mom[hi].t - p->mom[lo].t);
}

/* ------------------------------------------------------------------ settings and keys */

static bool same_settings(const void *x, const void *y)
{
    const struct settings *a = x, *b = y;
    return a->model == b->model && a->gpus == b->gpus && a->zero == b->zero &&
           a->batch == b->batch && a->prec == b->prec;
}

/* The run panel's part in the replay: the clock's moments, the sends' phases, the losses;
 * its settings. */
static const struct runpace_ops pace_ops = {.name = "dprun",
                                            .tag = "run",
                                            .replay_s = REPLAY_S,
                                            .begin = clock_moments,
                                            .clock = clock_at,
                                            .record = apply_send,
                                            .end = end_step,
                                            .settings = sizeof(struct settings),
                                            .same = same_settings,
                                            .restart = restart,
                                            .say_restart = say_restart};

static void defaults(struct settings *s)
{
    *s = (struct settings){.model = 0, .gpus = 4, .zero = 0, .batch = 8, .prec = FP_BF16};
}

static int dprun_init(void **state, const struct panel_env *env, struct error *e)
{
    struct dprun *p = calloc(1, sizeof *p);
    if (!p)
        return error_set(e, ERR_NOMEM, "out of memory");
    p->have_big = preset_load_model("synthetic-7b", &p->big, NULL) == 0;
    int rc = runpace_init(&p->pace, &pace_ops, p, &p->s, &p->start, env, e);
    if (rc) {
        free(p);
        return rc;
    }
    defaults(&p->s);
    runpace_first(&p->pace);
    *state = p;
    return 0;
}

static void dprun_fini(void *state)
{
    struct dprun *p = state;
    runpace_fini(&p->pace);
    free(p->mom);
    free(p);
}

static int dprun_set(void *state, const char *name, const char *value, struct error *e)
{
    struct dprun *p = state;
    struct settings s = p->start;
    int rc = 0;
    if (!strcmp(name, "model")) {
        rc = runpace_set_model(value, &s.model, e);
    } else if (!strcmp(name, "gpus") || !strcmp(name, "zero") || !strcmp(name, "precision") ||
               !strcmp(name, "batch")) { /* the run's settings, and this panel's room */
        struct train_opts t = {
            .gpus = s.gpus, .zero = s.zero, .precision = s.prec, .batch = s.batch};
        if (!(rc = settings_set(&t, name, value, e)) &&
            !(rc = runpace_within("gpus", t.gpus, 2, MAX_GPUS, e)) &&
            !(rc = runpace_within("batch", t.batch, 1, RUNPACE_MAX_BATCH, e)))
            s.gpus = t.gpus, s.zero = t.zero, s.prec = t.precision, s.batch = t.batch;
    } else {
        rc =
            error_set(e, ERR_INVAL,
                      "the run panel knows model, gpus, zero, precision and batch, not '%s'", name);
    }
    return rc ? rc : runpace_set(&p->pace, &s);
}

static int dprun_on_key(void *state, int key)
{
    struct dprun *p = state;
    struct settings *s = &p->s;
    int i = 0;
    switch (key) {
    case 'z': s->zero = (s->zero + 1) % 4; break;
    case 'Z': s->zero = (s->zero + 3) % 4; break;
    case 'g': /* the next of 2, 4, 8, 16 above; 16 stays */
    case 'f': /* the next below; 2 stays */
        i = key == 'g' ? 0 : 3;
        while (i >= 0 && i < 4 && (key == 'g' ? gpu_steps[i] <= s->gpus : gpu_steps[i] >= s->gpus))
            i += key == 'g' ? 1 : -1;
        if (i < 0 || i > 3)
            return runpace_refuse(&p->pace, "GPUs stay %d, the %s: the run takes 2, 4, 8 or 16",
                                  s->gpus, key == 'g' ? "most" : "fewest");
        s->gpus = gpu_steps[i];
        break;
    case 'p': s->prec = fp_precision_step(s->prec, 1); break;
    case 'm': s->model = !s->model; break;
    case 's': p->show_big = !p->show_big, p->show_time = false; return PANEL_HANDLED | PANEL_REDRAW;
    case 'w':
        p->show_time = !p->show_time, p->show_big = false;
        return PANEL_HANDLED | PANEL_REDRAW;
    default: return 0;
    }
    return runpace_rekeyed(&p->pace, NULL);
}

static int dprun_on_event(void *state, const struct panel_event *ev)
{
    struct dprun *p = state;
    return runpace_panel_event(&p->pace, ev);
}

/* ------------------------------------------------------------------ drawing */

static void draw_big(const struct dprun *p, struct ui_canvas *c, int y, int h)
{
    const struct figures *f = &p->big_pred;
    int w = c->r.w;
    const struct memory_result *m = &f->m;
    if (!p->have_big || !f->ok) {
        canvas_text(c, y, 0, ROLE_ERROR, "synthetic-7b: no figures for this layout");
        return;
    }
    int end = y + h, d = w >= 56 ? 2 : 1;
    canvas_printf(c, y++, 0, ROLE_TITLE, "synthetic-7b on the same layout (calculator)");
    if (y < end)
        canvas_printf(c, y++, 0, ROLE_DIM, "%d GPUs, %s, %s; 1 sequence each, full ckpt", p->s.gpus,
                      stage_name(p->s.zero), fp_info(p->s.prec)->name);
    if (y < end)
        memui_draw_bar(c, y++, 0, w - 2, m, fmax(m->total, m->capacity) * 1.1);
    if (y < end)
        canvas_printf(c, y++, 0, ROLE_TEXT, "GiB: W %.*f G %.*f M %.*f O %.*f A %.*f C %.*f", d,
                      m->states.weights / MEMUI_GIB, d, m->states.gradients / MEMUI_GIB, d,
                      m->states.master / MEMUI_GIB, d, m->states.optimizer / MEMUI_GIB, d,
                      m->activations / MEMUI_GIB, d, m->comm / MEMUI_GIB);
    if (y < end) {
        int x = canvas_printf(c, y, 0, ROLE_TEXT, "%.2f GiB per GPU: ", m->total / MEMUI_GIB);
        if (m->fits)
            canvas_printf(c, y++, x, ROLE_GOOD, "fits in %.0f GiB", m->capacity / MEMUI_GIB);
        else
            canvas_printf(c, y++, x, ROLE_ERROR, "over %.0f GiB by %.2f", m->capacity / MEMUI_GIB,
                          m->over / MEMUI_GIB);
    }
    if (y < end)
        canvas_printf(c, y++, 0, ROLE_DIM, "each GPU sends %.2f GiB a step",
                      f->t.bytes / MEMUI_GIB);
}

/* A row per GPU from row y (as many as fit, then a line saying so): its ledger as a bar of bw
 * cells, its total and the bytes it sent in the right columns, the collective it runs; the
 * next row. */
static int draw_gpus(const struct dprun *p, struct ui_canvas *c, int y, int bw, int right)
{
    int H = c->r.h, n = p->s.gpus;
    char b1[32], b2[32];
    /* rows: the GPUs, then the peak and calc bars, 3 of figures, the verdict, the loss */
    int rows = H - y - 9;
    int shown = n <= rows ? n : rows - 1;
    if (shown < 1)
        shown = 1;
    double tc = p->pace.tc;
    for (int g = 0; g < shown && y < H; g++, y++) {
        struct memory_result m;
        runfeed_as_result(p->pace.feed.cur[g], p->pace.spec.hbm_bytes, &m);
        canvas_printf(c, y, 0, ROLE_DIM, "GPU%-2d", g);
        memui_draw_bar(c, y, 6, bw, &m, p->scale);
        int rx = 6 + bw + 1;
        int ph = p->pace.replaying && tc <= p->phase_until[g] ? p->phase[g] : PH_NONE;
        uint64_t sent = p->pace.shown ? p->pace.last.gpu[g].sent[STRATEGY_DP] : 0;
        if (right > 10) {
            units_format_bytes(b1, sizeof b1, m.total, UNITS_BINARY);
            rx = canvas_printf(c, y, rx, ROLE_TEXT, "%10s ", b1);
        }
        if (right == 46) {
            units_format_grouped(b2, sizeof b2, sent);
            if (!p->pace.shown)
                snprintf(b2, sizeof b2, "-");
            rx = canvas_printf(c, y, rx, ROLE_TEXT, "sent %11s B ", b2);
        } else {
            runfeed_bytes(b2, sizeof b2, (double)sent, right == 10 ? 7 : 12);
            if (!p->pace.shown)
                snprintf(b2, sizeof b2, "-");
            rx = canvas_printf(c, y, rx, ROLE_TEXT, "%*s ", right == 10 ? 6 : 11, b2);
        }
        if (ph)
            canvas_text(c, y, rx, ROLE_MOVED,
                        right == 46 ? (ph == PH_RS ? "reduce-scatter" : "all-gather")
                                    : (ph == PH_RS ? "RS" : "AG"));
    }
    if (shown < n && y < H)
        canvas_printf(c, y++, 0, ROLE_DIM, "(a larger window shows all %d GPUs)", n);
    else if (y < H && runpace_draw_missed(&p->pace, c, y))
        y++;
    return y;
}

/* GPU 0's ledger peaks beside the calculator's, as bars and as figures, and the verdict over
 * every GPU with the bytes sent, from row y; the next row. */
static int draw_against_calc(const struct dprun *p, struct ui_canvas *c, int y, int bw, int right)
{
    int W = c->r.w, n = p->s.gpus, x;
    char b1[32], b2[32];
    /* GPU 0's peaks beside the calculator's, as bars and as figures */
    struct memory_result m;
    runfeed_as_result(p->pace.feed.peak[0], p->pace.spec.hbm_bytes, &m);
    canvas_text(c, y, 0, ROLE_DIM, "peak");
    memui_draw_bar(c, y++, 6, bw, &m, p->scale);
    canvas_text(c, y, 0, ROLE_DIM, "calc");
    if (p->pred.ok)
        memui_draw_bar(c, y, 6, bw, &p->pred.m, p->scale);
    y++;
    int cw = (W - 7) / 6 < 11 ? (W - 7) / 6 : 11;
    static const char *const head[MEMUI_PARTS] = {"W", "G", "M", "O", "A", "C"};
    canvas_text(c, y, 0, ROLE_DIM, "GPU 0");
    for (int i = 0; i < MEMUI_PARTS; i++)
        canvas_printf(c, y, 7 + i * cw, ROLE_DIM, "%*s", cw - 1, head[i]);
    y++;
    for (int row = 0; row < 2; row++, y++) {
        canvas_text(c, y, 0, ROLE_DIM, row ? "calc" : "ledger");
        for (int i = 0; i < MEMUI_PARTS; i++) {
            double v = row ? runfeed_predicted_part(&p->pred.m, i)
                           : (double)p->pace.feed.peak[0][runfeed_part_cat[i]];
            bool same = (double)p->pace.feed.peak[0][runfeed_part_cat[i]] ==
                        llround(runfeed_predicted_part(&p->pred.m, i));
            runfeed_bytes(b1, sizeof b1, v, cw);
            canvas_printf(c, y, 7 + i * cw,
                          row || !p->pace.shown ? ROLE_TEXT
                          : same                ? ROLE_GOOD
                                                : ROLE_ERROR,
                          "%*s", cw - 1, b1);
        }
    }
    /* the verdict over every GPU, and the bytes sent */
    units_format_grouped(b2, sizeof b2, (unsigned long long)llround(p->pred.t.bytes));
    if (p->pace.shown && p->pred.ok) {
        int g = 0, i = verdict(p, &g);
        if (i < 0)
            x = canvas_printf(c, y, 0, ROLE_GOOD, "ledger = calc, all %d GPUs", n);
        else
            x = canvas_printf(c, y, 0, ROLE_ERROR, "GPU %d: %s differs", g,
                              ledger_cat_name(runfeed_part_cat[i]));
        bool same = true;
        for (int k = 0; k < n; k++)
            same &= (double)p->pace.last.gpu[k].sent[STRATEGY_DP] == llround(p->pred.t.bytes);
        units_format_grouped(b1, sizeof b1, p->pace.last.gpu[0].sent[STRATEGY_DP]);
        if (right > 10)
            canvas_printf(c, y, x + 2, same ? ROLE_GOOD : ROLE_ERROR, "sent %s B, calc %s B", b1,
                          b2);
        else
            canvas_printf(c, y, x + 1, same ? ROLE_GOOD : ROLE_ERROR, "sent %s calc",
                          same ? "=" : "!=");
    } else {
        canvas_printf(c, y, 0, ROLE_DIM, "calc: each GPU sends %s B a step", b2);
    }
    y++;
    return y;
}

/* The model the run is timed as, at each ZeRO stage of the layout (the calculator's memory per
 * GPU and step), the run's own step beside its stage when timed as it; from row y, a row a
 * stage under a heading when rows allows, else one line. The rows drawn. */
static int draw_stages(const struct dprun *p, struct ui_canvas *c, int y, int rows)
{
    char b1[32];
    int W = c->r.w;
    double cap = p->pace.spec.hbm_bytes;
    if (rows >= 5) {
        canvas_printf(c, y, 0, ROLE_TITLE, "%s (calc)  GiB/GPU  step", p->pace.as.name);
        for (int z = 0; z < 4; z++) {
            const struct plan_layout *l = &p->as_stage[z];
            bool cur = z == p->s.zero;
            int x = canvas_printf(c, y + 1 + z, 0, cur ? ROLE_SELECTED : ROLE_TEXT, "%c %-6s",
                                  cur ? '>' : ' ', stage_name(z));
            if (!p->as_ok[z]) {
                canvas_text(c, y + 1 + z, x + 1, ROLE_DIM, "no figures");
                continue;
            }
            x = canvas_printf(c, y + 1 + z, 20, l->per_gpu_bytes > cap ? ROLE_ERROR : ROLE_TEXT,
                              "%8.2f  ", l->per_gpu_bytes / MEMUI_GIB);
            if (l->per_gpu_bytes > cap) {
                canvas_printf(c, y + 1 + z, x, ROLE_ERROR, "over %.0f GiB", cap / MEMUI_GIB);
                continue;
            }
            units_format_seconds(b1, sizeof b1, l->step_time_s);
            x = canvas_text(c, y + 1 + z, x, ROLE_TEXT, b1);
            if (cur && p->pace.timed && p->pace.shown && x + 18 <= W) {
                units_format_seconds(b1, sizeof b1, p->pace.span_t1 - p->pace.span_t0);
                canvas_printf(c, y + 1 + z, x + 2, ROLE_GOOD, "run %s", b1);
            }
        }
        return 5;
    }
    if (rows < 1)
        return 0;
    int x = canvas_text(c, y, 0, ROLE_DIM, "7b calc:");
    for (int z = 0; z < 4; z++) {
        static const char *const sn[4] = {"DDP", "Z1", "Z2", "Z3"};
        const struct plan_layout *l = &p->as_stage[z];
        if (!p->as_ok[z])
            snprintf(b1, sizeof b1, "-");
        else if (l->per_gpu_bytes > cap)
            snprintf(b1, sizeof b1, "over");
        else
            snprintf(b1, sizeof b1, "%.0fms", l->step_time_s * 1e3);
        x = canvas_printf(c, y, x + 1, z == p->s.zero ? ROLE_SELECTED : ROLE_TEXT, "%s %s", sn[z],
                          b1);
    }
    return 1;
}

/* The timeline view: the last step's timeline, then the model's step at each stage. */
static void draw_time(const struct dprun *p, struct ui_canvas *c, int y)
{
    int H = c->r.h;
    int n = p->s.gpus, stages = H - y >= timeline_rows(n, true) + 1 + 5 ? 5 : 1;
    y += runpace_draw_timeline(&p->pace, c, y, H - y - stages);
    draw_stages(p, c, y, H - y);
}

/* The loss curve from row y to the bottom, with the data's floor. */
static void draw_loss(const struct dprun *p, struct ui_canvas *c, int y)
{
    int W = c->r.w, H = c->r.h, x;
    char b1[32], b2[32];
    /* the loss, with the data's floor (ui/plot.h: each column's extremes, the labels on
     * their rows) */
    int lossrows = H - y - 1;
    if (lossrows >= 2 && y < H) {
        x = isfinite(p->pace.floor) /* (known once the run has set up) */
                ? canvas_printf(c, y, 0, ROLE_TITLE, "loss (floor %.3f)", p->pace.floor)
                : canvas_text(c, y, 0, ROLE_TITLE, "loss");
        /* what the ledger holds beside the bars: the CPU's fp32 copies */
        units_format_bytes(b1, sizeof b1, (double)p->pace.feed.cur[0][MEM_WORKSPACE], UNITS_BINARY);
        if (x + 56 + (int)strlen(b1) <= W)
            canvas_printf(c, y, x + 3, ROLE_DIM,
                          "not in the bars: GPU 0's %s of workspace (fp32 copies)", b1);
        y++;
        long kept = p->pace.shown < HIST ? p->pace.shown : HIST;
        struct plot_series ls = {p->loss, NULL, p->pace.shown - kept, p->pace.shown, HIST};
        double lo, hi;
        plot_range(&ls, PLOT_LINEAR, 1, &lo, &hi);
        lo = fmin(lo, p->pace.floor), hi = fmax(hi, p->pace.floor + 0.1);
        snprintf(b1, sizeof b1, "%.2f", hi);
        snprintf(b2, sizeof b2, "%.2f", lo);
        if (kept > 0)
            plot_draw(c, y, 0, lossrows, W - PLOT_MARGIN - 1, "", b1, b2, &ls, PLOT_LINEAR, lo, hi,
                      p->pace.floor);
    }
}

/* The bars' legend on row y, the bars' scale and the column of the bytes sent; the next row. */
static int draw_legend(const struct dprun *p, struct ui_canvas *c, int y, int bw, int right)
{
    const struct ui_glyphs *gl = theme_glyphs();
    int W = c->r.w, x;
    char b1[32];
    /* legend */
    static const char *const part_name[MEMUI_PARTS] = {"wt", "grad", "mst", "opt", "act", "buf"};
    x = 0;
    for (int i = 0; i < MEMUI_PARTS; i++) {
        char letter[2] = {memui_part_letter[i], 0};
        x = canvas_text(c, y, x, memui_part_role[i], theme_color() ? gl->bar : letter);
        x = canvas_printf(c, y, x + 1, ROLE_DIM, "%s ", part_name[i]);
    }
    int sx = right == 10 ? 6 + bw + 3 : right == 26 ? 6 + bw + 19 : W;
    units_format_bytes(b1, sizeof b1, p->scale, UNITS_BINARY);
    if (x + 6 + (int)strlen(b1) < 6 + bw)
        canvas_printf(c, y, x, ROLE_DIM, "bar %s", b1);
    if (sx > x && sx + 4 <= W)
        canvas_text(c, y, sx, ROLE_DIM, "sent");
    return y + 1;
}

static void dprun_draw(const void *state, struct ui_canvas *c)
{
    const struct dprun *p = state;
    int W = c->r.w, y = 0, n = p->s.gpus;
    int x = canvas_printf(c, y, 0, ROLE_TEXT, "%s, %d GPUs, %s, %s, batch %d",
                          runpace_model_names[p->s.model], n, stage_name(p->s.zero),
                          fp_info(p->s.prec)->name, p->batch);
    if (x + 14 <= W)
        canvas_printf(c, y, x, ROLE_DIM, " (%d per GPU)", p->batch / n);
    y++;
    runpace_draw_timing(&p->pace, c, y++);
    if (p->pace.err[0]) {
        canvas_wrap(c, y + 1, ROLE_ERROR, p->pace.err, 0);
        return;
    }
    /* the step shown */
    runpace_draw_step(&p->pace, c, y++, "buffers allocated: space trains, n one step");
    /* the columns of the GPUs' rows: the bar, its total (when wide), the bytes sent */
    int right = W >= 110 ? 46 : W >= 66 ? 26 : 10, bw = W - 6 - right;
    if (p->show_time) { /* the GPUs' rows give way to the timeline's where it needs them */
        bool bars = c->r.h - y - 1 >= timeline_rows(n, true) + 2 + n + 1;
        if (bars) {
            y = draw_legend(p, c, y, bw, right);
            y = draw_gpus(p, c, y, bw, right);
        }
        draw_time(p, c, y);
        return;
    }
    y = draw_legend(p, c, y, bw, right);
    y = draw_gpus(p, c, y, bw, right);
    if (p->show_big) {
        draw_big(p, c, y, 6);
        y += 6;
    } else {
        y = draw_against_calc(p, c, y, bw, right);
    }
    draw_loss(p, c, y);
}

static const struct panel_key dprun_keys[] = {
    {"z Z", "next / previous ZeRO stage (restarts the run)", "ZeRO"},
    {"g f", "twice / half as many GPUs, 2 to 16 (restarts)", "GPUs"},
    {"p", "precision: bf16, fp16, fp32 (restarts)", "precision"},
    {"m", "model: tiny or small (restarts)", "model"},
    {"s", "synthetic-7b's calculator figures for the same layout", "7B"},
    {"w", "the last step's timeline, and the timed model's step at each ZeRO stage", "time"},
    {NULL, NULL, NULL},
};

const struct panel_ops panel_dprun = {
    .name = "dprun",
    .title = "Data parallelism, running",
    .about = "A real data-parallel run of the tiny GPT on thread-GPUs: each GPU's memory from "
             "its own ledger as the step runs (replayed in simulated time), the bytes each "
             "sends and whether it reduce-scatters or all-gathers, the loss, and GPU 0's "
             "ledger peaks beside the calculator's figures for the same layout.",
    .init = dprun_init,
    .fini = dprun_fini,
    .on_key = dprun_on_key,
    .on_event = dprun_on_event,
    .set = dprun_set,
    .draw = dprun_draw,
    .plays = true,
    .keys = dprun_keys,
};
