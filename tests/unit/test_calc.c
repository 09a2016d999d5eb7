/* Unit tests of src/calc: presets and their loader, parameter counts, model-state memory
 * (ZeRO paper), activation memory (Korthikanti et al. 2022 and our derivation), communication
 * volume, pipeline schedules and their bubbles, and the planner. */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "base/error.h"
#include "calc/activ.h"
#include "calc/memory.h"
#include "calc/params.h"
#include "calc/plan.h"
#include "calc/sched.h"
#include "calc/traffic.h"
#include "comm/cost.h"
#include "calc/preset.h"
#include "harness.h"
#include "sim/spec.h"

#define GiB 1073741824.0

static struct model_shape load_model(const char *name)
{
    struct model_shape m;
    struct error e = {0};
    int rc = preset_load_model(name, &m, &e);
    ck_assert_msg(rc == 0, "%s: %s", name, e.msg);
    return m;
}

/* ------------------------------------------------------------------ presets */

START_TEST(presets_load)
{
    const char *models[] = {"synthetic-7b", "tiny",       "small",
                            "gpt3-175b",    "llama2-13b", "llama2-70b"};
    for (size_t i = 0; i < sizeof models / sizeof models[0]; i++) {
        struct model_shape m = load_model(models[i]);
        ck_assert_str_eq(m.name, models[i]);
    }
    const char *clusters[] = {"h100-80gb", "h200", "a100-80gb", "a100-40gb", "workstation-4gpu"};
    for (size_t i = 0; i < sizeof clusters / sizeof clusters[0]; i++) {
        struct cluster_spec c;
        struct error e = {0};
        ck_assert_msg(preset_load_cluster(clusters[i], &c, &e) == 0, "%s", e.msg);
        ck_assert_str_eq(c.name, clusters[i]);
        ck_assert(c.peak_flops > 1e14 && c.hbm_bytes > 30 * GiB && c.beta_intra > c.beta_inter);
    }
    struct cluster_spec c;
    ck_assert_int_eq(preset_load_cluster("h100-80gb", &c, NULL), 0);
    ck_assert(c.hbm_bytes == 80 * GiB && c.gpus_per_node == 8 && c.nodes == 1);
    ck_assert(c.peak_flops == 989.4e12 && c.beta_intra == 450e9 && c.alpha_inter == 5e-6);
}
END_TEST

START_TEST(preset_shape_fields)
{
    struct model_shape m = load_model("llama2-70b");
    ck_assert_int_eq(m.layers, 80);
    ck_assert_int_eq(m.d_model, 8192);
    ck_assert_int_eq(m.heads, 64);
    ck_assert_int_eq(m.kv_heads, 8);
    ck_assert_int_eq(m.ffn, 28672);
    ck_assert_int_eq(m.ffn_kind, FFN_SWIGLU);
    ck_assert(!m.tied);
    m = load_model("gpt3-175b");
    ck_assert_int_eq(m.ffn_kind, FFN_GELU);
    ck_assert(m.tied);
}
END_TEST

START_TEST(preset_unknown_names_the_presets)
{
    struct model_shape m;
    struct error e = {0};
    ck_assert_int_eq(preset_load_model("synthetic-8b", &m, &e), ERR_INVAL);
    ck_assert_ptr_nonnull(strstr(e.msg, "unknown model preset 'synthetic-8b'"));
    ck_assert_ptr_nonnull(strstr(e.msg, "synthetic-7b"));
    ck_assert_int_eq(preset_load_model("/nonexistent/x.ini", &m, &e), ERR_INVAL);
    ck_assert_ptr_nonnull(strstr(e.msg, "cannot open '/nonexistent/x.ini'"));
    ck_assert_int_eq(preset_load_model("../../etc/passwd", &m, &e), ERR_INVAL);
    struct cluster_spec c;
    ck_assert_int_eq(preset_load_cluster("h100", &c, &e), ERR_INVAL);
    ck_assert_ptr_nonnull(strstr(e.msg, "h100-80gb"));
}
END_TEST

static const char good_model[] = "# a comment\n"
                                 "[model]\n"
                                 "name = t\n"
                                 "layers = 2\n"
                                 "d_model = 64\n"
                                 "heads = 4\n"
                                 "kv_heads = 2\n"
                                 "ffn = 128\n"
                                 "ffn_kind = swiglu\n"
                                 "vocab = 100\n"
                                 "tied = false\n"
                                 "seq = 32\n";

/* good_model with the line starting with `key` replaced by `line` (or removed if NULL). */
static const char *edit(const char *key, const char *line)
{
    static char buf[2048];
    buf[0] = '\0';
    const char *s = good_model;
    while (*s) {
        const char *end = strchr(s, '\n');
        size_t len = (size_t)(end - s) + 1;
        if (strncmp(s, key, strlen(key)) == 0 && (s[strlen(key)] == ' ')) {
            if (line)
                strcat(strcat(buf, line), "\n");
        } else {
            strncat(buf, s, len);
        }
        s += len;
    }
    return buf;
}

START_TEST(model_file_parses)
{
    struct model_shape m;
    struct error e = {0};
    ck_assert_msg(preset_parse_model(good_model, "t.ini", &m, &e) == 0, "%s", e.msg);
    ck_assert_int_eq(m.kv_heads, 2);
    ck_assert(!m.tied);
    struct params_breakdown b;
    params_count(&m, &b);
    /* by hand: 100*64 + 2*(2*64 + 64*64*2 + 2*64*32 + 3*64*128) + 64 + 64*100 */
    ck_assert(b.total ==
              100 * 64 + 2 * (2 * 64 + 64 * 64 * 2 + 2 * 64 * 32 + 3 * 64 * 128) + 64 + 64 * 100);
}
END_TEST

