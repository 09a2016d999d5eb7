/* The "Long sequences" lesson's run panel: ring attention on thread-GPUs, a real
 * context-parallel training run of the tiny GPT beside the calculator's prediction.
 *
 * The run is the engine of `scalelab train --cp C [--cp-naive]` (src/par/run.h) with the
 * sequence length the panel's knob sets, paced by the screen as the other run panels' are
 * (ui/runpace.h): the GPUs' memory changes and sends are recorded as they happen
 * (ui/runfeed.h) and each step is replayed over a second and a half of the screen's time. Each
 * GPU holds a C-th of every sequence's tokens (model/ringattn.h: the balanced split's chunks i
 * and 2C-1-i, or the naive split's chunk i), and its queries meet the other GPUs' keys and
 * values as the ring brings them: the sends tagged RING_SEND_* drive the picture. In the
 * forward pass of a layer a GPU sends the block it holds on and receives the next (C-1 sends),
 * so after its k-th send it holds the blocks of ring steps 0 to k; in the backward pass it
 * sends after computing each block (C sends: K and V, then K, V and their gradients, the last
 * the gradients alone), so after its k-th send it has computed k blocks.
 *
 * Drawn: the causal attention matrix of a sequence, in units of T / 2C tokens (the balanced
 * split's chunks; a naive chunk is two), a row per query unit labelled by the GPU that holds
 * it, a column per key unit headed by its GPU. A cell is a part of the block of GPU q's queries
 * against GPU k's keys; the ring computes only the scores the causal mask leaves
 * (ring_block_scores, what model/ringattn.c's kernels compute): a cell below the diagonal
 * whole, a cell on it as a triangle (its lower left half, edged '\'), none above it. A cell lights,
 * in its query GPU's digit, when that GPU holds the block in the layer being replayed (the block
 * that just came in or was just computed drawn as moved data); '.' is a cell still to come,
 * blank one the mask hides, never computed. Beside it each GPU's memory from its own ledger
 * (a stacked bar), and the attention scores each GPU computed in the step, measured, beside
 * the other split's computed from its blocks (so the naive split's idle first GPU and
 * over-busy last one show beside the balanced split's even work), and whether the measured
 * ones are the blocks' (ring_block_scores). Below:
 * whether every ledger equals the calculator, the ring's bytes per GPU beside the calculator's
 * context_parallel bytes (calc/traffic.c), and the activations per GPU beside one GPU's
 * without context parallelism.
 *
 * Keys: c / C twice / half the context-parallel GPUs (2 or 4), b the split (balanced or
 * naive), s / S twice / half the sequence (32 to 512 tokens): each restarts the run; w the
 * last step's timeline (timed as itself: the engine does not time ring attention as synthetic-7b
 * yet, and the panel says so; runpace_time times it once it does). Space
 * (the app's) plays and pauses, n steps. Settings: cp=2|4 cp_naive=on|off seq=N (32 to 512, a
 * multiple of 2 cp) batch=B precision=fp32|bf16|fp16; by default `scalelab train --cp 4
 * --batch 8` at tiny's sequence. */
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
#include "model/ringattn.h"
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

#define MIN_CP   2
#define MAX_CP   4
#define MIN_SEQ  32
#define MAX_SEQ  512
#define UNITS    (2 * MAX_CP) /* the matrix's rows and columns at most */
#define REPLAY_S 1.5          /* wall seconds one step's replay takes at 1x */

struct settings {
    int cp, seq, batch;
    bool naive;
    enum fp_format prec;
};

/* Where a GPU is in the step being replayed. */
enum pass { PASS_NONE, PASS_FORWARD, PASS_BACKWARD, PASS_DONE };

struct cprun {
    bool show_time; /* the timeline of the last step in place of the rest */
    struct settings s, start;
    int layers, heads;   /* the model's */
    struct runpace pace; /* the run, its GPUs, the step replayed, the ledgers */
    struct prediction pred;
    double act1; /* one GPU's activations without context parallelism (the calculator's) */
    double scale;
    /* the ring sends each GPU made in the step being replayed: forward, backward */
    int fsend[MAX_CP], bsend[MAX_CP];
    bool said_verdict;
};

