/* A panel's work on a thread of its own (ui/bgjob.h). */
#include "config.h"
#include "ui/bgjob.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/syscall.h>
#endif

#include "base/error.h"

#define BGJOB_NICE 10 /* how far behind the window's thread a job's threads run */

struct bgjob {
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv; /* done became true */
    bool done;
    void (*fn)(void *arg);
    void *arg;
};

static void *job_main(void *p)
{
    struct bgjob *j = p;
#ifdef __linux__
    /* Behind the window's thread: on Linux the nice value is a thread's, and threads the job
     * starts (a run's GPUs) take it from it; with the process's threads grouped against the
     * others' (autogroups) this moves time from the job to the window's frames, not to other
     * programs. A failure leaves the job as it was. */
    pid_t tid = (pid_t)syscall(SYS_gettid);
    errno = 0;
    int nice = getpriority(PRIO_PROCESS, (id_t)tid);
    if (errno == 0)
        (void)setpriority(PRIO_PROCESS, (id_t)tid, nice + BGJOB_NICE);
#endif
    j->fn(j->arg);
    pthread_mutex_lock(&j->mu);
    j->done = true;
    pthread_cond_broadcast(&j->cv);
    pthread_mutex_unlock(&j->mu);
    return NULL;
}

int bgjob_start(struct bgjob **out, void (*fn)(void *arg), void *arg, struct error *e)
{
    *out = NULL;
    struct bgjob *j = calloc(1, sizeof *j);
    if (!j)
        return error_set(e, ERR_NOMEM, "out of memory");
    j->fn = fn, j->arg = arg;
    pthread_mutex_init(&j->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&j->cv, &ca);
    pthread_condattr_destroy(&ca);
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old); /* the new thread inherits the mask */
    int rc = pthread_create(&j->thread, NULL, job_main, j);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0) {
        pthread_cond_destroy(&j->cv);
        pthread_mutex_destroy(&j->mu);
        free(j);
        return error_set(e, ERR_NOMEM, "cannot start a thread: %s", strerror(rc));
    }
    *out = j;
    return 0;
}

bool bgjob_done(struct bgjob *j, double wait_s)
{
    struct timespec until;
    clock_gettime(CLOCK_MONOTONIC, &until);
    long ns = (long)(wait_s * 1e9);
    until.tv_sec += ns / 1000000000L;
    until.tv_nsec += ns % 1000000000L;
    if (until.tv_nsec >= 1000000000L)
        until.tv_sec++, until.tv_nsec -= 1000000000L;
    pthread_mutex_lock(&j->mu);
    while (!j->done && wait_s > 0 && pthread_cond_timedwait(&j->cv, &j->mu, &until) != ETIMEDOUT)
        ;
    bool done = j->done;
    pthread_mutex_unlock(&j->mu);
    return done;
}

void bgjob_finish(struct bgjob *j)
{
    if (!j)
        return;
    pthread_join(j->thread, NULL);
    pthread_cond_destroy(&j->cv);
    pthread_mutex_destroy(&j->mu);
    free(j);
}
