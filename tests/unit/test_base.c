/* Unit tests of src/base: number and size parsing and formatting, the random generator, the
 * phase timers, the JSON policy; and of src/cli/opts: the option reader and option tables. */
#include "config.h"

#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "base/error.h"
#include "base/json.h"
#include "base/prof.h"
#include "base/rng.h"
#include "base/units.h"
#include "cli/opts.h"
#include "harness.h"

START_TEST(parse_double_accepts_numbers)
{
    double v;
    ck_assert_int_eq(units_parse_double("0.1", false, &v, NULL), 0);
    ck_assert(v == 0.1);
    ck_assert_int_eq(units_parse_double("-1.5e-3", false, &v, NULL), 0);
    ck_assert(v == -1.5e-3);
    ck_assert_int_eq(units_parse_double("inf", true, &v, NULL), 0);
    ck_assert(isinf(v) && v > 0);
    ck_assert_int_eq(units_parse_double("-inf", true, &v, NULL), 0);
    ck_assert(isinf(v) && v < 0);
    ck_assert_int_eq(units_parse_double("nan", true, &v, NULL), 0);
    ck_assert(isnan(v));
}
END_TEST

START_TEST(parse_double_rejects_garbage)
{
    const char *bad[] = {"", "abc", "1e", "1.5x", " 1", "1 ", "--1", "1e+"};
    struct error e = {0};
    double v = 42;
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        ck_assert_int_eq(units_parse_double(bad[i], true, &v, &e), ERR_INVAL);
        ck_assert_ptr_nonnull(strstr(e.msg, "not a number"));
    }
    ck_assert_int_eq(units_parse_double("inf", false, &v, &e), ERR_INVAL);
    ck_assert(v == 42);
}
END_TEST

START_TEST(parse_int_ranges)
{
    long long v;
    struct error e;
    ck_assert_int_eq(units_parse_int("17", 1, 256, &v, &e), 0);
    ck_assert_int_eq(v, 17);
    ck_assert_int_eq(units_parse_int("0", 1, 256, &v, &e), ERR_INVAL);
    ck_assert_ptr_nonnull(strstr(e.msg, "out of range (1 to 256)"));
    ck_assert_int_eq(units_parse_int("3.5", 1, 256, &v, &e), ERR_INVAL);
    ck_assert_int_eq(units_parse_int("99999999999999999999", 1, 256, &v, &e), ERR_INVAL);
    ck_assert_int_eq(units_parse_int("", 1, 256, &v, &e), ERR_INVAL);
}
END_TEST

START_TEST(parse_bytes_units)
{
    double v;
    struct error e;
    ck_assert_int_eq(units_parse_bytes("64MiB", 1e18, &v, &e), 0);
    ck_assert(v == 64.0 * 1048576);
    ck_assert_int_eq(units_parse_bytes("1GB", 1e18, &v, &e), 0);
    ck_assert(v == 1e9);
    ck_assert_int_eq(units_parse_bytes("80 GiB", 1e18, &v, &e), 0);
    ck_assert(v == 80.0 * 1073741824);
    ck_assert_int_eq(units_parse_bytes("4096", 1e18, &v, &e), 0);
    ck_assert(v == 4096);
    ck_assert_int_eq(units_parse_bytes("1.5kB", 1e18, &v, &e), 0);
    ck_assert(v == 1500);
    ck_assert_int_eq(units_parse_bytes("-1MiB", 1e18, &v, &e), ERR_INVAL);
    ck_assert_ptr_nonnull(strstr(e.msg, "negative"));
    ck_assert_int_eq(units_parse_bytes("12 parsecs", 1e18, &v, &e), ERR_INVAL);
    ck_assert_ptr_nonnull(strstr(e.msg, "unknown unit"));
    ck_assert_int_eq(units_parse_bytes("nan", 1e18, &v, &e), ERR_INVAL);
    ck_assert_int_eq(units_parse_bytes("2TB", 1e12, &v, &e), ERR_INVAL);
    ck_assert_ptr_nonnull(strstr(e.msg, "too large"));
    /* "7.5B" is 7.5 billion as a count, so never 7.5 bytes as a size: refused with a hint */
    ck_assert_int_eq(units_parse_bytes("7.5B", 1e18, &v, &e), ERR_INVAL);
    ck_assert_ptr_nonnull(strstr(e.msg, "not billions: for 7.5 billion bytes write 7.5GB"));
    ck_assert_int_eq(units_parse_bytes("7.5 b", 1e18, &v, &e), ERR_INVAL);
    ck_assert_int_eq(units_parse_bytes("100.5", 1e18, &v, &e), ERR_INVAL);
    ck_assert_ptr_nonnull(strstr(e.msg, "whole number (or give a unit"));
    ck_assert_int_eq(units_parse_bytes("512B", 1e18, &v, &e), 0); /* whole bytes: fine */
    ck_assert(v == 512);
    ck_assert_int_eq(units_parse_bytes("7.5GB", 1e18, &v, &e), 0);
    ck_assert(v == 7.5e9);
    ck_assert_int_eq(units_parse_bytes("0.5KiB", 1e18, &v, &e), 0);
    ck_assert(v == 512);
}
END_TEST

