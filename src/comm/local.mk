libscalelab_a_SOURCES += \
	%reldir%/algo.c %reldir%/algo.h \
	%reldir%/alltoall.c \
	%reldir%/chunk.h \
	%reldir%/coll.c %reldir%/coll.h \
	%reldir%/cost.h \
	%reldir%/mpi.c %reldir%/mpi.h %reldir%/mpi_impl.h \
	%reldir%/mpitrial.c %reldir%/mpitrial.h \
	%reldir%/mpiwire.c %reldir%/mpiwire.h \
	%reldir%/pipe.c \
	%reldir%/reduce.c %reldir%/reduce.h \
	%reldir%/rhd.c \
	%reldir%/ring.c \
	%reldir%/tree.c %reldir%/tree.h \
	%reldir%/trial.c %reldir%/trial.h \
	%reldir%/xport.c %reldir%/xport.h
# the collectives' data, its check and digests: loops vectorized per CPU path (base/cpu.h)
libkernels_a_SOURCES += %reldir%/verify.c %reldir%/verify.h
# the alpha-beta cost model: pure, on one thread (Makefile.am's libpure)
libpure_a_SOURCES += %reldir%/cost.c
