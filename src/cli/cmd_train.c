/* scalelab train: real mixed-precision training of the tiny GPT on one simulated GPU. */
#include "config.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/error.h"
#include "base/units.h"
#include "calc/activ.h"
#include "calc/preset.h"
#include "cli/command.h"
#include "cli/opts.h"
#include "par/trainer.h"
#include "sim/cluster.h"
#include "sim/ledger.h"
#include "sim/trace.h"

static const struct opt options[] = {
    {"model", 0, true},      {"steps", 0, true},        {"batch", 0, true},
    {"seed", 0, true},       {"lr", 0, true},           {"betas", 0, true},
    {"wd", 0, true},         {"eps", 0, true},          {"precision", 0, true},
    {"loss-scale", 0, true}, {"init-scale", 0, true},   {"growth-interval", 0, true},
    {"hysteresis", 0, true}, {"clip", 0, true},         {"skip-spikes", 0, false},
    {"spike-z", 0, true},    {"spike-window", 0, true}, {"inject", 0, true},
    {"checkpoint", 0, true}, {"json", 0, false},        {"dump", 0, true},
    {"trace", 0, true},      {"cluster", 0, true},      {"summary", 0, false},
    {NULL, 0, false},
};

#define MAX_STEPS 10000000L

struct run {
    struct train_opts o;
    struct model_shape shape;
    bool json, summary_only, scale_given, init_scale_given;
    const char *dump, *trace, *cluster;
    struct error dump_err;
    bool dumped;
};

/* ------------------------------------------------------------------ parsing */

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

/* nan@STEP, inf@STEP, spike@STEP[:FACTOR] */
static int parse_inject(struct train_opts *o, const char *s, struct error *e)
{
    if (o->ninject == TRAIN_MAX_INJECT)
        return error_set(e, ERR_INVAL, "--inject: at most %d injections", TRAIN_MAX_INJECT);
    struct train_inject x = {TRAIN_INJECT_NAN, 0, 10.0};
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
                         "--inject '%s': expected nan@STEP, inf@STEP or spike@STEP[:FACTOR]", s);
    char step[32];
    const char *colon = strchr(at + 1, ':');
    size_t slen = colon ? (size_t)(colon - at - 1) : strlen(at + 1);
    if (slen == 0 || slen >= sizeof step)
        return error_set(e, ERR_INVAL, "--inject '%s': STEP must be a whole number", s);
    memcpy(step, at + 1, slen);
    step[slen] = 0;
    long long v;
    if (units_parse_int(step, 1, MAX_STEPS, &v, e)) {
        error_prefix(e, "--inject '%s': step", s);
        return ERR_INVAL;
    }
    x.step = (long)v;
    if (colon) {
        if (x.kind != TRAIN_INJECT_SPIKE)
            return error_set(e, ERR_INVAL, "--inject '%s': only spike takes a :FACTOR", s);
        if (units_parse_double(colon + 1, false, &x.factor, e) || !(x.factor > 0) ||
            !isfinite(x.factor))
            return error_set(e, ERR_INVAL, "--inject '%s': FACTOR must be a finite number > 0", s);
    }
    o->inject[o->ninject++] = x;
    return 0;
}

