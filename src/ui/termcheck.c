/* Whether the window can open here (terminals on both ends, a TERM terminfo knows that can
 * move the cursor), decided before curses touches the terminal (ui/termcheck.h). */
#include "config.h"
#include "ui/termcheck.h"

#include <curses.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <term.h>
#include <unistd.h>

#include "base/error.h"

static const char headless[] =
    "; run a command headless instead, e.g. 'scalelab formats 0.1' (see 'scalelab --help')";

int termcheck(struct error *e)
{
    if (!isatty(STDIN_FILENO))
        return error_set(e, ERR_INVAL,
                         "standard input is not a terminal, so the window cannot open%s", headless);
    if (!isatty(STDOUT_FILENO))
        return error_set(e, ERR_INVAL,
                         "standard output is not a terminal, so the window cannot open%s",
                         headless);
    const char *term = getenv("TERM");
    if (!term || !*term)
        return error_set(e, ERR_INVAL, "TERM is not set, so the window cannot open%s", headless);
    if (!strcmp(term, "dumb"))
        return error_set(e, ERR_INVAL,
                         "TERM is 'dumb': the window needs a terminal that can move its cursor%s",
                         headless);
    /* With an error pointer, setupterm reports an unknown terminal instead of exiting. It only
     * reads the terminfo database; newterm starts over later. */
    int err = 0;
    if (setupterm(term, STDOUT_FILENO, &err) != OK)
        return error_set(e, ERR_INVAL, "TERM '%s' is not a terminal this system knows%s", term,
                         headless);
    const char *cup = tigetstr("cup");
    bool moves = cup && cup != (char *)-1 && tigetflag("hc") <= 0;
    del_curterm(cur_term);
    if (!moves)
        return error_set(e, ERR_INVAL,
                         "TERM '%s' cannot move its cursor, so the window cannot open%s", term,
                         headless);
    return 0;
}
