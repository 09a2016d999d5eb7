/* A running engine's events, taken and replayed by the window's run panels (ui/runfeed.h). */
#include "config.h"
#include "ui/runfeed.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "base/units.h"
#include "par/layout.h"
#include "ui/memui.h"

int runfeed_init(struct runfeed *f, struct error *e)
{
    memset(f, 0, sizeof *f);
    f->ring = malloc(RUNFEED_RING * sizeof *f->ring);
    if (!f->ring)
        return error_set(e, ERR_NOMEM, "out of memory");
    pthread_mutex_init(&f->mu, NULL);
    return 0;
}

void runfeed_fini(struct runfeed *f)
{
    pthread_mutex_destroy(&f->mu);
    free(f->ring);
    free(f->pend);
    free(f->rep);
}

void runfeed_reset(struct runfeed *f)
{
    pthread_mutex_lock(&f->mu);
    f->gen++; /* the runs before write nothing more */
    f->head = f->count = 0, f->lost = 0;
    memset(f->dev_step, 0, sizeof f->dev_step);
    f->failed = false;
    pthread_mutex_unlock(&f->mu);
    f->npend = f->nrep = f->irep = 0;
    f->dropped = 0;
    f->t0 = f->t1 = 0;
    memset(f->cur, 0, sizeof f->cur);
    memset(f->peak, 0, sizeof f->peak);
}

void runfeed_tap_open(struct runfeed *f, struct runfeed_tap *t)
{
    pthread_mutex_lock(&f->mu);
    t->feed = f;
    t->gen = f->gen;
    pthread_mutex_unlock(&f->mu);
}

void runfeed_on_event(void *ctx, const struct event *ev)
{
    const struct runfeed_tap *t = ctx;
    struct runfeed *f = t->feed;
    if (ev->device < 0 || ev->device >= RUNFEED_GPUS)
        return;
    if (ev->type != EV_MEMORY && ev->type != EV_SEND && ev->type != EV_PIPE_OP &&
        ev->type != EV_COMPUTE_BEGIN && ev->type != EV_TRAIN_STEP && ev->type != EV_FAIL &&
        ev->type != EV_OOM)
        return;
    pthread_mutex_lock(&f->mu);
    if (t->gen != f->gen) { /* a run the feed was reset after: stopping, not shown */
    } else if (ev->type == EV_FAIL || ev->type == EV_OOM) {
        f->failed = true;
    } else if (ev->type == EV_TRAIN_STEP) {
        f->dev_step[ev->device] = ev->step;
    } else if (f->count == RUNFEED_RING) {
        f->lost++;
    } else {
        struct runrec *r = &f->ring[(f->head + f->count++) % RUNFEED_RING];
        *r = (struct runrec){.t = ev->t,
                             .t_end = ev->t_end,
                             .step = f->dev_step[ev->device] + 1,
                             .seq = ev->seq,
                             .cat_current = ev->cat_current,
                             .bytes = ev->bytes,
                             .delta = ev->delta,
                             .phase = ev->type == EV_SEND ? ev->phase : NULL,
                             .device = (short)ev->device,
                             .category = (short)ev->category,
                             .micro = (short)ev->micro,
                             .chunk = (short)ev->chunk,
                             .peer = (short)ev->peer,
                             .type = (unsigned char)ev->type};
        if (ev->type == EV_PIPE_OP)
            r->kind = sched_op_kind_of(ev->name);
    }
    pthread_mutex_unlock(&f->mu);
}

static bool grow(struct runrec **a, size_t *cap, size_t need)
{
    if (need <= *cap)
        return true;
    size_t n = *cap ? *cap : 4096;
    while (n < need)
        n *= 2;
    struct runrec *b = realloc(*a, n * sizeof *b);
    if (!b)
        return false;
    *a = b, *cap = n;
    return true;
}

/* Moves the ring's records into the screen's own list. */
static void drain(struct runfeed *f)
{
    pthread_mutex_lock(&f->mu);
    if (grow(&f->pend, &f->cappend, f->npend + f->count)) {
        for (size_t i = 0; i < f->count; i++)
            f->pend[f->npend++] = f->ring[(f->head + i) % RUNFEED_RING];
        f->head = (f->head + f->count) % RUNFEED_RING;
        f->count = 0;
    }
    f->dropped = f->lost;
    pthread_mutex_unlock(&f->mu);
}

/* A memory record into its GPU's ledger: exact (its category's value) or by its change. */
static void apply(struct runfeed *f, const struct runrec *r, bool exact)
{
    if (r->type != EV_MEMORY || r->category < 0 || r->category >= MEM_CAT_COUNT)
        return;
    uint64_t *cur = &f->cur[r->device][r->category];
    if (exact) {
        *cur = r->cat_current;
    } else {
        int64_t v = (int64_t)*cur + r->delta;
        *cur = v > 0 ? (uint64_t)v : 0;
    }
    if (r->cat_current > f->peak[r->device][r->category])
        f->peak[r->device][r->category] = r->cat_current;
}

void runfeed_take_setup(struct runfeed *f)
{
    drain(f);
    for (size_t i = 0; i < f->npend; i++)
        apply(f, &f->pend[i], true);
    f->npend = 0;
}

