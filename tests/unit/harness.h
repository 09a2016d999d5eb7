/* Runs a Check suite and reports each test as a TAP line, so that the test harness counts
 * the individual checks. Exit status 0 only if every test passed. */
#ifndef SCALELAB_TESTS_HARNESS_H
#define SCALELAB_TESTS_HARNESS_H

#include <check.h>

int harness_run(Suite *s);

/* The same for a suite that starts no thread: under ThreadSanitizer, whose worth is in the
 * races, it is skipped with the reason (one TAP line), since only its minutes would show; the
 * normal and ASan+UBSan builds run it. */
int harness_run_threadless(Suite *s);

/* A file under tests/data (the source tree's, found through $srcdir). */
const char *harness_data(const char *name);

#endif
