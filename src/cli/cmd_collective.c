/* scalelab collective: one real collective among N device threads, checked and measured.
 *
 * Everything comes from comm/trial: the buffers (through each GPU's memory ledger), the data,
 * the run on the simulated cluster, the check against a double-precision reference, the bytes
 * each GPU sent, the simulated and predicted times. algbw and busbw are nccl-tests' (its
 * doc/PERFORMANCE.md): algbw = S / t, busbw = algbw x 2(N-1)/N for all-reduce, (N-1)/N for
 * reduce-scatter, all-gather and all-to-all, 1 for broadcast and reduce; t is the simulated
 * cluster's time (the host's own figures, from its wall time, are given beside them). */
#include "config.h"

#include <fcntl.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/error.h"
#include "base/json.h"
#include "base/units.h"
#include "calc/preset.h"
#include "cli/command.h"
#include "cli/opts.h"
#include "comm/coll.h"
#include "comm/cost.h"
#include "comm/mpi.h"
#include "comm/mpitrial.h"
#include "comm/reduce.h"
#include "comm/trial.h"
#include "sim/trace.h"

/* Host memory all GPUs' buffers together may take. */
#define HOST_LIMIT (4.0 * 1024 * 1024 * 1024)

struct cfg {
    struct trial_args a;
    const char *cluster, *trace, *fail, *events;
    int gpus;  /* --gpus (0: not given, 8) */
    int root;  /* --root (-1: not given, 0) */
    int nodes; /* 0: the preset's */
    double size;
    bool steps, json, sweep, size_given;
    bool progress;     /* --progress: report progress on stderr even when it is no terminal */
    bool mpi;          /* --transport mpi: this process is one rank */
    double deadline_s; /* the longest wait for one message (0: 60 s) */
    double started;    /* clock_now() when the command began: the whole run's wall time */
};

/* comm/'s and num/'s parsers behind the option's name. */
#define NAMED_PARSER(NAME, CALL)                                                                   \
    static int NAME(const struct opt_entry *o, const char *arg, void *field, struct error *e)      \
    {                                                                                              \
        int rc = CALL(arg, field, e);                                                              \
        if (rc < 0)                                                                                \
            error_prefix(e, "--%s", o->opt.name);                                                  \
        return rc;                                                                                 \
    }
NAMED_PARSER(parse_op, cost_parse_op)
NAMED_PARSER(parse_algo, cost_parse_algo)

static int parse_dtype(const struct opt_entry *o, const char *arg, void *field, struct error *e)
{
    int rc = fp_parse_format(arg, field, e);
    if (!rc && reduce_elem_size(*(enum fp_format *)field) == 0)
        rc = error_set(e, ERR_INVAL, "collectives carry fp32, bf16 or fp16, not %s", arg);
    if (rc < 0)
        error_prefix(e, "--%s", o->opt.name);
    return rc;
}

/* --size: the bytes, and that they were given (the sweep's top otherwise defaults). */
static int parse_size(const struct opt_entry *o, const char *arg, void *field, struct error *e)
{
    struct cfg *c = (struct cfg *)(void *)((char *)field - offsetof(struct cfg, size));
    int rc = units_parse_bytes(arg, HOST_LIMIT, &c->size, e);
    if (rc < 0)
        error_prefix(e, "--%s", o->opt.name);
    c->size_given = true;
    return rc;
}

static int parse_seed(const struct opt_entry *o, const char *arg, void *field, struct error *e)
{
    long long v;
    if (units_parse_int(arg, 0, 1LL << 62, &v, NULL) < 0)
        return error_set(e, ERR_INVAL, "--%s: '%s' is not allowed (a whole number from 0 to 2^62)",
                         o->opt.name, arg);
    *(uint64_t *)field = (uint64_t)v;
    return 0;
}

/* --fail GPU@STEP: the text kept for messages, the GPU and step into the trial. */
static int parse_fail(const struct opt_entry *o, const char *arg, void *field, struct error *e)
{
    struct cfg *c = (struct cfg *)(void *)((char *)field - offsetof(struct cfg, fail));
    long long step;
    (void)o;
    c->fail = arg;
    int rc = opts_gpu_at(arg, CLUSTER_MAX_GPUS - 1, 0, 1 << 30, &c->a.fail_gpu, &step, e);
    if (!rc)
        c->a.fail_step = (int)step;
    return rc;
}

