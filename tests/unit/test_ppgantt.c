/* Lesson 4's pipeline Gantt chart as data (src/ui/ppgantt.h): built from a real run's
 * EV_PIPE_OP events it holds the operations each stage ran, in the schedule's order, with the
 * micro-batches held at once the schedule says, and the times the run itself recorded; retimed
 * with free sends, the schedule's own timeline gives back the calculator's bubble. And the
 * paced run the panel settles on: every GPU at its first gate, its buffers allocated. */
#include "config.h"

#include <math.h>
#include <pthread.h>
#include <string.h>
#include <time.h>

#include "base/error.h"
#include "calc/sched.h"
#include "harness.h"
#include "par/predict.h"
#include "par/run.h"
#include "sim/event.h"
#include "ui/ppgantt.h"

/* The schedule's own timeline (slots: a forward 1, a backward 2) as a chart, every start moved
 * by `late` x its index so that the sends seem to cost something. */
static void chart_of(const struct sched *s, double late, struct ppgantt *g)
{
    ppg_reset(g, s->p);
    for (int st = 0; st < s->p; st++)
        for (int i = 0; i < s->count[st]; i++) {
            const struct sched_op *o = &s->ops[st][i];
            double t = o->start + late * i * (st + 1);
            struct pp_done d = {o->kind, o->micro, o->chunk, t, t + o->duration};
            ppg_add(g, st, &d);
        }
}

START_TEST(free_sends_give_the_schedules_bubble)
{
    /* interleaved with 2 chunks: the retiming follows each micro-batch through the virtual
     * stages, chunk 0 of every stage before chunk 1 */
    static const enum calc_schedule kinds[] = {SCHED_GPIPE, SCHED_1F1B, SCHED_INTERLEAVED,
                                               SCHED_ZBH1};
    static const int ps[] = {2, 4}, ms[] = {1, 2, 4, 8};
    for (int k = 0; k < 4; k++)
        for (int a = 0; a < 2; a++)
            for (int b = 0; b < 4; b++) {
                struct sched s;
                struct error e = {0};
                int p = ps[a], m = ms[b], v = kinds[k] == SCHED_INTERLEAVED ? 2 : 1;
                if ((m % p && v > 1) || (kinds[k] == SCHED_ZBH1 && m < p))
                    continue; /* interleaved needs p | m; zb-h1's formula m >= p */
                ck_assert_int_eq(sched_build(kinds[k], p, m, v, &s, &e), 0);
                struct ppgantt g, r;
                chart_of(&s, 0.25, &g);
                ck_assert(ppg_same_order(&g, &s));
                ck_assert(ppg_retime(&g, &r));
                /* every operation back at the slot the schedule gives it: exact in binary */
                for (int st = 0; st < p; st++)
                    for (int i = 0; i < s.count[st]; i++) {
                        ck_assert_double_eq(r.ops[st][i].start_s, s.ops[st][i].start);
                        ck_assert_double_eq(r.ops[st][i].end_s,
                                            s.ops[st][i].start + s.ops[st][i].duration);
                    }
                /* and the bubble the formulas give, to rounding (1e-12: sums of small
                 * integers divided once) */
                struct pp_bubble bu, late;
                ppg_bubble(&r, &bu);
                ppg_bubble(&g, &late);
                ck_assert_double_eq_tol(bu.over_ideal, sched_formula_over_ideal(kinds[k], p, m, v),
                                        1e-12);
                ck_assert_double_eq_tol(bu.over_wall, sched_formula_over_wall(kinds[k], p, m, v),
                                        1e-12);
                if (p > 1)
                    ck_assert(late.over_ideal > bu.over_ideal); /* late sends: more idle */
                for (int st = 0; st < p; st++)
                    ck_assert_int_eq(ppg_peak_in_flight(&g, st), s.peak_chunks[st]);
                sched_free(&s);
            }
}
END_TEST

