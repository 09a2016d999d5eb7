/* Unit tests of src/sim: the ledger, point-to-point timing (a run timed as another model's
 * too), abort, deadlines, determinism. */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "base/clock.h"
#include "base/error.h"
#include "sim/cluster.h"
#include "sim/ledger.h"
#include "harness.h"

static struct cluster *make(int n, int gpn)
{
    struct cluster_config cfg;
    cluster_config_init(&cfg);
    cfg.gpus = n;
    cfg.spec.gpus_per_node = gpn;
    cfg.spec.alpha_intra = 1e-6;
    cfg.spec.beta_intra = 1e9;
    cfg.spec.alpha_inter = 1e-5;
    cfg.spec.beta_inter = 1e8;
    cfg.spec.hbm_bytes = 1 << 20;
    cfg.spec.peak_flops = 1e12;
    cfg.record_events = true;
    struct error e;
    struct cluster *c = cluster_new(&cfg, &e);
    ck_assert_msg(c != NULL, "%s", e.msg);
    return c;
}

START_TEST(ledger_accounts_and_refuses)
{
    struct ledger l;
    struct error e = {0};
    ledger_init(&l, 3, 1000);
    void *a = ledger_alloc(&l, MEM_WEIGHTS, 600, &e);
    ck_assert_ptr_nonnull(a);
    ck_assert_int_eq((long)((uintptr_t)a % 64), 0);
    ck_assert_int_eq(((unsigned char *)a)[599], 0);
    ck_assert_int_eq(ledger_charge(&l, MEM_ACTIVATIONS, 300, &e), 0);
    ck_assert_uint_eq(l.total, 900);
    ck_assert_ptr_null(ledger_alloc(&l, MEM_GRADIENTS, 101, &e));
    ck_assert_int_eq(e.code, ERR_RUN);
    ck_assert_ptr_nonnull(strstr(e.msg, "GPU 3: out of memory"));
    ck_assert_uint_eq(l.total, 900);
    ledger_free(&l, a);
    ck_assert_uint_eq(l.current[MEM_WEIGHTS], 0);
    ck_assert_uint_eq(l.peak, 900);
    ledger_release(&l, MEM_ACTIVATIONS, 300);
    ck_assert_uint_eq(l.total, 0);
}
END_TEST

/* A large buffer is a mapping of its own (sim/ledger.c): zeroed, aligned, counted and freed as
 * any other. */
START_TEST(ledger_large_buffers_are_zeroed_and_counted)
{
    struct ledger l;
    struct error e = {0};
    size_t big = (size_t)3 << 20;
    ledger_init(&l, 0, (uint64_t)1 << 30);
    unsigned char *a = ledger_alloc(&l, MEM_COMM, big, &e);
    ck_assert_ptr_nonnull(a);
    ck_assert_int_eq((long)((uintptr_t)a % 64), 0);
    size_t nonzero = 0;
    for (size_t i = 0; i < big; i += 4093)
        nonzero += a[i] != 0;
    ck_assert_uint_eq(nonzero + a[big - 1], 0);
    memset(a, 7, big);
    ck_assert_uint_eq(l.current[MEM_COMM], big);
    ledger_free(&l, a);
    ck_assert_uint_eq(l.total, 0);
    ck_assert_uint_eq(l.peak, big);
}
END_TEST

struct hook_log {
    int n;
    enum ledger_cat cat[4];
    int64_t delta[4];
};

static void log_hook(void *ctx, enum ledger_cat cat, int64_t delta, bool oom)
{
    struct hook_log *h = ctx;
    ck_assert(!oom);
    if (h->n < 4)
        h->cat[h->n] = cat, h->delta[h->n] = delta;
    h->n++;
}

/* Bytes held change category (an arena's reserved bytes become activations and back): the
 * total and its peak stay, the categories' peaks follow, moving more than is held is refused. */
