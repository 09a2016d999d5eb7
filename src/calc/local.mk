libscalelab_a_SOURCES += \
	%reldir%/preset.c %reldir%/preset.h
libscalelab_a_SOURCES += \
	%reldir%/params.c %reldir%/params.h