START_TEST(parse_count_suffixes)
{
    double v;
    struct error e;
    ck_assert_int_eq(units_parse_count("7.5B", 1e15, &v, &e), 0);
    ck_assert(v == 7.5e9);
    ck_assert_int_eq(units_parse_count("7.5e9", 1e15, &v, &e), 0);
    ck_assert(v == 7.5e9);
    ck_assert_int_eq(units_parse_count("13M", 1e15, &v, &e), 0);
    ck_assert(v == 13e6);
    ck_assert_int_eq(units_parse_count("7.5Q", 1e15, &v, &e), ERR_INVAL);
    ck_assert_int_eq(units_parse_count("7.5BB", 1e15, &v, &e), ERR_INVAL);
}
END_TEST

START_TEST(format_bytes_and_counts)
{
    char buf[64];
    /* synthetic-7b's model states: 16 bytes per parameter. */
    ck_assert_str_eq(units_format_bytes(buf, sizeof buf, 16.0 * 7289966592.0, UNITS_BINARY),
                     "108.63 GiB");
    ck_assert_str_eq(units_format_bytes(buf, sizeof buf, 16.0 * 7289966592.0, UNITS_DECIMAL),
                     "116.64 GB");
    ck_assert_str_eq(units_format_bytes(buf, sizeof buf, 512, UNITS_BINARY), "512 B");
    ck_assert_str_eq(units_format_bytes(buf, sizeof buf, 1048576, UNITS_BINARY), "1.00 MiB");
    ck_assert_str_eq(units_format_bytes_in(buf, sizeof buf, 1.875e9, "GB"), "1.88 GB");
    ck_assert_str_eq(units_format_grouped(buf, sizeof buf, 7289966592ULL), "7,289,966,592");
    ck_assert_str_eq(units_format_grouped(buf, sizeof buf, 999), "999");
    ck_assert_str_eq(units_format_seconds(buf, sizeof buf, 2.5e-6), "2.5 us");
    /* the unit that suits a figure: the largest that keeps it at 1 or more */
    ck_assert_str_eq(units_auto_unit(1023, UNITS_BINARY), "B");
    ck_assert_str_eq(units_auto_unit(1024, UNITS_AUTO), "KiB");
    ck_assert_str_eq(units_auto_unit(-3.0 * 1048576, UNITS_BINARY), "MiB");
    ck_assert_str_eq(units_auto_unit(80.0 * 1073741824, UNITS_BINARY), "GiB");
    ck_assert_str_eq(units_auto_unit(2e12, UNITS_DECIMAL), "TB");
    ck_assert_str_eq(units_auto_unit(NAN, UNITS_BINARY), "B");
    enum units_system sys = UNITS_BINARY;
    ck_assert_int_eq(units_parse_system("Auto", &sys, NULL), 0);
    ck_assert_int_eq(sys, UNITS_AUTO);
    ck_assert_int_lt(units_parse_system("MB", &sys, NULL), 0);
}
END_TEST

/* A NaN is written "NaN" in the field's width, never C's "nan" or "-nan"; numbers as printf. */
START_TEST(format_num_nan)
{
    char buf[32];
    ck_assert_str_eq(units_format_num(buf, sizeof buf, "%8.4f", NAN), "     NaN");
    ck_assert_str_eq(units_format_num(buf, sizeof buf, "%8.4f", -NAN), "     NaN");
    ck_assert_str_eq(units_format_num(buf, sizeof buf, "%-6.2g|", NAN), "NaN   |");
    ck_assert_str_eq(units_format_num(buf, sizeof buf, "%.3g", -NAN), "NaN");
    ck_assert_str_eq(units_format_num(buf, sizeof buf, "norm %.3g", -NAN), "norm NaN");
    ck_assert_str_eq(units_format_num(buf, sizeof buf, "%8.4f", 1.5), "  1.5000");
    ck_assert_str_eq(units_format_num(buf, sizeof buf, "%.3g", -INFINITY), "-inf");
}
END_TEST

