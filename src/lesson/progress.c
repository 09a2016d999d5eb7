/* A learner's saved progress: read line by line (bad lines skipped and named, never the
 * good ones), written through a temporary file and a rename (lesson/progress.h). */
#include "config.h"
#include "lesson/progress.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/error.h"
#include "base/readfile.h"
#include "base/units.h"

#define HEADER    "# scalelab progress 2"
#define HEADER_V1 "# scalelab progress 1"
/* a progress file is a few hundred bytes: what follows this much of a damaged one is not read
 * (and kept) */
#define PROGRESS_READ_MAX (64 << 20)
#define PROGRESS_LINE_MAX 16384 /* every answer of a lesson: 64 steps x 32 questions */

/* The lessons of version 1's numbers: lessons/NN-name.lesson as they were when files of
 * version 1 were written. */
static const char *const v1_names[] = {
    NULL, "mixed-precision", "checkpointing", "collectives", "scaling", "zero", "lab"};

const char *progress_v1_name(int n)
{
    return n > 0 && n < (int)(sizeof v1_names / sizeof *v1_names) ? v1_names[n] : NULL;
}

/* A name progress can keep: letters, digits, '-', '_' and '.', 1 to PROGRESS_NAME - 1 of them. */
static bool good_name(const char *s)
{
    size_t n = s ? strlen(s) : 0;
    if (n == 0 || n >= PROGRESS_NAME)
        return false;
    for (; *s; s++)
        if (!isalnum((unsigned char)*s) && !strchr("-_.", *s))
            return false;
    return true;
}

/* dst = name, the rest of dst zeroed (so that two progresses that say the same are the same
 * bytes). */
static void set_name(char dst[PROGRESS_NAME], const char *name)
{
    memset(dst, 0, PROGRESS_NAME);
    snprintf(dst, PROGRESS_NAME, "%s", name);
}

static bool valid(int step, int question)
{
    return step >= 0 && step < LESSON_MAX_STEPS && question >= 0 && question < LESSON_MAX_QUESTIONS;
}

void progress_init(struct progress *p)
{
    memset(p, 0, sizeof *p);
}

const struct progress_lesson *progress_of(const struct progress *p, const char *lesson)
{
    for (int i = 0; lesson && i < PROGRESS_LESSONS && p->lessons[i].name[0]; i++)
        if (!strcmp(p->lessons[i].name, lesson))
            return &p->lessons[i];
    return NULL;
}

/* The lesson's entry, made (in name order) if it has none; NULL when the name cannot be kept. */
static struct progress_lesson *entry(struct progress *p, const char *lesson)
{
    if (!good_name(lesson))
        return NULL;
    int i = 0;
    while (i < PROGRESS_LESSONS && p->lessons[i].name[0] && strcmp(p->lessons[i].name, lesson) < 0)
        i++;
    if (i < PROGRESS_LESSONS && !strcmp(p->lessons[i].name, lesson))
        return &p->lessons[i];
    if (i == PROGRESS_LESSONS || p->lessons[PROGRESS_LESSONS - 1].name[0])
        return NULL; /* full */
    memmove(&p->lessons[i + 1], &p->lessons[i],
            (size_t)(PROGRESS_LESSONS - 1 - i) * sizeof *p->lessons);
    memset(&p->lessons[i], 0, sizeof p->lessons[i]);
    set_name(p->lessons[i].name, lesson);
    return &p->lessons[i];
}

int progress_step(const struct progress *p, const char *lesson)
{
    const struct progress_lesson *pl = progress_of(p, lesson);
    return pl ? pl->step : 0;
}

void progress_set_step(struct progress *p, const char *lesson, int step)
{
    struct progress_lesson *pl = valid(step, 0) ? entry(p, lesson) : NULL;
    if (!pl)
        return;
    pl->step = step, pl->step_set = true;
    set_name(p->current, lesson);
    p->current_set = true;
}

bool progress_correct(const struct progress *p, const char *lesson, int step, int question)
{
    const struct progress_lesson *pl = progress_of(p, lesson);
    return pl && valid(step, question) && (pl->correct[step] >> question & 1u);
}

