/* scalelab train's options: its own (the model, the output, the cluster, --dp, --fail, ...)
 * and a run's settings, read by their table (par/settings.h) into the run's options; then the
 * checks between them, the layout's, and the host's memory (cli/train.h). */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "base/error.h"
#include "base/units.h"
#include "calc/preset.h"
#include "cli/calcargs.h"
#include "cli/command.h"
#include "cli/opts.h"
#include "cli/train.h"
#include "par/settings.h"
#include "par/strategies.h"

/* The command's struct a parser's field belongs to. */
static struct train_args *args_of(const struct opt_entry *o, void *field)
{
    return (struct train_args *)(void *)((char *)field - o->field);
}

/* A run's setting, read by the table of par/settings.h into the run's options. */
static int parse_setting(const struct opt_entry *o, const char *arg, void *field, struct error *e)
{
    struct train_args *r = args_of(o, field);
    const struct setting *s = settings_find(o->opt.name);
    char said[64];
    snprintf(said, sizeof said, "--%s", o->opt.name);
    r->given |= 1ull << (s - train_settings);
    return s->parse(s, said, arg, &r->o, e);
}

static bool given(const struct train_args *r, const char *name)
{
    return r->given >> (settings_find(name) - train_settings) & 1;
}

static int parse_model(const struct opt_entry *o, const char *arg, void *field, struct error *e)
{
    int rc = preset_load_model(arg, field, e);
    if (rc)
        error_prefix(e, "--%s", o->opt.name);
    return rc;
}

static int parse_fail(const struct opt_entry *o, const char *arg, void *field, struct error *e)
{
    struct train_opts *t = field;
    long long step;
    (void)o;
    int rc = opts_gpu_at(arg, TRAIN_MAX_GPUS - 1, 1, TRAIN_MAX_STEPS, &t->fail_gpu, &step, e);
    if (!rc)
        t->fail_step = (long)step;
    return rc;
}

#define A struct train_args
/* train's own options: the model first, the run's settings (par/settings.h), then these */
static const struct opt_entry model_option =
    OPT_WITH("model", "NAME|FILE", parse_model, A, shape,
             "a swiglu preset or INI file (default " TRAIN_LAB_MODEL ")");
static const struct opt_entry own_options[] = {
    OPT_FLAG("json", A, json, "one JSON object per step, then {\"summary\": {...}}"),
    OPT_FLAG("summary", A, summary_only,
             "with --json, only the summary object (one JSON document)"),
    OPT_WITH("cluster", "NAME|FILE", opts_str, A, cluster,
             "the simulated GPU's preset (default " PRESET_CLUSTER "): its memory and\n"
             "peak FLOP/s set the ledger's capacity and the simulated time"),
    OPT_WITH("trace", "FILE", opts_str, A, trace,
             "Chrome trace-event JSON of the run (Perfetto): compute per\n"
             "layer, memory (total and live activations), steps, non-finite\n"
             "values, in simulated time. Complete: its events are counted from\n"
             "the run's shape before it starts; a run of more than 2,000,000\n"
             "events is refused (exit 2): tiny traces 34,000 to 47,000 steps"),
    OPT_WITH("dump", "DIR", opts_str, A, dump,
             "write model.ini, params.f32, tokens.i32, targets.i32, loss.txt and\n"
             "grads.f32 of step 1 (little-endian; gradients of the mean loss,\n"
             "unscaled and before clipping, gathered from every GPU) to check\n"
             "against PyTorch; with experts, train.ini holds --aux-loss-coef"),
    OPT_WITH("fail", "GPU@STEP", parse_fail, A, o,
             "that GPU fails in that step's gradient sync: the run ends (exit 1)"),
    OPT_WITH("nodes", "K", opts_str, A, nodes,
             "the GPUs split evenly over K nodes (inter-node links between them)"),
    OPT_WITH("transport", "T", opts_transport, A, mpi,
             "thread (default: every GPU a thread of this process) or mpi: under\n"
             "mpirun -n N (N >= 2), each rank is one GPU of the same run, its sends\n"
             "over MPI: the same losses, ledgers and bytes as --gpus N, bit for bit;\n"
             "rank 0 prints. --fail or a rank silent past the deadline ends every rank\n"
             "(MPI_Abort, exit 1). No --trace or --dump (each rank holds its own)"),
    OPT_WITH("time-as", "MODEL", opts_str, A, time_as,
             "time the run as MODEL (a preset or file, as memory --model):\n"
             "each operation and message is charged what it costs in MODEL in\n"
             "the same layout on the cluster (its layers, sequence, bytes; compute\n"
             "at plan's efficiency), beside the calculator's step for it; --bucket\n"
             "is then MODEL's. Without it the run is timed as itself"),
    OPT_WITH("deadline", "S", opts_seconds, A, deadline_s,
             "the longest wait for one message, in seconds (default 600)"),
    OPT_INT("dp", "D", A, dp, 1, TRAIN_MAX_GPUS,
            "data-parallel copies (the run has D x T x P GPUs; or give\n"
            "--gpus N, N = D x T x P); GPU r is stage r / (D T)"),
    OPT_END,
};