START_TEST(rng_reproducible_and_uniform)
{
    struct rng a, b, c, u;
    rng_seed(&u, 99, 0);
    rng_seed(&a, 1234, 0);
    rng_seed(&b, 1234, 0);
    rng_seed(&c, 1234, 1);
    int same_stream = 1, other_stream_differs = 0;
    double sum = 0;
    for (int i = 0; i < 100000; i++) {
        uint64_t x = rng_u64(&a);
        same_stream &= x == rng_u64(&b);
        other_stream_differs |= x != rng_u64(&c);
        sum += rng_uniform(&u);
    }
    ck_assert(same_stream);
    ck_assert(other_stream_differs);
    /* mean of 1e5 uniforms: standard error 0.0009; 5 sigma. */
    ck_assert_double_eq_tol(sum / 100000, 0.5, 0.0046);
    for (int i = 0; i < 1000; i++)
        ck_assert_uint_lt(rng_below(&u, 7), 7);
}
END_TEST

/* Sizes in bits are refused; beyond double's range is still a number. */
START_TEST(parse_edges)
{
    double v;
    struct error e = {0};
    ck_assert_int_eq(units_parse_bytes("64Mb", 1e15, &v, &e), ERR_INVAL);
    ck_assert_ptr_nonnull(strstr(e.msg, "bits"));
    ck_assert_int_eq(units_parse_bytes("64gib", 1e15, &v, &e), ERR_INVAL);
    ck_assert_int_eq(units_parse_bytes("64MiB", 1e15, &v, &e), 0);
    ck_assert(v == 64.0 * 1024 * 1024);
    ck_assert_int_eq(units_parse_bytes("1e400", 1e15, &v, &e), ERR_INVAL);
    ck_assert_ptr_nonnull(strstr(e.msg, "too large"));
    ck_assert_int_eq(units_parse_double("1e400", true, &v, &e), 0);
    ck_assert(isinf(v) && v > 0);
    ck_assert_int_eq(units_parse_double("1e400", false, &v, &e), ERR_INVAL);
    ck_assert_int_eq(units_parse_double("-1e-400", false, &v, &e), 0);
    ck_assert(v == 0 && signbit(v));
    ck_assert_int_eq(units_parse_count("1e400", 1e15, &v, &e), ERR_INVAL);
    ck_assert_ptr_nonnull(strstr(e.msg, "too large"));
}
END_TEST

/* With once, an option given twice is an error, unless it is repeatable. */
START_TEST(opts_once)
{
    static const struct opt table[] = {{"gpus", 0, true}, {"inject", 0, true}, {NULL, 0, false}};
    static const char *const rep[] = {"inject", NULL};
    char *argv[] = {"x", "--inject", "a", "--gpus", "1", "--inject=b", "--gpus", "2"};
    struct opts p;
    const char *arg;
    opts_init(&p, 8, argv, table, "x");
    p.once = true;
    p.repeatable = rep;
    ck_assert_int_eq(opts_next(&p, &arg), 1);
    ck_assert_int_eq(opts_next(&p, &arg), 0);
    ck_assert_int_eq(opts_next(&p, &arg), 1);
    ck_assert_str_eq(arg, "b");
    ck_assert_int_eq(opts_next(&p, &arg), OPTS_ERROR);
    opts_init(&p, 8, argv, table, "x"); /* without once: the last one wins, as before */
    int k, gpus = 0;
    while ((k = opts_next(&p, &arg)) != OPTS_END)
        if (k == 0)
            gpus = arg[0] - '0';
    ck_assert_int_eq(gpus, 2);
}
END_TEST

/* Nested phases count exclusive time: the inner phase's time is not
 * the outer's too, so the phases add up to the time between the outermost enter and leave
 * (read here around them); detached, nothing is counted. */
static void busy(double seconds)
{
    double t0 = clock_now();
    while (clock_now() - t0 < seconds)
        ;
}

