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
 * measured on the executed timeline beside the calculator's formulas, and why they differ (a
 * tiny model's operation computes for a fraction of a microsecond, each send pays the link's
 * latency); the micro-batches each stage held at once beside the schedule's; the bytes each
 * stage's GPUs sent in the step (pipeline, tensor-parallel, data-parallel) beside the
 * calculator's.
 *
 * Keys: p / P more / fewer stages (the divisors of the model's layers up to 4), m / M twice /
 * half the micro-batches (1-8), d / D twice / half the data-parallel ranks (1-4), t / T twice
 * / half the tensor-parallel GPUs (those dividing the heads, FFN width and vocabulary: tiny 1,
 * 2, 4; small 1, 2), e sequence parallelism (with tp > 1), s GPipe, 1F1B or interleaved with 2
 * chunks (where the layout allows it: m a multiple of pp, pp x 2 dividing the layers; dp
 * forced to 1), o model (tiny, small): each restarts the run, at most 16 GPUs and 8 a stage
 * (dp gives way), the status line saying what a key could not do; f the Gantt with free
 * sends. Space (the app's) plays and pauses, n steps. Settings: model=tiny|small pp=N dp=N tp=N
 * sequence_parallel=on|off micro_batches=M schedule=gpipe|1f1b|interleaved
 * precision=fp32|bf16|fp16 batch=B (the global batch, raised to a multiple of dp x M); by
 * default those of `scalelab train --pp 2 --micro-batches 4`. */
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
    struct eventlog *log;
    struct settings s, start;
    int gpus, batch;              /* the run's: dp x tp x pp, the global batch */
    int cols;                     /* a stage's GPUs: dp x tp */
    enum calc_schedule run_sched; /* 1F1B on one stage */
    struct runpace pace;          /* the run, its models and GPUs, the step replayed, the ledgers */
    /* the calculator: each stage's memory and traffic, the schedule */
    bool pred_ok, have_sched;
    struct memory_result stage_m[MAX_STAGES];
    struct traffic stage_t[MAX_STAGES];
    struct sched sched;
    double scale;
    /* the Gantt chart of the step shown (replaying or the last done), retimed */
    struct ppgantt g, gfree;
    bool free_ok;
    /* the last step done: its measurements */
    struct ppgantt done;
    struct pp_bubble bub, bub_free;
    bool order_ok;
    double fwd_s; /* a forward's mean compute time */
    bool show_free, said_verdict;
    char note[120]; /* why a key did not do all it was asked (until a step is replayed) */
    /* the tensor-parallel collectives: each group's (stage x dp + dprank) last send seen by
     * the replay ends at flash_end; it flashes while that is after the frame's start (the
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
    p->pred_ok = predict_config(&o, m, p->pace.spec.hbm_bytes, &c, &e) == 0;
    p->scale = 0;
    for (int st = 0; p->pred_ok && st < p->s.pp; st++)
        p->pred_ok = memory_compute_stage(&c, st, &p->stage_m[st], &e) == 0 &&
                     traffic_compute_stage(&c, &p->pace.spec, p->s.pp > 1 || p->s.tp > 1 ? st : -1,
                                           p->stage_m[st].params_gpu, p->stage_m[st].stage_layers,
                                           0, 0, &p->stage_t[st], &e) == 0;
    for (int k = 0; p->pred_ok && k < 3; k++) {
        if (k) /* the run's schedule, then the other two of one chunk */
            c.schedule = k == 1 ? SCHED_GPIPE : SCHED_1F1B, c.chunks = 1;
        for (int st = 0; st < p->s.pp; st++) {
            struct memory_result r;
            if (memory_compute_stage(&c, st, &r, &e) == 0)
                p->scale = fmax(p->scale, r.total);
        }
    }
    p->scale = p->scale > 0 ? p->scale * 1.1 : 1;
    if (!p->pred_ok)
        snprintf(p->pace.err, sizeof p->pace.err, "%s", e.msg);
    if (p->have_sched)
        sched_free(&p->sched);
    p->have_sched =
        sched_build(p->run_sched, p->s.pp, p->s.m, train_chunks(&o), &p->sched, &e) == 0;
}

