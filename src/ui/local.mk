# The ncurses window: the only folder that includes curses.
libscalelab_a_SOURCES += \
	%reldir%/app.c %reldir%/app.h \
	%reldir%/draw.c %reldir%/draw.h \
	%reldir%/eventlog.c %reldir%/eventlog.h \
	%reldir%/layout.c %reldir%/layout.h \
	%reldir%/lessonpane.c %reldir%/lessonpane.h \
	%reldir%/panel.h \
	%reldir%/panel_formats.c \
	%reldir%/panel_soon.c \
	%reldir%/panels.c %reldir%/panels.h \
	%reldir%/termcheck.c %reldir%/termcheck.h \
	%reldir%/theme.c %reldir%/theme.h
