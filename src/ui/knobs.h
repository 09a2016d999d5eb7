/* A calculator panel's knobs (the Lab's and lesson 5's memory panel, lesson 4's layouts): a
 * table says each knob's name on screen, its lesson setting and what kind of value it holds in
 * the panel's settings struct; one set of functions shows a knob's value, steps it from the
 * keys (Up/Down select, Left/Right change, the panel's letters), logs the change, sets it by
 * name from a lesson's @panel settings, and serves as the panel's on_key, on_event and set. */
#ifndef SCALELAB_UI_KNOBS_H
#define SCALELAB_UI_KNOBS_H

#include <stdbool.h>
#include <stddef.h>

#include "base/error.h"
#include "calc/preset.h"
#include "ui/draw.h"

enum knob_kind {
    KNOB_TWICE,    /* int from min to max: Right doubles it (up to max), Left halves it */
    KNOB_ROUND,    /* int from min to max: Left/Right step round the circle */
    KNOB_MODEL,    /* int, an index into the panel's models; set by the model's name */
    KNOB_CKPT,     /* struct ckpt_policy: none, selective, full, sqrt round the circle */
    KNOB_CAPACITY, /* double, GPU memory in bytes: 16 to 144 GiB */
    KNOB_OWN,      /* the panel's own: its text, step and parse below say what it is */
};

struct knob {
    const char *name;    /* on screen: "GPUs" */
    const char *brief;   /* in a narrow panel, at most 5 columns ("prec"); NULL: the name */
    const char *setting; /* in a lesson's @panel line: "gpus" */
    enum knob_kind kind;
    size_t offset; /* of the field in the panel's settings struct */
    int min, max;  /* KNOB_TWICE, KNOB_ROUND */
    /* Optional for the kinds above (text), required for KNOB_OWN: the value's text; a step
     * by dir (-1 or +1); value parsed into the field, left as it was on an error. */
    void (*text)(const void *field, char *out, size_t n);
    void (*step)(void *field, int dir);
    int (*parse)(const char *value, void *field, struct error *e);
};

/* A letter that changes one knob without selecting it: 'z' steps ZeRO up. */
struct knob_letter {
    int key, knob, dir;
};

/* What a panel says once about its knobs. */
struct knobs_spec {
    const struct knob *knobs;
    int count;
    const struct knob_letter *letters; /* ended by key 0 */
    const char *who;                   /* the event log's prefix: "lab" */
    const char *title;                 /* in errors: "the memory lab" */
    void (*compute)(void *state);      /* the panel's figures again, after a change */
    int seq; /* the knob (an int) that takes the model's sequence length when the model knob
              * changes, so a model shows at its own length until the knob moves; 0: none */
};

struct eventlog;

/* A panel's knobs at work: its settings now (s) and as the lesson set them (start), both
 * size bytes, owned by the panel, and the models a KNOB_MODEL picks from. */
struct knobs {
    const struct knobs_spec *spec;
    void *s, *start;
    size_t size;
    struct eventlog *log;
    const struct model_shape *models;
    int nmodels;
    int sel; /* the selected knob */
};

/* Sets ks up for a panel's settings s and start (size bytes each) and its event log; the
 * selection on the first knob, no models. */
void knobs_init(struct knobs *ks, const struct knobs_spec *spec, void *s, void *start, size_t size,
                struct eventlog *log);

/* Knob k's value as text. */
void knobs_text(const struct knobs *ks, int k, char *val, size_t n);

/* Steps knob k by dir (-1 or +1) and logs it (or that it stays at its limit). */
void knobs_change(struct knobs *ks, int k, int dir);

/* What key did to the knobs. */
enum { KNOBS_NONE, KNOBS_MOVED, KNOBS_CHANGED };

/* Handles the knob keys: Up/Down (k/j) move the selection round, Left/Right (h/l) change the
 * selected knob, and the spec's letters their knobs. KNOBS_NONE when key is none of them. */
int knobs_key(struct knobs *ks, int key);

/* Sets the knob whose setting is name from value, the settings and their start both; an error
 * naming the setting (and leaving both as they were) when value is not allowed, or naming the
 * settings there are when no knob is called name. */
int knobs_set(struct knobs *ks, const char *name, const char *value, struct error *e);

/* Puts the settings back as the lesson set them, and logs "WHO: reset". */
void knobs_reset(struct knobs *ks);

/* A panel's operations (ui/panel.h) for a state that begins with its struct knobs: a knob
 * key, the reset event and a lesson setting change the knobs, then call the spec's compute. */
struct panel_event;
int knobs_on_key(void *state, int key);
int knobs_on_event(void *state, const struct panel_event *ev);
int knobs_on_set(void *state, const char *name, const char *value, struct error *e);

/* Knob k's row at (y, x): the selection mark, the name in namew columns (its brief name when
 * namew is 5 or less), then the value. */
void knobs_draw(const struct knobs *ks, int k, struct ui_canvas *c, int y, int x, int namew);

/* Logs "WHO: NAME = AFTER" when a knob moved; when it did not (it is at its limit), says so
 * and why: "WHO: NAME stays AFTER, its limit (RANGE)" (range NULL or "": none), not again
 * while that is the newest line (the status line says it already). */
void knobs_log(struct eventlog *log, const char *who, const char *name, const char *before,
               const char *after, const char *range);

#endif
