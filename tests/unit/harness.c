/* What every unit test program shares (tests/unit/harness.h): running a Check suite as TAP
 * lines, and finding the test data under $srcdir. */
#include "config.h"
#include "harness.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "base/clock.h"
#include "ui/panel.h"

int harness_run(Suite *s)
{
    SRunner *sr = srunner_create(s);
    srunner_set_tap(sr, "-");
    srunner_run_all(sr, CK_SILENT);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}

#if defined(__SANITIZE_THREAD__)
#define HARNESS_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define HARNESS_TSAN 1
#endif
#endif
#if defined(HARNESS_TSAN) || defined(__SANITIZE_ADDRESS__)
#define HARNESS_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define HARNESS_SANITIZED 1
#endif
#endif

#ifdef HARNESS_SANITIZED
/* A sanitizer build runs about ten times slower (and a busy machine slower still): every
 * test case's timeout, Check's default (4 s) or its own, is ten times as long there. Check
 * reads CK_TIMEOUT_MULTIPLIER as each test case is made, so before main builds the suite; a
 * value already in the environment is kept. */
__attribute__((constructor)) static void harness_sanitized_timeouts(void)
{
    setenv("CK_TIMEOUT_MULTIPLIER", "10", 0);
}
#endif

bool harness_sanitized(void)
{
#ifdef HARNESS_SANITIZED
    return true;
#else
    return false;
#endif
}

int harness_run_threadless(Suite *s)
{
#ifdef HARNESS_TSAN
    printf("1..0 # SKIP no thread here: ThreadSanitizer looks for races (normal and ASan builds "
           "run it)\n");
    srunner_free(srunner_create(s)); /* which frees the suite */
    return EXIT_SUCCESS;
#else
    return harness_run(s);
#endif
}

const char *harness_data(const char *name)
{
    static char path[4096];
    const char *srcdir = getenv("srcdir");
    snprintf(path, sizeof path, "%s/tests/data/%s", srcdir ? srcdir : ".", name);
    return path;
}

bool harness_wait(double *t0)
{
    if (*t0 == 0) {
        *t0 = clock_now();
        return true;
    }
    struct timespec ms = {0, 2000000};
    nanosleep(&ms, NULL);
    return clock_now() - *t0 < HARNESS_WAIT_S;
}

int harness_settle(const struct panel_ops *p, void *state)
{
    struct panel_event poll = {PANEL_POLL, 0, 1};
    int all = 0;
    double until = clock_now() + 600;
    for (;;) {
        int r = p->on_event ? p->on_event(state, &poll) : 0;
        all |= r;
        if (!(r & PANEL_BUSY))
            return all;
        ck_assert_msg(clock_now() < until, "panel %s: still busy after 600 s", p->name);
        struct timespec ms = {0, 1000000};
        nanosleep(&ms, NULL);
    }
}
