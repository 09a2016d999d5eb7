libscalelab_a_SOURCES += \
	%reldir%/cluster.c %reldir%/cluster.h \
	%reldir%/event.c %reldir%/event.h \
	%reldir%/ledger.c %reldir%/ledger.h \
	%reldir%/port.c %reldir%/port.h \
	%reldir%/spec.c %reldir%/spec.h
libscalelab_a_SOURCES += %reldir%/trace.c %reldir%/trace.h
