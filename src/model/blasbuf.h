/* OpenBLAS's matrix buffers, served by scalelab: counted and allocated before a run, never
 * mapped in the middle of one, and never asked for in a loop that cannot end.
 *
 * OpenBLAS packs the matrices of each sgemm into a buffer of BUFFER_SIZE bytes (128 MiB of
 * address space on x86-64: common_x86_64.h) that the calling thread takes from a table for
 * the call, mapping a new one when none is free (driver/others/memory.c, blas_memory_alloc).
 * When the mapping fails, as under ulimit -v, it tries again, forever: a run that did not fit
 * spun at 100% of a core instead of failing, and so did each pool thread OpenBLAS starts when
 * it loads (it asks for its buffer at once), which the process then waited for at exit.
 *
 * scalelab defines blas_memory_alloc and blas_memory_free itself (blasbuf.c): OpenBLAS calls
 * them through its PLT, so the program's definitions are the ones called (ELF symbol
 * interposition). The buffers are OpenBLAS's own kind, from its blas_memory_alloc_nolock (a
 * malloc of BUFFER_SIZE and a page, which returns NULL instead of trying again), kept in a pool:
 *   - a run claims a buffer for each of its threads before it starts (blasbuf_claim), so it
 *     fails at once, saying what it needed, when they cannot be had, and no sgemm of a step
 *     maps memory;
 *   - the pool holds at most one buffer per CPU (or what the runs claimed, if more): more
 *     threads than CPUs compute no faster, so a caller that finds none free waits for one
 *     to be given back (an sgemm holds it for its own length only, never while it waits for
 *     another GPU), and a 4-GPU run on 2 CPUs takes 256 MiB of buffers, not 512;
 *   - a caller without a claim (a test, a panel's one-off step) gets a new buffer within that
 *     bound when one can be had; with none in the process at all it ends the process with a
 *     message (it cannot tell OpenBLAS that the call failed);
 *   - OpenBLAS's pool threads get none: scalelab runs OpenBLAS on one thread (set before main
 *     runs, in blasbuf.c), so they never compute, and their buffers only took address space.
 * With another BLAS behind libblas these are never called. */
#ifndef SCALELAB_MODEL_BLASBUF_H
#define SCALELAB_MODEL_BLASBUF_H

#include <stddef.h>

struct error;

/* Bytes of one buffer (OpenBLAS's BUFFER_SIZE and its page): measured on the first buffer, or
 * OpenBLAS's x86-64 default before that; 0 when the BLAS is not OpenBLAS. */
size_t blasbuf_bytes(void);

/* Makes sure `threads` more threads may call sgemm, each in turn with a buffer: at most one
 * per CPU computes at once, so min(threads, CPUs) buffers are claimed (*claimed), and those
 * the pool lacks allocated. 0, or ERR_NOMEM when they cannot be had (nothing claimed then);
 * *need (if not NULL) gets the bytes the pool still lacked. */
int blasbuf_claim(int threads, int *claimed, double *need, struct error *e);

/* Those buffers are no longer claimed: every unused buffer beyond what is still claimed is
 * freed (0 frees those of callers without a claim). */
void blasbuf_release(int claimed);

/* OpenBLAS's hooks (the library's names): a buffer for a thread's call, and its return. */
void *blas_memory_alloc(int procpos);
void blas_memory_free(void *buffer);

#endif
