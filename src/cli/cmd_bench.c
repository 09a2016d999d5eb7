/* scalelab bench: measures the limits (memcpy bandwidth, single-thread sgemm) once, runs the
 * benchmark groups (cli/bench.h) and prints each figure beside its limit, as text or JSON. */
#include "config.h"
#include "cli/bench.h"

#include <cblas.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/cpu.h"
#include "base/error.h"
#include "base/hostmem.h"
#include "base/json.h"
#include "cli/command.h"
#include "cli/opts.h"
#include "model/blasbuf.h"
#include "model/gpt.h"
#include "par/trainer.h"

struct row {
    char group[32], what[96], unit[16], limit[32];
    struct bench_stat value, lim, ratio;
};

struct report {
    struct row *rows;
    size_t n, cap;
};

void *bench_alloc(size_t n)
{
    void *p = NULL;
    if (posix_memalign(&p, 64, n ? n : 1) != 0) {
        struct error e = {0};
        hostmem_refuse((double)n, hostmem_room(), "bench: a buffer it measures with", &e);
        fprintf(stderr, "scalelab: %s\n", e.msg);
        exit(1);
    }
    memset(p, 1, n);
    return p;
}

void bench_free(void *p)
{
    free(p);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

void bench_stat_of(const double *v, int n, struct bench_stat *out)
{
    double s[BENCH_MAX_REPEATS];
    n = n < BENCH_MAX_REPEATS ? n : BENCH_MAX_REPEATS;
    memcpy(s, v, (size_t)n * sizeof *s);
    qsort(s, (size_t)n, sizeof *s, cmp_double);
    out->n = n;
    out->min = n ? s[0] : 0;
    out->max = n ? s[n - 1] : 0;
    out->med = n == 0 ? 0 : n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
}

static void times(void (*fn)(void *), void *arg, double *out, int n, double (*clock)(void))
{
    fn(arg);
    for (int i = 0; i < n; i++) {
        double t0 = clock();
        fn(arg);
        out[i] = clock() - t0;
    }
}

void bench_times(void (*fn)(void *), void *arg, double *out, int n)
{
    times(fn, arg, out, n, clock_now);
}

void bench_cpu_times(void (*fn)(void *), void *arg, double *out, int n)
{
    times(fn, arg, out, n, clock_thread_cpu);
}

int bench_self(char *buf, size_t size)
{
    ssize_t len = readlink("/proc/self/exe", buf, size - 1);
    if (len > 0) /* readlink does not end the path: the check reads up to the end */
        buf[len] = '\0';
    if (len <= 0 || strchr(buf, '\'') != NULL) {
        fprintf(stderr, "scalelab: bench: cannot find this program's path (/proc/self/exe)\n");
        return 1;
    }
    return 0;
}

int bench_model(const char *name, struct gpt_config *out)
{
    struct error e = {0};
    if (train_shape(name, out, &e)) {
        fprintf(stderr, "scalelab: bench: %s\n", e.msg);
        return 1;
    }
    return 0;
}

void bench_report_vs(struct bench *b, const char *group, const char *what, const double *v, int n,
                     const char *unit, const char *limit, const double *lim, int nl)
{
    struct report *r = b->rows;
    if (r->n == r->cap) {
        size_t cap = r->cap ? 2 * r->cap : 32;
        struct row *rows = realloc(r->rows, cap * sizeof *rows);
        if (!rows)
            return;
        r->rows = rows, r->cap = cap;
    }
    struct row *row = &r->rows[r->n++];
    snprintf(row->group, sizeof row->group, "%s", group);
    snprintf(row->what, sizeof row->what, "%s", what);
    snprintf(row->unit, sizeof row->unit, "%s", unit);
    snprintf(row->limit, sizeof row->limit, "%s", limit);
    bench_stat_of(v, n, &row->value);
    bench_stat_of(lim, nl, &row->lim);
    double ratio[BENCH_MAX_REPEATS];
    n = n < BENCH_MAX_REPEATS ? n : BENCH_MAX_REPEATS;
    for (int i = 0; i < n; i++) {
        double l = nl == n ? lim[i] : row->lim.med;
        ratio[i] = l > 0 ? v[i] / l : 0;
    }
    bench_stat_of(ratio, n, &row->ratio);
}

void bench_report(struct bench *b, const char *group, const char *what, const double *v, int n,
                  const char *unit, enum bench_limit limit)
{
    double l = limit == BENCH_COPY ? b->copy_GBps : b->sgemm_GFLOPs;
    bench_report_vs(b, group, what, v, n, unit, limit == BENCH_COPY ? "copy" : "sgemm", &l, 1);
}

/* ------------------------------------------------------------------ the two limits */

struct copy_arg {
    void *dst, *src;
    size_t n;
};

static void do_copy(void *arg)
{
    struct copy_arg *c = arg;
    memcpy(c->dst, c->src, c->n);
}

struct sgemm_arg {
    float *a, *b, *c;
    int n;
};

static void do_sgemm(void *arg)
{
    struct sgemm_arg *s = arg;
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, s->n, s->n, s->n, 1.0f, s->a, s->n, s->b,
                s->n, 0.0f, s->c, s->n);
}