START_TEST(ledger_moves_bytes_between_categories)
{
    struct ledger l;
    struct error e = {0};
    struct hook_log h = {0};
    ledger_init(&l, 1, 1000);
    void *arena = ledger_alloc(&l, MEM_RESERVED, 800, &e);
    ck_assert_ptr_nonnull(arena);
    l.hook = log_hook, l.ctx = &h;
    ck_assert_int_eq(ledger_move(&l, MEM_RESERVED, MEM_ACTIVATIONS, 500, &e), 0);
    ck_assert_uint_eq(l.total, 800);
    ck_assert_uint_eq(l.current[MEM_RESERVED], 300);
    ck_assert_uint_eq(l.current[MEM_ACTIVATIONS], 500);
    ck_assert_int_eq(h.n, 2);
    ck_assert(h.cat[0] == MEM_RESERVED && h.delta[0] == -500);
    ck_assert(h.cat[1] == MEM_ACTIVATIONS && h.delta[1] == 500);
    ck_assert_int_eq(ledger_move(&l, MEM_RESERVED, MEM_ACTIVATIONS, 301, &e), ERR_INVAL);
    ck_assert_ptr_nonnull(strstr(e.msg, "holds 300"));
    ck_assert_int_eq(h.n, 2); /* refused: nothing changed, nothing seen */
    ck_assert_int_eq(ledger_move(&l, MEM_ACTIVATIONS, MEM_RESERVED, 500, &e), 0);
    ck_assert_uint_eq(l.peak_cat[MEM_ACTIVATIONS], 500);
    ck_assert_uint_eq(l.peak, 800);
    ck_assert_str_eq(ledger_cat_name(MEM_RESERVED), "reserved");
    ck_assert_str_eq(ledger_cat_name(MEM_WORKSPACE), "workspace");
    l.hook = NULL;
    ledger_free(&l, arena);
    ck_assert_uint_eq(l.total, 0);
}
END_TEST

/* GPU 0 sends 1000 bytes to 1 (same node) and 2 (another node): arrivals at
 * α + m/β = 1e-6 + 1e-6 and, after the first send has left the port, 2e-6 + 1e-5 + 1e-5. */
static int p2p(struct device *d, void *arg, struct error *e)
{
    static char buf[4][1000];
    (void)arg;
    int r = dev_rank(d);
    if (r == 0) {
        memset(buf[0], 7, sizeof buf[0]);
        struct dev_req a, b;
        if (dev_isend(d, 1, buf[0], 1000, NULL, &a, e) ||
            dev_isend(d, 2, buf[0], 1000, NULL, &b, e))
            return ERR_RUN;
        if (dev_wait(d, &a, e) || dev_wait(d, &b, e))
            return ERR_RUN;
    } else if (r <= 2) {
        if (dev_recv(d, 0, buf[r], 1000, NULL, NULL, NULL, e))
            return ERR_RUN;
        if (buf[r][999] != 7)
            return error_set(e, ERR_RUN, "GPU %d got wrong bytes", r);
    } else {
        dev_compute(d, 2e6, "matmul", 0, 0);
    }
    return 0;
}

START_TEST(p2p_times)
{
    struct cluster *c = make(4, 2);
    struct error e = {0};
    ck_assert_msg(cluster_run(c, p2p, NULL, &e) == 0, "%s", e.msg);
    ck_assert(fabs(dev_now(cluster_device(c, 1)) - 2e-6) < 1e-18);
    ck_assert(fabs(dev_now(cluster_device(c, 2)) - (2e-6 + 2e-5)) < 1e-18);
    ck_assert(fabs(dev_now(cluster_device(c, 0)) - (2e-6 + 2e-5)) < 1e-18);
    ck_assert(fabs(dev_now(cluster_device(c, 3)) - 2e-6) < 1e-18); /* 2e6 / 1e12 */
    ck_assert_uint_eq(dev_stats(cluster_device(c, 0)).bytes_sent, 2000);
    size_t n;
    const struct event *ev = cluster_events(c, &n);
    ck_assert_uint_eq(n, 6); /* 2 sends, 2 receives, compute begin and end */
    /* merged by (time, device, sequence): at t = 0 GPU 0's first send, then GPU 3's compute */
    ck_assert(ev[0].type == EV_SEND && ev[0].device == 0 && ev[0].t == 0);
    ck_assert(ev[1].type == EV_COMPUTE_BEGIN && ev[1].device == 3);
    for (size_t i = 1; i < n; i++)
        ck_assert(ev[i - 1].t <= ev[i].t);
    cluster_free(c);
}
END_TEST

