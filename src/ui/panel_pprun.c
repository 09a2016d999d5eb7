/* Lesson 4's run panel: a real pipeline-, tensor- and data-parallel training run of the tiny
 * (or small) GPT on thread-GPUs, beside the calculator's prediction.
 *
 * The run is the engine of `scalelab train --pp P --dp D --tp T [--sequence-parallel]
 * --micro-batches M --schedule S [--chunks 2]` (src/par/run.h), paced by the screen as the
 * Lab's run panel's is (ui/runpace.h): each tick lets it start a step or two beyond the one
 * shown and takes the records of the steps done, never waiting for one. Every GPU's memory
 * changes, sends and pipeline operations (EV_MEMORY, EV_SEND, EV_PIPE_OP) are recorded as they
 * happen, on the GPUs' threads, into a ring under a lock of its own (ui/runfeed.h); each step
 * is then replayed over about a second and a half of the screen's time (at 1x), in simulated
 * time: the Gantt chart's blocks appear as the stages ran them, the activations of each GPU
 * rise and fall with the micro-batches it holds, and a tensor-parallel group flashes while its
 * collectives run (a send between two GPUs of the same stage and data-parallel rank is
 * tensor-parallel; between stages, pipeline; else data-parallel). At the end of a step each bar
 * holds its GPU's ledger exactly.
 *
 * Drawn: the layout's GPUs as a grid (a row per pipeline stage, a column per GPU of the stage:
 * data-parallel rank, then tensor-parallel rank innermost, as the ranks go, labelled d<r>t<r>),
 * each with a stacked bar from its own ledger on one scale for the schedules; whether every
 * ledger's peaks equal the calculator's for its stage; the Gantt chart of the step (each
 * stage's first GPU, one row per stage, forwards labelled 0-7 and backwards a-h by
 * micro-batch, the interleaved schedule's second chunk A-H and i-p, idle time as dots) to the
 * scale of simulated time, or (f) the same operations retimed with free sends; the bubble
 * measured on the executed timeline beside the calculator's formulas for the schedule that
 * ran ((p-1)/m and (p-1)/(m+p-1), or the interleaved (p-1)/(vm) and (p-1)/(vm+p-1)), and why
 * they differ, each cause in points of the ideal time, adding up to the gap: the sends'
 * latency (what the retiming with free sends takes away: a tiny model's operation computes
 * for a fraction of a microsecond, each send pays the link's α) and the stages' unequal
 * operations (the first stage's embedding, the last's head and loss); the micro-batches each
 * stage held at once beside the schedule's; the bytes each
 * stage's GPUs sent in the step (pipeline, tensor-parallel, data-parallel) beside the
 * calculator's.
 *
 * The run is timed as synthetic-7b where the engine can and that model fits the layout
 * (runpace_time): the bubble then in seconds beside (p-1)/m x ideal; w the last step's
 * timeline (ui/timeline.h).
 *
 * Keys: p / P more / fewer stages (the divisors of the model's layers up to 4), m / M twice /
 * half the micro-batches (1-8), d / D twice / half the data-parallel ranks (1-4), t / T twice
 * / half the tensor-parallel GPUs (those dividing the heads, FFN width and vocabulary: tiny 1,
 * 2, 4; small 1, 2), e sequence parallelism (with tp > 1), s GPipe, 1F1B or interleaved with 2
 * chunks (where the layout allows it: m a multiple of pp, pp x 2 dividing the layers; dp
 * forced to 1), o model (tiny, small): each restarts the run, at most 16 GPUs and 8 a stage
 * (dp gives way); a size stops at its bound, and the status line says what a key could not
 * do and what it changed besides (small's 6 heads take tp 2, not 4); f the Gantt with free
 * sends. The same letters change the same things in lesson 4's layout panel. Space (the app's)
 * plays and pauses, n steps. Settings: model=tiny|small pp=N dp=N tp=N sequence_parallel=on|off
 * micro_batches=M schedule=gpipe|1f1b|interleaved precision=fp32|bf16|fp16 batch=B (the global
 * batch, raised to a multiple of dp x M); by default those of `scalelab train --pp 2
 * --micro-batches 4`. */
#include "config.h"

#include <curses.h>
#include <math.h>
#include <stdarg.h>
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
#include "par/layout.h"
#include "par/predict.h"
#include "par/settings.h"
#include "par/run.h"
#include "sim/event.h"
#include "sim/ledger.h"
#include "ui/draw.h"
#include "ui/eventlog.h"
#include "ui/gantt.h"
#include "ui/memui.h"
#include "ui/panel.h"
#include "ui/ppgantt.h"
#include "ui/runfeed.h"
#include "ui/runpace.h"

#define MAX_GPUS   16 /* dp x tp x pp */
#define MAX_COLS   8  /* dp x tp: a stage's GPUs side by side */
#define MAX_STAGES 4
#define MAX_DP     4
#define MAX_TP     4
#define CHUNKS     2 /* the interleaved schedule's model chunks per GPU */
#define MAX_MICRO  8
#define REPLAY_S   1.5 /* wall seconds one step's replay takes at 1x */

struct settings {
    int model; /* 0 tiny, 1 small */
    int pp, dp, tp, m, batch;
    bool sp; /* sequence parallelism (tp > 1) */
    enum calc_schedule sched;
    enum fp_format prec;
};

struct pprun {
    struct settings s, start;
    int gpus, batch;              /* the run's: dp x tp x pp, the global batch */
    int cols;                     /* a stage's GPUs: dp x tp */
    enum calc_schedule run_sched; /* 1F1B on one stage */
    struct runpace pace;          /* the run, its models and GPUs, the step replayed, the ledgers */
    /* the calculator: each stage's memory and traffic, the schedule */
    struct prediction pred;
    double scale;
    /* the Gantt chart of the step shown (replaying or the last done), retimed */
    struct ppgantt g, gfree;
    bool free_ok;
    /* the last step done: its measurements */
    struct ppgantt done;
    struct pp_bubble bub, bub_free;
    bool order_ok;
    double fwd_s; /* a forward's mean compute time */
    bool show_free, show_time, said_verdict;
    struct layout_place place[MAX_GPUS]; /* where each GPU of the run sits (par/layout.h) */
    /* the tensor-parallel collectives: each group's (by its first GPU) last send seen by the
     * replay ends at flash_end; it flashes while that is after the frame's start (the
     * simulated time shown before it, pace.tprev) */
    double flash_end[MAX_GPUS];
};

/* ------------------------------------------------------------------ the screen's side */

