/* scalelab train: real mixed-precision training of the tiny GPT on simulated GPUs, one or a
 * data-parallel group (DDP, ZeRO-1/2/3): the options, the run (par/run.h), the report beside
 * the calculator's prediction. */
#include "config.h"

#include <errno.h>
#include <jansson.h>
#include <pthread.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/error.h"
#include "base/json.h"
#include "base/units.h"
#include "calc/activ.h"
#include "calc/preset.h"
#include "cli/command.h"
#include "cli/opts.h"
#include "calc/memory.h"
#include "calc/params.h"
#include "calc/sched.h"
#include "calc/traffic.h"
#include "cli/calcargs.h"
#include "par/predict.h"
#include "par/run.h"
#include "sim/cluster.h"
#include "sim/ledger.h"
#include "sim/trace.h"

#define MAX_STEPS 10000000L

struct args {
    struct train_opts o;
    struct model_shape shape;
    bool json, summary_only, scale_given, init_scale_given;
    int gpus;   /* --gpus, 0 if not given */
    int dp;     /* --dp, 0 if not given */
    int chunks; /* --chunks, 0 if not given */
    const char *dump, *trace, *cluster, *nodes;
    /* a mixture of experts: --experts, --top-k, --moe-every (0 if not given), and
     * --capacity-factor, --aux-loss-coef (negative if not given) */
    int experts, top_k, moe_every;
    double capacity, aux;
};

/* ------------------------------------------------------------------ parsing */

/* The command's struct a parser's field belongs to (for the options that set two fields). */
static struct args *args_of(const struct opt_entry *o, void *field)
{
    return (struct args *)(void *)((char *)field - o->field);
}

static int parse_double(const char *opt, const char *s, double *out, struct error *e)
{
    if (units_parse_double(s, false, out, e)) {
        error_prefix(e, "--%s", opt);
        return ERR_INVAL;
    }
    return 0;
}

static int parse_long(const char *opt, const char *s, long long min, long long max, long long *out,
                      struct error *e)
{
    if (units_parse_int(s, min, max, out, e)) {
        error_prefix(e, "--%s", opt);
        return ERR_INVAL;
    }
    return 0;
}

/* --steps: a long in [o->min, o->max]. */
static int parse_steps(const struct opt_entry *o, const char *arg, void *field, struct error *e)
{
    long long n;
    int rc = parse_long(o->opt.name, arg, o->min, o->max, &n, e);
    if (!rc)
        *(long *)field = (long)n;
    return rc;
}

/* --seed: 0 to 2^53. */
static int parse_seed(const struct opt_entry *o, const char *arg, void *field, struct error *e)
{
    long long n;
    int rc = parse_long(o->opt.name, arg, 0, 1LL << 53, &n, e);
    if (!rc)
        *(uint64_t *)field = (uint64_t)n;
    return rc;
}

/* --lr and --wd: a number >= 0. */
static int parse_nonneg(const struct opt_entry *o, const char *arg, void *field, struct error *e)
{
    double *v = field;
    int rc = parse_double(o->opt.name, arg, v, e);
    if (!rc && *v < 0)
        rc = error_set(e, ERR_INVAL, "--%s must be >= 0, not %s", o->opt.name, arg);
    return rc;
}

/* --eps, --clip and --spike-z: a number > 0. */
static int parse_positive(const struct opt_entry *o, const char *arg, void *field, struct error *e)
{
    double *v = field;
    int rc = parse_double(o->opt.name, arg, v, e);
    if (!rc && !(*v > 0))
        rc = error_set(e, ERR_INVAL, "--%s must be > 0, not %s", o->opt.name, arg);
    return rc;
}

static int parse_betas(const struct opt_entry *o, const char *arg, void *field, struct error *e)
{
    struct train_opts *t = field;
    char b1[64];
    const char *comma = strchr(arg, ',');
    int rc;
    if (!comma || (size_t)(comma - arg) >= sizeof b1)
        return error_set(e, ERR_INVAL, "--betas '%s': expected BETA1,BETA2", arg);
    memcpy(b1, arg, (size_t)(comma - arg));
    b1[comma - arg] = 0;
    if ((rc = parse_double(o->opt.name, b1, &t->beta1, e)) ||
        (rc = parse_double(o->opt.name, comma + 1, &t->beta2, e)))
        return rc;
    if (!(t->beta1 >= 0 && t->beta1 < 1 && t->beta2 >= 0 && t->beta2 < 1))
        return error_set(e, ERR_INVAL, "--betas '%s': both must be in [0, 1)", arg);
    return 0;
}

static int parse_precision(const struct opt_entry *o, const char *arg, void *field, struct error *e)
{
    (void)o;
    enum fp_format *p = field;
    if (!strcmp(arg, "fp32"))
        *p = FP_FP32;
    else if (!strcmp(arg, "bf16"))
        *p = FP_BF16;
    else if (!strcmp(arg, "fp16"))
        *p = FP_FP16;
    else
        return error_set(e, ERR_INVAL, "--precision '%s': expected fp32, bf16 or fp16", arg);
    return 0;
}

static int parse_loss_scale(const struct opt_entry *o, const char *arg, void *field,
                            struct error *e)
{
    struct args *r = args_of(o, field);
    double v;
    r->scale_given = true;
    if (!strcmp(arg, "dynamic"))
        r->o.scaling = TRAIN_SCALE_DYNAMIC;
    else if (!strcmp(arg, "none"))
        r->o.scaling = TRAIN_SCALE_NONE;
    else if (units_parse_double(arg, false, &v, e) || !(v > 0) || v > 3.4e38)
        return error_set(e, ERR_INVAL,
                         "--loss-scale '%s': expected dynamic, none or a number > 0 (a fixed "
                         "scale)",
                         arg);
    else
        r->o.scaling = TRAIN_SCALE_STATIC, r->o.scale = v;
    return 0;
}

static int parse_init_scale(const struct opt_entry *o, const char *arg, void *field,
                            struct error *e)
{
    struct args *r = args_of(o, field);
    double v = 0;
    int rc = parse_double(o->opt.name, arg, &v, e);
    if (!rc && !(v > 0 && v <= 3.4e38))
        rc = error_set(e, ERR_INVAL, "--init-scale must be > 0 and finite in fp32");
    r->init_scale_given = true;
    r->o.scale = v;
    return rc;
}

/* nan@STEP, inf@STEP, spike@STEP[:FACTOR], each with an optional :gpu=G */
static int parse_inject(const struct opt_entry *entry, const char *s, void *dest, struct error *e)
{
    struct train_opts *o = dest;
    (void)entry;
    if (o->ninject == TRAIN_MAX_INJECT)
        return error_set(e, ERR_INVAL, "--inject: at most %d injections", TRAIN_MAX_INJECT);
    struct train_inject x = {TRAIN_INJECT_NAN, 0, 10.0, 0};
    const char *at = strchr(s, '@');
    size_t klen = at ? (size_t)(at - s) : 0;
    if (at && klen == 3 && !strncmp(s, "nan", 3))
        x.kind = TRAIN_INJECT_NAN;
    else if (at && klen == 3 && !strncmp(s, "inf", 3))
        x.kind = TRAIN_INJECT_INF;
    else if (at && klen == 5 && !strncmp(s, "spike", 5))
        x.kind = TRAIN_INJECT_SPIKE;
    else
        return error_set(e, ERR_INVAL,
                         "--inject '%s': expected nan@STEP, inf@STEP or spike@STEP[:FACTOR], "
                         "each with an optional :gpu=G",
                         s);
    /* the fields after '@', separated by ':' */
    char buf[128];
    if (strlen(at + 1) >= sizeof buf)
        return error_set(e, ERR_INVAL, "--inject '%s': too long", s);
    snprintf(buf, sizeof buf, "%s", at + 1);
    char *save = NULL, *field = strtok_r(buf, ":", &save);
    long long v;
    if (!field || units_parse_int(field, 1, MAX_STEPS, &v, e)) {
        if (!field)
            error_set(e, ERR_INVAL, "STEP must be a whole number");
        error_prefix(e, "--inject '%s': step", s);
        return ERR_INVAL;
    }
    x.step = (long)v;
    bool factor = false, gpu = false;
    while ((field = strtok_r(NULL, ":", &save))) {
        if (!strncmp(field, "gpu=", 4) && !gpu) {
            if (units_parse_int(field + 4, 0, 63, &v, e)) {
                error_prefix(e, "--inject '%s': gpu", s);
                return ERR_INVAL;
            }
            x.gpu = (int)v, gpu = true;
        } else if (x.kind == TRAIN_INJECT_SPIKE && !factor && !gpu) {
            if (units_parse_double(field, false, &x.factor, e) || !(x.factor > 0) ||
                !isfinite(x.factor))
                return error_set(e, ERR_INVAL, "--inject '%s': FACTOR must be a finite number > 0",
                                 s);
            factor = true;
        } else
            return error_set(e, ERR_INVAL,
                             "--inject '%s': after STEP come :FACTOR (spike only) and :gpu=G", s);
    }
    o->inject[o->ninject++] = x;
    return 0;
}

