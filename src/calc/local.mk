libscalelab_a_SOURCES += \
	%reldir%/preset.c %reldir%/preset.h
libscalelab_a_SOURCES += \
	%reldir%/params.c %reldir%/params.h
libscalelab_a_SOURCES += \
	%reldir%/activ.c %reldir%/activ.h
libscalelab_a_SOURCES += \
	%reldir%/memory.c %reldir%/memory.h
libscalelab_a_SOURCES += \
	%reldir%/sched.c %reldir%/sched.h
libscalelab_a_SOURCES += \
	%reldir%/traffic.c %reldir%/traffic.h
libscalelab_a_SOURCES += \
	%reldir%/plan.c %reldir%/plan.h