START_TEST(phase_timers_nest_exclusively)
{
    struct prof p = {0};
    prof_attach(&p);
    double t0 = clock_now();
    prof_enter(PROF_MATMUL);
    busy(1e-3);
    prof_enter(PROF_ROUNDING);
    busy(2e-3);
    prof_leave();
    busy(1e-3);
    prof_leave();
    double t1 = clock_now();
    prof_attach(NULL);
    prof_enter(PROF_NORM);
    busy(1e-4);
    prof_leave();
    ck_assert_int_eq(p.depth, 0);
    ck_assert_double_ge(p.seconds[PROF_MATMUL], 2e-3);
    ck_assert_double_ge(p.seconds[PROF_ROUNDING], 2e-3);
    double sum = 0;
    for (int i = 0; i < PROF_PHASES; i++)
        sum += p.seconds[i];
    ck_assert_double_le(sum, t1 - t0);
    ck_assert_double_ge(sum, 4e-3);
    ck_assert(p.seconds[PROF_NORM] == 0);
    ck_assert_str_eq(prof_name(PROF_MATMUL), "matmuls");
}
END_TEST

/* A command's table: every kind of entry read into its struct, a repeatable option, the
 * refusals (twice, conflicting, a bad value, an unwanted positional argument), and the help's
 * option lines in one column. */
struct table_args {
    int n;
    bool flag, other;
    const char *name, *which;
    int adds;
};

static int add_one(const struct opt_entry *o, const char *arg, void *field, struct error *e)
{
    (void)o, (void)arg, (void)e;
    ++*(int *)field;
    return 0;
}

static const struct opt_entry table_opts[] = {
    OPT_INT("n", "N", struct table_args, n, 1, 8, "a number, 1 to 8"),
    OPT_FLAG("flag", struct table_args, flag, "a flag\nover two lines"),
    OPT_FLAG("other", struct table_args, other, "excludes --flag"),
    {.opt = {.name = "name", .has_arg = true},
     .arg = "S",
     .parse = opts_str,
     .field = offsetof(struct table_args, name),
     .help = "a name"},
    {.opt = {.name = "add", .has_arg = true},
     .arg = "X",
     .parse = add_one,
     .field = offsetof(struct table_args, adds),
     .help = "adds up",
     .flags = OPT_REPEAT},
    OPT_END,
};
static const struct opt_entry table_pos = {.opt = {.name = "thing"},
                                           .arg = "THING",
                                           .parse = opts_one,
                                           .field = offsetof(struct table_args, which),
                                           .help = "the thing"};
static const char *const table_conflicts[] = {"flag", "other", NULL};

static int table_parse(const struct opt_entry *pos, struct table_args *a, int argc, ...)
{
    char *argv[16] = {"t"};
    va_list ap;
    va_start(ap, argc);
    for (int i = 1; i < argc; i++)
        argv[i] = va_arg(ap, char *);
    va_end(ap);
    *a = (struct table_args){.n = 3};
    struct opts_spec spec = {"t", table_opts, pos, table_conflicts};
    return opts_parse(&spec, argc, argv, a);
}

START_TEST(opts_table)
{
    struct table_args a;
    ck_assert_int_eq(
        table_parse(&table_pos, &a, 8, "--n=5", "--flag", "--name", "x", "--add", "1", "--add=2"),
        0);
    ck_assert(a.n == 5 && a.flag && !a.other && !strcmp(a.name, "x") && a.adds == 2);
    ck_assert_ptr_null(a.which);
    ck_assert_int_eq(table_parse(&table_pos, &a, 2, "it"), 0);
    ck_assert(a.n == 3 && !a.flag && !strcmp(a.which, "it"));
    ck_assert_int_eq(table_parse(&table_pos, &a, 3, "it", "that"), 2);           /* one at a time */
    ck_assert_int_eq(table_parse(&table_pos, &a, 3, "--flag", "--other"), 2);    /* conflict */
    ck_assert_int_eq(table_parse(&table_pos, &a, 5, "--n", "1", "--n", "2"), 2); /* twice */
    ck_assert_int_eq(table_parse(&table_pos, &a, 3, "--n", "9"), 2);             /* range */
    ck_assert_int_eq(table_parse(&table_pos, &a, 2, "--nn"), 2);                 /* unknown */
    ck_assert_int_eq(table_parse(NULL, &a, 2, "it"), 2); /* no positional taken */
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    ck_assert_ptr_nonnull(f);
    struct opts_spec spec = {"t", table_opts, &table_pos, table_conflicts};
    opts_usage(f, &spec);
    fclose(f);
    ck_assert_str_eq(text, "  THING     the thing\n"
                           "  --n N     a number, 1 to 8\n"
                           "  --flag    a flag\n"
                           "            over two lines\n"
                           "  --other   excludes --flag\n"
                           "  --name S  a name\n"
                           "  --add X   adds up\n");
    free(text);
}
END_TEST

