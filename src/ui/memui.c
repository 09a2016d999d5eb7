/* What the memory panels share: the models offered, a GPU's memory as a stacked bar
 * (ui/memui.h). */
#include "config.h"
#include "ui/memui.h"

#include "ui/stackbar.h"

const enum ui_role memui_part_role[MEMUI_PARTS] = {ROLE_SIGN, ROLE_EXP,  ROLE_MAN,
                                                   ROLE_BAR,  ROLE_GOOD, ROLE_MOVED};
const char memui_part_letter[MEMUI_PARTS] = {'W', 'G', 'M', 'O', 'A', 'C'};

static const char *const model_names[] = {"synthetic-7b", "tiny",       "small",
                                          "llama2-13b",   "llama2-70b", "gpt3-175b"};

int memui_load_models(struct model_shape *models, int max)
{
    int n = 0;
    for (size_t i = 0; i < sizeof model_names / sizeof model_names[0] && n < max; i++)
        if (preset_load_model(model_names[i], &models[n], NULL) == 0)
            n++;
    return n;
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
