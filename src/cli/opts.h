/* Command-line options, parsed the same way by every command.
 *
 * "--name value", "--name=value" and "-x value"; "--" ends the options. An argument that looks
 * like a negative number ("-1.5", "-inf", "-nan") or is "-" alone is a positional argument, so
 * "scalelab formats -1.5" works. Unknown options get an error that suggests the closest name. */
#ifndef SCALELAB_CLI_OPTS_H
#define SCALELAB_CLI_OPTS_H

#include <stdbool.h>

struct error;

struct opt {
    const char *name; /* long name, without "--" */
    char short_name;  /* 0 if none */
    bool has_arg;
};

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
