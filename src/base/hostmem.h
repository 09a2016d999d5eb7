/* The memory this process may still take from the host, under its limits (ulimit -v, -d): what
 * a run checks before it starts, so that one that cannot get its buffers says so at once
 * instead of failing, or spinning, somewhere inside. */
#ifndef SCALELAB_BASE_HOSTMEM_H
#define SCALELAB_BASE_HOSTMEM_H

struct error;

/* Bytes the process may still map: its address-space limit (RLIMIT_AS) less its address space
 * now (VmSize), and its data limit (RLIMIT_DATA, which counts private writable mappings) less
 * its data now (VmData), whichever is smaller; INFINITY when neither is limited. */
double hostmem_room(void);

/* 0 when need bytes fit hostmem_room(); else ERR_NOMEM, "WHAT needs N MiB, the process may
 * use M MiB more (its LIMIT: ulimit -v)" with what (and its parts, in words) as given. */
int hostmem_check(double need, const char *what, struct error *e);

/* The same message for a need already known not to fit (room: hostmem_room() when it was
 * measured). */
int hostmem_refuse(double need, double room, const char *what, struct error *e);

#endif
