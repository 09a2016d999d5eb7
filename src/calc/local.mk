# The analytic engine: pure functions from a configuration to a breakdown, never threads.
libscalelab_a_SOURCES += \
	%reldir%/activ.c %reldir%/activ.h \
	%reldir%/framework.c %reldir%/framework.h \
	%reldir%/memory.c %reldir%/memory.h \
	%reldir%/params.c %reldir%/params.h \
	%reldir%/plan.c %reldir%/plan.h \
	%reldir%/preset.c %reldir%/preset.h \
	%reldir%/sched.c %reldir%/sched.h \
	%reldir%/traffic.c %reldir%/traffic.h
