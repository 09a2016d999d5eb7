/* The memory this process may still take under its limits (base/hostmem.h). */
#include "config.h"
#include "base/hostmem.h"

#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>

#include "base/error.h"
#include "base/units.h"

/* A field of /proc/self/status in bytes ("VmSize:  123 kB"), or -1. */
static double status_bytes(const char *field)
{
    FILE *f = fopen("/proc/self/status", "r");
    if (!f)
        return -1;
    char line[256];
    double kb = -1;
    size_t n = strlen(field);
    while (fgets(line, sizeof line, f))
        if (!strncmp(line, field, n) && line[n] == ':' && sscanf(line + n + 1, "%lf", &kb) == 1)
            break;
    fclose(f);
    return kb < 0 ? -1 : kb * 1024;
}

/* The room a limit leaves: INFINITY when it is not set (or what is used cannot be read). */
static double left(int resource, const char *used_field, const char **which)
{
    struct rlimit rl;
    if (getrlimit(resource, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY)
        return INFINITY;
    double used = status_bytes(used_field);
    if (used < 0)
        return INFINITY;
    *which = resource == RLIMIT_AS ? "address space: ulimit -v" : "data: ulimit -d";
    return (double)rl.rlim_cur > used ? (double)rl.rlim_cur - used : 0;
}

static double room_of(const char **which)
{
    const char *as = NULL, *data = NULL;
    double a = left(RLIMIT_AS, "VmSize", &as), d = left(RLIMIT_DATA, "VmData", &data);
    *which = a <= d ? as : data;
    return a <= d ? a : d;
}

double hostmem_room(void)
{
    const char *which;
    return room_of(&which);
}

int hostmem_refuse(double need, double room, const char *what, struct error *e)
{
    const char *which = NULL;
    room_of(&which);
    char a[32], b[32];
    return error_set(e, ERR_NOMEM, "%s needs %s, the process may use %s more (its %s)", what,
                     units_format_bytes_in(a, sizeof a, need, "MiB"),
                     units_format_bytes_in(b, sizeof b, room, "MiB"), which ? which : "limits");
}

int hostmem_check(double need, const char *what, struct error *e)
{
    double room = hostmem_room();
    return need <= room ? 0 : hostmem_refuse(need, room, what, e);
}
