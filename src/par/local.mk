libscalelab_a_SOURCES += \
	%reldir%/dp.c %reldir%/dp.h \
	%reldir%/pp.c %reldir%/pp.h \
	%reldir%/predict.c %reldir%/predict.h \
	%reldir%/run.c %reldir%/run.h \
	%reldir%/shard.c %reldir%/shard.h \
	%reldir%/trainer.c %reldir%/trainer.h
