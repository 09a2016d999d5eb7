/* Lesson 4's run panel: a real pipeline-parallel (and data-parallel) training run of the tiny
 * (or small) GPT on thread-GPUs, beside the calculator's prediction.
 *
 * The run is the engine of `scalelab train --pp P --dp D --micro-batches M --schedule S`
 * (src/par/run.h), paced by the screen as the Lab's run panel (panel_dprun.c) paces it: each
 * tick lets it start a step or two beyond the one shown and takes the records of the steps
 * done, never waiting for one. Every GPU's memory changes and pipeline operations (EV_MEMORY,
 * EV_PIPE_OP) are recorded as they happen, on the GPUs' threads, into a ring under a lock of
 * its own; each step is then replayed over about a second and a half of the screen's time (at
 * 1x), in simulated time: the Gantt chart's blocks appear as the stages ran them, and the
 * activations of each GPU rise and fall with the micro-batches it holds. At the end of a step
 * each bar holds its GPU's ledger exactly.
 *
 * Drawn: the layout's GPUs as a grid (a row per pipeline stage, a column per data-parallel
 * rank; tensor parallelism will add columns), each with a stacked bar from its own ledger on
 * one scale for both schedules; whether every ledger's peaks equal the calculator's for its
 * stage; the Gantt chart of the step (the first data-parallel rank's GPUs, one row per stage,
 * forwards labelled 0-7 and backwards a-h by micro-batch, idle time as dots) to the scale of
 * simulated time, or (f) the same operations retimed with free sends; the bubble measured on
 * the executed timeline beside the calculator's formulas, and why they differ (a tiny model's
 * operation computes for a fraction of a microsecond, each send pays the link's latency); the
 * micro-batches each stage held at once beside the schedule's; the bytes each stage's GPUs
 * sent in the step (pipeline, data-parallel) beside the calculator's.
 *
 * Keys: p / P more / fewer stages (the divisors of the model's layers up to 4), m / M twice /
 * half the micro-batches (1-8), d / D twice / half the data-parallel ranks (1-4), s GPipe or
 * 1F1B, o model (tiny, small): each restarts the run; f the Gantt with free sends. Space (the
 * app's) plays and pauses, n steps. Settings: model=tiny|small pp=N dp=N micro_batches=M
 * schedule=gpipe|1f1b precision=fp32|bf16|fp16 batch=B (the global batch, raised to a multiple
 * of dp x M); by default those of `scalelab train --pp 2 --micro-batches 4`. */
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
#include "calc/sched.h"
#include "calc/traffic.h"
#include "par/predict.h"
#include "par/run.h"
#include "sim/event.h"
#include "sim/ledger.h"
#include "ui/draw.h"
#include "ui/eventlog.h"
#include "ui/memui.h"
#include "ui/panel.h"
#include "ui/ppgantt.h"
#include "ui/runfeed.h"

#define MAX_GPUS     16
#define MAX_STAGES   4
#define MAX_DP       4
#define MAX_MICRO    8
#define REPLAY_S     1.5 /* wall seconds one step's replay takes at 1x */
#define AHEAD        2   /* steps the run may finish beyond the one shown */
#define MAX_PER_TICK 8   /* steps replayed in one tick at the highest speeds */

struct settings {
    int model; /* 0 tiny, 1 small */
    int pp, dp, m, batch;
    enum calc_schedule sched;
    enum fp_format prec;
};

struct pprun {
    struct eventlog *log;
    struct settings s, start;
    struct model_shape models[2];
    struct cluster_spec spec;
    int gpus, batch;              /* the run's: dp x pp, the global batch */
    enum calc_schedule run_sched; /* 1F1B on one stage */
    struct run *run;
    struct runfeed feed; /* the GPUs' events, the step replayed, each GPU's ledger */
    char err[ERROR_MAX];
    /* the calculator: each stage's memory and traffic, the schedule */
    bool pred_ok, have_sched;
    struct memory_result stage_m[MAX_STAGES];
    struct traffic stage_t[MAX_STAGES];
    struct sched sched;
    double scale;
    /* the step being replayed: its events in time order, its Gantt chart */
    bool replaying;
    struct run_step rs;
    double frac, tc;
    struct ppgantt g, gfree; /* the step shown (replaying or the last done), retimed */
    bool free_ok;
    /* the last step done: its measurements */
    long shown, allowed;
    struct run_step last;
    struct ppgantt done;
    struct pp_bubble bub, bub_free;
    bool order_ok;
    double fwd_s; /* a forward's mean compute time */
    bool show_free, said_verdict;
};

static const char *const model_names[2] = {"tiny", "small"};

/* ------------------------------------------------------------------ the screen's side */

