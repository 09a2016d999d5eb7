/* The simulated cluster: device threads, rendezvous sends with their simulated times,
 * stream clocks, deadlines and the cluster-wide abort (sim/cluster.h). */
#include "config.h"
#include "sim/cluster.h"

#include <math.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/error.h"
#include "base/rng.h"
#include "sim/port.h"

enum { REQ_POSTED = 1, REQ_TAKEN, REQ_DONE };

#define PORT_MAX 512

struct device {
    struct cluster *c;
    int rank;
    double clock[DEV_STREAMS];       /* one per stream; a stream's operations are in order */
    struct port_busy port[PORT_MAX]; /* the outgoing port's booked intervals, sorted */
    int nport;
    struct port_busy inport[PORT_MAX]; /* the incoming link's: each message's bytes, sorted */
    int ninport;
    struct ledger ledger;
    struct rng rng;
    pthread_cond_t cond;                     /* with c->lock */
    struct dev_req *inbox_head, *inbox_tail; /* posted to me; c->lock */
    uint64_t nsent, seq;
    int step;                    /* the last dev_step */
    int micro;                   /* the micro-batch its compute belongs to (dev_set_micro) */
    struct time_msg_scale timed; /* how its sends are timed (dev_time_msgs) */
    /* stream 0's waits by kind (dev_waited); each stream's kind of message it last carried */
    double wait_wire[TIME_MSGS], wait_peer[TIME_MSGS];
    enum time_msg stream_kind[DEV_STREAMS];
    double stream_post[DEV_STREAMS]; /* when what each stream last waited for was posted */
    double compute_end;              /* when its latest compute ended */
    struct dev_stats stats;
    struct event *ev;
    size_t nev, cap;
    struct error err;
    int ret;
    bool running; /* its thread was started (with a wire, only the local device's) */
    pthread_t thread;
    int (*fn)(struct device *, void *, struct error *);
    void *arg;
};

/* The latest of the device's stream clocks. */
static double clock_max(const struct device *d)
{
    double t = d->clock[0];
    for (int i = 1; i < DEV_STREAMS; i++)
        if (d->clock[i] > t)
            t = d->clock[i];
    return t;
}

static double clock_min(const struct device *d)
{
    double t = d->clock[0];
    for (int i = 1; i < DEV_STREAMS; i++)
        if (d->clock[i] < t)
            t = d->clock[i];
    return t;
}

/* Books one of a device's ports (its n intervals in busy) for dur seconds from the earliest
 * moment >= ready at which it is free for that long (a send that is ready early passes one
 * that waits for its data). A single stream books in order, so for it this is first come,
 * first served. */
static double port_book_in(const struct device *d, struct port_busy *busy, int *n, double ready,
                           double dur, int kind, int *queued)
{
    if (*n == PORT_MAX) { /* forget what no stream can reach any more */
        double floor = clock_min(d);
        int k = 0;
        while (k < *n && busy[k].t1 <= floor)
            k++;
        memmove(busy, busy + k, (size_t)(*n - k) * sizeof busy[0]);
        *n -= k;
    }
    int i;
    double t = port_earliest(busy, *n, ready, dur, &i);
    if (*n == PORT_MAX) { /* still full: book after everything */
        t = busy[*n - 1].t1 > ready ? busy[*n - 1].t1 : ready;
        memmove(busy, busy + 1, (size_t)(*n - 1) * sizeof busy[0]);
        *queued = busy[*n - 2].kind;
        busy[*n - 1] = (struct port_busy){t, t + dur, kind};
        return t;
    }
    *queued = i > 0 ? busy[i - 1].kind : kind; /* the booking it waited for, if it did */
    memmove(busy + i + 1, busy + i, (size_t)(*n - i) * sizeof busy[0]);
    busy[i] = (struct port_busy){t, t + dur, kind};
    (*n)++;
    return t;
}

/* The outgoing port: a send occupies it for α + m/β. */
static double port_book(struct device *d, double ready, double dur, int kind, int *queued)
{
    return port_book_in(d, d->port, &d->nport, ready, dur, kind, queued);
}

static int stream_of(const struct dev_tag *tag)
{
    return tag && tag->stream > 0 && tag->stream < DEV_STREAMS ? tag->stream : 0;
}

