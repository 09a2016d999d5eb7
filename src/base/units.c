/* Numbers, sizes and counts as people write them ("64MiB", "7.5B", "1e9"), parsed; sizes and
 * times formatted back with a unit that suits them (base/units.h). */
#include "config.h"
#include "base/units.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/error.h"

static const struct {
    const char *name;
    double factor;
} byte_units[] = {
    {"B", 1.0},
    {"kB", 1e3},
    {"KB", 1e3},
    {"MB", 1e6},
    {"GB", 1e9},
    {"TB", 1e12},
    {"KiB", 1024.0},
    {"MiB", 1048576.0},
    {"GiB", 1073741824.0},
    {"TiB", 1099511627776.0},
};

double units_factor(const char *unit)
{
    for (size_t i = 0; i < sizeof byte_units / sizeof byte_units[0]; i++)
        if (strcasecmp(unit, byte_units[i].name) == 0)
            return byte_units[i].factor;
    return 0.0;
}

/* Splits s into a number and what follows it (spaces between are allowed). */
static int number_and_suffix(const char *s, double *v, const char **suffix)
{
    if (!s || !*s || isspace((unsigned char)*s))
        return -1;
    errno = 0;
    char *end;
    /* out of double's range is still a number: strtod gives ±HUGE_VAL (the callers refuse
     * or keep infinities) or the nearest subnormal or zero, the correctly rounded value */
    *v = strtod(s, &end);
    if (end == s)
        return -1;
    while (*end == ' ')
        end++;
    *suffix = end;
    return 0;
}

int units_parse_double(const char *s, bool allow_nonfinite, double *out, struct error *e)
{
    double v;
    const char *rest;
    /* strtod also reads hex floats and "infinity"; both are fine, but nothing may follow. */
    if (number_and_suffix(s, &v, &rest) < 0 || *rest || rest[-1] == ' ')
        return error_set(e, ERR_INVAL, "'%s' is not a number", s ? s : "");
    if (!allow_nonfinite && !isfinite(v))
        return error_set(e, ERR_INVAL, "'%s' is not a finite number", s);
    *out = v;
    return 0;
}

int units_parse_int(const char *s, long long min, long long max, long long *out, struct error *e)
{
    if (!s || !*s || isspace((unsigned char)*s))
        return error_set(e, ERR_INVAL, "'%s' is not a whole number", s ? s : "");
    errno = 0;
    char *end;
    long long v = strtoll(s, &end, 10);
    if (*end || end == s)
        return error_set(e, ERR_INVAL, "'%s' is not a whole number", s);
    if (errno == ERANGE || v < min || v > max)
        return error_set(e, ERR_INVAL, "%s is out of range (%lld to %lld)", s, min, max);
    *out = v;
    return 0;
}

int units_parse_bytes(const char *s, double max, double *out, struct error *e)
{
    double v;
    const char *suffix;
    if (number_and_suffix(s, &v, &suffix) < 0 || isnan(v))
        return error_set(e, ERR_INVAL, "'%s' is not a size (write e.g. 4096, 64MiB or 1GB)",
                         s ? s : "");
    size_t sl = strlen(suffix);
    /* "Mb", "Gb": a lowercase b is a bit in network speeds; a size in bytes must not take it
     * silently for a byte (a factor of 8) */
    if (sl > 1 && suffix[sl - 1] == 'b')
        return error_set(e, ERR_INVAL,
                         "'%s': '%s' reads as bits; sizes are in bytes (B, kB, MB, GB, TB, KiB, "
                         "MiB, GiB or TiB)",
                         s, suffix);
    double f = *suffix ? units_factor(suffix) : 1.0;
    /* "7.5B" is 7.5 billion as a count (--params 7.5B) but would be 7.5 bytes as a size: a
     * fraction of a byte means the writer thought of billions, so it is refused, with a hint */
    if (f == 1.0 && v != floor(v) && isfinite(v))
        return *suffix ? error_set(e, ERR_INVAL,
                                   "'%s': a size in bytes is a whole number; B here means bytes, "
                                   "not billions: for %g billion bytes write %gGB",
                                   s, v, v)
                       : error_set(e, ERR_INVAL,
                                   "'%s': a size in bytes is a whole number (or give a unit: "
                                   "kB, MB, GB, TB, KiB, MiB, GiB or TiB)",
                                   s);
    if (f == 0.0)
        return error_set(e, ERR_INVAL,
                         "'%s': unknown unit '%s' (use B, kB, MB, GB, TB, KiB, MiB, GiB or TiB)", s,
                         suffix);
    v *= f;
    if (v < 0)
        return error_set(e, ERR_INVAL, "'%s': a size cannot be negative", s);
    if (v > max)
        return error_set(e, ERR_INVAL, "'%s' is too large (at most %.0f bytes)", s, max);
    *out = floor(v);
    return 0;
}

