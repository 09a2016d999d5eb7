# The lessons, installed under $(pkgdatadir)/lessons (format: lessons/README.md).
nobase_dist_pkgdata_DATA += \
	lessons/01-mixed-precision.lesson \
	lessons/02-checkpointing.lesson \
	lessons/03-collectives.lesson \
	lessons/04-scaling.lesson \
	lessons/05-zero.lesson \
	lessons/06-long-sequences.lesson \
	lessons/07-experts.lesson \
	lessons/90-lab.lesson
