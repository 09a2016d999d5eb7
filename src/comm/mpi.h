/* The MPI transport (comm/xport.h) and one collective run over MPI ranks.
 *
 * Under `mpirun -n N scalelab collective --transport mpi`, each rank is one GPU: it runs the
 * very algorithms of comm/ (coll_run_on) with its point-to-point sends carried by MPI
 * (nonblocking sends and receives on a communicator of its own, matched in order; a receive
 * that sums lands in a scratch buffer first and is combined with reduce_sum, as the thread
 * transport combines out of the sender's buffer: the same additions in the same order, so the
 * same bits). Every wait polls with a deadline: a rank that cannot be reached ends the job
 * with a message naming both ranks (MPI_Abort), never a hang. --fail GPU@STEP stops every
 * rank the same way, exit 1.
 *
 * mpi_trial_run measures what trial_run does on the thread transport, with wall time in
 * place of simulated time: each rank fills its buffer (verify_fill) before each run; a warm-up
 * round, then `repeat` timed rounds (each run's time is its slowest rank's, between barriers).
 * A round runs ours, then the library's own MPI_Allreduce, MPI_Reduce_scatter_block and
 * MPI_Allgather (the v-variants when N does not divide the count; MPI_Bcast and MPI_Reduce
 * for those ops, MPI_Alltoall for all-to-all, out of place as ours) on the same buffers, in
 * place: ours and the library's are timed in turns, so
 * that a stretch when the machine is busy (ranks waiting for a core: milliseconds, against a
 * tenth of one for a 1 MiB all-reduce) falls on both instead of on one of them, and every
 * sample is kept (the best is reported; the benchmark shows the spread). Our last run is
 * checked on each rank against the double-precision reference for its own part
 * (verify_check_rank), its digest compared with the others'. bf16 and fp16 reach the library
 * as 2-byte elements with a user-defined sum (fp32 additions, as ours).
 *
 * Built only when configure finds Open MPI (pkg-config ompi-c); otherwise every entry point
 * but mpi_built says how to get it. */
#ifndef SCALELAB_COMM_MPI_H
#define SCALELAB_COMM_MPI_H

#include <stdbool.h>

#include <stddef.h>

#include "comm/trial.h"

struct error;

/* Whether this scalelab has the MPI transport. */
bool mpi_built(void);
/* One line for --version: the MPI library, or how to get one. */
const char *mpi_about(void);
/* The install hint, for errors: the Debian packages. */
#define MPI_PACKAGES "libopenmpi-dev and openmpi-bin"

/* MPI_Init_thread (serialized: a run's device thread calls MPI) and the rank and size; 0 or
 * ERR_INVAL (no MPI built, or a library without threads). */
int mpi_begin(int *argc, char ***argv, int *rank, int *size, struct error *e);
void mpi_end(void);

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

/* The wire of a training run over MPI ranks (sim/cluster.h's struct dev_wire): device d is
 * rank d of MPI_COMM_WORLD, and this process runs it. A message is a header (its size, key,
 * the sender's simulated start and arrival, the tag; matched by key, as dev_recv_key) and its
 * bytes, sent together without a copy; the receiver books its incoming link, takes the bytes
 * (into a scratch buffer first when it sums them, as the collective transport above) and
 * answers the arrival to the sender, whose dev_wait ends on it: the rendezvous of the thread
 * transport, so the simulated clocks advance as they do on threads. Every wait polls with the
 * deadline; past it, or when a device fails, every rank ends (MPI_Abort, exit 1) with a
 * message ("scalelab: WHO: ..." for a deadline). mpi_wire_share is the wire's share: every
 * rank's bytes, in rank order, to every rank (also before a run: the ranks' arguments). */
struct mpi_wire;
struct dev_wire;
int mpi_wire_open(struct mpi_wire **out, struct dev_wire *dw, const char *who, double deadline_s,
                  struct error *e);
int mpi_wire_share(struct mpi_wire *w, const void *mine, size_t bytes, void *all, struct error *e);
/* The deadline from now on (the options are read after the wire opens); the distinct
 * processor names among the ranks (rank 0's answer; every rank calls it). */
void mpi_wire_deadline(struct mpi_wire *w, double deadline_s);
int mpi_wire_hosts(struct mpi_wire *w);
void mpi_wire_close(struct mpi_wire *w);

/* Called by every rank with the same arguments (a->gpus is ignored: the ranks are the GPUs).
 * Rank 0's result holds everything; the others' only their own parts. 0, or an error. */
int mpi_trial_run(const struct trial_args *a, double deadline_s, struct mpi_run *r,
                  struct error *e);
void mpi_trial_fini(struct mpi_run *r);

#endif
