/* Opening a file to read that must be a regular file (a lesson, a preset, the progress file):
 * never blocking on what the path turns out to be (a FIFO with no writer, a terminal), never
 * reading without end (/dev/zero, /dev/urandom), so the caller can refuse it by name. */
#ifndef SCALELAB_BASE_READFILE_H
#define SCALELAB_BASE_READFILE_H

#include <stdio.h>
#include <sys/stat.h>

/* Opens path (symbolic links followed) without waiting, and checks what it is with fstat: a
 * regular file is returned open, in blocking mode, with its stat in *st. Otherwise NULL, and
 * *kind says what it is ("a folder", "a FIFO", "a device", "a socket") when it could be opened
 * but is not a regular file, or is NULL with errno saying why it could not be opened. */
FILE *readfile_open(const char *path, struct stat *st, const char **kind);

#endif