static void stop_run(struct pprun *p)
{
    run_free(p->run); /* stops it at the next step boundary and joins its threads */
    p->run = NULL;
}

static void fail(struct pprun *p)
{
    struct error e = {0};
    if (p->run && run_finish(p->run, &e) && !p->err[0]) {
        snprintf(p->err, sizeof p->err, "%s", e.msg);
        eventlog_add(p->log, "pprun: %s", e.msg);
    }
    stop_run(p);
}

/* The run's options for the settings. */
static void options(const struct pprun *p, struct train_opts *o)
{
    const struct model_shape *m = &p->models[p->s.model];
    train_opts_default(o);
    o->shape = (struct gpt_config){m->vocab, m->d_model, m->layers, m->heads, m->ffn, m->seq};
    o->lr = 3e-3;
    o->batch = p->batch;
    o->steps = 1L << 40; /* the window runs until stopped */
    o->precision = p->s.prec;
    o->scaling = p->s.prec == FP_FP16 ? TRAIN_SCALE_DYNAMIC : TRAIN_SCALE_NONE;
    o->gpus = p->gpus;
    o->pp = p->s.pp;
    o->micro_batches = p->s.m;
    o->schedule = p->run_sched;
    o->bucket_bytes = (size_t)MEMORY_BUCKET;
    o->prefetch = 1;
}

/* The calculator's figures for this layout, and the bars' scale: the largest stage of either
 * schedule, so that the bars compare GPipe and 1F1B. */
static void predict(struct pprun *p)
{
    const struct model_shape *m = &p->models[p->s.model];
    struct train_opts o;
    struct memory_config c;
    struct error e = {0};
    options(p, &o);
    p->pred_ok = predict_config(&o, m, p->spec.hbm_bytes, &c, &e) == 0;
    p->scale = 0;
    for (int st = 0; p->pred_ok && st < p->s.pp; st++)
        p->pred_ok =
            memory_compute_stage(&c, st, &p->stage_m[st], &e) == 0 &&
            traffic_compute_stage(&c, &p->spec, p->s.pp > 1 ? st : -1, p->stage_m[st].params_gpu,
                                  p->stage_m[st].stage_layers, 0, 0, &p->stage_t[st], &e) == 0;
    for (int k = 0; p->pred_ok && k < 2; k++) {
        c.schedule = k ? SCHED_GPIPE : SCHED_1F1B;
        for (int st = 0; st < p->s.pp; st++) {
            struct memory_result r;
            if (memory_compute_stage(&c, st, &r, &e) == 0)
                p->scale = fmax(p->scale, r.total);
        }
    }
    p->scale = p->scale > 0 ? p->scale * 1.1 : 1;
    if (!p->pred_ok)
        snprintf(p->err, sizeof p->err, "%s", e.msg);
    if (p->have_sched)
        sched_free(&p->sched);
    p->have_sched = sched_build(p->run_sched, p->s.pp, p->s.m, 1, &p->sched, &e) == 0;
}

/* Waits (two seconds at most) for the GPUs' first memory events, so that the bars show their
 * buffers before the first step. A GPU's count: its buffers, one event each, and its initial
 * weights' scratch, allocated and released; trainer_calls counts, for any pipelined GPU, a
 * middle stage's pp_buffers() and that scratch once, where a stage at either end allocates
 * half of them (the input's or the output's side) and one stage none. */
static void settle(struct pprun *p, const struct train_opts *o)
{
    long buffers = trainer_calls(o).buffers, want[RUNFEED_GPUS];
    for (int g = 0; g < p->gpus && g < RUNFEED_GPUS; g++) {
        int st = g / p->s.dp;
        long own = p->s.pp == 1                   ? 0
                   : st == 0 || st == p->s.pp - 1 ? pp_buffers() / 2
                                                  : pp_buffers();
        want[g] = train_pipelined(o) ? buffers - pp_buffers() - 1 + own + 2 : buffers;
    }
    if (p->run)
        runfeed_settle(&p->feed, p->gpus, want, 2.0);
}