/* The sgemm operands, kept for bench_sgemm_sample. */
static struct sgemm_arg sgemm_ops;
static int sgemm_claimed; /* OpenBLAS buffers claimed for it (model/blasbuf.h) */

double bench_sgemm_sample(const struct bench *b)
{
    (void)b;
    struct sgemm_arg *s = &sgemm_ops;
    double t0 = clock_thread_cpu();
    do_sgemm(s);
    return 2.0 * s->n * (double)s->n * s->n / (clock_thread_cpu() - t0) / 1e9;
}

static void measure_limits(struct bench *b)
{
    int k = 3 * b->repeats; /* single calls: more of them than of the longer figures */
    double t[BENCH_MAX_REPEATS];
    size_t n = b->quick ? (16u << 20) : (256u << 20);
    struct copy_arg c = {bench_alloc(n), bench_alloc(n), n};
    bench_times(do_copy, &c, t, k);
    for (int i = 0; i < k; i++)
        t[i] = 2.0 * (double)n / t[i] / 1e9;
    bench_stat_of(t, k, &b->copy);
    b->copy_GBps = b->copy.med;
    bench_free(c.dst);
    bench_free(c.src);

    int m = b->quick ? 256 : 1024;
    struct error e = {0};
    if (blasbuf_claim(1, &sgemm_claimed, NULL, &e)) { /* the sgemm's OpenBLAS buffer, first */
        hostmem_refuse((double)blasbuf_bytes(), hostmem_room(), "bench: OpenBLAS's buffer", &e);
        fprintf(stderr, "scalelab: %s\n", e.msg);
        exit(1);
    }
    size_t bytes = (size_t)m * m * sizeof(float);
    struct sgemm_arg s = {bench_alloc(bytes), bench_alloc(bytes), bench_alloc(bytes), m};
    for (size_t i = 0; i < (size_t)m * m; i++)
        s.a[i] = (float)(i % 7) * 0.1f, s.b[i] = (float)(i % 5) * 0.1f;
    sgemm_ops = s;
    do_sgemm(&s); /* warm */
    for (int i = 0; i < k; i++)
        t[i] = bench_sgemm_sample(b);
    bench_stat_of(t, k, &b->sgemm);
    b->sgemm_GFLOPs = b->sgemm.med;
}

static void free_limits(void)
{
    bench_free(sgemm_ops.a);
    bench_free(sgemm_ops.b);
    bench_free(sgemm_ops.c);
    blasbuf_release(sgemm_claimed);
}

/* ------------------------------------------------------------------ the machine */

/* The CPU's model name (/proc/cpuinfo), "?" when unknown. */
static void cpu_name(char *buf, size_t size)
{
    snprintf(buf, size, "?");
    FILE *f = fopen("/proc/cpuinfo", "r");
    char line[256];
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, "model name", 10) && strchr(line, ':')) {
            snprintf(buf, size, "%s", strchr(line, ':') + 2);
            buf[strcspn(buf, "\n")] = '\0';
            break;
        }
    if (f)
        fclose(f);
}

/* The 1-minute load average (/proc/loadavg), -1 when unknown: beside the cores, whether
 * other work shared the machine. */