static int parse_option(struct run *r, const char *name, const char *arg, struct error *e)
{
    struct train_opts *o = &r->o;
    double v;
    long long n;
    int rc = 0;
    if (!strcmp(name, "model")) {
        if ((rc = preset_load_model(arg, &r->shape, e))) {
            error_prefix(e, "--model");
            return rc;
        }
    } else if (!strcmp(name, "steps")) {
        if (!(rc = parse_long(name, arg, 1, MAX_STEPS, &n, e)))
            o->steps = (long)n;
    } else if (!strcmp(name, "batch")) {
        if (!(rc = parse_long(name, arg, 1, 1 << 20, &n, e)))
            o->batch = (int)n;
    } else if (!strcmp(name, "seed")) {
        if (!(rc = parse_long(name, arg, 0, 1LL << 53, &n, e)))
            o->seed = (uint64_t)n;
    } else if (!strcmp(name, "lr")) {
        if (!(rc = parse_double(name, arg, &v, e)) && v < 0)
            rc = error_set(e, ERR_INVAL, "--lr must be >= 0, not %s", arg);
        o->lr = v;
    } else if (!strcmp(name, "betas")) {
        char b1[64];
        const char *comma = strchr(arg, ',');
        if (!comma || (size_t)(comma - arg) >= sizeof b1)
            return error_set(e, ERR_INVAL, "--betas '%s': expected BETA1,BETA2", arg);
        memcpy(b1, arg, (size_t)(comma - arg));
        b1[comma - arg] = 0;
        if ((rc = parse_double(name, b1, &o->beta1, e)) ||
            (rc = parse_double(name, comma + 1, &o->beta2, e)))
            return rc;
        if (!(o->beta1 >= 0 && o->beta1 < 1 && o->beta2 >= 0 && o->beta2 < 1))
            rc = error_set(e, ERR_INVAL, "--betas '%s': both must be in [0, 1)", arg);
    } else if (!strcmp(name, "wd")) {
        if (!(rc = parse_double(name, arg, &o->wd, e)) && o->wd < 0)
            rc = error_set(e, ERR_INVAL, "--wd must be >= 0, not %s", arg);
    } else if (!strcmp(name, "eps")) {
        if (!(rc = parse_double(name, arg, &o->eps, e)) && !(o->eps > 0))
            rc = error_set(e, ERR_INVAL, "--eps must be > 0, not %s", arg);
    } else if (!strcmp(name, "precision")) {
        if (!strcmp(arg, "fp32"))
            o->precision = FP_FP32;
        else if (!strcmp(arg, "bf16"))
            o->precision = FP_BF16;
        else if (!strcmp(arg, "fp16"))
            o->precision = FP_FP16;
        else
            rc = error_set(e, ERR_INVAL, "--precision '%s': expected fp32, bf16 or fp16", arg);
    } else if (!strcmp(name, "loss-scale")) {
        r->scale_given = true;
        if (!strcmp(arg, "dynamic"))
            o->scaling = TRAIN_SCALE_DYNAMIC;
        else if (!strcmp(arg, "none"))
            o->scaling = TRAIN_SCALE_NONE;
        else if (units_parse_double(arg, false, &v, e) || !(v > 0) || v > 3.4e38)
            rc = error_set(e, ERR_INVAL,
                           "--loss-scale '%s': expected dynamic, none or a number > 0 (a fixed "
                           "scale)",
                           arg);
        else
            o->scaling = TRAIN_SCALE_STATIC, o->scale = v;
    } else if (!strcmp(name, "init-scale")) {
        if (!(rc = parse_double(name, arg, &v, e)) && !(v > 0 && v <= 3.4e38))
            rc = error_set(e, ERR_INVAL, "--init-scale must be > 0 and finite in fp32");
        r->init_scale_given = true;
        o->scale = v;
    } else if (!strcmp(name, "growth-interval")) {
        if (!(rc = parse_long(name, arg, 1, 1 << 30, &n, e)))
            o->growth_interval = (int)n;
    } else if (!strcmp(name, "hysteresis")) {
        if (!(rc = parse_long(name, arg, 1, 1 << 30, &n, e)))
            o->hysteresis = (int)n;
    } else if (!strcmp(name, "clip")) {
        if (!(rc = parse_double(name, arg, &o->clip, e)) && !(o->clip > 0))
            rc = error_set(e, ERR_INVAL, "--clip must be > 0, not %s", arg);
    } else if (!strcmp(name, "skip-spikes")) {
        o->skip_spikes = true;
    } else if (!strcmp(name, "spike-z")) {
        if (!(rc = parse_double(name, arg, &o->spike_z, e)) && !(o->spike_z > 0))
            rc = error_set(e, ERR_INVAL, "--spike-z must be > 0, not %s", arg);
    } else if (!strcmp(name, "spike-window")) {
        if (!(rc = parse_long(name, arg, 2, 1 << 20, &n, e)))
            o->spike_window = (int)n;
    } else if (!strcmp(name, "inject")) {
        rc = parse_inject(o, arg, e);
    } else if (!strcmp(name, "checkpoint")) {
        if ((rc = gpt_ckpt_parse(arg, &o->ckpt, e)))
            error_prefix(e, "--checkpoint");
    } else if (!strcmp(name, "json")) {
        r->json = true;
    } else if (!strcmp(name, "summary")) {
        r->summary_only = true;
    } else if (!strcmp(name, "dump")) {
        r->dump = arg;
    } else if (!strcmp(name, "trace")) {
        r->trace = arg;
    } else if (!strcmp(name, "cluster")) {
        r->cluster = arg;
    }
    return rc;
}

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

static void dump_step(void *ctx, const struct trainer *t, long step, const int32_t *tokens,
                      const int32_t *targets, double loss, const float *grads)
{
    struct run *r = ctx;
    if (step != 1 || r->dumped)
        return;
    r->dumped = true;
    const struct train_opts *o = trainer_opts(t);
    const struct gpt_config *c = &o->shape;
    size_t bt = (size_t)o->batch * c->seq, n = gpt_param_count(c);
    struct error *e = &r->dump_err;
    char ini[1024], lossbuf[64];
    int len =
        snprintf(ini, sizeof ini,
                 "# written by scalelab train --dump: the shape of params.f32\n"
                 "[model]\nname = %s\nlayers = %d\nd_model = %d\nheads = %d\n"
                 "kv_heads = %d\nffn = %d\nffn_kind = swiglu\nvocab = %d\ntied = true\n"
                 "seq = %d\n",
                 r->shape.name, c->layers, c->d, c->heads, c->heads, c->ffn, c->vocab, c->seq);
    int ll = snprintf(lossbuf, sizeof lossbuf, "%.17g\n", loss);
    if (mkdir(r->dump, 0777) != 0 && errno != EEXIST) {
        error_set(e, ERR_IO, "--dump: cannot create %s: %s", r->dump, strerror(errno));
        return;
    }
    /* params.f32: the weights this step used (before its update): the initial parameters */
    if (write_file(r->dump, "model.ini", ini, (size_t)len, e) ||
        write_le32(r->dump, "params.f32", trainer_master(t), n, e) ||
        write_le32(r->dump, "tokens.i32", tokens, bt, e) ||
        write_le32(r->dump, "targets.i32", targets, bt, e) ||
        write_file(r->dump, "loss.txt", lossbuf, (size_t)ll, e) ||
        write_le32(r->dump, "grads.f32", grads, n, e))
        return;
}