static enum ring_split split_of(const struct settings *s)
{
    return s->naive ? RING_NAIVE : RING_BALANCED;
}

static const char *split_name(bool naive)
{
    return naive ? "naive" : "balanced";
}

/* ------------------------------------------------------------------ the run */

static void options(const struct cprun *p, const struct settings *s, struct train_opts *o)
{
    runpace_options(&p->pace, 0, s->prec, s->batch, s->cp, o);
    o->cp = s->cp;
    o->cp_naive = s->naive;
    o->shape.seq = s->seq;
}

/* The calculator's figures for the run, and for one GPU without context parallelism with the
 * same attention, flash (one attention model: cp divides the activations, the kernel does not
 * change with it). */
static void predict(struct cprun *p)
{
    struct model_shape m = p->pace.models[0];
    m.seq = p->s.seq;
    struct train_opts o;
    struct error e = {0};
    options(p, &p->s, &o);
    predict_free(&p->pred);
    predict_run(&o, &m, &p->pace.spec, &p->pred, &e);
    if (!p->pred.ok) {
        snprintf(p->pace.err, sizeof p->pace.err, "%s", e.msg);
        return;
    }
    struct prediction one = {0};
    o.cp = 1, o.gpus = 1, o.cp_naive = false, o.attention = TRAIN_ATTN_FLASH;
    p->act1 = predict_run(&o, &m, &p->pace.spec, &one, &e) == 0 ? one.mem[0].activations : 0;
    predict_free(&one);
    p->scale = p->pred.mem[0].total * 1.1;
}

static void restart(void *panel)
{
    struct cprun *p = panel;
    runpace_clear(&p->pace);
    p->said_verdict = false;
    memset(p->fsend, 0, sizeof p->fsend);
    memset(p->bsend, 0, sizeof p->bsend);
    struct train_opts o;
    options(p, &p->s, &o);
    struct model_shape m = p->pace.models[0];
    m.seq = p->s.seq;
    /* the engine refuses context parallelism under time-as for now: then timed as itself, and
     * the panel says so; before the calculator, as the bucket may be the model's */
    runpace_time(&p->pace, &o, &m);
    predict(p);
    if (p->pace.err[0])
        return;
    runpace_start(&p->pace, &o);
}

static void say_restart(void *panel)
{
    struct cprun *p = panel;
    eventlog_add(p->pace.log, "ring: tiny, cp %d %s, sequence %d, batch %d: restarted", p->s.cp,
                 split_name(p->s.naive), p->s.seq, p->s.batch);
}

/* The scores GPU g computes in a step with the given split, from its blocks' (what the mask
 * leaves of each): each block once forward and once backward, for every layer, sequence and
 * head. */
static double block_scores(const struct cprun *p, int g, bool naive)
{
    long per = 0;
    for (int k = 0; k < p->s.cp; k++)
        per += ring_block_scores(p->s.seq, p->s.cp, g, k, naive ? RING_NAIVE : RING_BALANCED);
    return 2.0 * p->layers * p->s.batch * p->heads * (double)per;
}

/* Whether each GPU's measured scores in the last step are its blocks'. */
static bool scores_as_blocks(const struct cprun *p)
{
    for (int g = 0; g < p->s.cp; g++)
        if ((double)p->pace.last.gpu[g].ring_scores != block_scores(p, g, p->s.naive))
            return false;
    return true;
}

static void begin_step(void *panel)
{
    struct cprun *p = panel;
    memset(p->fsend, 0, sizeof p->fsend);
    memset(p->bsend, 0, sizeof p->bsend);
}

/* A ring send the replay passes: the forward's first (its layers' C - 1 sends of K and V
 * each), then the backward's. */
static void on_record(void *panel, const struct runrec *r)
{
    struct cprun *p = panel;
    if (r->type != EV_SEND || !r->phase || r->device < 0 || r->device >= p->s.cp)
        return;
    bool kv = !strcmp(r->phase, RING_SEND_KV);
    if (kv && p->fsend[r->device] < p->layers * (p->s.cp - 1))
        p->fsend[r->device]++;
    else if (kv || !strcmp(r->phase, RING_SEND_GRADS)) /* a block computed: K, V on go ahead */
        p->bsend[r->device]++;
}

