/* The window's geometry and text layout as pure functions, tested without a terminal
 * (ui/layout.h). */
#include "config.h"
#include "ui/layout.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "base/json.h"

int layout_compute(int rows, int cols, struct ui_layout *out)
{
    memset(out, 0, sizeof *out);
    out->rows = rows;
    out->cols = cols;
    if (rows < LAYOUT_MIN_ROWS || cols < LAYOUT_MIN_COLS) {
        out->too_small = true;
        return -1;
    }
    /* More rows of events on taller screens; the boxes keep the rest. */
    int ev = rows >= 40 ? 4 : rows >= 30 ? 3 : 2;
    int main_h = rows - 2 - ev;
    /* The lesson's text reads best at 30-70 columns; the panel takes the rest. */
    int lw = cols * 2 / 5;
    if (lw < 32)
        lw = 32;
    if (lw > 72)
        lw = 72;
    out->tabs = (struct ui_rect){0, 0, 1, cols};
    out->lesson = (struct ui_rect){1, 0, main_h, lw};
    out->panel = (struct ui_rect){1, lw, main_h, cols - lw};
    out->events = (struct ui_rect){1 + main_h, 0, ev, cols};
    out->hints = (struct ui_rect){rows - 1, 0, 1, cols};
    return 0;
}

struct ui_rect layout_inner(struct ui_rect box)
{
    if (box.h < 3 || box.w < 3)
        return (struct ui_rect){box.y, box.x, 0, 0};
    return (struct ui_rect){box.y + 1, box.x + 1, box.h - 2, box.w - 2};
}

struct ui_rect layout_center(struct ui_rect r, int h, int w)
{
    if (h > r.h)
        h = r.h;
    if (w > r.w)
        w = r.w;
    if (h < 0)
        h = 0;
    if (w < 0)
        w = 0;
    return (struct ui_rect){r.y + (r.h - h) / 2, r.x + (r.w - w) / 2, h, w};
}

int layout_text_width(const char *s)
{
    int n = 0;
    for (; *s; s++)
        if (((unsigned char)*s & 0xC0) != 0x80)
            n++;
    return n;
}

size_t layout_fit(const char *s, size_t len, int cols)
{
    size_t i = 0;
    int used = 0;
    while (i < len && s[i]) {
        if (used == cols)
            break;
        used++;
        i++;
        while (i < len && ((unsigned char)s[i] & 0xC0) == 0x80)
            i++;
    }
    return i;
}

int layout_tabs(const struct tab_label *t, int n, int width, int x[], int w[])
{
    int need_full = n > 0 ? n - 1 : 0, need_brief = need_full;
    for (int i = 0; i < n; i++) {
        need_full += layout_text_width(t[i].full) + 2;
        need_brief += layout_text_width(t[i].brief) + 2;
    }
    int mode = need_full <= width ? 2 : need_brief <= width ? 1 : 0;
    int each = n > 0 ? (width - (n - 1)) / n - 2 : 0; /* label columns when cut */
    if (each < 1)
        each = 1;
    int col = 0;
    for (int i = 0; i < n; i++) {
        int lw = layout_text_width(mode == 2 ? t[i].full : t[i].brief);
        if (mode == 0 && lw > each)
            lw = each;
        x[i] = col;
        w[i] = lw + 2;
        col += w[i] + 1;
    }
    return mode;
}

static int emit(struct wrap_line *lines, int max, int count, size_t start, size_t len)
{
    if (count < max)
        lines[count] = (struct wrap_line){start, len};
    return count + 1;
}

int layout_wrap(const char *text, int width, struct wrap_line *lines, int max)
{
    if (width < 1)
        width = 1;
    size_t len = strlen(text), p = 0;
    int count = 0;
    while (p < len) {
        const char *nlp = memchr(text + p, '\n', len - p);
        size_t nl = nlp ? (size_t)(nlp - text) : len;
        if (nl == p)
            count = emit(lines, max, count, p, 0);
        for (size_t s = p; s < nl;) {
            size_t fit = layout_fit(text + s, nl - s, width);
            if (s + fit == nl) {
                count = emit(lines, max, count, s, nl - s);
                break;
            }
            /* Break at the last space that keeps the line within width. */
            size_t brk = s;
            for (size_t i = s + fit; i > s; i--)
                if (text[i] == ' ') {
                    brk = i;
                    break;
                }
            if (brk == s) { /* one word longer than the line: cut it */
                count = emit(lines, max, count, s, fit);
                s += fit;
                continue;
            }
            size_t end = brk;
            while (end > s && text[end - 1] == ' ')
                end--;
            count = emit(lines, max, count, s, end - s);
            s = brk;
            while (s < nl && text[s] == ' ')
                s++;
        }
        p = nl + 1;
    }
    return count;
}

