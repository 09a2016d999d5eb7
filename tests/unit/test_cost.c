/* Unit tests of src/comm/cost: the α-β formulas against values computed by hand, the
 * pipeline chunk choice, the trees, nccl-tests' bus bandwidth factors. Times are compared
 * with a relative tolerance of 1e-12: every value is a handful of double operations. */
#include "config.h"

#include <math.h>
#include <string.h>

#include "base/error.h"
#include "comm/cost.h"
#include "comm/tree.h"
#include "harness.h"

static void close_to(double x, double want)
{
    ck_assert_msg(fabs(x - want) <= 1e-12 * fabs(want), "%.17g != %.17g", x, want);
}
#define CLOSE(x, want) close_to((double)(x), (double)(want))

/* One node of 8: α = 10 µs, β = 10 GB/s; a second node level: α = 20 µs, β = 2.5 GB/s. */
static struct cost_net net(int n)
{
    struct cost_net c = {n, 8, 1e-5, 1e10, 2e-5, 2.5e9};
    return c;
}

static struct cost_result run(enum cost_op op, enum cost_algo algo, int n, double bytes)
{
    struct cost_net c = net(n);
    struct cost_result r;
    struct error e = {0};
    ck_assert_msg(cost_collective(op, algo, &c, bytes, &r, &e) == 0, "%s", e.msg);
    return r;
}

START_TEST(ring_formulas)
{
    /* all-reduce, 8 GPUs, 100 MB: 2*7*10us + 2*7/8 * 1e8 / 1e10 = 140 us + 17.5 ms */
    struct cost_result r = run(COST_ALLREDUCE, COST_RING, 8, 1e8);
    CLOSE(r.time_s, 1.4e-4 + 0.0175);
    CLOSE(r.bytes_total, 14e8);
    CLOSE(r.bytes_max_per_gpu, 1.75e8);
    ck_assert_int_eq(r.steps, 14);
    /* reduce-scatter and all-gather: half of that */
    r = run(COST_REDUCE_SCATTER, COST_RING, 8, 1e8);
    CLOSE(r.time_s, 7e-5 + 0.00875);
    CLOSE(r.bytes_total, 7e8);
    ck_assert_int_eq(r.steps, 7);
    r = run(COST_ALLGATHER, COST_RING, 8, 1e8);
    CLOSE(r.time_s, 7e-5 + 0.00875);
    /* 16 GPUs span two nodes: the inter-node link sets the pace: 30*20us + 30/16*1e8/2.5e9 */
    r = run(COST_ALLREDUCE, COST_RING, 16, 1e8);
    CLOSE(r.time_s, 30 * 2e-5 + 30.0 / 16 * 1e8 / 2.5e9);
    CLOSE(r.alpha, 2e-5);
    /* one GPU: nothing to do */
    r = run(COST_ALLREDUCE, COST_RING, 1, 1e8);
    CLOSE(r.time_s + 1, 1);
    ck_assert_int_eq(r.steps, 0);
}
END_TEST

START_TEST(rhd_formulas)
{
    /* 8 GPUs: 2*3*10us + 2*7/8*1e8/1e10 */
    struct cost_result r = run(COST_ALLREDUCE, COST_RHD, 8, 1e8);
    CLOSE(r.time_s, 6e-5 + 0.0175);
    ck_assert_int_eq(r.steps, 6);
    CLOSE(r.bytes_total, 14e8);
    /* 6 GPUs: N' = 4, r = 2: 2*2*10us + 2*3/4*1e8/1e10 + 2*(10us + 1e8/1e10) */
    r = run(COST_ALLREDUCE, COST_RHD, 6, 1e8);
    CLOSE(r.time_s, 4e-5 + 0.015 + 2 * (1e-5 + 0.01));
    CLOSE(r.bytes_total, 2 * 3 * 1e8 + 2 * 2 * 1e8);
    CLOSE(r.bytes_max_per_gpu, 1.5e8 + 1e8);
    ck_assert_int_eq(r.steps, 6);
    r = run(COST_REDUCE_SCATTER, COST_RHD, 4, 1e8);
    CLOSE(r.time_s, 2e-5 + 0.0075);
}
END_TEST

