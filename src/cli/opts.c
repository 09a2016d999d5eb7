/* The one command-line option reader every command uses: --name value and --name=value,
 * unknown options refused, and repeated ones too where a command asks (cli/opts.h). */
#include "config.h"
#include "cli/opts.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "base/error.h"
#include "base/units.h"

void opts_init(struct opts *p, int argc, char **argv, const struct opt *table, const char *cmd)
{
    *p = (struct opts){.argc = argc, .i = 1, .argv = argv, .table = table, .cmd = cmd};
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
    for (const struct opt *o = p->table; o->name; o++) {
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
    const struct opt *o = NULL;
    const char *inline_val = NULL;
    if (a[1] == '-') {
        const char *name = a + 2, *eq = strchr(name, '=');
        size_t len = eq ? (size_t)(eq - name) : strlen(name);
        for (const struct opt *t = p->table; t->name; t++)
            if (strlen(t->name) == len && strncmp(t->name, name, len) == 0)
                o = t;
        if (eq)
            inline_val = eq + 1;
    } else if (a[2] == '\0') {
        for (const struct opt *t = p->table; t->name; t++)
            if (t->short_name && t->short_name == a[1])
                o = t;
    }
    if (!o)
        return unknown(p, a);
    size_t idx = (size_t)(o - p->table);
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
    return (int)(o - p->table);
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