int units_parse_count(const char *s, double max, double *out, struct error *e)
{
    static const struct {
        char c;
        double f;
    } mult[] = {{'k', 1e3}, {'K', 1e3}, {'M', 1e6}, {'B', 1e9}, {'G', 1e9}, {'T', 1e12}};
    double v;
    const char *suffix;
    if (number_and_suffix(s, &v, &suffix) < 0 || isnan(v))
        return error_set(e, ERR_INVAL, "'%s' is not a count (write e.g. 7.5B, 7.5e9 or 13M)",
                         s ? s : "");
    if (*suffix) {
        double f = 0;
        for (size_t i = 0; i < sizeof mult / sizeof mult[0] && !suffix[1]; i++)
            if (mult[i].c == *suffix)
                f = mult[i].f;
        if (f == 0)
            return error_set(e, ERR_INVAL, "'%s': unknown suffix '%s' (use K, M, B or T)", s,
                             suffix);
        v *= f;
    }
    if (v < 0)
        return error_set(e, ERR_INVAL, "'%s': a count cannot be negative", s);
    if (v > max)
        return error_set(e, ERR_INVAL, "'%s' is too large (at most %g)", s, max);
    *out = v;
    return 0;
}

int units_parse_system(const char *s, enum units_system *out, struct error *e)
{
    if (s && strcasecmp(s, "GiB") == 0)
        *out = UNITS_BINARY;
    else if (s && strcasecmp(s, "GB") == 0)
        *out = UNITS_DECIMAL;
    else if (s && strcasecmp(s, "auto") == 0)
        *out = UNITS_AUTO;
    else
        return error_set(e, ERR_INVAL, "'%s' is not a unit system (use auto, GiB or GB)",
                         s ? s : "");
    return 0;
}

char *units_format_bytes_in(char *buf, size_t n, double bytes, const char *unit)
{
    double f = units_factor(unit);
    if (f == 0)
        f = 1, unit = "B";
    if (f == 1)
        snprintf(buf, n, "%.0f B", bytes);
    else
        snprintf(buf, n, "%.2f %s", bytes / f, unit);
    return buf;
}

const char *units_auto_unit(double bytes, enum units_system sys)
{
    static const char *bin[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    static const char *dec[] = {"B", "kB", "MB", "GB", "TB"};
    const char **names = sys == UNITS_DECIMAL ? dec : bin;
    double step = sys == UNITS_DECIMAL ? 1000.0 : 1024.0, a = fabs(bytes), f = 1;
    int i = 0;
    while (i < 4 && a >= f * step)
        f *= step, i++;
    return names[i];
}

char *units_format_bytes(char *buf, size_t n, double bytes, enum units_system sys)
{
    return units_format_bytes_in(buf, n, bytes, units_auto_unit(bytes, sys));
}

char *units_format_num(char *buf, size_t n, const char *fmt, double v)
{
    /* a NaN: the same format with its conversion "%[flags][width][.prec]X" written as a
     * string of the same flag '-' and width, holding "NaN" */
    const char *pct = strchr(fmt, '%');
    if (isnan(v) && pct) {
        size_t flags = strspn(pct + 1, "-+ #0");
        bool left = memchr(pct + 1, '-', flags) != NULL;
        const char *w = pct + 1 + flags, *end = w + strspn(w, "0123456789");
        if (*end == '.')
            end += 1 + strspn(end + 1, "0123456789");
        if (*end)
            end++; /* the conversion's letter */
        char f2[64];
        if (snprintf(f2, sizeof f2, "%.*s%%%s%.*ss%s", (int)(pct - fmt), fmt, left ? "-" : "",
                     (int)strspn(w, "0123456789"), w, end) < (int)sizeof f2) {
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
            snprintf(buf, n, f2, "NaN");
#pragma GCC diagnostic pop
            return buf;
        }
    }
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
    snprintf(buf, n, fmt, v);
#pragma GCC diagnostic pop
    return buf;
}

char *units_format_grouped(char *buf, size_t n, unsigned long long v)
{
    char digits[32];
    int len = snprintf(digits, sizeof digits, "%llu", v);
    size_t o = 0;
    for (int i = 0; i < len && o + 1 < n; i++) {
        if (i > 0 && (len - i) % 3 == 0 && o + 2 < n)
            buf[o++] = ',';
        buf[o++] = digits[i];
    }
    if (n)
        buf[o < n ? o : n - 1] = '\0';
    return buf;
}

char *units_format_seconds(char *buf, size_t n, double s)
{
    double a = fabs(s);
    if (a == 0 || !isfinite(s))
        snprintf(buf, n, "%g s", s);
    else if (a < 1e-6)
        snprintf(buf, n, "%.3g ns", s * 1e9);
    else if (a < 1e-3)
        snprintf(buf, n, "%.3g us", s * 1e6);
    else if (a < 1)
        snprintf(buf, n, "%.3g ms", s * 1e3);
    else
        snprintf(buf, n, "%.3g s", s);
    return buf;
}
