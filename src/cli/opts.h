/* Command-line options, parsed the same way by every command.
 *
 * "--name value", "--name=value" and "-x value"; "--" ends the options. An argument that looks
 * like a negative number ("-1.5", "-inf", "-nan") or is "-" alone is a positional argument, so
 * "scalelab formats -1.5" works. Unknown options get an error that suggests the closest name.
 *
 * A command declares its options as one table, an entry per option: its name, its value's
 * name, the parser that reads the value into a field of the command's own struct, and its
 * help line. opts_parse reads the command line with that table (refusing an option given
 * twice and options that exclude each other), and command_help prints the table as the
 * options part of "scalelab help CMD". DESIGN.md ("Options are a table") shows how to add
 * one. */
#ifndef SCALELAB_CLI_OPTS_H
#define SCALELAB_CLI_OPTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

struct error;

/* An option as opts_next reads it. */
struct opt {
    const char *name; /* long name, without "--" */
    char short_name;  /* 0 if none */
    bool has_arg;
};

struct opt_entry;

/* Reads arg (NULL for a flag) into field, the option's place in the command's struct; 0, or
 * a negative code with e saying what is allowed, naming the option ("--width: ..."). */
typedef int (*opt_parser)(const struct opt_entry *o, const char *arg, void *field, struct error *e);

enum {
    OPT_REPEAT = 1 << 0, /* may be given more than once: each value goes to the parser */
};

/* An option as opts_parse reads it: a line of a command's table. */
struct opt_entry {
    struct opt opt;
    const char *arg;    /* the value's name in the help ("P"); NULL for a flag */
    opt_parser parse;   /* reads the value into field */
    size_t field;       /* offsetof(the command's struct, the field parse writes) */
    const char *help;   /* what it does, what is allowed, the default; "\n" starts a line */
    long long min, max; /* the range, for opts_int */
    unsigned flags;     /* OPT_* */
};

/* The lines of a table, for a command whose values live in a struct T. */
#define OPT_FLAG(NAME, T, FIELD, HELP)                                                             \
    {                                                                                              \
        .opt = {.name = NAME}, .parse = opts_flag, .field = offsetof(T, FIELD), .help = HELP       \
    }
#define OPT_INT(NAME, ARG, T, FIELD, MIN, MAX, HELP)                                               \
    {                                                                                              \
        .opt = {.name = NAME, .has_arg = true}, .arg = ARG, .parse = opts_int,                     \
        .field = offsetof(T, FIELD), .help = HELP, .min = MIN, .max = MAX                          \
    }
#define OPT_WITH(NAME, ARG, PARSE, T, FIELD, HELP)                                                 \
    {                                                                                              \
        .opt = {.name = NAME, .has_arg = true}, .arg = ARG, .parse = PARSE,                        \
        .field = offsetof(T, FIELD), .help = HELP                                                  \
    }
/* The one positional argument a command takes (spec.positional): NAME for messages ("one
 * lesson at a time"), ARG for the help. */
#define OPT_ONE(NAME, ARG, T, FIELD, HELP)                                                         \
    {                                                                                              \
        .opt = {.name = NAME}, .arg = ARG, .parse = opts_one, .field = offsetof(T, FIELD),         \
        .help = HELP                                                                               \
    }
#define OPT_END                                                                                    \
    {                                                                                              \
        .opt = {.name = NULL }                                                                     \
    }

/* A command's options, for opts_parse and its help (at most OPTS_MAX in a table). */
#define OPTS_MAX 64
struct opts_spec {
    const char *cmd;               /* the command, for messages */
    const struct opt_entry *table; /* its options, ending with OPT_END */
    /* Its positional arguments: opt.name (for messages: "lesson"), arg ("LESSON", for the
     * help), parse, field and help as an option's; parse sees each one. NULL: none taken. */
    const struct opt_entry *positional;
    /* Pairs of option names that exclude each other: {"list", "quantities", NULL}. */
    const char *const *conflicts;
};

/* The parsers of the table entries: opts_flag sets a bool; opts_int reads a whole number in
 * [o->min, o->max] into an int; opts_str keeps the argument (a const char *); opts_one keeps
 * the one positional argument a command takes and refuses a second ("one lesson at a time"). */
int opts_flag(const struct opt_entry *o, const char *arg, void *field, struct error *e);
int opts_int(const struct opt_entry *o, const char *arg, void *field, struct error *e);
int opts_str(const struct opt_entry *o, const char *arg, void *field, struct error *e);
int opts_one(const struct opt_entry *o, const char *arg, void *field, struct error *e);
/* opts_transport: thread or mpi, into a bool (true: mpi); opts_seconds: a time above 0, at
 * most an hour, into a double (a deadline). */
int opts_transport(const struct opt_entry *o, const char *arg, void *field, struct error *e);
int opts_seconds(const struct opt_entry *o, const char *arg, void *field, struct error *e);

/* Reads argv (argv[0] is the command) into values, the command's struct holding its
 * defaults. An unknown option, one given twice (unless OPT_REPEAT), two that exclude each
 * other, a positional argument where none is taken or a bad value: the error on stderr
 * ("scalelab: CMD: ...; see 'scalelab help CMD'"), and the exit status returned (2 for bad
 * usage). 0 when all was read. */
int opts_parse(const struct opts_spec *s, int argc, char **argv, void *values);

/* An engine's error in the command's words: each word of e's message that names one of the
 * command's options and is followed by a value ("tp 3 does not divide ...") gets its "--"
 * ("--tp 3 does not divide ..."); engines (calc/, par/) name their fields, only cli/ writes
 * option names. Then cli_fail: the message on stderr, the exit status returned. */
int opts_fail(const struct opts_spec *s, struct error *e);
void opts_flag_words(const struct opts_spec *s, struct error *e);

/* The options part of the help: a line per option ("  --stages P   pipeline stages..."),
 * the help aligned in one column, after the positional argument's line. */
void opts_usage(FILE *f, const struct opts_spec *s);

enum { OPTS_END = -1, OPTS_POSITIONAL = -2, OPTS_ERROR = -3 };

struct opts {
    int argc, i;
    char **argv;
    const struct opt *table;       /* ends with a {NULL} entry */
    const char *cmd;               /* the command, for messages */
    bool positional_only;          /* after "--" */
    bool once;                     /* an option given twice is an error... */
    const char *const *repeatable; /* ...unless named here (NULL-terminated; NULL: none) */
    unsigned long long seen;       /* with once: a bit per table entry (the first 64) */
    size_t stride;                 /* bytes from one table entry to the next */
};

/* argv[0] is the command name; parsing starts at argv[1]. Set p->once after this to refuse an
 * option given twice ("--gpus 8 --gpus 4" is a mistake, not a choice; last-wins would hide it),
 * and p->repeatable to the options that add up ("--inject" in train). */
void opts_init(struct opts *p, int argc, char **argv, const struct opt *table, const char *cmd);

/* The next option's index in the table, with *arg its value (or NULL); OPTS_POSITIONAL with
 * *arg the argument; OPTS_END; or OPTS_ERROR after printing the error to stderr. */
int opts_next(struct opts *p, const char **arg);

/* --fail's value, GPU@STEP: a GPU in [0, max_gpu] and a step in [min_step, max_step]; 0, or
 * ERR_INVAL with e naming --fail and what was expected. */
int opts_gpu_at(const char *s, int max_gpu, long long min_step, long long max_step, int *gpu,
                long long *step, struct error *e);

/* The edit distance between two short strings (for "did you mean"). */
int opts_distance(const char *a, const char *b);

#endif