/* Streams: GPU 0 waits on stream 0 for a message from GPU 1 (arriving at 2 us), then sends
 * on stream 0 to GPU 2 (from 2 us to 4 us) and on stream 1 to GPU 3: that send does not wait
 * for stream 0 and takes the port while it is free, from 0 to 2 us. dev_join then brings both
 * streams to 4 us. All on one node: α = 1 us, β = 1 GB/s, 1000 bytes: 2 us a message. */
static int streams(struct device *d, void *arg, struct error *e)
{
    static char buf[4][1000];
    (void)arg;
    int r = dev_rank(d);
    struct dev_tag s0 = {0, 0, "x", 0}, s1 = {0, 0, "x", 1};
    if (r == 0) {
        struct dev_req a, b;
        if (dev_recv(d, 1, buf[0], 1000, &s0, NULL, NULL, e) ||
            dev_isend(d, 2, buf[0], 1000, &s0, &a, e) || dev_isend(d, 3, buf[0], 1000, &s1, &b, e))
            return ERR_RUN;
        if (dev_wait(d, &a, e) || dev_wait(d, &b, e))
            return ERR_RUN;
        if (dev_now(d) != 4e-6)
            return error_set(e, ERR_RUN, "GPU 0 at %g", dev_now(d));
        dev_join(d);
        dev_compute(d, 1e6, "x", 0, 0); /* 1 us after the join */
        if (fabs(dev_now(d) - 5e-6) > 1e-18)
            return error_set(e, ERR_RUN, "GPU 0 after compute at %g", dev_now(d));
        return 0;
    }
    if (r == 1) {
        struct dev_req a;
        return dev_isend(d, 0, buf[1], 1000, &s0, &a, e) || dev_wait(d, &a, e) ? ERR_RUN : 0;
    }
    return dev_recv(d, 0, buf[r], 1000, r == 3 ? &s1 : &s0, NULL, NULL, e);
}

START_TEST(streams_share_the_port_not_the_waits)
{
    struct cluster *c = make(4, 4);
    struct error e = {0};
    ck_assert_msg(cluster_run(c, streams, NULL, &e) == 0, "%s", e.msg);
    ck_assert(fabs(dev_now(cluster_device(c, 2)) - 4e-6) < 1e-18);
    ck_assert(fabs(dev_now(cluster_device(c, 3)) - 2e-6) < 1e-18);
    cluster_free(c);
}
END_TEST

/* A run timed as another model (sim/spec.h's struct time_scale): GPU 0's first message of
 * 1000 bytes stands for 3 messages of 10 x its bytes, 3 α + 10^4 / β = 13 us; its second is
 * timed as 500 bytes (each) x 10 and one α, 6 us, after the first on the port: it arrives at
 * 19 us. The counters keep the bytes sent; compute runs at peak x 0.5: 1e6 FLOPs in 2 us. */
static int timed(struct device *d, void *arg, struct error *e)
{
    static char buf[3][1000];
    (void)arg;
    struct dev_tag t = {0, 0, "x", 0};
    int r = dev_rank(d);
    if (r > 0) {
        if (dev_recv(d, 0, buf[r], 1000, &t, NULL, NULL, e))
            return ERR_RUN;
        double want = r == 1 ? 13e-6 : 19e-6;
        return fabs(dev_now(d) - want) < 1e-18
                   ? 0
                   : error_set(e, ERR_RUN, "GPU %d at %g, not %g", r, dev_now(d), want);
    }
    struct dev_req a, b;
    struct time_msg_scale was = dev_time_msgs(d, (struct time_msg_scale){10, 3, 0, TIME_MSG_NONE});
    if (was.bytes != 1 || was.alphas != 1 || was.each != 0)
        return error_set(e, ERR_RUN, "a device's messages are timed as sent until told");
    if (dev_isend(d, 1, buf[0], 1000, &t, &a, e))
        return ERR_RUN;
    dev_time_msgs(d, (struct time_msg_scale){10, 1, 500, TIME_MSG_NONE});
    if (dev_isend(d, 2, buf[0], 1000, &t, &b, e) || dev_wait(d, &a, e) || dev_wait(d, &b, e))
        return ERR_RUN;
    dev_time_msgs(d, was);
    dev_compute(d, 1e6, "x", 0, 0);
    if (fabs(dev_now(d) - 21e-6) > 1e-18 || dev_stats(d).bytes_sent != 2000)
        return error_set(e, ERR_RUN, "GPU 0 at %g, %llu bytes sent", dev_now(d),
                         (unsigned long long)dev_stats(d).bytes_sent);
    return 0;
}

