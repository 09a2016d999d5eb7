/* A lesson step opens its panel afresh: the panel's start, the lesson's defaults, the step's
 * settings, whatever the learner turned before (issue 10). The window and test_ui share it. */
#include "config.h"
#include "ui/steppanel.h"

#include <stdio.h>
#include <string.h>

#include "base/error.h"
#include "lesson/lesson.h"
#include "ui/eventlog.h"
#include "ui/panels.h"

static void apply(const struct panel_ops *ops, const struct panel_env *env, const struct lesson *l,
                  const struct lesson_panel *lp, void *state)
{
    for (size_t k = 0; lp && k < lp->nsettings; k++) {
        const struct lesson_setting *st = &lp->settings[k];
        struct error e = {0};
        if (!ops->set || ops->set(state, st->key, st->value, &e) < 0)
            eventlog_add(env->log, "%s:%d: %s", l ? l->file : "?", lp->line,
                         ops->set ? e.msg : "this panel takes no settings");
    }
}

int steppanel_open(const struct panel_ops *ops, const struct panel_env *env, const struct lesson *l,
                   const struct lesson_panel *lp, void **state, struct error *e)
{
    void *fresh = NULL;
    int rc = ops->init(&fresh, env, e);
    if (rc < 0) {
        error_prefix(e, "panel %s", ops->name);
        return rc;
    }
    if (l && l->panel && l->panel != lp && !strcmp(l->panel->name, ops->name))
        apply(ops, env, l, l->panel, fresh);
    apply(ops, env, l, lp, fresh);
    if (*state)
        ops->fini(*state);
    *state = fresh;
    return 0;
}

/* One refusal into e: the first one in full, the others counted. */
static void refused(struct error *e, int *n, const struct lesson *l, int line, const char *why)
{
    if ((*n)++ == 0)
        error_set(e, ERR_INVAL, "%s:%d: %s", l->file, line, why);
}

int steppanel_check(const struct lesson *l, struct error *e)
{
    int n = 0;
    size_t count = l->nsteps + 1; /* the head's @panel, then each step's */
    for (size_t i = 0; i < count; i++) {
        const struct lesson_panel *lp = i == 0 ? l->panel : l->steps[i - 1].panel;
        bool first = lp != NULL; /* the first @panel naming its panel opens it */
        for (size_t j = 0; first && j < i; j++) {
            const struct lesson_panel *q = j == 0 ? l->panel : l->steps[j - 1].panel;
            first = !q || strcmp(q->name, lp->name);
        }
        if (!first)
            continue;
        const struct panel_ops *ops = panel_find(lp->name);
        char why[ERROR_MAX + 32];
        if (!ops) {
            snprintf(why, sizeof why, "no panel named '%s'", lp->name);
            refused(e, &n, l, lp->line, why);
            continue;
        }
        static struct eventlog log; /* what the panel says meanwhile: not the check's */
        struct panel_env env = {ops, &log, true, true};
        void *state = NULL;
        struct error ie = {0};
        if (ops->init(&state, &env, &ie) < 0) {
            snprintf(why, sizeof why, "panel %s cannot start: %s", ops->name, ie.msg);
            refused(e, &n, l, lp->line, why);
            continue;
        }
        for (size_t j = i; j < count; j++) {
            const struct lesson_panel *q = j == 0 ? l->panel : l->steps[j - 1].panel;
            for (size_t k = 0; q && !strcmp(q->name, ops->name) && k < q->nsettings; k++) {
                struct error se = {0};
                if (!ops->set)
                    refused(e, &n, l, q->line, "this panel takes no settings");
                else if (ops->set(state, q->settings[k].key, q->settings[k].value, &se) < 0)
                    refused(e, &n, l, q->line, se.msg);
            }
        }
        ops->fini(state);
    }
    if (n > 1) {
        size_t len = strlen(e->msg);
        snprintf(e->msg + len, sizeof e->msg - len, "; %d more refused", n - 1);
    }
    return n ? ERR_INVAL : 0;
}
