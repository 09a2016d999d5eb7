/* The MPI transport (comm/xport.h): MPI's start and end for a process that is one rank of
 * `mpirun -n N scalelab ...`, and the point-to-point sends the collectives' algorithms run on
 * when each rank is one GPU (coll_run_on with the transport of comm/mpi_impl.h): nonblocking
 * sends and receives on a communicator of its own, matched in order; a receive that sums lands
 * in a scratch buffer first and is combined with reduce_sum, as the thread transport combines
 * out of the sender's buffer: the same additions in the same order, so the same bits. Every
 * wait polls with a deadline: a rank that cannot be reached ends the job with a message naming
 * both ranks (MPI_Abort), never a hang. --fail GPU@STEP stops every rank the same way, exit 1.
 *
 * On it stand the wire of a training run (comm/mpiwire.h) and a collective run timed beside
 * the library's own (comm/mpitrial.h). Built only when configure finds Open MPI (pkg-config
 * ompi-c); otherwise every entry point but mpi_built says how to get it. */
#ifndef SCALELAB_COMM_MPI_H
#define SCALELAB_COMM_MPI_H

#include <stdbool.h>

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

/* The refusal of the entry points of a scalelab built without MPI: ERR_INVAL, how to get it. */
int mpi_refuse(struct error *e);

#endif
