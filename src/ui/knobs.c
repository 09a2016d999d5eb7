/* A calculator panel's knobs from its table: their text, stepping, keys, log lines and lesson
 * settings (ui/knobs.h). */
#include "config.h"
#include "ui/knobs.h"

#include <curses.h>
#include <stdio.h>
#include <string.h>

#include "base/units.h"
#include "calc/activ.h"
#include "ui/eventlog.h"
#include "ui/memui.h"
#include "ui/panel.h"

static const double mem_steps[] = {16, 24, 32, 40, 48, 64, 80, 96, 128, 144}; /* GiB */
static const char *const ckpt_names[] = {"none", "selective", "full", "sqrt"};

void knobs_init(struct knobs *ks, const struct knobs_spec *spec, void *s, void *start, size_t size,
                struct eventlog *log)
{
    *ks = (struct knobs){.spec = spec, .s = s, .start = start, .size = size, .log = log};
}

static void *field(void *s, const struct knob *kn)
{
    return (char *)s + kn->offset;
}

static const void *cfield(const void *s, const struct knob *kn)
{
    return (const char *)s + kn->offset;
}

void knobs_text(const struct knobs *ks, int k, char *val, size_t n)
{
    const struct knob *kn = &ks->spec->knobs[k];
    const void *f = cfield(ks->s, kn);
    if (kn->text) {
        kn->text(f, val, n);
        return;
    }
    switch (kn->kind) {
    case KNOB_MODEL: snprintf(val, n, "%s", ks->models[*(const int *)f].name); break;
    case KNOB_CKPT: ckpt_name(val, n, f); break;
    case KNOB_CAPACITY: snprintf(val, n, "%.0f GiB", *(const double *)f / MEMUI_GIB); break;
    default: snprintf(val, n, "%d", *(const int *)f); break;
    }
}

/* The next (dir > 0) or the previous checkpoint policy of none, selective, full, sqrt, round
 * the circle; a policy not among them steps from none. */
static void step_ckpt(struct ckpt_policy *pol, int dir)
{
    int i = 0;
    char cur[32];
    ckpt_name(cur, sizeof cur, pol);
    for (int j = 0; j < 4; j++)
        if (!strcmp(cur, ckpt_names[j]))
            i = j;
    ckpt_parse(ckpt_names[(i + 4 + dir) % 4], pol, NULL);
}

/* The next larger (dir > 0) or smaller GPU memory among mem_steps; unchanged at the ends. */
static void step_capacity(double *bytes, int dir)
{
    int n = (int)(sizeof mem_steps / sizeof mem_steps[0]);
    double cur = *bytes / MEMUI_GIB;
    for (int i = dir > 0 ? 0 : n - 1; i >= 0 && i<n; i += dir> 0 ? 1 : -1)
        if (dir > 0 ? mem_steps[i] > cur + 1e-9 : mem_steps[i] < cur - 1e-9) {
            *bytes = mem_steps[i] * MEMUI_GIB;
            return;
        }
}

/* Doubles (dir > 0) or halves *v within [min, max]; a value between powers of two doubles to
 * max when twice it would pass max. */
static void step_twice(int *v, int dir, int min, int max)
{
    if (dir > 0 && *v < max)
        *v = *v > max / 2 ? max : *v * 2;
    else if (dir < 0 && *v > min)
        *v = *v / 2 < min ? min : *v / 2;
}

static void step(const struct knobs *ks, const struct knob *kn, void *f, int dir)
{
    int span = kn->max - kn->min + 1;
    if (kn->step) {
        kn->step(f, dir);
        return;
    }
    switch (kn->kind) {
    case KNOB_TWICE: step_twice(f, dir, kn->min, kn->max); break;
    case KNOB_ROUND: *(int *)f = kn->min + (*(int *)f - kn->min + span + dir) % span; break;
    case KNOB_MODEL: *(int *)f = (*(int *)f + ks->nmodels + dir) % ks->nmodels; break;
    case KNOB_CKPT: step_ckpt(f, dir); break;
    case KNOB_CAPACITY: step_capacity(f, dir); break;
    default: break;
    }
}

/* A model knob moved: the sequence knob (if the panel has one) to the model's length. */
static void follow_model(struct knobs *ks, const struct knob *kn)
{
    const struct knobs_spec *sp = ks->spec;
    if (kn->kind == KNOB_MODEL && sp->seq > 0)
        *(int *)field(ks->s, &sp->knobs[sp->seq]) = ks->models[*(const int *)field(ks->s, kn)].seq;
}

void knobs_change(struct knobs *ks, int k, int dir)
{
    const struct knob *kn = &ks->spec->knobs[k];
    char was[48], val[48];
    knobs_text(ks, k, was, sizeof was);
    step(ks, kn, field(ks->s, kn), dir);
    follow_model(ks, kn);
    knobs_text(ks, k, val, sizeof val);
    char range[48] = ""; /* why it stays: the knob's bounds */
    if (kn->kind == KNOB_TWICE)
        snprintf(range, sizeof range, "%d to %d", kn->min, kn->max);
    else if (kn->kind == KNOB_CAPACITY)
        snprintf(range, sizeof range, "%.0f to %.0f GiB", mem_steps[0],
                 mem_steps[sizeof mem_steps / sizeof mem_steps[0] - 1]);
    knobs_log(ks->log, ks->spec->who, kn->name, was, val, range);
}

