/* What ThreadSanitizer still sees of the element-wise loops it does not instrument
 * (src/base/race.h): in the TSan build, a loop's tensor read or written while another thread
 * writes or reads part of it, with no synchronization between them, is reported, naming the
 * loop; the same two accesses ordered by a mutex are not. Each case runs in a child process
 * (TSan ends a process that raced with status 66 and its report on stderr), which two threads
 * share: the second starts its access once a relaxed atomic flag, which orders nothing for TSan,
 * says the first has made its own. Elsewhere than in the TSan build, nothing to check. */
#include "config.h"

#include <check.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "num/clip.h"
#include "num/fp.h"

#if defined(__SANITIZE_THREAD__)

#define N 4096 /* floats: 16 KiB, far more than a line */

static float tensor[N];
static volatile float seen;
static atomic_int first_done;
static pthread_mutex_t order = PTHREAD_MUTEX_INITIALIZER;
static bool ordered;

/* The loop's access: fp_round_n writes the whole tensor, clip_norm reads it. */
static void loop_writes(void)
{
    fp_round_n(FP_BF16, tensor, tensor, N);
}

static void loop_reads(void)
{
    volatile float norm = clip_norm(tensor, N);
    (void)norm;
}

/* Another thread's: 64 bytes from byte 1000, not on a line's start, element by element
 * (GCC leaves a memcpy or memset it expands inline uninstrumented). */
static void other_reads(void)
{
    float sum = 0;
    for (int i = 250; i < 266; i++)
        sum += tensor[i];
    seen = sum;
}

static void other_writes(void)
{
    for (int i = 250; i < 266; i++)
        tensor[i] = (float)i;
}

struct pair {
    void (*first)(void);
    void (*second)(void);
};

static void *run_first(void *arg)
{
    const struct pair *p = arg;
    if (ordered)
        pthread_mutex_lock(&order);
    p->first();
    if (ordered)
        pthread_mutex_unlock(&order);
    atomic_store_explicit(&first_done, 1, memory_order_relaxed);
    return NULL;
}

static void *run_second(void *arg)
{
    const struct pair *p = arg;
    while (!atomic_load_explicit(&first_done, memory_order_relaxed))
        sched_yield();
    if (ordered)
        pthread_mutex_lock(&order);
    p->second();
    if (ordered)
        pthread_mutex_unlock(&order);
    return NULL;
}

/* Runs first then second on two threads in a child process; its exit status, and its stderr
 * (TSan's report) into report. */
static int in_child(struct pair p, bool with_order, char *report, size_t cap)
{
    char path[] = "/tmp/scalelab-race.XXXXXX";
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    unlink(path);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        dup2(fd, 2);
        ordered = with_order;
        pthread_t a, b;
        pthread_create(&b, NULL, run_second, &p);
        pthread_create(&a, NULL, run_first, &p);
        pthread_join(a, NULL);
        pthread_join(b, NULL);
        exit(0); /* TSan makes it 66 if it reported */
    }
    int status = 0;
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ssize_t got = pread(fd, report, cap - 1, 0);
    report[got > 0 ? got : 0] = '\0';
    close(fd);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static char report[1 << 16];

START_TEST(loop_write_races_another_read)
{
    int rc = in_child((struct pair){loop_writes, other_reads}, false, report, sizeof report);
    ck_assert_msg(rc == 66 && strstr(report, "data race") && strstr(report, "fp_round_n"),
                  "exit %d, report:\n%s", rc, report);
}
END_TEST

START_TEST(another_write_races_loop_read)
{
    int rc = in_child((struct pair){other_writes, loop_reads}, false, report, sizeof report);
    ck_assert_msg(rc == 66 && strstr(report, "data race") && strstr(report, "clip_norm"),
                  "exit %d, report:\n%s", rc, report);
}
END_TEST

START_TEST(ordered_accesses_do_not_race)
{
    int rc = in_child((struct pair){loop_writes, other_reads}, true, report, sizeof report);
    ck_assert_msg(rc == 0 && !strstr(report, "data race"), "exit %d, report:\n%s", rc, report);
    rc = in_child((struct pair){other_writes, loop_reads}, true, report, sizeof report);
    ck_assert_msg(rc == 0 && !strstr(report, "data race"), "exit %d, report:\n%s", rc, report);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("race");
    TCase *tc = tcase_create("uninstrumented loops");
    tcase_add_test(tc, loop_write_races_another_read);
    tcase_add_test(tc, another_write_races_loop_read);
    tcase_add_test(tc, ordered_accesses_do_not_race);
    suite_add_tcase(s, tc);
    return harness_run(s);
}

#else

int main(void)
{
    puts(
        "1..0 # SKIP only the ThreadSanitizer build leaves loops uninstrumented (src/base/race.h)");
    return 0;
}

#endif
