/* scalelab pipeline: a pipeline schedule (calc/sched.h) as a text Gantt chart, with its bubble
 * under both definitions and the micro-batches each stage holds. */
#include "config.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "base/error.h"
#include "base/json.h"
#include "calc/sched.h"
#include "cli/calcargs.h"
#include "cli/command.h"
#include "cli/opts.h"

struct pipeline_args {
    int p, m, v; /* stages, micro-batches, chunks (0: the schedule's default) */
    enum calc_schedule kind;
    bool json;
};

static int parse_schedule(const struct opt_entry *o, const char *arg, void *field, struct error *e)
{
    int rc = sched_parse(arg, field, e);
    if (rc < 0)
        error_prefix(e, "--%s", o->opt.name);
    return rc;
}

static const struct opt_entry options[] = {
    OPT_INT("stages", "P", struct pipeline_args, p, 1, SCHED_MAX_STAGES,
            "pipeline stages, 1 to 64 (default 4)"),
    OPT_INT("micro-batches", "M", struct pipeline_args, m, 1, SCHED_MAX_MICRO,
            "micro-batches per step, 1 to 1024 (default 8)"),
    OPT_WITH("schedule", "S", parse_schedule, struct pipeline_args, kind,
             "gpipe, 1f1b (default), interleaved (Megatron-LM: M a multiple of P), zb-h1 or\n"
             "zb-h2 (Qi et al. 2024: each backward split into B and W, the W filling the\n"
             "bubble; zb-h2 holds up to 2P micro-batches to fill all of it) or zbv (two\n"
             "chunks a stage in a V, B and W apart, at 1F1B's memory)"),
    OPT_INT("chunks", "V", struct pipeline_args, v, 1, SCHED_MAX_CHUNKS,
            "model chunks per stage for interleaved, 2 to 16 (default 2); zbv's are 2"),
    OPT_FLAG("json", struct pipeline_args, json,
             "{\"schedule\", \"stages\", \"micro_batches\", \"chunks\",\n"
             "\"bubble_over_ideal\", \"bubble_over_wall\", \"peak_in_flight\": [...],\n"
             "\"ops\": [[{\"kind\", \"micro\", \"chunk\", \"start\", \"duration\"}...]...]}"),
    OPT_END,
};

const struct opts_spec opts_pipeline = {"pipeline", options, NULL, NULL};

/* "F12" or "F12b" (chunk b = 1): the label of an operation. */
static int label(char *buf, size_t n, const struct sched_op *op, int v)
{
    if (v > 1)
        return snprintf(buf, n, "%c%d%c", sched_op_info(op->kind)->letter, op->micro,
                        'a' + op->chunk);
    return snprintf(buf, n, "%c%d", sched_op_info(op->kind)->letter, op->micro);
}

/* The width to draw in: the terminal's, else $COLUMNS, else 80. */
static int text_width(void)
{
    struct winsize ws;
    if (isatty(STDOUT_FILENO) && ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0)
        return ws.ws_col;
    const char *env = getenv("COLUMNS");
    long c = env ? strtol(env, NULL, 10) : 0;
    return c >= 20 && c <= 10000 ? (int)c : 80;
}

/* Stage st's cells for slots [t0, t1), w characters each, into row (w (t1 - t0) + 1 bytes). */
static void render_row(const struct sched *s, int st, int w, int t0, int t1, char *row)
{
    int n = (t1 - t0) * w;
    memset(row, '.', (size_t)n);
    row[n] = '\0';
    char buf[32];
    for (int i = 0; i < s->count[st]; i++) {
        const struct sched_op *op = &s->ops[st][i];
        if (op->start >= t1 || op->start + op->duration <= t0)
            continue;
        int len = label(buf, sizeof buf, op, s->v);
        for (int k = 0; k < w * op->duration; k++) {
            int col = (op->start - t0) * w + k;
            if (col >= 0 && col < n)
                row[col] = k < len                  ? buf[k]
                           : op->kind == SCHED_OP_F ? ' '
                           : op->kind == SCHED_OP_B ? '-'
                                                    : '=';
        }
    }
}

/* Slots [t0, t1): the slot numbers every 10 slots, then one row per stage. */
static void print_band(const struct sched *s, int w, int t0, int t1, char *row)
{
    int n = (t1 - t0) * w;
    memset(row, ' ', (size_t)n);
    row[n] = '\0';
    for (int t = (t0 + 9) / 10 * 10; t < t1; t += 10) {
        char num[16];
        int len = snprintf(num, sizeof num, "%d", t), col = (t - t0) * w;
        if (col + len <= n)
            memcpy(row + col, num, (size_t)len);
    }
    while (n > 0 && row[n - 1] == ' ')
        row[--n] = '\0';
    printf("%-9s%s\n", "slot", row);
    for (int st = 0; st < s->p; st++) {
        render_row(s, st, w, t0, t1, row);
        printf("stage %-3d%s\n", st, row);
    }
}

/* The chart, in bands of slots that fit the width (a terminal's, or 80 columns); a chart of
 * more than PIPELINE_BANDS bands shows its first and last bands only (--json has every
 * operation), so the text stays proportionate to the screen, not to the schedule. */
