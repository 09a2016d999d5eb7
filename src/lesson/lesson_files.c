/* Lesson files on disk: reading one (its size refused before it is read), listing and
 * loading the lessons folder, and finding a lesson by number, name or path (lesson/lesson.h). */
#include "config.h"
#include "lesson/lesson.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/datadir.h"
#include "base/error.h"
#include "base/readfile.h"
#include "base/units.h"
#include "lesson/text.h"

#define FILE_MAX (1 << 20) /* a lesson is a few KiB; refuse anything absurd */

int lesson_load(const char *path, struct lesson **out, struct error *e)
{
    *out = NULL;
    /* a path that does not exist, is a folder (or a FIFO, a device) or may not be read is the
     * user's mistake (exit 2); only a failing disk is an I/O error */
    struct stat st;
    const char *kind;
    FILE *f = readfile_open(path, &st, &kind);
    if (!f && kind)
        return error_set(e, ERR_INVAL, "%s: %s, not a lesson file", path, kind);
    if (!f) {
        int err = errno;
        return error_set(e, err == ENOENT || err == EACCES || err == ENOTDIR ? ERR_INVAL : ERR_IO,
                         "%s: cannot read: %s", path, strerror(err));
    }
    /* the size is checked before anything is read; the read below is bounded as well, for a
     * file that grows meanwhile */
    if (st.st_size > FILE_MAX) {
        fclose(f);
        return error_set(e, ERR_INVAL, "%s: larger than %d bytes: not a lesson", path, FILE_MAX);
    }
    char *text = malloc(FILE_MAX + 1);
    if (!text) {
        fclose(f);
        return error_set(e, ERR_NOMEM, "%s: out of memory", path);
    }
    size_t len = fread(text, 1, FILE_MAX + 1, f);
    int rc;
    if (ferror(f))
        rc = error_set(e, ERR_IO, "%s: cannot read: %s", path, strerror(errno));
    else if (len > FILE_MAX)
        rc = error_set(e, ERR_INVAL, "%s: larger than %d bytes: not a lesson", path, FILE_MAX);
    else
        rc = lesson_parse_string(path, text, len, out, e);
    free(text);
    fclose(f);
    return rc;
}

/* ------------------------------------------------------------------ the lessons folder */

static bool lesson_file_name(const char *name)
{
    size_t n = strlen(name);
    return n > 10 && isdigit((unsigned char)name[0]) && isdigit((unsigned char)name[1]) &&
           name[2] == '-' && strcmp(name + n - 7, ".lesson") == 0;
}

static int by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The lesson file names in DIR/lessons, sorted (so by number). */
static int list_lessons(const char *dir, char *folder, size_t fn, char ***names, size_t *n,
                        struct error *e)
{
    *names = NULL;
    *n = 0;
    if (snprintf(folder, fn, "%s/lessons", dir ? dir : datadir()) >= (int)fn)
        return error_set(e, ERR_INVAL, "%s/lessons: the path is too long", dir);
    DIR *d = opendir(folder);
    if (!d) {
        /* a data folder that is not there (SCALELAB_DATA=/nonexistent) is bad input, exit 2;
         * only a failing disk is an I/O error */
        int err = errno;
        return error_set(e, err == ENOENT || err == ENOTDIR || err == EACCES ? ERR_INVAL : ERR_IO,
                         "%s: cannot open the lessons folder: %s", folder, strerror(err));
    }
    struct dirent *ent;
    int rc = 0;
    while ((ent = readdir(d))) {
        if (!lesson_file_name(ent->d_name))
            continue;
        char **slot = lesson_push(names, n, sizeof *slot);
        if (!slot || !(*slot = lesson_strdup(ent->d_name))) {
            if (slot)
                (*n)--;
            rc = error_set(e, ERR_NOMEM, "out of memory");
            break;
        }
    }
    closedir(d);
    if (*n)
        qsort(*names, *n, sizeof **names, by_name);
    return rc;
}

void lesson_free_all(struct lesson **v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        lesson_free(v[i]);
    free(v);
}