int knobs_key(struct knobs *ks, int key)
{
    int count = ks->spec->count;
    switch (key) {
    case KEY_UP:
    case 'k': ks->sel = (ks->sel + count - 1) % count; return KNOBS_MOVED;
    case KEY_DOWN:
    case 'j': ks->sel = (ks->sel + 1) % count; return KNOBS_MOVED;
    case KEY_RIGHT:
    case 'l': knobs_change(ks, ks->sel, +1); return KNOBS_CHANGED;
    case KEY_LEFT:
    case 'h': knobs_change(ks, ks->sel, -1); return KNOBS_CHANGED;
    default: break;
    }
    for (const struct knob_letter *lt = ks->spec->letters; lt && lt->key; lt++)
        if (lt->key == key) {
            knobs_change(ks, lt->knob, lt->dir);
            return KNOBS_CHANGED;
        }
    return KNOBS_NONE;
}

/* The index of the model named name among models[0..n), or -1. */
static int find_model(const struct model_shape *models, int n, const char *name)
{
    int found = -1;
    for (int i = 0; i < n; i++)
        if (!strcmp(models[i].name, name))
            found = i;
    return found;
}

/* gpu_mem=SIZE: a size above 0. */
static int parse_capacity(const char *value, double *bytes, struct error *e)
{
    double b = 0;
    int rc = units_parse_bytes(value, 1e15, &b, e);
    if (rc == 0 && !(b > 0))
        rc = error_set(e, ERR_INVAL, "gpu_mem must be above 0");
    *bytes = b;
    return rc;
}

/* value into f, kn's field; f as it was on an error. */
static int parse(const struct knob *kn, const char *value, void *f, struct error *e)
{
    long long v = 0;
    int rc = 0;
    if (kn->parse)
        return kn->parse(value, f, e);
    switch (kn->kind) {
    case KNOB_TWICE:
    case KNOB_ROUND:
        if ((rc = units_parse_int(value, kn->min, kn->max, &v, e)) == 0)
            *(int *)f = (int)v;
        return rc;
    case KNOB_CKPT: {
        struct ckpt_policy pol;
        if ((rc = ckpt_parse(value, &pol, e)) == 0)
            *(struct ckpt_policy *)f = pol;
        return rc;
    }
    case KNOB_CAPACITY: {
        double b;
        if ((rc = parse_capacity(value, &b, e)) == 0)
            *(double *)f = b;
        return rc;
    }
    default: return error_set(e, ERR_INVAL, "'%s' cannot be set", kn->setting);
    }
}

/* "a, b and c": the settings the knobs answer to. */
static void settings_list(const struct knobs_spec *sp, char *out, size_t n)
{
    size_t len = 0;
    out[0] = '\0';
    for (int k = 0; k < sp->count && len < n; k++) {
        const char *sep = k == 0 ? "" : k == sp->count - 1 ? " and " : ", ";
        int w = snprintf(out + len, n - len, "%s%s", sep, sp->knobs[k].setting);
        len += w > 0 ? (size_t)w : 0;
    }
}

int knobs_set(struct knobs *ks, const char *name, const char *value, struct error *e)
{
    const struct knobs_spec *sp = ks->spec;
    for (int k = 0; k < sp->count; k++) {
        const struct knob *kn = &sp->knobs[k];
        if (strcmp(name, kn->setting))
            continue;
        if (kn->kind == KNOB_MODEL) {
            int found = find_model(ks->models, ks->nmodels, value);
            if (found < 0)
                return error_set(e, ERR_INVAL, "%s has no model '%s'", sp->title, value);
            *(int *)field(ks->s, kn) = found;
            follow_model(ks, kn);
        } else if (parse(kn, value, field(ks->s, kn), e) < 0) {
            error_prefix(e, "%s", name);
            return ERR_INVAL;
        }
        memcpy(ks->start, ks->s, ks->size);
        return 0;
    }
    char list[256];
    settings_list(sp, list, sizeof list);
    return error_set(e, ERR_INVAL, "%s knows %s, not '%s'", sp->title, list, name);
}

void knobs_reset(struct knobs *ks)
{
    memcpy(ks->s, ks->start, ks->size);
    eventlog_add(ks->log, "%s: reset", ks->spec->who);
}

int knobs_on_key(void *state, int key)
{
    struct knobs *ks = state;
    int r = knobs_key(ks, key);
    if (r == KNOBS_CHANGED)
        ks->spec->compute(state);
    return r == KNOBS_NONE ? 0 : PANEL_HANDLED | PANEL_REDRAW;
}

int knobs_on_event(void *state, const struct panel_event *ev)
{
    struct knobs *ks = state;
    if (ev->kind != PANEL_RESET)
        return 0;
    knobs_reset(ks);
    ks->spec->compute(state);
    return PANEL_REDRAW;
}

int knobs_on_set(void *state, const char *name, const char *value, struct error *e)
{
    struct knobs *ks = state;
    int rc = knobs_set(ks, name, value, e);
    if (rc == 0)
        ks->spec->compute(state);
    return rc;
}

void knobs_draw(const struct knobs *ks, int k, struct ui_canvas *c, int y, int x, int namew)
{
    char val[48];
    bool sel = k == ks->sel;
    knobs_text(ks, k, val, sizeof val);
    if (sel)
        canvas_text(c, y, x, ROLE_SELECTED, theme_glyphs()->sel);
    const struct knob *kn = &ks->spec->knobs[k];
    canvas_printf(c, y, x + 2, ROLE_DIM, "%-*s", namew,
                  namew <= 5 && kn->brief ? kn->brief : kn->name);
    canvas_text(c, y, x + 3 + namew, sel ? ROLE_SELECTED : ROLE_TEXT, val);
}

void knobs_log(struct eventlog *log, const char *who, const char *name, const char *before,
               const char *after, const char *range)
{
    if (strcmp(before, after)) {
        eventlog_add(log, "%s: %s = %s", who, name, after);
        return;
    }
    eventlog_add_once(log, "%s: %s stays %s, its limit%s%s%s", who, name, after,
                      range && *range ? " (" : "", range ? range : "", range && *range ? ")" : "");
}
