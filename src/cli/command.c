/* Finding a command by name, and its help. */
#include "config.h"
#include "cli/command.h"

#include <stdio.h>
#include <string.h>

#include "cli/opts.h"

const struct command *command_find(const char *name)
{
    for (int i = 0; commands[i]; i++)
        if (strcmp(commands[i]->name, name) == 0)
            return commands[i];
    return NULL;
}

void command_help(const struct command *c, FILE *f)
{
    fputs(c->help, f);
    for (int i = 0; command_opts[i]; i++)
        if (!strcmp(command_opts[i]->cmd, c->name)) {
            fputc('\n', f);
            opts_usage(f, command_opts[i]);
        }
}
