/* Unit tests of the window's pure parts (src/ui/layout.c, eventlog.c): the layout across
 * many terminal sizes, tabs, word wrap, bars, and the formatting of bits and values. No
 * terminal is needed. */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "harness.h"
#include "ui/eventlog.h"
#include "ui/layout.h"

static bool inside(struct ui_rect r, int rows, int cols)
{
    return r.y >= 0 && r.x >= 0 && r.h > 0 && r.w > 0 && r.y + r.h <= rows && r.x + r.w <= cols;
}

static bool overlap(struct ui_rect a, struct ui_rect b)
{
    return a.y < b.y + b.h && b.y < a.y + a.h && a.x < b.x + b.w && b.x < a.x + a.w;
}

START_TEST(layout_too_small)
{
    struct ui_layout l;
    int sizes[][2] = {{23, 80}, {24, 79}, {1, 1}, {0, 0}, {10, 200}, {100, 40}};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        ck_assert_int_eq(layout_compute(sizes[i][0], sizes[i][1], &l), -1);
        ck_assert(l.too_small);
        ck_assert_int_eq(l.rows, sizes[i][0]);
        ck_assert_int_eq(l.cols, sizes[i][1]);
    }
}
END_TEST

/* Every size from the minimum to 300x120: the parts tile the screen, none overlaps another,
 * the boxes are large enough to hold the lesson text and the formats table. */
START_TEST(layout_tiles_every_size)
{
    for (int rows = LAYOUT_MIN_ROWS; rows <= 120; rows += 1)
        for (int cols = LAYOUT_MIN_COLS; cols <= 300; cols += 7) {
            struct ui_layout l;
            ck_assert_int_eq(layout_compute(rows, cols, &l), 0);
            ck_assert(!l.too_small);
            struct ui_rect parts[] = {l.tabs, l.lesson, l.panel, l.events, l.hints};
            int area = 0;
            for (int i = 0; i < 5; i++) {
                ck_assert_msg(inside(parts[i], rows, cols), "part %d outside %dx%d", i, cols, rows);
                area += parts[i].h * parts[i].w;
                for (int j = 0; j < i; j++)
                    ck_assert_msg(!overlap(parts[i], parts[j]), "parts %d and %d overlap at %dx%d",
                                  i, j, cols, rows);
            }
            ck_assert_int_eq(area, rows * cols); /* no hole either */
            ck_assert_int_eq(l.tabs.y, 0);
            ck_assert_int_eq(l.hints.y, rows - 1);
            ck_assert_int_eq(l.lesson.w + l.panel.w, cols);
            ck_assert_int_ge(l.lesson.w, 32);
            ck_assert_int_le(l.lesson.w, 72);
            /* The formats table needs 46 columns and 17 rows inside the panel's box. */
            struct ui_rect in = layout_inner(l.panel);
            ck_assert_int_ge(in.w - 2, 44);
            ck_assert_int_ge(in.h, 18);
            ck_assert_int_ge(l.events.h, 2);
        }
}
END_TEST

START_TEST(layout_exact_sizes)
{
    struct ui_layout l;
    ck_assert_int_eq(layout_compute(24, 80, &l), 0);
    ck_assert_int_eq(l.lesson.w, 32);
    ck_assert_int_eq(l.panel.x, 32);
    ck_assert_int_eq(l.panel.w, 48);
    ck_assert_int_eq(l.lesson.h, 20);
    ck_assert_int_eq(l.events.y, 21);
    ck_assert_int_eq(l.events.h, 2);
    ck_assert_int_eq(layout_compute(50, 200, &l), 0);
    ck_assert_int_eq(l.lesson.w, 72); /* capped: longer lines read badly */
    ck_assert_int_eq(l.events.h, 4);
}
END_TEST