START_TEST(another_order_is_seen)
{
    struct sched s;
    struct error e = {0};
    ck_assert_int_eq(sched_build(SCHED_1F1B, 4, 8, 1, &s, &e), 0);
    struct ppgantt g;
    chart_of(&s, 0, &g);
    struct pp_done t = g.ops[1][3];
    g.ops[1][3] = g.ops[1][4], g.ops[1][4] = t;
    ck_assert(!ppg_same_order(&g, &s));
    chart_of(&s, 0, &g);
    g.n[2]--; /* an operation missing */
    ck_assert(!ppg_same_order(&g, &s));
    /* a backward whose gradient never comes cannot be retimed */
    struct ppgantt bad, out;
    ppg_reset(&bad, 2);
    struct pp_done b = {SCHED_OP_B, 0, 0, 0, 2};
    ppg_add(&bad, 0, &b);
    ck_assert(!ppg_retime(&bad, &out));
    sched_free(&s);
}
END_TEST

/* The events of a run's step 2 on each stage's first GPU (its first of dp x tp), as the panel
 * takes them. */
struct catch
{
    pthread_mutex_t mu;
    int cols;
    struct ppgantt g;
};

static void on_event(void *ctx, const struct event *ev)
{
    struct catch *c = ctx;
    if (ev->type != EV_PIPE_OP || ev->step != 2 || ev->device % c->cols)
        return;
    struct pp_done d = {sched_op_kind_of(ev->name), ev->micro, ev->chunk, ev->t, ev->t_end};
    pthread_mutex_lock(&c->mu);
    ppg_add(&c->g, ev->device / c->cols, &d);
    pthread_mutex_unlock(&c->mu);
}

START_TEST(chart_from_a_runs_events_is_the_schedule)
{
    /* and with two tensor-parallel GPUs a stage; and interleaved, whose operations carry their
     * chunk: the chart holds the schedule's order of (kind, micro-batch, chunk) */
    static const struct {
        int pp, dp, tp, m, v;
        enum calc_schedule k;
    } lay[] = {{4, 1, 1, 8, 1, SCHED_1F1B},
               {4, 1, 1, 8, 1, SCHED_GPIPE},
               {2, 2, 1, 4, 1, SCHED_1F1B},
               {2, 1, 2, 4, 1, SCHED_1F1B},
               {2, 1, 1, 4, 2, SCHED_INTERLEAVED}};
    for (size_t l = 0; l < sizeof lay / sizeof lay[0]; l++) {
        struct run_config cfg = {0};
        struct error e = {0};
        train_opts_default(&cfg.o);
        ck_assert_int_eq(train_shape("tiny", &cfg.o.shape, &e), 0);
        cfg.o.batch = 8 * lay[l].dp;
        cfg.o.steps = 2;
        cfg.o.precision = FP_BF16;
        cfg.o.pp = lay[l].pp;
        cfg.o.tp = lay[l].tp;
        cfg.o.chunks = lay[l].v;
        int cols = lay[l].dp * lay[l].tp;
        cfg.o.gpus = lay[l].pp * cols;
        cfg.o.micro_batches = lay[l].m;
        cfg.o.schedule = lay[l].k;
        spec_default(&cfg.spec);
        struct catch c = {.cols = cols};
        pthread_mutex_init(&c.mu, NULL);
        ppg_reset(&c.g, lay[l].pp);
        cfg.on_event = on_event;
        cfg.event_ctx = &c;
        struct run *r = NULL;
        ck_assert_int_eq(run_new(&r, &cfg, &e), 0);
        ck_assert_int_eq(run_start(r, &e), 0);
        struct run_step rs;
        while (run_next(r, &rs, 60) == 1)
            ;
        ck_assert_int_eq(run_finish(r, &e), 0);
        struct sched s;
        ck_assert_int_eq(sched_build(lay[l].k, lay[l].pp, lay[l].m, lay[l].v, &s, &e), 0);
        ck_assert(ppg_same_order(&c.g, &s));
        int chunk1 = 0;
        for (int st = 0; st < lay[l].pp; st++)
            for (int i = 0; i < c.g.n[st]; i++)
                chunk1 += c.g.ops[st][i].chunk == 1;
        ck_assert_int_eq(chunk1, lay[l].v > 1 ? 2 * lay[l].m * lay[l].pp : 0);
        for (int st = 0; st < lay[l].pp; st++) {
            const struct run_gpu *g = run_gpu(r, st * cols);
            ck_assert_int_eq(ppg_peak_in_flight(&c.g, st), s.peak_chunks[st]);
            ck_assert_int_eq(ppg_peak_in_flight(&c.g, st), g->peak_in_flight);
            /* the times the events carry are the ones the run recorded for its last step */
            ck_assert_int_eq(c.g.n[st], g->nops);
            for (int i = 0; i < g->nops; i++) {
                ck_assert_double_eq(c.g.ops[st][i].start_s, g->ops[i].start_s);
                ck_assert_double_eq(c.g.ops[st][i].end_s, g->ops[i].end_s);
            }
        }
        /* measured on a real timeline the sends cost time: more idle than with free sends,
         * which leave about the formula's (the stages' compute differs a little) */
        struct pp_bubble meas, free;
        struct ppgantt re;
        ppg_bubble(&c.g, &meas);
        ck_assert(ppg_retime(&c.g, &re));
        ppg_bubble(&re, &free);
        ck_assert(meas.over_ideal > free.over_ideal);
        ck_assert(free.over_ideal > 0);
        sched_free(&s);
        run_free(r);
        pthread_mutex_destroy(&c.mu);
    }
}
END_TEST

