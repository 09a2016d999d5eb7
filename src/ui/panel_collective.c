/* Lesson 3's panel: a real all-reduce (or all-to-all) among N device threads, replayed step by
 * step.
 *
 * The ring: each GPU a small box on an ellipse (layout_ring in src/ui/layout.c), GPU 0 at
 * the top and the ring running clockwise. Inside each box, its buffer's N chunks: how many
 * GPUs' contributions each holds so far (a digit or a letter, '#' once it holds all N), dim
 * while it holds only its own, highlighted where this step's data landed. On the link from
 * each GPU to the next, the chunk it sent in the step shown ("c3" and an arrow), highlighted;
 * inside the ring the phase, the step and the bytes each GPU sent. Below it the legend, the
 * bytes sent per GPU against the 2(N-1)/N x size line, and the α-β times. The α-β plot
 * (ui/collplot.h) of ring and tree time against the size (log axes, the crossover and the chosen
 * size marked) goes beside the ring when the ring as it likes to be leaves it PLOT_W columns, else
 * below it (the ring giving up rows down to what it needs), else it is left out. When no ring fits
 * (a small panel), for the other algorithms, and beyond 16 GPUs, a row per GPU instead (the
 * middle ones summarised beyond 16), the ring as one line above them (the tree drawn as a
 * tree) and the plot below if it fits. A tree's steps are its pipeline's stages (the sends
 * that arrive together); the double binary tree's chunks are tree 0's, then tree 1's; rhd's
 * are its 2^k blocks. In monochrome the counts and the arrows carry the picture; in ASCII
 * the arrows are > < v ^.
 *
 * Every step comes from a real run (comm/trial.h) on the chosen cluster preset, checked against
 * its reference: its send events are the animation (ui/collrun.h makes it). Up to
 * COLLRUN_REAL_MAX the run is of the chosen size itself; above it, of N x 256 fp32 elements, whose
 * link bandwidths are scaled by (its bytes / the chosen size), so that its simulated times and its
 * pipeline chunks are those of the chosen size: the same numbers as "scalelab collective --size
 * SIZE --steps". The legend under the picture says which: the size that ran for real, and what it
 * is timed as.
 *
 * An all-to-all (o) is drawn as rows: each GPU's receive buffer, a cell per block, the GPU it
 * came from once it has arrived ('.' before; its own block is there from the start), the
 * blocks that landed in the step shown highlighted; pairwise exchange's steps are its N-1
 * exchanges, direct's the moments its posted blocks arrive. Its bytes go against (N-1)/N x
 * size, its plot is pairwise against direct (the same time on one node: one curve).
 *
 * At 64 GPUs that run takes longer than a frame (64 threads on the host's cores), and the
 * plot's curves and crossover hundreds of replays of the cost model: a key never waits for
 * them. It changes the settings and asks for the run, which is made on a thread of its own
 * (ui/bgjob.h, ui/collrun.h) with the curves when the op, the GPUs or the cluster changed; the
 * panel says
 * "running" until a poll takes it (or the key's own frame, when the last run took under QUICK_S).
 * The α-β times (a few replays) are computed by the poll the window sends before each frame, so
 * keys pressed together cost them once. Keys pressed meanwhile only change what the next run
 * is for: one run at a time, for the latest settings. Drawing computes nothing: the curves
 * are kept for the op, GPUs and cluster they were made for, at COLLRUN_PLOT_GRID sizes, and
 * each column read between two of them.
 *
 * Keys: Left/Right (h/l) GPUs (2-64; the rows summarise beyond 16, and the chunks that do
 * not fit a row are counted), Up/Down (k/j) size (x2), o all-reduce or all-to-all, t ring,
 * tree, dbtree, rhd (all-to-all: pairwise, direct); c the cluster preset. Settings: gpus=N,
 * size=BYTES, op=allreduce|alltoall, algo=ring|tree|dbtree|rhd|pairwise|direct (pairwise and
 * direct are all-to-all's), cluster=PRESET, step=K. */
#include "config.h"

#include <curses.h>
#include <math.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "base/error.h"
#include "base/units.h"
#include "calc/preset.h"
#include "comm/coll.h"
#include "comm/cost.h"
#include "comm/trial.h"
#include "comm/tree.h"
#include "sim/cluster.h"
#include "ui/bgjob.h"
#include "ui/collplot.h"
#include "ui/collrun.h"
#include "ui/draw.h"
#include "ui/eventlog.h"
#include "ui/panel.h"

#define MAX_GPUS     64
#define MAX_CLUSTERS 8
#define ROWS_FULL    16
#define STEPS_PER_S  2.0   /* animation speed at 1x */
#define QUICK_S      0.015 /* a run made this quickly shows in the frame of the key that asked */

struct coll_panel {
    struct eventlog *log;
    int nclusters;
    struct cluster_spec clusters[MAX_CLUSTERS];
    struct coll_settings s, start;
    int start_step;
    /* the run for the settings, once made (have): none while it runs */
    bool have, ok;
    char err[ERROR_MAX];
    struct coll_hop *hops;
    int nhops, nsteps, nchunks;
    double real_bytes, sim_time, max_rel_error, tolerance;
    bool verified, scaled; /* scaled: real_bytes ran, timed as the size chosen */
    struct cost_result ring, tree, dbtree, rhd, pair, direct;
    bool times_due; /* those six, not computed yet for the settings */
    /* the plot's curves and the crossover, for op curves_op on curves_gpus GPUs of cluster
     * curves_cluster */
    enum cost_op curves_op;
    int curves_gpus, curves_cluster;
    double crossover, tr[COLLRUN_PLOT_GRID], tt[COLLRUN_PLOT_GRID];
    /* the run being made (for work->s, which may be settings left behind since) */
    struct bgjob *job;
    struct coll_run *work;
    bool quick;       /* the last run took under QUICK_S: a key may wait for the next */
    int steps_wanted; /* n's that came while the run was being made */
    /* the replay */
    int step;
    double acc;
    uint64_t mask[MAX_GPUS][COLLRUN_MAX_CHUNKS];
    bool fresh[MAX_GPUS][COLLRUN_MAX_CHUNKS];
    double sent[MAX_GPUS], now;
    const char *phase;
};

static struct cost_net net_of(const struct coll_panel *p, int gpus)
{
    struct cost_net net;
    coll_net(&p->clusters[p->s.cluster], gpus, &net);
    return net;
}

/* The state after p->step steps: replays the hops of the steps before, in the order they
 * were sent (a GPU never sends a chunk while one arrives into it, so this is causal). */
static void replay(struct coll_panel *p)
{
    int n = p->s.gpus;
    memset(p->fresh, 0, sizeof p->fresh);
    memset(p->sent, 0, sizeof p->sent);
    bool a2a = p->s.op == COST_ALLTOALL; /* a receive buffer: only its own block at first */
    for (int g = 0; g < n; g++)
        for (int c = 0; c < p->nchunks; c++)
            p->mask[g][c] = !a2a || c == g ? 1ull << g : 0;
    p->now = 0;
    p->phase = NULL;
    double scale = p->real_bytes > 0 ? p->s.size / p->real_bytes : 0;
    for (int i = 0; i < p->nhops; i++) {
        const struct coll_hop *h = &p->hops[i];
        if (h->step >= p->step)
            continue;
        uint64_t m = a2a ? 1ull << h->from : p->mask[h->from][h->chunk]; /* its own block */
        p->mask[h->to][h->chunk] = h->reduce ? p->mask[h->to][h->chunk] | m : m;
        p->sent[h->from] += h->bytes * scale;
        if (h->t_end > p->now)
            p->now = h->t_end;
        if (h->step == p->step - 1) {
            p->fresh[h->to][h->chunk] = true;
            p->phase = h->phase;
        }
    }
}