void progress_mark(struct progress *p, const char *lesson, int step, int question, bool correct)
{
    struct progress_lesson *pl = valid(step, question) ? entry(p, lesson) : NULL;
    if (!pl)
        return;
    uint32_t bit = 1u << question;
    if (correct)
        pl->correct[step] |= bit, pl->set[step] |= bit, pl->cleared[step] &= ~bit;
    else
        pl->correct[step] &= ~bit, pl->cleared[step] |= bit, pl->set[step] &= ~bit;
}

int progress_count(const struct progress *p, const char *lesson)
{
    const struct progress_lesson *pl = progress_of(p, lesson);
    int n = 0;
    for (int s = 0; pl && s < LESSON_MAX_STEPS; s++)
        for (uint32_t b = pl->correct[s]; b; b &= b - 1)
            n++;
    return n;
}

/* The lesson's entry removed, if it has one. */
static void drop(struct progress *p, const char *lesson)
{
    const struct progress_lesson *pl = progress_of(p, lesson);
    if (!pl)
        return;
    int i = (int)(pl - p->lessons);
    memmove(&p->lessons[i], &p->lessons[i + 1],
            (size_t)(PROGRESS_LESSONS - 1 - i) * sizeof *p->lessons);
    memset(&p->lessons[PROGRESS_LESSONS - 1], 0, sizeof *p->lessons);
}

void progress_forget(struct progress *p, const char *lesson)
{
    if (good_name(lesson) && p->nforgot < PROGRESS_LESSONS) /* for the disk's copy too */
        set_name(p->forgot[p->nforgot++], lesson);
    if (!strcmp(p->current, lesson))
        set_name(p->current, ""), p->current_set = true;
    drop(p, lesson);
}

void progress_forget_all(struct progress *p)
{
    progress_init(p);
    p->forgot_all = p->current_set = true;
}

int progress_path(char *buf, size_t n, struct error *e)
{
    const char *state = getenv("XDG_STATE_HOME"), *home = getenv("HOME");
    int len;
    /* The XDG base directory spec ignores relative paths. */
    if (state && state[0] == '/')
        len = snprintf(buf, n, "%s/scalelab/progress", state);
    else if (home && home[0] == '/')
        len = snprintf(buf, n, "%s/.local/state/scalelab/progress", home);
    else
        return error_set(e, ERR_INVAL,
                         "cannot find where to save progress: set HOME or "
                         "XDG_STATE_HOME to an absolute path");
    if (len < 0 || (size_t)len >= n)
        return error_set(e, ERR_INVAL, "the progress file's path is too long");
    return 0;
}

/* ------------------------------------------------------------------ reading */

static int parse_int(const char *s, long long min, long long max, int *out)
{
    long long v;
    if (!s || units_parse_int(s, min, max, &v, NULL) < 0)
        return -1;
    *out = (int)v;
    return 0;
}

/* A lesson as a line names it: version 2's name, or version 1's number as the name it had
 * (another number as its digits); NULL when it is neither. */
static const char *line_lesson(const char *w, int version, char *buf, size_t n)
{
    int num;
    if (version == 2)
        return good_name(w) ? w : NULL;
    if (!w || parse_int(w, 0, 99, &num) < 0)
        return NULL;
    if (progress_v1_name(num))
        return progress_v1_name(num);
    snprintf(buf, n, "%d", num);
    return buf;
}

/* One line of a file of the version given, applied to p only when all of it is valid; -1 if
 * it is not one of ours (then p is untouched). */
