/* scalelab run LESSON: a lesson headless. Prints its steps, runs its experiments as child
 * processes of this same program (started as it was: cli_exec_self), checks their expectations
 * against their JSON output, and prints each question with the answer the engine computes. */
#include "config.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/error.h"
#include "base/json.h"
#include "base/units.h"
#include "calc/preset.h"
#include "cli/command.h"
#include "cli/opts.h"
#include "lesson/lesson.h"
#include "lesson/quantity.h"
#include "ui/layout.h"
#include "ui/steppanel.h"

#define OUTPUT_MAX (16u << 20) /* bytes kept of a run's output */
/* A hung experiment is killed. Not sooner: an experiment takes a second here, but two minutes
 * under a sanitizer on a machine busy ten times over (it failed a lesson there), and every
 * wait inside a run has a deadline of its own (600 s), so only what hangs past those meets
 * this one. */
#define RUN_SECONDS 900

struct output {
    char *data;
    size_t len;
};

/* What one @run gave. */
struct outcome {
    int status;        /* exit status, or -1 when it could not run */
    char problem[512]; /* why the run failed, "" when it exited 0 */
    json_t *doc;       /* its JSON output, when it has expectations */
};

static int append(struct output *o, const char *buf, size_t n)
{
    if (o->len + n > OUTPUT_MAX)
        n = OUTPUT_MAX - o->len;
    char *p = realloc(o->data, o->len + n + 1);
    if (!p)
        return -1;
    memcpy(p + o->len, buf, n);
    o->len += n;
    p[o->len] = '\0';
    o->data = p;
    return 0;
}

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* A signal that ends `run` (SIGINT, SIGTERM, SIGHUP) while an experiment runs: the child is
 * ended too, not left running alone, and then run ends as the signal asked (run_child). */
static volatile sig_atomic_t ended_by;

static void on_end(int sig)
{
    ended_by = sig;
}

static void catch_ends(bool on)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on ? on_end : SIG_DFL;
    sigemptyset(&sa.sa_mask);
    const int sigs[] = {SIGINT, SIGTERM, SIGHUP};
    for (int i = 0; i < 3; i++)
        sigaction(sigs[i], &sa, NULL);
}

/* Runs this binary with argv (argv[0] is the command name), collecting stdout and stderr. */
static void run_child(const struct lesson_run *r, struct output *out, struct output *err,
                      struct outcome *oc)
{
    int po[2], pe[2];
    oc->status = -1;
    if (pipe(po) < 0 || pipe(pe) < 0) {
        snprintf(oc->problem, sizeof oc->problem, "cannot create a pipe: %s", strerror(errno));
        return;
    }
    char **argv = calloc((size_t)r->argc + 2, sizeof *argv);
    if (!argv) {
        snprintf(oc->problem, sizeof oc->problem, "out of memory");
        return;
    }
    argv[0] = "scalelab";
    for (int i = 0; i < r->argc; i++)
        argv[i + 1] = r->argv[i];
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        dup2(po[1], STDOUT_FILENO);
        dup2(pe[1], STDERR_FILENO);
        close(po[0]), close(po[1]), close(pe[0]), close(pe[1]);
        cli_exec_self(argv);
        fprintf(stderr, "cannot run %s again: %s\n", cli_argv0 ? cli_argv0 : "scalelab",
                strerror(errno));
        _exit(127);
    }
    free(argv);
    close(po[1]), close(pe[1]);
    if (pid < 0) {
        close(po[0]), close(pe[0]);
        snprintf(oc->problem, sizeof oc->problem, "cannot start a process: %s", strerror(errno));
        return;
    }
    struct pollfd fds[2] = {{po[0], POLLIN, 0}, {pe[0], POLLIN, 0}};
    struct output *dst[2] = {out, err};
    int open_fds = 2;
    bool timed_out = false;
    double deadline = now() + RUN_SECONDS;
    while (open_fds > 0 && !ended_by) {
        int left = (int)((deadline - now()) * 1000);
        if (left <= 0) {
            timed_out = true;
            kill(pid, SIGKILL);
            break;
        }
        if (poll(fds, 2, left) < 0 && errno != EINTR)
            break;
        for (int i = 0; i < 2; i++) {
            if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR)))
                continue;
            char buf[65536];
            ssize_t n = read(fds[i].fd, buf, sizeof buf);
            if (n > 0) {
                append(dst[i], buf, (size_t)n);
            } else if (n == 0 || errno != EINTR) {
                close(fds[i].fd);
                fds[i].fd = -1;
                open_fds--;
            }
        }
    }
    for (int i = 0; i < 2; i++)
        if (fds[i].fd >= 0)
            close(fds[i].fd);
    if (ended_by) /* the experiment ends with run, which then ends as the signal asked */
        kill(pid, SIGKILL);
    int ws;
    while (waitpid(pid, &ws, 0) < 0 && errno == EINTR)
        ;
    if (ended_by) {
        catch_ends(false);
        raise(ended_by);
    }
    if (timed_out) {
        snprintf(oc->problem, sizeof oc->problem, "killed after %d s", RUN_SECONDS);
        return;
    }
    if (WIFSIGNALED(ws)) {
        snprintf(oc->problem, sizeof oc->problem, "killed by signal %d", WTERMSIG(ws));
        return;
    }
    oc->status = WEXITSTATUS(ws);
}

