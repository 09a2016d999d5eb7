/* The ring of recent events shown at the bottom of the window (ui/eventlog.h). */
#include "config.h"
#include "ui/eventlog.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

static void add(struct eventlog *l, const char *text)
{
    char *s = l->line[l->count % EVENTLOG_LINES];
    time_t now = time(NULL);
    struct tm tm;
    int n = 0;
    if (localtime_r(&now, &tm))
        n = (int)strftime(s, EVENTLOG_WIDTH, "%H:%M:%S ", &tm);
    snprintf(s + n, (size_t)(EVENTLOG_WIDTH - n), "%s", text);
    l->count++;
}

/* Adds the line, or (once) not when the newest says it already. */
static void vadd(struct eventlog *l, bool once, const char *fmt, va_list ap)
{
    char text[EVENTLOG_WIDTH];
    vsnprintf(text, sizeof text, fmt, ap);
    const char *last = once ? eventlog_get(l, 0) : NULL;
    const char *said = last ? strchr(last, ' ') : NULL; /* after the "HH:MM:SS " stamp */
    if (!said || strncmp(said + 1, text, EVENTLOG_WIDTH - 10))
        add(l, text);
}

void eventlog_add(struct eventlog *l, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vadd(l, false, fmt, ap);
    va_end(ap);
}

void eventlog_add_once(struct eventlog *l, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vadd(l, true, fmt, ap);
    va_end(ap);
}

const char *eventlog_get(const struct eventlog *l, unsigned long i)
{
    if (i >= l->count || i >= EVENTLOG_LINES)
        return NULL;
    return l->line[(l->count - 1 - i) % EVENTLOG_LINES];
}
