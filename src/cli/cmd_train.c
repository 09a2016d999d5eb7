/* scalelab train: real mixed-precision training of the tiny GPT on simulated GPUs, one or many
 * (data, tensor and pipeline parallelism): the run (par/run.h) started on train's options
 * (cli/train_args.c), its steps taken as they come and printed (cli/train_report.c), step 1
 * dumped (cli/train_dump.c), the run's events kept for --trace. Under mpirun with --transport
 * mpi each process is one rank and runs one GPU of the run, its sends over MPI (comm/mpiwire.h's
 * wire): the ranks first agree on their command line, rank 0 alone prints. */
#include "config.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/error.h"
#include "base/units.h"
#include "cli/command.h"
#include "cli/train.h"
#include "comm/mpi.h"
#include "comm/mpiwire.h"
#include "sim/cluster.h"
#include "sim/trace.h"

/* ------------------------------------------------------------------ --trace */

/* Events of --trace, in a buffer sized exactly before the run from its shape
 * (run_trace_events): nothing grows inside the step loop, and nothing is left out. The GPUs
 * record from their own threads, under a lock. lost counts what did not fit anyway: the run
 * then fails rather than write a partial trace. */
struct evlog {
    pthread_mutex_t mu;
    struct event *ev;
    size_t n, cap, lost;
};

/* A trace Perfetto's web UI opens comfortably (its JSON about 150 bytes an event: ~300 MB). */
#define TRACE_MAX_EVENTS 2000000

static void on_event(void *ctx, const struct event *ev)
{
    struct evlog *l = ctx;
    pthread_mutex_lock(&l->mu);
    if (l->n < l->cap)
        l->ev[l->n++] = *ev;
    else
        l->lost++;
    pthread_mutex_unlock(&l->mu);
}

/* Checks the trace's path and size before the run and sizes its buffer: 0 or an exit status. */
static int trace_setup(const struct train_args *r, const struct run_config *rc, struct evlog *log)
{
    struct error e = {0};
    const struct train_opts *o = &r->o;
    char a[32], b[32];
    double events = run_trace_events(rc), bytes = events * sizeof(struct event);
    double disk = events * 160; /* bytes of JSON per event, about */
    double host = (double)sysconf(_SC_PHYS_PAGES) * (double)sysconf(_SC_PAGESIZE);
    struct statvfs fs;
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", r->trace);
    char *slash = strrchr(dir, '/');
    if (slash)
        *(slash == dir ? slash + 1 : slash) = 0;
    if (trace_check_path(r->trace, &e) < 0) {
        error_prefix(&e, "train: --trace");
        return cli_fail(&e);
    }
    if (events > TRACE_MAX_EVENTS)
        return cli_usage("train",
                         "--trace: %ld steps of this run record %.0f events, more than the "
                         "limit of %d a trace may hold; trace fewer --steps",
                         o->steps, events, TRACE_MAX_EVENTS);
    if (host > 0 && bytes > host / 4)
        return cli_usage("train",
                         "--trace: %s of events for %ld steps do not fit in this host's "
                         "memory; trace fewer --steps",
                         units_format_bytes(a, sizeof a, bytes, UNITS_BINARY), o->steps);
    if (statvfs(slash ? dir : ".", &fs) == 0 && disk > (double)fs.f_bavail * (double)fs.f_frsize)
        return cli_usage("train",
                         "--trace: a trace of about %s for %ld steps does not fit on the "
                         "disk (%s free)",
                         units_format_bytes(a, sizeof a, disk, UNITS_BINARY), o->steps,
                         units_format_bytes(b, sizeof b, (double)fs.f_bavail * (double)fs.f_frsize,
                                            UNITS_BINARY));
    log->cap = (size_t)events;
    log->ev = malloc(log->cap * sizeof *log->ev);
    if (!log->ev) {
        error_set(&e, ERR_NOMEM, "out of memory for the trace's events");
        return cli_fail(&e);
    }
    pthread_mutex_init(&log->mu, NULL);
    return 0;
}

/* ------------------------------------------------------------------ the command */

/* Takes the progress line off the terminal: the cursor back to the start of a cleared line. */
static void progress_clear(int *shown)
{
    if (*shown > 0)
        fprintf(stderr, "\r%*s\r", *shown, "");
    fflush(stderr);
    *shown = 0;
}