static double load_average(void)
{
    double l = -1;
    FILE *f = fopen("/proc/loadavg", "r");
    if (f && fscanf(f, "%lf", &l) != 1)
        l = -1;
    if (f)
        fclose(f);
    return l;
}

struct machine {
    char cpu[128];
    long cores;
    const char *path, *blas;
    double load_before, load_after;
};

static void machine_of(struct machine *m)
{
    cpu_name(m->cpu, sizeof m->cpu);
    m->cores = sysconf(_SC_NPROCESSORS_ONLN);
    m->path = cpu_path_name(cpu_path());
    m->blas = openblas_get_corename();
    m->load_before = load_average();
}

/* ------------------------------------------------------------------ the command */

struct bench_args {
    const char *only;
    bool quick, json, list;
    int repeats;
};

static const struct opt_entry options[] = {
    OPT_FLAG("quick", struct bench_args, quick,
             "small sizes and few repeats (a smoke test; the figures are rough)"),
    OPT_WITH("only", "NAME", opts_str, struct bench_args, only, "run one group (see --list)"),
    OPT_INT("repeat", "R", struct bench_args, repeats, 2, 20,
            "take each figure R times (default 5, --quick 3) and show the median with\n"
            "the smallest and largest; the limits are taken 3R times"),
    OPT_FLAG("list", struct bench_args, list,
             "list the groups (with --json: {\"groups\": [{\"name\", \"what\"}...]})"),
    OPT_FLAG("json", struct bench_args, json,
             "one JSON document: {\"machine\", \"copy_GBps\", \"sgemm_GFLOPs\",\n"
             "\"results\": [...]}"),
    OPT_END,
};

const struct opts_spec opts_bench = {"bench", options, NULL, NULL};

static void print_text(const struct bench *b, const struct machine *m, const struct report *r)
{
    printf("machine: %s, %ld core%s; kernels: %s; OpenBLAS: %s; load average %.2f before, "
           "%.2f after\n",
           m->cpu, m->cores, m->cores == 1 ? "" : "s", m->path, m->blas, m->load_before,
           m->load_after);
    printf("limits measured in this run (median [smallest .. largest] of %d):\n", b->copy.n);
    printf("  copy bandwidth   %8.2f GB/s  [%.2f .. %.2f]  (memcpy, bytes read + written)\n",
           b->copy.med, b->copy.min, b->copy.max);
    printf("  sgemm rate       %8.2f GFLOP/s  [%.2f .. %.2f]  (OpenBLAS, one thread, its CPU "
           "time)\n\n",
           b->sgemm.med, b->sgemm.min, b->sgemm.max);
    printf("%-10s %-50s %10s %-7s %-24s %-16s %10s  %s\n", "group", "measure", "median", "unit",
           "[smallest .. largest] n", "limit", "its median", "ratio [smallest .. largest]");
    for (size_t i = 0; i < r->n; i++) {
        const struct row *w = &r->rows[i];
        char spread[48];
        snprintf(spread, sizeof spread, "[%.4g .. %.4g] %d", w->value.min, w->value.max,
                 w->value.n);
        printf("%-10s %-50s %10.4g %-7s %-24s %-16s %10.4g  %.3g [%.3g .. %.3g]\n", w->group,
               w->what, w->value.med, w->unit, spread, w->limit, w->lim.med, w->ratio.med,
               w->ratio.min, w->ratio.max);
    }
}

static json_t *stat_json(const struct bench_stat *s)
{
    return json_pack("{s:o, s:o, s:o, s:i}", "min", json_num(s->min), "median", json_num(s->med),
                     "max", json_num(s->max), "n", s->n);
}

