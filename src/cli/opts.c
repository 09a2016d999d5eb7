/* The one command-line option reader every command uses: --name value and --name=value,
 * unknown options refused, and repeated ones too where a command asks; a command's table
 * read into its struct, and printed as its help (cli/opts.h). */
#include "config.h"
#include "cli/opts.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "base/error.h"
#include "base/units.h"
#include "cli/fail.h"

void opts_init(struct opts *p, int argc, char **argv, const struct opt *table, const char *cmd)
{
    *p = (struct opts){
        .argc = argc, .i = 1, .argv = argv, .table = table, .cmd = cmd, .stride = sizeof *table};
}

/* The table's entry i (a struct opt, or the struct opt that opens a struct opt_entry). */
static const struct opt *entry(const struct opts *p, size_t i)
{
    return (const struct opt *)(const void *)((const char *)p->table + i * p->stride);
}

int opts_distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    if (la > 63 || lb > 63)
        return 64;
    int d[64][64];
    for (size_t i = 0; i <= la; i++)
        d[i][0] = (int)i;
    for (size_t j = 0; j <= lb; j++)
        d[0][j] = (int)j;
    for (size_t i = 1; i <= la; i++)
        for (size_t j = 1; j <= lb; j++) {
            int sub = d[i - 1][j - 1] +
                      (tolower((unsigned char)a[i - 1]) != tolower((unsigned char)b[j - 1]));
            int del = d[i - 1][j] + 1, ins = d[i][j - 1] + 1;
            d[i][j] = sub < del ? (sub < ins ? sub : ins) : (del < ins ? del : ins);
        }
    return d[la][lb];
}

static bool looks_negative_number(const char *s)
{
    if (s[0] != '-')
        return false;
    if (isdigit((unsigned char)s[1]) || (s[1] == '.' && isdigit((unsigned char)s[2])))
        return true;
    return strncasecmp(s + 1, "inf", 3) == 0 || strcasecmp(s + 1, "nan") == 0;
}

static int unknown(struct opts *p, const char *arg)
{
    const char *best = NULL;
    int best_d = 3;
    const char *name = arg + strspn(arg, "-");
    size_t len = strcspn(name, "=");
    char word[64];
    snprintf(word, sizeof word, "%.*s", (int)(len < 63 ? len : 63), name);
    const struct opt *o;
    for (size_t i = 0; (o = entry(p, i))->name; i++) {
        int d = opts_distance(word, o->name);
        if (d < best_d)
            best_d = d, best = o->name;
    }
    fprintf(stderr, "scalelab: %s: unknown option '%s'", p->cmd, arg);
    if (best)
        fprintf(stderr, " (did you mean '--%s'?)", best);
    fprintf(stderr, "; see 'scalelab help %s'\n", p->cmd);
    return OPTS_ERROR;
}

int opts_next(struct opts *p, const char **arg)
{
    *arg = NULL;
    if (p->i >= p->argc)
        return OPTS_END;
    char *a = p->argv[p->i++];
    if (p->positional_only || a[0] != '-' || a[1] == '\0' || looks_negative_number(a)) {
        *arg = a;
        return OPTS_POSITIONAL;
    }
    if (strcmp(a, "--") == 0) {
        p->positional_only = true;
        return opts_next(p, arg);
    }
    const struct opt *o = NULL, *t;
    size_t idx = 0;
    const char *inline_val = NULL;
    if (a[1] == '-') {
        const char *name = a + 2, *eq = strchr(name, '=');
        size_t len = eq ? (size_t)(eq - name) : strlen(name);
        for (size_t i = 0; (t = entry(p, i))->name; i++)
            if (strlen(t->name) == len && strncmp(t->name, name, len) == 0)
                o = t, idx = i;
        if (eq)
            inline_val = eq + 1;
    } else if (a[2] == '\0') {
        for (size_t i = 0; (t = entry(p, i))->name; i++)
            if (t->short_name && t->short_name == a[1])
                o = t, idx = i;
    }
    if (!o)
        return unknown(p, a);
    bool repeatable = false;
    for (const char *const *r = p->repeatable; r && *r; r++)
        repeatable |= strcmp(*r, o->name) == 0;
    if (p->once && !repeatable && idx < 64) {
        if (p->seen & (1ULL << idx)) {
            fprintf(stderr,
                    "scalelab: %s: option '--%s' given twice (give it once); see 'scalelab help "
                    "%s'\n",
                    p->cmd, o->name, p->cmd);
            return OPTS_ERROR;
        }
        p->seen |= 1ULL << idx;
    }
    if (!o->has_arg) {
        if (inline_val) {
            fprintf(stderr, "scalelab: %s: option '--%s' takes no value\n", p->cmd, o->name);
            return OPTS_ERROR;
        }
    } else if (inline_val) {
        *arg = inline_val;
    } else if (p->i < p->argc) {
        *arg = p->argv[p->i++];
    } else {
        fprintf(stderr, "scalelab: %s: option '--%s' needs a value; see 'scalelab help %s'\n",
                p->cmd, o->name, p->cmd);
        return OPTS_ERROR;
    }
    return (int)idx;
}

