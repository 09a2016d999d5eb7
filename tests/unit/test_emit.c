/* Unit tests of calc/framework (what DeepSpeed, Megatron-LM and PyTorch FSDP run for a layout),
 * ZeRO-3 units of several layers (calc/memory), and the exports of cli/emit where the command
 * line cannot reach yet: Megatron-LM's interleaved schedule. tests/cli/emit.sh checks the
 * exports against the frameworks' rules end to end. */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "calc/framework.h"
#include "calc/memory.h"
#include "calc/params.h"
#include "calc/preset.h"
#include "cli/emit.h"
#include "harness.h"
#include "sim/spec.h"

static struct model_shape model(const char *name)
{
    struct model_shape m;
    struct error e = {0};
    ck_assert_msg(preset_load_model(name, &m, &e) == 0, "%s", e.msg);
    return m;
}

static struct memory_config layout(const struct model_shape *m, int dp, int tp, int pp, int zero,
                                   enum fp_format prec, bool grad_fp32)
{
    return (struct memory_config){.model = m,
                                  .precision = prec,
                                  .optimizer = OPT_ADAMW,
                                  .grad_fp32 = grad_fp32,
                                  .dp = dp,
                                  .tp = tp,
                                  .pp = pp,
                                  .zero = zero,
                                  .micro_batch = 1,
                                  .seq = m->seq,
                                  .micro_batches = 4,
                                  .schedule = SCHED_1F1B,
                                  .ckpt = {CKPT_NONE, 0},
                                  .capacity = 1e15};
}

/* Each rule of calc/framework.h, one row each: the layout asked, then what runs or the
 * refusal's words. */
