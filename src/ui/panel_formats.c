/* Lesson 1's live panel: one number seen in fp32, fp16, bf16, fp8 e4m3 and fp8 e5m2 side by
 * side, with each format's sign, exponent and mantissa bits, the value it holds and its
 * relative error. The number is first held as fp32 (as a framework holds a float tensor) and
 * then rounded to each format (src/num/fp.h), as "scalelab formats" does.
 *
 * Settings from a lesson step: value=NUMBER, format=fp32|fp16|bf16|e4m3|e5m2 (the selected
 * row, which the arrow keys nudge by one unit in the last place). */
#include "config.h"

#include <curses.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "base/units.h"
#include "num/fp.h"
#include "ui/draw.h"
#include "ui/eventlog.h"
#include "ui/layout.h"
#include "ui/panel.h"

#define INPUT_MAX 40

struct formats {
    struct eventlog *log;
    double want;        /* the number asked for */
    enum fp_format sel; /* the row the arrows nudge */
    double start_want;  /* what r resets to: the step's settings */
    enum fp_format start_sel;
    bool editing; /* the input field has the keys */
    char input[INPUT_MAX + 1];
    size_t len;
    char error[ERROR_MAX]; /* why the last input was refused, or "" */
};

static int formats_init(void **state, const struct panel_env *env, struct error *e)
{
    struct formats *f = calloc(1, sizeof *f);
    if (!f)
        return error_set(e, ERR_NOMEM, "out of memory");
    f->log = env->log;
    f->want = f->start_want = 0.1;
    f->sel = f->start_sel = FP_FP16;
    *state = f;
    return 0;
}

static void formats_fini(void *state)
{
    free(state);
}

static void set_value(struct formats *f, double v, const char *why)
{
    char b[40];
    f->want = v;
    f->error[0] = '\0';
    if (why)
        eventlog_add(f->log, "formats: %s = %s", why, fmt_value(b, sizeof b, v));
}

/* One unit in the last place of the selected format, up (dir > 0) or down. */
static void nudge(struct formats *f, int dir)
{
    if (isnan(f->want))
        return;
    uint32_t bits = fp_encode(f->sel, (float)f->want);
    uint32_t next = fp_step(f->sel, bits, dir);
    char b[40];
    snprintf(b, sizeof b, "%s one ulp %s", fp_info(f->sel)->name, dir > 0 ? "up" : "down");
    set_value(f, fp_decode(f->sel, next), b);
}

static int edit_key(struct formats *f, int key)
{
    if (key == 27) { /* Esc: leave the field as it was */
        f->editing = false;
        f->error[0] = '\0';
    } else if (key == '\n' || key == '\r' || key == KEY_ENTER) {
        struct error e = {0};
        double v;
        f->input[f->len] = '\0';
        if (units_parse_double(f->input, true, &v, &e) < 0) {
            snprintf(f->error, sizeof f->error, "%s", e.msg);
        } else {
            f->editing = false;
            set_value(f, v, "typed");
        }
    } else if (key == KEY_BACKSPACE || key == 127 || key == 8) {
        if (f->len)
            f->len--;
    } else if (key == 21) { /* Ctrl-U: clear */
        f->len = 0;
    } else if (key >= 32 && key < 127 && f->len < INPUT_MAX) {
        f->input[f->len++] = (char)key;
    }
    f->input[f->len] = '\0';
    return PANEL_HANDLED | PANEL_REDRAW;
}

static int formats_on_key(void *state, int key)
{
    struct formats *f = state;
    if (f->editing)
        return edit_key(f, key);
    switch (key) {
    case '\n':
    case '\r':
    case KEY_ENTER:
    case '/':
        f->editing = true;
        f->len = 0;
        f->input[0] = '\0';
        f->error[0] = '\0';
        break;
    case KEY_UP:
    case 'k': f->sel = (enum fp_format)((f->sel + FP_COUNT - 1) % FP_COUNT); break;
    case KEY_DOWN:
    case 'j': f->sel = (enum fp_format)((f->sel + 1) % FP_COUNT); break;
    case KEY_RIGHT:
    case 'l': nudge(f, +1); break;
    case KEY_LEFT:
    case 'h': nudge(f, -1); break;
    case 'M': set_value(f, fp_info(FP_FP16)->max, "fp16 max"); break;
    case 'o':
        /* Halfway between 65504 and 2^16: the tie rounds to the even mantissa, 2^16, which
         * fp16 cannot hold. */
        set_value(f, 65520.0, "fp16 overflow");
        break;
    case 's': set_value(f, fp_info(FP_FP16)->min_subnormal, "smallest fp16 subnormal"); break;
    case 'e': {
        char b[40];
        snprintf(b, sizeof b, "1 + %s eps", fp_info(f->sel)->name);
        set_value(f, 1.0 + fp_info(f->sel)->epsilon, b);
        break;
    }
    case 'b': set_value(f, fp_info(FP_BF16)->max, "bf16 max"); break;
    case 't': set_value(f, 0.1, "a tenth"); break;
    default: return 0;
    }
    return PANEL_HANDLED | PANEL_REDRAW;
}