/* (Re)starts the run with p->s: nothing runs until the screen allows a step. */
static void restart(struct pprun *p)
{
    stop_run(p);
    runfeed_reset(&p->feed);
    p->replaying = false;
    p->shown = p->allowed = 0;
    p->said_verdict = false;
    p->err[0] = 0;
    memset(&p->last, 0, sizeof p->last);
    ppg_reset(&p->g, p->s.pp);
    ppg_reset(&p->gfree, p->s.pp);
    ppg_reset(&p->done, p->s.pp);
    p->free_ok = false;
    p->gpus = p->s.dp * p->s.pp;
    int per = p->s.dp * p->s.m;
    p->batch = p->s.batch < per ? per : (p->s.batch + per - 1) / per * per;
    p->run_sched = p->s.pp == 1 ? SCHED_1F1B : p->s.sched;
    predict(p);
    if (p->err[0])
        return;

    struct run_config cfg = {0};
    options(p, &cfg.o);
    cfg.spec = p->spec;
    cfg.spec.nodes = (p->gpus + cfg.spec.gpus_per_node - 1) / cfg.spec.gpus_per_node;
    cfg.paced = true;
    cfg.on_event = runfeed_on_event;
    cfg.event_ctx = &p->feed;
    struct error e = {0};
    if (train_opts_check(&cfg.o, &e) != 0 || run_new(&p->run, &cfg, &e) != 0 ||
        run_start(p->run, &e) != 0) {
        snprintf(p->err, sizeof p->err, "%s", e.msg);
        stop_run(p);
        return;
    }
    settle(p, &cfg.o);
}

static void say_restart(struct pprun *p)
{
    eventlog_add(p->log, "run: %s, pp %d x dp %d, %s, %d micro-batches, batch %d: restarted",
                 model_names[p->s.model], p->s.pp, p->s.dp, sched_name(p->run_sched), p->s.m,
                 p->batch);
}

/* Whether every GPU's ledger peaks equal its stage's figures: -1 if so, else the first part
 * that differs (and on which GPU). */
static int verdict(const struct pprun *p, int *gpu)
{
    for (int g = 0; g < p->gpus; g++)
        for (int i = 0; i < MEMUI_PARTS; i++)
            if ((double)p->feed.peak[g][runfeed_part_cat[i]] !=
                llround(runfeed_predicted_part(&p->stage_m[g / p->s.dp], i))) {
                *gpu = g;
                return i;
            }
    return -1;
}

/* Whether every GPU of each stage sent the calculator's bytes in the last step: pipeline
 * (pipeline true) or data-parallel. */
static bool sent_as_predicted(const struct pprun *p, bool pipeline)
{
    for (int g = 0; g < p->gpus; g++) {
        const struct traffic *t = &p->stage_t[g / p->s.dp];
        uint64_t got = pipeline ? p->last.gpu[g].pp_bytes : p->last.gpu[g].sent_bytes;
        if ((double)got != llround(pipeline ? t->pp.bytes : t->dp.bytes))
            return false;
    }
    return true;
}

/* The step's Gantt chart from its events: the operations of each stage's first GPU. */
static void build_gantt(struct pprun *p)
{
    ppg_reset(&p->g, p->s.pp);
    for (size_t i = 0; i < p->feed.nrep; i++) {
        const struct runrec *r = &p->feed.rep[i];
        if (r->type != EV_PIPE_OP || r->device % p->s.dp != 0)
            continue;
        struct pp_done d = {r->kind, r->micro, r->chunk, r->t, r->t_end};
        ppg_add(&p->g, r->device / p->s.dp, &d);
    }
    p->free_ok = ppg_retime(&p->g, &p->gfree);
}

static void finish_replay(struct pprun *p)
{
    runfeed_end_step(&p->feed); /* each ledger exact */
    p->replaying = false;
    p->tc = INFINITY;
    p->last = p->rs;
    p->shown++;
    /* the measurements of the step */
    p->done = p->g;
    ppg_bubble(&p->done, &p->bub);
    if (p->free_ok)
        ppg_bubble(&p->gfree, &p->bub_free);
    p->order_ok = p->have_sched && ppg_same_order(&p->done, &p->sched);
    double fsum = 0;
    int fn = 0;
    for (int st = 0; st < p->done.stages; st++)
        for (int i = 0; i < p->done.n[st]; i++)
            if (p->done.ops[st][i].kind == 'F')
                fsum += p->done.ops[st][i].end_s - p->done.ops[st][i].start_s, fn++;
    p->fwd_s = fn ? fsum / fn : 0;
    if (!p->said_verdict && p->pred_ok) {
        int g = 0, i = verdict(p, &g);
        if (i < 0)
            eventlog_add(p->log,
                         "run: pp %d x dp %d, %s: every ledger = the calculator for its stage, "
                         "to the byte",
                         p->s.pp, p->s.dp, sched_name(p->run_sched));
        else
            eventlog_add(p->log, "run: GPU %d's %s: ledger %llu B, calculator %.0f B", g,
                         ledger_cat_name(runfeed_part_cat[i]),
                         (unsigned long long)p->feed.peak[g][runfeed_part_cat[i]],
                         runfeed_predicted_part(&p->stage_m[g / p->s.dp], i));
        p->said_verdict = true;
    }
}

