/* Benchmark group "window": the window itself, as a user meets it.
 *
 * The real program runs: this binary, exec'd in a pseudo-terminal of 120 x 40 (forkpty) with
 * TERM=xterm at a lesson's step (--lesson L --step K, K the first step whose panel is the one
 * wanted, read from the lesson file). Everything it draws is read and dropped, so it never
 * blocks on a full terminal; it tells of each frame it sends to the terminal on a socket
 * ($SCALELAB_FRAME_FD, src/ui/app.c: a line "KEYS BUSY"), so a key is timed from its write
 * to the first frame that has read it (the frame loop answers) and to the first moment after
 * it that the panel is no longer busy (the work it asked for is done and drawn). Then q, and
 * the child is waited for (killed if it does not quit within 5 s).
 *
 *   - Lesson 1's training panel playing at 1x: its CPU time (user + system, every thread) from
 *     /proc/PID/stat, each second a sample, as a percentage of one core (the target: under
 *     25).
 *   - Lesson 3's panel at 64 GPUs: k and j in turn (the size doubled, halved: each asks for a
 *     new run of 64 thread-GPUs): the frame's time beside the target, one frame (50 ms), and
 *     the time until the run is verified and drawn beside the same collective run headless
 *     in this process (comm/trial.h), taken in turns with it. Then sixty presses of h at once
 *     (64 GPUs down to 4), and of l (back): until the frame loop has answered the sixtieth.
 *   - The Lab's run mode: m, tiny to small (and back, not timed): the frame's time beside one
 *     frame, and the time until the small run is set up and drawn beside the same setup
 *     headless in this process (ui/runpace.h, without a window), in turns.
 *
 * Times are in ms; each figure is taken bench.repeats times and shown as the median with the
 * smallest and largest (cli/bench.h). */
#include "config.h"
#include "cli/bench.h"

#include <errno.h>
#include <poll.h>
#include <pty.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/error.h"
#include "calc/preset.h"
#include "comm/coll.h"
#include "comm/trial.h"
#include "lesson/lesson.h"
#include "ui/eventlog.h"
#include "ui/panel.h"
#include "ui/runpace.h"

#define FRAME_MS 50.0  /* the window's frame while something plays (src/ui/app.c) */
#define WAIT_S   300.0 /* the longest wait for the window to answer or finish its work */

/* The step (1-based) of lesson `which` whose panel is `panel`, or 0. */
static int panel_step(const char *which, const char *panel)
{
    struct lesson *l = NULL;
    struct error e = {0};
    if (lesson_find(NULL, which, &l, &e))
        return 0;
    int k = 0;
    for (size_t i = 0; i < l->nsteps && !k; i++)
        if (l->steps[i].panel && !strcmp(l->steps[i].panel->name, panel))
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

/* The window in its pseudo-terminal, and what it has told of its frames. */
struct child {
    pid_t pid;
    int pty, frames; /* the terminal's master side; the socket's end */
    char line[64];   /* a line of the frames' account being read */
    size_t len;
    unsigned long keys; /* the last line's: keys read, */
    int busy;           /* and whether the panel was busy (-1: no line yet) */
    double at;          /* when it came */
    size_t drawn;       /* bytes drawn */
    bool gone;
};

/* Starts the window at `lesson` `step`; 0, or 1 after saying why. */
static int child_start(struct child *c, const char *lesson, int step)
{
    memset(c, 0, sizeof *c);
    c->busy = -1;
    char self[4096];
    if (bench_self(self, sizeof self))
        return 1;
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0) {
        fprintf(stderr, "scalelab: bench: no socket: %s\n", strerror(errno));
        return 1;
    }
    char steparg[16], fdarg[16];
    snprintf(steparg, sizeof steparg, "%d", step);
    snprintf(fdarg, sizeof fdarg, "%d", sv[1]);
    fflush(NULL);
    struct winsize ws = {.ws_row = 40, .ws_col = 120};
    c->pid = forkpty(&c->pty, NULL, NULL, &ws);
    if (c->pid < 0) {
        fprintf(stderr, "scalelab: bench: no pseudo-terminal: %s\n", strerror(errno));
        close(sv[0]);
        close(sv[1]);
        return 1;
    }
    if (c->pid == 0) {
        close(sv[0]);
        setenv("TERM", "xterm", 1);
        setenv("SCALELAB_FRAME_FD", fdarg, 1);
        unsetenv("NO_COLOR");
        execl(self, self, "--lesson", lesson, "--step", steparg, (char *)NULL);
        _exit(127);
    }
    close(sv[1]);
    c->frames = sv[0];
    return 0;
}

