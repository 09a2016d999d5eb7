/* Whether the window can open here, decided before the terminal is touched. */
#ifndef SCALELAB_UI_TERMCHECK_H
#define SCALELAB_UI_TERMCHECK_H

struct error;

/* 0 when standard input and output are terminals and TERM names a terminal that terminfo
 * knows and that can move its cursor; otherwise ERR_INVAL, with e saying which of these
 * failed and how to run headless instead. Writes nothing to the terminal. */
int termcheck(struct error *e);

#endif
