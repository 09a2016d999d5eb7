libkernels_a_SOURCES += \
	%reldir%/gpt.c %reldir%/gpt.h
libscalelab_a_SOURCES += \
	%reldir%/markov.c %reldir%/markov.h \
	%reldir%/moe.c %reldir%/moe.h
