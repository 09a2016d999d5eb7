/* The "Mixtures of experts" lesson's run panel: expert parallelism on thread-GPUs, a real run
 * of tiny-moe (each layer's feed-forward E SwiGLU experts and a router, top-k of them a token)
 * beside the calculator's prediction.
 *
 * The run is the engine of `scalelab train --model tiny-moe --experts E --top-k K --ep P
 * --capacity-factor C --aux-loss-coef A` (src/par/run.h) on P GPUs, paced by the screen as
 * the other run panels' are (ui/runpace.h): each GPU holds E / P experts of every layer and
 * routes its own share of the batch over all E; the tokens go to their experts' GPUs and back
 * by all-to-alls (par/ep.h), each of the static [E, cap, d] rows, pairwise (comm/alltoall.c:
 * P - 1 sends a GPU). Each send carries its all-to-all's phase (model/gpt.h's GPT_EP_*:
 * dispatch or combine, forward or backward) and says to which GPU it went; a step's
 * all-to-alls come in a known order (forward, each expert layer's dispatch then combine;
 * backward, from the last expert layer, the gradients of the combine then of the dispatch, a
 * recomputed layer's forward pair before them), so the phases begun so far say the layer.
 *
 * Drawn: an expert's row per expert, headed by the GPU that holds it, with the choices routed
 * to it in the step shown (every GPU's tokens, summed over the expert layers: the step
 * record's per-GPU figures, struct run_gpu_step) as a bar: '#' the ones it took, 'x' those
 * dropped past its capacity, '|' the capacity (cap per GPU and layer, model/moe.h's rows);
 * beside them each GPU's row: the all-to-all's sends (the GPUs it has sent to in the one
 * going on, the newest lit as moved data) and its memory from its own ledger. Below: whether
 * every ledger equals the calculator, the all-to-all bytes per GPU beside the calculator's
 * expert_parallel bytes (calc/traffic.c), the routing of the step (routed, dropped, the
 * busiest expert over the mean, the load-balancing loss) and the busiest-over-mean of the
 * steps shown so far, which the aux loss pulls towards 1.
 *
 * Keys: p / P twice / half the GPUs (2 or 4), e the experts (4 or 8), k top-1 or top-2, x the
 * aux loss coefficient (0, 0.01, 0.1), f / F the capacity factor up / down (1, 1.25, 1.5, 2):
 * each restarts the run; w the last step's timeline (timed as itself: the engine does not time
 * a mixture of experts as another model yet, and the panel says so). Space (the app's) plays and
 * pauses, n steps. Settings: ep=P experts=E top_k=K capacity_factor=C aux_loss_coef=A batch=B
 * precision=fp32|bf16|fp16; by default ep 4, tiny-moe's 8 experts top-2, capacity 1.25, aux 0.01,
 * batch 8, fp32. */
#include "config.h"

#include <curses.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "base/units.h"
#include "calc/memory.h"
#include "calc/preset.h"
#include "calc/traffic.h"
#include "comm/coll.h"
#include "base/experts.h"
#include "par/predict.h"
#include "par/run.h"
#include "par/settings.h"
#include "par/strategies.h"
#include "sim/event.h"
#include "ui/draw.h"
#include "ui/eventlog.h"
#include "ui/layout.h"
#include "ui/memui.h"
#include "ui/panel.h"
#include "ui/runfeed.h"
#include "ui/runpace.h"
#include "ui/theme.h"

#define MODEL    "tiny-moe"
#define MIN_EP   2
#define MAX_EP   4
#define MIN_E    2
#define MAX_E    8   /* an expert a row */
#define HISTORY  64  /* steps whose balance is kept */
#define REPLAY_S 1.5 /* wall seconds one step's replay takes at 1x */

/* The knobs' steps: the aux loss coefficients and capacity factors the keys go through. */
static const double aux_steps[] = {0, 0.01, 0.1};
static const double cap_steps[] = {1, 1.25, 1.5, 2};
#define NAUX ((int)(sizeof aux_steps / sizeof aux_steps[0]))
#define NCAP ((int)(sizeof cap_steps / sizeof cap_steps[0]))

struct settings {
    int ep, experts, top_k, batch;
    double capacity, aux;
    enum fp_format prec;
};

/* The all-to-alls of an expert layer: the phase their sends carry, the name the panel gives
 * them, whether the forward pass runs them. */
