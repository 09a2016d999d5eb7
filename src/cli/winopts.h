/* The window's own options: scalelab [--ascii] [--lesson N [--step S]] [--autoplay SECONDS]. */
#ifndef SCALELAB_CLI_WINOPTS_H
#define SCALELAB_CLI_WINOPTS_H

#include <stdbool.h>

struct error;
struct ui_options;

/* Whether arg is one of the window's options (so that argv holds a window, not a command). */
bool winopts_is_option(const char *arg);

/* Reads argv[0..argc) into o (which it initialises). ERR_INVAL with e saying what was
 * expected: an unknown option, a lesson the lessons folder has not, a step the lesson does not
 * have, --step without --lesson, an autoplay interval that is not 0.5 to 3600 seconds. */
int winopts_parse(int argc, char **argv, struct ui_options *o, struct error *e);

#endif
