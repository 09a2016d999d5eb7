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
 * The run panels (training, dprun, pprun, cprun, eprun) are drawn as they open, and again
 * paused after a few steps: their run is paced (a step starts only when the panel asks for one)
 * and seeded, so each picture is the same every time on one machine; ticks (wall time) are
 * never sent. Another CPU moves a run's losses and norms in their last bits (OpenBLAS's
 * kernels add in another order: tests/train_figures.py), which a printed figure or a plot may
 * show: a picture of a run after its steps is compared as text, its figures within a tolerance
 * and its plots by their essentials (same_run_picture). */
#include "config.h"

#include <ctype.h>
#include <curses.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/error.h"
#include "harness.h"
#include "lesson/lesson.h"
#include "ui/draw.h"
#include "ui/eventlog.h"
#include "ui/hints.h"
#include "ui/layout.h"
#include "ui/panel.h"
#include "ui/panels.h"
#include "ui/plot.h"
#include "ui/steppanel.h"
#include "ui/theme.h"

#define PICTURE_MAX (64 * 1024)

/* The terminal sizes, rows x columns. */
static const int sizes[][2] = {{24, 80}, {40, 120}, {50, 200}};
#define NSIZES (sizeof sizes / sizeof sizes[0])

/* The panel's picture in a rows x cols window, once the work it started elsewhere is done
 * (harness_settle: the window's polls): a line saying where it was drawn, then its canvas row
 * by row, trailing blanks removed. */
