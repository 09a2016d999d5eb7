/* Presenter mode's options for the window: which lesson and step to open, and the autoplay
 * interval. Checked before the terminal is touched, so that a typo is a plain message and
 * exit status 2, not a window. */
#include "config.h"
#include "cli/winopts.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/error.h"
#include "base/units.h"
#include "lesson/lesson.h"
#include "ui/app.h"
#include "ui/panels.h"

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

/* "1".."5", "6", "L" or "lab": the tab. */
static int parse_tab(const char *s)
{
    if (!strcasecmp(s, "lab") || !strcasecmp(s, "l") || !strcmp(s, "6"))
        return UI_TABS - 1;
    if (s[0] >= '1' && s[0] <= '5' && !s[1])
        return s[0] - '1';
    if (s[0] == '0' && s[1] >= '1' && s[1] <= '5' && !s[2])
        return s[1] - '1';
    return -1;
}

int winopts_parse(int argc, char **argv, struct ui_options *o, struct error *e)
{
    *o = (struct ui_options){.tab = -1, .step = -1};
    const char *step = NULL;
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
            if ((o->tab = parse_tab(v)) < 0)
                return error_set(e, ERR_INVAL, "--lesson: 1 to 5 or lab, not '%s'", v);
        } else if (!strcmp(a, "--step")) {
            step = v;
        } else {
            double s;
            if (units_parse_double(v, false, &s, NULL) < 0 || !(s >= 0.5 && s <= 3600))
                return error_set(e, ERR_INVAL, "--autoplay: seconds from 0.5 to 3600, not '%s'", v);
            o->autoplay_s = s;
        }
    }
    if (!step)
        return 0;
    if (o->tab < 0)
        return error_set(e, ERR_INVAL, "--step needs --lesson: which lesson's step?");
    long long k;
    if (units_parse_int(step, 1, LESSON_MAX_STEPS, &k, NULL) < 0)
        return error_set(e, ERR_INVAL, "--step: a step number from 1, not '%s'", step);
    /* the step must exist; a lesson that cannot be read is the window's to report */
    struct lesson *l = NULL;
    struct error le = {0};
    if (lesson_find(NULL, ui_tabs[o->tab].lesson, &l, &le) == 0) {
        size_t n = l->nsteps;
        lesson_free(l);
        if ((size_t)k > n)
            return error_set(e, ERR_INVAL, "--step: lesson %s has steps 1 to %zu, not %lld",
                             ui_tabs[o->tab].key, n, k);
    }
    o->step = (int)k - 1;
    return 0;
}