#define PIPELINE_BANDS 6

static void print_text(const struct sched *s)
{
    int p = s->p, m = s->m, v = s->v;
    char buf[32];
    /* cell width: the longest label, so every slot lines up */
    struct sched_op widest = {SCHED_OP_F, m - 1, v - 1, 0, 0};
    int w = label(buf, sizeof buf, &widest, v);
    printf("pipeline: %s, %d stage%s, %d micro-batch%s", sched_name(s->kind), p, p > 1 ? "s" : "",
           m, m > 1 ? "es" : "");
    if (v > 1)
        printf(", %d model chunks per stage (a, b, ...)", v);
    if (sched_splits(s->kind))
        printf("\ntime: one slot = one forward of a %s; a backward takes %d slots, its B "
               "(the input's gradient) %d and its W (the weights') %d\n\n",
               v > 1 ? "chunk" : "stage", SCHED_TB / SCHED_TF, sched_op_slots(s->kind, SCHED_OP_B),
               SCHED_TW);
    else
        printf("\ntime: one slot = one forward of a %s; a backward takes %d slots\n\n",
               v > 1 ? "chunk" : "stage", SCHED_TB / SCHED_TF);
    int per = (text_width() - 9) / w; /* slots per band */
    if (per < 4)
        per = 4;
    int bands = (s->makespan + per - 1) / per;
    char *row = malloc((size_t)per * (size_t)w + 1);
    if (!row)
        return;
    for (int b = 0; b < bands; b++) {
        if (bands > PIPELINE_BANDS && b == PIPELINE_BANDS - 1 && b < bands - 1) {
            printf("... slots %d to %d not shown (%d bands of the chart): --json lists every "
                   "operation\n\n",
                   b * per, (bands - 1) * per - 1, bands - PIPELINE_BANDS);
            b = bands - 1;
        }
        int t0 = b * per, t1 = t0 + per < s->makespan ? t0 + per : s->makespan;
        print_band(s, w, t0, t1, row);
        if (b + 1 < bands)
            printf("\n");
    }
    free(row);
    if (v > 1 && sched_splits(s->kind))
        printf(
            "\nlegend: Fkc forward of micro-batch k on model chunk c (a: virtual stage s, b: "
            "2p-1-s),\n        Bkc its input's gradient, Wkc its weights' gradients, . idle\n\n");
    else if (v > 1)
        printf("\nlegend: Fkc forward of micro-batch k on model chunk c, Bkc--- its backward, "
               ". idle\n\n");
    else if (sched_splits(s->kind))
        printf("\nlegend: Fk forward of micro-batch k, Bk its input's gradient, Wk its weights' "
               "gradients, . idle\n\n");
    else
        printf("\nlegend: Fk forward of micro-batch k, Bk-- its backward, . idle\n\n");
    double fi = sched_formula_over_ideal(s->kind, p, m, v),
           fw = sched_formula_over_wall(s->kind, p, m, v);
    if (sched_splits(s->kind)) {         /* Qi et al. 2024, §3.1, with F = B = W = 1 slot */
        bool h2 = s->kind != SCHED_ZBH1; /* zb-h2's, and zbv's in a chunk's F, B and W */
        printf("bubble: %.1f%% of ideal compute time  (p-1)(F+B-%sW)/(%sm(F+B+W)) = %d/%d "
               "(1F1B's (p-1)(F+B+W): %d/%d)\n",
               100 * fi, h2 ? "2" : "", v > 1 ? "v" : "", h2 ? 0 : p - 1, 3 * v * m, 3 * (p - 1),
               3 * v * m);
        printf("        %.1f%% of wall time\n", 100 * fw);
    } else {
        printf("bubble: %.1f%% of ideal compute time  (p-1)/(%sm) = %d/%d\n", 100 * fi,
               v > 1 ? "v" : "", p - 1, v * m);
        printf("        %.1f%% of wall time           (p-1)/(%sm+p-1) = %d/%d\n", 100 * fw,
               v > 1 ? "v" : "", p - 1, v * m + p - 1);
    }
    printf("        measured on this timeline: %.1f%% and %.1f%% (%d idle of %d slots per stage)\n",
           100 * s->bubble_over_ideal, 100 * s->bubble_over_wall, s->makespan - (int)s->busy,
           s->makespan);
    if (s->span_idle != s->makespan - (int)s->busy) /* zb-h2's parallelogram */
        printf("        each stage idle %d slots between its first operation and its last (the "
               "paper's\n        bubble); the step's %d more are stage s's first s slots and "
               "the others' ends:\n        a synchronized optimizer step waits for them (the "
               "paper's post-validation, §4)\n",
               s->span_idle, s->makespan - (int)s->busy - s->span_idle);
    printf("\npeak micro-batches in flight per stage:");
    for (int st = 0; st < p; st++) {
        if (v > 1)
            printf(" %g", (double)s->peak_chunks[st] / v);
        else
            printf(" %d", s->peak_chunks[st]);
    }
    printf(
        "\n  (%s)\n",
        s->kind == SCHED_GPIPE  ? "GPipe keeps all m micro-batches until their "
                                  "backward: same bubble as 1F1B, more memory"
        : s->kind == SCHED_1F1B ? "1F1B holds at most p - s at stage s: same bubble as GPipe, less "
                                  "memory"
        : s->kind == SCHED_ZBH1 ? "between F and B, as 1F1B; stage s also holds s W sets between B "
                                  "and W"
        : s->kind == SCHED_ZBH2 ? "between F and B, 2(p - s) - 1; between F and W, up to 2p (the "
                                  "smaller W sets)"
        : s->kind == SCHED_ZBV  ? "chunks held / 2: 2p half-size chunks, 1F1B's stage 0 in memory"
                                : "chunks held / v: each chunk keeps 1/v of the stage's layers");
}

