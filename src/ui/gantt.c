/* The pipeline Gantt charts' columns: linear, stretched, or in order (ui/gantt.h). */
#include "config.h"
#include "ui/gantt.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

/* Whether a linear axis gives every item a column of its own on its row; fills the items'
 * columns. */
static bool linear(struct gantt_item *it, int n, int w, double t0, double t1)
{
    double span = t1 - t0;
    for (int i = 0; i < n; i++) {
        /* times on whole columns (slots) land on them despite the rounding of the quotient */
        int c0 = (int)floor((it[i].start - t0) / span * w + 1e-9);
        int c1 = (int)ceil((it[i].end - t0) / span * w - 1e-9) - 1;
        it[i].c0 = c0 < 0 ? 0 : c0 > w - 1 ? w - 1 : c0;
        it[i].c1 = c1 < it[i].c0 ? it[i].c0 : c1 > w - 1 ? w - 1 : c1;
    }
    bool own = true;
    for (int i = 0; i + 1 < n; i++)
        if (it[i + 1].row == it[i].row) {
            if (it[i + 1].c0 <= it[i].c0)
                own = false;
            else if (it[i].c1 >= it[i + 1].c0) /* a shared column goes to the later one */
                it[i].c1 = it[i + 1].c0 - 1;
        }
    return own;
}

static int by_start(const void *a, const void *b)
{
    const struct gantt_item *x = *(const struct gantt_item *const *)a;
    const struct gantt_item *y = *(const struct gantt_item *const *)b;
    if (x->start != y->start)
        return x->start < y->start ? -1 : 1;
    return x->row - y->row;
}

/* The stretched axis: each item's start column is the least the items before it force (a
 * column after the previous one of its row, none before an earlier start), plus its share in
 * time of the columns left over; an item ends where the time axis, interpolated between the
 * starts, puts its end, and before the next of its row. False when the least columns exceed
 * w. */
static bool stretched(struct gantt_item *it, int n, int w, double t0, double t1)
{
    struct gantt_item **order = malloc((size_t)n * sizeof *order);
    int *g = malloc((size_t)n * sizeof *g);
    if (!order || !g) {
        free(order), free(g);
        return false;
    }
    for (int i = 0; i < n; i++)
        order[i] = &it[i];
    qsort(order, (size_t)n, sizeof *order, by_start);
    /* the least columns: it[] index i's last column on its row, -1 none */
    int rows = 0;
    for (int i = 0; i < n; i++)
        rows = it[i].row + 1 > rows ? it[i].row + 1 : rows;
    int *last = calloc((size_t)(rows > 0 ? rows : 1), sizeof *last);
    if (!last) {
        free(order), free(g), free(last);
        return false;
    }
    for (int r = 0; r < rows; r++)
        last[r] = -1;
    int prev = 0, cmin = 0;
    for (int k = 0; k < n; k++) {
        int c = prev, r = order[k]->row;
        if (last[r] + 1 > c)
            c = last[r] + 1;
        g[k] = c;
        last[r] = c, prev = c;
        cmin = c + 1 > cmin ? c + 1 : cmin;
    }
    bool fits = cmin <= w;
    if (fits) {
        int extra = w - cmin;
        double span = t1 - t0;
        for (int k = 0; k < n; k++) /* the start columns */
            order[k]->c0 = g[k] + (int)floor((order[k]->start - t0) / span * extra + 1e-9);
        for (int k = 0; k < n; k++) { /* the ends, on the time axis through the starts */
            struct gantt_item *o = order[k];
            double e = o->end;
            int j = k; /* the last start at or before the end */
            while (j + 1 < n && order[j + 1]->start <= e)
                j++;
            double a = order[j]->start, ca = order[j]->c0, b = t1, cb = w;
            if (j + 1 < n)
                b = order[j + 1]->start, cb = order[j + 1]->c0;
            double ce = b > a ? ca + (e - a) / (b - a) * (cb - ca) : ca;
            int c1 = (int)ceil(ce - 1e-9) - 1;
            o->c1 = c1 < o->c0 ? o->c0 : c1 > w - 1 ? w - 1 : c1;
        }
        for (int i = 0; i + 1 < n; i++) /* never into the next of its row */
            if (it[i + 1].row == it[i].row && it[i].c1 >= it[i + 1].c0)
                it[i].c1 = it[i + 1].c0 - 1 >= it[i].c0 ? it[i + 1].c0 - 1 : it[i].c0;
    }
    free(order), free(g), free(last);
    return fits;
}