static void end_step(void *panel)
{
    struct cprun *p = panel;
    if (p->said_verdict || !p->pred.ok)
        return;
    char what[64];
    snprintf(what, sizeof what, "cp %d %s", p->s.cp, split_name(p->s.naive));
    runpace_say_verdict(&p->pace, p->pred.mem, "ring", what);
    p->said_verdict = true;
}

/* Where GPU g is in the step shown: its pass, the layer, and the ring steps whose blocks it
 * holds (forward: received; backward: computed), 0 to *lit - 1. */
static enum pass ring_at(const struct cprun *p, int g, int *layer, int *lit)
{
    int C = p->s.cp, L = p->layers;
    *layer = 0, *lit = 0;
    if (!p->pace.replaying) {
        *lit = C;
        return p->pace.shown ? PASS_DONE : PASS_NONE;
    }
    if (p->bsend[g] > 0) {
        int i = (p->bsend[g] - 1) / C; /* the backward's layers go from the last */
        *layer = L - 1 - i, *lit = p->bsend[g] - i * C;
        return PASS_BACKWARD;
    }
    if (p->fsend[g] > 0) {
        int l = (p->fsend[g] - 1) / (C - 1);
        *layer = l, *lit = p->fsend[g] - l * (C - 1) + 1;
        return PASS_FORWARD;
    }
    return PASS_NONE;
}

/* ------------------------------------------------------------------ settings and keys */

static bool same_settings(const void *x, const void *y)
{
    const struct settings *a = x, *b = y;
    return a->cp == b->cp && a->seq == b->seq && a->batch == b->batch && a->naive == b->naive &&
           a->prec == b->prec;
}

static const struct runpace_ops pace_ops = {.name = "cprun",
                                            .tag = "ring",
                                            .replay_s = REPLAY_S,
                                            .begin = begin_step,
                                            .record = on_record,
                                            .end = end_step,
                                            .settings = sizeof(struct settings),
                                            .same = same_settings,
                                            .restart = restart,
                                            .say_restart = say_restart};

static void defaults(const struct cprun *p, struct settings *s)
{
    *s = (struct settings){
        .cp = MAX_CP, .seq = p->pace.models[0].seq, .batch = 8, .naive = false, .prec = FP_FP32};
}

static int cprun_init(void **state, const struct panel_env *env, struct error *e)
{
    struct cprun *p = calloc(1, sizeof *p);
    if (!p)
        return error_set(e, ERR_NOMEM, "out of memory");
    int rc = runpace_init(&p->pace, &pace_ops, p, &p->s, &p->start, env, e);
    if (rc) {
        free(p);
        return rc;
    }
    p->layers = p->pace.shapes[0].layers;
    p->heads = p->pace.shapes[0].heads;
    defaults(p, &p->s);
    runpace_first(&p->pace);
    *state = p;
    return 0;
}

static void cprun_fini(void *state)
{
    struct cprun *p = state;
    runpace_fini(&p->pace);
    predict_free(&p->pred);
    free(p);
}

/* Whether the run takes settings s (the engine's checks, train_opts_check), with either split
 * (b toggles them): 0, or ERR_INVAL saying why. */
static int runs(const struct cprun *p, const struct settings *s, struct error *e)
{
    struct train_opts o;
    struct settings t = *s;
    int rc = 0;
    for (int naive = 0; naive < 2 && !rc; naive++) {
        t.naive = naive;
        options(p, &t, &o);
        rc = train_opts_check(&o, e);
    }
    return rc;
}

