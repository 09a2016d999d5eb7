/* scalelab formats: the number formats' properties, and values rounded to each format.
 *
 * A value is first held as fp32, the way a framework holds it in a float tensor (the decimal
 * text is read as a double, as Python reads a float, then rounded to fp32: 1e39 becomes inf),
 * then converted to each format with round-to-nearest-even (num/fp.h).
 *
 * The relative error d of a format's value r against the fp32 value x is the one of the
 * standard model of floating-point arithmetic, r = x (1 + d), so d = (r - x) / x: negative
 * when the magnitude shrank. It is 0 when the format holds x exactly (x = 0 and x = inf
 * included), inf when a finite x overflowed to inf, -1 when it underflowed to 0, and undefined
 * (JSON null, "n/a" in text) when x or r is NaN. */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <float.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "base/json.h"
#include "base/units.h"
#include "cli/command.h"
#include "cli/opts.h"
#include "num/fp.h"

/* The formats a value is converted to, in the order shown. */
static const enum fp_format targets[] = {FP_FP16, FP_BF16, FP_E4M3, FP_E5M2};
#define NTARGETS (sizeof targets / sizeof targets[0])

struct value {
    char *input; /* as given (owned) */
    double parsed;
    float x; /* held in fp32 */
};

struct values {
    struct value *v;
    size_t n, cap;
};

static void values_free(struct values *vs)
{
    for (size_t i = 0; i < vs->n; i++)
        free(vs->v[i].input);
    free(vs->v);
}

/* Reads one value from s (len bytes); where ("stdin:3") or NULL says where it came from, for
 * the error. v->input is then owned by the caller. */
static int value_parse(struct value *v, const char *s, size_t len, const char *where,
                       struct error *e)
{
    char *copy = malloc(len + 1);
    if (!copy)
        return error_set(e, ERR_NOMEM, "out of memory");
    memcpy(copy, s, len);
    copy[len] = 0;
    if (units_parse_double(copy, true, &v->parsed, e) < 0) {
        if (where) /* a value of the command line is named by opts_parse's "formats: " */
            error_prefix(e, "formats: %s", where);
        free(copy);
        return e->code;
    }
    v->input = copy;
    /* double -> float: round to nearest even; too large becomes inf, as in a float tensor. */
    v->x = (float)v->parsed;
    return 0;
}

/* Adds one value of the command line. */
static int values_add(struct values *vs, const char *s, size_t len, const char *where,
                      struct error *e)
{
    if (vs->n == vs->cap) {
        size_t cap = vs->cap ? 2 * vs->cap : 16;
        struct value *v = realloc(vs->v, cap * sizeof *v);
        if (!v)
            return error_set(e, ERR_NOMEM, "out of memory");
        vs->v = v, vs->cap = cap;
    }
    int rc = value_parse(&vs->v[vs->n], s, len, where, e);
    if (rc == 0)
        vs->n++;
    return rc;
}

/* ------------------------------------------------------------------ numbers */

static double rel_error(float x, float r, bool *defined)
{
    *defined = !isnan(x) && !isnan(r);
    if (!*defined || (double)r == (double)x)
        return 0;
    return ((double)r - (double)x) / (double)x;
}

static const char *hex_bits(char *buf, size_t n, enum fp_format f, uint32_t bits)
{
    snprintf(buf, n, "0x%0*x", fp_info(f)->bits / 4, bits);
    return buf;
}

/* What happened to x in format f, for the text output. */
static const char *note(enum fp_format f, float x, float r)
{
    if (isnan(x))
        return "";
    if (isnan(r))
        return isinf(x) ? "no inf in e4m3fn: NaN" : "overflow: NaN (e4m3fn has no inf)";
    if (isinf(r) && !isinf(x))
        return "overflow: inf";
    if (r == 0 && x != 0)
        return "underflow to 0";
    if (r != 0 && fabsf(r) < (float)fp_info(f)->min_normal)
        return (double)r == (double)x ? "exact, subnormal" : "subnormal";
    if ((double)r == (double)x)
        return "exact";
    return "";
}

/* ------------------------------------------------------------------ output */

