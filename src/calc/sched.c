/* Pipeline schedules (GPipe, 1F1B, interleaved, ZB-H1, ZB-H2) built as data, their bubble and the
 * micro-batches each stage holds (calc/sched.h). */
#include "config.h"
#include "calc/sched.h"

#include <stdlib.h>
#include <string.h>

#include "base/error.h"

int sched_parse(const char *s, enum calc_schedule *out, struct error *e)
{
    if (s && !strcmp(s, "gpipe"))
        *out = SCHED_GPIPE;
    else if (s && !strcmp(s, "1f1b"))
        *out = SCHED_1F1B;
    else if (s && !strcmp(s, "interleaved"))
        *out = SCHED_INTERLEAVED;
    else if (s && !strcmp(s, "zb-h1"))
        *out = SCHED_ZBH1;
    else if (s && !strcmp(s, "zb-h2"))
        *out = SCHED_ZBH2;
    else if (s && !strcmp(s, "zbv"))
        *out = SCHED_ZBV;
    else
        return error_set(e, ERR_INVAL,
                         "'%s' is not a pipeline schedule (use gpipe, 1f1b, interleaved, zb-h1, "
                         "zb-h2 or zbv)",
                         s ? s : "");
    return 0;
}

const char *sched_name(enum calc_schedule k)
{
    static const char *const names[] = {
        [SCHED_GPIPE] = "gpipe", [SCHED_1F1B] = "1f1b",  [SCHED_INTERLEAVED] = "interleaved",
        [SCHED_ZBH1] = "zb-h1",  [SCHED_ZBH2] = "zb-h2", [SCHED_ZBV] = "zbv"};
    return (int)k < SCHED_KINDS ? names[k] : "interleaved";
}

bool sched_splits(enum calc_schedule k)
{
    return k == SCHED_ZBH1 || k == SCHED_ZBH2 || k == SCHED_ZBV;
}

int sched_vstage(enum calc_schedule k, int p, int stage, int chunk)
{
    if (k == SCHED_ZBV)
        return chunk ? 2 * p - 1 - stage : stage;
    return chunk * p + stage;
}

int sched_stage_of(enum calc_schedule k, int p, int vs)
{
    if (k == SCHED_ZBV)
        return vs < p ? vs : 2 * p - 1 - vs;
    return vs % p;
}

int sched_chunks(enum calc_schedule k, int chunks)
{
    return k == SCHED_ZBV ? 2 : k == SCHED_INTERLEAVED && chunks > 1 ? chunks : 1;
}

int sched_op_slots(enum calc_schedule k, enum sched_op_kind kind)
{
    if (kind == SCHED_OP_B && sched_splits(k))
        return SCHED_TB - SCHED_TW;
    return sched_op_info(kind)->slots;
}

int sched_wslots(const struct sched *s, int stage, int chunk)
{
    int held = 0, most = 0;
    for (int i = 0; sched_splits(s->kind) && i < s->count[stage]; i++) {
        const struct sched_op *op = &s->ops[stage][i];
        if (op->chunk == chunk && op->kind != SCHED_OP_F)
            held += op->kind == SCHED_OP_B ? 1 : -1;
        most = held > most ? held : most;
    }
    return most;
}

static const struct sched_op_info op_info[SCHED_OP_KINDS] = {
    [SCHED_OP_F] = {'F', "forward", SCHED_TF},
    [SCHED_OP_B] = {'B', "backward", SCHED_TB},
    [SCHED_OP_W] = {'W', "weight gradients", SCHED_TW},
};

const struct sched_op_info *sched_op_info(enum sched_op_kind k)
{
    return &op_info[k < SCHED_OP_KINDS ? k : SCHED_OP_F];
}

enum sched_op_kind sched_op_kind_of(const char *name)
{
    for (int k = 0; name && k < SCHED_OP_KINDS; k++)
        if (!strcmp(name, op_info[k].name) || (name[0] == op_info[k].letter && !name[1]))
            return (enum sched_op_kind)k;
    return SCHED_OP_KINDS;
}

int sched_held_change(enum sched_op_kind kind)
{
    return kind == SCHED_OP_F ? 1 : kind == SCHED_OP_B ? -1 : 0;
}