int lesson_load_all(const char *dir, struct lesson ***out, size_t *n, struct error *e)
{
    char folder[4096], path[4096 + 256];
    char **names;
    size_t count;
    struct lesson **v = NULL;
    int rc = list_lessons(dir, folder, sizeof folder, &names, &count, e);
    *out = NULL;
    *n = 0;
    if (rc == 0 && count == 0)
        rc = error_set(e, ERR_INVAL, "%s: no NN-name.lesson files", folder);
    if (rc == 0 && !(v = calloc(count, sizeof *v)))
        rc = error_set(e, ERR_NOMEM, "out of memory");
    /* one damaged file leaves out that lesson only: the others are still read */
    size_t kept = 0;
    int skipped = 0;
    for (size_t i = 0; rc == 0 && i < count; i++) {
        snprintf(path, sizeof path, "%s/%s", folder, names[i]);
        struct error le = {0};
        struct lesson *l;
        int lrc = lesson_load(path, &l, &le);
        if (lrc == ERR_NOMEM)
            rc = error_set(e, ERR_NOMEM, "%s", le.msg);
        else if (lrc == 0 && kept > 0 && l->number == v[kept - 1]->number) {
            error_set(&le, ERR_INVAL, "%s: numbered %d as %s is", path, l->number,
                      v[kept - 1]->file);
            lesson_free(l);
            lrc = ERR_INVAL;
        }
        if (lrc == 0)
            v[kept++] = l;
        else if (rc == 0 && skipped++ == 0)
            *e = le;
    }
    lesson_free_strings(names, count);
    if (rc < 0) {
        lesson_free_all(v, kept);
        return rc;
    }
    if (skipped > 1) {
        size_t len = strlen(e->msg);
        snprintf(e->msg + len, sizeof e->msg - len, "; %d more lesson files left out", skipped - 1);
    }
    *out = v;
    *n = kept;
    return skipped;
}

int lesson_paths(const char *dir, char ***paths, size_t *n, struct error *e)
{
    char folder[4096];
    char **names;
    size_t count;
    int rc = list_lessons(dir, folder, sizeof folder, &names, &count, e);
    *paths = NULL, *n = 0;
    if (rc == 0 && count == 0)
        rc = error_set(e, ERR_INVAL, "%s: no NN-name.lesson files", folder);
    for (size_t i = 0; rc == 0 && i < count; i++) {
        size_t len = strlen(folder) + strlen(names[i]) + 2;
        char *p = malloc(len);
        if (!p) {
            rc = error_set(e, ERR_NOMEM, "out of memory");
            break;
        }
        snprintf(p, len, "%s/%s", folder, names[i]);
        free(names[i]);
        names[i] = p;
    }
    if (rc < 0) {
        lesson_free_strings(names, count);
        return rc;
    }
    *paths = names, *n = count;
    return 0;
}

int lesson_find(const char *dir, const char *which, struct lesson **out, struct error *e)
{
    *out = NULL;
    if (!strcasecmp(which, "l")) /* the Lab's key in the window, as everywhere */
        which = LESSON_LAB;
    size_t wl = strlen(which);
    if (strchr(which, '/') ||
        (wl > 7 && !strcmp(which + wl - 7, ".lesson") && access(which, F_OK) == 0))
        return lesson_load(which, out, e);
    char folder[4096], path[4096 + 256];
    char **names;
    size_t count;
    int rc = list_lessons(dir, folder, sizeof folder, &names, &count, e);
    if (rc < 0)
        return rc;
    long long num = -1;
    bool numeric = units_parse_int(which, 0, 99, &num, NULL) == 0;
    const char *hit = NULL;
    for (size_t i = 0; i < count && !hit; i++) {
        /* "90-lab.lesson" answers to 90, "90-lab.lesson", "90-lab", "lab" and L (above) */
        const char *dash = strchr(names[i], '-'), *bare = dash ? dash + 1 : names[i];
        if (numeric
                ? lesson_number_of(names[i]) == num
                : strcmp(names[i], which) == 0 ||
                      (strncmp(names[i], which, wl) == 0 && !strcmp(names[i] + wl, ".lesson")) ||
                      (strncmp(bare, which, wl) == 0 && !strcmp(bare + wl, ".lesson")))
            hit = names[i];
    }
    if (hit) {
        snprintf(path, sizeof path, "%s/%s", folder, hit);
        rc = lesson_load(path, out, e);
    } else {
        rc = error_set(e, ERR_INVAL,
                       "no lesson '%s' in %s (give a number, a name such as "
                       "01-mixed-precision, L or lab for the Lab, or a path)",
                       which, folder);
    }
    lesson_free_strings(names, count);
    return rc;
}