/* The steps as they come: each into the summary and printed (text: the first, every 20th of
 * the run, the last and the eventful ones; JSON: every one), step 1 dumped with --dump, the
 * progress on a terminal. 0, or the error that stopped the run (in e). */
static int run_steps(const struct train_args *r, struct run *run, struct train_summary *sum,
                     struct error *e)
{
    const struct train_opts *o = &r->o;
    bool progress = !r->json && isatty(2);
    int rc = run_start(run, e);
    long every = o->steps / 20 > 0 ? o->steps / 20 : 1;
    /* the final loss: the mean of the last FINAL_STEPS steps that were applied (a skipped
     * step's loss, a NaN's or a spike's, changed nothing and is left out) */
    double last[FINAL_STEPS], t0 = clock_now(), tprog = t0;
    int lastn = 0;
    bool floor_said = false;
    int shown = 0; /* columns the progress line takes on the terminal now */
    struct run_step rs;
    struct error derr = {0};
    while (!rc && run_next(run, &rs, 3600) == 1) {
        long i = rs.s.step;
        if (!floor_said && !r->json) {
            printf("loss floor (entropy rate of the data): %.4f nats\n", run_loss_floor(run));
            floor_said = true;
        }
        if (i == 1 && r->dump && !derr.code && train_dump_write(r, run, &derr)) {
            run_stop(run);
            break;
        }
        train_summary_add(sum, r, &rs, i);
        if (!rs.s.skipped && isfinite(rs.s.loss))
            last[lastn++ % FINAL_STEPS] = rs.s.loss;
        const struct train_step *s = &rs.s;
        if (r->json && !r->summary_only) {
            train_print_step_json(&rs);
        } else if (!r->json && (i == 1 || i % every == 0 || i == o->steps || s->skipped ||
                                s->overflow || s->spike || s->nonfinite[0])) {
            /* the progress line is taken off the terminal before a step line is written
             * (stdout and stderr may be the same terminal: the step line would follow it) */
            progress_clear(&shown);
            train_print_step_text(&rs);
        }
        cli_output_ok(); /* the line whole, now (a failure's errno kept for the report) */
        if (progress && clock_now() - tprog > 0.2) {
            double el = clock_now() - t0, rate = (double)i / el;
            char left[32], loss[32];
            units_format_seconds(left, sizeof left, (double)(o->steps - i) / rate);
            shown = fprintf(stderr, "\rstep %ld/%ld  loss %s  %.1f steps/s  %s left", i, o->steps,
                            units_format_num(loss, sizeof loss, "%.4f", s->loss), rate, left) -
                    1;
            fflush(stderr);
            tprog = clock_now();
        }
    }
    progress_clear(&shown);
    if (!rc)
        rc = run_finish(run, e);
    if (!rc && derr.code) {
        *e = derr;
        rc = derr.code;
    }
    sum->floor = run_loss_floor(run);
    sum->seconds = run_wall_s(run) > 0 ? run_wall_s(run) : clock_now() - t0;
    sum->nlast = lastn < FINAL_STEPS ? lastn : FINAL_STEPS;
    double lastsum = 0;
    for (int k = 0; k < sum->nlast; k++)
        lastsum += last[k];
    sum->final_loss = sum->nlast ? lastsum / sum->nlast : NAN;
    sum->tokens_per_s = (double)sum->steps * o->batch * o->shape.seq / sum->seconds;
    sum->sim_seconds = sum->sim_step;
    if (sum->steps > 0) {
        sum->sim_step /= (double)sum->steps, sum->exposed /= (double)sum->steps;
        for (int w = 0; w < RUN_WAITS; w++)
            sum->exposed_by[w] /= (double)sum->steps;
        sum->compute_mean /= (double)sum->steps;
        sum->compute_busiest /= (double)sum->steps;
    }
    return rc;
}

/* --trace: the events written, a failed run's too (it shows where it stopped); 0, or the
 * error in e. */
static int trace_finish(const struct train_args *r, struct evlog *log, struct error *e)
{
    int trc = 0;
    if (log->lost)
        trc = error_set(e, ERR_RUN,
                        "%zu events did not fit in the buffer sized for the run; no trace "
                        "written",
                        log->lost);
    else {
        event_sort(log->ev, log->n);
        trc = trace_write_chrome(r->trace, log->ev, log->n, r->o.gpus, e);
    }
    free(log->ev);
    pthread_mutex_destroy(&log->mu);
    if (trc)
        error_prefix(e, "--trace");
    return trc;
}

/* ------------------------------------------------------------------ over MPI ranks */