/* The run's options for the settings. */
static void options(const struct pprun *p, struct train_opts *o)
{
    runpace_options(&p->pace, p->s.model, p->s.prec, p->batch, p->gpus, o);
    o->pp = p->s.pp;
    o->tp = p->s.tp;
    o->sp = p->s.sp && p->s.tp > 1; /* asked for with tp 1, it waits for tp > 1 */
    o->chunks = p->run_sched == SCHED_INTERLEAVED ? CHUNKS : 1;
    o->micro_batches = p->s.m;
    o->schedule = p->run_sched;
}

/* The calculator's figures for this layout, and the bars' scale: the largest stage of the
 * run's schedule, GPipe and 1F1B, so that the bars compare the schedules. */
static void predict(struct pprun *p)
{
    const struct model_shape *m = &p->pace.models[p->s.model];
    struct train_opts o;
    struct memory_config c;
    struct error e = {0};
    options(p, &o);
    predict_free(&p->pred);
    predict_run(&o, m, &p->pace.spec, &p->pred, &e);
    p->scale = 0;
    for (int st = 0; p->pred.ok && st < p->s.pp; st++)
        p->scale = fmax(p->scale, p->pred.mem[st].total);
    for (int k = 0; p->pred.ok && k < 2; k++) { /* GPipe's and 1F1B's of one chunk */
        predict_config(&o, m, p->pace.spec.hbm_bytes, &c, &e);
        c.schedule = k == 0 ? SCHED_GPIPE : SCHED_1F1B, c.chunks = 1;
        for (int st = 0; st < p->s.pp; st++) {
            struct memory_result r;
            if (memory_compute_stage(&c, st, &r, &e) == 0)
                p->scale = fmax(p->scale, r.total);
        }
    }
    p->scale = p->scale > 0 ? p->scale * 1.1 : 1;
    if (!p->pred.ok)
        snprintf(p->pace.err, sizeof p->pace.err, "%s", e.msg);
}

/* (Re)starts the run with p->s: nothing runs until the screen allows a step. */
static void restart(void *panel)
{
    struct pprun *p = panel;
    runpace_clear(&p->pace);
    p->said_verdict = false;
    ppg_reset(&p->g, p->s.pp);
    ppg_reset(&p->gfree, p->s.pp);
    ppg_reset(&p->done, p->s.pp);
    p->free_ok = false;
    p->cols = p->s.dp * p->s.tp;
    p->gpus = p->cols * p->s.pp;
    int per = p->s.dp * p->s.m;
    p->batch = p->s.batch < per ? per : (p->s.batch + per - 1) / per * per;
    p->run_sched = p->s.pp == 1 ? SCHED_1F1B : p->s.sched;
    memset(p->flash_end, 0, sizeof p->flash_end);
    struct train_opts o;
    options(p, &o);
    for (int g = 0; g < p->gpus; g++)
        layout_place(&o, g, 1, &p->place[g]);
    /* before the calculator: the bucket may be the model's */
    runpace_time(&p->pace, &o, &p->pace.models[p->s.model]);
    predict(p);
    if (p->pace.err[0])
        return;
    runpace_start(&p->pace, &o);
}

static void say_restart(void *panel)
{
    struct pprun *p = panel;
    eventlog_add(p->pace.log,
                 "run: %s, pp %d x dp %d x tp %d%s, %s, %d micro-batches, batch %d: restarted",
                 runpace_model_names[p->s.model], p->s.pp, p->s.dp, p->s.tp,
                 p->s.sp && p->s.tp > 1 ? " sp" : "", sched_name(p->run_sched), p->s.m, p->batch);
}

enum comm_kind { COMM_PP, COMM_DP, COMM_TP };

/* The bytes GPU g sent in the step r of one kind, and the calculator's for its stage's GPUs. */
static uint64_t sent_of(const struct run_step *r, int g, enum comm_kind k)
{
    const struct run_gpu_step *s = &r->gpu[g];
    return s->sent[k == COMM_PP ? STRATEGY_PP : k == COMM_DP ? STRATEGY_DP : STRATEGY_TP];
}

static double predicted_sent(const struct traffic *t, enum comm_kind k)
{
    return k == COMM_PP ? t->pp.bytes : k == COMM_DP ? t->dp.bytes : t->tp.bytes;
}

/* Whether every GPU of each stage sent the calculator's bytes of kind k in the last step. */
static bool sent_as_predicted(const struct pprun *p, enum comm_kind k)
{
    for (int g = 0; g < p->gpus; g++)
        if ((double)sent_of(&p->pace.last, g, k) !=
            llround(predicted_sent(&p->pred.comm[p->place[g].stage], k)))
            return false;
    return true;
}

/* A send from GPU a to GPU b, by the layout's coordinates: between stages, within a
 * tensor-parallel group (the same stage, data- and context-parallel rank), or else between
 * data-parallel copies (a context-parallel ring's sends, which keep the stage, data-parallel
 * and tensor-parallel rank, are not tensor-parallel: this panel runs cp 1, and the ring's
 * bytes are not among the kinds it shows). */
static enum comm_kind comm_of(const struct pprun *p, int a, int b)
{
    const struct layout_place *pa = &p->place[a], *pb = &p->place[b];
    if (pa->stage != pb->stage)
        return COMM_PP;
    return pa->dprank == pb->dprank && pa->cprank == pb->cprank ? COMM_TP : COMM_DP;
}

/* The tensor-parallel group of GPU g, by its first GPU. */
static int tp_group_of(const struct pprun *p, int g)
{
    return layout_rank(&p->place[g], LAYOUT_TP, 0);
}

/* The step's Gantt chart from its events: the operations of each stage's first GPU. */
static void build_gantt(struct pprun *p)
{
    ppg_reset(&p->g, p->s.pp);
    for (size_t i = 0; i < p->pace.feed.nrep; i++) {
        const struct runrec *r = &p->pace.feed.rep[i];
        if (r->type != EV_PIPE_OP || r->device < 0 || r->device >= p->gpus)
            continue;
        const struct layout_place *pl = &p->place[r->device];
        if (pl->dprank || pl->tprank)
            continue;
        struct pp_done d = {r->kind, r->micro, r->chunk, r->t, r->t_end};
        ppg_add(&p->g, pl->stage, &d);
    }
    p->free_ok = ppg_retime(&p->g, &p->gfree);
}