static void print_properties_text(void)
{
    printf("%-9s %4s %4s %4s %4s  %-15s %-15s %-18s %-13s %s\n", "format", "bits", "exp", "man",
           "bias", "largest finite", "smallest normal", "smallest subnormal", "epsilon", "inf");
    for (int f = 0; f < FP_COUNT; f++) {
        const struct fp_info *fi = fp_info(f);
        printf("%-9s %4d %4d %4d %4d  %-15.9g %-15.9g %-18.9g %-13.9g%s\n", fi->name, fi->bits,
               fi->exp_bits, fi->man_bits, fi->bias, fi->max, fi->min_normal, fi->min_subnormal,
               fi->epsilon, fi->has_inf ? " yes" : " no: overflow and inf become NaN");
    }
    printf("\nexp, man: bits of exponent and mantissa (plus one sign bit); epsilon: the gap "
           "between 1\nand the next larger value, 2^-man. Conversions round to nearest, ties to "
           "even, and\nkeep subnormals.\n");
}

static json_t *properties_json(void)
{
    json_t *list = json_array();
    for (int f = 0; f < FP_COUNT; f++) {
        const struct fp_info *fi = fp_info(f);
        json_array_append_new(
            list, json_pack("{s:s, s:s, s:i, s:i, s:i, s:i, s:b, s:f, s:f, s:f, s:f}", "name",
                            fi->name, "key", fi->key, "bits", fi->bits, "exponent_bits",
                            fi->exp_bits, "mantissa_bits", fi->man_bits, "bias", fi->bias,
                            "has_inf", fi->has_inf, "max", fi->max, "min_normal", fi->min_normal,
                            "min_subnormal", fi->min_subnormal, "epsilon", fi->epsilon));
    }
    return json_pack("{s:o}", "formats", list);
}

static void print_value_text(const struct value *v)
{
    char num[64], hex[16];
    uint32_t b32 = fp_f32_bits(v->x);
    printf("%s: held in fp32 as %s (%s)", v->input, json_num_text(num, sizeof num, v->x, 9),
           hex_bits(hex, sizeof hex, FP_FP32, b32));
    if (isinf(v->x) && !isinf(v->parsed))
        printf(": too large for fp32 (above %.9g), inf as in a float tensor", FLT_MAX);
    else if (v->x == 0 && v->parsed != 0)
        printf(": too small for fp32 (below %.9g), 0 as in a float tensor", FLT_TRUE_MIN);
    else if (v->x != 0 && fabsf(v->x) < FLT_MIN)
        printf(", a subnormal in fp32");
    printf("\n  %-9s %-16s %-6s %s\n", "format", "nearest value", "bits", "rel. error d");
    for (size_t k = 0; k < NTARGETS; k++) {
        enum fp_format f = targets[k];
        float r = fp_round(f, v->x);
        bool defined;
        double d = rel_error(v->x, r, &defined);
        char err[64];
        if (!defined)
            snprintf(err, sizeof err, "n/a");
        else if (isinf(d))
            snprintf(err, sizeof err, d > 0 ? "inf" : "-inf");
        else
            snprintf(err, sizeof err, "%.3g", d);
        const char *what = note(f, v->x, r);
        printf("  %-9s %-16s %-6s %-*s%s%s\n", fp_info(f)->name,
               json_num_text(num, sizeof num, r, 9),
               hex_bits(hex, sizeof hex, f, fp_encode(f, v->x)), *what ? 10 : 0, err,
               *what ? " " : "", what);
    }
}

static json_t *value_json(const struct value *v)
{
    char hex[16];
    json_t *o =
        json_pack("{s:s, s:{s:s, s:o}}", "input", v->input, "fp32", "bits",
                  hex_bits(hex, sizeof hex, FP_FP32, fp_f32_bits(v->x)), "value", json_num(v->x));
    for (size_t k = 0; k < NTARGETS; k++) {
        enum fp_format f = targets[k];
        float r = fp_round(f, v->x);
        bool defined;
        double d = rel_error(v->x, r, &defined);
        json_object_set_new(
            o, fp_info(f)->key,
            json_pack("{s:s, s:o, s:o}", "bits", hex_bits(hex, sizeof hex, f, fp_encode(f, v->x)),
                      "value", json_num(r), "rel_error", defined ? json_num(d) : json_null()));
    }
    return o;
}