/* The first line of s, for a message. */
static const char *first_line(const char *s, char *buf, size_t n)
{
    size_t len = s ? strcspn(s, "\n") : 0;
    snprintf(buf, n, "%.*s", (int)(len < n ? len : n - 1), s ? s : "");
    return buf;
}

static void execute(const struct lesson_run *r, struct outcome *oc)
{
    memset(oc, 0, sizeof *oc);
    if (!command_find(r->argv[0])) {
        oc->status = -1;
        snprintf(oc->problem, sizeof oc->problem,
                 "unknown command '%s': this scalelab has no such command", r->argv[0]);
        return;
    }
    struct output out = {0}, err = {0};
    run_child(r, &out, &err, oc);
    char line[300];
    if (oc->status > 0)
        snprintf(oc->problem, sizeof oc->problem, "exit status %d: %s", oc->status,
                 first_line(err.data, line, sizeof line));
    else if (oc->status == 0 && r->nexpects) {
        json_error_t je;
        oc->doc = json_loadb(out.data ? out.data : "", out.len, 0, &je);
        if (!oc->doc) {
            oc->status = -1;
            snprintf(oc->problem, sizeof oc->problem, "its output is not JSON: %s (line %d)",
                     je.text, je.line);
        }
    }
    free(out.data);
    free(err.data);
}

static const char *check_text(const struct lesson_expect *x, char *buf, size_t n)
{
    static const char *const ops[] = {"=", "<", "<=", ">", ">="};
    switch (x->check) {
    case LESSON_STR_EQ: snprintf(buf, n, "%s = \"%s\"", x->path, x->text); break;
    case LESSON_IS_INF: snprintf(buf, n, "%s is inf", x->path); break;
    case LESSON_IS_NEGINF: snprintf(buf, n, "%s is -inf", x->path); break;
    case LESSON_IS_NAN: snprintf(buf, n, "%s is nan", x->path); break;
    case LESSON_IS_FINITE: snprintf(buf, n, "%s is finite", x->path); break;
    default: snprintf(buf, n, "%s %s %s", x->path, ops[x->check], x->number.expr); break;
    }
    return buf;
}

/* The value in an expectation's finding, "PATH is VALUE, expected ...": VALUE, cut in place. */
static const char *found_value(char *why, const char *path)
{
    size_t n = strlen(path);
    char *v = strncmp(why, path, n) == 0 && strncmp(why + n, " is ", 4) == 0 ? why + n + 4 : why;
    char *end = strstr(v, ", expected");
    if (end)
        *end = '\0';
    return v;
}

struct tally {
    int passed, failed;
};

/* How a lesson is printed: for a projector or a handout, without the answers, wrapped. */
struct print_opts {
    bool answers; /* the answers and explanations (not with --no-answers) */
    int width;    /* wrap text to this many columns; 0: lines as written */
    int step;     /* only this step (from 0), or -1 */
};

/* One line of text wrapped to width columns (as written when width is 0): the first line after
 * indent spaces, the next ones after indent + hang, so that "ok   CHECK" or "a) OPTION" keeps
 * its text in a column. */
