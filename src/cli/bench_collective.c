/* Benchmark group "collective": the ring all-reduce of the simulated cluster on this host.
 *
 * All simulated GPUs share the host's one memory system, so a thread all-reduce can never
 * reach its bus bandwidth: every byte "sent" is read from the sender's buffer and written to
 * the receiver's (and, in reduce-scatter, the receiver's own value is read too). So beside
 * nccl-tests' busbw (S/t x 2(N-1)/N, t the host's wall time) the group reports the memory
 * traffic rate: the bytes the receives really read and wrote (2 per copied byte, 3 per summed
 * byte, counted by the simulator) over the wall time, as a ratio to the copy bandwidth
 * measured in the same run. Buffers are allocated once per GPU count, through the ledger,
 * for the largest size, and every size runs on them. */
#include "config.h"
#include "cli/bench.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/error.h"
#include "comm/coll.h"
#include "comm/mpi.h"
#include "sim/cluster.h"

struct run {
    void **bufs;
    size_t count;
    int repeat;
    double *best;
};

static int body(struct device *d, void *arg, struct error *e)
{
    struct run *r = arg;
    int g = dev_rank(d);
    r->best[g] = 1e300;
    for (int i = 0; i < r->repeat; i++) {
        double t0 = clock_now();
        int rc = coll_allreduce(d, r->bufs[g], r->count, FP_FP32, COST_RING, e);
        if (rc)
            return rc;
        double t = clock_now() - t0;
        if (t < r->best[g])
            r->best[g] = t;
    }
    return 0;
}

static int run_gpus(struct bench *b, int n)
{
    size_t mib = 1u << 20, max = b->quick ? 4 * mib : 256 * mib;
    struct cluster_config cfg;
    cluster_config_init(&cfg);
    cfg.gpus = n;
    struct error e = {0};
    struct cluster *c = cluster_new(&cfg, &e);
    if (!c) {
        fprintf(stderr, "scalelab: bench: %s\n", e.msg);
        return 1;
    }
    struct run r = {calloc((size_t)n, sizeof(void *)), 0, 0, calloc((size_t)n, sizeof(double))};
    int status = 0;
    for (int g = 0; g < n && r.bufs && r.best; g++)
        if (!(r.bufs[g] = ledger_alloc(dev_ledger(cluster_device(c, g)), MEM_COMM, max, &e)))
            status = 1;
    if (!r.bufs || !r.best)
        status = 1;
    for (size_t size = mib; size <= max && status == 0; size *= 4) {
        r.count = size / 4;
        /* about a second of work at a few GB/s; at least 3 repetitions */
        double work = 2.0 * (n - 1) * (double)size * 2.5;
        r.repeat = b->quick                 ? 2
                   : (int)(4e9 / work) < 3  ? 3
                   : (int)(4e9 / work) > 50 ? 50
                                            : (int)(4e9 / work);
        cluster_reset(c);
        if (cluster_run(c, body, &r, &e) != 0) {
            fprintf(stderr, "scalelab: bench: %s\n", e.msg);
            status = 1;
            break;
        }
        double wall = 0;
        uint64_t traffic = 0;
        for (int g = 0; g < n; g++) {
            struct dev_stats s = dev_stats(cluster_device(c, g));
            traffic += 2 * s.bytes_received + s.bytes_combined;
            if (r.best[g] > wall)
                wall = r.best[g];
        }
        traffic /= (uint64_t)r.repeat;
        char what[96];
        snprintf(what, sizeof what, "ring allreduce %d GPUs %zu MiB: busbw", n, size / mib);
        bench_report(b, "collective", what, (double)size / wall * 2.0 * (n - 1) / n / 1e9, "GB/s",
                     BENCH_NONE);
        snprintf(what, sizeof what, "ring allreduce %d GPUs %zu MiB: memory traffic", n,
                 size / mib);
        bench_report(b, "collective", what, (double)traffic / wall / 1e9, "GB/s", BENCH_COPY);
    }
    for (int g = 0; g < n && r.bufs; g++)
        ledger_free(dev_ledger(cluster_device(c, g)), r.bufs[g]);
    free(r.bufs);
    free(r.best);
    cluster_free(c);
    return status;
}

static int run(struct bench *b)
{
    for (int n = 2; n <= 8; n *= 2)
        if (run_gpus(b, n) != 0)
            return 1;
    return 0;
}

const struct bench_case bench_collective = {
    "collective",
    "ring all-reduce among 2, 4, 8 GPU threads: busbw and memory traffic vs copy bandwidth",
    run,
};

