# tests of src/sim and comm
check_PROGRAMS += tests/unit/test_cost
tests_unit_test_cost_SOURCES = tests/unit/test_cost.c
tests_unit_test_cost_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_cost_LDADD = $(UNIT_LIBS)
check_PROGRAMS += tests/unit/test_sim
tests_unit_test_sim_SOURCES = tests/unit/test_sim.c
tests_unit_test_sim_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_sim_LDADD = $(UNIT_LIBS)
check_PROGRAMS += tests/unit/test_coll
tests_unit_test_coll_SOURCES = tests/unit/test_coll.c
tests_unit_test_coll_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_coll_LDADD = $(UNIT_LIBS)
SH_TESTS += tests/cli/collective.sh
SH_TESTS += tests/tui/collective.sh
SH_TESTS += tests/cli/collective_mpi.sh tests/cli/train_mpi.sh tests/cli/hosts.sh
# The wire's clock at the wire: a test on threads by itself, and train_mpi.sh runs it over MPI ranks
check_PROGRAMS += tests/unit/wire_fanin
tests_unit_wire_fanin_SOURCES = tests/unit/wire_fanin.c
tests_unit_wire_fanin_CFLAGS = $(AM_CFLAGS) $(MPI_CFLAGS)
tests_unit_wire_fanin_LDADD = $(LIBS_ALL)