START_TEST(model_file_errors)
{
    static const struct {
        const char *key, *line, *want;
    } cases[] = {
        {"layers", "layers = two",
         "t.ini:4: 'layers' must be a whole number from 1 to 10000, not 'two'"},
        {"layers", "layers = 0", "t.ini:4: 'layers' must be a whole number from 1"},
        {"layers", "layers = -3", "t.ini:4: 'layers' must be a whole number"},
        {"layers", "layers = 2.5", "t.ini:4: 'layers' must be a whole number"},
        {"layers", "layers = 99999999999", "t.ini:4: 'layers' must be a whole number"},
        {"d_model", "d_model = 1e9", "t.ini:5: 'd_model' must be a whole number"},
        {"d_model", "dmodel = 64", "t.ini:5: unknown key 'dmodel' (expected one of: name, layers"},
        {"heads", "heads = 5", "t.ini:6: heads (5) must divide d_model (64, line 5)"},
        {"kv_heads", "kv_heads = 3", "t.ini:7: kv_heads (3) must divide heads (4, line 6)"},
        {"ffn_kind", "ffn_kind = relu", "t.ini:9: 'ffn_kind' must be swiglu or gelu, not 'relu'"},
        {"tied", "tied = yes", "t.ini:11: 'tied' must be true or false, not 'yes'"},
        {"seq", NULL, "t.ini:2: [model] has no 'seq'"},
        {"vocab", "vocab = 100\nvocab = 200",
         "t.ini:11: 'vocab' is given twice (first on line 10)"},
        {"name", "name = ", "t.ini:3: 'name' must be a text of 1 to 63 characters"},
        {"ffn", "ffn 128", "t.ini:8: expected 'key = value', a [section] or a comment"},
        {"ffn", "ffn = 128\n[extra]\nx = 1",
         "t.ini:10: 'x' is in section [extra]; expected it in [model]"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct model_shape m;
        struct error e = {0};
        const char *text = edit(cases[i].key, cases[i].line);
        int rc = preset_parse_model(text, "t.ini", &m, &e);
        ck_assert_msg(rc == ERR_INVAL, "case %zu accepted", i);
        ck_assert_msg(strstr(e.msg, cases[i].want) != NULL, "case %zu: got '%s', want '%s'", i,
                      e.msg, cases[i].want);
    }
    struct model_shape m;
    struct error e = {0};
    /* a line longer than inih's buffer is refused on its own line (it used to be cut in two,
     * the rest read as a line of its own); a UTF-8 byte-order mark changes no line number */
    char text[2048];
    snprintf(text, sizeof text, "# %0250d\n%s", 0, good_model);
    ck_assert_int_eq(preset_parse_model(text, "l.ini", &m, &e), ERR_INVAL);
    ck_assert_str_eq(e.msg, "l.ini:1: a line longer than 198 characters");
    snprintf(text, sizeof text, "\xef\xbb\xbf%s", edit("heads", "heads = 5"));
    ck_assert_int_eq(preset_parse_model(text, "b.ini", &m, &e), ERR_INVAL);
    ck_assert_str_eq(e.msg, "b.ini:6: heads (5) must divide d_model (64, line 5)");
    ck_assert_int_eq(preset_parse_model("name = x\n", "u.ini", &m, &e), ERR_INVAL);
    ck_assert_str_eq(e.msg, "u.ini:1: 'name' is before any section; expected it in [model]");
    ck_assert_int_eq(preset_parse_model("[model]\nname=x\nlayers=10000\nd_model=1048576\n"
                                        "heads=1\nkv_heads=1\nffn=1\nffn_kind=gelu\nvocab=1\n"
                                        "tied=true\nseq=1\n",
                                        "u.ini", &m, &e),
                     ERR_INVAL);
    ck_assert_str_eq(e.msg, "u.ini:1: the shape gives more than 10^15 parameters; check layers, "
                            "d_model, ffn and vocab");
    ck_assert_int_eq(preset_parse_model("", "u.ini", &m, &e), ERR_INVAL);
    ck_assert_str_eq(e.msg, "u.ini:1: expected a [model] section");
}
END_TEST

START_TEST(cluster_file_errors)
{
    const char *good = "[cluster]\nname = c\ngpus_per_node = 8\nnodes = 2\nhbm = 80GiB\n"
                       "peak_flops = 1e15\nintra_latency = 2e-6\nintra_bandwidth = 450e9\n"
                       "inter_latency = 5e-6\ninter_bandwidth = 50e9\n";
    struct cluster_spec c;
    struct error e = {0};
    ck_assert_msg(preset_parse_cluster(good, "c.ini", &c, &e) == 0, "%s", e.msg);
    ck_assert(c.hbm_bytes == 80 * GiB && c.nodes == 2);
    static const struct {
        const char *from, *to, *want;
    } cases[] = {
        {"hbm = 80GiB", "hbm = 80 parsecs",
         "c.ini:5: 'hbm' must be a size (e.g. 80GiB) at least 1048576 and at most 1e+15 bytes"},
        {"hbm = 80GiB", "hbm = 0", "c.ini:5: 'hbm' must be a size"},
        {"peak_flops = 1e15", "peak_flops = nan",
         "c.ini:6: 'peak_flops' must be a number at least 1000000 and"},
        {"intra_bandwidth = 450e9", "intra_bandwidth = 1e-300",
         "c.ini:8: 'intra_bandwidth' must be a number at least 1000 and at most 1e+15"},
        {"peak_flops = 1e15", "peak_flops = -1", "c.ini:6: 'peak_flops' must be a number"},
        {"intra_bandwidth = 450e9", "intra_bandwidth = 0", "c.ini:8: 'intra_bandwidth' must be"},
        {"inter_latency = 5e-6", "inter_latency = 2",
         "c.ini:9: 'inter_latency' must be a number at least 0 and at most 1"},
        {"nodes = 2", "nodes = 0", "c.ini:4: 'nodes' must be a whole number from 1"},
        {"gpus_per_node = 8", "", "c.ini:1: [cluster] has no 'gpus_per_node'"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char text[1024];
        const char *at = strstr(good, cases[i].from);
        snprintf(text, sizeof text, "%.*s%s%s", (int)(at - good), good, cases[i].to,
                 at + strlen(cases[i].from));
        ck_assert_msg(preset_parse_cluster(text, "c.ini", &c, &e) == ERR_INVAL, "case %zu", i);
        ck_assert_msg(strstr(e.msg, cases[i].want) != NULL, "case %zu: got '%s'", i, e.msg);
    }
}
END_TEST

/* ------------------------------------------------------------------ parameter counts */

START_TEST(params_synthetic_7b)
{
    struct model_shape m = load_model("synthetic-7b");
    struct params_breakdown b;
    params_count(&m, &b);
    /* DESIGN.md: 7,289,966,592 parameters; x 16 bytes = 108.63 GiB. */
    ck_assert(b.total == 7289966592.0);
    ck_assert(b.first == 51200.0 * 4096);
    ck_assert(b.per_layer == 221257728.0);
    ck_assert(b.last == 4096);
    ck_assert_double_eq_tol(16 * b.total / GiB, 108.63, 0.005);
    /* The buffer order the training helper lays out. */
    const char *order[] = {"embedding", "attn_norm", "wq",   "wk",     "wv",        "wo",
                           "mlp_norm",  "w_gate",    "w_up", "w_down", "final_norm"};
    ck_assert_int_eq(b.n, 11);
    for (int i = 0; i < b.n; i++)
        ck_assert_str_eq(b.t[i].name, order[i]);
}
END_TEST

START_TEST(params_known_models)
{
    /* LLaMA-2 13B and 70B as their released checkpoints count them. */
    ck_assert(params_total(&(struct model_shape){.layers = 40,
                                                 .d_model = 5120,
                                                 .heads = 40,
                                                 .kv_heads = 40,
                                                 .ffn = 13824,
                                                 .vocab = 32000,
                                                 .seq = 4096,
                                                 .ffn_kind = FFN_SWIGLU}) == 13015864320.0);
    struct model_shape m70 = load_model("llama2-70b");
    ck_assert(params_total(&m70) == 68976648192.0);
    /* Mixtral 8x7B: 2 x 32000 x 4096 (untied) + 32 x (41,943,040 attention + 8,192 norms +
     * 32,768 router + 8 x 3 x 4096 x 14336 experts) + 4096, the paper's 47B with 13B active
     * per token (Jiang et al. 2024): each token skips 6 of the 8 experts in every layer */
    struct model_shape mx = load_model("mixtral-8x7b");
    ck_assert(params_total(&mx) == 46702792704.0);
    ck_assert(params_active(&mx) == 46702792704.0 - 32 * 6 * 3 * 4096 * 14336.0);
    ck_assert(round(params_total(&mx) / 1e9) == 47 && round(params_active(&mx) / 1e9) == 13);
    /* GPT-3 175B with its biases and learned positions: 96(12d^2 + 13d) + (50257 + 2048)d + 2d. */
    struct model_shape g = load_model("gpt3-175b");
    double d = 12288;
    ck_assert(params_total(&g) == 96 * (12 * d * d + 13 * d) + (50257 + 2048) * d + 2 * d);
    ck_assert_double_eq_tol(params_total(&g) / 1e9, 175, 0.5);
    struct model_shape t = load_model("tiny");
    /* 64*64 + 4*(2*64 + 4*64*64 + 3*64*172) + 64 */
    ck_assert(params_total(&t) == 64 * 64 + 4 * (2 * 64 + 4 * 64 * 64 + 3 * 64 * 172) + 64);
}
END_TEST

START_TEST(params_sharding)
{
    struct model_shape m = load_model("synthetic-7b");
    struct params_breakdown b;
    params_count(&m, &b);
    /* One GPU holds all; tp and pp shards add up to the whole (plus the tied copy). */
    ck_assert(params_per_gpu(&b, m.layers, 0, 1, 1, m.tied) == b.total);
    double sum = 0;
    for (int s = 0; s < 4; s++)
        sum += params_per_gpu(&b, m.layers, s, 4, 1, m.tied);
    ck_assert(sum == b.total + b.first); /* the last stage keeps a copy of the tied embedding */
    /* tp 8: matrices / 8, the 65 norm vectors replicated. */
    double norms = 65 * 4096.0;
    ck_assert(params_per_gpu(&b, m.layers, 0, 1, 8, m.tied) == (b.total - norms) / 8 + norms);
    int first, count;
    params_stage_layers(10, 0, 4, &first, &count);
    ck_assert(first == 0 && count == 3);
    params_stage_layers(10, 3, 4, &first, &count);
    ck_assert(first == 8 && count == 2);
}
END_TEST

/* ------------------------------------------------------------------ model states */

START_TEST(zero_paper_numbers)
{
    /* ZeRO paper, Figure 1: Ψ = 7.5B, N_d = 64, K = 12: 120, 31.4, 16.6, 1.875 GB. Exact in
     * binary floating point for these inputs, so compared exactly. */
    struct memory_states k, st;
    memory_bytes_per_param(FP_BF16, OPT_ADAMW, false, &k);
    ck_assert(k.weights == 2 && k.gradients == 2 && k.master + k.optimizer == 12);
    const double want[4] = {120e9, 31.40625e9, 16.640625e9, 1.875e9};
    for (int z = 0; z < 4; z++) {
        memory_zero(7.5e9, &k, z, 64, &st);
        double total = st.weights + st.gradients + st.master + st.optimizer;
        ck_assert_msg(total == want[z], "stage %d: %.6g", z, total);
    }
    /* 18 bytes with fp32 gradient accumulation; fp32 training 16; SGD variants. */
    memory_bytes_per_param(FP_FP16, OPT_ADAMW, true, &k);
    ck_assert(k.weights + k.gradients + k.master + k.optimizer == 18);
    memory_bytes_per_param(FP_FP32, OPT_ADAMW, false, &k);
    ck_assert(k.weights == 4 && k.gradients == 4 && k.master == 0 && k.optimizer == 8);
    memory_bytes_per_param(FP_BF16, OPT_SGD, false, &k);
    ck_assert(k.weights + k.gradients + k.master + k.optimizer == 8);
    memory_bytes_per_param(FP_BF16, OPT_SGD_MOMENTUM, false, &k);
    ck_assert(k.weights + k.gradients + k.master + k.optimizer == 12);
}
END_TEST

static struct memory_config config_7b(const struct model_shape *m)
{
    return (struct memory_config){.model = m,
                                  .precision = FP_BF16,
                                  .optimizer = OPT_ADAMW,
                                  .dp = 1,
                                  .tp = 1,
                                  .pp = 1,
                                  .micro_batch = 1,
                                  .seq = 2048,
                                  .micro_batches = 1,
                                  .schedule = SCHED_1F1B,
                                  .ckpt = {CKPT_FULL, 1},
                                  .capacity = 80 * GiB};
}

START_TEST(memory_synthetic_7b)
{
    struct model_shape m = load_model("synthetic-7b");
    struct memory_config c = config_7b(&m);
    struct memory_result r;
    struct error e = {0};
    ck_assert_msg(memory_compute(&c, &r, &e) == 0, "%s", e.msg);
    double states = r.states.weights + r.states.gradients + r.states.master + r.states.optimizer;
    ck_assert(states == 16 * 7289966592.0);
    ck_assert_double_eq_tol(states / GiB, 108.63, 0.005);
    ck_assert(!r.fits);
    ck_assert(r.over == r.total - 80 * GiB && r.over > 28 * GiB);
    /* ZeRO-3 over 8 GPUs: 108.63 / 8 = 13.58 GiB of states, fits. */
    c.dp = 8, c.zero = 3;
    ck_assert_int_eq(memory_compute(&c, &r, &e), 0);
    ck_assert(r.fits && r.over == 0);
    ck_assert(r.states.weights == 2 * 7289966592.0 / 8);
    /* Pipeline: 4 stages of 8 layers, 1F1B with 8 micro-batches: stage 0 holds 4 of them,
     * GPipe all 8. */
    c.dp = 1, c.zero = 0, c.pp = 4, c.micro_batches = 8;
    ck_assert_int_eq(memory_compute(&c, &r, &e), 0);
    struct memory_result g;
    c.schedule = SCHED_GPIPE;
    ck_assert_int_eq(memory_compute(&c, &g, &e), 0);
    ck_assert_int_eq(g.in_flight, 8);
    ck_assert(g.activations > r.activations);
    ck_assert_int_eq(memory_in_flight(SCHED_1F1B, 0, 4, 8), 4);
    ck_assert_int_eq(memory_in_flight(SCHED_1F1B, 3, 4, 8), 1);
    ck_assert_int_eq(memory_in_flight(SCHED_1F1B, 0, 4, 2), 2);
    /* Each stage on its own: the reported GPU is the largest; 1F1B's in-flight count falls
     * from p to 1 along the pipeline; the stages' parameters add up to the model plus the tied
     * copy of the embedding on the last stage. */
    c.schedule = SCHED_1F1B;
    ck_assert_int_eq(memory_compute(&c, &r, &e), 0);
    double most = 0, psi = 0;
    for (int s = 0; s < 4; s++) {
        struct memory_result st;
        ck_assert_int_eq(memory_compute_stage(&c, s, &st, &e), 0);
        ck_assert_int_eq(st.in_flight, 4 - s);
        ck_assert_int_eq(st.stage, s);
        most = fmax(most, st.total);
        psi += st.params_gpu;
    }
    ck_assert(most == r.total);
    ck_assert(psi == 7289966592.0 + 51200.0 * 4096);
    ck_assert_int_eq(memory_compute_stage(&c, 4, &g, &e), ERR_INVAL);
    /* A bare count: Ψ / (tp pp). */
    c = config_7b(NULL);
    c.params = 7.5e9, c.dp = 64, c.zero = 2;
    ck_assert_int_eq(memory_compute(&c, &r, &e), 0);
    ck_assert(r.total == 16.640625e9 && r.activations == 0);
}
END_TEST

START_TEST(memory_bad_layouts)
{
    struct model_shape m = load_model("synthetic-7b");
    struct memory_config c = config_7b(&m);
    struct memory_result r;
    struct error e = {0};
    c.tp = 3;
    ck_assert_int_eq(memory_compute(&c, &r, &e), ERR_INVAL);
    ck_assert_str_eq(e.msg, "tp 3 does not divide the 32 attention heads of synthetic-7b");
    c.tp = 1, c.pp = 33;
    ck_assert_int_eq(memory_compute(&c, &r, &e), ERR_INVAL);
    ck_assert_ptr_nonnull(strstr(e.msg, "pp 33 is more than the 32 layers"));
    c.pp = 1, c.zero = 4;
    ck_assert_int_eq(memory_compute(&c, &r, &e), ERR_INVAL);
    ck_assert_ptr_nonnull(strstr(e.msg, "0, 1, 2 or 3"));
    c.zero = 0, c.capacity = NAN;
    ck_assert_int_eq(memory_compute(&c, &r, &e), ERR_INVAL);
    c.capacity = 80 * GiB, c.tp = 8, c.sp = true, c.seq = 100;
    ck_assert_int_eq(memory_compute(&c, &r, &e), ERR_INVAL);
    ck_assert_ptr_nonnull(strstr(e.msg, "tp 8 must divide seq 100"));
    struct model_shape g = load_model("gpt3-175b");
    c = config_7b(&g);
    c.seq = 4096;
    ck_assert_int_eq(memory_compute(&c, &r, &e), ERR_INVAL);
    ck_assert_ptr_nonnull(strstr(e.msg, "2048 learned positions"));
    struct model_shape l = load_model("llama2-70b");
    c = config_7b(&l);
    c.tp = 16; /* divides the 64 heads, not the 8 key/value heads */
    ck_assert_int_eq(memory_compute(&c, &r, &e), ERR_INVAL);
    ck_assert_ptr_nonnull(strstr(e.msg, "8 key/value heads"));
}
END_TEST

/* ------------------------------------------------------------------ activations */

START_TEST(korthikanti_gpt3)
{
    /* Korthikanti et al. 2022 on GPT-3 175B (s 2048, h 12288, a 96), b = 1, 16-bit:
     * eq. 1 sbh(34 + 5as/h), eq. 2 sbh(10 + 24/t + 5as/(ht)), eq. 3 sbh/t (34 + 5as/h),
     * selective with sp 34 sbh/t, full recompute 2sbh. Exact integers. */
    struct model_shape m = load_model("gpt3-175b");
    double s = 2048, b = 1, h = 12288, a = 96, sbh = s * b * h;
    struct activ_config c = {
        .micro_batch = 1, .seq = 2048, .tp = 1, .sp = false, .bytes = 2, .attention = ACTIV_EAGER};
    struct activ_list l;
    activ_layer(&m, &c, &l);
    ck_assert(l.total == sbh * (34 + 5 * a * s / h));
    ck_assert(l.total == 2868903936.0);
    ck_assert_str_eq(l.formula, "sbh(34 + 5as/h)");
    ck_assert(l.input == 2 * sbh);
    c.tp = 8;
    activ_layer(&m, &c, &l);
    ck_assert(l.total == sbh * (10 + 24.0 / 8 + 5 * a * s / (h * 8)));
    ck_assert_str_eq(l.formula, "sbh(10 + 24/t + 5as/(ht))");
    ck_assert(l.total - l.core == sbh * (10 + 24.0 / 8)); /* selective without sp */
    c.sp = true;
    activ_layer(&m, &c, &l);
    ck_assert(l.total == sbh / 8 * (34 + 5 * a * s / h));
    ck_assert(l.total - l.core == 34 * sbh / 8);
    ck_assert(l.input == 2 * sbh / 8);
    /* Per layer under each policy (activ_total's per_layer). */
    struct activ_total t;
    c = (struct activ_config){
        .micro_batch = 1, .seq = 2048, .tp = 1, .sp = false, .bytes = 2, .attention = ACTIV_EAGER};
    activ_total(&m, &c, &(struct ckpt_policy){CKPT_FULL, 1}, 96, true, true, &t);
    ck_assert(t.per_layer == 2 * sbh && t.checkpoints == 96);
    activ_total(&m, &c, &(struct ckpt_policy){CKPT_SELECTIVE, 0}, 96, true, true, &t);
    ck_assert(t.per_layer == 34 * sbh);
    /* The paper's other models (Table 3: 22B, 530B, 1T; s = 2048, t = 8), every variant. */
    static const struct {
        int h, a, L;
    } table3[] = {{6144, 64, 48}, {20480, 128, 105}, {25600, 160, 128}};
    for (size_t i = 0; i < sizeof table3 / sizeof table3[0]; i++) {
        double H = table3[i].h, A = table3[i].a, sh = 2048 * H;
        struct model_shape k = {.layers = table3[i].L,
                                .d_model = table3[i].h,
                                .heads = table3[i].a,
                                .kv_heads = table3[i].a,
                                .ffn = 4 * table3[i].h,
                                .vocab = 51200,
                                .seq = 2048,
                                .ffn_kind = FFN_GELU,
                                .tied = true};
        struct activ_config kc = {.micro_batch = 1,
                                  .seq = 2048,
                                  .tp = 8,
                                  .sp = false,
                                  .bytes = 2,
                                  .attention = ACTIV_EAGER};
        activ_layer(&k, &kc, &l);
        /* 5as/h is not a whole number for the 22B model: compare to 1e-12 relative */
        double want = sh * (10 + 24.0 / 8 + 5 * A * 2048 / (H * 8));
        ck_assert_double_eq_tol(l.total, want, 1e-12 * want);
        kc.sp = true;
        activ_layer(&k, &kc, &l);
        want = sh / 8 * (34 + 5 * A * 2048 / H);
        ck_assert_double_eq_tol(l.total, want, 1e-12 * want);
        ck_assert_double_eq_tol(l.total - l.core, 34 * sh / 8, 1e-12 * want);
    }
    /* fp32 activations: 16 elements of 4 bytes + 2 one-byte masks; 2 x 4 + 1 per as^2b. */
    c.bytes = 4;
    activ_layer(&m, &c, &l);
    ck_assert(l.total == sbh * 66 + 9 * a * s * s * b);
}
END_TEST

START_TEST(swiglu_tiny_by_hand)
{
    /* tiny (d 64, 4 heads, ffn 172, vocab 64), b = 2, s = 64, bf16: the list of activ.h by
     * hand. sbh = 8192 elements, sbf = 22016, as^2b = 32768, sb = 128. */
    struct model_shape m = load_model("tiny");
    struct activ_config c = {
        .micro_batch = 2, .seq = 64, .tp = 1, .sp = false, .bytes = 2, .attention = ACTIV_EAGER};
    struct activ_list l;
    activ_layer(&m, &c, &l);
    const char *names[] = {"x",        "attn_rstd", "xn1",      "q",   "k",    "v",  "att",
                           "attn_out", "x1",        "mlp_rstd", "xn2", "gate", "up", "act"};
    const double bytes[] = {16384, 512,   16384, 16384, 16384, 16384, 65536,
                            16384, 16384, 512,   16384, 44032, 44032, 44032};
    ck_assert_int_eq(l.n, 14);
    for (int i = 0; i < l.n; i++) {
        ck_assert_str_eq(l.t[i].name, names[i]);
        ck_assert_msg(l.t[i].bytes == bytes[i], "%s: %.0f", names[i], l.t[i].bytes);
    }
    ck_assert(l.total == 329728 && l.input == 16384 && l.core == 65536);
    struct activ_list ends;
    activ_ends(&m, &c, true, true, &ends);
    ck_assert(ends.total == 16384 + 512 + 16384 + 32768);
    struct {
        struct ckpt_policy pol;
        double saved, peak;
    } want[] = {
        {{CKPT_NONE, 0}, 4 * 329728 + 66048, 4 * 329728 + 66048},
        {{CKPT_FULL, 1}, 4 * 16384 + 66048, 3 * 16384 + 329728},
        {{CKPT_EVERY, 2}, 2 * 16384 + 66048, 16384 + 2 * 329728},
        {{CKPT_SQRT, 0}, 2 * 16384 + 66048, 16384 + 2 * 329728},
        {{CKPT_EVERY, 3}, 2 * 16384 + 66048, 3 * 329728},
        {{CKPT_SELECTIVE, 0}, 4 * 264192 + 66048, 4 * 264192 + 66048},
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        struct activ_total t;
        activ_total(&m, &c, &want[i].pol, 4, true, true, &t);
        ck_assert_msg(t.saved == want[i].saved && t.peak == want[i].peak,
                      "policy %zu: saved %.0f peak %.0f", i, t.saved, t.peak);
    }
}
END_TEST

/* One rule for an interleaved schedule with one stage, as train's: refused (its first chunk
 * would hold the embedding and its last the tied head's copy, one GPU counting it twice: 3.12
 * GiB more for synthetic-7b, as memory and lesson 4's panel showed). */
START_TEST(interleaved_needs_stages)
{
    struct model_shape m = load_model("synthetic-7b");
    struct memory_config c = {.model = &m,
                              .precision = FP_BF16,
                              .optimizer = OPT_ADAMW,
                              .dp = 1,
                              .tp = 1,
                              .pp = 1,
                              .micro_batch = 1,
                              .seq = 2048,
                              .micro_batches = 4,
                              .schedule = SCHED_INTERLEAVED,
                              .chunks = 2,
                              .capacity = 80.0 * (1 << 30)};
    struct error e = {0};
    struct memory_result r;
    ck_assert_int_eq(memory_compute_stage(&c, 0, &r, &e), ERR_INVAL);
    ck_assert_ptr_nonnull(strstr(e.msg, "interleaved needs 2 or more"));
    ck_assert_int_eq(sched_check(SCHED_INTERLEAVED, 1, 4, 2, &e), ERR_INVAL);
    c.pp = 2;
    ck_assert_int_eq(memory_compute_stage(&c, 0, &r, &e), 0);
}
END_TEST

/* One attention model for every layout (issue 30): flash attention, the default, keeps each
 * query row's log-sum-exp and no s^2 term whatever cp is, so cp 2 halves the activations of
 * synthetic-7b at 32768 tokens on tp 8 with sp (they read 274.03 GiB at cp 1, the probabilities
 * kept, and 9.02 GiB at cp 2, none kept: a 30x drop). Eager keeps the a s^2 b probabilities and
 * needs cp 1. Selective recompute with cp drops lse, as Megatron-LM's recompute of core
 * attention does, and runs the ring's forward again. */
START_TEST(one_attention_model)
{
    struct model_shape m = load_model("synthetic-7b");
    struct cluster_spec cl;
    ck_assert_int_eq(preset_load_cluster("h100-80gb", &cl, NULL), 0);
    cl.nodes = 2;
    struct memory_config c = {.model = &m,
                              .precision = FP_BF16,
                              .optimizer = OPT_ADAMW,
                              .dp = 1,
                              .tp = 8,
                              .pp = 1,
                              .zero = 1,
                              .cp = 1,
                              .micro_batch = 1,
                              .seq = 32768,
                              .micro_batches = 1,
                              .schedule = SCHED_1F1B,
                              .sp = true,
                              .ckpt = {CKPT_NONE, 0},
                              .capacity = cl.hbm_bytes};
    struct memory_result one, two, eager;
    struct error e = {0};
    ck_assert_int_eq(c.attention, ACTIV_FLASH);
    ck_assert_int_eq(memory_compute(&c, &one, NULL), 0);
    c.cp = 2;
    ck_assert_int_eq(memory_compute(&c, &two, NULL), 0);
    /* every saved tensor is per token: exactly half, the ends too */
    ck_assert(two.activations * 2 == one.activations);
    ck_assert(two.layer.total * 2 == one.layer.total);
    /* lse: 4 bytes per head and token, the heads split by t */
    double s = 32768, a = 32, t = 8, lse = 4 * a / t * s;
    c.cp = 1, c.attention = ACTIV_EAGER;
    ck_assert_int_eq(memory_compute(&c, &eager, NULL), 0);
    ck_assert(eager.layer.total - one.layer.total == a / t * s * s * 2 - lse);
    c.cp = 2;
    ck_assert_int_eq(memory_check(&c, &e), ERR_INVAL);
    ck_assert_ptr_nonnull(strstr(e.msg, "eager"));
    /* selective with cp: lse dropped, the ring's forward again (8 for 6 (C-1)/C S a layer) */
    c.attention = ACTIV_FLASH;
    struct traffic tn, ts;
    ck_assert_int_eq(traffic_compute(&c, &cl, 0, two.params_gpu, 32, 0, 0, &tn, NULL), 0);
    c.ckpt = (struct ckpt_policy){CKPT_SELECTIVE, 0};
    struct memory_result sel;
    ck_assert_int_eq(memory_compute(&c, &sel, NULL), 0);
    ck_assert(sel.act.per_layer == two.layer.total - lse / 2);
    ck_assert_int_eq(traffic_compute(&c, &cl, 0, sel.params_gpu, 32, 0, 0, &ts, NULL), 0);
    ck_assert(ts.cp.bytes * 6 == tn.cp.bytes * 8);
    /* its recompute: QK^T and P V of a GPU's s/2 queries against all s keys */
    struct activ_config ac = {.micro_batch = 1, .seq = 32768, .tp = 8, .bytes = 2, .cp = 2};
    double h = 4096;
    ck_assert(activ_recompute_flops(&m, &ac, &c.ckpt, 1, 0) == 4 * (s / 2) * s * h / t);
    ac.cp = 1, ac.attention = ACTIV_EAGER;
    ck_assert(activ_recompute_flops(&m, &ac, &c.ckpt, 1, 0) == 2 * s * s * h / t);
}
END_TEST

START_TEST(swiglu_formula)
{
    struct model_shape m = load_model("synthetic-7b");
    struct activ_config c = {
        .micro_batch = 1, .seq = 2048, .tp = 1, .sp = false, .bytes = 2, .attention = ACTIV_EAGER};
    struct activ_list l;
    activ_layer(&m, &c, &l);
    ck_assert_str_eq(l.formula, "sbh(34.375 + 2as/h) + 8sb");
    double s = 2048, h = 4096, a = 32;
    ck_assert(l.total == s * h * (34.375 + 2 * a * s / h) + 8 * s);
    c.tp = 4;
    activ_layer(&m, &c, &l);
    ck_assert_str_eq(l.formula, "sbh(8 + 26.375/t + 2as/(ht)) + 8sb");
    /* GQA: llama2-70b's k and v are kv/h = 1/8 of q. */
    struct model_shape g = load_model("llama2-70b");
    c = (struct activ_config){
        .micro_batch = 1, .seq = 4096, .tp = 1, .sp = false, .bytes = 2, .attention = ACTIV_EAGER};
    activ_layer(&g, &c, &l);
    ck_assert(l.t[4].elements == 4096.0 * 1024 && l.t[3].elements == 4096.0 * 8192);
}
END_TEST

START_TEST(policy_parsing)
{
    struct ckpt_policy p;
    struct error e;
    char buf[32];
    ck_assert_int_eq(ckpt_parse("every:4", &p, &e), 0);
    ck_assert(p.kind == CKPT_EVERY && p.every == 4);
    ck_assert_str_eq(ckpt_name(buf, sizeof buf, &p), "every:4");
    ck_assert_int_eq(ckpt_parse("every:0", &p, &e), ERR_INVAL);
    ck_assert_int_eq(ckpt_parse("every:", &p, &e), ERR_INVAL);
    ck_assert_int_eq(ckpt_parse("some", &p, &e), ERR_INVAL);
    ck_assert_ptr_nonnull(strstr(e.msg, "none, full, selective, sqrt or every:K"));
    ck_assert_int_eq(ckpt_parse("sqrt", &p, &e), 0);
    ck_assert_int_eq(ckpt_every(&p, 32), 6);
    ck_assert_int_eq(ckpt_every(&p, 4), 2);
}
END_TEST

/* ------------------------------------------------------------------ pipeline schedules */

START_TEST(sched_bubbles_match_formulas)
{
    /* The timeline's idle share equals (p-1)/(vm) and (p-1)/(vm+p-1) for every schedule:
     * measured on the simulated timeline, so the orders and dependencies are right. */
    for (int k = 0; k < 3; k++)
        for (int p = 1; p <= 8; p++)
            for (int m = 1; m <= 16; m++)
                for (int v = 1; v <= 3; v++) {
                    if ((k != SCHED_INTERLEAVED) != (v == 1) ||
                        (k == SCHED_INTERLEAVED && (m % p || p < 2)))
                        continue;
                    struct sched s;
                    struct error e = {0};
                    ck_assert_msg(sched_build(k, p, m, v, &s, &e) == 0, "%s", e.msg);
                    /* both sides are ratios of small integers: 1e-12 covers the rounding */
                    ck_assert_double_eq_tol(s.bubble_over_ideal, sched_bubble_over_ideal(p, m, v),
                                            1e-12);
                    ck_assert_double_eq_tol(s.bubble_over_wall, sched_bubble_over_wall(p, m, v),
                                            1e-12);
                    ck_assert_int_eq(s.makespan, (m * v + p - 1) * (SCHED_TF + SCHED_TB));
                    for (int st = 0; st < p; st++)
                        ck_assert_int_eq(s.count[st], 2 * m * v);
                    sched_free(&s);
                }
}
END_TEST

/* The kinds of operation are a table with room for the weights' gradients apart (W), the
 * micro-batches held change by kind, and a plan's bubble is the schedule's own timeline's. */
START_TEST(sched_kinds_and_bubble_time)
{
    ck_assert_int_eq(sched_op_info(SCHED_OP_W)->letter, 'W');
    ck_assert_int_eq(sched_op_kind_of("weight gradients"), SCHED_OP_W);
    ck_assert_int_eq(sched_op_kind_of("backward"), SCHED_OP_B);
    ck_assert_int_eq(sched_op_kind_of("F"), SCHED_OP_F);
    ck_assert_int_eq(sched_op_kind_of("sideways"), SCHED_OP_KINDS);
    ck_assert_int_eq(sched_held_change(SCHED_OP_F), 1);
    ck_assert_int_eq(sched_held_change(SCHED_OP_B), -1);
    ck_assert_int_eq(sched_held_change(SCHED_OP_W), 0);
    struct sched s;
    ck_assert_int_eq(sched_build(SCHED_1F1B, 4, 8, 1, &s, NULL), 0);
    ck_assert(sched_bubble_time(&s, 2.0) == 2.0 * 3 / 8); /* (p - 1) / m, to the bit */
    sched_free(&s);
    ck_assert_int_eq(sched_build(SCHED_INTERLEAVED, 4, 8, 2, &s, NULL), 0);
    ck_assert(sched_bubble_time(&s, 2.0) == 2.0 * 3 / 16); /* (p - 1) / (v m) */
    sched_free(&s);
}
END_TEST

START_TEST(sched_gpipe_vs_1f1b)
{
    /* p = 4, m = 8: bubble 3/8 of ideal time, 3/11 of wall time for both; GPipe holds all 8
     * micro-batches on every stage, 1F1B 4, 3, 2, 1. */
    struct sched g, f;
    ck_assert_int_eq(sched_build(SCHED_GPIPE, 4, 8, 1, &g, NULL), 0);
    ck_assert_int_eq(sched_build(SCHED_1F1B, 4, 8, 1, &f, NULL), 0);
    ck_assert(g.bubble_over_ideal == 0.375 && f.bubble_over_ideal == 0.375);
    ck_assert_double_eq_tol(f.bubble_over_wall, 3.0 / 11, 1e-15);
    for (int s = 0; s < 4; s++) {
        ck_assert_int_eq(g.peak_chunks[s], 8);
        ck_assert_int_eq(f.peak_chunks[s], 4 - s);
    }
    /* stage 0 of 1F1B: F0 F1 F2 (warm-up), F3 B0, F4 B1, ... */
    const char *want = "F0F1F2F3B0F4B1F5B2F6B3F7B4B5B6B7";
    char got[64] = "";
    for (int i = 0; i < f.count[0]; i++)
        snprintf(got + strlen(got), sizeof got - strlen(got), "%c%d",
                 sched_op_info(f.ops[0][i].kind)->letter, f.ops[0][i].micro);
    ck_assert_str_eq(got, want);
    /* the last stage starts its first forward after 3 forwards upstream */
    ck_assert_int_eq(f.ops[3][0].start, 3);
    sched_free(&g);
    sched_free(&f);
    /* interleaved, p 4, m 8, v 2: bubble halves; stage 0 warms up with 2*3 + 4 = 10 chunks */
    struct sched i;
    ck_assert_int_eq(sched_build(SCHED_INTERLEAVED, 4, 8, 2, &i, NULL), 0);
    ck_assert(i.bubble_over_ideal == 3.0 / 16);
    ck_assert_int_eq(i.peak_chunks[0], 11);
    ck_assert_int_eq(i.ops[0][4].chunk, 1); /* after micro-batches 0-3 of chunk 0 */
    sched_free(&i);
}
END_TEST

START_TEST(sched_bad_sizes)
{
    struct sched s;
    struct error e = {0};
    ck_assert_int_eq(sched_build(SCHED_INTERLEAVED, 4, 6, 2, &s, &e), ERR_INVAL);
    ck_assert_ptr_nonnull(strstr(e.msg, "multiple of stages 4"));
    ck_assert_int_eq(sched_build(SCHED_1F1B, 4, 8, 2, &s, &e), ERR_INVAL);
    ck_assert_ptr_nonnull(strstr(e.msg, "only the interleaved schedule has chunks"));
    ck_assert_int_eq(sched_build(SCHED_1F1B, 0, 8, 1, &s, &e), ERR_INVAL);
    ck_assert_int_eq(sched_build(SCHED_1F1B, 4, 0, 1, &s, &e), ERR_INVAL);
    ck_assert_int_eq(sched_build(SCHED_INTERLEAVED, 4, 8, 1, &s, &e), ERR_INVAL);
    enum calc_schedule k;
    ck_assert_int_eq(sched_parse("zigzag", &k, &e), ERR_INVAL);
}
END_TEST

/* ------------------------------------------------------------------ communication */

/* Context and expert parallelism's exposed time (calc/traffic.c), by hand from the presets and
 * the α-β link (nothing hides either: the ring's sends wait for their blocks, the experts'
 * all-to-alls are on the path). Ring attention, synthetic-7b at 32768 tokens, cp 4 x tp 2 on
 * one node: each layer's forward sends K and V C - 1 times, the backward K and V and their
 * gradients (3 (C - 1) sends of 2 blocks per layer, a full recompute's forward 4); a block is
 * b s kv_heads hd / (tp C) elements of 2 bytes, a send of two of them α + 2 block / β.
 * Experts, mixtral-8x7b at 4096 tokens with capacity factor 1 on ep 8: each expert layer's
 * dispatch and combine, forward and backward (4, a full recompute's 6), a pairwise all-to-all
 * of X = E cap d p bytes per GPU, cap = ceil(C k n / E): P - 1 steps of α + X / P / β. */
START_TEST(traffic_cp_ep_by_hand)
{
    struct cluster_spec cl;
    ck_assert_int_eq(preset_load_cluster("h100-80gb", &cl, NULL), 0);
    double a = cl.alpha_intra, b = cl.beta_intra;
    struct model_shape m = load_model("synthetic-7b");
    struct memory_config c = config_7b(&m);
    c.cp = 4, c.tp = 2, c.seq = 32768, c.sp = true, c.ckpt = (struct ckpt_policy){CKPT_NONE, 0};
    struct memory_result r;
    ck_assert_int_eq(memory_compute(&c, &r, NULL), 0);
    struct traffic t;
    double block = 1.0 * 32768 * 32 * 128 / (2 * 4) * 2, send = a + 2 * block / b;
    for (int full = 0; full < 2; full++) {
        c.ckpt = (struct ckpt_policy){full ? CKPT_FULL : CKPT_NONE, full};
        ck_assert_int_eq(traffic_compute(&c, &cl, 0, r.params_gpu, 32, 0, 0, &t, NULL), 0);
        double want = (4 - 1) * (3 + full) * 32 * send;
        ck_assert_msg(fabs(t.cp.exposed - want) <= 1e-12 * want, "cp: %.9g s, by hand %.9g",
                      t.cp.exposed, want);
    }
    struct model_shape x = load_model("mixtral-8x7b");
    x.capacity_factor = 1;
    c = config_7b(&x);
    c.dp = 8, c.ep = 8, c.seq = 4096, c.ckpt = (struct ckpt_policy){CKPT_NONE, 0};
    ck_assert_int_eq(memory_compute(&c, &r, NULL), 0);
    double n = 4096, cap = ceil(1.0 * 2 * n / 8), X = 8 * cap * 4096 * 2;
    double a2a = (8 - 1) * (a + X / 8 / b);
    for (int full = 0; full < 2; full++) {
        c.ckpt = (struct ckpt_policy){full ? CKPT_FULL : CKPT_NONE, full};
        ck_assert_int_eq(traffic_compute(&c, &cl, 0, r.params_gpu, 32, 0, 0, &t, NULL), 0);
        double want = (4 + 2 * full) * 32 * a2a;
        ck_assert_msg(fabs(t.ep.exposed - want) <= 1e-12 * want, "ep: %.9g s, by hand %.9g",
                      t.ep.exposed, want);
    }
}
END_TEST

/* What ring attention's blocks hide of its sends (traffic_cp_overlap), by hand: synthetic-7b
 * at 2048 tokens, cp 4, 4 sequences a micro-batch, GPUs at peak x 0.5. A block of n = s/C
 * tokens' forward attention is 4 h b pairs FLOPs: the own block's pairs n^2/2 + n/2 (either
 * split), another's n^2/2 balanced, n^2 on the naive split's busiest GPU. A send of two
 * blocks of K or V takes x = α + 2 b n h p / β; forward, steps 0 to C-2 each expose what x
 * exceeds its block by; backward the same for K and V at twice the block's FLOPs, and each of
 * the C-1 other blocks' gradients their whole x. The naive split's busiest GPU computes (C-1)
 * n^2/2 pairs a pass more than the mean, three passes. 1e-12 relative: the same sums. */
START_TEST(traffic_cp_overlap_by_hand)
{
    struct cluster_spec cl;
    ck_assert_int_eq(preset_load_cluster("h100-80gb", &cl, NULL), 0);
    struct model_shape m = load_model("synthetic-7b");
    struct memory_config c = config_7b(&m);
    c.cp = 4, c.micro_batch = 4, c.ckpt = (struct ckpt_policy){CKPT_NONE, 0};
    struct memory_result r;
    ck_assert_int_eq(memory_compute(&c, &r, NULL), 0);
    double rate = cl.peak_flops * 0.5, n = 2048.0 / 4, h = 4096, b = 4;
    double x = cl.alpha_intra + 2 * b * n * h * 2 / cl.beta_intra;
    double own = 4 * h * b * (n * n / 2 + n / 2) / rate;
    for (int naive = 0; naive < 2; naive++) {
        c.cp_naive = naive;
        double other = 4 * h * b * (naive ? n * n : n * n / 2) / rate;
        double fwd = fmax(x - own, 0) + 2 * fmax(x - other, 0);
        double bwd = fmax(x - 2 * own, 0) + 2 * fmax(x - 2 * other, 0) + 3 * x;
        struct traffic t;
        double wait;
        ck_assert_int_eq(traffic_compute(&c, &cl, 0, r.params_gpu, 32, 0, 0, &t, NULL), 0);
        traffic_cp_overlap(&c, &cl, 32, rate, &t, &wait);
        double want = 32 * (fwd + bwd),
               more = naive ? 3 * 32 * 4 * h * b * 3 * n * n / 2 / rate : 0;
        ck_assert_msg(fabs(t.cp.exposed - want) <= 1e-12 * want, "%s: cp %.9g s, by hand %.9g",
                      naive ? "naive" : "balanced", t.cp.exposed, want);
        ck_assert_msg(fabs(wait - more) <= 1e-12 * want, "%s: the busiest GPU %.9g s, by hand %.9g",
                      naive ? "naive" : "balanced", wait, more);
    }
}
END_TEST

/* The data-parallel traffic hidden behind compute holds the port tensor parallelism's sums
 * wait for (calc/traffic.c): under sequence parallelism all of it, up to the sums' time, as a
 * layer's pass opens with a gather; without, only what a layer's share (DDP: all of it in the
 * backward pass) exceeds the MLP's backward matmuls by, which run first. By hand for
 * synthetic-7b (h 4096, F 12544, s 2048): a layer's attention forward is 2 (4 h^2 + h) + 4 s h
 * FLOPs per token, its MLP's 2 (3 h F + h), the backward's twice; a micro-batch's forward pass
 * takes fwd seconds over 32 layers. Once the backward pass (2 fwd) is as long as the
 * all-reduce, DDP exposes a constant part of it (the last gradients' reduction), read off a
 * run whose matmuls hide the rest: the rest is what is hidden. */
START_TEST(traffic_port_shared)
{
    struct cluster_spec cl;
    ck_assert_int_eq(preset_load_cluster("h100-80gb", &cl, NULL), 0);
    struct model_shape m = load_model("synthetic-7b");
    struct memory_config c = config_7b(&m);
    c.dp = 4, c.tp = 2, c.zero = 0, c.micro_batch = 2, c.ckpt = (struct ckpt_policy){CKPT_NONE, 0};
    struct memory_result r;
    ck_assert_int_eq(memory_compute(&c, &r, NULL), 0);
    double h = 4096, F = 12544, s = 2048, L = 32;
    double attn = 2 * (4 * h * h + h) + 4 * s * h, ffn = 2 * (3 * h * F + h);
    struct traffic ts, tn;
    ck_assert_int_eq(traffic_compute(&c, &cl, 0, r.params_gpu, 32, 100, 200, &tn, NULL), 0);
    double own = tn.dp.exposed, hidden = tn.dp.time_s - own; /* 100 s hide it all */
    int seen_between = 0, seen = 0;
    for (double fwd = tn.dp.time_s / 2; fwd < 0.5; fwd *= 1.02, seen++) {
        c.sp = true;
        ck_assert_int_eq(traffic_compute(&c, &cl, 0, r.params_gpu, 32, fwd, 2 * fwd, &ts, NULL), 0);
        double want = own + fmin(hidden, ts.tp.time_s);
        ck_assert_msg(fabs(ts.dp.exposed - want) <= 1e-12 * want,
                      "sp, fwd %g: dp exposed %.9g, by hand %.9g", fwd, ts.dp.exposed, want);
        c.sp = false;
        ck_assert_int_eq(traffic_compute(&c, &cl, 0, r.params_gpu, 32, fwd, 2 * fwd, &tn, NULL), 0);
        double gap = fwd / L * 2 * ffn / (attn + ffn), past = L * fmax(hidden / L - gap, 0);
        want = own + fmin(fmin(hidden, tn.tp.time_s), past);
        ck_assert_msg(fabs(tn.dp.exposed - want) <= 1e-12 * want,
                      "fwd %g: dp exposed %.9g, by hand %.9g", fwd, tn.dp.exposed, want);
        seen_between += past > 0 && past < fmin(hidden, tn.tp.time_s);
    }
    ck_assert_int_gt(seen_between, 0); /* the formula's middle, not only its ends */
    ck_assert_int_gt(seen - seen_between, 0);
}
END_TEST

START_TEST(traffic_volumes)
{
    struct cluster_spec cl;
    ck_assert_int_eq(preset_load_cluster("h100-80gb", &cl, NULL), 0);
    cl.nodes = 8;
    struct memory_config c = config_7b(NULL);
    c.params = 7.5e9, c.dp = 64;
    struct traffic t, t3;
    double psi = 7.5e9;
    ck_assert_int_eq(traffic_compute(&c, &cl, 0, psi, 0, 0, 0, &t, NULL), 0);
    /* DDP: 2(N-1)/N Ψ x 2 bytes; 64 GPUs span 8 nodes: the inter-node link. */
    ck_assert_double_eq_tol(t.dp.bytes, 2 * 63.0 / 64 * psi * 2, 1);
    ck_assert_double_eq_tol(t.dp.time_s, 2 * 63 * 5e-6 + 2 * 63.0 / 64 * psi * 2 / 50e9, 1e-9);
    ck_assert_ptr_nonnull(strstr(t.dp.formula, "2(N-1)/N"));
    for (int z = 1; z <= 2; z++) {
        c.zero = z;
        ck_assert_int_eq(traffic_compute(&c, &cl, 0, psi, 0, 0, 0, &t3, NULL), 0);
        ck_assert_double_eq_tol(t3.dp.bytes, t.dp.bytes, 1);
    }
    c.zero = 3;
    ck_assert_int_eq(traffic_compute(&c, &cl, 0, psi, 0, 0, 0, &t3, NULL), 0);
    ck_assert_double_eq_tol(t3.dp.bytes, 1.5 * t.dp.bytes, 1);
    /* tensor parallel, synthetic-7b, t = 8, b 1, s 2048, bf16: 4 all-reduces x 32 layers of
     * 2(t-1)/t x sbh x 2 bytes; full recompute 6. */
    struct model_shape m = load_model("synthetic-7b");
    c = config_7b(&m);
    c.tp = 8, c.ckpt = (struct ckpt_policy){CKPT_NONE, 0};
    ck_assert_int_eq(traffic_compute(&c, &cl, 0, 1e9, 32, 1, 1, &t, NULL), 0);
    double sbh2 = 2048.0 * 4096 * 2, ar = 2 * 7.0 / 8;
    ck_assert_str_eq(t.tp.piece[0].name, "layers");
    ck_assert_double_eq_tol(t.tp.piece[0].bytes, 4 * 32 * ar * sbh2, 1);
    /* one stage holds both ends: the embedding's lookup, the head's input gradient and the
     * loss's three fp32 numbers per token, all-reduced */
    ck_assert_double_eq_tol(t.tp.bytes, (4 * 32 + 2) * ar * sbh2 + ar * 3 * 2048 * 4, 1);
    ck_assert_int_eq(t.tp.npieces, 4);
    ck_assert(t.tp.exposed == t.tp.time_s && t.dp.bytes == 0);
    c.ckpt = (struct ckpt_policy){CKPT_FULL, 1};
    ck_assert_int_eq(traffic_compute(&c, &cl, 0, 1e9, 32, 1, 1, &t, NULL), 0);
    ck_assert_double_eq_tol(t.tp.piece[0].bytes, 6 * 32 * ar * sbh2, 1);
    /* pipeline: a middle stage sends 2 m sbh p; an end one way, plus the tied embedding */
    c.tp = 1, c.pp = 4, c.micro_batches = 8;
    ck_assert_int_eq(traffic_compute(&c, &cl, 1, 1e9, 8, 1, 1, &t, NULL), 0);
    ck_assert(t.pp.bytes == 2 * 8 * sbh2);
    ck_assert_double_eq_tol(t.pp.exposed, 6 * (2e-6 + sbh2 / 450e9), 1e-12);
    ck_assert_int_eq(traffic_compute(&c, &cl, 0, 1e9, 8, 1, 1, &t, NULL), 0);
    ck_assert(t.pp.bytes == 8 * sbh2 + 51200.0 * 4096 * 2);
    ck_assert_str_eq(t.pp.piece[1].name, "tied_embedding");
    ck_assert_int_eq(traffic_compute(&c, &cl, 4, 1e9, 8, 1, 1, &t, NULL), ERR_INVAL);
}
END_TEST

/* ------------------------------------------------------------------ the planner */

/* plan_op_flops splits plan_model_flops by operation (a layer's forward, the ends'), which a
 * run timed as a model charges op by op (par/timeas.h): 3 (L layer + ends) per micro-batch is
 * the step's count, for every preset without experts. */
START_TEST(plan_ops_add_up)
{
    static const char *models[] = {"tiny", "small", "synthetic-7b", "llama2-70b", "gpt3-175b"};
    for (size_t i = 0; i < sizeof models / sizeof models[0]; i++) {
        struct model_shape m = load_model(models[i]);
        double layer, ends, params = params_total(&m), b = 2, T = 16.0 * m.seq;
        plan_op_flops(&m, params, (int)b, m.seq, &layer, &ends);
        double step = 3 * (m.layers * layer + ends) * (T / (b * m.seq));
        ck_assert_double_eq_tol(step / plan_model_flops(&m, params, T, m.seq), 1, 1e-12);
    }
}
END_TEST

/* The pipeline's slowest stage (calc/plan.h), by hand: synthetic-7b on 4 stages of 8 layers,
 * 4 micro-batches of 1 x 2048 tokens; a layer's forward 2 (4 d^2 + 3 d f + 2 d) s + 4 s^2 d,
 * the last stage's head (the tied embedding and the final norm) 2 (V d + d) s; each of the m -
 * 1 micro-batches after the first waits for the last stage's extra over the mean. */
START_TEST(plan_slowest_stage)
{
    struct model_shape m = load_model("synthetic-7b");
    struct cluster_spec cl;
    ck_assert_int_eq(preset_load_cluster("h100-80gb", &cl, NULL), 0);
    struct plan_config c = {
        &m, &cl, 4,          4, 2048, FP_BF16, OPT_ADAMW, false, 0.5, cl.hbm_bytes, FRAMEWORK_NONE,
        1,  1,   ACTIV_FLASH};
    struct plan_result r;
    struct error e = {0};
    ck_assert_msg(plan_run(&c, &r, &e) == 0, "%s", e.msg);
    const struct plan_layout *l = NULL;
    for (size_t i = 0; i < r.n_kept; i++)
        if (r.kept[i].pp == 4 && r.kept[i].ckpt.kind == CKPT_NONE && r.kept[i].micro_batch == 1)
            l = &r.kept[i];
    ck_assert_ptr_nonnull(l);
    ck_assert_int_eq(l->micro_batches, 4);
    double d = 4096, f = 12544, s = 2048, V = 51200;
    double layer = 3 * (2 * (4 * d * d + 3 * d * f + 2 * d) * s + 4 * s * s * d);
    double head = 3 * 2 * (V * d + d) * s, mean = (32 * layer + head) / 4;
    double want = 3.0 / 4 * l->compute_s * ((8 * layer + head) / mean - 1);
    ck_assert_double_eq_tol(l->imbalance_s / want, 1, 1e-12);
    ck_assert(l->step_time_s == l->compute_s + l->bubble_s + l->imbalance_s + l->comm_exposed_s);
    for (size_t i = 0; i < r.n_kept; i++) /* one stage: no imbalance */
        ck_assert(r.kept[i].pp > 1 || r.kept[i].imbalance_s == 0);
    plan_free(&r);
}
END_TEST

START_TEST(plan_7b_on_one_node)
{
    struct model_shape m = load_model("synthetic-7b");
    struct cluster_spec cl;
    ck_assert_int_eq(preset_load_cluster("h100-80gb", &cl, NULL), 0);
    struct plan_config c = {&m,        &cl,        8,   256,          2048,           FP_BF16,
                            OPT_ADAMW, false,      0.5, cl.hbm_bytes, FRAMEWORK_NONE, 1,
                            1,         ACTIV_FLASH};
    struct plan_result r;
    struct error e = {0};
    ck_assert_msg(plan_run(&c, &r, &e) == 0, "%s", e.msg);
    ck_assert(r.n_kept > 10 && r.n_rejected > 0);
    for (size_t i = 0; i < r.n_kept; i++) {
        const struct plan_layout *l = &r.kept[i];
        ck_assert_int_eq(l->dp * l->tp * l->pp, 8);
        ck_assert(l->per_gpu_bytes <= cl.hbm_bytes);
        ck_assert(i == 0 || l->step_time_s >= r.kept[i - 1].step_time_s);
        ck_assert(l->mfu > 0 && l->mfu <= 0.5 + 1e-12); /* at most the efficiency */
        ck_assert_int_eq(l->micro_batch * l->micro_batches * l->dp, 256);
    }
    /* compute of the best: (6Ψ + 12 L h s) T / (8 x peak x 0.5), T = 256 x 2048 tokens,
     * no recompute for the best layout. */
    double T = 256.0 * 2048;
    double flops = (6 * 7289966592.0 + 12.0 * 32 * 4096 * 2048) * T;
    ck_assert(r.model_flops == flops);
    ck_assert_int_eq(r.kept[0].ckpt.kind, CKPT_NONE);
    ck_assert_double_eq_tol(r.kept[0].compute_s, flops / (8 * 989.4e12 * 0.5), 1e-9);
    /* the rejected ones say by how much they overflow, the closest first */
    ck_assert(r.rejected[0].over > 0);
    ck_assert_ptr_nonnull(strstr(r.rejected[0].reason, "GiB over the 80.00 GiB"));
    /* no DDP layout without sharding fits: 108.63 GiB of states */
    for (size_t i = 0; i < r.n_kept; i++)
        ck_assert(!(r.kept[i].dp == 8 && r.kept[i].zero == 0));
    plan_free(&r);
}
END_TEST

START_TEST(plan_reasons_and_scale)
{
    struct model_shape m = load_model("synthetic-7b");
    struct cluster_spec cl;
    ck_assert_int_eq(preset_load_cluster("h100-80gb", &cl, NULL), 0);
    cl.nodes = 6;
    struct plan_config c = {&m,        &cl,        48,  96,           2048,           FP_BF16,
                            OPT_ADAMW, false,      0.5, cl.hbm_bytes, FRAMEWORK_NONE, 1,
                            1,         ACTIV_FLASH};
    struct plan_result r;
    struct error e = {0};
    ck_assert_int_eq(plan_run(&c, &r, &e), 0);
    bool tp3 = false;
    for (size_t i = 0; i < r.n_rejected; i++)
        tp3 |= r.rejected[i].tp == 3 &&
               strstr(r.rejected[i].reason, "tp 3 does not divide the 32 attention heads");
    ck_assert(tp3);
    plan_free(&r);
    /* 4096 GPUs: runs (the CLI test times it loosely; unit tests assert no timings) */
    cl.nodes = 512;
    c.gpus = 4096, c.global_batch = 2048;
    ck_assert_int_eq(plan_run(&c, &r, &e), 0);
    ck_assert(r.n_kept > 0);
    plan_free(&r);
    c.gpus = 5000;
    ck_assert_int_eq(plan_run(&c, &r, &e), ERR_INVAL);
    ck_assert_ptr_nonnull(strstr(e.msg, "the cluster has 4096 GPUs"));
    c.gpus = 8, c.efficiency = 0;
    ck_assert_int_eq(plan_run(&c, &r, &e), ERR_INVAL);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("calc");
    TCase *tc = tcase_create("presets");
    tcase_add_test(tc, presets_load);
    tcase_add_test(tc, preset_shape_fields);
    tcase_add_test(tc, preset_unknown_names_the_presets);
    tcase_add_test(tc, model_file_parses);
    tcase_add_test(tc, model_file_errors);
    tcase_add_test(tc, cluster_file_errors);
    suite_add_tcase(s, tc);
    tc = tcase_create("params");
    tcase_add_test(tc, params_synthetic_7b);
    tcase_add_test(tc, params_known_models);
    tcase_add_test(tc, params_sharding);
    suite_add_tcase(s, tc);
    tc = tcase_create("memory");
    tcase_add_test(tc, zero_paper_numbers);
    tcase_add_test(tc, memory_synthetic_7b);
    tcase_add_test(tc, memory_bad_layouts);
    tcase_add_test(tc, korthikanti_gpt3);
    tcase_add_test(tc, swiglu_tiny_by_hand);
    tcase_add_test(tc, swiglu_formula);
    tcase_add_test(tc, one_attention_model);
    tcase_add_test(tc, interleaved_needs_stages);
    tcase_add_test(tc, policy_parsing);
    suite_add_tcase(s, tc);
    tc = tcase_create("schedules");
    tcase_add_test(tc, sched_bubbles_match_formulas);
    tcase_add_test(tc, sched_gpipe_vs_1f1b);
    tcase_add_test(tc, sched_kinds_and_bubble_time);
    tcase_add_test(tc, sched_bad_sizes);
    suite_add_tcase(s, tc);
    tc = tcase_create("plan");
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, traffic_volumes);
    tcase_add_test(tc, traffic_port_shared);
    tcase_add_test(tc, traffic_cp_ep_by_hand);
    tcase_add_test(tc, traffic_cp_overlap_by_hand);
    tcase_add_test(tc, plan_7b_on_one_node);
    tcase_add_test(tc, plan_ops_add_up);
    tcase_add_test(tc, plan_slowest_stage);
    tcase_add_test(tc, plan_reasons_and_scale);
    suite_add_tcase(s, tc);
    return harness_run(s);
}