static int formats_on_event(void *state, const struct panel_event *ev)
{
    struct formats *f = state;
    if (ev->kind != PANEL_RESET)
        return 0; /* nothing here moves by itself */
    f->editing = false;
    f->error[0] = '\0';
    f->sel = f->start_sel;
    set_value(f, f->start_want, "reset");
    return PANEL_REDRAW;
}

static int formats_set(void *state, const char *name, const char *value, struct error *e)
{
    struct formats *f = state;
    if (!strcmp(name, "value")) {
        double v;
        if (units_parse_double(value, true, &v, e) < 0)
            return ERR_INVAL;
        f->want = f->start_want = v;
        f->error[0] = '\0';
        return 0;
    }
    if (!strcmp(name, "format")) {
        enum fp_format sel;
        if (fp_parse_format(value, &sel, e) < 0)
            return ERR_INVAL;
        f->sel = f->start_sel = sel;
        return 0;
    }
    return error_set(e, ERR_INVAL, "the formats panel knows 'value' and 'format', not '%s'", name);
}

/* The bits, each field in its own look. */
static int draw_bits(struct ui_canvas *c, int y, int x, const struct fp_info *in, uint32_t bits)
{
    char b[48];
    fmt_bits(b, sizeof b, bits, in->exp_bits, in->man_bits);
    /* "s eeeee mmmm": the sign is b[0], the exponent b[2..], the mantissa after the 2nd space */
    char sign[2] = {b[0], '\0'};
    char exp[16];
    snprintf(exp, sizeof exp, "%.*s", in->exp_bits, b + 2);
    x = canvas_text(c, y, x, ROLE_SIGN, sign);
    x = canvas_text(c, y, x + 1, ROLE_EXP, exp);
    return canvas_text(c, y, x + 1, ROLE_MAN, b + 3 + in->exp_bits);
}

static enum ui_role err_role(const char *err)
{
    if (!strcmp(err, "exact"))
        return ROLE_GOOD;
    if (!strcmp(err, "overflow") || !strcmp(err, "underflow") || !strcmp(err, "nan"))
        return ROLE_WARN;
    return ROLE_TEXT;
}

/* Each format's range on one axis of powers of two, 2^-150 to 2^130, where fp32's and
 * bf16's reach shows beside fp16's and fp8's: the subnormals shaded, the normal numbers
 * full, and a marker above the value's place. */
static void draw_ranges(struct ui_canvas *c, int y, double want)
{
    const struct ui_glyphs *g = theme_glyphs();
    const double lo = -150, hi = 130;
    const int ax = 10, aw = c->r.w - ax;
    if (aw < 20)
        return;
    canvas_text(c, y, 0, ROLE_DIM, "range");
    if (isfinite(want) && want != 0) {
        int col = layout_axis(lo, hi, aw, log2(fabs(want)));
        canvas_text(c, y, ax + col, ROLE_KEY, g->marker);
    }
    y++;
    for (int i = 0; i < FP_COUNT; i++, y++) {
        const struct fp_info *in = fp_info((enum fp_format)i);
        double sub = log2(in->min_subnormal), nor = log2(in->min_normal), top = log2(in->max);
        canvas_text(c, y, 1, ROLE_TEXT, in->name);
        for (int k = 0; k < aw; k++) {
            double e = lo + (k + 0.5) * (hi - lo) / aw; /* the middle of the cell */
            if (e >= nor && e <= top)
                canvas_text(c, y, ax + k, ROLE_BAR, g->bar);
            else if (e >= sub && e < nor)
                canvas_text(c, y, ax + k, ROLE_BAR, g->shade);
            else
                canvas_text(c, y, ax + k, ROLE_DIM, g->h);
        }
    }
    /* The axis' labels: its ends and 1 = 2^0. */
    int one = layout_axis(lo, hi, aw, 0);
    canvas_text(c, y, ax, ROLE_DIM, "2^-150");
    canvas_text(c, y, ax + one, ROLE_DIM, "1");
    canvas_text(c, y, ax + aw - 5, ROLE_DIM, "2^130");
}