/* ------------------------------------------------------------------ output */

static json_t *num(double v)
{
    if (isnan(v))
        return json_string("nan");
    if (isinf(v))
        return json_string(v > 0 ? "inf" : "-inf");
    return json_real(v);
}

static void print_json_obj(json_t *o)
{
    json_dumpf(o, stdout, JSON_COMPACT | JSON_REAL_PRECISION(10));
    fputc('\n', stdout);
    json_decref(o);
}

/* A JSON number, or the strings "inf", "-inf", "nan" (printed directly: the step loop
 * allocates nothing, not even a JSON tree). %.10g reads back to the same double for losses
 * and float fields to 10 significant digits. */
static void put_num(const char *key, double v, bool comma)
{
    if (isnan(v))
        printf("\"%s\":\"nan\"", key);
    else if (isinf(v))
        printf("\"%s\":\"%s\"", key, v > 0 ? "inf" : "-inf");
    else
        printf("\"%s\":%.10g", key, v);
    if (comma)
        putchar(',');
}

static void step_json(const struct train_step *s)
{
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
    printf("\"act_peak_bytes\":%zu}\n", s->act_peak_bytes);
}

static void step_text(const struct train_step *s)
{
    printf("step %6ld  loss %8.4f  grad norm %9.4g  clip %6.4f  scale %8g  underflow %.4f%%",
           s->step, s->loss, (double)s->grad_norm, (double)s->clip_coef, (double)s->loss_scale,
           100 * s->underflow_frac);
    if (s->nonfinite[0])
        printf("  non-finite: %s", s->nonfinite);
    if (s->overflow)
        printf("  OVERFLOW");
    if (s->spike)
        printf("  SPIKE (z %.1f)", s->zscore);
    if (s->skipped)
        printf("  skipped");
    printf("\n");
}

struct summary {
    double final_loss, floor, seconds, sim_seconds, tokens_per_s, flops, recompute, overhead;
    double predicted, first_loss, max_norm, min_coef, max_underflow;
    char first_nonfinite[48];
    long steps, skipped, overflows, spikes;
    int nlast;
    size_t act_peak;
    uint64_t mem[MEM_CAT_COUNT], mem_peak;
    uint64_t *underflow; /* per layer over the run (layers + 1: the last is embedding+norms) */
    int layers;
    float last_scale;
};

/* ------------------------------------------------------------------ the command */

/* ------------------------------------------------------------------ the device */

/* The model's allocator seam on a simulated GPU: every buffer comes from the device's ledger
 * (weights, gradients, master weights, Adam's moments; the activation arena as reserved
 * memory; the fp32 workspace of the CPU emulation and the batch as workspace), so the capacity
 * check sees every byte before the first step. As kept tensors live and die, their bytes move
 * from reserved to activations and back (model/gpt.h): the sawtooth, inside memory already
 * held. Compute advances the device's simulated clock. */
struct seam {
    struct device *d;
    struct error err; /* the first out-of-memory or accounting error */
};

static enum ledger_cat ledger_of(enum gpt_mem kind)
{
    switch (kind) {
    case GPT_MEM_WEIGHTS: return MEM_WEIGHTS;
    case GPT_MEM_GRADS: return MEM_GRADIENTS;
    case GPT_MEM_MASTER: return MEM_MASTER;
    case GPT_MEM_OPTIMIZER: return MEM_OPTIMIZER;
    case GPT_MEM_ACTIVATIONS: return MEM_ACTIVATIONS;
    case GPT_MEM_ARENA: return MEM_RESERVED;
    default: return MEM_WORKSPACE;
    }
}

static void *seam_alloc(void *ctx, enum gpt_mem kind, size_t bytes, const char *what)
{
    struct seam *s = ctx;
    (void)what;
    struct error e = {0};
    void *p = ledger_alloc(dev_ledger(s->d), ledger_of(kind), bytes, &e);
    if (!p && !s->err.code)
        s->err = e;
    return p;
}

static void seam_free(void *ctx, enum gpt_mem kind, void *p, size_t bytes)
{
    struct seam *s = ctx;
    (void)kind, (void)bytes;
    ledger_free(dev_ledger(s->d), p);
}

static void seam_charge(void *ctx, enum gpt_mem kind, long long delta)
{
    struct seam *s = ctx;
    struct error e = {0};
    int rc =
        delta > 0
            ? ledger_move(dev_ledger(s->d), MEM_RESERVED, ledger_of(kind), (uint64_t)delta, &e)
            : ledger_move(dev_ledger(s->d), ledger_of(kind), MEM_RESERVED, (uint64_t)-delta, &e);
    if (rc && !s->err.code)
        s->err = e;
}

static void seam_compute(void *ctx, double flops, const char *what, int layer)
{
    struct seam *s = ctx;
    dev_compute(s->d, flops, what, layer, 0);
}

/* Events of --trace, in a buffer sized exactly before the run from its shape (trace_events):
 * nothing grows inside the step loop, and nothing is left out. Non-finite tensor names are
 * interned in a table with room for one new name per step, since events keep static strings.
 * lost counts what did not fit anyway: the run then fails rather than write a partial trace. */