/* The α-β time of the algorithm shown (the same model as the simulated run). */
static double algo_time(const struct coll_panel *p)
{
    switch (p->s.algo) {
    case COST_TREE: return p->tree.time_s;
    case COST_DBTREE: return p->dbtree.time_s;
    case COST_RHD: return p->rhd.time_s;
    case COST_PAIRWISE: return p->pair.time_s;
    case COST_DIRECT: return p->direct.time_s;
    default: return p->ring.time_s;
    }
}

/* The bytes each GPU sends, over the size: 2(N-1)/N for an all-reduce, (N-1)/N an all-to-all. */
static double sent_share(const struct coll_panel *p)
{
    int n = p->s.gpus;
    return (p->s.op == COST_ALLTOALL ? 1.0 : 2.0) * (n - 1) / n;
}

static bool same_settings(const struct coll_settings *a, const struct coll_settings *b)
{
    return a->gpus == b->gpus && a->cluster == b->cluster && a->size == b->size && a->op == b->op &&
           a->algo == b->algo;
}

/* Whether curves made for settings s are the plot's for settings t. */
static bool curves_for(const struct coll_settings *s, const struct coll_settings *t)
{
    return s->op == t->op && s->gpus == t->gpus && s->cluster == t->cluster;
}

static bool have_curves(const struct coll_panel *p)
{
    struct coll_settings made = {
        .op = p->curves_op, .gpus = p->curves_gpus, .cluster = p->curves_cluster};
    return curves_for(&made, &p->s);
}

/* Starts making the run for the settings, unless one is being made (the poll that finds it
 * done starts the next, for the settings then: keys pressed meanwhile never queue runs). */
static void ask(struct coll_panel *p)
{
    if (p->work || p->have)
        return;
    struct coll_run *w = calloc(1, sizeof *w);
    if (!w) {
        p->ok = false;
        snprintf(p->err, sizeof p->err, "out of memory");
        return;
    }
    w->s = p->s;
    w->spec = p->clusters[p->s.cluster];
    w->curves = !have_curves(p);
    atomic_init(&w->stale, false);
    struct error e = {0};
    p->work = w;
    if (bgjob_start(&p->job, collrun_make, w, &e) != 0)
        collrun_make(w); /* no thread to spare: made here, the window waiting for it */
}

/* Whether the run being made is done (waiting up to wait_s for it): then its results are the
 * panel's if they are for its settings now, and the next run is asked for if not. */
static bool take(struct coll_panel *p, double wait_s)
{
    if (!p->work || (p->job && !bgjob_done(p->job, wait_s)))
        return false;
    bgjob_finish(p->job);
    struct coll_run *w = p->work;
    p->job = NULL, p->work = NULL;
    if (!atomic_load(&w->stale)) /* (one cut short says nothing of the next) */
        p->quick = w->took < QUICK_S;
    if (w->curves_done && curves_for(&w->s, &p->s)) {
        p->curves_op = w->s.op, p->curves_gpus = w->s.gpus, p->curves_cluster = w->s.cluster;
        p->crossover = w->crossover;
        memcpy(p->tr, w->tr, sizeof p->tr);
        memcpy(p->tt, w->tt, sizeof p->tt);
    }
    if (same_settings(&w->s, &p->s) && !p->have && !atomic_load(&w->stale)) {
        free(p->hops);
        p->have = true;
        p->ok = w->ok;
        snprintf(p->err, sizeof p->err, "%s", w->err);
        p->hops = w->hops, w->hops = NULL;
        p->nhops = w->nhops, p->nsteps = w->nsteps, p->nchunks = w->nchunks;
        p->real_bytes = w->real_bytes, p->sim_time = w->sim_time;
        p->max_rel_error = w->max_rel_error, p->tolerance = w->tolerance;
        p->verified = w->verified, p->scaled = w->scaled;
        if (p->step > p->nsteps)
            p->step = p->nsteps;
        if (p->steps_wanted > 0 && p->step < p->nsteps) {
            p->step = p->step + p->steps_wanted < p->nsteps ? p->step + p->steps_wanted : p->nsteps;
            eventlog_add(p->log, "collective: step %d of %d", p->step, p->nsteps);
        }
        p->steps_wanted = 0;
        replay(p);
    }
    free(w->hops);
    free(w);
    ask(p);
    return true;
}

/* The settings changed: the run asked for, the α-β times due; the picture says the run is
 * running until a poll takes it. */
static void compute(struct coll_panel *p)
{
    if (p->work && !same_settings(&p->work->s, &p->s)) /* the run being made is not wanted */
        atomic_store(&p->work->stale, true);
    free(p->hops);
    p->hops = NULL;
    p->nhops = p->nsteps = p->nchunks = 0;
    p->have = false;
    p->ok = true;
    p->err[0] = 0;
    p->steps_wanted = 0;
    p->times_due = true;
    p->real_bytes = 4.0 * (double)collrun_real_count(&p->s, &p->scaled); /* said while it runs */
    replay(p);
    ask(p);
}

/* The α-β times of the all-reduce's four algorithms and all-to-all's two for the settings,
 * when due: a few replays of the cost
 * model (a millisecond or two at 64 GPUs), once per poll rather than once per key, so that
 * keys pressed together cost them once (the window polls before it sends a frame). Whether
 * they were computed. */
static bool times(struct coll_panel *p)
{
    if (!p->times_due)
        return false;
    struct cost_net net = net_of(p, p->s.gpus);
    cost_collective(COST_ALLREDUCE, COST_RING, &net, p->s.size, &p->ring, NULL);
    cost_collective(COST_ALLREDUCE, COST_TREE, &net, p->s.size, &p->tree, NULL);
    cost_collective(COST_ALLREDUCE, COST_DBTREE, &net, p->s.size, &p->dbtree, NULL);
    cost_collective(COST_ALLREDUCE, COST_RHD, &net, p->s.size, &p->rhd, NULL);
    cost_collective(COST_ALLTOALL, COST_PAIRWISE, &net, p->s.size, &p->pair, NULL);
    cost_collective(COST_ALLTOALL, COST_DIRECT, &net, p->s.size, &p->direct, NULL);
    p->times_due = false;
    return true;
}

static void defaults(struct coll_settings *s)
{
    *s = (struct coll_settings){.gpus = 8,
                                .cluster = 0,
                                .size = 64.0 * 1024 * 1024,
                                .op = COST_ALLREDUCE,
                                .algo = COST_RING};
}

