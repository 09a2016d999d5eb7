libscalelab_a_SOURCES += \
	%reldir%/ckpt.c %reldir%/ckpt.h \
	%reldir%/clock.c %reldir%/clock.h \
	%reldir%/cpu.c %reldir%/cpu.h \
	%reldir%/datadir.c %reldir%/datadir.h \
	%reldir%/error.c %reldir%/error.h \
	%reldir%/experts.c %reldir%/experts.h \
	%reldir%/hostmem.c %reldir%/hostmem.h \
	%reldir%/prof.c %reldir%/prof.h \
	%reldir%/race.h \
	%reldir%/readfile.c %reldir%/readfile.h \
	%reldir%/json.c %reldir%/json.h \
	%reldir%/rng.c %reldir%/rng.h \
	%reldir%/units.c %reldir%/units.h