static int parse_model(const struct opt_entry *o, const char *arg, void *field, struct error *e)
{
    int rc = preset_load_model(arg, field, e);
    if (rc)
        error_prefix(e, "--%s", o->opt.name);
    return rc;
}

static int parse_checkpoint(const struct opt_entry *o, const char *arg, void *field,
                            struct error *e)
{
    int rc = gpt_ckpt_parse(arg, field, e);
    if (rc)
        error_prefix(e, "--%s", o->opt.name);
    return rc;
}

static int parse_schedule(const struct opt_entry *o, const char *arg, void *field, struct error *e)
{
    int rc = sched_parse(arg, field, e);
    if (rc)
        error_prefix(e, "--%s", o->opt.name);
    return rc;
}

static int parse_bucket(const struct opt_entry *o, const char *arg, void *field, struct error *e)
{
    double v;
    (void)o;
    if (units_parse_bytes(arg, 1u << 30, &v, e) || v < 4) {
        if (!e->code)
            error_set(e, ERR_INVAL, "at least 4 bytes");
        error_prefix(e, "--bucket '%s' (a size from 4 bytes to 1 GiB, e.g. 25MiB)", arg);
        return ERR_INVAL;
    }
    *(size_t *)field = (size_t)v;
    return 0;
}

static int parse_grad_accum(const struct opt_entry *o, const char *arg, void *field,
                            struct error *e)
{
    (void)o;
    if (strcmp(arg, "fp32") && strcmp(arg, "same"))
        return error_set(e, ERR_INVAL,
                         "--grad-accum '%s': expected fp32 (4-byte gradients) or same (the "
                         "training precision's)",
                         arg);
    *(bool *)field = !strcmp(arg, "fp32");
    return 0;
}

/* --capacity-factor (0 to 64, 0: none) and --aux-loss-coef (0 to 100). */
static int parse_moe_num(const struct opt_entry *o, const char *arg, void *field, struct error *e)
{
    double *v = field, hi = strcmp(o->opt.name, "capacity-factor") ? 100 : 64;
    if (parse_double(o->opt.name, arg, v, e) || !(*v >= 0 && *v <= hi))
        return error_set(e, ERR_INVAL, "--%s '%s': a number from 0 to %g", o->opt.name, arg, hi);
    return 0;
}

static int parse_fail(const struct opt_entry *o, const char *arg, void *field, struct error *e)
{
    struct train_opts *t = field;
    long long step;
    (void)o;
    int rc = opts_gpu_at(arg, 63, 1, MAX_STEPS, &t->fail_gpu, &step, e);
    if (!rc)
        t->fail_step = (long)step;
    return rc;
}

#define A struct args
#define LONG_OPT(NAME, ARG, FIELD, MIN, MAX, HELP)                                                 \
    {                                                                                              \
        .opt = {.name = NAME, .has_arg = true}, .arg = ARG, .parse = parse_steps,                  \
        .field = offsetof(A, FIELD), .help = HELP, .min = MIN, .max = MAX                          \
    }