static void picture(const struct panel_ops *p, void *st, int rows, int cols, char *out, size_t n)
{
    harness_settle(p, st);
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

static bool same_run_line(const char *a, int la, const char *b, int lb);

/* The first row where two pictures differ (for a run's, differ beyond same_run_line), both
 * versions, for the failure message. */
static void first_difference(const char *want, const char *got, bool run, char *buf, size_t n)
{
    int row = 0;
    while (*want && *got) {
        size_t lw = strcspn(want, "\n"), lg = strcspn(got, "\n");
        if ((lw != lg || memcmp(want, got, lw) != 0) &&
            !(run && same_run_line(want, (int)lw, got, (int)lg))) {
            snprintf(buf, n, "line %d:\n  saved: '%.*s'\n  drawn: '%.*s'", row + 1, (int)lw, want,
                     (int)lg, got);
            return;
        }
        want += lw + (want[lw] == '\n'), got += lg + (got[lg] == '\n'), row++;
    }
    snprintf(buf, n, "line %d: one picture is longer", row + 1);
}

/* ---------------------------------------------- pictures of a run, on any CPU */

static bool shows_a_run(const char *panel); /* a run panel's: its essentials take steps */

/* A line of a run's picture as tokens: words (any run of characters but blanks, digits and
 * plot glyphs), numbers, and runs of plot glyphs (ui/plot.c's '*', '|', 'x', 'v' and the
 * axis line's '-', at least two or a lone '*' or '|'), blanks only separating them. */
enum tok_kind { TOK_WORD, TOK_INT, TOK_DEC, TOK_PLOT };
struct tok {
    enum tok_kind kind;
    const char *s;
    int n;
    double v;
};

static bool plot_glyph(char c)
{
    return c == '*' || c == '|' || c == 'x' || c == 'v' || c == '-';
}

static int tokens(const char *l, int len, struct tok *t, int max)
{
    int n = 0;
    for (int i = 0; i < len && n < max;) {
        if (l[i] == ' ') {
            i++;
            continue;
        }
        int j = i;
        bool sign = (l[i] == '+' || l[i] == '-') && i + 1 < len && isdigit((unsigned char)l[i + 1]);
        if (sign || isdigit((unsigned char)l[i])) {
            char *end;
            double v = strtod(l + i, &end);
            j = (int)(end - l);
            bool dec = memchr(l + i, '.', (size_t)(j - i)) || memchr(l + i, 'e', (size_t)(j - i));
            t[n++] = (struct tok){dec ? TOK_DEC : TOK_INT, l + i, j - i, v};
            i = j;
            continue;
        }
        while (j < len && plot_glyph(l[j]))
            j++;
        bool word_after = j < len && l[j] != ' ' && !isdigit((unsigned char)l[j]);
        if (j > i && !word_after && (j - i >= 2 || l[i] == '*' || l[i] == '|')) {
            t[n++] = (struct tok){TOK_PLOT, l + i, j - i, 0};
            i = j;
            continue;
        }
        j = i;
        while (j < len && l[j] != ' ' && !isdigit((unsigned char)l[j]))
            j++;
        if (j == i) /* a digit the number reader did not take */
            j++;
        t[n++] = (struct tok){TOK_WORD, l + i, j - i, 0};
        i = j;
    }
    return n;
}

static bool glyphs_only(const struct tok *t)
{
    for (int i = 0; i < t->n; i++)
        if (!plot_glyph(t->s[i]))
            return false;
    return true;
}

/* Whether two decimals printed by a run's picture are the same figure: within 1% (the largest
 * spread of a figure these pictures print, across OpenBLAS's core types, is 0.08%: the loss
 * after 200 steps of fp16) or one unit of the last digit printed (a figure at a rounding
 * boundary). */
static bool same_figure(const struct tok *a, const struct tok *b)
{
    const char *e = memchr(a->s, 'e', (size_t)a->n), *end = e ? e : a->s + a->n;
    const char *dot = memchr(a->s, '.', (size_t)(end - a->s));
    double unit = pow(10, -(dot ? (double)(end - dot - 1) : 0) + (e ? atof(e + 1) : 0));
    double d = fabs(a->v - b->v);
    return d <= 0.01 * fmax(fabs(a->v), fabs(b->v)) || d <= unit * 1.0000001;
}

/* Whether line a (saved) and b (drawn) of a run's picture show the same thing: the same words
 * and whole numbers, the same decimals within same_figure; or, in a plot's rows, the same
 * words (its curve and its axis labels are the run's figures: the essentials check the plot
 * is there). A row of a plot's area may be blank on one machine and hold a point on another. */
static bool same_run_line(const char *a, int la, const char *b, int lb)
{
    struct tok ta[128], tb[128];
    int na = tokens(a, la, ta, 128), nb = tokens(b, lb, tb, 128);
    bool plot = false;
    for (int i = 0; i < na; i++)
        plot |= ta[i].kind == TOK_PLOT;
    for (int i = 0; i < nb; i++)
        plot |= tb[i].kind == TOK_PLOT;
    if (plot) { /* the words alone, in order (a lone 'x' or 'v' there is a point too) */
        int i = 0, j = 0;
        for (;;) {
            while (i < na && (ta[i].kind != TOK_WORD || glyphs_only(&ta[i])))
                i++;
            while (j < nb && (tb[j].kind != TOK_WORD || glyphs_only(&tb[j])))
                j++;
            if (i == na || j == nb)
                return i == na && j == nb;
            if (ta[i].n != tb[j].n || memcmp(ta[i].s, tb[j].s, (size_t)ta[i].n) != 0)
                return false;
            i++, j++;
        }
    }
    if (na != nb)
        return false;
    for (int i = 0; i < na; i++) {
        if (ta[i].kind != tb[i].kind)
            return false;
        if (ta[i].kind == TOK_DEC ? !same_figure(&ta[i], &tb[i])
                                  : ta[i].n != tb[i].n || memcmp(ta[i].s, tb[i].s, (size_t)ta[i].n))
            return false;
    }
    return true;
}

/* Whether a run's picture drawn here matches the one saved: the same rows, each the same or
 * the same by same_run_line. */
static bool same_run_picture(const char *want, const char *got)
{
    while (*want && *got) {
        int lw = (int)strcspn(want, "\n"), lg = (int)strcspn(got, "\n");
        if ((lw != lg || memcmp(want, got, (size_t)lw) != 0) && !same_run_line(want, lw, got, lg))
            return false;
        want += lw + (want[lw] == '\n'), got += lg + (got[lg] == '\n');
    }
    return !*want && !*got;
}

/* The picture of p's state st at each size against its saved one, named
 * PREFIX[-what]-COLSxROWS (PREFIX the panel's name, or NULL for it), or saved when updating.
 * A picture of a run after its steps (run true) is compared by same_run_picture. */
static void check_pictures(const struct panel_ops *p, void *st, const char *prefix,
                           const char *what, bool run)
{
    static char got[PICTURE_MAX];
    bool update = getenv("SCALELAB_UPDATE_SNAPSHOTS") != NULL;
    for (size_t s = 0; s < NSIZES; s++) {
        int rows = sizes[s][0], cols = sizes[s][1];
        picture(p, st, rows, cols, got, sizeof got);
        char name[128], actual[256];
        snprintf(name, sizeof name, "%s%s%s-%dx%d.txt", prefix ? prefix : p->name, *what ? "-" : "",
                 what, cols, rows);
        char rel[160];
        snprintf(rel, sizeof rel, "snapshots/%s", name);
        const char *path = harness_data(rel);
        if (update) {
            write_file(path, got);
            continue;
        }
        char *want = read_file(path);
        ck_assert_msg(want, "%s: no saved picture (make update-snapshots saves it)", path);
        if (strcmp(want, got) != 0 && !(run && same_run_picture(want, got))) {
            char why[1024];
            first_difference(want, got, run, why, sizeof why);
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

/* With SCALELAB_TEST_NUMERIC set (tests/as_cpu.sh: the numeric tests under another CPU's
 * kernels), only the pictures of runs after their steps are checked: the others show nothing
 * a CPU can move. */
static bool numeric_only(void)
{
    return getenv("SCALELAB_TEST_NUMERIC") != NULL;
}

/* Each panel as it opens, at each size. */
START_TEST(panel_pictures)
{
    static struct eventlog log;
    const struct panel_ops *p = ui_panels[_i];
    if (numeric_only())
        return;
    struct offscreen t;
    void *st = open_panel(p, &t, &log);
    check_pictures(p, st, NULL, "", false);
    p->fini(st);
    offscreen_close(&t);
}
END_TEST

/* The run panels paused after their first steps: n until the panel shows step `steps` (each
 * step taken by the polls, as the window takes it, once the run has done it). Some
 * with settings first (name=value, as a lesson's @panel gives them), their pictures named by
 * `tag`: lesson 4's run on tensor-parallel GPUs, with the interleaved schedule's two chunks,
 * and on two data-parallel copies of a tensor-parallel pair (the grid's labels). */
static int split_lines(char *text, char **lines, int max);

/* The rows of lesson 1's plot titled title (from its title's row to the next plot's) holding
 * curve marks in a picture, and whether one of them is mark. */
static int plot_rows(const char *pic, const char *title, char mark, bool *has)
{
    char buf[PICTURE_MAX];
    snprintf(buf, sizeof buf, "%s", pic);
    char *L[256];
    int n = split_lines(buf, L, 256), rows = 0, from = -1;
    for (int i = 0; i < n && from < 0; i++)
        if (!strncmp(L[i], title, strlen(title)) && L[i][strlen(title)] == ' ')
            from = i;
    *has = false;
    for (int i = from; from >= 0 && i < n; i++) {
        if (i > from && L[i][0] != ' ')
            break; /* the next plot's title, or the legend */
        if (strlen(L[i]) > PLOT_MARGIN && strpbrk(L[i] + PLOT_MARGIN, "*|xv"))
            rows++;
        *has |= strlen(L[i]) > PLOT_MARGIN && strchr(L[i] + PLOT_MARGIN, mark);
    }
    return rows;
}

/* 300 steps of batch 4: the loss keeps its rows, the batches under the floor marked v. */
static void loss_below_floor(const char *pic)
{
    bool v;
    ck_assert_int_ge(plot_rows(pic, "loss", 'v', &v), 5);
    ck_assert_msg(v, "a batch under the floor is marked: %s", pic);
}

/* A clip: the coefficient leaves the top row. */
static void clipped(const char *pic)
{
    bool low;
    ck_assert_int_ge(plot_rows(pic, "coef", '*', &low), 2);
}

/* The scale's staircase: three rows at least, the skipped steps marked x. */
/* A number of milliseconds after `after` in pic ("211 ms", "211 ms:"), or NAN. */
static double ms_after(const char *pic, const char *after)
{
    const char *at = strstr(pic, after);
    double v;
    char unit[4];
    if (!at || sscanf(at + strlen(after), "%lf %3s", &v, unit) != 2 || strncmp(unit, "ms", 2))
        return NAN;
    return v;
}

/* The timeline of a step timed as synthetic-7b (8 GPUs, ZeRO-3) says the step the run's own
 * line says, the run's step beside the calculator's, and its axis ends there; GPU 0's exposed
 * communication fits in the time it does not compute, and some of it hides (=) behind compute
 * while some does not (X). */
static void timeline_agrees(const char *pic)
{
    const char *line = strstr(pic, "  loss ");
    ck_assert_ptr_nonnull(line);
    double step = NAN, run = ms_after(pic, "  run "),
           total = ms_after(line, "\nstep "); /* the timeline's, after the run's line */
    ck_assert(sscanf(strstr(line + 7, "  ") + 2, "%lf ms simulated", &step) == 1);
    ck_assert_double_eq(step, run);
    ck_assert_double_eq(step, total);
    double busy = ms_after(pic, "GPU 0 computes "), exposed = ms_after(pic, "exposed comm ");
    ck_assert(busy > 0 && exposed > 0 && exposed <= step - busy);
    char end[32];
    snprintf(end, sizeof end, "%g ms\n", step);
    ck_assert_msg(strstr(pic, end), "the axis ends at the step, %g ms", step);
    const char *comm = strstr(pic, "      comm");
    ck_assert_ptr_nonnull(comm);
    const char *eol = strchr(comm, '\n');
    ck_assert(memchr(comm, '=', eol - comm) && memchr(comm, 'X', eol - comm));
}

static void staircase(const char *pic)
{
    bool x;
    ck_assert_int_ge(plot_rows(pic, "scale", 'x', &x), 3);
    ck_assert(x);
}

static const struct {
    const char *panel, *done; /* the panel; what its picture or latest event says at the end */
    int steps;
    const char *tag, *set[6]; /* settings; "key:K", keys pressed once the steps are done */
    void (*check)(const char *picture); /* at 120x40, where the issue saw them fail */
} runs[] = {
    {"training", "step 3 ", 3, "", {NULL}, NULL},
    /* 300 steps of batch 4 (batches under the floor), a clip, the scale's staircase with a
     * growth interval of 20 */
    {"training", "step 300 ", 300, "", {NULL}, loss_below_floor},
    {"training", "step 40 ", 40, "clip-", {"clip=0.2", NULL}, clipped},
    {"training",
     "step 200 ",
     200,
     "fp16-growth20-",
     {"precision=fp16", "growth=20", NULL},
     staircase},
    {"dprun", "every ledger = the calculator", 1, "", {NULL}, NULL},
    /* the timeline of a step timed as synthetic-7b, on more GPUs than 80x24 shows */
    {"dprun",
     "every ledger = the calculator",
     1,
     "zero3-gpus8-time-",
     {"zero=3", "gpus=8", "key:w", NULL},
     timeline_agrees},
    {"pprun", "order ok", 1, "", {NULL}, NULL},
    {"pprun", "order ok", 1, "tp2-interleaved-", {"tp=2", "schedule=interleaved", NULL}, NULL},
    {"pprun", "order ok", 1, "dp2-tp2-", {"dp=2", "tp=2", NULL}, NULL},
    /* four stages of two: at 80x24 one optional row is left, for the bubble's why */
    {"pprun", "order ok", 1, "pp4-dp2-", {"pp=4", "dp=2", NULL}, NULL},
    /* a pipeline that synthetic-7b fits, timed as it: the bubble in seconds; its timeline */
    {"pprun",
     "order ok",
     1,
     "pp4-m8-bf16-",
     {"pp=4", "micro_batches=8", "batch=8", "precision=bf16", NULL},
     NULL},
    {"pprun",
     "order ok",
     1,
     "pp4-m8-bf16-time-",
     {"pp=4", "micro_batches=8", "batch=8", "precision=bf16", "key:w"},
     NULL},
    /* four tensor-parallel GPUs of a stage side by side: each bar keeps its label */
    {"pprun", "ledger = calc", 1, "tp4-", {"pp=1", "tp=4", "micro_batches=1", NULL}, NULL},
    /* ring attention after a step: every block computed, the ledgers and the scores measured;
     * the naive split's uneven work, and two GPUs at a longer sequence */
    {"cprun", "ledger = calc", 1, "", {NULL}, NULL},
    {"cprun", "ledger = calc", 1, "naive-", {"cp_naive=on", NULL}, NULL},
    {"cprun", "ledger = calc", 1, "cp2-seq128-", {"cp=2", "seq=128", NULL}, NULL},
    /* timed as itself (the engine does not time ring attention as a model yet): its timeline */
    {"cprun", "ledger = calc", 1, "time-", {"key:w", NULL}, NULL},
    /* experts after a step: the load per expert, each GPU's ledger, the all-to-all bytes; two
     * GPUs, top-1, no aux loss */
    {"eprun", "ledger = calc", 1, "", {NULL}, NULL},
    {"eprun", "ledger = calc", 1, "ep2-top1-aux0-", {"ep=2", "top_k=1", "aux_loss_coef=0"}, NULL},
    {"eprun", "ledger = calc", 1, "time-", {"key:w", NULL}, NULL},
    /* lesson 3 on 16 GPUs: the rows, and the ring/tree plot beside them at every size */
    {"collective", NULL, 0, "gpus16", {"gpus=16", NULL}, NULL},
    /* an all-to-all two exchanges in: each GPU's blocks from its two left neighbours */
    {"collective", "step 2 of", 2, "alltoall-", {"op=alltoall", "gpus=4", "size=64KiB"}, NULL},
    {"collective", "step 1 of", 1, "alltoall-direct-", {"algo=direct", "gpus=6", NULL}, NULL},
    /* a tiny model in the calculators: its MiB in MiB, its bars to their own scale */
    {"memory", NULL, 0, "tiny", {"model=tiny", NULL}, NULL},
    {"parallel", NULL, 0, "tiny", {"model=tiny", NULL}, NULL},
};

START_TEST(run_pictures)
{
    static struct eventlog log;
    static char seen[PICTURE_MAX];
    const struct panel_ops *p = panel_find(runs[_i].panel);
    ck_assert_ptr_nonnull(p);
    if (numeric_only() && !(runs[_i].steps > 0 && shows_a_run(p->name)))
        return;
    if (harness_sanitized() && runs[_i].steps >= 100) /* hundreds of steps: the normal build's */
        return;
    struct offscreen t;
    void *st = open_panel(p, &t, &log);
    for (int k = 0; runs[_i].set[k]; k++) {
        if (!strncmp(runs[_i].set[k], "key:", 4))
            continue; /* after the steps */
        char name[32];
        const char *eq = strchr(runs[_i].set[k], '=');
        snprintf(name, sizeof name, "%.*s", (int)(eq - runs[_i].set[k]), runs[_i].set[k]);
        struct error e = {0};
        ck_assert_msg(p->set(st, name, eq + 1, &e) == 0, "%s: %s", runs[_i].set[k], e.msg);
    }
    struct panel_event step = {PANEL_STEP, 0, 1};
    bool done = runs[_i].steps == 0; /* settings only */
    for (int i = 0; i < 2 * runs[_i].steps + 20 && !done; i++) {
        ck_assert(p->on_event(st, &step) & PANEL_REDRAW);
        picture(p, st, 50, 200, seen, sizeof seen);
        const char *last = eventlog_get(&log, 0);
        done = strstr(seen, runs[_i].done) || (last && strstr(last, runs[_i].done));
    }
    ck_assert_msg(done, "%s: no '%s' after the steps: %s", p->name, runs[_i].done, seen);
    for (int k = 0; runs[_i].set[k]; k++)
        if (!strncmp(runs[_i].set[k], "key:", 4))
            p->on_key(st, runs[_i].set[k][4]);
    char what[48];
    snprintf(what, sizeof what, runs[_i].steps ? "%sstep%d" : "%s", runs[_i].tag, runs[_i].steps);
    check_pictures(p, st, NULL, what, runs[_i].steps > 0 && shows_a_run(p->name));
    if (runs[_i].check) {
        picture(p, st, 40, 120, seen, sizeof seen);
        runs[_i].check(seen);
    }
    p->fini(st);
    offscreen_close(&t);
}
END_TEST

/* ------------------------------------------------------------------ every lesson step */

/* Every step of every lesson, its panel opened as the window opens it (its start, the
 * lesson's head settings, the step's), the run panels advanced a few steps (a curve to see, a
 * Gantt chart of a step), drawn at each size and compared with
 * tests/data/snapshots/lessonN-stepSS-COLSxROWS.txt; then the panel's essential elements are
 * looked for in the picture (essentials below), at each size, so that a picture updated by
 * make update-snapshots cannot quietly lose one. */
static struct lesson **lessons;
static size_t nlessons;
static int step_lesson[256], step_index[256], nsteps_all;

/* Loads the shipped lessons once (in main, before the tests fork); a failure leaves none,
 * which the first test reports. */
static struct error load_error;

static void load_lessons(void)
{
    if (lessons || load_error.code)
        return;
    if (lesson_load_all(NULL, &lessons, &nlessons, &load_error) != 0) {
        lessons = NULL, nlessons = 0;
        return;
    }
    for (size_t l = 0; l < nlessons; l++)
        for (size_t st = 0; st < lessons[l]->nsteps && nsteps_all < 256; st++)
            step_lesson[nsteps_all] = (int)l, step_index[nsteps_all++] = (int)st;
}

/* The picture's lines, in place: lines[i] points into text (newlines made NULs). */
static int split_lines(char *text, char **lines, int max)
{
    int n = 0;
    for (char *p = text; *p && n < max;) {
        lines[n++] = p;
        char *nl = strchr(p, '\n');
        if (!nl)
            break;
        *nl = '\0';
        p = nl + 1;
    }
    return n;
}

/* The row of the first line starting with prefix, at or after row from, or -1. */
static int row_of(char **lines, int n, int from, const char *prefix)
{
    for (int i = from; i < n; i++)
        if (!strncmp(lines[i], prefix, strlen(prefix)))
            return i;
    return -1;
}

/* Operations in a Gantt row's cells: runs of one letter (neighbouring operations always differ
 * in kind, micro-batch or chunk, so each run is one operation). */
static int gantt_ops(const char *cells)
{
    int n = 0;
    for (const char *c = cells; *c; c++)
        if (*c != '.' && *c != ' ' && (c == cells || c[-1] != *c))
            n++;
    return n;
}

struct found {
    char what[200]; /* the essential elements seen, for the table of the closing report */
};

static void seen(struct found *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void seen(struct found *f, const char *fmt, ...)
{
    size_t len = strlen(f->what);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(f->what + len, sizeof f->what - len, fmt, ap);
    va_end(ap);
}

/* Lesson 1's training run: four plots, the loss over at least 3 distinct rows, the underflow
 * and the events' rows. */
static void training_essentials(char **L, int n, const char *where, struct found *f)
{
    int loss = row_of(L, n, 0, "loss "), norm = row_of(L, n, loss + 1, "norm ");
    int coef = row_of(L, n, norm + 1, "coef "), scale = row_of(L, n, coef + 1, "scale ");
    ck_assert_msg(loss >= 0 && norm > loss && coef > norm && scale > coef,
                  "%s: the four plots (loss, norm, coef, scale)", where);
    int rows = 0;
    for (int r = loss; r < norm; r++)
        rows += strlen(L[r]) > PLOT_MARGIN && strpbrk(L[r] + PLOT_MARGIN, "*|xv") != NULL;
    ck_assert_msg(rows >= 3, "%s: the loss curve on %d rows, not 3 or more", where, rows);
    ck_assert_msg(row_of(L, n, scale, "") >= 0 && (row_of(L, n, 0, "underflowed") >= 0 ||
                                                   row_of(L, n, 0, "gradients underflowed") >= 0),
                  "%s: the underflow per layer", where);
    seen(f, "loss curve %d rows, norm, coef, scale, underflow", rows);
}

/* Lesson 2: the sawtooth (3 rows at the least) and synthetic-7b's line, whole. */
static void checkpoint_essentials(char **L, int n, const char *where, struct found *f)
{
    int title = -1;
    for (int i = 0; i < n && title < 0; i++)
        if (strstr(L[i], "over the step (time = FLOPs)") || strstr(L[i], "over one step"))
            title = i;
    ck_assert_msg(title >= 0, "%s: the memory over the step", where);
    int rows = 0;
    for (int r = title + 1; r < n && strncmp(L[r], "          forward", 17); r++)
        rows += strchr(L[r], '#') != NULL;
    ck_assert_msg(rows >= 2, "%s: the sawtooth on %d rows", where, rows);
    int big = -1;
    for (int i = 0; i < n; i++)
        if (strstr(L[i], "7B") || strstr(L[i], "synthetic-7b"))
            big = i;
    ck_assert_msg(big >= 0 && strlen(L[big]) > 3 && !strcmp(L[big] + strlen(L[big]) - 3, "GiB"),
                  "%s: synthetic-7b's line, whole", where);
    seen(f, "sawtooth %d rows, per-layer bars, 7B line", rows);
}

/* Lesson 3: every GPU (a box, a row, or named as summarised), and the ring/tree plot with its
 * crossover marked. */
static void collective_essentials(char **L, int n, const char *where, struct found *f)
{
    int gpus = 0;
    ck_assert_msg(sscanf(L[0], "%*[^,], %d GPUs", &gpus) == 1 || sscanf(L[0], "%*s %d", &gpus),
                  "%s: the header names the GPUs: %s", where, L[0]);
    char text[PICTURE_MAX] = "";
    for (int i = 0; i < n; i++)
        strcat(strcat(text, L[i]), "\n");
    for (int g = 0; g < gpus; g++) {
        char name[32], rows[32];
        snprintf(name, sizeof name, "GPU %d ", g);
        snprintf(rows, sizeof rows, "GPU %d", g);
        bool summarised = strstr(text, "... GPUs ") != NULL; /* named as left out */
        ck_assert_msg(strstr(text, name) || strstr(text, rows) || summarised, "%s: GPU %d is drawn",
                      where, g);
    }
    if (strstr(L[0], "all-to-all") || strstr(L[0], "pairwise") || strstr(L[0], "direct")) {
        /* one node: the two take the same time, no crossover */
        bool plot = (strstr(text, "p pairwise  d direct  * both") ||
                     strstr(text, "p pairwise d direct * both")) &&
                    strstr(text, "^");
        ck_assert_msg(plot, "%s: the pairwise/direct plot, its one curve named", where);
        ck_assert_msg(strstr(text, "(N-1)/N"), "%s: the bytes against (N-1)/N x size", where);
        seen(f, "%d GPUs, pairwise/direct plot", gpus);
        return;
    }
    bool plot = (strstr(text, "r ring  t tree") || strstr(text, "r ring t tree")) &&
                (strstr(text, "crossover") || strstr(text, "| ")) && strstr(text, "^");
    ck_assert_msg(plot, "%s: the ring/tree plot with its crossover marked", where);
    seen(f, "%d GPUs, ring/tree plot, crossover marker", gpus);
}

/* A Gantt chart's rows (from row `from`, those matching is_row): each stage's operations,
 * every one drawn: runs == want each. */
static int gantt_rows_ok(char **L, int n, int from, int cells_at, bool (*is_row)(const char *),
                         int want, const char *where)
{
    int rows = 0;
    for (int r = from; r < n; r++)
        if (is_row(L[r])) {
            int ops = gantt_ops(L[r] + cells_at);
            ck_assert_msg(ops == want, "%s: a stage's row has %d operations, not %d: %s", where,
                          ops, want, L[r]);
            rows++;
        }
    return rows;
}

static bool par_row(const char *l)
{
    return strlen(l) > 3 && (l[0] == ' ' || (l[0] >= '0' && l[0] <= '9')) && l[1] >= '0' &&
           l[1] <= '9' && l[2] == ' ' && l[3] != ' ';
}

static bool pp_row(const char *l)
{
    return strlen(l) > 3 && l[0] == 's' && l[1] >= '0' && l[1] <= '9' && l[2] == ' ' && l[3] != ' ';
}

/* Lesson 4's layouts: each stage's bar, the chart with every operation, its legend. */
static void parallel_essentials(char **L, int n, const char *where, struct found *f)
{
    int t = -1, p = 0, m = 0, v = 1;
    for (int i = 0; i < n && t < 0; i++) {
        const char *b = strstr(L[i], " bubble ");
        if (b && (sscanf(b, " bubble %d/(%dx%d)", &p, &v, &m) == 3 ||
                  (v = 1, sscanf(b, " bubble %d/%d", &p, &m) == 2)))
            t = i;
    }
    if (t < 0 && row_of(L, n, 0, "one stage: no pipeline") >= 0) {
        ck_assert_msg(row_of(L, n, 0, "st0") >= 0, "%s: the stage's bar", where);
        seen(f, "bar, one stage: no chart (said)");
        return;
    }
    ck_assert_msg(t >= 0, "%s: the schedule's bubble", where);
    int rows = gantt_rows_ok(L, n, t + 1, 3, par_row, 2 * m * v, where);
    ck_assert_msg(rows >= (p + 1 < 2 ? p + 1 : 2), "%s: the chart's rows", where);
    ck_assert_msg(row_of(L, n, t + 1, "st") < 0 && row_of(L, n, 0, "st0") >= 0,
                  "%s: the stages' bars", where);
    seen(f, "bars, Gantt %d rows x %d ops each, legend", rows, 2 * m * v);
}

/* Lesson 4's run, after a step: the grid, the verdict, the chart with every operation, its
 * scale, the bubble, the held micro-batches. */
static void pprun_essentials(char **L, int n, const char *where, struct found *f)
{
    int m = 0;
    const char *h = strstr(L[0], " m ");
    if (!h || sscanf(h, " m %d", &m) != 1) {
        h = strstr(L[0], " m");
        ck_assert_msg(h && sscanf(h, " m%d", &m) == 1, "%s: the header: %s", where, L[0]);
    }
    int v = strstr(L[0], "interleaved") ? 2 : 1;
    int verdict = -1;
    for (int i = 0; i < n; i++)
        if (strstr(L[i], "ledger = calc") || strstr(L[i], "differs from calc"))
            verdict = i;
    ck_assert_msg(verdict >= 0, "%s: the ledgers' verdict", where);
    if (row_of(L, n, verdict, "one stage, one micro-batch") >= 0) {
        seen(f, "grid, verdict, no pipeline (one stage, one micro-batch)");
        return;
    }
    int rows = gantt_rows_ok(L, n, verdict + 1, 3, pp_row, 2 * m * v, where);
    ck_assert_msg(rows >= 1, "%s: the chart", where);
    bool scale = false;
    for (int i = verdict; i < n; i++)
        scale |= (strstr(L[i], " us") || strstr(L[i], " ms")) &&
                 (strstr(L[i], "; col") || strstr(L[i], "; 1 column") ||
                  strstr(L[i], "stretched") || strstr(L[i], "order"));
    /* the measured bubble comes with the line that says why it is not the formula's, before
     * any other optional line; the chart's scale where a row is left for it */
    bool why = row_of(L, n, 0, "why ") >= 0;
    ck_assert_msg(why, "%s: why the measured bubble is not the formula's", where);
    ck_assert_msg(scale || n < 20, "%s: the chart says its scale", where);
    ck_assert_msg(row_of(L, n, 0, "held:") >= 0 && row_of(L, n, 0, "bubble ") >= 0,
                  "%s: the bubble and the micro-batches held", where);
    seen(f, "grid, verdict, Gantt %d rows x %d ops, scale, bubble, held", rows, 2 * m * v);
}

/* The Lab and lesson 5: a bar and a total for each stage, none of them 0.00. */
static void memory_essentials(char **L, int n, const char *where, struct found *f)
{
    static const char *const stage[] = {"DDP", "ZeRO-1", "ZeRO-2", "ZeRO-3"};
    for (int z = 0; z < 4; z++) {
        bool row = false;
        for (int i = 0; i < n && !row; i++) {
            const char *s = strstr(L[i], stage[z]);
            row = s && (s == L[i] + 2 || s == L[i]) && !strstr(L[i], " 0.00");
            if (row)
                ck_assert_msg(i + 1 < n && strlen(L[i + 1]) > 10, "%s: %s's bar", where, stage[z]);
        }
        ck_assert_msg(row, "%s: %s's total", where, stage[z]);
    }
    seen(f, "4 stages' bars and totals");
}

/* The Lab's run, after a step: each GPU's bar (or said to be left out), the verdict, the loss. */
static void dprun_essentials(char **L, int n, const char *where, struct found *f)
{
    int gpus = 0;
    ck_assert_msg(sscanf(L[0], "%*[^,], %d GPUs", &gpus) == 1, "%s: %s", where, L[0]);
    int shown = 0;
    for (int i = 0; i < n; i++)
        shown += !strncmp(L[i], "GPU", 3) && L[i][3] >= '0' && L[i][3] <= '9';
    bool said = row_of(L, n, 0, "(a larger window shows all") >= 0;
    ck_assert_msg(shown == gpus || said, "%s: %d of %d GPUs, unsaid", where, shown, gpus);
    ck_assert_msg(row_of(L, n, 0, "loss ") >= 0, "%s: the loss", where);
    seen(f, "%d of %d GPUs' bars%s, verdict, loss", shown, gpus, said ? " (rest said)" : "");
}

/* The long sequences lesson's ring: the causal matrix (a row per query chunk, labelled by its
 * GPU), each GPU's bar, the scores of both splits, the ledgers' verdict. */
static void cprun_essentials(char **L, int n, const char *where, struct found *f)
{
    int C = 0;
    const char *h = strstr(L[0], "cp ");
    ck_assert_msg(h && sscanf(h, "cp %d", &C) == 1 && C > 0, "%s: the header: %s", where, L[0]);
    int head = row_of(L, n, 0, "k "), rows = 0;
    ck_assert_msg(head >= 0, "%s: the matrix's head", where);
    for (int r = head + 1; r < n && L[r][0] >= '0' && L[r][0] <= '9' && L[r][1] == ' '; r++)
        rows++;
    ck_assert_msg(rows == 2 * C, "%s: %d rows of the matrix, not %d", where, rows, 2 * C);
    int scores = -1;
    for (int i = 0; i < n && scores < 0; i++)
        if (strstr(L[i], "scores") && strstr(L[i], "balanced") && strstr(L[i], "naive"))
            scores = i;
    ck_assert_msg(scores >= 0, "%s: the scores of both splits", where);
    ck_assert_msg(row_of(L, n, 0, "ledger = calc") >= 0, "%s: the ledgers' verdict", where);
    seen(f, "matrix %d rows, bars, scores of both splits, verdict", rows);
}

/* The experts lesson's run: a row per expert (its number and its GPU), each GPU's row, the
 * ledgers' verdict and the all-to-all bytes against the calculator. */
static void eprun_essentials(char **L, int n, const char *where, struct found *f)
{
    int E = 0, P = 0;
    const char *h = strstr(L[0], "E ");
    if (!h || sscanf(h, "E %d top-%*d ep %d", &E, &P) != 2) {
        h = strstr(L[0], "tiny-moe, ");
        ck_assert_msg(h && sscanf(h, "tiny-moe, %d experts top-%*d, ep %d", &E, &P) == 2,
                      "%s: the header: %s", where, L[0]);
    }
    int head = row_of(L, n, 0, "ex "), rows = 0;
    ck_assert_msg(head >= 0, "%s: the experts' head", where);
    long loads = 0; /* each expert's choices, after its bar */
    for (int r = head + 1; r < n && L[r][0] >= '0' && L[r][0] <= '9'; r++) {
        const char *b = L[r] + 5;
        b += strspn(b, "#x.|");
        long v = 0;
        ck_assert_msg(sscanf(b, "%ld", &v) == 1, "%s: expert %d's load: %s", where, rows, L[r]);
        loads += v, rows++;
    }
    ck_assert_msg(rows == E, "%s: %d experts' rows, not %d", where, rows, E);
    int said = row_of(L, n, 0, "routed "); /* every GPU's choices, where there is room */
    long routed = 0;
    if (said >= 0) {
        ck_assert(sscanf(L[said], "routed %ld", &routed) == 1);
        ck_assert_msg(loads == routed, "%s: the experts' loads add up to %ld, routed %ld", where,
                      loads, routed);
    }
    bool gpus = false, bytes = false;
    for (int i = 0; i < n; i++)
        gpus |= strstr(L[i], "G sent to") || strstr(L[i], "G to "),
            bytes |= strstr(L[i], "a2a B/step") && strstr(L[i], "each = calc");
    ck_assert_msg(gpus, "%s: the GPUs' head", where);
    ck_assert_msg(row_of(L, n, 0, "ledger = calc") >= 0, "%s: the ledgers' verdict", where);
    ck_assert_msg(bytes, "%s: the all-to-all bytes = calc", where);
    seen(f, "%d experts' rows%s, %d GPUs, verdicts", rows, said >= 0 ? " (loads = routed)" : "", P);
}

static void formats_essentials(char **L, int n, const char *where, struct found *f)
{
    static const char *const fmt[] = {"fp32", "fp16", "bf16", "fp8 e4m3", "fp8 e5m2"};
    for (int k = 0; k < 5; k++) {
        bool row = false;
        for (int i = 0; i < n; i++)
            row |= strstr(L[i], fmt[k]) != NULL;
        ck_assert_msg(row, "%s: %s's row", where, fmt[k]);
    }
    seen(f, "5 formats' rows");
}

/* Every hint of the panel on the hint line at width cols (two rows at most). */
static void hints_essentials(const struct panel_ops *p, int cols, const char *where,
                             struct found *f)
{
    struct hint h[HINTS_MAX];
    struct hint_place at[HINTS_MAX];
    char buf[HINTS_MAX][24];
    struct hint_state hs = {
        .question = true, .next_view = "checkpoint", .panel = p, .tab_keys = "1-5 L"};
    int n = hints_list(&hs, h, buf), rows = 1;
    if (hints_place(h, n, cols, 1, 14 /* "playing 1/8x" */, at) < n) {
        /* as the window does: without what the screen shows elsewhere, then on two rows */
        hs.brief = true;
        n = hints_list(&hs, h, buf);
        rows = hints_place(h, n, cols, 1, 14, at) < n ? 2 : 1;
    }
    int placed = hints_place(h, n, cols, rows, 14, at);
    ck_assert_msg(placed == n, "%s: %d of %d hints fit", where, placed, n);
    seen(f, ", %d hints on %d row%s", n, rows, rows > 1 ? "s" : "");
}

static const struct {
    const char *panel;
    void (*check)(char **lines, int n, const char *where, struct found *f);
    int steps;        /* run panels: steps to take first (0: none) */
    const char *done; /* what the picture says once a step is replayed */
} essentials[] = {
    {"training", training_essentials, 20, NULL},
    {"checkpoint", checkpoint_essentials, 0, NULL},
    {"collective", collective_essentials, 0, NULL},
    {"parallel", parallel_essentials, 0, NULL},
    {"pprun", pprun_essentials, 1, "ledger = calc"},
    {"memory", memory_essentials, 0, NULL},
    {"zero", memory_essentials, 0, NULL},
    {"dprun", dprun_essentials, 1, "ledger = calc"},
    {"formats", formats_essentials, 0, NULL},
    {"cprun", cprun_essentials, 1, "ledger = calc"},
    {"eprun", eprun_essentials, 1, "ledger = calc"},
};

static bool shows_a_run(const char *panel)
{
    for (size_t e = 0; e < sizeof essentials / sizeof essentials[0]; e++)
        if (!strcmp(essentials[e].panel, panel))
            return essentials[e].steps > 0;
    return false;
}

START_TEST(lesson_steps)
{
    static struct eventlog log;
    static char got[PICTURE_MAX], text[PICTURE_MAX];
    load_lessons();
    ck_assert_msg(lessons && nsteps_all > 0, "the lessons: %s", load_error.msg);
    const struct lesson *l = lessons[step_lesson[_i]];
    int st = step_index[_i];
    const struct lesson_panel *lp = lesson_step_panel(l, (size_t)st);
    const struct lesson_panel *first = lp; /* before any: the tab's first (ui/tabs.h) */
    for (size_t k = 0; !first && k <= l->nsteps; k++)
        first = k ? l->steps[k - 1].panel : l->panel;
    const struct panel_ops *p = panel_find(first->name);
    ck_assert_ptr_nonnull(p);
    int e = 0;
    while (e < (int)(sizeof essentials / sizeof essentials[0]) &&
           strcmp(essentials[e].panel, p->name))
        e++;
    ck_assert_msg(e < (int)(sizeof essentials / sizeof essentials[0]), "%s: no essentials",
                  p->name);
    if (numeric_only() && essentials[e].steps == 0)
        return;
    /* Under a sanitizer (ten times slower), a run panel's picture at the first step of the
     * lesson that shows it; the normal build draws every step's. */
    for (int k = 0; harness_sanitized() && essentials[e].steps > 0 && k < st; k++) {
        const struct lesson_panel *kp = lesson_step_panel(l, (size_t)k);
        if (kp && !strcmp(kp->name, p->name))
            return;
    }
    struct offscreen t;
    offscreen_open(&t);
    struct panel_env env = {p, &log, true, false};
    void *state = NULL;
    struct error err = {0};
    ck_assert_msg(steppanel_open(p, &env, l, lp, &state, &err) == 0, "%s", err.msg);
    /* a run panel's steps, each taken by the polls once the run has done it */
    struct panel_event step = {PANEL_STEP, 0, 1};
    for (int k = 0, done = 0; k < 60 && done < essentials[e].steps; k++) {
        p->on_event(state, &step);
        if (!essentials[e].done) {
            picture(p, state, 50, 200, got, sizeof got);
            char want[32];
            snprintf(want, sizeof want, "step %d ", done + 1);
            done += strstr(got, want) != NULL;
        } else {
            picture(p, state, 50, 200, got, sizeof got);
            done = strstr(got, essentials[e].done) != NULL;
        }
    }
    char what[32];
    snprintf(what, sizeof what, "step%02d", st + 1);
    char saved[64];
    snprintf(saved, sizeof saved, "lesson%d", l->number); /* named by lesson and step */
    check_pictures(p, state, saved, what, essentials[e].steps > 0);
    FILE *table = fopen("tests/snapshots-essentials.txt", _i ? "a" : "w");
    for (size_t s = 0; s < NSIZES; s++) {
        int rows = sizes[s][0], cols = sizes[s][1];
        picture(p, state, rows, cols, text, sizeof text);
        char *lines[256];
        char *body = strchr(text, '\n') + 1; /* after the line saying where it was drawn */
        int n = split_lines(body, lines, 256);
        char where[128];
        snprintf(where, sizeof where, "lesson %d step %d (%s) at %dx%d", l->number, st + 1, p->name,
                 cols, rows);
        struct found f = {""};
        essentials[e].check(lines, n, where, &f);
        hints_essentials(p, cols, where, &f);
        if (cols >= 120)
            for (int i = 0; i < n; i++)
                ck_assert_msg(!strstr(lines[i], "a larger window"), "%s drops something: %s", where,
                              lines[i]);
        if (table)
            fprintf(table, "lesson %d step %2d  %-10s %3dx%-2d  %s\n", l->number, st + 1, p->name,
                    cols, rows, f.what);
    }
    if (table)
        fclose(table);
    p->fini(state);
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
    /* A guard against a hang, not a limit on speed: the run panels train on thread-GPUs, a
     * picture of 200 steps too; on the portable path beside two suites and two CPU-bound
     * processes two of them took longer than 120 s. (Ten times as long under the sanitizers:
     * harness.c.) */
    tcase_set_timeout(tc, 480);
    tcase_add_loop_test(tc, panel_pictures, 0, n);
    tcase_add_loop_test(tc, run_pictures, 0, (int)(sizeof runs / sizeof runs[0]));
    suite_add_tcase(s, tc);
    TCase *steps = tcase_create("lesson steps");
    tcase_set_timeout(steps, 480);
    load_lessons();
    tcase_add_loop_test(steps, lesson_steps, 0, nsteps_all > 0 ? nsteps_all : 1);
    suite_add_tcase(s, steps);
    return harness_run(s);
}