START_TEST(framework_rules)
{
    struct model_shape m = model("synthetic-7b");
    const struct {
        enum framework f;
        int dp, tp, pp, zero;
        enum fp_format prec;
        bool grad_fp32;
        enum ckpt_kind ckpt;
        int every;
        const char *refused; /* NULL: runs */
        int zero_run;
        bool fp32_run, changed;
        enum ckpt_kind ckpt_run;
        int unit_layers;
    } rows[] = {
        /* DeepSpeed: pipe/engine.py, engine.py, bf16_optimizer.py */
        {FRAMEWORK_DEEPSPEED, 4, 1, 2, 2, FP_BF16, false, CKPT_NONE, 0,
         "ZeRO-2 and ZeRO-3 are incompatible with pipeline parallelism", 0, false, false, CKPT_NONE,
         0},
        {FRAMEWORK_DEEPSPEED, 4, 1, 2, 3, FP_FP32, false, CKPT_NONE, 0,
         "ZeRO-2 and ZeRO-3 are incompatible with pipeline parallelism", 0, false, false, CKPT_NONE,
         0},
        {FRAMEWORK_DEEPSPEED, 8, 1, 1, 0, FP_BF16, true, CKPT_NONE, 0,
         "unsupported mix of model_dtype and grad_accum_dtype", 0, false, false, CKPT_NONE, 0},
        {FRAMEWORK_DEEPSPEED, 8, 1, 1, 0, FP_FP16, true, CKPT_NONE, 0,
         "unsupported mix of model_dtype and grad_accum_dtype", 0, false, false, CKPT_NONE, 0},
        {FRAMEWORK_DEEPSPEED, 8, 1, 1, 1, FP_BF16, true, CKPT_NONE, 0, NULL, 1, true, false,
         CKPT_NONE, 0},
        {FRAMEWORK_DEEPSPEED, 8, 1, 1, 0, FP_BF16, false, CKPT_NONE, 0, NULL, 0, false, false,
         CKPT_NONE, 0},
        {FRAMEWORK_DEEPSPEED, 4, 1, 2, 0, FP_BF16, false, CKPT_NONE, 0, NULL, 1, false, true,
         CKPT_NONE, 0},
        {FRAMEWORK_DEEPSPEED, 4, 1, 2, 0, FP_FP16, false, CKPT_NONE, 0, NULL, 0, false, false,
         CKPT_NONE, 0},
        {FRAMEWORK_DEEPSPEED, 8, 1, 1, 2, FP_BF16, false, CKPT_SELECTIVE, 0, NULL, 2, false, false,
         CKPT_SELECTIVE, 0},
        /* Megatron-LM: arguments.py */
        {FRAMEWORK_MEGATRON, 8, 1, 1, 0, FP_BF16, false, CKPT_NONE, 0, NULL, 0, true, false,
         CKPT_NONE, 0},
        {FRAMEWORK_MEGATRON, 8, 1, 1, 1, FP_FP16, false, CKPT_NONE, 0, NULL, 1, true, false,
         CKPT_NONE, 0},
        {FRAMEWORK_MEGATRON, 8, 1, 1, 3, FP_FP32, false, CKPT_NONE, 0, NULL, 3, false, false,
         CKPT_NONE, 0},
        {FRAMEWORK_MEGATRON, 4, 1, 2, 3, FP_BF16, false, CKPT_NONE, 0,
         "Megatron-FSDP (--use-megatron-fsdp), which scalelab writes without a pipeline", 0, false,
         false, CKPT_NONE, 0},
        /* PyTorch FSDP: fsdp/api.py, fully_sharded_data_parallel.py, checkpoint_wrapper.py */
        {FRAMEWORK_FSDP, 4, 2, 1, 3, FP_BF16, false, CKPT_NONE, 0,
         "FSDP alone has no tensor parallelism", 0, false, false, CKPT_NONE, 0},
        {FRAMEWORK_FSDP, 4, 1, 2, 3, FP_BF16, false, CKPT_NONE, 0,
         "FSDP alone has no pipeline parallelism", 0, false, false, CKPT_NONE, 0},
        {FRAMEWORK_FSDP, 8, 1, 1, 1, FP_BF16, false, CKPT_NONE, 0, NULL, 2, true, true, CKPT_NONE,
         0},
        {FRAMEWORK_FSDP, 8, 1, 1, 3, FP_FP32, false, CKPT_SELECTIVE, 0, NULL, 3, false, true,
         CKPT_FULL, 0},
        {FRAMEWORK_FSDP, 8, 1, 1, 3, FP_BF16, false, CKPT_EVERY, 4, NULL, 3, true, true, CKPT_EVERY,
         4},
        {FRAMEWORK_FSDP, 8, 1, 1, 2, FP_BF16, false, CKPT_EVERY, 4, NULL, 2, true, false,
         CKPT_EVERY, 0},
        {FRAMEWORK_FSDP, 8, 1, 1, 3, FP_BF16, true, CKPT_FULL, 1, NULL, 3, true, false, CKPT_FULL,
         0},
        /* ZeRO-3's units: a layer in DeepSpeed and Megatron-FSDP, FSDP's wrapped modules */
        {FRAMEWORK_DEEPSPEED, 8, 1, 1, 3, FP_FP32, false, CKPT_NONE, -3, NULL, 3, false, true,
         CKPT_NONE, 0},
        {FRAMEWORK_MEGATRON, 8, 1, 1, 3, FP_FP32, false, CKPT_NONE, -3, NULL, 3, false, true,
         CKPT_NONE, 0},
        {FRAMEWORK_FSDP, 8, 1, 1, 3, FP_FP32, false, CKPT_NONE, -3, NULL, 3, false, true, CKPT_NONE,
         0},
        {FRAMEWORK_FSDP, 8, 1, 1, 2, FP_FP32, false, CKPT_NONE, -3, NULL, 2, false, false,
         CKPT_NONE, 3},
        /* no framework: as asked */
        {FRAMEWORK_NONE, 4, 1, 2, 3, FP_BF16, false, CKPT_SELECTIVE, 0, NULL, 3, false, false,
         CKPT_SELECTIVE, 0},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        struct memory_config c = layout(&m, rows[i].dp, rows[i].tp, rows[i].pp, rows[i].zero,
                                        rows[i].prec, rows[i].grad_fp32);
        /* every < 0: no checkpointing, units of -every layers asked */
        c.ckpt = (struct ckpt_policy){rows[i].ckpt, rows[i].every > 0 ? rows[i].every : 0};
        c.unit_layers = rows[i].every < 0 ? -rows[i].every : 0;
        struct framework_run r;
        struct error e = {0};
        int rc = framework_runs(rows[i].f, &c, &r, &e);
        if (rows[i].refused) {
            ck_assert_msg(rc == ERR_INVAL && strstr(e.msg, rows[i].refused), "row %zu: %s", i,
                          e.msg);
            continue;
        }
        ck_assert_msg(rc == 0, "row %zu: %s", i, e.msg);
        ck_assert_msg(r.c.zero == rows[i].zero_run && r.c.grad_fp32 == rows[i].fp32_run &&
                          r.changed == rows[i].changed && r.c.ckpt.kind == rows[i].ckpt_run &&
                          r.c.unit_layers == rows[i].unit_layers,
                      "row %zu: zero %d fp32 %d changed %d ckpt %d units %d", i, r.c.zero,
                      r.c.grad_fp32, r.changed, r.c.ckpt.kind, r.c.unit_layers);
        ck_assert_msg(r.changed == (r.why >= 0), "row %zu: why %d", i, r.why);
        /* a change of the gradients' type is noted too, each note with its source */
        int want = (r.c.grad_fp32 != c.grad_fp32) + (r.c.zero != c.zero) +
                   (r.c.ckpt.kind != c.ckpt.kind) + (r.c.unit_layers != c.unit_layers);
        ck_assert_msg(r.n_notes == want, "row %zu: %d notes, %d changes", i, r.n_notes, want);
        for (int k = 0; k < r.n_notes; k++)
            ck_assert_msg(strstr(r.notes[k], ".py"), "row %zu: a note without its source: %s", i,
                          r.notes[k]);
    }
}
END_TEST

