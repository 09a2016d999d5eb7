# tests of src/model and par (and lessons 1 and 2's panels)
check_PROGRAMS += tests/unit/test_train
tests_unit_test_train_SOURCES = tests/unit/test_train.c
tests_unit_test_train_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_train_LDADD = $(UNIT_LIBS)
check_PROGRAMS += tests/unit/test_zb
tests_unit_test_zb_SOURCES = tests/unit/test_zb.c
tests_unit_test_zb_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_zb_LDADD = $(UNIT_LIBS)
check_PROGRAMS += tests/unit/test_ringattn
tests_unit_test_ringattn_SOURCES = tests/unit/test_ringattn.c
tests_unit_test_ringattn_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_ringattn_LDADD = $(UNIT_LIBS)

check_PROGRAMS += tests/unit/test_fp8
tests_unit_test_fp8_SOURCES = tests/unit/test_fp8.c
tests_unit_test_fp8_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_fp8_LDADD = $(UNIT_LIBS)

check_PROGRAMS += tests/unit/test_moe
tests_unit_test_moe_SOURCES = tests/unit/test_moe.c
tests_unit_test_moe_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_moe_LDADD = $(UNIT_LIBS)

SH_TESTS += tests/cli/train.sh tests/cli/train_torch.sh tests/cli/train_moe.sh tests/cli/train_dp.sh tests/cli/train_pp.sh tests/cli/train_tp.sh tests/cli/train_cp.sh tests/cli/train_ep.sh tests/cli/train_trace.sh tests/cli/train_bits.sh tests/cli/train_timeas.sh tests/cli/train_zb.sh tests/cli/train_fp8.sh
SH_TESTS += tests/tui/checkpoint.sh tests/tui/training.sh
EXTRA_DIST += tests/torch_check.py tests/train_figures.py