enum { A2A_DISPATCH, A2A_COMBINE, A2A_GRAD_COMBINE, A2A_GRAD_DISPATCH, A2A_PHASES };
static const struct {
    const char *phase, *name;
    bool forward;
} a2a_phases[A2A_PHASES] = {
    [A2A_DISPATCH] = {GPT_EP_DISPATCH, "forward dispatch", true},
    [A2A_COMBINE] = {GPT_EP_COMBINE, "forward combine", true},
    [A2A_GRAD_COMBINE] = {GPT_EP_GRAD_COMBINE, "backward combine", false},
    [A2A_GRAD_DISPATCH] = {GPT_EP_GRAD_DISPATCH, "backward dispatch", false},
};

struct eprun {
    bool show_time; /* the timeline of the last step in place of the rest */
    struct settings s, start;
    struct model_shape model; /* tiny-moe as the preset has it */
    struct runpace pace;      /* the run, its GPUs, the step replayed, the ledgers */
    struct prediction pred;
    double expert_params; /* the expert parameters a GPU holds (the calculator's) */
    int cap;              /* an expert's rows per GPU and expert layer */
    int moe_layers;
    double scale;
    /* the step being replayed: each GPU's all-to-all going on (its phase, NULL before the first,
     * and expert layer), those of each phase it has begun, and the GPUs it sent to in the one
     * going on (the newest: newest[g]) */
    int phase[MAX_EP], layer[MAX_EP], begun[MAX_EP][A2A_PHASES];
    bool to[MAX_EP][MAX_EP];
    int newest[MAX_EP];
    /* the busiest expert over the mean, per step shown (the last HISTORY) */
    double hist[HISTORY];
    int nhist;
    bool said_verdict;
};

/* ------------------------------------------------------------------ the run */

/* The model of settings s: tiny-moe with the panel's experts, k and capacity. */
static int shape_of(const struct eprun *p, const struct settings *s, struct model_shape *m,
                    struct train_opts *o, struct error *e)
{
    *m = p->model;
    m->experts = s->experts, m->top_k = s->top_k, m->capacity_factor = s->capacity;
    runpace_options(&p->pace, 0, s->prec, s->batch, s->ep, o);
    int rc = train_shape_of(m, &o->shape, e);
    o->shape.moe.aux_coef = s->aux;
    o->ep = s->ep;
    return rc;
}

/* The calculator's figures for the run. */
static void predict(struct eprun *p, struct train_opts *o)
{
    struct model_shape m;
    struct error e = {0};
    predict_free(&p->pred);
    if (shape_of(p, &p->s, &m, o, &e) == 0)
        predict_run(o, &m, &p->pace.spec, &p->pred, &e);
    if (!p->pred.ok) {
        snprintf(p->pace.err, sizeof p->pace.err, "%s", e.msg);
        return;
    }
    struct memory_config mc;
    predict_config(o, &m, p->pace.spec.hbm_bytes, &mc, &e);
    p->expert_params = memory_ep_experts(&mc);
    int n = o->batch / o->gpus * o->shape.seq; /* a GPU's tokens */
    const struct gpt_moe *mo = &o->shape.moe;
    p->cap = (int)(experts_rows(n, mo->experts, mo->top_k, mo->capacity_factor) / mo->experts);
    p->moe_layers = gpt_moe_layers(&o->shape);
    p->scale = p->pred.mem[0].total * 1.1;
}

/* No all-to-all going on, none begun. */
static void no_a2a(struct eprun *p)
{
    for (int g = 0; g < MAX_EP; g++)
        p->phase[g] = -1;
    memset(p->begun, 0, sizeof p->begun);
    memset(p->to, 0, sizeof p->to);
}

static void restart(void *panel)
{
    struct eprun *p = panel;
    runpace_clear(&p->pace);
    p->said_verdict = false;
    p->nhist = 0;
    no_a2a(p);
    struct train_opts o;
    struct model_shape m;
    struct error e = {0};
    /* the engine refuses expert parallelism under time-as for now: then timed as itself, and
     * the panel says so; before the calculator, as the bucket may be the model's */
    if (shape_of(p, &p->s, &m, &o, &e) == 0)
        runpace_time(&p->pace, &o, &m);
    predict(p, &o);
    if (p->pace.err[0])
        return;
    runpace_start(&p->pace, &o);
}