START_TEST(pipelined_formulas)
{
    /* chain broadcast, 4 GPUs, 2 MB: P* = sqrt(2 * 2e6 / (1e-5 * 1e10)) = 6.32; P = 6 gives
     * 8 * (10us + 2e6/6/1e10) = 346.67 us, P = 7 gives 9 * (10us + 28.57us) = 347.14 us. */
    struct cost_result r = run(COST_BROADCAST, COST_RING, 4, 2e6);
    ck_assert_int_eq(r.chunks, 6);
    ck_assert_int_eq(r.steps, 8);
    CLOSE(r.time_s, 8 * (1e-5 + 2e6 / 6 / 1e10));
    CLOSE(r.bytes_total, 3 * 2e6);
    /* tree all-reduce, 7 GPUs (a perfect tree, depth D = 2), 1 MB: the first chunk up and down,
     * D (3α + 4S/(Pβ)), then a chunk each cycle of the slower of two: an inner GPU's three
     * messages through its one port, 3α + 3S/(Pβ), while a chunk's bytes take less than α,
     * and 2α + 4S/(Pβ) past it. Here S/(Pβ) = 1e-4/P: the bytes set the cycle up to P = 10.
     * Least at P = 4 (P* = sqrt((8 - 4) S/β / 2α) = 4.47), 15 steps of α: 6α + 2e-4 +
     * 3 (2α + 1e-4). */
    r = run(COST_ALLREDUCE, COST_TREE, 7, 1e6);
    ck_assert_int_eq(r.chunks, 4);
    ck_assert_int_eq(r.steps, 15);
    CLOSE(r.time_s, 6e-5 + 8e-4 / 4 + 3 * (2e-5 + 4e-4 / 4));
    CLOSE(r.bytes_total, 2 * 6 * 1e6);
    CLOSE(r.bytes_max_per_gpu, 3e6); /* an inner node: up once, down twice */
    struct cost_net c7 = net(7);
    struct cost_pipe f;
    ck_assert_int_eq(cost_pipe_formula(COST_ALLREDUCE, COST_TREE, &c7, 1e6, &f), 0);
    CLOSE(f.fill_lat, 6e-5);
    CLOSE(f.fill_bw, 8e-4);
    CLOSE(f.lat_pace_lat, 3e-5);
    CLOSE(f.lat_pace_bw, 3e-4);
    CLOSE(f.bw_pace_lat, 2e-5);
    CLOSE(f.bw_pace_bw, 4e-4);
    ck_assert_int_eq(cost_pipe_formula(COST_REDUCE, COST_TREE, &c7, 1e6, &f), 0);
    CLOSE(f.bw_pace_bw, 2e-4); /* two children's chunks through one link */
    ck_assert_int_eq(cost_pipe_formula(COST_BROADCAST, COST_TREE, &c7, 1e6, &f), 0);
    CLOSE(f.lat_pace_lat, 2e-5); /* two sends through one port */
    CLOSE(f.bw_pace_bw, 2e-4);
    ck_assert_int_eq(cost_pipe_formula(COST_ALLREDUCE, COST_RING, &c7, 1e6, &f), ERR_INVAL);
    /* The formula is the schedule's time, for every P: the chain and the tree's broadcast on 2
     * to 16 GPUs of one node, the tree's reduce and all-reduce where every inner GPU but the
     * root has two children (N = 2^k or 2^k - 1), small and large buffers; lesson 3's 8-GPU
     * formula was once the schedule's latencies plus its bytes, which overlap once P > 1
     * (85.26 us against 79.26 us at 4 MiB on h100-80gb). Exact to rounding: 1e-10 relative
     * (the cycles' coefficients are read off differences a thousandth of their terms). */
    static const int kinds[][2] = {{COST_ALLREDUCE, COST_TREE},
                                   {COST_REDUCE, COST_TREE},
                                   {COST_BROADCAST, COST_TREE},
                                   {COST_BROADCAST, COST_RING},
                                   {COST_REDUCE, COST_RING}};
    for (size_t k = 0; k < sizeof kinds / sizeof *kinds; k++)
        for (int n = 2; n <= 16; n++)
            for (double S = 1e3; S <= 1e9; S *= 10) {
                bool full = (n & (n - 1)) == 0 || ((n + 1) & n) == 0;
                if (kinds[k][0] != COST_BROADCAST && kinds[k][1] == COST_TREE && !full)
                    continue;
                struct cost_net c = net(n);
                c.gpus_per_node = 16;
                enum cost_op op = (enum cost_op)kinds[k][0];
                enum cost_algo al = (enum cost_algo)kinds[k][1];
                ck_assert_int_eq(cost_pipe_formula(op, al, &c, S, &f), 0);
                for (int P = 1; P <= 64; P++) {
                    double t = cost_schedule_time(op, al, &c, S, P), p = cost_pipe_time(&f, P);
                    ck_assert_msg(fabs(p - t) <= 1e-10 * t, "%s %s, %d GPUs, %g B, P %d: %g, %g",
                                  cost_op_name(op), cost_algo_name(al), n, S, P, p, t);
                }
            }
    r = run(COST_BROADCAST, COST_TREE, 7, 1e6);
    ck_assert_int_eq(r.steps, 2 * (r.chunks + 1));
    r = run(COST_REDUCE, COST_TREE, 7, 1e6);
    ck_assert_int_eq(r.steps, r.chunks + 1);
    /* double binary tree, 8 GPUs, 1 MB: each tree 0.5 MB; its schedule is the time */
    r = run(COST_ALLREDUCE, COST_DBTREE, 8, 1e6);
    struct cost_net c8 = net(8);
    CLOSE(r.time_s, cost_schedule_time(COST_ALLREDUCE, COST_DBTREE, &c8, 1e6, r.chunks));
    CLOSE(r.bytes_total, 14e6);
}
END_TEST