static struct opt_entry options[OPTS_MAX + 1];

/* The table: --model, a line per run setting read by parse_setting, train's own options; made
 * before main runs, as a table written out would be. */
__attribute__((constructor)) static void build_options(void)
{
    size_t n = 0;
    options[n++] = model_option;
    for (const struct setting *s = train_settings; s->name && n < OPTS_MAX; s++)
        options[n++] = (struct opt_entry){.opt = {.name = s->name, .has_arg = s->arg != NULL},
                                          .arg = s->arg,
                                          .parse = parse_setting,
                                          .field = offsetof(A, o),
                                          .help = s->help,
                                          .flags = s->repeat ? OPT_REPEAT : 0};
    for (const struct opt_entry *o = own_options; o->opt.name && n < OPTS_MAX; o++)
        options[n++] = *o;
}
#undef A

const struct opts_spec opts_train = {"train", options, NULL, NULL};

/* The mixture-of-experts settings given (read into the run's shape, over the lab's) onto the
 * model --model names: the calculator's shape and the model's, so the prediction is of the
 * model that runs; what goes with experts needs them. 0, or the exit status. */
static int configure_moe(struct train_args *r)
{
    struct model_shape *m = &r->shape;
    const struct gpt_moe *set = &r->o.shape.moe;
    if (given(r, "experts")) {
        if (!m->experts) /* a dense preset turned into a mixture: Mixtral's k by default */
            m->top_k = 2, m->moe_every = 1;
        m->experts = set->experts;
    }
    const char *lone = given(r, "top-k")             ? "--top-k"
                       : given(r, "moe-every")       ? "--moe-every"
                       : given(r, "capacity-factor") ? "--capacity-factor"
                       : given(r, "aux-loss-coef")   ? "--aux-loss-coef"
                                                     : NULL;
    if (!m->experts) {
        if (lone)
            return cli_usage("train", "%s goes with --experts (the model %s has none)", lone,
                             m->name);
        return 0;
    }
    if (given(r, "top-k"))
        m->top_k = set->top_k;
    if (given(r, "moe-every"))
        m->moe_every = set->every;
    if (given(r, "capacity-factor"))
        m->capacity_factor = set->capacity_factor;
    if (m->top_k > m->experts)
        return cli_usage("train", "--top-k %d: more than the %d experts", m->top_k, m->experts);
    if (m->moe_every > m->layers)
        return cli_usage("train", "--moe-every %d: %s has %d layers", m->moe_every, m->name,
                         m->layers);
    return 0;
}

