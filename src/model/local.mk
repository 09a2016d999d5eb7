libkernels_a_SOURCES += \
	%reldir%/gpt.c %reldir%/gpt.h
libscalelab_a_SOURCES += \
	%reldir%/blasbuf.c %reldir%/blasbuf.h \
	%reldir%/markov.c %reldir%/markov.h
