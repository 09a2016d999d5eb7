# tests of src/ui: the pure layout and formatting (Check), the window driven in tmux, and
# the refusal to open without a terminal.
check_PROGRAMS += tests/unit/test_ui
tests_unit_test_ui_SOURCES = tests/unit/test_ui.c
tests_unit_test_ui_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_ui_LDADD = $(UNIT_LIBS)

SH_TESTS += tests/cli/window_refuses.sh
SH_TESTS += tests/tui/window.sh tests/tui/presenter.sh
SH_TESTS += tests/tui/dprun.sh tests/tui/pprun.sh