/* Appends s to out at *len (cut at cap - 1). */
static void append(char *out, size_t cap, size_t *len, const char *s)
{
    size_t n = strlen(s);
    if (*len + n >= cap)
        n = cap - 1 - *len;
    memcpy(out + *len, s, n);
    *len += n;
    out[*len] = '\0';
}

/* "- item", "* item", "1. item", "2) item": a list item starts its own line. */
static bool list_item(const char *l)
{
    if ((l[0] == '-' || l[0] == '*') && l[1] == ' ')
        return true;
    size_t d = strspn(l, "0123456789");
    return d > 0 && d < 4 && (l[d] == '.' || l[d] == ')') && l[d + 1] == ' ';
}

size_t layout_join(char *const *lines, size_t n, char *out, size_t cap)
{
    size_t len = 0;
    if (!cap)
        return 0;
    out[0] = '\0';
    /* Blank lines at either end carry nothing. */
    while (n && !lines[n - 1][0])
        n--;
    size_t i = 0;
    while (i < n && !lines[i][0])
        i++;
    bool in_para = false; /* the last thing written is a paragraph line that may go on */
    bool in_item = false; /* ... a list item, which indented lines continue */
    for (; i < n; i++) {
        const char *l = lines[i];
        if (!l[0]) { /* paragraph break: one empty line */
            append(out, cap, &len, "\n\n");
            in_para = in_item = false;
            while (i + 1 < n && !lines[i + 1][0])
                i++;
            continue;
        }
        size_t indent = strspn(l, " ");
        if (in_item && indent >= 1 && indent <= 4 && l[indent] && !list_item(l + indent)) {
            append(out, cap, &len, " "); /* the item goes on */
            append(out, cap, &len, l + indent);
            continue;
        }
        bool item = list_item(l);
        if (len && out[len - 1] != '\n')
            append(out, cap, &len, l[0] == ' ' || item || !in_para ? "\n" : " ");
        append(out, cap, &len, l);
        in_item = item;
        in_para = l[0] != ' ' && !item;
    }
    return len;
}

struct bar_cells layout_bar(double value, double max, int width)
{
    struct bar_cells b = {0, 0, width > 0 ? width : 0};
    if (width <= 0 || !(max > 0) || isnan(value))
        return b;
    double f = value / max;
    if (f < 0)
        f = 0;
    if (f > 1)
        f = 1;
    long e = lround(f * width * 8.0); /* eighths of a cell, to the nearest */
    b.full = (int)(e / 8);
    b.eighths = (int)(e % 8);
    b.empty = width - b.full - (b.eighths ? 1 : 0);
    return b;
}

int layout_axis(double lo, double hi, int width, double x)
{
    if (width < 1 || !(hi > lo) || isnan(x))
        return -1;
    double f = (x - lo) / (hi - lo) * width;
    if (f < 0)
        return 0;
    if (f >= width)
        return width - 1;
    return (int)f;
}

/* Do [y, y+h) x [x, x+w) and [y2, y2+h2) x [x2, x2+w2) share a cell? */
static bool cells_meet(int y, int x, int h, int w, int y2, int x2, int h2, int w2)
{
    return y < y2 + h2 && y2 < y + h && x < x2 + w2 && x2 < x + w;
}