START_TEST(timed_as_another_model)
{
    struct cluster_config cfg;
    cluster_config_init(&cfg);
    cfg.gpus = 3;
    cfg.spec.alpha_intra = 1e-6;
    cfg.spec.beta_intra = 1e9;
    cfg.spec.peak_flops = 1e12;
    snprintf(cfg.spec.time.as, sizeof cfg.spec.time.as, "%s", "a larger model");
    cfg.spec.time.efficiency = 0.5;
    struct error e = {0};
    struct cluster *c = cluster_new(&cfg, &e);
    ck_assert_msg(c != NULL, "%s", e.msg);
    ck_assert_msg(cluster_run(c, timed, NULL, &e) == 0, "%s", e.msg);
    cluster_free(c);
    /* the scale's readers: as sent without a model, its factors with one */
    struct time_scale ts = {0};
    ck_assert(time_flops(&ts, TIME_OP_LAYER, 3) == 3 && time_msg(&ts, 0, TIME_MSG_ACTS).bytes == 1);
    snprintf(ts.as, sizeof ts.as, "%s", "m");
    ts.flops[TIME_OP_LAYER] = 4, ts.msg[2][TIME_MSG_ACTS].bytes = 5;
    ck_assert(time_flops(&ts, TIME_OP_LAYER, 3) == 12 &&
              time_msg(&ts, 2, TIME_MSG_ACTS).bytes == 5);
    ck_assert(time_msg(&ts, TIME_STAGES, TIME_MSG_ACTS).bytes == 1); /* no such stage */
}
END_TEST

/* Keys: GPU 0 sends A (key 1), B (key 2), C (no key); GPU 1 takes key 2 first, then key 1,
 * then the next message: B, A, C. Without keys, messages come in the order sent. */
static int keyed(struct device *d, void *arg, struct error *e)
{
    int *got = arg;
    struct dev_tag t = {0, 0, "x", 0};
    if (dev_rank(d) == 0) {
        static const int v[3] = {10, 20, 30};
        struct dev_req r[3];
        if (dev_isend_key(d, 1, 1, &v[0], 4, &t, &r[0], e) ||
            dev_isend_key(d, 1, 2, &v[1], 4, &t, &r[1], e) ||
            dev_isend(d, 1, &v[2], 4, &t, &r[2], e))
            return ERR_RUN;
        for (int i = 0; i < 3; i++)
            if (dev_wait(d, &r[i], e))
                return ERR_RUN;
        return 0;
    }
    if (dev_recv_key(d, 0, 2, &got[0], 4, &t, e) || dev_recv_key(d, 0, 1, &got[1], 4, &t, e) ||
        dev_recv(d, 0, &got[2], 4, &t, NULL, NULL, e))
        return ERR_RUN;
    return 0;
}

START_TEST(keyed_receives_take_their_message)
{
    struct cluster *c = make(2, 2);
    struct error e = {0};
    int got[3] = {0};
    ck_assert_msg(cluster_run(c, keyed, got, &e) == 0, "%s", e.msg);
    ck_assert_int_eq(got[0], 20);
    ck_assert_int_eq(got[1], 10);
    ck_assert_int_eq(got[2], 30);
    cluster_free(c);
}
END_TEST

/* The live hook sees every event the devices record, from their own threads. */
static void count_event(void *ctx, const struct event *ev)
{
    (void)ev;
    __atomic_fetch_add((int *)ctx, 1, __ATOMIC_RELAXED);
}

START_TEST(live_hook_sees_every_event)
{
    struct cluster_config cfg;
    cluster_config_init(&cfg);
    cfg.gpus = 4;
    cfg.spec.gpus_per_node = 2;
    cfg.record_events = true;
    int seen = 0;
    cfg.on_event = count_event;
    cfg.event_ctx = &seen;
    struct error e = {0};
    struct cluster *c = cluster_new(&cfg, &e);
    ck_assert_int_eq(cluster_run(c, p2p, NULL, &e), 0);
    size_t n;
    cluster_events(c, &n);
    ck_assert_int_eq(seen, (int)n);
    ck_assert_uint_eq(n, 6);
    cluster_free(c);
}
END_TEST