/* This process as one rank of `mpirun -n N scalelab train --transport mpi`. */
struct ranks {
    int rank, size, hosts;
    struct mpi_wire *w;
    struct dev_wire dw;
};

/* Whether the command line asks for --transport mpi: read before the options are, as MPI must
 * start first for the ranks to agree on who speaks. */
static bool asks_mpi(int argc, char **argv)
{
    for (int i = 1; i < argc && strcmp(argv[i], "--"); i++)
        if (!strcmp(argv[i], "--transport=mpi") ||
            (!strcmp(argv[i], "--transport") && i + 1 < argc && !strcmp(argv[i + 1], "mpi")))
            return true;
    return false;
}

/* FNV-1a over the arguments, each with its terminating zero. */
static uint64_t args_hash(int argc, char **argv)
{
    uint64_t h = 14695981039346656037ull;
    for (int i = 0; i < argc; i++)
        for (const char *p = argv[i];; p++) {
            h = (h ^ (unsigned char)*p) * 1099511628211ull;
            if (!*p)
                break;
        }
    return h;
}

/* MPI started, the wire open and the ranks' command lines compared: 0, or the exit status,
 * the same on every rank (rank 0 alone says why). */
static int ranks_join(int argc, char **argv, struct ranks *k)
{
    struct error e = {0};
    if (mpi_begin(NULL, NULL, &k->rank, &k->size, &e))
        return k->rank ? 2 : cli_usage("train", "%s", e.msg);
    if (k->size < 2) /* one rank would be one GPU: train --gpus 1 says the same, faster */
        return cli_usage("train",
                         "--transport mpi: this is one MPI rank; run it under mpirun with 2 or "
                         "more ranks (mpirun -n 2 scalelab train --transport mpi), or leave "
                         "--transport out for one GPU");
    if (k->size > TRAIN_MAX_GPUS)
        return k->rank ? 2
                       : cli_usage("train", "--transport mpi: mpirun started %d ranks, at most %d",
                                   k->size, TRAIN_MAX_GPUS);
    if (mpi_wire_open(&k->w, &k->dw, "train", 0, &e))
        return k->rank ? 2 : cli_fail(&e);
    uint64_t mine = args_hash(argc, argv), *all = calloc((size_t)k->size, sizeof *all);
    if (!all) {
        error_set(&e, ERR_NOMEM, "out of memory");
        k->dw.fail(k->dw.ctx, &e);
    }
    mpi_wire_share(k->w, &mine, sizeof mine, all, &e);
    int differs = 0;
    for (int g = 1; g < k->size && !differs; g++)
        differs = all[g] != all[0] ? g : 0;
    free(all);
    if (differs)
        return k->rank ? 2
                       : cli_usage("train",
                                   "--transport mpi: rank %d was started with other arguments "
                                   "than rank 0; every rank runs the same command line",
                                   differs);
    k->hosts = mpi_wire_hosts(k->w);
    return 0;
}

/* ------------------------------------------------------------------ the command */

static int train_run(int argc, char **argv, const struct ranks *k);

static int train_main(int argc, char **argv)
{
    if (!asks_mpi(argc, argv))
        return train_run(argc, argv, NULL);
    struct ranks k = {0};
    int rc = ranks_join(argc, argv, &k);
    if (!rc) {
        if (k.rank && !freopen("/dev/null", "w", stdout)) /* rank 0 prints */
            rc = 1;
        else
            rc = train_run(argc, argv, &k);
    }
    fflush(stdout);
    mpi_wire_close(k.w);
    mpi_end();
    return rc;
}