static int cprun_set(void *state, const char *name, const char *value, struct error *e)
{
    struct cprun *p = state;
    struct settings s = p->start;
    int rc = 0;
    if (!strcmp(name, "seq")) {
        rc = runpace_set_int(name, value, MIN_SEQ, MAX_SEQ, &s.seq, e);
    } else if (!strcmp(name, "cp") || !strcmp(name, "cp_naive") || !strcmp(name, "batch") ||
               !strcmp(name, "precision")) {
        struct train_opts t = {
            .cp = s.cp, .cp_naive = s.naive, .batch = s.batch, .precision = s.prec};
        if (!(rc = settings_set(&t, name, value, e)) &&
            !(rc = runpace_within("cp", t.cp, MIN_CP, MAX_CP, e)) &&
            !(rc = runpace_within("batch", t.batch, 1, RUNPACE_MAX_BATCH, e)))
            s.cp = t.cp, s.naive = t.cp_naive, s.batch = t.batch, s.prec = t.precision;
    } else {
        rc = error_set(e, ERR_INVAL,
                       "the ring attention panel knows cp, cp_naive, seq, batch and precision, "
                       "not '%s'",
                       name);
    }
    if (rc || (rc = runs(p, &s, e)))
        return rc;
    return runpace_set(&p->pace, &s);
}

static int cprun_on_key(void *state, int key)
{
    struct cprun *p = state;
    if (key == 'w') {
        p->show_time = !p->show_time;
        return PANEL_HANDLED | PANEL_REDRAW;
    }
    struct settings t = p->s;
    struct error e = {0};
    switch (key) {
    case 'c':
    case 'C': {
        int cp = key == 'c' ? t.cp * 2 : t.cp / 2;
        if (cp < MIN_CP || cp > MAX_CP)
            return runpace_refuse(&p->pace, "cp stays %d: the panel runs %d or %d GPUs", t.cp,
                                  MIN_CP, MAX_CP);
        t.cp = cp;
        break;
    }
    case 'b': t.naive = !t.naive; break;
    case 's':
    case 'S': {
        int seq = key == 's' ? t.seq * 2 : t.seq / 2;
        if (seq < MIN_SEQ || seq > MAX_SEQ)
            return runpace_refuse(&p->pace, "sequence stays %d: the panel runs %d to %d tokens",
                                  t.seq, MIN_SEQ, MAX_SEQ);
        t.seq = seq;
        break;
    }
    default: return 0;
    }
    if (runs(p, &t, &e))
        return runpace_refuse(&p->pace, "%s", e.msg);
    p->s = t;
    return runpace_rekeyed(&p->pace, NULL);
}

static int cprun_on_event(void *state, const struct panel_event *ev)
{
    struct cprun *p = state;
    return runpace_panel_event(&p->pace, ev);
}

/* ------------------------------------------------------------------ drawing */

/* The GPU holding the matrix's unit u (T / 2C tokens) under a split, and the first of its own
 * indices there. */
static int unit_owner(const struct cprun *p, enum ring_split split, int u, int *local)
{
    int T = p->s.seq, C = p->s.cp, w = T / (2 * C), n = T / C;
    for (int g = 0; g < C; g++)
        for (int i = 0; i < n; i += w)
            if (ring_position(T, C, g, split, i) == u * w) {
                *local = i;
                return g;
            }
    *local = 0;
    return 0;
}

/* The matrix of a split from row y at column x, cw columns a cell: its head (the key units'
 * GPUs) and a row per query unit. live: the run's, lit as the replay goes; else every block
 * the split computes. Returns the next row. */
