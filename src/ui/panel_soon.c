/* Placeholders for the panels other parts of scalelab will bring: each says what its panel
 * will show. A real panel replaces one by taking its line in ui_panels[] (panels.c). */
#include "config.h"

#include <stdlib.h>

#include "base/error.h"
#include "ui/draw.h"
#include "ui/panel.h"

struct soon {
    const struct panel_ops *self;
};

static int soon_init(void **state, const struct panel_env *env, struct error *e)
{
    struct soon *s = malloc(sizeof *s);
    if (!s)
        return error_set(e, ERR_NOMEM, "out of memory");
    s->self = env->self;
    *state = s;
    return 0;
}

static void soon_fini(void *state)
{
    free(state);
}

static int soon_on_key(void *state, int key)
{
    (void)state;
    (void)key;
    return 0;
}

static int soon_set(void *state, const char *name, const char *value, struct error *e)
{
    (void)state;
    (void)value;
    /* Lesson files may already carry the real panel's settings: accept them quietly. */
    (void)name;
    (void)e;
    return 0;
}

static void soon_draw(const void *state, struct ui_canvas *c)
{
    const struct soon *s = state;
    int y = 1;
    y += canvas_wrap(c, y, ROLE_TEXT, s->self->about, 0);
    canvas_wrap(c, y + 1, ROLE_DIM,
                "This panel is not built yet; the lesson's text on the left reads on its own.", 0);
}

#define SOON(NAME, TITLE, ABOUT)                                                                   \
    const struct panel_ops panel_soon_##NAME = {                                                   \
        #NAME,       TITLE, ABOUT,    soon_init, soon_fini,                                        \
        soon_on_key, NULL,  soon_set, soon_draw, (const struct panel_key[]){{NULL, NULL, NULL}},   \
    };

SOON(training, "Loss scaling",
     "A real mixed-precision training run of the tiny GPT will play here: the loss, the "
     "gradient norm before and after clipping, and the loss scale, with NaN and skipped-step "
     "events as fp16 overflows.")
SOON(checkpoint, "Activation memory",
     "Lesson 2: each layer's activation memory will be drawn here as bars, with and without "
     "checkpointing, beside the extra compute each policy costs.")
SOON(collective, "Ring all-reduce",
     "Lesson 3: the ring all-reduce will be animated here, chunk by chunk between device "
     "threads: reduce-scatter, then all-gather, with the bytes each link carries.")
SOON(parallel, "Parallel layouts",
     "Lesson 4: memory per GPU and the step's timeline for data, tensor and pipeline "
     "parallelism will be shown here, pipeline bubble included.")
SOON(zero, "ZeRO stages",
     "Lesson 5: per-GPU memory and communication of DDP and ZeRO stages 1 to 3 will be "
     "compared here, bar by bar.")
SOON(memory, "Memory lab",
     "The Lab: pick a model, a cluster, a precision and a ZeRO stage, and see each GPU's "
     "memory (weights, gradients, optimizer state, activations) against its capacity.")
