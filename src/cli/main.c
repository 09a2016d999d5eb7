/* scalelab: a terminal lab for training at scale.
 *
 * "scalelab" alone opens the window on a terminal; "scalelab COMMAND ..." runs one command
 * headless. See DESIGN.md for the map of the code. */
#include "config.h"

#include <cblas.h>
#include <errno.h>
#include <malloc.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "base/error.h"
#include "cli/command.h"
#include "comm/mpi.h"
#include "cli/opts.h"
#include "cli/winopts.h"
#include "ui/app.h"

static void print_usage(FILE *f)
{
    fprintf(f, "usage: scalelab [--ascii] [--lesson N [--step S]] [--autoplay SECONDS]\n"
               "                                   open the lab in this terminal\n"
               "       scalelab COMMAND [OPTIONS]  run one command headless\n"
               "       scalelab help COMMAND       help on a command\n"
               "\ncommands:\n");
    for (int i = 0; commands[i]; i++)
        fprintf(f, "  %-12s %s\n", commands[i]->name, commands[i]->summary);
    fprintf(f, "\noptions:\n"
               "  --ascii      draw the window with ASCII characters only\n"
               "  --lesson N   open on lesson N (a number or name, or L for the Lab: 'scalelab\n"
               "               run --list'); --step S on its step S\n"
               "  --autoplay SECONDS\n"
               "               walk the steps by themselves, one every SECONDS, each step's\n"
               "               panel playing; any key pauses, A resumes, G N Enter jumps\n"
               "  --help       this text\n"
               "  --version    the version\n");
}

static const char *closest_command(const char *name)
{
    const char *best = NULL;
    int best_d = 3;
    for (int i = 0; commands[i]; i++) {
        int d = opts_distance(name, commands[i]->name);
        if (d < best_d)
            best_d = d, best = commands[i]->name;
    }
    return best;
}

static int unknown_command(const char *name)
{
    const char *near = closest_command(name);
    fprintf(stderr, "scalelab: unknown command '%s'", name);
    if (near)
        fprintf(stderr, " (did you mean '%s'?)", near);
    fprintf(stderr, "; see 'scalelab --help'\n");
    return 2;
}

static int help(int argc, char **argv)
{
    if (argc < 2) {
        print_usage(stdout);
        return 0;
    }
    if (argc > 2) {
        fprintf(stderr, "scalelab: help takes one command name\n");
        return 2;
    }
    if (!strcmp(argv[1], "help")) { /* "scalelab help help": the overview */
        print_usage(stdout);
        return 0;
    }
    const struct command *c = command_find(argv[1]);
    if (!c)
        return unknown_command(argv[1]);
    command_help(c, stdout);
    return 0;
}

/* "scalelab [--ascii] [--lesson N [--step S]] [--autoplay SECONDS]": the window, or a message
 * saying how to run headless. */
static int window(int argc, char **argv)
{
    struct ui_options o;
    struct error e = {0};
    int rc = winopts_parse(argc, argv, &o, &e);
    if (rc == 0)
        rc = ui_run(&o, &e);
    return rc < 0 ? cli_fail(&e) : rc;
}

/* Every headless command ends here: what it printed must have reached standard output. A full
 * disk (or any other write error) is an error of the run, exit 1, reported with its real errno;
 * a reader that went away (a broken pipe: "scalelab formats - | head -1") ends it quietly. */
static int finish_output(int rc)
{
    errno = 0;
    bool failed = fflush(stdout) != 0;
    int err = errno;
    failed |= ferror(stdout) != 0;
    /* fclose also reports an error that only closing the descriptor shows (NFS, ...) */
    if (fclose(stdout) != 0 && !failed)
        failed = true, err = errno;
    if (!failed)
        return rc;
    if (err == EPIPE || cli_output_errno == EPIPE)
        return rc ? rc : 1;
    if (err == 0)
        err = cli_output_errno ? cli_output_errno : EIO;
    fprintf(stderr, "scalelab: write error: %s\n", strerror(err));
    return rc ? rc : 1;
}

static int run_command(int argc, char **argv)
{
    if (argc < 2)
        return window(0, argv + 1);
    const char *first = argv[1];
    if (winopts_is_option(first))
        return window(argc - 1, argv + 1);
    if ((!strcmp(first, "--help") || !strcmp(first, "-h") || !strcmp(first, "--version") ||
         !strcmp(first, "-V")) &&
        argc > 2) {
        fprintf(stderr, "scalelab: %s takes nothing after it; see 'scalelab --help'\n", first);
        return 2;
    }
    if (!strcmp(first, "--help") || !strcmp(first, "-h"))
        return help(1, argv);
    if (!strcmp(first, "--version") || !strcmp(first, "-V")) {
        printf("scalelab %s\n%s\n", PACKAGE_VERSION, mpi_about());
        return 0;
    }
    if (!strcmp(first, "help"))
        return help(argc - 1, argv + 1);
    if (first[0] == '-') {
        fprintf(stderr, "scalelab: unknown option '%s'; see 'scalelab --help'\n", first);
        return 2;
    }
    const struct command *c = command_find(first);
    if (!c)
        return unknown_command(first);
    /* "scalelab CMD --help" is the same as "scalelab help CMD". */
    for (int i = 2; i < argc && strcmp(argv[i], "--"); i++)
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            command_help(c, stdout);
            return 0;
        }
    return c->run(argc - 1, argv + 1);
}

int main(int argc, char **argv)
{
    /* The simulated devices are the parallelism: each runs OpenBLAS on its own thread. */
    openblas_set_num_threads(1);
    /* One malloc arena for every thread: glibc gives each thread that allocates an arena of
     * its own, reserving 64 MiB of address space apiece (a 4-GPU run took 320 MiB more than
     * it allocated), which a run's check of what it needs (par/run.h) cannot count. The
     * device threads allocate while they set up only, so they hardly ever wait for it. */
    mallopt(M_ARENA_MAX, 1);
    cli_argv0 = argv[0];
    if (argc < 2 || !strcmp(argv[1], "--ascii"))
        return run_command(argc, argv); /* the window: its output is the terminal's */
    return finish_output(run_command(argc, argv));
}
