/* A learner's saved progress: for each lesson, the step they were at and the questions they
 * answered right, and which lesson was open last.
 *
 * Stored as text in $XDG_STATE_HOME/scalelab/progress (default ~/.local/state/scalelab/):
 *
 *     # scalelab progress 2
 *     current mixed-precision
 *     lesson mixed-precision step 3 correct 0.0 2.1
 *
 * (a lesson by its name, lesson/lesson.h's: its file's without the number, so lessons can be
 * renumbered and a new one put before the Lab; steps and questions counted from 0; "2.1" is the
 * second question of the third step). A file of version 1, which named lessons by their file
 * number, is read with the names those numbers had (progress_v1_name) and saved as version 2.
 * It is written to a temporary file in the same folder and renamed
 * over the old one, so a crash leaves the old file or the new one, never a mix.
 *
 * Two windows may share the file: a save merges this process's changes since its last load or
 * save into what is on disk, under a lock (flock on the file's folder), so neither loses the
 * other's. A lesson's step is the one set last (a change here is newer than what the
 * disk holds: the window saves each change as it makes it), the answers are the disk's with
 * the ones marked here set or cleared, a lesson forgotten here is forgotten, and the others
 * are the disk's as they are.
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

#define PROGRESS_LESSONS 100 /* lessons kept */
#define PROGRESS_NAME    32  /* a lesson's name, its NUL included */

struct progress_lesson {
    char name[PROGRESS_NAME];           /* "" for an unused entry */
    int step;                           /* from 0 */
    uint32_t correct[LESSON_MAX_STEPS]; /* bit q: question q of that step answered right */
    /* changed here since the last load or save: what a save lays onto the disk's */
    bool step_set;
    uint32_t set[LESSON_MAX_STEPS], cleared[LESSON_MAX_STEPS];
};

struct progress {
    char current[PROGRESS_NAME];                      /* the lesson open last, or "" */
    struct progress_lesson lessons[PROGRESS_LESSONS]; /* the visited ones first, by name */
    bool unreadable; /* the file read had lines not kept here: keep it before replacing it */
    /* changed here since the last load or save */
    bool current_set, forgot_all;
    char forgot[PROGRESS_LESSONS][PROGRESS_NAME]; /* lessons forgotten here */
    int nforgot;
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

/* Merges p's changes since its last load or save into the file at path, under its lock, and
 * writes the result through a temporary file in the same folder and a rename; p becomes what
 * was written, with no changes pending. Creates the folder (and its parents) if needed. A symbolic
 * link is followed (the file it leads to is replaced, the link stays); what is not a regular file
 * (a device, a FIFO, a folder) is never replaced. When p->unreadable, the file at path is first
 * kept as path.bad (or the first free path.bad.N), then p->unreadable is cleared. 0, or ERR_IO with
 * e saying what failed. */
int progress_save(struct progress *p, const char *path, struct error *e);

/* A lesson's progress by its name (NULL if never visited), and setting its step (marks it
 * visited and current). A name that cannot be kept (empty, too long, a space, or every entry
 * used) is ignored / gives 0, as are out-of-range steps and questions. */
const struct progress_lesson *progress_of(const struct progress *p, const char *lesson);
int progress_step(const struct progress *p, const char *lesson);
void progress_set_step(struct progress *p, const char *lesson, int step);

/* Questions answered right. */
bool progress_correct(const struct progress *p, const char *lesson, int step, int question);
void progress_mark(struct progress *p, const char *lesson, int step, int question, bool correct);

/* How many questions of the lesson are answered right (for "3/12" in the tab bar). */
int progress_count(const struct progress *p, const char *lesson);

/* Forgets a lesson (progress --reset LESSON); it is no longer current. */
void progress_forget(struct progress *p, const char *lesson);
/* Forgets every lesson (progress --reset): the next save writes nothing of the disk's. */
void progress_forget_all(struct progress *p);

/* The name lesson number n had in a version 1 file (1 mixed-precision, ..., 5 zero, 6 lab: the
 * lessons as they were numbered then), or NULL: such a number is kept under its digits. */
const char *progress_v1_name(int n);

#endif
