/* Unit tests of src/comm's collectives on the simulated cluster: every op, algorithm and
 * number format at N = 1..17 and awkward sizes, checked against a double-precision reference
 * (comm/verify.h states the tolerance and why); bit-identical results; byte counts; the event
 * order of a 4-GPU ring; simulated times against the α-β formulas; determinism; failures. */
#include "config.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "base/error.h"
#include "comm/coll.h"
#include "comm/reduce.h"
#include "comm/trial.h"
#include "comm/verify.h"
#include "harness.h"

static struct trial_args args(enum cost_op op, enum cost_algo algo, int n, size_t count,
                              enum fp_format dt)
{
    struct trial_args a;
    trial_args_init(&a);
    a.op = op, a.algo = algo, a.gpus = n, a.count = count, a.dtype = dt;
    a.spec.gpus_per_node = 4; /* two levels from N = 5 on */
    a.root = n > 2 ? n / 2 : 0;
    a.deadline_s = 20;
    return a;
}

static void check_one(enum cost_op op, enum cost_algo algo, int n, size_t count, enum fp_format dt)
{
    struct trial_args a = args(op, algo, n, count, dt);
    struct trial t;
    struct error e = {0};
    int rc = trial_run(&a, &t, &e);
    ck_assert_msg(rc == 0, "%s %s N=%d count=%zu %s: %s", cost_op_name(op), cost_algo_name(algo), n,
                  count, fp_info(dt)->name, e.msg);
    ck_assert_msg(t.check.ok,
                  "%s %s N=%d count=%zu %s: GPU %d element %zu: got %.9g want %.9g "
                  "(identical %d, max rel %.3g, tol %.3g)",
                  cost_op_name(op), cost_algo_name(algo), n, count, fp_info(dt)->name,
                  t.check.bad_gpu, t.check.bad_index, t.check.bad_got, t.check.bad_want,
                  t.check.identical, t.check.max_rel_error, t.check.tolerance);
    /* every algorithm moves (N-1) S for one pass and 2(N-1) S for an all-reduce, except rhd
     * with its folds (2r S more) */
    double S = (double)count * (fp_info(dt)->bits / 8);
    double want = (op == COST_ALLREDUCE ? 2 : 1) * (n - 1) * S;
    if (algo == COST_RHD && op == COST_ALLREDUCE && n > 1) {
        int np = 1;
        while (np * 2 <= n)
            np *= 2;
        want = 2 * (np - 1) * S + 2 * (n - np) * S;
    }
    ck_assert_msg((double)t.sent_total == want, "%s %s N=%d count=%zu: sent %llu, want %.0f",
                  cost_op_name(op), cost_algo_name(algo), n, count,
                  (unsigned long long)t.sent_total, want);
    trial_fini(&t);
}

/* fp32 at 1 element, a prime, 1000 and N-1 (fewer than N: empty chunks); bf16 and fp16 at a
 * prime that is below N from N = 14 on (the suite also runs under TSan: kept small). */
static const size_t counts[] = {1, 37, 1000};

static void sweep(enum cost_op op, enum cost_algo algo, bool pow2_only)
{
    for (int n = 1; n <= 17; n++) {
        if (pow2_only && (n & (n - 1)))
            continue;
        for (size_t ci = 0; ci < sizeof counts / sizeof counts[0]; ci++)
            check_one(op, algo, n, counts[ci], FP_FP32);
        check_one(op, algo, n, (size_t)n - 1 + (n == 1), FP_FP32);
        check_one(op, algo, n, 13, FP_BF16);
        check_one(op, algo, n, 13, FP_FP16);
    }
}

/* All-to-all: N blocks of 1, 37 and 250 elements each, fp32, and 13 each in bf16 and fp16,
 * every received block checked against its sender's (check_one: (N-1) S sent in total). */
static void sweep_alltoall(enum cost_algo algo)
{
    for (int n = 1; n <= 17; n++) {
        size_t per[] = {1, 37, 250};
        for (size_t i = 0; i < 3; i++)
            check_one(COST_ALLTOALL, algo, n, per[i] * (size_t)n, FP_FP32);
        check_one(COST_ALLTOALL, algo, n, 13 * (size_t)n, FP_BF16);
        check_one(COST_ALLTOALL, algo, n, 13 * (size_t)n, FP_FP16);
    }
}

START_TEST(alltoall_pairwise)
{
    sweep_alltoall(COST_PAIRWISE);
}
END_TEST

START_TEST(alltoall_direct)
{
    sweep_alltoall(COST_DIRECT);
}
END_TEST

/* What an all-to-all moves and refuses: each GPU sends exactly (N-1)/N S; pairwise's steps
 * are its N-1 exchanges, GPU i's step k going to GPU i+k; a count that N does not divide,
 * a missing or overlapping receive buffer, and a receive buffer on another op are refused. */
struct a2a_refuse {
    float buf[2][64], out[2][64];
    int refused[2];
};

static int a2a_refuse_body(struct device *d, void *arg, struct error *e)
{
    struct a2a_refuse *o = arg;
    int r = dev_rank(d), n = 0;
    struct coll cases[] = {
        {.op = COST_ALLTOALL,
         .algo = COST_PAIRWISE,
         .buf = o->buf[r],
         .count = 63,
         .dtype = FP_FP32,
         .recv = o->out[r]},
        {.op = COST_ALLTOALL,
         .algo = COST_PAIRWISE,
         .buf = o->buf[r],
         .count = 64,
         .dtype = FP_FP32},
        {.op = COST_ALLTOALL,
         .algo = COST_DIRECT,
         .buf = o->buf[r],
         .count = 64,
         .dtype = FP_FP32,
         .recv = o->buf[r] + 32},
        {.op = COST_ALLREDUCE,
         .algo = COST_RING,
         .buf = o->buf[r],
         .count = 64,
         .dtype = FP_FP32,
         .recv = o->out[r]},
        {.op = COST_ALLTOALL,
         .algo = COST_RING,
         .buf = o->buf[r],
         .count = 64,
         .dtype = FP_FP32,
         .recv = o->out[r]},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct error e2 = {0};
        n += coll_run(d, &cases[i], &e2) == ERR_INVAL;
    }
    o->refused[r] = n;
    (void)e;
    return 0;
}