/* Reads what the window draws (dropped, counted) and tells (the frames' account) until
 * done(c, arg) holds or `seconds` have gone by; whether done held (false too once the window
 * has gone). done may be NULL: read for the whole time. */
static bool pump(struct child *c, double seconds, bool (*done)(const struct child *, const void *),
                 const void *arg)
{
    double end = clock_now() + seconds;
    char buf[4096];
    for (;;) {
        if (done && done(c, arg))
            return true;
        double left = end - clock_now();
        if (left <= 0 || c->gone)
            return false;
        struct pollfd p[2] = {{c->pty, POLLIN, 0}, {c->frames, POLLIN, 0}};
        int r = poll(p, 2, (int)(left * 1000) + 1);
        if (r < 0 && errno != EINTR) {
            c->gone = true;
            continue;
        }
        if (r > 0 && (p[0].revents & (POLLIN | POLLHUP | POLLERR))) {
            ssize_t k = read(c->pty, buf, sizeof buf);
            if (k <= 0)
                c->gone = true;
            else
                c->drawn += (size_t)k;
        }
        if (r > 0 && (p[1].revents & (POLLIN | POLLHUP | POLLERR))) {
            ssize_t k = read(c->frames, buf, sizeof buf);
            for (ssize_t i = 0; i < k; i++) {
                if (buf[i] != '\n') {
                    if (c->len + 1 < sizeof c->line)
                        c->line[c->len++] = buf[i];
                    continue;
                }
                c->line[c->len] = 0, c->len = 0;
                unsigned long keys;
                int busy;
                if (sscanf(c->line, "%lu %d", &keys, &busy) == 2)
                    c->keys = keys, c->busy = busy, c->at = clock_now();
            }
        }
    }
}

/* q, then the child waited for (killed if it does not quit within 5 s); its exit status. */
static int child_end(struct child *c)
{
    if (!c->gone && write(c->pty, "q", 1) == 1)
        pump(c, 0.2, NULL, NULL);
    int status = 0;
    double end = clock_now() + 5.0;
    pid_t w;
    while ((w = waitpid(c->pid, &status, WNOHANG)) == 0 && clock_now() < end)
        pump(c, 0.05, NULL, NULL);
    if (w == 0) {
        kill(c->pid, SIGKILL);
        waitpid(c->pid, &status, 0);
    }
    close(c->pty);
    close(c->frames);
    return status;
}

/* The window has answered `keys` keys with a frame; with *idle, and is not busy either. */
static bool answered(const struct child *c, const void *arg)
{
    const unsigned long *keys = arg;
    return c->busy >= 0 && c->keys >= keys[0] && (!keys[1] || c->busy == 0);
}

/* The window has drawn *arg bytes in all. */
static bool drew(const struct child *c, const void *arg)
{
    return c->drawn >= *(const size_t *)arg;
}

/* Waits until the window is idle: every key read answered and nothing busy. */
static bool settle(struct child *c)
{
    unsigned long want[2] = {c->keys, 1};
    return pump(c, WAIT_S, answered, want) && (pump(c, 0.3, NULL, NULL), c->busy == 0);
}

/* Writes keys (n of them, all at once) and times them: the first frame that has read the
 * last, and the first moment after it that the panel is no longer busy, in ms. false after
 * saying why. */
