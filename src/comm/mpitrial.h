/* One collective run over MPI ranks, measured as trial_run measures it on the thread
 * transport (comm/trial.h), with wall time in place of simulated time, beside the MPI
 * library's own collectives.
 *
 * Under `mpirun -n N scalelab collective --transport mpi`, each rank is one GPU: it runs the
 * very algorithms of comm/ (coll_run_on) over comm/mpi.h's transport. Each rank fills its
 * buffer (verify_fill) before each run; a warm-up round, then `repeat` timed rounds (each run's
 * time is its slowest rank's, between barriers). A round runs ours, then the library's own
 * MPI_Allreduce, MPI_Reduce_scatter_block and MPI_Allgather (the v-variants when N does not
 * divide the count; MPI_Bcast and MPI_Reduce for those ops, MPI_Alltoall for all-to-all, out of
 * place as ours) on the same buffers, in place: ours and the library's are timed in turns, so
 * that a stretch when the machine is busy (ranks waiting for a core: milliseconds, against a
 * tenth of one for a 1 MiB all-reduce) falls on both instead of on one of them, and every
 * sample is kept (the best is reported; the benchmark shows the spread). Our last run is
 * checked on each rank against the double-precision reference for its own part
 * (verify_check_rank), its digest compared with the others'. bf16 and fp16 reach the library
 * as 2-byte elements with a user-defined sum (fp32 additions, as ours). */
#ifndef SCALELAB_COMM_MPITRIAL_H
#define SCALELAB_COMM_MPITRIAL_H

#include "comm/trial.h"

struct error;

enum { MPI_LIB_MAX = 4 };

struct mpi_lib_figure {
    const char *name; /* "MPI_Allreduce", ... */
    enum cost_op op;
    double time_s;  /* best of the repetitions, the slowest rank's */
    double *sample; /* every repetition's, in order (repeat of them; rank 0) */
};

struct mpi_run {
    struct trial t; /* as trial_run's: check, bytes sent per GPU, digest, wall_s, predicted */
    int rank, size;
    int hosts;      /* distinct processor names among the ranks */
    char host0[64]; /* rank 0's */
    int repeat;
    double *sample; /* our every repetition's time, in order (rank 0) */
    struct mpi_lib_figure lib[MPI_LIB_MAX];
    int nlib;
};

/* Called by every rank with the same arguments (a->gpus is ignored: the ranks are the GPUs).
 * Rank 0's result holds everything; the others' only their own parts. 0, or an error. */
int mpi_trial_run(const struct trial_args *a, double deadline_s, struct mpi_run *r,
                  struct error *e);
void mpi_trial_fini(struct mpi_run *r);

#endif
