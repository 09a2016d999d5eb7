/* Lesson files (lessons/README.md): the parser with its file:line errors, answer checking,
 * and finding the shipped lessons (lesson/lesson.h). */
#include "config.h"
#include "lesson/lesson.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <strings.h>
#include <unistd.h>

#include "base/datadir.h"
#include "base/error.h"
#include "base/units.h"
#include "lesson/ascii.h"
#include "lesson/quantity.h"

#define FILE_MAX    (1 << 20) /* a lesson is a few KiB; refuse anything absurd */
#define DEFAULT_TOL 1e-9      /* relative: "exact", forgiving decimal printing */

/* ------------------------------------------------------------------ small helpers */

/* Appends one zeroed element to an array whose capacity is the next power of two of its count,
 * so no capacity field is needed. Returns the new element, or NULL when out of memory. */
static void *push(void *arrayp, size_t *n, size_t size)
{
    void **array = arrayp;
    if (*n == 0 || (*n & (*n - 1)) == 0) {
        size_t cap = *n ? 2 * *n : 1;
        void *p = realloc(*array, cap * size);
        if (!p)
            return NULL;
        *array = p;
    }
    void *el = (char *)*array + *n * size;
    memset(el, 0, size);
    (*n)++;
    return el;
}

static char *str_dup_n(const char *s, size_t n)
{
    char *d = malloc(n + 1);
    if (d) {
        memcpy(d, s, n);
        d[n] = '\0';
    }
    return d;
}

static char *str_dup(const char *s)
{
    return str_dup_n(s, strlen(s));
}

static const char *skip_space(const char *s)
{
    while (*s == ' ' || *s == '\t')
        s++;
    return s;
}

/* ------------------------------------------------------------------ freeing */

static void free_panel(struct lesson_panel *p)
{
    if (!p)
        return;
    for (size_t i = 0; i < p->nsettings; i++) {
        free(p->settings[i].key);
        free(p->settings[i].value);
    }
    free(p->settings);
    free(p->name);
    free(p);
}

static void free_strings(char **v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(v[i]);
    free(v);
}

static void free_step(struct lesson_step *s)
{
    free(s->title);
    free_strings(s->text, s->ntext);
    free_panel(s->panel);
    for (size_t i = 0; i < s->nruns; i++) {
        struct lesson_run *r = &s->runs[i];
        free(r->cmdline);
        free_strings(r->argv, (size_t)r->argc);
        for (size_t j = 0; j < r->nexpects; j++) {
            free(r->expects[j].path);
            free(r->expects[j].number.expr);
            free(r->expects[j].text);
        }
        free(r->expects);
    }
    free(s->runs);
    for (size_t i = 0; i < s->nquestions; i++) {
        struct lesson_question *q = &s->questions[i];
        free(q->text);
        free(q->answer.expr);
        free(q->unit);
        free_strings(q->options, q->noptions);
        free(q->condition);
        free(q->explain);
    }
    free(s->questions);
}

void lesson_free(struct lesson *l)
{
    if (!l)
        return;
    free(l->file);
    free(l->title);
    free(l->short_title);
    free_strings(l->outcomes, l->noutcomes);
    free_panel(l->panel);
    for (size_t i = 0; i < l->nsteps; i++)
        free_step(&l->steps[i]);
    free(l->steps);
    free(l);
}

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

/* ------------------------------------------------------------------ the parser */

struct parser {
    const char *file;
    int line;
    struct lesson *l;
    struct lesson_step *step;  /* the step being read, or NULL in the head */
    struct lesson_question *q; /* the open question, or NULL */
    struct lesson_run *run;    /* the @run that @expect lines belong to, or NULL */
    bool seen_duration;
    int end_line; /* the line of @end, or 0 before it */
    struct error *e;
};

