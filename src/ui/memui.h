/* What the two memory panels share (the Lab and lesson 5, src/ui/panel_memory.c; lesson 4's
 * layouts, src/ui/panel_parallel.c) and the run panels: the models they offer, and one GPU's
 * memory drawn as a stacked bar of its parts against its capacity (their knobs are ui/knobs.h). */
#ifndef SCALELAB_UI_MEMUI_H
#define SCALELAB_UI_MEMUI_H

#include "calc/memory.h"
#include "calc/preset.h"
#include "ui/draw.h"

#define MEMUI_GIB 1073741824.0

/* The parts of a GPU's memory in the bar, in order: weights, gradients, master weights,
 * optimizer state, activations, communication buffers; each part's look, and its letter where
 * there is no colour. */
#define MEMUI_PARTS 6
extern const enum ui_role memui_part_role[MEMUI_PARTS];
extern const char memui_part_letter[MEMUI_PARTS];

/* Loads the model presets the panels offer (synthetic-7b first) into models[0..max); returns
 * how many loaded. */
int memui_load_models(struct model_shape *models, int max);

/* m's parts as a stacked bar of w cells at (y, x) on a bar worth scale bytes, what lies past
 * the capacity in the error colour, the capacity's column marked. */
void memui_draw_bar(struct ui_canvas *c, int y, int x, int w, const struct memory_result *m,
                    double scale);

#endif
