# tests of src/calc and comm/cost
check_PROGRAMS += tests/unit/test_calc
tests_unit_test_calc_SOURCES = tests/unit/test_calc.c
tests_unit_test_calc_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_calc_LDADD = $(UNIT_LIBS)

SH_TESTS += tests/cli/memory.sh tests/cli/plan.sh tests/cli/pipeline.sh tests/cli/comm_agree.sh
SH_TESTS += tests/tui/lab.sh tests/tui/layout.sh
check_PROGRAMS += tests/unit/test_stackbar
tests_unit_test_stackbar_SOURCES = tests/unit/test_stackbar.c
tests_unit_test_stackbar_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_stackbar_LDADD = $(UNIT_LIBS)
SH_TESTS += tests/cli/emit.sh
check_PROGRAMS += tests/unit/test_emit
tests_unit_test_emit_SOURCES = tests/unit/test_emit.c
tests_unit_test_emit_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_emit_LDADD = $(UNIT_LIBS)
EXTRA_DIST += tests/framework_rules.py
