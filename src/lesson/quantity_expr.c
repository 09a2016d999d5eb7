/* The expressions lessons write where they need a number: numbers and the registry's
 * quantities (lesson/quantity.c) combined with + - * / ^ and parentheses, each value carrying
 * its unit (lesson/quantity.h). */
#include "config.h"
#include "lesson/quantity.h"

#include <ctype.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "base/error.h"
#include "base/units.h"
#include "calc/preset.h"
#include "sim/spec.h"

/* ------------------------------------------------------------------ evaluation */

#define EXPR_MAX  256
#define DEPTH_MAX 16

/* A value with its unit as powers of bytes and seconds, or a yes/no. */
struct val {
    double v;
    int bytes, secs;
    bool is_bool;
};

struct parse {
    const char *s;
    size_t i, len;
    int depth;
    const struct quantity *only; /* the one quantity, while the expression is it alone */
    int calls;
    struct error *e;
};

static bool name_char(int c)
{
    return islower(c) || isdigit(c) || c == '_' || c == '.';
}

static void skip(struct parse *p)
{
    while (p->i < p->len && isspace((unsigned char)p->s[p->i]))
        p->i++;
}

static int expr(struct parse *p, struct val *out);

static struct val unit_val(double v, const char *unit)
{
    struct val x = {v, 0, 0, false};
    if (!strcmp(unit, "B"))
        x.bytes = 1;
    else if (!strcmp(unit, "s"))
        x.secs = 1;
    else if (!strcmp(unit, "B/s"))
        x.bytes = 1, x.secs = -1;
    else if (!strcmp(unit, "bool"))
        x.is_bool = true;
    return x;
}

/* NAME or NAME(ARG, ...) at p->i. */
static int call(struct parse *p, struct val *out)
{
    size_t start = p->i;
    while (p->i < p->len && name_char((unsigned char)p->s[p->i]))
        p->i++;
    char name[EXPR_MAX];
    size_t n = p->i - start;
    memcpy(name, p->s + start, n);
    name[n] = '\0';
    char preset[PRESET_NAME_MAX] = "";
    const struct quantity *q = quantity_lookup(name, preset, sizeof preset);
    if (!q)
        return error_set(p->e, ERR_INVAL,
                         "unknown quantity '%s' (lessons/README.md lists them; "
                         "'scalelab run --quantities' prints them)",
                         name);
    p->calls++;
    p->only = p->calls == 1 ? q : NULL;
    double args[QUANTITY_MAX_ARGS];
    int nargs = 0;
    skip(p);
    if (p->i < p->len && p->s[p->i] == '(') {
        p->i++;
        skip(p);
        if (p->i < p->len && p->s[p->i] == ')')
            return error_set(p->e, ERR_INVAL, "expected a number between the parentheses");
        for (;;) {
            struct val a;
            if (nargs == QUANTITY_MAX_ARGS)
                return error_set(p->e, ERR_INVAL, "%s takes %d argument%s", name, q->nargs,
                                 q->nargs == 1 ? "" : "s");
            if (expr(p, &a) < 0)
                return ERR_INVAL;
            args[nargs++] = a.v;
            skip(p);
            if (p->i < p->len && p->s[p->i] == ',') {
                p->i++;
                continue;
            }
            if (p->i < p->len && p->s[p->i] == ')') {
                p->i++;
                break;
            }
            return error_set(p->e, ERR_INVAL, "expected ',' or ')' in the arguments of %s", name);
        }
    }
    if (nargs != q->nargs)
        return error_set(p->e, ERR_INVAL, "%s takes %d argument%s%s, not %d", name, q->nargs,
                         q->nargs == 1 ? "" : "s", q->nargs ? " in parentheses" : "", nargs);
    double v = NAN;
    if (q->kind == QUANTITY_MODEL) {
        struct model_shape m;
        if (preset_load_model(preset, &m, NULL) < 0)
            return error_set(p->e, ERR_INVAL, "%s: no model preset '%s' (assets/models)", name,
                             preset);
        switch (q->nargs) {
        case 0: v = q->fn.m0(&m); break;
        case 1: v = q->fn.m1(&m, args[0]); break;
        case 2: v = q->fn.m2(&m, args[0], args[1]); break;
        case 3: v = q->fn.m3(&m, args[0], args[1], args[2]); break;
        default: v = q->fn.m4(&m, args[0], args[1], args[2], args[3]); break;
        }
    } else if (q->kind == QUANTITY_CLUSTER) {
        struct cluster_spec c;
        if (preset_load_cluster(preset, &c, NULL) < 0)
            return error_set(p->e, ERR_INVAL, "%s: no cluster preset '%s' (assets/clusters)", name,
                             preset);
        v = q->fn.c0(&c);
    } else {
        switch (q->nargs) {
        case 0: v = q->fn.f0(); break;
        case 1: v = q->fn.f1(args[0]); break;
        case 2: v = q->fn.f2(args[0], args[1]); break;
        case 3: v = q->fn.f3(args[0], args[1], args[2]); break;
        default: v = q->fn.f4(args[0], args[1], args[2], args[3]); break;
        }
    }
    *out = unit_val(v, q->unit);
    return 0;
}

