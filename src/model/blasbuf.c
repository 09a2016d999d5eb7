/* OpenBLAS's matrix buffers from a pool of scalelab's (model/blasbuf.h). */
#define _GNU_SOURCE /* RTLD_NEXT, malloc_usable_size */
#include "config.h"
#include "model/blasbuf.h"

#include <cblas.h>
#include <dlfcn.h>
#include <malloc.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "base/error.h"
#include "base/hostmem.h"

#define MAX_BUFFERS 512 /* every GPU of a few runs at once, and their other callers */
/* OpenBLAS's BUFFER_SIZE on x86-64 (32 << 22, common_x86_64.h) and FIXED_PAGESIZE: what its
 * nolock allocator asks for; only said before a first buffer gives the real size */
#define GUESS_BYTES ((32u << 22) + 4096u)
#define WAIT_S      60 /* a caller without a claim waits at most this for a buffer */

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t given_back = PTHREAD_COND_INITIALIZER;
static void *buf[MAX_BUFFERS];
static bool used[MAX_BUFFERS];
static int nbuf, claimed;
static size_t bytes; /* of one buffer, once one was had */
static int cpus;     /* that compute at once: the pool's bound without claims */

/* the library's own functions, behind ours */
static void *(*lib_nolock)(int);
static void *(*lib_alloc)(int);
static void (*lib_free)(void *);
static pthread_once_t found = PTHREAD_ONCE_INIT;

static void find(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    cpus = n > 0 ? (int)n : 1;
    *(void **)&lib_nolock = dlsym(RTLD_NEXT, "blas_memory_alloc_nolock");
    *(void **)&lib_alloc = dlsym(RTLD_NEXT, "blas_memory_alloc");
    *(void **)&lib_free = dlsym(RTLD_NEXT, "blas_memory_free");
}

/* The devices are the parallelism (DESIGN.md): OpenBLAS runs on the calling thread only, in
 * every program that links this, before its main runs (OpenBLAS is set up by then: a shared
 * library's constructors run before the program's). */
__attribute__((constructor)) static void one_thread(void)
{
    openblas_set_num_threads(1);
}

/* A new buffer into the pool, under mu: its index, or -1 when none can be had. */
static int grow(void)
{
    pthread_once(&found, find);
    if (!lib_nolock || nbuf == MAX_BUFFERS)
        return -1;
    void *p = lib_nolock(0);
    if (!p)
        return -1;
    if (!bytes)
        bytes = malloc_usable_size(p);
    buf[nbuf] = p, used[nbuf] = false;
    return nbuf++;
}

size_t blasbuf_bytes(void)
{
    pthread_once(&found, find);
    pthread_mutex_lock(&mu);
    size_t b = bytes ? bytes : lib_nolock ? GUESS_BYTES : 0;
    pthread_mutex_unlock(&mu);
    return b;
}

/* The buffers the pool may hold, under mu. */
static int bound(void)
{
    return claimed > cpus ? claimed : cpus;
}

/* Frees unused buffers beyond what is claimed, under mu. */
static void trim(void)
{
    while (nbuf > claimed && !used[nbuf - 1])
        free(buf[--nbuf]);
}

int blasbuf_claim(int threads, int *got, double *need, struct error *e)
{
    pthread_once(&found, find);
    pthread_mutex_lock(&mu);
    int callers = threads < cpus ? threads : cpus;
    int want = claimed + callers, rc = 0;
    *got = 0;
    double lack = (double)(want > nbuf ? want - nbuf : 0) * (double)(bytes ? bytes : GUESS_BYTES);
    while (lib_nolock && nbuf < want && grow() >= 0)
        ;
    if (lib_nolock && nbuf < want) {
        rc = error_set(e, ERR_NOMEM, "OpenBLAS's buffers: %d of %d could be had", nbuf, want);
        trim();
    } else {
        claimed = want;
        *got = callers;
    }
    pthread_mutex_unlock(&mu);
    if (need)
        *need = lack;
    return rc;
}

void blasbuf_release(int callers)
{
    pthread_mutex_lock(&mu);
    claimed = claimed > callers ? claimed - callers : 0;
    trim();
    pthread_mutex_unlock(&mu);
}

/* Says why the process cannot go on, and ends it: OpenBLAS has no way to hear that a buffer
 * could not be had, and its caller would write through a null pointer. */
static void no_buffer(void)
{
    char msg[256];
    int n = snprintf(msg, sizeof msg,
                     "scalelab: OpenBLAS needs a matrix buffer of %zu MiB and none can be had "
                     "(the process may use %.0f MiB more); stopping\n",
                     (bytes ? bytes : GUESS_BYTES) >> 20, hostmem_room() / 1048576);
    if (n > 0)
        (void)!write(STDERR_FILENO, msg, (size_t)n < sizeof msg ? (size_t)n : sizeof msg - 1);
    _exit(1);
}

void *blas_memory_alloc(int procpos)
{
    /* a thread of OpenBLAS's pool (blas_server.c asks with 2), which never computes here: it
     * asks while the library loads, before this program's own set-up, so it asks nothing */
    if (procpos == 2)
        return NULL;
    pthread_once(&found, find);
    if (!lib_nolock) /* not the OpenBLAS this knows: its own allocator, as before */
        return lib_alloc ? lib_alloc(procpos) : NULL;
    pthread_mutex_lock(&mu);
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += WAIT_S;
    int i;
    for (;;) {
        for (i = 0; i < nbuf && used[i]; i++)
            ;
        if (i < nbuf || (nbuf < bound() && (i = grow()) >= 0))
            break;
        /* none free, none more: one in use comes back when its sgemm ends */
        if (nbuf == 0 || pthread_cond_timedwait(&given_back, &mu, &until) != 0) {
            pthread_mutex_unlock(&mu);
            no_buffer();
        }
    }
    used[i] = true;
    pthread_mutex_unlock(&mu);
    return buf[i];
}

void blas_memory_free(void *buffer)
{
    pthread_once(&found, find);
    if (!lib_nolock) {
        if (lib_free)
            lib_free(buffer);
        return;
    }
    if (!buffer)
        return;
    pthread_mutex_lock(&mu);
    for (int i = 0; i < nbuf; i++) /* kept for the next call (freed by a release) */
        if (buf[i] == buffer) {
            used[i] = false;
            break;
        }
    pthread_cond_signal(&given_back);
    pthread_mutex_unlock(&mu);
}
