/* A panel's work on a thread of its own, so that the window's frame loop never waits for it
 * (ui/panel.h: PANEL_POLL): started by a key, asked whether it is done at each poll, its
 * results taken once it is. Lesson 3's panel runs its collective so (panel_collective.c).
 *
 * fn(arg) runs once on the job's thread; arg belongs to the caller, who must not touch it
 * until bgjob_done has said true (the job's writes are then visible to the caller). */
#ifndef SCALELAB_UI_BGJOB_H
#define SCALELAB_UI_BGJOB_H

#include <stdbool.h>

struct bgjob;
struct error;

/* Starts fn(arg) on a new thread (every signal blocked in it: they belong to the window's
 * thread); *out the job, or NULL and e filled (the thread could not start). */
int bgjob_start(struct bgjob **out, void (*fn)(void *arg), void *arg, struct error *e);
/* Whether fn has returned, waiting up to wait_s for it (0: not at all). */
bool bgjob_done(struct bgjob *j, double wait_s);
/* Waits for fn to return (however long it takes) and frees the job; NULL is allowed. */
void bgjob_finish(struct bgjob *j);

#endif