START_TEST(alltoall_counts_and_refusals)
{
    for (int n = 2; n <= 9; n++) {
        struct trial_args a = args(COST_ALLTOALL, COST_PAIRWISE, n, 1001 * (size_t)n, FP_FP32);
        a.record_events = true;
        struct trial t;
        ck_assert_int_eq(trial_run(&a, &t, NULL), 0);
        ck_assert(t.check.ok);
        for (int g = 0; g < n; g++)
            ck_assert_uint_eq(t.sent[g], (uint64_t)(n - 1) * 1001 * 4);
        ck_assert_int_eq(t.rounds, n - 1);
        size_t ne;
        const struct event *ev = cluster_events(t.cluster, &ne);
        int sends = 0;
        for (size_t i = 0; i < ne; i++)
            if (ev[i].type == EV_SEND) {
                sends++;
                ck_assert_int_eq(ev[i].peer, (ev[i].device + ev[i].step + 1) % n);
                ck_assert_uint_eq(ev[i].bytes, 1001 * 4);
            }
        ck_assert_int_eq(sends, n * (n - 1));
        trial_fini(&t);
    }
    struct error e = {0};
    struct trial_args a = args(COST_ALLTOALL, COST_DIRECT, 3, 1000, FP_FP32);
    struct trial t;
    ck_assert_int_eq(trial_run(&a, &t, &e), ERR_INVAL);
    ck_assert_ptr_nonnull(strstr(e.msg, "do not split into 3 equal blocks"));
    trial_fini(&t);

    struct cluster_config cfg;
    cluster_config_init(&cfg);
    cfg.gpus = 2;
    struct cluster *cl = cluster_new(&cfg, NULL);
    static struct a2a_refuse o;
    ck_assert_int_eq(cluster_run(cl, a2a_refuse_body, &o, NULL), 0);
    ck_assert_int_eq(o.refused[0], 5);
    ck_assert_int_eq(o.refused[1], 5);
    cluster_free(cl);
}
END_TEST

/* An all-to-all of variable sizes (MPI_Alltoallv's: struct coll's sendcounts): GPU i sends GPU
 * j (i + 2 j) % 5 elements, empty blocks among them, valued 1000 i + 100 j + the place in the
 * block; every GPU receives exactly each sender's block for it, in its block i, for both
 * algorithms; each GPU's bytes sent are its blocks for the others, and N - 1 messages (an empty
 * block too); counts that do not add up to the count are refused. */
#define V_GPUS 4
struct a2av {
    enum cost_algo algo;
    float buf[V_GPUS][64], out[V_GPUS][64];
    int bad[V_GPUS], refused[V_GPUS];
};

static size_t v_count(int from, int to)
{
    return (size_t)((from + 2 * to) % 5);
}

static int a2av_body(struct device *d, void *arg, struct error *e)
{
    struct a2av *o = arg;
    int r = dev_rank(d);
    size_t sc[V_GPUS], rc[V_GPUS], n = 0, at = 0;
    for (int j = 0; j < V_GPUS; j++) {
        sc[j] = v_count(r, j), rc[j] = v_count(j, r);
        for (size_t i = 0; i < sc[j]; i++)
            o->buf[r][n++] = (float)(1000 * r + 100 * j + (int)i);
    }
    for (int j = 0; j < 64; j++)
        o->out[r][j] = -1;
    struct coll c = {.op = COST_ALLTOALL,
                     .algo = o->algo,
                     .buf = o->buf[r],
                     .recv = o->out[r],
                     .count = n,
                     .dtype = FP_FP32,
                     .sendcounts = sc,
                     .recvcounts = rc};
    int rcode = coll_run(d, &c, e);
    if (rcode)
        return rcode;
    for (int j = 0; j < V_GPUS; j++)
        for (size_t i = 0; i < rc[j]; i++, at++)
            o->bad[r] += o->out[r][at] != (float)(1000 * j + 100 * r + (int)i);
    o->bad[r] += o->out[r][at] != -1; /* nothing past the blocks */
    struct error e2 = {0};
    c.count = n + 1;
    o->refused[r] = coll_run(d, &c, &e2) == ERR_INVAL && strstr(e2.msg, "blocks hold");
    return 0;
}

START_TEST(alltoall_of_variable_sizes)
{
    enum cost_algo algos[] = {COST_PAIRWISE, COST_DIRECT};
    for (int a = 0; a < 2; a++) {
        struct cluster_config cfg;
        cluster_config_init(&cfg);
        cfg.gpus = V_GPUS;
        struct cluster *cl = cluster_new(&cfg, NULL);
        static struct a2av o;
        memset(&o, 0, sizeof o);
        o.algo = algos[a];
        struct error e = {0};
        ck_assert_msg(cluster_run(cl, a2av_body, &o, &e) == 0, "%s", e.msg);
        for (int r = 0; r < V_GPUS; r++) {
            size_t others = 0;
            for (int j = 0; j < V_GPUS; j++)
                others += j == r ? 0 : v_count(r, j);
            ck_assert_int_eq(o.bad[r], 0);
            ck_assert_int_eq(o.refused[r], 1);
            ck_assert_uint_eq(dev_stats(cluster_device(cl, r)).bytes_sent, others * 4);
            ck_assert_uint_eq(dev_stats(cluster_device(cl, r)).msgs_sent, V_GPUS - 1);
        }
        cluster_free(cl);
    }
}
END_TEST

/* A wrong element in any GPU's received blocks is found and named by every form of the
 * check: the whole one, a rank's own, and the shares. */
START_TEST(verify_finds_a_wrong_block)
{
    enum { N = 4, PER = 9, COUNT = N * PER };
    static float data[N][COUNT];
    void *bufs[N];
    for (int bad = -1; bad < N; bad++) {
        for (int g = 0; g < N; g++) {
            bufs[g] = data[g];
            for (int j = 0; j < N; j++) { /* block j of GPU g: GPU j's block g */
                float in[COUNT];
                verify_fill(FP_FP32, in, COUNT, 3, j);
                memcpy(data[g] + j * PER, in + g * PER, PER * sizeof(float));
            }
        }
        if (bad >= 0)
            data[bad][2 * PER + 4] = nextafterf(data[bad][2 * PER + 4], 2.0f);
        struct verify v;
        verify_check(COST_ALLTOALL, 0, FP_FP32, bufs, N, COUNT, 3, &v);
        ck_assert_msg(v.ok == (bad < 0), "GPU %d wrong: ok %d", bad, v.ok);
        if (bad >= 0) {
            ck_assert_int_eq(v.bad_gpu, bad);
            ck_assert_uint_eq(v.bad_index, 2 * PER + 4);
        }
        for (int g = 0; g < N; g++) {
            verify_check_rank(COST_ALLTOALL, 0, FP_FP32, bufs[g], g, N, COUNT, 3, &v);
            ck_assert(v.ok == (g != bad));
            verify_share(COST_ALLTOALL, 0, FP_FP32, bufs, g, N, COUNT, 3, &v);
            ck_assert(v.ok == (g != bad));
        }
    }
    ck_assert(!verify_same_everywhere(COST_ALLTOALL));
}
END_TEST