static void print_line(const char *text, int indent, int hang, int width)
{
    if (width <= 0) {
        printf("%*s%s\n", indent, "", text);
        return;
    }
    int w = width - indent - hang > 20 ? width - indent - hang : 20;
    /* the first line may use the hang's columns too */
    struct wrap_line first[1];
    int n = layout_wrap(text, w + hang, first, 1);
    if (n == 0) {
        printf("\n");
        return;
    }
    printf("%*s%.*s\n", indent, "", (int)first[0].len, text + first[0].start);
    const char *rest = text + first[0].start + first[0].len;
    while (*rest == ' ')
        rest++;
    if (!*rest)
        return;
    struct wrap_line wl[256];
    int k = layout_wrap(rest, w, wl, 256);
    for (int j = 0; j < k && j < 256; j++)
        printf("%*s%.*s\n", indent + hang, "", (int)wl[j].len, rest + wl[j].start);
}

/* A command line wrapped as a shell takes it: at spaces, each line but the last ending in " \\"
 * and the next ones indented 4 more; an option stays with its value ("--steps 2"), and a word
 * longer than the line stays whole. */
static void print_command(const char *cmd, int indent, int width)
{
    if (width <= 0 || indent + (int)strlen(cmd) <= width) {
        printf("%*s%s\n", indent, "", cmd);
        return;
    }
    int col = 0, pad = indent;
    const char *p = cmd;
    while (*p) {
        size_t len = strcspn(p, " ");
        if (!strncmp(p, "--", 2) && p[len] == ' ' && p[len + 1] != '-' && p[len + 1] != '\0')
            len += 1 + strcspn(p + len + 1, " "); /* "--steps 2" */
        /* room for the word, and for " \\" unless it is the last */
        bool last = p[len] == '\0';
        if (col > pad && col + 1 + (int)len + (last ? 0 : 2) > width) {
            printf(" \\\n");
            col = 0, pad = indent + 4;
        }
        if (col == 0)
            col = printf("%*s", pad, "");
        else
            col += printf(" ");
        col += printf("%.*s", (int)len, p);
        p += len;
        while (*p == ' ')
            p++;
    }
    printf("\n");
}

/* Text as the window shows it (paragraphs joined, lists and tables kept), wrapped to width
 * columns after indent spaces; as written when width is 0. */
static void print_wrapped(char *const *lines, size_t n, int indent, int width)
{
    if (width <= 0) {
        for (size_t i = 0; i < n; i++)
            printf("%*s%s\n", lines[i][0] ? indent : 0, "", lines[i]);
        return;
    }
    size_t cap = 1;
    for (size_t i = 0; i < n; i++)
        cap += strlen(lines[i]) + 2;
    char *text = malloc(cap);
    if (!text)
        return;
    layout_join(lines, n, text, cap);
    int w = width - indent > 20 ? width - indent : 20;
    for (char *line = text, *next; line; line = next) {
        next = strchr(line, '\n');
        if (next)
            *next++ = '\0';
        if (!line[0] || (line[0] == ' ' && indent + (int)strlen(line) <= width)) {
            /* a table or formula row that fits, a blank line: as written */
            printf("%*s%s\n", line[0] ? indent : 0, "", line);
            continue;
        }
        if (line[0] == ' ') { /* a row wider than the page: wrapped, its next lines hanging */
            print_line(line, indent, 4, width);
            continue;
        }
        /* a list item's wrapped lines hang under its text */
        bool item = (line[0] == '-' || line[0] == '*') && line[1] == ' ';
        struct wrap_line wl[256];
        int k = layout_wrap(line, item ? w - 2 : w, wl, 256);
        for (int j = 0; j < k; j++)
            printf("%*s%.*s\n", indent + (item && j ? 2 : 0), "", (int)wl[j].len,
                   line + wl[j].start);
    }
    free(text);
}

/* Runs a step's experiments; prints them as text (wrapped to width), or adds them to runs
 * (JSON). */