/* A number: digits, a '.', an exponent; or inf, nan. */
static int number(struct parse *p, struct val *out)
{
    size_t start = p->i;
    if (p->len - p->i >= 3 &&
        (!strncmp(p->s + p->i, "inf", 3) || !strncmp(p->s + p->i, "nan", 3)) &&
        (p->len - p->i == 3 || !name_char((unsigned char)p->s[p->i + 3])))
        p->i += 3;
    else {
        while (p->i < p->len && (isdigit((unsigned char)p->s[p->i]) || p->s[p->i] == '.'))
            p->i++;
        if (p->i < p->len && (p->s[p->i] == 'e' || p->s[p->i] == 'E')) {
            size_t k = p->i + 1;
            if (k < p->len && (p->s[k] == '+' || p->s[k] == '-'))
                k++;
            if (k < p->len && isdigit((unsigned char)p->s[k])) {
                p->i = k;
                while (p->i < p->len && isdigit((unsigned char)p->s[p->i]))
                    p->i++;
            }
        }
    }
    char buf[64];
    size_t n = p->i - start;
    if (n == 0 || n >= sizeof buf)
        return error_set(p->e, ERR_INVAL, "expected a number or a quantity such as fp16.max");
    memcpy(buf, p->s + start, n);
    buf[n] = '\0';
    *out = (struct val){0, 0, 0, false};
    if (units_parse_double(buf, true, &out->v, NULL) < 0)
        return error_set(p->e, ERR_INVAL, "'%s' is not a number", buf);
    return 0;
}

static int primary(struct parse *p, struct val *out)
{
    skip(p);
    if (p->i >= p->len)
        return error_set(p->e, ERR_INVAL, "expected a number or a quantity such as fp16.max");
    char c = p->s[p->i];
    if (c == '(') {
        p->i++;
        if (expr(p, out) < 0)
            return ERR_INVAL;
        skip(p);
        if (p->i >= p->len || p->s[p->i] != ')')
            return error_set(p->e, ERR_INVAL, "unbalanced '(': expected ')'");
        p->i++;
        p->only = NULL;
        return 0;
    }
    bool word = islower((unsigned char)c) &&
                !((!strncmp(p->s + p->i, "inf", 3) || !strncmp(p->s + p->i, "nan", 3)) &&
                  (p->len - p->i == 3 || !name_char((unsigned char)p->s[p->i + 3])));
    return word ? call(p, out) : number(p, out);
}

static int unary(struct parse *p, struct val *out);

