nobase_dist_pkgdata_DATA += \
	assets/models/synthetic-7b.ini \
	assets/models/tiny.ini \
	assets/models/small.ini \
	assets/models/torch-compare.ini \
	assets/models/gpt3-175b.ini \
	assets/models/llama2-13b.ini \
	assets/models/llama2-70b.ini \
	assets/models/tiny-moe.ini \
	assets/models/mixtral-8x7b.ini \
	assets/clusters/h100-80gb.ini \
	assets/clusters/h200.ini \
	assets/clusters/a100-80gb.ini \
	assets/clusters/a100-40gb.ini \
	assets/clusters/workstation-4gpu.ini