START_TEST(allreduce_ring)
{
    sweep(COST_ALLREDUCE, COST_RING, false);
}
END_TEST
START_TEST(allreduce_tree)
{
    sweep(COST_ALLREDUCE, COST_TREE, false);
}
END_TEST
START_TEST(allreduce_dbtree)
{
    sweep(COST_ALLREDUCE, COST_DBTREE, false);
}
END_TEST
START_TEST(allreduce_rhd)
{
    sweep(COST_ALLREDUCE, COST_RHD, false);
}
END_TEST
START_TEST(reduce_scatter_ring)
{
    sweep(COST_REDUCE_SCATTER, COST_RING, false);
}
END_TEST
START_TEST(reduce_scatter_rhd)
{
    sweep(COST_REDUCE_SCATTER, COST_RHD, true);
}
END_TEST
START_TEST(allgather_ring)
{
    sweep(COST_ALLGATHER, COST_RING, false);
}
END_TEST
START_TEST(allgather_rhd)
{
    sweep(COST_ALLGATHER, COST_RHD, true);
}
END_TEST
START_TEST(broadcast_ring)
{
    sweep(COST_BROADCAST, COST_RING, false);
}
END_TEST
START_TEST(broadcast_tree)
{
    sweep(COST_BROADCAST, COST_TREE, false);
}
END_TEST
START_TEST(reduce_ring)
{
    sweep(COST_REDUCE, COST_RING, false);
}
END_TEST
START_TEST(reduce_tree)
{
    sweep(COST_REDUCE, COST_TREE, false);
}
END_TEST

/* A ring all-reduce of S bytes: in total exactly 2(N-1) S; each GPU 2(N-1)/N S up to one
 * element (its chunks are count/N elements, one more for the first count % N). */
START_TEST(ring_bytes_per_gpu)
{
    for (int n = 2; n <= 9; n++) {
        struct trial_args a = args(COST_ALLREDUCE, COST_RING, n, 1001, FP_FP32);
        struct trial t;
        ck_assert_int_eq(trial_run(&a, &t, NULL), 0);
        double S = 1001 * 4.0;
        ck_assert(t.sent_total == (uint64_t)(2 * (n - 1) * S));
        for (int g = 0; g < n; g++)
            ck_assert(fabs((double)t.sent[g] - 2.0 * (n - 1) / n * S) <= 2 * 4);
        ck_assert_int_eq(t.steps, 2 * (n - 1));
        trial_fini(&t);
    }
}
END_TEST

/* On one node the simulated time of a ring or rhd collective is the α-β formula (sizes
 * divisible by N so every chunk is S/N); a perfect tree (N = 7) matches its formula. The
 * tolerance 1e-9 relative covers summing the same terms in another order. */
START_TEST(simulated_time_matches_the_model)
{
    struct {
        enum cost_op op;
        enum cost_algo algo;
        int n;
    } cases[] = {
        {COST_ALLREDUCE, COST_RING, 8}, {COST_REDUCE_SCATTER, COST_RING, 5},
        {COST_ALLGATHER, COST_RING, 3}, {COST_ALLREDUCE, COST_RHD, 8},
        {COST_ALLREDUCE, COST_RHD, 6},  {COST_BROADCAST, COST_RING, 6},
        {COST_REDUCE, COST_RING, 6},    {COST_ALLREDUCE, COST_TREE, 7},
        {COST_BROADCAST, COST_TREE, 7}, {COST_REDUCE, COST_TREE, 7},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        for (size_t count = 840; count <= 840 * 64; count *= 64) {
            struct trial_args a = args(cases[i].op, cases[i].algo, cases[i].n, count, FP_FP32);
            a.spec.gpus_per_node = 8;
            a.verify = false; /* the sweeps above check the data; here only time matters */
            struct trial t;
            ck_assert_int_eq(trial_run(&a, &t, NULL), 0);
            ck_assert_msg(fabs(t.simulated_s - t.predicted.time_s) <= 1e-9 * t.predicted.time_s,
                          "%s %s N=%d count %zu: simulated %.12g, formula %.12g",
                          cost_op_name(cases[i].op), cost_algo_name(cases[i].algo), cases[i].n,
                          count, t.simulated_s, t.predicted.time_s);
            trial_fini(&t);
        }
    }
    /* One model (comm/cost.c's schedule) for every algorithm, inside one node and across
     * nodes: the predicted time is the simulated one within 1e-6 relative (the sizes are
     * whole numbers of elements in every chunk, so only the order of the sums differs). */
    struct {
        enum cost_op op;
        enum cost_algo algo;
    } every[] = {
        {COST_ALLREDUCE, COST_RING},      {COST_ALLREDUCE, COST_TREE},
        {COST_ALLREDUCE, COST_DBTREE},    {COST_ALLREDUCE, COST_RHD},
        {COST_REDUCE_SCATTER, COST_RING}, {COST_ALLGATHER, COST_RHD},
        {COST_BROADCAST, COST_RING},      {COST_BROADCAST, COST_TREE},
        {COST_REDUCE, COST_RING},         {COST_REDUCE, COST_TREE},
        {COST_ALLTOALL, COST_PAIRWISE},   {COST_ALLTOALL, COST_DIRECT},
    };
    int ns[] = {2, 3, 4, 6, 7, 8, 12, 16};
    int per_node[] = {16, 4, 3};
    for (size_t i = 0; i < sizeof every / sizeof every[0]; i++)
        for (size_t j = 0; j < sizeof ns / sizeof ns[0]; j++)
            for (size_t k = 0; k < 3; k++) {
                int n = ns[j];
                if (!cost_supported(every[i].op, every[i].algo, n, NULL))
                    continue;
                struct trial_args a = args(every[i].op, every[i].algo, n, 840 * 64, FP_FP32);
                a.spec.gpus_per_node = per_node[k];
                a.root = 0;
                a.verify = false;
                struct trial t;
                ck_assert_int_eq(trial_run(&a, &t, NULL), 0);
                ck_assert_msg(fabs(t.simulated_s - t.predicted.time_s) <= 1e-6 * t.predicted.time_s,
                              "%s %s N=%d, %d a node: simulated %.9g, predicted %.9g",
                              cost_op_name(every[i].op), cost_algo_name(every[i].algo), n,
                              per_node[k], t.simulated_s, t.predicted.time_s);
                trial_fini(&t);
            }
}
END_TEST

