/* Lesson files: the parser, answer checking, and the lessons shipped in datadir()/lessons.
 *
 * The format is documented in lessons/README.md. A struct lesson is plain data that owns all
 * its strings and arrays; lesson_free releases it. Bad input gives ERR_INVAL and a message
 * "FILE:LINE: what was expected", never a crash. */
#ifndef SCALELAB_LESSON_LESSON_H
#define SCALELAB_LESSON_LESSON_H

#include <stdbool.h>
#include <stddef.h>

struct error;

#define LESSON_LINE_MAX      1000 /* bytes in a line, without its line end */
#define LESSON_MAX_STEPS     64
#define LESSON_MAX_QUESTIONS 32 /* per step */
#define LESSON_MAX_OPTIONS   26 /* per question: a to z */

struct lesson_setting {
    char *key, *value;
};

struct lesson_panel {
    char *name; /* "formats" */
    struct lesson_setting *settings;
    size_t nsettings;
    int line;
};

/* A number written in the file: a literal, or a quantity computed when the file was read. */
struct lesson_number {
    char *expr;       /* as written: "65504", "fp16.max", "bf16.round(0.1)" */
    double value;     /* its value (in unit, when there is one) */
    bool is_quantity; /* expr names a quantity (quantity.h) */
};

/* How close a number must be: |x - want| <= amount (absolute) or <= amount * |want| (relative). */
struct lesson_tolerance {
    bool relative;
    double amount;
};

enum lesson_check {
    LESSON_EQ,        /* number within tolerance */
    LESSON_LT,        /* < number */
    LESSON_LE,        /* <= */
    LESSON_GT,        /* > */
    LESSON_GE,        /* >= */
    LESSON_STR_EQ,    /* = "text" */
    LESSON_IS_INF,    /* is inf */
    LESSON_IS_NEGINF, /* is -inf */
    LESSON_IS_NAN,    /* is nan */
    LESSON_IS_FINITE, /* is finite */
};

struct lesson_expect {
    char *path; /* "values[0].fp16.value" */
    enum lesson_check check;
    struct lesson_number number; /* for LESSON_EQ .. LESSON_GE */
    struct lesson_tolerance tol; /* for LESSON_EQ */
    char *text;                  /* for LESSON_STR_EQ */
    int line;
};

struct lesson_run {
    char *cmdline; /* as written after @run */
    char **argv;   /* split: argv[0] is the command ("formats"); argv[argc] is NULL */
    int argc;
    struct lesson_expect *expects;
    size_t nexpects;
    int line;
};

enum lesson_qkind { LESSON_Q_NUMBER, LESSON_Q_CHOICE };

struct lesson_question {
    enum lesson_qkind kind;
    char *text;
    /* a number question */
    struct lesson_number answer;
    struct lesson_tolerance tol;
    char *unit; /* "" when none */
    /* a choice question */
    char **options;
    size_t noptions;
    int correct;     /* index of the right option, from 0 */
    char *condition; /* the yes/no quantity that chose it ("fp16.overflows(65520)"), or NULL */
    char *explain;   /* lines joined with '\n'; "" when none */
    int line;
};

struct lesson_step {
    char *title;
    char **text; /* the text lines, as written (blank lines are "") */
    size_t ntext;
    struct lesson_panel *panel; /* NULL: keep the panel of the step before */
    struct lesson_run *runs;
    size_t nruns;
    struct lesson_question *questions;
    size_t nquestions;
    int line;
};

struct lesson {
    char *file;  /* the name used in messages: the path given, or the name given to parse_string */
    int number;  /* NN of NN-name.lesson; -1 when the name does not start with digits */
    char *name;  /* "mixed-precision" of 01-mixed-precision.lesson: what progress is saved
                    under, and what "lab" calls the Lab (lesson_is_lab) */
    char *title; /* @title */
    char *short_title; /* @short, or the title */
    char *tab;         /* @tab: the tab's narrower labels ("Precision Prec"), or NULL */
    int minutes;       /* @duration; 0 for "open" */
    char **outcomes;
    size_t noutcomes;
    struct lesson_panel *panel; /* the head's @panel, or NULL */
    struct lesson_step *steps;
    size_t nsteps;
};