/* ZeRO-3 in units of K layers: two gradient pieces of a unit and, with prefetch, two units
 * gathered at once (or the ends and one), by hand from the tensors' shards. */
START_TEST(zero3_units)
{
    struct model_shape m = model("tiny");
    struct params_breakdown pb;
    params_count(&m, &pb);
    for (int per = 0; per <= m.layers + 1; per++) {
        struct memory_config c = layout(&m, 4, 1, 1, 3, FP_BF16, false);
        c.unit_layers = per;
        struct memory_result r;
        struct error e = {0};
        ck_assert_msg(memory_compute(&c, &r, &e) == 0, "%s", e.msg);
        int k = per < 1 ? 1 : per > m.layers ? m.layers : per;
        double psi = pb.total, S = ceil(psi / 4), pad = 4 * S - psi;
        double unit = k * pb.per_layer, ends = psi + pad - m.layers * pb.per_layer;
        double piece = fmax(fmax(pb.first, ends - pb.first), unit);
        double gathered = m.layers > k ? fmax(ends + unit, 2 * unit) : ends + unit;
        ck_assert_msg(r.comm == 2 * piece * 2 + gathered * 2, "units of %d: %.0f, by hand %.0f", k,
                      r.comm, 2 * piece * 2 + gathered * 2);
        if (per == 1) {
            c.unit_layers = 0;
            struct memory_result r0;
            ck_assert(memory_compute(&c, &r0, &e) == 0 && r0.comm == r.comm);
        }
    }
}
END_TEST

/* The export of a layout into a string. */
static char *emitted(enum framework f, const struct emit_plan *p, int *rc, char **notes)
{
    char *out = NULL, *err = NULL;
    size_t n1, n2;
    FILE *o = open_memstream(&out, &n1), *ne = open_memstream(&err, &n2);
    ck_assert(o && ne);
    struct error e = {0};
    *rc = emit_write(o, ne, f, p, &e);
    fclose(o);
    fclose(ne);
    *notes = err;
    return out;
}