static bool time_keys(struct child *c, const char *keys, size_t n, double *answer, double *ready)
{
    unsigned long want[2] = {c->keys + n, 0};
    double t0 = clock_now();
    if (write(c->pty, keys, n) != (ssize_t)n || !pump(c, WAIT_S, answered, want)) {
        fprintf(stderr, "scalelab: bench: the window did not answer '%.*s'\n", (int)n, keys);
        return false;
    }
    *answer = (c->at - t0) * 1000;
    want[1] = 1;
    if (!pump(c, WAIT_S, answered, want)) {
        fprintf(stderr, "scalelab: bench: the window stayed busy after '%.*s'\n", (int)n, keys);
        return false;
    }
    *ready = (c->at - t0) * 1000;
    return true;
}

/* A row of times in ms beside the target of a key's answer: one frame. */
static void beside_frame(struct bench *b, const char *what, const double *v, int n)
{
    double frame = FRAME_MS;
    bench_report_vs(b, "window", what, v, n, "ms", "a frame", &frame, 1);
}

/* ------------------------------------------------------------------ lesson 1: CPU */

static int training_cpu(struct bench *b)
{
    int step = panel_step("01", "training");
    struct child c;
    if (!step || child_start(&c, "1", step))
        return 1;
    int k = b->quick ? 2 : 2 * b->repeats; /* one-second samples */
    pump(&c, 1.0, NULL, NULL);             /* it draws for a second, then space starts the run */
    bool alive = !c.gone && write(c.pty, " ", 1) == 1;
    /* the run sets up, then plays: sampled once it draws its steps (a run that never starts
     * draws nothing; a sanitizer on a busy machine takes seconds to set one up) */
    size_t playing = c.drawn + 1000;
    pump(&c, WAIT_S, drew, &playing);
    pump(&c, 0.5, NULL, NULL);
    size_t before = c.drawn;
    double c0 = cpu_seconds(c.pid), t0 = clock_now(), c1 = c0, t1 = t0, pct[BENCH_MAX_REPEATS];
    for (int i = 0; i < k && alive; i++) {
        pump(&c, 1.0, NULL, NULL);
        alive = !c.gone;
        double cs = cpu_seconds(c.pid), t = clock_now();
        pct[i] = 100.0 * (cs - c1) / (t - t1);
        c1 = cs, t1 = t;
    }
    size_t drawn = c.drawn - before;
    int status = child_end(&c);
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

/* ------------------------------------------------------------------ lesson 3 at 64 GPUs */

/* The run the panel makes for n GPUs (panel_collective.c: N x 256 fp32 elements, its send
 * events kept, checked), headless: its wall time in ms, or -1. */
static double collective_headless(int n)
{
    struct trial_args a;
    trial_args_init(&a);
    a.op = COST_ALLREDUCE;
    a.gpus = n;
    a.count = (size_t)n * 256;
    a.record_events = true;
    if (preset_load_cluster("h100-80gb", &a.spec, NULL) != 0)
        return -1;
    struct trial t;
    struct error e = {0};
    double t0 = clock_now();
    int rc = trial_run(&a, &t, &e);
    double ms = (clock_now() - t0) * 1000;
    trial_fini(&t);
    return rc ? -1 : ms;
}

static int collective_keys(struct bench *b, int reps)
{
    int step = panel_step("03", "collective");
    struct child c;
    if (!step || child_start(&c, "3", step))
        return 1;
    char more[64];
    memset(more, 'l', sizeof more); /* up to 64 GPUs, the most */
    double answer[BENCH_MAX_REPEATS], ready[BENCH_MAX_REPEATS], headless[BENCH_MAX_REPEATS];
    double burst[BENCH_MAX_REPEATS], x;
    bool ok = settle(&c) && time_keys(&c, more, sizeof more, &x, &x) && settle(&c);
    for (int i = 0; ok && i < reps; i++) {
        ok = time_keys(&c, i % 2 ? "j" : "k", 1, &answer[i], &ready[i]) && settle(&c);
        headless[i] = collective_headless(64);
        ok = ok && headless[i] > 0;
    }
    char fewer[60];
    memset(fewer, 'h', sizeof fewer);
    memset(more, 'l', sizeof more);
    for (int i = 0; ok && i < reps; i++)
        ok = time_keys(&c, i % 2 ? more : fewer, 60, &burst[i], &x) && settle(&c);
    int status = child_end(&c);
    if (!ok) {
        fprintf(stderr, "scalelab: bench: lesson 3's window at 64 GPUs (status %d)\n", status);
        return 1;
    }
    beside_frame(b, "lesson 3, 64 GPUs: a key answered (target: a frame)", answer, reps);
    bench_report_vs(b, "window", "lesson 3, 64 GPUs: the key's run, verified, drawn", ready, reps,
                    "ms", "that run alone", headless, reps);
    beside_frame(b, "lesson 3: 60 keys at once answered (target: a frame)", burst, reps);
    return 0;
}

/* ------------------------------------------------------------------ the Lab's run mode */

static const struct runpace_ops headless_ops = {.name = "bench", .replay_s = 1};

/* The Lab's small run (4 GPUs, DDP, bf16, batch 8) set up without a window: runpace_start,
 * then polls as the window's, until every GPU waits at its first step; ms, or -1. */
static double setup_headless(void)
{
    static struct eventlog log;
    struct runpace r;
    struct error e = {0};
    struct panel_env env = {.log = &log};
    if (runpace_init(&r, &headless_ops, NULL, NULL, NULL, &env, &e) != 0)
        return -1;
    struct train_opts o;
    runpace_options(&r, 1, FP_BF16, 8, 4, &o);
    double t0 = clock_now(), ms = -1;
    if (runpace_start(&r, &o) == 0) {
        struct panel_event poll = {PANEL_POLL, 0, 1};
        while (runpace_on_event(&r, &poll) & PANEL_BUSY) {
            struct timespec w = {0, 1000000};
            nanosleep(&w, NULL);
        }
        ms = r.ready ? (clock_now() - t0) * 1000 : -1;
    }
    runpace_fini(&r);
    return ms;
}

static int lab_switch(struct bench *b, int reps)
{
    int step = panel_step("lab", "dprun");
    struct child c;
    if (!step || child_start(&c, "lab", step))
        return 1;
    double answer[BENCH_MAX_REPEATS], ready[BENCH_MAX_REPEATS], headless[BENCH_MAX_REPEATS], x;
    bool ok = settle(&c);
    for (int i = 0; ok && i < reps; i++) {
        ok = time_keys(&c, "m", 1, &answer[i], &ready[i]) && settle(&c) &&
             time_keys(&c, "m", 1, &x, &x) && settle(&c); /* back to tiny */
        headless[i] = setup_headless();
        ok = ok && headless[i] > 0;
    }
    int status = child_end(&c);
    if (!ok) {
        fprintf(stderr, "scalelab: bench: the Lab's run mode (status %d)\n", status);
        return 1;
    }
    beside_frame(b, "Lab's run mode, tiny -> small: key answered (target: a frame)", answer, reps);
    bench_report_vs(b, "window", "Lab's run mode, tiny -> small: set up, drawn", ready, reps, "ms",
                    "the setup alone", headless, reps);
    return 0;
}

static int run(struct bench *b)
{
    int reps = b->quick ? 2 : b->repeats < BENCH_MAX_REPEATS ? b->repeats : BENCH_MAX_REPEATS;
    return training_cpu(b) || collective_keys(b, reps) || lab_switch(b, reps);
}

const struct bench_case bench_window = {
    "window",
    "the window in a pseudo-terminal: its CPU while lesson 1's training panel plays, the frame "
    "and the run after a key in lesson 3's panel at 64 GPUs, and the small model in the Lab's "
    "run mode",
    run,
};