/* The run, on threads (k NULL) or as rank k->rank of k->size. */
static int train_run(int argc, char **argv, const struct ranks *k)
{
    /* Each line written whole: stdout is buffered in a buffer of its own (no allocation)
     * larger than a step's line and flushed after each line, so a line leaves in one write and
     * a run killed by a signal never leaves half of one (stdio's 4 KiB blocks cut them). */
    static char out_buffer[1 << 16];
    setvbuf(stdout, out_buffer, _IOFBF, sizeof out_buffer);
    static struct train_args r; /* large; one per process */
    memset(&r, 0, sizeof r);
    struct run_config rcfg = {0};
    struct error e = {0};
    int rc;
    r.ranks = k ? k->size : 0;
    r.hosts = k ? k->hosts : 0;
    int muted = cli_mute(k && k->rank);
    rc = train_args_read(argc, argv, &r, &rcfg);
    cli_unmute(muted);
    if (rc)
        return rc;
    if (k) {
        rcfg.wire = &k->dw;
        rcfg.local = k->rank;
        mpi_wire_deadline(k->w, rcfg.deadline_s > 0 ? rcfg.deadline_s : 600);
    }
    struct evlog log = {0};
    if (r.trace) {
        if ((rc = trace_setup(&r, &rcfg, &log)))
            return rc;
        rcfg.on_event = on_event;
        rcfg.event_ctx = &log;
    }
    struct train_summary sum = {0};
    static struct prediction pred;
    memset(&pred, 0, sizeof pred);
    struct error pe = {0}; /* a layout the calculator cannot take: the report goes without */
    predict_run(&r.o, &r.shape, &rcfg.spec, &pred, &pe);
    train_summary_start(&r, &pred, &sum);
    struct run *run = NULL;
    if ((rc = run_new(&run, &rcfg, &e))) {
        free(log.ev);
        predict_free(&pred);
        return k && k->rank ? error_exit_status(rc) : cli_fail(&e);
    }
    if (!r.json)
        train_print_header(&r, &rcfg.spec);
    rc = run_steps(&r, run, &sum, &e);
    struct error te = {0};
    if (r.trace && trace_finish(&r, &log, &te) && !rc)
        e = te, rc = te.code;
    if (rc) {
        run_free(run);
        predict_free(&pred);
        return k && k->rank ? error_exit_status(rc) : cli_fail(&e);
    }
    train_print_summary(&r, run, &sum, &pred, &rcfg.spec);
    run_free(run);
    predict_free(&pred);
    return 0;
}

const struct command cmd_train = {
    "train",
    "real mixed-precision training of the tiny GPT (loss scaling, clipping, checkpointing)",
    "usage: scalelab train [OPTIONS]\n"
    "       mpirun -n N scalelab train --transport mpi [OPTIONS]\n"
    "\n"
    "Trains the tiny GPT (src/model) on a synthetic order-2 Markov source whose entropy rate is\n"
    "the loss floor, with real fp16/bf16 rounding, loss scaling (PyTorch GradScaler semantics),\n"
    "clipping (clip_grad_norm_), NaN diagnosis and gradient checkpointing, on one simulated GPU\n"
    "or on N of them with data parallelism (DDP or ZeRO stages 1 to 3), tensor parallelism\n"
    "(with sequence parallelism) and pipeline stages, combined in 3D.\n"
    "\n"
    "ZeRO 2 and 3 keep a shard of the gradients only, so with micro-batches they would reduce\n"
    "each micro-batch's: the thread-GPUs run ZeRO 0 and 1 with micro-batches and stages.\n"
    "On N GPUs the flat buffers are padded to a multiple of N elements, so every shard is\n"
    "ceil(params/N).\n"
    "summary gives each GPU's ledger peaks (weights, gradients, master weights, optimizer,\n"
    "activations, communication; the CPU's fp32 workspace apart) and bytes sent per step beside\n"
    "the calculator's prediction for the same layout (memory --json's names), and\n"
    "measured_minus_predicted: the bytes by which they differ, 0 when every byte agrees.\n"
    "Each GPU's \"coord\" (dp, tp, pp) places it; \"comm_bytes_per_step\" splits what it sent\n"
    "(data_parallel, tensor_parallel, pipeline) as memory --json does, \"predicted\".per_stage\n"
    "gives the calculator's figures for each stage, and \"pipeline\" the operations each stage\n"
    "ran (kind, micro, chunk, start_s, end_s, in simulated time), the bubble measured on them\n"
    "and the micro-batches each stage held at once, beside the schedule's.\n"
    "\n"
    "Memory: every buffer comes from the simulated GPU's ledger before the first step (the\n"
    "activation arena as reserved memory, the CPU emulation's fp32 workspace as workspace), so\n"
    "a run that does not fit fails at once, out of memory (exit 1); live activations move in\n"
    "and out of the arena, and their peak is the calculator's figure.\n"
    "\n"
    "The final loss is the mean of the losses of the last 10 steps applied (a skipped step's,\n"
    "a NaN's or a spike's, is left out). Each step's loss is measured on\n"
    "a fresh batch before the update, so it is a held-out estimate. At the defaults, tiny ends\n"
    "within 0.1 nats of the floor (0.05-0.08 for seeds 1-5 on the development host).\n",
    train_main,
};