START_TEST(inner_and_center)
{
    struct ui_rect in = layout_inner((struct ui_rect){1, 2, 10, 20});
    ck_assert_int_eq(in.y, 2);
    ck_assert_int_eq(in.x, 3);
    ck_assert_int_eq(in.h, 8);
    ck_assert_int_eq(in.w, 18);
    in = layout_inner((struct ui_rect){0, 0, 2, 20});
    ck_assert_int_eq(in.h * in.w, 0);
    struct ui_rect c = layout_center((struct ui_rect){0, 0, 24, 80}, 10, 40);
    ck_assert_int_eq(c.y, 7);
    ck_assert_int_eq(c.x, 20);
    c = layout_center((struct ui_rect){1, 0, 5, 10}, 10, 40); /* shrunk to fit */
    ck_assert_int_eq(c.y, 1);
    ck_assert_int_eq(c.h, 5);
    ck_assert_int_eq(c.w, 10);
}
END_TEST

static const struct tab_label tabs[] = {
    {"1 Precision", "1 Prec"}, {"2 Checkpointing", "2 Ckpt"}, {"3 Collectives", "3 Coll"},
    {"4 Scaling", "4 Scale"},  {"5 ZeRO", "5 ZeRO"},          {"L Lab", "L Lab"},
};

START_TEST(tabs_fit_every_width)
{
    int x[6], w[6];
    /* 6 labels of 11+15+13+9+6+5 = 59 columns, 2 of padding each, 5 separators: 76. */
    ck_assert_int_eq(layout_tabs(tabs, 6, 76, x, w), 2);
    ck_assert_int_eq(x[5] + w[5], 76);
    ck_assert_int_eq(layout_tabs(tabs, 6, 75, x, w), 1);
    ck_assert_int_eq(w[0], 8);
    for (int width = 10; width <= 200; width++) {
        int mode = layout_tabs(tabs, 6, width, x, w);
        ck_assert(mode >= 0 && mode <= 2);
        for (int i = 0; i < 6; i++) {
            ck_assert_int_ge(w[i], 3); /* at least one column of label */
            if (i)
                ck_assert_int_eq(x[i], x[i - 1] + w[i - 1] + 1);
        }
        if (width >= 40) /* from 40 columns on, every tab shows */
            ck_assert_int_le(x[5] + w[5], width);
    }
}
END_TEST

START_TEST(text_width_and_fit)
{
    ck_assert_int_eq(layout_text_width("abc"), 3);
    ck_assert_int_eq(layout_text_width("a\u2192b \u00d7"), 5); /* a→b × */
    ck_assert_int_eq(layout_text_width(""), 0);
    const char *s = "\u2500\u2500x";                   /* 3 bytes each */
    ck_assert_uint_eq(layout_fit(s, strlen(s), 1), 3); /* never half a character */
    ck_assert_uint_eq(layout_fit(s, strlen(s), 2), 6);
    ck_assert_uint_eq(layout_fit(s, strlen(s), 10), 7);
    ck_assert_uint_eq(layout_fit("hello", 5, 0), 0);
    ck_assert_uint_eq(layout_fit("hello", 3, 10), 3);
}
END_TEST

/* Wraps text and returns line i as a string. */
static const char *wrapped(const char *text, int width, int i, int *count)
{
    static char buf[256];
    struct wrap_line lines[64];
    *count = layout_wrap(text, width, lines, 64);
    if (i >= *count || i >= 64)
        return NULL;
    snprintf(buf, sizeof buf, "%.*s", (int)lines[i].len, text + lines[i].start);
    return buf;
}

START_TEST(wrap_words)
{
    int n;
    const char *t = "The largest finite fp16 value is 65504.";
    ck_assert_str_eq(wrapped(t, 20, 0, &n), "The largest finite");
    ck_assert_str_eq(wrapped(t, 20, 1, &n), "fp16 value is 65504.");
    ck_assert_int_eq(n, 2);
    ck_assert_str_eq(wrapped(t, 100, 0, &n), t);
    ck_assert_int_eq(n, 1);
    /* A word longer than the line is cut. */
    ck_assert_str_eq(wrapped("abcdefghij xy", 4, 0, &n), "abcd");
    ck_assert_str_eq(wrapped("abcdefghij xy", 4, 2, &n), "ij");
    ck_assert_str_eq(wrapped("abcdefghij xy", 4, 3, &n), "xy");
    ck_assert_int_eq(n, 4);
    /* Newlines end lines; a blank line is kept; a trailing newline adds nothing. */
    ck_assert_str_eq(wrapped("a\n\nb\n", 10, 1, &n), "");
    ck_assert_str_eq(wrapped("a\n\nb\n", 10, 2, &n), "b");
    ck_assert_int_eq(n, 3);
    ck_assert_ptr_null(wrapped("", 10, 0, &n));
    ck_assert_int_eq(n, 0);
    /* Several spaces at a break vanish; UTF-8 counts by characters. */
    ck_assert_str_eq(wrapped("ab    cd", 3, 1, &n), "cd");
    ck_assert_str_eq(wrapped("\u00d7\u00d7\u00d7 \u00d7", 3, 0, &n), "\u00d7\u00d7\u00d7");
    ck_assert_int_eq(n, 2);
}
END_TEST