#define C struct cfg
static const struct opt_entry options[] = {
    OPT_WITH("op", "OP", parse_op, C, a.op,
             "allreduce (default), reduce-scatter, allgather, broadcast, reduce,\n"
             "alltoall (each GPU's buffer holds N blocks, block j for GPU j; each\n"
             "GPU receives its block from every GPU into a buffer of its own)"),
    OPT_WITH("algo", "ALGO", parse_algo, C, a.algo,
             "ring (default; pairwise for alltoall), tree, dbtree, rhd, pairwise,\n"
             "direct, or auto (the α-β model's fastest). allreduce: ring, tree,\n"
             "dbtree, rhd; reduce-scatter, allgather: ring, rhd (N a power of two);\n"
             "broadcast, reduce: ring (a pipelined chain), tree; alltoall: pairwise\n"
             "(N-1 exchange steps), direct (every send posted at once)"),
    OPT_INT("gpus", "N", C, gpus, 1, CLUSTER_MAX_GPUS, "1 to 256 (default 8)"),
    OPT_WITH("size", "BYTES", parse_size, C, size,
             "the collective's size S as nccl-tests counts it: the whole buffer of each\n"
             "GPU (\"64MiB\", default); a whole number of elements (alltoall: N blocks\n"
             "of whole elements); the buffers at most 4 GiB: N x S (2 N x S for\n"
             "alltoall, which receives into buffers of their own).\n"
             "Host memory: about N x S for the buffers, 4 MiB a GPU for its thread,\n"
             "and 256 MiB for the program (a test holds it to this bound; OpenBLAS\n"
             "reserves more address space per core unless OPENBLAS_NUM_THREADS=1)"),
    OPT_WITH("dtype", "T", parse_dtype, C, a.dtype,
             "fp32 (default), bf16, fp16: low-precision sums add in fp32 and round once\n"
             "per hop"),
    OPT_WITH("cluster", "C", opts_str, C, cluster,
             "a preset of assets/clusters (default h100-80gb) or an .ini file"),
    OPT_INT("nodes", "K", C, nodes, 1, CLUSTER_MAX_GPUS,
            "spread the N GPUs over K nodes (N/K per node) instead of the preset's\n"
            "GPUs per node; links between nodes use the inter-node α and β"),
    OPT_INT("root", "R", C, root, 0, CLUSTER_MAX_GPUS - 1,
            "the root of broadcast and reduce (default 0; other operations refuse it)"),
    OPT_FLAG("steps", C, steps,
             "print every step: which GPU sends which chunk to which (text; for\n"
             "JSON, --events FILE)"),
    OPT_FLAG("json", C, json, "one JSON document"),
    OPT_WITH("trace", "FILE", opts_str, C, trace,
             "write the run as Chrome trace-event JSON (open it in ui.perfetto.dev)"),
    OPT_WITH("events", "FILE", opts_str, C, events,
             "write every event (sends, receives, memory) as JSON lines, in the order of\n"
             "simulated time, GPU, and each GPU's own sequence"),
    OPT_WITH("fail", "G@S", parse_fail, C, fail,
             "GPU G stops at round S of the algorithm (--json's rounds: a ring's or\n"
             "rhd's are its steps, a tree's a chunk's reduce or broadcast): the run\n"
             "ends with an error naming both (exit 1)"),
    OPT_FLAG("sweep", C, sweep,
             "ring against tree (rhd for reduce-scatter/allgather, direct against\n"
             "pairwise for alltoall) from 1 KiB to --size (default 64 MiB) by factors\n"
             "of 4, with the crossover; alltoall's sizes rounded down to N blocks of\n"
             "whole elements, as nccl-tests does"),
    OPT_WITH("seed", "S", parse_seed, C, a.seed, "the data's seed (default 1)"),
    OPT_WITH("deadline", "S", opts_seconds, C, deadline_s,
             "the longest wait for one message, in seconds (default 60)"),
    OPT_WITH("transport", "T", opts_transport, C, mpi,
             "thread (default: the simulated cluster's device threads) or mpi: under\n"
             "mpirun with 2 or more ranks, each rank is one GPU and runs the same\n"
             "algorithm over MPI (one rank alone is refused: it would send nothing)\n"
             "(needs a scalelab built with Open MPI: libopenmpi-dev, openmpi-bin).\n"
             "Rank 0 reports algbw and busbw on the real wall time and the MPI\n"
             "library's MPI_Allreduce, MPI_Reduce_scatter_block and MPI_Allgather on\n"
             "the same buffers (and MPI_Bcast, MPI_Reduce or MPI_Alltoall for those\n"
             "ops; JSON: \"transport\": \"mpi\", \"mpi\": [...]); --fail or a\n"
             "rank silent past the deadline ends every rank (MPI_Abort, exit 1).\n"
             "No --sweep, --steps, --trace or --events (they read simulated time)"),
    OPT_FLAG("progress", C, progress,
             "say how the run is going on standard error when it is not a terminal: a\n"
             "line as each part begins (allocating, filling, the collective, checking)\n"
             "and one a second within it. On a terminal a run longer than a second\n"
             "always shows one line, rewritten in place and cleared when done"),
    OPT_INT("repeat", "R", C, a.repeat, 1, 1000,
            "with --transport mpi: time R runs (fresh data each, after a warm-up),\n"
            "each followed by the library's, and report the best (JSON: every run's\n"
            "time, \"samples_s\"); our last one is checked"),
    OPT_END,
};
#undef C

const struct opts_spec opts_collective = {"collective", options, NULL, NULL};

static int usage_err(const struct error *e)
{
    return cli_usage("collective", "%s", e->msg);
}

/* The options into c: the table, then the cluster and what the transport allows. */
static int parse(int argc, char **argv, struct cfg *c)
{
    struct error e = {0};
    trial_args_init(&c->a);
    c->a.op = COST_ALLREDUCE;
    c->size = 64.0 * 1024 * 1024;
    c->cluster = PRESET_CLUSTER;
    c->root = -1;
    c->a.algo = COST_ALGO_COUNT; /* not given */
    int rc = opts_parse(&opts_collective, argc, argv, c);
    if (rc)
        return rc;
    if (c->a.algo == COST_ALGO_COUNT)
        c->a.algo = c->a.op == COST_ALLTOALL ? COST_PAIRWISE : COST_RING;
    c->a.gpus = c->gpus ? c->gpus : 8;
    c->a.root = c->root >= 0 ? c->root : 0;
    /* the cluster: a preset or a file, then --nodes */
    if (preset_load_cluster(c->cluster, &c->a.spec, &e) != 0) {
        error_prefix(&e, "--cluster");
        return usage_err(&e);
    }
    if (c->mpi && (c->sweep || c->steps || c->trace || c->events))
        return cli_usage("collective", "--transport mpi times real sends: no --sweep, --steps, "
                                       "--trace or --events (they read the simulated cluster)");
    if (!c->mpi && c->a.repeat > 1)
        return cli_usage("collective", "--repeat goes with --transport mpi (a simulated run "
                                       "takes the same time every time)");
    if (c->deadline_s > 0)
        c->a.deadline_s = c->deadline_s;
    return 0;
}