static int coll_init(void **state, const struct panel_env *env, struct error *e)
{
    struct coll_panel *p = calloc(1, sizeof *p);
    if (!p)
        return error_set(e, ERR_NOMEM, "out of memory");
    p->log = env->log;
    p->curves_gpus = -1;
    char list[512];
    preset_list(list, sizeof list, "clusters");
    /* h100-80gb first: the lessons' running example */
    if (preset_load_cluster(PRESET_CLUSTER, &p->clusters[0], NULL) == 0)
        p->nclusters = 1;
    for (char *tok = strtok(list, ", "); tok && p->nclusters < MAX_CLUSTERS;
         tok = strtok(NULL, ", "))
        if (strcmp(tok, PRESET_CLUSTER) != 0 &&
            preset_load_cluster(tok, &p->clusters[p->nclusters], NULL) == 0)
            p->nclusters++;
    if (p->nclusters == 0) {
        free(p);
        return error_set(e, ERR_IO, "no cluster presets found under assets/clusters");
    }
    defaults(&p->s);
    p->start = p->s;
    compute(p);
    *state = p;
    return 0;
}

static void coll_fini(void *state)
{
    struct coll_panel *p = state;
    if (p->work) /* what is left of it is not wanted: only a run already going is waited for */
        atomic_store(&p->work->stale, true);
    bgjob_finish(p->job); /* the run being made, whose thread writes into work */
    if (p->work)
        free(p->work->hops);
    free(p->work);
    free(p->hops);
    free(p);
}

/* "all-reduce" or "all-to-all". */
static const char *op_title(const struct coll_panel *p)
{
    return p->s.op == COST_ALLTOALL ? "all-to-all" : "all-reduce";
}

static void changed(struct coll_panel *p, const char *what)
{
    char b[32];
    p->step = 0;
    p->acc = 0;
    compute(p);
    if (p->quick && p->work && same_settings(&p->work->s, &p->s)) /* asked for by this key */
        take(p, QUICK_S); /* a run as quick as the last shows in the key's own frame */
    if (!strcmp(what, "size"))
        eventlog_add(p->log, "collective: size %s",
                     units_format_bytes(b, sizeof b, p->s.size, UNITS_BINARY));
    else if (!strcmp(what, "gpus"))
        eventlog_add(p->log, "collective: %d GPUs", p->s.gpus);
    else if (!strcmp(what, "algo") || !strcmp(what, "op"))
        eventlog_add(p->log, "collective: %s %s", cost_algo_name(p->s.algo), op_title(p));
    else
        eventlog_add(p->log, "collective: cluster %s", p->clusters[p->s.cluster].name);
}