/* Every line fits, and putting the lines back gives the text's words in order. */
START_TEST(wrap_keeps_every_word)
{
    const char *t = "Mixed precision keeps a master copy of the weights in fp32 and computes in "
                    "bf16 or fp16, which halves the bytes of activations and doubles the rate "
                    "of matrix multiplications on tensor cores.";
    for (int width = 1; width <= 90; width++) {
        struct wrap_line lines[256];
        int n = layout_wrap(t, width, lines, 256);
        ck_assert_int_le(n, 256);
        char joined[512], nospace[512];
        size_t nj = 0, ns = 0;
        for (int i = 0; i < n; i++) {
            ck_assert_int_le((int)lines[i].len, width);
            for (size_t k = 0; k < lines[i].len; k++)
                if (t[lines[i].start + k] != ' ')
                    joined[nj++] = t[lines[i].start + k];
        }
        for (const char *p = t; *p; p++)
            if (*p != ' ')
                nospace[ns++] = *p;
        joined[nj] = nospace[ns] = '\0';
        ck_assert_str_eq(joined, nospace);
    }
}
END_TEST

START_TEST(bars)
{
    struct bar_cells b = layout_bar(50, 100, 10);
    ck_assert_int_eq(b.full, 5);
    ck_assert_int_eq(b.eighths, 0);
    ck_assert_int_eq(b.empty, 5);
    b = layout_bar(1, 8, 1); /* one eighth of one cell */
    ck_assert_int_eq(b.full, 0);
    ck_assert_int_eq(b.eighths, 1);
    ck_assert_int_eq(b.empty, 0);
    b = layout_bar(3, 16, 4); /* 0.1875 * 32 eighths = 6 */
    ck_assert_int_eq(b.full, 0);
    ck_assert_int_eq(b.eighths, 6);
    ck_assert_int_eq(b.empty, 3);
    b = layout_bar(200, 100, 10); /* clamped */
    ck_assert_int_eq(b.full, 10);
    ck_assert_int_eq(b.empty, 0);
    b = layout_bar(-1, 100, 10);
    ck_assert_int_eq(b.full + b.eighths, 0);
    ck_assert_int_eq(b.empty, 10);
    b = layout_bar(NAN, 100, 10);
    ck_assert_int_eq(b.empty, 10);
    b = layout_bar(5, 0, 10);
    ck_assert_int_eq(b.empty, 10);
    b = layout_bar(5, 10, 0);
    ck_assert_int_eq(b.full + b.eighths + b.empty, 0);
    /* The cells always add up to the width. */
    for (int w = 1; w < 50; w++)
        for (double v = 0; v <= 1.0; v += 0.013) {
            b = layout_bar(v, 1.0, w);
            ck_assert_int_eq(b.full + (b.eighths ? 1 : 0) + b.empty, w);
        }
}
END_TEST