static void run_step(const struct lesson_step *st, json_t *runs, struct tally *t, int width)
{
    for (size_t i = 0; i < st->nruns; i++) {
        const struct lesson_run *r = &st->runs[i];
        struct outcome oc;
        execute(r, &oc);
        bool ran = oc.problem[0] == '\0';
        json_t *jr = NULL, *jx = NULL;
        if (runs) {
            jr = json_pack("{s:s, s:i, s:b}", "command", r->cmdline, "line", r->line, "ok", ran);
            if (!ran)
                json_object_set_new(jr, "problem", json_string(oc.problem));
            json_object_set_new(jr, "expects", jx = json_array());
            json_array_append_new(runs, jr);
        } else {
            char line[LESSON_LINE_MAX + 600];
            snprintf(line, sizeof line, "$ scalelab %s", r->cmdline);
            printf("\n");
            print_command(line, 2, width);
            if (!ran) {
                snprintf(line, sizeof line, "FAIL the run: %s", oc.problem);
                print_line(line, 4, 5, width);
            }
        }
        if (!ran && r->nexpects == 0)
            t->failed++;
        for (size_t k = 0; k < r->nexpects; k++) {
            const struct lesson_expect *x = &r->expects[k];
            char why[600], what[LESSON_LINE_MAX + 64];
            bool ok = ran && lesson_expect_holds(x, oc.doc, why, sizeof why);
            if (!ran)
                snprintf(why, sizeof why, "the run failed: %s", oc.problem);
            ok ? t->passed++ : t->failed++;
            check_text(x, what, sizeof what);
            char line[sizeof what + sizeof why + 32];
            if (jx)
                json_array_append_new(jx, json_pack("{s:s, s:i, s:b, s:s}", "check", what, "line",
                                                    x->line, "ok", ok, "found", why));
            else if (ok) /* and what the run gave: "PATH is VALUE, expected ..." */
                snprintf(line, sizeof line, "ok   %s   [run: %s]", what, found_value(why, x->path));
            else
                snprintf(line, sizeof line, "FAIL %s (line %d): %s", what, x->line, why);
            if (!jx)
                print_line(line, 4, 5, width);
        }
        json_decref(oc.doc);
    }
}

static json_t *question_json(const struct lesson_question *q, bool answers)
{
    char ans[LESSON_LINE_MAX + 64];
    lesson_format_answer(q, ans, sizeof ans);
    json_t *o = json_pack("{s:s, s:s}", "question", q->text, "kind",
                          q->kind == LESSON_Q_CHOICE ? "choice" : "number");
    if (!answers) { /* the question, and for a choice its options: nothing that gives it away */
        if (q->kind == LESSON_Q_CHOICE) {
            json_t *opts = json_array();
            for (size_t i = 0; i < q->noptions; i++)
                json_array_append_new(opts, json_string(q->options[i]));
            json_object_set_new(o, "options", opts);
        } else {
            json_object_set_new(o, "unit", json_string(q->unit));
        }
        return o;
    }
    json_object_set_new(o, "answer", json_string(ans));
    json_object_set_new(o, "explain", json_string(q->explain));
    if (q->kind == LESSON_Q_CHOICE) {
        json_t *opts = json_array();
        for (size_t i = 0; i < q->noptions; i++)
            json_array_append_new(opts, json_string(q->options[i]));
        json_object_set_new(o, "options", opts);
        json_object_set_new(o, "correct", json_integer(q->correct));
        if (q->condition)
            json_object_set_new(o, "from", json_string(q->condition));
    } else {
        json_object_set_new(o, "value", json_num(q->answer.value));
        json_object_set_new(o, "unit", json_string(q->unit));
        if (q->answer.is_quantity)
            json_object_set_new(o, "from", json_string(q->answer.expr));
    }
    return o;
}