/* One JSON document, written as it goes: the operations (2 m v per stage, two million at the
 * largest) are printed one per line, never held as a JSON tree. */
static void print_json(const struct sched *s)
{
    json_t *peak = json_array(), *chunks = json_array();
    for (int st = 0; st < s->p; st++) {
        json_array_append_new(peak, json_num((double)s->peak_chunks[st] / s->v));
        json_array_append_new(chunks, json_integer(s->peak_chunks[st]));
    }
    json_t *doc = json_pack(
        "{s:s, s:i, s:i, s:i, s:f, s:f, s:f, s:f, s:o, s:o, s:i, s:i, s:{s:i, s:i, s:i}}",
        "schedule", sched_name(s->kind), "stages", s->p, "micro_batches", s->m, "chunks", s->v,
        "bubble_over_ideal", sched_formula_over_ideal(s->kind, s->p, s->m, s->v),
        "bubble_over_wall", sched_formula_over_wall(s->kind, s->p, s->m, s->v),
        "measured_bubble_over_ideal", s->bubble_over_ideal, "measured_bubble_over_wall",
        s->bubble_over_wall, "peak_in_flight", peak, "peak_chunks", chunks, "makespan_slots",
        s->makespan, "span_idle_slots", s->span_idle, "slots", "forward", SCHED_TF, "backward",
        sched_op_slots(s->kind, SCHED_OP_B), "weights", SCHED_TW);
    char *head = json_dumps(doc, JSON_INDENT(2) | JSON_COMPACT | JSON_REAL_PRECISION(JSON_EXACT));
    json_decref(doc);
    if (!head)
        return;
    size_t len = strlen(head);
    while (len > 0 && head[len - 1] != '}') /* the closing brace: "ops" goes before it */
        len--;
    while (len > 1 && (head[len - 2] == '\n' || head[len - 2] == ' '))
        len--;
    printf("%.*s,\n  \"ops\":[", (int)(len - 1), head);
    free(head);
    for (int st = 0; st < s->p; st++) {
        printf("%s\n    [", st ? "," : "");
        for (int i = 0; i < s->count[st]; i++) {
            const struct sched_op *op = &s->ops[st][i];
            printf("%s\n      {\"kind\":\"%c\",\"micro\":%d,\"chunk\":%d,\"start\":%d,"
                   "\"duration\":%d}",
                   i ? "," : "", sched_op_info(op->kind)->letter, op->micro, op->chunk, op->start,
                   op->duration);
        }
        printf("%s]", s->count[st] ? "\n    " : "");
    }
    printf("\n  ]\n}\n");
}

static int pipeline_main(int argc, char **argv)
{
    struct pipeline_args a = {.p = 4, .m = 8, .kind = SCHED_1F1B};
    int rc = opts_parse(&opts_pipeline, argc, argv, &a);
    if (rc)
        return rc;
    if (a.v == 0)
        a.v = sched_chunks(a.kind, 2);
    struct sched s;
    struct error e = {0};
    if (sched_build(a.kind, a.p, a.m, a.v, &s, &e) < 0)
        return opts_fail(&opts_pipeline, &e);
    a.json ? print_json(&s) : print_text(&s);
    sched_free(&s);
    return 0;
}

const struct command cmd_pipeline = {
    "pipeline",
    "a pipeline schedule (GPipe, 1F1B, interleaved, ZB-H1, ZB-H2, ZB-V) as a Gantt chart with "
    "its bubble",
    "usage: scalelab pipeline [--stages P] [--micro-batches M]\n"
    "                         [--schedule gpipe|1f1b|interleaved|zb-h1|zb-h2|zbv]\n"
    "                         [--chunks V]\n"
    "                         [--json]\n"
    "\n"
    "Builds the schedule as data (which stage runs which forward or backward when), times it\n"
    "(a forward takes one slot, a backward two) and prints one row per stage, the bubble over\n"
    "ideal compute time, (p-1)/(vm), and over wall time, (p-1)/(vm+p-1), and the micro-batches\n"
    "each stage holds at its peak. GPipe and 1F1B have the same bubble; 1F1B holds fewer.\n"
    "The chart is drawn in bands of slots that fit the terminal's width (80 columns, or\n"
    "$COLUMNS, when not on a terminal); past 6 bands, only the first and the last are shown.\n",
    pipeline_main,
};
