/* The pipeline Gantt chart as data, and what is measured on it (ui/ppgantt.h). */
#include "config.h"
#include "ui/ppgantt.h"

#include <math.h>
#include <string.h>

void ppg_reset(struct ppgantt *g, int stages)
{
    memset(g, 0, sizeof *g);
    g->stages = stages < PPG_STAGES ? stages : PPG_STAGES;
}

void ppg_add(struct ppgantt *g, int stage, const struct pp_done *op)
{
    if (stage < 0 || stage >= g->stages || g->n[stage] == PPG_OPS) {
        g->overflow = true;
        return;
    }
    g->ops[stage][g->n[stage]++] = *op;
}

void ppg_bubble(const struct ppgantt *g, struct pp_bubble *out)
{
    const struct pp_done *ops[PPG_STAGES];
    for (int s = 0; s < g->stages; s++)
        ops[s] = g->ops[s];
    predict_bubble(ops, g->n, g->stages, out);
}

int ppg_peak_in_flight(const struct ppgantt *g, int stage)
{
    int held = 0, peak = 0;
    for (int i = 0; stage >= 0 && stage < g->stages && i < g->n[stage]; i++) {
        held += sched_held_change(g->ops[stage][i].kind);
        peak = held > peak ? held : peak;
    }
    return peak;
}

bool ppg_same_order(const struct ppgantt *g, const struct sched *s)
{
    if (g->overflow || g->stages != s->p)
        return false;
    for (int st = 0; st < g->stages; st++) {
        if (g->n[st] != s->count[st])
            return false;
        for (int i = 0; i < g->n[st]; i++) {
            const struct pp_done *d = &g->ops[st][i];
            const struct sched_op *o = &s->ops[st][i];
            if (d->kind != o->kind || d->micro != o->micro || d->chunk != o->chunk)
                return false;
        }
    }
    return true;
}

/* When stage st's forward (kind SCHED_OP_F) or backward of micro-batch k in chunk c ended in out;
 * -1: not yet. */
static double ended(const struct ppgantt *out, const int *done, int st, enum sched_op_kind kind,
                    int k, int c)
{
    for (int i = 0; i < done[st]; i++)
        if (out->ops[st][i].kind == kind && out->ops[st][i].micro == k &&
            out->ops[st][i].chunk == c)
            return out->ops[st][i].end_s;
    return -1;
}

bool ppg_retime(const struct ppgantt *g, struct ppgantt *out)
{
    *out = *g;
    int done[PPG_STAGES] = {0}, left = 0, v = 1, last = g->stages - 1;
    double t0 = INFINITY;
    for (int s = 0; s < g->stages; s++) {
        left += g->n[s];
        if (g->n[s])
            t0 = fmin(t0, g->ops[s][0].start_s);
        for (int i = 0; i < g->n[s]; i++)
            v = g->ops[s][i].chunk + 1 > v ? g->ops[s][i].chunk + 1 : v;
    }
    /* each pass runs, on every stage, the operations whose input is ready: chunk c of stage s
     * is virtual stage c P + s (interleaved), whose forward input comes from the virtual stage
     * before (the last stage's chunk c - 1 for the first stage) and backward input from the
     * one after */
    for (bool moved = true; left > 0 && moved;) {
        moved = false;
        for (int s = 0; s < g->stages; s++)
            while (done[s] < g->n[s]) {
                const struct pp_done *op = &g->ops[s][done[s]];
                double ready = t0;
                int c = op->chunk;
                if (op->kind == SCHED_OP_F && s > 0)
                    ready = ended(out, done, s - 1, SCHED_OP_F, op->micro, c);
                else if (op->kind == SCHED_OP_F && c > 0)
                    ready = ended(out, done, last, SCHED_OP_F, op->micro, c - 1);
                else if (op->kind == SCHED_OP_B && s < last)
                    ready = ended(out, done, s + 1, SCHED_OP_B, op->micro, c);
                else if (op->kind == SCHED_OP_B && c + 1 < v)
                    ready = ended(out, done, 0, SCHED_OP_B, op->micro, c + 1);
                if (ready < 0)
                    break;
                double free = done[s] ? out->ops[s][done[s] - 1].end_s : t0;
                struct pp_done *o = &out->ops[s][done[s]];
                o->start_s = fmax(free, ready);
                o->end_s = o->start_s + (op->end_s - op->start_s);
                done[s]++, left--, moved = true;
            }
    }
    return left == 0;
}
