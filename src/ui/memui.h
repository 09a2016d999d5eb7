/* What the two memory panels share (the Lab and lesson 5, src/ui/panel_memory.c; lesson 4's
 * layouts, src/ui/panel_parallel.c): the models they offer, the knobs that step through
 * checkpoint policies and GPU memory sizes, a knob's row, and one GPU's memory drawn as a
 * stacked bar of its parts against its capacity. */
#ifndef SCALELAB_UI_MEMUI_H
#define SCALELAB_UI_MEMUI_H

#include <stdbool.h>

#include "calc/activ.h"
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

/* The index of the model named name among models[0..n), or -1. */
int memui_find_model(const struct model_shape *models, int n, const char *name);

/* The next (dir > 0) or the previous checkpoint policy of none, selective, full, sqrt, round
 * the circle; a policy not among them steps from none. */
void memui_step_ckpt(struct activ_policy *pol, int dir);

/* The next larger (dir > 0) or smaller GPU memory among 16 to 144 GiB; unchanged at the ends. */
void memui_step_capacity(double *bytes, int dir);

/* gpu_mem=SIZE: a size above 0; ERR_INVAL with e filled otherwise. */
int memui_parse_capacity(const char *value, double *bytes, struct error *e);

/* The knob keys: Up/Down (k/j) move *sel round count knobs (*dir = 0), Left/Right (h/l) ask
 * for the selected knob to change down or up (*dir = -1 or +1). Whether the key was one. */
bool memui_knob_key(int key, int *sel, int count, int *dir);

/* A knob's row at (y, x): the selection mark, the name in namew columns, then the value. */
void memui_draw_knob(struct ui_canvas *c, int y, int x, int namew, const char *name,
                     const char *val, bool sel);

/* m's parts as a stacked bar of w cells at (y, x) on a bar worth scale bytes, what lies past
 * the capacity in the error colour, the capacity's column marked. */
void memui_draw_bar(struct ui_canvas *c, int y, int x, int w, const struct memory_result *m,
                    double scale);

struct eventlog;
/* Logs "WHO: NAME = AFTER" when a knob moved; when it did not (it is at its limit), says so
 * once: "WHO: NAME stays AFTER, its limit", not again while that is the newest line. */
void memui_log_knob(struct eventlog *log, const char *who, const char *name, const char *before,
                    const char *after);

#endif
