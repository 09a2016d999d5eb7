/* Lesson 1's panel: a real mixed-precision training run of the tiny GPT, live.
 *
 * The run is the engine of `scalelab train` (src/par/run.h) on one simulated GPU, with the
 * same data and the same numbers. It runs in threads of its own and starts a step only when
 * the screen lets it: each tick gives it credit for as many steps as the speed asks for (a
 * few at most), and the panel takes the records of the steps done, so drawing never waits for
 * a step and the trainer never waits for the screen. A key that changes the run (clip, lr, a
 * bad batch, a NaN) acts from the first step the run has not started: the next one shown. Drawn:
 * the loss curve with the loss floor (the data's entropy rate), the gradient norm on a log scale
 * with the clip line, the loss scale as a log2 staircase, the fraction of each layer's weight
 * gradients that underflowed to zero in the last step, and the run's events: overflows and NaNs
 * with the tensor where they appeared, skipped steps and loss spikes, in the error colour.
 *
 * Keys: p precision (fp32, bf16, fp16), s loss scaling (dynamic, none, fixed 1024), c clip
 * (off, 1, 0.5, 0.1), l learning rate, b a bad batch at the next step (logits x 20), x a NaN
 * at the next step, g the dynamic scale's growth interval (2000, 100, 20). A change of
 * precision or scaling restarts the run; clip and learning rate change it live.
 * Settings: precision=fp32|bf16|fp16, scale=dynamic|none|VALUE, clip=none|X, lr=X,
 * growth=N, init_scale=X, batch=B, seed=S. */
#include "config.h"

#include <curses.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <time.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "base/units.h"
#include "calc/preset.h"
#include "par/run.h"
#include "ui/runpace.h"
#include "ui/draw.h"
#include "ui/layout.h"
#include "ui/eventlog.h"
#include "ui/panel.h"
#include "ui/plot.h"
#include "ui/runpace.h"
#include "ui/term.h"

#define HIST        4096
#define NEVENTS     8
#define STEPS_PER_S 10.0 /* at speed 1x */
#define RING        256  /* step records between two ticks */

struct tevent {
    char text[72];
    enum ui_role role;
};

struct train_panel {
    struct eventlog *log;
    bool check_only;            /* settings only checked (scalelab run): no run starts */
    struct train_opts o, start; /* the run's settings; the lesson step's */
    struct run *run;            /* the engine (par/run.h), paced by the screen */
    double credit;              /* steps the run may start beyond those shown */
    char err[ERROR_MAX];
    double floor;
    /* history, one entry per step (the last HIST) */
    float loss[HIST], norm[HIST], scale[HIST];
    unsigned char bad[HIST]; /* 1 skipped, 2 spike */
    long n;
    struct train_step last;
    double under_frac[65];
    int layers;
    long skipped, overflows, spikes;
    float coef[HIST]; /* the clip coefficient of each step */
    long halted;      /* the step that applied a NaN (no scaler), else 0: the run stops there, its
                       * first cause pinned */
    struct tevent ev[NEVENTS];
    int nev;
};

static const double clips[] = {0, 1.0, 0.5, 0.1};
static const double lrs[] = {1e-3, 3e-3, 1e-2, 3e-2};
static const int growths[] = {2000, 100, 20};

