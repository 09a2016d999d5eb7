/* Unit tests of the stacked bar the memory panels draw (src/ui/stackbar.c): pure, no terminal. */
#include "config.h"

#include <math.h>

#include "harness.h"
#include "ui/stackbar.h"

START_TEST(parts_end_to_end)
{
    /* 1 + 2 + 1 on a scale of 8 over 8 cells: one cell per unit. */
    double p[3] = {1, 2, 1};
    struct stackbar b;
    stackbar_layout(p, 3, 8, 6, 8, &b);
    const int want[8] = {0, 1, 1, 2, -1, -1, -1, -1};
    for (int i = 0; i < 8; i++)
        ck_assert_int_eq(b.part[i], want[i]);
    ck_assert_int_eq(b.cap_col, 6);
    for (int i = 0; i < 8; i++)
        ck_assert(!b.over[i]);
}
END_TEST

START_TEST(overflow_cells)
{
    /* 10 units against a capacity of 6, scale 12 over 12 cells: cells 6-9 overflow. */
    double p[2] = {4, 6};
    struct stackbar b;
    stackbar_layout(p, 2, 12, 6, 12, &b);
    for (int i = 0; i < 12; i++) {
        ck_assert_int_eq(b.over[i], i >= 6 && i < 10);
        ck_assert_int_eq(b.part[i], i < 4 ? 0 : i < 10 ? 1 : -1);
    }
    ck_assert_int_eq(b.cap_col, 6);
}
END_TEST

START_TEST(degenerate_inputs)
{
    double p[2] = {NAN, -3};
    struct stackbar b;
    stackbar_layout(p, 2, 10, 5, 10, &b);
    for (int i = 0; i < 10; i++)
        ck_assert_int_eq(b.part[i], -1);
    stackbar_layout(p, 2, 0, 5, 10, &b); /* no scale: empty, no mark */
    ck_assert_int_eq(b.cap_col, -1);
    stackbar_layout(p, 2, 10, 50, 10, &b); /* capacity beyond the scale: no mark */
    ck_assert_int_eq(b.cap_col, -1);
    stackbar_layout(p, 2, 10, 5, 100000, &b);
    ck_assert_int_eq(b.width, STACKBAR_MAX_CELLS);
    stackbar_layout(p, 2, 10, 5, -4, &b);
    ck_assert_int_eq(b.width, 0);
    /* the scale shows the larger of the two, with room (1.1 x is inexact in binary) */
    ck_assert_double_eq_tol(stackbar_scale(100, 80), 110, 1e-12);
    ck_assert_double_eq_tol(stackbar_scale(10, 80), 88, 1e-12);
    ck_assert(stackbar_scale(NAN, NAN) == 1);
    /* a total far under the capacity (a tiny model): the bars to its scale, the mark beyond */
    ck_assert_double_eq_tol(stackbar_scale(1, 80), 1.1, 1e-12);
    double parts1[1] = {1};
    stackbar_layout(parts1, 1, stackbar_scale(1, 80), 80, 20, &b);
    ck_assert_int_eq(b.cap_col, -1);
    ck_assert_int_eq(b.part[17], 0);
}
END_TEST

/* A part under one cell's worth still shows, one cell taken from the widest against its share
 * (at 80x24 ZeRO-2's and ZeRO-3's gradients vanished from their bars); a bar too short for a
 * cell each shows what lies under each cell's middle. */
START_TEST(small_parts_show)
{
    double p[3] = {10, 0.2, 9.8};
    struct stackbar b;
    stackbar_layout(p, 3, 20, 20, 20, &b);
    int count[3] = {0, 0, 0};
    for (int i = 0; i < 20; i++)
        if (b.part[i] >= 0)
            count[b.part[i]]++;
    ck_assert_int_eq(count[1], 1);
    ck_assert_int_eq(count[0] + count[1] + count[2], 20);
    ck_assert(b.part[10] == 1 && b.part[9] == 0 && b.part[11] == 2); /* in order */
    double zero[3] = {5, 0, 5};
    stackbar_layout(zero, 3, 10, 10, 10, &b);
    for (int i = 0; i < 10; i++)
        ck_assert_int_ne(b.part[i], 1); /* a part of nothing takes no cell */
    double many[3] = {0.1, 0.1, 0.1};
    stackbar_layout(many, 3, 10, 10, 10, &b); /* 0.3 of 10 is no cell: nothing to share */
    for (int i = 0; i < 10; i++)
        ck_assert_int_eq(b.part[i], -1);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("stackbar");
    TCase *tc = tcase_create("stackbar");
    tcase_add_test(tc, parts_end_to_end);
    tcase_add_test(tc, overflow_cells);
    tcase_add_test(tc, degenerate_inputs);
    tcase_add_test(tc, small_parts_show);
    suite_add_tcase(s, tc);
    return harness_run(s);
}