struct cluster {
    struct cluster_config cfg;
    int n;
    struct device *dev;
    pthread_mutex_t lock;
    int aborted; /* c->lock; read without it through __atomic */
    bool failed; /* c->lock: reason holds the first failure */
    struct error reason;
    struct event *merged;
    size_t nmerged;
    int at_barrier;       /* c->lock: devices waiting in dev_barrier */
    uint64_t barrier_gen; /* c->lock: barriers passed */
};

/* ---------------------------------------------------------------- events */

void dev_emit(struct device *d, struct event *ev)
{
    ev->device = d->rank;
    ev->seq = d->seq++;
    if (d->c->cfg.on_event)
        d->c->cfg.on_event(d->c->cfg.event_ctx, ev);
    if (!d->c->cfg.record_events)
        return;
    if (d->nev == d->cap) {
        size_t cap = d->cap ? 2 * d->cap : 256;
        struct event *p = realloc(d->ev, cap * sizeof *p);
        if (!p)
            return; /* the run goes on without the rest of its log */
        d->ev = p, d->cap = cap;
    }
    d->ev[d->nev++] = *ev;
}

static void ledger_hook(void *ctx, enum ledger_cat cat, int64_t delta, bool oom)
{
    struct device *d = ctx;
    struct event ev = {0};
    ev.type = oom ? EV_OOM : EV_MEMORY;
    ev.t = ev.t_end = clock_max(d);
    ev.category = cat;
    ev.delta = delta;
    ev.current = d->ledger.total;
    ev.cat_current = cat < MEM_CAT_COUNT ? d->ledger.current[cat] : 0;
    ev.peak = d->ledger.peak;
    ev.capacity = d->ledger.capacity;
    dev_emit(d, &ev);
}

/* ---------------------------------------------------------------- the cluster */

void cluster_config_init(struct cluster_config *c)
{
    memset(c, 0, sizeof *c);
    spec_default(&c->spec);
    c->gpus = 1;
    c->deadline_s = 60;
    c->fail_gpu = c->fail_step = -1;
}