/* Starts replaying the next step if the run has finished it (or does within wait_s). */
static bool start_replay(struct pprun *p, double wait_s)
{
    if (!p->run)
        return false;
    int got = run_next(p->run, &p->rs, wait_s);
    if (got < 0)
        fail(p);
    if (got != 1)
        return false;
    if (!runfeed_begin_step(&p->feed, p->rs.s.step))
        return false;
    build_gantt(p);
    p->frac = 0, p->tc = p->feed.t0;
    p->replaying = true;
    return true;
}

/* The replay moves on by `steps` steps' worth; returns the steps finished. */
static int advance(struct pprun *p, double steps)
{
    int done = 0;
    while (steps > 1e-9 && done < MAX_PER_TICK) {
        if (!p->replaying && !start_replay(p, 0))
            break;
        double use = fmin(steps, 1 - p->frac);
        p->frac += use, steps -= use;
        p->tc = p->feed.t0 + p->frac * (p->feed.t1 - p->feed.t0);
        while (runfeed_next(&p->feed, p->tc))
            ; /* the memory records move the bars; the chart reads the clock */
        if (p->frac >= 1 - 1e-9) {
            finish_replay(p);
            done++;
        }
    }
    return done;
}

static void allow(struct pprun *p, long upto)
{
    if (p->run && upto > p->allowed) {
        p->allowed = upto;
        run_allow(p->run, upto);
    }
}

/* Before the first step: the buffers the GPUs allocate as they start, as they come. */
static void take_setup(struct pprun *p)
{
    if (p->allowed > 0)
        return;
    runfeed_take_setup(&p->feed);
}

/* ------------------------------------------------------------------ settings and keys */

static void defaults(struct settings *s)
{
    *s = (struct settings){
        .model = 0, .pp = 2, .dp = 1, .m = 4, .batch = 16, .sched = SCHED_1F1B, .prec = FP_FP32};
}

static int pprun_init(void **state, const struct panel_env *env, struct error *e)
{
    struct pprun *p = calloc(1, sizeof *p);
    if (!p)
        return error_set(e, ERR_NOMEM, "out of memory");
    p->log = env->log;
    int rc = 0;
    for (int i = 0; i < 2 && !rc; i++)
        rc = preset_load_model(model_names[i], &p->models[i], e);
    if (preset_load_cluster("h100-80gb", &p->spec, NULL) != 0)
        spec_default(&p->spec);
    if (!rc)
        rc = runfeed_init(&p->feed, e);
    if (rc) {
        free(p);
        return rc;
    }
    defaults(&p->s);
    p->start = p->s;
    restart(p);
    *state = p;
    return 0;
}

static void pprun_fini(void *state)
{
    struct pprun *p = state;
    stop_run(p);
    if (p->have_sched)
        sched_free(&p->sched);
    runfeed_fini(&p->feed);
    free(p);
}

static bool same_settings(const struct settings *a, const struct settings *b)
{
    return a->model == b->model && a->pp == b->pp && a->dp == b->dp && a->m == b->m &&
           a->batch == b->batch && a->sched == b->sched && a->prec == b->prec;
}

/* The stage counts offered for a model: 1 to 4, those that divide its layers. */
static bool pp_fits(const struct pprun *p, int model, int pp)
{
    return pp >= 1 && pp <= MAX_STAGES && p->models[model].layers % pp == 0;
}

static int pprun_set(void *state, const char *name, const char *value, struct error *e)
{
    struct pprun *p = state;
    struct settings s = p->start;
    long long v;
    if (!strcmp(name, "model")) {
        if (!strcmp(value, "tiny") || !strcmp(value, "small"))
            s.model = !strcmp(value, "small");
        else
            return error_set(e, ERR_INVAL, "model: tiny or small, not '%s'", value);
    } else if (!strcmp(name, "pp")) {
        if (units_parse_int(value, 1, MAX_STAGES, &v, e)) {
            error_prefix(e, "pp");
            return ERR_INVAL;
        }
        s.pp = (int)v;
    } else if (!strcmp(name, "dp")) {
        if (units_parse_int(value, 1, MAX_DP, &v, e)) {
            error_prefix(e, "dp");
            return ERR_INVAL;
        }
        s.dp = (int)v;
    } else if (!strcmp(name, "micro_batches")) {
        if (units_parse_int(value, 1, MAX_MICRO, &v, e)) {
            error_prefix(e, "micro_batches");
            return ERR_INVAL;
        }
        s.m = (int)v;
    } else if (!strcmp(name, "schedule")) {
        if (!strcmp(value, "gpipe") || !strcmp(value, "1f1b"))
            s.sched = !strcmp(value, "gpipe") ? SCHED_GPIPE : SCHED_1F1B;
        else
            return error_set(e, ERR_INVAL, "schedule: gpipe or 1f1b, not '%s'", value);
    } else if (!strcmp(name, "precision")) {
        if (!strcmp(value, "fp32") || !strcmp(value, "bf16") || !strcmp(value, "fp16"))
            s.prec = !strcmp(value, "fp32") ? FP_FP32 : !strcmp(value, "bf16") ? FP_BF16 : FP_FP16;
        else
            return error_set(e, ERR_INVAL, "precision: fp32, bf16 or fp16, not '%s'", value);
    } else if (!strcmp(name, "batch")) {
        if (units_parse_int(value, 1, 64, &v, e)) {
            error_prefix(e, "batch");
            return ERR_INVAL;
        }
        s.batch = (int)v;
    } else {
        return error_set(e, ERR_INVAL,
                         "the pipeline run panel knows model, pp, dp, micro_batches, schedule, "
                         "precision and batch, not '%s'",
                         name);
    }
    if (!pp_fits(p, s.model, s.pp))
        return error_set(e, ERR_INVAL, "pp %d does not divide %s's %d layers", s.pp,
                         model_names[s.model], p->models[s.model].layers);
    /* a step's settings come one by one: restart only for one that changes the run, or when
     * the run has moved on */
    bool again = !same_settings(&s, &p->s) || p->allowed > 0 || !p->run;
    p->s = p->start = s;
    if (again)
        restart(p);
    return 0;
}

