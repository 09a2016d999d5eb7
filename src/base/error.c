/* Error values with a message, and their prefixes (base/error.h). */
#include "config.h"
#include "base/error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

int error_set(struct error *e, int code, const char *fmt, ...)
{
    if (e) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(e->msg, sizeof e->msg, fmt, ap);
        va_end(ap);
        e->code = code;
    }
    return code;
}

void error_prefix(struct error *e, const char *fmt, ...)
{
    if (!e)
        return;
    char head[ERROR_MAX], old[ERROR_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(head, sizeof head, fmt, ap);
    va_end(ap);
    memcpy(old, e->msg, sizeof old);
    if (snprintf(e->msg, sizeof e->msg, "%s: %s", head, old) >= (int)sizeof e->msg)
        memcpy(e->msg + sizeof e->msg - 4, "...", 4); /* too long: show that it was cut */
}

int error_exit_status(int code)
{
    if (code == 0)
        return 0;
    return code == ERR_INVAL ? 2 : 1;
}
