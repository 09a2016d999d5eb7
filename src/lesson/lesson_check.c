/* A lesson's answers and expectations: the units a number may carry, a learner's answer
 * checked against a question's, the answer printed as people write it, and an @expect checked
 * against a command's JSON output (lesson/lesson.h). */
#include "config.h"
#include "lesson/lesson.h"

#include <ctype.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/error.h"
#include "base/units.h"
#include "lesson/quantity.h"
#include "lesson/text.h"

/* ------------------------------------------------------------------ units */

static const struct {
    const char *name, *kind;
    double factor;
} unit_table[] = {
    {"B", "bytes", 1},           {"byte", "bytes", 1},           {"bytes", "bytes", 1},
    {"kB", "bytes", 1e3},        {"KB", "bytes", 1e3},           {"MB", "bytes", 1e6},
    {"GB", "bytes", 1e9},        {"TB", "bytes", 1e12},          {"KiB", "bytes", 1024.0},
    {"MiB", "bytes", 1048576.0}, {"GiB", "bytes", 1073741824.0}, {"TiB", "bytes", 1099511627776.0},
    {"s", "seconds", 1},         {"sec", "seconds", 1},          {"ms", "seconds", 1e-3},
    {"us", "seconds", 1e-6},     {"\xc2\xb5s", "seconds", 1e-6}, /* µs */
    {"ns", "seconds", 1e-9},     {"min", "seconds", 60},         {"h", "seconds", 3600},
    {"B/s", "bandwidth", 1},     {"kB/s", "bandwidth", 1e3},     {"MB/s", "bandwidth", 1e6},
    {"GB/s", "bandwidth", 1e9},  {"TB/s", "bandwidth", 1e12},    {"FLOP/s", "compute", 1},
    {"GFLOP/s", "compute", 1e9}, {"TFLOP/s", "compute", 1e12},   {"PFLOP/s", "compute", 1e15},
    {"", "number", 1},           {"%", "number", 0.01},          {"x", "number", 1},
    {"\xc3\x97", "number", 1}, /* × */
    {"K", "number", 1e3},        {"k", "number", 1e3},           {"M", "number", 1e6},
    {"B", "number", 1e9},        {"T", "number", 1e12},
};

double lesson_unit_factor(const char *unit, const char **kind)
{
    for (size_t i = 0; i < sizeof unit_table / sizeof unit_table[0]; i++)
        if (strcmp(unit, unit_table[i].name) == 0) {
            if (kind)
                *kind = unit_table[i].kind;
            return unit_table[i].factor;
        }
    return 0;
}

/* The factor of unit within a kind (so that "B" is a byte for bytes and a billion for numbers);
 * 0 when the unit is not of that kind. */
static double factor_in(const char *unit, const char *kind)
{
    /* the exact spelling first, then any case ("gib", "MS"), as learners type */
    for (int pass = 0; pass < 2; pass++)
        for (size_t i = 0; i < sizeof unit_table / sizeof unit_table[0]; i++)
            if (strcmp(unit_table[i].kind, kind) == 0 &&
                (pass ? strcasecmp(unit, unit_table[i].name) : strcmp(unit, unit_table[i].name)) ==
                    0)
                return unit_table[i].factor;
    return 0;
}

/* ------------------------------------------------------------------ answers */

bool lesson_within(double x, double want, struct lesson_tolerance tol)
{
    if (isnan(want) || isnan(x))
        return isnan(want) && isnan(x);
    if (isinf(want) || isinf(x))
        return x == want;
    double slack = tol.relative ? tol.amount * fabs(want) : tol.amount;
    return fabs(x - want) <= slack;
}

/* "7,289,966,592": commas only between groups of three digits before the point. */
static bool strip_grouping(const char *s, char *out, size_t n)
{
    size_t o = 0, digits = 0;
    bool comma = false;
    const char *c = s;
    if (*c == '-' || *c == '+')
        out[o++] = *c++;
    for (; *c && *c != '.' && *c != 'e' && *c != 'E'; c++) {
        if (*c == ',') {
            if (digits == 0 || (comma && digits != 3) || (!comma && digits > 3))
                return false;
            comma = true;
            digits = 0;
            continue;
        }
        if (!isdigit((unsigned char)*c) || o + 1 >= n)
            return false;
        out[o++] = *c;
        digits++;
    }
    if (comma && digits != 3)
        return false;
    size_t rest = strlen(c);
    if (o + rest >= n || strchr(c, ','))
        return false;
    memcpy(out + o, c, rest + 1);
    return true;
}

