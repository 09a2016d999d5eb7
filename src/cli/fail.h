/* How a command ends when something is wrong: its message on standard error and the exit
 * status (0 done, 1 a run failed, 2 bad usage or input); and whether standard output still
 * takes what a command writes. Every command's file and the option reader (cli/opts.c) say
 * their errors through these. */
#ifndef SCALELAB_CLI_FAIL_H
#define SCALELAB_CLI_FAIL_H

#include <stdbool.h>

struct error;

/* Flushes standard output; false when it failed (a full disk, a closed pipe), with the errno
 * kept for main's report. A command that streams calls it to stop writing into the void. */
bool cli_output_ok(void);
/* A write to stdout just failed: keep errno (the first failure's, e.g. ENOSPC) for the report. */
void cli_output_failed(void);
extern int cli_output_errno; /* the errno of the first write error seen, or 0 */

/* Prints "scalelab: MESSAGE" to stderr and returns the exit status for e's code. */
int cli_fail(const struct error *e);

/* Prints "scalelab: CMD: MESSAGE; see 'scalelab help CMD'" to stderr and returns 2. */
int cli_usage(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Standard error silenced (to /dev/null) when mute is true: the MPI ranks but rank 0 read and
 * check the same arguments, and rank 0 alone says what is wrong. Returns what cli_unmute
 * takes back (-1: nothing was silenced). */
int cli_mute(bool mute);
void cli_unmute(int saved);

#endif