static void add_event(struct train_panel *p, enum ui_role role, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void add_event(struct train_panel *p, enum ui_role role, const char *fmt, ...)
{
    memmove(p->ev + 1, p->ev, (NEVENTS - 1) * sizeof *p->ev);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(p->ev[0].text, sizeof p->ev[0].text, fmt, ap);
    va_end(ap);
    p->ev[0].role = role;
    if (p->nev < NEVENTS)
        p->nev++;
    if (p->log)
        eventlog_add(p->log, "%s", p->ev[0].text);
}

/* The one message of a run a NaN has stopped, the same wherever it is said. */
static void say_halted(struct train_panel *p)
{
    char line[72];
    snprintf(line, sizeof line, "step %ld applied the NaN: the weights are NaN; r restarts",
             p->halted);
    if (p->nev == 0 || strcmp(p->ev[0].text, line))
        add_event(p, ROLE_ERROR, "%s", line);
    else if (p->log) /* on the panel already: on the status line again */
        eventlog_add_once(p->log, "%s", line);
}

/* ------------------------------------------------------------------ the run */

static void stop_run(struct train_panel *p)
{
    run_free(p->run); /* stops it at the next step boundary and joins its threads */
    p->run = NULL;
}

/* (Re)starts the run with p->o: one simulated GPU of the default cluster, each step started
 * only when the screen asks for it, so a key acts on the next step shown. */
static void restart(struct train_panel *p)
{
    stop_run(p);
    if (p->check_only)
        return;
    p->n = 0, p->skipped = p->overflows = p->spikes = 0, p->nev = 0, p->credit = 0;
    p->halted = 0;
    memset(&p->last, 0, sizeof p->last);
    memset(p->under_frac, 0, sizeof p->under_frac);
    struct error e = {0};
    struct run_config cfg = {0};
    cfg.o = p->o;
    cfg.o.steps = 1L << 40; /* the window runs until stopped */
    cfg.o.gpus = 1;
    cfg.paced = true;
    if (preset_load_cluster(PRESET_CLUSTER, &cfg.spec, NULL) != 0)
        spec_default(&cfg.spec);
    if (run_new(&p->run, &cfg, &e) != 0 || run_start(p->run, &e) != 0) {
        snprintf(p->err, sizeof p->err, "%s", e.msg);
        stop_run(p);
        return;
    }
    p->err[0] = 0;
    p->floor = run_loss_floor(p->run);
    p->layers = p->o.shape.layers < 64 ? p->o.shape.layers : 64;
}

/* Takes one step's record into the panel's history and events (UI thread). */
static void take(struct train_panel *p, const struct run_step *r)
{
    if (!isfinite(p->floor)) /* a step done: GPU 0 has set up and knows it */
        p->floor = run_loss_floor(p->run);
    struct train_step s = r->s;
    int i = (int)(p->n % HIST);
    p->loss[i] = (float)s.loss;
    p->norm[i] = s.grad_norm;
    p->scale[i] = s.loss_scale;
    p->coef[i] = s.clip_coef;
    p->bad[i] = (unsigned char)(s.skipped ? 1 : s.spike ? 2 : 0);
    p->n++;
    p->last = s;
    const struct gpt_config *c = &p->o.shape;
    /* the fraction of each layer's weight-gradient elements that underflowed */
    double per_layer = 2.0 * c->d + 4.0 * c->d * c->d + 3.0 * c->d * c->ffn;
    double ends = (double)c->vocab * c->d + c->d;
    for (int l = 0; l <= p->layers; l++)
        p->under_frac[l] = (double)r->underflow[l] / (l < p->layers ? per_layer : ends);
    p->skipped += s.skipped;
    p->overflows += s.overflow;
    p->spikes += s.spike;
    if (p->halted)
        return; /* the weights are NaN: every step says the same, the first cause is pinned */
    if (s.nonfinite[0])
        add_event(p, ROLE_ERROR, "step %ld: inf/NaN in %s", s.step, s.nonfinite);
    if (s.nonfinite[0] && !s.skipped) { /* no scaler looked: the NaN went into the weights */
        p->halted = s.step;
        say_halted(p);
        return;
    }
    if (s.skipped) /* the weights and Adam's state untouched, as the lesson says */
        add_event(p, ROLE_ERROR, "step %ld skipped: %s", s.step,
                  s.overflow ? "inf/NaN gradient" : "loss spike");
    else if (s.spike)
        add_event(p, ROLE_WARN, "step %ld: loss spike, z = %.1f", s.step, s.zscore);
    if (p->n >= 2 && !s.overflow) {
        float prev = p->scale[(p->n - 2) % HIST];
        if (s.loss_scale > prev)
            add_event(p, ROLE_GOOD, "step %ld: loss scale grew to %g", s.step,
                      (double)s.loss_scale);
        else if (s.loss_scale < prev)
            add_event(p, ROLE_WARN, "step %ld: loss scale backed off to %g", s.step,
                      (double)s.loss_scale);
    }
}

/* Lets the run start `credit` more steps (at most a few ahead of the screen, so a slow host
 * does not pile them up) and takes the steps it has done. */
static int pump(struct train_panel *p, double credit)
{
    if (!p->run)
        return 0;
    p->credit = fmin(p->credit + credit, 4.0);
    run_allow(p->run, p->n + (long)p->credit);
    struct run_step r;
    int n = 0;
    while (run_next(p->run, &r, 0) == 1) {
        take(p, &r);
        p->credit = fmax(p->credit - 1, 0);
        n++;
    }
    return n;
}

/* ------------------------------------------------------------------ settings and keys */

/* The panel's run: tiny, with the window's learning rate, batch and spike window; 0, or why
 * tiny's preset cannot be read. */
static int defaults(struct train_opts *o, struct error *e)
{
    int rc = train_opts_lab(o, e);
    o->batch = 4;
    o->spike_window = 32;
    o->spike_z = 4.0;
    return rc;
}

static int train_init(void **state, const struct panel_env *env, struct error *e)
{
    struct train_panel *p = calloc(1, sizeof *p);
    if (!p)
        return error_set(e, ERR_NOMEM, "out of memory");
    p->log = env->log;
    p->check_only = env->check_only;
    int rc = defaults(&p->o, e);
    if (rc) {
        free(p);
        return rc;
    }
    p->start = p->o;
    restart(p);
    *state = p;
    return 0;
}

static void train_fini(void *state)
{
    struct train_panel *p = state;
    stop_run(p);
    free(p);
}

/* The run's settings this panel takes, by their names in a lesson (par/settings.h reads
 * them, with train's bounds), and the largest batch it runs. */
static const char *const settings_taken[] = {"precision", "scale", "clip", "lr", "init_scale",
                                             "growth",    "batch", "seed", NULL};

static int train_set(void *state, const char *name, const char *value, struct error *e)
{
    struct train_panel *p = state;
    struct train_opts o = p->start;
    int i = 0;
    while (settings_taken[i] && strcmp(name, settings_taken[i]))
        i++;
    if (!settings_taken[i])
        return error_set(e, ERR_INVAL,
                         "the training panel knows precision, scale, clip, lr, growth, "
                         "init_scale, batch, seed; not '%s'",
                         name);
    int rc = settings_set(&o, name, value, e);
    if (!rc && !strcmp(name, "precision")) /* its loss scaling follows */
        o.scaling = train_scaling_for(o.precision);
    if (rc || (rc = runpace_within("batch", o.batch, 1, RUNPACE_MAX_BATCH, e)))
        return rc;
    p->start = p->o = o;
    restart(p);
    return 0;
}

static int cycle(const double *v, int n, double cur)
{
    for (int i = 0; i < n; i++)
        if (fabs(v[i] - cur) <= 1e-12 * fabs(cur) || v[i] == cur)
            return (i + 1) % n;
    return 0;
}

static int train_on_key(void *state, int key)
{
    struct train_panel *p = state;
    struct train_opts *o = &p->o;
    if (p->halted && key > 0 && key < 128 && strchr("clbx", key)) { /* nothing runs to take it */
        say_halted(p);
        return PANEL_HANDLED | PANEL_REDRAW;
    }
    switch (key) {
    case 'p':
        o->precision = fp_precision_step(o->precision, 1);
        o->scaling = train_scaling_for(o->precision);
        o->scale = 65536;
        restart(p);
        return PANEL_HANDLED | PANEL_REDRAW;
    case 's':
        o->scaling = o->scaling == TRAIN_SCALE_DYNAMIC ? TRAIN_SCALE_NONE
                     : o->scaling == TRAIN_SCALE_NONE  ? TRAIN_SCALE_STATIC
                                                       : TRAIN_SCALE_DYNAMIC;
        o->scale = o->scaling == TRAIN_SCALE_STATIC ? 1024 : 65536;
        restart(p);
        return PANEL_HANDLED | PANEL_REDRAW;
    case 'c':
        o->clip = clips[cycle(clips, 4, o->clip)];
        if (p->run)
            run_set_clip(p->run, o->clip);
        add_event(p, ROLE_DIM, "clip %s", o->clip > 0 ? "on" : "off");
        return PANEL_HANDLED | PANEL_REDRAW;
    case 'l':
        o->lr = lrs[cycle(lrs, 4, o->lr)];
        if (p->run)
            run_set_lr(p->run, o->lr);
        add_event(p, ROLE_DIM, "learning rate %g", o->lr);
        return PANEL_HANDLED | PANEL_REDRAW;
    case 'g': {
        int i = 0;
        while (i < 3 && growths[i] != o->growth_interval)
            i++;
        o->growth_interval = growths[(i + 1) % 3];
        restart(p);
        return PANEL_HANDLED | PANEL_REDRAW;
    }
    case 'b':
        if (p->run)
            run_inject(p->run, TRAIN_INJECT_SPIKE, 20.0, 0);
        add_event(p, ROLE_WARN, "a bad batch comes with the next step");
        return PANEL_HANDLED | PANEL_REDRAW;
    case 'i': /* the 10^9 experiment of lesson 1 step 11, without a command line */
        o->precision = FP_FP16;
        o->scaling = TRAIN_SCALE_DYNAMIC;
        o->scale = 1e9;
        restart(p);
        add_event(p, ROLE_WARN, "fp16, the scale starts at 1e9: watch it back off");
        return PANEL_HANDLED | PANEL_REDRAW;
    case 'x':
        if (p->run)
            run_inject(p->run, TRAIN_INJECT_NAN, 1.0, 0);
        add_event(p, ROLE_WARN, "a NaN comes with the next step");
        return PANEL_HANDLED | PANEL_REDRAW;
    default: return 0;
    }
}

static int train_on_event(void *state, const struct panel_event *ev)
{
    struct train_panel *p = state;
    switch (ev->kind) {
    case PANEL_PLAY:
        if (p->halted) { /* said here, once: the app adds nothing */
            say_halted(p);
            return PANEL_HANDLED | PANEL_REDRAW;
        }
        return p->run ? PANEL_ANIMATE | PANEL_REDRAW : 0;
    case PANEL_PAUSE: return 0;
    case PANEL_STEP: {
        if (p->halted) {
            say_halted(p);
            return PANEL_HANDLED | PANEL_REDRAW;
        }
        /* one step, paused: credit for one, then wait for its record, however slow the
         * machine: a key pressed next acts on the step after it, which is the next one shown
         * only if this one is shown first (a signal ends the wait) */
        if (p->run) {
            struct run_step r;
            run_allow(p->run, p->n + 1);
            int got = runpace_next(p->run, &r, RUNPACE_STEP_WAIT_S);
            if (got == 1)
                take(p, &r);
            else if (got == 0 && !term_signal())
                add_event(p, ROLE_DIM, "step %ld is still running: n again shows it", p->n + 1);
        }
        return PANEL_REDRAW;
    }
    case PANEL_RESET:
        p->o = p->start;
        restart(p);
        return PANEL_REDRAW;
    case PANEL_TICK:
        if (p->halted) /* the first cause stays on screen; nothing more to watch */
            return PANEL_REDRAW;
        return PANEL_ANIMATE | (pump(p, ev->dt * STEPS_PER_S) ? PANEL_REDRAW : 0);
    case PANEL_POLL: /* the floor, once GPU 0 has set up (par/run.h) */
        if (!p->run || isfinite(p->floor))
            return 0;
        p->floor = run_loss_floor(p->run);
        return isfinite(p->floor) ? PANEL_REDRAW : PANEL_BUSY;
    }
    return 0;
}

/* ------------------------------------------------------------------ drawing */

/* Items on as many rows as they need, "  " between them, none cut: a narrow panel wraps
 * the header instead of cutting a number ("scale 655"). Returns the rows used. */
static int items(struct ui_canvas *c, int y, const enum ui_role *role, char (*it)[48], int n)
{
    int x = 0, rows = n > 0;
    for (int i = 0; i < n; i++) {
        int w = layout_text_width(it[i]);
        if (x > 0 && x + 2 + w > c->r.w)
            y++, rows++, x = 0;
        x = canvas_text(c, y, x ? x + 2 : 0, role[i], it[i]);
    }
    return rows;
}

/* The history as a plot series: the last HIST steps of v. */
static struct plot_series series(const struct train_panel *p, const float *v)
{
    long n = p->n < HIST ? p->n : HIST;
    return (struct plot_series){v, p->bad, p->n - n, p->n, HIST};
}

/* The four plots' heights from the rows left: the loss and the scale's staircase the most,
 * then the norm and the coefficient, each at least 2 rows (3 for the loss). */
static void plot_heights(int rows, int h[4])
{
    static const int share[4] = {30, 20, 20, 30}, least[4] = {3, 2, 2, 2};
    int used = 0;
    for (int i = 0; i < 4; i++) {
        h[i] = rows * share[i] / 100;
        h[i] = h[i] < least[i] ? least[i] : h[i];
        used += h[i];
    }
    for (int i = 0; used < rows; i = (i + 1) % 4, used++) /* what rounding left: in order */
        h[i]++;
}

/* The run's settings and its last step's figures, in rows of items; the next row, or -1 when
 * the run could not start (the reason drawn instead). */
static int draw_figures(const struct train_panel *p, struct ui_canvas *c)
{
    const struct train_opts *o = &p->o;
    int y = 0;
    char it[12][48], f1[32], f2[32], f3[32], f4[32];
    enum ui_role role[12];
    for (int i = 0; i < 12; i++)
        role[i] = ROLE_TEXT;
    int n = 0;
    snprintf(it[n++], 48, "%s", fp_info(o->precision)->name);
    snprintf(it[n++], 48, "scale %s",
             o->scaling == TRAIN_SCALE_DYNAMIC  ? "dynamic"
             : o->scaling == TRAIN_SCALE_STATIC ? "fixed"
                                                : "none");
    if (o->clip > 0)
        snprintf(it[n++], 48, "clip %g", o->clip);
    else
        snprintf(it[n++], 48, "clip off");
    snprintf(it[n++], 48, "lr %g", o->lr);
    snprintf(it[n++], 48, "growth %d", o->growth_interval);
    snprintf(it[n++], 48, "batch %d", o->batch);
    y += items(c, y, role, it, n);
    if (p->err[0]) {
        canvas_wrap(c, y + 1, ROLE_ERROR, p->err, 0);
        return -1;
    }
    const struct train_step *s = &p->last;
    if (p->n == 0) {
        char hint[96]; /* wrapped: at 80x24 the panel is narrower than the line */
        if (isfinite(p->floor))
            snprintf(hint, sizeof hint, "tiny GPT, loss floor %.3f nats: press space to train",
                     p->floor);
        else
            snprintf(hint, sizeof hint, "tiny GPT, setting up: press space to train");
        y += canvas_wrap(c, y, ROLE_DIM, hint, 0);
    } else {
        n = 0;
        snprintf(it[n++], 48, "step %ld", s->step);
        snprintf(it[n++], 48, "loss %s", units_format_num(f1, sizeof f1, "%.3f", s->loss));
        snprintf(it[n++], 48, "norm %s",
                 units_format_num(f2, sizeof f2, "%.3g", (double)s->grad_norm));
        snprintf(it[n++], 48, "coef %s",
                 units_format_num(f3, sizeof f3, "%.3f", (double)s->clip_coef));
        snprintf(it[n++], 48, "scale %s",
                 units_format_num(f4, sizeof f4, "%g", (double)s->loss_scale));
        /* the counts after them, in the error colour once a step was skipped */
        for (int i = n; i < n + 3; i++)
            role[i] = p->skipped ? ROLE_ERROR : ROLE_DIM;
        snprintf(it[n++], 48, "skipped %ld", p->skipped);
        snprintf(it[n++], 48, "overflows %ld", p->overflows);
        snprintf(it[n++], 48, "spikes %ld", p->spikes);
        y += items(c, y, role, it, n);
    }
    return y;
}

/* The four curves in rest rows from y (loss, norm, clip coefficient, loss scale), then the
 * legend's legend_rows rows (wl over legend); the next row. */
static int draw_curves(const struct train_panel *p, struct ui_canvas *c, int y, int rest,
                       const char *legend, const struct wrap_line *wl, int legend_rows)
{
    const struct train_opts *o = &p->o;
    int W = c->r.w, H = c->r.h;
    char f1[32], f2[32];
    if (rest >= 9 && W >= 24) {
        int h[4];
        plot_heights(rest, h);
        int pw = W - PLOT_MARGIN;
        double lo, hi;
        /* loss above its floor, on a log axis: the slow approach stays visible; a batch
         * that scores under the floor (a small batch can: the floor is the source's average)
         * is marked v on the bottom row */
        static float excess[HIST];
        for (long k = p->n - (p->n < HIST ? p->n : HIST); k < p->n; k++) {
            float v = p->loss[k % HIST];
            excess[k % HIST] = isfinite(v) ? v - (float)p->floor : v;
        }
        struct plot_series ls = series(p, excess);
        plot_range(&ls, PLOT_LOG, 1.2, &lo, &hi);
        snprintf(f1, sizeof f1, "+%.2g", hi);
        snprintf(f2, sizeof f2, "+%.2g", lo);
        plot_draw(c, y, 0, h[0], pw, "loss", f1, f2, &ls, PLOT_LOG, lo, hi, NAN);
        y += h[0];
        /* the gradient norm, log scale, with the clip line */
        struct plot_series ns = series(p, p->norm);
        plot_range(&ns, PLOT_LOG, 1.2, &lo, &hi);
        if (o->clip > 0)
            lo = fmin(lo, o->clip / 1.2), hi = fmax(hi, o->clip * 1.2);
        snprintf(f1, sizeof f1, "%.2g", hi);
        snprintf(f2, sizeof f2, "%.2g", lo);
        plot_draw(c, y, 0, h[1], pw, "norm", f1, f2, &ns, PLOT_LOG, lo, hi,
                  o->clip > 0 ? o->clip : NAN);
        y += h[1];
        /* the clip coefficient, 0 to 1: a clip shows on its row whatever shares its column */
        struct plot_series cs = series(p, p->coef);
        plot_draw(c, y, 0, h[2], pw, "coef", "1.00", "0.00", &cs, PLOT_LINEAR, 0, 1, NAN);
        y += h[2];
        /* the loss scale, a staircase on a log2 axis (its values are powers of 2) */
        struct plot_series ss = series(p, p->scale);
        plot_range(&ss, PLOT_LOG, 1, &lo, &hi);
        if (hi == 4 * lo) /* one scale so far (plot_range widened it): a flat line, labelled */
            lo *= 2, hi = 2 * lo;
        snprintf(f1, sizeof f1, "2^%.0f", log2(hi));
        snprintf(f2, sizeof f2, "2^%.0f", log2(lo));
        plot_draw(c, y, 0, h[3], pw, "scale", f1, f2, &ss, PLOT_LOG, lo, hi, NAN);
        y += h[3];
        for (int i = 0; i < legend_rows && i < 4; i++, y++) {
            char line[160];
            snprintf(line, sizeof line, "%.*s", (int)wl[i].len, legend + wl[i].start);
            canvas_text(c, y, 0, ROLE_DIM, line);
        }
    } else if (y < H) {
        canvas_text(c, y++, 0, ROLE_DIM, "(a larger window shows the curves)");
    }
    return y;
}

/* The gradients that underflowed to 0 in the last step: a bar per layer, or (bars false) a
 * line saying the most; the next row. */
static int draw_underflow(const struct train_panel *p, struct ui_canvas *c, int y, bool bars)
{
    int W = c->r.w, H = c->r.h;
    double umax = 0;
    int worst = 0;
    for (int l = 0; l <= p->layers; l++)
        if (p->under_frac[l] > umax)
            umax = p->under_frac[l], worst = l;
    if (!bars) {
        if (y < H) {
            char where[16];
            snprintf(where, sizeof where, worst < p->layers ? "layer %d" : "emb+norm", worst);
            canvas_printf(c, y++, 0, umax > 0 ? ROLE_WARN : ROLE_DIM,
                          "underflowed to 0: at most %.4f%% (%s)", 100 * umax, where);
        }
    } else {
        int x = canvas_text(c, y, 0, ROLE_TITLE, "gradients underflowed to 0, last step");
        if (umax > 0)
            canvas_printf(c, y, x, ROLE_DIM, " (full bar %.4f%%)", 100 * umax);
        y++;
        for (int l = 0; l <= p->layers && y < H; l++, y++) {
            if (l < p->layers)
                canvas_printf(c, y, 0, ROLE_DIM, "layer %d", l);
            else
                canvas_printf(c, y, 0, ROLE_DIM, "emb+norm");
            canvas_bar(c, y, 9, W - 20, p->under_frac[l], umax > 0 ? umax : 1);
            canvas_printf(c, y, W - 10, p->under_frac[l] > 0 ? ROLE_WARN : ROLE_DIM, "%8.4f%%",
                          100 * p->under_frac[l]);
        }
    }
    return y;
}

static void train_draw(const void *state, struct ui_canvas *c)
{
    const struct train_panel *p = state;
    const struct train_opts *o = &p->o;
    int W = c->r.w, H = c->r.h, y = draw_figures(p, c);
    if (y < 0)
        return;
    /* The rows: the events (a fixed number, so that the curves do not jump as they come),
     * the underflow per layer (a line when the rows are short), a legend, and the curves,
     * which always draw (in 3 + 2 + 2 + 2 rows at the least: the essential picture). */
    int nev = 3;
    char legend[160];
    int len = snprintf(legend, sizeof legend,
                       W < 60 ? "v below floor %.3f; log axes but coef"
                              : "loss above the floor %.3f, v: a batch below it; log axes but coef",
                       p->floor);
    if (o->clip > 0 && len > 0 && (size_t)len < sizeof legend)
        snprintf(legend + len, sizeof legend - (size_t)len, "; -- clip %g", o->clip);
    struct wrap_line wl[4];
    int legend_rows = layout_wrap(legend, W, wl, 4);
    int full_bars = p->layers + 2; /* the title (with the full bar's worth), a bar a part */
    int rest = H - y - nev;
    bool bars = rest - legend_rows - full_bars >= 4 * 4 + 1; /* the curves keep 4 rows each */
    rest -= bars ? full_bars : 1;
    if (rest - legend_rows < 9) /* the legend gives way first (the lesson's text has it) */
        legend_rows = 0;
    rest -= legend_rows;
    y = draw_curves(p, c, y, rest, legend, wl, legend_rows);
    y = draw_underflow(p, c, y, bars);
    /* events, newest first, wrapped in the rows kept for them (nothing cut at the frame) */
    for (int i = 0, left = nev; i < p->nev && left > 0 && y < H; i++) {
        struct ui_canvas rows = canvas_make(c->win, (struct ui_rect){c->r.y + y, c->r.x, left, W});
        int used = canvas_wrap(&rows, 0, p->ev[i].role, p->ev[i].text, 0);
        y += used, left -= used;
    }
}

static const struct panel_key train_keys[] = {
    {"p", "precision: fp32, bf16, fp16 (restarts)", "precision"},
    {"s", "loss scaling: dynamic, none, fixed 1024 (restarts)", "scaling"},
    {"c", "clip the gradient norm: off, 1, 0.5, 0.1", "clip"},
    {"l", "learning rate: 1e-3, 3e-3, 1e-2, 3e-2", "lr"},
    {"g", "growth interval of the dynamic scale: 2000, 100, 20 (restarts)", NULL},
    {"b", "a bad batch at the next step (logits x 20)", "bad batch"},
    {"x", "a NaN in the attention scores at the next step", NULL},
    {"i", "fp16 with the loss scale starting at 10^9 (restarts)", NULL},
    {NULL, NULL, NULL},
};

const struct panel_ops panel_training = {
    .name = "training",
    .title = "Mixed-precision training, live",
    .about = "A real training run of the tiny GPT with the trainer of 'scalelab train': the "
             "loss against the data's entropy floor, the gradient norm and the clip line, the "
             "loss scale, underflowed gradients per layer, and overflow, NaN and skipped-step "
             "events.",
    .init = train_init,
    .fini = train_fini,
    .on_key = train_on_key,
    .on_event = train_on_event,
    .set = train_set,
    .draw = train_draw,
    .plays = true,
    .keys = train_keys,
};