static void formats_draw(const void *state, struct ui_canvas *c)
{
    const struct formats *f = state;
    const struct ui_glyphs *g = theme_glyphs();
    int w = c->r.w;
    char vb[48], hb[16], eb[32];

    /* The input field. */
    int x = canvas_text(c, 0, 0, ROLE_TITLE, "Value ");
    int fw = w - x > 30 ? 30 : w - x;
    canvas_fill(c, 0, x, fw, ROLE_INPUT);
    if (f->editing) {
        canvas_text(c, 0, x + 1, ROLE_INPUT, f->input);
        canvas_cursor(c, 0, x + 1 + (int)f->len);
    } else {
        canvas_text(c, 0, x + 1, ROLE_INPUT, fmt_value(vb, sizeof vb, f->want));
    }
    if (f->error[0])
        canvas_wrap(c, 1, ROLE_ERROR, f->error, 0);
    else if (f->editing)
        canvas_text(c, 1, 0, ROLE_DIM, "Enter applies, Esc cancels (e.g. 65504, 1e-8, inf)");
    else
        canvas_printf(c, 1, 0, ROLE_DIM, "held as fp32, then rounded to each format");

    /* The table: one line per format when it is wide enough, else two (bits, then hex,
     * value and error), with a blank line between formats when there are rows to spare. */
    bool wide = w >= 80;
    bool airy = !wide && c->r.h >= 4 + 3 * FP_COUNT + 3 + 3 + FP_COUNT; /* with the ranges */
    int y = 3;
    const int bx = 10;                  /* the bits */
    const int hx = wide ? bx + 35 : bx; /* hex, value, error */
    const int vx = hx + 11, ex = hx + (wide ? 27 : 25);
    x = canvas_text(c, y, 0, ROLE_DIM, "format");
    x = canvas_text(c, y, bx, ROLE_SIGN, "sign");
    x = canvas_text(c, y, x + 1, ROLE_EXP, "exponent");
    x = canvas_text(c, y, x + 1, ROLE_MAN, "mantissa");
    if (!wide)
        y++;
    canvas_text(c, y, hx, ROLE_DIM, "hex");
    canvas_text(c, y, vx, ROLE_DIM, "value");
    canvas_text(c, y, ex, ROLE_DIM, wide ? "rel. error" : "error");
    y++;
    float held32 = (float)f->want;
    for (int i = 0; i < FP_COUNT; i++) {
        const struct fp_info *in = fp_info((enum fp_format)i);
        bool sel = (enum fp_format)i == f->sel;
        uint32_t bits = fp_encode((enum fp_format)i, held32);
        double held = fp_decode((enum fp_format)i, bits);
        fmt_hex(hb, sizeof hb, bits, in->exp_bits, in->man_bits);
        fmt_value(vb, sizeof vb, held);
        fmt_relerr(eb, sizeof eb, held, f->want);
        if (airy)
            y++;
        if (sel)
            canvas_text(c, y, 0, ROLE_SELECTED, g->sel);
        canvas_text(c, y, 1, sel ? ROLE_SELECTED : ROLE_TEXT, in->name);
        draw_bits(c, y, bx, in, bits);
        int vy = wide ? y : y + 1;
        canvas_text(c, vy, hx, ROLE_DIM, hb);
        int after = canvas_text(c, vy, vx, sel ? ROLE_SELECTED : ROLE_TEXT, vb);
        canvas_text(c, vy, after + 1 > ex ? after + 1 : ex, err_role(eb), eb);
        y = vy + 1;
    }

    /* The selected format's range and precision, when there is room. */
    const struct fp_info *in = fp_info(f->sel);
    if (y + 2 < c->r.h) {
        y++;
        x = canvas_text(c, y, 0, ROLE_TITLE, in->name);
        canvas_printf(c, y, x, ROLE_DIM, "  max %s  eps %.3g", fmt_value(vb, sizeof vb, in->max),
                      in->epsilon);
        canvas_printf(c, y + 1, 0, ROLE_DIM, "min normal %.3g  min subnormal %.3g", in->min_normal,
                      in->min_subnormal);
        y += 2;
    }
    if (y + 3 + FP_COUNT <= c->r.h)
        draw_ranges(c, y + 1, f->want);
}

static const struct panel_key formats_keys[] = {
    {"Enter /", "type a value (Enter applies, Esc cancels)", "value"},
    {"j/k Up/Down", "select a format", "format"},
    {"h/l Left/Right", "one ulp of the selected format down/up", "ulp"},
    {"M", "fp16 max, 65504", NULL},
    {"o", "65520: rounds past fp16 max to inf", NULL},
    {"s", "the smallest fp16 subnormal, 2^-24", NULL},
    {"e", "1 + eps of the selected format", NULL},
    {"b", "bf16 max", NULL},
    {"t", "a tenth, 0.1", NULL},
    {NULL, NULL, NULL},
};

const struct panel_ops panel_formats = {
    .name = "formats",
    .title = "Number formats",
    .about = "One number in fp32, fp16, bf16 and fp8 side by side: each format's sign, exponent "
             "and mantissa bits, the value it holds and the relative error. The number is held "
             "as fp32 first, then rounded to nearest even.",
    .init = formats_init,
    .fini = formats_fini,
    .on_key = formats_on_key,
    .on_event = formats_on_event,
    .set = formats_set,
    .draw = formats_draw,
    .keys = formats_keys,
};