static int pprun_on_key(void *state, int key)
{
    struct pprun *p = state;
    struct settings *s = &p->s;
    switch (key) {
    case 'p': /* the next stage count that divides the layers, round the circle */
    case 'P':
        do
            s->pp = (s->pp + (key == 'p' ? 0 : MAX_STAGES - 2)) % MAX_STAGES + 1;
        while (!pp_fits(p, s->model, s->pp));
        break;
    case 'm': s->m = s->m >= MAX_MICRO ? 1 : 2 * s->m; break;
    case 'M': s->m = s->m <= 1 ? MAX_MICRO : s->m / 2; break;
    case 'd': s->dp = s->dp >= MAX_DP ? 1 : 2 * s->dp; break;
    case 'D': s->dp = s->dp <= 1 ? MAX_DP : s->dp / 2; break;
    case 's': s->sched = s->sched == SCHED_GPIPE ? SCHED_1F1B : SCHED_GPIPE; break;
    case 'o':
        s->model = !s->model;
        while (!pp_fits(p, s->model, s->pp))
            s->pp--;
        break;
    case 'f': p->show_free = !p->show_free; return PANEL_HANDLED | PANEL_REDRAW;
    default: return 0;
    }
    restart(p);
    say_restart(p);
    return PANEL_HANDLED | PANEL_REDRAW;
}

static int pprun_on_event(void *state, const struct panel_event *ev)
{
    struct pprun *p = state;
    switch (ev->kind) {
    case PANEL_PLAY: return p->run || p->replaying ? PANEL_ANIMATE | PANEL_REDRAW : 0;
    case PANEL_PAUSE: return 0;
    case PANEL_STEP:
        /* paused: the rest of the step being replayed, or the whole of the next one */
        if (!p->replaying && p->run) {
            take_setup(p);
            allow(p, p->shown + 1);
            if (!start_replay(p, 2.0) && p->run)
                eventlog_add(p->log, "run: step %ld is still running: n again shows it",
                             p->shown + 1);
        }
        if (p->replaying)
            finish_replay(p);
        return PANEL_REDRAW;
    case PANEL_RESET:
        if (!same_settings(&p->s, &p->start) || p->allowed > 0 || !p->run) {
            p->s = p->start;
            restart(p);
            say_restart(p);
        }
        return PANEL_REDRAW;
    case PANEL_TICK:
        take_setup(p);
        allow(p, p->shown + 1 + AHEAD);
        advance(p, ev->dt / REPLAY_S);
        allow(p, p->shown + 1 + AHEAD);
        return p->run || p->replaying ? PANEL_ANIMATE | PANEL_REDRAW : PANEL_REDRAW;
    }
    return 0;
}

/* ------------------------------------------------------------------ drawing */

