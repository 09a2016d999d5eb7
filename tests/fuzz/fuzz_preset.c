/* libFuzzer targets for the preset parser (calc/preset.c): any bytes must give a model shape or
 * a cluster, or a "FILE:LINE: ..." error, never a crash, a leak or undefined behaviour. What
 * parses is then used the way the commands use it, and every figure must come out finite and
 * not negative (a shape the parser lets through must not give a silent wrong answer):
 *   FUZZ_MODEL:   memory per GPU for several layouts and checkpoint policies, and a small plan;
 *   FUZZ_CLUSTER: the α-β time of every op and algorithm at a few sizes, and a small plan.
 * Build and run: make fuzz-preset (see tests/fuzz/README.md). */
#include "config.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "calc/activ.h"
#include "calc/memory.h"
#include "calc/params.h"
#include "calc/plan.h"
#include "calc/preset.h"
#include "comm/cost.h"
#include "sim/spec.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void sane(double v)
{
    if (!(isfinite(v) && v >= 0))
        abort();
}

static void plan_small(const struct model_shape *m, const struct cluster_spec *c, int gpus)
{
    struct plan_config pc = {.model = m,
                             .cluster = c,
                             .gpus = gpus,
                             .global_batch = 8,
                             .seq = m->seq < 4096 ? m->seq : 4096,
                             .precision = FP_BF16,
                             .optimizer = OPT_ADAMW,
                             .efficiency = 0.5,
                             .capacity = c->hbm_bytes};
    struct plan_result r;
    struct error e;
    if (plan_run(&pc, &r, &e) == 0) {
        for (size_t i = 0; i < r.n_kept; i++) {
            sane(r.kept[i].per_gpu_bytes);
            sane(r.kept[i].step_time_s);
            sane(r.kept[i].mfu);
        }
        plan_free(&r);
    }
}

#ifdef FUZZ_MODEL
static void use_model(const struct model_shape *m)
{
    struct cluster_spec c;
    spec_default(&c);
    sane(params_total(m));
    static const struct ckpt_policy pols[] = {
        {CKPT_NONE, 0}, {CKPT_FULL, 0}, {CKPT_SELECTIVE, 0}, {CKPT_EVERY, 2}, {CKPT_SQRT, 0}};
    static const int layouts[][3] = {{1, 1, 1}, {2, 2, 2}, {1, 8, 1}, {1, 1, 4}};
    for (size_t p = 0; p < sizeof pols / sizeof pols[0]; p++)
        for (size_t l = 0; l < sizeof layouts / sizeof layouts[0]; l++) {
            struct memory_config mc = {.model = m,
                                       .precision = FP_FP16,
                                       .optimizer = OPT_ADAMW,
                                       .dp = layouts[l][0],
                                       .tp = layouts[l][1],
                                       .pp = layouts[l][2],
                                       .zero = (int)(p % 4),
                                       .micro_batch = 1,
                                       .seq = m->seq,
                                       .micro_batches = 4,
                                       .schedule = SCHED_1F1B,
                                       .sp = l == 2,
                                       .ckpt = pols[p],
                                       .capacity = c.hbm_bytes};
            struct memory_result r;
            struct error e;
            if (memory_compute(&mc, &r, &e) == 0) {
                sane(r.total);
                sane(r.activations);
                sane(r.params_gpu);
            } else if (e.code != ERR_INVAL) {
                abort();
            }
        }
    if (m->seq <= 1 << 16)
        plan_small(m, &c, 8);
}
#endif

#ifdef FUZZ_CLUSTER
static void use_cluster(const struct cluster_spec *c)
{
    long long total = (long long)c->gpus_per_node * c->nodes;
    int sizes[] = {1, 2, 3, 8, 64, 1024};
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
        int n = sizes[k] < total ? sizes[k] : (int)total;
        struct cost_net net;
        preset_cost_net(c, n, &net);
        for (int op = 0; op < COST_OP_COUNT; op++)
            for (int a = 0; a < COST_ALGO_COUNT; a++) {
                if (!cost_supported(op, a, n, NULL))
                    continue;
                for (double bytes = 4; bytes < 1e13; bytes *= 1000) {
                    struct cost_result r;
                    struct error e;
                    if (cost_collective(op, a, &net, bytes, &r, &e) == 0) {
                        sane(r.time_s);
                        sane(r.bytes_total);
                    }
                }
            }
    }
    struct model_shape tiny = {.name = "tiny",
                               .layers = 4,
                               .d_model = 64,
                               .heads = 4,
                               .kv_heads = 4,
                               .ffn = 172,
                               .vocab = 64,
                               .seq = 64,
                               .ffn_kind = FFN_SWIGLU,
                               .tied = true};
    plan_small(&tiny, c, total < 16 ? (int)total : 16);
}
#endif

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct error e;
    char *text = malloc(size + 1);
    if (!text)
        return 0;
    memcpy(text, data, size);
    text[size] = '\0';
#ifdef FUZZ_MODEL
    struct model_shape m;
    if (preset_parse_model(text, "fuzz.ini", &m, &e) == 0)
        use_model(&m);
#else
    struct cluster_spec c;
    if (preset_parse_cluster(text, "fuzz.ini", &c, &e) == 0)
        use_cluster(&c);
#endif
    else if (strncmp(e.msg, "fuzz.ini:", 9) != 0 || e.code != ERR_INVAL) {
        fprintf(stderr, "refused without FILE:LINE: %s\n", e.msg);
        abort(); /* every refusal names the file and the line */
    }
    free(text);
    return 0;
}
