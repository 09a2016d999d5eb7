/* Runs a Check suite and reports each test as a TAP line, so that the test harness counts
 * the individual checks. Exit status 0 only if every test passed. */
#ifndef SCALELAB_TESTS_HARNESS_H
#define SCALELAB_TESTS_HARNESS_H

#include <check.h>
#include <stdbool.h>

int harness_run(Suite *s);

/* The same for a suite that starts no thread: under ThreadSanitizer, whose worth is in the
 * races, it is skipped with the reason (one TAP line), since only its minutes would show; the
 * normal and ASan+UBSan builds run it. */
int harness_run_threadless(Suite *s);

/* Whether this is a sanitizer build (ASan or TSan): about ten times slower, where a test may
 * check fewer cases (the normal build checks them all). */
bool harness_sanitized(void);

/* A file under tests/data (the source tree's, found through $srcdir). */
const char *harness_data(const char *name);

/* A loop that waits on a state, not on the clock, and still ends:
 *     for (double t0 = 0; !done && harness_wait(&t0);) { ... }
 * true (after a 2 ms sleep, but for the first call, which sets t0) until HARNESS_WAIT_S have
 * passed since the first call: far more than the state takes on a busy machine under a
 * sanitizer, so only a state never reached ends the loop there. */
#define HARNESS_WAIT_S 60.0
bool harness_wait(double *t0);

struct panel_ops;
/* What the window does while a panel works elsewhere (ui/panel.h: PANEL_POLL): polls the panel
 * until a poll returns without PANEL_BUSY, so that a test sees the state the work ends in.
 * Waits on that state, with a deadline of minutes (a failure, not a slow machine, reaches it);
 * returns the flags the polls returned, or-ed. */
int harness_settle(const struct panel_ops *p, void *state);

#endif