static int fail(struct parser *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int fail(struct parser *p, const char *fmt, ...)
{
    char msg[ERROR_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return error_set(p->e, ERR_INVAL, "%s:%d: %s", p->file, p->line, msg);
}

static int nomem(struct parser *p)
{
    return error_set(p->e, ERR_NOMEM, "%s: out of memory", p->file);
}

/* A number: a literal ("65504", "6e-8", "inf") or a quantity ("fp16.max"). */
static int parse_number(struct parser *p, const char *s, struct lesson_number *n,
                        const struct quantity **q)
{
    struct error qe = {0};
    *q = NULL;
    if (!*s)
        return fail(p, "expected a number or a quantity such as fp16.max");
    if (islower((unsigned char)*s) && strcmp(s, "inf") && strcmp(s, "nan")) {
        if (quantity_eval(s, &n->value, q, &qe) < 0)
            return fail(p, "%s", qe.msg);
        n->is_quantity = true;
    } else if (units_parse_double(s, true, &n->value, NULL) < 0) {
        return fail(p, "expected a number or a quantity such as fp16.max, not '%s'", s);
    }
    n->expr = str_dup(s);
    return n->expr ? 0 : nomem(p);
}

static int parse_tolerance(struct parser *p, const char *s, struct lesson_tolerance *t)
{
    char buf[64];
    size_t len = strlen(s);
    bool rel = len > 0 && s[len - 1] == '%';
    double v;
    if (len - rel >= sizeof buf)
        goto bad;
    memcpy(buf, s, len - rel);
    buf[len - rel] = '\0';
    if (units_parse_double(buf, false, &v, NULL) < 0 || v < 0)
        goto bad;
    t->relative = rel;
    t->amount = rel ? v / 100 : v;
    return 0;
bad:
    return fail(p, "bad tolerance 'tol=%s': expected tol=0.5 (absolute) or tol=1%% (relative)", s);
}

/* Splits off the next word of *s: up to a space outside parentheses and double quotes. The word
 * is copied into buf without the quotes. Returns its length, 0 at the end, -1 on an unmatched
 * quote, -2 when it does not fit. */
static int next_word(const char **s, char *buf, size_t n)
{
    const char *c = skip_space(*s);
    size_t o = 0;
    int paren = 0;
    bool quoted = false;
    for (; *c && (quoted || paren > 0 || (*c != ' ' && *c != '\t')); c++) {
        if (*c == '"') {
            quoted = !quoted;
            continue;
        }
        if (!quoted && *c == '(')
            paren++;
        if (!quoted && *c == ')')
            paren--;
        if (o + 1 >= n)
            return -2;
        buf[o++] = *c;
    }
    if (quoted)
        return -1;
    buf[o] = '\0';
    *s = c;
    return (int)o;
}

static bool is_word(const char *s)
{
    if (!*s)
        return false;
    for (; *s; s++)
        if (!islower((unsigned char)*s) && !isdigit((unsigned char)*s) && *s != '_')
            return false;
    return true;
}

static int parse_panel(struct parser *p, const char *arg, struct lesson_panel **out)
{
    char word[LESSON_LINE_MAX + 1];
    const char *s = arg;
    if (next_word(&s, word, sizeof word) <= 0 || !is_word(word))
        return fail(p, "@panel needs a panel name (lower case letters, digits, _), e.g. "
                       "@panel formats value=1 format=fp16");
    struct lesson_panel *panel = calloc(1, sizeof *panel);
    if (!panel || !(panel->name = str_dup(word))) {
        free(panel);
        return nomem(p);
    }
    panel->line = p->line;
    *out = panel;
    int k;
    while ((k = next_word(&s, word, sizeof word)) > 0) {
        char *eq = strchr(word, '=');
        if (!eq || eq == word)
            return fail(p, "expected KEY=VALUE after the panel name, not '%s'", word);
        *eq = '\0';
        if (!is_word(word))
            return fail(p, "a panel setting's key is lower case letters, digits and _, not '%s'",
                        word);
        if (!eq[1])
            return fail(p, "the panel setting '%s' needs a value: %s=VALUE", word, word);
        if (lesson_panel_get(panel, word))
            return fail(p, "the panel setting '%s' is given twice", word);
        struct lesson_setting *set = push(&panel->settings, &panel->nsettings, sizeof *set);
        if (!set)
            return nomem(p);
        set->key = str_dup(word);
        set->value = str_dup(eq + 1);
        if (!set->key || !set->value)
            return nomem(p);
    }
    if (k == -1)
        return fail(p, "a '\"' is not closed");
    return 0;
}

/* ---- the head */

static int head_only(struct parser *p, const char *name)
{
    if (p->step)
        return fail(p, "@%s belongs in the head, before the first @step", name);
    return 0;
}

static int set_once(struct parser *p, char **field, const char *name, const char *arg)
{
    if (*field)
        return fail(p, "a second @%s: the lesson has one", name);
    *field = str_dup(arg);
    return *field ? 0 : nomem(p);
}

static int parse_duration(struct parser *p, const char *arg)
{
    long long minutes;
    char num[32];
    if (p->seen_duration)
        return fail(p, "a second @duration: the lesson has one");
    p->seen_duration = true;
    if (strcmp(arg, "open") == 0) {
        p->l->minutes = 0;
        return 0;
    }
    const char *sp = strchr(arg, ' ');
    if (!sp || strcmp(skip_space(sp), "min") != 0 || (size_t)(sp - arg) >= sizeof num)
        return fail(p, "expected @duration N min, or @duration open, not '%s'", arg);
    memcpy(num, arg, (size_t)(sp - arg));
    num[sp - arg] = '\0';
    if (units_parse_int(num, 1, 1000, &minutes, NULL) < 0)
        return fail(p, "expected a number of minutes from 1 to 1000, not '%s'", num);
    p->l->minutes = (int)minutes;
    return 0;
}

/* The head is complete when the first step starts (line is where the check is made). */
static int check_head(struct parser *p)
{
    if (!p->l->title)
        return fail(p, "expected @title TEXT before the first @step");
    if (!p->seen_duration)
        return fail(p, "expected @duration N min (or @duration open) before the first @step");
    if (p->l->noutcomes == 0)
        return fail(p, "expected at least one @outcome (what the learner will be able to do) "
                       "before the first @step");
    return 0;
}

/* ---- questions */

static int close_question(struct parser *p)
{
    struct lesson_question *q = p->q;
    if (!q)
        return 0;
    int line = p->line;
    p->line = q->line;
    int rc = 0;
    if (q->noptions == 1)
        rc = fail(p, "a choice question needs at least two @option lines");
    else if (!q->answer.expr && q->noptions == 0)
        rc = fail(p, "question without answer: expected @answer after @question");
    else if (q->noptions && q->correct < 0)
        rc = fail(p, "question without answer: expected @answer LETTER after its @option lines");
    p->line = line;
    if (!q->explain && !(q->explain = str_dup("")))
        rc = nomem(p);
    p->q = NULL;
    return rc;
}

static int parse_question(struct parser *p, const char *arg)
{
    if (close_question(p) < 0)
        return ERR_INVAL;
    if (p->step->nquestions == LESSON_MAX_QUESTIONS)
        return fail(p, "more than %d questions in one step", LESSON_MAX_QUESTIONS);
    struct lesson_question *q = push(&p->step->questions, &p->step->nquestions, sizeof *q);
    if (!q)
        return nomem(p);
    q->line = p->line;
    q->correct = -1;
    p->q = q;
    p->run = NULL;
    q->text = str_dup(arg);
    return q->text ? 0 : nomem(p);
}

static int parse_option(struct parser *p, const char *arg)
{
    struct lesson_question *q = p->q;
    if (q->answer.expr || q->correct >= 0)
        return fail(p, "@option after @answer: list the options first");
    if (q->noptions == LESSON_MAX_OPTIONS)
        return fail(p, "more than %d options", LESSON_MAX_OPTIONS);
    for (size_t i = 0; i < q->noptions; i++)
        if (strcasecmp(q->options[i], arg) == 0) /* learners may type an option's text */
            return fail(p, "duplicate option '%s' (it is option %c)", arg, (int)('a' + i));
    char **slot = push(&q->options, &q->noptions, sizeof *slot);
    if (!slot)
        return nomem(p);
    q->kind = LESSON_Q_CHOICE;
    *slot = str_dup(arg);
    return *slot ? 0 : nomem(p);
}

/* An option letter a, b, ... among q's options; -1 if it is not one. */
static int option_letter(const struct lesson_question *q, const char *s)
{
    if (strlen(s) != 1)
        return -1;
    int c = tolower((unsigned char)s[0]) - 'a';
    return c >= 0 && (size_t)c < q->noptions ? c : -1;
}

static int parse_choice_answer(struct parser *p, const char *arg)
{
    struct lesson_question *q = p->q;
    const char *qm = strchr(arg, '?');
    if (!qm) {
        q->correct = option_letter(q, arg);
        if (q->correct < 0)
            return fail(p, "expected an option letter from a to %c, not '%s'",
                        (int)('a' + q->noptions - 1), arg);
        return 0;
    }
    /* QUANTITY ? LETTER : LETTER */
    char cond[LESSON_LINE_MAX + 1], yes[8], no[8];
    size_t clen = (size_t)(qm - arg);
    while (clen && arg[clen - 1] == ' ')
        clen--;
    memcpy(cond, arg, clen);
    cond[clen] = '\0';
    const char *rest = skip_space(qm + 1), *colon = strchr(rest, ':');
    size_t ylen = colon ? (size_t)(colon - rest) : 0;
    while (ylen && rest[ylen - 1] == ' ')
        ylen--;
    const char *nstart = colon ? skip_space(colon + 1) : "";
    if (!colon || ylen == 0 || ylen >= sizeof yes || strlen(nstart) >= sizeof no || !*nstart)
        return fail(p, "expected @answer QUANTITY ? LETTER : LETTER, e.g. "
                       "@answer fp16.overflows(65520) ? b : a");
    memcpy(yes, rest, ylen);
    yes[ylen] = '\0';
    strcpy(no, nstart);
    int iy = option_letter(q, yes), in = option_letter(q, no);
    if (iy < 0 || in < 0)
        return fail(p, "expected option letters from a to %c after '?' and ':'",
                    (int)('a' + q->noptions - 1));
    double v;
    const struct quantity *qt;
    struct error qe = {0};
    if (quantity_eval(cond, &v, &qt, &qe) < 0)
        return fail(p, "%s", qe.msg);
    if (strcmp(qt->unit, "bool") != 0)
        return fail(p,
                    "%s is not a yes/no quantity; a choice needs one (such as "
                    "fp16.overflows(X))",
                    qt->name);
    q->correct = v != 0 ? iy : in;
    q->condition = str_dup(cond);
    return q->condition ? 0 : nomem(p);
}

static int parse_number_answer(struct parser *p, const char *arg)
{
    struct lesson_question *q = p->q;
    char word[LESSON_LINE_MAX + 1];
    const char *s = arg;
    const struct quantity *qt;
    const char *unit = NULL;
    int k = next_word(&s, word, sizeof word);
    if (k <= 0)
        return fail(p, "@answer needs a value: a number, a quantity such as fp16.max, or "
                       "an option letter");
    if (parse_number(p, word, &q->answer, &qt) < 0)
        return ERR_INVAL;
    q->tol = (struct lesson_tolerance){true, DEFAULT_TOL};
    while ((k = next_word(&s, word, sizeof word)) > 0) {
        if (strncmp(word, "tol=", 4) == 0) {
            if (parse_tolerance(p, word + 4, &q->tol) < 0)
                return ERR_INVAL;
        } else if (strncmp(word, "unit=", 5) == 0) {
            if (q->unit)
                return fail(p, "unit= is given twice for this answer");
            unit = word + 5;
            if (!(q->unit = str_dup(unit)))
                return nomem(p);
        } else {
            return fail(p, "expected tol=T or unit=U after the answer, not '%s'", word);
        }
    }
    if (k < 0)
        return fail(p, "a '\"' is not closed");
    if (qt && strcmp(qt->unit, "bool") == 0)
        return fail(p,
                    "%s is a yes/no quantity: ask it as a choice "
                    "(@option lines, then @answer %s ? a : b)",
                    qt->name, q->answer.expr);
    if (!q->unit && !(q->unit = str_dup(qt ? qt->unit : "")))
        return nomem(p);
    if (qt && strcmp(qt->unit, q->unit) != 0) {
        /* The quantity is in its own unit; convert it to the one the learner answers in. */
        const char *kq = NULL, *ku = NULL;
        double fq = lesson_unit_factor(qt->unit, &kq), fu = lesson_unit_factor(q->unit, &ku);
        if (!fq || !fu || strcmp(kq, ku) != 0)
            return fail(p, "%s is in '%s', which cannot be converted to unit=%s", qt->name,
                        qt->unit, q->unit);
        q->answer.value *= fq / fu;
    }
    return 0;
}

static int parse_answer(struct parser *p, const char *arg)
{
    if (p->q->answer.expr || p->q->correct >= 0)
        return fail(p, "a second @answer for this question");
    if (p->q->noptions)
        return parse_choice_answer(p, arg);
    return parse_number_answer(p, arg);
}

static int parse_explain(struct parser *p, const char *arg)
{
    struct lesson_question *q = p->q;
    size_t old = q->explain ? strlen(q->explain) : 0, add = strlen(arg);
    char *s = realloc(q->explain, old + add + 2);
    if (!s)
        return nomem(p);
    if (old)
        s[old++] = '\n';
    memcpy(s + old, arg, add + 1);
    q->explain = s;
    return 0;
}

/* ---- runs and expectations */

static int parse_run(struct parser *p, const char *arg)
{
    if (close_question(p) < 0)
        return ERR_INVAL;
    struct lesson_run *r = push(&p->step->runs, &p->step->nruns, sizeof *r);
    if (!r)
        return nomem(p);
    r->line = p->line;
    p->run = r;
    if (!(r->cmdline = str_dup(arg)) || !(r->argv = calloc(1, sizeof *r->argv)))
        return nomem(p);
    char word[LESSON_LINE_MAX + 1];
    const char *s = arg;
    int k;
    size_t n = 0;
    while ((k = next_word(&s, word, sizeof word)) > 0) {
        /* argv keeps a NULL after the last argument */
        char **slot = push(&r->argv, &n, sizeof *slot);
        if (!slot || !(*slot = str_dup(word)))
            return nomem(p);
        r->argc = (int)n;
        char **end = push(&r->argv, &n, sizeof *end);
        if (!end)
            return nomem(p);
        n--;
    }
    if (k == -1)
        return fail(p, "a '\"' is not closed");
    return 0;
}

static bool valid_path(const char *s)
{
    bool need_key = true;
    while (*s) {
        if (*s == '[') {
            s++;
            if (!isdigit((unsigned char)*s))
                return false;
            while (isdigit((unsigned char)*s))
                s++;
            if (*s++ != ']')
                return false;
            need_key = false;
        } else if (*s == '.' && !need_key) {
            s++;
            need_key = true;
        } else if (isalnum((unsigned char)*s) || *s == '_' || *s == '-') {
            if (!need_key)
                return false;
            while (isalnum((unsigned char)*s) || *s == '_' || *s == '-')
                s++;
            need_key = false;
        } else {
            return false;
        }
    }
    return !need_key;
}

static int parse_expect(struct parser *p, const char *arg)
{
    if (!p->run)
        return fail(p, "@expect needs a @run before it in the same step");
    bool json = false;
    for (int i = 0; i < p->run->argc; i++)
        json |= strcmp(p->run->argv[i], "--json") == 0;
    if (!json)
        return fail(p, "@expect reads JSON: the @run on line %d needs --json", p->run->line);
    struct lesson_expect *x = push(&p->run->expects, &p->run->nexpects, sizeof *x);
    if (!x)
        return nomem(p);
    x->line = p->line;
    char path[LESSON_LINE_MAX + 1], op[LESSON_LINE_MAX + 1], word[LESSON_LINE_MAX + 1];
    const char *s = arg;
    if (next_word(&s, path, sizeof path) <= 0 || !valid_path(path))
        return fail(p, "expected @expect PATH CHECK with a JSON path such as "
                       "values[0].fp16.value");
    if (!(x->path = str_dup(path)))
        return nomem(p);
    s = skip_space(s);
    if (next_word(&s, op, sizeof op) <= 0)
        return fail(p, "expected a check after the path: = < <= > >= or is");
    if (strcmp(op, "is") == 0) {
        static const struct {
            const char *w;
            enum lesson_check c;
        } is[] = {{"inf", LESSON_IS_INF},
                  {"-inf", LESSON_IS_NEGINF},
                  {"nan", LESSON_IS_NAN},
                  {"finite", LESSON_IS_FINITE}};
        if (next_word(&s, word, sizeof word) <= 0 || *skip_space(s))
            return fail(p, "expected is inf, is -inf, is nan or is finite");
        for (size_t i = 0; i < sizeof is / sizeof is[0]; i++)
            if (strcmp(word, is[i].w) == 0) {
                x->check = is[i].c;
                return 0;
            }
        return fail(p, "expected is inf, is -inf, is nan or is finite, not 'is %s'", word);
    }
    static const struct {
        const char *op;
        enum lesson_check c;
    } ops[] = {
        {"=", LESSON_EQ}, {"<", LESSON_LT}, {"<=", LESSON_LE}, {">", LESSON_GT}, {">=", LESSON_GE}};
    size_t i = 0;
    while (i < sizeof ops / sizeof ops[0] && strcmp(op, ops[i].op))
        i++;
    if (i == sizeof ops / sizeof ops[0])
        return fail(p, "expected a check after the path: = < <= > >= or is, not '%s'", op);
    x->check = ops[i].c;
    s = skip_space(s);
    if (*s == '"' && x->check == LESSON_EQ) {
        size_t len = strlen(s);
        if (len < 2 || s[len - 1] != '"' || memchr(s + 1, '"', len - 2))
            return fail(p, "expected = \"TEXT\" with the text in double quotes");
        x->check = LESSON_STR_EQ;
        x->text = str_dup_n(s + 1, len - 2);
        return x->text ? 0 : nomem(p);
    }
    const struct quantity *qt;
    int k = next_word(&s, word, sizeof word);
    if (k <= 0)
        return fail(p, "expected a number or a quantity after '%s'", op);
    if (parse_number(p, word, &x->number, &qt) < 0)
        return ERR_INVAL;
    x->tol = (struct lesson_tolerance){true, DEFAULT_TOL};
    while ((k = next_word(&s, word, sizeof word)) > 0) {
        if (strncmp(word, "tol=", 4) != 0 || x->check != LESSON_EQ)
            return fail(p, "expected nothing%s after the number, not '%s'",
                        x->check == LESSON_EQ ? " but tol=T" : "", word);
        if (parse_tolerance(p, word + 4, &x->tol) < 0)
            return ERR_INVAL;
    }
    return k < 0 ? fail(p, "a '\"' is not closed") : 0;
}

/* ---- steps */

static bool blank(const char *s)
{
    return *skip_space(s) == '\0';
}

static int close_step(struct parser *p)
{
    struct lesson_step *s = p->step;
    if (!s)
        return 0;
    if (close_question(p) < 0)
        return ERR_INVAL;
    /* Blank lines at either end of the text mean nothing. */
    while (s->ntext && blank(s->text[s->ntext - 1]))
        free(s->text[--s->ntext]);
    size_t lead = 0;
    while (lead < s->ntext && blank(s->text[lead]))
        free(s->text[lead++]);
    if (lead) {
        memmove(s->text, s->text + lead, (s->ntext - lead) * sizeof *s->text);
        s->ntext -= lead;
    }
    if (s->ntext == 0 && s->nruns == 0 && s->nquestions == 0) {
        p->line = s->line;
        return fail(p, "the step '%s' is empty: expected text, @run or @question in it", s->title);
    }
    p->step = NULL;
    return 0;
}

static int parse_step(struct parser *p, const char *arg)
{
    if (p->step) {
        int line = p->line;
        if (close_step(p) < 0)
            return ERR_INVAL;
        p->line = line;
    } else if (check_head(p) < 0) {
        return ERR_INVAL;
    }
    if (p->l->nsteps == LESSON_MAX_STEPS)
        return fail(p, "more than %d steps in one lesson", LESSON_MAX_STEPS);
    struct lesson_step *s = push(&p->l->steps, &p->l->nsteps, sizeof *s);
    if (!s)
        return nomem(p);
    s->line = p->line;
    p->step = s;
    p->run = NULL;
    s->title = str_dup(arg);
    return s->title ? 0 : nomem(p);
}

static int add_text(struct parser *p, const char *line)
{
    if (!p->step) {
        if (blank(line))
            return 0;
        return fail(p, "text before the first @step: expected a directive such as @title, "
                       "or # for a comment");
    }
    if (line[0] == '\\')
        line++;
    char **slot = push(&p->step->text, &p->step->ntext, sizeof *slot);
    if (!slot)
        return nomem(p);
    *slot = str_dup(line);
    return *slot ? 0 : nomem(p);
}

/* ---- one line */

static const char *const directives[] = {"title",  "short",   "duration", "outcome",  "panel",
                                         "step",   "run",     "expect",   "question", "option",
                                         "answer", "explain", "end"};

static int parse_directive(struct parser *p, const char *line)
{
    char name[32];
    size_t n = 0;
    const char *c = line + 1;
    while (isalpha((unsigned char)c[n]) && n < sizeof name - 1)
        name[n] = c[n], n++;
    name[n] = '\0';
    if (c[n] && c[n] != ' ' && c[n] != '\t') {
        n = strcspn(c, " \t");
        return fail(p,
                    "unknown directive '@%.*s'; expected one of @title @short @duration "
                    "@outcome @panel @step @run @expect @question @option @answer @explain "
                    "@end (a line starting with '\\@' is text)",
                    (int)(n > 30 ? 30 : n), c);
    }
    size_t d = 0;
    while (d < sizeof directives / sizeof directives[0] && strcmp(name, directives[d]))
        d++;
    if (d == sizeof directives / sizeof directives[0])
        return fail(p,
                    "unknown directive '@%s'; expected one of @title @short @duration "
                    "@outcome @panel @step @run @expect @question @option @answer @explain "
                    "@end (a line starting with '\\@' is text)",
                    name);
    const char *arg = skip_space(c + n);
    /* "@end": the lesson's last line, so that a file cut short is told from a whole one */
    if (!strcmp(name, "end")) {
        if (*arg)
            return fail(p, "@end takes nothing after it");
        p->end_line = p->line;
        return 0;
    }
    if (!*arg)
        return fail(p, "@%s needs a value", name);
    struct lesson *l = p->l;

    if (!strcmp(name, "title"))
        return head_only(p, name) < 0 ? ERR_INVAL : set_once(p, &l->title, name, arg);
    if (!strcmp(name, "short"))
        return head_only(p, name) < 0 ? ERR_INVAL : set_once(p, &l->short_title, name, arg);
    if (!strcmp(name, "duration"))
        return head_only(p, name) < 0 ? ERR_INVAL : parse_duration(p, arg);
    if (!strcmp(name, "outcome")) {
        if (head_only(p, name) < 0)
            return ERR_INVAL;
        char **slot = push(&l->outcomes, &l->noutcomes, sizeof *slot);
        if (!slot || !(*slot = str_dup(arg)))
            return nomem(p);
        return 0;
    }
    if (!strcmp(name, "step"))
        return parse_step(p, arg);
    if (!strcmp(name, "panel")) {
        struct lesson_panel **slot = p->step ? &p->step->panel : &l->panel;
        if (*slot)
            return fail(p, "a second @panel in this %s (the first is on line %d)",
                        p->step ? "step" : "head", (*slot)->line);
        return parse_panel(p, arg, slot);
    }
    /* The rest belong to a step, and @option/@answer/@explain to a question. */
    if (!p->step)
        return fail(p, "@%s belongs in a step: expected @step TITLE before it", name);
    if (!strcmp(name, "run"))
        return parse_run(p, arg);
    if (!strcmp(name, "expect"))
        return parse_expect(p, arg);
    if (!strcmp(name, "question"))
        return parse_question(p, arg);
    if (!p->q)
        return fail(p, "@%s belongs to a question: expected @question TEXT before it", name);
    if (!strcmp(name, "option"))
        return parse_option(p, arg);
    if (!strcmp(name, "answer"))
        return parse_answer(p, arg);
    return parse_explain(p, arg);
}

/* Checks that a line is UTF-8 text: no NUL or control characters but tab. */
static int check_text(struct parser *p, const char *s, size_t len)
{
    for (size_t i = 0; i < len;) {
        unsigned char c = (unsigned char)s[i];
        if (c < 0x20 && c != '\t')
            return fail(p,
                        "expected UTF-8 text, found the control byte 0x%02x (a binary "
                        "file?)",
                        c);
        if (c == 0x7f)
            return fail(p, "expected UTF-8 text, found the byte 0x7f");
        unsigned cp;
        int k = ascii_utf8_decode(s + i, len - i, &cp);
        if (k == 0)
            return fail(p, "expected UTF-8 text, found the byte 0x%02x (column %zu)", c, i + 1);
        i += (size_t)k;
    }
    return 0;
}

static int parse_line(struct parser *p, char *line, size_t len)
{
    if (len > 0 && line[len - 1] == '\r')
        line[--len] = '\0';
    if (len > LESSON_LINE_MAX)
        return fail(p, "the line is %zu bytes long; at most %d are allowed", len, LESSON_LINE_MAX);
    if (check_text(p, line, len) < 0)
        return ERR_INVAL;
    while (len > 0 && (line[len - 1] == ' ' || line[len - 1] == '\t'))
        line[--len] = '\0';
    if (line[0] == '#' || (p->end_line && len == 0))
        return 0;
    if (p->end_line)
        return fail(p, "nothing but blank lines and comments may follow @end (line %d)",
                    p->end_line);
    if (line[0] == '@')
        return parse_directive(p, line);
    return add_text(p, line);
}

static int lesson_number_of(const char *name)
{
    const char *base = strrchr(name, '/');
    base = base ? base + 1 : name;
    if (!isdigit((unsigned char)base[0]) || !isdigit((unsigned char)base[1]))
        return -1;
    return (base[0] - '0') * 10 + (base[1] - '0');
}

int lesson_parse_string(const char *name, const char *text, size_t len, struct lesson **out,
                        struct error *e)
{
    struct lesson *l = calloc(1, sizeof *l);
    struct parser p = {.file = name, .line = 1, .l = l, .e = e};
    char *buf = NULL;
    int rc;
    *out = NULL;
    if (!l || !(l->file = str_dup(name)))
        goto oom;
    l->number = lesson_number_of(name);
    if (len >= 3 && memcmp(text, "\xef\xbb\xbf", 3) == 0) /* a UTF-8 byte-order mark */
        text += 3, len -= 3;
    size_t i = 0;
    while (i < len && isspace((unsigned char)text[i]))
        i++;
    if (i == len) {
        rc = fail(&p, "the file is empty: expected @title, @duration, @outcome and steps");
        goto fail;
    }
    if (!(buf = malloc(LESSON_LINE_MAX + 2)))
        goto oom;
    for (size_t start = 0; start < len; p.line++) {
        const char *nl = memchr(text + start, '\n', len - start);
        size_t end = nl ? (size_t)(nl - text) : len;
        size_t n = end - start;
        if (n > LESSON_LINE_MAX + 1) { /* +1: a '\r' that parse_line removes */
            rc = fail(&p, "the line is %zu bytes long; at most %d are allowed", n, LESSON_LINE_MAX);
            goto fail;
        }
        memcpy(buf, text + start, n);
        buf[n] = '\0';
        if (memchr(buf, '\0', n)) {
            rc = fail(&p, "expected UTF-8 text, found a NUL byte (a binary file?)");
            goto fail;
        }
        if ((rc = parse_line(&p, buf, n)) < 0)
            goto fail;
        start = end + 1;
    }
    p.line--;
    if (p.step && !p.end_line) {
        rc = fail(&p,
                  "the file ends without @end: cut short? (%zu step%s read; a lesson's last "
                  "line is @end)",
                  l->nsteps, l->nsteps == 1 ? "" : "s");
        goto fail;
    }
    if (p.step) {
        if ((rc = close_step(&p)) < 0)
            goto fail;
    } else {
        if ((rc = check_head(&p)) < 0)
            goto fail;
        rc = fail(&p, "expected at least one @step TITLE");
        goto fail;
    }
    if (!l->short_title && !(l->short_title = str_dup(l->title)))
        goto oom;
    free(buf);
    *out = l;
    return 0;
oom:
    rc = nomem(&p);
fail:
    free(buf);
    lesson_free(l);
    return rc;
}

int lesson_load(const char *path, struct lesson **out, struct error *e)
{
    *out = NULL;
    /* a path that does not exist, is a folder or may not be read is the user's mistake (exit
     * 2); only a failing disk is an I/O error */
    struct stat st;
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode))
        return error_set(e, ERR_INVAL, "%s: a folder, not a lesson file", path);
    FILE *f = fopen(path, "rb");
    if (!f) {
        int err = errno;
        return error_set(e, err == ENOENT || err == EACCES || err == ENOTDIR ? ERR_INVAL : ERR_IO,
                         "%s: cannot read: %s", path, strerror(err));
    }
    /* the size is checked before anything is read; the read below is bounded as well, for a
     * file that grows meanwhile or has no size (a pipe, a device) */
    if (fstat(fileno(f), &st) == 0 && S_ISREG(st.st_mode) && st.st_size > FILE_MAX) {
        fclose(f);
        return error_set(e, ERR_INVAL, "%s: larger than %d bytes: not a lesson", path, FILE_MAX);
    }
    char *text = malloc(FILE_MAX + 1);
    if (!text) {
        fclose(f);
        return error_set(e, ERR_NOMEM, "%s: out of memory", path);
    }
    size_t len = fread(text, 1, FILE_MAX + 1, f);
    int rc;
    if (ferror(f))
        rc = error_set(e, ERR_IO, "%s: cannot read: %s", path, strerror(errno));
    else if (len > FILE_MAX)
        rc = error_set(e, ERR_INVAL, "%s: larger than %d bytes: not a lesson", path, FILE_MAX);
    else
        rc = lesson_parse_string(path, text, len, out, e);
    free(text);
    fclose(f);
    return rc;
}