struct cluster *cluster_new(const struct cluster_config *cfg, struct error *e)
{
    if (cfg->gpus < 1 || cfg->gpus > CLUSTER_MAX_GPUS) {
        error_set(e, ERR_INVAL, "the number of GPUs must be 1 to %d, not %d", CLUSTER_MAX_GPUS,
                  cfg->gpus);
        return NULL;
    }
    if (spec_check(&cfg->spec, e) != 0)
        return NULL;
    if (cfg->wire && (cfg->local < 0 || cfg->local >= cfg->gpus)) {
        error_set(e, ERR_INVAL, "GPU %d is not one of the %d GPUs", cfg->local, cfg->gpus);
        return NULL;
    }
    struct cluster *c = calloc(1, sizeof *c);
    struct device *dev = calloc((size_t)cfg->gpus, sizeof *dev);
    if (!c || !dev) {
        free(c);
        free(dev);
        error_set(e, ERR_NOMEM, "no memory for a cluster of %d GPUs", cfg->gpus);
        return NULL;
    }
    c->cfg = *cfg;
    if (!(c->cfg.deadline_s > 0))
        c->cfg.deadline_s = 60;
    c->n = cfg->gpus;
    c->dev = dev;
    pthread_mutex_init(&c->lock, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    for (int i = 0; i < c->n; i++) {
        struct device *d = &dev[i];
        d->c = c;
        d->rank = i;
        d->timed = (struct time_msg_scale){1, 1, 0, TIME_MSG_NONE};
        pthread_cond_init(&d->cond, &ca);
        rng_seed(&d->rng, cfg->seed, (uint64_t)i);
        ledger_init(&d->ledger, i, (uint64_t)cfg->spec.hbm_bytes);
        d->ledger.hook = ledger_hook;
        d->ledger.ctx = d;
    }
    pthread_condattr_destroy(&ca);
    return c;
}

void cluster_free(struct cluster *c)
{
    if (!c)
        return;
    for (int i = 0; i < c->n; i++) {
        pthread_cond_destroy(&c->dev[i].cond);
        free(c->dev[i].ev);
    }
    pthread_mutex_destroy(&c->lock);
    free(c->merged);
    free(c->dev);
    free(c);
}

void cluster_reset(struct cluster *c)
{
    for (int i = 0; i < c->n; i++) {
        struct device *d = &c->dev[i];
        memset(d->clock, 0, sizeof d->clock);
        memset(d->wait_wire, 0, sizeof d->wait_wire);
        memset(d->wait_peer, 0, sizeof d->wait_peer);
        memset(d->stream_kind, 0, sizeof d->stream_kind);
        memset(d->stream_post, 0, sizeof d->stream_post);
        d->compute_end = 0;
        d->nport = d->ninport = 0;
        d->nsent = d->seq = 0;
        memset(&d->stats, 0, sizeof d->stats);
        d->nev = 0;
    }
    free(c->merged);
    c->merged = NULL;
    c->nmerged = 0;
}

int cluster_size(const struct cluster *c)
{
    return c->n;
}

struct device *cluster_device(struct cluster *c, int rank)
{
    return rank >= 0 && rank < c->n ? &c->dev[rank] : NULL;
}

const struct cluster_spec *cluster_spec(const struct cluster *c)
{
    return &c->cfg.spec;
}

double cluster_time(const struct cluster *c)
{
    double t = 0;
    for (int i = 0; i < c->n; i++)
        if (clock_max(&c->dev[i]) > t)
            t = clock_max(&c->dev[i]);
    return t;
}

const struct event *cluster_events(struct cluster *c, size_t *n)
{
    size_t total = 0;
    for (int i = 0; i < c->n; i++)
        total += c->dev[i].nev;
    free(c->merged);
    c->merged = malloc((total ? total : 1) * sizeof *c->merged);
    c->nmerged = 0;
    if (c->merged) {
        for (int i = 0; i < c->n; i++) {
            memcpy(c->merged + c->nmerged, c->dev[i].ev, c->dev[i].nev * sizeof *c->merged);
            c->nmerged += c->dev[i].nev;
        }
        event_sort(c->merged, c->nmerged);
    }
    *n = c->nmerged;
    return c->merged;
}

/* Stops the run: the first reason is kept; every waiting device wakes. Needs c->lock. */
static void abort_locked(struct cluster *c, const struct error *why)
{
    if (!c->failed && why) {
        c->failed = true;
        c->reason = *why;
    }
    __atomic_store_n(&c->aborted, 1, __ATOMIC_RELEASE);
    for (int i = 0; i < c->n; i++)
        pthread_cond_broadcast(&c->dev[i].cond);
}

static void *device_main(void *arg)
{
    struct device *d = arg;
    d->ret = d->fn(d, d->arg, &d->err);
    if (d->ret != 0) {
        pthread_mutex_lock(&d->c->lock);
        if (d->err.code == 0)
            error_set(&d->err, d->ret, "GPU %d: failed (error %d)", d->rank, d->ret);
        abort_locked(d->c, &d->err);
        pthread_mutex_unlock(&d->c->lock);
    }
    return NULL;
}

int cluster_run(struct cluster *c, int (*fn)(struct device *d, void *arg, struct error *e),
                void *arg, struct error *e)
{
    c->aborted = 0;
    c->failed = false;
    c->at_barrier = 0;
    memset(&c->reason, 0, sizeof c->reason);
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old); /* signals belong to the main thread */
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, CLUSTER_STACK_BYTES);
    for (int i = 0; i < c->n; i++) {
        struct device *d = &c->dev[i];
        d->running = false;
        if (c->cfg.wire && i != c->cfg.local)
            continue; /* in another process */
        d->fn = fn, d->arg = arg, d->ret = 0;
        memset(&d->err, 0, sizeof d->err);
        if (pthread_create(&d->thread, &attr, device_main, d) != 0) {
            struct error why;
            error_set(&why, ERR_RUN, "could not start the thread of GPU %d", i);
            pthread_mutex_lock(&c->lock);
            abort_locked(c, &why);
            pthread_mutex_unlock(&c->lock);
            break;
        }
        d->running = true;
    }
    pthread_attr_destroy(&attr);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    for (int i = 0; i < c->n; i++)
        if (c->dev[i].running)
            pthread_join(c->dev[i].thread, NULL);
    /* every thread has ended: a request still queued (a sender that returned without its
     * dev_wait) points into a stack that is gone, and must not reach the next run */
    for (int i = 0; i < c->n; i++)
        c->dev[i].inbox_head = c->dev[i].inbox_tail = NULL;
    if (!c->failed)
        return 0;
    if (e)
        *e = c->reason;
    return c->reason.code ? c->reason.code : ERR_RUN;
}

