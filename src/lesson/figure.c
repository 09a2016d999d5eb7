/* Figures in a lesson's text: placeholders rendered from the engine, citations kept as
 * written, and the check for figures typed by hand (lesson/figure.h). */
#include "config.h"
#include "lesson/figure.h"

#include <ctype.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "base/units.h"
#include "lesson/lesson.h"
#include "lesson/quantity.h"

#define FIGURE_MAX 256 /* a placeholder's text, braces excluded */

struct out {
    char *p;
    size_t n, len;
    bool full;
};

static void put(struct out *o, const char *s, size_t len)
{
    if (o->len + len + 1 > o->n) {
        o->full = true;
        return;
    }
    memcpy(o->p + o->len, s, len);
    o->len += len;
    o->p[o->len] = '\0';
}

/* "7289966592" as "7,289,966,592". */
static void grouped(char *buf, size_t n, double x)
{
    char digits[64];
    snprintf(digits, sizeof digits, "%.0f", fabs(x));
    size_t d = strlen(digits), o = 0;
    if (x < 0 && o + 1 < n)
        buf[o++] = '-';
    for (size_t i = 0; i < d && o + 2 < n; i++) {
        buf[o++] = digits[i];
        if ((d - i - 1) % 3 == 0 && i + 1 < d)
            buf[o++] = ',';
    }
    buf[o] = '\0';
}

/* "5.96e-08" as "5.96e-8". */
static void short_exponent(char *buf)
{
    char *e = strchr(buf, 'e');
    if (!e)
        return;
    char *d = e + 1 + (e[1] == '-' || e[1] == '+');
    char *z = d;
    while (*z == '0' && z[1])
        z++;
    memmove(d, z, strlen(z) + 1);
    if (e[1] == '+')
        memmove(e + 1, e + 2, strlen(e + 2) + 1);
}

/* The number as the format asks: fmt "" (the default), ".N", "," or "e". */
static void number(char *buf, size_t n, double x, const char *fmt)
{
    if (!isfinite(x)) {
        snprintf(buf, n, "%s", isnan(x) ? "nan" : x > 0 ? "inf" : "-inf");
        return;
    }
    if (fmt[0] == '.') {
        snprintf(buf, n, "%.*f", atoi(fmt + 1), x);
        return;
    }
    if (fmt[0] == ',') {
        grouped(buf, n, round(x));
        return;
    }
    double a = fabs(x);
    if (fmt[0] == 'e' || a >= 1e15) {
        int ex = a > 0 ? (int)floor(log10(a)) : 0;
        double m = x / pow(10, ex);
        if (fabs(m) >= 9.995) /* 9.996 x 10^15 rounds to 10.0: one more power */
            m /= 10, ex++;
        snprintf(buf, n, "%.3g \xc3\x97 10^%d", m, ex);
        return;
    }
    if (x == round(x)) {
        if (a >= 10000)
            grouped(buf, n, x);
        else
            snprintf(buf, n, "%.0f", x);
        return;
    }
    if (a < 0.01) {
        snprintf(buf, n, "%.3g", x);
        short_exponent(buf);
        return;
    }
    snprintf(buf, n, "%.2f", x);
    char *end = buf + strlen(buf);
    while (end[-1] == '0')
        *--end = '\0';
    if (end[-1] == '.')
        end[-1] = '\0';
}

static bool is_format(const char *w)
{
    return (w[0] == '.' && isdigit((unsigned char)w[1]) &&
            (!w[2] || (isdigit((unsigned char)w[2]) && !w[3] && atoi(w + 1) <= 17))) ||
           !strcmp(w, ",") || !strcmp(w, "e");
}

static bool is_unit(const char *w)
{
    return lesson_unit_factor(w, NULL) != 0 && strcmp(w, "x") && strcmp(w, "K") && strcmp(w, "k") &&
           strcmp(w, "M") && strcmp(w, "T") && strcmp(w, "h") && strcmp(w, "min");
}

/* The kind of values a quantity's unit holds, as lesson_unit_factor names them. */
static const char *kind_of(const char *unit)
{
    return !strcmp(unit, "B")     ? "bytes"
           : !strcmp(unit, "s")   ? "seconds"
           : !strcmp(unit, "B/s") ? "bandwidth"
                                  : NULL;
}

