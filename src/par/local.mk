libscalelab_a_SOURCES += \
	%reldir%/cp.c %reldir%/cp.h \
	%reldir%/dp.c %reldir%/dp.h \
	%reldir%/ep.c %reldir%/ep.h \
	%reldir%/layout.c %reldir%/layout.h \
	%reldir%/pp.c %reldir%/pp.h \
	%reldir%/predict.c %reldir%/predict.h \
	%reldir%/run.c %reldir%/run.h \
	%reldir%/settings.c %reldir%/settings.h \
	%reldir%/shard.c %reldir%/shard.h \
	%reldir%/strategies.c %reldir%/strategies.h %reldir%/strategy.h \
	%reldir%/timeas.c %reldir%/timeas.h \
	%reldir%/tp.c %reldir%/tp.h \
	%reldir%/trainer.c %reldir%/trainer.h \
	%reldir%/xbuf.c %reldir%/xbuf.h
