/* Where scalelab finds its lessons and presets: $SCALELAB_DATA, else the installed data folder
 * when the program runs from its installed bindir, else the source tree (base/datadir.h). */
#include "config.h"
#include "base/datadir.h"

#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/error.h"

static int installed(void)
{
    char exe[PATH_MAX], dir[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0)
        return 1;
    exe[n] = '\0';
    char *slash = strrchr(exe, '/');
    if (!slash)
        return 1;
    *slash = '\0';
    if (!realpath(BINDIR, dir))
        return 0;
    return strcmp(exe, dir) == 0;
}

/* Found once per process (pthread_once), so any thread may ask. */
static char cached[PATH_MAX];
static pthread_once_t found = PTHREAD_ONCE_INIT;

static void find(void)
{
    const char *env = getenv("SCALELAB_DATA");
    const char *d = env && *env ? env : installed() ? PKGDATADIR : TOP_SRCDIR;
    snprintf(cached, sizeof cached, "%s", d);
    size_t len = strlen(cached);
    while (len > 1 && cached[len - 1] == '/')
        cached[--len] = '\0';
}

const char *datadir(void)
{
    pthread_once(&found, find);
    return cached;
}

char *datadir_path(char *buf, size_t n, const char *rel)
{
    int len = snprintf(buf, n, "%s/%s", datadir(), rel);
    return len < 0 || (size_t)len >= n ? NULL : buf;
}

int datadir_check(struct error *e)
{
    const char *env = getenv("SCALELAB_DATA");
    const char *from = env && *env ? " (SCALELAB_DATA)" : "";
    const char *const need[] = {"", "lessons", "assets/models"};
    for (int i = 0; i < 3; i++) {
        char path[PATH_MAX];
        struct stat st;
        if (!datadir_path(path, sizeof path, need[i]))
            return error_set(e, ERR_INVAL, "the data folder %s%s: the path is too long", datadir(),
                             from);
        bool there = stat(path, &st) == 0;
        if (there && S_ISDIR(st.st_mode))
            continue;
        const char *why = i == 1   ? "has no lessons/ folder"
                          : i == 2 ? "has no assets/models/ folder"
                          : there  ? "is not a folder"
                                   : strerror(errno);
        return error_set(e, ERR_INVAL,
                         "the data folder %s%s: %s; it should hold lessons/ and assets/", datadir(),
                         from, why);
    }
    return 0;
}