/* The 4-GPU ring all-reduce of 4 chunks: the sends in order of (time, GPU), each GPU passing
 * chunk (r-s-1) mod 4 in reduce-scatter step s and chunk (r-s) mod 4 in all-gather step s. */
START_TEST(ring_event_order)
{
    struct trial_args a = args(COST_ALLREDUCE, COST_RING, 4, 400, FP_FP32);
    a.spec.gpus_per_node = 8;
    a.record_events = true;
    struct trial t;
    ck_assert_int_eq(trial_run(&a, &t, NULL), 0);
    size_t n;
    const struct event *ev = cluster_events(t.cluster, &n);
    int sends = 0;
    double tau = a.spec.alpha_intra + 100 * 4 / a.spec.beta_intra;
    for (size_t i = 0; i < n; i++) {
        if (ev[i].type != EV_SEND)
            continue;
        int s = sends / 4, r = sends % 4;
        bool rs = s < 3;
        ck_assert_int_eq(ev[i].device, r);
        ck_assert_int_eq(ev[i].step, s);
        ck_assert_int_eq(ev[i].peer, (r + 1) % 4);
        ck_assert_int_eq(ev[i].chunk, ((rs ? r - s - 1 : r - (s - 3)) % 4 + 8) % 4);
        ck_assert_str_eq(ev[i].phase, rs ? "reduce-scatter" : "all-gather");
        ck_assert_uint_eq(ev[i].bytes, 400);
        ck_assert(fabs(ev[i].t - s * tau) < 1e-15);
        ck_assert(fabs(ev[i].t_end - (s + 1) * tau) < 1e-15);
        sends++;
    }
    ck_assert_int_eq(sends, 4 * 6);
    trial_fini(&t);
}
END_TEST