/* Memory events of every GPU, counted as they come. */
struct mem_count {
    pthread_mutex_t mu;
    long n;
};

static void count_memory(void *ctx, const struct event *ev)
{
    struct mem_count *c = ctx;
    if (ev->type != EV_MEMORY)
        return;
    pthread_mutex_lock(&c->mu);
    c->n++;
    pthread_mutex_unlock(&c->mu);
}

static long memory_events(struct mem_count *c)
{
    pthread_mutex_lock(&c->mu);
    long n = c->n;
    pthread_mutex_unlock(&c->mu);
    return n;
}

/* A paced run's GPUs build their trainers and then all wait at step 1's gate (run_waiting),
 * which is how the panel knows the setup's buffers are all in: none comes while they wait,
 * and none of them starts a step until the run allows it. */
START_TEST(a_paced_run_waits_with_its_buffers_allocated)
{
    struct run_config cfg = {0};
    struct error e = {0};
    train_opts_default(&cfg.o);
    ck_assert_int_eq(train_shape("tiny", &cfg.o.shape, &e), 0);
    cfg.o.batch = 8;
    cfg.o.steps = 3;
    cfg.o.pp = 2, cfg.o.tp = 2, cfg.o.gpus = 4, cfg.o.micro_batches = 4;
    cfg.o.schedule = SCHED_INTERLEAVED, cfg.o.chunks = 2;
    spec_default(&cfg.spec);
    cfg.paced = true;
    struct mem_count c = {.n = 0};
    pthread_mutex_init(&c.mu, NULL);
    cfg.on_event = count_memory;
    cfg.event_ctx = &c;
    struct run *r = NULL;
    ck_assert_int_eq(run_new(&r, &cfg, &e), 0);
    ck_assert_int_eq(run_start(r, &e), 0);
    /* a deadline of 60 s for the sanitizer builds; the test asserts no time */
    struct run_step rs;
    for (int i = 0; i < 60000 && run_waiting(r) < 4; i++) {
        struct timespec ms = {0, 1000000};
        nanosleep(&ms, NULL);
    }
    ck_assert_int_eq(run_waiting(r), 4);
    long setup = memory_events(&c);
    ck_assert_int_gt(setup, 4 * 10);            /* each GPU's model, optimizer, pipeline buffers */
    ck_assert_int_eq(run_next(r, &rs, 0.2), 0); /* no step without the pace */
    ck_assert_int_eq(memory_events(&c), setup); /* and no buffer while they wait */
    run_allow(r, 1);
    ck_assert_int_eq(run_next(r, &rs, 60), 1);
    ck_assert_int_eq(rs.s.step, 1);
    ck_assert_int_gt(memory_events(&c), setup); /* the step's activations came and went */
    run_free(r);
    pthread_mutex_destroy(&c.mu);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("ppgantt");
    TCase *tc = tcase_create("chart");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, free_sends_give_the_schedules_bubble);
    tcase_add_test(tc, another_order_is_seen);
    tcase_add_test(tc, chart_from_a_runs_events_is_the_schedule);
    tcase_add_test(tc, a_paced_run_waits_with_its_buffers_allocated);
    suite_add_tcase(s, tc);
    return harness_run(s);
}