static const struct opt_entry options[] = {
    OPT_WITH("model", "NAME|FILE", parse_model, A, shape,
             "a swiglu preset or INI file (default tiny)"),
    LONG_OPT("steps", "K", o.steps, 1, MAX_STEPS, "steps to run (default 300)"),
    OPT_INT("batch", "B", A, o.batch, 1, 1 << 20, "sequences per step (default 16)"),
    OPT_WITH("seed", "S", parse_seed, A, o.seed,
             "seeds the weights and the data (default 1); same seed, same run"),
    OPT_WITH("lr", "LR", parse_nonneg, A, o.lr, "AdamW learning rate (default 0.003)"),
    OPT_WITH("betas", "B1,B2", parse_betas, A, o, "AdamW's betas (default 0.9,0.999)"),
    OPT_WITH("wd", "WD", parse_nonneg, A, o.wd, "weight decay (default 0.01)"),
    OPT_WITH("eps", "E", parse_positive, A, o.eps, "AdamW's epsilon (default 1e-8)"),
    OPT_WITH("precision", "P", parse_precision, A, o.precision,
             "fp32, bf16 or fp16 (default fp32)"),
    OPT_WITH("loss-scale", "S", parse_loss_scale, A, o.scaling,
             "dynamic (PyTorch's GradScaler: halves and skips the step on an\n"
             "inf/NaN gradient, doubles after --growth-interval clean steps),\n"
             "a fixed VALUE (Megatron's constant scaler: never changes, still\n"
             "skips inf/NaN steps) or none (no scaler, as plain PyTorch: an\n"
             "inf/NaN step is applied, the weights turn NaN, and the run stops\n"
             "with exit 1 at the first NaN loss, naming the step and tensor\n"
             "that caused it). Default: dynamic for fp16, none otherwise"),
    OPT_WITH("init-scale", "S", parse_init_scale, A, o.scale,
             "the dynamic scale's start (default 65536)"),
    OPT_INT("growth-interval", "N", A, o.growth_interval, 1, 1 << 30,
            "clean steps before the scale doubles (default 2000)"),
    OPT_INT("hysteresis", "N", A, o.hysteresis, 1, 1 << 30,
            "overflowing steps before it halves (default 1, PyTorch's)"),
    OPT_WITH("clip", "MAX", parse_positive, A, o.clip, "clip the global gradient norm to MAX"),
    OPT_WITH("spike-z", "Z", parse_positive, A, o.spike_z,
             "a loss more than Z standard deviations above the mean of the\n"
             "last N losses (itself included, as llm.c does) is a spike\n"
             "(default 5; z <= sqrt(N - 1))"),
    OPT_INT("spike-window", "N", A, o.spike_window, 2, 1 << 20,
            "N, the losses of the spike test (default 64)"),
    OPT_FLAG("skip-spikes", A, o.skip_spikes, "skip the update of a spiking step"),
    {.opt = {.name = "inject", .has_arg = true},
     .arg = "WHAT@STEP",
     .parse = parse_inject,
     .field = offsetof(A, o),
     .flags = OPT_REPEAT,
     .help = "nan@STEP (a NaN in the middle layer's attention scores), inf@STEP\n"
             "(an inf in the last layer's MLP gradient), spike@STEP[:FACTOR]\n"
             "(a bad batch: the logits times FACTOR, default 10); repeatable;\n"
             "WHAT@STEP:gpu=G on GPU G (default 0): the GPUs agree on inf/NaN,\n"
             "so all of them skip the step and back the scale off together"},
    OPT_WITH("checkpoint", "POLICY", parse_checkpoint, A, o.ckpt,
             "none, full, every:K, sqrt or selective (default none)"),
    OPT_FLAG("json", A, json, "one JSON object per step, then {\"summary\": {...}}"),
    OPT_FLAG("summary", A, summary_only,
             "with --json, only the summary object (one JSON document)"),
    OPT_WITH("cluster", "NAME|FILE", opts_str, A, cluster,
             "the simulated GPU's preset (default h100-80gb): its memory and\n"
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
    OPT_INT("gpus", "N", A, gpus, 1, 64,
            "N simulated GPUs, 1 to 64 (default 1); each takes batch / N\n"
            "sequences of the global batch a one-GPU run draws, so the run\n"
            "computes the same training (the loss is the global batch's mean)"),
    OPT_INT("zero", "S", A, o.zero, 0, 3,
            "0 DDP (default): full replicas, gradients all-reduced by buckets as\n"
            "they complete; 1: optimizer state and master weights sharded,\n"
            "gradients reduce-scattered, updated weights all-gathered; 2: the\n"
            "gradients sharded too; 3 (FSDP): the weights too, each layer\n"
            "gathered before its forward and again before its backward"),
    OPT_WITH("bucket", "SIZE", parse_bucket, A, o.bucket_bytes,
             "a gradient bucket (default 25MiB, PyTorch DDP's)"),
    OPT_INT("prefetch", "0|1", A, o.prefetch, 0, 1,
            "ZeRO-3 gathers the next layer while one computes (default 1)"),
    OPT_WITH("grad-accum", "fp32|same", parse_grad_accum, A, o.grad_fp32,
             "bf16/fp16: fp32 keeps 4-byte gradients (18 bytes per parameter)"),
    OPT_WITH("fail", "GPU@STEP", parse_fail, A, o,
             "that GPU fails in that step's gradient sync: the run ends (exit 1)"),
    OPT_WITH("nodes", "K", opts_str, A, nodes,
             "the GPUs split evenly over K nodes (inter-node links between them)"),
    OPT_INT("tp", "T", A, o.tp, 1, 64,
            "each layer over T GPUs (default 1): heads / T of the attention,\n"
            "ffn / T of the MLP, vocab / T rows of the tied embedding; the\n"
            "row-parallel outputs and the column-parallel inputs' gradients are\n"
            "all-reduced, and the cross-entropy reduces the row maximum, the\n"
            "sum of exponentials and the target's logit, so no GPU holds the\n"
            "whole logits. T must divide the heads, the FFN width and the\n"
            "vocabulary. GPU r is tensor rank r % T, then data rank, then stage"),
    OPT_FLAG("sequence-parallel", A, o.sp,
             "with --tp: the norms and residual adds on a T-th of the tokens;\n"
             "all-reduces become reduce-scatters and all-gathers"),
    OPT_INT("pp", "P", A, o.pp, 1, 64,
            "P stages (default 1), dividing the layers: the first also holds the\n"
            "embedding, the last the final norm and a copy of the tied\n"
            "embedding, whose gradients the two ends sum once per step"),
    OPT_INT("dp", "D", A, dp, 1, 64,
            "data-parallel copies (the run has D x T x P GPUs; or give\n"
            "--gpus N, N = D x T x P); GPU r is stage r / (D T)"),
    OPT_INT("micro-batches", "M", A, o.micro_batches, 1, SCHED_MAX_MICRO,
            "the batch share of each data-parallel rank runs as M micro-batches\n"
            "(default 1), gradients added up over them; with --pp 1 this is\n"
            "gradient accumulation"),
    OPT_WITH("schedule", "S", parse_schedule, A, o.schedule,
             "gpipe, 1f1b (default) or interleaved (Megatron-LM's: M a multiple\n"
             "of P, --dp 1): each stage runs its forward and backward passes in\n"
             "the order 'scalelab pipeline --schedule S' draws; activations go\n"
             "forward and their gradients back by sends"),
    OPT_INT("chunks", "V", A, chunks, 2, SCHED_MAX_CHUNKS,
            "interleaved: V model chunks per stage (default 2), P x V dividing\n"
            "the layers; stage s holds virtual stages s, P + s, 2P + s, ..."),
    OPT_INT("experts", "E", A, experts, 2, GPT_MAX_EXPERTS,
            "a mixture of experts: each expert layer's feed-forward becomes E\n"
            "SwiGLU experts of the model's ffn width and a router (2 to 64;\n"
            "one GPU, one micro-batch); a model preset may hold them (tiny-moe)"),
    OPT_INT("top-k", "K", A, top_k, 1, 2,
            "the experts each token goes to (default 2, or the preset's): 1 as\n"
            "Switch Transformer (its gate is the router's probability), 2 as\n"
            "Mixtral (the two probabilities renormalised)"),
    OPT_WITH("capacity-factor", "C", parse_moe_num, A, capacity,
             "an expert takes at most ceil(C K tokens / E) of a step's tokens; a\n"
             "choice past it is dropped (the token keeps its residual); 0: no\n"
             "limit (default, or the preset's)"),
    OPT_WITH("aux-loss-coef", "A", parse_moe_num, A, aux,
             "the load-balancing loss A E sum_i f_i P_i (Switch Transformer's)\n"
             "added to the loss (default 0.01)"),
    OPT_INT("moe-every", "K", A, moe_every, 1, 1024,
            "layer l has experts when l % K is 0 (default 1: every layer)"),
    OPT_END,
};
#undef LONG_OPT
#undef A

const struct opts_spec opts_train = {"train", options, NULL, NULL};

/* ------------------------------------------------------------------ --dump */

/* Before the run: DIR is a writable folder, or can be made in a writable one. */
static int dump_check(const char *dir, struct error *e)
{
    struct stat st;
    if (!*dir)
        return error_set(e, ERR_INVAL, "train: --dump: give a folder, not an empty name");
    if (stat(dir, &st) == 0) {
        if (!S_ISDIR(st.st_mode))
            return error_set(e, ERR_INVAL, "train: --dump %s: not a folder", dir);
        if (access(dir, W_OK) != 0)
            return error_set(e, ERR_INVAL, "train: --dump %s: cannot write in it: %s", dir,
                             strerror(errno));
        return 0;
    }
    char parent[4096];
    if (snprintf(parent, sizeof parent, "%s", dir) >= (int)sizeof parent)
        return error_set(e, ERR_INVAL, "train: --dump: the path is too long");
    size_t len = strlen(parent);
    while (len > 1 && parent[len - 1] == '/')
        parent[--len] = '\0';
    char *slash = strrchr(parent, '/');
    const char *where = slash ? (slash == parent ? "/" : (*slash = '\0', parent)) : ".";
    if (access(where, W_OK) != 0)
        return error_set(e, ERR_INVAL, "train: --dump %s: cannot create it in %s: %s", dir, where,
                         strerror(errno));
    return 0;
}

/* Writes n bytes to dir/name through a temporary name and a rename. */
static int write_file(const char *dir, const char *name, const void *data, size_t n,
                      struct error *e)
{
    char path[4096], tmp[4200];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
    FILE *f = fopen(tmp, "wb");
    if (!f)
        return error_set(e, ERR_IO, "--dump: cannot write %s: %s", tmp, strerror(errno));
    bool ok = fwrite(data, 1, n, f) == n;
    ok &= fclose(f) == 0;
    if (!ok || rename(tmp, path) != 0) {
        int err = errno;
        remove(tmp);
        return error_set(e, ERR_IO, "--dump: cannot write %s: %s", path, strerror(err));
    }
    return 0;
}

/* Little-endian copies (the files' format, whatever the host). */
static void *le32(const void *src, size_t n)
{
    unsigned char *out = malloc(n > 0 ? n * 4 : 1);
    if (!out)
        return NULL;
    const uint32_t *in = src;
    for (size_t i = 0; i < n; i++) {
        uint32_t u = in[i];
        out[4 * i] = (unsigned char)u, out[4 * i + 1] = (unsigned char)(u >> 8);
        out[4 * i + 2] = (unsigned char)(u >> 16), out[4 * i + 3] = (unsigned char)(u >> 24);
    }
    return out;
}

static int write_le32(const char *dir, const char *name, const void *data, size_t n,
                      struct error *e)
{
    void *buf = le32(data, n);
    if (!buf)
        return error_set(e, ERR_NOMEM, "out of memory");
    int rc = write_file(dir, name, buf, n * 4, e);
    free(buf);
    return rc;
}

/* Step 1 of the run: its weights (the initial ones), the global batch, loss and gradients. */
static int dump_write(const struct args *r, const struct run *run, struct error *e)
{
    const struct train_opts *o = &r->o;
    const struct gpt_config *c = &o->shape;
    const int32_t *tokens, *targets;
    const float *grads;
    double loss;
    if (!run_first_step(run, &tokens, &targets, &loss, &grads))
        return 0;
    size_t bt = (size_t)o->batch * c->seq, n = gpt_param_count(c);
    char ini[1024], lossbuf[64];
    int len =
        snprintf(ini, sizeof ini,
                 "# written by scalelab train --dump: the shape of params.f32\n"
                 "[model]\nname = %s\nlayers = %d\nd_model = %d\nheads = %d\n"
                 "kv_heads = %d\nffn = %d\nffn_kind = swiglu\nvocab = %d\ntied = true\n"
                 "seq = %d\n",
                 r->shape.name, c->layers, c->d, c->heads, c->heads, c->ffn, c->vocab, c->seq);
    char aux[128];
    int al = 0;
    if (c->moe.experts) { /* the experts in the shape; the loss's coefficient beside it */
        len += snprintf(ini + len, sizeof ini - (size_t)len,
                        "experts = %d\ntop_k = %d\nmoe_every = %d\ncapacity_factor = %.17g\n",
                        c->moe.experts, c->moe.top_k, c->moe.every, c->moe.capacity_factor);
        al = snprintf(aux, sizeof aux,
                      "# written by scalelab train --dump: what the loss adds to the shape's\n"
                      "[train]\naux_coef = %.17g\n",
                      c->moe.aux_coef);
    }
    int ll = snprintf(lossbuf, sizeof lossbuf, "%.17g\n", loss);
    if (mkdir(r->dump, 0777) != 0 && errno != EEXIST)
        return error_set(e, ERR_IO, "--dump: cannot create %s: %s", r->dump, strerror(errno));
    /* params.f32: the weights step 1 used, the initial ones, drawn again from the seed */
    float *params = malloc(n * sizeof *params);
    if (!params)
        return error_set(e, ERR_NOMEM, "out of memory");
    gpt_init_params(c, o->seed, params);
    int rc = write_file(r->dump, "model.ini", ini, (size_t)len, e);
    if (!rc && al)
        rc = write_file(r->dump, "train.ini", aux, (size_t)al, e);
    if (!rc)
        rc = write_le32(r->dump, "params.f32", params, n, e);
    if (!rc)
        rc = write_le32(r->dump, "tokens.i32", tokens, bt, e);
    if (!rc)
        rc = write_le32(r->dump, "targets.i32", targets, bt, e);
    if (!rc)
        rc = write_file(r->dump, "loss.txt", lossbuf, (size_t)ll, e);
    if (!rc)
        rc = write_le32(r->dump, "grads.f32", grads, n, e);
    free(params);
    return rc;
}

/* ------------------------------------------------------------------ output */

/* A step's figure as "key":value, written directly (the step loop allocates nothing, not even
 * a JSON tree), with base/json's policy: 10 significant digits, non-finite as strings. */
static void put_num(const char *key, double v, bool comma)
{
    printf("\"%s\":", key);
    json_put_num(stdout, v, JSON_FIGURES);
    if (comma)
        putchar(',');
}

static void step_json(const struct run_step *rs)
{
    const struct train_step *s = &rs->s;
    printf("{\"step\":%ld,", s->step);
    put_num("loss", s->loss, true);
    put_num("grad_norm", s->grad_norm, true);
    put_num("clip_coef", s->clip_coef, true);
    put_num("loss_scale", s->loss_scale, true);
    printf("\"skipped\":%s,\"overflow\":%s,", s->skipped ? "true" : "false",
           s->overflow ? "true" : "false");
    /* tensor names are letters, digits, spaces and underscores: nothing to escape */
    if (s->nonfinite[0])
        printf("\"nonfinite\":\"%s\",", s->nonfinite);
    else
        printf("\"nonfinite\":null,");
    put_num("underflow_frac", s->underflow_frac, true);
    if (rs->gpus > 1)
        printf("\"nonfinite_gpu\":%d,", rs->nonfinite_gpu);
    printf("\"act_peak_bytes\":%zu,", s->act_peak_bytes);
    if (s->routed) { /* a mixture of experts: the routing's figures */
        put_num("aux_loss", s->aux_loss, true);
        printf("\"routed\":%llu,\"dropped\":%llu,", (unsigned long long)s->routed,
               (unsigned long long)s->dropped);
        put_num("expert_imbalance", s->expert_imbalance, true);
    }
    put_num("sim_time_s", rs->sim_time_s, true);
    printf("\"comm_bytes_per_gpu\":%llu}\n", (unsigned long long)rs->comm_bytes_per_gpu);
}

static void step_text(const struct run_step *rs)
{
    const struct train_step *s = &rs->s;
    char loss[32], norm[32], coef[32], scale[32];
    printf("step %6ld  loss %s  grad norm %s  clip %s  scale %s  underflow %.4f%%", s->step,
           units_format_num(loss, sizeof loss, "%8.4f", s->loss),
           units_format_num(norm, sizeof norm, "%9.4g", (double)s->grad_norm),
           units_format_num(coef, sizeof coef, "%6.4f", (double)s->clip_coef),
           units_format_num(scale, sizeof scale, "%8g", (double)s->loss_scale),
           100 * s->underflow_frac);
    if (s->nonfinite[0] && rs->gpus > 1)
        printf("  non-finite on GPU %d: %s", rs->nonfinite_gpu, s->nonfinite);
    else if (s->nonfinite[0])
        printf("  non-finite: %s", s->nonfinite);
    if (s->routed)
        printf("  aux %.4f  dropped %.1f%%  max load %.2fx", s->aux_loss,
               100.0 * (double)s->dropped / (double)s->routed, s->expert_imbalance);
    if (s->overflow)
        printf("  OVERFLOW");
    if (s->spike)
        printf("  SPIKE (z %.1f)", s->zscore);
    if (s->skipped)
        printf("  skipped");
    printf("\n");
}

#define FINAL_STEPS 10 /* the final loss is the mean of the last FINAL_STEPS applied */

struct summary {
    double final_loss, floor, seconds, sim_seconds, tokens_per_s, flops, recompute, overhead;
    double predicted, first_loss, max_norm, min_coef, max_underflow, sim_step, exposed;
    char first_nonfinite[48];
    long steps, skipped, overflows, spikes;
    int nlast;              /* the steps the final loss is the mean of */
    uint64_t underflow[65]; /* per layer over the run (the last: embedding and norms) */
    int layers;
    float last_scale;
    uint64_t scalars;
    /* a mixture of experts: the choices routed and dropped over the run; the last step's
     * load-balancing loss and imbalance */
    uint64_t routed, dropped;
    double last_aux, last_imbalance;
};

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
static int trace_setup(const struct args *r, const struct run_config *rc, struct evlog *log)
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

/* ------------------------------------------------------------------ the prediction */

/* What the calculator says of the same layout, stage by stage: per GPU states, activations
 * and buffers, and the bytes each GPU sends per step; and the schedule it teaches. */
struct prediction {
    struct memory_result m; /* GPU 0's stage */
    struct traffic t;
    struct memory_result stage_m[64];
    struct traffic stage_t[64];
    struct sched sched; /* pipelined */
    bool ok, have_sched;
};

static void predict(const struct args *r, const struct cluster_spec *spec, struct prediction *p)
{
    const struct train_opts *o = &r->o;
    struct memory_config c;
    struct error e = {0};
    p->ok = predict_config(o, &r->shape, spec->hbm_bytes, &c, &e) == 0;
    for (int st = 0; p->ok && st < o->pp; st++) {
        struct memory_result *m = &p->stage_m[st];
        p->ok = memory_compute_stage(&c, st, m, &e) == 0 &&
                traffic_compute(&c, spec, st, m->params_gpu, m->stage_layers, 0, 0, &p->stage_t[st],
                                &e) == 0;
    }
    if (p->ok)
        p->m = p->stage_m[0], p->t = p->stage_t[0];
    if (train_pipelined(o))
        p->have_sched =
            sched_build(o->schedule, o->pp, o->micro_batches, train_chunks(o), &p->sched, &e) == 0;
}

/* Micro-batches held at once, as `pipeline` counts them: (micro-batch, chunk) pairs over v. */
static json_t *held_json(int pairs, int v)
{
    return v == 1 ? json_integer(pairs) : json_num((double)pairs / v);
}

/* The first GPU of stage st (data-parallel and tensor-parallel rank 0). */
static const struct run_gpu *stage_gpu(const struct run *run, int st)
{
    return run_gpu(run, train_rank(&run_gpu(run, 0)->place, st, 0, 0));
}

/* The pipeline as it ran: each stage's operations (from its first GPU) in
 * simulated time, the bubble measured on them (idle time of the stages between the first
 * forward and the last backward, over their compute and over the wall), and the most
 * micro-batches each stage held; beside the calculator's. */
static json_t *pipeline_json(const struct train_opts *o, const struct run *run,
                             const struct prediction *p)
{
    int P = o->pp;
    json_t *ops = json_array(), *peak = json_array();
    const struct pp_done *done[SCHED_MAX_STAGES];
    int n[SCHED_MAX_STAGES];
    for (int st = 0; st < P; st++) {
        const struct run_gpu *g = stage_gpu(run, st);
        json_t *list = json_array();
        for (int i = 0; i < g->nops; i++) {
            const struct pp_done *d = &g->ops[i];
            char kind[2] = {d->kind, 0};
            json_array_append_new(list, json_pack("{s:s, s:i, s:i, s:f, s:f}", "kind", kind,
                                                  "micro", d->micro, "chunk", d->chunk, "start_s",
                                                  d->start_s, "end_s", d->end_s));
        }
        done[st] = g->ops, n[st] = g->nops;
        json_array_append_new(ops, list);
        json_array_append_new(peak, held_json(g->peak_in_flight, train_chunks(o)));
    }
    struct pp_bubble b;
    predict_bubble(done, n, P, &b);
    json_t *pj =
        json_pack("{s:o, s:o, s:o, s:o}", "ops", ops, "bubble_over_ideal",
                  b.busy_s > 0 ? json_num(b.over_ideal) : json_null(), "bubble_over_wall",
                  b.span_s > 0 ? json_num(b.over_wall) : json_null(), "peak_in_flight", peak);
    if (p->have_sched) {
        json_t *pk = json_array();
        for (int st = 0; st < P; st++)
            json_array_append_new(pk, held_json(p->sched.peak_chunks[st], train_chunks(o)));
        json_object_set_new(pj, "predicted",
                            json_pack("{s:f, s:f, s:o}", "bubble_over_ideal",
                                      p->sched.bubble_over_ideal, "bubble_over_wall",
                                      p->sched.bubble_over_wall, "peak_in_flight", pk));
    }
    return pj;
}

/* ------------------------------------------------------------------ output */

/* A GPU's ledger peaks under memory --json's names, and the calculator's for the same. */
static json_t *peaks_json(const uint64_t *cat, uint64_t total)
{
    uint64_t states = cat[MEM_WEIGHTS] + cat[MEM_GRADIENTS] + cat[MEM_MASTER] + cat[MEM_OPTIMIZER];
    return json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I}", "states",
                     (json_int_t)states, "weights", (json_int_t)cat[MEM_WEIGHTS], "gradients",
                     (json_int_t)cat[MEM_GRADIENTS], "master_weights", (json_int_t)cat[MEM_MASTER],
                     "optimizer", (json_int_t)cat[MEM_OPTIMIZER], "activations",
                     (json_int_t)cat[MEM_ACTIVATIONS], "communication", (json_int_t)cat[MEM_COMM],
                     "workspace", (json_int_t)cat[MEM_WORKSPACE], "reserved",
                     (json_int_t)cat[MEM_RESERVED], "total", (json_int_t)total);
}