/* ------------------------------------------------------------------ using a lesson */

const char *lesson_panel_get(const struct lesson_panel *p, const char *key)
{
    for (size_t i = 0; p && i < p->nsettings; i++)
        if (strcmp(p->settings[i].key, key) == 0)
            return p->settings[i].value;
    return NULL;
}

const struct lesson_panel *lesson_step_panel(const struct lesson *l, size_t i)
{
    if (i >= l->nsteps)
        i = l->nsteps ? l->nsteps - 1 : 0;
    for (size_t k = i + 1; k-- > 0 && k < l->nsteps;)
        if (l->steps[k].panel)
            return l->steps[k].panel;
    return l->panel;
}

/* ------------------------------------------------------------------ the lessons folder */

static bool lesson_file_name(const char *name)
{
    size_t n = strlen(name);
    return n > 10 && isdigit((unsigned char)name[0]) && isdigit((unsigned char)name[1]) &&
           name[2] == '-' && strcmp(name + n - 7, ".lesson") == 0;
}

static int by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The lesson file names in DIR/lessons, sorted (so by number). */
static int list_lessons(const char *dir, char *folder, size_t fn, char ***names, size_t *n,
                        struct error *e)
{
    *names = NULL;
    *n = 0;
    if (snprintf(folder, fn, "%s/lessons", dir ? dir : datadir()) >= (int)fn)
        return error_set(e, ERR_INVAL, "%s/lessons: the path is too long", dir);
    DIR *d = opendir(folder);
    if (!d) {
        /* a data folder that is not there (SCALELAB_DATA=/nonexistent) is bad input, exit 2;
         * only a failing disk is an I/O error */
        int err = errno;
        return error_set(e, err == ENOENT || err == ENOTDIR || err == EACCES ? ERR_INVAL : ERR_IO,
                         "%s: cannot open the lessons folder: %s", folder, strerror(err));
    }
    struct dirent *ent;
    int rc = 0;
    while ((ent = readdir(d))) {
        if (!lesson_file_name(ent->d_name))
            continue;
        char **slot = push(names, n, sizeof *slot);
        if (!slot || !(*slot = str_dup(ent->d_name))) {
            if (slot)
                (*n)--;
            rc = error_set(e, ERR_NOMEM, "out of memory");
            break;
        }
    }
    closedir(d);
    if (*n)
        qsort(*names, *n, sizeof **names, by_name);
    return rc;
}

