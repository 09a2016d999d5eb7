/* Where the lessons and presets are read from.
 *
 * In order: $SCALELAB_DATA if set; the source tree when the program runs from its build tree
 * (not from the installed bindir); otherwise the installed $(pkgdatadir). */
#ifndef SCALELAB_BASE_DATADIR_H
#define SCALELAB_BASE_DATADIR_H

#include <stddef.h>

/* The data folder, without a trailing slash; found once per process, from any thread. */
const char *datadir(void);

/* datadir() + "/" + rel, in buf; returns buf, or NULL if it does not fit. */
char *datadir_path(char *buf, size_t n, const char *rel);

struct error;
/* Whether the data folder holds the lessons and the model presets: 0, or ERR_INVAL naming the
 * folder, where it came from (SCALELAB_DATA) and what is missing. For what needs the whole
 * folder at once (the window), before it asks for any one file. */
int datadir_check(struct error *e);

#endif