/* The summary's "layout": the GPUs and how they are used. */
static json_t *layout_json(const struct train_opts *o)
{
    json_t *lay =
        json_pack("{s:i, s:i, s:i, s:i, s:i, s:I, s:i, s:b}", "gpus", o->gpus, "dp", train_dp(o),
                  "tp", o->tp, "pp", o->pp, "zero", o->zero, "bucket_bytes",
                  (json_int_t)o->bucket_bytes, "prefetch", o->prefetch, "grad_fp32", o->grad_fp32);
    json_object_set_new(lay, "micro_batches", json_integer(o->micro_batches));
    json_object_set_new(lay, "schedule", json_string(sched_name(o->schedule)));
    json_object_set_new(lay, "chunks", json_integer(train_chunks(o)));
    json_object_set_new(lay, "sequence_parallel", json_boolean(o->sp));
    return lay;
}

/* "per_gpu": each GPU's place, ledger peaks and bytes sent per step by kind. */
static json_t *per_gpu_json(const struct train_opts *o, const struct run *run)
{
    json_t *per = json_array();
    for (int i = 0; i < o->gpus; i++) {
        const struct run_gpu *g = run_gpu(run, i);
        json_t *gj = json_pack("{s:i, s:{s:i, s:i, s:i}, s:o, s:I}", "gpu", i, "coord", "dp",
                               g->place.dprank, "tp", g->place.tprank, "pp", g->place.stage, "peak",
                               peaks_json(g->peak_cat, g->peak), "sent_bytes_per_step",
                               (json_int_t)g->sent_per_step);
        json_object_set_new(gj, "comm_bytes_per_step",
                            json_pack("{s:I, s:I, s:I}", "data_parallel",
                                      (json_int_t)g->sent_per_step, "tensor_parallel",
                                      (json_int_t)g->tp_sent_per_step, "pipeline",
                                      (json_int_t)g->pp_sent_per_step));
        json_array_append_new(per, gj);
    }
    return per;
}

