/* Opening a regular file to read without blocking on anything else (base/readfile.h). */
#include "config.h"
#include "base/readfile.h"

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

FILE *readfile_open(const char *path, struct stat *st, const char **kind)
{
    *kind = NULL;
    /* O_NONBLOCK: opening a FIFO for reading would wait for a writer; O_NOCTTY: a terminal
     * never becomes ours */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY);
    if (fd < 0)
        return NULL;
    int flags = fcntl(fd, F_GETFL);
    if (fstat(fd, st) != 0 || flags < 0) {
        int err = errno;
        close(fd);
        errno = err;
        return NULL;
    }
    if (!S_ISREG(st->st_mode)) {
        *kind = S_ISDIR(st->st_mode)                           ? "a folder"
                : S_ISFIFO(st->st_mode)                        ? "a FIFO"
                : S_ISCHR(st->st_mode) || S_ISBLK(st->st_mode) ? "a device"
                : S_ISSOCK(st->st_mode)                        ? "a socket"
                                                               : "not a regular file";
        close(fd);
        return NULL;
    }
    FILE *f = NULL;
    if (fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) == 0)
        f = fdopen(fd, "rb");
    if (!f) {
        int err = errno;
        close(fd);
        errno = err;
    }
    return f;
}