/* A pipelined algorithm's chunks are those whose schedule takes the least time of all P from
 * 1 to COST_MAX_CHUNKS (the lab's own model, not another formula's); the double binary tree's,
 * whose time is not smooth in P, within 5% of the least. */
START_TEST(chunks_minimise_the_schedule)
{
    const enum cost_op ops[] = {COST_ALLREDUCE, COST_ALLREDUCE, COST_BROADCAST, COST_REDUCE,
                                COST_BROADCAST};
    const enum cost_algo algos[] = {COST_TREE, COST_DBTREE, COST_TREE, COST_TREE, COST_RING};
    const int gpus[] = {3, 7, 16};
    const double sizes[] = {65536, 1 << 22, 1 << 28};
    for (int a = 0; a < 5; a++)
        for (int g = 0; g < 3; g++)
            for (int k = 0; k < 3; k++) {
                struct cost_net c = net(gpus[g]);
                struct cost_result r;
                ck_assert_int_eq(cost_collective(ops[a], algos[a], &c, sizes[k], &r, NULL), 0);
                for (int p = 1; p <= COST_MAX_CHUNKS; p++) {
                    double t = cost_schedule_time(ops[a], algos[a], &c, sizes[k], p);
                    double slack = algos[a] == COST_DBTREE ? 1.05 : 1 + 1e-12;
                    ck_assert_msg(r.time_s <= t * slack,
                                  "%s %s on %d GPUs, %g B: P = %d takes %g s, P = %d %g s",
                                  cost_op_name(ops[a]), cost_algo_name(algos[a]), gpus[g], sizes[k],
                                  r.chunks, r.time_s, p, t);
                }
            }
    /* the lesson's example: 8 GPUs of h100-80gb, 1 MiB */
    struct cost_net h = {8, 8, 2e-6, 450e9, 5e-6, 50e9};
    struct cost_result r;
    ck_assert_int_eq(cost_collective(COST_ALLREDUCE, COST_TREE, &h, 1 << 20, &r, NULL), 0);
    for (int p = 1; p <= COST_MAX_CHUNKS; p++)
        ck_assert(r.time_s <= cost_schedule_time(COST_ALLREDUCE, COST_TREE, &h, 1 << 20, p));
}
END_TEST