/* (Re)starts the run with p->s: nothing runs until the screen allows a step. */
static void restart(struct pprun *p)
{
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
    predict(p);
    if (p->pace.err[0])
        return;
    struct train_opts o;
    options(p, &o);
    runpace_start(&p->pace, &o);
}

static void say_restart(struct pprun *p)
{
    eventlog_add(p->log,
                 "run: %s, pp %d x dp %d x tp %d%s, %s, %d micro-batches, batch %d: restarted",
                 runpace_model_names[p->s.model], p->s.pp, p->s.dp, p->s.tp,
                 p->s.sp && p->s.tp > 1 ? " sp" : "", sched_name(p->run_sched), p->s.m, p->batch);
    if (p->note[0])
        eventlog_add(p->log, "run: %s", p->note);
}

/* Whether every GPU's ledger peaks equal its stage's figures: -1 if so, else the first part
 * that differs (and on which GPU). */
static int verdict(const struct pprun *p, int *gpu)
{
    return runfeed_verdict(&p->pace.feed, p->gpus, p->stage_m, p->cols, gpu);
}

enum comm_kind { COMM_PP, COMM_DP, COMM_TP };

/* The bytes GPU g sent in the step r of one kind, and the calculator's for its stage's GPUs. */
static uint64_t sent_of(const struct run_step *r, int g, enum comm_kind k)
{
    const struct run_gpu_step *s = &r->gpu[g];
    return k == COMM_PP ? s->pp_bytes : k == COMM_DP ? s->sent_bytes : s->tp_bytes;
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
            llround(predicted_sent(&p->stage_t[g / p->cols], k)))
            return false;
    return true;
}

/* A send from GPU a to GPU b: within a tensor-parallel group (the same stage and
 * data-parallel rank: rank = (stage x dp + dprank) x tp + tprank), between stages, or
 * between data-parallel copies. */
static enum comm_kind comm_of(const struct pprun *p, int a, int b)
{
    if (a / p->cols != b / p->cols)
        return COMM_PP;
    return a / p->s.tp == b / p->s.tp ? COMM_TP : COMM_DP;
}

/* The step's Gantt chart from its events: the operations of each stage's first GPU. */
static void build_gantt(struct pprun *p)
{
    ppg_reset(&p->g, p->s.pp);
    for (size_t i = 0; i < p->pace.feed.nrep; i++) {
        const struct runrec *r = &p->pace.feed.rep[i];
        if (r->type != EV_PIPE_OP || r->device % p->cols != 0)
            continue;
        struct pp_done d = {r->kind, r->micro, r->chunk, r->t, r->t_end};
        ppg_add(&p->g, r->device / p->cols, &d);
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
                         "run: pp %d x dp %d x tp %d, %s: every ledger = the calculator for its "
                         "stage, to the byte",
                         p->s.pp, p->s.dp, p->s.tp, sched_name(p->run_sched));
        else
            eventlog_add(p->log, "run: GPU %d's %s: ledger %llu B, calculator %.0f B", g,
                         ledger_cat_name(runfeed_part_cat[i]),
                         (unsigned long long)p->pace.feed.peak[g][runfeed_part_cat[i]],
                         runfeed_predicted_part(&p->stage_m[g / p->cols], i));
        p->said_verdict = true;
    }
}

/* A step about to be replayed: its chart, and no flash yet. */
static void begin_step(void *panel)
{
    struct pprun *p = panel;
    build_gantt(p);
    p->note[0] = 0; /* said until now */
    memset(p->flash_end, 0, sizeof p->flash_end);
}

/* A record the replay passes: the memory records move the bars (runpace); the sends within a
 * tensor-parallel group light it until their arrival. */