static int parse_line(struct progress *p, char *line, int version)
{
    char *save = NULL, *w = strtok_r(line, " ", &save), num[16];
    if (!w)
        return 0;
    if (!strcmp(w, "current")) {
        const char *which = strtok_r(NULL, " ", &save), *name = NULL;
        if (!which || strtok_r(NULL, " ", &save))
            return -1;
        if (version == 1 && !strcmp(which, "-1"))
            name = "";
        else if (!(name = line_lesson(which, version, num, sizeof num)))
            return -1;
        set_name(p->current, name);
        return 0;
    }
    const char *l = NULL;
    int step;
    if (strcmp(w, "lesson") ||
        !(l = line_lesson(strtok_r(NULL, " ", &save), version, num, sizeof num)))
        return -1;
    if ((w = strtok_r(NULL, " ", &save)) == NULL || strcmp(w, "step") ||
        parse_int(strtok_r(NULL, " ", &save), 0, LESSON_MAX_STEPS - 1, &step) < 0)
        return -1;
    if (progress_of(p, l))
        return -1; /* the same lesson twice: the first one stays */
    struct progress_lesson pl = {.step = step};
    if ((w = strtok_r(NULL, " ", &save)) != NULL) {
        if (strcmp(w, "correct"))
            return -1;
        while ((w = strtok_r(NULL, " ", &save))) {
            char *dot = strchr(w, '.');
            int s, q;
            if (!dot)
                return -1;
            *dot = '\0';
            if (parse_int(w, 0, LESSON_MAX_STEPS - 1, &s) < 0 ||
                parse_int(dot + 1, 0, LESSON_MAX_QUESTIONS - 1, &q) < 0)
                return -1;
            pl.correct[s] |= 1u << q;
        }
    }
    struct progress_lesson *e = entry(p, l);
    if (!e)
        return -1; /* every entry used */
    memcpy(pl.name, e->name, sizeof pl.name);
    *e = pl;
    return 0;
}

/* Reads the next line of f into buf (at most n - 1 bytes kept, the rest of a longer line read
 * and dropped), reading at most *left bytes (and counting them off). Returns the line's length
 * (more than n - 1 when it was too long), or -1 at the end of the file or of *left; *nul says
 * whether it held a NUL byte, *newline whether it ended with one. */
static long long read_line(FILE *f, char *buf, size_t n, long long *left, bool *nul, bool *newline)
{
    long long len = 0;
    int c = EOF;
    *nul = *newline = false;
    while (*left > 0 && (c = getc(f)) != EOF) {
        --*left;
        if (c == '\n') {
            *newline = true;
            break;
        }
        if (c == 0)
            *nul = true;
        if ((size_t)len < n - 1)
            buf[len] = (char)c;
        len++;
    }
    if (c == EOF && len == 0)
        return -1;
    buf[(size_t)len < n - 1 ? (size_t)len : n - 1] = '\0';
    return len;
}

/* Adds "what" for one skipped line to the report in *msg: the first in full (but for its
 * length), the others counted. */
static void note_skipped(char *msg, size_t n, int *skipped, const char *path, long long lineno,
                         const char *line, long long len, const char *why)
{
    if ((*skipped)++ == 0) {
        if (len > 60)
            snprintf(msg, n, "%s:%lld: skipped a line of %lld bytes (%s)", path, lineno, len, why);
        else
            snprintf(msg, n, "%s:%lld: skipped '%.60s' (%s)", path, lineno, line, why);
    }
}

