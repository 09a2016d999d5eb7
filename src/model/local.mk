libscalelab_a_SOURCES +=