static int draw_matrix(const struct cprun *p, struct ui_canvas *c, int y, int x, int cw,
                       enum ring_split split, bool live)
{
    int C = p->s.cp, U = 2 * C;
    int owner[UNITS], local[UNITS], layer[MAX_CP], lit[MAX_CP];
    enum pass pass[MAX_CP];
    for (int u = 0; u < U; u++)
        owner[u] = unit_owner(p, split, u, &local[u]);
    for (int g = 0; g < C; g++) {
        pass[g] = live ? ring_at(p, g, &layer[g], &lit[g]) : PASS_DONE;
        lit[g] = live ? lit[g] : C;
    }
    canvas_text(c, y, x, ROLE_DIM, "k");
    for (int u = 0; u < U; u++)
        canvas_printf(c, y, x + 2 + u * cw, ROLE_DIM, "%d", owner[u]);
    y++;
    for (int i = 0; i < U; i++, y++) {
        int r = owner[i];
        canvas_printf(c, y, x, ROLE_DIM, "%d", r);
        for (int j = 0; j < U; j++) {
            /* units are in the sequence's order: query unit i sees key unit j whole below the
             * diagonal, a triangle of it on the diagonal, nothing above it */
            int s = owner[j];
            bool computed = j <= i;
            int step = (r - s + C) % C; /* the ring step that brings GPU s's block to GPU r */
            bool on = computed && pass[r] != PASS_NONE && step < lit[r];
            bool now = on && pass[r] != PASS_DONE && step == lit[r] - 1;
            char ch = !computed ? ' ' : !on ? '.' : (char)('0' + r);
            enum ui_role role = !on ? ROLE_DIM : now ? ROLE_MOVED : ROLE_BAR;
            for (int k = 0; k < cw; k++) /* the diagonal's triangle: its lower left half */
                canvas_printf(c, y, x + 2 + j * cw + k, role, "%c",
                              j < i || k < cw / 2       ? ch
                              : k == cw / 2 && computed ? '\\'
                                                        : ' ');
        }
    }
    return y;
}

/* What the ring is doing, on row y: GPU 0's pass, layer and blocks held (forward) or done
 * (backward), and the GPU whose block each GPU took in last. */
static void draw_ring(const struct cprun *p, struct ui_canvas *c, int y)
{
    int C = p->s.cp, W = c->r.w, layer, lit;
    enum pass ps = ring_at(p, 0, &layer, &lit);
    char line[2][160];
    int x = 0;
    if (ps == PASS_FORWARD || ps == PASS_BACKWARD) {
        bool fwd = ps == PASS_FORWARD;
        snprintf(line[0], sizeof line[0],
                 "layer %d %s: %d of %d blocks %s, the newest from:", layer,
                 fwd ? "forward" : "backward", lit, C, fwd ? "held" : "done");
        snprintf(line[1], sizeof line[1], "L%d %s %d/%d, newest from:", layer, fwd ? "fwd" : "bwd",
                 lit, C);
        int k = layout_text_width(line[0]) + 2 * C > W;
        x = canvas_text(c, y, 0, ROLE_TEXT, line[k]);
        for (int g = 0, l, n; g < C; g++) {
            enum pass pg = ring_at(p, g, &l, &n);
            if (pg == PASS_FORWARD || pg == PASS_BACKWARD)
                x = canvas_printf(c, y, x, ROLE_MOVED, " %d", (g - (n - 1) + C) % C);
            else
                x = canvas_text(c, y, x, ROLE_DIM, " -");
        }
        return;
    }
    x = canvas_text(c, y, 0, ROLE_DIM, "ring");
    for (int g = 0; g <= C; g++)
        x = canvas_printf(c, y, x, ROLE_DIM, "%s%d", g ? ">" : " ", g % C);
    snprintf(line[0], sizeof line[0], ": %s",
             ps == PASS_DONE ? "every block computed" : "no block yet");
    if (x + layout_text_width(line[0]) <= W)
        canvas_text(c, y, x, ROLE_DIM, line[0]);
}

/* Each GPU's bar and total from row y at column x, w wide; the next row. */
static int draw_bars(const struct cprun *p, struct ui_canvas *c, int y, int x, int w)
{
    canvas_text(c, y++, x, ROLE_DIM, w >= 26 ? "memory, each GPU's ledger" : "GPU ledgers");
    for (int g = 0; g < p->s.cp; g++, y++) {
        canvas_printf(c, y, x, ROLE_DIM, "%d", g);
        runpace_draw_ledger(&p->pace, c, y, x + 2, w - 2, w >= 30 ? 11 : 7, g, p->scale);
    }
    return y;
}

/* A count in fewer than w cells: whole, grouped by thousands, when it fits; else in millions. */
static void count_text(char *buf, size_t n, double v, int w)
{
    char raw[32], grouped[48];
    snprintf(raw, sizeof raw, "%.0f", v);
    int len = (int)strlen(raw), k = 0;
    for (int i = 0; i < len; i++) {
        if (i > 0 && (len - i) % 3 == 0)
            grouped[k++] = ',';
        grouped[k++] = raw[i];
    }
    grouped[k] = 0;
    if (k < w)
        snprintf(buf, n, "%s", grouped);
    else
        snprintf(buf, n, "%.1fM", v / 1e6);
}

