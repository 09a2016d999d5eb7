/* Lesson files (lessons/README.md): the parser, from text to a struct lesson with file:line
 * errors, and freeing one (lesson/lesson.h). Reading the files is lesson_files.c's job;
 * checking answers and expectations lesson_check.c's. */
#include "config.h"
#include "lesson/lesson.h"

#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/error.h"
#include "base/units.h"
#include "lesson/ascii.h"
#include "lesson/figure.h"
#include "lesson/quantity.h"
#include "lesson/text.h"

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

static void free_step(struct lesson_step *s)
{
    free(s->title);
    lesson_free_strings(s->text, s->ntext);
    free_panel(s->panel);
    for (size_t i = 0; i < s->nruns; i++) {
        struct lesson_run *r = &s->runs[i];
        free(r->cmdline);
        lesson_free_strings(r->argv, (size_t)r->argc);
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
        lesson_free_strings(q->options, q->noptions);
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
    free(l->name);
    free(l->title);
    free(l->short_title);
    free(l->tab);
    lesson_free_strings(l->outcomes, l->noutcomes);
    free_panel(l->panel);
    for (size_t i = 0; i < l->nsteps; i++)
        free_step(&l->steps[i]);
    free(l->steps);
    free(l);
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

/* A copy of text a learner reads, its figures rendered (lesson/figure.h), or NULL (the error
 * in p->e, naming the line). */
static char *rendered(struct parser *p, const char *text)
{
    char buf[LESSON_LINE_MAX + 1];
    struct error fe = {0};
    if (figure_render(text, buf, sizeof buf, &fe) < 0) {
        fail(p, "%s",
             fe.code == ERR_NOMEM ? "the line is longer than 1000 bytes with its "
                                    "figures rendered"
                                  : fe.msg);
        return NULL;
    }
    char *c = lesson_strdup(buf);
    if (!c)
        nomem(p);
    return c;
}

/* A number: a literal ("65504", "6e-8", "inf") or an expression of quantities ("fp16.max",
 * "synthetic_7b.states/8"); *unit gets its unit ("" for a literal). */
static int parse_number(struct parser *p, const char *s, struct lesson_number *n, const char **unit)
{
    struct error qe = {0};
    *unit = "";
    if (!*s)
        return fail(p, "expected a number or a quantity such as fp16.max");
    if (units_parse_double(s, true, &n->value, NULL) < 0) {
        if (quantity_expr(s, &n->value, NULL, unit, &qe) < 0)
            return islower((unsigned char)*s)
                       ? fail(p, "%s", qe.msg)
                       : fail(p, "expected a number or a quantity such as fp16.max, not '%s' (%s)",
                              s, qe.msg);
        n->is_quantity = true;
    }
    n->expr = lesson_strdup(s);
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
    const char *c = lesson_skip_space(*s);
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
    if (!panel || !(panel->name = lesson_strdup(word))) {
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
        struct lesson_setting *set = lesson_push(&panel->settings, &panel->nsettings, sizeof *set);
        if (!set)
            return nomem(p);
        set->key = lesson_strdup(word);
        set->value = lesson_strdup(eq + 1);
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
    *field = rendered(p, arg);
    return *field ? 0 : p->e->code;
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
    if (!sp || strcmp(lesson_skip_space(sp), "min") != 0 || (size_t)(sp - arg) >= sizeof num)
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
    if (!q->explain && !(q->explain = lesson_strdup("")))
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
    struct lesson_question *q = lesson_push(&p->step->questions, &p->step->nquestions, sizeof *q);
    if (!q)
        return nomem(p);
    q->line = p->line;
    q->correct = -1;
    p->q = q;
    p->run = NULL;
    q->text = rendered(p, arg);
    return q->text ? 0 : p->e->code;
}

static int add_option(struct parser *p, struct lesson_question *q, const char *arg);

static int parse_option(struct parser *p, const char *text)
{
    struct lesson_question *q = p->q;
    char *arg = rendered(p, text);
    if (!arg)
        return p->e->code;
    int rc = add_option(p, q, arg);
    free(arg);
    return rc;
}

static int add_option(struct parser *p, struct lesson_question *q, const char *arg)
{
    if (q->answer.expr || q->correct >= 0)
        return fail(p, "@option after @answer: list the options first");
    if (q->noptions == LESSON_MAX_OPTIONS)
        return fail(p, "more than %d options", LESSON_MAX_OPTIONS);
    for (size_t i = 0; i < q->noptions; i++)
        if (strcasecmp(q->options[i], arg) == 0) /* learners may type an option's text */
            return fail(p, "duplicate option '%s' (it is option %c)", arg, (int)('a' + i));
    char **slot = lesson_push(&q->options, &q->noptions, sizeof *slot);
    if (!slot)
        return nomem(p);
    q->kind = LESSON_Q_CHOICE;
    *slot = lesson_strdup(arg);
    return *slot ? 0 : nomem(p);
}

/* An option letter a, b, ... among q's options; -1 if it is not one. */
static int parse_choice_answer(struct parser *p, const char *arg)
{
    struct lesson_question *q = p->q;
    const char *qm = strchr(arg, '?');
    if (!qm) {
        q->correct = lesson_option_letter(q, arg);
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
    const char *rest = lesson_skip_space(qm + 1), *colon = strchr(rest, ':');
    size_t ylen = colon ? (size_t)(colon - rest) : 0;
    while (ylen && rest[ylen - 1] == ' ')
        ylen--;
    const char *nstart = colon ? lesson_skip_space(colon + 1) : "";
    if (!colon || ylen == 0 || ylen >= sizeof yes || strlen(nstart) >= sizeof no || !*nstart)
        return fail(p, "expected @answer QUANTITY ? LETTER : LETTER, e.g. "
                       "@answer fp16.overflows(65520) ? b : a");
    memcpy(yes, rest, ylen);
    yes[ylen] = '\0';
    strcpy(no, nstart);
    int iy = lesson_option_letter(q, yes), in = lesson_option_letter(q, no);
    if (iy < 0 || in < 0)
        return fail(p, "expected option letters from a to %c after '?' and ':'",
                    (int)('a' + q->noptions - 1));
    double v;
    const char *unit;
    struct error qe = {0};
    if (quantity_expr(cond, &v, NULL, &unit, &qe) < 0)
        return fail(p, "%s", qe.msg);
    if (strcmp(unit, "bool") != 0)
        return fail(p,
                    "%s is not a yes/no quantity; a choice needs one (such as "
                    "fp16.overflows(X))",
                    cond);
    q->correct = v != 0 ? iy : in;
    q->condition = lesson_strdup(cond);
    return q->condition ? 0 : nomem(p);
}

static int parse_number_answer(struct parser *p, const char *arg)
{
    struct lesson_question *q = p->q;
    char word[LESSON_LINE_MAX + 1];
    const char *s = arg;
    const char *qunit, *unit = NULL;
    int k = next_word(&s, word, sizeof word);
    if (k <= 0)
        return fail(p, "@answer needs a value: a number, a quantity such as fp16.max, or "
                       "an option letter");
    if (parse_number(p, word, &q->answer, &qunit) < 0)
        return ERR_INVAL;
    q->tol = (struct lesson_tolerance){true, LESSON_DEFAULT_TOL};
    while ((k = next_word(&s, word, sizeof word)) > 0) {
        if (strncmp(word, "tol=", 4) == 0) {
            if (parse_tolerance(p, word + 4, &q->tol) < 0)
                return ERR_INVAL;
        } else if (strncmp(word, "unit=", 5) == 0) {
            if (q->unit)
                return fail(p, "unit= is given twice for this answer");
            unit = word + 5;
            if (!(q->unit = lesson_strdup(unit)))
                return nomem(p);
        } else {
            return fail(p, "expected tol=T or unit=U after the answer, not '%s'", word);
        }
    }
    if (k < 0)
        return fail(p, "a '\"' is not closed");
    if (strcmp(qunit, "bool") == 0)
        return fail(p,
                    "%s is a yes/no quantity: ask it as a choice "
                    "(@option lines, then @answer %s ? a : b)",
                    q->answer.expr, q->answer.expr);
    if (!q->unit && !(q->unit = lesson_strdup(qunit)))
        return nomem(p);
    if (*qunit && strcmp(qunit, q->unit) != 0) {
        /* The quantity is in its own unit; convert it to the one the learner answers in. */
        const char *kq = NULL, *ku = NULL;
        double fq = lesson_unit_factor(qunit, &kq), fu = lesson_unit_factor(q->unit, &ku);
        if (!fq || !fu || strcmp(kq, ku) != 0)
            return fail(p, "%s is in '%s', which cannot be converted to unit=%s", q->answer.expr,
                        qunit, q->unit);
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

static int parse_explain(struct parser *p, const char *text)
{
    struct lesson_question *q = p->q;
    char *arg = rendered(p, text);
    if (!arg)
        return p->e->code;
    size_t old = q->explain ? strlen(q->explain) : 0, add = strlen(arg);
    char *s = realloc(q->explain, old + add + 2);
    if (!s) {
        free(arg);
        return nomem(p);
    }
    if (old)
        s[old++] = '\n';
    memcpy(s + old, arg, add + 1);
    free(arg);
    q->explain = s;
    return 0;
}

/* ---- runs and expectations */

static int parse_run(struct parser *p, const char *arg)
{
    if (close_question(p) < 0)
        return ERR_INVAL;
    struct lesson_run *r = lesson_push(&p->step->runs, &p->step->nruns, sizeof *r);
    if (!r)
        return nomem(p);
    r->line = p->line;
    p->run = r;
    if (!(r->cmdline = lesson_strdup(arg)) || !(r->argv = calloc(1, sizeof *r->argv)))
        return nomem(p);
    char word[LESSON_LINE_MAX + 1];
    const char *s = arg;
    int k;
    size_t n = 0;
    while ((k = next_word(&s, word, sizeof word)) > 0) {
        /* argv keeps a NULL after the last argument */
        char **slot = lesson_push(&r->argv, &n, sizeof *slot);
        if (!slot || !(*slot = lesson_strdup(word)))
            return nomem(p);
        r->argc = (int)n;
        char **end = lesson_push(&r->argv, &n, sizeof *end);
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
    struct lesson_expect *x = lesson_push(&p->run->expects, &p->run->nexpects, sizeof *x);
    if (!x)
        return nomem(p);
    x->line = p->line;
    char path[LESSON_LINE_MAX + 1], op[LESSON_LINE_MAX + 1], word[LESSON_LINE_MAX + 1];
    const char *s = arg;
    if (next_word(&s, path, sizeof path) <= 0 || !valid_path(path))
        return fail(p, "expected @expect PATH CHECK with a JSON path such as "
                       "values[0].fp16.value");
    if (!(x->path = lesson_strdup(path)))
        return nomem(p);
    s = lesson_skip_space(s);
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
        if (next_word(&s, word, sizeof word) <= 0 || *lesson_skip_space(s))
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
    s = lesson_skip_space(s);
    if (*s == '"' && x->check == LESSON_EQ) {
        size_t len = strlen(s);
        if (len < 2 || s[len - 1] != '"' || memchr(s + 1, '"', len - 2))
            return fail(p, "expected = \"TEXT\" with the text in double quotes");
        x->check = LESSON_STR_EQ;
        x->text = lesson_strndup(s + 1, len - 2);
        return x->text ? 0 : nomem(p);
    }
    const char *qunit;
    int k = next_word(&s, word, sizeof word);
    if (k <= 0)
        return fail(p, "expected a number or a quantity after '%s'", op);
    if (parse_number(p, word, &x->number, &qunit) < 0)
        return ERR_INVAL;
    x->tol = (struct lesson_tolerance){true, LESSON_DEFAULT_TOL};
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
    return *lesson_skip_space(s) == '\0';
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
    struct lesson_step *s = lesson_push(&p->l->steps, &p->l->nsteps, sizeof *s);
    if (!s)
        return nomem(p);
    s->line = p->line;
    p->step = s;
    p->run = NULL;
    s->title = rendered(p, arg);
    return s->title ? 0 : p->e->code;
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
    char **slot = lesson_push(&p->step->text, &p->step->ntext, sizeof *slot);
    if (!slot)
        return nomem(p);
    *slot = rendered(p, line);
    return *slot ? 0 : p->e->code;
}

/* ---- one line */

static const char *const directives[] = {"title",  "short",  "tab",     "duration", "outcome",
                                         "panel",  "step",   "run",     "expect",   "question",
                                         "option", "answer", "explain", "end"};

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
                    "unknown directive '@%.*s'; expected one of @title @short @tab @duration "
                    "@outcome @panel @step @run @expect @question @option @answer @explain "
                    "@end (a line starting with '\\@' is text)",
                    (int)(n > 30 ? 30 : n), c);
    }
    size_t d = 0;
    while (d < sizeof directives / sizeof directives[0] && strcmp(name, directives[d]))
        d++;
    if (d == sizeof directives / sizeof directives[0])
        return fail(p,
                    "unknown directive '@%s'; expected one of @title @short @tab @duration "
                    "@outcome @panel @step @run @expect @question @option @answer @explain "
                    "@end (a line starting with '\\@' is text)",
                    name);
    const char *arg = lesson_skip_space(c + n);
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
    if (!strcmp(name, "tab"))
        return head_only(p, name) < 0 ? ERR_INVAL : set_once(p, &l->tab, name, arg);
    if (!strcmp(name, "duration"))
        return head_only(p, name) < 0 ? ERR_INVAL : parse_duration(p, arg);
    if (!strcmp(name, "outcome")) {
        if (head_only(p, name) < 0)
            return ERR_INVAL;
        char **slot = lesson_push(&l->outcomes, &l->noutcomes, sizeof *slot);
        if (!slot)
            return nomem(p);
        *slot = rendered(p, arg);
        return *slot ? 0 : p->e->code;
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

int lesson_parse_string(const char *name, const char *text, size_t len, struct lesson **out,
                        struct error *e)
{
    struct lesson *l = calloc(1, sizeof *l);
    struct parser p = {.file = name, .line = 1, .l = l, .e = e};
    char *buf = NULL;
    int rc;
    *out = NULL;
    if (!l || !(l->file = lesson_strdup(name)))
        goto oom;
    l->number = lesson_number_of(name);
    if (!(l->name = lesson_name_of(name)))
        goto oom;
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
    if (!l->short_title && !(l->short_title = lesson_strdup(l->title)))
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