/* ---------------------------------------------------------------- a device */

int dev_rank(const struct device *d)
{
    return d->rank;
}

int dev_count(const struct device *d)
{
    return d->c->n;
}

const struct cluster_spec *dev_spec(const struct device *d)
{
    return &d->c->cfg.spec;
}

struct ledger *dev_ledger(struct device *d)
{
    return &d->ledger;
}

struct rng *dev_rng(struct device *d)
{
    return &d->rng;
}

struct cluster *dev_cluster(struct device *d)
{
    return d->c;
}

struct dev_stats dev_stats(const struct device *d)
{
    return d->stats;
}

/* The part of [a, b) after `from` and before `to`. */
static double part(double a, double b, double from, double to)
{
    double lo = a > from ? a : from, hi = b < to ? b : to;
    return hi > lo ? hi - lo : 0;
}

/* Stream st's clock moves on to message m's arrival, if later: stream 0 counts the wait
 * (dev_waited) as m's kind's, but before its sender posted it as the peer's, and while it
 * queued for the sender's port as the kind of what held the port. */
static void raise_to(struct device *d, int st, const struct dev_req *m)
{
    double t = m->t_arrival, now = d->clock[st];
    d->stream_kind[st] = m->kind, d->stream_post[st] = m->t_post;
    if (t <= now)
        return;
    if (st == 0) {
        double peer = part(now, t, -INFINITY, m->t_post),
               queue = part(now, t, m->t_post, m->t_start);
        d->wait_peer[m->kind] += peer;
        d->wait_wire[m->queue_kind] += queue;
        d->wait_wire[m->kind] += t - now - peer - queue;
    }
    d->clock[st] = t;
}

/* Stream 0 waits for stream `on`: counted as what that one last carried, the part before it
 * was posted as the peer's. */
static void wait_stream(struct device *d, int on)
{
    double now = d->clock[0], t = d->clock[on];
    if (t > now) {
        double peer = part(now, t, -INFINITY, d->stream_post[on]);
        d->wait_peer[d->stream_kind[on]] += peer;
        d->wait_wire[d->stream_kind[on]] += t - now - peer;
        d->clock[0] = t;
    }
}

double dev_compute_end(const struct device *d)
{
    return d->compute_end;
}

void dev_waited(const struct device *d, double wire[TIME_MSGS], double peer[TIME_MSGS])
{
    memcpy(wire, d->wait_wire, sizeof d->wait_wire);
    memcpy(peer, d->wait_peer, sizeof d->wait_peer);
}

double dev_now(const struct device *d)
{
    return clock_max(d);
}

void dev_join(struct device *d)
{
    double t = clock_max(d);
    for (int i = 1; i < DEV_STREAMS; i++)
        if (d->clock[i] == t)
            wait_stream(d, i);
    for (int i = 0; i < DEV_STREAMS; i++)
        d->clock[i] = t;
}

void dev_advance(struct device *d, double seconds)
{
    dev_join(d);
    if (seconds > 0)
        for (int i = 0; i < DEV_STREAMS; i++)
            d->clock[i] += seconds;
}

void dev_compute(struct device *d, double flops, const char *name, int layer, int micro)
{
    struct event ev = {0};
    double dt = spec_compute_time(&d->c->cfg.spec, flops);
    dev_join(d);
    ev.type = EV_COMPUTE_BEGIN;
    ev.t = d->clock[0];
    ev.t_end = d->clock[0] + dt;
    ev.name = name, ev.layer = layer, ev.micro = micro >= 0 ? micro : d->micro, ev.flops = flops;
    dev_emit(d, &ev);
    dev_advance(d, dt);
    d->compute_end = d->clock[0];
    ev.type = EV_COMPUTE_END;
    ev.t = d->clock[0];
    dev_emit(d, &ev);
}