static void print_json(const struct bench *b, const struct machine *m, const struct report *r)
{
    json_t *rows = json_array();
    for (size_t i = 0; i < r->n; i++) {
        const struct row *w = &r->rows[i];
        json_t *o = json_pack(
            "{s:s, s:s, s:o, s:s, s:o, s:o, s:i, s:s, s:o, s:o, s:o, s:o}", "group", w->group,
            "measure", w->what, "value", json_num(w->value.med), "unit", w->unit, "min",
            json_num(w->value.min), "max", json_num(w->value.max), "repeats", w->value.n, "limit",
            w->limit, "limit_value", json_num(w->lim.med), "ratio", json_num(w->ratio.med),
            "ratio_min", json_num(w->ratio.min), "ratio_max", json_num(w->ratio.max));
        json_object_set_new(o, "limit_min", json_num(w->lim.min));
        json_object_set_new(o, "limit_max", json_num(w->lim.max));
        json_array_append_new(rows, o);
    }
    json_t *mach = json_pack("{s:s, s:i, s:s, s:s, s:o, s:o}", "cpu", m->cpu, "cores",
                             (int)m->cores, "kernels", m->path, "openblas", m->blas, "load_before",
                             json_num(m->load_before), "load_after", json_num(m->load_after));
    json_t *doc =
        json_pack("{s:o, s:o, s:o, s:o, s:o, s:o}", "machine", mach, "copy_GBps",
                  json_num(b->copy_GBps), "copy", stat_json(&b->copy), "sgemm_GFLOPs",
                  json_num(b->sgemm_GFLOPs), "sgemm", stat_json(&b->sgemm), "results", rows);
    json_write(stdout, doc, JSON_FIGURES);
}

/* --list: the groups, as text or JSON. */
static void print_list(bool json)
{
    json_t *groups = json ? json_array() : NULL;
    for (int i = 0; bench_cases[i]; i++) {
        if (groups)
            json_array_append_new(groups, json_pack("{s:s, s:s}", "name", bench_cases[i]->name,
                                                    "what", bench_cases[i]->what));
        else
            printf("%-12s %s\n", bench_cases[i]->name, bench_cases[i]->what);
    }
    if (groups)
        json_write(stdout, json_pack("{s:o}", "groups", groups), JSON_EXACT);
}

static int bench_main(int argc, char **argv)
{
    struct bench_args a = {0};
    int rc = opts_parse(&opts_bench, argc, argv, &a);
    if (rc)
        return rc;
    if (a.list && (a.only || a.quick))
        return cli_usage("bench", "--list runs nothing: no --%s with it",
                         a.only ? "only" : "quick");
    if (a.list) {
        print_list(a.json);
        return 0;
    }
    bool known = a.only == NULL;
    for (int i = 0; bench_cases[i]; i++)
        known |= a.only && !strcmp(a.only, bench_cases[i]->name);
    if (!known)
        return cli_usage("bench", "no benchmark named '%s' (see 'scalelab bench --list')", a.only);

    struct report report = {0};
    struct bench b = {.rows = &report, .quick = a.quick};
    b.repeats = a.repeats ? a.repeats : a.quick ? 3 : 5;
    struct machine m;
    machine_of(&m);
    measure_limits(&b);
    int status = 0;
    for (int i = 0; bench_cases[i] && status == 0; i++)
        if (!a.only || !strcmp(a.only, bench_cases[i]->name))
            status = bench_cases[i]->run(&b);
    m.load_after = load_average();
    free_limits();
    if (status == 0)
        a.json ? print_json(&b, &m, &report) : print_text(&b, &m, &report);
    free(report.rows);
    return status ? 1 : 0;
}

const struct command cmd_bench = {
    "bench",
    "measure scalelab's speed against this machine's copy bandwidth and sgemm rate",
    "usage: scalelab bench [--quick] [--only NAME] [--repeat R] [--list] [--json]\n"
    "\n"
    "Runs the project's benchmarks. Each figure is shown beside a limit measured in the same\n"
    "run, as a ratio: the copy bandwidth (memcpy, bytes read + written per second) for\n"
    "memory-bound work, the single-thread sgemm rate for compute-bound work, or a limit of the\n"
    "line's own (one GPU's rate and the speed-up the measured serial fraction allows, the MPI\n"
    "library's MPI_Allreduce, the collective's own time and buffers). Every figure is taken\n"
    "several times and shown as the median with the smallest and largest sample, so a sample\n"
    "that something else on the machine disturbed shows as a wide spread; the header names\n"
    "the CPU, the vector code the kernels ran (SCALELAB_CPU=avx2 or portable takes a narrower\n"
    "one), OpenBLAS's kernels (OPENBLAS_CORETYPE) and the load average before and after.\n"
    "Single-threaded work (the sgemm rate, a training step) is timed by its thread's CPU time,\n"
    "so other processes on a shared machine do not count against it.\n",
    bench_main,
};