/* A learner's number: "0.1", "6e-8", "2^-24", "7,289,966,592", "inf", "3/4". */
static int read_number(const char *s, double *v)
{
    char buf[128];
    const char *slash = strchr(s, '/');
    if (slash) { /* a fraction of two plain numbers */
        double num, den;
        size_t nl = (size_t)(slash - s);
        if (nl == 0 || nl >= sizeof buf || strchr(slash + 1, '/'))
            return -1;
        memcpy(buf, s, nl);
        buf[nl] = '\0';
        if (units_parse_double(buf, false, &num, NULL) < 0 ||
            units_parse_double(slash + 1, false, &den, NULL) < 0 || den == 0)
            return -1;
        *v = num / den;
        return isfinite(*v) ? 0 : -1;
    }
    const char *caret = strchr(s, '^');
    if (caret) {
        double base, ex;
        size_t bl = (size_t)(caret - s);
        if (bl == 0 || bl >= sizeof buf)
            return -1;
        memcpy(buf, s, bl);
        buf[bl] = '\0';
        if (units_parse_double(buf, false, &base, NULL) < 0 ||
            units_parse_double(caret + 1, false, &ex, NULL) < 0)
            return -1;
        *v = pow(base, ex);
        return isfinite(*v) ? 0 : -1;
    }
    if (strchr(s, ',')) {
        if (!strip_grouping(s, buf, sizeof buf))
            return -1;
        s = buf;
    }
    return units_parse_double(s, true, v, NULL);
}

static int check_number(const struct lesson_question *q, const char *answer,
                        struct lesson_result *r, struct error *e)
{
    char num[128], unit[64];
    const char *kind = NULL;
    double qf = lesson_unit_factor(q->unit, &kind);
    /* The number ends where the unit begins: at a space, or at the first letter or '%' that
     * cannot belong to a number (the 'e' of an exponent, "inf" and "nan" can). */
    size_t n = strcspn(answer, " \t");
    if (n == strlen(answer)) {
        n = 0;
        if (answer[n] == '-' || answer[n] == '+')
            n++;
        if (!strncasecmp(answer + n, "inf", 3) || !strncasecmp(answer + n, "nan", 3))
            n += 3;
        for (; answer[n]; n++) {
            char c = answer[n];
            if (isdigit((unsigned char)c) || c == '.' || c == ',' || c == '^' ||
                ((c == '-' || c == '+') && n > 0 && strchr("eE^", answer[n - 1])))
                continue;
            if (c == '/' && n > 0 && isdigit((unsigned char)answer[n - 1]) &&
                isdigit((unsigned char)answer[n + 1])) /* 3/4, not GB/s */
                continue;
            if ((c == 'e' || c == 'E') && n > 0 && isdigit((unsigned char)answer[n - 1]) &&
                (isdigit((unsigned char)answer[n + 1]) || answer[n + 1] == '-' ||
                 answer[n + 1] == '+'))
                continue;
            break;
        }
    }
    const char *u = lesson_skip_space(answer + n);
    if (n == 0 || n >= sizeof num || strlen(u) >= sizeof unit)
        goto unreadable;
    memcpy(num, answer, n);
    num[n] = '\0';
    strcpy(unit, u);
    double v;
    if (read_number(num, &v) < 0)
        goto unreadable;
    if (unit[0]) {
        double f = qf ? factor_in(unit, kind) : strcmp(unit, q->unit) == 0;
        if (f == 0)
            return error_set(e, ERR_INVAL, "'%s' is not a unit this question takes%s%s", unit,
                             q->unit[0] ? "; answer in " : "", q->unit);
        if (qf)
            v = v * f / qf;
    }
    r->value = v;
    r->correct = lesson_within(v, q->answer.value, q->tol);
    /* A bare number may also be in the base unit of the question's kind, as people write
     * sizes and times: 1750000000 (or 1.75e9) bytes for a question in GB, 25165824 for 24
     * MiB. The two readings are far apart (a factor of the unit), so at most one is right. */
    if (!unit[0] && !r->correct && qf > 0 && qf != 1 &&
        lesson_within(v / qf, q->answer.value, q->tol)) {
        r->value = v / qf;
        r->correct = true;
    }
    return 0;
unreadable:
    return error_set(e, ERR_INVAL, "expected a number such as 0.1, 6e-8 or 2^-24%s%s",
                     q->unit[0] ? ", optionally followed by " : "", q->unit);
}

