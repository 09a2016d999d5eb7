/* The window's tabs and every panel (src/ui/panels.c). */
#ifndef SCALELAB_UI_PANELS_H
#define SCALELAB_UI_PANELS_H

#include "ui/panel.h"

/* Every panel, ending with NULL. */
extern const struct panel_ops *const ui_panels[];

/* The panel named name, or NULL. */
const struct panel_ops *panel_find(const char *name);

/* The tabs: lessons 1-5 and the Lab, in order. */
#define UI_TABS 6
struct ui_tab {
    const char *key;    /* "1".."5", "L" */
    const char *full;   /* "1 Precision" */
    const char *brief;  /* "1 Prec" */
    const char *lesson; /* the lesson's id (lessons/NN-*.lesson), "01" .. "05", "lab" */
    const char *title;  /* the lesson's title, until its file is read */
    const char *panel;  /* the panel shown until a step names another */
};
extern const struct ui_tab ui_tabs[UI_TABS];

#endif