/* The grid of GPUs: a row per stage, a column per data-parallel rank. */
static int draw_grid(const struct pprun *p, struct ui_canvas *c, int y)
{
    int W = c->r.w, dp = p->s.dp;
    int colw = (W - 3) / dp;
    bool totals = colw >= 30;
    for (int st = 0; st < p->s.pp; st++, y++) {
        canvas_printf(c, y, 0, ROLE_DIM, "s%d", st);
        for (int r = 0; r < dp; r++) {
            int g = st * dp + r, x = 3 + r * colw;
            struct memory_result m;
            runfeed_as_result(p->feed.cur[g], p->spec.hbm_bytes, &m);
            x = canvas_printf(c, y, x, ROLE_DIM, "%2d ", g);
            int bw = colw - 4 - (totals ? 10 : 0);
            if (bw > 0)
                memui_draw_bar(c, y, x, bw, &m, p->scale);
            if (totals) {
                char b[32];
                units_format_bytes(b, sizeof b, m.total, UNITS_BINARY);
                canvas_printf(c, y, x + bw, ROLE_TEXT, " %9s", b);
            }
        }
    }
    return y;
}

/* The op of row `ops` drawn in the column [a, b) of simulated time, or NULL: the one covering
 * most of it among those started by `upto` (their ends cut there). */
static const struct pp_done *op_at(const struct pp_done *ops, int n, double a, double b,
                                   double upto)
{
    const struct pp_done *best = NULL;
    double most = -1;
    for (int i = 0; i < n; i++) {
        const struct pp_done *o = &ops[i];
        double end = fmin(o->end_s, upto);
        if (o->start_s > upto || o->start_s >= b || end < a)
            continue;
        double cover = fmin(end, b) - fmax(o->start_s, a);
        if (cover > most)
            most = cover, best = o;
    }
    return best;
}

static int draw_gantt(const struct pprun *p, struct ui_canvas *c, int y)
{
    const struct ppgantt *g = p->show_free && p->free_ok ? &p->gfree : &p->g;
    int W = c->r.w, gw = W - 4;
    double a0 = INFINITY, a1 = -INFINITY;
    for (int st = 0; st < g->stages; st++)
        for (int i = 0; i < g->n[st]; i++)
            a0 = fmin(a0, g->ops[st][i].start_s), a1 = fmax(a1, g->ops[st][i].end_s);
    double per = a1 > a0 && gw > 0 ? (a1 - a0) / gw : 0;
    for (int st = 0; st < p->s.pp; st++, y++) {
        canvas_printf(c, y, 0, ROLE_DIM, "s%d", st);
        if (!(per > 0))
            continue;
        for (int col = 0; col < gw; col++) {
            double a = a0 + col * per, b = a + per;
            /* with free sends the operations show in the order they ran */
            double upto = p->replaying ? p->tc : INFINITY;
            const struct pp_done *o = NULL;
            if (g == &p->gfree) {
                int n = 0;
                while (n < g->n[st] && p->g.ops[st][n].start_s <= upto)
                    n++;
                o = op_at(g->ops[st], n, a, b, INFINITY);
            } else {
                o = op_at(g->ops[st], g->n[st], a, b, upto);
            }
            char ch[2] = {'.', 0};
            enum ui_role role = ROLE_DIM;
            if (o) {
                bool fwd = o->kind == 'F';
                ch[0] = (char)((fwd ? '0' : 'a') + (o->micro < 10 ? o->micro : 9));
                role = fwd ? ROLE_EXP : ROLE_MAN;
            }
            canvas_text(c, y, 3 + col, role, ch);
        }
    }
    return y;
}