static void settings_text(const struct settings *s, char *buf, size_t n)
{
    snprintf(buf, n, "%d experts top-%d, ep %d, capacity %.2f, aux %.2f", s->experts, s->top_k,
             s->ep, s->capacity, s->aux);
}

static void say_restart(void *panel)
{
    struct eprun *p = panel;
    char b[120];
    settings_text(&p->s, b, sizeof b);
    eventlog_add(p->pace.log, "experts: %s, batch %d: restarted", b, p->s.batch);
}

/* The step shown, every GPU's tokens (the run's merged record, par/run.c): the choices routed
 * to expert x and those it took. */
static double load_of(const struct eprun *p, int x, bool kept)
{
    return kept ? p->pace.last.s.expert_kept[x] : p->pace.last.s.expert_load[x];
}

/* The step shown: the busiest expert's choices over the mean (1: even), as train prints it. */
static double busiest_over_mean(const struct eprun *p)
{
    return p->pace.last.s.expert_imbalance;
}

static void begin_step(void *panel)
{
    struct eprun *p = panel;
    no_a2a(p);
}

/* The phase of an expert all-to-all's send (a2a_phases), or -1. */
static int phase_of(const char *phase)
{
    for (int i = 0; phase && i < A2A_PHASES; i++)
        if (!strcmp(phase, a2a_phases[i].phase))
            return i;
    return -1;
}

/* An all-to-all send the replay passes: a send of another phase, or to a GPU the all-to-all
 * going on has sent to, begins the next one and forgets the one before; the phases begun say
 * its expert layer (a forward phase begun more often than there are layers: a recomputed
 * layer's, the one whose backward comes next). */
static void on_record(void *panel, const struct runrec *r)
{
    struct eprun *p = panel;
    int P = p->s.ep, g = r->device, i = r->type == EV_SEND ? phase_of(r->phase) : -1;
    if (i < 0 || g < 0 || g >= P || r->peer < 0 || r->peer >= P)
        return;
    if (i != p->phase[g] || p->to[g][r->peer]) {
        int M = p->moe_layers, k = ++p->begun[g][i], back = p->begun[g][A2A_GRAD_COMBINE];
        memset(p->to[g], 0, sizeof p->to[g]);
        p->phase[g] = i;
        p->layer[g] = a2a_phases[i].forward ? (k <= M ? k - 1 : M - 1 - back) : M - k;
    }
    p->to[g][r->peer] = true;
    p->newest[g] = r->peer;
}

static void end_step(void *panel)
{
    struct eprun *p = panel;
    if (p->nhist == HISTORY)
        memmove(p->hist, p->hist + 1, (HISTORY - 1) * sizeof *p->hist), p->nhist--;
    p->hist[p->nhist++] = busiest_over_mean(p);
    if (p->said_verdict || !p->pred.ok)
        return;
    char what[120];
    settings_text(&p->s, what, sizeof what);
    runpace_say_verdict(&p->pace, p->pred.mem, "experts", what);
    p->said_verdict = true;
}

/* The all-to-all GPU g is in, in the step being replayed: its name and layer, or NULL (none
 * yet). */
static const char *a2a_at(const struct eprun *p, int g, int *layer)
{
    int every = p->model.moe_every > 0 ? p->model.moe_every : 1;
    if (!p->pace.replaying || p->phase[g] < 0 || p->moe_layers == 0)
        return NULL;
    *layer = p->layer[g] * every;
    return a2a_phases[p->phase[g]].name;
}

/* ------------------------------------------------------------------ settings and keys */

static bool same_settings(const void *x, const void *y)
{
    const struct settings *a = x, *b = y;
    return a->ep == b->ep && a->experts == b->experts && a->top_k == b->top_k &&
           a->batch == b->batch && a->capacity == b->capacity && a->aux == b->aux &&
           a->prec == b->prec;
}

static const struct runpace_ops pace_ops = {.name = "eprun",
                                            .tag = "experts",
                                            .replay_s = REPLAY_S,
                                            .begin = begin_step,
                                            .record = on_record,
                                            .end = end_step,
                                            .settings = sizeof(struct settings),
                                            .same = same_settings,
                                            .restart = restart,
                                            .say_restart = say_restart};

static void defaults(const struct eprun *p, struct settings *s)
{
    *s = (struct settings){.ep = MAX_EP,
                           .experts = p->model.experts,
                           .top_k = p->model.top_k,
                           .batch = 8,
                           .capacity = 1.25,
                           .aux = TRAIN_AUX_COEF,
                           .prec = FP_FP32};
}