START_TEST(busbw_and_p2p)
{
    /* nccl-tests doc/PERFORMANCE.md */
    CLOSE(cost_busbw_factor(COST_ALLREDUCE, 8), 1.75);
    CLOSE(cost_busbw_factor(COST_REDUCE_SCATTER, 8), 0.875);
    CLOSE(cost_busbw_factor(COST_ALLGATHER, 4), 0.75);
    CLOSE(cost_busbw_factor(COST_BROADCAST, 8), 1);
    CLOSE(cost_busbw_factor(COST_REDUCE, 8), 1);
    CLOSE(cost_busbw_factor(COST_ALLTOALL, 8), 0.875); /* "AlltoAll: (n-1)/n" */
    CLOSE(cost_algbw(1e9, 0.5), 2e9);
    struct cost_net c = net(16);
    CLOSE(cost_p2p(&c, 0, 7, 1e6), 1e-5 + 1e-4);
    CLOSE(cost_p2p(&c, 7, 8, 1e6), 2e-5 + 4e-4);
}
END_TEST

START_TEST(auto_picks_the_fastest)
{
    struct cost_net c = net(6);
    double sizes[] = {8, 4096, 1e6, 1e9};
    for (int i = 0; i < 4; i++) {
        enum cost_algo best = cost_best_algo(COST_ALLREDUCE, &c, sizes[i]);
        struct cost_result rb, r;
        cost_collective(COST_ALLREDUCE, best, &c, sizes[i], &rb, NULL);
        for (int a = 0; a < COST_ALGO_COUNT; a++) {
            if (cost_collective(COST_ALLREDUCE, (enum cost_algo)a, &c, sizes[i], &r, NULL) != 0) {
                ck_assert(!cost_supported(COST_ALLREDUCE, (enum cost_algo)a, 6, NULL));
                continue;
            }
            ck_assert(rb.time_s <= r.time_s);
        }
    }
    /* tiny messages on 6 GPUs: the tree's 3*(1+2-1) = 6 latencies beat the ring's 10, and
     * the ring is never the best */
    struct cost_result ring, tree;
    cost_collective(COST_ALLREDUCE, COST_RING, &c, 8, &ring, NULL);
    cost_collective(COST_ALLREDUCE, COST_TREE, &c, 8, &tree, NULL);
    ck_assert(tree.time_s < ring.time_s);
    ck_assert_int_ne(cost_best_algo(COST_ALLREDUCE, &c, 8), COST_RING);
    /* large ones: the ring's bandwidth term 2(N-1)/N S/β wins over the tree's 3 S/β */
    ck_assert_int_eq(cost_best_algo(COST_ALLREDUCE, &c, 1e9), COST_RING);
    ck_assert_int_eq(cost_best_algo(COST_ALLGATHER, &c, 1e9), COST_RING);
}
END_TEST

/* Ring against a tree all-reduce on one node of 8 (α = 10 µs, β = 10 GB/s): both are
 * monotonic in S and cross once; at the crossover their times agree, below it the tree wins. */
