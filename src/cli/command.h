/* The subcommands of scalelab. Each lives in its own file (cmd_NAME.c) and exports one
 * struct command; main.c lists them. A command returns the exit status: 0, 1 (a run
 * failed) or 2 (bad usage or input). */
#ifndef SCALELAB_CLI_COMMAND_H
#define SCALELAB_CLI_COMMAND_H

#include <stdbool.h>
#include <stdio.h>

#include "cli/fail.h"

struct error;
struct opts_spec;

struct command {
    const char *name;
    const char *summary;               /* one line, for "scalelab --help" */
    const char *help;                  /* "scalelab help NAME": the usage and what it does */
    int (*run)(int argc, char **argv); /* argv[0] is the command's name */
};

/* The commands, in the order "scalelab --help" lists them; NULL-terminated. */
extern const struct command *const commands[];
/* The option tables of the commands that have one (cli/opts.h); NULL-terminated. */
extern const struct opts_spec *const command_opts[];

const struct command *command_find(const char *name);

/* Prints "scalelab help NAME": c->help, then its option table's lines when it has one. */
void command_help(const struct command *c, FILE *f);

/* This program as it was started (main's argv[0]), to run it again as a child. */
extern const char *cli_argv0;
/* In a child: replaces it with this program run with argv (argv[0] its name), started as the
 * user started it: argv[0] as given (searched in PATH when it has no '/'), so that a program
 * run under valgrind or through the dynamic loader runs again; /proc/self/exe (the wrapper,
 * there) only when that cannot be run. Returns only if neither could be run (errno). */
void cli_exec_self(char **argv);

#endif