static int eprun_init(void **state, const struct panel_env *env, struct error *e)
{
    struct eprun *p = calloc(1, sizeof *p);
    if (!p)
        return error_set(e, ERR_NOMEM, "out of memory");
    int rc = runpace_init(&p->pace, &pace_ops, p, &p->s, &p->start, env, e);
    if (!rc)
        rc = preset_load_model(MODEL, &p->model, e);
    if (rc) {
        runpace_fini(&p->pace);
        free(p);
        return rc;
    }
    defaults(p, &p->s);
    runpace_first(&p->pace);
    *state = p;
    return 0;
}

static void eprun_fini(void *state)
{
    struct eprun *p = state;
    runpace_fini(&p->pace);
    predict_free(&p->pred);
    free(p);
}

/* Whether the run takes settings s (the engine's checks, train_opts_check): 0 or ERR_INVAL
 * saying why. */
static int runs(const struct eprun *p, const struct settings *s, struct error *e)
{
    struct model_shape m;
    struct train_opts o;
    int rc = shape_of(p, s, &m, &o, e);
    return rc ? rc : train_opts_check(&o, e);
}

static int eprun_set(void *state, const char *name, const char *value, struct error *e)
{
    struct eprun *p = state;
    struct settings s = p->start;
    static const char *const known[] = {"ep",    "experts",   "top_k",        "capacity_factor",
                                        "batch", "precision", "aux_loss_coef"};
    bool ok = false;
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
        ok |= !strcmp(name, known[i]);
    if (!ok)
        return error_set(e, ERR_INVAL,
                         "the experts panel knows ep, experts, top_k, capacity_factor, "
                         "aux_loss_coef, batch and precision, not '%s'",
                         name);
    struct train_opts t = {.ep = s.ep, .batch = s.batch, .precision = s.prec};
    t.shape.moe = (struct gpt_moe){
        .experts = s.experts, .top_k = s.top_k, .capacity_factor = s.capacity, .aux_coef = s.aux};
    int rc;
    if ((rc = settings_set(&t, name, value, e)) ||
        (rc = runpace_within("ep", t.ep, MIN_EP, MAX_EP, e)) ||
        (rc = runpace_within("experts", t.shape.moe.experts, MIN_E, MAX_E, e)) ||
        (rc = runpace_within("batch", t.batch, 1, RUNPACE_MAX_BATCH, e)))
        return rc;
    s.ep = t.ep, s.batch = t.batch, s.prec = t.precision;
    s.experts = t.shape.moe.experts, s.top_k = t.shape.moe.top_k;
    s.capacity = t.shape.moe.capacity_factor, s.aux = t.shape.moe.aux_coef;
    if ((rc = runs(p, &s, e)))
        return rc;
    return runpace_set(&p->pace, &s);
}

/* The index of v in steps (the nearest at or below), of n. */
static int step_of(const double *steps, int n, double v)
{
    int i = 0;
    while (i + 1 < n && steps[i + 1] <= v + 1e-12)
        i++;
    return i;
}

static int eprun_on_key(void *state, int key)
{
    struct eprun *p = state;
    if (key == 'w') {
        p->show_time = !p->show_time;
        return PANEL_HANDLED | PANEL_REDRAW;
    }
    struct settings t = p->s;
    switch (key) {
    case 'p':
    case 'P': {
        int ep = key == 'p' ? t.ep * 2 : t.ep / 2;
        if (ep < MIN_EP || ep > MAX_EP)
            return runpace_refuse(&p->pace, "ep stays %d: the panel runs %d or %d GPUs", t.ep,
                                  MIN_EP, MAX_EP);
        t.ep = ep;
        break;
    }
    case 'e': t.experts = t.experts == MAX_E ? MAX_E / 2 : MAX_E; break;
    case 'k': t.top_k = 3 - t.top_k; break;
    case 'x': t.aux = aux_steps[(step_of(aux_steps, NAUX, t.aux) + 1) % NAUX]; break;
    case 'f':
    case 'F': {
        int i = step_of(cap_steps, NCAP, t.capacity) + (key == 'f' ? 1 : -1);
        if (i < 0 || i >= NCAP)
            return runpace_refuse(&p->pace, "capacity stays %.2f: the panel runs %.2f to %.2f",
                                  t.capacity, cap_steps[0], cap_steps[NCAP - 1]);
        t.capacity = cap_steps[i];
        break;
    }
    default: return 0;
    }
    struct error e = {0};
    if (runs(p, &t, &e) != 0)
        return runpace_refuse(&p->pace, "%s", e.msg);
    p->s = t;
    return runpace_rekeyed(&p->pace, NULL);
}