static int fail_at_2(struct device *d, void *arg, struct error *e)
{
    /* Separate send and receive buffers: the right neighbour reads out[r] while this GPU's
     * receive writes in[r] (one buffer for both was a data race of the test's own making). */
    static char out[64][8], in[64][8];
    (void)arg;
    int n = dev_count(d), r = dev_rank(d);
    for (int s = 0; s < 100; s++) {
        if (dev_step(d, s, e))
            return ERR_RUN;
        if (dev_sendrecv(d, (r + 1) % n, out[r], 8, (r + n - 1) % n, in[r], 8, NULL, NULL, NULL, e))
            return ERR_RUN;
    }
    return 0;
}

START_TEST(failure_stops_everyone)
{
    struct cluster_config cfg;
    cluster_config_init(&cfg);
    cfg.gpus = 16;
    cfg.fail_gpu = 5;
    cfg.fail_step = 2;
    struct error e = {0};
    struct cluster *c = cluster_new(&cfg, &e);
    double t0 = clock_now();
    ck_assert_int_eq(cluster_run(c, fail_at_2, NULL, &e), ERR_RUN);
    ck_assert(clock_now() - t0 < 2);
    ck_assert_str_eq(e.msg, "GPU 5: failed at step 2 (injected with --fail)");
    cluster_free(c);
}
END_TEST

/* A barrier: nobody passes it before everybody has come (each GPU sees every GPU's mark), it
 * can be passed again, and a GPU that never comes is a deadline error, not a hang. */
struct meet {
    int marks[2];
};

static int meet_twice(struct device *d, void *arg, struct error *e)
{
    struct meet *m = arg;
    int n = dev_count(d);
    for (int round = 0; round < 2; round++) {
        __atomic_add_fetch(&m->marks[round], 1, __ATOMIC_RELAXED);
        int rc = dev_barrier(d, e);
        if (rc)
            return rc;
        if (__atomic_load_n(&m->marks[round], __ATOMIC_RELAXED) != n)
            return dev_fail(d, e, "passed barrier %d before every GPU came", round);
    }
    return 0;
}

static int one_stays_away(struct device *d, void *arg, struct error *e)
{
    (void)arg;
    return dev_rank(d) == 2 ? 0 : dev_barrier(d, e);
}

/* A cluster of n GPUs whose waits give up after deadline_s seconds. */
static struct cluster *impatient(int n, double deadline_s)
{
    struct cluster_config cfg;
    cluster_config_init(&cfg);
    cfg.gpus = n;
    cfg.deadline_s = deadline_s;
    return cluster_new(&cfg, NULL);
}

START_TEST(barrier_waits_for_everyone)
{
    struct error e = {0};
    /* The runs that must pass wait as long as their threads take to start and meet: a second,
     * five under a sanitizer (a fifth of a second failed under TSan on a busy machine, nine
     * threads starting); the run that must fail waits that long once. */
    struct cluster *c = impatient(9, harness_sanitized() ? 5 : 1);
    struct meet m = {{0, 0}};
    ck_assert_msg(cluster_run(c, meet_twice, &m, &e) == 0, "%s", e.msg);
    ck_assert_int_eq(m.marks[1], 9);
    ck_assert_int_eq(cluster_run(c, one_stays_away, NULL, &e), ERR_RUN);
    ck_assert_ptr_nonnull(strstr(e.msg, "at a barrier: deadline passed"));
    ck_assert_msg(cluster_run(c, meet_twice, &(struct meet){{0, 0}}, &e) == 0, "%s", e.msg);
    cluster_free(c);
}
END_TEST

static int wait_forever(struct device *d, void *arg, struct error *e)
{
    char b[4];
    (void)arg;
    if (dev_rank(d) == 1)
        return dev_recv(d, 0, b, 4, NULL, NULL, NULL, e);
    return 0;
}

START_TEST(deadline_is_an_error)
{
    struct error e = {0};
    struct cluster *c = impatient(2, 0.2); /* nothing is ever sent: only the deadline ends it */
    ck_assert_int_eq(cluster_run(c, wait_forever, NULL, &e), ERR_RUN);
    ck_assert_ptr_nonnull(strstr(e.msg, "GPU 1: waited"));
    ck_assert_ptr_nonnull(strstr(e.msg, "GPU 0"));
    cluster_free(c);
}
END_TEST

/* A send the simulator refuses leaves its request done, so that the caller's usual dev_wait
 * returns at once instead of waiting on whatever the request held before. */