/* "predicted": the calculator's figures for each stage's GPUs (the first stage's also as
 * "per_gpu"); and into m, "measured_minus_predicted": every GPU against its stage's
 * prediction, bytes of difference summed (0 when all agree). */
static void predicted_json(json_t *m, const struct train_opts *o, const struct run *run,
                           const struct prediction *p)
{
    json_t *stages = json_array();
    for (int st = 0; st < o->pp; st++) {
        const struct memory_result *pm = &p->stage_m[st];
        const struct traffic *pt = &p->stage_t[st];
        json_t *pg = json_pack(
            "{s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o}", "weights", json_whole(pm->states.weights),
            "gradients", json_whole(pm->states.gradients), "master_weights",
            json_whole(pm->states.master), "optimizer", json_whole(pm->states.optimizer),
            "activations", json_whole(pm->activations), "communication", json_whole(pm->comm),
            "total", json_whole(pm->total), "in_flight", held_json(pm->in_flight, train_chunks(o)));
        json_object_set_new(pg, "comm_bytes_per_step",
                            json_pack("{s:o, s:o, s:o}", "data_parallel", json_whole(pt->dp.bytes),
                                      "tensor_parallel", json_whole(pt->tp.bytes), "pipeline",
                                      json_whole(pt->pp.bytes)));
        json_object_set_new(pg, "pipeline_formula", json_string(pt->pp.formula));
        json_array_append_new(stages, pg);
    }
    json_t *pred = json_pack("{s:O, s:o, s:s, s:o}", "per_gpu", json_array_get(stages, 0),
                             "comm_bytes_per_gpu", json_whole(p->t.dp.bytes), "comm_formula",
                             p->t.dp.formula, "per_stage", stages);
    json_object_set_new(m, "predicted", pred);
    const enum ledger_cat cats[] = {MEM_WEIGHTS,   MEM_GRADIENTS,   MEM_MASTER,
                                    MEM_OPTIMIZER, MEM_ACTIVATIONS, MEM_COMM};
    double dmem = 0, dcomm = 0;
    for (int i = 0; i < o->gpus; i++) {
        const struct run_gpu *g = run_gpu(run, i);
        const struct memory_result *pm = &p->stage_m[g->place.stage];
        const struct traffic *pt = &p->stage_t[g->place.stage];
        const double want[] = {pm->states.weights,   pm->states.gradients, pm->states.master,
                               pm->states.optimizer, pm->activations,      pm->comm};
        for (int k = 0; k < 6; k++)
            dmem += fabs((double)g->peak_cat[cats[k]] - want[k]);
        dcomm += fabs((double)g->sent_per_step - pt->dp.bytes) +
                 fabs((double)g->tp_sent_per_step - pt->tp.bytes) +
                 fabs((double)g->pp_sent_per_step - pt->pp.bytes);
    }
    json_object_set_new(
        m, "measured_minus_predicted",
        json_pack("{s:o, s:o}", "memory_bytes", json_whole(dmem), "comm_bytes", json_whole(dcomm)));
}

