nobase_dist_pkgdata_DATA +=
