libscalelab_a_SOURCES += \
	%reldir%/gpt.c %reldir%/gpt.h \
	%reldir%/markov.c %reldir%/markov.h
