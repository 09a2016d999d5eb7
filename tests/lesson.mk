# tests of src/lesson: the parser, answers, quantities, ASCII fallback, progress, the shipped lessons
check_PROGRAMS += tests/unit/test_lesson
tests_unit_test_lesson_SOURCES = tests/unit/test_lesson.c
tests_unit_test_lesson_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_lesson_LDADD = $(UNIT_LIBS)

# scalelab run: lessons headless
SH_TESTS += tests/cli/run.sh tests/cli/presets.sh tests/cli/lesson_claims.sh \
	tests/cli/doc_figures.sh

# libFuzzer target for the parser (clang only, never part of the build or the tests; see
# tests/fuzz/README.md).
FUZZ_CC = clang
FUZZ_SECONDS = 60
# The calculator and what it stands on, for every fuzz target that reads presets or lessons:
# one list, so a new calc/ file is added once.
FUZZ_CALC_SRC = $(top_srcdir)/src/calc/preset.c $(top_srcdir)/src/calc/params.c \
	$(top_srcdir)/src/calc/activ.c $(top_srcdir)/src/calc/memory.c \
	$(top_srcdir)/src/calc/plan.c $(top_srcdir)/src/calc/sched.c \
	$(top_srcdir)/src/calc/traffic.c $(top_srcdir)/src/calc/framework.c \
	$(top_srcdir)/src/comm/cost.c $(top_srcdir)/src/comm/tree.c $(top_srcdir)/src/sim/spec.c \
	$(top_srcdir)/src/sim/port.c \
	$(top_srcdir)/src/base/error.c $(top_srcdir)/src/base/units.c \
	$(top_srcdir)/src/base/datadir.c $(top_srcdir)/src/base/ckpt.c \
	$(top_srcdir)/src/base/cpu.c $(top_srcdir)/src/base/readfile.c $(top_srcdir)/src/base/experts.c \
	$(top_srcdir)/src/num/fp.c
FUZZ_LESSON_SRC = $(top_srcdir)/tests/fuzz/fuzz_lesson.c \
	$(top_srcdir)/src/lesson/lesson.c $(top_srcdir)/src/lesson/quantity.c \
	$(top_srcdir)/src/lesson/quantity_expr.c $(top_srcdir)/src/lesson/quantity_comm.c \
	$(top_srcdir)/src/lesson/lesson_check.c $(top_srcdir)/src/lesson/lesson_files.c \
	$(top_srcdir)/src/lesson/text.c $(top_srcdir)/src/lesson/figure.c \
	$(top_srcdir)/src/lesson/ascii.c $(top_srcdir)/src/lesson/progress.c \
	$(FUZZ_CALC_SRC)
EXTRA_DIST += tests/fuzz

# The parser and what it evaluates are compiled with the fuzzer's instrumentation; the engines
# a few quantities run (a training step's FLOPs, the data's entropy: src/par, src/model) come
# from the library, uninstrumented.
fuzz-lesson: $(FUZZ_LESSON_SRC) libscalelab.a
	@mkdir -p tests/fuzz
	$(FUZZ_CC) -std=c11 -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
		-I. -I$(top_srcdir)/src $(AM_CPPFLAGS) $(FUZZ_LESSON_SRC) \
		-o tests/fuzz/fuzz_lesson libscalelab.a $(OPENBLAS_LIBS) $(MPI_LIBS) $(JANSSON_LIBS) \
		$(INIH_LIBS) $(PTHREAD_LIBS) -lm

fuzz-lesson-run: fuzz-lesson
	rm -rf tests/fuzz/corpus && mkdir -p tests/fuzz/corpus
	cp $(top_srcdir)/lessons/*.lesson $(top_srcdir)/tests/data/lessons/*.lesson tests/fuzz/corpus/
	tests/fuzz/fuzz_lesson -max_total_time=$(FUZZ_SECONDS) -max_len=8192 tests/fuzz/corpus

CLEANFILES += tests/fuzz/fuzz_lesson

.PHONY: fuzz-lesson fuzz-lesson-run
SH_TESTS += tests/cli/progress.sh