/* A step replayed: its measurements, and once a run whether the ledgers are the calculator's. */
static void end_step(void *panel)
{
    struct pprun *p = panel;
    p->done = p->g;
    ppg_bubble(&p->done, &p->bub);
    if (p->free_ok)
        ppg_bubble(&p->gfree, &p->bub_free);
    p->order_ok = p->pred.have_sched && ppg_same_order(&p->done, &p->pred.sched);
    double fsum = 0;
    int fn = 0;
    for (int st = 0; st < p->done.stages; st++)
        for (int i = 0; i < p->done.n[st]; i++)
            if (p->done.ops[st][i].kind == SCHED_OP_F)
                fsum += p->done.ops[st][i].end_s - p->done.ops[st][i].start_s, fn++;
    p->fwd_s = fn ? fsum / fn : 0;
    if (!p->said_verdict && p->pred.ok) {
        char what[64];
        snprintf(what, sizeof what, "pp %d x dp %d x tp %d, %s", p->s.pp, p->s.dp, p->s.tp,
                 sched_name(p->run_sched));
        runpace_say_verdict(&p->pace, p->pred.mem, "run", what);
        p->said_verdict = true;
    }
}

/* A step about to be replayed: its chart, and no flash yet. */
static void begin_step(void *panel)
{
    struct pprun *p = panel;
    build_gantt(p);
    memset(p->flash_end, 0, sizeof p->flash_end);
}

/* A record the replay passes: the memory records move the bars (runpace); the sends within a
 * tensor-parallel group light it until their arrival. */
static void light_group(void *panel, const struct runrec *r)
{
    struct pprun *p = panel;
    if (r->type == EV_SEND && r->peer >= 0 && r->peer < p->gpus &&
        comm_of(p, r->device, r->peer) == COMM_TP) {
        double *end = &p->flash_end[tp_group_of(p, r->device)];
        *end = fmax(*end, r->t_end);
    }
}

/* ------------------------------------------------------------------ settings and keys */

static bool same_settings(const void *x, const void *y)
{
    const struct settings *a = x, *b = y;
    return a->model == b->model && a->pp == b->pp && a->dp == b->dp && a->tp == b->tp &&
           a->sp == b->sp && a->m == b->m && a->batch == b->batch && a->sched == b->sched &&
           a->prec == b->prec;
}

/* The run panel's part in the replay: the chart, the flashes, the measurements; its
 * settings. */
static const struct runpace_ops pace_ops = {.name = "pprun",
                                            .tag = "run",
                                            .replay_s = REPLAY_S,
                                            .begin = begin_step,
                                            .record = light_group,
                                            .end = end_step,
                                            .settings = sizeof(struct settings),
                                            .same = same_settings,
                                            .restart = restart,
                                            .say_restart = say_restart};

static void defaults(struct settings *s)
{
    *s = (struct settings){.model = 0,
                           .pp = 2,
                           .dp = 1,
                           .tp = 1,
                           .m = 4,
                           .batch = 16,
                           .sched = SCHED_1F1B,
                           .prec = FP_FP32};
}