void lesson_free_all(struct lesson **v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        lesson_free(v[i]);
    free(v);
}

int lesson_load_all(const char *dir, struct lesson ***out, size_t *n, struct error *e)
{
    char folder[4096], path[4096 + 256];
    char **names;
    size_t count;
    struct lesson **v = NULL;
    int rc = list_lessons(dir, folder, sizeof folder, &names, &count, e);
    *out = NULL;
    *n = 0;
    if (rc == 0 && count == 0)
        rc = error_set(e, ERR_INVAL, "%s: no NN-name.lesson files", folder);
    if (rc == 0 && !(v = calloc(count, sizeof *v)))
        rc = error_set(e, ERR_NOMEM, "out of memory");
    for (size_t i = 0; rc == 0 && i < count; i++) {
        snprintf(path, sizeof path, "%s/%s", folder, names[i]);
        rc = lesson_load(path, &v[i], e);
        if (rc == 0 && i > 0 && v[i]->number == v[i - 1]->number)
            rc = error_set(e, ERR_INVAL, "%s: two lessons numbered %d (%s and %s)", folder,
                           v[i]->number, names[i - 1], names[i]);
    }
    free_strings(names, count);
    if (rc < 0) {
        lesson_free_all(v, v ? count : 0);
        return rc;
    }
    *out = v;
    *n = count;
    return 0;
}

