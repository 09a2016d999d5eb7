/* A run panel's run, paced by the screen, and its step-by-step replay (ui/runpace.h). */
#include "config.h"
#include "ui/runpace.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "base/units.h"
#include "calc/memory.h"
#include "par/layout.h"
#include "par/timeas.h"
#include "ui/draw.h"
#include "ui/eventlog.h"
#include "ui/memui.h"
#include "ui/panel.h"
#include "ui/term.h"

#define AHEAD        2 /* steps the run may finish beyond the one shown */
#define MAX_PER_TICK 8 /* steps replayed in one tick at the highest speeds */

const char *const runpace_model_names[2] = {"tiny", "small"};

int runpace_init(struct runpace *r, const struct runpace_ops *ops, void *panel, void *cur,
                 void *start, const struct panel_env *env, struct error *e)
{
    memset(r, 0, sizeof *r);
    r->ops = ops, r->panel = panel, r->cur = cur, r->start = start;
    r->log = env->log, r->check_only = env->check_only;
    r->tprev = INFINITY;
    int rc = 0;
    for (int i = 0; i < 2 && !rc; i++)
        if (!(rc = preset_load_model(runpace_model_names[i], &r->models[i], e)))
            rc = train_shape_of(&r->models[i], &r->shapes[i], e);
    if (preset_load_cluster(PRESET_CLUSTER, &r->spec, NULL) != 0)
        spec_default(&r->spec);
    r->have_as = preset_load_model(RUNPACE_TIME_AS, &r->as, NULL) == 0;
    return rc ? rc : runfeed_init(&r->feed, e);
}

/* The run, its threads joined (at once when it has ended), and its tap. */
static void free_run(struct run **run, struct runfeed_tap **tap)
{
    run_free(*run); /* stops it at the next step boundary and joins its threads */
    free(*tap);
    *run = NULL, *tap = NULL;
}

void runpace_fini(struct runpace *r)
{
    free_run(&r->run, &r->tap);
    free_run(&r->old, &r->old_tap);
    runfeed_fini(&r->feed);
    free(r->spans);
}

/* The run has ended (a GPU failed): why, once, and the run stopped. */
static void fail(struct runpace *r)
{
    struct error e = {0};
    if (r->run && run_finish(r->run, &e) && !r->err[0]) {
        snprintf(r->err, sizeof r->err, "%s", e.msg);
        eventlog_add(r->log, "%s: %s", r->ops->name, e.msg);
    }
    free_run(&r->run, &r->tap);
    r->steps_wanted = 0;
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
    o->bucket_bytes = r->bucket ? r->bucket : (size_t)MEMORY_BUCKET;
    o->prefetch = 1;
}

void runpace_clear(struct runpace *r)
{
    if (r->run && r->launched) { /* it stops on its own threads; the next waits for it */
        run_stop(r->run);
        r->old = r->run, r->old_tap = r->tap;
        r->run = NULL, r->tap = NULL;
    }
    free_run(&r->run, &r->tap); /* one not launched yet has no threads to wait for */
    r->launched = r->ready = false;
    r->steps_wanted = 0;
    r->waiting = 0;
    runfeed_reset(&r->feed); /* and the stopping run's tap closed */
    r->replaying = false;
    r->shown = r->allowed = 0;
    r->err[0] = 0;
    memset(&r->last, 0, sizeof r->last);
    r->tprev = INFINITY;
    r->timed = false, r->untimed[0] = 0, r->bucket = 0;
    r->nspans = 0, r->span_t0 = r->span_t1 = 0;
}

/* GPUs like the panels' for the run of o: as many nodes as it takes. */
static struct cluster_spec spec_for(const struct runpace *r, const struct train_opts *o)
{
    struct cluster_spec s = r->spec;
    s.nodes = (o->gpus + s.gpus_per_node - 1) / s.gpus_per_node;
    return s;
}

