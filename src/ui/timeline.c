/* A run's last step as a compute row and a communication row per GPU, the exposed
 * communication marked (ui/timeline.h). */
#include "config.h"
#include "ui/timeline.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ui/draw.h"
#include "ui/theme.h"

struct iv {
    double a, b;
};

static int by_start(const void *x, const void *y)
{
    const struct iv *p = x, *q = y;
    return (p->a > q->a) - (p->a < q->a);
}

/* Sorts and merges v[0..n) in place: the union as disjoint intervals in order; their count. */
static size_t merge(struct iv *v, size_t n)
{
    if (!n)
        return 0;
    qsort(v, n, sizeof *v, by_start);
    size_t k = 0;
    for (size_t i = 1; i < n; i++) {
        if (v[i].a <= v[k].b)
            v[k].b = fmax(v[k].b, v[i].b);
        else
            v[++k] = v[i];
    }
    return k + 1;
}

/* Adds each interval's time in each column of width per from t0 into acc[0..w). */
static void spread(const struct iv *v, size_t n, double t0, double per, int w, double *acc)
{
    for (size_t i = 0; i < n; i++) {
        int c0 = (int)floor((v[i].a - t0) / per), c1 = (int)floor((v[i].b - t0) / per);
        c0 = c0 < 0 ? 0 : c0;
        c1 = c1 >= w ? w - 1 : c1;
        for (int c = c0; c <= c1; c++) {
            double lo = fmax(v[i].a, t0 + c * per), hi = fmin(v[i].b, t0 + (c + 1) * per);
            if (hi > lo)
                acc[c] += hi - lo;
        }
    }
}

/* The parts of comm[0..nc) outside busy[0..nb) (both merged), into out; their count. */
static size_t outside(const struct iv *comm, size_t nc, const struct iv *busy, size_t nb,
                      struct iv *out)
{
    size_t k = 0, j = 0;
    for (size_t i = 0; i < nc; i++) {
        double a = comm[i].a, b = comm[i].b;
        while (j < nb && busy[j].b <= a)
            j++;
        for (size_t q = j; q < nb && busy[q].a < b && a < b; q++) {
            if (busy[q].a > a)
                out[k++] = (struct iv){a, busy[q].a};
            a = fmax(a, busy[q].b);
        }
        if (a < b)
            out[k++] = (struct iv){a, b};
    }
    return k;
}

static double total(const struct iv *v, size_t n)
{
    double s = 0;
    for (size_t i = 0; i < n; i++)
        s += v[i].b - v[i].a;
    return s;
}

int timeline_build(struct timeline *tl, const struct timeline_span *s, size_t n, int gpus,
                   double t0, double t1, int w)
{
    memset(tl, 0, sizeof *tl);
    tl->gpus = gpus < 0 ? 0 : gpus > TIMELINE_GPUS ? TIMELINE_GPUS : gpus;
    tl->w = w < 1 ? 1 : w > TIMELINE_W ? TIMELINE_W : w;
    tl->t0 = t0, tl->t1 = t1 > t0 ? t1 : t0;
    double per = (tl->t1 - tl->t0) / tl->w;
    struct iv *busy = malloc((3 * n + 1) * sizeof *busy);
    if (!busy)
        return -1;
    struct iv *comm = busy + n, *exp = comm + n;
    for (int g = 0; g < tl->gpus; g++) {
        size_t nb = 0, nc = 0;
        for (size_t i = 0; i < n; i++) {
            if (s[i].gpu != g)
                continue;
            struct iv v = {fmax(s[i].t0, tl->t0), fmin(s[i].t1, tl->t1)};
            if (v.b < v.a)
                continue;
            if (s[i].kind == TIMELINE_COMPUTE)
                busy[nb++] = v;
            else
                comm[nc++] = v;
        }
        nb = merge(busy, nb), nc = merge(comm, nc);
        size_t ne = outside(comm, nc, busy, nb, exp);
        tl->busy[g] = total(busy, nb), tl->comm[g] = total(comm, nc);
        tl->exposed[g] = total(exp, ne);
        if (per <= 0)
            continue;
        double b[TIMELINE_W] = {0}, c[TIMELINE_W] = {0}, x[TIMELINE_W] = {0};
        spread(busy, nb, tl->t0, per, tl->w, b);
        spread(comm, nc, tl->t0, per, tl->w, c);
        spread(exp, ne, tl->t0, per, tl->w, x);
        for (int k = 0; k < tl->w; k++) {
            tl->cell[g][TIMELINE_COMPUTE][k] = b[k] > 0 ? TL_BUSY : TL_IDLE;
            tl->cell[g][TIMELINE_COMM][k] = c[k] <= 0          ? TL_IDLE
                                            : 2 * x[k] >= c[k] ? TL_EXPOSED
                                                               : TL_HIDDEN;
        }
    }
    free(busy);
    return 0;
}

