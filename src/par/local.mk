libscalelab_a_SOURCES += \
	%reldir%/dp.c %reldir%/dp.h \
	%reldir%/run.c %reldir%/run.h \
	%reldir%/shard.c %reldir%/shard.h \
	%reldir%/trainer.c %reldir%/trainer.h
