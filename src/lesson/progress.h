/* A learner's saved progress: for each lesson, the step they were at and the questions they
 * answered right, and which lesson was open last.
 *
 * Stored as text in $XDG_STATE_HOME/scalelab/progress (default ~/.local/state/scalelab/):
 *
 *     # scalelab progress 1
 *     current 1
 *     lesson 1 step 3 correct 0.0 2.1
 *
 * (lesson numbers as in NN-name.lesson; steps and questions counted from 0; "2.1" is the second
 * question of the third step). It is written to a temporary file in the same folder and renamed
 * over the old one, so a crash leaves the old file or the new one, never a mix.
 *
 * Progress is never lost to a bad file: every valid line is kept, each bad one is skipped and
 * reported, and before the first save replaces such a file it is kept beside it as
 * progress.bad (or progress.bad.1, .2, ... when that exists). A missing file reads as fresh
 * progress. */
#ifndef SCALELAB_LESSON_PROGRESS_H
#define SCALELAB_LESSON_PROGRESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lesson/lesson.h"

struct error;

#define PROGRESS_LESSONS 100 /* lesson numbers 0..99 */

struct progress_lesson {
    bool visited;
    int step;                           /* from 0 */
    uint32_t correct[LESSON_MAX_STEPS]; /* bit q: question q of that step answered right */
};

struct progress {
    int current; /* the lesson open last, or -1 */
    struct progress_lesson lessons[PROGRESS_LESSONS];
    bool unreadable; /* the file read had lines not kept here: keep it before replacing it */
};

enum {
    PROGRESS_FRESH = 1,   /* progress_load: nothing usable was read */
    PROGRESS_PARTIAL = 2, /* progress_load: some lines were skipped, the others kept */
    PROGRESS_UNREAD = 3,  /* progress_load: a file is there but could not be read at all */
};

/* Fresh progress: nothing visited, no lesson open. */
void progress_init(struct progress *p);

/* The progress file: $XDG_STATE_HOME/scalelab/progress if XDG_STATE_HOME is an absolute path,
 * else $HOME/.local/state/scalelab/progress. 0, or ERR_INVAL when neither can be found. */
int progress_path(char *buf, size_t n, struct error *e);

/* Reads path into p: a regular file only (a folder, a FIFO or a device where the file should be
 * is said and never read: opening never blocks), at most 64 MiB of it. Returns 0 when read;
 * PROGRESS_PARTIAL when some lines were skipped and the others kept (every valid line is);
 * PROGRESS_FRESH with p fresh when the file is missing or nothing in it could be used;
 * PROGRESS_UNREAD with p fresh when there is something but it could not be read (not a regular
 * file, no permission, an I/O error). Whenever something was skipped e says what
 * ("FILE:LINE: skipped '...' (why); 2 more lines skipped; ..."; a missing file leaves e->code
 * 0), and p->unreadable is set when a file was there to keep. */
int progress_load(struct progress *p, const char *path, struct error *e);

/* Writes p to path through a temporary file in the same folder and a rename; creates the folder
 * (and its parents) if needed. A symbolic link is followed (the file it leads to is replaced,
 * the link stays); what is not a regular file (a device, a FIFO, a folder) is never replaced.
 * When p->unreadable, the file at path is first kept as path.bad (or the first free
 * path.bad.N), then p->unreadable is cleared. 0, or ERR_IO with e saying what failed. */
int progress_save(struct progress *p, const char *path, struct error *e);

/* The step to reopen a lesson at (0 if never visited), and setting it (marks it visited and
 * current). Out-of-range numbers are ignored / give 0. */
int progress_step(const struct progress *p, int lesson);
void progress_set_step(struct progress *p, int lesson, int step);

/* Questions answered right. */
bool progress_correct(const struct progress *p, int lesson, int step, int question);
void progress_mark(struct progress *p, int lesson, int step, int question, bool correct);

/* How many questions of lesson l are answered right (for "3/12" in the tab bar). */
int progress_count(const struct progress *p, int lesson);

#endif