static int eprun_on_event(void *state, const struct panel_event *ev)
{
    struct eprun *p = state;
    return runpace_panel_event(&p->pace, ev);
}

/* ------------------------------------------------------------------ drawing */

static void draw_head(const struct eprun *p, struct ui_canvas *c)
{
    const struct settings *s = &p->s;
    char head[3][160];
    snprintf(head[0], sizeof head[0], "%s, %d experts top-%d, ep %d, capacity %.2f, aux %g, b %d",
             MODEL, s->experts, s->top_k, s->ep, s->capacity, s->aux, s->batch);
    snprintf(head[1], sizeof head[1], "E %d top-%d ep %d cap %.2f aux %g b %d", s->experts,
             s->top_k, s->ep, s->capacity, s->aux, s->batch);
    snprintf(head[2], sizeof head[2], "E%d k%d ep%d C%.2f a%g", s->experts, s->top_k, s->ep,
             s->capacity, s->aux);
    int k = 0;
    while (k < 2 && layout_text_width(head[k]) > c->r.w)
        k++;
    canvas_text(c, 0, 0, ROLE_TEXT, head[k]);
}

/* What the all-to-all is doing, on row y: GPU 0's all-to-all and layer, or what it does. */
static void draw_a2a(const struct eprun *p, struct ui_canvas *c, int y)
{
    int layer = 0;
    const char *what = a2a_at(p, 0, &layer);
    char line[2][160], b[32];
    if (what) {
        runfeed_bytes(b, sizeof b, p->pred.comm[0].ep.bytes / (4.0 * p->moe_layers * (p->s.ep - 1)),
                      12);
        snprintf(line[0], sizeof line[0], "all-to-all: layer %d %s, %s B a send", layer, what, b);
        snprintf(line[1], sizeof line[1], "a2a: L%d %s", layer, what);
        canvas_text(c, y, 0, ROLE_MOVED, line[layout_text_width(line[0]) > c->r.w]);
        return;
    }
    snprintf(line[0], sizeof line[0], "all-to-all: dispatch and combine, 4 a layer, %d send%s each",
             p->s.ep - 1, p->s.ep > 2 ? "s" : "");
    snprintf(line[1], sizeof line[1], "a2a: 4 a layer");
    canvas_text(c, y, 0, ROLE_DIM, line[layout_text_width(line[0]) > c->r.w]);
}

/* The experts' rows from row y at column x, w wide: head, then a row each. The next row. */
static int draw_experts(const struct eprun *p, struct ui_canvas *c, int y, int x, int w)
{
    int E = p->s.experts, P = p->s.ep, per = E / P;
    bool shown = p->pace.shown > 0;
    double capsum = (double)p->cap * P * p->moe_layers, most = capsum;
    for (int e = 0; e < E && shown; e++)
        most = fmax(most, load_of(p, e, false));
    int nw = w >= 34 ? 6 : 5, dw = w >= 30 ? 5 : 0, bw = w - 5 - nw - dw;
    canvas_text(c, y++, x, ROLE_DIM,
                w >= 40   ? "ex GPU  choices routed ('x' dropped), | cap"
                : w >= 24 ? "ex G routed, x dropped"
                          : "ex G routed");
    for (int e = 0; e < E; e++, y++) {
        int xx = canvas_printf(c, y, x, ROLE_DIM, "%-2d ", e);
        xx = canvas_printf(c, y, xx, ROLE_BAR, "%d ", e / per);
        double load = shown ? load_of(p, e, false) : 0, kept = shown ? load_of(p, e, true) : 0;
        int nk = bw > 0 ? (int)lround(kept / most * bw) : 0;
        int nl = bw > 0 ? (int)lround(load / most * bw) : 0;
        int cm = bw > 0 ? (int)lround(capsum / most * bw) - 1 : -1;
        for (int i = 0; i < bw; i++) {
            char ch = i < nk ? '#' : i < nl ? 'x' : i == cm ? '|' : '.';
            enum ui_role role = i < nk ? ROLE_BAR : i < nl ? ROLE_WARN : ROLE_DIM;
            canvas_printf(c, y, xx + i, role, "%c", ch);
        }
        xx += bw > 0 ? bw : 0;
        if (!shown)
            continue;
        xx = canvas_printf(c, y, xx, ROLE_TEXT, "%*.0f", nw, load);
        if (dw && load > kept)
            canvas_printf(c, y, xx, ROLE_WARN, " -%-*.0f", dw - 2, load - kept);
    }
    return y;
}

