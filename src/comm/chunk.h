/* How a collective cuts count elements into n chunks when no bounds are given: as evenly as
 * possible, the first count % n chunks one element longer (comm/coll.h). The algorithms
 * (comm/algo.c), the checks of a result (comm/verify.c) and MPI's v-variants (comm/mpi.c) all
 * cut the same way. */
#ifndef SCALELAB_COMM_CHUNK_H
#define SCALELAB_COMM_CHUNK_H

#include <stddef.h>

/* Chunk i of n over count elements: offset and length in elements. */
static inline void coll_chunk(size_t count, int n, int i, size_t *off, size_t *len)
{
    size_t base = count / (size_t)n, rem = count % (size_t)n, k = (size_t)i;
    *off = k * base + (k < rem ? k : rem);
    *len = base + (k < rem);
}

#endif