static void print_question(size_t n, const struct lesson_question *q, const struct print_opts *po)
{
    char ans[LESSON_LINE_MAX + 64], head[LESSON_LINE_MAX + 16];
    snprintf(head, sizeof head, "Q%zu. %s", n, q->text);
    printf("\n");
    print_line(head, 2, 4, po->width);
    char line[2 * LESSON_LINE_MAX + 64];
    for (size_t i = 0; i < q->noptions; i++) {
        snprintf(line, sizeof line, "%c) %s", (int)('a' + i), q->options[i]);
        print_line(line, 6, 3, po->width);
    }
    if (!po->answers) {
        if (q->kind == LESSON_Q_NUMBER && q->unit[0])
            printf("      answer, in %s: ____________\n", q->unit);
        else
            printf("      answer: ____________\n");
        return;
    }
    const char *from = q->condition ? q->condition : q->answer.is_quantity ? q->answer.expr : NULL;
    int len = snprintf(line, sizeof line, "answer: %s", lesson_format_answer(q, ans, sizeof ans));
    if (from && len > 0 && (size_t)len < sizeof line)
        snprintf(line + len, sizeof line - (size_t)len, "   [computed: %s]", from);
    print_line(line, 6, 8, po->width);
    /* the explanation as one paragraph when wrapped, as written when not */
    if (po->width > 0) {
        char *one = strdup(q->explain);
        for (char *c = one; c && *c; c++)
            if (*c == '\n')
                *c = ' ';
        if (one && *one)
            print_line(one, 6, 0, po->width);
        free(one);
        return;
    }
    for (const char *s = q->explain; *s;) {
        size_t k = strcspn(s, "\n");
        printf("      %.*s\n", (int)k, s);
        s += k + (s[k] == '\n');
    }
}

static int run_lesson(const struct lesson *l, bool json, const struct print_opts *po)
{
    struct tally t = {0, 0};
    json_t *doc = NULL, *steps = NULL;
    if (json) {
        json_t *outcomes = json_array();
        for (size_t i = 0; i < l->noutcomes; i++)
            json_array_append_new(outcomes, json_string(l->outcomes[i]));
        doc = json_pack("{s:i, s:s, s:s, s:i, s:o}", "lesson", l->number, "file", l->file, "title",
                        l->title, "minutes", l->minutes, "outcomes", outcomes);
        json_object_set_new(doc, "steps", steps = json_array());
    } else {
        char head[LESSON_LINE_MAX + 64];
        int n = !strcmp(l->name, LESSON_LAB) ? snprintf(head, sizeof head, "The Lab: ")
                : l->number >= 0             ? snprintf(head, sizeof head, "Lesson %d: ", l->number)
                                             : 0;
        if (l->minutes)
            snprintf(head + n, sizeof head - (size_t)n, "%s (%d min)", l->title, l->minutes);
        else
            snprintf(head + n, sizeof head - (size_t)n, "%s (open)", l->title);
        print_line(head, 0, 2, po->width);
        printf("You will be able to:\n");
        for (size_t i = 0; i < l->noutcomes; i++) {
            char item[LESSON_LINE_MAX + 8];
            snprintf(item, sizeof item, "- %s", l->outcomes[i]);
            char *one[] = {item};
            print_wrapped(one, 1, 2, po->width);
        }
    }
    for (size_t s = 0; s < l->nsteps; s++) {
        if (po->step >= 0 && (size_t)po->step != s)
            continue;
        const struct lesson_step *st = &l->steps[s];
        json_t *runs = NULL, *qs = NULL;
        if (json) {
            json_t *text = json_array();
            for (size_t i = 0; i < st->ntext; i++)
                json_array_append_new(text, json_string(st->text[i]));
            json_t *js = json_pack("{s:s, s:o}", "title", st->title, "text", text);
            const struct lesson_panel *p = lesson_step_panel(l, s);
            if (p) {
                json_t *set = json_object();
                for (size_t i = 0; i < p->nsettings; i++)
                    json_object_set_new(set, p->settings[i].key, json_string(p->settings[i].value));
                json_object_set_new(js, "panel",
                                    json_pack("{s:s, s:o}", "name", p->name, "settings", set));
            }
            json_object_set_new(js, "runs", runs = json_array());
            json_object_set_new(js, "questions", qs = json_array());
            json_array_append_new(steps, js);
        } else {
            char head[LESSON_LINE_MAX + 64];
            snprintf(head, sizeof head, "== Step %zu/%zu: %s", s + 1, l->nsteps, st->title);
            printf("\n");
            print_line(head, 0, 3, po->width);
            printf("\n");
            print_wrapped(st->text, st->ntext, 2, po->width);
        }
        run_step(st, runs, &t, po->width);
        for (size_t q = 0; q < st->nquestions; q++) {
            if (qs)
                json_array_append_new(qs, question_json(&st->questions[q], po->answers));
            else
                print_question(q + 1, &st->questions[q], po);
        }
    }
    if (json) {
        json_object_set_new(doc, "passed", json_integer(t.passed));
        json_object_set_new(doc, "failed", json_integer(t.failed));
        json_write(stdout, doc, JSON_EXACT);
    } else {
        printf("\n%d expectation%s held, %d failed\n", t.passed, t.passed == 1 ? "" : "s",
               t.failed);
    }
    return t.failed ? 1 : 0;
}

