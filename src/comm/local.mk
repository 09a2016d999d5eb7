libscalelab_a_SOURCES += \
	%reldir%/cost.c %reldir%/cost.h \
	%reldir%/tree.c %reldir%/tree.h
