libscalelab_a_SOURCES += \
	%reldir%/trainer.c %reldir%/trainer.h
