/* Snapshot tests of the window's panels: each panel as it opens, drawn off-screen into the
 * panel's area of an 80x24, a 120x40 and a 200x50 terminal and compared, character by
 * character, with the picture saved in tests/data/snapshots/PANEL-COLSxROWS.txt, so that a
 * cut number or an overlap fails a test rather than a walk-through.
 *
 * When a change of picture is meant, `make update-snapshots` saves the new pictures (this
 * program with SCALELAB_UPDATE_SNAPSHOTS=1), to be read in `git diff` before committing. A
 * picture that differs is written beside the test (tests/snapshots-actual/) for a diff.
 *
 * Curses draws into a pad (an off-screen window of any size) of a terminal whose output goes
 * to /dev/null, with the terminal type fixed (vt100), ASCII glyphs and no colour: no tty is
 * needed, and the pictures do not depend on the machine's TERM or locale.
 *
 * The run panels (training, dprun, pprun) are drawn as they open, and again paused after
 * a few steps: their run is paced (a step starts only when the panel asks for one) and seeded,
 * and reproduces bit for bit, so each picture is the same every time; ticks (wall time) are
 * never sent. */
#include "config.h"

#include <curses.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/error.h"
#include "harness.h"
#include "ui/draw.h"
#include "ui/eventlog.h"
#include "ui/layout.h"
#include "ui/panel.h"
#include "ui/panels.h"
#include "ui/theme.h"

#define PICTURE_MAX (64 * 1024)

/* The terminal sizes, rows x columns. */
static const int sizes[][2] = {{24, 80}, {40, 120}, {50, 200}};
#define NSIZES (sizeof sizes / sizeof sizes[0])

/* The panel's picture in a rows x cols window: a line saying where it was drawn, then its
 * canvas row by row, trailing blanks removed. */
static void picture(const struct panel_ops *p, const void *st, int rows, int cols, char *out,
                    size_t n)
{
    struct ui_layout lay;
    ck_assert_int_eq(layout_compute(rows, cols, &lay), 0);
    struct ui_rect in = layout_inner(lay.panel); /* as the window draws it (ui/app.c) */
    in.x += 1;
    in.w -= 2;
    WINDOW *pad = newpad(in.h, in.w);
    ck_assert_ptr_nonnull(pad);
    struct ui_canvas c = canvas_make(pad, (struct ui_rect){0, 0, in.h, in.w});
    p->draw(st, &c);
    size_t len =
        (size_t)snprintf(out, n, "# panel %s drawn in a %dx%d window: %d columns x %d rows\n",
                         p->name, cols, rows, in.w, in.h);
    char line[512];
    for (int y = 0; y < in.h; y++) {
        int got = mvwinnstr(pad, y, 0, line, in.w < 511 ? in.w : 511);
        ck_assert_int_ge(got, 0);
        size_t l = strlen(line);
        while (l > 0 && line[l - 1] == ' ')
            l--;
        ck_assert_uint_lt(len + l + 2, n);
        memcpy(out + len, line, l);
        len += l;
        out[len++] = '\n';
    }
    out[len] = '\0';
    delwin(pad);
}

static char *read_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    char *buf = calloc(1, PICTURE_MAX + 1);
    size_t n = buf ? fread(buf, 1, PICTURE_MAX, f) : 0;
    (void)n;
    fclose(f);
    return buf;
}

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "wb");
    ck_assert_msg(f, "cannot write %s: %s", path, strerror(errno));
    fputs(text, f);
    ck_assert_int_eq(fclose(f), 0);
}

/* The first row where two pictures differ, both versions, for the failure message. */
static void first_difference(const char *want, const char *got, char *buf, size_t n)
{
    int row = 0;
    while (*want && *got) {
        size_t lw = strcspn(want, "\n"), lg = strcspn(got, "\n");
        if (lw != lg || memcmp(want, got, lw) != 0) {
            snprintf(buf, n, "line %d:\n  saved: '%.*s'\n  drawn: '%.*s'", row + 1, (int)lw, want,
                     (int)lg, got);
            return;
        }
        want += lw + (want[lw] == '\n'), got += lg + (got[lg] == '\n'), row++;
    }
    snprintf(buf, n, "line %d: one picture is longer", row + 1);
}

/* The picture of p's state st at each size against its saved one, named PANEL[-what]-COLSxROWS
 * (or saved, when updating). */
static void check_pictures(const struct panel_ops *p, const void *st, const char *what)
{
    static char got[PICTURE_MAX];
    bool update = getenv("SCALELAB_UPDATE_SNAPSHOTS") != NULL;
    for (size_t s = 0; s < NSIZES; s++) {
        int rows = sizes[s][0], cols = sizes[s][1];
        picture(p, st, rows, cols, got, sizeof got);
        char name[128], actual[256];
        snprintf(name, sizeof name, "%s%s%s-%dx%d.txt", p->name, *what ? "-" : "", what, cols,
                 rows);
        char rel[160];
        snprintf(rel, sizeof rel, "snapshots/%s", name);
        const char *path = harness_data(rel);
        if (update) {
            write_file(path, got);
            continue;
        }
        char *want = read_file(path);
        ck_assert_msg(want, "%s: no saved picture (make update-snapshots saves it)", path);
        if (strcmp(want, got) != 0) {
            char why[1024];
            first_difference(want, got, why, sizeof why);
            mkdir("tests", 0777);
            mkdir("tests/snapshots-actual", 0777);
            snprintf(actual, sizeof actual, "tests/snapshots-actual/%s", name);
            write_file(actual, got);
            free(want);
            ck_abort_msg("%s differs from the picture drawn (written to %s), at %s", path, actual,
                         why);
        }
        free(want);
    }
}