/* Reads a lesson file. On success *out is a new lesson to release with lesson_free. */
int lesson_load(const char *path, struct lesson **out, struct error *e);

/* Parses a lesson held in memory (len bytes; NULs inside are errors); name is used in messages
 * and for the number ("01-x.lesson" -> 1). */
int lesson_parse_string(const char *name, const char *text, size_t len, struct lesson **out,
                        struct error *e);

void lesson_free(struct lesson *l);

/* The panel in force at step i: the last @panel at or before it, else the head's; NULL if none. */
const struct lesson_panel *lesson_step_panel(const struct lesson *l, size_t i);

/* A panel setting's value, or NULL. */
const char *lesson_panel_get(const struct lesson_panel *p, const char *key);

/* Every lessons/NN-name.lesson under dir (datadir() when dir is NULL), sorted by number.
 * *out is a new array of *n lessons; release it with lesson_free_all. A file that does not
 * parse (or repeats an earlier file's number) is left out and the others are read: the return
 * is then how many were left out, with e naming the first ("FILE:LINE: why") and counting the
 * others. Negative (e filled, nothing in *out) when the folder cannot be read or holds no
 * lesson file. */
int lesson_load_all(const char *dir, struct lesson ***out, size_t *n, struct error *e);
void lesson_free_all(struct lesson **v, size_t n);

/* The paths of every lessons/NN-name.lesson under dir (datadir() when NULL), sorted by number:
 * a new array of *n strings (lesson_free_strings frees it). 0, or ERR_INVAL when there is no
 * such folder or no lesson in it. The window makes a tab of each. */
int lesson_paths(const char *dir, char ***paths, size_t *n, struct error *e);
void lesson_free_strings(char **v, size_t n);
/* A lesson file's number (NN of NN-name.lesson, -1 when its name does not start with digits)
 * and name ("name": progress is saved under it; a new string, NULL when out of memory). */
int lesson_number_of(const char *path);
char *lesson_name_of(const char *path);

/* The Lab: the lesson named "lab" (lessons/90-lab.lesson), the window's last tab, on key L. */
#define LESSON_LAB "lab"

/* The lesson that "scalelab run LESSON" names: a number ("1", "01"), a file name in the lessons
 * folder ("01-mixed-precision", with or without .lesson), or a path to a file. */
int lesson_find(const char *dir, const char *which, struct lesson **out, struct error *e);

/* ---- expectations ---- */

struct json_t;

/* Whether an @expect holds for a run's JSON output; why (n bytes) says what was found, e.g.
 * "values[0].fp16.value is 65504, expected inf". A missing path does not hold. */
bool lesson_expect_holds(const struct lesson_expect *x, const struct json_t *doc, char *why,
                         size_t n);

/* ---- answers ---- */

struct lesson_result {
    bool correct;
    double value; /* a number answer, in the question's unit */
    int choice;   /* a choice answer, from 0 */
};

/* Reads a learner's answer and checks it: returns 0 with r filled, or ERR_INVAL (neither right
 * nor wrong) with e saying what was expected. Pure: the window and the runner share it. */
int lesson_check_answer(const struct lesson_question *q, const char *answer,
                        struct lesson_result *r, struct error *e);

/* The right answer as text: "65504", "108.63 GiB (within 0.5%)", "b) inf". */
char *lesson_format_answer(const struct lesson_question *q, char *buf, size_t n);

/* Whether x is within tol of want (exact for infinities; NaN matches NaN). */
bool lesson_within(double x, double want, struct lesson_tolerance tol);

/* The factor of a unit to the base of its kind ("GiB" -> 2^30, "ms" -> 1e-3) and its kind
 * ("bytes", "seconds", ...); 0 when unknown. */
double lesson_unit_factor(const char *unit, const char **kind);

#endif
