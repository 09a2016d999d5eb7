libscalelab_a_SOURCES += \
	%reldir%/fp.c %reldir%/fp.h
