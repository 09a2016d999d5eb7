/* Benchmark groups "collective", "mpi" and "mpi-train": the collectives on this host, and
 * training over MPI ranks.
 *
 * Group "collective": the ring all-reduce of the simulated cluster. All simulated GPUs share
 * the host's one memory system, so a thread all-reduce can never reach its bus bandwidth:
 * every byte "sent" is read from the sender's buffer and written to the receiver's (and, in
 * reduce-scatter, the receiver's own value is read too). So nccl-tests' busbw (S/t x
 * 2(N-1)/N, t the host's wall time) is shown beside the busbw the copy bandwidth measured in
 * the same run would allow: the copy bandwidth times busbw's bytes over the bytes the receives
 * really read and wrote (2 per copied byte, 3 per summed byte, counted by the simulator). The
 * ratio is the memory traffic's rate over the copy's (above 1 where the buffers fit in the
 * caches: the copy is measured on 256 MiB, out of them). Buffers are allocated once per GPU
 * count, through the ledger, for the largest size, and every size runs on them; each sample
 * is one all-reduce, the GPUs starting together (dev_barrier), timed to its slowest GPU.
 *
 * Then the whole of `scalelab collective --gpus 16 --size 256MiB --json` as a user runs it (a
 * child process, so its memory is its own): its wall time beside the collective's (the
 * target: at most 1.5 x), the parts before and after it, and its peak memory beside the
 * buffers the algorithm needs (the target: at most 1.2 x). --quick: 4 GPUs of 4 MiB. */
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
    double *t; /* [repeat][gpus]: each GPU's time of each all-reduce */
};