double sched_bubble_time(const struct sched *s, double compute)
{
    double pass = SCHED_TF + SCHED_TB, idle = (s->makespan - s->busy) / pass;
    return compute * idle / (s->busy / pass);
}

double sched_bubble_over_ideal(int p, int m, int v)
{
    return (p - 1.0) / ((double)v * m);
}

double sched_bubble_over_wall(int p, int m, int v)
{
    return (p - 1.0) / ((double)v * m + p - 1.0);
}

/* A stage's idle time over its busy time, schedule k's (Qi et al. 2024, §3.1), with F, B and W
 * of times f, b and w: the time it waits is (p - 1) of F and B, less what W fills (none in
 * 1F1B, one W in zb-h1, two in zb-h2, never below nothing). */
double sched_formula_times(enum calc_schedule k, int p, int m, int v, double f, double b, double w)
{
    int ws = k == SCHED_ZBH1 ? -1 : k == SCHED_ZBH2 || k == SCHED_ZBV ? -2 : 1;
    double idle = f + b + ws * w;
    if (idle < 0)
        idle = 0;
    return (p - 1.0) * idle / ((double)v * m * (f + b + w));
}

double sched_formula_over_ideal(enum calc_schedule k, int p, int m, int v)
{
    if (!sched_splits(k))
        return sched_bubble_over_ideal(p, m, v);
    return sched_formula_times(k, p, m, v, SCHED_TF, SCHED_TB - SCHED_TW, SCHED_TW);
}

double sched_zb_over_ideal(int p, int m, double f, double b, double w)
{
    return sched_formula_times(SCHED_ZBH1, p, m, 1, f, b, w);
}

double sched_formula_over_wall(enum calc_schedule k, int p, int m, int v)
{
    if (!sched_splits(k))
        return sched_bubble_over_wall(p, m, v);
    double r = sched_formula_over_ideal(k, p, m, v);
    return r / (1 + r);
}

int sched_check(enum calc_schedule k, int p, int m, int v, struct error *e)
{
    if (p < 1 || p > SCHED_MAX_STAGES)
        return error_set(e, ERR_INVAL, "stages %d: allowed 1 to %d", p, SCHED_MAX_STAGES);
    if (m < 1 || m > SCHED_MAX_MICRO)
        return error_set(e, ERR_INVAL, "micro-batches %d: allowed 1 to %d", m, SCHED_MAX_MICRO);
    if (k == SCHED_ZBV && (v != 2 || p < 2))
        return error_set(e, ERR_INVAL,
                         "zbv runs 2 chunks a stage in a V over 2 or more stages (chunks %d, "
                         "stages %d)",
                         v, p);
    if (k != SCHED_INTERLEAVED && k != SCHED_ZBV && v != 1)
        return error_set(e, ERR_INVAL,
                         "chunks %d: only the interleaved schedule has chunks "
                         "(use the interleaved schedule, or 1 chunk)",
                         v);
    if (k == SCHED_INTERLEAVED) {
        if (v < 2 || v > SCHED_MAX_CHUNKS)
            return error_set(e, ERR_INVAL, "chunks %d: interleaved needs 2 to %d chunks", v,
                             SCHED_MAX_CHUNKS);
        if (p < 2) /* one rule for train, memory, the panels and the chart */
            return error_set(e, ERR_INVAL,
                             "stages %d: interleaved needs 2 or more (one stage's chunks are "
                             "all its layers: its first chunk would hold the embedding and its "
                             "last the tied head's copy of it, one GPU twice)",
                             p);
        if (m % p)
            return error_set(e, ERR_INVAL,
                             "micro-batches %d: interleaved needs a multiple of stages %d", m, p);
    }
    return 0;
}

