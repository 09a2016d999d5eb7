# Adversarial tests of the whole command line and the file parsers: bad input exits 2 with a
# clear message and no sanitizer report; a failing GPU ends a collective cleanly.
SH_TESTS += tests/cli/badinput.sh tests/cli/failstop.sh tests/cli/hardening.sh
# (issue 21: the hostile tester's matrix: command lines, progress files, low memory, signals)
SH_TESTS += tests/cli/hostile.sh
# (issue 11: a damaged progress file in the window)
SH_TESTS += tests/tui/progress.sh

# A bounded soak: training and collectives in a loop, resident memory must not grow (in every
# build, so under ASan too; SOAK_SECONDS sets its length).
check_PROGRAMS += tests/unit/test_soak
tests_unit_test_soak_SOURCES = tests/unit/test_soak.c
tests_unit_test_soak_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_soak_LDADD = $(UNIT_LIBS)

# tests/fuzz/fuzz_cli.sh, a randomized fuzzer of the command line, is run by hand (see its
# header); tests/lesson.mk distributes the whole tests/fuzz folder.

# libFuzzer targets for the preset parser, one per kind (clang only, never part of the build or
# the tests; see tests/fuzz/README.md). FUZZ_CC, FUZZ_SECONDS and FUZZ_CALC_SRC come from tests/lesson.mk.
FUZZ_PRESET_SRC = $(top_srcdir)/tests/fuzz/fuzz_preset.c $(FUZZ_CALC_SRC)
FUZZ_PRESET_FLAGS = -std=c11 -g -O1 -fsanitize=fuzzer,address,undefined \
	-fno-sanitize-recover=all -I. -I$(top_srcdir)/src $(AM_CPPFLAGS)

fuzz-preset: $(FUZZ_PRESET_SRC)
	@mkdir -p tests/fuzz
	$(FUZZ_CC) $(FUZZ_PRESET_FLAGS) -DFUZZ_MODEL $(FUZZ_PRESET_SRC) \
		-o tests/fuzz/fuzz_preset_model $(INIH_LIBS) -lm
	$(FUZZ_CC) $(FUZZ_PRESET_FLAGS) -DFUZZ_CLUSTER $(FUZZ_PRESET_SRC) \
		-o tests/fuzz/fuzz_preset_cluster $(INIH_LIBS) -lm

fuzz-preset-run: fuzz-preset
	rm -rf tests/fuzz/corpus-model tests/fuzz/corpus-cluster
	mkdir -p tests/fuzz/corpus-model tests/fuzz/corpus-cluster
	cp $(top_srcdir)/assets/models/*.ini tests/fuzz/corpus-model/
	cp $(top_srcdir)/assets/clusters/*.ini tests/fuzz/corpus-cluster/
	tests/fuzz/fuzz_preset_model -max_total_time=$(FUZZ_SECONDS) -max_len=4096 \
		-dict=$(top_srcdir)/tests/fuzz/preset.dict tests/fuzz/corpus-model
	tests/fuzz/fuzz_preset_cluster -max_total_time=$(FUZZ_SECONDS) -max_len=4096 \
		-dict=$(top_srcdir)/tests/fuzz/preset.dict tests/fuzz/corpus-cluster

CLEANFILES += tests/fuzz/fuzz_preset_model tests/fuzz/fuzz_preset_cluster

.PHONY: fuzz-preset fuzz-preset-run

# Every fuzzer, on the committed corpus (tests/fuzz/corpus/KIND) and dictionaries. New inputs go
# to a working copy in the build folder, so the committed corpus changes only by hand. The three
# run side by side: each stops at its time budget, so together they take one budget.
#   make fuzz          each fuzzer for FUZZ_SECONDS (default 60; FUZZ_SECONDS=3600 for a long run)
#   make fuzz-ci       each for FUZZ_CI_SECONDS (default 20): what scripts/test runs every time
FUZZ_CI_SECONDS = 20
FUZZ_RUN = run() { \
	name=$$1 kind=$$2 dict=$$3 secs=$$4; \
	rm -rf tests/fuzz/work-$$kind && mkdir -p tests/fuzz/work-$$kind && \
	echo "fuzz: $$name for $$secs s" && \
	tests/fuzz/$$name -max_total_time=$$secs -max_len=8192 -timeout=10 -rss_limit_mb=1024 \
		-dict=$(top_srcdir)/tests/fuzz/$$dict -artifact_prefix=tests/fuzz/crash-$$name- \
		-print_final_stats=0 tests/fuzz/work-$$kind $(top_srcdir)/tests/fuzz/corpus/$$kind \
		>tests/fuzz/$$name.log 2>&1 || { tail -n 40 tests/fuzz/$$name.log; exit 1; }; \
	}; \
	run fuzz_lesson lesson lesson.dict $$secs & a=$$!; \
	run fuzz_preset_model model preset.dict $$secs & b=$$!; \
	run fuzz_preset_cluster cluster preset.dict $$secs & c=$$!; \
	s=0; wait $$a || s=1; wait $$b || s=1; wait $$c || s=1; exit $$s

fuzz: fuzz-lesson fuzz-preset
	@secs=$(FUZZ_SECONDS); $(FUZZ_RUN)

fuzz-ci: fuzz-lesson fuzz-preset
	@secs=$(FUZZ_CI_SECONDS); $(FUZZ_RUN)

clean-local: clean-fuzz
clean-fuzz:
	rm -rf tests/fuzz/work-* tests/fuzz/*.log

.PHONY: fuzz fuzz-ci clean-fuzz