static int power(struct parse *p, struct val *out)
{
    if (primary(p, out) < 0)
        return ERR_INVAL;
    skip(p);
    if (p->i < p->len && p->s[p->i] == '^') {
        p->i++;
        struct val x;
        if (unary(p, &x) < 0) /* right-associative: 2^3^2 = 2^9; 2^-24 */
            return ERR_INVAL;
        if (x.bytes || x.secs || out->bytes || out->secs)
            return error_set(p->e, ERR_INVAL, "'^' takes plain numbers");
        out->v = pow(out->v, x.v);
        p->only = NULL;
    }
    return 0;
}

/* A sign binds looser than '^': -2^2 is -4. */
static int unary(struct parse *p, struct val *out)
{
    skip(p);
    if (p->i < p->len && (p->s[p->i] == '-' || p->s[p->i] == '+')) {
        char c = p->s[p->i++];
        if (unary(p, out) < 0)
            return ERR_INVAL;
        if (c == '-')
            out->v = -out->v;
        p->only = NULL;
        return 0;
    }
    return power(p, out);
}

static int term(struct parse *p, struct val *out)
{
    if (unary(p, out) < 0)
        return ERR_INVAL;
    for (;;) {
        skip(p);
        if (p->i >= p->len || (p->s[p->i] != '*' && p->s[p->i] != '/'))
            return 0;
        char op = p->s[p->i++];
        struct val x;
        if (unary(p, &x) < 0)
            return ERR_INVAL;
        int sign = op == '*' ? 1 : -1;
        out->v = op == '*' ? out->v * x.v : out->v / x.v;
        out->bytes += sign * x.bytes, out->secs += sign * x.secs;
        out->is_bool = false;
        p->only = NULL;
    }
}

static int expr(struct parse *p, struct val *out)
{
    if (++p->depth > DEPTH_MAX)
        return error_set(p->e, ERR_INVAL, "an expression nested more than %d deep", DEPTH_MAX);
    if (term(p, out) < 0)
        return ERR_INVAL;
    for (;;) {
        skip(p);
        if (p->i >= p->len || (p->s[p->i] != '+' && p->s[p->i] != '-')) {
            p->depth--;
            return 0;
        }
        char op = p->s[p->i++];
        struct val x;
        if (term(p, &x) < 0)
            return ERR_INVAL;
        /* a plain number takes the other's unit (synthetic_7b.states + 1e9) */
        bool plain_a = !out->bytes && !out->secs, plain_b = !x.bytes && !x.secs;
        if (!plain_a && !plain_b && (out->bytes != x.bytes || out->secs != x.secs))
            return error_set(p->e, ERR_INVAL, "'%c' between two different units", op);
        if (plain_a)
            out->bytes = x.bytes, out->secs = x.secs;
        out->v = op == '+' ? out->v + x.v : out->v - x.v;
        out->is_bool = false;
        p->only = NULL;
    }
}

static const char *unit_name(const struct val *x)
{
    if (x->is_bool)
        return "bool";
    if (x->bytes == 0 && x->secs == 0)
        return "";
    if (x->bytes == 1 && x->secs == 0)
        return "B";
    if (x->bytes == 0 && x->secs == 1)
        return "s";
    if (x->bytes == 1 && x->secs == -1)
        return "B/s";
    return "?";
}

int quantity_expr(const char *s, double *value, const struct quantity **q, const char **unit,
                  struct error *e)
{
    size_t len = strlen(s);
    if (len >= EXPR_MAX)
        return error_set(e, ERR_INVAL, "an expression of %zu characters is too long", len);
    struct parse p = {s, 0, len, 0, NULL, 0, e};
    struct val x;
    if (expr(&p, &x) < 0)
        return ERR_INVAL;
    skip(&p);
    if (p.i < p.len)
        return error_set(e, ERR_INVAL, "unexpected '%c' in '%s'", s[p.i], s);
    *value = x.v;
    if (q)
        *q = p.only;
    if (unit)
        *unit = p.only ? p.only->unit : unit_name(&x);
    return 0;
}

int quantity_eval(const char *expr_text, double *value, const struct quantity **q, struct error *e)
{
    return quantity_expr(expr_text, value, q, NULL, e);
}