static void pprun_draw(const void *state, struct ui_canvas *c)
{
    const struct pprun *p = state;
    int W = c->r.w, H = c->r.h, y = 0, pp = p->s.pp;
    char b1[32], b2[32];
    int x = canvas_printf(c, y, 0, ROLE_TEXT, "%s, pp %d x dp %d, %s, m %d, batch %d, %s",
                          model_names[p->s.model], pp, p->s.dp, sched_name(p->run_sched), p->s.m,
                          p->batch, fp_info(p->s.prec)->key);
    if (p->s.pp == 1 && p->s.sched == SCHED_GPIPE && x + 12 <= W)
        canvas_text(c, y, x, ROLE_DIM, " (one stage)");
    y++;
    if (p->err[0]) {
        canvas_wrap(c, y + 1, ROLE_ERROR, p->err, 0);
        return;
    }
    /* rows: header, status, the grid, the verdict, the chart's head and rows, two of bubble,
     * in flight, sent; the rest for the optional lines */
    int spare = H - (2 + pp + 1 + 1 + pp + 2 + 1 + 1 + (p->s.dp > 1));
    /* the optional lines, most wanted first: why the bubbles differ, the free sends' bubble,
     * the chart's time axis, the bars' legend */
    bool have = p->shown && p->done.n[0] > 0;
    bool show_why = have && spare-- > 0;
    bool show_free = have && p->free_ok && spare-- > 0;
    bool show_axis = spare-- > 0, show_legend = spare-- > 0;
    if (p->replaying) {
        units_format_seconds(b1, sizeof b1, p->tc - p->feed.t0);
        units_format_seconds(b2, sizeof b2, p->feed.t1 - p->feed.t0);
        canvas_printf(c, y++, 0, ROLE_TEXT, "step %ld  simulated %s of %s", p->rs.s.step, b1, b2);
    } else if (p->shown) {
        units_format_seconds(b1, sizeof b1, p->last.sim_time_s);
        canvas_printf(c, y++, 0, ROLE_TEXT, "step %ld  loss %.4f  %s simulated", p->last.s.step,
                      p->last.s.loss, b1);
    } else {
        canvas_text(c, y++, 0, ROLE_DIM, "buffers allocated: space runs, n one step");
    }
    if (show_legend) {
        static const char *const part_name[MEMUI_PARTS] = {"wt",  "grad", "mst",
                                                           "opt", "act",  "buf"};
        const struct ui_glyphs *gl = theme_glyphs();
        x = canvas_text(c, y, 0, ROLE_DIM, "GPU ");
        for (int i = 0; i < MEMUI_PARTS; i++) {
            char letter[2] = {memui_part_letter[i], 0};
            x = canvas_text(c, y, x, memui_part_role[i], theme_color() ? gl->bar : letter);
            x = canvas_printf(c, y, x + 1, ROLE_DIM, "%s ", part_name[i]);
        }
        y++;
    }
    y = draw_grid(p, c, y);
    /* the ledgers against the calculator */
    if (p->shown && p->pred_ok) {
        int g = 0, i = verdict(p, &g);
        if (i < 0)
            canvas_printf(c, y, 0, ROLE_GOOD, "ledger = calc, all %d GPUs", p->gpus);
        else
            canvas_printf(c, y, 0, ROLE_ERROR, "GPU %d: %s differs from calc", g,
                          ledger_cat_name(runfeed_part_cat[i]));
    } else if (p->pred_ok) {
        runfeed_bytes(b1, sizeof b1, p->stage_m[0].total, 12);
        canvas_printf(c, y, 0, ROLE_DIM, "calc: stage 0's GPUs hold %s B at peak", b1);
    }
    y++;

    /* the chart */
    long step = p->replaying ? p->rs.s.step : p->last.s.step;
    if (pp == 1 && p->s.m == 1)
        x = canvas_text(c, y, 0, ROLE_TITLE, "one stage, one micro-batch: no pipeline");
    else if (step)
        x = canvas_printf(c, y, 0, ROLE_TITLE, "step %ld%s", step,
                          p->show_free ? ", sends free" : "");
    else
        x = canvas_text(c, y, 0, ROLE_TITLE, "the Gantt chart");
    if (x + 40 <= W)
        canvas_printf(c, y, x, ROLE_DIM, ": 0-%d forward, a-%c backward", p->s.m - 1,
                      'a' + p->s.m - 1);
    y++;
    y = draw_gantt(p, c, y);
    if (show_axis) { /* the time axis */
        const struct ppgantt *g = p->show_free && p->free_ok ? &p->gfree : &p->g;
        double a0 = INFINITY, a1 = -INFINITY;
        for (int st = 0; st < g->stages; st++)
            for (int i = 0; i < g->n[st]; i++)
                a0 = fmin(a0, g->ops[st][i].start_s), a1 = fmax(a1, g->ops[st][i].end_s);
        if (a1 > a0) { /* the chart's span, right-aligned to its end */
            units_format_seconds(b1, sizeof b1, a1 - a0);
            canvas_text(c, y, 3, ROLE_DIM, "0");
            int len = (int)strlen(b1) + 10;
            if (W - 4 - len > 6)
                canvas_printf(c, y, W - 1 - len, ROLE_DIM, "%s simulated", b1);
        }
        y++;
    }

    /* the bubble: measured on the last step, and the calculator's formulas */
    double fi = sched_bubble_over_ideal(pp, p->s.m, 1), fw = sched_bubble_over_wall(pp, p->s.m, 1);
    if (have)
        canvas_printf(c, y, 0, ROLE_TEXT, "bubble measured %.*f%% ideal, %.1f%% wall",
                      p->bub.over_ideal < 10 ? 1 : 0, 100 * p->bub.over_ideal,
                      100 * p->bub.over_wall);
    else
        canvas_text(c, y, 0, ROLE_DIM, "bubble measured: after a step");
    y++;
    canvas_printf(c, y++, 0, ROLE_TEXT, "calc (p-1)/m %.1f%%, (p-1)/(m+p-1) %.1f%%", 100 * fi,
                  100 * fw);
    if (show_free)
        canvas_printf(c, y++, 0, ROLE_DIM, "sends free: %.1f%% ideal, %.1f%% wall",
                      100 * p->bub_free.over_ideal, 100 * p->bub_free.over_wall);
    if (show_why) {
        /* why the measured bubble is larger: the links' latency against the compute */
        double alpha = p->gpus <= p->spec.gpus_per_node ? p->spec.alpha_intra : p->spec.alpha_inter;
        units_format_seconds(b1, sizeof b1, p->fwd_s);
        units_format_seconds(b2, sizeof b2, alpha);
        x = canvas_printf(c, y, 0, ROLE_DIM, "why: forward %s, send latency %s", b1, b2);
        if (x + 31 <= W)
            canvas_text(c, y, x, ROLE_DIM, ": the stages wait on the links");
        y++;
    }
    /* in flight */
    x = canvas_text(c, y, 0, ROLE_TEXT, "held:");
    for (int st = 0; st < pp && have; st++)
        x = canvas_printf(c, y, x, ROLE_TEXT, " %d", ppg_peak_in_flight(&p->done, st));
    if (p->have_sched) {
        bool same = true;
        for (int st = 0; st < pp && have; st++)
            same &= ppg_peak_in_flight(&p->done, st) == p->sched.peak_chunks[st];
        x = canvas_text(c, y, x + 1, !have ? ROLE_DIM : same ? ROLE_GOOD : ROLE_ERROR, "(schedule");
        for (int st = 0; st < pp; st++)
            x = canvas_printf(c, y, x,
                              !have  ? ROLE_DIM
                              : same ? ROLE_GOOD
                                     : ROLE_ERROR,
                              " %d", p->sched.peak_chunks[st]);
        x = canvas_text(c, y, x, !have ? ROLE_DIM : same ? ROLE_GOOD : ROLE_ERROR, ")");
        if (have && x + 9 <= W) /* the executed order against the schedule's */
            canvas_text(c, y, x + 1, p->order_ok ? ROLE_GOOD : ROLE_ERROR,
                        p->order_ok ? "order ok" : "order !=");
    }
    y++;
    /* bytes sent per step by each stage's GPUs, pipeline and data-parallel */
    for (int kind = 0; kind < 2 && y < H; kind++) {
        bool pipe = kind == 0;
        x = canvas_text(c, y, 0, ROLE_TEXT, pipe ? "pp B/step" : "dp B/step");
        for (int st = 0; st < pp; st++) {
            const struct traffic *t = &p->stage_t[st];
            double v = p->shown ? (double)(pipe ? p->last.gpu[st * p->s.dp].pp_bytes
                                                : p->last.gpu[st * p->s.dp].sent_bytes)
                                : (p->pred_ok ? (pipe ? t->pp.bytes : t->dp.bytes) : 0);
            runfeed_bytes(b1, sizeof b1, v, W >= 60 ? 9 : 7);
            x = canvas_printf(c, y, x, ROLE_TEXT, " %s", b1);
        }
        if (p->shown && p->pred_ok) {
            bool same = sent_as_predicted(p, pipe);
            canvas_text(c, y, x + 1, same ? ROLE_GOOD : ROLE_ERROR, same ? "= calc" : "!= calc");
        } else {
            canvas_text(c, y, x + 1, ROLE_DIM, "(calc)");
        }
        y++;
    }
    if (p->feed.dropped && y < H)
        canvas_printf(c, y, 0, ROLE_WARN, "(%lu events missed: the bars may be off)",
                      p->feed.dropped);
}