/* Every lesson that can be read; one that cannot is named after the others (exit 2). */
static int list_lessons(bool json)
{
    struct lesson **v;
    size_t n;
    struct error e;
    int left_out = lesson_load_all(NULL, &v, &n, &e);
    if (left_out < 0)
        return cli_fail(&e);
    json_t *arr = json ? json_array() : NULL;
    for (size_t i = 0; i < n; i++) {
        char key[8]; /* the window's: the number, L for the Lab */
        snprintf(key, sizeof key, strcmp(v[i]->name, LESSON_LAB) ? "%d" : "L", v[i]->number);
        if (arr)
            json_array_append_new(arr, json_pack("{s:i, s:s, s:i, s:i}", "lesson", v[i]->number,
                                                 "title", v[i]->title, "minutes", v[i]->minutes,
                                                 "steps", (int)v[i]->nsteps));
        else if (v[i]->minutes)
            printf("%2s  %-40s %3d min  %2zu steps\n", key, v[i]->title, v[i]->minutes,
                   v[i]->nsteps);
        else
            printf("%2s  %-40s    open  %2zu steps\n", key, v[i]->title, v[i]->nsteps);
    }
    if (arr) {
        json_t *doc = json_pack("{s:o}", "lessons", arr);
        json_write(stdout, doc, JSON_EXACT);
    }
    lesson_free_all(v, n);
    return left_out ? cli_fail(&e) : 0;
}

/* One line of the list: name (with its arguments' places), value when it takes none. */
static void list_one(json_t *arr, const struct quantity *q, const char *name)
{
    double v = 0;
    char shown[64] = "", label[96];
    snprintf(label, sizeof label, "%s%s", name,
             q->nargs == 0   ? ""
             : q->nargs == 1 ? "(x)"
             : q->nargs == 2 ? "(x, y)"
             : q->nargs == 3 ? "(x, y, z)"
                             : "(x, y, z, w)");
    bool valued = q->nargs == 0 && quantity_eval(name, &v, NULL, NULL) == 0;
    if (valued)
        json_num_text(shown, sizeof shown, v, JSON_EXACT); /* as --json writes it */
    if (arr) {
        json_t *o = json_pack("{s:s, s:i, s:s, s:s}", "name", name, "args", q->nargs, "unit",
                              q->unit, "what", q->what);
        if (valued)
            json_object_set_new(o, "value", json_num(v));
        json_array_append_new(arr, o);
    } else {
        printf("%-28s %-24s %-5s %s\n", label, shown, q->unit, q->what);
    }
}

/* The quantities, a family's once for each preset ("MODEL.params": synthetic_7b.params, ...). */
static int list_quantities(bool json)
{
    json_t *arr = json ? json_array() : NULL;
    for (size_t i = 0; i < quantity_count(); i++) {
        const struct quantity *q = quantity_at(i);
        if (q->kind == QUANTITY_PLAIN) {
            list_one(arr, q, q->name);
            continue;
        }
        char list[1024], name[128];
        preset_list(list, sizeof list, q->kind == QUANTITY_MODEL ? "models" : "clusters");
        const char *rest = strchr(q->name, '.');
        for (char *save, *tok = strtok_r(list, ", ", &save); tok;
             tok = strtok_r(NULL, ", ", &save)) {
            for (char *c = tok; *c; c++)
                *c = *c == '-' ? '_' : *c;
            snprintf(name, sizeof name, "%s%s", tok, rest);
            list_one(arr, q, name);
        }
    }
    if (arr) {
        json_t *doc = json_pack("{s:o}", "quantities", arr);
        json_write(stdout, doc, JSON_EXACT);
    }
    return 0;
}