/* The order of stage s (operations without times). */
static int order(enum calc_schedule k, int p, int m, int v, int s, struct sched_op *ops)
{
    int n = 0;
    if (k == SCHED_GPIPE) {
        for (int i = 0; i < m; i++)
            ops[n++] = (struct sched_op){SCHED_OP_F, i, 0, 0, 0};
        for (int i = m - 1; i >= 0; i--)
            ops[n++] = (struct sched_op){SCHED_OP_B, i, 0, 0, 0};
        return n;
    }
    if (k == SCHED_1F1B) {
        int warm = p - s - 1 < m ? p - s - 1 : m;
        for (int i = 0; i < warm; i++)
            ops[n++] = (struct sched_op){SCHED_OP_F, i, 0, 0, 0};
        for (int i = 0; i < m - warm; i++) {
            ops[n++] = (struct sched_op){SCHED_OP_F, warm + i, 0, 0, 0};
            ops[n++] = (struct sched_op){SCHED_OP_B, i, 0, 0, 0};
        }
        for (int i = m - warm; i < m; i++)
            ops[n++] = (struct sched_op){SCHED_OP_B, i, 0, 0, 0};
        return n;
    }
    if (k == SCHED_ZBH1) { /* 1F1B's order, B in the backward's place, W s B's later */
        int warm = p - s - 1 < m ? p - s - 1 : m, w = 0;
        for (int i = 0; i < warm; i++)
            ops[n++] = (struct sched_op){SCHED_OP_F, i, 0, 0, 0};
        for (int b = 0; b < m; b++) {
            if (warm + b < m)
                ops[n++] = (struct sched_op){SCHED_OP_F, warm + b, 0, 0, 0};
            ops[n++] = (struct sched_op){SCHED_OP_B, b, 0, 0, 0};
            if (b + 1 - w > s)
                ops[n++] = (struct sched_op){SCHED_OP_W, w++, 0, 0, 0};
        }
        while (w < m)
            ops[n++] = (struct sched_op){SCHED_OP_W, w++, 0, 0, 0};
        return n;
    }
    /* Interleaved: the k-th forward is micro-batch (k / pv) p + k % p of chunk (k % pv) / p;
     * the k-th backward the same micro-batch of chunk v - 1 - (k % pv) / p. */
    int total = m * v, warm = 2 * (p - s - 1) + (v - 1) * p;
    if (warm > total)
        warm = total;
    int pv = p * v;
#define FWD(q) ((struct sched_op){SCHED_OP_F, (q) / pv * p + (q) % p, (q) % pv / p, 0, 0})
#define BWD(q) ((struct sched_op){SCHED_OP_B, (q) / pv * p + (q) % p, v - 1 - (q) % pv / p, 0, 0})
    for (int q = 0; q < warm; q++)
        ops[n++] = FWD(q);
    for (int q = 0; q < total - warm; q++) {
        ops[n++] = FWD(warm + q);
        ops[n++] = BWD(q);
    }
    for (int q = total - warm; q < total; q++)
        ops[n++] = BWD(q);
#undef FWD
#undef BWD
    return n;
}

/* zb-h2's orders, every stage's at once (calc/sched.h): slot by slot, each free stage runs a B
 * whose gradient is in, else a forward whose input is in while it holds fewer than 2p
 * micro-batches between their F and their W, else its oldest W; all three take a slot. Ends
 * with -1 for out of memory, else 0. */
static int zbh2_orders(int p, int m, struct sched_op **ops, int *count)
{
    enum { F, B, W };
    int *fin = malloc(sizeof *fin * 2 * (size_t)p * (size_t)m),
        *next = calloc(3 * (size_t)p, sizeof *next);
    if (!fin || !next) {
        free(fin);
        free(next);
        return -1;
    }
#define FIN(kind, st, k) fin[((kind)*p + (st)) * m + (k)] /* F or B's end slot */
#define NEXT(kind, st)   next[(kind)*p + (st)]
    for (int i = 0; i < 2 * p * m; i++)
        fin[i] = -1;
    for (int t = 0, left = p; left > 0; t++) {
        left = 0;
        for (int st = 0; st < p; st++) {
            int f = NEXT(F, st), b = NEXT(B, st), w = NEXT(W, st), ran[3] = {0};
            int up = st + 1 < p ? FIN(B, st + 1, b < m ? b : 0) : 0;
            if (b < f && FIN(F, st, b) <= t && (st == p - 1 || (up >= 0 && up <= t)))
                ran[B] = 1;
            else if (f < m && f - w < 2 * p &&
                     (st == 0 || (FIN(F, st - 1, f) >= 0 && FIN(F, st - 1, f) <= t)))
                ran[F] = 1;
            else if (w < b)
                ran[W] = 1;
            for (int kind = F; kind <= W; kind++)
                if (ran[kind]) {
                    int k = NEXT(kind, st)++;
                    ops[st][count[st]++] = (struct sched_op){(enum sched_op_kind)kind, k, 0, 0, 0};
                    if (kind != W)
                        FIN(kind, st, k) = t + 1;
                }
            left += NEXT(W, st) < m;
        }
    }
#undef FIN
#undef NEXT
    free(fin);
    free(next);
    return 0;
}

