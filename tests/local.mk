# Every test speaks TAP, so the harness counts each check, not each program.
# tests/timed.sh adds each test's wall and CPU time to its log.
LOG_DRIVER = env AM_TAP_AWK='$(AWK)' $(SHELL) $(top_srcdir)/tests/timed.sh \
	$(SHELL) $(top_srcdir)/build-aux/tap-driver.sh
TEST_EXTENSIONS = .sh
SH_LOG_DRIVER = $(LOG_DRIVER)
AM_TESTS_ENVIRONMENT = srcdir='$(abs_top_srcdir)'; export srcdir; \
	SCALELAB='$(abs_top_builddir)/scalelab$(EXEEXT)'; export SCALELAB; \
	SCALELAB_DATA='$(abs_top_srcdir)'; export SCALELAB_DATA; \
	TMUX_BIN='$(TMUX)'; export TMUX_BIN; \
	SCALELAB_SANITIZERS='$(SAN_CFLAGS)'; export SCALELAB_SANITIZERS; \
	MPIRUN='$(MPIRUN)'; export MPIRUN; \
	OPENBLAS_NUM_THREADS=1; export OPENBLAS_NUM_THREADS;
# OPENBLAS_NUM_THREADS=1: scalelab runs OpenBLAS on each thread-GPU's own thread
# (openblas_set_num_threads(1) in main), but the library has already started its own thread
# pool when it loaded, and each pool thread spins on sched_yield for a while before it sleeps:
# 0.05 s of a core in a 0.05 s training run, a sixth of the CPU of tests/cli/train_dp.sh
# (measured). Read at load time, the variable keeps the pool from starting; the bits are the
# same (one thread computes every GEMM either way).

# Check unit tests: one program per layer, each linking the internal library.
UNIT_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
check_LIBRARIES = tests/unit/libharness.a
tests_unit_libharness_a_SOURCES = tests/unit/harness.c tests/unit/harness.h \
	tests/unit/gptref.c tests/unit/gptref.h
tests_unit_libharness_a_CFLAGS = $(UNIT_CFLAGS)
UNIT_LIBS = tests/unit/libharness.a $(LIBS_ALL) $(CHECK_LIBS)

EXTRA_DIST += tests/lib.sh tests/tui/lib.sh tests/data tests/timed.sh

# Shell tests are listed in SH_TESTS, so that they are distributed as well as run. The first
# two run the numeric tests again as an AVX2 and a pre-AVX machine would (tests/as_cpu.sh); they
# are the longest, so they start first of the shell tests (after the unit test programs).
SH_TESTS = tests/cli/as_avx2.sh tests/cli/as_pre_avx.sh
EXTRA_DIST += tests/as_cpu.sh

# Each area lists its unit tests (tests/unit), command-line tests (tests/cli) and terminal
# tests driven through tmux (tests/tui) in its own fragment.
include tests/base.mk
include tests/num.mk
include tests/lesson.mk
include tests/ui.mk
include tests/calc.mk
include tests/comm.mk
include tests/train.mk
include tests/robust.mk

TESTS += $(check_PROGRAMS)

TESTS += $(SH_TESTS)
EXTRA_DIST += $(SH_TESTS)
