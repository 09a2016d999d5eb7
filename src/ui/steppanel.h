/* Opening a lesson step's panel: afresh, with the lesson's defaults and the step's settings. */
#ifndef SCALELAB_UI_STEPPANEL_H
#define SCALELAB_UI_STEPPANEL_H

#include "ui/panel.h"

struct error;
struct lesson;
struct lesson_panel;

/* Gives *state (a panel of ops, or NULL for none yet) a new state: the panel's starting one,
 * then the settings of the lesson's head @panel when it names the same panel, then lp's (the
 * step's @panel, or NULL). The old state is freed only once the new one exists, so what the
 * learner turned before never leaks into a step. A bad setting is logged to env->log as
 * "FILE:LINE: why" and skipped. 0, or a negative code from init with e filled (*state is
 * then unchanged). l may be NULL (no lesson: the panel's own start). */
int steppanel_open(const struct panel_ops *ops, const struct panel_env *env, const struct lesson *l,
                   const struct lesson_panel *lp, void **state, struct error *e);

/* What the window would refuse in l's panels, checked without a screen (scalelab run): each
 * @panel (the head's and every step's) names a panel, and the panel takes each of its
 * settings. Each panel is opened once and given the settings of every @panel naming it, in
 * the file's order. 0, or ERR_INVAL with "FILE:LINE: why" for the first refusal and the
 * count of the others. */
int steppanel_check(const struct lesson *l, struct error *e);

#endif