/* zbv's order for stage s (calc/sched.h), laid out for max(m, 2p - 1) micro-batches and the
 * ones beyond m dropped. */
static int zbv_order(int p, int m, int s, struct sched_op *ops)
{
    int n = 0, mm = m > 2 * p - 1 ? m : 2 * p - 1;
    int f[2] = {0}, b[2] = {0}, w[2] = {0}; /* the next micro-batch of each kind, per chunk */
#define PUT(kind, c, cnt)                                                                          \
    do {                                                                                           \
        int k_ = (cnt)[c]++;                                                                       \
        if (k_ < m)                                                                                \
            ops[n++] = (struct sched_op){(kind), k_, (c), 0, 0};                                   \
    } while (0)
    for (int i = 0; i < 2 * (p - s) - 1; i++)
        PUT(SCHED_OP_F, 0, f);
    for (int i = 0; i < s; i++) {
        PUT(SCHED_OP_F, 1, f);
        PUT(SCHED_OP_F, 0, f);
    }
    for (int i = 0; i < p - s; i++) {
        PUT(SCHED_OP_F, 1, f);
        PUT(SCHED_OP_B, 1, b);
        PUT(SCHED_OP_W, 1, w);
    }
    while (f[1] < f[0] || f[0] < mm) {
        if (f[0] < mm)
            PUT(SCHED_OP_F, 0, f);
        PUT(SCHED_OP_B, 0, b);
        PUT(SCHED_OP_W, 0, w);
        PUT(SCHED_OP_F, 1, f);
        PUT(SCHED_OP_B, 1, b);
        PUT(SCHED_OP_W, 1, w);
    }
    for (int i = 0; i < s; i++) {
        PUT(SCHED_OP_B, 0, b);
        PUT(SCHED_OP_B, 1, b);
    }
    for (int i = 0; i < p - s; i++) {
        PUT(SCHED_OP_B, 0, b);
        PUT(SCHED_OP_W, 0, w);
    }
    while (w[1] < b[1])
        PUT(SCHED_OP_W, 1, w);
    while (w[0] < b[0])
        PUT(SCHED_OP_W, 0, w);
#undef PUT
    return n;
}

void sched_free(struct sched *s)
{
    if (s->ops)
        for (int i = 0; i < s->p; i++)
            free(s->ops[i]);
    free(s->ops);
    free(s->count);
    free(s->peak_chunks);
    memset(s, 0, sizeof *s);
}