void runpace_time(struct runpace *r, struct train_opts *o, const struct model_shape *run)
{
    struct error e = {0};
    r->timed = false, r->bucket = 0;
    if (!r->have_as) {
        snprintf(r->untimed, sizeof r->untimed, "no preset %s to time the run as", RUNPACE_TIME_AS);
        return;
    }
    struct cluster_spec s = spec_for(r, o);
    if (timeas_scale(o, run, &r->as, &s, &e)) {
        snprintf(r->untimed, sizeof r->untimed, "%s", e.msg);
        return;
    }
    size_t es = o->grad_fp32 || o->precision == FP_FP32 ? 4 : 2;
    o->bucket_bytes = r->bucket = timeas_bucket(&s, o->bucket_bytes, es);
    r->timed_spec = s, r->timed = true, r->untimed[0] = 0;
}

void runpace_first(struct runpace *r)
{
    memcpy(r->start, r->cur, r->ops->settings);
    r->ops->restart(r->panel);
}

bool runpace_run_on(struct runpace *r, const void *s)
{
    if (r->ops->same(s, r->cur) && runpace_fresh(r))
        return false;
    memmove(r->cur, s, r->ops->settings);
    r->ops->restart(r->panel);
    return true;
}

int runpace_set(struct runpace *r, const void *s)
{
    memmove(r->start, s, r->ops->settings);
    runpace_run_on(r, s);
    return 0;
}

/* The restart in the event log, and the note of a key refused before it. */
static void say_restart(struct runpace *r)
{
    r->ops->say_restart(r->panel);
    if (r->note[0])
        eventlog_add(r->log, "%s: %s", r->ops->tag, r->note);
}

int runpace_rekeyed(struct runpace *r, const char *note)
{
    snprintf(r->note, sizeof r->note, "%s", note ? note : "");
    r->ops->restart(r->panel);
    say_restart(r);
    return PANEL_HANDLED | PANEL_REDRAW;
}

int runpace_refuse(struct runpace *r, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->note, sizeof r->note, fmt, ap);
    va_end(ap);
    eventlog_add(r->log, "%s: %s", r->ops->tag, r->note);
    return PANEL_HANDLED | PANEL_REDRAW;
}

int runpace_panel_event(struct runpace *r, const struct panel_event *ev)
{
    if (ev->kind == PANEL_RESET && runpace_run_on(r, r->start)) /* back to the step's settings */
        say_restart(r);
    return runpace_on_event(r, ev);
}

bool runpace_draw_note(const struct runpace *r, struct ui_canvas *c, int y)
{
    if (!r->note[0] || r->replaying)
        return false;
    canvas_text(c, y, 0, ROLE_WARN, r->note);
    return true;
}

