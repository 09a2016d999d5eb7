/* What the memory panels share: the models offered, the checkpoint and capacity knobs, a
 * knob's row, a GPU's memory as a stacked bar (ui/memui.h). */
#include "config.h"
#include "ui/memui.h"

#include <curses.h>
#include <stdio.h>
#include <string.h>

#include "base/error.h"
#include "base/units.h"
#include "ui/eventlog.h"
#include "ui/stackbar.h"

const enum ui_role memui_part_role[MEMUI_PARTS] = {ROLE_SIGN, ROLE_EXP,  ROLE_MAN,
                                                   ROLE_BAR,  ROLE_GOOD, ROLE_MOVED};
const char memui_part_letter[MEMUI_PARTS] = {'W', 'G', 'M', 'O', 'A', 'C'};

static const char *const model_names[] = {"synthetic-7b", "tiny",       "small",
                                          "llama2-13b",   "llama2-70b", "gpt3-175b"};
static const double mem_steps[] = {16, 24, 32, 40, 48, 64, 80, 96, 128, 144}; /* GiB */
static const char *const ckpt_names[] = {"none", "selective", "full", "sqrt"};

int memui_load_models(struct model_shape *models, int max)
{
    int n = 0;
    for (size_t i = 0; i < sizeof model_names / sizeof model_names[0] && n < max; i++)
        if (preset_load_model(model_names[i], &models[n], NULL) == 0)
            n++;
    return n;
}

int memui_find_model(const struct model_shape *models, int n, const char *name)
{
    int found = -1;
    for (int i = 0; i < n; i++)
        if (!strcmp(models[i].name, name))
            found = i;
    return found;
}

void memui_step_ckpt(struct activ_policy *pol, int dir)
{
    int i = 0;
    char cur[32];
    activ_policy_name(cur, sizeof cur, pol);
    for (int j = 0; j < 4; j++)
        if (!strcmp(cur, ckpt_names[j]))
            i = j;
    activ_parse_policy(ckpt_names[(i + 4 + dir) % 4], pol, NULL);
}

void memui_step_capacity(double *bytes, int dir)
{
    int n = (int)(sizeof mem_steps / sizeof mem_steps[0]);
    double cur = *bytes / MEMUI_GIB;
    for (int i = dir > 0 ? 0 : n - 1; i >= 0 && i<n; i += dir> 0 ? 1 : -1)
        if (dir > 0 ? mem_steps[i] > cur + 1e-9 : mem_steps[i] < cur - 1e-9) {
            *bytes = mem_steps[i] * MEMUI_GIB;
            return;
        }
}

int memui_parse_capacity(const char *value, double *bytes, struct error *e)
{
    double b = 0;
    int rc = units_parse_bytes(value, 1e15, &b, e);
    if (rc == 0 && !(b > 0))
        rc = error_set(e, ERR_INVAL, "gpu_mem must be above 0");
    *bytes = b;
    return rc;
}

bool memui_knob_key(int key, int *sel, int count, int *dir)
{
    *dir = 0;
    switch (key) {
    case KEY_UP:
    case 'k': *sel = (*sel + count - 1) % count; return true;
    case KEY_DOWN:
    case 'j': *sel = (*sel + 1) % count; return true;
    case KEY_RIGHT:
    case 'l': *dir = +1; return true;
    case KEY_LEFT:
    case 'h': *dir = -1; return true;
    default: return false;
    }
}

void memui_draw_knob(struct ui_canvas *c, int y, int x, int namew, const char *name,
                     const char *val, bool sel)
{
    if (sel)
        canvas_text(c, y, x, ROLE_SELECTED, theme_glyphs()->sel);
    canvas_printf(c, y, x + 2, ROLE_DIM, "%-*s", namew, name);
    canvas_text(c, y, x + 3 + namew, sel ? ROLE_SELECTED : ROLE_TEXT, val);
}

void memui_draw_bar(struct ui_canvas *c, int y, int x, int w, const struct memory_result *m,
                    double scale)
{
    const struct ui_glyphs *g = theme_glyphs();
    double parts[MEMUI_PARTS] = {m->states.weights,   m->states.gradients, m->states.master,
                                 m->states.optimizer, m->activations,      m->comm};
    static struct stackbar sb; /* UI thread only */
    stackbar_layout(parts, MEMUI_PARTS, scale, m->capacity, w, &sb);
    for (int i = 0; i < sb.width; i++) {
        char cell[2] = {0, 0};
        if (i == sb.cap_col) {
            canvas_text(c, y, x + i, ROLE_WARN, g->v);
        } else if (sb.part[i] < 0) {
            canvas_text(c, y, x + i, ROLE_DIM, g->bar_empty);
        } else {
            cell[0] = memui_part_letter[(int)sb.part[i]];
            canvas_text(c, y, x + i, sb.over[i] ? ROLE_ERROR : memui_part_role[(int)sb.part[i]],
                        theme_color() ? g->bar : cell);
        }
    }
    if (sb.cap_col == sb.width)
        canvas_text(c, y, x + sb.width, ROLE_WARN, g->v);
}

void memui_log_knob(struct eventlog *log, const char *who, const char *name, const char *before,
                    const char *after)
{
    if (strcmp(before, after)) {
        eventlog_add(log, "%s: %s = %s", who, name, after);
        return;
    }
    char line[EVENTLOG_WIDTH];
    snprintf(line, sizeof line, "%s: %s stays %s, its limit", who, name, after);
    const char *last = eventlog_get(log, 0);
    const char *text = last ? strchr(last, ' ') : NULL; /* after the "HH:MM:SS " stamp */
    if (!text || strcmp(text + 1, line))
        eventlog_add(log, "%s", line);
}
