libloops_a_SOURCES += %reldir%/gpt_ops.c
libkernels_a_SOURCES += \
	%reldir%/gpt.c %reldir%/gpt.h %reldir%/gpt_impl.h \
	%reldir%/gpt_step.c %reldir%/ringattn.c %reldir%/ringattn.h %reldir%/gpt_ring.c \
	%reldir%/gpt_fp8.c %reldir%/fp8gemm.c %reldir%/fp8gemm.h
libscalelab_a_SOURCES += \
	%reldir%/blasbuf.c %reldir%/blasbuf.h \
	%reldir%/markov.c %reldir%/markov.h \
	%reldir%/moe.c %reldir%/moe.h