static int pprun_init(void **state, const struct panel_env *env, struct error *e)
{
    struct pprun *p = calloc(1, sizeof *p);
    if (!p)
        return error_set(e, ERR_NOMEM, "out of memory");
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

static void pprun_fini(void *state)
{
    struct pprun *p = state;
    runpace_fini(&p->pace);
    predict_free(&p->pred);
    free(p);
}

/* The stage counts offered for a model: 1 to 4, those that divide its layers. */
static bool pp_fits(const struct pprun *p, int model, int pp)
{
    return pp >= 1 && pp <= MAX_STAGES && p->pace.models[model].layers % pp == 0;
}

/* The tensor-parallel sizes offered: 1, 2, 4, those that divide the heads, the FFN width and
 * the vocabulary it splits (tiny: 1, 2, 4; small: 1, 2), and with sequence parallelism the
 * sequence. */
static bool tp_fits(const struct pprun *p, const struct settings *s, int tp)
{
    const struct model_shape *m = &p->pace.models[s->model];
    return tp >= 1 && tp <= MAX_TP && m->heads % tp == 0 && m->ffn % tp == 0 &&
           m->vocab % tp == 0 && (!s->sp || m->seq % tp == 0);
}

/* The data-parallel sizes offered: 1, 2, 4, within 8 GPUs a stage and 16 in all; 1 for the
 * interleaved schedule, which the thread-GPUs run on one data-parallel copy. */
static bool dp_fits(const struct settings *s, int dp)
{
    return dp >= 1 && dp <= MAX_DP && dp * s->tp <= MAX_COLS && dp * s->tp * s->pp <= MAX_GPUS &&
           (s->sched != SCHED_INTERLEAVED || dp == 1);
}

/* Why the interleaved schedule cannot run s's layout (NULL if it can), in buf. */
static const char *no_interleaved(const struct pprun *p, const struct settings *s, char *buf,
                                  size_t n)
{
    int layers = p->pace.models[s->model].layers;
    if (s->pp < 2)
        snprintf(buf, n, "it needs 2 stages or more");
    else if (s->m % s->pp)
        snprintf(buf, n, "m must be a multiple of pp %d", s->pp);
    else if (layers % (s->pp * CHUNKS))
        snprintf(buf, n, "pp %d x %d chunks does not divide %d layers", s->pp, CHUNKS, layers);
    else
        return NULL;
    return buf;
}

/* Brings s to a layout the run can take, saying in note (n bytes, if not NULL) what it
 * changed: the stages and tensor-parallel size the model allows, the interleaved schedule only
 * where it can run (then dp 1), dp within 16 GPUs. (Sequence parallelism stays asked for with
 * tp 1, and runs when tp > 1.) */
static void fit(const struct pprun *p, struct settings *s, char *note, size_t n)
{
    char why[96];
    int pp = s->pp, tp = s->tp;
    while (!pp_fits(p, s->model, s->pp))
        s->pp--;
    while (!tp_fits(p, s, s->tp))
        s->tp /= 2;
    const struct model_shape *m = &p->pace.models[s->model];
    if (note && s->pp != pp)
        snprintf(note, n, "pp %d, not %d: %s has %d layers", s->pp, pp, m->name, m->layers);
    if (note && s->tp != tp) {
        size_t len = s->pp != pp ? strlen(note) : 0;
        snprintf(note + len, n - len, "%stp %d, not %d: %s has %d heads", len ? "; " : "", s->tp,
                 tp, m->name, m->heads);
    }
    if (s->sched == SCHED_INTERLEAVED && no_interleaved(p, s, why, sizeof why)) {
        s->sched = SCHED_1F1B;
        if (note)
            snprintf(note, n, "1f1b, not interleaved: %s", why);
    } else if (s->sched == SCHED_INTERLEAVED && s->dp > 1) {
        s->dp = 1;
        if (note)
            snprintf(note, n, "interleaved: dp forced to 1 (one data-parallel copy)");
    }
    if (!dp_fits(s, s->dp)) {
        while (s->dp > 1 && !dp_fits(s, s->dp))
            s->dp /= 2;
        if (note)
            snprintf(note, n, "dp %d: at most %d GPUs, %d a stage", s->dp, MAX_GPUS, MAX_COLS);
    }
}

/* The run's settings this panel takes (par/settings.h reads them). */
static bool is_run_setting(const char *name)
{
    static const char *const names[] = {
        "pp", "tp", "sequence_parallel", "micro_batches", "schedule", "precision", "batch", NULL};
    for (int i = 0; names[i]; i++)
        if (!strcmp(name, names[i]))
            return true;
    return false;
}

static int pprun_set(void *state, const char *name, const char *value, struct error *e)
{
    struct pprun *p = state;
    struct settings s = p->start;
    int rc = 0;
    if (!strcmp(name, "model")) {
        rc = runpace_set_model(value, &s.model, e);
    } else if (!strcmp(name, "dp")) {
        rc = runpace_set_int(name, value, 1, MAX_DP, &s.dp, e);
    } else if (is_run_setting(name)) { /* the run's settings, and this panel's room */
        struct train_opts t = {.pp = s.pp,
                               .tp = s.tp,
                               .sp = s.sp,
                               .micro_batches = s.m,
                               .schedule = s.sched,
                               .precision = s.prec,
                               .batch = s.batch};
        if (!(rc = settings_set(&t, name, value, e)) &&
            !(rc = runpace_within("pp", t.pp, 1, MAX_STAGES, e)) &&
            !(rc = runpace_within("tp", t.tp, 1, MAX_TP, e)) &&
            !(rc = runpace_within("micro_batches", t.micro_batches, 1, MAX_MICRO, e)) &&
            !(rc = runpace_within("batch", t.batch, 1, RUNPACE_MAX_BATCH, e))) {
            s.pp = t.pp, s.tp = t.tp, s.sp = t.sp, s.m = t.micro_batches;
            s.sched = t.schedule, s.prec = t.precision, s.batch = t.batch;
        }
        if (!rc && !strcmp(name, "tp") && !tp_fits(p, &s, s.tp))
            rc = error_set(e, ERR_INVAL,
                           "tp %d must divide %s's heads (%d), FFN width (%d) and vocabulary (%d)",
                           s.tp, runpace_model_names[s.model], p->pace.models[s.model].heads,
                           p->pace.models[s.model].ffn, p->pace.models[s.model].vocab);
    } else {
        rc = error_set(e, ERR_INVAL,
                       "the pipeline run panel knows model, pp, dp, tp, sequence_parallel, "
                       "micro_batches, schedule, precision and batch, not '%s'",
                       name);
    }
    if (rc)
        return rc;
    if (!pp_fits(p, s.model, s.pp))
        return error_set(e, ERR_INVAL, "pp %d does not divide %s's %d layers", s.pp,
                         runpace_model_names[s.model], p->pace.models[s.model].layers);
    /* each layout on the way is brought to one that runs; schedule=interleaved must fit the
     * settings before it */
    fit(p, &s, NULL, 0);
    if (!strcmp(name, "schedule") && s.sched != SCHED_INTERLEAVED &&
        !strcmp(value, "interleaved")) {
        char why[96];
        return error_set(e, ERR_INVAL, "schedule: interleaved cannot run here: %s",
                         no_interleaved(p, &s, why, sizeof why) ? why : "?");
    }
    return runpace_set(&p->pace, &s);
}

/* The next value from v up (dir > 0: doubling) or down (halving) that ok() takes, within
 * [lo, hi]; v itself when there is none (the bound). */
static int next_size(int v, int dir, int lo, int hi, bool (*ok)(const struct pprun *, int),
                     const struct pprun *p)
{
    for (int x = dir > 0 ? v + 1 : v - 1; x >= lo && x <= hi; x += dir > 0 ? 1 : -1)
        if ((dir > 0 ? x % v == 0 : v % x == 0) && ok(p, x))
            return x;
    return v;
}

/* A twice (dir > 0) / half key on *v within [1, hi], the next value ok() takes: whether it
 * moved; at its bound it says so on the status line ("WHAT N, the most: WHY"). */
static bool twice(struct pprun *p, int *v, int dir, int hi, bool (*ok)(const struct pprun *, int),
                  const char *what, const char *why)
{
    int was = *v;
    *v = next_size(*v, dir, 1, hi, ok, p);
    if (*v == was)
        runpace_refuse(&p->pace, "%s %d, %s: %s", what, was, dir > 0 ? "the most" : "the fewest",
                       why);
    return *v != was;
}

static bool tp_ok(const struct pprun *p, int tp)
{
    return tp_fits(p, &p->s, tp);
}

static bool dp_ok(const struct pprun *p, int dp)
{
    return dp_fits(&p->s, dp);
}

static bool any_ok(const struct pprun *p, int x)
{
    (void)p, (void)x;
    return true;
}

static int pprun_on_key(void *state, int key)
{
    struct pprun *p = state;
    struct settings *s = &p->s;
    char note[ERROR_MAX] = ""; /* what a key had to change beside (fit) */
    int dir = key >= 'a' ? +1 : -1, was;
    char range[48];
    const char *most = dir > 0 ? "the most" : "the fewest";
    switch (key) {
    case 'p': /* more / fewer stages: the next count that divides the layers, up to 4 */
    case 'P':
        was = s->pp;
        for (int x = s->pp + dir; x >= 1 && x <= MAX_STAGES && s->pp == was; x += dir)
            if (pp_fits(p, s->model, x))
                s->pp = x;
        if (s->pp == was)
            return runpace_refuse(
                &p->pace, "pp stays %d, %s: %s has %d layers, the run up to %d stages", was, most,
                runpace_model_names[s->model], p->pace.models[s->model].layers, MAX_STAGES);
        break;
    case 'm':
    case 'M':
        snprintf(range, sizeof range, "the run takes 1 to %d", MAX_MICRO);
        if (!twice(p, &s->m, dir, MAX_MICRO, any_ok, "micro-batches stay", range))
            return PANEL_HANDLED | PANEL_REDRAW;
        break;
    case 'd':
    case 'D':
        if (!twice(p, &s->dp, dir, MAX_DP, dp_ok, "dp stays",
                   dir < 0                         ? "1 copy at least"
                   : s->sched == SCHED_INTERLEAVED ? "interleaved runs one copy"
                                                   : "up to 4, 8 GPUs a stage, 16 in all"))
            return PANEL_HANDLED | PANEL_REDRAW;
        break;
    case 't':
    case 'T':
        if (!twice(p, &s->tp, dir, MAX_TP, tp_ok, "tp stays",
                   dir < 0 ? "1 GPU at least"
                           : "it must divide the heads, FFN width and vocabulary"))
            return PANEL_HANDLED | PANEL_REDRAW;
        break;
    case 'e':
        if (s->tp == 1)
            return runpace_refuse(&p->pace, "sequence parallelism splits a tensor-parallel "
                                            "group's work: t first");
        s->sp = !s->sp;
        break;
    case 's': /* GPipe, 1F1B, interleaved (where it runs), round the circle */
        s->sched = s->sched == SCHED_GPIPE  ? SCHED_1F1B
                   : s->sched == SCHED_1F1B ? SCHED_INTERLEAVED
                                            : SCHED_GPIPE;
        if (s->sched == SCHED_INTERLEAVED) {
            char why[96];
            if (no_interleaved(p, s, why, sizeof why)) {
                snprintf(note, sizeof note, "interleaved skipped: %s", why);
                s->sched = SCHED_GPIPE;
            }
        }
        break;
    case 'o': s->model = !s->model; break;
    case 'f': p->show_free = !p->show_free; return PANEL_HANDLED | PANEL_REDRAW;
    case 'w': p->show_time = !p->show_time; return PANEL_HANDLED | PANEL_REDRAW;
    default: return 0;
    }
    fit(p, s, note, sizeof note);
    return runpace_rekeyed(&p->pace, note);
}

static int pprun_on_event(void *state, const struct panel_event *ev)
{
    struct pprun *p = state;
    return runpace_panel_event(&p->pace, ev);
}

/* ------------------------------------------------------------------ drawing */

/* Whether GPU g's tensor-parallel group sent within the frame being shown. */
static bool flashing(const struct pprun *p, int g)
{
    return p->pace.replaying && p->s.tp > 1 && p->flash_end[tp_group_of(p, g)] >= p->pace.tprev;
}

/* The grid of GPUs: a row per stage, a column per GPU of the stage (data-parallel rank, then
 * tensor-parallel rank within it, as the ranks go), labelled d<rank>t<rank> above with tp >
 * 1. A tensor-parallel group whose collective runs in the frame flashes: its GPUs' numbers
 * drawn as moved data, and marked '*' without colour or in ASCII. */
static int draw_grid(const struct pprun *p, struct ui_canvas *c, int y)
{
    int W = c->r.w, cols = p->cols, tp = p->s.tp;
    int colw = (W - 3) / cols;
    /* each GPU's total beside its bar: in full (" 808.00 KiB") when a column has room, else
     * short (" 808K"); a bar of at least 4 cells, else the total alone */
    int lw = colw >= 30 ? 11 : colw >= 14 ? 6 : 0;
    if (colw - 4 - lw < 4)
        lw = colw - 4;
    bool totals = lw > 0;
    bool mark = !theme_color() || theme_ascii();
    if (tp > 1) { /* the labels: the places of the first stage's GPUs */
        for (int g = 0, k = 0; g < p->gpus; g++) {
            const struct layout_place *pl = &p->place[g];
            if (pl->stage != 0)
                continue;
            if (p->s.dp > 1)
                canvas_printf(c, y, 3 + k++ * colw, ROLE_DIM, "d%dt%d", pl->dprank, pl->tprank);
            else
                canvas_printf(c, y, 3 + k++ * colw, ROLE_DIM, "t%d", pl->tprank);
        }
        y++;
    }
    for (int g = 0, k = 0; g < p->gpus; g++, k++) { /* in rank order: a stage's GPUs in a row */
        const struct layout_place *pl = &p->place[g];
        if (g == 0 || pl->stage != p->place[g - 1].stage) {
            y += g > 0, k = 0;
            canvas_printf(c, y, 0, ROLE_DIM, "s%d", pl->stage);
        }
        int x = 3 + k * colw;
        bool fl = flashing(p, g);
        x = canvas_printf(c, y, x, fl ? ROLE_MOVED : ROLE_DIM, "%2d", g);
        x = canvas_text(c, y, x, ROLE_MOVED, fl && mark ? "*" : " ");
        runpace_draw_ledger(&p->pace, c, y, x, colw - 4, totals ? lw : 0, g, p->scale);
    }
    return y + (p->gpus > 0);
}

/* The step's chart: each stage's operations started by the time shown (all of them with free
 * sends, in the order they ran), every one in a column at least (ui/gantt.h); returns the
 * scale, its column's span in *per. */
static enum gantt_scale draw_gantt(const struct pprun *p, struct ui_canvas *c, int y, double *per)
{
    const struct ppgantt *g = p->show_free && p->free_ok ? &p->gfree : &p->g;
    int gw = c->r.w - 4;
    double upto = p->pace.replaying ? p->pace.tc : INFINITY;
    struct gantt_item it[PPG_STAGES * PPG_OPS];
    int n = 0, v = p->run_sched == SCHED_INTERLEAVED ? CHUNKS : 1;
    /* the layout takes every operation of the step, so the columns do not move as the
     * replay goes; those not started by the time shown are left out of the drawing */
    for (int st = 0; st < g->stages; st++)
        for (int i = 0; i < g->n[st]; i++)
            it[n++] = (struct gantt_item){st, g->ops[st][i].start_s, g->ops[st][i].end_s, 0, 0};
    enum gantt_scale sc = gantt_layout(it, n, gw, per);
    for (int st = 0; st < p->s.pp; st++) {
        canvas_printf(c, y + st, 0, ROLE_DIM, "s%d", st);
        for (int col = 0; n > 0 && col < gw; col++)
            canvas_text(c, y + st, 3 + col, ROLE_DIM, ".");
    }
    for (int k = 0, i = 0; k < n; k++) {
        i = k > 0 && it[k - 1].row == it[k].row ? i + 1 : 0;
        const struct pp_done *o = &g->ops[it[k].row][i];
        /* with free sends the operations show in the order they ran */
        double started = g == &p->gfree ? p->g.ops[it[k].row][i].start_s : o->start_s;
        if (started > upto)
            continue;
        char ch[2] = {gantt_char(o->kind, o->micro, o->chunk, p->s.m, v), 0};
        double end = g == &p->gfree ? INFINITY : upto; /* a running one drawn so far */
        int last = it[k].c1;
        if (end < o->end_s && o->end_s > o->start_s) /* the share of its columns done */
            last = it[k].c0 +
                   (int)((end - o->start_s) / (o->end_s - o->start_s) * (it[k].c1 - it[k].c0 + 1));
        for (int col = it[k].c0; col >= 0 && col <= (last > it[k].c1 ? it[k].c1 : last); col++)
            canvas_text(c, y + it[k].row, 3 + col, o->kind == SCHED_OP_F ? ROLE_EXP : ROLE_MAN, ch);
    }
    return sc;
}

/* x in percent, rounded to the 0.1 point the panel shows. */
static double shown_pct(double x)
{
    return round(1000 * x) / 10;
}

/* Why the measured bubble (over the ideal time) is not the formula's fi, in up to three forms,
 * longest first (those that fit w), each part as the panel shows it: the retiming with free
 * sends takes the sends' latency away, and what is left is the stages' unequal operations (the
 * first holds the embedding, the last the head and the loss). The parts add up to the gap. */
static void bubble_why(const struct pprun *p, double fi, char line[3][160])
{
    char b1[32], b2[32];
    line[0][0] = line[1][0] = line[2][0] = '\0';
    if (!p->free_ok)
        return;
    double meas = shown_pct(p->bub.over_ideal), freed = shown_pct(p->bub_free.over_ideal);
    double calc = shown_pct(fi), lat = meas - freed, uneq = freed - calc;
    double alpha =
        p->gpus <= p->pace.spec.gpus_per_node ? p->pace.spec.alpha_intra : p->pace.spec.alpha_inter;
    units_format_seconds(b1, sizeof b1, alpha);
    units_format_seconds(b2, sizeof b2, p->fwd_s);
    if (p->pace.timed) { /* a send is timed as the model's messages, not one α */
        snprintf(line[0], sizeof line[0],
                 "why %+.1f%%: the sends %+.1f%%, unequal stages %+.1f%% (the ends)", lat + uneq,
                 lat, uneq);
        snprintf(line[1], sizeof line[1], "why %+.1f%%: sends %+.1f%%, ends %+.1f%%", lat + uneq,
                 lat, uneq);
        snprintf(line[2], sizeof line[2], "%s", line[1]);
        return;
    }
    snprintf(line[0], sizeof line[0],
             "why %+.1f%%: sends' latency %+.1f%% (%s a send, a forward %s), unequal stages "
             "%+.1f%% (the ends)",
             lat + uneq, lat, b1, b2, uneq);
    snprintf(line[1], sizeof line[1], "why %+.1f%%: latency %+.1f%% (%s/send), ends %+.1f%%",
             lat + uneq, lat, b1, uneq);
    snprintf(line[2], sizeof line[2], "why %+.1f%%: latency %+.1f%%, ends %+.1f%%", lat + uneq, lat,
             uneq);
}

/* The layout in words, or in short when that does not fit, on row 0. */
static void draw_head(const struct pprun *p, struct ui_canvas *c)
{
    int W = c->r.w, y = 0, pp = p->s.pp;
    char tps[24] = "";
    if (p->s.tp > 1)
        snprintf(tps, sizeof tps, " x tp %d%s", p->s.tp, p->s.sp ? " sp" : "");
    /* the layout in words, or in short when that does not fit */
    char head[2][160];
    snprintf(head[0], sizeof head[0], "%s, pp %d x dp %d%s, %s, m %d, batch %d, %s",
             runpace_model_names[p->s.model], pp, p->s.dp, tps, sched_name(p->run_sched), p->s.m,
             p->batch, fp_info(p->s.prec)->key);
    char tpshort[24] = "";
    if (p->s.tp > 1)
        snprintf(tpshort, sizeof tpshort, " tp%d%s", p->s.tp, p->s.sp ? " sp" : "");
    snprintf(head[1], sizeof head[1], "%s pp%d dp%d%s %s m%d b%d %s",
             runpace_model_names[p->s.model], pp, p->s.dp, tpshort, sched_name(p->run_sched),
             p->s.m, p->batch, fp_info(p->s.prec)->key);
    int x = canvas_text(c, y, 0, ROLE_TEXT, head[layout_text_width(head[0]) > W]);
    if (p->s.pp == 1 && p->s.sched == SCHED_GPIPE && x + 12 <= W)
        canvas_text(c, y, x, ROLE_DIM, " (one stage)");
}

/* The Gantt chart of the step shown from row y: its title and legend, the stages' rows and,
 * with axis, its span and scale; the next row. */
static int draw_chart(const struct pprun *p, struct ui_canvas *c, int y, bool axis)
{
    int W = c->r.w, pp = p->s.pp, x;
    char b1[32], b2[32];
    /* the chart */
    long step = p->pace.replaying ? p->pace.rs.s.step : p->pace.last.s.step;
    if (pp == 1 && p->s.m == 1)
        x = canvas_text(c, y, 0, ROLE_TITLE, "one stage, one micro-batch: no pipeline");
    else if (step)
        x = canvas_printf(c, y, 0, ROLE_TITLE, "step %ld%s", step,
                          p->show_free ? ", sends free" : "");
    else
        x = canvas_text(c, y, 0, ROLE_TITLE, "the Gantt chart");
    int nv = p->run_sched == SCHED_INTERLEAVED ? CHUNKS : 1; /* model chunks a stage */
    char legend[64];
    gantt_legend(legend, sizeof legend, p->s.m, nv, sched_splits(p->run_sched), 0);
    if (x + 2 + layout_text_width(legend) > W)
        gantt_legend(legend, sizeof legend, p->s.m, nv, sched_splits(p->run_sched), 1);
    if (x + 2 + layout_text_width(legend) <= W)
        canvas_printf(c, y, x, ROLE_DIM, ": %s", legend);
    y++;
    double per = 0;
    enum gantt_scale scale = draw_gantt(p, c, y, &per);
    y += pp;
    if (axis) { /* the chart's span in simulated time, and its scale */
        const struct ppgantt *g = p->show_free && p->free_ok ? &p->gfree : &p->g;
        double a0 = INFINITY, a1 = -INFINITY;
        for (int st = 0; st < g->stages; st++)
            for (int i = 0; i < g->n[st]; i++)
                a0 = fmin(a0, g->ops[st][i].start_s), a1 = fmax(a1, g->ops[st][i].end_s);
        if (a1 > a0) {
            char says[96];
            units_format_seconds(b1, sizeof b1, a1 - a0);
            units_format_seconds(b2, sizeof b2, per);
            /* the longest words that fit: "11.5 us simulated; 1 column = 0.3 us" */
            char line[3][160];
            gantt_scale_text(says, sizeof says, scale, b2, PPG_OPS, 0);
            snprintf(line[0], sizeof line[0], "%s simulated; %s", b1, says);
            gantt_scale_text(says, sizeof says, scale, b2, PPG_OPS, 1);
            snprintf(line[1], sizeof line[1], "%s simulated; %s", b1, says);
            snprintf(line[2], sizeof line[2], "%s; %s", b1, says);
            int k = 0;
            while (k < 2 && 3 + layout_text_width(line[k]) > W)
                k++;
            canvas_text(c, y, 3, ROLE_DIM, line[k]);
        }
        y++;
    }
    return y;
}

/* The bubble measured on the last step (have: one was shown) beside the calculator's, and with
 * free and why the free sends' bubble and why they differ, from row y; the next row. */
static int draw_bubble(const struct pprun *p, struct ui_canvas *c, int y, bool have, bool free,
                       bool why)
{
    int W = c->r.w, pp = p->s.pp;
    /* the bubble: measured on the last step, and the calculator's formulas for the schedule
     * that ran: (p-1)/m over the ideal time and (p-1)/(m+p-1) over the wall, or the
     * interleaved schedule's (p-1)/(vm) and (p-1)/(vm+p-1) */
    int chunks = p->run_sched == SCHED_INTERLEAVED ? CHUNKS : 1;
    double fi = sched_bubble_over_ideal(pp, p->s.m, chunks);
    double fw = sched_bubble_over_wall(pp, p->s.m, chunks);
    /* a stage's ideal time (its mean compute) and the bubble, in the seconds the run is timed
     * in: span - ideal measured, the formula's share of the ideal time */
    double ideal = pp > 0 ? p->bub.busy_s / pp : 0, measured = p->bub.span_s - ideal;
    char b1[32], b2[32], b3[32];
    units_format_seconds(b1, sizeof b1, measured);
    units_format_seconds(b2, sizeof b2, ideal);
    units_format_seconds(b3, sizeof b3, fi * ideal);
    if (have && p->pace.timed && W >= 64)
        canvas_printf(c, y, 0, ROLE_TEXT,
                      "bubble measured %.1f%% ideal, %.1f%% wall: %s of ideal %s",
                      100 * p->bub.over_ideal, 100 * p->bub.over_wall, b1, b2);
    else if (have && p->pace.timed)
        canvas_printf(c, y, 0, ROLE_TEXT, "bubble %s: %.1f%% of ideal %s", b1,
                      100 * p->bub.over_ideal, b2);
    else if (have) { /* a latency-bound tiny step: not the lesson's model's ratio */
        int x = canvas_printf(c, y, 0, ROLE_TEXT, "bubble measured %.1f%% ideal, %.1f%% wall",
                              100 * p->bub.over_ideal, 100 * p->bub.over_wall);
        if (x + 17 <= W)
            canvas_text(c, y, x + 1, ROLE_WARN, "(timed as itself)");
    } else
        canvas_text(c, y, 0, ROLE_DIM, "bubble measured: after a step");
    y++;
    const char *f = chunks > 1 ? "(p-1)/(vm)" : "(p-1)/m",
               *fwall = chunks > 1 ? "(p-1)/(vm+p-1)" : "(p-1)/(m+p-1)";
    if (have && p->pace.timed && W >= 64)
        canvas_printf(c, y++, 0, ROLE_TEXT, "calc %s %.1f%%, %s %.1f%%; x ideal = %s", f, 100 * fi,
                      fwall, 100 * fw, b3);
    else if (have && p->pace.timed)
        canvas_printf(c, y++, 0, ROLE_TEXT, "calc %s x ideal: %.1f%% = %s", f, 100 * fi, b3);
    else if (chunks > 1)
        canvas_printf(c, y++, 0, ROLE_TEXT, "calc (p-1)/(vm) %.1f%%, (p-1)/(vm+p-1) %.1f%%",
                      100 * fi, 100 * fw);
    else
        canvas_printf(c, y++, 0, ROLE_TEXT, "calc (p-1)/m %.1f%%, (p-1)/(m+p-1) %.1f%%", 100 * fi,
                      100 * fw);
    if (free)
        canvas_printf(c, y++, 0, ROLE_DIM, "sends free: %.1f%% ideal, %.1f%% wall",
                      100 * p->bub_free.over_ideal, 100 * p->bub_free.over_wall);
    if (why) {
        /* why the measured bubble is not the formula's, in the figures shown above (each
         * rounded to 0.1 point, so the parts add up to the gap): the sends' latency is what
         * the retiming with free sends takes away; what is left is the stages' unequal
         * operations (the ends' embedding, head and loss; their tensor-parallel sums) */
        char line[3][160];
        bubble_why(p, fi, line);
        for (int k = 0; k < 3; k++)
            if (line[k][0] && layout_text_width(line[k]) <= W) {
                canvas_text(c, y, 0, ROLE_DIM, line[k]);
                break;
            }
        y++;
    }
    return y;
}

/* The micro-batches each stage held at once beside the schedule's, and whether the executed
 * order is the schedule's, on row y. */
static void draw_held(const struct pprun *p, struct ui_canvas *c, int y, bool have)
{
    int W = c->r.w, pp = p->s.pp, x;
    int nv = p->run_sched == SCHED_INTERLEAVED ? CHUNKS : 1; /* model chunks a stage */
    /* micro-batches held at once, as train counts them: (micro-batch, chunk) pairs over the
     * chunks (interleaved: 2.5 is two whole micro-batches and a chunk of another) */
    x = canvas_text(c, y, 0, ROLE_TEXT, "held:");
    for (int st = 0; st < pp && have; st++)
        x = canvas_printf(c, y, x, ROLE_TEXT, " %g", (double)ppg_peak_in_flight(&p->done, st) / nv);
    if (p->pred.have_sched) {
        bool same = true;
        for (int st = 0; st < pp && have; st++)
            same &= ppg_peak_in_flight(&p->done, st) == p->pred.sched.peak_chunks[st];
        x = canvas_text(c, y, x + 1, !have ? ROLE_DIM : same ? ROLE_GOOD : ROLE_ERROR, "(schedule");
        for (int st = 0; st < pp; st++)
            x = canvas_printf(c, y, x,
                              !have  ? ROLE_DIM
                              : same ? ROLE_GOOD
                                     : ROLE_ERROR,
                              " %g", (double)p->pred.sched.peak_chunks[st] / nv);
        x = canvas_text(c, y, x, !have ? ROLE_DIM : same ? ROLE_GOOD : ROLE_ERROR, ")");
        if (have && x + 9 <= W) /* the executed order against the schedule's */
            canvas_text(c, y, x + 1, p->order_ok ? ROLE_GOOD : ROLE_ERROR,
                        p->order_ok ? "order ok" : "order !=");
    }
}

/* The bytes each stage's first GPU sent in the step by kind, beside the calculator's, from
 * row y to the bottom. */
static void draw_sent(const struct pprun *p, struct ui_canvas *c, int y)
{
    int W = c->r.w, H = c->r.h, pp = p->s.pp, x, tp1 = p->s.tp > 1;
    char b1[32];
    /* bytes sent per step by each stage's (first) GPU: pipeline, data-parallel, in its
     * tensor-parallel group */
    static const char *const kind_name[] = {"pp B/step", "dp B/step", "tp B/step"};
    static const enum comm_kind order[] = {COMM_PP, COMM_TP, COMM_DP};
    int bw = W < 60 ? 7 : W >= 20 + 12 * pp ? 11 : 9; /* a figure's cells */
    for (int i = 0; i < 3 && y < H; i++) {
        enum comm_kind kind = order[i];
        if (kind == COMM_TP && !tp1)
            continue;
        x = canvas_text(c, y, 0, ROLE_TEXT, kind_name[kind]);
        for (int st = 0; st < pp; st++) {
            double v =
                p->pace.shown
                    ? (double)sent_of(&p->pace.last, layout_rank(&p->place[0], LAYOUT_PP, st), kind)
                : p->pred.ok ? predicted_sent(&p->pred.comm[st], kind)
                             : 0;
            runfeed_bytes(b1, sizeof b1, v, bw);
            x = canvas_printf(c, y, x, ROLE_TEXT, " %s", b1);
        }
        if (p->pace.shown && p->pred.ok) {
            bool same = sent_as_predicted(p, kind);
            canvas_text(c, y, x + 1, same ? ROLE_GOOD : ROLE_ERROR, same ? "= calc" : "!= calc");
        } else {
            canvas_text(c, y, x + 1, ROLE_DIM, "(calc)");
        }
        y++;
    }
    if (y < H)
        runpace_draw_missed(&p->pace, c, y);
}

static void pprun_draw(const void *state, struct ui_canvas *c)
{
    const struct pprun *p = state;
    int H = c->r.h, y = 0, pp = p->s.pp, x;
    char b1[32];
    draw_head(p, c);
    y++;
    runpace_draw_timing(&p->pace, c, y++);
    if (p->pace.err[0]) {
        canvas_wrap(c, y + 1, ROLE_ERROR, p->pace.err, 0);
        return;
    }
    /* rows: header, status, the grid, the verdict, the chart's head and rows, two of bubble,
     * in flight, sent; the rest for the optional lines */
    int tp1 = p->s.tp > 1; /* the grid's labels, the tensor-parallel bytes */
    int spare = H - (3 + tp1 + pp + 1 + 1 + pp + 2 + 1 + 1 + (p->s.dp > 1) + tp1);
    /* the optional lines, most wanted first: why the bubbles differ (the measured bubble is
     * not read without it: at 80x24 it was the line dropped), the chart's time axis, the free
     * sends' bubble, the bars' legend */
    bool have = p->pace.shown && p->done.n[0] > 0;
    bool show_why = have && spare-- > 0;
    bool show_axis = spare-- > 0; /* the chart's span and scale */
    bool show_free = have && p->free_ok && spare-- > 0;
    bool show_legend = spare-- > 0;
    if (!runpace_draw_note(&p->pace, c, y)) /* what the last key could not do, until a replay */
        runpace_draw_step(&p->pace, c, y, "buffers allocated: space runs, n one step");
    y++;
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
    if (p->show_time) { /* the grid when the timeline leaves room for it, then the timeline */
        if (H - y - (tp1 + pp) >= timeline_rows(p->gpus, true) + 2)
            y = draw_grid(p, c, y);
        runpace_draw_timeline(&p->pace, c, y, H - y);
        return;
    }
    y = draw_grid(p, c, y);
    /* the ledgers against the calculator */
    if (!(p->pred.ok && runpace_draw_verdict(&p->pace, c, y, p->pred.mem)) && p->pred.ok) {
        runfeed_bytes(b1, sizeof b1, p->pred.mem[0].total, 12);
        canvas_printf(c, y, 0, ROLE_DIM, "calc: stage 0's GPUs hold %s B at peak", b1);
    }
    y++;

    y = draw_chart(p, c, y, show_axis);
    y = draw_bubble(p, c, y, have, show_free, show_why);
    draw_held(p, c, y++, have);
    draw_sent(p, c, y);
}

static const struct panel_key pprun_keys[] = {
    {"p P", "more / fewer pipeline stages: 1, 2, 4 (small: 1, 2, 3); restarts the run", "stages"},
    {"m M", "twice / half the micro-batches, 1 to 8 (restarts)", "micro"},
    {"d D", "twice / half the data-parallel ranks, 1 to 4 (restarts)", "dp"},
    {"t T", "twice / half the tensor-parallel GPUs: 1, 2, 4 (small: 1, 2); restarts", "tp"},
    {"e", "sequence parallelism on or off (with tp > 1; restarts)", "seq par"},
    {"s", "schedule: GPipe, 1F1B, interleaved with 2 chunks (dp 1; restarts)", "schedule"},
    {"o", "model: tiny or small (restarts)", "model"},
    {"f", "the chart with free sends: the same operations, no link latency", "free"},
    {"w", "the last step's timeline: each GPU's compute and communication", "time"},
    {NULL, NULL, NULL},
};

const struct panel_ops panel_pprun = {
    .name = "pprun",
    .title = "Pipeline parallelism, running",
    .about = "A real pipeline-, tensor- and data-parallel run of the tiny GPT on "
             "thread-GPUs: each GPU's memory from its own ledger (a row per stage, a column per "
             "GPU of the stage, data-parallel then tensor-parallel rank), the tensor-parallel "
             "groups flashing while they all-reduce, the Gantt chart drawn from the operations "
             "as the stages run them (the interleaved schedule's chunks too), the bubble "
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
