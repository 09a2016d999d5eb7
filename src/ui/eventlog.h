/* The latest events, shown at the bottom of the window: a ring of short lines, each stamped
 * with the wall-clock time it was added. Pure: the app draws it. */
#ifndef SCALELAB_UI_EVENTLOG_H
#define SCALELAB_UI_EVENTLOG_H

#define EVENTLOG_LINES 32
#define EVENTLOG_WIDTH 160

struct eventlog {
    char line[EVENTLOG_LINES][EVENTLOG_WIDTH];
    unsigned long count; /* lines ever added */
};

/* Adds a line ("HH:MM:SS text"); longer lines are cut. */
void eventlog_add(struct eventlog *l, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The same, unless the newest line says exactly that already (after its stamp): a refusal
 * repeated at every key press is said once, and stays on the status line. */
void eventlog_add_once(struct eventlog *l, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* The i-th latest line (0 is the newest), or NULL. */
const char *eventlog_get(const struct eventlog *l, unsigned long i);

#endif