static void print_summary_json(const struct args *r, const struct run *run,
                               const struct summary *sum, const struct prediction *p)
{
    const struct train_opts *o = &r->o;
    const struct gpt_config *c = &o->shape;
    double gflops = sum->flops * (double)sum->steps / sum->seconds / 1e9;
    const struct run_gpu *g0 = run_gpu(run, 0);
    json_t *m = json_object();
    json_object_set_new(m, "first_loss", json_num(sum->first_loss));
    json_object_set_new(m, "final_loss", json_num(sum->final_loss));
    json_object_set_new(m, "loss_floor", json_num(sum->floor));
    json_object_set_new(m, "skipped_steps", json_integer(sum->skipped));
    json_object_set_new(m, "tokens_per_s", json_num(sum->tokens_per_s));
    json_object_set_new(m, "steps", json_integer(sum->steps));
    json_object_set_new(m, "model", json_string(r->shape.name));
    json_object_set_new(m, "parameters", json_integer((json_int_t)gpt_param_count(c)));
    if (c->moe.experts) {
        json_object_set_new(m, "active_parameters",
                            json_integer((json_int_t)gpt_active_param_count(c)));
        json_t *x =
            json_pack("{s:i, s:i, s:i, s:o, s:o}", "experts", c->moe.experts, "top_k", c->moe.top_k,
                      "moe_every", c->moe.every, "capacity_factor",
                      json_num(c->moe.capacity_factor), "aux_loss_coef", json_num(c->moe.aux_coef));
        json_object_set_new(x, "routed", json_integer((json_int_t)sum->routed));
        json_object_set_new(x, "dropped", json_integer((json_int_t)sum->dropped));
        json_object_set_new(x, "last_aux_loss", json_num(sum->last_aux));
        json_object_set_new(x, "last_expert_imbalance", json_num(sum->last_imbalance));
        json_object_set_new(m, "moe", x);
    }
    json_object_set_new(m, "precision", json_string(fp_info(o->precision)->key));
    json_object_set_new(m, "checkpoint", json_string(o->ckpt.name[0] ? o->ckpt.name : "none"));
    json_object_set_new(m, "overflow_steps", json_integer(sum->overflows));
    json_object_set_new(m, "spikes", json_integer(sum->spikes));
    json_object_set_new(m, "final_loss_scale", json_num(sum->last_scale));
    json_object_set_new(m, "max_grad_norm", json_num(sum->max_norm));
    json_object_set_new(m, "min_clip_coef", json_num(sum->min_coef));
    json_object_set_new(m, "max_underflow_frac", json_num(sum->max_underflow));
    json_t *ul = json_array();
    int nl = sum->layers < 64 ? sum->layers : 64;
    for (int l = 0; l <= nl; l++)
        json_array_append_new(ul, json_integer((json_int_t)sum->underflow[l]));
    json_object_set_new(m, "underflow_by_layer", ul);
    json_object_set_new(m, "first_nonfinite",
                        sum->first_nonfinite[0] ? json_string(sum->first_nonfinite) : json_null());
    json_object_set_new(m, "act_peak_bytes",
                        json_integer((json_int_t)g0->peak_cat[MEM_ACTIVATIONS]));
    json_object_set_new(m, "act_predicted_bytes", json_num(sum->predicted));
    json_t *mem = json_object();
    for (int i = 0; i < MEM_CAT_COUNT; i++)
        json_object_set_new(mem, ledger_cat_name((enum ledger_cat)i),
                            json_integer((json_int_t)g0->peak_cat[i]));
    json_object_set_new(mem, "total", json_integer((json_int_t)g0->peak));
    json_object_set_new(m, "memory_peak_bytes", mem);
    json_object_set_new(m, "flops_per_step", json_num(sum->flops));
    json_object_set_new(m, "recompute_flops", json_num(sum->recompute));
    json_object_set_new(m, "recompute_overhead_pct", json_num(sum->overhead));
    json_object_set_new(m, "gflops", json_num(gflops));
    json_object_set_new(m, "seconds", json_num(sum->seconds));
    json_object_set_new(m, "simulated_seconds", json_num(sum->sim_seconds));
    json_object_set_new(m, "sim_step_time_s", json_num(sum->sim_step));
    json_object_set_new(m, "comm_exposed_s", json_num(sum->exposed));
    json_object_set_new(m, "layout", layout_json(o));
    json_object_set_new(m, "per_gpu", per_gpu_json(o, run));
    json_object_set_new(m, "scalar_bytes_per_step", json_integer((json_int_t)sum->scalars));
    if (p->ok)
        predicted_json(m, o, run, p);
    if (train_pipelined(o))
        json_object_set_new(m, "pipeline", pipeline_json(o, run, p));
    json_t *top = json_object();
    json_object_set_new(top, "summary", m);
    json_write_line(stdout, top, JSON_FIGURES);
}

/* Every GPU's ledger peaks and bytes sent per step beside the calculator's figures for its
 * stage; the communication formulas; a pipeline's micro-batches held, measured and scheduled. */
static void print_gpu_table(const struct train_opts *o, const struct run *run,
                            const struct prediction *p)
{
    bool piped = o->pp > 1, tp = o->tp > 1;
    printf(
        "\nper GPU, peak bytes (measured by each GPU's ledger; the CPU's fp32 workspace apart)\n");
    printf("%-10s %12s %12s %12s %12s %12s %12s %12s %14s", "GPU", "weights", "gradients", "master",
           "optimizer", "activations", "comm", "workspace", "sent/step");
    printf(tp ? " %14s" : "", "tensor/step");
    printf(piped ? " %14s\n" : "\n", "pipeline/step");
    for (int i = 0; i < o->gpus; i++) {
        const struct run_gpu *g = run_gpu(run, i);
        char name[24];
        if (piped)
            snprintf(name, sizeof name, "%d (s%d)", i, g->place.stage);
        else
            snprintf(name, sizeof name, "%d", i);
        printf("%-10s %12llu %12llu %12llu %12llu %12llu %12llu %12llu %14llu", name,
               (unsigned long long)g->peak_cat[MEM_WEIGHTS],
               (unsigned long long)g->peak_cat[MEM_GRADIENTS],
               (unsigned long long)g->peak_cat[MEM_MASTER],
               (unsigned long long)g->peak_cat[MEM_OPTIMIZER],
               (unsigned long long)g->peak_cat[MEM_ACTIVATIONS],
               (unsigned long long)g->peak_cat[MEM_COMM],
               (unsigned long long)g->peak_cat[MEM_WORKSPACE],
               (unsigned long long)g->sent_per_step);
        if (tp)
            printf(" %14llu", (unsigned long long)g->tp_sent_per_step);
        if (piped)
            printf(" %14llu", (unsigned long long)g->pp_sent_per_step);
        printf("\n");
    }
    for (int st = 0; p->ok && st < o->pp; st++) {
        const struct memory_result *m = &p->stage_m[st];
        char name[24];
        snprintf(name, sizeof name, piped ? "stage %d" : "predicted", st);
        printf("%-10s %12.0f %12.0f %12.0f %12.0f %12.0f %12.0f %12s %14.0f", name,
               m->states.weights, m->states.gradients, m->states.master, m->states.optimizer,
               m->activations, m->comm, "-", p->stage_t[st].dp.bytes);
        if (tp)
            printf(" %14.0f", p->stage_t[st].tp.bytes);
        if (piped)
            printf(" %14.0f", p->stage_t[st].pp.bytes);
        printf("\n");
    }
    if (p->ok) {
        printf("communication: %s\n", p->t.dp.formula);
        for (int st = 0; piped && st < o->pp; st++)
            printf("pipeline, stage %d: %s\n", st, p->stage_t[st].pp.formula);
    }
    if (train_pipelined(o) && p->have_sched) {
        printf("schedule %s, %d micro-batches of %d sequences; micro-batches held at once, per "
               "stage:",
               sched_name(o->schedule), o->micro_batches,
               o->batch / (train_dp(o) * o->micro_batches));
        for (int st = 0; st < o->pp; st++)
            printf(" %g", (double)stage_gpu(run, st)->peak_in_flight / train_chunks(o));
        printf(" (the schedule's:");
        for (int st = 0; st < o->pp; st++)
            printf(" %g", (double)p->sched.peak_chunks[st] / train_chunks(o));
        printf(")\n");
    }
}