int progress_load(struct progress *p, const char *path, struct error *e)
{
    progress_init(p);
    if (e)
        e->code = 0, e->msg[0] = '\0';
    struct stat st;
    const char *kind;
    FILE *f = readfile_open(path, &st, &kind);
    if (!f && kind) { /* a folder, a FIFO, a device: never read, never replaced */
        error_set(e, ERR_INVAL,
                  "%s: %s where the progress file should be; progress is neither read nor saved "
                  "until it is moved",
                  path, kind);
        return PROGRESS_UNREAD;
    }
    if (!f) {
        if (errno == ENOENT)
            return PROGRESS_FRESH;
        error_set(e, ERR_IO, "%s: cannot read: %s (kept as %s.bad at the next save)", path,
                  strerror(errno), path);
        p->unreadable = true;
        return PROGRESS_UNREAD;
    }
    /* Every line stands alone: a bad one is skipped and reported, the others are kept. */
    char line[PROGRESS_LINE_MAX + 1], first[ERROR_MAX] = "";
    long long len, n = 0, left = PROGRESS_READ_MAX;
    bool nul, newline, any = false;
    int skipped = 0, version = 2;
    while ((len = read_line(f, line, sizeof line, &left, &nul, &newline)) >= 0) {
        n++;
        const char *why = NULL;
        if (len > PROGRESS_LINE_MAX)
            why = "too long";
        else if (nul)
            why = "a NUL byte";
        else if (n == 1 && (!strcmp(line, HEADER) || !strcmp(line, HEADER_V1))) {
            version = strcmp(line, HEADER) ? 1 : 2;
            continue;
        } else if (n == 1)
            why = "not '" HEADER "'";
        else if (!newline)
            why = "cut short: the file ends in the middle of it";
        else {
            char copy[PROGRESS_LINE_MAX + 1];
            memcpy(copy, line, (size_t)len + 1);
            if (parse_line(p, copy, version) < 0)
                why = "not a progress line";
            else
                any = true;
        }
        if (why)
            note_skipped(first, sizeof first, &skipped, path, n, line, len, why);
    }
    bool unread = left == 0 && getc(f) != EOF; /* the rest is kept, not read */
    bool bad = ferror(f) != 0;
    fclose(f);
    if (bad) {
        error_set(e, ERR_IO, "%s: cannot read: %s (kept as %s.bad at the next save)", path,
                  strerror(errno), path);
        progress_init(p);
        p->unreadable = true;
        return PROGRESS_UNREAD;
    }
    if (n == 0) {
        error_set(e, ERR_INVAL, "%s:1: the file is empty", path);
        return PROGRESS_FRESH;
    }
    if (skipped || unread) {
        p->unreadable = true;
        char more[96] = "";
        if (skipped > 1)
            snprintf(more, sizeof more, "; %d more line%s skipped", skipped - 1,
                     skipped > 2 ? "s" : "");
        if (unread)
            snprintf(more + strlen(more), sizeof more - strlen(more),
                     "%swhat follows its first %d MiB is not read", skipped ? "; " : "",
                     PROGRESS_READ_MAX >> 20);
        const char *base = strrchr(path, '/');
        if (skipped)
            error_set(e, ERR_INVAL, "%s%s; the file will be kept as %s.bad", first, more,
                      base ? base + 1 : path);
        else
            error_set(e, ERR_INVAL, "%s: %s; the file will be kept as %s.bad", path, more,
                      base ? base + 1 : path);
        return any ? PROGRESS_PARTIAL : PROGRESS_FRESH;
    }
    return 0;
}

/* ------------------------------------------------------------------ writing */

static int make_dirs(char *dir, struct error *e)
{
    struct stat st;
    if (stat(dir, &st) == 0)
        return S_ISDIR(st.st_mode) ? 0 : error_set(e, ERR_IO, "%s: not a folder", dir);
    char *slash = strrchr(dir, '/');
    if (slash && slash != dir) {
        *slash = '\0';
        int rc = make_dirs(dir, e);
        *slash = '/';
        if (rc < 0)
            return rc;
    }
    if (mkdir(dir, 0700) < 0 && errno != EEXIST)
        return error_set(e, ERR_IO, "%s: cannot create the folder: %s", dir, strerror(errno));
    return 0;
}

static int write_all(FILE *f, const struct progress *p)
{
    fprintf(f, "%s\n", HEADER);
    if (p->current[0])
        fprintf(f, "current %s\n", p->current);
    for (int l = 0; l < PROGRESS_LESSONS && p->lessons[l].name[0]; l++) {
        const struct progress_lesson *pl = &p->lessons[l];
        fprintf(f, "lesson %s step %d", pl->name, pl->step);
        bool any = false;
        for (int s = 0; s < LESSON_MAX_STEPS; s++)
            for (int q = 0; q < LESSON_MAX_QUESTIONS; q++)
                if (pl->correct[s] >> q & 1u) {
                    fprintf(f, "%s %d.%d", any ? "" : " correct", s, q);
                    any = true;
                }
        fputc('\n', f);
    }
    return ferror(f) ? -1 : 0;
}

/* Keeps the file at path under the first free name of path.bad, path.bad.1, path.bad.2, ...
 * (a hard link: the file itself is replaced just after by the rename). */
static int keep_unreadable(const char *path, struct error *e)
{
    char bad[PATH_MAX + 32];
    for (int i = 0; i < 1000; i++) {
        if (i == 0)
            snprintf(bad, sizeof bad, "%s.bad", path);
        else
            snprintf(bad, sizeof bad, "%s.bad.%d", path, i);
        if (link(path, bad) == 0)
            return 0;
        if (errno == ENOENT)
            return 0; /* nothing left to keep */
        if (errno == EEXIST)
            continue;
        /* no hard links here (some file systems): a copy of the name by rename */
        struct stat st;
        if (stat(bad, &st) != 0 && errno == ENOENT && rename(path, bad) == 0)
            return 0;
        return error_set(e, ERR_IO, "%s: cannot keep the unreadable file as %s: %s", path, bad,
                         strerror(errno));
    }
    return error_set(e, ERR_IO, "%s: cannot keep the unreadable file: too many %s.bad.N", path,
                     path);
}

