/* The wire's clock, at the wire: three GPUs, GPUs 1 and 2 each sending 1 MiB to GPU 0 at the
 * same simulated moment. GPU 0's incoming link carries one message's bytes at a time
 * (sim/cluster.h), so the message it takes second arrives once the first one's bytes have
 * crossed, and its sender's clock, when its send is done, is that later arrival: the receiver
 * books it, and the sender learns it from the receiver. On threads (`wire_fanin threads`) the
 * two share the request; over MPI (`mpirun -n 3 wire_fanin mpi`, one GPU per rank) the receiver
 * answers the sender with the arrival it booked (comm/mpiwire.c). No training layout makes two
 * GPUs send to one at once (rings and pairwise exchanges have one sender per receiver at a
 * time), so tests/cli/train_mpi.sh runs this: the lines of the two runs must be the same, GPU
 * 2's clock later than GPU 1's by the crossing of GPU 1's bytes.
 *
 * Prints a line per GPU it ran, "GPU g: clock SECONDS, sent BYTES, received BYTES", after the
 * link's "alpha SECONDS, beta BYTES/s, message BYTES" on threads. Exit 0, or 1 with the error,
 * 2 for bad usage. Without arguments (as the suite runs each test program) it runs on threads
 * and checks the clocks itself, in TAP: GPU 1 at alpha + m/beta, GPU 2 at alpha + 2 m/beta
 * (1e-12 relative: double rounding). */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "comm/mpi.h"
#include "comm/mpiwire.h"
#include "sim/cluster.h"

#define GPUS  3
#define BYTES (1u << 20)

static int fan_in(struct device *d, void *arg, struct error *e)
{
    (void)arg;
    char *buf = calloc(BYTES, 1);
    if (!buf)
        return error_set(e, ERR_NOMEM, "out of memory");
    struct dev_tag tag = {0, 0, "fan-in", 0};
    int rc = 0;
    if (dev_rank(d) == 0) {
        /* from GPU 1 first, then GPU 2: the order the incoming link carries them */
        for (int peer = 1; peer < GPUS && !rc; peer++)
            rc = dev_recv(d, peer, buf, BYTES, &tag, NULL, NULL, e);
    } else {
        struct dev_req req;
        rc = dev_isend(d, 0, buf, BYTES, &tag, &req, e);
        if (!rc)
            rc = dev_wait(d, &req, e);
    }
    free(buf);
    return rc;
}

static void print_gpu(struct cluster *c, int g)
{
    struct device *d = cluster_device(c, g);
    struct dev_stats s = dev_stats(d);
    printf("GPU %d: clock %.17g, sent %llu, received %llu\n", g, dev_now(d),
           (unsigned long long)s.bytes_sent, (unsigned long long)s.bytes_received);
}

/* Three GPUs of one node of the built-in preset (h100-80gb), a 60 s deadline. */
static void fan_in_config(struct cluster_config *cc)
{
    cluster_config_init(cc);
    cc->spec.gpus_per_node = GPUS;
    cc->gpus = GPUS;
    cc->deadline_s = 60;
}

/* The suite's check on threads: 0 if each clock is the booking's. */
static int check_threads(void)
{
    struct error e = {0};
    struct cluster_config cc;
    fan_in_config(&cc);
    struct cluster *c = cluster_new(&cc, &e);
    int rc = !c || cluster_run(c, fan_in, NULL, &e);
    double a = cc.spec.alpha_intra, x = BYTES / cc.spec.beta_intra;
    double want[GPUS] = {a + 2 * x, a + x, a + 2 * x};
    for (int g = 0; g < GPUS && !rc; g++)
        rc = fabs(dev_now(cluster_device(c, g)) - want[g]) > 1e-12 * want[g];
    printf("%s 1 - two GPUs send to a third at once: the second arrives one crossing later, "
           "and its sender's clock says so%s%s\n1..1\n",
           rc ? "not ok" : "ok", e.msg[0] ? ": " : "", e.msg);
    cluster_free(c);
    return rc;
}

int main(int argc, char **argv)
{
    if (argc == 1)
        return check_threads();
    bool mpi = argc == 2 && !strcmp(argv[1], "mpi");
    if (argc != 2 || (!mpi && strcmp(argv[1], "threads"))) {
        fprintf(stderr, "usage: wire_fanin threads | mpirun -n %d wire_fanin mpi\n", GPUS);
        return 2;
    }
    struct error e = {0};
    struct cluster_config cc;
    fan_in_config(&cc);
    struct mpi_wire *w = NULL;
    struct dev_wire dw;
    int rank = 0, size = 1, rc = 0;
    if (mpi) {
        if (mpi_begin(&argc, &argv, &rank, &size, &e) ||
            (size != GPUS && error_set(&e, ERR_INVAL, "%d ranks, not %d", size, GPUS)) ||
            mpi_wire_open(&w, &dw, "wire_fanin", 60, &e)) {
            fprintf(stderr, "wire_fanin: %s\n", e.msg);
            mpi_end();
            return 1;
        }
        cc.wire = &dw;
        cc.local = rank;
    }
    struct cluster *c = cluster_new(&cc, &e);
    if (!c || cluster_run(c, fan_in, NULL, &e)) {
        fprintf(stderr, "wire_fanin: %s\n", e.msg);
        rc = 1;
    } else if (mpi) {
        print_gpu(c, rank);
    } else {
        printf("alpha %.17g, beta %.17g, message %u\n", cc.spec.alpha_intra, cc.spec.beta_intra,
               BYTES);
        for (int g = 0; g < GPUS; g++)
            print_gpu(c, g);
    }
    cluster_free(c);
    if (mpi) {
        mpi_wire_close(w);
        mpi_end();
    }
    return rc;
}
