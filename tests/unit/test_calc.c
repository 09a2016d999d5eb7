/* Unit tests of src/calc: presets and their loader, parameter counts, model-state memory
 * (ZeRO paper), activation memory (Korthikanti et al. 2022 and our derivation), communication
 * volume, pipeline schedules and their bubbles, and the planner. */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "base/error.h"
#include "calc/params.h"
#include "calc/preset.h"
#include "harness.h"

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
        struct cluster c;
        struct error e = {0};
        ck_assert_msg(preset_load_cluster(clusters[i], &c, &e) == 0, "%s", e.msg);
        ck_assert_str_eq(c.name, clusters[i]);
        ck_assert(c.peak_flops > 1e14 && c.hbm > 30 * GiB && c.beta_intra > c.beta_inter);
    }
    struct cluster c;
    ck_assert_int_eq(preset_load_cluster("h100-80gb", &c, NULL), 0);
    ck_assert(c.hbm == 80 * GiB && c.gpus_per_node == 8 && c.nodes == 1);
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
    struct cluster c;
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
        {"heads", "heads = 5", "t.ini:2: heads (5) must divide d_model (64)"},
        {"kv_heads", "kv_heads = 3", "t.ini:2: kv_heads (3) must divide heads (4)"},
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
    struct cluster c;
    struct error e = {0};
    ck_assert_msg(preset_parse_cluster(good, "c.ini", &c, &e) == 0, "%s", e.msg);
    ck_assert_str_eq(c.gpu, "c"); /* gpu defaults to the name */
    ck_assert(c.hbm == 80 * GiB && c.nodes == 2);
    static const struct {
        const char *from, *to, *want;
    } cases[] = {
        {"hbm = 80GiB", "hbm = 80 parsecs", "c.ini:5: 'hbm' must be a size (e.g. 80GiB) above 0"},
        {"hbm = 80GiB", "hbm = 0", "c.ini:5: 'hbm' must be a size"},
        {"peak_flops = 1e15", "peak_flops = nan", "c.ini:6: 'peak_flops' must be a number above 0"},
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
    ck_assert(params_total(&(struct model_shape){"", 40, 5120, 40, 40, 13824, 32000, 4096,
                                                 FFN_SWIGLU, false}) == 13015864320.0);
    struct model_shape m70 = load_model("llama2-70b");
    ck_assert(params_total(&m70) == 68976648192.0);
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
    return harness_run(s);
}
