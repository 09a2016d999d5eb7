/* Unit tests of the run panels' timeline (src/ui/timeline.c): spans of compute and messages in,
 * per GPU a compute row and a communication row out, the communication no compute hides
 * marked exposed, with its seconds; pure, no terminal. */
#include "config.h"

#include <string.h>

#include "harness.h"
#include "ui/timeline.h"

/* The rows of GPU g as text. */
static void rows(const struct timeline *tl, int g, char *cmp, char *com)
{
    timeline_row_text(tl, g, TIMELINE_COMPUTE, cmp);
    timeline_row_text(tl, g, TIMELINE_COMM, com);
}

START_TEST(overlap_hides_the_rest_is_exposed)
{
    /* GPU 0 computes 0-4 s and sends 2-6 s: 2 s hidden, 2 s exposed; GPU 1 only sends, 1-3 s:
     * all of it exposed. 8 s in 8 cells: a cell a second. */
    const struct timeline_span s[] = {
        {0, TIMELINE_COMPUTE, 0, 4},
        {0, TIMELINE_COMM, 2, 6},
        {1, TIMELINE_COMM, 1, 3},
        {2, TIMELINE_COMPUTE, 0, 8}, /* a GPU the timeline does not show */
    };
    struct timeline tl;
    char a[TIMELINE_W + 1], b[TIMELINE_W + 1];
    ck_assert_int_eq(timeline_build(&tl, s, 4, 2, 0, 8, 8), 0);
    ck_assert_int_eq(tl.gpus, 2);
    rows(&tl, 0, a, b);
    ck_assert_str_eq(a, "####....");
    ck_assert_str_eq(b, "..==XX..");
    ck_assert_double_eq(tl.busy[0], 4);
    ck_assert_double_eq(tl.comm[0], 4);
    ck_assert_double_eq(tl.exposed[0], 2);
    rows(&tl, 1, a, b);
    ck_assert_str_eq(a, "........");
    ck_assert_str_eq(b, ".XX.....");
    ck_assert_double_eq(tl.busy[1], 0);
    ck_assert_double_eq(tl.exposed[1], 2);
}
END_TEST

START_TEST(spans_merge_and_clip)
{
    /* overlapping compute counts once; a send computing on both sides of it is hidden whole;
     * what lies outside the step is cut off */
    const struct timeline_span s[] = {
        {0, TIMELINE_COMPUTE, -2, 2}, {0, TIMELINE_COMPUTE, 1, 3}, {0, TIMELINE_COMPUTE, 5, 12},
        {0, TIMELINE_COMM, 1, 2},     {0, TIMELINE_COMM, 2.5, 6},
    };
    struct timeline tl;
    char a[TIMELINE_W + 1], b[TIMELINE_W + 1];
    ck_assert_int_eq(timeline_build(&tl, s, 5, 1, 0, 8, 4), 0); /* 2 s a cell */
    ck_assert_double_eq(tl.busy[0], 6);                         /* 0-3 and 5-8 */
    ck_assert_double_eq(tl.comm[0], 4.5);                       /* 1-2 and 2.5-6 */
    ck_assert_double_eq(tl.exposed[0], 2);                      /* 3-5 */
    rows(&tl, 0, a, b);
    ck_assert_str_eq(a, "####");
    /* cell 2-4: 1.5 s sent, 1 s of it exposed (3-4): marked exposed; cell 4-6: 1 of 2 */
    ck_assert_str_eq(b, "=XX.");
}
END_TEST

START_TEST(the_axis_says_the_span)
{
    char buf[64];
    ck_assert_str_eq(timeline_axis(buf, sizeof buf, 30, 0.025), "0           12.5 ms    25.0 ms");
    ck_assert_str_eq(timeline_axis(buf, sizeof buf, 30, 0.416), "0           208 ms      416 ms");
    /* the middle only with two columns either side of it */
    ck_assert_str_eq(timeline_axis(buf, sizeof buf, 20, 2.5), "0             2.50 s");
    ck_assert_str_eq(timeline_axis(buf, sizeof buf, 24, 2.5), "0        1.25 s   2.50 s");
    ck_assert_str_eq(timeline_axis(buf, sizeof buf, 12, 45.6e-6), "0    45.6 us");
    ck_assert_int_eq((int)strlen(timeline_axis(buf, sizeof buf, 40, 1e-3)), 40);
    /* two rows a GPU, the axis, the legend, and the note when some are left out */
    ck_assert_int_eq(timeline_rows(4, true), 10);
    ck_assert_int_eq(timeline_rows(3, false), 9);
}
END_TEST

START_TEST(degenerate_inputs)
{
    struct timeline tl;
    char a[TIMELINE_W + 1], b[TIMELINE_W + 1];
    ck_assert_int_eq(timeline_build(&tl, NULL, 0, 40, 1, 1, 1000), 0);
    ck_assert_int_eq(tl.gpus, TIMELINE_GPUS);
    ck_assert_int_eq(tl.w, TIMELINE_W);
    rows(&tl, 15, a, b);
    ck_assert_int_eq((int)strlen(a), TIMELINE_W);
    ck_assert_double_eq(tl.exposed[15], 0);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("timeline");
    TCase *tc = tcase_create("timeline");
    tcase_add_test(tc, overlap_hides_the_rest_is_exposed);
    tcase_add_test(tc, spans_merge_and_clip);
    tcase_add_test(tc, the_axis_says_the_span);
    tcase_add_test(tc, degenerate_inputs);
    suite_add_tcase(s, tc);
    return harness_run(s);
}
