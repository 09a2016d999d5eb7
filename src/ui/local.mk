# The ncurses window: the only folder that includes curses.
libscalelab_a_SOURCES += \
	%reldir%/app.c %reldir%/app.h \
	%reldir%/answer.c %reldir%/answer.h \
	%reldir%/help.c %reldir%/help.h \
	%reldir%/hints.c %reldir%/hints.h \
	%reldir%/term.c %reldir%/term.h \
	%reldir%/draw.c %reldir%/draw.h \
	%reldir%/eventlog.c %reldir%/eventlog.h \
	%reldir%/layout.c %reldir%/layout.h \
	%reldir%/lessonpane.c %reldir%/lessonpane.h \
	%reldir%/panel.h \
	%reldir%/panel_formats.c \
	%reldir%/plot.c %reldir%/plot.h \
	%reldir%/gantt.c %reldir%/gantt.h \
	%reldir%/panels.c %reldir%/panels.h \
	%reldir%/tabs.c %reldir%/tabs.h \
	%reldir%/steppanel.c %reldir%/steppanel.h \
	%reldir%/termcheck.c %reldir%/termcheck.h \
	%reldir%/theme.c %reldir%/theme.h
# the memory lab (issue 3)
libscalelab_a_SOURCES += \
	%reldir%/knobs.c %reldir%/knobs.h \
	%reldir%/memui.c %reldir%/memui.h \
	%reldir%/panel_memory.c %reldir%/panel_parallel.c \
	%reldir%/stackbar.c %reldir%/stackbar.h
# lesson 3's panel (issue 4), its run made off the frame loop (issue 25)
libscalelab_a_SOURCES += %reldir%/panel_collective.c %reldir%/collrun.c %reldir%/collrun.h \
	%reldir%/collplot.c %reldir%/collplot.h %reldir%/bgjob.c %reldir%/bgjob.h
# lessons 1 and 2's panels (issue 5)
libscalelab_a_SOURCES += %reldir%/panel_training.c %reldir%/panel_checkpoint.c
# the Lab's run mode (issue 8)
libscalelab_a_SOURCES += %reldir%/panel_dprun.c %reldir%/runfeed.c %reldir%/runfeed.h \
	%reldir%/runpace.c %reldir%/runpace.h
# the run panels' timeline of a step, timed as the lesson's model (issue 32)
libscalelab_a_SOURCES += %reldir%/timeline.c %reldir%/timeline.h
# lesson 4's run panel (issue 9)
libscalelab_a_SOURCES += %reldir%/panel_pprun.c %reldir%/ppgantt.c %reldir%/ppgantt.h
# the long sequences lesson's run panel (issue 23)
libscalelab_a_SOURCES += %reldir%/panel_cprun.c
# the mixtures of experts lesson's run panel (issue 24)
libscalelab_a_SOURCES += %reldir%/panel_eprun.c