int lesson_find(const char *dir, const char *which, struct lesson **out, struct error *e)
{
    *out = NULL;
    size_t wl = strlen(which);
    if (strchr(which, '/') ||
        (wl > 7 && !strcmp(which + wl - 7, ".lesson") && access(which, F_OK) == 0))
        return lesson_load(which, out, e);
    char folder[4096], path[4096 + 256];
    char **names;
    size_t count;
    int rc = list_lessons(dir, folder, sizeof folder, &names, &count, e);
    if (rc < 0)
        return rc;
    long long num = -1;
    bool numeric = units_parse_int(which, 0, 99, &num, NULL) == 0;
    const char *hit = NULL;
    for (size_t i = 0; i < count && !hit; i++) {
        /* "06-lab.lesson" answers to 6, "06-lab.lesson", "06-lab" and "lab" */
        const char *dash = strchr(names[i], '-'), *bare = dash ? dash + 1 : names[i];
        if (numeric
                ? lesson_number_of(names[i]) == num
                : strcmp(names[i], which) == 0 ||
                      (strncmp(names[i], which, wl) == 0 && !strcmp(names[i] + wl, ".lesson")) ||
                      (strncmp(bare, which, wl) == 0 && !strcmp(bare + wl, ".lesson")))
            hit = names[i];
    }
    if (hit) {
        snprintf(path, sizeof path, "%s/%s", folder, hit);
        rc = lesson_load(path, out, e);
    } else {
        rc = error_set(e, ERR_INVAL,
                       "no lesson '%s' in %s (give a number, a name such as "
                       "01-mixed-precision or lab, or a path)",
                       which, folder);
    }
    free_strings(names, count);
    return rc;
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
    const char *u = skip_space(answer + n);
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
    const char *a = skip_space(answer ? answer : "");
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
        pick = option_letter(q, buf);
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

/* v as people write it: 4 significant digits ("606.1", "1.75e9"), more only when the
 * tolerance needs them, so that the text read back is still right. */
static void readable(char *buf, size_t n, double v, struct lesson_tolerance tol)
{
    if (!isfinite(v) || (v == floor(v) && fabs(v) < 1e7)) {
        shortest(buf, n, v);
        return;
    }
    for (int prec = 4; prec <= 17; prec++) {
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
    if (!(q->tol.relative && q->tol.amount == DEFAULT_TOL)) {
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
