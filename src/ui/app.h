/* The window: "scalelab" on a terminal. */
#ifndef SCALELAB_UI_APP_H
#define SCALELAB_UI_APP_H

#include <stdbool.h>

struct error;

struct ui_options {
    bool ascii;        /* ASCII only, even in a UTF-8 locale (--ascii) */
    char lesson[32];   /* the lesson to open, by its name ("" where left: saved progress) */
    int step;          /* its step from 0 (with lesson), or -1: where left */
    double autoplay_s; /* > 0: walk the steps by themselves, one every so many seconds */
};

/* Opens the window and runs it until the user quits or a signal ends it. Returns the exit
 * status: 0 after q, 128 + the signal's number after SIGINT, SIGTERM or SIGHUP (130, 143,
 * 129: the shell's convention for a program a signal stopped), the terminal restored in every
 * case. Before touching the terminal it checks that there is one: standard input and output
 * must be terminals and TERM a known terminal that can move the cursor; otherwise it returns
 * ERR_INVAL with e saying why and how to run headless. Other failures: a negative code. */
int ui_run(const struct ui_options *o, struct error *e);

#endif
