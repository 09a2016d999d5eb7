/* A run panel's run, paced by the screen, and its step-by-step replay (ui/runpace.h). */
#include "config.h"
#include "ui/runpace.h"

#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "base/clock.h"
#include "base/units.h"
#include "calc/memory.h"
#include "ui/draw.h"
#include "ui/eventlog.h"
#include "ui/panel.h"
#include "ui/term.h"

#define AHEAD        2   /* steps the run may finish beyond the one shown */
#define MAX_PER_TICK 8   /* steps replayed in one tick at the highest speeds */
#define SETTLE_S     5.0 /* the longest wait for the GPUs' setup */

const char *const runpace_model_names[2] = {"tiny", "small"};

int runpace_init(struct runpace *r, const struct runpace_ops *ops, void *panel,
                 struct eventlog *log, struct error *e)
{
    memset(r, 0, sizeof *r);
    r->ops = ops, r->panel = panel, r->log = log;
    r->tprev = INFINITY;
    int rc = 0;
    for (int i = 0; i < 2 && !rc; i++)
        if (!(rc = preset_load_model(runpace_model_names[i], &r->models[i], e)))
            rc = train_shape_of(&r->models[i], &r->shapes[i], e);
    if (preset_load_cluster(PRESET_CLUSTER, &r->spec, NULL) != 0)
        spec_default(&r->spec);
    return rc ? rc : runfeed_init(&r->feed, e);
}

static void stop(struct runpace *r)
{
    run_free(r->run); /* stops it at the next step boundary and joins its threads */
    r->run = NULL;
}

void runpace_fini(struct runpace *r)
{
    stop(r);
    runfeed_fini(&r->feed);
}

/* The run has ended (a GPU failed): why, once, and the run stopped. */
static void fail(struct runpace *r)
{
    struct error e = {0};
    if (r->run && run_finish(r->run, &e) && !r->err[0]) {
        snprintf(r->err, sizeof r->err, "%s", e.msg);
        eventlog_add(r->log, "%s: %s", r->ops->name, e.msg);
    }
    stop(r);
}

void runpace_options(const struct runpace *r, int m, enum fp_format prec, int batch, int gpus,
                     struct train_opts *o)
{
    train_opts_lab(o, NULL);
    o->shape = r->shapes[m];
    o->batch = batch;
    o->steps = 1L << 40; /* the window runs until stopped */
    o->precision = prec;
    o->scaling = train_scaling_for(prec);
    o->gpus = gpus;
    o->bucket_bytes = (size_t)MEMORY_BUCKET;
    o->prefetch = 1;
}

void runpace_clear(struct runpace *r)
{
    stop(r);
    runfeed_reset(&r->feed);
    r->replaying = false;
    r->shown = r->allowed = 0;
    r->err[0] = 0;
    memset(&r->last, 0, sizeof r->last);
    r->tprev = INFINITY;
}

int runpace_next(struct run *run, struct run_step *out, double timeout_s)
{
    double until = clock_now() + timeout_s;
    for (;;) { /* short waits: a signal is seen within 50 ms */
        double left = until - clock_now();
        int got = run_next(run, out, left < 0.05 ? (left > 0 ? left : 0) : 0.05);
        if (got != 0 || term_signal() || left <= 0)
            return got;
    }
}

/* Waits until every GPU has built its trainer and waits for the screen to allow its first
 * step, or one failed (it never waits), SETTLE_S at most (small on 16 GPUs takes about 3 s on
 * two busy cores), or a signal ends the window; then takes the memory events of that setup. */
static void settle(struct runpace *r, int gpus)
{
    for (int i = 0; i < SETTLE_S * 500 && run_waiting(r->run) < gpus; i++) {
        if (runfeed_failed(&r->feed) || term_signal())
            break;
        struct timespec ms = {0, 2000000};
        nanosleep(&ms, NULL);
    }
    runfeed_take_setup(&r->feed);
}

int runpace_start(struct runpace *r, const struct train_opts *o)
{
    if (r->check_only) /* nothing started, nothing to say */
        return -1;
    struct run_config cfg = {0};
    r->o = *o;
    cfg.o = *o;
    cfg.spec = r->spec;
    cfg.spec.nodes = (o->gpus + cfg.spec.gpus_per_node - 1) / cfg.spec.gpus_per_node;
    cfg.paced = true;
    cfg.on_event = runfeed_on_event;
    cfg.event_ctx = &r->feed;
    struct error e = {0};
    if (run_new(&r->run, &cfg, &e) != 0 || run_start(r->run, &e) != 0) {
        snprintf(r->err, sizeof r->err, "%s", e.msg);
        stop(r);
        return -1;
    }
    settle(r, o->gpus);
    return 0;
}

bool runpace_fresh(const struct runpace *r)
{
    return r->run && r->allowed == 0;
}

