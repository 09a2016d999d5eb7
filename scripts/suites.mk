# Everything scripts/test runs, under one jobserver: `make -j6 -f scripts/suites.mk` runs
# "make check" in build/, build-asan/ and build-tsan/ (configured already) side by side, each
# building what it needs and then running its tests, and beside them the tarball's check and
# the fuzzers, all of them taking their jobs from the same slots. A suite's compiling and
# its tests that wait (on a terminal, a process) leave their slots to the others, so both cores
# stay busy until the last job ends, whichever it is (the fuzzers and the tarball's check used
# to run after the suites, on a machine the suites' last tests had left half idle).
# A suite's output goes to DIR/check.out and its status to DIR/check.rc; the others' to
# build/NAME.log and build/NAME.rc.
SUITES = build build-asan build-tsan
EXTRAS = distcheck fuzz-parsers fuzz-command-line

all: $(SUITES) $(EXTRAS)

# Each build's program and library first, then its suite: the fuzzers and the tarball's
# check need them too, and two makes building the same files in one folder at once could
# corrupt them (the suite's make then builds only its test programs).
$(SUITES:%=%/all.rc):
	+@$(MAKE) -s -C $(@D) all >$(@D)/all.out 2>&1; echo $$? >$@
$(SUITES): %: %/all.rc
	+@$(MAKE) -s -C $@ check >$@/check.out 2>&1; echo $$? >$@/check.rc

# The tarball's check runs the few tests that prove it carries what tests need
# (DISTCHECK_TESTS in Makefile.am): the whole suite runs three times beside it.
distcheck: build/all.rc
	+@$(MAKE) -s -C build distcheck-quick >build/$@.log 2>&1; echo $$? >build/$@.rc
# Each libFuzzer target (lesson and progress, model and cluster presets) on the committed
# corpus and dictionaries for a fixed budget; "make fuzz" in build/ runs longer.
fuzz-parsers: build/all.rc
	+@$(MAKE) -s -C build fuzz-ci FUZZ_CI_SECONDS=15 >build/$@.log 2>&1; echo $$? >build/$@.rc
# The command-line fuzzer on the ASan build.
fuzz-command-line: build-asan/all.rc
	@env SCALELAB=build-asan/scalelab FUZZ_OUT=build/fuzz-cli-out FUZZ_TIMEOUT=30 \
		tests/fuzz/fuzz_cli.sh 15 >build/$@.log 2>&1; echo $$? >build/$@.rc

.PHONY: all $(SUITES) $(EXTRAS) $(SUITES:%=%/all.rc)