static void print_summary_text(const struct args *r, const struct run *run,
                               const struct summary *sum, const struct prediction *p,
                               const struct cluster_spec *spec)
{
    const struct train_opts *o = &r->o;
    char a[32], b[32];
    double gflops = sum->flops * (double)sum->steps / sum->seconds / 1e9;
    const struct run_gpu *g0 = run_gpu(run, 0);
    printf("\nfinal loss %s (mean of the last %d steps applied), floor %.4f: %s nats above\n",
           units_format_num(a, sizeof a, "%.4f", sum->final_loss), sum->nlast, sum->floor,
           units_format_num(b, sizeof b, "%.4f", sum->final_loss - sum->floor));
    printf("skipped steps %ld (overflow %ld, spikes %ld), final loss scale %g\n", sum->skipped,
           sum->overflows, sum->spikes, (double)sum->last_scale);
    printf("activation memory: peak %s measured by the ledger, %s predicted by the "
           "calculator\n",
           units_format_bytes(a, sizeof a, (double)g0->peak_cat[MEM_ACTIVATIONS], UNITS_BINARY),
           units_format_bytes(b, sizeof b, sum->predicted, UNITS_BINARY));
    printf("GPU memory peak %s (", units_format_bytes(a, sizeof a, (double)g0->peak, UNITS_BINARY));
    /* the arena is reserved memory whole when allocated; live activations are inside it */
    bool first = true;
    for (int i = 0; i < MEM_CAT_COUNT; i++)
        if (g0->peak_cat[i] && i != MEM_ACTIVATIONS && i != MEM_RESERVED) {
            printf("%s%s %s", first ? "" : ", ", ledger_cat_name((enum ledger_cat)i),
                   units_format_bytes(b, sizeof b, (double)g0->peak_cat[i], UNITS_BINARY));
            first = false;
        }
    printf(", arenas %s holding at most %s of live activations)\n",
           units_format_bytes(a, sizeof a, (double)g0->peak_cat[MEM_RESERVED], UNITS_BINARY),
           units_format_bytes(b, sizeof b, (double)g0->peak_cat[MEM_ACTIVATIONS], UNITS_BINARY));
    if (o->precision != FP_FP32) {
        printf("gradient elements that underflowed to 0 over the run:");
        int nl = sum->layers < 64 ? sum->layers : 64;
        for (int l = 0; l < nl; l++)
            printf(" layer %d: %llu,", l, (unsigned long long)sum->underflow[l]);
        printf(" embedding and norms: %llu\n", (unsigned long long)sum->underflow[nl]);
    }
    printf("matmul FLOPs per step %.4g, recomputed %.4g (%.1f%% overhead)\n", sum->flops,
           sum->recompute, sum->overhead);
    printf("%.0f tokens/s, %.2f GFLOP/s, %s wall; %s simulated on %s\n", sum->tokens_per_s, gflops,
           units_format_seconds(a, sizeof a, sum->seconds),
           units_format_seconds(b, sizeof b, sum->sim_seconds), spec->name);
    if (o->gpus == 1 && !train_pipelined(o))
        return;
    print_gpu_table(o, run, p);
    printf("simulated step %s, of which %s not hidden behind compute; the agreement (loss, "
           "norm, inf/NaN) %llu bytes per GPU\n",
           units_format_seconds(a, sizeof a, sum->sim_step),
           units_format_seconds(b, sizeof b, sum->exposed), (unsigned long long)sum->scalars);
}

/* One step into the summary, and printed. */
static void account(struct summary *sum, const struct args *r, const struct run_step *rs, long i)
{
    const struct train_step *s = &rs->s;
    const struct train_opts *o = &r->o;
    sum->skipped += s->skipped;
    sum->overflows += s->overflow;
    sum->spikes += s->spike;
    if (i == 1)
        sum->first_loss = s->loss, sum->min_coef = s->clip_coef;
    if (isfinite(s->grad_norm) && s->grad_norm > sum->max_norm) /* of the finite ones */
        sum->max_norm = s->grad_norm;
    if (s->clip_coef < sum->min_coef)
        sum->min_coef = s->clip_coef;
    int nl = o->shape.layers < 64 ? o->shape.layers : 64;
    for (int l = 0; l <= nl; l++)
        sum->underflow[l] += rs->underflow[l];
    if (s->underflow_frac > sum->max_underflow)
        sum->max_underflow = s->underflow_frac;
    if (s->nonfinite[0] && !sum->first_nonfinite[0])
        snprintf(sum->first_nonfinite, sizeof sum->first_nonfinite, "%s", s->nonfinite);
    sum->sim_step += rs->sim_time_s;
    sum->exposed += rs->exposed_s;
    sum->scalars = rs->scalar_bytes;
    sum->last_scale = s->next_scale; /* after the last update, as get_scale() says */
    sum->routed += s->routed, sum->dropped += s->dropped;
    sum->last_aux = s->aux_loss, sum->last_imbalance = s->expert_imbalance;
    sum->steps = i;
}

/* ------------------------------------------------------------------ the command */

/* --experts, --top-k, --moe-every and --capacity-factor into the model's shape (the
 * calculator's and the model's, so the prediction is of the model that runs); what goes
 * with experts needs them. 0, or the exit status. */
static int configure_moe(struct args *r)
{
    struct model_shape *m = &r->shape;
    if (r->experts) {
        if (!m->experts) /* a dense preset turned into a mixture: Mixtral's k by default */
            m->top_k = 2, m->moe_every = 1;
        m->experts = r->experts;
    }
    const char *lone = r->top_k           ? "--top-k"
                       : r->moe_every     ? "--moe-every"
                       : r->capacity >= 0 ? "--capacity-factor"
                       : r->aux >= 0      ? "--aux-loss-coef"
                                          : NULL;
    if (!m->experts) {
        if (lone)
            return cli_usage("train", "%s goes with --experts (the model %s has none)", lone,
                             m->name);
        return 0;
    }
    if (r->top_k)
        m->top_k = r->top_k;
    if (r->moe_every)
        m->moe_every = r->moe_every;
    if (r->capacity >= 0)
        m->capacity_factor = r->capacity;
    if (m->top_k > m->experts)
        return cli_usage("train", "--top-k %d: more than the %d experts", m->top_k, m->experts);
    if (m->moe_every > m->layers)
        return cli_usage("train", "--moe-every %d: %s has %d layers", m->moe_every, m->name,
                         m->layers);
    return 0;
}

/* The options into r, and the checks between them: 0, or the exit status. */
static int configure(int argc, char **argv, struct args *r)
{
    struct error e = {0};
    int rc;
    train_opts_default(&r->o);
    r->o.lr = 3e-3;
    r->cluster = "h100-80gb";
    if ((rc = preset_load_model("tiny", &r->shape, &e)))
        return cli_fail(&e);
    r->capacity = r->aux = -1;
    if ((rc = opts_parse(&opts_train, argc, argv, r)) || (rc = configure_moe(r)))
        return rc;
    struct train_opts *o = &r->o;
    if (train_shape_of(&r->shape, &o->shape, &e))
        return cli_usage("train", "--model %s", e.msg);
    if (r->aux >= 0)
        o->shape.moe.aux_coef = r->aux;
    if (!r->scale_given)
        o->scaling = o->precision == FP_FP16 ? TRAIN_SCALE_DYNAMIC : TRAIN_SCALE_NONE;
    if (r->summary_only && !r->json)
        return cli_usage("train", "--summary goes with --json");
    if (r->init_scale_given && o->scaling != TRAIN_SCALE_DYNAMIC)
        return cli_usage("train", "--init-scale needs --loss-scale dynamic");
    if (r->chunks)
        o->chunks = r->chunks;
    return 0;
}

/* The GPUs: --gpus (all of them), or --dp x --tp x --pp; and what the layout allows. */
static int configure_layout(struct args *r)
{
    struct train_opts *o = &r->o;
    struct error e = {0};
    int mp = o->tp * o->pp;
    if (r->gpus)
        o->gpus = r->gpus;
    if (r->dp) {
        if (r->gpus && o->gpus != r->dp * mp)
            return cli_usage("train", "--gpus %d is not --dp %d x --tp %d x --pp %d", o->gpus,
                             r->dp, o->tp, o->pp);
        if (r->dp * mp > 64)
            return cli_usage("train", "--dp %d x --tp %d x --pp %d is %d GPUs, more than 64", r->dp,
                             o->tp, o->pp, r->dp * mp);
        o->gpus = r->dp * mp;
    } else if (!r->gpus) {
        if (mp > 64)
            return cli_usage("train", "--tp %d x --pp %d is %d GPUs, more than 64", o->tp, o->pp,
                             mp);
        o->gpus = mp;
    }
    if (o->sp && o->tp == 1)
        return cli_usage("train", "--sequence-parallel goes with --tp 2 or more");
    if (r->chunks && o->schedule != SCHED_INTERLEAVED)
        return cli_usage("train", "--chunks goes with --schedule interleaved");
    if (o->pp == 1 && o->micro_batches > 1 && o->schedule != SCHED_1F1B)
        return cli_usage("train",
                         "--schedule %s needs --pp > 1: one stage runs its micro-batches one "
                         "after the other (forward, backward), adding up their gradients",
                         sched_name(o->schedule));
    if (o->shape.moe.experts && (o->gpus > 1 || o->micro_batches > 1))
        return cli_usage("train",
                         "%s has experts: it trains on one GPU with one micro-batch for now, "
                         "not %d GPUs and %d micro-batches",
                         r->shape.name, o->gpus, o->micro_batches);
    if (train_opts_check(o, &e))
        return opts_fail(&opts_train, &e);
    return 0;
}