int runpace_set_model(const char *value, int *m, struct error *e)
{
    for (int i = 0; i < 2; i++)
        if (!strcmp(value, runpace_model_names[i])) {
            *m = i;
            return 0;
        }
    return error_set(e, ERR_INVAL, "model: tiny or small, not '%s'", value);
}

int runpace_set_int(const char *name, const char *value, int lo, int hi, int *out, struct error *e)
{
    long long v;
    if (units_parse_int(value, lo, hi, &v, e)) {
        error_prefix(e, "%s", name);
        return ERR_INVAL;
    }
    *out = (int)v;
    return 0;
}

int runpace_within(const char *name, int v, int lo, int hi, struct error *e)
{
    if (v < lo || v > hi)
        return error_set(e, ERR_INVAL, "%s %d: this panel runs %d to %d", name, v, lo, hi);
    return 0;
}

static void allow(struct runpace *r, long upto)
{
    if (r->run && upto > r->allowed) {
        r->allowed = upto;
        run_allow(r->run, upto);
    }
}

/* Before the first step: the buffers the GPUs allocate as they start, as they come (those
 * the settling did not wait for). */
static void take_setup(struct runpace *r)
{
    if (r->allowed > 0)
        return;
    runfeed_take_setup(&r->feed);
}

/* Starts replaying the next step if the run has finished it (or does within wait_s). */
static bool start_replay(struct runpace *r, double wait_s)
{
    if (!r->run)
        return false;
    int got = runpace_next(r->run, &r->rs, wait_s);
    if (got < 0)
        fail(r);
    if (got != 1)
        return false;
    if (!runfeed_begin_step(&r->feed, r->rs.s.step))
        return false;
    r->ops->begin(r->panel);
    r->frac = 0, r->tc = r->feed.t0;
    r->replaying = true;
    return true;
}

static void finish_replay(struct runpace *r)
{
    runfeed_end_step(&r->feed); /* the rest of the step, then each ledger exact */
    r->replaying = false;
    r->tc = r->tprev = INFINITY;
    r->last = r->rs;
    r->shown++;
    r->ops->end(r->panel);
}

/* The replay moves on by `steps` steps' worth; returns the steps finished. */
static int advance(struct runpace *r, double steps)
{
    int done = 0;
    while (steps > 1e-9 && done < MAX_PER_TICK) {
        if (!r->replaying && !start_replay(r, 0))
            break;
        double use = fmin(steps, 1 - r->frac);
        r->frac += use, steps -= use;
        r->tprev = r->tc;
        r->tc = r->ops->clock ? r->ops->clock(r->panel, r->frac)
                              : r->feed.t0 + r->frac * (r->feed.t1 - r->feed.t0);
        for (const struct runrec *rec; (rec = runfeed_next(&r->feed, r->tc));)
            if (r->ops->record)
                r->ops->record(r->panel, rec);
        if (r->frac >= 1 - 1e-9) {
            finish_replay(r);
            done++;
        }
    }
    return done;
}

int runpace_on_event(struct runpace *r, const struct panel_event *ev)
{
    switch (ev->kind) {
    case PANEL_PLAY: return r->run || r->replaying ? PANEL_ANIMATE | PANEL_REDRAW : 0;
    case PANEL_PAUSE: return 0;
    case PANEL_STEP:
        /* paused: the rest of the step being replayed, or the whole of the next one */
        if (!r->replaying && r->run) {
            take_setup(r);
            allow(r, r->shown + 1);
            if (!start_replay(r, RUNPACE_STEP_WAIT_S) && r->run && !term_signal())
                eventlog_add(r->log, "run: step %ld is still running: n again shows it",
                             r->shown + 1);
        }
        if (r->replaying)
            finish_replay(r);
        return PANEL_REDRAW;
    case PANEL_RESET: return PANEL_REDRAW; /* the panel's settings, its restart */
    case PANEL_TICK:
        take_setup(r);
        allow(r, r->shown + 1 + AHEAD);
        advance(r, ev->dt / r->ops->replay_s);
        allow(r, r->shown + 1 + AHEAD);
        return r->run || r->replaying ? PANEL_ANIMATE | PANEL_REDRAW : PANEL_REDRAW;
    }
    return 0;
}

void runpace_draw_step(const struct runpace *r, struct ui_canvas *c, int y, const char *idle)
{
    char b1[32], b2[32];
    if (r->replaying) {
        units_format_seconds(b1, sizeof b1, r->tc - r->feed.t0);
        units_format_seconds(b2, sizeof b2, r->feed.t1 - r->feed.t0);
        canvas_printf(c, y, 0, ROLE_TEXT, "step %ld  simulated %s of %s", r->rs.s.step, b1, b2);
    } else if (r->shown) {
        units_format_seconds(b1, sizeof b1, r->last.sim_time_s);
        canvas_printf(c, y, 0, ROLE_TEXT, "step %ld  loss %.4f  %s simulated", r->last.s.step,
                      r->last.s.loss, b1);
    } else {
        canvas_text(c, y, 0, ROLE_DIM, idle);
    }
}
