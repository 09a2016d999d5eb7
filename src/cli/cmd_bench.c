/* scalelab bench: measures the limits (memcpy bandwidth, single-thread sgemm) once, runs the
 * benchmark groups (cli/bench.h) and prints each figure beside its limit, as text or JSON. */
#include "config.h"
#include "cli/bench.h"

#include <cblas.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "base/error.h"
#include "base/hostmem.h"
#include "base/json.h"
#include "cli/command.h"
#include "cli/opts.h"
#include "model/blasbuf.h"
#include "model/gpt.h"
#include "par/trainer.h"

struct row {
    char group[32], what[96], unit[16];
    double value;
    enum bench_limit limit;
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

double bench_time(void (*fn)(void *), void *arg, double min_seconds)
{
    double best = 1e300, start = clock_now();
    for (int i = 0; i < 2 || clock_now() - start < min_seconds; i++) {
        double t0 = clock_now();
        fn(arg);
        double t = clock_now() - t0;
        if (t < best)
            best = t;
    }
    return best;
}

double bench_cpu_time(void (*fn)(void *), void *arg, double min_seconds)
{
    double best = 1e300, start = clock_now();
    for (int i = 0; i < 2 || clock_now() - start < min_seconds; i++) {
        double t0 = clock_thread_cpu();
        fn(arg);
        double t = clock_thread_cpu() - t0;
        if (t < best)
            best = t;
    }
    return best;
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

void bench_report(struct bench *b, const char *group, const char *what, double value,
                  const char *unit, enum bench_limit limit)
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
    row->value = value;
    row->limit = limit;
}

static double row_ratio(const struct bench *b, const struct row *row)
{
    double lim = row->limit == BENCH_COPY    ? b->copy_GBps
                 : row->limit == BENCH_SGEMM ? b->sgemm_GFLOPs
                                             : 0;
    return lim > 0 ? row->value / lim : 0;
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

static void measure_limits(struct bench *b)
{
    size_t n = b->quick ? (16u << 20) : (256u << 20);
    struct copy_arg c = {bench_alloc(n), bench_alloc(n), n};
    b->copy_GBps = 2.0 * (double)n / bench_time(do_copy, &c, b->quick ? 0.05 : 0.5) / 1e9;
    bench_free(c.dst);
    bench_free(c.src);

    int m = b->quick ? 256 : 1024, claimed = 0;
    struct error e = {0};
    if (blasbuf_claim(1, &claimed, NULL, &e)) { /* the sgemm's OpenBLAS buffer, first */
        hostmem_refuse((double)blasbuf_bytes(), hostmem_room(), "bench: OpenBLAS's buffer", &e);
        fprintf(stderr, "scalelab: %s\n", e.msg);
        exit(1);
    }
    size_t bytes = (size_t)m * m * sizeof(float);
    struct sgemm_arg s = {bench_alloc(bytes), bench_alloc(bytes), bench_alloc(bytes), m};
    for (size_t i = 0; i < (size_t)m * m; i++)
        s.a[i] = (float)(i % 7) * 0.1f, s.b[i] = (float)(i % 5) * 0.1f;
    double t = bench_cpu_time(do_sgemm, &s, b->quick ? 0.05 : 0.5);
    b->sgemm_GFLOPs = 2.0 * m * (double)m * m / t / 1e9;
    bench_free(s.a);
    bench_free(s.b);
    bench_free(s.c);
    blasbuf_release(claimed);
}

/* ------------------------------------------------------------------ the command */

struct bench_args {
    const char *only;
    bool quick, json, list;
};

static const struct opt_entry options[] = {
    OPT_FLAG("quick", struct bench_args, quick,
             "small sizes and few repeats (a smoke test; the figures are rough)"),
    OPT_WITH("only", "NAME", opts_str, struct bench_args, only, "run one group (see --list)"),
    OPT_FLAG("list", struct bench_args, list,
             "list the groups (with --json: {\"groups\": [{\"name\", \"what\"}...]})"),
    OPT_FLAG("json", struct bench_args, json,
             "one JSON document: {\"copy_GBps\", \"sgemm_GFLOPs\", \"results\": [...]}"),
    OPT_END,
};

const struct opts_spec opts_bench = {"bench", options, NULL, NULL};

static void print_text(const struct bench *b, const struct report *r)
{
    printf("limits measured in this run:\n");
    printf("  copy bandwidth   %8.2f GB/s  (memcpy, bytes read + written)\n", b->copy_GBps);
    printf("  sgemm rate       %8.2f GFLOP/s  (OpenBLAS, one thread, its CPU time)\n\n",
           b->sgemm_GFLOPs);
    printf("%-12s %-44s %12s %-8s %s\n", "group", "measure", "value", "unit", "ratio to limit");
    for (size_t i = 0; i < r->n; i++) {
        const struct row *row = &r->rows[i];
        printf("%-12s %-44s %12.3f %-8s", row->group, row->what, row->value, row->unit);
        if (row->limit != BENCH_NONE)
            printf(" %.2f of %s", row_ratio(b, row), row->limit == BENCH_COPY ? "copy" : "sgemm");
        printf("\n");
    }
}

static void print_json(const struct bench *b, const struct report *r)
{
    json_t *rows = json_array();
    for (size_t i = 0; i < r->n; i++) {
        const struct row *row = &r->rows[i];
        json_t *o = json_pack("{s:s, s:s, s:f, s:s}", "group", row->group, "measure", row->what,
                              "value", row->value, "unit", row->unit);
        if (row->limit != BENCH_NONE) {
            json_object_set_new(o, "limit",
                                json_string(row->limit == BENCH_COPY ? "copy" : "sgemm"));
            json_object_set_new(o, "ratio", json_num(row_ratio(b, row)));
        }
        json_array_append_new(rows, o);
    }
    json_t *doc = json_pack("{s:f, s:f, s:o}", "copy_GBps", b->copy_GBps, "sgemm_GFLOPs",
                            b->sgemm_GFLOPs, "results", rows);
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
    measure_limits(&b);
    int status = 0;
    for (int i = 0; bench_cases[i] && status == 0; i++)
        if (!a.only || !strcmp(a.only, bench_cases[i]->name))
            status = bench_cases[i]->run(&b);
    if (status == 0)
        a.json ? print_json(&b, &report) : print_text(&b, &report);
    free(report.rows);
    return status ? 1 : 0;
}

const struct command cmd_bench = {
    "bench",
    "measure scalelab's speed against this machine's copy bandwidth and sgemm rate",
    "usage: scalelab bench [--quick] [--only NAME] [--list] [--json]\n"
    "\n"
    "Runs the project's benchmarks. Each figure is shown beside a limit measured in the same\n"
    "run: the copy bandwidth (memcpy, bytes read + written per second) for memory-bound work,\n"
    "the single-thread sgemm rate for compute-bound work. Single-threaded work (the sgemm rate,\n"
    "a training step) is timed by its thread's CPU time, so other processes on a shared\n"
    "machine do not count against it.\n",
    bench_main,
};
