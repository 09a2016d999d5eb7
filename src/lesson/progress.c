#include "config.h"
#include "lesson/progress.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/error.h"
#include "base/units.h"

#define HEADER "# scalelab progress 1"

static bool valid(int lesson, int step, int question)
{
    return lesson >= 0 && lesson < PROGRESS_LESSONS && step >= 0 && step < LESSON_MAX_STEPS &&
           question >= 0 && question < LESSON_MAX_QUESTIONS;
}

void progress_init(struct progress *p)
{
    memset(p, 0, sizeof *p);
    p->current = -1;
}

int progress_step(const struct progress *p, int lesson)
{
    return valid(lesson, 0, 0) ? p->lessons[lesson].step : 0;
}

void progress_set_step(struct progress *p, int lesson, int step)
{
    if (!valid(lesson, step, 0))
        return;
    p->lessons[lesson].visited = true;
    p->lessons[lesson].step = step;
    p->current = lesson;
}

bool progress_correct(const struct progress *p, int lesson, int step, int question)
{
    return valid(lesson, step, question) && (p->lessons[lesson].correct[step] >> question & 1u);
}

void progress_mark(struct progress *p, int lesson, int step, int question, bool correct)
{
    if (!valid(lesson, step, question))
        return;
    uint32_t bit = 1u << question;
    p->lessons[lesson].visited = true;
    if (correct)
        p->lessons[lesson].correct[step] |= bit;
    else
        p->lessons[lesson].correct[step] &= ~bit;
}

int progress_count(const struct progress *p, int lesson)
{
    int n = 0;
    if (!valid(lesson, 0, 0))
        return 0;
    for (int s = 0; s < LESSON_MAX_STEPS; s++)
        for (uint32_t b = p->lessons[lesson].correct[s]; b; b &= b - 1)
            n++;
    return n;
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

/* One line; -1 if it is not one of ours. */
static int parse_line(struct progress *p, char *line)
{
    char *save = NULL, *w = strtok_r(line, " ", &save);
    if (!w)
        return 0;
    if (!strcmp(w, "current")) {
        if (parse_int(strtok_r(NULL, " ", &save), -1, PROGRESS_LESSONS - 1, &p->current) < 0)
            return -1;
        return strtok_r(NULL, " ", &save) ? -1 : 0;
    }
    int l, step;
    if (strcmp(w, "lesson") ||
        parse_int(strtok_r(NULL, " ", &save), 0, PROGRESS_LESSONS - 1, &l) < 0)
        return -1;
    if ((w = strtok_r(NULL, " ", &save)) == NULL || strcmp(w, "step") ||
        parse_int(strtok_r(NULL, " ", &save), 0, LESSON_MAX_STEPS - 1, &step) < 0)
        return -1;
    struct progress_lesson *pl = &p->lessons[l];
    if (pl->visited)
        return -1; /* the same lesson twice */
    pl->visited = true;
    pl->step = step;
    if ((w = strtok_r(NULL, " ", &save)) == NULL)
        return 0;
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
        pl->correct[s] |= 1u << q;
    }
    return 0;
}

int progress_load(struct progress *p, const char *path, struct error *e)
{
    progress_init(p);
    if (e)
        e->code = 0, e->msg[0] = '\0';
    FILE *f = fopen(path, "r");
    if (!f) {
        if (errno != ENOENT)
            error_set(e, ERR_IO, "%s: cannot read: %s", path, strerror(errno));
        return PROGRESS_FRESH;
    }
    char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    int n = 0, rc = 0;
    while (rc == 0 && (len = getline(&line, &cap, f)) >= 0) {
        n++;
        if (len && line[len - 1] == '\n')
            line[--len] = '\0';
        if (len > 1000) {
            rc = error_set(e, ERR_INVAL, "%s:%d: the line is too long", path, n);
            break;
        }
        if (n == 1) {
            if (strcmp(line, HEADER))
                rc = error_set(e, ERR_INVAL, "%s:1: expected '%s'", path, HEADER);
            continue;
        }
        if (memchr(line, '\0', (size_t)len) || parse_line(p, line) < 0)
            rc = error_set(e, ERR_INVAL,
                           "%s:%d: expected 'current N' or 'lesson N step S correct S.Q ...'", path,
                           n);
    }
    free(line);
    if (rc == 0 && n == 0)
        rc = error_set(e, ERR_INVAL, "%s:1: the file is empty", path);
    fclose(f);
    if (rc < 0) {
        progress_init(p);
        return PROGRESS_FRESH;
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
    fprintf(f, "%s\ncurrent %d\n", HEADER, p->current);
    for (int l = 0; l < PROGRESS_LESSONS; l++) {
        const struct progress_lesson *pl = &p->lessons[l];
        if (!pl->visited)
            continue;
        fprintf(f, "lesson %d step %d", l, pl->step);
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

int progress_save(const struct progress *p, const char *path, struct error *e)
{
    char dir[PATH_MAX], tmp[PATH_MAX + 16];
    const char *slash = strrchr(path, '/');
    if (!slash || (size_t)(slash - path) >= sizeof dir ||
        snprintf(tmp, sizeof tmp, "%s.XXXXXX", path) >= (int)sizeof tmp)
        return error_set(e, ERR_IO, "%s: expected an absolute path to a file", path);
    if (slash != path) {
        memcpy(dir, path, (size_t)(slash - path));
        dir[slash - path] = '\0';
        if (make_dirs(dir, e) < 0)
            return ERR_IO;
    }
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
    if (rc == 0 && rename(tmp, path) != 0)
        rc = -1, err = errno;
    if (rc < 0) {
        unlink(tmp);
        return error_set(e, ERR_IO, "%s: cannot save progress: %s", path, strerror(err));
    }
    return 0;
}