static void light_group(void *panel, const struct runrec *r)
{
    struct pprun *p = panel;
    if (r->type == EV_SEND && r->peer >= 0 && r->peer < p->gpus &&
        comm_of(p, r->device, r->peer) == COMM_TP) {
        double *end = &p->flash_end[r->device / p->s.tp];
        *end = fmax(*end, r->t_end);
    }
}

/* ------------------------------------------------------------------ settings and keys */

static bool same_settings(const struct settings *a, const struct settings *b)
{
    return a->model == b->model && a->pp == b->pp && a->dp == b->dp && a->tp == b->tp &&
           a->sp == b->sp && a->m == b->m && a->batch == b->batch && a->sched == b->sched &&
           a->prec == b->prec;
}

/* The run on settings s: restarted unless it already runs on them and has not moved on (a
 * step's settings come one by one); whether it was. */
static bool run_on(struct pprun *p, const struct settings *s)
{
    if (same_settings(s, &p->s) && runpace_fresh(&p->pace))
        return false;
    p->s = *s;
    restart(p);
    return true;
}

/* The run panel's part in the replay: the chart, the flashes, the measurements. */
static const struct runpace_ops pace_ops = {.name = "pprun",
                                            .replay_s = REPLAY_S,
                                            .begin = begin_step,
                                            .record = light_group,
                                            .end = end_step};

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
    p->log = env->log;
    int rc = runpace_init(&p->pace, &pace_ops, p, p->log, e);
    if (rc) {
        free(p);
        return rc;
    }
    p->pace.check_only = env->check_only;
    defaults(&p->s);
    p->start = p->s;
    restart(p);
    *state = p;
    return 0;
}