static int cmp_int(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

/* Most (micro-batch, chunk) pairs a stage holds at once: held from the start of a forward to
 * the end of the operation that releases it (sched_held_change); a release at t comes before a
 * forward starting at t. Each change is a time (twice the slot, one more for a forward, so
 * that the sort puts releases first) and its sign. */
static int peak_held(const struct sched_op *ops, int n)
{
    int *ev = malloc(sizeof *ev * 2 * (size_t)n), k = 0;
    if (!ev)
        return -1;
    for (int i = 0; i < n; i++) {
        int d = sched_held_change(ops[i].kind);
        if (d > 0)
            ev[k++] = 2 * ops[i].start + 1, ev[k++] = d;
        else if (d < 0)
            ev[k++] = 2 * (ops[i].start + ops[i].duration), ev[k++] = d;
    }
    qsort(ev, (size_t)k / 2, 2 * sizeof *ev, cmp_int);
    int held = 0, peak = 0;
    for (int i = 0; i < k; i += 2) {
        held += ev[i + 1];
        if (held > peak)
            peak = held;
    }
    free(ev);
    return peak;
}

int sched_build(enum calc_schedule k, int p, int m, int v, struct sched *out, struct error *e)
{
    int rc = sched_check(k, p, m, v, e);
    if (rc < 0)
        return rc;
    memset(out, 0, sizeof *out);
    *out = (struct sched){.kind = k, .p = p, .m = m, .v = v};
    int per = 3 * m * v, nv = p * v; /* at most a forward, a backward and a W per pair */
    out->count = calloc((size_t)p, sizeof *out->count);
    out->ops = calloc((size_t)p, sizeof *out->ops);
    out->peak_chunks = calloc((size_t)p, sizeof *out->peak_chunks);
    /* finish[kind][micro][virtual stage], -1 until scheduled */
    int *finish = malloc(sizeof *finish * SCHED_OP_KINDS * (size_t)m * (size_t)nv);
    int *next = calloc((size_t)p, sizeof *next), *free_at = calloc((size_t)p, sizeof *free_at);
    if (!out->count || !out->ops || !out->peak_chunks || !finish || !next || !free_at)
        goto nomem;
    for (int s = 0; s < p; s++) {
        out->ops[s] = malloc(sizeof **out->ops * (size_t)per);
        if (!out->ops[s])
            goto nomem;
        if (k == SCHED_ZBV)
            out->count[s] = zbv_order(p, m, s, out->ops[s]);
        else if (k != SCHED_ZBH2)
            out->count[s] = order(k, p, m, v, s, out->ops[s]);
    }
    if (k == SCHED_ZBH2 && zbh2_orders(p, m, out->ops, out->count) < 0)
        goto nomem;
    for (int i = 0; i < SCHED_OP_KINDS * m * nv; i++)
        finish[i] = -1;
#define FIN(kind, micro, vs) finish[(kind)*m * nv + (micro)*nv + (vs)]
    int left = 0;
    for (int s = 0; s < p; s++)
        left += out->count[s];
    while (left > 0) {
        int progress = 0;
        for (int s = 0; s < p; s++) {
            while (next[s] < out->count[s]) {
                struct sched_op *op = &out->ops[s][next[s]];
                int vs = sched_vstage(k, p, s, op->chunk), ready = 0;
                if (op->kind == SCHED_OP_F) {
                    if (vs > 0 && (ready = FIN(SCHED_OP_F, op->micro, vs - 1)) < 0)
                        break;
                } else if (op->kind == SCHED_OP_B) {
                    ready = FIN(SCHED_OP_F, op->micro, vs);
                    if (ready < 0)
                        break;
                    if (vs < nv - 1) {
                        int b = FIN(SCHED_OP_B, op->micro, vs + 1);
                        if (b < 0)
                            break;
                        ready = ready > b ? ready : b;
                    }
                } else if ((ready = FIN(SCHED_OP_B, op->micro, vs)) < 0) /* W after its B */
                    break;
                op->start = ready > free_at[s] ? ready : free_at[s];
                op->duration = sched_op_slots(k, op->kind);
                free_at[s] = op->start + op->duration;
                FIN(op->kind, op->micro, vs) = free_at[s];
                next[s]++, left--, progress++;
            }
        }
        if (!progress) { /* cannot happen for the orders above; never loop forever */
            rc = error_set(e, ERR_RUN, "pipeline schedule %s deadlocks at p=%d m=%d v=%d",
                           sched_name(k), p, m, v);
            goto fail;
        }
    }
#undef FIN
    for (int s = 0; s < p; s++) {
        if (free_at[s] > out->makespan)
            out->makespan = free_at[s];
        int busy = 0, n = out->count[s];
        for (int i = 0; i < n; i++)
            busy += out->ops[s][i].duration;
        int span = n ? free_at[s] - out->ops[s][0].start : 0;
        if (span - busy > out->span_idle)
            out->span_idle = span - busy;
        out->peak_chunks[s] = peak_held(out->ops[s], out->count[s]);
        if (out->peak_chunks[s] < 0)
            goto nomem;
    }
    for (int i = 0; i < out->count[0]; i++) /* every stage runs the same work */
        out->busy += out->ops[0][i].duration;
    out->bubble_over_ideal = (out->makespan - out->busy) / out->busy;
    out->bubble_over_wall = (out->makespan - out->busy) / out->makespan;
    free(finish);
    free(next);
    free(free_at);
    return 0;
nomem:
    rc = error_set(e, ERR_NOMEM, "out of memory building a pipeline schedule");
fail:
    free(finish);
    free(next);
    free(free_at);
    sched_free(out);
    return rc;
}