void dev_compute_on(struct device *d, int stream, double flops, const char *name, int layer,
                    int micro)
{
    struct event ev = {0};
    int st = stream_of(&(struct dev_tag){0, 0, NULL, stream});
    double dt = spec_compute_time(&d->c->cfg.spec, flops);
    ev.type = EV_COMPUTE_BEGIN;
    ev.stream = st;
    ev.t = d->clock[st];
    ev.t_end = d->clock[st] + dt;
    ev.name = name, ev.layer = layer, ev.micro = micro >= 0 ? micro : d->micro, ev.flops = flops;
    dev_emit(d, &ev);
    d->clock[st] += dt;
    d->compute_end = d->clock[st];
    ev.type = EV_COMPUTE_END;
    ev.t = d->clock[st];
    dev_emit(d, &ev);
}

void dev_set_micro(struct device *d, int micro)
{
    d->micro = micro;
}

void dev_sync(struct device *d, int a, int b)
{
    if (a < 0 || a >= DEV_STREAMS || b < 0 || b >= DEV_STREAMS)
        return;
    if (a == 0 || b == 0)
        wait_stream(d, a ? a : b);
    double t = d->clock[a] > d->clock[b] ? d->clock[a] : d->clock[b];
    d->clock[a] = d->clock[b] = t;
}

void dev_stream_wait(struct device *d, int waiter, int on)
{
    if (waiter < 0 || waiter >= DEV_STREAMS || on < 0 || on >= DEV_STREAMS)
        return;
    if (waiter == 0)
        wait_stream(d, on);
    if (d->clock[on] > d->clock[waiter])
        d->clock[waiter] = d->clock[on];
}

double dev_stream_now(const struct device *d, int stream)
{
    return stream >= 0 && stream < DEV_STREAMS ? d->clock[stream] : clock_max(d);
}

bool dev_aborted(const struct device *d)
{
    return __atomic_load_n(&d->c->aborted, __ATOMIC_ACQUIRE) != 0;
}

static int aborted_error(struct device *d, struct error *e)
{
    return error_set(e, ERR_RUN, "GPU %d: stopped: the run was aborted", d->rank);
}

static int vfail(struct device *d, struct error *e, const char *fmt, va_list ap)
{
    struct error why = {0};
    char msg[ERROR_MAX - 16];
    vsnprintf(msg, sizeof msg, fmt, ap);
    error_set(&why, ERR_RUN, "GPU %d: %s", d->rank, msg);
    struct event ev = {0};
    ev.type = EV_FAIL;
    ev.t = ev.t_end = clock_max(d);
    ev.name = "fail";
    ev.step = d->step;
    dev_emit(d, &ev);
    pthread_mutex_lock(&d->c->lock);
    abort_locked(d->c, &why);
    pthread_mutex_unlock(&d->c->lock);
    if (d->c->cfg.wire) /* the others are in other processes: they stop too */
        d->c->cfg.wire->fail(d->c->cfg.wire->ctx, &why);
    if (e)
        *e = why;
    return ERR_RUN;
}

int dev_fail(struct device *d, struct error *e, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int r = vfail(d, e, fmt, ap);
    va_end(ap);
    return r;
}

int dev_step(struct device *d, int step, struct error *e)
{
    if (dev_aborted(d))
        return aborted_error(d, e);
    d->step = step;
    if (d->rank == d->c->cfg.fail_gpu && step == d->c->cfg.fail_step)
        return dev_fail(d, e, "failed at step %d (injected with --fail)", step);
    return 0;
}

static void deadline_at(struct timespec *ts, double seconds)
{
    clock_gettime(CLOCK_MONOTONIC, ts);
    double whole = (double)(long)seconds;
    ts->tv_sec += (time_t)whole;
    ts->tv_nsec += (long)((seconds - whole) * 1e9);
    if (ts->tv_nsec >= 1000000000L)
        ts->tv_sec++, ts->tv_nsec -= 1000000000L;
}

/* m/β over the link between d and peer: the time its bytes (as timed) take to cross. */
static double link_bytes_time(const struct device *d, int peer, double bytes)
{
    const struct cluster_spec *s = &d->c->cfg.spec;
    bool same = spec_node(s, d->rank) == spec_node(s, peer);
    return bytes / (same ? s->beta_intra : s->beta_inter);
}

/* α (alphas of them) + m/β. */
static double link_cost(const struct device *d, int peer, double bytes, double alphas)
{
    const struct cluster_spec *s = &d->c->cfg.spec;
    bool same = spec_node(s, d->rank) == spec_node(s, peer);
    return alphas * (same ? s->alpha_intra : s->alpha_inter) + link_bytes_time(d, peer, bytes);
}