int lesson_check_answer(const struct lesson_question *q, const char *answer,
                        struct lesson_result *r, struct error *e)
{
    char buf[LESSON_LINE_MAX + 1];
    const char *a = lesson_skip_space(answer ? answer : "");
    size_t len = strlen(a);
    while (len && isspace((unsigned char)a[len - 1]))
        len--;
    if (len == 0 || len > LESSON_LINE_MAX)
        return error_set(e, ERR_INVAL, len ? "the answer is too long" : "no answer given");
    memcpy(buf, a, len);
    buf[len] = '\0';
    memset(r, 0, sizeof *r);
    r->choice = -1;
    if (q->kind == LESSON_Q_NUMBER)
        return check_number(q, buf, r, e);
    /* a letter "b" (or "b)"), a number "2", or the option's text */
    int pick = -1;
    long long k;
    if ((len == 1 || (len == 2 && (buf[1] == ')' || buf[1] == '.'))) &&
        isalpha((unsigned char)buf[0])) {
        buf[1] = '\0';
        pick = lesson_option_letter(q, buf);
    } else if (units_parse_int(buf, 1, (long long)q->noptions, &k, NULL) == 0) {
        pick = (int)k - 1;
    } else {
        for (size_t i = 0; i < q->noptions && pick < 0; i++)
            if (strcasecmp(buf, q->options[i]) == 0)
                pick = (int)i;
    }
    if (pick < 0)
        return error_set(e, ERR_INVAL,
                         "expected an option letter from a to %c (or its number "
                         "from 1 to %zu)",
                         (int)('a' + q->noptions - 1), q->noptions);
    r->choice = pick;
    r->correct = pick == q->correct;
    return 0;
}

/* The shortest decimal that reads back as v. */
static void shortest(char *buf, size_t n, double v)
{
    if (isnan(v)) {
        snprintf(buf, n, "nan");
        return;
    }
    if (isinf(v)) {
        snprintf(buf, n, v > 0 ? "inf" : "-inf");
        return;
    }
    if (v == floor(v) && fabs(v) < 1e15) { /* whole numbers without an exponent: 65504 */
        snprintf(buf, n, "%.0f", v);
        return;
    }
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(buf, n, "%.*g", prec, v);
        if (strtod(buf, NULL) == v)
            return;
    }
}

/* v as people write it: exactly when a few digits do, else 4 significant digits ("606.1",
 * "1.75e9"), more only when the tolerance needs them, so that the text read back is right. */
static void readable(char *buf, size_t n, double v, struct lesson_tolerance tol)
{
    if (!isfinite(v) || (v == floor(v) && fabs(v) < 1e7)) {
        shortest(buf, n, v);
        return;
    }
    /* A value a few digits write exactly is shown exactly (bf16's epsilon 2^-7 is 0.0078125,
     * not 0.007812): up to EXACT_DIGITS significant digits. Others, the results of sums and
     * quotients, get 4 digits, or more when the tolerance needs them. */
    enum { EXACT_DIGITS = 12 };
    bool exact = false;
    for (int prec = 1; prec <= EXACT_DIGITS && !exact; prec++) {
        snprintf(buf, n, "%.*g", prec, v);
        exact = strtod(buf, NULL) == v;
    }
    for (int prec = 4; prec <= 17 && !exact; prec++) {
        snprintf(buf, n, "%.*g", prec, v);
        if (lesson_within(strtod(buf, NULL), v, tol))
            break;
    }
    /* "1.75e+09" -> "1.75e9", "5.96e-08" -> "5.96e-8" */
    char *e = strchr(buf, 'e');
    if (e) {
        char *d = e + 1;
        bool neg = *d == '-';
        char *digits = d + (*d == '-' || *d == '+');
        while (*digits == '0' && digits[1])
            digits++;
        memmove(d + neg, digits, strlen(digits) + 1);
    }
}