static void print_json(json_t *doc)
{
    json_write(stdout, doc, JSON_EXACT);
}

/* The answers, printed as they come: the same text and the same JSON document (indented as
 * jansson indents {"values": [...]}) whether the values came from the command line or a stream. */
struct answers {
    bool json;
    size_t n; /* values answered so far */
};

static void answer(struct answers *a, const struct value *v)
{
    if (a->json) {
        printf(a->n ? ",\n" : "{\n  \"values\": [\n");
        json_t *o = value_json(v);
        char *text = json_dumps(o, JSON_INDENT(2) | JSON_REAL_PRECISION(JSON_EXACT));
        json_decref(o);
        if (text) {
            /* each line of the object, indented two levels */
            for (const char *line = text; *line;) {
                const char *nl = strchr(line, '\n');
                size_t len = nl ? (size_t)(nl - line) : strlen(line);
                printf("    %.*s%s", (int)len, line, nl ? "\n" : "");
                line += len + (nl != NULL);
            }
            free(text);
        }
    } else {
        if (a->n)
            printf("\n");
        print_value_text(v);
    }
    a->n++;
}

static void answers_end(struct answers *a)
{
    if (a->json)
        printf(a->n ? "\n  ]\n}\n" : "{\n  \"values\": []\n}\n");
    else if (a->n)
        printf("\nrel. error d: the format's value is fp32 * (1 + d); 0 when held exactly "
               "(0 and inf\nincluded), n/a when NaN is involved.\n");
}

/* Reads standard input one line at a time and answers each value at once, so that memory stays
 * bounded whatever the input's size and a reader at the other end of a pipe gets each answer as
 * soon as it is known. Spaces around a value are ignored; an empty line, a line longer than
 * FORMATS_LINE_MAX bytes and a NUL byte are errors (exit 2), found at the byte that makes them
 * so. Stops quietly when standard output fails (a closed pipe: main reports the rest). */
#define FORMATS_LINE_MAX 256

static int stream_stdin(struct answers *a, struct error *e)
{
    char line[FORMATS_LINE_MAX + 1];
    size_t len = 0;
    long long lineno = 1;
    int c;
    for (;;) {
        c = getc(stdin);
        if (c == 0)
            return error_set(e, ERR_INVAL, "formats: stdin:%lld: a NUL byte (not text)", lineno);
        if (c != '\n' && c != EOF) {
            if (len == FORMATS_LINE_MAX)
                return error_set(e, ERR_INVAL, "formats: stdin:%lld: line longer than %d bytes",
                                 lineno, FORMATS_LINE_MAX);
            line[len++] = (char)c;
            continue;
        }
        if (c == EOF && ferror(stdin))
            return error_set(e, ERR_IO, "formats: cannot read standard input: %s", strerror(errno));
        if (c == EOF && len == 0)
            return 0; /* the end, after a newline or of an empty input */
        const char *s = line;
        while (len > 0 && isspace((unsigned char)s[len - 1]))
            len--;
        while (len > 0 && isspace((unsigned char)*s))
            s++, len--;
        char where[48];
        snprintf(where, sizeof where, "stdin:%lld", lineno);
        struct value v;
        int rc = value_parse(&v, s, len, where, e);
        if (rc < 0)
            return rc;
        answer(a, &v);
        free(v.input);
        if (!cli_output_ok())
            return 0;
        if (c == EOF)
            return 0;
        lineno++, len = 0;
    }
}

/* ------------------------------------------------------------------ the command */

struct formats_args {
    bool json;
    struct values vs;
    bool stdin_used;
    size_t stdin_at; /* where "-" stands among the values */
};

/* A value of the command line, or "-" (standard input, once). */
static int parse_value(const struct opt_entry *o, const char *arg, void *field, struct error *e)
{
    (void)o;
    struct formats_args *a = field;
    if (strcmp(arg, "-") != 0)
        return values_add(&a->vs, arg, strlen(arg), NULL, e);
    if (a->stdin_used)
        return error_set(e, ERR_INVAL, "'-' (read standard input) given twice");
    a->stdin_used = true;
    a->stdin_at = a->vs.n;
    return 0;
}