struct time_msg_scale dev_time_msgs(struct device *d, struct time_msg_scale s)
{
    struct time_msg_scale was = d->timed;
    d->timed = s;
    return was;
}

int dev_isend(struct device *d, int peer, const void *buf, size_t bytes, const struct dev_tag *tag,
              struct dev_req *req, struct error *e)
{
    return dev_isend_key(d, peer, 0, buf, bytes, tag, req, e);
}

int dev_isend_key(struct device *d, int peer, int key, const void *buf, size_t bytes,
                  const struct dev_tag *tag, struct dev_req *req, struct error *e)
{
    struct cluster *c = d->c;
    /* req is DONE before any refusal, so that the caller's dev_wait on it returns at once */
    memset(req, 0, sizeof *req);
    req->state = REQ_DONE;
    if (peer < 0 || peer >= c->n || peer == d->rank)
        return error_set(e, ERR_INVAL, "GPU %d: cannot send to GPU %d", d->rank, peer);
    req->buf = buf;
    req->bytes = bytes;
    req->key = key;
    req->from = d->rank;
    req->to = peer;
    req->timed_bytes = (d->timed.each > 0 ? d->timed.each : (double)bytes) * d->timed.bytes;
    req->alphas = d->timed.alphas;
    double cost = link_cost(d, peer, req->timed_bytes, req->alphas);
    req->t_post = d->clock[stream_of(tag)];
    req->kind = d->timed.kind;
    d->stream_kind[stream_of(tag)] = d->timed.kind, d->stream_post[stream_of(tag)] = req->t_post;
    int queued;
    req->t_start = port_book(d, req->t_post, cost, req->kind, &queued);
    req->queue_kind = (enum time_msg)queued;
    req->t_arrival = req->t_start + cost;
    req->msg = ((uint64_t)d->rank << 40) | d->nsent++;
    if (tag)
        req->tag = *tag;
    d->stats.bytes_sent += bytes;
    d->stats.msgs_sent++;

    struct event ev = {0};
    ev.type = EV_SEND;
    ev.stream = stream_of(tag);
    ev.t = req->t_start;
    ev.t_end = req->t_arrival;
    ev.peer = peer, ev.bytes = bytes, ev.msg = req->msg;
    ev.step = req->tag.step, ev.chunk = req->tag.chunk, ev.phase = req->tag.phase;
    dev_emit(d, &ev);

    if (c->cfg.wire) {
        int rc = c->cfg.wire->post(c->cfg.wire->ctx, req, e);
        if (rc == 0)
            req->state = REQ_POSTED;
        return rc;
    }
    pthread_mutex_lock(&c->lock);
    if (c->aborted) {
        pthread_mutex_unlock(&c->lock);
        req->state = REQ_DONE;
        return aborted_error(d, e);
    }
    struct device *to = &c->dev[peer];
    req->state = REQ_POSTED;
    if (to->inbox_tail)
        to->inbox_tail->next = req;
    else
        to->inbox_head = req;
    to->inbox_tail = req;
    pthread_cond_signal(&to->cond);
    pthread_mutex_unlock(&c->lock);
    return 0;
}

/* Removes req from d's queue; needs c->lock. */
static void unlink_req(struct device *d, struct dev_req *req)
{
    struct dev_req **pp = &d->inbox_head, *prev = NULL;
    while (*pp && *pp != req)
        prev = *pp, pp = &(*pp)->next;
    if (!*pp)
        return;
    *pp = req->next;
    if (d->inbox_tail == req)
        d->inbox_tail = prev;
    req->next = NULL;
}

