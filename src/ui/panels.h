/* Every panel the window knows (src/ui/panels.c); its tabs are the lessons' (ui/tabs.h). */
#ifndef SCALELAB_UI_PANELS_H
#define SCALELAB_UI_PANELS_H

#include "ui/panel.h"

/* Every panel, ending with NULL. */
extern const struct panel_ops *const ui_panels[];

/* The panel named name, or NULL. */
const struct panel_ops *panel_find(const char *name);

#endif