/* The checks that depend on the number of GPUs (under MPI: the ranks mpirun started). */
static int checks(struct cfg *c)
{
    struct error e = {0};
    int n = c->a.gpus;
    if (c->nodes) {
        if (n % c->nodes != 0)
            return cli_usage("collective", "--nodes %d: %d GPUs do not split evenly over %d nodes",
                             c->nodes, n, c->nodes);
        c->a.spec.gpus_per_node = n / c->nodes;
        c->a.spec.nodes = c->nodes;
    }
    size_t es = reduce_elem_size(c->a.dtype);
    if (c->size < (double)es)
        return cli_usage("collective", "--size: %.0f bytes is less than one %s element (%zu bytes)",
                         c->size, fp_info(c->a.dtype)->name, es);
    if (fmod(c->size, (double)es) != 0)
        return cli_usage("collective",
                         "--size: %.0f bytes is not a whole number of %s elements (%zu bytes each)",
                         c->size, fp_info(c->a.dtype)->name, es);
    double buffers = c->size * n * (c->a.op == COST_ALLTOALL ? 2 : 1);
    if (!c->mpi && buffers > HOST_LIMIT)
        return cli_usage("collective",
                         "--size x --gpus: %.0f bytes of buffers on the host%s; at most 4 GiB",
                         buffers, c->a.op == COST_ALLTOALL ? " (alltoall: sent and received)" : "");
    c->a.count = (size_t)(c->size / (double)es);
    if (c->a.op == COST_ALLTOALL && !c->sweep && c->a.count % (size_t)n != 0) {
        size_t lo = c->a.count / (size_t)n * (size_t)n, hi = lo + (size_t)n;
        return cli_usage("collective",
                         "--size: alltoall sends each of the %d GPUs a block of S/N: %zu %s "
                         "elements do not split into %d equal blocks (%zu or %zu elements do: "
                         "%zu or %zu bytes)",
                         n, c->a.count, fp_info(c->a.dtype)->name, n, lo, hi, lo * es, hi * es);
    }
    /* a root that is not used would be silently ignored: only broadcast and reduce have one */
    if (c->root >= 0 && c->a.op != COST_BROADCAST && c->a.op != COST_REDUCE)
        return cli_usage("collective", "--root %d: only broadcast and reduce have a root, not %s",
                         c->a.root, cost_op_name(c->a.op));
    if (c->a.root >= n)
        return cli_usage("collective", "--root %d: there are GPUs 0 to %d", c->a.root, n - 1);
    if (c->a.algo != COST_AUTO && !cost_supported(c->a.op, c->a.algo, n, &e)) {
        error_prefix(&e, "--algo");
        return usage_err(&e);
    }
    if (c->fail) {
        if (c->a.fail_gpu >= n)
            return cli_usage("collective", "--fail %s: there is no GPU %d (GPUs 0 to %d)", c->fail,
                             c->a.fail_gpu, n - 1);
        int steps = coll_steps(&c->a.spec, n, c->a.op, c->a.algo, c->a.count, c->a.dtype);
        if (c->a.fail_step >= steps)
            return cli_usage("collective",
                             "--fail %s: there is no round %d (this run's algorithm has %d: 0 "
                             "to %d)",
                             c->fail, c->a.fail_step, steps, steps - 1);
    }
    if (c->sweep && (c->fail || c->steps || c->trace || c->events))
        return cli_usage("collective",
                         "--sweep runs many sizes: no --fail, --steps, --trace or --events");
    if (c->steps && c->json)
        return cli_usage("collective", "--steps prints text, not JSON: with --json, --events FILE "
                                       "writes every step");
    if (c->sweep && c->size < 1024)
        return cli_usage("collective",
                         "--sweep runs from 1 KiB up to --size: give at least 1KiB, not %.0f bytes",
                         c->size);
    /* an unwritable output is bad input, found before the run rather than after it */
    if (c->trace && trace_check_path(c->trace, &e) < 0) {
        error_prefix(&e, "--trace");
        return usage_err(&e);
    }
    if (c->events && trace_check_path(c->events, &e) < 0) {
        error_prefix(&e, "--events");
        return usage_err(&e);
    }
    return 0;
}

static const char *algo_title(enum cost_op op, enum cost_algo algo)
{
    if (algo == COST_RING && (op == COST_BROADCAST || op == COST_REDUCE))
        return "ring (pipelined chain)";
    switch (algo) {
    case COST_RING: return "ring";
    case COST_TREE: return "pipelined binary tree";
    case COST_DBTREE: return "double binary tree";
    case COST_RHD: return "recursive halving/doubling";
    case COST_PAIRWISE: return "pairwise exchange";
    case COST_DIRECT: return "direct (every send at once)";
    default: return "?";
    }
}