/* The columns the GPUs' rows need beside their ledger's bar when narrow: the GPU, its sends (a
 * column each; two when wide, where the newest is marked '*' without colour) and the ledger's
 * total. */
static int gpus_cols(int P)
{
    return 2 + P + 1 + 6;
}

/* Each GPU's row from row y at column x, w wide: the GPUs it sends to (during an all-to-all,
 * those it has sent to in it, '-' the others, the newest drawn as moved data) and its ledger's
 * bar. Narrow, the sends take a column each and the total fewer, so the bar keeps its room. */
static int draw_gpus(const struct eprun *p, struct ui_canvas *c, int y, int x, int w)
{
    int P = p->s.ep;
    bool wide = w >= 2 + 2 * P + 7 + 8; /* the sends spaced, and still 8 cells of bar */
    bool mark = wide && (!theme_color() || theme_ascii()); /* the newest send marked '*' */
    canvas_text(c, y++, x, ROLE_DIM, w >= 30 ? "G sent to  memory, its ledger" : "G to  ledger");
    for (int g = 0; g < P; g++, y++) {
        int layer;
        bool live = a2a_at(p, g, &layer) != NULL;
        int xx = canvas_printf(c, y, x, ROLE_DIM, "%d ", g);
        for (int q = 0; q < P; q++) {
            bool on = live && p->to[g][q], now = on && q == p->newest[g];
            char ch = q == g ? '.' : live && !on ? '-' : (char)('0' + q);
            enum ui_role role = !on ? ROLE_DIM : now ? ROLE_MOVED : ROLE_BAR;
            xx = canvas_printf(c, y, xx, role, "%c", ch);
            if (wide)
                xx = canvas_printf(c, y, xx, role, "%c", now && mark ? '*' : ' ');
        }
        if (!wide)
            xx++;
        int lw = !wide ? 6 : w - (xx - x) >= 28 ? 11 : 7;
        runpace_draw_ledger(&p->pace, c, y, xx, w - (xx - x), lw, g, p->scale);
    }
    return y;
}

/* The busiest expert over the mean of the steps shown, the newest last, on row y. */
static void draw_history(const struct eprun *p, struct ui_canvas *c, int y)
{
    int W = c->r.w;
    int x = canvas_text(c, y, 0, ROLE_DIM, W >= 60 ? "busiest/mean by step:" : "max/mean:");
    int fit = (W - x) / 5, from = p->nhist > fit ? p->nhist - fit : 0;
    for (int i = from; i < p->nhist; i++)
        x = canvas_printf(c, y, x, ROLE_TEXT, " %4.2f", p->hist[i]);
}

