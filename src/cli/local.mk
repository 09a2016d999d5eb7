libscalelab_a_SOURCES += \
	%reldir%/bench.h %reldir%/bench_formats.c %reldir%/cmd_bench.c \
	%reldir%/bench_train.c %reldir%/bench_dp.c %reldir%/cmd_train.c %reldir%/train.h \
	%reldir%/train_args.c %reldir%/train_dump.c %reldir%/train_report.c \
	%reldir%/bench_collective.c %reldir%/bench_window.c \
	%reldir%/cmd_collective.c \
	%reldir%/cmd_formats.c \
	%reldir%/command.c %reldir%/command.h \
	%reldir%/fail.c %reldir%/fail.h \
	%reldir%/opts.c %reldir%/opts.h \
	%reldir%/registry.c \
	%reldir%/cmd_run.c \
	%reldir%/winopts.c %reldir%/winopts.h \
	%reldir%/cmd_progress.c
# the calculator's commands
libscalelab_a_SOURCES += \
	%reldir%/calcargs.c %reldir%/calcargs.h \
	%reldir%/cmd_memory.c %reldir%/cmd_pipeline.c %reldir%/cmd_plan.c \
	%reldir%/emit.c %reldir%/emit.h