/* The file a save replaces: path itself, or where its symbolic links lead (followed, so that
 * a progress file kept elsewhere through a link stays there and the link stays a link). 0 with
 * the absolute path in out, or ERR_IO when that is something else than a regular file (a
 * device, a FIFO: never replaced) or the links cannot be followed. */
static int save_target(const char *path, char *out, size_t n, struct error *e)
{
    char cur[PATH_MAX], link[PATH_MAX];
    if (snprintf(cur, sizeof cur, "%s", path) >= (int)sizeof cur)
        return error_set(e, ERR_IO, "%s: the path is too long", path);
    for (int hops = 0;; hops++) {
        struct stat st;
        bool missing = false; /* a new file (or a link to one), made by the rename */
        if (lstat(cur, &st) != 0) {
            if (errno != ENOENT && errno != ENOTDIR) /* a folder that is a file: make_dirs says */
                return error_set(e, ERR_IO, "%s: %s", cur, strerror(errno));
            missing = true;
        }
        if (!missing && S_ISLNK(st.st_mode)) {
            ssize_t len = hops < 40 ? readlink(cur, link, sizeof link - 1) : -1;
            if (len < 0)
                return error_set(e, ERR_IO, "%s: cannot follow its symbolic link: %s", path,
                                 hops < 40 ? strerror(errno) : "too many levels");
            link[len] = '\0';
            char *slash = strrchr(cur, '/');
            if (link[0] != '/' && slash) { /* relative to the link's folder */
                slash[1] = '\0';
                if (strlen(cur) + (size_t)len >= sizeof cur)
                    return error_set(e, ERR_IO, "%s: the path is too long", path);
                strcat(cur, link);
            } else {
                memcpy(cur, link, (size_t)len + 1);
            }
            continue;
        }
        if (!missing && !S_ISREG(st.st_mode)) {
            const char *kind = S_ISDIR(st.st_mode)    ? "a folder"
                               : S_ISFIFO(st.st_mode) ? "a FIFO"
                               : S_ISSOCK(st.st_mode) ? "a socket"
                                                      : "a device";
            if (hops)
                return error_set(e, ERR_IO,
                                 "%s: a symbolic link to %s, %s, not a regular file: progress "
                                 "is not saved there",
                                 path, cur, kind);
            return error_set(e, ERR_IO, "%s: %s, not a regular file: progress is not saved there",
                             path, kind);
        }
        if (snprintf(out, n, "%s", cur) >= (int)n)
            return error_set(e, ERR_IO, "%s: the path is too long", path);
        return 0;
    }
}

/* The lock a save holds while it reads, merges and writes: the file's folder's (flock on the
 * folder itself, so no lock file is left beside the progress): 0 with *fd, or ERR_IO. Another
 * process's save takes milliseconds: it is waited for, up to 5 s (a wait with a deadline, as
 * every wait here has). */