struct evlog {
    struct event *ev;
    size_t n, cap, lost;
    char (*names)[48];
    size_t nnames, capnames;
};

/* A trace Perfetto's web UI opens comfortably (its JSON about 150 bytes an event: ~300 MB). */
#define TRACE_MAX_EVENTS 2000000

/* The events a run records: each buffer's allocation and release, then per step two per
 * compute (begin, end), two per charge (bytes leave reserved, join activations, or back),
 * the step and at most one non-finite value; and at most one failure at the end. */
static double trace_events(const struct train_opts *o)
{
    struct train_calls c = trainer_calls(o);
    return 2.0 * (double)c.buffers + (double)o->steps * (2.0 * c.computes + 2.0 * c.charges + 2) +
           1;
}

static void on_event(void *ctx, const struct event *ev)
{
    struct evlog *l = ctx;
    if (l->n < l->cap)
        l->ev[l->n++] = *ev;
    else
        l->lost++;
}

static const char *intern(struct evlog *l, const char *name)
{
    for (size_t i = 0; i < l->nnames; i++)
        if (!strcmp(l->names[i], name))
            return l->names[i];
    if (l->nnames == l->capnames) { /* cannot happen: one name per step at most */
        l->lost++;
        return "?";
    }
    snprintf(l->names[l->nnames], sizeof l->names[0], "%s", name);
    return l->names[l->nnames++];
}

struct job {
    struct run *r;
    struct summary sum;
    struct evlog *log;
    bool progress;
};

/* A ledger's message without its "GPU d: ", which dev_fail adds. */
static const char *unprefixed(const char *msg)
{
    const char *colon = strstr(msg, ": ");
    return !strncmp(msg, "GPU ", 4) && colon ? colon + 2 : msg;
}

static int train_device(struct device *d, void *arg, struct error *e)
{
    struct job *j = arg;
    struct run *r = j->r;
    struct train_opts *o = &r->o;
    struct seam seam = {d, {0}};
    struct gpt_alloc alloc = {seam_alloc, seam_free, seam_charge, seam_compute, &seam};
    struct trainer *t;
    int rc = trainer_new(&t, o, &alloc, e);
    if (rc) {
        if (seam.err.code)
            *e = seam.err;
        return dev_fail(d, e, "%s", unprefixed(e->msg));
    }
    if (r->dump)
        trainer_observe(t, dump_step, r);
    struct summary *sum = &j->sum;
    struct ledger *led = dev_ledger(d);
    sum->floor = trainer_loss_floor(t);
    if (!r->json)
        printf("loss floor (entropy rate of the data): %.4f nats\n", sum->floor);

    long every = o->steps / 20 > 0 ? o->steps / 20 : 1;
    int nlast = o->steps < 10 ? (int)o->steps : 10;
    double lastsum = 0;
    int lastn = 0;
    double t0 = clock_now(), tprog = t0;
    struct train_step s;
    for (long i = 1; i <= o->steps; i++) {
        if ((rc = dev_step(d, (int)i, e)))
            break;
        trainer_step(t, &s);
        if (seam.err.code) { /* accounting went wrong: a bug, said rather than hidden */
            rc = dev_fail(d, e, "%s", unprefixed(seam.err.msg));
            break;
        }
        if (r->dump && r->dump_err.code) {
            *e = r->dump_err;
            rc = r->dump_err.code;
            break;
        }
        s.act_peak_bytes = led->peak_cat[MEM_ACTIVATIONS]; /* the ledger's word */
        struct event ev = {.type = EV_TRAIN_STEP, .t = dev_now(d), .step = (int)i};
        ev.loss = s.loss, ev.grad_norm = s.grad_norm, ev.clip_coef = s.clip_coef;
        ev.loss_scale = s.loss_scale, ev.skipped = s.skipped;
        dev_emit(d, &ev);
        if (s.nonfinite[0]) {
            struct event nf = {.type = EV_NONFINITE, .t = dev_now(d), .step = (int)i};
            nf.name = j->log ? intern(j->log, s.nonfinite) : "tensor";
            nf.layer = atoi(strncmp(s.nonfinite, "layer ", 6) ? "-1" : s.nonfinite + 6);
            dev_emit(d, &nf);
        }
        sum->skipped += s.skipped;
        sum->overflows += s.overflow;
        sum->spikes += s.spike;
        if (i == 1)
            sum->first_loss = s.loss, sum->min_coef = s.clip_coef;
        if (isfinite(s.grad_norm) && s.grad_norm > sum->max_norm) /* of the finite ones */
            sum->max_norm = s.grad_norm;
        if (s.clip_coef < sum->min_coef)
            sum->min_coef = s.clip_coef;
        for (int l = 0; l <= o->shape.layers; l++)
            sum->underflow[l] += s.underflow[l];
        if (s.underflow_frac > sum->max_underflow)
            sum->max_underflow = s.underflow_frac;
        if (s.nonfinite[0] && !sum->first_nonfinite[0])
            snprintf(sum->first_nonfinite, sizeof sum->first_nonfinite, "%s", s.nonfinite);
        if (i > o->steps - nlast && isfinite(s.loss))
            lastsum += s.loss, lastn++;
        if (r->json && !r->summary_only)
            step_json(&s);
        else if (!r->json && (i == 1 || i % every == 0 || i == o->steps || s.skipped ||
                              s.overflow || s.spike || s.nonfinite[0]))
            step_text(&s);
        if (j->progress && clock_now() - tprog > 0.2) {
            double el = clock_now() - t0, rate = (double)i / el;
            char left[32];
            units_format_seconds(left, sizeof left, (double)(o->steps - i) / rate);
            fprintf(stderr, "\rstep %ld/%ld  loss %.4f  %.1f steps/s  %s left   ", i, o->steps,
                    s.loss, rate, left);
            tprog = clock_now();
        }
        if (!r->json)
            fflush(stdout);
        sum->steps = i;
        if (s.weights_nonfinite_since && !isfinite(s.loss)) {
            /* Without a scaler the run goes on as plain PyTorch would, applying the bad
             * step; once that shows as a non-finite loss, every later step would only
             * repeat it: stop, say why and what would have saved the run. */
            const char *tensor;
            long at = trainer_poisoned(t, &tensor);
            rc = dev_fail(d, e,
                          "step %ld: the loss is %s: without a loss scaler nothing skips a "
                          "step whose gradients hold inf or NaN, step %ld applied one (first "
                          "non-finite tensor: %s) and the weights are now NaN; stopping. A "
                          "scaler skips such steps: --loss-scale dynamic or a fixed VALUE "
                          "(1 for bf16)",
                          i, isnan(s.loss) ? "NaN" : "inf", at, tensor[0] ? tensor : "?");
            break;
        }
    }
    if (j->progress)
        fprintf(stderr, "\r%*s\r", 70, "");
    sum->seconds = clock_now() - t0;
    sum->final_loss = lastn ? lastsum / lastn : NAN;
    sum->tokens_per_s = (double)sum->steps * o->batch * o->shape.seq / sum->seconds;
    sum->act_peak = (size_t)led->peak_cat[MEM_ACTIVATIONS];
    sum->last_scale = s.loss_scale;
    sum->nlast = nlast;
    sum->sim_seconds = dev_now(d);
    for (int c = 0; c < MEM_CAT_COUNT; c++)
        sum->mem[c] = led->peak_cat[c];
    sum->mem_peak = led->peak;
    trainer_free(t);
    return rc;
}

