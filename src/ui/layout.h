/* The window's geometry and the text it shows, as pure functions: no curses here, so the
 * unit tests run them across many terminal sizes without a terminal.
 *
 * The screen, top to bottom: a tab bar (one row); the lesson pane (left) and the live panel
 * (right), each a box; the latest events (two to four rows); the key hints (one row). */
#ifndef SCALELAB_UI_LAYOUT_H
#define SCALELAB_UI_LAYOUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Below this the window shows only a message saying how large the terminal must be. */
#define LAYOUT_MIN_COLS 80
#define LAYOUT_MIN_ROWS 24

struct ui_rect {
    int y, x, h, w;
};

struct ui_layout {
    int rows, cols;
    bool too_small;        /* nothing below is set when true */
    struct ui_rect tabs;   /* the tab bar */
    struct ui_rect lesson; /* the lesson pane's box, border included */
    struct ui_rect panel;  /* the live panel's box, border included */
    struct ui_rect events; /* the latest events */
    struct ui_rect hints;  /* the key hints */
};

/* Lays out a rows x cols screen; returns 0, or -1 (and sets too_small) below the minimum. */
int layout_compute(int rows, int cols, struct ui_layout *out);

/* The inside of a box (its border removed); an empty rect for a box smaller than 3x3. */
struct ui_rect layout_inner(struct ui_rect box);

/* A rect of height h and width w centred in r, shrunk to fit. */
struct ui_rect layout_center(struct ui_rect r, int h, int w);

/* Tabs: each has a long and a short label. layout_tabs places n tabs in width columns, each
 * drawn as " LABEL " followed by a one-column separator. It uses the long labels if they all
 * fit, else the short ones, else the short ones cut to the width left. x[i] and w[i] are each
 * tab's column and width; returns 2 (long), 1 (short) or 0 (cut). */
struct tab_label {
    const char *full, *brief;
};
int layout_tabs(const struct tab_label *t, int n, int width, int x[], int w[]);

/* Columns a UTF-8 string takes (one per code point: the window's text has no wide characters). */
int layout_text_width(const char *s);
/* Bytes of the longest prefix of s (at most len bytes) that fits in cols columns. */
size_t layout_fit(const char *s, size_t len, int cols);

/* Word wrap: text split into lines of at most width columns. A newline ends a line; a blank
 * line is kept; words longer than width are cut. Fills up to max lines (start and length in
 * bytes, without the spaces that were broken) and returns how many lines there are in all. */
struct wrap_line {
    size_t start, len;
};
int layout_wrap(const char *text, int width, struct wrap_line *lines, int max);

/* A lesson step's text lines as the pane shows them (lessons/README.md): lines of a paragraph
 * are joined with a space; a blank line separates paragraphs (kept as an empty line); a list
 * item ("- ", "* ", "1. ", "1) ") starts its own line, and the lines indented by 1 to 4
 * spaces after it continue it; any other line that starts with a space is kept as written,
 * on its own line. Writes the result, lines
 * separated by '\n', into out (cut to cap bytes) and returns its length. */
size_t layout_join(char *const *lines, size_t n, char *out, size_t cap);

/* A horizontal bar of width cells showing value/max: full cells, then one partial cell of
 * eighths (0-7, drawn with the block elements, or rounded to a full cell in ASCII), then
 * empty cells. Values outside [0, max], NaN and max <= 0 clamp to an empty or full bar. */
struct bar_cells {
    int full, eighths, empty;
};
struct bar_cells layout_bar(double value, double max, int width);

/* The column (0 .. width-1) of x on an axis that runs from lo (left edge of column 0) to hi
 * (right edge of the last column), clamped to the ends; -1 when x is NaN, width < 1 or
 * hi <= lo. */
int layout_axis(double lo, double hi, int width, double x);

/* A ring of n boxes (2 to LAYOUT_RING_MAX), each bh rows x bw columns, on an ellipse inside
 * a rect of rows x cols: box 0 at the top, then clockwise. The boxes are spaced evenly along
 * the ellipse, measured in boxes (a box and a label across, a box and a row down), so wide
 * boxes are not crowded where the ellipse runs up and down its sides. Between box i and box
 * i+1 (mod n), halfway along the ellipse, sits the label of that link, lw columns wide.
 * Every box and label lies inside the rect, no two boxes overlap or touch (a free cell
 * between them), and no label overlaps a box, or comes nearer than one column to one on its
 * row, or overlaps another label.
 * Fills out (top-left corners); returns 0, or -1 when they do not fit (or n, bh, bw, lw are
 * out of range). */
#define LAYOUT_RING_MAX 16
struct ring_layout {
    int n, bh, bw, lw;
    int y[LAYOUT_RING_MAX], x[LAYOUT_RING_MAX];   /* box i */
    int ly[LAYOUT_RING_MAX], lx[LAYOUT_RING_MAX]; /* the label of the link from box i to i+1 */
};
int layout_ring(int n, int bh, int bw, int lw, int rows, int cols, struct ring_layout *out);

/* Number formatting for the panels. Each writes into buf (n bytes) and returns buf.
 * fmt_bits: the bits of a floating-point format, grouped sign, exponent, mantissa:
 * fmt_bits(b, n, 0x7bff, 5, 10) -> "0 11110 1111111111".
 * fmt_hex: "0x7bff", with (1 + exp_bits + man_bits) / 4 digits, rounded up.
 * fmt_value: the value, exactly enough to tell fp32 numbers apart (9 significant digits):
 * "65504", "0.100000001", "5.96046448e-08", "inf", "-inf", "nan".
 * fmt_relerr: |held - want| / |want|: "exact", "3.3e-04", "overflow" (held infinite, want
 * finite), "nan" (held NaN but want not); when want is 0, the absolute error. */
char *fmt_bits(char *buf, size_t n, uint32_t bits, int exp_bits, int man_bits);
char *fmt_hex(char *buf, size_t n, uint32_t bits, int exp_bits, int man_bits);
char *fmt_value(char *buf, size_t n, double v);
char *fmt_relerr(char *buf, size_t n, double held, double want);

#endif