static const struct panel_key pprun_keys[] = {
    {"p P", "more / fewer pipeline stages: 1, 2, 4 (small: 1, 2, 3); restarts the run", "stages"},
    {"m M", "twice / half the micro-batches, 1 to 8 (restarts)", "micro"},
    {"d D", "twice / half the data-parallel ranks, 1 to 4 (restarts)", "dp"},
    {"s", "schedule: GPipe or 1F1B (restarts)", "schedule"},
    {"o", "model: tiny or small (restarts)", NULL},
    {"f", "the chart with free sends: the same operations, no link latency", "free"},
    {NULL, NULL, NULL},
};

const struct panel_ops panel_pprun = {
    .name = "pprun",
    .title = "Pipeline parallelism, running",
    .about = "A real pipeline-parallel run of the tiny GPT on thread-GPUs: each GPU's memory "
             "from its own ledger (a row per stage, a column per data-parallel rank), the "
             "Gantt chart drawn from the operations as the stages run them, the bubble "
             "measured beside the calculator's formula, the micro-batches each stage holds and "
             "the bytes each sends, beside the calculator's.",
    .init = pprun_init,
    .fini = pprun_fini,
    .on_key = pprun_on_key,
    .on_event = pprun_on_event,
    .set = pprun_set,
    .draw = pprun_draw,
    .plays = true,
    .keys = pprun_keys,
};