/* The options into r, and the checks between them: 0, or the exit status. */
static int configure(int argc, char **argv, struct train_args *r)
{
    struct error e = {0};
    int rc;
    r->cluster = PRESET_CLUSTER;
    if ((rc = train_opts_lab(&r->o, &e)) ||
        (rc = preset_load_model(TRAIN_LAB_MODEL, &r->shape, &e)))
        return cli_fail(&e);
    if ((rc = opts_parse(&opts_train, argc, argv, r)) || (rc = configure_moe(r)))
        return rc;
    struct train_opts *o = &r->o;
    double aux = o->shape.moe.aux_coef; /* the shape below is the model's, with its default */
    if (given(r, "seq")) /* onto the model, so the calculator predicts the run's sequence */
        r->shape.seq = o->shape.seq;
    if (train_shape_of(&r->shape, &o->shape, &e))
        return cli_usage("train", "--model %s", e.msg);
    if (given(r, "aux-loss-coef"))
        o->shape.moe.aux_coef = aux;
    if (!given(r, "loss-scale"))
        o->scaling = train_scaling_for(o->precision);
    if (r->summary_only && !r->json)
        return cli_usage("train", "--summary goes with --json");
    if (given(r, "init-scale") && o->scaling != TRAIN_SCALE_DYNAMIC)
        return cli_usage("train", "--init-scale needs --loss-scale dynamic");
    if (r->mpi && (r->trace || r->dump))
        return cli_usage("train", "--transport mpi: no %s (each rank holds only its own GPU's %s)",
                         r->trace ? "--trace" : "--dump", r->trace ? "events" : "gradients");
    return 0;
}

/* The GPUs: --gpus (all of them), or --dp x --tp x --cp x --pp; and what the layout allows. */
static int configure_layout(struct train_args *r)
{
    struct train_opts *o = &r->o;
    struct error e = {0};
    int mp = o->tp * o->cp * o->pp;
    bool gpus = given(r, "gpus");
    char axes[64]; /* the axes besides dp, as the options name them */
    if (o->cp > 1)
        snprintf(axes, sizeof axes, "--tp %d x --cp %d x --pp %d", o->tp, o->cp, o->pp);
    else
        snprintf(axes, sizeof axes, "--tp %d x --pp %d", o->tp, o->pp);
    if (r->dp) {
        if (gpus && o->gpus != r->dp * mp)
            return cli_usage("train", "--gpus %d is not --dp %d x %s", o->gpus, r->dp, axes);
        if (r->dp * mp > TRAIN_MAX_GPUS)
            return cli_usage("train", "--dp %d x %s is %d GPUs, more than %d", r->dp, axes,
                             r->dp * mp, TRAIN_MAX_GPUS);
        o->gpus = r->dp * mp;
    } else if (!gpus) { /* --ep alone: as many data ranks as it needs */
        mp *= o->ep;
        if (mp > TRAIN_MAX_GPUS)
            return cli_usage("train", "%s x --ep %d is %d GPUs, more than %d", axes, o->ep, mp,
                             TRAIN_MAX_GPUS);
        o->gpus = mp;
    }
    if (o->sp && o->tp == 1)
        return cli_usage("train", "--sequence-parallel goes with --tp 2 or more");
    if (given(r, "chunks") && o->schedule != SCHED_INTERLEAVED)
        return cli_usage("train", "--chunks goes with --schedule interleaved");
    if (o->pp == 1 && o->micro_batches > 1 && o->schedule != SCHED_1F1B)
        return cli_usage("train",
                         "--schedule %s needs --pp > 1: one stage runs its micro-batches one "
                         "after the other (forward, backward), adding up their gradients",
                         sched_name(o->schedule));
    if (o->shape.moe.experts && (o->tp > 1 || o->cp > 1 || o->pp > 1 || o->micro_batches > 1))
        return cli_usage("train",
                         "%s has experts: it trains with data and expert parallelism (--dp, "
                         "--ep) and one micro-batch for now, not --tp %d, --cp %d, --pp %d, "
                         "--micro-batches %d",
                         r->shape.name, o->tp, o->cp, o->pp, o->micro_batches);
    if (train_opts_check(o, &e))
        return opts_fail(&opts_train, &e);
    return 0;
}