int opts_gpu_at(const char *s, int max_gpu, long long min_step, long long max_step, int *gpu,
                long long *step, struct error *e)
{
    const char *at = strchr(s, '@');
    long long g;
    char buf[64];
    if (!at || (size_t)(at - s) >= sizeof buf)
        return error_set(e, ERR_INVAL, "--fail: expected GPU@STEP (e.g. 1@3), not '%s'", s);
    memcpy(buf, s, (size_t)(at - s));
    buf[at - s] = 0;
    if (units_parse_int(buf, 0, max_gpu, &g, e) ||
        units_parse_int(at + 1, min_step, max_step, step, e)) {
        error_prefix(e, "--fail %s", s);
        return ERR_INVAL;
    }
    *gpu = (int)g;
    return 0;
}

/* ------------------------------------------------------------------ tables */

int opts_flag(const struct opt_entry *o, const char *arg, void *field, struct error *e)
{
    (void)o, (void)arg, (void)e;
    *(bool *)field = true;
    return 0;
}

int opts_int(const struct opt_entry *o, const char *arg, void *field, struct error *e)
{
    long long v;
    if (units_parse_int(arg, o->min, o->max, &v, NULL) < 0)
        return error_set(e, ERR_INVAL,
                         "--%s: '%s' is not allowed (a whole number from %lld to %lld)",
                         o->opt.name, arg, o->min, o->max);
    *(int *)field = (int)v;
    return 0;
}

int opts_str(const struct opt_entry *o, const char *arg, void *field, struct error *e)
{
    (void)o, (void)e;
    *(const char **)field = arg;
    return 0;
}

int opts_one(const struct opt_entry *o, const char *arg, void *field, struct error *e)
{
    const char **which = field;
    if (*which)
        return error_set(e, ERR_INVAL, "one %s at a time, not '%s' too", o->opt.name, arg);
    *which = arg;
    return 0;
}

int opts_transport(const struct opt_entry *o, const char *arg, void *field, struct error *e)
{
    if (strcmp(arg, "mpi") && strcmp(arg, "thread"))
        return error_set(e, ERR_INVAL, "--%s: '%s' is not allowed (thread or mpi)", o->opt.name,
                         arg);
    *(bool *)field = !strcmp(arg, "mpi");
    return 0;
}

int opts_seconds(const struct opt_entry *o, const char *arg, void *field, struct error *e)
{
    double *s = field;
    if (units_parse_double(arg, false, s, NULL) < 0 || !(*s > 0 && *s <= 3600))
        return error_set(e, ERR_INVAL, "--%s: '%s' is not allowed (seconds above 0, at most 3600)",
                         o->opt.name, arg);
    return 0;
}

static int index_of(const struct opt_entry *table, const char *name)
{
    for (int i = 0; table[i].opt.name; i++)
        if (!strcmp(table[i].opt.name, name))
            return i;
    return -1;
}

