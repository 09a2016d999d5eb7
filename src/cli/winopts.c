/* Presenter mode's options for the window: which lesson and step to open, and the autoplay
 * interval. Checked before the terminal is touched, so that a typo is a plain message and
 * exit status 2, not a window. */
#include "config.h"
#include "cli/winopts.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/error.h"
#include "base/units.h"
#include "lesson/lesson.h"
#include "ui/app.h"

static const char *const options[] = {"--ascii", "--lesson", "--step", "--autoplay"};

/* The option arg names ("--lesson" and "--lesson=3" both name --lesson), or NULL. */
static const char *option_of(const char *arg)
{
    for (size_t i = 0; i < sizeof options / sizeof options[0]; i++) {
        size_t n = strlen(options[i]);
        if (!strncmp(arg, options[i], n) && (arg[n] == '\0' || (arg[n] == '=' && i > 0)))
            return options[i];
    }
    return NULL;
}

bool winopts_is_option(const char *arg)
{
    return option_of(arg) != NULL;
}

/* The lesson file --lesson names (a number, a name, or L or lab for the Lab), by the names of
 * the lessons folder's files: its name, number and path. 0, or ERR_INVAL saying which lessons
 * there are. */
static int find_lesson(const char *which, char *name, size_t nn, int *number, char *path, size_t pn,
                       struct error *e)
{
    char **paths;
    size_t n;
    if (lesson_paths(NULL, &paths, &n, e) < 0)
        return ERR_INVAL;
    if (!strcasecmp(which, "l"))
        which = LESSON_LAB;
    long long num = -1;
    bool numeric = units_parse_int(which, 0, 99, &num, NULL) == 0;
    int lo = 0, hi = 0;
    bool found = false;
    for (size_t i = 0; i < n; i++) {
        char *nm = lesson_name_of(paths[i]);
        int k = lesson_number_of(paths[i]);
        bool lab = nm && !strcmp(nm, LESSON_LAB);
        if (!lab && k >= 0) /* the lessons' numbers, for the message */
            lo = lo && lo < k ? lo : k, hi = hi > k ? hi : k;
        if (!found && nm && (numeric ? k == num : !strcmp(nm, which))) {
            snprintf(name, nn, "%s", nm);
            snprintf(path, pn, "%s", paths[i]);
            *number = k, found = true;
        }
        free(nm);
    }
    lesson_free_strings(paths, n);
    if (!found)
        return error_set(e, ERR_INVAL, "--lesson: %d to %d or lab, not '%s'", lo, hi, which);
    return 0;
}

int winopts_parse(int argc, char **argv, struct ui_options *o, struct error *e)
{
    *o = (struct ui_options){.step = -1};
    const char *step = NULL, *lesson = NULL;
    for (int i = 0; i < argc; i++) {
        const char *a = option_of(argv[i]);
        if (!a)
            return error_set(e, ERR_INVAL,
                             "unknown option '%s' for the window (--ascii, --lesson N, --step S, "
                             "--autoplay SECONDS); see 'scalelab --help'",
                             argv[i]);
        if (!strcmp(a, "--ascii")) {
            o->ascii = true;
            continue;
        }
        const char *eq = strchr(argv[i], '='), *v;
        if (eq) {
            v = eq + 1;
        } else if (i + 1 < argc) {
            v = argv[++i];
        } else {
            return error_set(e, ERR_INVAL, "%s needs a value; see 'scalelab --help'", a);
        }
        if (!strcmp(a, "--lesson")) {
            lesson = v;
        } else if (!strcmp(a, "--step")) {
            step = v;
        } else {
            double s;
            if (units_parse_double(v, false, &s, NULL) < 0 || !(s >= 0.5 && s <= 3600))
                return error_set(e, ERR_INVAL, "--autoplay: seconds from 0.5 to 3600, not '%s'", v);
            o->autoplay_s = s;
        }
    }
    if (step && !lesson)
        return error_set(e, ERR_INVAL, "--step needs --lesson: which lesson's step?");
    if (!lesson)
        return 0;
    /* a lesson of the lessons folder, by number or name (L: the Lab); the window opens its tab,
     * and says itself why a lesson that is there cannot be read */
    char path[4096];
    int number = 0;
    if (find_lesson(lesson, o->lesson, sizeof o->lesson, &number, path, sizeof path, e) < 0)
        return ERR_INVAL;
    struct lesson *l = NULL;
    struct error le = {0};
    size_t n = lesson_load(path, &l, &le) == 0 ? l->nsteps : 0;
    lesson_free(l);
    if (!step)
        return 0;
    long long k;
    if (units_parse_int(step, 1, LESSON_MAX_STEPS, &k, NULL) < 0)
        return error_set(e, ERR_INVAL, "--step: a step number from 1, not '%s'", step);
    if (n && (size_t)k > n)
        return error_set(e, ERR_INVAL, "--step: lesson %d has steps 1 to %zu, not %lld", number, n,
                         k);
    o->step = (int)k - 1;
    return 0;
}
