/* The terminal's life for the window: curses set up and given back on every way out, and the
 * signals that end the window or resize it, which wake the input loop through a pipe. */
#ifndef SCALELAB_UI_TERM_H
#define SCALELAB_UI_TERM_H

#include <stdbool.h>

struct error;

/* Sets the locale, installs the signal handlers, starts curses on standard input and output
 * and the theme; *ascii: whether to draw in ASCII (asked, or the locale is not UTF-8). From
 * then on any way out (exit() too) restores the terminal. 0, or a negative code with e. */
int term_start(bool ascii_wanted, bool *ascii, struct error *e);

/* Gives the terminal back (normal screen, cursor, modes); does nothing the second time. */
void term_restore(void);

/* The signal that ends the window (SIGINT, SIGTERM, SIGHUP), or 0. */
int term_signal(void);

/* The terminal went away (a hang-up on standard input): end as SIGHUP would. */
void term_hangup(void);

/* The pipe's read end the input loop polls beside standard input: a signal makes it readable
 * whichever thread took it. term_drain empties it after a wake. */
int term_wake_fd(void);
void term_drain(void);

#endif