static void eprun_draw(const void *state, struct ui_canvas *c)
{
    const struct eprun *p = state;
    int W = c->r.w, H = c->r.h, P = p->s.ep, y = 1;
    char b1[32], b2[32];
    draw_head(p, c);
    runpace_draw_timing(&p->pace, c, y++);
    if (p->pace.err[0]) {
        canvas_wrap(c, 3, ROLE_ERROR, p->pace.err, 0);
        return;
    }
    if (!runpace_draw_note(&p->pace, c, y))
        runpace_draw_step(&p->pace, c, y, "buffers allocated: space runs, n one step");
    y++;
    if (p->show_time) {
        runpace_draw_timeline(&p->pace, c, y, H - y);
        return;
    }
    draw_a2a(p, c, y++);
    /* the experts, and beside them (or below, when narrow) the GPUs */
    /* narrow, the GPUs' side keeps 8 cells of bar for the ledgers (3 were left at 80x24) */
    int top = y, ew = W >= 100  ? W / 2
                      : W >= 60 ? W / 2 + 1
                      : W >= 44 ? W - gpus_cols(P) - 8 - 1
                                : W;
    y = draw_experts(p, c, y, 0, ew);
    if (W - ew - 1 >= gpus_cols(P) + 8) { /* room for 8 cells of ledger beside */
        int yy = draw_gpus(p, c, top, ew + 1, W - ew - 1);
        y = yy > y ? yy : y;
    } else {
        y = draw_gpus(p, c, y, 0, W);
    }
    if (y < H) { /* the ledgers */
        if (!(p->pred.ok && runpace_draw_verdict(&p->pace, c, y, p->pred.mem)) && p->pred.ok) {
            runfeed_bytes(b1, sizeof b1, p->pred.mem[0].total, 12);
            canvas_printf(c, y, 0, ROLE_DIM, "calc: each GPU holds %s B at peak", b1);
        }
        y++;
    }
    if (y < H && p->pred.ok) { /* the all-to-alls' bytes per GPU */
        uint64_t sent[MAX_EP];
        for (int g = 0; g < P; g++)
            sent[g] = p->pace.last.gpu[g].sent[STRATEGY_EP];
        runpace_draw_sent(&p->pace, c, y++, "a2a B/step", sent, p->pred.comm[0].ep.bytes);
    }
    if (y < H && p->pred.ok) { /* the experts a GPU holds */
        units_format_grouped(b2, sizeof b2, (unsigned long long)llround(p->expert_params));
        char line[2][160];
        snprintf(line[0], sizeof line[0], "a GPU holds %d of %d experts, %s params (calc)",
                 p->s.experts / P, p->s.experts, b2);
        snprintf(line[1], sizeof line[1], "%d of %d experts/GPU, %s p", p->s.experts / P,
                 p->s.experts, b2);
        canvas_text(c, y++, 0, ROLE_TEXT, line[layout_text_width(line[0]) > W]);
    }
    if (y < H && p->pace.shown) {                     /* the step's routing */
        const struct train_step *s = &p->pace.last.s; /* every GPU's, as train prints it */
        uint64_t routed = s->routed, dropped = s->dropped;
        int L = s->aux_layers > 0 ? s->aux_layers : 1;
        char line[2][160];
        double pct = routed ? 100.0 * (double)dropped / (double)routed : 0;
        /* the aux loss is each expert layer's, summed: a layer's is α when the load is even */
        snprintf(line[0], sizeof line[0],
                 "routed %llu, dropped %llu (%.1f%%), aux %d x %.4f (even %g)",
                 (unsigned long long)routed, (unsigned long long)dropped, pct, L, s->aux_loss / L,
                 p->s.aux);
        snprintf(line[1], sizeof line[1], "drop %.1f%% aux %dx%.4f", pct, L, s->aux_loss / L);
        canvas_text(c, y++, 0, dropped ? ROLE_WARN : ROLE_TEXT,
                    line[layout_text_width(line[0]) > W]);
    }
    if (y < H && p->nhist)
        draw_history(p, c, y++);
    if (y < H)
        runpace_draw_missed(&p->pace, c, y);
}

static const struct panel_key eprun_keys[] = {
    {"p P", "twice / half the GPUs the experts are spread over: 2 or 4 (restarts)", "ep"},
    {"e", "the experts per layer: 4 or 8 (restarts)", "experts"},
    {"k", "the experts a token goes to: top-1 or top-2 (restarts)", "top-k"},
    {"x", "the aux loss coefficient: 0, 0.01, 0.1 (restarts)", "aux"},
    {"f F", "the capacity factor up / down: 1, 1.25, 1.5, 2 (restarts)", "capacity"},
    {"w", "the last step's timeline: each GPU's compute and communication", "time"},
    {NULL, NULL, NULL},
};

const struct panel_ops panel_eprun = {
    .name = "eprun",
    .title = "Experts, running",
    .about = "A real expert-parallel run of tiny-moe on thread-GPUs: each GPU holds a share of "
             "every layer's experts, and the tokens go to their experts' GPUs and back by "
             "all-to-alls. The choices routed to each expert per step (those dropped past its "
             "capacity marked), each GPU's all-to-all sends and its memory from its own ledger, "
             "the all-to-all bytes beside the calculator's, and how even the load stays with "
             "and without the aux loss.",
    .init = eprun_init,
    .fini = eprun_fini,
    .on_key = eprun_on_key,
    .on_event = eprun_on_event,
    .set = eprun_set,
    .draw = eprun_draw,
    .plays = true,
    .keys = eprun_keys,
};