int opts_parse(const struct opts_spec *s, int argc, char **argv, void *values)
{
    struct opts p;
    const char *arg;
    int k;
    bool given[OPTS_MAX] = {false};
    struct error e = {0};
    opts_init(&p, argc, argv, &s->table[0].opt, s->cmd);
    p.stride = sizeof *s->table;
    while ((k = opts_next(&p, &arg)) != OPTS_END) {
        if (k == OPTS_ERROR)
            return 2;
        const struct opt_entry *o = k == OPTS_POSITIONAL ? s->positional : &s->table[k];
        if (!o)
            return cli_usage(s->cmd, "unexpected argument '%s'", arg);
        if (k >= OPTS_MAX)
            return cli_usage(s->cmd, "option '--%s': the table has over %d", o->opt.name, OPTS_MAX);
        if (k >= 0) {
            if (given[k] && !(o->flags & OPT_REPEAT))
                return cli_usage(s->cmd, "option '--%s' given twice (give it once)", o->opt.name);
            given[k] = true;
        }
        if (o->parse(o, arg, (char *)values + o->field, &e) < 0)
            return e.code == ERR_INVAL ? cli_usage(s->cmd, "%s", e.msg) : cli_fail(&e);
    }
    for (const char *const *c = s->conflicts; c && c[0] && c[1]; c += 2) {
        int a = index_of(s->table, c[0]), b = index_of(s->table, c[1]);
        if (a >= 0 && b >= 0 && given[a] && given[b])
            return cli_usage(s->cmd, "--%s and --%s exclude each other (give one)", c[0], c[1]);
    }
    return 0;
}

/* The option of s named by the word at w (ended by a space and a digit), or NULL. */
static const char *option_word(const struct opts_spec *s, const char *w)
{
    for (const struct opt_entry *o = s->table; o->opt.name; o++) {
        size_t n = strlen(o->opt.name);
        if (o->opt.has_arg && !strncmp(w, o->opt.name, n) && w[n] == ' ' &&
            isdigit((unsigned char)w[n + 1]))
            return o->opt.name;
    }
    return NULL;
}

void opts_flag_words(const struct opts_spec *s, struct error *e)
{
    char out[ERROR_MAX];
    size_t n = 0;
    for (const char *p = e->msg; *p && n + 3 < sizeof out; p++) {
        bool start = p == e->msg || !(isalnum((unsigned char)p[-1]) || p[-1] == '-' ||
                                      p[-1] == '_' || p[-1] == '\'' || p[-1] == '.');
        if (start && option_word(s, p))
            out[n++] = '-', out[n++] = '-';
        out[n++] = *p;
    }
    out[n] = '\0';
    snprintf(e->msg, sizeof e->msg, "%s", out);
}

int opts_fail(const struct opts_spec *s, struct error *e)
{
    opts_flag_words(s, e);
    return cli_fail(e);
}

/* "--stages P" or "LESSON": the left column of an option's help. */
static int usage_name(char *buf, size_t n, const struct opt_entry *o, bool positional)
{
    if (positional)
        return snprintf(buf, n, "%s", o->arg);
    return snprintf(buf, n, "--%s%s%s", o->opt.name, o->arg ? " " : "", o->arg ? o->arg : "");
}

static void usage_line(FILE *f, const struct opt_entry *o, bool positional, int width)
{
    char name[64];
    usage_name(name, sizeof name, o, positional);
    const char *h = o->help ? o->help : "";
    fprintf(f, "  %-*s  ", width, name);
    for (;;) { /* each line of the help, the continuations under the first */
        size_t len = strcspn(h, "\n");
        fprintf(f, "%.*s\n", (int)len, h);
        if (!h[len])
            break;
        h += len + 1;
        fprintf(f, "  %-*s  ", width, "");
    }
}

void opts_usage(FILE *f, const struct opts_spec *s)
{
    char name[64];
    int width = 0;
    bool positional = s->positional && s->positional->help;
    if (positional)
        width = usage_name(name, sizeof name, s->positional, true);
    for (const struct opt_entry *o = s->table; o->opt.name; o++) {
        int w = usage_name(name, sizeof name, o, false);
        width = w > width ? w : width;
    }
    if (positional)
        usage_line(f, s->positional, true, width);
    for (const struct opt_entry *o = s->table; o->opt.name; o++)
        usage_line(f, o, false, width);
}