char timeline_glyph(enum timeline_cell c)
{
    static const char g[] = {'.', '#', '=', 'X'};
    return g[c & 3];
}

char *timeline_row_text(const struct timeline *tl, int g, enum timeline_kind k, char *buf)
{
    for (int i = 0; i < tl->w; i++)
        buf[i] = timeline_glyph(tl->cell[g][k][i]);
    buf[tl->w] = 0;
    return buf;
}

/* t seconds in the unit u (1, 1e-3, 1e-6) with its name. */
static void in_unit(char *buf, size_t n, double t, double u)
{
    const char *name = u == 1 ? "s" : u == 1e-3 ? "ms" : "us";
    double v = t / u;
    snprintf(buf, n, v == 0 ? "0" : v < 10 ? "%.2f %s" : v < 100 ? "%.1f %s" : "%.0f %s", v, name);
}

char *timeline_axis(char *buf, size_t n, int w, double span)
{
    if (n < 1)
        return buf;
    size_t len = (size_t)w < n - 1 ? (size_t)w : n - 1;
    memset(buf, ' ', len);
    buf[len] = 0;
    double u = span >= 1 ? 1 : span >= 1e-3 ? 1e-3 : 1e-6;
    char end[24], mid[24];
    in_unit(end, sizeof end, span, u);
    in_unit(mid, sizeof mid, span / 2, u);
    size_t le = strlen(end), lm = strlen(mid);
    buf[0] = '0';
    if (le + 2 <= len) /* the end, right-aligned under the last cell */
        memcpy(buf + len - le, end, le);
    size_t m = len / 2 - lm / 2; /* the middle, centred under the middle cell */
    if (le + 2 <= len && m > 2 && m + lm + 2 <= len - le)
        memcpy(buf + m, mid, lm);
    return buf;
}

int timeline_rows(int shown, bool all)
{
    return 2 * shown + 2 + (all ? 0 : 1);
}

#define LABEL TIMELINE_LABEL

static enum ui_role role_of(enum timeline_cell c)
{
    return c == TL_BUSY      ? ROLE_GOOD
           : c == TL_HIDDEN  ? ROLE_MOVED
           : c == TL_EXPOSED ? ROLE_ERROR
                             : ROLE_DIM;
}

static void draw_row(const struct timeline *tl, struct ui_canvas *c, int y, int g,
                     enum timeline_kind k)
{
    if (k == TIMELINE_COMPUTE)
        canvas_printf(c, y, 0, ROLE_DIM, "GPU%-2d comp", g);
    else
        canvas_text(c, y, 0, ROLE_DIM, "      comm");
    for (int i = 0; i < tl->w && LABEL + i < c->r.w; i++) {
        enum timeline_cell v = tl->cell[g][k][i];
        char s[2] = {timeline_glyph(v), 0};
        canvas_text(c, y, LABEL + i, role_of(v), s);
    }
}

int timeline_draw(const struct timeline *tl, struct ui_canvas *c, int y, int shown)
{
    int y0 = y;
    shown = shown > tl->gpus ? tl->gpus : shown < 0 ? 0 : shown;
    for (int g = 0; g < shown; g++) {
        draw_row(tl, c, y++, g, TIMELINE_COMPUTE);
        draw_row(tl, c, y++, g, TIMELINE_COMM);
    }
    char axis[TIMELINE_W + 1];
    timeline_axis(axis, sizeof axis, tl->w, tl->t1 - tl->t0);
    canvas_text(c, y++, LABEL, ROLE_DIM, axis);
    int x = 0;
    static const enum timeline_cell cells[] = {TL_BUSY, TL_HIDDEN, TL_EXPOSED};
    static const char *const words[] = {"compute", "comm hidden", "comm exposed"};
    for (int i = 0; i < 3; i++) {
        char s[2] = {timeline_glyph(cells[i]), 0};
        x = canvas_text(c, y, x, role_of(cells[i]), s);
        x = canvas_printf(c, y, x + 1, ROLE_DIM, "%s ", words[i]);
    }
    y++;
    if (shown < tl->gpus)
        canvas_printf(c, y++, 0, ROLE_DIM, "(%d of %d GPUs: a larger window shows all)", shown,
                      tl->gpus);
    return y - y0;
}