/* Megatron-LM's --num-layers-per-virtual-pipeline-stage is the layers of one model chunk,
 * L / (pp v): 32 layers, pp 2, v 2 give 8 (1 would mean 16 chunks per stage). */
START_TEST(megatron_interleaved)
{
    struct model_shape m = model("synthetic-7b");
    struct cluster_spec cl;
    ck_assert_int_eq(preset_load_cluster("h100-80gb", &cl, NULL), 0);
    struct emit_plan p = {.source = "test", .cluster = &cl};
    p.c = layout(&m, 4, 1, 2, 1, FP_BF16, false);
    p.c.schedule = SCHED_INTERLEAVED;
    p.c.chunks = 2;
    p.c.micro_batches = 8;
    int rc;
    char *notes, *out = emitted(FRAMEWORK_MEGATRON, &p, &rc, &notes);
    ck_assert_msg(rc == 0, "%s", out);
    ck_assert_msg(strstr(out, "--num-layers-per-virtual-pipeline-stage 8 \\"), "%s", out);
    ck_assert_msg(strstr(out, "--schedule interleaved --chunks 2"), "%s", out);
    ck_assert_msg(strstr(out, "--accumulate-allreduce-grads-in-fp32"), "%s", out);
    free(out);
    free(notes);
    /* GPipe is not Megatron-LM's: it runs 1F1B, and the heading says so */
    p.c.schedule = SCHED_GPIPE;
    p.c.chunks = 0;
    out = emitted(FRAMEWORK_MEGATRON, &p, &rc, &notes);
    ck_assert_msg(rc == 0 && strstr(out, "1F1B, not GPipe") &&
                      !strstr(out, "    --num-layers-per-virtual-pipeline-stage") &&
                      !strstr(out, "--schedule gpipe"),
                  "%s", out);
    free(out);
    free(notes);
}
END_TEST

/* A refusal writes nothing; a layout that does not fit writes its heading only, saying so,
 * unless forced. */
START_TEST(emit_refuses_and_fits)
{
    struct model_shape m = model("synthetic-7b");
    struct cluster_spec cl;
    ck_assert_int_eq(preset_load_cluster("h100-80gb", &cl, NULL), 0);
    struct emit_plan p = {.source = "test", .cluster = &cl};
    p.c = layout(&m, 4, 2, 1, 3, FP_BF16, false);
    p.c.capacity = cl.hbm_bytes;
    int rc;
    char *notes, *out = emitted(FRAMEWORK_FSDP, &p, &rc, &notes);
    ck_assert_msg(rc == ERR_INVAL && !*out && !*notes, "%d: %s%s", rc, out, notes);
    free(out);
    free(notes);
    p.c = layout(&m, 1, 1, 1, 0, FP_BF16, false);
    p.c.capacity = cl.hbm_bytes;
    out = emitted(FRAMEWORK_DEEPSPEED, &p, &rc, &notes);
    ck_assert_msg(rc == 1 && !*out && strstr(notes, "# does NOT fit") &&
                      strstr(notes, "not written (--force writes it)"),
                  "%d: %s%s", rc, out, notes);
    free(out);
    free(notes);
    p.force = true;
    out = emitted(FRAMEWORK_DEEPSPEED, &p, &rc, &notes);
    ck_assert_msg(rc == 0 && strstr(out, "\"train_batch_size\": 4") &&
                      strstr(notes, "(written anyway: --force)"),
                  "%d: %s%s", rc, out, notes);
    free(out);
    free(notes);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("emit");
    TCase *tc = tcase_create("framework");
    tcase_add_test(tc, framework_rules);
    tcase_add_test(tc, zero3_units);
    tcase_add_test(tc, megatron_interleaved);
    tcase_add_test(tc, emit_refuses_and_fits);
    suite_add_tcase(s, tc);
    return harness_run_threadless(s);
}
