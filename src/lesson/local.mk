libscalelab_a_SOURCES += \
	%reldir%/ascii.c %reldir%/ascii.h \
	%reldir%/lesson.c %reldir%/lesson.h \
	%reldir%/lesson_check.c %reldir%/lesson_files.c \
	%reldir%/text.c %reldir%/text.h \
	%reldir%/progress.c %reldir%/progress.h \
	%reldir%/quantity.c %reldir%/quantity.h %reldir%/quantity_expr.c \
	%reldir%/quantity_comm.c %reldir%/quantity_table.h \
	%reldir%/figure.c %reldir%/figure.h