bool runfeed_failed(struct runfeed *f)
{
    pthread_mutex_lock(&f->mu);
    bool failed = f->failed;
    pthread_mutex_unlock(&f->mu);
    return failed;
}

static int by_time(const void *a, const void *b)
{
    const struct runrec *x = a, *y = b;
    if (x->t != y->t)
        return x->t < y->t ? -1 : 1;
    if (x->device != y->device)
        return x->device - y->device;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

bool runfeed_begin_step(struct runfeed *f, long step)
{
    drain(f);
    size_t keep = 0;
    f->nrep = f->irep = 0;
    if (!grow(&f->rep, &f->caprep, f->npend))
        return false;
    for (size_t i = 0; i < f->npend; i++) {
        if (f->pend[i].step <= step)
            f->rep[f->nrep++] = f->pend[i];
        else
            f->pend[keep++] = f->pend[i];
    }
    f->npend = keep;
    qsort(f->rep, f->nrep, sizeof *f->rep, by_time);
    double t0 = 0, t1 = 0;
    for (size_t i = 0; i < f->nrep; i++) {
        const struct runrec *r = &f->rep[i];
        double end = r->t_end > r->t ? r->t_end : r->t;
        t0 = i == 0 || r->t < t0 ? r->t : t0;
        t1 = i == 0 || end > t1 ? end : t1;
    }
    f->t0 = t0, f->t1 = t1 > t0 ? t1 : t0;
    return true;
}

const struct runrec *runfeed_next(struct runfeed *f, double tc)
{
    if (f->irep >= f->nrep || f->rep[f->irep].t > tc)
        return NULL;
    const struct runrec *r = &f->rep[f->irep++];
    apply(f, r, false);
    return r;
}

void runfeed_end_step(struct runfeed *f)
{
    for (; f->irep < f->nrep; f->irep++)
        apply(f, &f->rep[f->irep], false);
    uint64_t last[RUNFEED_GPUS][MEM_CAT_COUNT];
    bool seen[RUNFEED_GPUS][MEM_CAT_COUNT];
    memset(seen, 0, sizeof seen);
    for (size_t i = 0; i < f->nrep; i++) {
        const struct runrec *r = &f->rep[i];
        if (r->type != EV_MEMORY || r->category < 0 || r->category >= MEM_CAT_COUNT)
            continue;
        if (!seen[r->device][r->category] || r->seq > last[r->device][r->category]) {
            seen[r->device][r->category] = true;
            last[r->device][r->category] = r->seq;
            f->cur[r->device][r->category] = r->cat_current;
        }
    }
}

const enum ledger_cat runfeed_part_cat[6] = {MEM_WEIGHTS,   MEM_GRADIENTS,   MEM_MASTER,
                                             MEM_OPTIMIZER, MEM_ACTIVATIONS, MEM_COMM};
_Static_assert(MEMUI_PARTS == 6, "the bars' parts are the ledger's six categories");

double runfeed_predicted_part(const struct memory_result *m, int i)
{
    double v[6] = {m->states.weights,   m->states.gradients, m->states.master,
                   m->states.optimizer, m->activations,      m->comm};
    return i >= 0 && i < 6 ? v[i] : 0;
}

int runfeed_verdict(const struct runfeed *f, const struct train_opts *o,
                    const struct memory_result *per_stage, int *gpu)
{
    for (int g = 0; g < o->gpus && g < RUNFEED_GPUS; g++) {
        struct layout_place pl;
        layout_place(o, g, 1, &pl);
        for (int i = 0; i < MEMUI_PARTS; i++)
            if ((double)f->peak[g][runfeed_part_cat[i]] !=
                llround(runfeed_predicted_part(&per_stage[pl.stage], i))) {
                *gpu = g;
                return i;
            }
    }
    return -1;
}

void runfeed_as_result(const uint64_t *cat, double capacity, struct memory_result *m)
{
    memset(m, 0, sizeof *m);
    m->states.weights = (double)cat[MEM_WEIGHTS];
    m->states.gradients = (double)cat[MEM_GRADIENTS];
    m->states.master = (double)cat[MEM_MASTER];
    m->states.optimizer = (double)cat[MEM_OPTIMIZER];
    m->activations = (double)cat[MEM_ACTIVATIONS];
    m->comm = (double)cat[MEM_COMM];
    m->total = m->states.weights + m->states.gradients + m->states.master + m->states.optimizer +
               m->activations + m->comm;
    m->capacity = capacity;
    m->fits = true;
}

void runfeed_bytes(char *buf, size_t n, double bytes, int w)
{
    char g[32];
    units_format_grouped(g, sizeof g, (unsigned long long)llround(bytes));
    if ((int)strlen(g) < w) {
        snprintf(buf, n, "%s", g);
        return;
    }
    double k = bytes / 1024;
    for (int d = 1; d >= 0; d--) {
        int len = snprintf(buf, n, "%.*fK", d, k);
        if (len < w)
            return;
    }
    snprintf(buf, n, "%.*fM", bytes < 100 * 1048576.0 ? 1 : 0, bytes / 1048576);
}
