check_PROGRAMS += tests/unit/test_base
tests_unit_test_base_SOURCES = tests/unit/test_base.c
tests_unit_test_base_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_base_LDADD = $(UNIT_LIBS)

SH_TESTS += tests/cli/basics.sh
# the checks of tests/lib.sh fail where they must (an empty needle, all() over an empty list)
SH_TESTS += tests/cli/checks.sh
SH_TESTS += tests/cli/style.sh
