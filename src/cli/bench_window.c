/* Benchmark group "window": the CPU the window itself uses while lesson 1's training panel
 * plays at 1x (the target: under a quarter of one core).
 *
 * The real program runs: this binary, exec'd in a pseudo-terminal of 120 x 40 (forkpty) with
 * TERM=xterm, opened at lesson 1's first step whose panel is "training" (--lesson 1 --step K,
 * K read from the lesson file). After it has drawn for a second, a space starts the run at 1x;
 * its CPU time (user + system, every thread: the window's loop and the thread-GPUs training)
 * is read from /proc/PID/stat every second for the next seconds of wall time, each second a
 * sample. Then q, and the child is waited for (killed if it does not quit within 5 s).
 * Everything the child draws is read and dropped, so it never blocks on a full terminal. The
 * figure is CPU seconds per wall second as a percentage of one core; there is no limit to
 * divide by but the core itself. */
#include "config.h"
#include "cli/bench.h"

#include <errno.h>
#include <poll.h>
#include <pty.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/error.h"
#include "lesson/lesson.h"

/* The step (1-based) of lesson 01 whose panel is "training", or 0. */
static int training_step(void)
{
    struct lesson *l = NULL;
    struct error e = {0};
    if (lesson_find(NULL, "01", &l, &e))
        return 0;
    int k = 0;
    for (size_t i = 0; i < l->nsteps && !k; i++)
        if (l->steps[i].panel && !strcmp(l->steps[i].panel->name, "training"))
            k = (int)i + 1;
    lesson_free(l);
    return k;
}

/* The child's CPU seconds so far (utime + stime of /proc/PID/stat), or -1. */
static double cpu_seconds(pid_t pid)
{
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    const char *p = strrchr(buf, ')'); /* the name may hold spaces */
    unsigned long long ut, st;
    if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut, &st) != 2)
        return -1;
    return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
}

/* Reads and drops what the child writes, for `seconds`, counting the bytes in *got (may be
 * NULL); false once it has gone. */
static bool drain(int fd, double seconds, size_t *got)
{
    char buf[4096];
    double end = clock_now() + seconds;
    for (;;) {
        double left = end - clock_now();
        if (left <= 0)
            return true;
        struct pollfd p = {fd, POLLIN, 0};
        int r = poll(&p, 1, (int)(left * 1000) + 1);
        if (r < 0 && errno != EINTR)
            return false;
        ssize_t k = r > 0 ? read(fd, buf, sizeof buf) : 0;
        if (r > 0 && k <= 0)
            return false;
        if (got && k > 0)
            *got += (size_t)k;
    }
}

static int run(struct bench *b)
{
    int step = training_step();
    if (!step) {
        fprintf(stderr, "scalelab: bench: lesson 1 has no step with the training panel\n");
        return 1;
    }
    char self[4096];
    if (bench_self(self, sizeof self))
        return 1;
    char steparg[16];
    snprintf(steparg, sizeof steparg, "%d", step);
    fflush(NULL);
    int fd;
    struct winsize ws = {.ws_row = 40, .ws_col = 120};
    pid_t pid = forkpty(&fd, NULL, NULL, &ws);
    if (pid < 0) {
        fprintf(stderr, "scalelab: bench: no pseudo-terminal: %s\n", strerror(errno));
        return 1;
    }
    if (pid == 0) {
        setenv("TERM", "xterm", 1);
        unsetenv("NO_COLOR");
        execl(self, self, "--lesson", "1", "--step", steparg, (char *)NULL);
        _exit(127);
    }
    int k = b->quick ? 2 : 2 * b->repeats; /* one-second samples */
    size_t drawn = 0; /* bytes drawn while playing: a run that did not start draws nothing */
    bool alive = drain(fd, 1.0, NULL) && write(fd, " ", 1) == 1 && drain(fd, 0.5, NULL);
    double c0 = cpu_seconds(pid), t0 = clock_now(), c1 = c0, t1 = t0, pct[BENCH_MAX_REPEATS];
    for (int i = 0; i < k && alive; i++) {
        alive = drain(fd, 1.0, &drawn);
        double c = cpu_seconds(pid), t = clock_now();
        pct[i] = 100.0 * (c - c1) / (t - t1);
        c1 = c, t1 = t;
    }
    if (alive && write(fd, "q", 1) == 1)
        drain(fd, 0.2, NULL);
    int status = 0;
    double end = clock_now() + 5.0;
    pid_t w;
    while ((w = waitpid(pid, &status, WNOHANG)) == 0 && clock_now() < end)
        drain(fd, 0.05, NULL);
    if (w == 0) {
        kill(pid, SIGKILL);
        waitpid(pid, &status, 0);
    }
    close(fd);
    if (!alive || c0 < 0 || c1 < 0) {
        fprintf(stderr, "scalelab: bench: the window ended early (status %d)\n", status);
        return 1;
    }
    if (drawn < 1000) {
        fprintf(stderr,
                "scalelab: bench: the training panel drew %zu bytes in %.1f s: it did not "
                "play\n",
                drawn, t1 - t0);
        return 1;
    }
    double core = 100;
    bench_report_vs(b, "window", "lesson 1's training panel playing at 1x: CPU (target < 25)", pct,
                    k, "% core", "one core", &core, 1);
    return 0;
}

const struct bench_case bench_window = {
    "window",
    "the window's CPU while lesson 1's training panel plays at 1x, in a pseudo-terminal: percent "
    "of one core",
    run,
};
