/* scalelab progress: the learner's saved progress, per lesson (the step to reopen at and the
 * questions answered right), as text or JSON; --reset clears it, for one lesson or all. It
 * reads and writes the file only through src/lesson/progress.h. */
#include "config.h"

#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "base/error.h"
#include "base/json.h"
#include "cli/command.h"
#include "cli/opts.h"
#include "lesson/lesson.h"
#include "lesson/progress.h"

struct progress_args {
    const char *which; /* the lesson to reset */
    bool json, reset;
};

static const struct opt_entry lesson_arg =
    OPT_ONE("lesson", "LESSON", struct progress_args, which,
            "with --reset: forget that lesson's only (a number, L or lab, or a\nlesson's name)");

static const struct opt_entry options[] = {
    OPT_FLAG("json", struct progress_args, json,
             "one JSON document: {\"file\", \"current\", \"lessons\": [{\"lesson\",\n"
             "\"title\", \"visited\", \"step\", \"steps\", \"right\", \"questions\"}]}"),
    OPT_FLAG("reset", struct progress_args, reset,
             "forget all progress: every lesson reopens at its first step"),
    OPT_END,
};

const struct opts_spec opts_progress = {"progress", options, &lesson_arg, NULL};

static size_t questions_of(const struct lesson *l)
{
    size_t n = 0;
    for (size_t i = 0; i < l->nsteps; i++)
        n += l->steps[i].nquestions;
    return n;
}

/* The progress of every lesson that can be read; a lesson file that cannot is named on
 * standard error after the others are shown (exit 2). */
static int show(const struct progress *p, const char *path, const char *note, bool json)
{
    struct lesson **v;
    size_t n;
    struct error e = {0};
    int left_out = lesson_load_all(NULL, &v, &n, &e);
    if (left_out < 0)
        return cli_fail(&e);
    json_t *arr = json ? json_array() : NULL;
    if (!json) {
        printf("saved progress: %s%s%s\n\n", path, note[0] ? " " : "", note);
        printf("%-6s %-40s %-12s %s\n", "lesson", "title", "step", "answered right");
    }
    int current = -1; /* the number of the lesson open last */
    for (size_t i = 0; i < n; i++) {
        const struct lesson *l = v[i];
        int num = l->number;
        bool visited = progress_of(p, l->name) != NULL, open = !strcmp(l->name, p->current);
        int step = progress_step(p, l->name);
        int right = progress_count(p, l->name);
        current = open ? num : current;
        size_t qs = questions_of(l);
        char key[8]; /* as the window's tab names it (ui/tabs.h): L for the Lab */
        snprintf(key, sizeof key, "%d", num);
        if (!strcmp(l->name, LESSON_LAB))
            snprintf(key, sizeof key, "L");
        if (arr) {
            json_array_append_new(arr,
                                  json_pack("{s:i, s:s, s:s, s:s, s:b, s:i, s:i, s:i, s:i}",
                                            "lesson", num, "key", key, "name", l->name, "title",
                                            l->title, "visited", visited, "step", step + 1, "steps",
                                            (int)l->nsteps, "right", right, "questions", (int)qs));
            continue;
        }
        char where[32] = "not opened";
        if (visited)
            snprintf(where, sizeof where, "%d of %zu", step + 1, l->nsteps);
        printf("%-6s %-40.40s %-12s %d of %zu%s\n", key, l->title, where, right, qs,
               open ? "   (open last)" : "");
    }
    if (arr) {
        json_t *doc = json_pack("{s:s, s:o, s:o}", "file", path, "current",
                                current >= 0 ? json_integer(current) : json_null(), "lessons", arr);
        json_write(stdout, doc, JSON_EXACT);
    }
    lesson_free_all(v, n);
    return left_out ? cli_fail(&e) : 0;
}

static int progress_main(int argc, char **argv)
{
    struct progress_args a = {0};
    int rc = opts_parse(&opts_progress, argc, argv, &a);
    if (rc)
        return rc;
    const char *which = a.which;
    bool json = a.json, reset = a.reset;
    if (which && !reset)
        return cli_usage("progress", "a lesson goes with --reset: --reset %s", which);
    char path[4096];
    struct error e = {0};
    if (progress_path(path, sizeof path, &e) < 0)
        return cli_fail(&e);
    struct progress p;
    progress_init(&p);
    char note[ERROR_MAX + 32] = "";
    int loaded = progress_load(&p, path, &e);
    if (loaded == PROGRESS_FRESH && !e.code)
        snprintf(note, sizeof note, "(none saved yet)");
    else if (e.code) /* shown, and said on standard error: exit 2 */
        snprintf(note, sizeof note, "(%s)", e.msg);
    if (!reset) {
        rc = show(&p, path, note, json);
        return rc ? rc : e.code ? cli_fail(&e) : 0;
    }
    /* a file that could not be read at all would be replaced by one without the other
     * lessons: it stays as it is */
    if (loaded == PROGRESS_UNREAD && which)
        return cli_usage("progress", "--reset %s: nothing changed: %s", which, e.msg);
    if (which) {
        struct lesson *l;
        if (lesson_find(NULL, which, &l, &e) < 0)
            return cli_fail(&e);
        progress_forget(&p, l->name);
        lesson_free(l);
    } else {
        progress_forget_all(&p);
    }
    struct error se = {0};
    if (progress_save(&p, path, &se) < 0)
        return cli_fail(&se);
    if (e.code) /* what was skipped is kept in the .bad copy */
        fprintf(stderr, "scalelab: progress: %s\n", e.msg);
    if (!json)
        printf("progress %s: %s\n", which ? "of that lesson cleared" : "cleared", path);
    return json ? show(&p, path, "", true) : 0;
}

const struct command cmd_progress = {
    "progress",
    "the saved progress of the lessons; --reset clears it",
    "usage: scalelab progress [--json]\n"
    "       scalelab progress --reset [LESSON] [--json]\n"
    "\n"
    "Shows the progress the window saves in $XDG_STATE_HOME/scalelab/progress (by default\n"
    "~/.local/state/scalelab/progress): for each lesson, the step it reopens at and the\n"
    "questions answered right, and which lesson was open last. A damaged file loses nothing:\n"
    "its valid lines are shown and kept, the others named (exit 2), and the file as it was is\n"
    "kept as progress.bad at the next save; what is not a regular file (a FIFO, a device) is\n"
    "neither read nor replaced, and --reset LESSON refuses to replace a file it could not\n"
    "read. A symbolic link is followed. A lesson file that cannot be read is named after the\n"
    "others are shown (exit 2).\n",
    progress_main,
};
