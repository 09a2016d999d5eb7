/* Drawing in a rectangle of the screen: panels draw through a canvas, never outside it.
 * Coordinates are relative to the canvas; text is clipped to its right edge. */
#ifndef SCALELAB_UI_DRAW_H
#define SCALELAB_UI_DRAW_H

#include <curses.h>
#include <stdarg.h>

#include "ui/layout.h"
#include "ui/theme.h"

struct ui_canvas {
    WINDOW *win;
    struct ui_rect r;
    int cursor_y, cursor_x; /* where the text cursor shows (canvas coordinates), -1: hidden */
};

struct ui_canvas canvas_make(WINDOW *win, struct ui_rect r);

/* Writes s at (y, x) in role's look, clipped to the canvas; returns the column after it. */
int canvas_text(struct ui_canvas *c, int y, int x, enum ui_role role, const char *s);
int canvas_printf(struct ui_canvas *c, int y, int x, enum ui_role role, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
/* Fills a row segment with spaces in role's look (an input field, a selected row). */
void canvas_fill(struct ui_canvas *c, int y, int x, int w, enum ui_role role);
/* A horizontal bar of w cells showing value/max (layout_bar). */
void canvas_bar(struct ui_canvas *c, int y, int x, int w, double value, double max);
/* Word-wrapped text from row y, skipping the first skip lines; returns the rows used. */
int canvas_wrap(struct ui_canvas *c, int y, enum ui_role role, const char *text, int skip);
/* Shows the text cursor at (y, x) once the frame is drawn (for an input field). */
void canvas_cursor(struct ui_canvas *c, int y, int x);

/* A box with an optional title on its top line (screen coordinates). */
void draw_box(WINDOW *win, struct ui_rect box, const char *title, bool focus);

#endif