int layout_ring(int n, int bh, int bw, int lw, int rows, int cols, struct ring_layout *out)
{
    memset(out, 0, sizeof *out);
    if (n < 2 || n > LAYOUT_RING_MAX || bh < 1 || bw < 1 || lw < 1 || rows < 2 * bh + 1 ||
        cols < bw + lw + 2)
        return -1;
    *out = (struct ring_layout){.n = n, .bh = bh, .bw = bw, .lw = lw};
    /* The ellipse the boxes' top-left corners run on, from angle 0 at the top, clockwise:
     * x = rx (1 + sin t), y = ry (1 - cos t); a label's centre runs on the same ellipse
     * moved by half a box. Its length is measured in boxes: dx / (bw + lw), dy / (bh + 1). */
    double rx = (cols - bw) / 2, ry = (rows - bh) / 2; /* whole: mirror images round alike */
    double ux = bw + lw, uy = bh + 1;
    enum { M = 360 };
    double len[M + 1];
    len[0] = 0;
    for (int k = 1; k <= M; k++) {
        double t0 = 2 * M_PI * (k - 1) / M, t1 = 2 * M_PI * k / M;
        double dx = rx * (sin(t1) - sin(t0)) / ux, dy = ry * (cos(t0) - cos(t1)) / uy;
        len[k] = len[k - 1] + sqrt(dx * dx + dy * dy);
    }
    /* The point a fraction f of the way round: its angle, by the table. */
    int k = 0;
    for (int i = 0; i < 2 * n; i++) {
        double want = len[M] * i / (2.0 * n);
        while (k < M && len[k + 1] < want)
            k++;
        double seg = len[k + 1] - len[k];
        double t = 2 * M_PI * (k + (seg > 0 ? (want - len[k]) / seg : 0)) / M;
        double x = rx * (1 + sin(t)), y = ry * (1 - cos(t));
        if (i % 2 == 0) {
            out->y[i / 2] = (int)lround(y);
            out->x[i / 2] = (int)lround(x);
        } else { /* a label: centred where a box's centre would be */
            out->ly[i / 2] = (int)lround(y + (bh - 1) / 2.0);
            out->lx[i / 2] = (int)lround(x + (bw - lw) / 2.0);
        }
    }
    for (int i = 0; i < n; i++) {
        if (out->y[i] < 0 || out->x[i] < 0 || out->y[i] + bh > rows || out->x[i] + bw > cols ||
            out->ly[i] < 0 || out->lx[i] < 0 || out->ly[i] >= rows || out->lx[i] + lw > cols)
            return -1;
        for (int j = 0; j < n; j++) {
            if (j > i && cells_meet(out->y[i] - 1, out->x[i] - 1, bh + 2, bw + 2, out->y[j],
                                    out->x[j], bh, bw))
                return -1;
            if (cells_meet(out->ly[i], out->lx[i] - 1, 1, lw + 2, out->y[j], out->x[j], bh, bw))
                return -1;
            if (j > i && cells_meet(out->ly[i], out->lx[i], 1, lw, out->ly[j], out->lx[j], 1, lw))
                return -1;
        }
    }
    return 0;
}

char *fmt_bits(char *buf, size_t n, uint32_t bits, int exp_bits, int man_bits)
{
    int total = 1 + exp_bits + man_bits;
    size_t j = 0;
    for (int i = total - 1; i >= 0 && j + 1 < n; i--) {
        buf[j++] = (bits >> i) & 1u ? '1' : '0';
        if ((i == total - 1 || i == man_bits) && i > 0 && j + 1 < n)
            buf[j++] = ' ';
    }
    if (n)
        buf[j < n ? j : n - 1] = '\0';
    return buf;
}

char *fmt_hex(char *buf, size_t n, uint32_t bits, int exp_bits, int man_bits)
{
    int digits = (1 + exp_bits + man_bits + 3) / 4;
    snprintf(buf, n, "0x%0*x", digits, (unsigned)bits);
    return buf;
}

char *fmt_value(char *buf, size_t n, double v)
{
    return json_num_text(buf, n, v, 9); /* 9 digits tell every two fp32 values apart */
}

char *fmt_relerr(char *buf, size_t n, double held, double want)
{
    if (isnan(held) || isnan(want))
        snprintf(buf, n, isnan(held) && isnan(want) ? "exact" : "nan");
    else if (held == want)
        snprintf(buf, n, "exact");
    else if (isinf(held))
        snprintf(buf, n, "overflow");
    else if (isinf(want))
        snprintf(buf, n, "finite");
    else if (held == 0)
        snprintf(buf, n, "underflow");
    else if (want == 0)
        snprintf(buf, n, "%.1e abs", fabs(held));
    else
        snprintf(buf, n, "%.1e", fabs(held - want) / fabs(want));
    return buf;
}