/* The scores each GPU computes per step: the run's split measured (after a step; before, its
 * blocks', dim), the other computed from its blocks, from row y at column x; the next row. */
static int draw_scores(const struct cprun *p, struct ui_canvas *c, int y, int x, int w)
{
    int C = p->s.cp, fw = w >= 26 ? 11 : 9;
    bool shown = p->pace.shown > 0;
    double v[2][MAX_CP], mean[2] = {0, 0}, most = 0;
    for (int k = 0; k < 2; k++) /* k 0 balanced, 1 naive */
        for (int g = 0; g < C; g++) {
            bool run = k == (int)p->s.naive;
            v[k][g] =
                run && shown ? (double)p->pace.last.gpu[g].ring_scores : block_scores(p, g, k == 1);
            mean[k] += v[k][g] / C, most = fmax(most, v[k][g]);
        }
    int xx = canvas_text(c, y, x, ROLE_DIM, "scores");
    for (int k = 0; k < 2; k++)
        xx = canvas_printf(c, y, xx, k == (int)p->s.naive ? ROLE_TITLE : ROLE_DIM, " %*s", fw - 1,
                           k ? "naive" : "balanced");
    y++;
    for (int g = 0; g < C; g++, y++) {
        xx = canvas_printf(c, y, x, ROLE_DIM, "%-6d", g);
        for (int k = 0; k < 2; k++) {
            char b[32];
            count_text(b, sizeof b, v[k][g], fw);
            /* the busiest GPU of a split whose work is uneven, and those under its mean */
            bool uneven = most > 0 && v[k][g] != mean[k];
            enum ui_role role = !uneven ? ROLE_TEXT : v[k][g] > mean[k] ? ROLE_WARN : ROLE_DIM;
            if (k == (int)p->s.naive && !shown)
                role = ROLE_DIM;
            xx = canvas_printf(c, y, xx, role, " %*s", fw - 1, b);
        }
    }
    return y;
}

/* The busiest GPU's scores over the mean, for a split (computed from its blocks). */
static double busiest_over_mean(const struct cprun *p, bool naive)
{
    double sum = 0, most = 0;
    for (int g = 0; g < p->s.cp; g++) {
        double v = block_scores(p, g, naive);
        sum += v, most = fmax(most, v);
    }
    return sum > 0 ? most / (sum / p->s.cp) : 0;
}

static void draw_head(const struct cprun *p, struct ui_canvas *c)
{
    char head[2][160];
    snprintf(head[0], sizeof head[0], "tiny, cp %d %s, sequence %d, batch %d, %s", p->s.cp,
             split_name(p->s.naive), p->s.seq, p->s.batch, fp_info(p->s.prec)->key);
    snprintf(head[1], sizeof head[1], "tiny cp %d %s, seq %d, b %d, %s", p->s.cp,
             p->s.naive ? "naive" : "bal", p->s.seq, p->s.batch, fp_info(p->s.prec)->key);
    canvas_text(c, 0, 0, ROLE_TEXT, head[layout_text_width(head[0]) > c->r.w]);
}