char *lesson_format_answer(const struct lesson_question *q, char *buf, size_t n)
{
    if (q->kind == LESSON_Q_CHOICE) {
        snprintf(buf, n, "%c) %s", 'a' + q->correct, q->options[q->correct]);
        return buf;
    }
    char v[64], tol[64] = "";
    /* a literal as the lesson wrote it; a computed quantity as people write it */
    if (q->answer.is_quantity)
        readable(v, sizeof v, q->answer.value, q->tol);
    else
        shortest(v, sizeof v, q->answer.value);
    if (!(q->tol.relative && q->tol.amount == LESSON_DEFAULT_TOL)) {
        char t[40];
        shortest(t, sizeof t, q->tol.relative ? q->tol.amount * 100 : q->tol.amount);
        snprintf(tol, sizeof tol, " (within %s%s)", t, q->tol.relative ? "%" : "");
    }
    snprintf(buf, n, "%s%s%s%s", v, q->unit[0] ? " " : "", q->unit, tol);
    return buf;
}

/* ------------------------------------------------------------------ expectations */

/* Follows "values[0].fp16.value" into doc; NULL when a step is missing. */
static const json_t *walk(const json_t *doc, const char *path, char *missing, size_t n)
{
    const json_t *j = doc;
    const char *s = path;
    while (*s && j) {
        if (*s == '.') {
            s++;
            continue;
        }
        if (*s == '[') {
            char *end;
            unsigned long i = strtoul(s + 1, &end, 10);
            j = json_is_array(j) ? json_array_get(j, i) : NULL;
            s = end + 1;
        } else {
            size_t len = strcspn(s, ".[");
            char key[LESSON_LINE_MAX + 1];
            memcpy(key, s, len);
            key[len] = '\0';
            j = json_is_object(j) ? json_object_get(j, key) : NULL;
            s += len;
        }
        if (!j)
            snprintf(missing, n, "%.*s", (int)(s - path), path);
    }
    return j;
}

bool lesson_expect_holds(const struct lesson_expect *x, const struct json_t *doc, char *why,
                         size_t n)
{
    char missing[LESSON_LINE_MAX + 1] = "", got[64];
    const json_t *j = walk(doc, x->path, missing, sizeof missing);
    if (!j) {
        snprintf(why, n, "%s: the output has no %s", x->path, missing);
        return false;
    }
    if (x->check == LESSON_STR_EQ) {
        const char *s = json_string_value(j);
        bool ok = s && strcmp(s, x->text) == 0;
        snprintf(why, n, "%s is %s%s%s, expected \"%s\"", x->path, s ? "\"" : "",
                 s ? s : "not a string", s ? "\"" : "", x->text);
        return ok;
    }
    /* scalelab's JSON writes non-finite numbers as the strings "inf", "-inf", "nan" */
    double v;
    const char *s = json_string_value(j);
    if (json_is_number(j))
        v = json_number_value(j);
    else if (s && !strcmp(s, "inf"))
        v = INFINITY;
    else if (s && !strcmp(s, "-inf"))
        v = -INFINITY;
    else if (s && !strcmp(s, "nan"))
        v = NAN;
    else {
        snprintf(why, n, "%s is not a number", x->path);
        return false;
    }
    shortest(got, sizeof got, v);
    bool ok;
    const char *want;
    switch (x->check) {
    case LESSON_IS_INF: ok = isinf(v) && v > 0, want = "inf"; break;
    case LESSON_IS_NEGINF: ok = isinf(v) && v < 0, want = "-inf"; break;
    case LESSON_IS_NAN: ok = isnan(v), want = "nan"; break;
    case LESSON_IS_FINITE: ok = isfinite(v), want = "finite"; break;
    case LESSON_LT: ok = v < x->number.value, want = "<"; break;
    case LESSON_LE: ok = v <= x->number.value, want = "<="; break;
    case LESSON_GT: ok = v > x->number.value, want = ">"; break;
    case LESSON_GE: ok = v >= x->number.value, want = ">="; break;
    default: ok = lesson_within(v, x->number.value, x->tol), want = "="; break;
    }
    if (x->check >= LESSON_IS_INF) {
        snprintf(why, n, "%s is %s, expected %s", x->path, got, want);
    } else {
        char w[64];
        shortest(w, sizeof w, x->number.value);
        snprintf(why, n, "%s is %s, expected %s %s%s%s", x->path, got, want, w,
                 x->number.is_quantity ? " = " : "", x->number.is_quantity ? x->number.expr : "");
    }
    return ok;
}