START_TEST(bits_and_hex)
{
    char b[64];
    /* IEEE binary16 65504: sign 0, exponent 11110, mantissa all ones (0x7bff). */
    ck_assert_str_eq(fmt_bits(b, sizeof b, 0x7bff, 5, 10), "0 11110 1111111111");
    ck_assert_str_eq(fmt_hex(b, sizeof b, 0x7bff, 5, 10), "0x7bff");
    /* fp32 0.1 = 0x3dcccccd. */
    ck_assert_str_eq(fmt_bits(b, sizeof b, 0x3dcccccdu, 8, 23),
                     "0 01111011 10011001100110011001101");
    ck_assert_str_eq(fmt_hex(b, sizeof b, 0x3dcccccdu, 8, 23), "0x3dcccccd");
    /* bf16 -2 = 0xc000; fp8 e4m3 448 = 0x7e; e5m2 -inf = 0xfc. */
    ck_assert_str_eq(fmt_bits(b, sizeof b, 0xc000, 8, 7), "1 10000000 0000000");
    ck_assert_str_eq(fmt_bits(b, sizeof b, 0x7e, 4, 3), "0 1111 110");
    ck_assert_str_eq(fmt_hex(b, sizeof b, 0x7e, 4, 3), "0x7e");
    ck_assert_str_eq(fmt_bits(b, sizeof b, 0xfc, 5, 2), "1 11111 00");
    ck_assert_str_eq(fmt_hex(b, sizeof b, 0x1, 5, 2), "0x01");
    /* A small buffer is cut, never overrun. */
    char small[5];
    ck_assert_str_eq(fmt_bits(small, sizeof small, 0x7bff, 5, 10), "0 11");
}
END_TEST

START_TEST(values_and_errors)
{
    char b[64];
    ck_assert_str_eq(fmt_value(b, sizeof b, 65504), "65504");
    ck_assert_str_eq(fmt_value(b, sizeof b, (float)0.1), "0.100000001");
    ck_assert_str_eq(fmt_value(b, sizeof b, ldexp(1, -24)), "5.96046448e-08");
    ck_assert_str_eq(fmt_value(b, sizeof b, INFINITY), "inf");
    ck_assert_str_eq(fmt_value(b, sizeof b, -INFINITY), "-inf");
    ck_assert_str_eq(fmt_value(b, sizeof b, NAN), "nan");
    ck_assert_str_eq(fmt_relerr(b, sizeof b, 65504, 65504), "exact");
    /* fp16(0.1) = 0.0999755859375: relative error 2.44e-4. */
    ck_assert_str_eq(fmt_relerr(b, sizeof b, 0.0999755859375, 0.1), "2.4e-04");
    ck_assert_str_eq(fmt_relerr(b, sizeof b, INFINITY, 65520), "overflow");
    ck_assert_str_eq(fmt_relerr(b, sizeof b, 0, 1e-10), "underflow");
    ck_assert_str_eq(fmt_relerr(b, sizeof b, NAN, 1000), "nan");
    ck_assert_str_eq(fmt_relerr(b, sizeof b, NAN, NAN), "exact");
    ck_assert_str_eq(fmt_relerr(b, sizeof b, INFINITY, INFINITY), "exact");
    ck_assert_str_eq(fmt_relerr(b, sizeof b, 448, INFINITY), "finite");
}
END_TEST

START_TEST(eventlog_ring)
{
    static struct eventlog l;
    ck_assert_ptr_null(eventlog_get(&l, 0));
    for (int i = 0; i < 40; i++)
        eventlog_add(&l, "event %d", i);
    ck_assert_ptr_nonnull(strstr(eventlog_get(&l, 0), "event 39"));
    ck_assert_ptr_nonnull(strstr(eventlog_get(&l, 31), "event 8"));
    ck_assert_ptr_null(eventlog_get(&l, 32)); /* older lines are gone */
    char longer[400];
    memset(longer, 'x', sizeof longer - 1);
    longer[sizeof longer - 1] = '\0';
    eventlog_add(&l, "%s", longer); /* cut, not overrun */
    ck_assert_uint_eq(strlen(eventlog_get(&l, 0)), EVENTLOG_WIDTH - 1);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("ui");
    TCase *tc = tcase_create("layout");
    tcase_add_test(tc, layout_too_small);
    tcase_add_test(tc, layout_tiles_every_size);
    tcase_add_test(tc, layout_exact_sizes);
    tcase_add_test(tc, inner_and_center);
    tcase_add_test(tc, tabs_fit_every_width);
    tcase_add_test(tc, text_width_and_fit);
    tcase_add_test(tc, wrap_words);
    tcase_add_test(tc, wrap_keeps_every_word);
    tcase_add_test(tc, bars);
    tcase_add_test(tc, bits_and_hex);
    tcase_add_test(tc, values_and_errors);
    tcase_add_test(tc, eventlog_ring);
    suite_add_tcase(s, tc);
    return harness_run(s);
}
