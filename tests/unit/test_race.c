/* What the sanitizers still see of the element-wise loops they do not instrument
 * (src/base/race.h).
 *
 * In the TSan build, a loop's tensor read or written while another thread
 * writes or reads part of it, with no synchronization between them, is reported, naming the
 * loop; the same two accesses ordered by a mutex are not. Each case runs in a child process
 * (TSan ends a process that raced with status 66 and its report on stderr), which two threads
 * share: the second starts its access once a relaxed atomic flag, which orders nothing for TSan,
 * says the first has made its own.
 *
 * In the ASan build, a loop given a range that runs past its allocation, or an allocation
 * already freed, is reported, naming the loop (the loop itself touches only what it names, so
 * the check at its entry is the one that can see it); the same loop on its whole allocation is
 * not. Each case runs in a child process too (ASan ends it with status 1 and its report; GCC's
 * runtime calls a range that starts inside its block and runs past it an "unknown-crash", and
 * places the first byte past the block "0 bytes to the right of 4000-byte region").
 * Elsewhere (the normal build), nothing to check. */
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

#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)

/* Runs body in a child process, its stderr (the sanitizer's report) into out; the child's
 * exit status. */
static int in_child_of(void (*body)(void *), void *arg, char *out, size_t cap)
{
    char path[] = "/tmp/scalelab-race.XXXXXX";
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    unlink(path);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        dup2(fd, 2);
        body(arg);
        exit(0); /* the sanitizer makes it 66 (TSan) or 1 (ASan) if it reported */
    }
    int status = 0;
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ssize_t got = pread(fd, out, cap - 1, 0);
    out[got > 0 ? got : 0] = '\0';
    close(fd);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static char report[1 << 16];

#endif

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

static void two_threads(void *arg)
{
    struct pair *p = arg;
    pthread_t a, b;
    pthread_create(&b, NULL, run_second, p);
    pthread_create(&a, NULL, run_first, p);
    pthread_join(a, NULL);
    pthread_join(b, NULL);
}

/* Runs first then second on two threads in a child process; its exit status, and its stderr
 * (TSan's report) into out. */
static int in_child(struct pair p, bool with_order, char *out, size_t cap)
{
    ordered = with_order; /* the child's copy */
    return in_child_of(two_threads, &p, out, cap);
}

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

#elif defined(__SANITIZE_ADDRESS__)

#define N 1000 /* floats */

/* fp_round_n writes n floats of a heap block of N; clip_norm reads n of one it has freed. */
static void loop_writes_n(void *n)
{
    float *t = calloc(N, sizeof *t);
    fp_round_n(FP_BF16, t, t, *(size_t *)n);
    free(t);
}

static void loop_reads_freed(void *unused)
{
    (void)unused;
    float *volatile t = calloc(N, sizeof *t); /* volatile: the compiler would refuse the use */
    free(t);
    volatile float norm = clip_norm(t, N);
    (void)norm;
}

START_TEST(loop_past_its_allocation)
{
    size_t n = N + 1;
    int rc = in_child_of(loop_writes_n, &n, report, sizeof report);
    ck_assert_msg(rc == 1 && strstr(report, "AddressSanitizer") && strstr(report, "fp_round_n") &&
                      strstr(report, "0 bytes to the right of 4000-byte region"),
                  "exit %d, report:\n%s", rc, report);
}
END_TEST

START_TEST(loop_on_freed_memory)
{
    int rc = in_child_of(loop_reads_freed, NULL, report, sizeof report);
    ck_assert_msg(rc == 1 && strstr(report, "heap-use-after-free") && strstr(report, "clip_norm"),
                  "exit %d, report:\n%s", rc, report);
}
END_TEST

START_TEST(loop_within_its_allocation)
{
    size_t n = N;
    int rc = in_child_of(loop_writes_n, &n, report, sizeof report);
    ck_assert_msg(rc == 0 && !strstr(report, "AddressSanitizer"), "exit %d, report:\n%s", rc,
                  report);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("race");
    TCase *tc = tcase_create("uninstrumented loops");
    tcase_add_test(tc, loop_past_its_allocation);
    tcase_add_test(tc, loop_on_freed_memory);
    tcase_add_test(tc, loop_within_its_allocation);
    suite_add_tcase(s, tc);
    return harness_run(s);
}

#else

int main(void)
{
    puts("1..0 # SKIP only the sanitizer builds leave loops uninstrumented (src/base/race.h)");
    return 0;
}

#endif