/* A key at its knob's bound: said on the status line (once while it is the newest line). */
static int at_bound(struct coll_panel *p, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static int at_bound(struct coll_panel *p, const char *fmt, ...)
{
    char line[96];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    eventlog_add_once(p->log, "collective: %s", line);
    return PANEL_HANDLED | PANEL_REDRAW;
}

static int coll_on_key(void *state, int key)
{
    struct coll_panel *p = state;
    switch (key) {
    case KEY_RIGHT:
    case 'l':
        if (p->s.gpus >= MAX_GPUS)
            return at_bound(p, "GPUs stay %d, the most (2 to %d)", MAX_GPUS, MAX_GPUS);
        p->s.gpus++;
        changed(p, "gpus");
        break;
    case KEY_LEFT:
    case 'h':
        if (p->s.gpus <= 2)
            return at_bound(p, "GPUs stay %d, the fewest (2 to %d)", 2, MAX_GPUS);
        p->s.gpus--;
        changed(p, "gpus");
        break;
    case KEY_UP:
    case 'k':
        if (p->s.size >= 4.0 * 1024 * 1024 * 1024)
            return at_bound(p, "the size stays %d GiB, the largest (1 KiB to %d GiB)", 4, 4);
        p->s.size *= 2;
        changed(p, "size");
        break;
    case KEY_DOWN:
    case 'j':
        if (p->s.size <= 1024)
            return at_bound(p, "the size stays %d KiB, the smallest (1 KiB to %d GiB)", 1, 4);
        p->s.size /= 2;
        changed(p, "size");
        break;
    case 't': /* ring, tree, NCCL's double binary tree, recursive halving/doubling; or
               * all-to-all's pairwise exchange and direct */
        p->s.algo = p->s.algo == COST_RING       ? COST_TREE
                    : p->s.algo == COST_TREE     ? COST_DBTREE
                    : p->s.algo == COST_DBTREE   ? COST_RHD
                    : p->s.algo == COST_PAIRWISE ? COST_DIRECT
                    : p->s.algo == COST_DIRECT   ? COST_PAIRWISE
                                                 : COST_RING;
        changed(p, "algo");
        break;
    case 'o': /* all-reduce or all-to-all, each with its first algorithm */
        p->s.op = p->s.op == COST_ALLREDUCE ? COST_ALLTOALL : COST_ALLREDUCE;
        p->s.algo = p->s.op == COST_ALLTOALL ? COST_PAIRWISE : COST_RING;
        changed(p, "op");
        break;
    case 'c':
        p->s.cluster = (p->s.cluster + 1) % p->nclusters;
        changed(p, "cluster");
        break;
    default: return 0;
    }
    return PANEL_HANDLED | PANEL_REDRAW;
}

static int coll_on_event(void *state, const struct panel_event *ev)
{
    struct coll_panel *p = state;
    switch (ev->kind) {
    case PANEL_PLAY:
        if (p->step >= p->nsteps)
            p->step = 0; /* play again from the start */
        p->acc = 0;
        replay(p);
        /* while the run is being made, the ticks wait for it */
        return PANEL_REDRAW | (p->nsteps > 0 || !p->have ? PANEL_ANIMATE : 0);
    case PANEL_PAUSE: return 0;
    case PANEL_TICK:
        times(p);
        if (!p->have)
            return PANEL_ANIMATE | (take(p, 0) ? PANEL_REDRAW : 0);
        p->acc += ev->dt * STEPS_PER_S;
        if (p->acc >= 1 && p->step < p->nsteps) {
            int k = (int)p->acc;
            p->acc -= k;
            p->step = p->step + k > p->nsteps ? p->nsteps : p->step + k;
            replay(p);
            return PANEL_REDRAW | (p->step < p->nsteps ? PANEL_ANIMATE : 0);
        }
        return p->step < p->nsteps ? PANEL_ANIMATE : 0;
    case PANEL_STEP:
        if (!p->have) { /* taken once the run is made */
            p->steps_wanted++;
            return PANEL_REDRAW;
        }
        if (p->step < p->nsteps) {
            p->step++;
            replay(p);
            eventlog_add(p->log, "collective: step %d of %d (%s)", p->step, p->nsteps,
                         p->phase ? p->phase : "");
        }
        return PANEL_REDRAW;
    case PANEL_RESET:
        p->s = p->start;
        p->step = p->start_step;
        compute(p);
        return PANEL_REDRAW;
    case PANEL_POLL: {
        bool moved = times(p);
        moved |= take(p, 0);
        return (moved ? PANEL_REDRAW : 0) | (p->work ? PANEL_BUSY : 0);
    }
    }
    return 0;
}

static int coll_set(void *state, const char *name, const char *value, struct error *e)
{
    struct coll_panel *p = state;
    struct coll_settings s = p->s;
    long long v;
    int rc = 0, step = -1;
    if (!strcmp(name, "gpus")) {
        if ((rc = units_parse_int(value, 2, MAX_GPUS, &v, e)) == 0)
            s.gpus = (int)v;
    } else if (!strcmp(name, "size")) {
        double b;
        if ((rc = units_parse_bytes(value, 4.0 * 1024 * 1024 * 1024, &b, e)) == 0 && b < 1024)
            rc = error_set(e, ERR_INVAL, "the size must be at least 1 KiB");
        s.size = b;
    } else if (!strcmp(name, "op")) { /* its first algorithm, unless the algo is its own */
        if (!strcmp(value, "allreduce"))
            s.op = COST_ALLREDUCE, s.algo = s.algo >= COST_PAIRWISE ? COST_RING : s.algo;
        else if (!strcmp(value, "alltoall"))
            s.op = COST_ALLTOALL, s.algo = s.algo < COST_PAIRWISE ? COST_PAIRWISE : s.algo;
        else
            rc = error_set(e, ERR_INVAL, "op is allreduce or alltoall, not '%s'", value);
    } else if (!strcmp(name, "algo")) { /* an algorithm of the other op takes its op along */
        enum cost_algo a;
        if (cost_parse_algo(value, &a, NULL) == 0 && a != COST_AUTO)
            s.algo = a, s.op = a >= COST_PAIRWISE ? COST_ALLTOALL : COST_ALLREDUCE;
        else
            rc = error_set(e, ERR_INVAL,
                           "algo is ring, tree, dbtree, rhd (all-reduce), pairwise or direct "
                           "(all-to-all), not '%s'",
                           value);
    } else if (!strcmp(name, "cluster")) {
        int found = -1;
        for (int i = 0; i < p->nclusters; i++)
            if (!strcmp(p->clusters[i].name, value))
                found = i;
        if (found < 0)
            rc = error_set(e, ERR_INVAL, "no cluster preset '%s'", value);
        s.cluster = found;
    } else if (!strcmp(name, "step")) {
        if ((rc = units_parse_int(value, 0, 1 << 20, &v, e)) == 0)
            step = (int)v;
    } else {
        return error_set(e, ERR_INVAL,
                         "the collective panel knows gpus, size, op, algo, cluster and step, not "
                         "'%s'",
                         name);
    }
    if (rc < 0) {
        error_prefix(e, "%s", name);
        return ERR_INVAL;
    }
    p->s = p->start = s;
    if (step >= 0)
        p->start_step = step;
    p->step = p->start_step;
    compute(p);
    return 0;
}

/* ------------------------------------------------------------------ drawing */

/* The α-β plot (ui/collplot.h) of the curves kept for the settings, once they have come. */
static void draw_plot(const struct coll_panel *p, struct ui_canvas *c, int y0, int x0, int h, int w)
{
    if (!have_curves(p)) /* (the curves come with the run) */
        return;
    struct coll_plot pl = {
        .op = p->s.op, .size = p->s.size, .crossover = p->crossover, .t0 = p->tr, .t1 = p->tt};
    collplot_draw(&pl, c, y0, x0, h, w);
}

/* ---- the ring: GPUs in boxes on an ellipse (src/ui/layout.c, layout_ring) ---- */

#define BOX_H      3  /* a border, the chunks, a border */
#define LINK_W     4  /* "c15>" */
#define PLOT_W     48 /* the plot's columns beside the ring */
#define PLOT_H     12 /* the plot's rows at most, its axis and legend included */
#define PLOT_MIN   4  /* and at the least: two rows of curves, the axis, the legend */
#define PLOT_W_MIN 34 /* its columns at the least beside a tall ring */

/* A box's inside: the N chunks, and room for its name " GPU 7 " on the border. */
static int box_w(int n)
{
    return (n > 7 ? n : 7) + 2;
}

/* The largest ring of n boxes that fits in rows x cols, though never taller than it needs
 * (about a box and a gap per two GPUs, down each side) nor much wider than about three
 * times its height (a cell is about twice as high as wide, and the boxes are wide). Sets
 * *ur x *uc, the rect it takes. */
static bool fit_ring(int n, int rows, int cols, struct ring_layout *rl, int *ur, int *uc)
{
    int bw = box_w(n), want = 2 * n + 6;
    int top = rows < want ? rows : want;
    for (int r = top; r >= 2 * BOX_H + 1 && r >= top - 8; r -= 2) {
        int cw = bw + 3 * (r - BOX_H);
        int cc = cols < cw ? cols : cw;
        if (layout_ring(n, BOX_H, bw, LINK_W, r, cc, rl) == 0 ||
            (cc < cols && layout_ring(n, BOX_H, bw, LINK_W, r, cc = cols, rl) == 0)) {
            *ur = r;
            *uc = cc;
            return true;
        }
    }
    return false;
}

/* The arrow from (y, x) towards (y2, x2): horizontal, vertical or (in UTF-8) diagonal; a
 * cell is taken as twice as high as wide. */
static const char *arrow(int y, int x, int y2, int x2)
{
    double ax = (x2 - x) / 2.0, ay = y2 - y;
    if (theme_ascii())
        return fabs(ax) >= fabs(ay) ? (ax > 0 ? ">" : "<") : (ay > 0 ? "v" : "^");
    if (fabs(ax) > 2 * fabs(ay))
        return ax > 0 ? "\u2192" : "\u2190"; /* → ← */
    if (fabs(ay) > 2 * fabs(ax))
        return ay > 0 ? "\u2193" : "\u2191"; /* ↓ ↑ */
    if (ay > 0)
        return ax > 0 ? "\u2198" : "\u2199"; /* ↘ ↙ */
    return ax > 0 ? "\u2197" : "\u2196";     /* ↗ ↖ */
}

/* A count of contributions in one cell: 1-9, a-z (10-35), A-Z (36-61), '*' for 62 and 63
 * (64 GPUs at most), '#' once it holds all n. */
static char count_char(int k, int n)
{
    if (k >= n)
        return '#';
    return k < 10   ? (char)('0' + k)
           : k < 36 ? (char)('a' + k - 10)
           : k < 62 ? (char)('A' + k - 36)
                    : '*';
}

/* A cell of GPU g's buffer: its count of contributions (all-reduce), or the GPU whose block
 * it holds ('.' none yet: all-to-all). */
static char cell_char(const struct coll_panel *p, int g, int k)
{
    uint64_t m = p->mask[g][k];
    if (p->s.op == COST_ALLTOALL)
        return m ? count_char(__builtin_ctzll(m), p->s.gpus) : '.';
    return count_char(__builtin_popcountll(m), p->s.gpus);
}

/* Chunk k of GPU g: its count of contributions, and its look: where this step's data landed,
 * complete, its own data only, or partly reduced. */
static enum ui_role chunk_role(const struct coll_panel *p, int g, int k)
{
    int n = p->s.gpus, have = __builtin_popcountll(p->mask[g][k]);
    if (p->s.op == COST_ALLTOALL) /* arrived from another GPU, its own, or still to come */
        return p->fresh[g][k] ? ROLE_MOVED : have && k != g ? ROLE_GOOD : ROLE_DIM;
    return p->fresh[g][k] ? ROLE_MOVED : have >= n ? ROLE_GOOD : have == 1 ? ROLE_DIM : ROLE_WARN;
}

static void draw_ring(const struct coll_panel *p, struct ui_canvas *c, int oy, int ox,
                      const struct ring_layout *rl, int ur, int uc)
{
    const struct ui_glyphs *g = theme_glyphs();
    int n = p->s.gpus, bw = rl->bw;
    int moved[MAX_GPUS];
    for (int i = 0; i < n; i++)
        moved[i] = -1;
    for (int i = 0; i < p->nhops; i++)
        if (p->hops[i].step == p->step - 1)
            moved[p->hops[i].from] = p->hops[i].chunk;
    for (int i = 0; i < n; i++) {
        int y = oy + rl->y[i], x = ox + rl->x[i];
        int cx = canvas_text(c, y, x, ROLE_BORDER, g->tl);
        cx = canvas_printf(c, y, cx, ROLE_TITLE, " GPU %d ", i);
        while (cx < x + bw - 1)
            cx = canvas_text(c, y, cx, ROLE_BORDER, g->h);
        canvas_text(c, y, x + bw - 1, ROLE_BORDER, g->tr);
        canvas_text(c, y + 1, x, ROLE_BORDER, g->v);
        int pad = (bw - 2 - p->nchunks) / 2;
        for (int k = 0; k < p->nchunks; k++) {
            char cell[2] = {cell_char(p, i, k), 0};
            canvas_text(c, y + 1, x + 1 + pad + k, chunk_role(p, i, k), cell);
        }
        canvas_text(c, y + 1, x + bw - 1, ROLE_BORDER, g->v);
        cx = canvas_text(c, y + 2, x, ROLE_BORDER, g->bl);
        while (cx < x + bw - 1)
            cx = canvas_text(c, y + 2, cx, ROLE_BORDER, g->h);
        canvas_text(c, y + 2, x + bw - 1, ROLE_BORDER, g->br);
    }
    /* The links, clockwise: the chunk each carried in the step shown, or an arrow. */
    for (int i = 0; i < n; i++) {
        int j = (i + 1) % n;
        const char *a = arrow(rl->y[i], rl->x[i], rl->y[j], rl->x[j]);
        char label[16];
        if (p->step > 0 && moved[i] >= 0)
            snprintf(label, sizeof label, "c%d%s", moved[i], a);
        else
            snprintf(label, sizeof label, "%s", a);
        int lw = layout_text_width(label);
        canvas_text(c, oy + rl->ly[i], ox + rl->lx[i] + (LINK_W - lw + 1) / 2,
                    p->step > 0 ? ROLE_MOVED : ROLE_DIM, label);
    }
    /* Inside the ring, where nothing else is: the phase, the step, the bytes each GPU sent. */
    char lines[3][48], b[32];
    double sent = 0;
    for (int i = 0; i < n; i++)
        sent += p->sent[i];
    snprintf(lines[0], sizeof lines[0], "%s", p->step ? p->phase ? p->phase : "" : "start");
    snprintf(lines[1], sizeof lines[1], "step %d of %d", p->step, p->nsteps);
    snprintf(lines[2], sizeof lines[2], "%s sent/GPU",
             units_format_bytes(b, sizeof b, sent / n, UNITS_BINARY));
    for (int l = 0; l < 3; l++) {
        int w = layout_text_width(lines[l]), y = ur / 2 - 1 + l, x = (uc - w) / 2;
        bool clear = y >= 0 && y < ur;
        for (int i = 0; i < n && clear; i++)
            clear = !(y >= rl->y[i] && y < rl->y[i] + BOX_H && x - 1 < rl->x[i] + bw &&
                      rl->x[i] < x + w + 1) &&
                    !(y == rl->ly[i] && x - 1 < rl->lx[i] + LINK_W && rl->lx[i] < x + w + 1);
        if (clear)
            canvas_text(c, oy + y, ox + x, l == 0 ? ROLE_TITLE : ROLE_DIM, lines[l]);
    }
}

/* ---- rows: one GPU a line, for small panels, the tree, and more than 16 GPUs ---- */

/* GPU g's row at y: its first `cells` chunks (the number of the others after them when some
 * do not fit), its bar and the bytes it sent. */
static void draw_gpu(const struct coll_panel *p, struct ui_canvas *c, int y, int g, int cells,
                     int cellw, int barw)
{
    canvas_printf(c, y, 0, ROLE_DIM, "GPU %-2d", g);
    int x = 7;
    if (cells < p->nchunks) {
        for (int k = 0; k < cells; k++) {
            char cell[2] = {cell_char(p, g, k), 0};
            canvas_text(c, y, x++, chunk_role(p, g, k), cell);
        }
        canvas_printf(c, y, x, ROLE_DIM, "+%d", p->nchunks - cells);
        return;
    }
    for (int k = 0; k < p->nchunks; k++) {
        char cell[3] = {cell_char(p, g, k), ' ', 0};
        if (cellw == 1)
            cell[1] = 0;
        canvas_text(c, y, x, chunk_role(p, g, k), cell);
        x += cellw;
    }
    double line = sent_share(p) * p->s.size;
    if (barw >= 4 && (p->s.algo == COST_RING || p->s.op == COST_ALLTOALL)) {
        canvas_bar(c, y, x + 1, barw, p->sent[g], line);
        x += barw + 2;
    }
    char b[32];
    canvas_text(c, y, x + 1, ROLE_TEXT, units_format_bytes(b, sizeof b, p->sent[g], UNITS_BINARY));
}

/* The tree drawn as a tree: a row per level, each GPU at its in-order place (GPU g in column
 * 4g), a '/' after a left child and a '\\' before a right child pointing up to its parent.
 * Returns the row after it; draws nothing if it does not fit the width. */
static int draw_tree(const struct coll_panel *p, struct ui_canvas *c, int y)
{
    int n = p->s.gpus, depth = cost_log2(n), cw = 4;
    if (n > ROWS_FULL || n * cw + 2 > c->r.w)
        return y;
    for (int g = 0; g < n; g++) {
        struct tree_node t;
        tree_node(n, 0, -1, g, &t);
        int level = 0, parent = t.parent;
        for (int q = g; parent >= 0; level++) {
            struct tree_node u;
            q = parent;
            tree_node(n, 0, -1, q, &u);
            parent = u.parent;
        }
        char label[8];
        if (t.parent < 0)
            snprintf(label, sizeof label, " %d", g);
        else if (t.parent > g)
            snprintf(label, sizeof label, " %d/", g);
        else
            snprintf(label, sizeof label, "\\%d", g);
        canvas_text(c, y + level, g * cw, t.parent < 0 ? ROLE_TITLE : ROLE_TEXT, label);
    }
    return y + depth + 1;
}

/* The ring as a line with the chunk each link carried, then a row per GPU; returns the row
 * after them. room: the rows the tree's drawing may take. */
static int draw_rows(const struct coll_panel *p, struct ui_canvas *c, int y, int room)
{
    int w = c->r.w, n = p->s.gpus;
    if (p->s.algo == COST_RING) {
        int moved[MAX_GPUS];
        for (int g = 0; g < n; g++)
            moved[g] = -1;
        for (int i = 0; i < p->nhops; i++)
            if (p->hops[i].step == p->step - 1)
                moved[p->hops[i].from] = p->hops[i].chunk;
        int need = 0;
        for (int g = 0; g < n; g++)
            need += 8 + (g >= 10);
        int x = 0;
        if (need + 2 > w && w < 64) {
            room++; /* 80x24: the ring's order alone says nothing the rows do not; its row goes
                     * to the GPUs and the plot */
        } else if (n <= ROWS_FULL && need + 2 <= w && p->step > 0) {
            for (int g = 0; g < n; g++) {
                x = canvas_printf(c, y, x, ROLE_TEXT, "%d", g);
                x = canvas_printf(c, y, x, ROLE_SELECTED, " -c%d-> ", moved[g]);
            }
            canvas_text(c, y++, x, ROLE_TEXT, "0");
        } else {
            int g = 0;
            for (; g < n && g < ROWS_FULL && x < w - 22; g++)
                x = canvas_printf(c, y, x, ROLE_DIM, "%d -> ", g);
            /* the GPUs that do not fit are named as skipped, never dropped silently */
            if (g >= n)
                canvas_text(c, y++, x, ROLE_DIM, "0");
            else if (g == n - 1)
                canvas_printf(c, y++, x, ROLE_DIM, "%d -> 0", n - 1);
            else
                canvas_printf(c, y++, x, ROLE_DIM, "... -> %d -> 0", n - 1);
        }
    } else if (p->s.algo == COST_TREE) {
        canvas_printf(c, y++, 0, ROLE_DIM,
                      w < 64 ? "tree of depth %d, %d chunk%s: reduce, broadcast"
                             : "binary tree of depth %d, %d pipeline chunk%s: reduce up, then "
                               "broadcast",
                      cost_log2(n), p->nchunks, p->nchunks == 1 ? "" : "s");
        int gpu_rows = n <= ROWS_FULL ? n : ROWS_FULL;
        if (room - 1 - gpu_rows >= cost_log2(n) + 1)
            y = draw_tree(p, c, y);
    } else if (p->s.algo == COST_DBTREE) {
        canvas_printf(c, y++, 0, ROLE_DIM,
                      w < 64 ? "2 trees, half each: chunks 0-%d, %d-%d"
                             : "two binary trees, half the data each: chunks 0-%d, then %d-%d",
                      p->nchunks / 2 - 1, p->nchunks / 2, p->nchunks - 1);
    } else if (p->s.algo == COST_PAIRWISE) {
        canvas_text(c, y++, 0, ROLE_DIM,
                    w < 64
                        ? "step k: GPU i sends its block to GPU i+k"
                        : "pairwise: in step k GPU i sends GPU i+k its block, gets one from i-k");
    } else if (p->s.algo == COST_DIRECT) {
        canvas_text(c, y++, 0, ROLE_DIM,
                    w < 64 ? "every block posted at once, to i+1, i+2, ..."
                           : "direct: every GPU posts its N-1 blocks at once, to i+1, i+2, ...");
    } else {
        canvas_printf(c, y++, 0, ROLE_DIM,
                      w < 64 ? "halving, then doubling: %d blocks"
                             : "recursive halving (reduce-scatter), then doubling: %d blocks",
                      p->nchunks);
    }
    int cellw = p->nchunks * 2 + 30 <= w ? 2 : 1;
    int barw = w - 7 - p->nchunks * cellw - 14;
    barw = barw > 20 ? 20 : barw;
    /* the chunks that fit (64 GPUs' 64 in 80x24's panel do not): the others counted */
    int cells = 7 + p->nchunks * cellw <= w ? p->nchunks : (w - 7 - 4) / cellw;
    /* a row per GPU, up to 16 and as the room allows; else the first ones, a line naming
     * those left out, the last one */
    int fit = room - 1 < ROWS_FULL ? room - 1 : ROWS_FULL;
    if (n <= fit) {
        for (int g = 0; g < n; g++)
            draw_gpu(p, c, y++, g, cells, cellw, barw);
    } else {
        int first = fit - 2 > 1 ? fit - 2 : 1;
        for (int g = 0; g < first; g++)
            draw_gpu(p, c, y++, g, cells, cellw, barw);
        canvas_printf(c, y++, 0, ROLE_DIM, "... GPUs %d to %d ...", first, n - 2);
        draw_gpu(p, c, y++, n - 1, cells, cellw, barw);
    }
    return y;
}

/* The rows draw_counts takes in a panel w columns wide: the same figures in fewer words on
 * fewer rows when it is narrow (80x24). */
static int counts_rows(int w)
{
    return w >= 80 ? 4 : w >= 64 ? 5 : 4;
}

/* "verified", "NOT verified", or "running" while the run is being made; and its look. */
static const char *run_state(const struct coll_panel *p, enum ui_role *role)
{
    *role = !p->have ? ROLE_WARN : p->verified ? ROLE_DIM : ROLE_ERROR;
    return !p->have ? "running" : p->verified ? "verified" : "NOT verified";
}

/* The same rows for an all-to-all: the legend (what a cell shows), the bytes sent against
 * (N-1)/N x size, pairwise's and direct's α-β times, the bandwidths ((N-1)/N, nccl-tests'). */
static void draw_counts_a2a(const struct coll_panel *p, struct ui_canvas *c, int y)
{
    int n = p->s.gpus, w = c->r.w;
    char b1[32], b2[32], t0[32], t1[32], ran[3][160];
    double line = sent_share(p) * p->s.size, sent = 0;
    for (int g = 0; g < n; g++)
        sent += p->sent[g];
    enum ui_role role;
    const char *ver = run_state(p, &role);
    units_format_bytes(b1, sizeof b1, p->real_bytes, UNITS_BINARY);
    units_format_bytes(b2, sizeof b2, p->s.size, UNITS_BINARY);
    if (p->scaled)
        snprintf(ran[0], sizeof ran[0],
                 "cell: the GPU whose block it holds (. to come); ran %s (%s), timed as %s", b1,
                 ver, b2);
    else
        snprintf(ran[0], sizeof ran[0],
                 "cell: the GPU whose block it holds (. to come); a real run of %s, %s", b1, ver);
    snprintf(ran[1], sizeof ran[1], "cell: the block's GPU (. to come), %s", ver);
    snprintf(ran[2], sizeof ran[2], "cell: whose block, %s", ver);
    int k = 0;
    while (k < 2 && layout_text_width(ran[k]) > w)
        k++;
    canvas_text(c, y++, 0, role, ran[k]);
    units_format_bytes(b1, sizeof b1, sent / n, UNITS_BINARY);
    units_format_bytes(b2, sizeof b2, line, UNITS_BINARY);
    int x = canvas_printf(c, y, 0, ROLE_TEXT,
                          w < 64 ? "sent/GPU %s of (N-1)/N S = %s"
                                 : "sent per GPU so far %s of (N-1)/N x size = %s",
                          b1, b2);
    if (w - x - 2 >= 8)
        canvas_bar(c, y, x + 2, w - x - 2 > 24 ? 24 : w - x - 2, sent / n, line);
    y++;
    units_format_seconds(t0, sizeof t0, p->pair.time_s);
    units_format_seconds(t1, sizeof t1, p->direct.time_s);
    double d = p->direct.time_s - p->pair.time_s;
    const char *verdict = fabs(d) <= 1e-9 * p->pair.time_s ? "the same"
                          : d < 0                          ? "direct is faster"
                                                           : "pairwise is faster";
    canvas_printf(c, y++, 0, ROLE_TEXT,
                  w < 64 ? "pairwise %s, direct %s: %s" : "α-β: pairwise %s, direct %s: %s", t0, t1,
                  verdict);
    if (counts_rows(w) == 5)
        canvas_printf(c, y++, 0, ROLE_DIM, "each GPU keeps 1 of its %d blocks and sends %d", n,
                      n - 1);
    double f = cost_busbw_factor(COST_ALLTOALL, n), alg = cost_algbw(p->s.size, algo_time(p));
    if (w < 64)
        canvas_printf(c, y, 0, ROLE_TEXT, "algbw %.1f, busbw %.1f GB/s", alg / 1e9, alg * f / 1e9);
    else
        canvas_printf(c, y, 0, ROLE_TEXT, "%s: algbw %.1f GB/s, busbw %.1f GB/s (x %.3g)",
                      cost_algo_name(p->s.algo), alg / 1e9, alg * f / 1e9, f);
}

/* The legend, the bytes sent against 2(N-1)/N x size, the α-β times (ring and tree, then
 * dbtree and rhd, on the same row when it is wide), the bandwidths as nccl-tests reports
 * them: counts_rows rows (an all-to-all's: draw_counts_a2a). */
static void draw_counts(const struct coll_panel *p, struct ui_canvas *c, int y)
{
    if (p->s.op == COST_ALLTOALL) {
        draw_counts_a2a(p, c, y);
        return;
    }
    int n = p->s.gpus;
    char b1[32], b2[32];
    double line = 2.0 * (n - 1) / n * p->s.size;
    double sent = 0;
    for (int g = 0; g < n; g++)
        sent += p->sent[g];
    bool narrow = c->r.w < 64; /* 80x24: the same figures, fewer words */
    if (narrow) {              /* four rows: what each GPU sent, the α-β times, the bandwidths */
        units_format_bytes(b1, sizeof b1, sent / n, UNITS_BINARY);
        units_format_bytes(b2, sizeof b2, line, UNITS_BINARY);
        canvas_printf(c, y++, 0, ROLE_TEXT, "sent/GPU %s of 2(N-1)/N S = %s", b1, b2);
        char t[4][32];
        units_format_seconds(t[0], sizeof t[0], p->ring.time_s);
        units_format_seconds(t[1], sizeof t[1], p->tree.time_s);
        units_format_seconds(t[2], sizeof t[2], p->dbtree.time_s);
        units_format_seconds(t[3], sizeof t[3], p->rhd.time_s);
        canvas_printf(c, y++, 0, ROLE_TEXT, "ring %s, tree %s: %s wins", t[0], t[1],
                      p->tree.time_s < p->ring.time_s ? "tree" : "ring");
        int x = canvas_printf(c, y, 0, ROLE_DIM, "dbtree %s, rhd %s", t[2], t[3]);
        canvas_text(c, y++, x + 2,
                    !p->have      ? ROLE_WARN
                    : p->verified ? ROLE_GOOD
                                  : ROLE_ERROR,
                    !p->have      ? "running"
                    : p->verified ? "verified"
                                  : "NOT verified");
        double alg = cost_algbw(p->s.size, algo_time(p));
        x = canvas_printf(c, y, 0, ROLE_TEXT, "algbw %.1f, busbw %.1f GB/s", alg / 1e9,
                          alg * cost_busbw_factor(COST_ALLREDUCE, n) / 1e9);
        if (p->scaled) { /* what ran for real, the times being the named size's */
            units_format_bytes(b1, sizeof b1, p->real_bytes, UNITS_BINARY);
            canvas_printf(c, y, x, ROLE_DIM, "; ran %s", b1);
        }
        return;
    }
    /* what ran for real, and what its times are scaled to: the longest form that fits */
    char ran[4][160], b3[32];
    enum ui_role role;
    const char *ver = run_state(p, &role);
    units_format_bytes(b1, sizeof b1, p->real_bytes, UNITS_BINARY);
    units_format_bytes(b3, sizeof b3, p->s.size, UNITS_BINARY);
    if (p->scaled) {
        snprintf(ran[0], sizeof ran[0],
                 "chunk: contributions held (# = all %d); ran %s for real (%s), timed as %s", n, b1,
                 ver, b3);
        snprintf(ran[1], sizeof ran[1], "# = all %d summed; ran %s (%s), timed as %s", n, b1, ver,
                 b3);
        snprintf(ran[2], sizeof ran[2], "#: all %d; ran %s, timed as %s", n, b1, b3);
    } else {
        snprintf(ran[0], sizeof ran[0],
                 "chunk: contributions held (# = all %d); a real run of %s, %s", n, b1, ver);
        snprintf(ran[1], sizeof ran[1], "# = all %d summed; a real run of %s, %s", n, b1, ver);
        snprintf(ran[2], sizeof ran[2], "#: all %d; ran %s, %s", n, b1, ver);
    }
    snprintf(ran[3], sizeof ran[3], "#: all %d summed", n);
    int k = 0;
    while (k < 3 && layout_text_width(ran[k]) > c->r.w)
        k++;
    canvas_text(c, y++, 0, role, ran[k]);
    units_format_bytes(b1, sizeof b1, sent / n, UNITS_BINARY);
    units_format_bytes(b2, sizeof b2, line, UNITS_BINARY);
    int x = canvas_printf(c, y, 0, ROLE_TEXT,
                          narrow ? "sent/GPU %s of 2(N-1)/N S = %s"
                                 : "sent per GPU so far %s of 2(N-1)/N x size = %s",
                          b1, b2);
    int barw = c->r.w - x - 2;
    if (barw >= 8)
        canvas_bar(c, y, x + 2, barw > 24 ? 24 : barw, sent / n, line);
    y++;
    units_format_seconds(b1, sizeof b1, p->ring.time_s);
    units_format_seconds(b2, sizeof b2, p->tree.time_s);
    int x3 =
        canvas_printf(c, y, 0, ROLE_TEXT,
                      narrow ? "ring %s, tree %s: %s wins" : "α-β: ring %s, tree %s: %s is faster",
                      b1, b2, p->tree.time_s < p->ring.time_s ? "tree" : "ring");
    /* lesson 3 step 7's other two, from the same model: on the same row when it is wide */
    units_format_seconds(b1, sizeof b1, p->dbtree.time_s);
    units_format_seconds(b2, sizeof b2, p->rhd.time_s);
    if (counts_rows(c->r.w) == 4) {
        canvas_printf(c, y++, x3, ROLE_DIM, "; dbtree %s, rhd %s", b1, b2);
    } else {
        y++;
        canvas_printf(c, y++, 0, ROLE_DIM, narrow ? "dbtree %s, rhd %s" : "also: dbtree %s, rhd %s",
                      b1, b2);
    }
    /* nccl-tests: algbw = S/t; busbw = algbw x 2(N-1)/N, the rate each link really ran at */
    double t = algo_time(p);
    double alg = cost_algbw(p->s.size, t), bus = alg * cost_busbw_factor(COST_ALLREDUCE, n);
    if (narrow)
        canvas_printf(c, y, 0, ROLE_TEXT, "algbw %.1f, busbw %.1f GB/s", alg / 1e9, bus / 1e9);
    else
        canvas_printf(c, y, 0, ROLE_TEXT, "%s: algbw %.1f GB/s, busbw %.1f GB/s (x %.3g)",
                      cost_algo_name(p->s.algo), alg / 1e9, bus / 1e9,
                      cost_busbw_factor(COST_ALLREDUCE, n));
}

/* Where things go: a ring of boxes with the plot beside it when the panel is wide enough,
 * else with the plot below, else alone; rows (and the plot below if it fits) when the ring
 * does not fit, for the tree, and beyond 16 GPUs. */
static void coll_draw(const void *state, struct ui_canvas *c)
{
    const struct coll_panel *p = state;
    int w = c->r.w, h = c->r.h, n = p->s.gpus, y = 0;
    char b1[32], b2[32], b3[32];
    const struct cluster_spec *cl = &p->clusters[p->s.cluster];
    units_format_bytes(b1, sizeof b1, p->s.size, UNITS_BINARY);
    /* GPUs past one node use the inter-node link where a message crosses: say so */
    int nodes = cl->gpus_per_node > 0 ? (n + cl->gpus_per_node - 1) / cl->gpus_per_node : 1;
    char where[32] = "";
    if (nodes > 1)
        snprintf(where, sizeof where, " on %d nodes", nodes);
    /* the longest form that fits: nothing is cut, the cluster's name goes first */
    char head[3][256];
    const char *algo = cost_algo_name(p->s.algo);
    snprintf(head[0], sizeof head[0], "%s %s, %d GPUs%s, %s fp32, %s", algo, op_title(p), n, where,
             b1, cl->name);
    snprintf(head[1], sizeof head[1], "%s, %d GPUs%s, %s, %s", algo, n, where, b1, cl->name);
    snprintf(head[2], sizeof head[2], "%s, %d GPUs%s, %s", algo, n, where, b1);
    int hi = 0;
    while (hi < 2 && layout_text_width(head[hi]) > w)
        hi++;
    canvas_text(c, y++, 0, ROLE_TITLE, head[hi]);
    if (!p->ok) {
        canvas_wrap(c, y + 1, ROLE_ERROR, p->err, 0);
        return;
    }
    if (!p->have) { /* the run is being made: what needs none of it, the plot once it has come */
        if (w < 64)
            canvas_printf(c, y++, 0, ROLE_WARN, "step 0: %d thread-GPUs running it", n);
        else
            canvas_printf(c, y++, 0, ROLE_WARN, "step 0: the %s is running on %d thread-GPUs",
                          op_title(p), n);
        y++;
        draw_counts(p, c, y);
        y += counts_rows(w) + (w >= 64);
        int ph = h - y;
        draw_plot(p, c, y, 0, ph > PLOT_H ? PLOT_H : ph, w);
        return;
    }
    units_format_seconds(b2, sizeof b2, p->now);
    units_format_seconds(b3, sizeof b3, p->sim_time);
    if (p->step == 0)
        canvas_printf(c, y++, 0, ROLE_TEXT,
                      w < 64 ? "step 0 of %d: own data (%s)"
                             : "step 0 of %d: each GPU holds its own data (%s)",
                      p->nsteps, w < 64 ? "space, n" : "space plays, n steps");
    else {
        char line[2][128];
        snprintf(line[0], sizeof line[0], "step %d of %d: %s, t = %s of %s", p->step, p->nsteps,
                 p->phase ? p->phase : "", b2, b3);
        snprintf(line[1], sizeof line[1], "step %d/%d %s, t %s/%s", p->step, p->nsteps,
                 p->phase ? p->phase : "", b2, b3);
        canvas_text(c, y++, 0, ROLE_TEXT, line[layout_text_width(line[0]) > w]);
    }

    int avail = h - y - counts_rows(w) - 1; /* the counts below, and a blank row before them */
    struct ring_layout rl;
    int ur = 0, uc = 0;
    if (p->s.algo == COST_RING && n <= LAYOUT_RING_MAX) {
        /* beside, when the ring as it likes to be leaves the plot PLOT_W columns */
        if (fit_ring(n, avail, w, &rl, &ur, &uc) && uc + 3 + PLOT_W <= w) {
            int ph = ur > PLOT_H + 2 ? ur : PLOT_H + 2; /* as tall as the ring */
            ph = ph < avail ? ph : avail;
            draw_ring(p, c, y + (ph > ur ? (ph - ur) / 2 : 0), 0, &rl, ur, uc);
            draw_plot(p, c, y + (ur > ph ? (ur - ph) / 2 : 0), uc + 3, ph, w - uc - 3);
            draw_counts(p, c, y + (ur > ph ? ur : ph) + 1);
            return;
        }
        /* below: the plot takes PLOT_H rows, or fewer (not under PLOT_MIN) for the ring */
        for (int ph = PLOT_H; ph >= PLOT_MIN; ph--)
            if (avail - ph - 1 >= 2 * BOX_H + 1 && fit_ring(n, avail - ph - 1, w, &rl, &ur, &uc)) {
                draw_ring(p, c, y, (w - uc) / 2, &rl, ur, uc);
                draw_plot(p, c, y + ur + 1, 0, ph, w);
                draw_counts(p, c, y + ur + 1 + ph + 1);
                return;
            }
        /* beside again, a narrower ring and the plot in fewer columns (a tall ring) */
        if (w - 3 - PLOT_W_MIN > 0 && fit_ring(n, avail, w - 3 - PLOT_W_MIN, &rl, &ur, &uc)) {
            int ph = avail < PLOT_H ? avail : PLOT_H;
            draw_ring(p, c, y, 0, &rl, ur, uc);
            draw_plot(p, c, y + (ur > ph ? (ur - ph) / 2 : 0), uc + 3, ph, w - uc - 3);
            draw_counts(p, c, y + (ur > ph ? ur : ph) + 1);
            return;
        }
    }
    /* rows, the counts, and the plot below them: a row per GPU as far as the rows go (the
     * plot keeps PLOT_MIN), the tree's drawing where it fits too */
    int left = h - y - counts_rows(w) - PLOT_MIN - (w >= 64); /* a blank row when wide */
    y = draw_rows(p, c, y, left);
    draw_counts(p, c, y);
    y += counts_rows(w) + (w >= 64);
    int ph = h - y;
    draw_plot(p, c, y, 0, ph > PLOT_H ? PLOT_H : ph, w);
}

static const struct panel_key keys[] = {
    {"h/l Left/Right", "fewer or more GPUs (2-64)", "GPUs"},
    {"k/j Up/Down", "double or halve the size", "size"},
    {"o", "all-reduce or all-to-all", "op"},
    {"t",
     "ring, tree, double binary tree, recursive halving/doubling (all-to-all: pairwise, direct)",
     "algo"},
    {"c", "next cluster preset", "cluster"},
    {NULL, NULL, NULL},
};

const struct panel_ops panel_collective = {
    .name = "collective",
    .title = "Collectives, step by step",
    .about = "A real all-reduce among N device threads, step by step (up to 1 MiB of the size "
             "named; above, N x 1 KiB timed as that size, which the legend says): each GPU's "
             "chunks and how many GPUs' contributions they hold, reduce-scatter then all-gather; "
             "the bytes each GPU sent against 2(N-1)/N x size; and the α-β time of ring and tree "
             "against the size. o turns it into an all-to-all: each GPU's blocks arriving from "
             "every other, pairwise or direct, against (N-1)/N x size.",
    .init = coll_init,
    .fini = coll_fini,
    .on_key = coll_on_key,
    .on_event = coll_on_event,
    .set = coll_set,
    .draw = coll_draw,
    .plays = true,
    .keys = keys,
};
