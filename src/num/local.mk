libscalelab_a_SOURCES += \
	%reldir%/fp.c %reldir%/fp.h
libscalelab_a_SOURCES += \
	%reldir%/adamw.c %reldir%/adamw.h \
	%reldir%/clip.c %reldir%/clip.h \
	%reldir%/scaler.c %reldir%/scaler.h