static int by_time(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The steps collective reports (cost_result.rounds) are the moments at which the simulated
 * run's messages arrive: what lesson 3's panel steps through. The ring's are its lockstep
 * steps (an uneven chunk's extra element arrives a moment later within its step). */
START_TEST(steps_are_the_arrival_moments)
{
    const enum cost_algo algos[] = {COST_RING, COST_TREE, COST_DBTREE, COST_RHD};
    const int gpus[] = {4, 7, 8};
    const size_t sizes[] = {2048, 262144};
    for (int i = 0; i < 4; i++)
        for (int g = 0; g < 3; g++)
            for (int k = 0; k < 2; k++) {
                struct trial_args a = args(COST_ALLREDUCE, algos[i], gpus[g], sizes[k], FP_FP32);
                a.record_events = true;
                struct trial t;
                ck_assert_int_eq(trial_run(&a, &t, NULL), 0);
                size_t n;
                const struct event *ev = cluster_events(t.cluster, &n);
                double *at = malloc((n ? n : 1) * sizeof *at);
                size_t m = 0;
                int last_step = -1;
                for (size_t j = 0; j < n; j++) {
                    if (ev[j].type == EV_RECV)
                        at[m++] = ev[j].t_end;
                    if (ev[j].type == EV_SEND && ev[j].step > last_step)
                        last_step = ev[j].step;
                }
                qsort(at, m, sizeof *at, by_time);
                int moments = 0;
                for (size_t j = 0; j < m; j++)
                    if (j == 0 || at[j] > at[j - 1] * (1 + 1e-9))
                        moments++;
                if (algos[i] == COST_RING)
                    moments = last_step + 1;
                ck_assert_msg(moments == t.steps && t.steps == t.predicted.rounds,
                              "%s on %d GPUs, %zu elements: %d moments, %d steps",
                              cost_algo_name(algos[i]), gpus[g], sizes[k], moments, t.steps);
                free(at);
                trial_fini(&t);
            }
}
END_TEST

/* The same run twice gives the same events, times included, bit for bit. */
START_TEST(deterministic_timelines)
{
    struct event *first = NULL;
    size_t nfirst = 0;
    for (int run = 0; run < 3; run++) {
        struct trial_args a = args(COST_ALLREDUCE, COST_DBTREE, 13, 5000, FP_BF16);
        a.record_events = true;
        struct trial t;
        ck_assert_int_eq(trial_run(&a, &t, NULL), 0);
        size_t n;
        const struct event *ev = cluster_events(t.cluster, &n);
        if (run == 0) {
            first = malloc(n * sizeof *first);
            memcpy(first, ev, n * sizeof *first);
            nfirst = n;
        } else {
            ck_assert_uint_eq(n, nfirst);
            for (size_t i = 0; i < n; i++) {
                ck_assert(ev[i].t == first[i].t && ev[i].t_end == first[i].t_end);
                ck_assert(ev[i].type == first[i].type && ev[i].device == first[i].device);
                ck_assert(ev[i].peer == first[i].peer && ev[i].bytes == first[i].bytes);
            }
        }
        trial_fini(&t);
    }
    free(first);
}
END_TEST

/* Streams: an all-reduce on stream 0 and compute on stream 2 overlap (the GPU is done at the
 * later of the two); compute with dev_compute waits for the all-reduce (their sum). */
struct overlap {
    float *buf[4];
    double done[4];
    bool join;
};

static int overlap_body(struct device *d, void *arg, struct error *e)
{
    struct overlap *o = arg;
    int r = dev_rank(d);
    struct coll c = {.op = COST_ALLREDUCE,
                     .algo = COST_RING,
                     .buf = o->buf[r],
                     .count = 1 << 12,
                     .dtype = FP_FP32};
    if (o->join) {
        if (coll_run(d, &c, e))
            return ERR_RUN;
        dev_compute(d, 1e8, "backward", 0, 0);
    } else {
        dev_compute_on(d, 2, 1e8, "backward", 0, 0);
        if (coll_run(d, &c, e))
            return ERR_RUN;
    }
    o->done[r] = dev_now(d);
    return 0;
}

START_TEST(streams_overlap_compute_and_communication)
{
    struct cluster_config cfg;
    cluster_config_init(&cfg);
    cfg.gpus = 4;
    double comm = 6 * (cfg.spec.alpha_intra + 4096.0 / cfg.spec.beta_intra); /* 2(N-1) steps */
    double compute = 1e8 / cfg.spec.peak_flops;
    for (int join = 0; join < 2; join++) {
        struct error e = {0};
        struct cluster *cl = cluster_new(&cfg, &e);
        struct overlap o = {.join = join};
        for (int g = 0; g < 4; g++)
            o.buf[g] = ledger_alloc(dev_ledger(cluster_device(cl, g)), MEM_GRADIENTS, 1 << 14, &e);
        ck_assert_msg(cluster_run(cl, overlap_body, &o, &e) == 0, "%s", e.msg);
        double want = join ? comm + compute : (comm > compute ? comm : compute);
        for (int g = 0; g < 4; g++) {
            ck_assert_msg(fabs(o.done[g] - want) < 1e-12 * want, "join %d GPU %d: %g, want %g",
                          join, g, o.done[g], want);
            ledger_free(dev_ledger(cluster_device(cl, g)), o.buf[g]);
        }
        cluster_free(cl);
    }
}
END_TEST

/* --fail: the GPU stops at the step; everyone else is woken; the error names both. */
START_TEST(failure_ends_cleanly)
{
    enum cost_algo algos[] = {COST_RING, COST_TREE,     COST_DBTREE,
                              COST_RHD,  COST_PAIRWISE, COST_DIRECT};
    for (int i = 0; i < 6; i++) {
        enum cost_op op = algos[i] >= COST_PAIRWISE ? COST_ALLTOALL : COST_ALLREDUCE;
        struct trial_args a = args(op, algos[i], 17, 17 << 10, FP_FP32);
        a.fail_gpu = 16;
        a.fail_step = algos[i] == COST_DIRECT ? 0 : 1; /* direct has one round */
        struct trial t;
        struct error e = {0};
        double t0 = clock_now();
        ck_assert_int_eq(trial_run(&a, &t, &e), ERR_RUN);
        ck_assert(clock_now() - t0 < 2);
        char want[64];
        snprintf(want, sizeof want, "GPU 16: failed at step %d (injected with --fail)",
                 a.fail_step);
        ck_assert_str_eq(e.msg, want);
        trial_fini(&t);
    }
}
END_TEST

/* Buffers come from the ledger: a GPU too small for them is an out-of-memory error. */
START_TEST(ledger_limits_the_buffers)
{
    struct trial_args a = args(COST_ALLREDUCE, COST_RING, 4, 1 << 20, FP_FP32);
    a.spec.hbm_bytes = 1 << 20; /* 1 MiB GPUs, 4 MiB buffers */
    struct trial t;
    struct error e = {0};
    ck_assert_int_eq(trial_run(&a, &t, &e), ERR_RUN);
    ck_assert_ptr_nonnull(strstr(e.msg, "GPU 0: out of memory"));
    trial_fini(&t);
}
END_TEST

/* The checker of copies compares most buffers byte for byte with one checked buffer: a wrong
 * element anywhere, in the checked buffer or another, must still be found and named. */
START_TEST(verify_finds_a_wrong_copy)
{
    enum { N = 5, COUNT = 37 };
    float data[N][COUNT];
    void *bufs[N];
    for (int bad = -1; bad < N; bad++)
        for (int op = 0; op < 2; op++) { /* broadcast from GPU 2, all-gather */
            for (int g = 0; g < N; g++) {
                bufs[g] = data[g];
                if (op == 0)
                    verify_fill(FP_FP32, data[g], COUNT, 9, 2);
                else
                    for (int c = 0; c < N; c++) {
                        size_t off, len;
                        float in[COUNT];
                        verify_fill(FP_FP32, in, COUNT, 9, c);
                        coll_chunk(COUNT, N, c, &off, &len);
                        memcpy(data[g] + off, in + off, len * sizeof(float));
                    }
            }
            if (bad >= 0)
                data[bad][30] = nextafterf(data[bad][30], 2.0f);
            struct verify v;
            verify_check(op == 0 ? COST_BROADCAST : COST_ALLGATHER, 2, FP_FP32, bufs, N, COUNT, 9,
                         &v);
            ck_assert_msg(v.ok == (bad < 0), "op %d, GPU %d wrong: ok %d", op, bad, v.ok);
            if (bad >= 0) {
                ck_assert_int_eq(v.bad_gpu, bad);
                ck_assert_uint_eq(v.bad_index, 30);
            }
        }
}
END_TEST

/* What an MPI rank checks alone (verify_check_rank): its own part of the result, agreeing with
 * the whole check; a wrong element in its part is found and named, one outside it is not its
 * to find. The digest tells equal buffers from ones a bit apart. */
struct own {
    enum cost_op op;
    float *buf[4];
};

static int own_body(struct device *d, void *arg, struct error *e)
{
    struct own *o = arg;
    int r = dev_rank(d);
    verify_fill(FP_FP32, o->buf[r], 1001, 5, r);
    struct coll c = {.op = o->op,
                     .algo = COST_RING,
                     .buf = o->buf[r],
                     .count = 1001,
                     .dtype = FP_FP32,
                     .root = 1};
    return coll_run(d, &c, e);
}

/* The five ops, each run by 4 GPUs on data (1001 elements each): its cluster. */
static const enum cost_op own_ops[] = {COST_ALLREDUCE, COST_REDUCE_SCATTER, COST_ALLGATHER,
                                       COST_BROADCAST, COST_REDUCE};

static float own_data[4][1001];

/* Op k of own_ops run into own_data (o), and the whole check of its result (right). */
static struct cluster *own_run(size_t k, struct own *o, struct verify *whole)
{
    *o = (struct own){own_ops[k], {own_data[0], own_data[1], own_data[2], own_data[3]}};
    struct cluster_config cfg;
    cluster_config_init(&cfg);
    cfg.gpus = 4;
    struct cluster *cl = cluster_new(&cfg, NULL);
    ck_assert_int_eq(cluster_run(cl, own_body, o, NULL), 0);
    verify_check(own_ops[k], 1, FP_FP32, (void *const *)o->buf, 4, 1001, 5, whole);
    ck_assert(whole->ok);
    return cl;
}

START_TEST(verify_one_rank_alone)
{
    const enum cost_op *ops = own_ops;
    float(*data)[1001] = own_data;
    for (size_t k = 0; k < sizeof own_ops / sizeof own_ops[0]; k++) {
        struct own o;
        struct verify whole, one, merged = {0};
        struct cluster *cl = own_run(k, &o, &whole);
        for (int r = 0; r < 4; r++) {
            verify_check_rank(ops[k], 1, FP_FP32, o.buf[r], r, 4, 1001, 5, &one);
            ck_assert_msg(one.ok, "op %d GPU %d", (int)ops[k], r);
            if (r == 0)
                merged = one;
            else
                verify_merge(&merged, &one);
        }
        ck_assert(merged.ok);
        ck_assert_double_eq(merged.max_rel_error, whole.max_rel_error);
        /* element 900 is in GPU 3's chunk (reduce-scatter); GPU 3 is not reduce's root (1), so
         * there its buffer holds partial sums nobody checks. 0.5 is far beyond the tolerance. */
        uint64_t before = verify_digest(o.buf[3], sizeof data[3]);
        data[3][900] += 0.5f;
        ck_assert_uint_ne(verify_digest(o.buf[3], sizeof data[3]), before);
        verify_check_rank(ops[k], 1, FP_FP32, o.buf[3], 3, 4, 1001, 5, &one);
        ck_assert_msg(one.ok == (ops[k] == COST_REDUCE), "op %d: GPU 3's own wrong element",
                      (int)ops[k]);
        if (!one.ok) {
            ck_assert_int_eq(one.bad_gpu, 3);
            ck_assert_uint_eq(one.bad_index, 900);
        }
        verify_check_rank(ops[k], 1, FP_FP32, o.buf[2], 2, 4, 1001, 5, &one);
        ck_assert(one.ok);
        cluster_free(cl);
    }
}
END_TEST

/* The GPUs' shares of the check (verify_share) check what the whole check checks: together
 * every element once, with the same largest error; a wrong element is found by the share that
 * holds it and named as that GPU's; a wrong element outside every share (a GPU's copy of
 * another's chunk) is for the digests to find. */
START_TEST(shares_check_the_whole)
{
    const enum cost_op *ops = own_ops;
    float(*data)[1001] = own_data;
    for (size_t k = 0; k < sizeof own_ops / sizeof own_ops[0]; k++) {
        struct own o;
        struct verify whole, one, merged = {0};
        struct cluster *cl = own_run(k, &o, &whole);
        for (int g = 0; g < 4; g++) {
            verify_share(ops[k], 1, FP_FP32, (void *const *)o.buf, g, 4, 1001, 5, &one);
            ck_assert_msg(one.ok, "op %d share of GPU %d", (int)ops[k], g);
            g == 0 ? (void)(merged = one) : verify_merge(&merged, &one);
        }
        ck_assert(merged.ok);
        ck_assert_double_eq(merged.max_rel_error, whole.max_rel_error);
        /* element 800 is in chunk 3 (coll_chunk of 1001 over 4: 251, 250, 250, 250): GPU 3's
         * share, or GPU 2's for all-gather (it checks the chunk after its own) */
        int holder = ops[k] == COST_ALLGATHER ? 2 : ops[k] == COST_REDUCE ? 1 : 3;
        int checker = ops[k] == COST_ALLGATHER ? 2 : 3;
        float keep = data[holder][800];
        data[holder][800] += 0.5f;
        verify_share(ops[k], 1, FP_FP32, (void *const *)o.buf, checker, 4, 1001, 5, &one);
        ck_assert_msg(!one.ok && one.bad_gpu == holder && one.bad_index == 800,
                      "op %d: ok %d GPU %d index %zu", (int)ops[k], one.ok, one.bad_gpu,
                      one.bad_index);
        data[holder][800] = keep;
        if (verify_same_everywhere(ops[k])) { /* GPU 0's copy of chunk 3: no share reads it */
            uint64_t before = verify_digest(data[0], sizeof data[0]);
            data[0][800] += 0.5f;
            for (int g = 0; g < 4; g++) {
                verify_share(ops[k], 1, FP_FP32, (void *const *)o.buf, g, 4, 1001, 5, &one);
                ck_assert(one.ok);
            }
            ck_assert_uint_ne(verify_digest(data[0], sizeof data[0]), before);
            data[0][800] = keep;
        }
        cluster_free(cl);
    }
}
END_TEST

/* The digest: one changed word, anywhere, changes it (every word of a buffer, of every length
 * up to a few stripes of the lanes, flipped in turn); so do the length and the last bytes. */
START_TEST(digest_sees_every_word)
{
    static uint64_t w[300];
    for (size_t i = 0; i < 300; i++)
        w[i] = i * 0x9e3779b97f4a7c15ull;
    for (size_t words = 1; words <= 300; words += 37) {
        uint64_t d = verify_digest(w, words * 8);
        for (size_t i = 0; i < words; i++) {
            w[i] ^= 1ull << (i % 64);
            ck_assert_msg(verify_digest(w, words * 8) != d, "%zu words, word %zu", words, i);
            w[i] ^= 1ull << (i % 64);
        }
        ck_assert_uint_eq(verify_digest(w, words * 8), d);
    }
    static const unsigned char zeros[64];
    for (size_t n = 1; n < 64; n++)
        ck_assert_uint_ne(verify_digest(zeros, n), verify_digest(zeros, n - 1));
    unsigned char b[13] = {0};
    uint64_t d = verify_digest(b, 13);
    b[12] = 1;
    ck_assert_uint_ne(verify_digest(b, 13), d);
}
END_TEST

/* Groups (communicators): two groups of three GPUs of one cluster all-reduce at the same time,
 * each over its own members in its own order, with each algorithm; every member ends with its
 * group's sum (exact: small integers in fp32) and sends what a ring of three sends. A GPU that
 * is not in a group is refused. */
struct groups {
    enum cost_algo algo;
    float *buf[6];
    uint64_t sent[6];
    int refused;
};

static const int group_a[3] = {0, 2, 4}, group_b[3] = {5, 3, 1};

static int groups_body(struct device *d, void *arg, struct error *e)
{
    struct groups *g = arg;
    int r = dev_rank(d);
    const int *grp = r % 2 ? group_b : group_a;
    struct coll c = {.op = COST_ALLREDUCE,
                     .algo = g->algo,
                     .buf = g->buf[r],
                     .count = 300,
                     .dtype = FP_FP32,
                     .group = grp,
                     .group_size = 3};
    if (coll_run(d, &c, e))
        return ERR_RUN;
    g->sent[r] = dev_stats(d).bytes_sent;
    if (r == 0) { /* GPU 0 is not in group b */
        struct error e2 = {0};
        struct coll bad = {.op = COST_ALLREDUCE,
                           .algo = COST_RING,
                           .buf = g->buf[r],
                           .count = 300,
                           .dtype = FP_FP32,
                           .group = group_b,
                           .group_size = 3};
        g->refused = coll_run(d, &bad, &e2) == ERR_INVAL;
    }
    return 0;
}

/* A maximum instead of a sum: every GPU ends with the element-wise largest value of the group,
 * a NaN anywhere stays NaN; only fp32 is reduced this way. */
static int max_body(struct device *d, void *arg, struct error *e)
{
    float(*buf)[7] = arg;
    int r = dev_rank(d);
    for (int i = 0; i < 7; i++)
        buf[r][i] = (float)((i * 3 + r * 5) % 7) - (i == 4 && r == 2 ? 100.0f : 0.0f);
    if (r == 1)
        buf[r][6] = NAN;
    struct coll c = {.op = COST_ALLREDUCE,
                     .algo = COST_RING,
                     .buf = buf[r],
                     .count = 7,
                     .dtype = FP_FP32,
                     .max = true};
    int rc = coll_run(d, &c, e);
    if (rc)
        return rc;
    struct coll half = {.op = COST_ALLREDUCE,
                        .algo = COST_RING,
                        .buf = buf[r],
                        .count = 7,
                        .dtype = FP_BF16,
                        .max = true};
    struct error e2 = {0};
    return coll_run(d, &half, &e2) == ERR_INVAL ? 0 : error_set(e, ERR_RUN, "bf16 max accepted");
}

START_TEST(max_reduces_to_the_largest)
{
    static float buf[3][7];
    struct cluster_config cfg;
    cluster_config_init(&cfg);
    cfg.gpus = 3;
    struct cluster *cl = cluster_new(&cfg, NULL);
    struct error e = {0};
    ck_assert_msg(cluster_run(cl, max_body, buf, &e) == 0, "%s", e.msg);
    for (int r = 0; r < 3; r++) {
        for (int i = 0; i < 6; i++) {
            float want = -1e30f;
            for (int q = 0; q < 3; q++)
                want =
                    fmaxf(want, (float)((i * 3 + q * 5) % 7) - (i == 4 && q == 2 ? 100.0f : 0.0f));
            ck_assert_msg(buf[r][i] == want, "GPU %d element %d: %g, not %g", r, i,
                          (double)buf[r][i], (double)want);
        }
        ck_assert(isnan(buf[r][6]));
    }
    cluster_free(cl);
}
END_TEST

START_TEST(groups_reduce_their_members_only)
{
    enum cost_algo algos[4] = {COST_RING, COST_TREE, COST_DBTREE, COST_RHD};
    for (int k = 0; k < 4; k++) {
        struct cluster_config cfg;
        cluster_config_init(&cfg);
        cfg.gpus = 6;
        struct error e = {0};
        struct cluster *cl = cluster_new(&cfg, &e);
        struct groups g = {.algo = algos[k]};
        for (int r = 0; r < 6; r++) {
            g.buf[r] = ledger_alloc(dev_ledger(cluster_device(cl, r)), MEM_GRADIENTS, 1200, &e);
            for (int i = 0; i < 300; i++)
                g.buf[r][i] = (float)(r + 1) * (float)(i % 7);
        }
        ck_assert_msg(cluster_run(cl, groups_body, &g, &e) == 0, "%s", e.msg);
        for (int r = 0; r < 6; r++) {
            float members = r % 2 ? 4 + 6 + 2 : 1 + 3 + 5; /* the ranks plus one */
            for (int i = 0; i < 300; i++)
                ck_assert_msg(g.buf[r][i] == members * (float)(i % 7), "algo %d GPU %d [%d]: %g", k,
                              r, i, (double)g.buf[r][i]);
            if (algos[k] == COST_RING) /* 2 (N - 1) chunks of 100 floats */
                ck_assert_uint_eq(g.sent[r], 2 * 2 * 100 * 4);
        }
        ck_assert(g.refused);
        for (int r = 0; r < 6; r++)
            ledger_free(dev_ledger(cluster_device(cl, r)), g.buf[r]);
        cluster_free(cl);
    }
}
END_TEST

/* ------------------------------------------------------------------ a wire in one process
 *
 * sim/cluster.h's wire without MPI: N clusters of N GPUs, each running only its own GPU, their
 * messages through queues between them (the sender's buffer read in place, as a rendezvous),
 * each on a thread of its own as each would be a process. The path `train --transport mpi`
 * takes, checked in every build (the sanitizers' too): a collective gives the bits, the
 * simulated times and the bytes of the same collective on one cluster's threads. */
enum { WN = 4, WSLOTS = 64 };

struct wmsg {
    struct dev_req hdr;
    const void *buf;
    bool used, taken, answered;
    double arrival;
};

struct wnet {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    struct wmsg slot[WN][WSLOTS]; /* each sender's messages in flight */
    uint64_t seq[WN][WSLOTS];     /* the order they were posted in */
    uint64_t posted;
};

struct wend {
    struct wnet *net;
    int rank;
    struct dev_wire w;
};

static int w_post(void *ctx, struct dev_req *req, struct error *e)
{
    struct wend *me = ctx;
    struct wnet *n = me->net;
    pthread_mutex_lock(&n->mu);
    int s = 0;
    while (s < WSLOTS && n->slot[me->rank][s].used)
        s++;
    ck_assert_int_lt(s, WSLOTS);
    req->slot = s;
    n->slot[me->rank][s] = (struct wmsg){.hdr = *req, .buf = req->buf, .used = true};
    n->seq[me->rank][s] = n->posted++;
    pthread_cond_broadcast(&n->cv);
    pthread_mutex_unlock(&n->mu);
    (void)e;
    return 0;
}

static int w_done(void *ctx, struct dev_req *req, struct error *e)
{
    struct wend *me = ctx;
    struct wnet *n = me->net;
    struct wmsg *m = &n->slot[me->rank][req->slot];
    pthread_mutex_lock(&n->mu);
    while (!m->answered)
        pthread_cond_wait(&n->cv, &n->mu);
    req->t_arrival = m->arrival;
    m->used = false;
    pthread_mutex_unlock(&n->mu);
    (void)e;
    return 0;
}

/* The first message from peer to me (with key) not taken yet, in the order posted. */
static struct wmsg *w_first(struct wnet *n, int peer, int me, int key)
{
    struct wmsg *best = NULL;
    uint64_t at = 0;
    for (int s = 0; s < WSLOTS; s++) {
        struct wmsg *m = &n->slot[peer][s];
        if (m->used && !m->taken && m->hdr.to == me && (key == 0 || m->hdr.key == key) &&
            (!best || n->seq[peer][s] < at))
            best = m, at = n->seq[peer][s];
    }
    return best;
}

static int w_head(void *ctx, int peer, int key, struct dev_req *hdr, struct error *e)
{
    struct wend *me = ctx;
    struct wnet *n = me->net;
    struct wmsg *m;
    pthread_mutex_lock(&n->mu);
    while (!(m = w_first(n, peer, me->rank, key)))
        pthread_cond_wait(&n->cv, &n->mu);
    m->taken = true;
    *hdr = m->hdr;
    pthread_mutex_unlock(&n->mu);
    hdr->buf = NULL, hdr->tag.phase = NULL; /* what a header from another process lacks */
    (void)e;
    return 0;
}

static int w_body(void *ctx, const struct dev_req *hdr, void *buf, dev_combine_fn combine,
                  void *cctx, struct error *e)
{
    struct wend *me = ctx;
    struct wnet *n = me->net;
    struct wmsg *m = &n->slot[hdr->from][hdr->slot];
    if (combine)
        combine(buf, m->buf, hdr->bytes, cctx);
    else if (hdr->bytes)
        memcpy(buf, m->buf, hdr->bytes);
    pthread_mutex_lock(&n->mu);
    m->arrival = hdr->t_arrival;
    m->answered = true;
    pthread_cond_broadcast(&n->cv);
    pthread_mutex_unlock(&n->mu);
    (void)e;
    return 0;
}

static int w_share(void *ctx, const void *mine, size_t bytes, void *all, struct error *e)
{
    (void)ctx, (void)mine, (void)bytes, (void)all;
    return error_set(e, ERR_INVAL, "no records to share here");
}

static void w_fail(void *ctx, const struct error *why)
{
    (void)ctx;
    ck_abort_msg("a GPU failed over the wire: %s", why->msg);
}

/* What one GPU did: its buffer after the collective, its clock, its bytes. */
struct wrun {
    enum cost_algo algo;
    float *buf[WN];
    double now[WN];
    uint64_t sent[WN], received[WN];
};

static int wire_body(struct device *d, void *arg, struct error *e)
{
    struct wrun *w = arg;
    int r = dev_rank(d);
    verify_fill(FP_BF16, w->buf[r], 3001, 7, r);
    struct coll c = {
        .op = COST_ALLREDUCE, .algo = w->algo, .buf = w->buf[r], .count = 3001, .dtype = FP_BF16};
    if (coll_run(d, &c, e))
        return ERR_RUN;
    dev_compute(d, 1e6, "after", 0, 0);
    w->now[r] = dev_now(d);
    w->sent[r] = dev_stats(d).bytes_sent;
    w->received[r] = dev_stats(d).bytes_received;
    return 0;
}

struct wproc {
    struct cluster *c;
    struct wrun *w;
    int rc;
};

static void *wproc_main(void *arg)
{
    struct wproc *p = arg;
    struct error e = {0};
    p->rc = cluster_run(p->c, wire_body, p->w, &e);
    return NULL;
}

START_TEST(a_wire_gives_the_threads_run)
{
    enum cost_algo algos[] = {COST_RING, COST_RHD, COST_DBTREE, COST_TREE};
    for (int k = 0; k < 4; k++) {
        struct cluster_config cfg;
        cluster_config_init(&cfg);
        cfg.gpus = WN;
        cfg.spec.gpus_per_node = 2; /* inter-node links too */
        cfg.spec.nodes = 2;
        struct error e = {0};
        struct wrun threads = {.algo = algos[k]}, wired = {.algo = algos[k]};
        for (int g = 0; g < WN; g++) {
            threads.buf[g] = calloc(3001, 2);
            wired.buf[g] = calloc(3001, 2);
        }
        struct cluster *one = cluster_new(&cfg, &e);
        ck_assert_msg(one && cluster_run(one, wire_body, &threads, &e) == 0, "%s", e.msg);
        cluster_free(one);

        struct wnet net = {.posted = 0};
        pthread_mutex_init(&net.mu, NULL);
        pthread_cond_init(&net.cv, NULL);
        struct wend end[WN];
        struct wproc proc[WN];
        pthread_t th[WN];
        for (int r = 0; r < WN; r++) {
            end[r] =
                (struct wend){&net, r, {&end[r], w_post, w_done, w_head, w_body, w_share, w_fail}};
            struct cluster_config wc = cfg;
            wc.wire = &end[r].w;
            wc.local = r;
            proc[r] = (struct wproc){cluster_new(&wc, &e), &wired, -1};
            ck_assert_msg(proc[r].c != NULL, "%s", e.msg);
        }
        for (int r = 0; r < WN; r++)
            ck_assert_int_eq(pthread_create(&th[r], NULL, wproc_main, &proc[r]), 0);
        for (int r = 0; r < WN; r++) {
            pthread_join(th[r], NULL);
            ck_assert_int_eq(proc[r].rc, 0);
            cluster_free(proc[r].c);
        }
        for (int g = 0; g < WN; g++) {
            ck_assert_msg(!memcmp(threads.buf[g], wired.buf[g], 3001 * 2), "%s GPU %d: bits",
                          cost_algo_name(algos[k]), g);
            ck_assert_msg(threads.now[g] == wired.now[g], "%s GPU %d: simulated %.17g, wired %.17g",
                          cost_algo_name(algos[k]), g, threads.now[g], wired.now[g]);
            ck_assert_uint_eq(threads.sent[g], wired.sent[g]);
            ck_assert_uint_eq(threads.received[g], wired.received[g]);
            ck_assert_uint_gt(wired.sent[g], 0);
            free(threads.buf[g]);
            free(wired.buf[g]);
        }
        pthread_mutex_destroy(&net.mu);
        pthread_cond_destroy(&net.cv);
    }
}
END_TEST

/* One case per test, so that CK_RUN_CASE=name runs one. */
#define ADD(t)                                                                                     \
    do {                                                                                           \
        TCase *tc = tcase_create(#t);                                                              \
        tcase_set_timeout(tc, 120);                                                                \
        tcase_add_test(tc, t);                                                                     \
        suite_add_tcase(s, tc);                                                                    \
    } while (0)

int main(void)
{
    Suite *s = suite_create("coll");
    ADD(verify_finds_a_wrong_copy);
    ADD(allreduce_ring);
    ADD(allreduce_tree);
    ADD(allreduce_dbtree);
    ADD(allreduce_rhd);
    ADD(reduce_scatter_ring);
    ADD(reduce_scatter_rhd);
    ADD(allgather_ring);
    ADD(allgather_rhd);
    ADD(broadcast_ring);
    ADD(broadcast_tree);
    ADD(reduce_ring);
    ADD(reduce_tree);
    ADD(alltoall_pairwise);
    ADD(alltoall_direct);
    ADD(alltoall_counts_and_refusals);
    ADD(alltoall_of_variable_sizes);
    ADD(verify_finds_a_wrong_block);
    ADD(ring_bytes_per_gpu);
    ADD(simulated_time_matches_the_model);
    ADD(ring_event_order);
    ADD(steps_are_the_arrival_moments);
    ADD(deterministic_timelines);
    ADD(streams_overlap_compute_and_communication);
    ADD(failure_ends_cleanly);
    ADD(ledger_limits_the_buffers);
    ADD(groups_reduce_their_members_only);
    ADD(max_reduces_to_the_largest);
    ADD(verify_one_rank_alone);
    ADD(shares_check_the_whole);
    ADD(digest_sees_every_word);
    ADD(a_wire_gives_the_threads_run);
    return harness_run(s);
}
