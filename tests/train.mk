# tests of src/model and par
check_PROGRAMS += tests/unit/test_train
tests_unit_test_train_SOURCES = tests/unit/test_train.c
tests_unit_test_train_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_train_LDADD = $(UNIT_LIBS)

TESTS += tests/cli/train.sh tests/cli/train_torch.sh
EXTRA_DIST += tests/torch_check.py
TESTS += tests/tui/checkpoint.sh