struct run_args {
    const char *which; /* the lesson */
    bool json, list, quantities, no_answers;
    int width, step; /* 0: not given */
};

static const struct opt_entry lesson_arg =
    OPT_ONE("lesson", "LESSON", struct run_args, which,
            "a number (1), a name (01-mixed-precision) or a path to a .lesson file");

static const struct opt_entry options[] = {
    OPT_FLAG("json", struct run_args, json,
             "one JSON document: {\"lesson\", \"title\", \"steps\": [{\"runs\": [{\"expects\"\n"
             ": [...]}], \"questions\": [...]}], \"passed\", \"failed\"}"),
    OPT_INT("step", "S", struct run_args, step, 1, LESSON_MAX_STEPS, "only step S (from 1)"),
    OPT_FLAG("no-answers", struct run_args, no_answers,
             "the questions without their answers and explanations: a handout, or\n"
             "a projector's text (the experiments still run and are checked)"),
    OPT_INT("width", "COLS", struct run_args, width, 40, 1000,
            "wrap the text to COLS columns as the window does (paragraphs joined,\n"
            "lists and tables kept); default: the terminal's width, or the lines as\n"
            "written when the output is not a terminal"),
    OPT_FLAG("list", struct run_args, list, "the lessons, with their duration and number of steps"),
    OPT_FLAG("quantities", struct run_args, quantities,
             "the quantities lessons may use as answers (lessons/README.md)"),
    OPT_END,
};

static const char *const conflicts[] = {"list", "quantities", NULL};
const struct opts_spec opts_run = {"run", options, &lesson_arg, conflicts};

/* The terminal's width when standard output is one, else 0 (lines as written). */
static int terminal_width(void)
{
    struct winsize ws;
    if (isatty(STDOUT_FILENO) && ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0)
        return ws.ws_col;
    return 0;
}

static int run_main(int argc, char **argv)
{
    struct run_args a = {0};
    int rc = opts_parse(&opts_run, argc, argv, &a);
    if (rc)
        return rc;
    struct print_opts po = {!a.no_answers, a.width ? a.width : terminal_width(), -1};
    const char *which = a.which;
    long long step = a.step;
    if (a.list || a.quantities) {
        if (which)
            return cli_usage("run", "--%s takes no lesson", a.list ? "list" : "quantities");
        return a.list ? list_lessons(a.json) : list_quantities(a.json);
    }
    if (!which)
        return cli_usage("run", "which lesson? give its number, its name or a path");
    struct lesson *l;
    struct error e;
    if (lesson_find(NULL, which, &l, &e) < 0)
        return cli_fail(&e);
    if (step > (long long)l->nsteps) {
        size_t n = l->nsteps;
        lesson_free(l);
        return cli_usage("run", "--step: the lesson has steps 1 to %zu, not %lld", n, step);
    }
    /* what the window would refuse (a panel it does not know, a setting it skips) is a
     * lesson that cannot be read as written */
    if (steppanel_check(l, &e) < 0) {
        lesson_free(l);
        return cli_fail(&e);
    }
    po.step = (int)step - 1;
    catch_ends(true);
    int status = run_lesson(l, a.json, &po);
    catch_ends(false);
    if (ended_by) /* between two experiments: end as the signal asked */
        raise(ended_by);
    lesson_free(l);
    return status;
}

const struct command cmd_run = {
    "run",
    "run a lesson headless: its steps, experiments and checks, and its questions' answers",
    "usage: scalelab run LESSON [--step S] [--no-answers] [--width COLS] [--json]\n"
    "       scalelab run --list | --quantities [--json]\n"
    "\n"
    "Prints a lesson's steps, runs each of its experiments (@run) as a scalelab command,\n"
    "checks each expected result (@expect) against that command's JSON output, and prints each\n"
    "question with the answer the engine computes. Exit status 1 if an expectation failed or\n"
    "an experiment could not run; 2 if the lesson cannot be found or read, or names a panel\n"
    "or a panel setting the window would refuse. --list lists the lessons that can be read\n"
    "and names the others (exit 2). A signal that ends run ends its experiment too.\n",
    run_main,
};
