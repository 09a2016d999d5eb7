/* Finding a command by name, and its help. */
#include "config.h"
#include "cli/command.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/fail.h"
#include "cli/opts.h"

const struct command *command_find(const char *name)
{
    for (int i = 0; commands[i]; i++)
        if (strcmp(commands[i]->name, name) == 0)
            return commands[i];
    return NULL;
}

/* The help is put together in memory and written in one call, so that a write error is seen
 * where it happens, with its errno (written piece by piece, a piece past the stream's buffer
 * fails inside stdio and the flush at exit sees only the error flag). */
void command_help(const struct command *c, FILE *f)
{
    char *text = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&text, &len);
    if (!m) {
        fputs(c->help, f);
        return;
    }
    fputs(c->help, m);
    for (int i = 0; command_opts[i]; i++)
        if (!strcmp(command_opts[i]->cmd, c->name)) {
            fputc('\n', m);
            opts_usage(m, command_opts[i]);
        }
    fclose(m);
    errno = 0;
    if (fwrite(text, 1, len, f) != len && !cli_output_errno)
        cli_output_errno = errno ? errno : EIO;
    free(text);
}

const char *cli_argv0;

void cli_exec_self(char **argv)
{
    if (cli_argv0 && *cli_argv0)
        execvp(cli_argv0, argv);
    execv("/proc/self/exe", argv);
}