bool runpace_draw_missed(const struct runpace *r, struct ui_canvas *c, int y)
{
    if (!r->feed.dropped)
        return false;
    canvas_printf(c, y, 0, ROLE_WARN, "(%lu events missed: the bars may be off)", r->feed.dropped);
    return true;
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

/* The run made, once no run is stopping: its threads started, its GPUs setting up. */
static void launch(struct runpace *r)
{
    if (!r->run || r->launched || r->old)
        return;
    struct error e = {0};
    if (run_start(r->run, &e) != 0) {
        snprintf(r->err, sizeof r->err, "%s", e.msg);
        free_run(&r->run, &r->tap);
        return;
    }
    r->launched = true;
}

int runpace_start(struct runpace *r, const struct train_opts *o)
{
    if (r->check_only) /* nothing started, nothing to say */
        return -1;
    struct run_config cfg = {0};
    r->o = *o;
    cfg.o = *o;
    cfg.spec = r->timed ? r->timed_spec : spec_for(r, o);
    cfg.paced = true;
    cfg.on_event = runfeed_on_event;
    struct error e = {0};
    r->tap = malloc(sizeof *r->tap);
    if (!r->tap) {
        snprintf(r->err, sizeof r->err, "out of memory");
        return -1;
    }
    runfeed_tap_open(&r->feed, r->tap);
    cfg.event_ctx = r->tap;
    if (run_new(&r->run, &cfg, &e) != 0) { /* made now: what it refuses is said now */
        snprintf(r->err, sizeof r->err, "%s", e.msg);
        free_run(&r->run, &r->tap);
        return -1;
    }
    r->floor = NAN; /* GPU 0 computes it as it sets up */
    launch(r);
    return r->err[0] ? -1 : 0;
}

bool runpace_fresh(const struct runpace *r)
{
    return r->run && r->allowed == 0;
}

/* What the run's threads have done since the last look, never waiting for them: the run
 * before ended (then the next one starts), the GPUs' buffers as they are set up, a failure.
 * Whether the run is ready for its steps. */
static bool look(struct runpace *r)
{
    if (r->old && run_ended(r->old)) {
        free_run(&r->old, &r->old_tap); /* at once: its threads have ended */
        launch(r);
    }
    if (r->run && r->launched && !r->ready) {
        r->waiting = run_waiting(r->run); /* every buffer of those is in the feed now */
        runfeed_take_setup(&r->feed);     /* the bars grow as the GPUs set up */
        r->ready = r->waiting >= r->o.gpus;
        if (r->ready)
            r->floor = run_loss_floor(r->run);
        if (!r->ready && runfeed_failed(&r->feed) && run_ended(r->run))
            fail(r);
    }
    return r->run && r->ready;
}

/* Whether something goes on that a poll will see the end of. */
static bool busy(const struct runpace *r)
{
    return r->old || (r->run && !r->ready) || r->steps_wanted > 0;
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

/* Starts replaying the next step if the run has finished it. */
static bool start_replay(struct runpace *r)
{
    if (!r->run)
        return false;
    int got = run_next(r->run, &r->rs, 0);
    if (got < 0)
        fail(r);
    if (got != 1)
        return false;
    if (!runfeed_begin_step(&r->feed, r->rs.s.step))
        return false;
    r->note[0] = 0; /* said until now */
    r->ops->begin(r->panel);
    r->frac = 0, r->tc = r->feed.t0;
    r->replaying = true;
    return true;
}

/* The step's compute and sends as the timeline's spans, kept until the next step is done. */
static void keep_spans(struct runpace *r)
{
    const struct runfeed *f = &r->feed;
    if (r->capspans < f->nrep) {
        struct timeline_span *s = realloc(r->spans, f->nrep * sizeof *s);
        if (!s)
            return; /* the timeline shows the step before */
        r->spans = s, r->capspans = f->nrep;
    }
    r->nspans = 0;
    for (size_t i = 0; i < f->nrep; i++) {
        const struct runrec *q = &f->rep[i];
        if (q->type == EV_COMPUTE_BEGIN || q->type == EV_SEND)
            r->spans[r->nspans++] = (struct timeline_span){
                q->device, q->type == EV_SEND ? TIMELINE_COMM : TIMELINE_COMPUTE, q->t, q->t_end};
    }
    r->span_t0 = f->t0, r->span_t1 = f->t1;
}

static void finish_replay(struct runpace *r)
{
    keep_spans(r);
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
        if (!r->replaying && !start_replay(r))
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

/* The steps n asked for, once the GPUs are set up, each as it is done: shown whole. */
static void take_wanted_steps(struct runpace *r)
{
    if (r->steps_wanted <= 0 || !look(r))
        return;
    allow(r, r->shown + r->steps_wanted);
    while (r->steps_wanted > 0 && start_replay(r)) {
        finish_replay(r);
        r->steps_wanted--;
    }
}

int runpace_on_event(struct runpace *r, const struct panel_event *ev)
{
    bool going = r->run || r->replaying || r->old;
    switch (ev->kind) {
    case PANEL_PLAY: return going ? PANEL_ANIMATE | PANEL_REDRAW : 0;
    case PANEL_PAUSE: return 0;
    case PANEL_STEP:
        /* paused: the rest of the step being replayed, or the whole of the next one (shown
         * when a poll finds it done: the window never waits for it) */
        if (r->replaying)
            finish_replay(r);
        else if (going)
            r->steps_wanted++;
        take_wanted_steps(r);
        return PANEL_REDRAW;
    case PANEL_RESET: return PANEL_REDRAW; /* the panel's settings, its restart */
    case PANEL_POLL: {
        long shown = r->shown;
        bool ready = r->ready, old = r->old, run = r->run;
        int waiting = r->waiting;
        look(r);
        take_wanted_steps(r);
        bool moved = shown != r->shown || ready != r->ready || old != (r->old != NULL) ||
                     run != (r->run != NULL) || waiting != r->waiting ||
                     (r->launched && !r->ready); /* the bars grow as the GPUs set up */
        return (moved ? PANEL_REDRAW : 0) | (busy(r) ? PANEL_BUSY : 0);
    }
    case PANEL_TICK:
        if (!look(r)) /* setting up: nothing to replay yet */
            return going ? PANEL_ANIMATE | PANEL_REDRAW : PANEL_REDRAW;
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
    } else if (r->old) {
        canvas_text(c, y, 0, ROLE_WARN, "setting up: the run before is stopping");
    } else if (r->run && !r->ready) {
        canvas_printf(c, y, 0, ROLE_WARN, "setting up: %d of %d GPUs have their buffers",
                      r->waiting, r->o.gpus);
    } else if (r->steps_wanted > 0) {
        canvas_printf(c, y, 0, ROLE_TEXT, "step %ld running", r->shown + 1);
    } else if (r->shown) {
        units_format_seconds(b1, sizeof b1, r->last.sim_time_s);
        canvas_printf(c, y, 0, ROLE_TEXT, "step %ld  loss %.4f  %s simulated", r->last.s.step,
                      r->last.s.loss, b1);
    } else {
        canvas_text(c, y, 0, ROLE_DIM, idle);
    }
}

void runpace_say_verdict(const struct runpace *r, const struct memory_result *per_stage,
                         const char *tag, const char *what)
{
    int g = 0, i = runfeed_verdict(&r->feed, &r->o, per_stage, &g);
    if (i < 0) {
        eventlog_add(r->log, "%s: %s: every ledger = the calculator%s, to the byte", tag, what,
                     r->o.pp > 1 ? " for its stage" : "");
        return;
    }
    struct layout_place pl;
    layout_place(&r->o, g, 1, &pl);
    eventlog_add(r->log, "%s: GPU %d's %s: ledger %llu B, calculator %.0f B", tag, g,
                 ledger_cat_name(runfeed_part_cat[i]),
                 (unsigned long long)r->feed.peak[g][runfeed_part_cat[i]],
                 runfeed_predicted_part(&per_stage[pl.stage], i));
}

bool runpace_draw_verdict(const struct runpace *r, struct ui_canvas *c, int y,
                          const struct memory_result *per_stage)
{
    if (!r->shown)
        return false;
    int g = 0, i = runfeed_verdict(&r->feed, &r->o, per_stage, &g);
    if (i < 0)
        canvas_printf(c, y, 0, ROLE_GOOD, "ledger = calc, all %d GPUs", r->o.gpus);
    else
        canvas_printf(c, y, 0, ROLE_ERROR, "GPU %d: %s differs from calc", g,
                      ledger_cat_name(runfeed_part_cat[i]));
    return true;
}

void runpace_draw_ledger(const struct runpace *r, struct ui_canvas *c, int y, int x, int w, int lw,
                         int g, double scale)
{
    int bw = w - lw;
    struct memory_result m;
    runfeed_as_result(r->feed.cur[g], r->spec.hbm_bytes, &m);
    if (bw > 0)
        memui_draw_bar(c, y, x, bw, &m, scale);
    if (lw <= 0)
        return;
    char b[32];
    if (lw >= 11)
        units_format_bytes(b, sizeof b, m.total, UNITS_BINARY);
    else
        runfeed_bytes(b, sizeof b, m.total, lw - 1);
    canvas_printf(c, y, x + (bw > 0 ? bw : 0), ROLE_TEXT, " %*s", lw - 1, b);
}

void runpace_draw_sent(const struct runpace *r, struct ui_canvas *c, int y, const char *label,
                       const uint64_t *sent, double predicted)
{
    char b[32];
    bool shown = r->shown > 0;
    runfeed_bytes(b, sizeof b, shown ? (double)sent[0] : predicted, c->r.w < 60 ? 8 : 12);
    int x = canvas_printf(c, y, 0, ROLE_TEXT, "%s %s", label, b);
    if (!shown) {
        canvas_text(c, y, x + 1, ROLE_DIM, "(calc)");
        return;
    }
    bool same = true;
    for (int g = 0; g < r->o.gpus; g++)
        same &= (double)sent[g] == llround(predicted);
    canvas_text(c, y, x + 1, same ? ROLE_GOOD : ROLE_ERROR, same ? "each = calc" : "!= calc");
}

void runpace_draw_timing(const struct runpace *r, struct ui_canvas *c, int y)
{
    if (r->timed) {
        canvas_printf(c, y, 0, ROLE_TEXT, "timed as %s on %d %s", r->as.name, r->o.gpus,
                      r->spec.name);
        return;
    }
    int x = canvas_text(c, y, 0, ROLE_WARN, "timed as itself");
    if (x + 2 + (int)strlen(r->untimed) <= c->r.w) /* else the timeline's view says why */
        canvas_printf(c, y, x, ROLE_DIM, ": %s", r->untimed);
    else if (r->have_as)
        canvas_printf(c, y, x, ROLE_DIM, ", not as %s (w)", r->as.name);
}

int runpace_draw_timeline(const struct runpace *r, struct ui_canvas *c, int y, int rows)
{
    int W = c->r.w, n = r->o.gpus, y0 = y;
    if (rows < 1)
        return 0;
    if (!r->timed && r->untimed[0] && rows > 4) { /* why the run is not timed as the model */
        struct ui_canvas in = *c;                 /* three rows at most */
        in.r.h = y + 3 < c->r.h ? y + 3 : c->r.h;
        int k = canvas_wrap(&in, y, ROLE_DIM, r->untimed, 0); /* names the model */
        y += k, rows -= k;
    }
    if (!r->shown || r->span_t1 <= r->span_t0) {
        canvas_text(c, y, 0, ROLE_DIM, "the timeline: after a step");
        return y + 1 - y0;
    }
    struct timeline tl;
    if (timeline_build(&tl, r->spans, r->nspans, n, r->span_t0, r->span_t1, W - TIMELINE_LABEL))
        return y - y0;
    char b1[32], b2[32], b3[32];
    units_format_seconds(b1, sizeof b1, r->span_t1 - r->span_t0);
    units_format_seconds(b2, sizeof b2, tl.busy[0]);
    units_format_seconds(b3, sizeof b3, tl.exposed[0]);
    canvas_printf(c, y, 0, ROLE_TITLE,
                  W >= 60 ? "step %s: GPU 0 computes %s, exposed comm %s"
                          : "step %s: GPU0 %s, exposed %s",
                  b1, b2, b3);
    int left = rows - 1, shown = n;
    while (shown > 1 && timeline_rows(shown, shown == n) > left)
        shown--;
    if (timeline_rows(shown, shown == n) > left)
        return y + 1 - y0;
    return y + 1 - y0 + timeline_draw(&tl, c, y + 1, shown);
}