int dev_wait(struct device *d, struct dev_req *req, struct error *e)
{
    struct cluster *c = d->c;
    struct timespec ts;
    int rc = 0;
    if (c->cfg.wire) {
        if (req->state != REQ_DONE && (rc = c->cfg.wire->done(c->cfg.wire->ctx, req, e)))
            return rc;
        req->state = REQ_DONE;
        goto arrived;
    }
    deadline_at(&ts, c->cfg.deadline_s);
    pthread_mutex_lock(&c->lock);
    while (req->state != REQ_DONE) {
        /* A message being copied is waited for even after an abort: the receiver is
         * reading this buffer and will finish without waiting for anything. */
        if (req->state == REQ_POSTED && (c->aborted || rc == ETIMEDOUT)) {
            bool deadline = !c->aborted;
            unlink_req(&c->dev[req->to], req);
            req->state = REQ_DONE;
            pthread_mutex_unlock(&c->lock);
            if (deadline)
                return dev_fail(d, e,
                                "waited %.0f s for GPU %d to take a message (step %d): deadline "
                                "passed",
                                c->cfg.deadline_s, req->to, req->tag.step);
            return aborted_error(d, e);
        }
        rc = pthread_cond_timedwait(&d->cond, &c->lock, &ts);
        if (rc == ETIMEDOUT && req->state == REQ_TAKEN)
            deadline_at(&ts, c->cfg.deadline_s);
    }
    pthread_mutex_unlock(&c->lock);
arrived:;
    int st = stream_of(&req->tag);
    raise_to(d, st, req);
    return 0;
}

static struct dev_req *find_from(struct device *d, int peer, int key)
{
    for (struct dev_req *r = d->inbox_head; r; r = r->next)
        if (r->from == peer && (key == 0 || r->key == key))
            return r;
    return NULL;
}

static int recv_match(struct device *d, int peer, int key, void *buf, size_t bytes,
                      const struct dev_tag *tag, dev_combine_fn combine, void *ctx,
                      struct error *e);

int dev_recv(struct device *d, int peer, void *buf, size_t bytes, const struct dev_tag *tag,
             dev_combine_fn combine, void *ctx, struct error *e)
{
    return recv_match(d, peer, 0, buf, bytes, tag, combine, ctx, e);
}

int dev_recv_key(struct device *d, int peer, int key, void *buf, size_t bytes,
                 const struct dev_tag *tag, struct error *e)
{
    return recv_match(d, peer, key, buf, bytes, tag, NULL, NULL, e);
}

/* The next message from peer (with key) taken between threads: its bytes copied or combined
 * into buf when they are the bytes expected, its arrival booked on d's incoming link; *got
 * holds its size, arrival, number and tag. */
static int take_local(struct device *d, int peer, int key, void *buf, size_t bytes,
                      const struct dev_tag *tag, dev_combine_fn combine, void *ctx,
                      struct dev_req *got, struct error *e)
{
    struct cluster *c = d->c;
    struct timespec ts;
    struct dev_req *req;
    deadline_at(&ts, c->cfg.deadline_s);
    pthread_mutex_lock(&c->lock);
    while (!(req = find_from(d, peer, key))) {
        if (c->aborted) {
            pthread_mutex_unlock(&c->lock);
            return aborted_error(d, e);
        }
        if (pthread_cond_timedwait(&d->cond, &c->lock, &ts) == ETIMEDOUT &&
            !(req = find_from(d, peer, key))) {
            pthread_mutex_unlock(&c->lock);
            return dev_fail(d, e,
                            "waited %.0f s for a message from GPU %d (step %d): deadline "
                            "passed",
                            c->cfg.deadline_s, peer, tag ? tag->step : -1);
        }
        if (req)
            break;
    }
    unlink_req(d, req);
    req->state = REQ_TAKEN;
    /* β is per GPU and direction: the message's bytes cross this device's incoming link, which
     * carries one message's bytes at a time, in the order this device takes them. A message
     * whose bytes would overlap another's arrives after them; the sender's dev_wait sees the
     * later arrival (only this thread books this link: deterministic). */
    double cross = link_bytes_time(d, peer, req->timed_bytes);
    if (cross > 0)
        req->t_arrival = port_book_in(d, d->inport, &d->ninport, req->t_arrival - cross, cross,
                                      req->kind, &(int){0}) +
                         cross;
    pthread_mutex_unlock(&c->lock);

    if (req->bytes == bytes && bytes > 0) {
        if (combine)
            combine(buf, req->buf, bytes, ctx);
        else
            memcpy(buf, req->buf, bytes);
    }
    *got = *req;

    pthread_mutex_lock(&c->lock);
    req->state = REQ_DONE; /* req belongs to the sender again from here */
    pthread_cond_broadcast(&c->dev[peer].cond);
    pthread_mutex_unlock(&c->lock);
    return 0;
}