/* ------------------------------------------------------------------ the command */

static int train_main(int argc, char **argv)
{
    struct run r = {0};
    struct error e = {0};
    struct opts p;
    const char *arg;
    int k, rc;
    train_opts_default(&r.o);
    r.o.lr = 3e-3;
    r.cluster = "h100-80gb";
    if ((rc = preset_load_model("tiny", &r.shape, &e)))
        return cli_fail(&e);
    static const char *const repeatable[] = {"inject", NULL};
    opts_init(&p, argc, argv, options, "train");
    p.once = true;
    p.repeatable = repeatable;
    while ((k = opts_next(&p, &arg)) != OPTS_END) {
        if (k == OPTS_ERROR)
            return 2;
        if (k == OPTS_POSITIONAL)
            return cli_usage("train", "unexpected argument '%s'", arg);
        if ((rc = parse_option(&r, options[k].name, arg, &e)))
            return cli_fail(&e);
    }
    struct train_opts *o = &r.o;
    if (r.shape.ffn_kind != FFN_SWIGLU || r.shape.kv_heads != r.shape.heads || !r.shape.tied)
        return cli_usage("train",
                         "--model %s: the tiny GPT trains swiglu models with tied embeddings and "
                         "kv_heads = heads",
                         r.shape.name);
    o->shape = (struct gpt_config){r.shape.vocab, r.shape.d_model, r.shape.layers,
                                   r.shape.heads, r.shape.ffn,     r.shape.seq};
    if (!r.scale_given)
        o->scaling = o->precision == FP_FP16 ? TRAIN_SCALE_DYNAMIC : TRAIN_SCALE_NONE;
    if (r.summary_only && !r.json)
        return cli_usage("train", "--summary goes with --json");
    if (r.init_scale_given && o->scaling != TRAIN_SCALE_DYNAMIC)
        return cli_usage("train", "--init-scale needs --loss-scale dynamic");
    if ((rc = train_opts_check(o, &e)))
        return cli_fail(&e);
    struct cluster_config cc;
    cluster_config_init(&cc);
    if (preset_load_cluster(r.cluster, &cc.spec, &e) != 0) {
        error_prefix(&e, "--cluster");
        return cli_fail(&e);
    }

    /* What the run needs from this host, checked before anything is allocated: the model's
     * buffers (exactly), master weights and Adam's moments. Whether it fits the simulated
     * GPU is the ledger's call, when the buffers are allocated: out of memory, exit 1. */
    char a[32], b[32];
    double need = (double)gpt_estimate_bytes(&o->shape, o->batch, o->precision, &o->ckpt, &e) +
                  3.0 * 4 * (double)gpt_param_count(&o->shape);
    double host = (double)sysconf(_SC_PHYS_PAGES) * (double)sysconf(_SC_PAGESIZE);
    if (host > 0 && need > host / 2)
        return cli_usage("train",
                         "--batch %d: the run's buffers need %s, more than half of this host's %s",
                         o->batch, units_format_bytes(a, sizeof a, need, UNITS_BINARY),
                         units_format_bytes(b, sizeof b, host, UNITS_BINARY));
    if (r.dump && (rc = dump_check(r.dump, &e)))
        return cli_fail(&e);
    struct evlog log = {0};
    if (r.trace) {
        double events = trace_events(o), bytes = events * sizeof(struct event);
        double disk = events * 160; /* bytes of JSON per event, about */
        struct statvfs fs;
        char dir[4096];
        snprintf(dir, sizeof dir, "%s", r.trace);
        char *slash = strrchr(dir, '/');
        if (slash)
            *(slash == dir ? slash + 1 : slash) = 0;
        if (trace_check_path(r.trace, &e) < 0) {
            error_prefix(&e, "train: --trace");
            return cli_fail(&e);
        }
        if (events > TRACE_MAX_EVENTS)
            return cli_usage("train",
                             "--trace: %ld steps of this run record %.0f events, more than the "
                             "limit of %d a trace may hold; trace fewer --steps",
                             o->steps, events, TRACE_MAX_EVENTS);
        if (host > 0 && need + bytes > host / 2)
            return cli_usage("train",
                             "--trace: %s of events for %ld steps do not fit in this host's "
                             "memory; trace fewer --steps",
                             units_format_bytes(a, sizeof a, bytes, UNITS_BINARY), o->steps);
        if (statvfs(slash ? dir : ".", &fs) == 0 &&
            disk > (double)fs.f_bavail * (double)fs.f_frsize)
            return cli_usage("train",
                             "--trace: a trace of about %s for %ld steps does not fit on the "
                             "disk (%s free)",
                             units_format_bytes(a, sizeof a, disk, UNITS_BINARY), o->steps,
                             units_format_bytes(b, sizeof b,
                                                (double)fs.f_bavail * (double)fs.f_frsize,
                                                UNITS_BINARY));
        log.cap = (size_t)events;
        log.capnames = (size_t)o->steps;
        log.ev = malloc(log.cap * sizeof *log.ev);
        log.names = malloc(log.capnames * sizeof *log.names);
        if (!log.ev || !log.names) {
            free(log.ev);
            free(log.names);
            error_set(&e, ERR_NOMEM, "out of memory for the trace's events");
            return cli_fail(&e);
        }
        cc.on_event = on_event;
        cc.event_ctx = &log;
    }
    cc.gpus = 1;
    cc.seed = o->seed;
    cc.deadline_s = 3600;
    struct cluster *cl = cluster_new(&cc, &e);
    if (!cl) {
        free(log.ev);
        free(log.names);
        return cli_fail(&e);
    }

    struct job job = {.r = &r, .log = r.trace ? &log : NULL, .progress = !r.json && isatty(2)};
    struct summary *sum = &job.sum;
    sum->layers = o->shape.layers;
    sum->underflow = calloc((size_t)o->shape.layers + 1, sizeof *sum->underflow);
    if (!sum->underflow) {
        cluster_free(cl);
        free(log.ev);
        free(log.names);
        error_set(&e, ERR_NOMEM, "out of memory");
        return cli_fail(&e);
    }
    struct gpt_config *c = &o->shape;
    {
        /* matmul FLOPs as the model counts them (gpt_flops), and the calculator's
         * prediction of the activation peak */
        double fwd, layer;
        double N = (double)o->batch * c->seq, T = c->seq;
        double attn = 4.0 * o->batch * c->heads * T * T * (c->d / c->heads);
        layer = 2.0 * N * (4.0 * c->d * c->d + 3.0 * c->d * c->ffn) + attn;
        fwd = c->layers * layer + 2.0 * N * c->vocab * c->d;
        int seg = gpt_ckpt_segment(&o->ckpt, c->layers);
        sum->recompute = seg                                  ? c->layers * layer
                         : o->ckpt.kind == GPT_CKPT_SELECTIVE ? c->layers * attn / 2
                                                              : 0;
        sum->flops = 3 * fwd + sum->recompute;
        sum->overhead = 100.0 * sum->recompute / (3 * fwd);
        struct activ_policy pol;
        struct activ_total tot;
        struct activ_config ac = {o->batch, c->seq, 1, false, o->precision == FP_FP32 ? 4 : 2};
        if (activ_parse_policy(o->ckpt.name[0] ? o->ckpt.name : "none", &pol, &e) == 0) {
            activ_total(&r.shape, &ac, &pol, c->layers, true, true, &tot);
            sum->predicted = tot.peak;
        }
    }
    if (!r.json) {
        char pc[32];
        printf("model %s: %s parameters, d_model %d, %d layers, %d heads, ffn %d, vocab %d, "
               "seq %d\n",
               r.shape.name, units_format_grouped(pc, sizeof pc, gpt_param_count(c)), c->d,
               c->layers, c->heads, c->ffn, c->vocab, c->seq);
        printf("precision %s, loss scale %s, checkpoint %s, batch %d x %d tokens, lr %g, "
               "one simulated %s GPU\n",
               fp_info(o->precision)->name,
               o->scaling == TRAIN_SCALE_DYNAMIC  ? "dynamic"
               : o->scaling == TRAIN_SCALE_STATIC ? "fixed"
                                                  : "none",
               o->ckpt.name[0] ? o->ckpt.name : "none", o->batch, c->seq, o->lr, cc.spec.name);
        fflush(stdout);
    }
    rc = cluster_run(cl, train_device, &job, &e);
    cluster_free(cl);
    if (r.trace) { /* a failed run's trace too: it shows where it stopped */
        struct error te = {0};
        int trc = log.lost ? error_set(&te, ERR_RUN,
                                       "%zu events did not fit in the buffer sized for the "
                                       "run; no trace written",
                                       log.lost)
                           : trace_write_chrome(r.trace, log.ev, log.n, 1, &te);
        free(log.ev);
        free(log.names);
        if (trc && !rc) {
            error_prefix(&te, "--trace");
            e = te;
            rc = trc;
        }
    }
    if (rc) {
        free(sum->underflow);
        return cli_fail(&e);
    }

    double gflops = sum->flops * (double)sum->steps / sum->seconds / 1e9;
    if (r.json) {
        json_t *m = json_object();
        json_object_set_new(m, "first_loss", num(sum->first_loss));
        json_object_set_new(m, "final_loss", num(sum->final_loss));
        json_object_set_new(m, "loss_floor", num(sum->floor));
        json_object_set_new(m, "skipped_steps", json_integer(sum->skipped));
        json_object_set_new(m, "tokens_per_s", num(sum->tokens_per_s));
        json_object_set_new(m, "steps", json_integer(sum->steps));
        json_object_set_new(m, "model", json_string(r.shape.name));
        json_object_set_new(m, "parameters", json_integer((json_int_t)gpt_param_count(c)));
        json_object_set_new(m, "precision", json_string(fp_info(o->precision)->key));
        json_object_set_new(m, "checkpoint", json_string(o->ckpt.name[0] ? o->ckpt.name : "none"));
        json_object_set_new(m, "overflow_steps", json_integer(sum->overflows));
        json_object_set_new(m, "spikes", json_integer(sum->spikes));
        json_object_set_new(m, "final_loss_scale", num(sum->last_scale));
        json_object_set_new(m, "max_grad_norm", num(sum->max_norm));
        json_object_set_new(m, "min_clip_coef", num(sum->min_coef));
        json_object_set_new(m, "max_underflow_frac", num(sum->max_underflow));
        json_t *ul = json_array();
        for (int l = 0; l <= sum->layers; l++)
            json_array_append_new(ul, json_integer((json_int_t)sum->underflow[l]));
        json_object_set_new(m, "underflow_by_layer", ul);
        json_object_set_new(m, "first_nonfinite",
                            sum->first_nonfinite[0] ? json_string(sum->first_nonfinite)
                                                    : json_null());
        json_object_set_new(m, "act_peak_bytes", json_integer((json_int_t)sum->act_peak));
        json_object_set_new(m, "act_predicted_bytes", num(sum->predicted));
        json_t *mem = json_object();
        for (int i = 0; i < MEM_CAT_COUNT; i++)
            json_object_set_new(mem, ledger_cat_name((enum ledger_cat)i),
                                json_integer((json_int_t)sum->mem[i]));
        json_object_set_new(mem, "total", json_integer((json_int_t)sum->mem_peak));
        json_object_set_new(m, "memory_peak_bytes", mem);
        json_object_set_new(m, "flops_per_step", num(sum->flops));
        json_object_set_new(m, "recompute_flops", num(sum->recompute));
        json_object_set_new(m, "recompute_overhead_pct", num(sum->overhead));
        json_object_set_new(m, "gflops", num(gflops));
        json_object_set_new(m, "seconds", num(sum->seconds));
        json_object_set_new(m, "simulated_seconds", num(sum->sim_seconds));
        json_t *top = json_object();
        json_object_set_new(top, "summary", m);
        print_json_obj(top);
    } else {
        printf("\nfinal loss %.4f (mean of the last %d steps), floor %.4f: %.4f nats above\n",
               sum->final_loss, sum->nlast, sum->floor, sum->final_loss - sum->floor);
        printf("skipped steps %ld (overflow %ld, spikes %ld), final loss scale %g\n", sum->skipped,
               sum->overflows, sum->spikes, (double)sum->last_scale);
        printf("activation memory: peak %s measured by the ledger, %s predicted by the "
               "calculator\n",
               units_format_bytes(a, sizeof a, (double)sum->act_peak, UNITS_BINARY),
               units_format_bytes(b, sizeof b, sum->predicted, UNITS_BINARY));
        printf("GPU memory peak %s (",
               units_format_bytes(a, sizeof a, (double)sum->mem_peak, UNITS_BINARY));
        /* the arena is reserved memory whole when allocated; live activations are inside it */
        for (int i = 0; i < MEM_CAT_COUNT; i++)
            if (sum->mem[i] && i != MEM_ACTIVATIONS && i != MEM_RESERVED)
                printf("%s%s %s", i ? ", " : "", ledger_cat_name((enum ledger_cat)i),
                       units_format_bytes(b, sizeof b, (double)sum->mem[i], UNITS_BINARY));
        printf(", activation arena %s holding at most %s of live activations)\n",
               units_format_bytes(a, sizeof a, (double)sum->mem[MEM_RESERVED], UNITS_BINARY),
               units_format_bytes(b, sizeof b, (double)sum->mem[MEM_ACTIVATIONS], UNITS_BINARY));
        if (o->precision != FP_FP32) {
            printf("gradient elements that underflowed to 0 over the run:");
            for (int l = 0; l < sum->layers; l++)
                printf(" layer %d: %llu,", l, (unsigned long long)sum->underflow[l]);
            printf(" embedding and norms: %llu", (unsigned long long)sum->underflow[sum->layers]);
            printf("\n");
        }
        printf("matmul FLOPs per step %.4g, recomputed %.4g (%.1f%% overhead)\n", sum->flops,
               sum->recompute, sum->overhead);
        printf("%.0f tokens/s, %.2f GFLOP/s, %s wall; %s simulated on %s\n", sum->tokens_per_s,
               gflops, units_format_seconds(a, sizeof a, sum->seconds),
               units_format_seconds(b, sizeof b, sum->sim_seconds), cc.spec.name);
    }
    free(sum->underflow);
    return 0;
}

