/* Drawing through a canvas: text and attributes clipped to a panel's rectangle (ui/draw.h). */
#include "config.h"
#include "ui/draw.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lesson/ascii.h"

struct ui_canvas canvas_make(WINDOW *win, struct ui_rect r)
{
    return (struct ui_canvas){win, r, -1, -1};
}

/* Whether s has a byte outside ASCII. */
static bool has_utf8(const char *s)
{
    for (; *s; s++)
        if ((unsigned char)*s >= 0x80)
            return true;
    return false;
}

int canvas_text(struct ui_canvas *c, int y, int x, enum ui_role role, const char *s)
{
    if (y < 0 || y >= c->r.h || x < 0 || x >= c->r.w)
        return x;
    /* In ASCII mode nothing else reaches the terminal, whatever the caller passed. */
    char conv[1024];
    if (theme_ascii() && has_utf8(s))
        s = ascii_line(conv, sizeof conv, s);
    size_t bytes = layout_fit(s, strlen(s), c->r.w - x);
    attr_t a = theme_attr(role);
    wattrset(c->win, (int)a);
    mvwaddnstr(c->win, c->r.y + y, c->r.x + x, s, (int)bytes);
    wattrset(c->win, A_NORMAL);
    int cols = 0;
    for (size_t i = 0; i < bytes; i++)
        if (((unsigned char)s[i] & 0xC0) != 0x80)
            cols++;
    return x + cols;
}

int canvas_printf(struct ui_canvas *c, int y, int x, enum ui_role role, const char *fmt, ...)
{
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    return canvas_text(c, y, x, role, buf);
}

void canvas_fill(struct ui_canvas *c, int y, int x, int w, enum ui_role role)
{
    if (y < 0 || y >= c->r.h || x < 0)
        return;
    if (x + w > c->r.w)
        w = c->r.w - x;
    if (w <= 0)
        return;
    wattrset(c->win, (int)theme_attr(role));
    mvwhline(c->win, c->r.y + y, c->r.x + x, ' ', w);
    wattrset(c->win, A_NORMAL);
}

void canvas_bar(struct ui_canvas *c, int y, int x, int w, double value, double max)
{
    const struct ui_glyphs *g = theme_glyphs();
    struct bar_cells b = layout_bar(value, max, w);
    int col = x;
    for (int i = 0; i < b.full; i++)
        col = canvas_text(c, y, col, ROLE_BAR, g->bar);
    if (b.eighths)
        col = canvas_text(c, y, col, ROLE_BAR, g->eighths[b.eighths]);
    for (int i = 0; i < b.empty; i++)
        col = canvas_text(c, y, col, ROLE_DIM, g->bar_empty);
}

int canvas_wrap(struct ui_canvas *c, int y, enum ui_role role, const char *text, int skip)
{
    enum { MAXL = 512 };
    struct wrap_line *lines = calloc(MAXL, sizeof *lines);
    if (!lines)
        return 0;
    int n = layout_wrap(text, c->r.w, lines, MAXL);
    if (n > MAXL)
        n = MAXL;
    int row = y;
    char buf[1024];
    for (int i = skip; i < n && row < c->r.h; i++, row++) {
        size_t len = lines[i].len < sizeof buf ? lines[i].len : sizeof buf - 1;
        memcpy(buf, text + lines[i].start, len);
        buf[len] = '\0';
        canvas_text(c, row, 0, role, buf);
    }
    free(lines);
    return row - y;
}

void canvas_cursor(struct ui_canvas *c, int y, int x)
{
    c->cursor_y = y;
    c->cursor_x = x;
}

void draw_box(WINDOW *win, struct ui_rect b, const char *title, bool focus)
{
    if (b.h < 2 || b.w < 2)
        return;
    const struct ui_glyphs *g = theme_glyphs();
    wattrset(win, (int)theme_attr(focus ? ROLE_TITLE : ROLE_BORDER));
    for (int x = 1; x < b.w - 1; x++) {
        mvwaddstr(win, b.y, b.x + x, g->h);
        mvwaddstr(win, b.y + b.h - 1, b.x + x, g->h);
    }
    for (int y = 1; y < b.h - 1; y++) {
        mvwaddstr(win, b.y + y, b.x, g->v);
        mvwaddstr(win, b.y + y, b.x + b.w - 1, g->v);
    }
    mvwaddstr(win, b.y, b.x, g->tl);
    mvwaddstr(win, b.y, b.x + b.w - 1, g->tr);
    mvwaddstr(win, b.y + b.h - 1, b.x, g->bl);
    mvwaddstr(win, b.y + b.h - 1, b.x + b.w - 1, g->br);
    if (title && *title && b.w > 6) {
        struct ui_canvas c = canvas_make(win, (struct ui_rect){b.y, b.x + 2, 1, b.w - 4});
        int x = canvas_text(&c, 0, 0, ROLE_TITLE, " ");
        x = canvas_text(&c, 0, x, ROLE_TITLE, title);
        canvas_text(&c, 0, x, ROLE_TITLE, " ");
    }
    wattrset(win, A_NORMAL);
}