static int lock_file(const char *dir, int *fd, struct error *e)
{
    const char *lk = dir[0] ? dir : "/";
    *fd = open(lk, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (*fd < 0)
        return error_set(e, ERR_IO, "%s: cannot open the folder to lock it: %s", lk,
                         strerror(errno));
    int err = 0;
    for (int i = 0; i < 500; i++) {
        if (flock(*fd, LOCK_EX | LOCK_NB) == 0)
            return 0;
        if ((err = errno) != EWOULDBLOCK && err != EINTR)
            break;
        nanosleep(&(struct timespec){0, 10 * 1000 * 1000}, NULL);
    }
    close(*fd);
    return error_set(e, ERR_IO, "%s: cannot lock the folder: %s", lk,
                     err == EWOULDBLOCK ? "another save has held it for 5 s" : strerror(err));
}

/* p's changes laid onto d, the disk's progress: lessons forgotten here dropped, a lesson's step
 * set here taken, its answers the disk's with those marked here set or cleared, the lesson open
 * here current if it was set here; what was not changed here stays the disk's. */
static void merge(struct progress *d, const struct progress *p)
{
    if (p->forgot_all) {
        bool unreadable = d->unreadable;
        progress_init(d);
        d->unreadable = unreadable;
    }
    for (int i = 0; i < p->nforgot; i++)
        drop(d, p->forgot[i]);
    for (int l = 0; l < PROGRESS_LESSONS && p->lessons[l].name[0]; l++) {
        const struct progress_lesson *pl = &p->lessons[l];
        bool changed = pl->step_set;
        for (int s = 0; s < LESSON_MAX_STEPS && !changed; s++)
            changed = pl->set[s] || pl->cleared[s];
        struct progress_lesson *dl = changed ? entry(d, pl->name) : NULL;
        if (!dl)
            continue;
        if (pl->step_set)
            dl->step = pl->step;
        for (int s = 0; s < LESSON_MAX_STEPS; s++)
            dl->correct[s] = (dl->correct[s] & ~pl->cleared[s]) | pl->set[s];
    }
    if (p->current_set)
        set_name(d->current, p->current);
}

/* The merged progress written to path (the target, its folder made): 0, or ERR_IO. */
static int write_file(struct progress *p, const char *path, struct error *e);

int progress_save(struct progress *p, const char *given, struct error *e)
{
    char path[PATH_MAX];
    if (given[0] != '/')
        return error_set(e, ERR_IO, "%s: expected an absolute path to a file", given);
    if (save_target(given, path, sizeof path, e) < 0)
        return ERR_IO;
    char dir[PATH_MAX] = "";
    const char *slash = strrchr(path, '/');
    if (!slash || (size_t)(slash - path) >= sizeof dir)
        return error_set(e, ERR_IO, "%s: expected an absolute path to a file", path);
    if (slash != path) {
        memcpy(dir, path, (size_t)(slash - path));
        dir[slash - path] = '\0';
        if (make_dirs(dir, e) < 0)
            return ERR_IO;
    }
    struct progress *d = malloc(sizeof *d);
    int lock = -1;
    if (!d)
        return error_set(e, ERR_NOMEM, "out of memory saving progress");
    if (lock_file(dir, &lock, e) < 0) {
        free(d);
        return ERR_IO;
    }
    struct error de = {0};
    progress_load(d, path, &de); /* what another window saved, or fresh */
    merge(d, p);
    d->unreadable = d->unreadable || p->unreadable;
    int rc = write_file(d, path, e);
    close(lock); /* the lock goes with its descriptor */
    if (rc == 0) {
        *p = *d;               /* what was written, no change pending */
        p->unreadable = false; /* kept once: the next saves replace only what this one wrote */
    }
    free(d);
    return rc;
}

static int write_file(struct progress *p, const char *path, struct error *e)
{
    char tmp[PATH_MAX + 16];
    if (snprintf(tmp, sizeof tmp, "%s.XXXXXX", path) >= (int)sizeof tmp)
        return error_set(e, ERR_IO, "%s: the path is too long", path);
    int fd = mkstemp(tmp);
    if (fd < 0)
        return error_set(e, ERR_IO, "%s: cannot create a temporary file: %s", tmp, strerror(errno));
    FILE *f = fdopen(fd, "w");
    if (!f) {
        close(fd);
        unlink(tmp);
        return error_set(e, ERR_IO, "%s: %s", tmp, strerror(errno));
    }
    int rc = write_all(f, p);
    if (rc == 0 && fflush(f) != 0)
        rc = -1;
    if (rc == 0 && fsync(fileno(f)) != 0)
        rc = -1;
    int err = errno;
    if (fclose(f) != 0 && rc == 0)
        rc = -1, err = errno;
    if (rc == 0 && p->unreadable && keep_unreadable(path, e) < 0) {
        unlink(tmp);
        return ERR_IO;
    }
    if (rc == 0 && rename(tmp, path) != 0)
        rc = -1, err = errno;
    if (rc < 0) {
        unlink(tmp);
        return error_set(e, ERR_IO, "%s: cannot save progress: %s", path, strerror(err));
    }
    return 0;
}
