/* A command's error message and exit status, and standard output's check (cli/fail.h). */
#include "config.h"
#include "cli/fail.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <unistd.h>

#include "base/error.h"

int cli_output_errno;

bool cli_output_ok(void)
{
    errno = 0;
    if (fflush(stdout) == 0 && !ferror(stdout))
        return true;
    cli_output_failed();
    return false;
}

void cli_output_failed(void)
{
    if (!cli_output_errno)
        cli_output_errno = errno ? errno : EIO;
}

int cli_fail(const struct error *e)
{
    fprintf(stderr, "scalelab: %s\n", e->msg);
    return error_exit_status(e->code ? e->code : ERR_RUN);
}

int cli_usage(const char *cmd, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "scalelab: %s: ", cmd);
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "; see 'scalelab help %s'\n", cmd);
    va_end(ap);
    return 2;
}

int cli_mute(bool mute)
{
    if (!mute)
        return -1;
    fflush(stderr);
    int saved = dup(2), null = open("/dev/null", O_WRONLY);
    if (null >= 0) {
        dup2(null, 2);
        close(null);
    }
    return saved;
}

void cli_unmute(int saved)
{
    if (saved < 0)
        return;
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
}