static const struct opt_entry value_arg = {
    .opt = {.name = "value"}, .arg = "VALUE", .parse = parse_value};

static const struct opt_entry options[] = {
    OPT_FLAG("json", struct formats_args, json,
             "one JSON document: without values {\"formats\": [{\"name\", \"key\", \"bits\",\n"
             "\"exponent_bits\", \"mantissa_bits\", \"bias\", \"has_inf\", \"max\",\n"
             "\"min_normal\", \"min_subnormal\", \"epsilon\"}]}; with values\n"
             "{\"values\": [{\"input\", \"fp32\": {\"bits\", \"value\"}, \"fp16\": {\"bits\",\n"
             "\"value\", \"rel_error\"}, \"bf16\", \"fp8_e4m3\", \"fp8_e5m2\"}]}. A value\n"
             "or rel_error is a number (up to 17 significant digits: exact) or the\n"
             "string \"inf\", \"-inf\" or \"nan\"; rel_error is null when undefined."),
    OPT_END,
};

const struct opts_spec opts_formats = {"formats", options, &value_arg, NULL};

static int formats_main(int argc, char **argv)
{
    /* Read and check every value of the command line before printing anything. */
    struct formats_args a = {0};
    struct error e = {0};
    int rc = opts_parse(&opts_formats, argc, argv, &a);
    if (rc) {
        values_free(&a.vs);
        return rc;
    }
    if (a.vs.n == 0 && !a.stdin_used) {
        if (a.json)
            print_json(properties_json());
        else
            print_properties_text();
        return 0;
    }
    struct answers ans = {.json = a.json};
    for (size_t i = 0; i <= a.vs.n && rc == 0; i++) {
        if (a.stdin_used && i == a.stdin_at)
            rc = stream_stdin(&ans, &e);
        if (i < a.vs.n && rc == 0)
            answer(&ans, &a.vs.v[i]);
    }
    values_free(&a.vs);
    if (rc < 0) {
        fflush(stdout); /* the values answered before the bad line, then the error */
        return cli_fail(&e);
    }
    answers_end(&ans);
    return 0;
}

const struct command cmd_formats = {
    "formats",
    "number formats: properties, and values rounded to fp16, bf16 and fp8 with their bits",
    "usage: scalelab formats [--json] [VALUE... | -]\n"
    "\n"
    "Without values: the properties of fp32, fp16, bf16, fp8 e4m3 (the \"fn\" variant: no inf,\n"
    "largest 448) and fp8 e5m2: bits of exponent and mantissa, bias, largest finite value,\n"
    "smallest normal and subnormal values, machine epsilon (the gap between 1 and the next\n"
    "value).\n"
    "\n"
    "With values: each value is first held as fp32, as in a float tensor (too large for fp32,\n"
    "like 1e39, becomes inf), then rounded to each format to nearest, ties to even, keeping\n"
    "subnormals. fp16, bf16 and e5m2 overflow to inf; e4m3 turns overflow and inf into NaN.\n"
    "Shown: the fp32 value and bits, and for each format the nearest value, its bits in hex\n"
    "and the relative error d, defined by value = fp32 * (1 + d): 0 when the format holds the\n"
    "fp32 value exactly (0 and inf included), inf when a finite value overflowed to inf, -1\n"
    "when it underflowed to 0, n/a (JSON null) when the fp32 value or the result is NaN.\n"
    "Values: decimal numbers (\"0.1\", \"-1.5e-3\"), inf, -inf, nan; negative values work as\n"
    "they are (scalelab formats -1.5) or after \"--\". A value that is not a number is an\n"
    "error (exit 2) and nothing is printed. \"-\" reads values from standard input, one per\n"
    "line, and answers each as it is read (any amount of input, in bounded memory); a bad line\n"
    "(not a number, empty, over 256 bytes, a NUL byte) is an error naming stdin:LINE, after\n"
    "the answers to the lines before it.\n",
    formats_main,
};