static int by_arrival(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Prints each step's sends, from the events: a ring collective's lockstep steps as it numbers
 * them, the other algorithms' the moments their messages arrive (the steps --json counts and
 * lesson 3's panel shows). */
static void print_steps(struct cluster *cl, size_t es, bool ring)
{
    size_t n;
    const struct event *ev = cluster_events(cl, &n);
    double *arrival = malloc((n ? n : 1) * sizeof *arrival);
    double *moment = malloc((n ? n : 1) * sizeof *moment);
    int *step = malloc((n ? n : 1) * sizeof *step);
    if (!arrival || !moment || !step || event_send_arrivals(ev, n, arrival) < 0) {
        free(arrival), free(moment), free(step);
        fprintf(stderr, "scalelab: collective --steps: out of memory\n");
        return;
    }
    size_t u = 0;
    for (size_t i = 0; i < n; i++)
        if (ev[i].type == EV_SEND)
            moment[u++] = arrival[i];
    qsort(moment, u, sizeof *moment, by_arrival);
    size_t k = 0;
    for (size_t i = 0; i < u; i++) /* within 1e-9, one moment (as comm/cost.c counts them) */
        if (k == 0 || moment[i] > moment[k - 1] * (1 + 1e-9))
            moment[k++] = moment[i];
    int maxstep = -1;
    for (size_t i = 0; i < n; i++) {
        step[i] = -1;
        if (ev[i].type != EV_SEND)
            continue;
        if (ring) {
            step[i] = ev[i].step;
        } else {
            int m = 0;
            while ((size_t)m + 1 < k && moment[m] * (1 + 1e-9) < arrival[i])
                m++;
            step[i] = m;
        }
        maxstep = step[i] > maxstep ? step[i] : maxstep;
    }
    for (int s = 0; s <= maxstep; s++) {
        const char *phase = NULL;
        for (size_t i = 0; i < n; i++) {
            if (step[i] != s)
                continue;
            if (!phase || strcmp(phase, ev[i].phase) != 0) {
                phase = ev[i].phase;
                printf("step %d (%s)%s\n", s, phase, "");
            }
            char b[32];
            units_format_bytes(b, sizeof b, (double)ev[i].bytes, UNITS_BINARY);
            printf("  GPU %d -> GPU %d: chunk %d, %s (%llu elements), t = %.3f us -> %.3f us\n",
                   ev[i].device, ev[i].peer, ev[i].chunk, b, (unsigned long long)(ev[i].bytes / es),
                   ev[i].t * 1e6, arrival[i] * 1e6);
        }
    }
    free(arrival), free(moment), free(step);
}

/* The process's peak resident memory, in bytes (getrusage). */
static uint64_t peak_rss(void)
{
    struct rusage u;
    return getrusage(RUSAGE_SELF, &u) == 0 ? (uint64_t)u.ru_maxrss * 1024 : 0;
}

/* The run's time: the simulated cluster's, or the wall time over MPI. */
static double run_time(const struct trial *t, const struct mpi_run *mr)
{
    return mr ? t->wall_s : t->simulated_s;
}

/* The library's figure for the same operation, or NULL. */
static const struct mpi_lib_figure *same_op(const struct mpi_run *mr, enum cost_op op)
{
    for (int i = 0; mr && i < mr->nlib; i++)
        if (mr->lib[i].op == op)
            return &mr->lib[i];
    return NULL;
}

/* An MPI run's times (alg, f: its algbw in GB/s and busbw factor): predicted, wall, and the
 * library's on the same buffers. */
static void print_mpi_times(const struct trial_args *a, const struct trial *t,
                            const struct mpi_run *mr, double alg, double f)
{
    char b1[32], b2[32];
    int n = a->gpus;
    units_format_seconds(b1, sizeof b1, t->predicted.time_s);
    printf("  predicted time (α-β):   %s on %s's links\n", b1, a->spec.name);
    units_format_seconds(b2, sizeof b2, t->wall_s);
    printf("  wall time:              %s (MPI_Wtime, the slowest rank's, best of %d after a "
           "warm-up)\n",
           b2, mr->repeat);
    printf("  algbw %.2f GB/s, busbw %.2f GB/s (nccl-tests: S/t and x %.3g, on the wall "
           "time)\n",
           alg, alg * f, f);
    printf("  the MPI library on the same buffers (in place, best of %d after a warm-up):\n",
           mr->repeat);
    for (int i = 0; i < mr->nlib; i++) {
        const struct mpi_lib_figure *l = &mr->lib[i];
        double lf = cost_busbw_factor(l->op, n), la = cost_algbw(t->bytes, l->time_s) / 1e9;
        printf("    %-25s %10s  algbw %8.2f GB/s, busbw %8.2f GB/s\n", l->name,
               units_format_seconds(b1, sizeof b1, l->time_s), la, la * lf);
    }
    const struct mpi_lib_figure *same = same_op(mr, a->op);
    if (same)
        printf("  this %s's busbw is %.2f x %s's\n", cost_algo_name(t->algo),
               same->time_s / t->wall_s, same->name);
}

/* A simulated run's times (alg, f as above): predicted and simulated, and this host's. */
static void print_sim_times(const struct cfg *c, const struct trial *t, double alg, double f)
{
    char b1[32], b2[32];
    units_format_seconds(b1, sizeof b1, t->predicted.time_s);
    units_format_seconds(b2, sizeof b2, t->simulated_s);
    printf("  predicted time (α-β):   %s   simulated: %s\n", b1, b2);
    /* the collective alone is a small part of a large run: setting up the GPUs and their
     * buffers, the data and the check take most of it, so both are given */
    units_format_seconds(b1, sizeof b1, clock_now() - c->started);
    units_format_seconds(b2, sizeof b2, t->wall_s);
    printf("  host wall time:         %s for the whole run, %s of it the collective\n", b1, b2);
    units_format_seconds(b1, sizeof b1, t->setup_s);
    units_format_seconds(b2, sizeof b2, t->check_s);
    printf("                          (%s before it: the GPUs, their buffers and data; %s after: "
           "the check)\n",
           b1, b2);
    units_format_bytes(b1, sizeof b1, (double)peak_rss(), UNITS_BINARY);
    units_format_bytes(b2, sizeof b2, t->bytes * c->a.gpus, UNITS_BINARY);
    printf("  host memory:            %s at the peak, for %s of buffers\n", b1, b2);
    if (c->a.gpus == 1) { /* S/t over a time of 0: no bandwidth to speak of */
        printf("  algbw, busbw: none on one GPU (it sends nothing, in a simulated time of 0)\n");
        return;
    }
    printf("  algbw %.2f GB/s, busbw %.2f GB/s (nccl-tests: S/t and x %.3g, on the simulated "
           "time)\n",
           alg, alg * f, f);
    double halg = cost_algbw(t->bytes, t->wall_s) / 1e9;
    printf("  on this host: algbw %.2f GB/s, busbw %.2f GB/s\n", halg, halg * f);
}

/* mr: the MPI run's figures, or NULL for the thread transport. */
static void print_text(const struct cfg *c, const struct trial *t, const struct mpi_run *mr)
{
    const struct trial_args *a = &c->a;
    int n = a->gpus;
    char b1[32], b2[32], g[32];
    units_format_bytes(b1, sizeof b1, t->bytes, UNITS_BINARY);
    const struct cluster_spec *s = &a->spec;
    int nodes = (n + s->gpus_per_node - 1) / s->gpus_per_node;
    if (mr)
        printf("%s %s of %s %s on %d MPI rank%s, one GPU each (%d host%s; %s, ...)\n",
               algo_title(a->op, t->algo), cost_op_name(a->op), b1, fp_info(a->dtype)->name, n,
               n == 1 ? "" : "s", mr->hosts, mr->hosts == 1 ? "" : "s", mr->host0);
    else
        /* the preset's GPUs per node (--json's gpus_per_node), and the nodes the run spans */
        printf("%s %s of %s %s on %d GPU%s (%s: %d GPUs per node, %d node%s)\n",
               algo_title(a->op, t->algo), cost_op_name(a->op), b1, fp_info(a->dtype)->name, n,
               n == 1 ? "" : "s", s->name, s->gpus_per_node, nodes, nodes == 1 ? "" : "s");
    if (a->algo == COST_AUTO)
        printf("  algorithm: %s, the α-β model's fastest for this size\n", cost_algo_name(t->algo));
    if (t->check.tolerance > 0)
        printf("  verified: max relative error %.3g <= tolerance %.3g = (N-1)(u_%s%s), "
               "relative to sum|x|\n",
               t->check.max_rel_error, t->check.tolerance, fp_info(a->dtype)->name,
               a->dtype == FP_FP32 ? "" : " + u_fp32");
    else
        printf("  verified: every element is the source's exactly\n");
    if (a->op == COST_ALLREDUCE)
        printf("  every GPU holds bit-identical results\n");
    double share = 0, factor = 0;
    const char *formula = NULL;
    switch (a->op) {
    case COST_ALLREDUCE: formula = "2(N-1)", factor = 2.0 * (n - 1); break;
    default: formula = "(N-1)", factor = n - 1; break;
    }
    share = factor / n * t->bytes;
    uint64_t lo = UINT64_MAX, hi = 0;
    for (int i = 0; i < n; i++) {
        lo = t->sent[i] < lo ? t->sent[i] : lo;
        hi = t->sent[i] > hi ? t->sent[i] : hi;
    }
    if (lo == hi)
        printf("  bytes sent by each GPU: %s", units_format_grouped(g, sizeof g, hi));
    else
        printf("  bytes sent by each GPU: %s to %s", units_format_grouped(b1, sizeof b1, lo),
               units_format_grouped(b2, sizeof b2, hi));
    if ((a->op == COST_ALLREDUCE || a->op == COST_REDUCE_SCATTER || a->op == COST_ALLGATHER) &&
        (t->algo == COST_RING || (t->algo == COST_RHD && !(n & (n - 1)))))
        printf("   (%s/N x size = %.1f, up to one element)\n", formula, share);
    else if (a->op == COST_ALLTOALL) /* its own block stays: N-1 blocks of S/N leave */
        printf("   (%s/N x size = %.0f: every block but its own)\n", formula, share);
    else
        printf("\n");
    if (n <= 16 && lo != hi) {
        printf("   ");
        for (int i = 0; i < n; i++)
            printf(" GPU %d: %s", i, units_format_grouped(g, sizeof g, t->sent[i]));
        printf("\n");
    }
    printf("  bytes sent in total:    %s   (%s x size = %.0f)\n",
           units_format_grouped(g, sizeof g, t->sent_total), formula, factor * t->bytes);
    if (t->rounds != t->steps)
        printf("  steps:                  %d (the moments its messages arrive; %d rounds of the "
               "algorithm)\n",
               t->steps, t->rounds);
    else
        printf("  steps:                  %d\n", t->steps);
    double f = cost_busbw_factor(a->op, n), alg = cost_algbw(t->bytes, run_time(t, mr)) / 1e9;
    if (mr)
        print_mpi_times(a, t, mr, alg, f);
    else
        print_sim_times(c, t, alg, f);
}

/* Every repetition's time, in order. */
static json_t *samples(const double *v, int n)
{
    json_t *a = json_array();
    for (int i = 0; v && i < n; i++)
        json_array_append_new(a, json_num(v[i]));
    return a;
}

static void print_json(const struct cfg *c, const struct trial *t, const struct mpi_run *mr)
{
    const struct trial_args *a = &c->a;
    int n = a->gpus;
    json_t *sent = json_array();
    for (int i = 0; i < n; i++)
        json_array_append_new(sent, json_integer((json_int_t)t->sent[i]));
    double f = cost_busbw_factor(a->op, n), alg = cost_algbw(t->bytes, run_time(t, mr)) / 1e9;
    double halg = cost_algbw(t->bytes, t->wall_s) / 1e9;
    json_t *o = json_object();
    json_object_set_new(o, "op", json_string(cost_op_name(a->op)));
    json_object_set_new(o, "algo", json_string(cost_algo_name(t->algo)));
    json_object_set_new(o, "gpus", json_integer(n));
    json_object_set_new(o, "size", json_integer((json_int_t)t->bytes));
    json_object_set_new(o, "dtype", json_string(fp_info(a->dtype)->key));
    json_object_set_new(o, "verified", json_boolean(t->check.ok));
    json_object_set_new(o, "max_rel_error", json_num(t->check.max_rel_error));
    json_object_set_new(o, "tolerance", json_num(t->check.tolerance));
    json_object_set_new(o, "bit_identical", json_boolean(t->check.identical));
    json_object_set_new(o, "bytes_sent_per_gpu", sent);
    json_object_set_new(o, "bytes_sent_total", json_integer((json_int_t)t->sent_total));
    json_object_set_new(o, "steps", json_integer(t->steps));
    json_object_set_new(o, "rounds", json_integer(t->rounds));
    json_object_set_new(o, "predicted_time_s", json_num(t->predicted.time_s));
    json_object_set_new(o, "simulated_time_s", mr ? json_null() : json_num(t->simulated_s));
    json_object_set_new(o, "wall_time_s", json_num(t->wall_s));
    json_object_set_new(o, "run_wall_time_s", json_num(clock_now() - c->started));
    if (!mr) {
        json_object_set_new(o, "setup_wall_time_s", json_num(t->setup_s));
        json_object_set_new(o, "check_wall_time_s", json_num(t->check_s));
        json_object_set_new(o, "buffer_bytes", json_integer((json_int_t)(t->bytes * n)));
        json_object_set_new(o, "host_peak_bytes", json_integer((json_int_t)peak_rss()));
    }
    /* one GPU sends nothing in no time: no bandwidth (null), not 0 GB/s */
    bool none = n == 1;
    json_object_set_new(o, "algbw_GBps", none ? json_null() : json_num(alg));
    json_object_set_new(o, "busbw_GBps", none ? json_null() : json_num(alg * f));
    json_object_set_new(o, "busbw_factor", json_num(f));
    json_object_set_new(o, "host_algbw_GBps", none ? json_null() : json_num(halg));
    json_object_set_new(o, "host_busbw_GBps", none ? json_null() : json_num(halg * f));
    json_object_set_new(o, "cluster", json_string(a->spec.name));
    json_object_set_new(o, "gpus_per_node", json_integer(a->spec.gpus_per_node));
    json_object_set_new(o, "transport", json_string(mr ? "mpi" : "thread"));
    char dig[20];
    snprintf(dig, sizeof dig, "%016llx", (unsigned long long)t->digest);
    json_object_set_new(o, "result_digest", json_string(dig));
    if (mr) {
        json_t *lib = json_array();
        for (int i = 0; i < mr->nlib; i++) {
            const struct mpi_lib_figure *l = &mr->lib[i];
            double la = cost_algbw(t->bytes, l->time_s) / 1e9;
            json_array_append_new(lib,
                                  json_pack("{s:s, s:s, s:o, s:o, s:o, s:o}", "name", l->name, "op",
                                            cost_op_name(l->op), "time_s", json_num(l->time_s),
                                            "algbw_GBps", json_num(la), "busbw_GBps",
                                            json_num(la * cost_busbw_factor(l->op, n)), "samples_s",
                                            samples(l->sample, mr->repeat)));
        }
        json_object_set_new(o, "mpi", lib);
        json_object_set_new(o, "ranks", json_integer(mr->size));
        json_object_set_new(o, "hosts", json_integer(mr->hosts));
        json_object_set_new(o, "repeat", json_integer(mr->repeat));
        json_object_set_new(o, "samples_s", samples(mr->sample, mr->repeat));
        const struct mpi_lib_figure *same = same_op(mr, a->op);
        if (same)
            json_object_set_new(o, "busbw_ratio_to_library", json_num(same->time_s / t->wall_s));
    }
    json_write(stdout, o, JSON_FIGURES); /* takes o */
}

/* ring vs tree all-reduce (or the op's two algorithms) over sizes: simulated runs beside the
 * α-β model, and where the faster one changes. */
static int sweep(struct cfg *c)
{
    const struct trial_args *base = &c->a;
    size_t es = reduce_elem_size(base->dtype);
    double max = c->size_given ? c->size : 64.0 * 1024 * 1024;
    enum cost_algo algos[2] = {COST_RING, COST_TREE};
    if (base->op == COST_REDUCE_SCATTER || base->op == COST_ALLGATHER)
        algos[1] = COST_RHD;
    if (base->op == COST_ALLTOALL)
        algos[0] = COST_PAIRWISE, algos[1] = COST_DIRECT;
    char key[2][32]; /* the JSON rows' names of the first algorithm's times */
    snprintf(key[0], sizeof key[0], "%s_s", cost_algo_name(algos[0]));
    snprintf(key[1], sizeof key[1], "%s_predicted_s", cost_algo_name(algos[0]));
    struct error e = {0};
    if (!cost_supported(base->op, algos[1], base->gpus, &e))
        return cli_fail(&e);
    json_t *rows = json_array();
    if (!c->json)
        printf("%s %s vs %s on %d GPUs (%s), simulated (and α-β predicted) times\n",
               cost_op_name(base->op), cost_algo_name(algos[0]), cost_algo_name(algos[1]),
               base->gpus, base->spec.name);
    if (!c->json)
        printf("%12s %14s %14s %14s %14s  %s\n", "size", cost_algo_name(algos[0]), "(predicted)",
               cost_algo_name(algos[1]), "(predicted)", "faster");
    int prev = -1;
    double cross_lo = -1, cross_hi = -1, last = 0;
    for (double step = 1024; step <= max; step *= 4) {
        double ts[2], tp[2];
        /* alltoall: N blocks of whole elements, the size rounded down (nccl-tests'
         * AlltoAllGetCollByteCount does the same) */
        size_t count = (size_t)(step / (double)es), n = (size_t)base->gpus;
        if (base->op == COST_ALLTOALL)
            count = count / n * n;
        double size = (double)count * (double)es;
        for (int i = 0; i < 2; i++) {
            struct trial_args a = *base;
            a.algo = algos[i];
            a.count = count;
            a.verify = false;
            struct trial t;
            int rc = trial_run(&a, &t, &e);
            ts[i] = t.simulated_s;
            tp[i] = t.predicted.time_s;
            trial_fini(&t);
            if (rc) {
                json_decref(rows);
                return cli_fail(&e);
            }
        }
        int faster = ts[1] < ts[0];
        if (prev >= 0 && faster != prev && cross_lo < 0)
            cross_lo = last, cross_hi = size;
        prev = faster;
        last = size;
        char b[32], t0[32], t1[32], p0[32], p1[32];
        units_format_bytes(b, sizeof b, size, UNITS_BINARY);
        if (!c->json)
            printf("%12s %14s %14s %14s %14s  %s\n", b, units_format_seconds(t0, sizeof t0, ts[0]),
                   units_format_seconds(p0, sizeof p0, tp[0]),
                   units_format_seconds(t1, sizeof t1, ts[1]),
                   units_format_seconds(p1, sizeof p1, tp[1]), cost_algo_name(algos[faster]));
        json_array_append_new(rows,
                              json_pack("{s:f, s:o, s:o, s:o, s:o, s:s}", "size", size, key[0],
                                        json_num(ts[0]), key[1], json_num(tp[0]), "other_s",
                                        json_num(ts[1]), "other_predicted_s", json_num(tp[1]),
                                        "faster", cost_algo_name(algos[faster])));
    }
    /* the model's own crossover, the one the window marks (the same schedule as the runs) */
    struct cost_net net;
    coll_net(&base->spec, base->gpus, &net);
    double model_cross = cost_crossover(base->op, algos[0], algos[1], &net, 1024, max);
    if (c->json) {
        json_t *o = json_pack("{s:s, s:s, s:i, s:s, s:o}", "op", cost_op_name(base->op), "other",
                              cost_algo_name(algos[1]), "gpus", base->gpus, "dtype",
                              fp_info(base->dtype)->key, "sizes", rows);
        json_object_set_new(o, "crossover_bytes",
                            cross_lo < 0 ? json_null() : json_pack("[f, f]", cross_lo, cross_hi));
        json_object_set_new(o, "crossover_model_bytes",
                            model_cross < 0 ? json_null() : json_num(model_cross));
        json_write(stdout, o, JSON_FIGURES); /* takes o */
    } else {
        json_decref(rows);
        char b1[32], b2[32];
        if (cross_lo < 0)
            printf("no crossover in this range: %s is faster throughout\n",
                   cost_algo_name(algos[prev > 0]));
        else
            printf("crossover between %s and %s: %s below, %s above\n",
                   units_format_bytes(b1, sizeof b1, cross_lo, UNITS_BINARY),
                   units_format_bytes(b2, sizeof b2, cross_hi, UNITS_BINARY),
                   cost_algo_name(algos[!prev]), cost_algo_name(algos[prev]));
        if (model_cross > 0)
            printf("the α-β model's crossover (the window's): %s\n",
                   units_format_bytes(b1, sizeof b1, model_cross, UNITS_BINARY));
    }
    return 0;
}

/* Says why the result is wrong (1), or 0. */
static int verdict(const struct trial *t)
{
    if (t->check.ok)
        return 0;
    fprintf(stderr,
            "scalelab: collective: the result is wrong: GPU %d element %zu is %.9g, the "
            "reference %.9g%s\n",
            t->check.bad_gpu, t->check.bad_index, t->check.bad_got, t->check.bad_want,
            t->check.identical ? "" : " (GPUs disagree)");
    return 1;
}

/* One rank of `mpirun -n N scalelab collective --transport mpi`: rank 0 reports. */
static int run_mpi(struct cfg *c)
{
    int rank = 0, size = 1, rc;
    struct error e = {0};
    if (mpi_begin(NULL, NULL, &rank, &size, &e) != 0)
        return usage_err(&e);
    if (size < 2) { /* a collective of one rank sends nothing: no time, no bandwidth to show */
        rc = cli_usage("collective",
                       "--transport mpi: this is one MPI rank; a collective needs 2 or more: run "
                       "it under mpirun with 2 or more ranks (mpirun -n 4 scalelab collective "
                       "--transport mpi)");
        goto end;
    }
    if (c->gpus && c->a.gpus != size) {
        rc = rank ? 2
                  : cli_usage("collective",
                              "--gpus %d: mpirun started %d rank%s, and each rank is one GPU "
                              "(leave --gpus out, or run mpirun -n %d)",
                              c->a.gpus, size, size == 1 ? "" : "s", c->a.gpus);
        goto end;
    }
    if (size > CLUSTER_MAX_GPUS) {
        rc = rank ? 2
                  : cli_usage("collective", "mpirun started %d ranks; the collectives take 1 to %d",
                              size, CLUSTER_MAX_GPUS);
        goto end;
    }
    c->a.gpus = size;
    /* every rank checks the same arguments; rank 0 alone says what is wrong */
    int saved = cli_mute(rank != 0);
    rc = checks(c);
    cli_unmute(saved);
    if (rc)
        goto end;
    struct mpi_run r;
    rc = mpi_trial_run(&c->a, c->deadline_s, &r, &e);
    if (rc) {
        error_prefix(&e, "collective");
        rc = rc == ERR_INVAL ? (rank ? 2 : usage_err(&e)) : (rank ? 1 : cli_fail(&e));
    } else if (rank == 0) {
        c->json ? print_json(c, &r.t, &r) : print_text(c, &r.t, &r);
        rc = verdict(&r.t);
    }
    mpi_trial_fini(&r);
end:
    fflush(stdout);
    mpi_end();
    return rc;
}

/* The progress line: on a terminal from a second into the run, one line rewritten in place
 * (cleared at the end); with --progress elsewhere, a line as each part of the run begins and
 * a line a second within it. */
struct progress {
    bool tty, lines;
    double started, last;
    const char *what; /* the part last shown */
    bool shown;
};

static void progress_show(void *ctx, const char *what, double done)
{
    struct progress *p = ctx;
    double now = clock_now();
    bool begins = !p->what || strcmp(what, p->what) != 0;
    if (p->tty ? now - p->started < 1.0 : !begins && now - p->last < 1.0)
        return;
    char pct[16] = "";
    if (done >= 0)
        snprintf(pct, sizeof pct, " %3.0f%%", 100 * done);
    if (p->tty)
        fprintf(stderr, "\rscalelab: collective: %s%s, %.0f s%-12s", what, pct, now - p->started,
                "");
    else
        fprintf(stderr, "scalelab: collective: %s%s, %.0f s\n", what, pct, now - p->started);
    fflush(stderr);
    p->last = now;
    p->what = what;
    p->shown = true;
}

static void progress_end(const struct progress *p)
{
    if (p->tty && p->shown)
        fprintf(stderr, "\r%*s\r", 70, "");
}

static int collective_main(int argc, char **argv)
{
    struct cfg c = {.started = clock_now()};
    int rc = parse(argc, argv, &c);
    if (rc)
        return rc;
    if (c.mpi)
        return run_mpi(&c);
    if ((rc = checks(&c)) != 0)
        return rc;
    if (c.sweep)
        return sweep(&c);
    c.a.record_events = c.steps || c.trace || c.events;
    struct progress pr = {.tty = isatty(2) != 0, .started = c.started};
    pr.lines = c.progress && !pr.tty;
    if (pr.tty || pr.lines)
        c.a.progress = progress_show, c.a.progress_ctx = &pr;
    struct trial t;
    struct error e = {0};
    rc = trial_run(&c.a, &t, &e);
    progress_end(&pr);
    if (c.trace && t.cluster) {
        size_t n;
        const struct event *ev = cluster_events(t.cluster, &n);
        struct error te = {0};
        if (trace_write_chrome(c.trace, ev, n, c.a.gpus, &te) != 0) {
            trial_fini(&t);
            return cli_fail(&te);
        }
    }
    if (c.events && t.cluster) {
        size_t n;
        const struct event *ev = cluster_events(t.cluster, &n);
        struct error fe = {0};
        if (trace_write_jsonl_file(c.events, ev, n, &fe) != 0) {
            trial_fini(&t);
            return cli_fail(&fe);
        }
    }
    if (rc) {
        trial_fini(&t);
        error_prefix(&e, "collective");
        return cli_fail(&e);
    }
    if (c.steps && !c.json)
        print_steps(t.cluster, reduce_elem_size(c.a.dtype),
                    t.algo == COST_RING && c.a.op != COST_BROADCAST && c.a.op != COST_REDUCE);
    c.json ? print_json(&c, &t, NULL) : print_text(&c, &t, NULL);
    int status = verdict(&t);
    trial_fini(&t);
    return status;
}

const struct command cmd_collective = {
    "collective",
    "run a real collective among N simulated GPUs (or MPI ranks): verify it, count its bytes, time "
    "it",
    "usage: scalelab collective [--op OP] [--algo ALGO] [--gpus N] [--size BYTES]\n"
    "                           [--dtype fp32|bf16|fp16] [--cluster PRESET|FILE] [--nodes K]\n"
    "                           [--root R] [--steps] [--json] [--trace FILE] [--fail GPU@STEP]\n"
    "                           [--events FILE] [--sweep] [--seed S] [--deadline SECONDS]\n"
    "       mpirun -n N scalelab collective --transport mpi [--repeat R] [same options]\n"
    "\n"
    "Runs one collective on real data among N device threads of the simulated cluster, checks\n"
    "the result against a double-precision reference, and reports the bytes each GPU sent, the\n"
    "steps, the α-β predicted time, the simulated time, the host's wall time (the whole run's,\n"
    "and the collective's: JSON run_wall_time_s and wall_time_s), and algbw and\n"
    "busbw as nccl-tests defines them (S/t; busbw = algbw x 2(N-1)/N for allreduce, (N-1)/N for\n"
    "reduce-scatter, allgather and alltoall, 1 for broadcast and reduce; t the simulated time).\n"
    "An alltoall's S is each GPU's send buffer, N blocks of S/N; each GPU keeps its own block\n"
    "and sends (N-1)/N x S.\n"
    "\n"
    "Tolerance: each of the N-1 additions of an element rounds once in fp32 and once to the\n"
    "data's format, so |result - exact| <= (N-1)(u_format + u_fp32) sum|x| (u = 2^-24, 2^-8\n"
    "for bf16, 2^-11 for fp16); copies must be exact (an alltoall's every received block is\n"
    "checked against its sender's).\n",
    collective_main,
};
