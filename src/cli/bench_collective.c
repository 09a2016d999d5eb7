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

#include <stdio.h>
#include <stdlib.h>

#include "base/clock.h"
#include "base/error.h"
#include "comm/coll.h"
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
