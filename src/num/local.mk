libloops_a_SOURCES += \
	%reldir%/fp.c %reldir%/fp.h \
	%reldir%/adamw.c %reldir%/adamw.h \
	%reldir%/clip.c %reldir%/clip.h \
	%reldir%/exp.c %reldir%/exp.h
libscalelab_a_SOURCES += \
	%reldir%/scaler.c %reldir%/scaler.h \
	%reldir%/fp8.c %reldir%/fp8.h