static int body(struct device *d, void *arg, struct error *e)
{
    struct run *r = arg;
    int g = dev_rank(d), n = dev_count(d);
    for (int i = 0; i < r->repeat; i++) {
        int rc = dev_barrier(d, e);
        double t0 = clock_now();
        if (!rc)
            rc = coll_allreduce(d, r->bufs[g], r->count, FP_FP32, COST_RING, e);
        if (rc)
            return rc;
        r->t[(size_t)i * n + g] = clock_now() - t0;
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
    struct run r = {calloc((size_t)n, sizeof(void *)), 0, b->repeats,
                    calloc((size_t)n * (size_t)b->repeats, sizeof(double))};
    int status = 0;
    for (int g = 0; g < n && r.bufs && r.t; g++)
        if (!(r.bufs[g] = ledger_alloc(dev_ledger(cluster_device(c, g)), MEM_COMM, max, &e)))
            status = 1;
    if (!r.bufs || !r.t)
        status = 1;
    for (size_t size = mib; size <= max && status == 0; size *= 4) {
        r.count = size / 4;
        cluster_reset(c);
        if (cluster_run(c, body, &r, &e) != 0) {
            fprintf(stderr, "scalelab: bench: %s\n", e.msg);
            status = 1;
            break;
        }
        uint64_t traffic = 0;
        for (int g = 0; g < n; g++) {
            struct dev_stats s = dev_stats(cluster_device(c, g));
            traffic += 2 * s.bytes_received + s.bytes_combined;
        }
        double bus = (double)size * 2.0 * (n - 1) / n, per = (double)traffic / r.repeat;
        double busbw[BENCH_MAX_REPEATS], limit = b->copy_GBps * bus / per;
        for (int i = 0; i < r.repeat; i++) {
            double wall = 0; /* an all-reduce ends when its slowest GPU does */
            for (int g = 0; g < n; g++)
                wall = r.t[(size_t)i * n + g] > wall ? r.t[(size_t)i * n + g] : wall;
            busbw[i] = bus / wall / 1e9;
        }
        char what[96];
        snprintf(what, sizeof what, "ring allreduce %d GPUs %zu MiB: busbw", n, size / mib);
        bench_report_vs(b, "collective", what, busbw, r.repeat, "GB/s", "copy-bound busbw", &limit,
                        1);
    }
    for (int g = 0; g < n && r.bufs; g++)
        ledger_free(dev_ledger(cluster_device(c, g)), r.bufs[g]);
    free(r.bufs);
    free(r.t);
    cluster_free(c);
    return status;
}

/* Runs a command and reads the one JSON document it prints, which must say "verified": true
 * when verified is set; NULL after saying why. */
static json_t *json_of(const char *cmd, bool verified)
{
    FILE *p = popen(cmd, "r");
    if (!p) {
        fprintf(stderr, "scalelab: bench: cannot run %s\n", cmd);
        return NULL;
    }
    json_error_t je;
    json_t *d = json_loadf(p, 0, &je);
    int rc = pclose(p);
    if (rc != 0 || !d || (verified && !json_is_true(json_object_get(d, "verified")))) {
        fprintf(stderr, "scalelab: bench: the run failed: %s\n", cmd);
        json_decref(d);
        return NULL;
    }
    return d;
}

static double num(json_t *d, const char *key)
{
    return json_number_value(json_object_get(d, key));
}

/* The whole collective command, as a user runs it, against the collective alone. */
static int whole_run(struct bench *b)
{
    char exe[4096], cmd[4400];
    if (bench_self(exe, sizeof exe))
        return 1;
    int n = b->quick ? 4 : 16, mib = b->quick ? 4 : 256;
    int k = b->repeats < 3 ? b->repeats : 3; /* each a few seconds and GiBs */
    snprintf(cmd, sizeof cmd, "'%s' collective --gpus %d --size %dMiB --json", exe, n, mib);
    double run[BENCH_MAX_REPEATS], coll[BENCH_MAX_REPEATS], setup[BENCH_MAX_REPEATS],
        check[BENCH_MAX_REPEATS], peak[BENCH_MAX_REPEATS], bufs = 0;
    for (int i = 0; i < k; i++) {
        json_t *d = json_of(cmd, true);
        if (!d)
            return 1;
        run[i] = num(d, "run_wall_time_s"), coll[i] = num(d, "wall_time_s");
        setup[i] = num(d, "setup_wall_time_s"), check[i] = num(d, "check_wall_time_s");
        peak[i] = num(d, "host_peak_bytes") / (1 << 30), bufs = num(d, "buffer_bytes") / (1 << 30);
        json_decref(d);
    }
    char what[96];
    snprintf(what, sizeof what, "collective %d GPUs x %d MiB, whole run (target <= 1.5)", n, mib);
    bench_report_vs(b, "collective", what, run, k, "s", "the collective", coll, k);
    snprintf(what, sizeof what, "  of it before: GPUs, buffers, data");
    bench_report_vs(b, "collective", what, setup, k, "s", "the collective", coll, k);
    snprintf(what, sizeof what, "  of it after: the check");
    bench_report_vs(b, "collective", what, check, k, "s", "the collective", coll, k);
    snprintf(what, sizeof what, "collective %d GPUs x %d MiB, peak memory (target <= 1.2)", n, mib);
    bench_report_vs(b, "collective", what, peak, k, "GiB", "its buffers", &bufs, 1);
    return 0;
}

static int run(struct bench *b)
{
    for (int n = 2; n <= 8; n *= 2)
        if (run_gpus(b, n) != 0)
            return 1;
    return whole_run(b);
}

const struct bench_case bench_collective = {
    "collective",
    "ring all-reduce among 2, 4, 8 GPU threads (busbw beside the copy bandwidth's); the whole "
    "collective command at 16 GPUs x 256 MiB beside the collective and its buffers",
    run,
};

/* ------------------------------------------------------------------ group "mpi"
 *
 * The ring all-reduce over MPI ranks of this machine beside the MPI library's own
 * MPI_Allreduce on the same buffers: their bus bandwidths, ours as a ratio to the library's
 * (the goal: at least the library's at 64 MiB and above). Each size is one
 * `mpirun -n N scalelab collective --transport mpi --json --repeat R`, which times ours and the
 * library's in turns, R of each (after a warm-up): the ratio is taken run by run, ours over
 * the library's just after it. On a machine with fewer free cores than ranks a rank often waits
 * for a core: a time slice is milliseconds, a 1 MiB all-reduce a tenth of one, so any sample
 * can be 10-100 x its neighbours; the spread shows it. (One line once read 0.038 x where a
 * direct run read 1.16 x: each was the best of a few runs of one kind taken in one stretch,
 * ours while the machine was busy and the library's after, on 4 ranks over 2 cores.)
 * Default: 2 and 4 ranks, 1, 16 and 64 MiB; SCALELAB_BENCH_MPI=full: 2, 4 and 8 ranks, 1 MiB
 * to 256 MiB by factors of 4 (minutes on a small machine); --quick: 2 ranks, 1 MiB. */

static int mpi_one(struct bench *b, const char *exe, int n, size_t size)
{
    size_t mib = 1u << 20;
    int repeat = b->quick ? b->repeats : size <= mib ? 4 * b->repeats : b->repeats;
    repeat = repeat < BENCH_MAX_REPEATS ? repeat : BENCH_MAX_REPEATS;
    char cmd[4400];
    snprintf(cmd, sizeof cmd,
             "mpirun %s --oversubscribe -n %d '%s' collective --transport mpi --json "
             "--size %zu --repeat %d",
             getuid() == 0 ? "--allow-run-as-root" : "", n, exe, size, repeat);
    json_t *d = json_of(cmd, true);
    if (!d)
        return 1;
    json_t *lib = json_array_get(json_object_get(d, "mpi"), 0);
    json_t *ours_s = json_object_get(d, "samples_s"), *lib_s = json_object_get(lib, "samples_s");
    if (json_array_size(ours_s) != (size_t)repeat || json_array_size(lib_s) != (size_t)repeat) {
        fprintf(stderr, "scalelab: bench: mpi: %s: no samples\n", cmd);
        json_decref(d);
        return 1;
    }
    double f = num(d, "busbw_factor") * (double)size / 1e9, ours[BENCH_MAX_REPEATS],
           theirs[BENCH_MAX_REPEATS];
    for (int i = 0; i < repeat; i++) {
        ours[i] = f / json_number_value(json_array_get(ours_s, (size_t)i));
        theirs[i] = f / json_number_value(json_array_get(lib_s, (size_t)i));
    }
    char what[96];
    snprintf(what, sizeof what, "mpi ring allreduce %d ranks %zu MiB: busbw", n, size / mib);
    bench_report_vs(b, "mpi", what, ours, repeat, "GB/s", "MPI_Allreduce", theirs, repeat);
    json_decref(d);
    return 0;
}

/* Whether MPI runs can be benchmarked here; false after saying why the group is skipped. */
static bool mpi_usable(const char *group)
{
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
    fprintf(stderr,
            "scalelab: bench: %s: skipped in a sanitizer build (Open MPI's own leaks "
            "and races would be reported)\n",
            group);
    return false;
#endif
    if (!mpi_built() || system("command -v mpirun >/dev/null 2>&1") != 0) {
        fprintf(stderr, "scalelab: bench: %s: skipped: %s\n", group,
                mpi_built() ? "mpirun is not installed (apt-get install openmpi-bin)"
                            : mpi_about());
        return false;
    }
    return true;
}

static int run_mpi(struct bench *b)
{
    if (!mpi_usable("mpi"))
        return 0;
    char exe[4096];
    if (bench_self(exe, sizeof exe))
        return 1;
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
    "ring all-reduce over 2 and 4 MPI ranks beside MPI_Allreduce, timed in turns "
    "(SCALELAB_BENCH_MPI=full: 2-8 ranks, 1-256 MiB)",
    run_mpi,
};

/* ------------------------------------------------------------------ group "mpi-train"
 *
 * The trainer with one GPU per MPI rank of this machine beside the same run on thread-GPUs
 * (`scalelab train --transport mpi` under mpirun against `train --gpus N`): the tokens per
 * second of each, the run as a user starts it (its summary's, from the run's start to its
 * end: the buffers' allocation is in both), the two commands taken in turns, the ratio sample
 * by sample. Both compute the same steps bit for bit (tests/cli/train_mpi.sh); what differs is
 * how the bytes travel (copies between threads, or MPI between processes: shared memory here,
 * a network between hosts) and the ranks' per-step exchange of their records. The `small`
 * model in fp32 on 2 GPUs: DDP, ZeRO-3, tp 2, pp 2 with 4 micro-batches (--quick: tiny,
 * DDP). With more ranks than free cores, a rank waiting for one costs a time slice. */

/* The tokens/s a train command's summary gives, or a negative number after saying why. */
static double train_rate(const char *cmd)
{
    json_t *d = json_of(cmd, false);
    double v = d ? num(json_object_get(d, "summary"), "tokens_per_s") : -1;
    json_decref(d);
    return v > 0 ? v : -1;
}

static int run_mpi_train(struct bench *b)
{
    if (!mpi_usable("mpi-train"))
        return 0;
    char exe[4096];
    if (bench_self(exe, sizeof exe))
        return 1;
    static const char *const layouts[][2] = {
        {"DDP", ""},
        {"ZeRO-3", "--zero 3"},
        {"tp 2", "--tp 2"},
        {"pp 2", "--pp 2 --micro-batches 4"},
    };
    const char *model = b->quick ? "tiny" : "small";
    int steps = b->quick ? 4 : 8, n = 2, k = b->repeats < 3 ? b->repeats : 3;
    for (int l = 0; l < (b->quick ? 1 : 4); l++) {
        char args[512], cmd[2][4800];
        snprintf(args, sizeof args,
                 "train --model %s --precision fp32 --steps %d %s --json --summary", model, steps,
                 layouts[l][1]);
        snprintf(cmd[0], sizeof cmd[0], "'%s' %s --gpus %d", exe, args, n);
        snprintf(cmd[1], sizeof cmd[1], "mpirun %s --oversubscribe -n %d '%s' %s --transport mpi",
                 getuid() == 0 ? "--allow-run-as-root" : "", n, exe, args);
        double thr[BENCH_MAX_REPEATS], mpi[BENCH_MAX_REPEATS];
        for (int i = 0; i < k; i++)
            if ((thr[i] = train_rate(cmd[0])) < 0 || (mpi[i] = train_rate(cmd[1])) < 0)
                return 1;
        char what[96];
        snprintf(what, sizeof what, "train %s %s, %d MPI ranks: tokens/s", model, layouts[l][0], n);
        bench_report_vs(b, "mpi-train", what, mpi, k, "tok/s", "thread-GPUs", thr, k);
    }
    return 0;
}

const struct bench_case bench_mpi_train = {
    "mpi-train",
    "training over 2 MPI ranks beside 2 thread-GPUs at the same layout (small, fp32: DDP, "
    "ZeRO-3, tp 2, pp 2), tokens/s taken in turns",
    run_mpi_train,
};
