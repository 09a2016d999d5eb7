# tests of src/num
check_PROGRAMS += tests/unit/test_num
tests_unit_test_num_SOURCES = tests/unit/test_num.c
tests_unit_test_num_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_num_LDADD = $(UNIT_LIBS)
# what ThreadSanitizer sees of the loops its build leaves uninstrumented (src/base/race.h)
check_PROGRAMS += tests/unit/test_race
tests_unit_test_race_SOURCES = tests/unit/test_race.c
tests_unit_test_race_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_race_LDADD = $(UNIT_LIBS)

SH_TESTS += tests/cli/formats.sh
SH_TESTS += tests/cli/bench.sh tests/cli/paths.sh