/* ------------------------------------------------------------------ group "mpi"
 *
 * The ring all-reduce over MPI ranks of this machine beside the MPI library's own
 * MPI_Allreduce on the same buffers, as the ratio of their bus bandwidths (the goal: at least
 * the library's at 64 MiB and above). Each figure comes from one
 * `mpirun -n N scalelab collective --transport mpi --json --repeat R` (best of R, checked).
 * Default: 2 and 4 ranks, 1, 16 and 64 MiB; SCALELAB_BENCH_MPI=full: 2, 4 and 8 ranks, 1 MiB
 * to 256 MiB by factors of 4 (minutes on a small machine); --quick: 2 ranks, 1 MiB. */

static int mpi_one(struct bench *b, const char *exe, int n, size_t size)
{
    size_t mib = 1u << 20;
    int repeat = b->quick ? 2 : size <= mib ? 20 : size <= 16 * mib ? 5 : 3;
    char cmd[4400];
    snprintf(cmd, sizeof cmd,
             "mpirun %s --oversubscribe -n %d '%s' collective --transport mpi --json "
             "--size %zu --repeat %d",
             getuid() == 0 ? "--allow-run-as-root" : "", n, exe, size, repeat);
    FILE *p = popen(cmd, "r");
    if (!p) {
        fprintf(stderr, "scalelab: bench: mpi: cannot run mpirun\n");
        return 1;
    }
    json_error_t je;
    json_t *d = json_loadf(p, 0, &je);
    int rc = pclose(p);
    json_t *lib = d ? json_array_get(json_object_get(d, "mpi"), 0) : NULL;
    if (rc != 0 || !lib || !json_is_true(json_object_get(d, "verified"))) {
        fprintf(stderr, "scalelab: bench: mpi: %d ranks, %zu MiB: the run failed (%s)\n", n,
                size / mib, cmd);
        json_decref(d);
        return 1;
    }
    double ours = json_number_value(json_object_get(d, "busbw_GBps"));
    double theirs = json_number_value(json_object_get(lib, "busbw_GBps"));
    char what[96];
    snprintf(what, sizeof what, "mpi ring allreduce %d ranks %zu MiB: busbw", n, size / mib);
    bench_report(b, "mpi", what, ours, "GB/s", BENCH_NONE);
    snprintf(what, sizeof what, "MPI_Allreduce %d ranks %zu MiB: busbw", n, size / mib);
    bench_report(b, "mpi", what, theirs, "GB/s", BENCH_NONE);
    snprintf(what, sizeof what, "ring / MPI_Allreduce %d ranks %zu MiB", n, size / mib);
    bench_report(b, "mpi", what, theirs > 0 ? ours / theirs : 0, "x", BENCH_NONE);
    json_decref(d);
    return 0;
}

static int run_mpi(struct bench *b)
{
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
    fprintf(stderr, "scalelab: bench: mpi: skipped in a sanitizer build (Open MPI's own leaks "
                    "and races would be reported)\n");
    return 0;
#endif
    if (!mpi_built() || system("command -v mpirun >/dev/null 2>&1") != 0) {
        fprintf(stderr, "scalelab: bench: mpi: skipped: %s\n",
                mpi_built() ? "mpirun is not installed (apt-get install openmpi-bin)"
                            : mpi_about());
        return 0;
    }
    char exe[4096];
    ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (len <= 0 || strchr(exe, '\'') != NULL) {
        fprintf(stderr, "scalelab: bench: mpi: cannot find this program's path\n");
        return 1;
    }
    exe[len] = '\0';
    const char *full = getenv("SCALELAB_BENCH_MPI");
    bool large = full && !strcmp(full, "full");
    static const int sizes_mib[3][6] = {{1}, {1, 16, 64}, {1, 4, 16, 64, 256}};
    const int *sizes = sizes_mib[b->quick ? 0 : large ? 2 : 1];
    int top = b->quick ? 2 : large ? 8 : 4;
    for (int n = 2; n <= top; n *= 2)
        for (int i = 0; i < 6 && sizes[i]; i++)
            if (mpi_one(b, exe, n, (size_t)sizes[i] << 20) != 0)
                return 1;
    return 0;
}

const struct bench_case bench_mpi = {
    "mpi",
    "ring all-reduce over 2 and 4 MPI ranks beside MPI_Allreduce (SCALELAB_BENCH_MPI=full: "
    "2-8 ranks, 1-256 MiB)",
    run_mpi,
};