START_TEST(crossover_of_ring_and_tree)
{
    struct cost_net c = net(8);
    double x = cost_crossover(COST_ALLREDUCE, COST_RING, COST_TREE, &c, 1024, 1e10);
    ck_assert(x > 1024 && x < 1e10);
    struct cost_result ring, tree;
    cost_collective(COST_ALLREDUCE, COST_RING, &c, x * 0.99, &ring, NULL);
    cost_collective(COST_ALLREDUCE, COST_TREE, &c, x * 0.99, &tree, NULL);
    ck_assert(tree.time_s < ring.time_s);
    cost_collective(COST_ALLREDUCE, COST_RING, &c, x * 1.01, &ring, NULL);
    cost_collective(COST_ALLREDUCE, COST_TREE, &c, x * 1.01, &tree, NULL);
    ck_assert(ring.time_s < tree.time_s);
    /* one algorithm against itself never crosses */
    ck_assert(cost_crossover(COST_ALLREDUCE, COST_RING, COST_RING, &c, 1024, 1e10) < 0);
}
END_TEST

START_TEST(unsupported_and_bad_input)
{
    struct cost_net c = net(6);
    struct cost_result r;
    struct error e = {0};
    ck_assert_int_eq(cost_collective(COST_ALLGATHER, COST_RHD, &c, 1e6, &r, &e), ERR_INVAL);
    ck_assert_ptr_nonnull(strstr(e.msg, "power-of-two"));
    ck_assert_int_eq(cost_collective(COST_BROADCAST, COST_DBTREE, &c, 1e6, &r, &e), ERR_INVAL);
    ck_assert_int_eq(cost_collective(COST_ALLREDUCE, COST_RING, &c, -1, &r, &e), ERR_INVAL);
    c.gpus = 0;
    ck_assert_int_eq(cost_collective(COST_ALLREDUCE, COST_RING, &c, 1, &r, &e), ERR_INVAL);
    enum cost_op op;
    enum cost_algo algo;
    ck_assert_int_eq(cost_parse_op("reduce-scatter", &op, &e), 0);
    ck_assert_int_eq(op, COST_REDUCE_SCATTER);
    ck_assert_int_eq(cost_parse_op("alltogether", &op, &e), ERR_INVAL);
    ck_assert_ptr_nonnull(strstr(e.msg, "alltoall")); /* the list of ops */
    ck_assert_int_eq(cost_parse_algo("auto", &algo, &e), 0);
    ck_assert_int_eq(algo, COST_AUTO);
    ck_assert_int_eq(cost_parse_algo("butterfly", &algo, &e), ERR_INVAL);
}
END_TEST

/* Every rank appears once, parents and children agree, depth is floor(log2 N), and in the
 * double binary tree an inner node of tree 0 is a leaf of tree 1. */
/* All-to-all: each GPU sends N-1 blocks of S/N. On one node both algorithms take
 * (N-1)(α + S/(Nβ)): their messages, replayed as the simulator times them, arrive one port
 * time apart and never queue at a receiver; the steps are the N-1 moments they arrive.
 * Across nodes the replay decides, and pairwise never beats direct there (its steps wait
 * for their slowest pair). Only pairwise and direct run it. */
