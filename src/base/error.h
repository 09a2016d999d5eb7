/* Error values and messages shared by every layer.
 *
 * Library code never prints and never exits: a function that can fail returns 0 or one of the
 * negative codes below, and fills a struct error with one line saying what went wrong
 * ("tiny.ini:3: expected an integer for 'layers'"). The command line turns ERR_INVAL into exit
 * status 2 and every other error into exit status 1. */
#ifndef SCALELAB_BASE_ERROR_H
#define SCALELAB_BASE_ERROR_H

#include <stddef.h>

enum {
    ERR_INVAL = -1, /* bad usage or bad input: exit status 2 */
    ERR_RUN = -2,   /* a run that failed (a device stopped, out of memory, a deadline): 1 */
    ERR_NOMEM = -3, /* the host ran out of memory */
    ERR_IO = -4,    /* a file could not be read or written */
};

#define ERROR_MAX 512

struct error {
    int code;
    char msg[ERROR_MAX];
};

/* Records code and the formatted message in e (which may be NULL); returns code. */
int error_set(struct error *e, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Puts "prefix: " in front of e's message, e.g. a file name or an option. */
void error_prefix(struct error *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The exit status for a code returned by a command: 0, 1 or 2. */
int error_exit_status(int code);

#endif