const struct command cmd_train = {
    "train",
    "real mixed-precision training of the tiny GPT (loss scaling, clipping, checkpointing)",
    "usage: scalelab train [OPTIONS]\n"
    "\n"
    "Trains the tiny GPT (src/model) on a synthetic order-2 Markov source whose entropy rate is\n"
    "the loss floor, with real fp16/bf16 rounding, loss scaling (PyTorch GradScaler semantics),\n"
    "clipping (clip_grad_norm_), NaN diagnosis and gradient checkpointing.\n"
    "\n"
    "  --model NAME|FILE     a swiglu preset or INI file (default tiny)\n"
    "  --steps K             steps to run (default 300)\n"
    "  --batch B             sequences per step (default 16)\n"
    "  --seed S              seeds the weights and the data (default 1); same seed, same run\n"
    "  --lr LR               AdamW learning rate (default 0.003)\n"
    "  --betas B1,B2         (default 0.9,0.999)   --wd WD (default 0.01)   --eps E (1e-8)\n"
    "  --precision P         fp32, bf16 or fp16 (default fp32)\n"
    "  --loss-scale S        dynamic (PyTorch's GradScaler: halves and skips the step on an\n"
    "                        inf/NaN gradient, doubles after --growth-interval clean steps),\n"
    "                        a fixed VALUE (Megatron's constant scaler: never changes, still\n"
    "                        skips inf/NaN steps) or none (no scaler, as plain PyTorch: an\n"
    "                        inf/NaN step is applied, the weights turn NaN, and the run stops\n"
    "                        with exit 1 at the first NaN loss, naming the step and tensor\n"
    "                        that caused it). Default: dynamic for fp16, none otherwise\n"
    "  --init-scale S        the dynamic scale's start (default 65536)\n"
    "  --growth-interval N   clean steps before the scale doubles (default 2000)\n"
    "  --hysteresis N        overflowing steps before it halves (default 1, PyTorch's)\n"
    "  --clip MAX            clip the global gradient norm to MAX\n"
    "  --spike-z Z           a loss more than Z standard deviations above the mean of the\n"
    "                        last N losses (itself included, as llm.c does) is a spike\n"
    "                        (default 5); --spike-window N (default 64; z <= sqrt(N - 1))\n"
    "  --skip-spikes         skip the update of a spiking step\n"
    "  --inject WHAT@STEP    nan@STEP (a NaN in the middle layer's attention scores), inf@STEP\n"
    "                        (an inf in the last layer's MLP gradient), spike@STEP[:FACTOR]\n"
    "                        (a bad batch: the logits times FACTOR, default 10); repeatable\n"
    "  --checkpoint POLICY   none, full, every:K, sqrt or selective (default none)\n"
    "  --json                one JSON object per step, then {\"summary\": {...}}\n"
    "  --summary             with --json, only the summary object (one JSON document)\n"
    "  --cluster NAME|FILE   the simulated GPU's preset (default h100-80gb): its memory and\n"
    "                        peak FLOP/s set the ledger's capacity and the simulated time\n"
    "  --trace FILE          Chrome trace-event JSON of the run (Perfetto): compute per\n"
    "                        layer, memory (total and live activations), steps, non-finite\n"
    "                        values, in simulated time. Complete: its events are counted from\n"
    "                        the run's shape before it starts; a run of more than 2,000,000\n"
    "                        events is refused (exit 2): tiny traces 34,000 to 47,000 steps\n"
    "  --dump DIR            write model.ini, params.f32, tokens.i32, targets.i32, loss.txt and\n"
    "                        grads.f32 of step 1 (little-endian; gradients of the mean loss,\n"
    "                        unscaled and before clipping) to check against PyTorch\n"
    "\n"
    "Memory: every buffer comes from the simulated GPU's ledger before the first step (the\n"
    "activation arena as reserved memory, the CPU emulation's fp32 workspace as workspace), so\n"
    "a run that does not fit fails at once, out of memory (exit 1); live activations move in\n"
    "and out of the arena, and their peak is the calculator's figure.\n"
    "\n"
    "The final loss is the mean of the last 10 steps' losses. Each step's loss is measured on\n"
    "a fresh batch before the update, so it is a held-out estimate. At the defaults, tiny ends\n"
    "within 0.1 nats of the floor (0.05-0.08 for seeds 1-5 on the development host).\n",
    train_main,
};
