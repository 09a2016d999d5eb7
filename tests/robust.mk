# Adversarial tests of the whole command line and the file parsers: bad input exits 2 with a
# clear message and no sanitizer report; a failing GPU ends a collective cleanly.
SH_TESTS += tests/cli/badinput.sh tests/cli/failstop.sh tests/cli/hardening.sh

# tests/fuzz/fuzz_cli.sh, a randomized fuzzer of the command line, is run by hand (see its
# header); tests/lesson.mk distributes the whole tests/fuzz folder.

# libFuzzer targets for the preset parser, one per kind (clang only, never part of the build or
# the tests; see tests/fuzz/README.md). FUZZ_CC and FUZZ_SECONDS come from tests/lesson.mk.
FUZZ_PRESET_SRC = $(top_srcdir)/tests/fuzz/fuzz_preset.c \
	$(top_srcdir)/src/calc/preset.c $(top_srcdir)/src/calc/params.c \
	$(top_srcdir)/src/calc/activ.c $(top_srcdir)/src/calc/memory.c \
	$(top_srcdir)/src/calc/plan.c $(top_srcdir)/src/calc/sched.c \
	$(top_srcdir)/src/calc/traffic.c $(top_srcdir)/src/comm/cost.c \
	$(top_srcdir)/src/comm/tree.c $(top_srcdir)/src/sim/spec.c \
	$(top_srcdir)/src/base/error.c $(top_srcdir)/src/base/units.c \
	$(top_srcdir)/src/base/datadir.c
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