static void cprun_draw(const void *state, struct ui_canvas *c)
{
    const struct cprun *p = state;
    int W = c->r.w, H = c->r.h, C = p->s.cp, y = 1;
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
    draw_ring(p, c, y++);
    /* the matrix, and beside it (or below, when narrow) the bars and the scores */
    int U = 2 * C, cw = W >= 60 ? 4 : C > 2 ? 2 : 3, mw = 2 + U * cw, sx = mw + 2, sw = W - sx;
    int top = y;
    y = draw_matrix(p, c, y, 0, cw, split_of(&p->s), true);
    if (sw >= 22) {
        int yy = draw_bars(p, c, top, sx, sw);
        yy = draw_scores(p, c, yy, sx, sw);
        y = yy > y ? yy : y;
    } else {
        y = draw_bars(p, c, y, 0, W);
        y = draw_scores(p, c, y, 0, W);
    }
    /* the verdicts */
    if (y < H) {
        if (!(p->pred.ok && runpace_draw_verdict(&p->pace, c, y, p->pred.mem)) && p->pred.ok) {
            runfeed_bytes(b1, sizeof b1, p->pred.mem[0].total, 12);
            canvas_printf(c, y, 0, ROLE_DIM, "calc: each GPU holds %s B at peak", b1);
        }
        y++;
    }
    if (y < H && p->pred.ok) { /* the ring's bytes per GPU */
        uint64_t sent[MAX_CP];
        for (int g = 0; g < C; g++)
            sent[g] = p->pace.last.gpu[g].sent[STRATEGY_CP];
        runpace_draw_sent(&p->pace, c, y++, "ring B/step", sent, p->pred.comm[0].cp.bytes);
    }
    if (y < H && p->pred.ok) { /* activations per GPU against one GPU's */
        units_format_bytes(b1, sizeof b1, p->pred.mem[0].activations, UNITS_BINARY);
        units_format_bytes(b2, sizeof b2, p->act1, UNITS_BINARY);
        char line[2][160];
        snprintf(line[0], sizeof line[0], "activations %s a GPU, one GPU without cp %s (calc)", b1,
                 b2);
        snprintf(line[1], sizeof line[1], "act %s/GPU, cp 1: %s", b1, b2);
        canvas_text(c, y++, 0, ROLE_TEXT, line[layout_text_width(line[0]) > W]);
    }
    if (y < H) { /* the causal balance */
        char line[2][160];
        snprintf(line[0], sizeof line[0], "busiest / mean: balanced %.2f, naive %.2f",
                 busiest_over_mean(p, false), busiest_over_mean(p, true));
        snprintf(line[1], sizeof line[1], "max/mean bal %.2f naive %.2f",
                 busiest_over_mean(p, false), busiest_over_mean(p, true));
        int x = canvas_text(c, y, 0, ROLE_TEXT, line[layout_text_width(line[0]) + 14 > W]);
        if (p->pace.shown) {
            bool same = scores_as_blocks(p);
            canvas_text(c, y, x + 1, same ? ROLE_GOOD : ROLE_ERROR,
                        same ? "run = blocks" : "run != blocks");
        }
        y++;
    }
    /* the other split, as it would compute (its blocks), where there is room */
    if (y + 2 + U + 1 <= H) {
        y++;
        canvas_printf(c, y++, 0, ROLE_DIM,
                      "the %s split computes (not run):", split_name(!p->s.naive));
        y = draw_matrix(p, c, y, 0, cw, p->s.naive ? RING_BALANCED : RING_NAIVE, false);
    }
    if (y < H)
        runpace_draw_missed(&p->pace, c, y);
}

static const struct panel_key cprun_keys[] = {
    {"c C", "twice / half the context-parallel GPUs: 2 or 4 (restarts)", "cp"},
    {"b", "the split: balanced (chunks i and 2C-1-i) or naive (chunk i); restarts", "split"},
    {"s S", "twice / half the sequence, 32 to 512 tokens (restarts)", "seq"},
    {"w", "the last step's timeline: each GPU's compute and communication", "time"},
    {NULL, NULL, NULL},
};

const struct panel_ops panel_cprun = {
    .name = "cprun",
    .title = "Ring attention, running",
    .about = "A real context-parallel run of the tiny GPT on thread-GPUs: each GPU holds a "
             "part of every sequence, and its queries meet the others' keys and values as the "
             "ring brings them. The causal attention matrix lights block by block as each GPU "
             "holds them, beside each GPU's memory from its own ledger and the scores each "
             "computes (the naive split's uneven work beside the balanced split's), the ring's "
             "bytes and the activations beside the calculator's.",
    .init = cprun_init,
    .fini = cprun_fini,
    .on_key = cprun_on_key,
    .on_event = cprun_on_event,
    .set = cprun_set,
    .draw = cprun_draw,
    .plays = true,
    .keys = cprun_keys,
};