static void pprun_fini(void *state)
{
    struct pprun *p = state;
    runpace_fini(&p->pace);
    if (p->have_sched)
        sched_free(&p->sched);
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
    while (!pp_fits(p, s->model, s->pp))
        s->pp--;
    while (!tp_fits(p, s, s->tp))
        s->tp /= 2;
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

static int pprun_set(void *state, const char *name, const char *value, struct error *e)
{
    struct pprun *p = state;
    struct settings s = p->start;
    int rc = 0;
    if (!strcmp(name, "model")) {
        rc = runpace_set_model(value, &s.model, e);
    } else if (!strcmp(name, "pp")) {
        rc = runpace_set_int(name, value, 1, MAX_STAGES, &s.pp, e);
    } else if (!strcmp(name, "dp")) {
        rc = runpace_set_int(name, value, 1, MAX_DP, &s.dp, e);
    } else if (!strcmp(name, "tp")) {
        rc = runpace_set_int(name, value, 1, MAX_TP, &s.tp, e);
        if (!rc && !tp_fits(p, &s, s.tp))
            rc = error_set(e, ERR_INVAL,
                           "tp %d must divide %s's heads (%d), FFN width (%d) and vocabulary (%d)",
                           s.tp, runpace_model_names[s.model], p->pace.models[s.model].heads,
                           p->pace.models[s.model].ffn, p->pace.models[s.model].vocab);
    } else if (!strcmp(name, "sequence_parallel")) {
        if (!strcmp(value, "on") || !strcmp(value, "off"))
            s.sp = !strcmp(value, "on");
        else
            rc = error_set(e, ERR_INVAL, "sequence_parallel: on or off, not '%s'", value);
    } else if (!strcmp(name, "micro_batches")) {
        rc = runpace_set_int(name, value, 1, MAX_MICRO, &s.m, e);
    } else if (!strcmp(name, "schedule")) {
        if (sched_parse(value, &s.sched, e)) {
            error_prefix(e, "schedule");
            rc = ERR_INVAL;
        }
    } else if (!strcmp(name, "precision")) {
        if (!strcmp(value, "fp32") || !strcmp(value, "bf16") || !strcmp(value, "fp16"))
            s.prec = !strcmp(value, "fp32") ? FP_FP32 : !strcmp(value, "bf16") ? FP_BF16 : FP_FP16;
        else
            rc = error_set(e, ERR_INVAL, "precision: fp32, bf16 or fp16, not '%s'", value);
    } else if (!strcmp(name, "batch")) {
        rc = runpace_set_int(name, value, 1, 64, &s.batch, e);
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
    p->start = s;
    run_on(p, &s);
    return 0;
}

static int pprun_on_key(void *state, int key)
{
    struct pprun *p = state;
    struct settings *s = &p->s;
    if (key > 0 && key < 128 && strchr("pPmMdDtTeso", key))
        p->note[0] = 0;
    switch (key) {
    case 'p': /* the next stage count that divides the layers, round the circle */
    case 'P':
        do
            s->pp = (s->pp + (key == 'p' ? 0 : MAX_STAGES - 2)) % MAX_STAGES + 1;
        while (!pp_fits(p, s->model, s->pp));
        break;
    case 'm': s->m = s->m >= MAX_MICRO ? 1 : 2 * s->m; break;
    case 'M': s->m = s->m <= 1 ? MAX_MICRO : s->m / 2; break;
    case 'd': /* the next data-parallel size that fits, round the circle */
    case 'D':
        if (!dp_fits(s, 2) && s->dp == 1) {
            snprintf(p->note, sizeof p->note, "dp stays 1: %s",
                     s->sched == SCHED_INTERLEAVED ? "interleaved runs one data-parallel copy"
                                                   : "at most 8 GPUs a stage, 16 in all");
            eventlog_add(p->log, "run: %s", p->note);
            return PANEL_HANDLED | PANEL_REDRAW;
        }
        do
            s->dp =
                key == 'd' ? (s->dp >= MAX_DP ? 1 : 2 * s->dp) : (s->dp <= 1 ? MAX_DP : s->dp / 2);
        while (!dp_fits(s, s->dp));
        break;
    case 't': /* the next tensor-parallel size the model allows, round the circle */
    case 'T':
        do
            s->tp =
                key == 't' ? (s->tp >= MAX_TP ? 1 : 2 * s->tp) : (s->tp <= 1 ? MAX_TP : s->tp / 2);
        while (!tp_fits(p, s, s->tp));
        break;
    case 'e':
        if (s->tp == 1) {
            snprintf(p->note, sizeof p->note,
                     "sequence parallelism splits a tensor-parallel group's work: t first");
            eventlog_add(p->log, "run: %s", p->note);
            return PANEL_HANDLED | PANEL_REDRAW;
        }
        s->sp = !s->sp;
        break;
    case 's': /* GPipe, 1F1B, interleaved (where it runs), round the circle */
        s->sched = s->sched == SCHED_GPIPE  ? SCHED_1F1B
                   : s->sched == SCHED_1F1B ? SCHED_INTERLEAVED
                                            : SCHED_GPIPE;
        if (s->sched == SCHED_INTERLEAVED) {
            char why[96];
            if (no_interleaved(p, s, why, sizeof why)) {
                snprintf(p->note, sizeof p->note, "interleaved skipped: %s", why);
                s->sched = SCHED_GPIPE;
            }
        }
        break;
    case 'o': s->model = !s->model; break;
    case 'f': p->show_free = !p->show_free; return PANEL_HANDLED | PANEL_REDRAW;
    default: return 0;
    }
    fit(p, s, p->note, sizeof p->note);
    restart(p);
    say_restart(p);
    return PANEL_HANDLED | PANEL_REDRAW;
}

static int pprun_on_event(void *state, const struct panel_event *ev)
{
    struct pprun *p = state;
    if (ev->kind == PANEL_RESET && run_on(p, &p->start)) /* back to the step's settings */
        say_restart(p);
    return runpace_on_event(&p->pace, ev);
}

/* ------------------------------------------------------------------ drawing */

/* Whether GPU g's tensor-parallel group sent within the frame being shown. */
static bool flashing(const struct pprun *p, int g)
{
    return p->pace.replaying && p->s.tp > 1 && p->flash_end[g / p->s.tp] >= p->pace.tprev;
}

/* The grid of GPUs: a row per stage, a column per GPU of the stage (data-parallel rank, then
 * tensor-parallel rank within it, as the ranks go), labelled d<rank>t<rank> above with tp >
 * 1. A tensor-parallel group whose collective runs in the frame flashes: its GPUs' numbers
 * drawn as moved data, and marked '*' without colour or in ASCII. */
static int draw_grid(const struct pprun *p, struct ui_canvas *c, int y)
{
    int W = c->r.w, cols = p->cols, tp = p->s.tp;
    int colw = (W - 3) / cols;
    bool totals = colw >= 30;
    bool mark = !theme_color() || theme_ascii();
    if (tp > 1) {
        for (int k = 0; k < cols; k++)
            if (p->s.dp > 1)
                canvas_printf(c, y, 3 + k * colw, ROLE_DIM, "d%dt%d", k / tp, k % tp);
            else
                canvas_printf(c, y, 3 + k * colw, ROLE_DIM, "t%d", k % tp);
        y++;
    }
    for (int st = 0; st < p->s.pp; st++, y++) {
        canvas_printf(c, y, 0, ROLE_DIM, "s%d", st);
        for (int k = 0; k < cols; k++) {
            int g = st * cols + k, x = 3 + k * colw;
            struct memory_result m;
            runfeed_as_result(p->pace.feed.cur[g], p->pace.spec.hbm_bytes, &m);
            bool fl = flashing(p, g);
            x = canvas_printf(c, y, x, fl ? ROLE_MOVED : ROLE_DIM, "%2d", g);
            x = canvas_text(c, y, x, ROLE_MOVED, fl && mark ? "*" : " ");
            int bw = colw - 4 - (totals ? 11 : 0);
            if (bw > 0)
                memui_draw_bar(c, y, x, bw, &m, p->scale);
            if (totals) {
                char b[32];
                units_format_bytes(b, sizeof b, m.total, UNITS_BINARY);
                canvas_printf(c, y, x + bw, ROLE_TEXT, " %10s", b);
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

/* An operation's block: forwards 0-7 (chunk 1: A-H), backwards a-h (chunk 1: i-p), by
 * micro-batch. */
static char gantt_char(const struct pp_done *o)
{
    int k = o->micro < MAX_MICRO ? o->micro : MAX_MICRO - 1;
    if (o->kind == 'F')
        return (char)((o->chunk ? 'A' : '0') + k);
    return (char)((o->chunk ? 'i' : 'a') + k);
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
            double upto = p->pace.replaying ? p->pace.tc : INFINITY;
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
                ch[0] = gantt_char(o);
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
    char tps[24] = "";
    if (p->s.tp > 1)
        snprintf(tps, sizeof tps, " x tp %d%s", p->s.tp, p->s.sp ? " sp" : "");
    int x = canvas_printf(c, y, 0, ROLE_TEXT, "%s, pp %d x dp %d%s, %s, m %d, batch %d, %s",
                          runpace_model_names[p->s.model], pp, p->s.dp, tps,
                          sched_name(p->run_sched), p->s.m, p->batch, fp_info(p->s.prec)->key);
    if (p->s.pp == 1 && p->s.sched == SCHED_GPIPE && x + 12 <= W)
        canvas_text(c, y, x, ROLE_DIM, " (one stage)");
    y++;
    if (p->pace.err[0]) {
        canvas_wrap(c, y + 1, ROLE_ERROR, p->pace.err, 0);
        return;
    }
    /* rows: header, status, the grid, the verdict, the chart's head and rows, two of bubble,
     * in flight, sent; the rest for the optional lines */
    int tp1 = p->s.tp > 1; /* the grid's labels, the tensor-parallel bytes */
    int spare = H - (2 + tp1 + pp + 1 + 1 + pp + 2 + 1 + 1 + (p->s.dp > 1) + tp1);
    /* the optional lines, most wanted first: why the bubbles differ, the free sends' bubble,
     * the chart's time axis, the bars' legend */
    bool have = p->pace.shown && p->done.n[0] > 0;
    bool show_why = have && spare-- > 0;
    bool show_free = have && p->free_ok && spare-- > 0;
    bool show_axis = spare-- > 0, show_legend = spare-- > 0;
    if (p->note[0] && !p->pace.replaying) { /* what the last key could not do, until a replay */
        canvas_text(c, y++, 0, ROLE_WARN, p->note);
    } else {
        runpace_draw_step(&p->pace, c, y++, "buffers allocated: space runs, n one step");
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
    if (p->pace.shown && p->pred_ok) {
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
    long step = p->pace.replaying ? p->pace.rs.s.step : p->pace.last.s.step;
    if (pp == 1 && p->s.m == 1)
        x = canvas_text(c, y, 0, ROLE_TITLE, "one stage, one micro-batch: no pipeline");
    else if (step)
        x = canvas_printf(c, y, 0, ROLE_TITLE, "step %ld%s", step,
                          p->show_free ? ", sends free" : "");
    else
        x = canvas_text(c, y, 0, ROLE_TITLE, "the Gantt chart");
    bool il = p->run_sched == SCHED_INTERLEAVED;
    if (il && x + 52 <= W)
        canvas_printf(c, y, x, ROLE_DIM, ": 0-%d A-%c forward, a-%c i-%c backward (chunk 0 1)",
                      p->s.m - 1, 'A' + p->s.m - 1, 'a' + p->s.m - 1, 'i' + p->s.m - 1);
    else if (il && x + 28 <= W)
        canvas_printf(c, y, x, ROLE_DIM, ": 0-%d A-%c fwd, a-%c i-%c bwd", p->s.m - 1,
                      'A' + p->s.m - 1, 'a' + p->s.m - 1, 'i' + p->s.m - 1);
    else if (!il && x + 40 <= W)
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
        double alpha = p->gpus <= p->pace.spec.gpus_per_node ? p->pace.spec.alpha_intra
                                                             : p->pace.spec.alpha_inter;
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
            double v = p->pace.shown ? (double)sent_of(&p->pace.last, st * p->cols, kind)
                       : p->pred_ok  ? predicted_sent(&p->stage_t[st], kind)
                                     : 0;
            runfeed_bytes(b1, sizeof b1, v, bw);
            x = canvas_printf(c, y, x, ROLE_TEXT, " %s", b1);
        }
        if (p->pace.shown && p->pred_ok) {
            bool same = sent_as_predicted(p, kind);
            canvas_text(c, y, x + 1, same ? ROLE_GOOD : ROLE_ERROR, same ? "= calc" : "!= calc");
        } else {
            canvas_text(c, y, x + 1, ROLE_DIM, "(calc)");
        }
        y++;
    }
    if (p->pace.feed.dropped && y < H)
        canvas_printf(c, y, 0, ROLE_WARN, "(%lu events missed: the bars may be off)",
                      p->pace.feed.dropped);
}

static const struct panel_key pprun_keys[] = {
    {"p P", "more / fewer pipeline stages: 1, 2, 4 (small: 1, 2, 3); restarts the run", "stages"},
    {"m M", "twice / half the micro-batches, 1 to 8 (restarts)", "micro"},
    {"d D", "twice / half the data-parallel ranks, 1 to 4 (restarts)", "dp"},
    {"t T", "twice / half the tensor-parallel GPUs: 1, 2, 4 (small: 1, 2); restarts", "tp"},
    {"e", "sequence parallelism on or off (with tp > 1; restarts)", "seq"},
    {"s", "schedule: GPipe, 1F1B, interleaved with 2 chunks (dp 1; restarts)", "schedule"},
    {"o", "model: tiny or small (restarts)", NULL},
    {"f", "the chart with free sends: the same operations, no link latency", "free"},
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
