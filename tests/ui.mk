# tests of src/ui: the pure layout and formatting (Check), the window driven in tmux, and
# the refusal to open without a terminal.
check_PROGRAMS += tests/unit/test_ui
tests_unit_test_ui_SOURCES = tests/unit/test_ui.c
tests_unit_test_ui_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_ui_LDADD = $(UNIT_LIBS)

SH_TESTS += tests/cli/window_refuses.sh
SH_TESTS += tests/tui/window.sh tests/tui/presenter.sh
SH_TESTS += tests/tui/dprun.sh tests/tui/pprun.sh tests/tui/cprun.sh tests/tui/eprun.sh
SH_TESTS += tests/tui/timeline.sh

# The panels' pictures at three terminal sizes, against tests/data/snapshots; after a change
# of picture that is meant, "make update-snapshots" saves the new ones (review: git diff).
check_PROGRAMS += tests/unit/test_snapshot
tests_unit_test_snapshot_SOURCES = tests/unit/test_snapshot.c
tests_unit_test_snapshot_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_snapshot_LDADD = $(UNIT_LIBS)
# what each picture of a lesson step shows at each size, written as the test runs (a table to
# read, never compared)
CLEANFILES += tests/snapshots-essentials.txt

update-snapshots: tests/unit/test_snapshot$(EXEEXT)
	SCALELAB_UPDATE_SNAPSHOTS=1 srcdir='$(abs_top_srcdir)' SCALELAB_DATA='$(abs_top_srcdir)' \
		tests/unit/test_snapshot$(EXEEXT)

.PHONY: update-snapshots

# lesson 4's pipeline chart as data, from a real run's events
check_PROGRAMS += tests/unit/test_ppgantt
tests_unit_test_ppgantt_SOURCES = tests/unit/test_ppgantt.c
tests_unit_test_ppgantt_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_ppgantt_LDADD = $(UNIT_LIBS)

# the run panels' timeline of a step: spans in, rows out, the exposed communication marked
check_PROGRAMS += tests/unit/test_timeline
tests_unit_test_timeline_SOURCES = tests/unit/test_timeline.c
tests_unit_test_timeline_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_timeline_LDADD = $(UNIT_LIBS)
