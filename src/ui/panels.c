/* The list of panels the window knows, by name (ui/panels.h). */
#include "config.h"
#include "ui/panels.h"

#include <string.h>

extern const struct panel_ops panel_formats;
extern const struct panel_ops panel_collective, panel_memory, panel_parallel, panel_zero;
extern const struct panel_ops panel_training, panel_checkpoint, panel_dprun, panel_pprun;
extern const struct panel_ops panel_cprun, panel_eprun;

/* One line per panel; a lesson file names its panel with @panel NAME. */
const struct panel_ops *const ui_panels[] = {
    &panel_formats,    /* lesson 1: number formats */
    &panel_training,   /* lesson 1: loss scaling and clipping on a real run */
    &panel_checkpoint, /* lesson 2 */
    &panel_collective, /* lesson 3 */
    &panel_parallel,   /* lesson 4 */
    &panel_pprun,      /* lesson 4's run: pipeline parallelism on thread-GPUs */
    &panel_zero,       /* lesson 5 */
    &panel_cprun,      /* lesson 6's run: ring attention (context parallelism) on thread-GPUs */
    &panel_eprun,      /* lesson 7's run: expert parallelism on thread-GPUs */
    &panel_memory,     /* the Lab */
    &panel_dprun,      /* the Lab's run mode: data parallelism on thread-GPUs */
    NULL,
};

const struct panel_ops *panel_find(const char *name)
{
    for (int i = 0; ui_panels[i]; i++)
        if (!strcmp(ui_panels[i]->name, name))
            return ui_panels[i];
    return NULL;
}