/* One placeholder's text (without its braces): its value, as written. */
static int placeholder(const char *in, struct out *o, struct error *e)
{
    if (!strncmp(in, "cited ", 6)) {
        const char *bar = strstr(in, " | ");
        if (!bar || bar == in + 6 || !*(bar + 3))
            return error_set(e, ERR_INVAL,
                             "a citation is {cited TEXT | SOURCE}: the text as quoted, then "
                             "where it comes from");
        put(o, in + 6, (size_t)(bar - in - 6));
        return 0;
    }
    /* the expression, then a unit, a format and a width, in any order, from the end */
    char buf[FIGURE_MAX + 1], unit[32] = "", fmt[8] = "";
    int width = 0;
    snprintf(buf, sizeof buf, "%s", in);
    for (int k = 0; k < 3; k++) {
        char *sp = strrchr(buf, ' ');
        if (!sp)
            break;
        const char *w = sp + 1;
        if (!fmt[0] && is_format(w))
            snprintf(fmt, sizeof fmt, "%s", w);
        else if (!unit[0] && is_unit(w))
            snprintf(unit, sizeof unit, "%s", w);
        else if (!width && w[0] == '>' && atoi(w + 1) >= 1 && atoi(w + 1) <= 40 &&
                 strspn(w + 1, "0123456789") == strlen(w + 1))
            width = atoi(w + 1);
        else
            break;
        *sp = '\0';
    }
    double v;
    const char *qunit;
    if (quantity_expr(buf, &v, NULL, &qunit, e) < 0)
        return ERR_INVAL;
    if (!strcmp(qunit, "bool"))
        return error_set(e, ERR_INVAL, "%s is a yes/no quantity, not a figure", buf);
    if (unit[0]) {
        const char *kind = NULL, *qkind = kind_of(qunit);
        double f = lesson_unit_factor(unit, &kind);
        if (qkind && strcmp(kind, qkind))
            return error_set(e, ERR_INVAL, "%s is in %s: it cannot be shown in %s", buf, qunit,
                             unit);
        v /= f;
    }
    char num[96], fig[160];
    number(num, sizeof num, v, fmt);
    bool attached = !strcmp(unit, "%") || !strcmp(unit, "\xc3\x97");
    snprintf(fig, sizeof fig, "%s%s%s", num, unit[0] && !attached ? " " : "", unit);
    /* right-aligned in width columns (characters, not bytes: µ and × are two) */
    int cols = 0;
    for (const char *c = fig; *c; c++)
        cols += ((unsigned char)*c & 0xC0) != 0x80;
    for (; cols < width; cols++)
        put(o, " ", 1);
    put(o, fig, strlen(fig));
    return 0;
}

int figure_render(const char *text, char *out, size_t n, struct error *e)
{
    struct out o = {out, n, 0, false};
    if (n)
        out[0] = '\0';
    for (const char *s = text; *s;) {
        if ((s[0] == '{' && s[1] == '{') || (s[0] == '}' && s[1] == '}')) {
            put(&o, s, 1);
            s += 2;
            continue;
        }
        if (*s == '}')
            return error_set(e, ERR_INVAL, "column %zu: a '}' without its '{' (write '}}')",
                             (size_t)(s - text) + 1);
        if (*s != '{') {
            size_t k = strcspn(s, "{}");
            put(&o, s, k);
            s += k;
            continue;
        }
        const char *end = strchr(s, '}');
        size_t col = (size_t)(s - text) + 1;
        if (!end)
            return error_set(e, ERR_INVAL, "column %zu: a '{' is not closed", col);
        size_t len = (size_t)(end - s - 1);
        char in[FIGURE_MAX + 1];
        if (len == 0 || len > FIGURE_MAX)
            return error_set(e, ERR_INVAL,
                             "column %zu: expected a figure {QUANTITY [UNIT] [FORMAT]} or {cited "
                             "TEXT | SOURCE} (at most %d characters)",
                             col, FIGURE_MAX);
        memcpy(in, s + 1, len);
        in[len] = '\0';
        struct error sub = {0};
        if (placeholder(in, &o, &sub) < 0)
            return error_set(e, ERR_INVAL, "column %zu: {%s}: %s", col, in, sub.msg);
        s = end + 1;
    }
    return o.full ? error_set(e, ERR_NOMEM, "the text with its figures is too long") : 0;
}

/* ------------------------------------------------------------------ figures typed by hand */

/* Units a figure typed by hand would carry, longest first where one begins another. */
static const char *const units[] = {"GB/s", "TB/s",      "MB/s", "TFLOP/s", "GiB", "GB", "MiB",
                                    "MB",   "KiB",       "kB",   "TiB",     "TB",  "B",  "bytes",
                                    "byte", "\xc2\xb5s", "us",   "ms",      "ns",  "s",  "%"};

static bool word_char(unsigned char c)
{
    return isalnum(c) || c == '_' || c >= 0x80;
}

/* The length of the unit at s (after a number), or 0. */
static size_t unit_at(const char *s)
{
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
        size_t k = strlen(units[i]);
        if (!strncmp(s, units[i], k) && (units[i][0] == '%' || !word_char((unsigned char)s[k])) &&
            s[k] != '/')
            return k;
    }
    return 0;
}

const char *figure_literal(const char *text, size_t *len)
{
    for (const char *s = text; *s; s++) {
        if (s[0] == '{' && s[1] == '{') {
            s++;
            continue;
        }
        if (*s == '{') { /* a placeholder or a citation */
            const char *end = strchr(s, '}');
            if (!end)
                return NULL;
            s = end;
            continue;
        }
        if (!isdigit((unsigned char)*s) ||
            (s > text && (word_char((unsigned char)s[-1]) || s[-1] == '.' || s[-1] == '^')))
            continue;
        const char *n = s;
        while (isdigit((unsigned char)*n) ||
               ((*n == ',' || *n == '.') && isdigit((unsigned char)n[1])))
            n++;
        if ((*n == 'e' || *n == 'E') && (isdigit((unsigned char)n[1]) || n[1] == '-')) {
            const char *x = n + 1 + (n[1] == '-');
            if (isdigit((unsigned char)*x)) {
                n = x;
                while (isdigit((unsigned char)*n))
                    n++;
            }
        }
        if (!strncmp(n, "\xc3\x97", 2)) { /* 1.5×, against the number: a factor */
            *len = (size_t)(n + 2 - s);
            return s;
        }
        const char *u = *n == ' ' ? n + 1 : n;
        size_t k = unit_at(u);
        if (k) {
            *len = (size_t)(u + k - s);
            return s;
        }
        s = n - 1;
    }
    return NULL;
}