/* An engine's message in a command's words: a word naming one of its options and followed by
 * a value gets its "--"; other words, flags already written and names without a value stay. */
START_TEST(opts_flag_words_names_options)
{
    struct opts_spec spec = {"t", table_opts, NULL, NULL};
    struct error e = {0};
    error_set(&e, ERR_INVAL, "n 9: more than name 2 (n, flag 1, --n 3, nn 4, an 5, name x)");
    opts_flag_words(&spec, &e);
    ck_assert_str_eq(e.msg, "--n 9: more than --name 2 (n, flag 1, --n 3, nn 4, an 5, name x)");
}
END_TEST

/* The JSON policy: non-finite numbers as strings, whole numbers exact, the two precisions. */
START_TEST(json_policy)
{
    char b[64];
    ck_assert_str_eq(json_num_text(b, sizeof b, NAN, 9), "nan");
    ck_assert_str_eq(json_num_text(b, sizeof b, -INFINITY, 9), "-inf");
    ck_assert_str_eq(json_num_text(b, sizeof b, (float)0.1, 9), "0.100000001");
    json_t *doc =
        json_pack("{s:o, s:o, s:o, s:o, s:o}", "a", json_num(INFINITY), "b", json_num(0.1), "c",
                  json_whole(1e15), "d", json_whole(1e300), "e", json_num(NAN));
    ck_assert_ptr_nonnull(doc);
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    ck_assert_ptr_nonnull(f);
    json_incref(doc);
    json_incref(doc);
    ck_assert_int_eq(json_write(f, doc, JSON_EXACT), 0);
    fputc('|', f);
    json_write(f, doc, JSON_FIGURES);
    fputc('|', f);
    ck_assert_int_eq(json_write_line(f, doc, JSON_FIGURES), 0);
    fputc('|', f);
    json_put_num(f, -INFINITY, JSON_EXACT);
    fputc(' ', f);
    json_put_num(f, 1.0 / 3, JSON_FIGURES);
    fclose(f);
    ck_assert_str_eq(text, "{\n  \"a\": \"inf\",\n  \"b\": 0.10000000000000001,\n"
                           "  \"c\": 1000000000000000,\n  \"d\": 1.0000000000000001e300,\n"
                           "  \"e\": \"nan\"\n}\n|"
                           "{\n  \"a\": \"inf\",\n  \"b\": 0.1,\n  \"c\": 1000000000000000,\n"
                           "  \"d\": 1e300,\n  \"e\": \"nan\"\n}\n|"
                           "{\"a\":\"inf\",\"b\":0.1,\"c\":1000000000000000,\"d\":1e300,"
                           "\"e\":\"nan\"}\n|\"-inf\" 0.3333333333");
    free(text);
}
END_TEST

/* A string written by hand into a stream (traces): quoted and escaped, NULL as "", bytes that
 * are not UTF-8 left out. */
START_TEST(json_strings_are_escaped)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    ck_assert_ptr_nonnull(f);
    json_put_str(f, "a \"b\"\\c\n\t");
    fputc(' ', f);
    json_put_str(f, NULL);
    fputc(' ', f);
    json_put_str(f, "x\xff"
                    "y");
    fclose(f);
    ck_assert_str_eq(text, "\"a \\\"b\\\"\\\\c\\n\\t\" \"\" \"xy\"");
    free(text);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("base");
    TCase *tc = tcase_create("units");
    tcase_add_test(tc, parse_double_accepts_numbers);
    tcase_add_test(tc, phase_timers_nest_exclusively);
    tcase_add_test(tc, parse_double_rejects_garbage);
    tcase_add_test(tc, parse_int_ranges);
    tcase_add_test(tc, parse_bytes_units);
    tcase_add_test(tc, parse_count_suffixes);
    tcase_add_test(tc, format_bytes_and_counts);
    tcase_add_test(tc, format_num_nan);
    tcase_add_test(tc, rng_reproducible_and_uniform);
    tcase_add_test(tc, parse_edges);
    tcase_add_test(tc, opts_once);
    tcase_add_test(tc, opts_table);
    tcase_add_test(tc, opts_flag_words_names_options);
    tcase_add_test(tc, json_policy);
    tcase_add_test(tc, json_strings_are_escaped);
    suite_add_tcase(s, tc);
    return harness_run(s);
}