enum gantt_scale gantt_layout(struct gantt_item *it, int n, int w, double *per)
{
    double t0 = INFINITY, t1 = -INFINITY;
    for (int i = 0; i < n; i++)
        t0 = fmin(t0, it[i].start), t1 = fmax(t1, it[i].end);
    *per = n > 0 && w > 0 && t1 > t0 ? (t1 - t0) / w : 0;
    if (n == 0 || w < 1)
        return GANTT_LINEAR;
    if (t1 > t0 && linear(it, n, w, t0, t1))
        return GANTT_LINEAR;
    if (t1 > t0 && stretched(it, n, w, t0, t1))
        return GANTT_STRETCHED;
    /* in order: each row's k-th operation in column k, as far as the width goes */
    bool cut = false;
    for (int i = 0, k = 0; i < n; i++) {
        k = i > 0 && it[i - 1].row == it[i].row ? k + 1 : 0;
        it[i].c0 = it[i].c1 = k < w ? k : -1;
        cut |= k >= w;
    }
    return cut ? GANTT_CUT : GANTT_ORDER;
}

char *gantt_scale_text(char *buf, size_t n, enum gantt_scale s, const char *per_text, int shown,
                       int short_form)
{
    switch (s) {
    case GANTT_LINEAR: snprintf(buf, n, short_form ? "col %s" : "1 column = %s", per_text); break;
    case GANTT_STRETCHED:
        snprintf(buf, n,
                 short_form ? "stretched: every op shows" : "stretched: every operation a column");
        break;
    case GANTT_ORDER:
        snprintf(buf, n,
                 short_form ? "in order, not to scale"
                            : "a column per operation, in order (not to scale)");
        break;
    case GANTT_CUT:
        snprintf(buf, n,
                 short_form ? "first %d ops a stage"
                            : "the first %d operations of each stage (wider shows all)",
                 shown);
        break;
    }
    return buf;
}

/* Whether micro-batches get letters of their own: 10 with one chunk, 8 with two. */
static bool numbered(int m, int v)
{
    return v <= 1 ? m <= 10 : v == 2 && m <= 8;
}

char gantt_char(enum sched_op_kind kind, int micro, int chunk, int m, int v)
{
    char letter = sched_op_info(kind)->letter; /* chunk 1's in lower case */
    if (kind == SCHED_OP_W || !numbered(m, v) || micro < 0)
        return chunk ? (char)(letter - 'A' + 'a') : letter;
    if (kind == SCHED_OP_F)
        return (char)((chunk ? 'A' : '0') + micro);
    return (char)((chunk ? 'i' : 'a') + micro);
}

char *gantt_legend(char *buf, size_t n, int m, int v, bool w, int short_form)
{
    if (w && v <= 1) { /* B the input's gradient, W the weights' */
        if (numbered(m, v))
            snprintf(buf, n, short_form ? "0-%d fwd, a-%c B, W" : "0-%d forward, a-%c B, W weights",
                     m - 1, 'a' + m - 1);
        else
            snprintf(buf, n, short_form ? "F fwd, B, W" : "F forward, B input grad, W weights");
        return buf;
    }
    if (!numbered(m, v))
        snprintf(buf, n, v > 1 ? "F B forward, backward (f b: chunk 1)" : "F forward, B backward");
    else if (v > 1)
        snprintf(buf, n,
                 short_form ? "0-%d A-%c fwd, a-%c i-%c bwd"
                            : "0-%d A-%c forward, a-%c i-%c backward (chunk 0 1)",
                 m - 1, 'A' + m - 1, 'a' + m - 1, 'i' + m - 1);
    else
        snprintf(buf, n, short_form ? "0-%d fwd, a-%c bwd" : "0-%d forward, a-%c backward", m - 1,
                 'a' + m - 1);
    return buf;
}
