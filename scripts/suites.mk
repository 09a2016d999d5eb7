# The three suites of scripts/test under one jobserver: `make -j4 -f scripts/suites.mk` runs
# "make check" in build/, build-asan/ and build-tsan/ (configured already) side by side, each
# building what it needs and then running its tests, all of them taking their jobs from the
# same four slots. A suite's compiling and its tests that wait (on a terminal, a process)
# leave their slots to the others, so both cores stay busy until the last test ends, whichever
# suite it is in. Each suite's output goes to DIR/check.out, its status to DIR/check.rc.
SUITES = build build-asan build-tsan

all: $(SUITES)

$(SUITES):
	+@$(MAKE) -s -C $@ check >$@/check.out 2>&1; echo $$? >$@/check.rc

.PHONY: all $(SUITES)