START_TEST(alltoall_formulas)
{
    for (int n = 2; n <= 8; n++)
        for (int algo = COST_PAIRWISE; algo <= COST_DIRECT; algo++) {
            double S = 1e6 * n;
            struct cost_result r = run(COST_ALLTOALL, (enum cost_algo)algo, n, S);
            CLOSE(r.time_s, (n - 1) * (1e-5 + S / n / 1e10));
            CLOSE(r.bytes_total, (n - 1) * S);
            CLOSE(r.bytes_max_per_gpu, (n - 1) * 1e6);
            CLOSE(r.bytes_min_per_gpu, (n - 1) * 1e6);
            ck_assert_int_eq(r.steps, n - 1);
            ck_assert_int_eq(r.rounds, n - 1);
            struct cost_net c = net(n);
            CLOSE(cost_schedule_time(COST_ALLTOALL, (enum cost_algo)algo, &c, S, 1), r.time_s);
        }
    for (int n = 9; n <= 24; n += 3) {
        struct cost_result p = run(COST_ALLTOALL, COST_PAIRWISE, n, 4e6 * n);
        struct cost_result d = run(COST_ALLTOALL, COST_DIRECT, n, 4e6 * n);
        ck_assert(d.time_s <= p.time_s * (1 + 1e-12));
        /* no faster than GPU 0's port allows: the n - 8 blocks it sends off its node */
        ck_assert(d.time_s >= (n - 8) * (2e-5 + 4e6 / 2.5e9) * (1 - 1e-12));
    }
    struct cost_net c = net(4);
    struct cost_result r;
    struct error e = {0};
    ck_assert_int_eq(cost_collective(COST_ALLTOALL, COST_RING, &c, 1e6, &r, &e), ERR_INVAL);
    ck_assert_ptr_nonnull(strstr(e.msg, "pairwise or direct"));
    ck_assert_int_eq(cost_collective(COST_ALLREDUCE, COST_PAIRWISE, &c, 1e6, &r, &e), ERR_INVAL);
    ck_assert(!cost_supported(COST_BROADCAST, COST_DIRECT, 4, NULL));
    enum cost_op op;
    enum cost_algo algo;
    ck_assert_int_eq(cost_parse_op("alltoall", &op, NULL), 0);
    ck_assert_int_eq(op, COST_ALLTOALL);
    ck_assert_int_eq(cost_parse_algo("direct", &algo, NULL), 0);
    ck_assert_int_eq(algo, COST_DIRECT);
    ck_assert_int_eq(cost_best_algo(COST_ALLTOALL, &c, 1e6), COST_PAIRWISE); /* a tie: the first */
}
END_TEST

START_TEST(trees_are_consistent)
{
    for (int n = 1; n <= 40; n++) {
        for (int which = 0; which < 2; which++) {
            int roots = 0;
            for (int r = 0; r < n; r++) {
                struct tree_node t, c;
                tree_node(n, which, -1, r, &t);
                if (t.parent < 0) {
                    roots++;
                    ck_assert_int_eq(r, tree_root(n, which));
                } else {
                    tree_node(n, which, -1, t.parent, &c);
                    ck_assert(c.child[0] == r || c.child[1] == r);
                }
                int depth = 0;
                for (int q = r; t.parent >= 0; depth++)
                    q = t.parent, tree_node(n, which, -1, q, &t);
                ck_assert_int_le(depth, cost_log2(n));
            }
            ck_assert_int_eq(roots, 1);
        }
        int inner_both = 0;
        for (int r = 0; r < n; r++) {
            struct tree_node a, b;
            tree_node(n, 0, -1, r, &a);
            tree_node(n, 1, -1, r, &b);
            inner_both += a.nchild > 0 && b.nchild > 0;
        }
        ck_assert_int_eq(inner_both, 0);
        /* a rooted tree has its root where asked */
        for (int root = 0; root < n; root++) {
            struct tree_node t;
            tree_node(n, 0, root, root, &t);
            ck_assert_int_eq(t.parent, -1);
        }
    }
}
END_TEST

int main(void)
{
    Suite *s = suite_create("cost");
    TCase *tc = tcase_create("cost");
    tcase_set_timeout(tc, 60); /* chunks_minimise_the_schedule replays every chunk count */
    tcase_add_test(tc, ring_formulas);
    tcase_add_test(tc, rhd_formulas);
    tcase_add_test(tc, pipelined_formulas);
    tcase_add_test(tc, chunks_minimise_the_schedule);
    tcase_add_test(tc, busbw_and_p2p);
    tcase_add_test(tc, auto_picks_the_fastest);
    tcase_add_test(tc, crossover_of_ring_and_tree);
    tcase_add_test(tc, unsupported_and_bad_input);
    tcase_add_test(tc, trees_are_consistent);
    tcase_add_test(tc, alltoall_formulas);
    suite_add_tcase(s, tc);
    return harness_run(s);
}