static int refused_send(struct device *d, void *arg, struct error *e)
{
    struct dev_req req;
    struct error ignored;
    char b[4] = {0};
    (void)arg;
    memset(&req, 0xff, sizeof req);
    if (dev_isend(d, dev_count(d), b, 4, NULL, &req, &ignored) != ERR_INVAL)
        return dev_fail(d, e, "a send to a GPU that does not exist was accepted");
    return dev_wait(d, &req, e);
}

START_TEST(refused_send_needs_no_wait)
{
    struct cluster *c = make(2, 2);
    struct error e = {0};
    double t0 = clock_now();
    ck_assert_msg(cluster_run(c, refused_send, NULL, &e) == 0, "%s", e.msg);
    ck_assert(clock_now() - t0 < 5);
    cluster_free(c);
}
END_TEST

/* GPU 0 posts a send and returns without waiting for it (a misuse): a message of one run must
 * never be received by the next. (The request is static here so that, without the clean-up,
 * the next run would find it intact and take it; a real one lives in a stack that is gone.) */
static int post_and_leave(struct device *d, void *arg, struct error *e)
{
    static struct dev_req req;
    static char b[4] = {1, 2, 3, 4};
    (void)arg;
    if (dev_rank(d) == 0)
        return dev_isend(d, 1, b, 4, NULL, &req, e);
    return 0;
}

static int receive_one(struct device *d, void *arg, struct error *e)
{
    char b[4];
    (void)arg;
    if (dev_rank(d) == 1)
        return dev_recv(d, 0, b, 4, NULL, NULL, NULL, e);
    return 0;
}

START_TEST(a_run_leaves_no_message_behind)
{
    struct cluster_config cfg;
    cluster_config_init(&cfg);
    cfg.gpus = 2;
    cfg.deadline_s = 0.2;
    struct error e = {0};
    struct cluster *c = cluster_new(&cfg, &e);
    ck_assert_int_eq(cluster_run(c, post_and_leave, NULL, &e), 0);
    cluster_reset(c);
    ck_assert_int_eq(cluster_run(c, receive_one, NULL, &e), ERR_RUN);
    ck_assert_ptr_nonnull(strstr(e.msg, "GPU 1: waited"));
    cluster_free(c);
}
END_TEST

static int oom(struct device *d, void *arg, struct error *e)
{
    (void)arg;
    void *p = ledger_alloc(dev_ledger(d), MEM_ACTIVATIONS, dev_rank(d) == 2 ? 2 << 20 : 1024, e);
    if (!p)
        return e->code;
    ledger_free(dev_ledger(d), p);
    return 0;
}

START_TEST(out_of_memory_is_an_error_and_an_event)
{
    struct cluster *c = make(4, 4);
    struct error e = {0};
    ck_assert_int_eq(cluster_run(c, oom, NULL, &e), ERR_RUN);
    ck_assert_ptr_nonnull(strstr(e.msg, "GPU 2: out of memory"));
    size_t n, oom_events = 0;
    const struct event *ev = cluster_events(c, &n);
    for (size_t i = 0; i < n; i++)
        oom_events += ev[i].type == EV_OOM && ev[i].device == 2;
    ck_assert_uint_eq(oom_events, 1);
    cluster_free(c);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("sim");
    TCase *tc = tcase_create("sim");
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, ledger_accounts_and_refuses);
    tcase_add_test(tc, ledger_moves_bytes_between_categories);
    tcase_add_test(tc, ledger_large_buffers_are_zeroed_and_counted);
    tcase_add_test(tc, barrier_waits_for_everyone);
    tcase_add_test(tc, p2p_times);
    tcase_add_test(tc, streams_share_the_port_not_the_waits);
    tcase_add_test(tc, timed_as_another_model);
    tcase_add_test(tc, keyed_receives_take_their_message);
    tcase_add_test(tc, live_hook_sees_every_event);
    tcase_add_test(tc, failure_stops_everyone);
    tcase_add_test(tc, deadline_is_an_error);
    tcase_add_test(tc, refused_send_needs_no_wait);
    tcase_add_test(tc, a_run_leaves_no_message_behind);
    tcase_add_test(tc, out_of_memory_is_an_error_and_an_event);
    suite_add_tcase(s, tc);
    return harness_run(s);
}
