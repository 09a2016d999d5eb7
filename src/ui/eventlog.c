/* The ring of recent events shown at the bottom of the window (ui/eventlog.h). */
#include "config.h"
#include "ui/eventlog.h"

#include <stdarg.h>
#include <stdio.h>
#include <time.h>

void eventlog_add(struct eventlog *l, const char *fmt, ...)
{
    char *s = l->line[l->count % EVENTLOG_LINES];
    time_t now = time(NULL);
    struct tm tm;
    int n = 0;
    if (localtime_r(&now, &tm))
        n = (int)strftime(s, EVENTLOG_WIDTH, "%H:%M:%S ", &tm);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(s + n, (size_t)(EVENTLOG_WIDTH - n), fmt, ap);
    va_end(ap);
    l->count++;
}

const char *eventlog_get(const struct eventlog *l, unsigned long i)
{
    if (i >= l->count || i >= EVENTLOG_LINES)
        return NULL;
    return l->line[(l->count - 1 - i) % EVENTLOG_LINES];
}