/* The simulated cluster (--cluster, --nodes) and what the run needs from this host, checked
 * before anything is allocated: each GPU's model buffers (exactly, for its share of the batch)
 * and, at most, the fp32 copies of its weights, gradients, master weights and Adam's moments.
 * Whether it fits a simulated GPU is the ledger's call, when the buffers are allocated: out of
 * memory, exit 1. 0, or the exit status. */
static int configure_host(const struct args *r, struct run_config *rcfg)
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
        if (units_parse_int(r->nodes, 1, 64, &nodes, &e)) {
            error_prefix(&e, "--nodes");
            return cli_fail(&e);
        }
        if (o->gpus % nodes != 0)
            return cli_usage("train", "--nodes %lld: %d GPUs do not split evenly over %lld nodes",
                             nodes, o->gpus, nodes);
        rcfg->spec.gpus_per_node = o->gpus / (int)nodes;
        rcfg->spec.nodes = (int)nodes;
    }
    char a[32], b[32];
    double need = (double)o->gpus * ((double)gpt_estimate_bytes(&o->shape, o->batch / o->gpus,
                                                                o->precision, &o->ckpt, &e) +
                                     5.0 * 4 * (double)gpt_param_count(&o->shape));
    double host = (double)sysconf(_SC_PHYS_PAGES) * (double)sysconf(_SC_PAGESIZE);
    if (host > 0 && need > host / 2)
        return cli_usage("train",
                         "--batch %d on %d GPUs: the run's buffers need %s, more than half of "
                         "this host's %s",
                         o->batch, o->gpus, units_format_bytes(a, sizeof a, need, UNITS_BINARY),
                         units_format_bytes(b, sizeof b, host, UNITS_BINARY));
    if (r->dump && dump_check(r->dump, &e))
        return cli_fail(&e);
    rcfg->keep_first_step = r->dump != NULL;
    return 0;
}

/* The run's settings, before its steps (text only). */
static void print_header(const struct args *r, const struct cluster_spec *spec)
{
    const struct train_opts *o = &r->o;
    const struct gpt_config *c = &o->shape;
    char pc[32];
    printf("model %s: %s parameters, d_model %d, %d layers, %d heads, ffn %d, vocab %d, "
           "seq %d\n",
           r->shape.name, units_format_grouped(pc, sizeof pc, gpt_param_count(c)), c->d, c->layers,
           c->heads, c->ffn, c->vocab, c->seq);
    if (c->moe.experts) {
        char ac[32], cap[32] = "no capacity limit";
        if (c->moe.capacity_factor > 0)
            snprintf(cap, sizeof cap, "capacity factor %g", c->moe.capacity_factor);
        printf("experts: %d in %d of the %d layers, top-%d, %s, aux-loss coefficient %g; %s "
               "parameters used per token\n",
               c->moe.experts, gpt_moe_layers(c), c->layers, c->moe.top_k, cap, c->moe.aux_coef,
               units_format_grouped(ac, sizeof ac, gpt_active_param_count(c)));
    }
    printf("precision %s, loss scale %s, checkpoint %s, batch %d x %d tokens, lr %g, ",
           fp_info(o->precision)->name,
           o->scaling == TRAIN_SCALE_DYNAMIC  ? "dynamic"
           : o->scaling == TRAIN_SCALE_STATIC ? "fixed"
                                              : "none",
           o->ckpt.name[0] ? o->ckpt.name : "none", o->batch, c->seq, o->lr);
    if (o->gpus == 1)
        printf("one simulated %s GPU\n", spec->name);
    else
        printf("%d simulated %s GPUs, %s (%d sequences each)\n", o->gpus, spec->name,
               o->zero ? (o->zero == 3   ? "ZeRO-3 (FSDP)"
                          : o->zero == 2 ? "ZeRO-2"
                                         : "ZeRO-1")
                       : "DDP",
               o->batch / o->gpus);
    fflush(stdout);
}

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
static int run_steps(const struct args *r, struct run *run, struct summary *sum, struct error *e)
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
        if (i == 1 && r->dump && !derr.code && dump_write(r, run, &derr)) {
            run_stop(run);
            break;
        }
        account(sum, r, &rs, i);
        if (!rs.s.skipped && isfinite(rs.s.loss))
            last[lastn++ % FINAL_STEPS] = rs.s.loss;
        const struct train_step *s = &rs.s;
        if (r->json && !r->summary_only) {
            step_json(&rs);
        } else if (!r->json && (i == 1 || i % every == 0 || i == o->steps || s->skipped ||
                                s->overflow || s->spike || s->nonfinite[0])) {
            /* the progress line is taken off the terminal before a step line is written
             * (stdout and stderr may be the same terminal: the step line would follow it) */
            progress_clear(&shown);
            step_text(&rs);
        }
        if (!r->json)
            fflush(stdout);
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
    if (sum->steps > 0)
        sum->sim_step /= (double)sum->steps, sum->exposed /= (double)sum->steps;
    return rc;
}

/* --trace: the events written, a failed run's too (it shows where it stopped); 0, or the
 * error in e. */
static int trace_finish(const struct args *r, struct evlog *log, struct error *e)
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

/* What the run's FLOPs and the calculator say before it starts. */
static void summary_start(const struct args *r, const struct prediction *pred, struct summary *sum)
{
    const struct train_opts *o = &r->o;
    /* matmul FLOPs of the global batch, as the model counts them */
    struct gpt_flops fl = gpt_step_flops(&o->shape, o->batch, &o->ckpt);
    sum->layers = o->shape.layers;
    sum->recompute = fl.recompute;
    sum->flops = fl.forward + fl.backward + fl.recompute;
    sum->overhead = 100.0 * fl.recompute / (fl.forward + fl.backward);
    sum->predicted = pred->ok ? pred->m.activations : NAN;
}

static int train_main(int argc, char **argv)
{
    static struct args r; /* large; one per process */
    memset(&r, 0, sizeof r);
    struct run_config rcfg = {0};
    struct error e = {0};
    int rc;
    if ((rc = configure(argc, argv, &r)) || (rc = configure_layout(&r)) ||
        (rc = configure_host(&r, &rcfg)))
        return rc;
    struct evlog log = {0};
    if (r.trace) {
        if ((rc = trace_setup(&r, &rcfg, &log)))
            return rc;
        rcfg.on_event = on_event;
        rcfg.event_ctx = &log;
    }
    struct summary sum = {0};
    static struct prediction pred;
    memset(&pred, 0, sizeof pred);
    predict(&r, &rcfg.spec, &pred);
    summary_start(&r, &pred, &sum);
    struct run *run = NULL;
    if ((rc = run_new(&run, &rcfg, &e))) {
        free(log.ev);
        sched_free(&pred.sched);
        return cli_fail(&e);
    }
    if (!r.json)
        print_header(&r, &rcfg.spec);
    rc = run_steps(&r, run, &sum, &e);
    struct error te = {0};
    if (r.trace && trace_finish(&r, &log, &te) && !rc)
        e = te, rc = te.code;
    if (rc) {
        run_free(run);
        sched_free(&pred.sched);
        return cli_fail(&e);
    }
    if (r.json)
        print_summary_json(&r, run, &sum, &pred);
    else
        print_summary_text(&r, run, &sum, &pred, &rcfg.spec);
    run_free(run);
    sched_free(&pred.sched);
    return 0;
}

const struct command cmd_train = {
    "train",
    "real mixed-precision training of the tiny GPT (loss scaling, clipping, checkpointing)",
    "usage: scalelab train [OPTIONS]\n"
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
