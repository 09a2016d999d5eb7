# tests of src/ui: the pure layout and formatting (Check), the window driven in tmux, and
# the refusal to open without a terminal.
check_PROGRAMS += tests/unit/test_ui
tests_unit_test_ui_SOURCES = tests/unit/test_ui.c
tests_unit_test_ui_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_ui_LDADD = $(UNIT_LIBS)

SH_TESTS += tests/cli/window_refuses.sh
SH_TESTS += tests/tui/window.sh tests/tui/presenter.sh
SH_TESTS += tests/tui/dprun.sh tests/tui/pprun.sh

# lesson 4's pipeline chart as data, from a real run's events
check_PROGRAMS += tests/unit/test_ppgantt
tests_unit_test_ppgantt_SOURCES = tests/unit/test_ppgantt.c
tests_unit_test_ppgantt_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_ppgantt_LDADD = $(UNIT_LIBS)