/* The same over the wire: the header, the link booked as above, then the bytes, and the
 * sender told the arrival. */
static int take_wire(struct device *d, int peer, int key, void *buf, size_t bytes,
                     dev_combine_fn combine, void *ctx, struct dev_req *got, struct error *e)
{
    const struct dev_wire *w = d->c->cfg.wire;
    int rc = w->head(w->ctx, peer, key, got, e);
    if (rc)
        return rc;
    double cross = link_bytes_time(d, peer, got->timed_bytes);
    if (cross > 0)
        got->t_arrival = port_book_in(d, d->inport, &d->ninport, got->t_arrival - cross, cross,
                                      got->kind, &(int){0}) +
                         cross;
    if (got->bytes != bytes) /* said by the caller, which stops every process */
        return 0;
    return w->body(w->ctx, got, buf, combine, ctx, e);
}

static int recv_match(struct device *d, int peer, int key, void *buf, size_t bytes,
                      const struct dev_tag *tag, dev_combine_fn combine, void *ctx, struct error *e)
{
    struct cluster *c = d->c;
    if (peer < 0 || peer >= c->n || peer == d->rank)
        return error_set(e, ERR_INVAL, "GPU %d: cannot receive from GPU %d", d->rank, peer);
    struct dev_req got;
    int rc = c->cfg.wire ? take_wire(d, peer, key, buf, bytes, combine, ctx, &got, e)
                         : take_local(d, peer, key, buf, bytes, tag, combine, ctx, &got, e);
    if (rc)
        return rc;
    if (got.bytes != bytes)
        return dev_fail(d, e, "expected %zu bytes from GPU %d (step %d) but %zu came", bytes, peer,
                        tag ? tag->step : -1, got.bytes);
    int st = stream_of(tag);
    raise_to(d, st, &got);
    d->stats.bytes_received += bytes;
    if (combine)
        d->stats.bytes_combined += bytes;
    d->stats.msgs_received++;
    struct event ev = {0};
    ev.type = EV_RECV;
    ev.stream = st;
    ev.t = d->clock[st];
    ev.t_end = got.t_arrival;
    ev.peer = peer, ev.bytes = bytes, ev.msg = got.msg;
    ev.step = got.tag.step, ev.chunk = got.tag.chunk;
    ev.phase = got.tag.phase ? got.tag.phase : tag ? tag->phase : NULL;
    dev_emit(d, &ev);
    return 0;
}

int dev_barrier(struct device *d, struct error *e)
{
    struct cluster *c = d->c;
    struct timespec ts;
    if (c->cfg.wire) /* the others are not threads of this process */
        return error_set(e, ERR_INVAL, "GPU %d: a barrier of threads, with a wire", d->rank);
    deadline_at(&ts, c->cfg.deadline_s);
    pthread_mutex_lock(&c->lock);
    uint64_t gen = c->barrier_gen;
    if (++c->at_barrier == c->n) {
        c->at_barrier = 0;
        c->barrier_gen++;
        for (int i = 0; i < c->n; i++)
            pthread_cond_broadcast(&c->dev[i].cond);
    }
    while (c->barrier_gen == gen) {
        if (c->aborted) {
            pthread_mutex_unlock(&c->lock);
            return aborted_error(d, e);
        }
        if (pthread_cond_timedwait(&d->cond, &c->lock, &ts) == ETIMEDOUT && c->barrier_gen == gen) {
            pthread_mutex_unlock(&c->lock);
            return dev_fail(d, e, "waited %.0f s for the other GPUs at a barrier: deadline passed",
                            c->cfg.deadline_s);
        }
    }
    pthread_mutex_unlock(&c->lock);
    return 0;
}

int dev_sendrecv(struct device *d, int to, const void *sbuf, size_t sbytes, int from, void *rbuf,
                 size_t rbytes, const struct dev_tag *tag, dev_combine_fn combine, void *ctx,
                 struct error *e)
{
    struct dev_req req;
    int rc = dev_isend(d, to, sbuf, sbytes, tag, &req, e);
    if (rc != 0)
        return rc;
    rc = dev_recv(d, from, rbuf, rbytes, tag, combine, ctx, e);
    struct error we;
    int wrc = dev_wait(d, &req, rc ? &we : e);
    return rc ? rc : wrc;
}
