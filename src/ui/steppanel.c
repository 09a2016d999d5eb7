/* A lesson step opens its panel afresh: the panel's start, the lesson's defaults, the step's
 * settings, whatever the learner turned before (issue 10). The window and test_ui share it. */
#include "config.h"
#include "ui/steppanel.h"

#include <string.h>

#include "base/error.h"
#include "lesson/lesson.h"
#include "ui/eventlog.h"

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