/* The simulated cluster (--cluster, --nodes) and what the run needs from this host, checked
 * before anything is allocated: each GPU's model buffers (exactly, for its share of the batch)
 * and, at most, the fp32 copies of its weights, gradients, master weights and Adam's moments.
 * Whether it fits a simulated GPU is the ledger's call, when the buffers are allocated: out of
 * memory, exit 1. 0, or the exit status. */
static int configure_host(const struct train_args *r, struct run_config *rcfg)
{
    const struct train_opts *o = &r->o;
    struct error e = {0};
    rcfg->o = *o;
    if (calcargs_cluster(r->cluster, NULL, &rcfg->spec, &e) != 0) {
        error_prefix(&e, "--cluster");
        return cli_fail(&e);
    }
    if (r->nodes) { /* the GPUs split evenly over that many nodes */
        long long nodes;
        if (units_parse_int(r->nodes, 1, TRAIN_MAX_GPUS, &nodes, &e)) {
            error_prefix(&e, "--nodes");
            return cli_fail(&e);
        }
        if (o->gpus % nodes != 0)
            return cli_usage("train", "--nodes %lld: %d GPUs do not split evenly over %lld nodes",
                             nodes, o->gpus, nodes);
        rcfg->spec.gpus_per_node = o->gpus / (int)nodes;
        rcfg->spec.nodes = (int)nodes;
    }
    rcfg->keep_first_step = r->dump != NULL;
    rcfg->deadline_s = r->deadline_s;
    if (run_host_check(rcfg, &e))
        return cli_usage("train", "--batch %d on %d GPUs: %s", o->batch, o->gpus, e.msg);
    if (r->dump && train_dump_check(r->dump, &e))
        return cli_fail(&e);
    return 0;
}

/* --time-as MODEL: the cluster's clock charges what MODEL costs (par/timeas.h), the gradient
 * buckets are cut as MODEL's (--bucket is MODEL's), and the calculator's step for MODEL in
 * the layout is kept for the summary. 0, or the exit status. */
static int configure_time(struct train_args *r, struct run_config *rcfg)
{
    struct error e = {0};
    if (!r->time_as)
        return 0;
    if (preset_load_model(r->time_as, &r->as, &e)) {
        error_prefix(&e, "train: --time-as");
        return cli_fail(&e);
    }
    if (timeas_scale(&r->o, &r->shape, &r->as, &rcfg->spec, &e) ||
        timeas_predict(&r->o, &r->as, &rcfg->spec, &r->as_plan, &e))
        return cli_usage("train", "--time-as %s", e.msg);
    size_t es = r->o.grad_fp32 || r->o.precision == FP_FP32 ? 4 : 2;
    r->o.bucket_bytes = timeas_bucket(&rcfg->spec, r->o.bucket_bytes, es);
    rcfg->o.bucket_bytes = r->o.bucket_bytes;
    return 0;
}

/* Over MPI the GPUs are the ranks: as if --gpus N were given, when neither --gpus nor --dp
 * is (before the layout is read). */
static void configure_ranks(struct train_args *r)
{
    if (!r->mpi || given(r, "gpus") || r->dp)
        return;
    r->o.gpus = r->ranks;
    r->given |= 1ull << (settings_find("gpus") - train_settings);
}

/* And what the layout asks for must be the ranks (after it is read): 0, or the exit status. */
static int check_ranks(const struct train_args *r)
{
    if (!r->mpi || r->o.gpus == r->ranks)
        return 0;
    return cli_usage("train",
                     "--transport mpi: mpirun started %d ranks, and each rank is one GPU: %s "
                     "asks for %d (leave it out, or run mpirun -n %d)",
                     r->ranks, r->dp ? "--dp with the other axes" : "--gpus", r->o.gpus, r->o.gpus);
}

int train_args_read(int argc, char **argv, struct train_args *r, struct run_config *rcfg)
{
    int rc;
    if ((rc = configure(argc, argv, r)))
        return rc;
    configure_ranks(r);
    if ((rc = configure_layout(r)) || (rc = check_ranks(r)) || (rc = configure_host(r, rcfg)) ||
        (rc = configure_time(r, rcfg)))
        return rc;
    return 0;
}