/* A terminal that goes nowhere, for the pads. */
struct offscreen {
    FILE *out, *in;
    SCREEN *scr;
};

static void offscreen_open(struct offscreen *t)
{
    t->out = fopen("/dev/null", "w");
    t->in = fopen("/dev/null", "r");
    ck_assert(t->out && t->in);
    t->scr = newterm("vt100", t->out, t->in);
    ck_assert_ptr_nonnull(t->scr);
    theme_init(false, true);
}

static void offscreen_close(struct offscreen *t)
{
    endwin();
    delscreen(t->scr);
    fclose(t->out);
    fclose(t->in);
}

/* Starts the off-screen terminal and opens panel p (ASCII, its events into log). */
static void *open_panel(const struct panel_ops *p, struct offscreen *t, struct eventlog *log)
{
    offscreen_open(t);
    struct panel_env env = {p, log, true, false};
    void *st = NULL;
    struct error e = {0};
    ck_assert_msg(p->init(&st, &env, &e) == 0, "%s: %s", p->name, e.msg);
    return st;
}

/* Each panel as it opens, at each size. */
START_TEST(panel_pictures)
{
    static struct eventlog log;
    const struct panel_ops *p = ui_panels[_i];
    struct offscreen t;
    void *st = open_panel(p, &t, &log);
    check_pictures(p, st, "");
    p->fini(st);
    offscreen_close(&t);
}
END_TEST

/* The run panels paused after their first steps: n until the panel shows step `steps` (a
 * step's record is waited for 2 s at most; the sanitizer builds may need a second n). Some
 * with settings first (name=value, as a lesson's @panel gives them), their pictures named by
 * `tag`: lesson 4's run on tensor-parallel GPUs, with the interleaved schedule's two chunks,
 * and on two data-parallel copies of a tensor-parallel pair (the grid's labels). */
static const struct {
    const char *panel, *done; /* the panel; what its picture or latest event says at the end */
    int steps;
    const char *tag, *set[4];
} runs[] = {
    {"training", "step 3 ", 3, "", {NULL}},
    {"dprun", "every ledger = the calculator", 1, "", {NULL}},
    {"pprun", "order ok", 1, "", {NULL}},
    {"pprun", "order ok", 1, "tp2-interleaved-", {"tp=2", "schedule=interleaved", NULL}},
    {"pprun", "order ok", 1, "dp2-tp2-", {"dp=2", "tp=2", NULL}},
};

START_TEST(run_pictures)
{
    static struct eventlog log;
    static char seen[PICTURE_MAX];
    const struct panel_ops *p = panel_find(runs[_i].panel);
    ck_assert_ptr_nonnull(p);
    struct offscreen t;
    void *st = open_panel(p, &t, &log);
    for (int k = 0; runs[_i].set[k]; k++) {
        char name[32];
        const char *eq = strchr(runs[_i].set[k], '=');
        snprintf(name, sizeof name, "%.*s", (int)(eq - runs[_i].set[k]), runs[_i].set[k]);
        struct error e = {0};
        ck_assert_msg(p->set(st, name, eq + 1, &e) == 0, "%s: %s", runs[_i].set[k], e.msg);
    }
    struct panel_event step = {PANEL_STEP, 0, 1};
    bool done = false;
    for (int i = 0; i < 60 && !done; i++) {
        ck_assert(p->on_event(st, &step) & PANEL_REDRAW);
        picture(p, st, 50, 200, seen, sizeof seen);
        const char *last = eventlog_get(&log, 0);
        done = strstr(seen, runs[_i].done) || (last && strstr(last, runs[_i].done));
    }
    ck_assert_msg(done, "%s: no '%s' after the steps: %s", p->name, runs[_i].done, seen);
    char what[32];
    snprintf(what, sizeof what, "%sstep%d", runs[_i].tag, runs[_i].steps);
    check_pictures(p, st, what);
    p->fini(st);
    offscreen_close(&t);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("snapshot");
    TCase *tc = tcase_create("panels");
    int n = 0;
    while (ui_panels[n])
        n++;
    tcase_set_timeout(tc, 120); /* the run panels start thread-GPUs; the sanitizers are slow */
    tcase_add_loop_test(tc, panel_pictures, 0, n);
    tcase_add_loop_test(tc, run_pictures, 0, (int)(sizeof runs / sizeof runs[0]));
    suite_add_tcase(s, tc);
    return harness_run(s);
}
