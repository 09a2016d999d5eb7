/* Unit tests of src/lesson: the lesson parser and its error messages, answer checking,
 * expectations, quantities, the ASCII fallback, saved progress, and the shipped lessons. */
#include "config.h"

#include <ctype.h>
#include <dirent.h>
#include <jansson.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/error.h"
#include "harness.h"
#include "lesson/ascii.h"
#include "lesson/figure.h"
#include "lesson/lesson.h"
#include "lesson/progress.h"
#include "lesson/quantity.h"
#include "calc/params.h"
#include "calc/preset.h"
#include "sim/spec.h"

/* text, with the "@end" line every whole lesson ends with when it has none */
static char *with_end(const char *text, size_t *len)
{
    static char buf[65536];
    bool has = strstr(text, "\n@end") != NULL || !strstr(text, "@step");
    *len = (size_t)snprintf(buf, sizeof buf, "%s%s%s", text,
                            has || (*len && text[*len - 1] == '\n') || !*len ? "" : "\n",
                            has ? "" : "@end\n");
    return buf;
}

static struct lesson *parse_ok(const char *text)
{
    struct lesson *l = NULL;
    struct error e = {0};
    size_t len = strlen(text);
    text = with_end(text, &len);
    int rc = lesson_parse_string("t.lesson", text, len, &l, &e);
    ck_assert_msg(rc == 0, "parse failed: %s", e.msg);
    ck_assert_ptr_nonnull(l);
    return l;
}

/* Parses text that must fail; returns the message. */
static const char *parse_bad(const char *text, size_t len)
{
    static struct error e;
    struct lesson *l = (struct lesson *)1;
    memset(&e, 0, sizeof e);
    if (!memchr(text, '\0', len))
        text = with_end(text, &len);
    ck_assert_int_eq(lesson_parse_string("t.lesson", text, len, &l, &e), ERR_INVAL);
    ck_assert_ptr_null(l);
    return e.msg;
}

#define HEAD "@title T\n@duration 5 min\n@outcome do a thing\n"

/* ------------------------------------------------------------------ good files */

static const char good[] = "# a comment\n"
                           "@title Number formats\n"
                           "@short Formats\n"
                           "@duration 40 min\n"
                           "@outcome choose bf16 or fp16\n"
                           "@outcome debug a loss scaler\n"
                           "@panel formats value=1 format=fp32\n"
                           "\n"
                           "@step First\n"
                           "\n"
                           "Some text, with UTF-8: 2^-24 ≈ 6e-8.\n"
                           "\n"
                           " a preformatted line\n"
                           "\\@ not a directive\n"
                           "\\# not a comment\n"
                           "\n"
                           "@step Second\n"
                           "@panel formats value=65504 format=fp16 label=\"a b\"\n"
                           "@run formats 65520 --json\n"
                           "@expect values[0].fp16.value is inf\n"
                           "@expect values[0].bf16.value = bf16.round(65520) tol=1%\n"
                           "@expect values[0].fp16.bits = \"0x7c00\"\n"
                           "@expect values[0].fp32.value >= 65520\n"
                           "@question What is the largest fp16 value?\n"
                           "@answer fp16.max\n"
                           "@explain line one\n"
                           "@explain line two\n"
                           "@question Does 65520 overflow?\n"
                           "@option no\n"
                           "@option yes\n"
                           "@answer fp16.overflows(65520) ? b : a\n"
                           "@question Memory?\n"
                           "@answer 108.63 tol=0.5% unit=GiB\n"
                           "@step Third\n"
                           "@question Bytes in fp32, in KiB?\n"
                           "@answer fp32.bytes unit=KiB\n"
                           "@end\n";

START_TEST(good_file_structure)
{
    struct lesson *l = parse_ok(good);
    ck_assert_str_eq(l->title, "Number formats");
    ck_assert_str_eq(l->short_title, "Formats");
    ck_assert_int_eq(l->minutes, 40);
    ck_assert_int_eq(l->number, -1);
    ck_assert_uint_eq(l->noutcomes, 2);
    ck_assert_str_eq(l->outcomes[1], "debug a loss scaler");
    ck_assert_str_eq(l->panel->name, "formats");
    ck_assert_str_eq(lesson_panel_get(l->panel, "format"), "fp32");
    ck_assert_uint_eq(l->nsteps, 3);

    const struct lesson_step *s = &l->steps[0];
    ck_assert_str_eq(s->title, "First");
    ck_assert_uint_eq(s->ntext, 5); /* leading and trailing blank lines dropped */
    ck_assert_str_eq(s->text[0], "Some text, with UTF-8: 2^-24 ≈ 6e-8.");
    ck_assert_str_eq(s->text[1], "");
    ck_assert_str_eq(s->text[2], " a preformatted line");
    ck_assert_str_eq(s->text[3], "@ not a directive");
    ck_assert_str_eq(s->text[4], "# not a comment");
    ck_assert_ptr_null(s->panel);
    ck_assert_ptr_eq(lesson_step_panel(l, 0), l->panel);

    s = &l->steps[1];
    ck_assert_str_eq(s->panel->name, "formats");
    ck_assert_uint_eq(s->panel->nsettings, 3);
    ck_assert_str_eq(lesson_panel_get(s->panel, "value"), "65504");
    ck_assert_str_eq(lesson_panel_get(s->panel, "label"), "a b");
    ck_assert_ptr_null(lesson_panel_get(s->panel, "nope"));
    ck_assert_ptr_eq(lesson_step_panel(l, 1), s->panel);
    ck_assert_ptr_eq(lesson_step_panel(l, 2), s->panel); /* kept by the next step */

    ck_assert_uint_eq(s->nruns, 1);
    const struct lesson_run *r = &s->runs[0];
    ck_assert_int_eq(r->argc, 3);
    ck_assert_str_eq(r->argv[0], "formats");
    ck_assert_str_eq(r->argv[2], "--json");
    ck_assert_ptr_null(r->argv[3]);
    ck_assert_uint_eq(r->nexpects, 4);
    ck_assert_int_eq(r->expects[0].check, LESSON_IS_INF);
    ck_assert_str_eq(r->expects[0].path, "values[0].fp16.value");
    ck_assert_int_eq(r->expects[1].check, LESSON_EQ);
    ck_assert(r->expects[1].number.is_quantity);
    ck_assert(r->expects[1].number.value == 65536); /* 65520 in bf16: spacing 256 there */
    ck_assert(r->expects[1].tol.relative && r->expects[1].tol.amount == 0.01);
    ck_assert_int_eq(r->expects[2].check, LESSON_STR_EQ);
    ck_assert_str_eq(r->expects[2].text, "0x7c00");
    ck_assert_int_eq(r->expects[3].check, LESSON_GE);
    ck_assert_int_eq(r->expects[3].line, 23);

    ck_assert_uint_eq(s->nquestions, 3);
    const struct lesson_question *q = &s->questions[0];
    ck_assert_int_eq(q->kind, LESSON_Q_NUMBER);
    ck_assert_str_eq(q->answer.expr, "fp16.max");
    ck_assert(q->answer.value == 65504);
    ck_assert_str_eq(q->explain, "line one\nline two");
    ck_assert_str_eq(q->unit, "");
    q = &s->questions[1];
    ck_assert_int_eq(q->kind, LESSON_Q_CHOICE);
    ck_assert_uint_eq(q->noptions, 2);
    ck_assert_int_eq(q->correct, 1); /* 65520 overflows: the tie goes to 65536 */
    ck_assert_str_eq(q->condition, "fp16.overflows(65520)");
    ck_assert_str_eq(q->explain, "");
    q = &s->questions[2];
    ck_assert(q->answer.value == 108.63 && !q->answer.is_quantity);
    ck_assert_str_eq(q->unit, "GiB");
    ck_assert(q->tol.relative && fabs(q->tol.amount - 0.005) < 1e-15);

    /* a quantity in bytes converted to the question's unit */
    q = &l->steps[2].questions[0];
    ck_assert(q->answer.value == 4.0 / 1024);
    lesson_free(l);
}
END_TEST

START_TEST(good_file_variants)
{
    /* CRLF line ends, a byte-order mark, an open duration, no trailing newline */
    const char *text = "\xef\xbb\xbf@title Lab\r\n@duration open\r\n@outcome explore\r\n"
                       "@step Only\r\nText\r\n@question Pick\r\n@option A\r\n@option B\r\n"
                       "@answer B";
    struct lesson *l = parse_ok(text);
    ck_assert_int_eq(l->minutes, 0);
    ck_assert_str_eq(l->title, "Lab");
    ck_assert_str_eq(l->short_title, "Lab");
    ck_assert_str_eq(l->steps[0].text[0], "Text");
    ck_assert_int_eq(l->steps[0].questions[0].correct, 1);
    ck_assert_ptr_null(lesson_step_panel(l, 0));
    lesson_free(l);

    struct error e;
    ck_assert_int_eq(lesson_parse_string("lessons/07-x.lesson", good, strlen(good), &l, &e), 0);
    ck_assert_int_eq(l->number, 7);
    lesson_free(l);
}
END_TEST

/* ------------------------------------------------------------------ broken files */

static const struct {
    const char *text, *want;
} broken[] = {
    {HEAD "@step S\n@frobnicate x\n", "t.lesson:5: unknown directive '@frobnicate'"},
    {HEAD "@step S\n@run-it x\n", "t.lesson:5: unknown directive '@run-it'"},
    {"@title\n", "t.lesson:1: @title needs a value"},
    {HEAD "@step S\n@question Q?\n@answer\n", "t.lesson:6: @answer needs a value"},
    {HEAD "@step S\n@question Q?\n@answer 1 tol=x\n", "t.lesson:6: bad tolerance 'tol=x'"},
    /* found by the fuzzer: the second unit= leaked the first */
    {HEAD "@step S\n@question Q?\n@answer 1 unit=B unit=KiB\n", "t.lesson:6: unit= is given twice"},
    {HEAD "@step S\n@question Q?\n@answer 1 tol=-1\n", "t.lesson:6: bad tolerance"},
    {HEAD "@step S\n@question Q?\n@answer 1 tol=%\n", "t.lesson:6: bad tolerance"},
    {HEAD "@step S\n@question Q?\n@step T\ntext\n",
     "t.lesson:5: question without answer: expected @answer"},
    {HEAD "@step S\n@question Q?\n", "t.lesson:5: question without answer"},
    {HEAD "@step S\n@question Q?\n@option a\n@option b\n",
     "t.lesson:5: question without answer: expected @answer LETTER"},
    {HEAD "@step S\n@question Q?\n@answer fp16.maximum\n",
     "t.lesson:6: unknown quantity 'fp16.maximum'"},
    {HEAD "@step S\n@question Q?\n@answer fp16.round\n",
     "t.lesson:6: fp16.round takes 1 argument in parentheses, not 0"},
    {HEAD "@step S\n@question Q?\n@answer fp16.max(3)\n", "t.lesson:6: fp16.max takes 0 arguments"},
    {HEAD "@step S\n@question Q?\n@answer fp16.round(x)\n", "t.lesson:6: unknown quantity 'x'"},
    {HEAD "@step S\n@question Q?\n@answer fp16.round(1\n", "t.lesson:6: expected ',' or ')'"},
    {HEAD "@step S\n@question Q?\n@answer 1abc\n",
     "t.lesson:6: expected a number or a quantity such as fp16.max, not '1abc'"},
    {HEAD "@step S\n@question Q?\n@option yes\n@option yes\n",
     "t.lesson:7: duplicate option 'yes' (it is option a)"},
    {HEAD "@step S\n@question Q?\n@option Inf\n@option b\n@option inf\n",
     "t.lesson:8: duplicate option 'inf' (it is option a)"},
    {HEAD "@step S\n@question Q?\n@option yes\n@answer a\n",
     "t.lesson:5: a choice question needs at least two @option lines"},
    {HEAD "@step S\n@question Q?\n@option a\n@option b\n@answer c\n",
     "t.lesson:8: expected an option letter from a to b, not 'c'"},
    {HEAD "@step S\n@question Q?\n@option a\n@option b\n@answer fp16.max ? a : b\n",
     "t.lesson:8: fp16.max is not a yes/no quantity"},
    {HEAD "@step S\n@question Q?\n@option a\n@option b\n@answer fp16.overflows(1) ? a\n",
     "t.lesson:8: expected @answer QUANTITY ? LETTER : LETTER"},
    {HEAD "@step S\n@question Q?\n@answer fp16.overflows(1)\n",
     "t.lesson:6: fp16.overflows(1) is a yes/no quantity"},
    {HEAD "@step S\n@question Q?\n@answer fp16.bytes unit=s\n",
     "t.lesson:6: fp16.bytes is in 'B', which cannot be converted to unit=s"},
    {HEAD "@step S\n@question Q?\n@answer 1\n@answer 2\n", "t.lesson:7: a second @answer"},
    {HEAD "@step S\n@question Q?\n@option a\n@option b\n@answer a\n@option c\n",
     "t.lesson:9: @option after @answer"},
    {HEAD "@step Empty\n@step Next\ntext\n",
     "t.lesson:4: the step 'Empty' is empty: expected text, @run or @question"},
    {HEAD "@step Empty\n\n\n", "t.lesson:4: the step 'Empty' is empty"},
    {"", "t.lesson:1: the file is empty"},
    {"\n  \n\n", "t.lesson:1: the file is empty"},
    {"# only a comment\n", "t.lesson:1: expected @title"},
    {"@title T\n@outcome x\n@step S\ntext\n", "t.lesson:3: expected @duration"},
    {"@title T\n@duration 5 min\n@step S\ntext\n", "t.lesson:3: expected at least one @outcome"},
    {HEAD, "t.lesson:3: expected at least one @step"},
    {"@title T\n@duration 5 minutes\n", "t.lesson:2: expected @duration N min"},
    {"@title T\n@duration 0 min\n", "t.lesson:2: expected a number of minutes from 1 to 1000"},
    {"@title T\n@title U\n", "t.lesson:2: a second @title"},
    {"Hello\n", "t.lesson:1: text before the first @step"},
    {HEAD "@step S\n@title Again\n", "t.lesson:5: @title belongs in the head"},
    {HEAD "@run formats 1\n", "t.lesson:4: @run belongs in a step"},
    {HEAD "@step S\n@option a\n", "t.lesson:5: @option belongs to a question"},
    {HEAD "@step S\n@expect a.b = 1\n", "t.lesson:5: @expect needs a @run before it"},
    {HEAD "@step S\n@run formats 1\n@expect a.b = 1\n",
     "t.lesson:6: @expect reads JSON: the @run on line 5 needs --json"},
    {HEAD "@step S\n@run formats 1 --json\n@expect a..b = 1\n",
     "t.lesson:6: expected @expect PATH CHECK"},
    {HEAD "@step S\n@run formats 1 --json\n@expect a[x] = 1\n",
     "t.lesson:6: expected @expect PATH CHECK"},
    {HEAD "@step S\n@run formats 1 --json\n@expect a ~ 1\n",
     "t.lesson:6: expected a check after the path"},
    {HEAD "@step S\n@run formats 1 --json\n@expect a is big\n",
     "t.lesson:6: expected is inf, is -inf, is nan or is finite, not 'is big'"},
    {HEAD "@step S\n@run formats 1 --json\n@expect a = \"x\n",
     "t.lesson:6: expected = \"TEXT\" with the text in double quotes"},
    {HEAD "@step S\n@run formats 1 --json\n@expect a < 1 tol=1\n",
     "t.lesson:6: expected nothing after the number, not 'tol=1'"},
    {HEAD "@step S\n@run formats \"1\n", "t.lesson:5: a '\"' is not closed"},
    {HEAD "@panel formats a=1 a=2\n", "t.lesson:4: the panel setting 'a' is given twice"},
    {HEAD "@panel formats a=\n", "t.lesson:4: the panel setting 'a' needs a value"},
    {HEAD "@panel formats novalue\n", "t.lesson:4: expected KEY=VALUE"},
    {HEAD "@panel Formats\n", "t.lesson:4: @panel needs a panel name"},
    {HEAD "@panel a\n@panel b\n",
     "t.lesson:5: a second @panel in this head (the first is on line 4)"},
    {HEAD "@step S\ntext\x01\n", "t.lesson:5: expected UTF-8 text, found the control byte 0x01"},
    {HEAD "@step S\ntext \xff\xfe\n", "t.lesson:5: expected UTF-8 text, found the byte 0xff"},
    {HEAD "@step S\n\xc0\xaf overlong\n", "t.lesson:5: expected UTF-8 text, found the byte 0xc0"},
    {HEAD "@step S\n\xed\xa0\x80 surrogate\n", "t.lesson:5: expected UTF-8 text"},
};

START_TEST(broken_files)
{
    for (size_t i = 0; i < sizeof broken / sizeof broken[0]; i++) {
        const char *msg = parse_bad(broken[i].text, strlen(broken[i].text));
        ck_assert_msg(strncmp(msg, broken[i].want, strlen(broken[i].want)) == 0,
                      "case %zu: got '%s', want '%s...'", i, msg, broken[i].want);
    }
}
END_TEST

START_TEST(broken_binary_and_long)
{
    /* a NUL byte: binary junk */
    const char nul[] = HEAD "@step S\nab\0cd\n";
    const char *msg = parse_bad(nul, sizeof nul - 1);
    ck_assert_str_eq(msg, "t.lesson:5: expected UTF-8 text, found a NUL byte (a binary file?)");

    /* a line of 1000 bytes is fine, 1001 is not */
    char *text = malloc(4096);
    strcpy(text, HEAD "@step S\n");
    size_t n = strlen(text);
    memset(text + n, 'x', 1000);
    strcpy(text + n + 1000, "\n");
    struct lesson *l = parse_ok(text);
    ck_assert_uint_eq(strlen(l->steps[0].text[0]), 1000);
    lesson_free(l);
    memset(text + n, 'x', 1001);
    strcpy(text + n + 1001, "\n");
    msg = parse_bad(text, strlen(text));
    ck_assert_str_eq(msg, "t.lesson:5: the line is 1001 bytes long; at most 1000 are allowed");
    memset(text + n, 'x', 3000);
    text[n + 3000] = '\0';
    msg = parse_bad(text, strlen(text));
    ck_assert_str_eq(msg, "t.lesson:5: the line is 3000 bytes long; at most 1000 are allowed");
    free(text);
}
END_TEST

START_TEST(broken_sample_files)
{
    /* the samples in tests/data/lessons: each one's first line says what it must give */
    static const char *const names[] = {"bad-binary.lesson", "bad-empty.lesson",
                                        "bad-quantity.lesson", "bad-noanswer.lesson"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        char path[4096], want[256] = "";
        snprintf(path, sizeof path, "%s", harness_data("lessons"));
        snprintf(path + strlen(path), sizeof path - strlen(path), "/%s", names[i]);
        struct lesson *l;
        struct error e = {0};
        ck_assert_int_eq(lesson_load(path, &l, &e), ERR_INVAL);
        const char *colon = strstr(e.msg, names[i]);
        ck_assert_msg(colon != NULL, "%s: %s", names[i], e.msg);
        snprintf(want, sizeof want, "%s:", names[i]);
        ck_assert_msg(strncmp(colon, want, strlen(want)) == 0, "%s", e.msg);
    }
    struct lesson *l;
    struct error e = {0};
    char path[4096];
    snprintf(path, sizeof path, "%s/bad-binary.lesson", harness_data("lessons"));
    lesson_load(path, &l, &e);
    ck_assert_ptr_nonnull(strstr(e.msg, "bad-binary.lesson:3: expected UTF-8 text"));
    snprintf(path, sizeof path, "%s/bad-quantity.lesson", harness_data("lessons"));
    lesson_load(path, &l, &e);
    ck_assert_ptr_nonnull(strstr(e.msg, "bad-quantity.lesson:8: unknown quantity 'bf16.eps'"));
    snprintf(path, sizeof path, "%s/bad-noanswer.lesson", harness_data("lessons"));
    lesson_load(path, &l, &e);
    ck_assert_ptr_nonnull(strstr(e.msg, "bad-noanswer.lesson:8: question without answer"));
    ck_assert_int_eq(lesson_load("/nonexistent/x.lesson", &l, &e), ERR_INVAL);
    ck_assert_ptr_nonnull(strstr(e.msg, "/nonexistent/x.lesson: cannot read"));
}
END_TEST

/* ------------------------------------------------------------------ answers */

static struct lesson *qlesson;

static const struct lesson_question *question(size_t step, size_t i)
{
    return &qlesson->steps[step].questions[i];
}

static void setup_questions(void)
{
    qlesson =
        parse_ok(HEAD "@step S\n"
                      "@question fp16 max?\n@answer fp16.max\n"                   /* 0 */
                      "@question subnormal?\n@answer fp16.min_subnormal tol=2%\n" /* 1 */
                      "@question memory?\n@answer 108.63 tol=0.5 unit=GiB\n"      /* 2 */
                      "@question time?\n@answer 0.002 tol=1% unit=s\n"            /* 3 */
                      "@question params?\n@answer 7289966592 tol=0.1%\n"          /* 4 */
                      "@question ratio?\n@answer 0.3333 tol=0.01\n"               /* 5 */
                      "@question overflow?\n@option finite\n@option inf\n"
                      "@answer fp16.overflows(65520) ? b : a\n"                  /* 6 */
                      "@question inf?\n@answer fp16.round(70000)\n"              /* 7 */
                      "@question widgets?\n@answer 3 unit=widgets\n"             /* 8 */
                      "@question bytes?\n@answer 1.75 unit=GB\n"                 /* 9 */
                      "@question MiB?\n@answer 24 unit=MiB\n"                    /* 10 */
                      "@question share?\n@answer 0.75 tol=0.001\n"               /* 11 */
                      "@question count?\n@answer synthetic_7b.params tol=0.1%\n" /* 12 */
                      "@question ring?\n@answer ring.allreduce_time(8, 1073741824) tol=1% "
                      "unit=ms\n"                                                          /* 13 */
                      "@question cross?\n@answer allreduce.crossover(8) tol=2% unit=KiB\n" /* 14 */
                      "@question eps?\n@answer bf16.epsilon tol=1%\n");                    /* 15 */
}

static void teardown_questions(void)
{
    lesson_free(qlesson);
}

static int check(size_t i, const char *answer, bool *correct)
{
    struct lesson_result r;
    struct error e = {0};
    int rc = lesson_check_answer(question(0, i), answer, &r, &e);
    if (rc == 0)
        *correct = r.correct;
    return rc;
}

static void right(size_t i, const char *a)
{
    bool c = false;
    ck_assert_msg(check(i, a, &c) == 0 && c, "question %zu: '%s' should be right", i, a);
}

static void wrong(size_t i, const char *a)
{
    bool c = true;
    ck_assert_msg(check(i, a, &c) == 0 && !c, "question %zu: '%s' should be wrong", i, a);
}

static void unreadable(size_t i, const char *a)
{
    bool c;
    ck_assert_msg(check(i, a, &c) == ERR_INVAL, "question %zu: '%s' should be unreadable", i, a);
}

START_TEST(answers_numbers)
{
    right(0, "65504");
    right(0, " 65504 ");
    right(0, "6.5504e4");
    right(0, "65,504");
    wrong(0, "65505"); /* default tolerance: relative 1e-9 */
    wrong(0, "65500");
    /* 2% of 5.96e-8 */
    right(1, "6e-8");
    right(1, "5.96e-8");
    right(1, "2^-24");
    wrong(1, "6.2e-8");
    wrong(1, "1e-8");
    /* absolute 0.5 GiB; other byte units converted */
    right(2, "108.63");
    right(2, "108.63 GiB");
    right(2, "108.63GiB");
    right(2, "116.64 GB");
    right(2, "116.64 gb");
    right(2, "108.63 gib");
    right(2, "116640000000 bytes");
    right(2, "108.2");
    wrong(2, "108");
    wrong(2, "116.64"); /* GB number typed without its unit: read as GiB */
    /* a bare number in the kind's base unit, as people write sizes and times */
    right(2, "116640000000");
    right(2, "1.1664e11");
    wrong(2, "116000000");
    right(3, "0.002");
    right(9, "1750000000");
    right(9, "1.75e9");
    right(9, "1.75");
    wrong(9, "1.75e6");
    right(10, "25165824");
    right(10, "24");
    /* fractions */
    right(5, "1/3");
    right(11, "3/4");
    right(11, "0.75");
    right(11, "75%");
    wrong(11, "2/3");
    unreadable(11, "3/0");
    unreadable(11, "3//4");
    unreadable(11, "/4");
    unreadable(2, "108 s");
    unreadable(2, "108 parsecs");
    /* time units */
    right(3, "2 ms");
    right(3, "0.002");
    right(3, "2000 us");
    right(3, "2000 µs");
    wrong(3, "2.1 ms");
    /* counts */
    right(4, "7,289,966,592");
    right(4, "7.29B");
    right(4, "7.29e9");
    wrong(4, "7.2B");
    unreadable(4, "7,28,9966");
    unreadable(4, "0,5");
    /* percent of a plain number */
    right(5, "33%");
    right(5, "0.33");
    wrong(5, "30%");
    /* an infinite answer */
    right(7, "inf");
    wrong(7, "-inf");
    wrong(7, "65504");
    /* a unit of the teacher's own, typed exactly */
    right(8, "3 widgets");
    right(8, "3");
    unreadable(8, "3 gadgets");
    /* junk */
    unreadable(0, "");
    unreadable(0, "   ");
    unreadable(0, "abc");
    unreadable(0, "1e");
    unreadable(0, "--1");
    unreadable(0, "2^");
    unreadable(0, "^3");
    unreadable(0, "1.2.3");

    struct lesson_result r;
    struct error e;
    ck_assert_int_eq(lesson_check_answer(question(0, 2), "110 GB", &r, &e), 0);
    ck_assert(fabs(r.value - 110e9 / 1073741824.0) < 1e-12);
    ck_assert_int_eq(lesson_check_answer(question(0, 2), "abc", &r, &e), ERR_INVAL);
    ck_assert_str_eq(e.msg, "expected a number such as 0.1, 6e-8 or 2^-24, optionally followed "
                            "by GiB");
    ck_assert_int_eq(lesson_check_answer(question(0, 2), "3 s", &r, &e), ERR_INVAL);
    ck_assert_str_eq(e.msg, "'s' is not a unit this question takes; answer in GiB");
}
END_TEST

START_TEST(answers_choices)
{
    right(6, "b");
    right(6, "B");
    right(6, "b)");
    right(6, "2");
    right(6, "inf");
    right(6, "INF");
    wrong(6, "a");
    wrong(6, "1");
    wrong(6, "finite");
    unreadable(6, "c");
    unreadable(6, "3");
    unreadable(6, "0");
    unreadable(6, "maybe");
    unreadable(6, "");
    struct lesson_result r;
    struct error e;
    ck_assert_int_eq(lesson_check_answer(question(0, 6), "z", &r, &e), ERR_INVAL);
    ck_assert_str_eq(e.msg, "expected an option letter from a to b (or its number from 1 to 2)");
    ck_assert_int_eq(lesson_check_answer(question(0, 6), "a", &r, &e), 0);
    ck_assert_int_eq(r.choice, 0);
}
END_TEST

START_TEST(answers_formatted)
{
    char buf[128];
    ck_assert_str_eq(lesson_format_answer(question(0, 0), buf, sizeof buf), "65504");
    ck_assert_str_eq(lesson_format_answer(question(0, 1), buf, sizeof buf), "5.96e-8 (within 2%)");
    /* a literal as written; a computed one exactly when a few digits write it (7289966592,
     * bf16's epsilon 0.0078125), else in 4 significant digits (more if the tolerance needs
     * them), never "606.1420663018612 KiB" */
    ck_assert_str_eq(lesson_format_answer(question(0, 4), buf, sizeof buf),
                     "7289966592 (within 0.1%)");
    ck_assert_str_eq(lesson_format_answer(question(0, 12), buf, sizeof buf),
                     "7289966592 (within 0.1%)");
    ck_assert_str_eq(lesson_format_answer(question(0, 13), buf, sizeof buf),
                     "4.204 ms (within 1%)");
    double cross;
    char want[64];
    ck_assert_int_eq(quantity_eval("allreduce.crossover(8)", &cross, NULL, NULL), 0);
    snprintf(want, sizeof want, "%.4g KiB (within 2%%)", cross / 1024);
    ck_assert_str_eq(lesson_format_answer(question(0, 14), buf, sizeof buf), want);
    ck_assert_str_eq(lesson_format_answer(question(0, 11), buf, sizeof buf), "0.75 (within 0.001)");
    ck_assert_str_eq(lesson_format_answer(question(0, 15), buf, sizeof buf),
                     "0.0078125 (within 1%)");
    ck_assert_str_eq(lesson_format_answer(question(0, 2), buf, sizeof buf),
                     "108.63 GiB (within 0.5)");
    ck_assert_str_eq(lesson_format_answer(question(0, 6), buf, sizeof buf), "b) inf");
    ck_assert_str_eq(lesson_format_answer(question(0, 7), buf, sizeof buf), "inf");
}
END_TEST

START_TEST(tolerances)
{
    struct lesson_tolerance abs1 = {false, 0.5}, rel = {true, 0.01}, zero = {false, 0};
    ck_assert(lesson_within(10.5, 10, abs1));
    ck_assert(!lesson_within(10.51, 10, abs1));
    ck_assert(lesson_within(-10.1, -10, rel));
    ck_assert(!lesson_within(-10.2, -10, rel));
    ck_assert(lesson_within(3, 3, zero));
    ck_assert(!lesson_within(INFINITY, 1e308, rel));
    ck_assert(lesson_within(INFINITY, INFINITY, zero));
    ck_assert(!lesson_within(-INFINITY, INFINITY, abs1));
    ck_assert(lesson_within(NAN, NAN, zero));
    ck_assert(!lesson_within(NAN, 1, abs1));
    ck_assert(!lesson_within(1, NAN, abs1));
}
END_TEST

/* ------------------------------------------------------------------ expectations */

START_TEST(expectations)
{
    struct lesson *l = parse_ok(HEAD "@step S\n@run formats 1 --json\n"
                                     "@expect values[0].fp16.value is inf\n"      /* 0 */
                                     "@expect values[0].bf16.value = 65536\n"     /* 1 */
                                     "@expect values[0].fp16.bits = \"0x7c00\"\n" /* 2 */
                                     "@expect values[1].x is nan\n"               /* 3 */
                                     "@expect values[0].bf16.value < 65536\n"     /* 4 */
                                     "@expect values[0].n > 0\n"                  /* 5 */
                                     "@expect values[0].bf16.value = 65000 tol=1%\n"
                                     "@expect values[0].bf16.value = 65000 tol=100\n"
                                     "@expect values[0].bf16 is finite\n" /* 8 */
                                     "@expect values[0].m is -inf\n");    /* 9 */
    json_error_t je;
    json_t *doc = json_loads("{\"values\": [{\"fp16\": {\"value\": \"inf\", \"bits\": \"0x7c00\"},"
                             " \"bf16\": {\"value\": 65536.0}, \"n\": 3, \"m\": \"-inf\"},"
                             " {\"x\": \"nan\"}]}",
                             0, &je);
    ck_assert_ptr_nonnull(doc);
    const struct lesson_run *r = &l->steps[0].runs[0];
    bool want[] = {true, true, true, true, false, true, true, false, false, true};
    char why[256];
    for (size_t i = 0; i < r->nexpects; i++)
        ck_assert_msg(lesson_expect_holds(&r->expects[i], doc, why, sizeof why) == want[i],
                      "expect %zu: %s", i, why);
    lesson_expect_holds(&r->expects[4], doc, why, sizeof why);
    ck_assert_str_eq(why, "values[0].bf16.value is 65536, expected < 65536");
    lesson_expect_holds(&r->expects[8], doc, why, sizeof why);
    ck_assert_str_eq(why, "values[0].bf16 is not a number");
    json_decref(doc);
    doc = json_loads("{\"values\": []}", 0, &je);
    ck_assert(!lesson_expect_holds(&r->expects[0], doc, why, sizeof why));
    ck_assert_str_eq(why, "values[0].fp16.value: the output has no values[0]");
    json_decref(doc);
    lesson_free(l);
}
END_TEST

/* ------------------------------------------------------------------ quantities */

START_TEST(quantities)
{
    double v;
    const struct quantity *q;
    struct error e;
    /* IEEE binary16 and bfloat16 constants */
    ck_assert_int_eq(quantity_eval("fp16.max", &v, &q, &e), 0);
    ck_assert(v == 65504);
    ck_assert_str_eq(q->name, "fp16.max");
    ck_assert_int_eq(quantity_eval("fp16.min_subnormal", &v, NULL, &e), 0);
    ck_assert(v == ldexp(1, -24));
    ck_assert_int_eq(quantity_eval("fp16.min_normal", &v, NULL, &e), 0);
    ck_assert(v == ldexp(1, -14));
    ck_assert_int_eq(quantity_eval("bf16.epsilon", &v, NULL, &e), 0);
    ck_assert(v == ldexp(1, -7));
    ck_assert_int_eq(quantity_eval("bf16.max", &v, NULL, &e), 0);
    ck_assert(v == ldexp(255, 120)); /* (2 - 2^-7) * 2^127 */
    ck_assert_int_eq(quantity_eval("fp8_e4m3.max", &v, NULL, &e), 0);
    ck_assert(v == 448);
    ck_assert_int_eq(quantity_eval("fp8_e5m2.max", &v, NULL, &e), 0);
    ck_assert(v == 57344);
    ck_assert_int_eq(quantity_eval("fp32.epsilon", &v, NULL, &e), 0);
    ck_assert(v == ldexp(1, -23));
    /* rounding: 0.1 held in fp32, then to bf16 (0x3dcd) and fp16 (0x2e66) */
    ck_assert_int_eq(quantity_eval("bf16.round(0.1)", &v, NULL, &e), 0);
    ck_assert(v == 0.10009765625);
    ck_assert_int_eq(quantity_eval("fp16.round( 0.1 )", &v, NULL, &e), 0);
    ck_assert(v == 0.0999755859375);
    ck_assert_int_eq(quantity_eval("fp16.round(2049)", &v, NULL, &e), 0);
    ck_assert(v == 2048); /* tie to even */
    ck_assert_int_eq(quantity_eval("fp16.round(1e300)", &v, NULL, &e), 0);
    ck_assert(isinf(v));
    ck_assert_int_eq(quantity_eval("fp8_e4m3.round(500)", &v, NULL, &e), 0);
    ck_assert(isnan(v));
    ck_assert_int_eq(quantity_eval("fp8_e5m2.round(500)", &v, NULL, &e), 0);
    ck_assert(v == 512);
    ck_assert_int_eq(quantity_eval("fp16.overflows(65520)", &v, NULL, &e), 0);
    ck_assert(v == 1);
    ck_assert_int_eq(quantity_eval("fp16.overflows(65519)", &v, NULL, &e), 0);
    ck_assert(v == 0);
    ck_assert_int_eq(quantity_eval("fp16.overflows(inf)", &v, NULL, &e), 0);
    ck_assert(v == 0); /* inf is not an overflow: it was never finite */
    ck_assert_int_eq(quantity_eval("bf16.overflows(65520)", &v, NULL, &e), 0);
    ck_assert(v == 0);
    ck_assert_int_eq(quantity_eval("fp16.underflows(1e-8)", &v, NULL, &e), 0);
    ck_assert(v == 1);
    ck_assert_int_eq(quantity_eval("bf16.underflows(1e-8)", &v, NULL, &e), 0);
    ck_assert(v == 0);
    ck_assert_int_eq(quantity_eval("fp16.ulp(fp16.max)", &v, NULL, &e), 0);
    ck_assert(isinf(v)); /* the next value up from 65504 is inf */
    ck_assert_int_eq(quantity_eval("fp16.ulp(1)", &v, NULL, &e), 0);
    ck_assert(v == ldexp(1, -10));
    ck_assert_int_eq(quantity_eval("bf16.rel_error(0.1)", &v, NULL, &e), 0);
    ck_assert(fabs(v - 0.0009765625) < 1e-12);
    ck_assert_int_eq(quantity_eval("fp16.bytes", &v, &q, &e), 0);
    ck_assert(v == 2);
    ck_assert_str_eq(q->unit, "B");

    ck_assert_int_eq(quantity_eval("nope", &v, NULL, &e), ERR_INVAL);
    ck_assert_ptr_nonnull(strstr(e.msg, "unknown quantity 'nope'"));
    ck_assert_int_eq(quantity_eval("fp16.round(1, 2)", &v, NULL, &e), ERR_INVAL);
    ck_assert_ptr_nonnull(strstr(e.msg, "fp16.round takes 1 argument"));
    ck_assert_int_eq(quantity_eval("fp16.round()", &v, NULL, &e), ERR_INVAL);
    ck_assert_int_eq(quantity_eval("fp16.round(1))", &v, NULL, &e), ERR_INVAL);
    ck_assert_int_eq(quantity_eval("fp16.round((1)", &v, NULL, &e), ERR_INVAL);
    ck_assert_int_eq(quantity_eval("fp16.max junk", &v, NULL, &e), ERR_INVAL);
    ck_assert_int_eq(quantity_eval("", &v, NULL, &e), ERR_INVAL);
    char deep[256] = "";
    for (int i = 0; i < 20; i++)
        strcat(deep, "fp16.round(");
    strcat(deep, "1");
    for (int i = 0; i < 20; i++)
        strcat(deep, ")");
    ck_assert_int_eq(quantity_eval(deep, &v, NULL, &e), ERR_INVAL);
    ck_assert_ptr_nonnull(strstr(e.msg, "nested"));

    /* expressions: + - * / ^ and parentheses, with their units */
    const char *unit;
    ck_assert_int_eq(quantity_expr("2 * (fp16.max + 1)", &v, &q, &unit, &e), 0);
    ck_assert(v == 131010 && q == NULL && !strcmp(unit, ""));
    ck_assert_int_eq(quantity_expr("80 * 2^30 / 18", &v, NULL, &unit, &e), 0);
    ck_assert(v == 80.0 * 1073741824 / 18);
    ck_assert_int_eq(quantity_expr("-2^2", &v, NULL, NULL, &e), 0);
    ck_assert(v == -4); /* '^' binds tighter than a sign */
    ck_assert_int_eq(quantity_expr("2^-24", &v, NULL, NULL, &e), 0);
    ck_assert(v == ldexp(1, -24));
    ck_assert_int_eq(quantity_expr("fp16.bytes * 3", &v, NULL, &unit, &e), 0);
    ck_assert(v == 6 && !strcmp(unit, "B"));
    ck_assert_int_eq(quantity_expr("fp16.bytes / ring.allreduce_time(2, 1)", &v, NULL, &unit, &e),
                     0);
    ck_assert_str_eq(unit, "B/s");
    ck_assert_int_eq(quantity_expr("fp16.bytes / fp32.bytes", &v, NULL, &unit, &e), 0);
    ck_assert(v == 0.5 && !strcmp(unit, ""));
    ck_assert_int_eq(quantity_expr("fp16.bytes + ring.allreduce_time(2, 1)", &v, NULL, NULL, &e),
                     ERR_INVAL);
    ck_assert_ptr_nonnull(strstr(e.msg, "different units"));
    ck_assert_int_eq(quantity_expr("fp16.overflows(65520)", &v, &q, &unit, &e), 0);
    ck_assert(q && !strcmp(unit, "bool"));
    ck_assert_int_eq(quantity_expr("sqrt(16) + log2(8) + min(1, 2)", &v, NULL, NULL, &e), 0);
    ck_assert(v == 8);
    ck_assert_int_eq(quantity_expr("(1 + 2", &v, NULL, NULL, &e), ERR_INVAL);
    ck_assert_int_eq(quantity_expr("1 +", &v, NULL, NULL, &e), ERR_INVAL);

    /* a family: every preset's, read when evaluated */
    struct model_shape m;
    ck_assert_int_eq(preset_load_model("llama2-70b", &m, NULL), 0);
    ck_assert_int_eq(quantity_expr("llama2_70b.params", &v, &q, &unit, &e), 0);
    ck_assert(v == params_total(&m));
    ck_assert_str_eq(q->name, "MODEL.params");
    ck_assert_ptr_eq(quantity_find("tiny.layers"), quantity_find("MODEL.layers"));
    ck_assert_int_eq(quantity_eval("tiny.layers", &v, NULL, &e), 0);
    ck_assert_int_eq(preset_load_model("tiny", &m, NULL), 0);
    ck_assert(v == m.layers);
    ck_assert_int_eq(quantity_eval("nosuch.params", &v, NULL, &e), ERR_INVAL);
    ck_assert_ptr_nonnull(strstr(e.msg, "no model preset 'nosuch'"));
    struct cluster_spec cl;
    ck_assert_int_eq(preset_load_cluster("h100-80gb", &cl, NULL), 0);
    ck_assert_int_eq(quantity_expr("h100_80gb.gpu_mem", &v, NULL, &unit, &e), 0);
    ck_assert(v == cl.hbm_bytes && !strcmp(unit, "B"));

    /* every name is unique and well formed */
    for (size_t i = 0; i < quantity_count(); i++) {
        const struct quantity *a = quantity_at(i);
        ck_assert_ptr_eq(quantity_find(a->name), a);
        ck_assert_int_le(a->nargs, QUANTITY_MAX_ARGS);
        ck_assert(a->unit && a->what && a->what[0]);
    }
    ck_assert_ptr_null(quantity_at(quantity_count()));
}
END_TEST

/* lessons/README.md documents every quantity. */
START_TEST(quantities_documented)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/lessons/README.md", getenv("srcdir") ? getenv("srcdir") : ".");
    FILE *f = fopen(path, "r");
    ck_assert_ptr_nonnull(f);
    static char text[1 << 16];
    size_t n = fread(text, 1, sizeof text - 1, f);
    text[n] = '\0';
    fclose(f);
    for (size_t i = 0; i < quantity_count(); i++) {
        char want[128];
        snprintf(want, sizeof want, "`%s", quantity_at(i)->name);
        ck_assert_msg(strstr(text, want), "lessons/README.md does not list %s",
                      quantity_at(i)->name);
    }
}
END_TEST

/* ------------------------------------------------------------------ ASCII */

START_TEST(ascii_fallback)
{
    char buf[256];
    ck_assert_str_eq(ascii_line(buf, sizeof buf, "plain text"), "plain text");
    ck_assert_str_eq(ascii_line(buf, sizeof buf, "a – b — c"), "a - b -- c");
    ck_assert_str_eq(ascii_line(buf, sizeof buf, "‘it’s’ “q”"), "'it's' \"q\"");
    ck_assert_str_eq(ascii_line(buf, sizeof buf, "2 × 3 ≈ 6 ≤ 7 ≥ 5 → ok"),
                     "2 x 3 ~= 6 <= 7 >= 5 -> ok");
    ck_assert_str_eq(ascii_line(buf, sizeof buf, "Ψ α β µs"), "Psi alpha beta us");
    ck_assert_str_eq(ascii_line(buf, sizeof buf, "┌─┬─┐│ │└─┴─┘═║"), "+-+-+| |+-+-+=|");
    ck_assert_str_eq(ascii_line(buf, sizeof buf, "█▓▒░"), "##:.");
    ck_assert_str_eq(ascii_line(buf, sizeof buf, "x² ± 1…"), "x^2 +/- 1...");
    ck_assert_str_eq(ascii_line(buf, sizeof buf, "日本"), "??");
    ck_assert_str_eq(ascii_line(buf, sizeof buf, "bad \xff\xc3 end"), "bad ?? end");
    /* cut to fit, never in the middle of a replacement */
    ck_assert_str_eq(ascii_line(buf, 6, "abcdefgh"), "abcde");
    ck_assert_str_eq(ascii_line(buf, 6, "abcd—"), "abcd");
    ck_assert_str_eq(ascii_line(buf, 1, "abc"), "");
    unsigned cp;
    ck_assert_int_eq(ascii_utf8_decode("\xe2\x89\x88", 3, &cp), 3);
    ck_assert_uint_eq(cp, 0x2248);
    ck_assert_int_eq(ascii_utf8_decode("\xe2\x89", 2, &cp), 0);
    ck_assert_int_eq(ascii_utf8_decode("\xf4\x90\x80\x80", 4, &cp), 0); /* > U+10FFFF */
}
END_TEST

/* ------------------------------------------------------------------ progress */

static char tmpdir[256];

static void setup_tmp(void)
{
    snprintf(tmpdir, sizeof tmpdir, "%s/scalelab-lesson.XXXXXX",
             getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    ck_assert_ptr_nonnull(mkdtemp(tmpdir));
}

static void remove_tree(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return;
    struct dirent *ent;
    while ((ent = readdir(d))) {
        if (!strcmp(ent->d_name, ".") || !strcmp(ent->d_name, ".."))
            continue;
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", dir, ent->d_name);
        struct stat st;
        if (lstat(path, &st) == 0 && S_ISDIR(st.st_mode))
            remove_tree(path);
        else
            unlink(path);
    }
    closedir(d);
    rmdir(dir);
}

static void teardown_tmp(void)
{
    remove_tree(tmpdir);
}

static void write_file(const char *path, const char *text, size_t len)
{
    FILE *f = fopen(path, "wb");
    ck_assert_ptr_nonnull(f);
    fwrite(text, 1, len, f);
    fclose(f);
}

static int count_files(const char *dir)
{
    DIR *d = opendir(dir);
    int n = 0;
    struct dirent *ent;
    while (d && (ent = readdir(d)))
        n += ent->d_name[0] != '.';
    if (d)
        closedir(d);
    return n;
}

/* Issue 11: a lesson cut in the middle ran as a shorter, complete lesson. */
START_TEST(cut_lesson_is_an_error)
{
    struct error e = {0};
    struct lesson *l;
    size_t full = strlen(good);
    /* every cut of the good file that keeps at least its first step is an error */
    for (size_t cut = (size_t)(strstr(good, "@step First") - good) + 12; cut < full - 5; cut += 7) {
        int rc = lesson_parse_string("t.lesson", good, cut, &l, &e);
        ck_assert_int_eq(rc, ERR_INVAL);
        ck_assert_msg(strstr(e.msg, "t.lesson:") == e.msg, "cut %zu: %s", cut, e.msg);
    }
    /* cut between two steps: nothing else is wrong, and the message says what is missing */
    const char *two = strstr(good, "@step Third");
    ck_assert_int_eq(lesson_parse_string("t.lesson", good, (size_t)(two - good), &l, &e),
                     ERR_INVAL);
    ck_assert_ptr_nonnull(
        strstr(e.msg, "the file ends without @end: cut short? (2 steps read; a lesson's last "
                      "line is @end)"));
    /* @end takes nothing, and only blank lines and comments follow it */
    const char *msg = parse_bad(HEAD "@step S\ntext\n@end 3\n", strlen(HEAD) + 22);
    ck_assert_str_eq(msg, "t.lesson:6: @end takes nothing after it");
    msg = parse_bad(HEAD "@step S\ntext\n@end\n\n# c\n@step T\n", strlen(HEAD) + 34);
    ck_assert_str_eq(msg, "t.lesson:9: nothing but blank lines and comments may follow @end "
                          "(line 6)");
    l = parse_ok(HEAD "@step S\ntext\n@end\n\n# a comment\n");
    ck_assert_uint_eq(l->nsteps, 1);
    lesson_free(l);
}
END_TEST

/* Two windows on one state folder: each saves its own changes merged into what the other saved
 * (lesson 5's progress was lost when the second window quit with its older copy): a step set
 * here wins, answers marked here are set or cleared on the disk's, a lesson forgotten here is
 * forgotten, and what was not changed here stays the disk's. */
START_TEST(progress_two_windows_merge)
{
    struct progress *a = malloc(sizeof *a), *b = malloc(sizeof *b), *q = malloc(sizeof *q);
    struct error e = {0};
    char path[600];
    snprintf(path, sizeof path, "%s/progress", tmpdir);
    progress_init(a);
    progress_set_step(a, "mixed-precision", 3);
    progress_mark(a, "mixed-precision", 0, 0, true);
    progress_mark(a, "mixed-precision", 1, 2, true);
    ck_assert_int_eq(progress_save(a, path, &e), 0);
    /* both windows open now */
    ck_assert_int_eq(progress_load(a, path, &e), 0);
    ck_assert_int_eq(progress_load(b, path, &e), 0);
    progress_set_step(a, "zero", 4); /* window a: lesson 5 */
    progress_mark(a, "zero", 4, 1, true);
    ck_assert_int_eq(progress_save(a, path, &e), 0);
    progress_set_step(b, "checkpointing", 2); /* window b, which never saw a's lesson 5 */
    progress_mark(b, "mixed-precision", 1, 2, false);
    ck_assert_int_eq(progress_save(b, path, &e), 0);
    ck_assert_int_eq(progress_load(q, path, &e), 0);
    ck_assert_int_eq(progress_step(q, "zero"), 4);
    ck_assert(progress_correct(q, "zero", 4, 1));
    ck_assert_int_eq(progress_step(q, "checkpointing"), 2);
    ck_assert_int_eq(progress_step(q, "mixed-precision"), 3);
    ck_assert(progress_correct(q, "mixed-precision", 0, 0));
    ck_assert(!progress_correct(q, "mixed-precision", 1, 2)); /* cleared by b */
    ck_assert_str_eq(q->current, "checkpointing");
    /* b now holds what it wrote, a's lesson 5 too; a saves again with nothing changed: its
     * older view of checkpointing is not written back */
    ck_assert_int_eq(progress_step(b, "zero"), 4);
    ck_assert_int_eq(progress_save(a, path, &e), 0);
    ck_assert_int_eq(progress_load(q, path, &e), 0);
    ck_assert_int_eq(progress_step(q, "checkpointing"), 2);
    ck_assert_str_eq(q->current, "checkpointing");
    /* progress --reset zero while b is open: b's next save keeps it forgotten */
    ck_assert_int_eq(progress_load(a, path, &e), 0);
    progress_forget(a, "zero");
    ck_assert_int_eq(progress_save(a, path, &e), 0);
    progress_set_step(b, "collectives", 1);
    ck_assert_int_eq(progress_save(b, path, &e), 0);
    ck_assert_int_eq(progress_load(q, path, &e), 0);
    ck_assert(!progress_of(q, "zero") && progress_of(q, "collectives") &&
              progress_of(q, "checkpointing"));
    /* and --reset of everything */
    progress_forget_all(a);
    ck_assert_int_eq(progress_save(a, path, &e), 0);
    ck_assert_int_eq(progress_load(q, path, &e), 0);
    ck_assert(!q->lessons[0].name[0] && !q->current[0]);
    free(a);
    free(b);
    free(q);
}
END_TEST

struct saver {
    char path[600], lesson[PROGRESS_NAME];
    int failed;
};

/* One window of many: its own lesson, stepped and saved 40 times. */
static void *save_often(void *arg)
{
    struct saver *s = arg;
    struct progress *p = malloc(sizeof *p);
    struct error e = {0};
    progress_load(p, s->path, &e);
    for (int i = 0; i < 40; i++) {
        progress_set_step(p, s->lesson, i);
        s->failed += progress_save(p, s->path, &e) != 0;
    }
    free(p);
    return NULL;
}

/* Eight windows saving at once lose nothing: each read-merge-write holds the folder's lock. */
START_TEST(progress_saves_at_once_lose_nothing)
{
    enum { W = 8 };
    pthread_t th[W];
    static struct saver sv[W];
    for (int i = 0; i < W; i++) {
        snprintf(sv[i].path, sizeof sv[i].path, "%s/progress", tmpdir);
        snprintf(sv[i].lesson, sizeof sv[i].lesson, "lesson-%d", i);
        sv[i].failed = 0;
        ck_assert_int_eq(pthread_create(&th[i], NULL, save_often, &sv[i]), 0);
    }
    for (int i = 0; i < W; i++)
        pthread_join(th[i], NULL);
    struct progress *q = malloc(sizeof *q);
    struct error e = {0};
    ck_assert_int_eq(progress_load(q, sv[0].path, &e), 0);
    for (int i = 0; i < W; i++) {
        ck_assert_int_eq(sv[i].failed, 0);
        ck_assert_msg(progress_of(q, sv[i].lesson) && progress_step(q, sv[i].lesson) == 39,
                      "%s lost", sv[i].lesson);
    }
    free(q);
}
END_TEST

START_TEST(progress_round_trip)
{
    struct progress *p = malloc(sizeof *p), *q = malloc(sizeof *q);
    struct error e = {0};
    char path[600], dir[512];
    snprintf(dir, sizeof dir, "%s/state/scalelab", tmpdir);
    snprintf(path, sizeof path, "%s/progress", dir);
    progress_init(p);
    ck_assert_str_eq(p->current, "");
    ck_assert_int_eq(progress_load(q, path, &e), PROGRESS_FRESH);
    ck_assert_int_eq(e.code, 0); /* missing is not an error */
    ck_assert_str_eq(q->current, "");

    progress_set_step(p, "mixed-precision", 5);
    progress_mark(p, "mixed-precision", 2, 0, true);
    progress_mark(p, "mixed-precision", 2, 31, true);
    progress_mark(p, "mixed-precision", 63, 3, true);
    progress_mark(p, "mixed-precision", 4, 1, true);
    progress_mark(p, "mixed-precision", 4, 1, false);
    progress_set_step(p, "lab", 0);
    progress_set_step(p, "collectives", 2);
    progress_set_step(p, "a b", 1);                   /* a name that cannot be kept: ignored */
    progress_mark(p, "mixed-precision", 64, 0, true); /* ignored */
    ck_assert_int_eq(progress_count(p, "mixed-precision"), 3);
    ck_assert_int_eq(progress_save(p, path, &e), 0); /* creates state/scalelab */
    ck_assert_int_eq(count_files(dir), 1);           /* no temporary file left behind */

    ck_assert_int_eq(progress_load(q, path, &e), 0);
    ck_assert_str_eq(q->current, "collectives");
    ck_assert_int_eq(progress_step(q, "mixed-precision"), 5);
    ck_assert_int_eq(progress_step(q, "collectives"), 2);
    ck_assert_int_eq(progress_step(q, "checkpointing"), 0);
    ck_assert(progress_of(q, "lab") && !progress_of(q, "checkpointing"));
    ck_assert(progress_correct(q, "mixed-precision", 2, 0) &&
              progress_correct(q, "mixed-precision", 2, 31));
    ck_assert(progress_correct(q, "mixed-precision", 63, 3));
    ck_assert(!progress_correct(q, "mixed-precision", 4, 1));
    ck_assert(!progress_correct(q, "mixed-precision", 2, 1));
    ck_assert_int_eq(memcmp(p, q, sizeof *p), 0);

    /* the file is the documented text */
    FILE *f = fopen(path, "r");
    char text[512] = "";
    size_t n = fread(text, 1, sizeof text - 1, f);
    text[n] = '\0';
    fclose(f);
    ck_assert_str_eq(text, "# scalelab progress 2\ncurrent collectives\nlesson collectives step 2\n"
                           "lesson lab step 0\nlesson mixed-precision step 5 correct 2.0 2.31 "
                           "63.3\n");
    free(p);
    free(q);
}
END_TEST

/* Saved progress is keyed by the lesson's name, so lessons can be renumbered: a file of
 * version 1 (by file number, as the lessons were numbered then) is read under the names those
 * numbers had, a number no lesson had kept under its digits, and saved as version 2. */
START_TEST(progress_migrates_numbers_to_names)
{
    struct progress *p = malloc(sizeof *p);
    struct error e = {0};
    char path[512];
    snprintf(path, sizeof path, "%s/progress", tmpdir);
    const char *v1 = "# scalelab progress 1\ncurrent 6\nlesson 1 step 3 correct 0.0 2.1\n"
                     "lesson 5 step 1\nlesson 6 step 2 correct 1.0\nlesson 9 step 4\n";
    write_file(path, v1, strlen(v1));
    ck_assert_int_eq(progress_load(p, path, &e), 0);
    ck_assert_str_eq(p->current, "lab");
    ck_assert_int_eq(progress_step(p, "mixed-precision"), 3);
    ck_assert(progress_correct(p, "mixed-precision", 2, 1));
    ck_assert_int_eq(progress_step(p, "zero"), 1);
    ck_assert(progress_correct(p, "lab", 1, 0));
    ck_assert_int_eq(progress_step(p, "9"), 4);
    ck_assert_str_eq(progress_v1_name(3), "collectives");
    ck_assert_ptr_null(progress_v1_name(7));
    ck_assert_int_eq(progress_save(p, path, &e), 0);
    FILE *f = fopen(path, "r");
    char text[512] = "";
    text[fread(text, 1, sizeof text - 1, f)] = '\0';
    fclose(f);
    ck_assert_str_eq(text, "# scalelab progress 2\ncurrent lab\nlesson 9 step 4\n"
                           "lesson lab step 2 correct 1.0\n"
                           "lesson mixed-precision step 3 correct 0.0 2.1\nlesson zero step 1\n");
    /* version 2 reads back the same; a lesson numbered anew keeps its progress under its name */
    struct progress *q = malloc(sizeof *q);
    ck_assert_int_eq(progress_load(q, path, &e), 0);
    ck_assert_int_eq(memcmp(p, q, sizeof *p), 0);
    /* names, not numbers, in version 2; forgetting one */
    const char *v2 = "# scalelab progress 2\ncurrent 3\nlesson zero step 2\n";
    write_file(path, v2, strlen(v2));
    ck_assert_int_eq(progress_load(q, path, &e), 0);
    ck_assert_str_eq(q->current, "3"); /* a name made of digits is a name */
    progress_forget(q, "zero");
    ck_assert_ptr_null(progress_of(q, "zero"));
    free(p);
    free(q);
}
END_TEST

START_TEST(progress_replaces_by_rename)
{
    struct progress *p = malloc(sizeof *p);
    struct error e = {0};
    char path[512], old[512];
    snprintf(path, sizeof path, "%s/progress", tmpdir);
    snprintf(old, sizeof old, "%s/old", tmpdir);
    progress_init(p);
    progress_set_step(p, "checkpointing", 1);
    ck_assert_int_eq(progress_save(p, path, &e), 0);
    /* A second name for the old file keeps its old content: the new one is a new file renamed
     * over the path, not the old file rewritten in place. */
    ck_assert_int_eq(link(path, old), 0);
    struct stat before, after;
    ck_assert_int_eq(stat(path, &before), 0);
    progress_set_step(p, "checkpointing", 4);
    ck_assert_int_eq(progress_save(p, path, &e), 0);
    ck_assert_int_eq(stat(path, &after), 0);
    ck_assert(before.st_ino != after.st_ino);
    ck_assert_int_eq(progress_load(p, old, &e), 0);
    ck_assert_int_eq(progress_step(p, "checkpointing"), 1);
    ck_assert_int_eq(progress_load(p, path, &e), 0);
    ck_assert_int_eq(progress_step(p, "checkpointing"), 4);
    ck_assert_int_eq(count_files(tmpdir), 2);

    /* a folder that cannot be written: an error, the old file untouched */
    if (geteuid() != 0) {
        chmod(tmpdir, 0500);
        progress_set_step(p, "checkpointing", 9);
        ck_assert_int_eq(progress_save(p, path, &e), ERR_IO);
        ck_assert_ptr_nonnull(strstr(e.msg, "cannot create a temporary file"));
        chmod(tmpdir, 0700);
        ck_assert_int_eq(progress_load(p, path, &e), 0);
        ck_assert_int_eq(progress_step(p, "checkpointing"), 4);
    }
    /* a path whose folder is a file */
    char bad[600];
    snprintf(bad, sizeof bad, "%s/progress/x", tmpdir);
    ck_assert_int_eq(progress_save(p, bad, &e), ERR_IO);
    ck_assert_ptr_nonnull(strstr(e.msg, "not a folder"));
    free(p);
}
END_TEST

START_TEST(progress_corrupt_is_fresh)
{
    /* files with nothing usable in them: fresh progress, and the reason */
    static const struct {
        const char *text;
        size_t len;
        const char *why;
    } bad[] = {
        {"", 0, ":1: the file is empty"},
        {"garbage\n", 8, ":1: skipped 'garbage' (not '# scalelab progress 2')"},
        {"# scalelab progress 1\ncurrent x\n", 32, ":2: skipped 'current x' (not a progress line)"},
        {"# scalelab progress 1\nlesson 1 step 2 correct 1\n", 49, ":2: skipped"},
        {"# scalelab progress 1\nlesson 1 step 99\n", 39, ":2: skipped 'lesson 1 step 99'"},
        {"# scalelab progress 1\nlesson 1 step 2 correct 0.32\n", 50, ":2: skipped"},
        {"# scalelab progress 1\nlesson 1\0 step 2\n", 39, ":2: skipped 'lesson 1' (a NUL byte)"},
        {"# scalelab progress 1\ncurrent 1 2\n", 34, ":2: skipped"},
        {"# scalelab progress 1\nlesson 1 st", 33, ":2: skipped 'lesson 1 st' (cut short"},
    };
    char path[512];
    snprintf(path, sizeof path, "%s/progress", tmpdir);
    struct progress *p = malloc(sizeof *p);
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct error e = {0};
        write_file(path, bad[i].text, bad[i].len);
        ck_assert_int_eq(progress_load(p, path, &e), PROGRESS_FRESH);
        ck_assert_str_eq(p->current, "");
        ck_assert(!p->lessons[0].name[0]);
        ck_assert_msg(strstr(e.msg, bad[i].why), "case %zu: %s", i, e.msg);
    }
    /* a very long line */
    char *big = malloc(50000);
    memset(big, 'x', 50000);
    write_file(path, big, 50000);
    free(big);
    struct error e = {0};
    ck_assert_int_eq(progress_load(p, path, &e), PROGRESS_FRESH);
    ck_assert_ptr_nonnull(strstr(e.msg, ":1: skipped a line of 50000 bytes (too long)"));
    free(p);
}
END_TEST

/* Issue 11: one bad line discarded every saved lesson, and the next save overwrote the file. */
START_TEST(progress_keeps_valid_lines)
{
    char path[512], bad[600], bad1[600];
    snprintf(path, sizeof path, "%s/progress", tmpdir);
    snprintf(bad, sizeof bad, "%s.bad", path);
    snprintf(bad1, sizeof bad1, "%s.bad.1", path);
    struct progress *p = malloc(sizeof *p);
    struct error e = {0};
    static const char saved[] = "# scalelab progress 1\ncurrent 3\nlesson 3 step 3 correct 3.0\n";
    const char *tails[] = {"lesson 9 step zz\n", "lesson 9 step 999999\n", "lesson 4 st",
                           "\x01\x02garbage\xff\n", "lesson 3 step 1\n" /* lesson 3 again */};
    for (size_t i = 0; i < sizeof tails / sizeof tails[0]; i++) {
        char text[256];
        int len = snprintf(text, sizeof text, "%s%s", saved, tails[i]);
        write_file(path, text, (size_t)len);
        ck_assert_int_eq(progress_load(p, path, &e), PROGRESS_PARTIAL);
        ck_assert_msg(strstr(e.msg, "progress:4: skipped"), "case %zu: %s", i, e.msg);
        ck_assert_ptr_nonnull(strstr(e.msg, "; the file will be kept as progress.bad"));
        ck_assert_str_eq(p->current, "collectives");
        ck_assert_int_eq(progress_step(p, "collectives"), 3);
        ck_assert(progress_correct(p, "collectives", 3, 0));
        ck_assert(!progress_of(p, "9") && !progress_of(p, "scaling"));
        ck_assert(p->unreadable);
    }
    /* the line in full in the message, and the others counted */
    const char *four = "# scalelab progress 1\nlesson 9 step zz\nlesson 2 step 1\nzz\nyy\n";
    write_file(path, four, strlen(four));
    ck_assert_int_eq(progress_load(p, path, &e), PROGRESS_PARTIAL);
    ck_assert_ptr_nonnull(strstr(e.msg, ":2: skipped 'lesson 9 step zz' (not a progress line)"));
    ck_assert_ptr_nonnull(
        strstr(e.msg, "; 2 more lines skipped; the file will be kept as progress.bad"));
    ck_assert_int_eq(progress_step(p, "checkpointing"), 1);

    /* the first save keeps the file as it was beside it; later saves do not touch that copy */
    progress_set_step(p, "checkpointing", 2);
    ck_assert_int_eq(progress_save(p, path, &e), 0);
    ck_assert(!p->unreadable);
    FILE *f = fopen(bad, "r");
    ck_assert_ptr_nonnull(f);
    char text[128] = "";
    text[fread(text, 1, sizeof text - 1, f)] = '\0';
    fclose(f);
    ck_assert_str_eq(text, "# scalelab progress 1\nlesson 9 step zz\nlesson 2 step 1\nzz\nyy\n");
    progress_set_step(p, "checkpointing", 3);
    ck_assert_int_eq(progress_save(p, path, &e), 0);
    ck_assert_int_eq(access(bad1, F_OK), -1);
    ck_assert_int_eq(progress_load(p, path, &e), 0);
    ck_assert_int_eq(progress_step(p, "checkpointing"), 3);
    ck_assert_int_eq(progress_step(p, "collectives"), 0); /* that file had no lesson 3 */

    /* another bad file later: kept with a number, progress.bad stays as it was */
    const char *one = "# scalelab progress 1\nlesson 5 step 1\nnonsense\n";
    write_file(path, one, strlen(one));
    ck_assert_int_eq(progress_load(p, path, &e), PROGRESS_PARTIAL);
    ck_assert_int_eq(progress_save(p, path, &e), 0);
    ck_assert_int_eq(access(bad1, F_OK), 0);
    f = fopen(bad, "r");
    text[fread(text, 1, sizeof text - 1, f)] = '\0';
    fclose(f);
    ck_assert_ptr_nonnull(strstr(text, "lesson 9 step zz"));
    ck_assert_int_eq(progress_load(p, path, &e), 0);
    ck_assert_int_eq(progress_step(p, "zero"), 1);

    /* Issue 21: a file over 4 MiB (a 10 MB line among valid ones) was ignored whole: every
     * valid line is kept, and the file too */
    unlink(bad);
    unlink(bad1);
    f = fopen(path, "w");
    fputs("# scalelab progress 1\nlesson 2 step 4\n", f);
    for (int i = 0; i < 10 << 20; i++)
        putc('x', f);
    fputs("\nlesson 5 step 2 correct 1.0\ncurrent 5\n", f);
    fclose(f);
    ck_assert_int_eq(progress_load(p, path, &e), PROGRESS_PARTIAL);
    ck_assert_ptr_nonnull(strstr(e.msg, ":3: skipped a line of 10485760 bytes (too long)"));
    ck_assert_int_eq(progress_step(p, "checkpointing"), 4); /* version 1's lesson 2 */
    ck_assert(progress_correct(p, "zero", 1, 0));
    ck_assert_str_eq(p->current, "zero");
    ck_assert(p->unreadable);
    ck_assert_int_eq(progress_save(p, path, &e), 0);
    struct stat st;
    ck_assert_int_eq(stat(bad, &st), 0);
    ck_assert_int_gt(st.st_size, 10 << 20);
    unlink(bad);
    /* the read is bounded: what follows 64 MiB is not read, and the file is kept */
    ck_assert_int_eq(truncate(path, 70 << 20), 0);
    ck_assert_int_eq(progress_load(p, path, &e), PROGRESS_PARTIAL);
    ck_assert_ptr_nonnull(strstr(e.msg, "what follows its first 64 MiB is not read"));
    /* the file just saved (version 2): its lines come first */
    ck_assert_int_eq(progress_step(p, "checkpointing"), 4);
    ck_assert(p->unreadable);
    unlink(path);

    /* a folder where the file should be: neither read nor replaced */
    ck_assert_int_eq(mkdir(path, 0700), 0);
    ck_assert_int_eq(progress_load(p, path, &e), PROGRESS_UNREAD);
    ck_assert_ptr_nonnull(strstr(e.msg, ": a folder where the progress file should be"));
    ck_assert_int_eq(progress_save(p, path, &e), ERR_IO);
    rmdir(path);
    /* a FIFO: opening it does not wait for a writer; it is never replaced */
    ck_assert_int_eq(mkfifo(path, 0600), 0);
    ck_assert_int_eq(progress_load(p, path, &e), PROGRESS_UNREAD);
    ck_assert_ptr_nonnull(strstr(e.msg, ": a FIFO where the progress file should be"));
    ck_assert_int_eq(progress_save(p, path, &e), ERR_IO);
    ck_assert_ptr_nonnull(strstr(e.msg, "a FIFO, not a regular file: progress is not saved"));
    unlink(path);
    /* a symbolic link: /dev/zero is not read (it never ends); a save does not replace it */
    ck_assert_int_eq(symlink("/dev/zero", path), 0);
    ck_assert_int_eq(progress_load(p, path, &e), PROGRESS_UNREAD);
    ck_assert_ptr_nonnull(strstr(e.msg, ": a device where the progress file should be"));
    ck_assert_int_eq(progress_save(p, path, &e), ERR_IO);
    ck_assert_ptr_nonnull(strstr(e.msg, "a symbolic link to /dev/zero, a device"));
    unlink(path);
    /* a link to a regular file, relative to its folder: followed, the link stays a link */
    char real[600];
    snprintf(real, sizeof real, "%s/elsewhere", tmpdir);
    ck_assert_int_eq(symlink("elsewhere", path), 0);
    progress_init(p);
    progress_set_step(p, "scaling", 6);
    ck_assert_int_eq(progress_save(p, path, &e), 0);
    ck_assert_int_eq(lstat(path, &st), 0);
    ck_assert(S_ISLNK(st.st_mode));
    ck_assert_int_eq(progress_load(p, real, &e), 0);
    ck_assert_int_eq(progress_step(p, "scaling"), 6);
    unlink(path);
    unlink(real);
    free(p);
}
END_TEST

START_TEST(progress_path_from_environment)
{
    char buf[512];
    struct error e;
    char *old_state = getenv("XDG_STATE_HOME") ? strdup(getenv("XDG_STATE_HOME")) : NULL;
    char *old_home = getenv("HOME") ? strdup(getenv("HOME")) : NULL;
    setenv("XDG_STATE_HOME", "/x/state", 1);
    setenv("HOME", "/home/u", 1);
    ck_assert_int_eq(progress_path(buf, sizeof buf, &e), 0);
    ck_assert_str_eq(buf, "/x/state/scalelab/progress");
    setenv("XDG_STATE_HOME", "relative", 1); /* ignored, as the XDG spec says */
    ck_assert_int_eq(progress_path(buf, sizeof buf, &e), 0);
    ck_assert_str_eq(buf, "/home/u/.local/state/scalelab/progress");
    unsetenv("XDG_STATE_HOME");
    ck_assert_int_eq(progress_path(buf, sizeof buf, &e), 0);
    ck_assert_str_eq(buf, "/home/u/.local/state/scalelab/progress");
    unsetenv("HOME");
    ck_assert_int_eq(progress_path(buf, sizeof buf, &e), ERR_INVAL);
    ck_assert_int_eq(progress_path(buf, 5, &e), ERR_INVAL);
    if (old_state)
        setenv("XDG_STATE_HOME", old_state, 1);
    if (old_home)
        setenv("HOME", old_home, 1);
    free(old_state);
    free(old_home);
}
END_TEST

/* ------------------------------------------------------------------ the lessons folder */

START_TEST(load_all_sorted_and_find)
{
    char dir[512], path[600];
    snprintf(dir, sizeof dir, "%s/lessons", tmpdir);
    mkdir(dir, 0700);
    static const char body[] = "@title %s\n@duration 5 min\n@outcome o\n@step S\ntext\n@end\n";
    const char *names[] = {"10-ten.lesson", "02-two.lesson", "01-one.lesson", "README.md",
                           "3-short.lesson"};
    for (size_t i = 0; i < 5; i++) {
        char text[200];
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        snprintf(text, sizeof text, body, names[i]);
        write_file(path, text, strlen(text));
    }
    struct lesson **v;
    size_t n;
    struct error e;
    ck_assert_int_eq(lesson_load_all(tmpdir, &v, &n, &e), 0);
    ck_assert_uint_eq(n, 3);
    ck_assert_int_eq(v[0]->number, 1);
    ck_assert_int_eq(v[1]->number, 2);
    ck_assert_int_eq(v[2]->number, 10);
    ck_assert_str_eq(v[2]->title, "10-ten.lesson");
    lesson_free_all(v, n);

    struct lesson *l;
    ck_assert_int_eq(lesson_find(tmpdir, "2", &l, &e), 0);
    ck_assert_int_eq(l->number, 2);
    lesson_free(l);
    ck_assert_int_eq(lesson_find(tmpdir, "10-ten", &l, &e), 0);
    ck_assert_int_eq(l->number, 10);
    lesson_free(l);
    ck_assert_int_eq(lesson_find(tmpdir, "01-one.lesson", &l, &e), 0);
    lesson_free(l);
    snprintf(path, sizeof path, "%s/02-two.lesson", dir);
    ck_assert_int_eq(lesson_find(tmpdir, path, &l, &e), 0);
    lesson_free(l);
    ck_assert_int_eq(lesson_find(tmpdir, "7", &l, &e), ERR_INVAL);
    ck_assert_ptr_nonnull(strstr(e.msg, "no lesson '7'"));
    /* the bare name after the number finds it too ("scalelab run lab"); a part of it does not */
    ck_assert_int_eq(lesson_find(tmpdir, "one", &l, &e), 0);
    ck_assert_int_eq(l->number, 1);
    lesson_free(l);
    ck_assert_int_eq(lesson_find(tmpdir, "on", &l, &e), ERR_INVAL);
    ck_assert_int_eq(lesson_find(tmpdir, "ten", &l, &e), 0);
    ck_assert_int_eq(l->number, 10);
    lesson_free(l);

    /* two lessons numbered 2: the second (by name) is left out, the others read */
    snprintf(path, sizeof path, "%s/02-zz.lesson", dir);
    write_file(path, "@title x\n@duration 5 min\n@outcome o\n@step S\ntext\n@end\n", 54);
    ck_assert_int_eq(lesson_load_all(tmpdir, &v, &n, &e), 1);
    ck_assert_uint_eq(n, 3);
    ck_assert_str_eq(v[1]->title, "02-two.lesson");
    lesson_free_all(v, n);
    ck_assert_ptr_nonnull(strstr(e.msg, "02-zz.lesson: numbered 2 as "));
    unlink(path);
    /* Issue 21: one broken lesson failed the whole load: it is left out, named, the others
     * read */
    snprintf(path, sizeof path, "%s/04-broken.lesson", dir);
    write_file(path, "@title x\n@frob\n", 15);
    char cut[600];
    snprintf(cut, sizeof cut, "%s/05-cut.lesson", dir);
    write_file(cut, "@title x\n@duration 5 min\n@outcome o\n@step S\ntext\n", 49);
    ck_assert_int_eq(lesson_load_all(tmpdir, &v, &n, &e), 2);
    ck_assert_uint_eq(n, 3);
    ck_assert_int_eq(v[2]->number, 10);
    lesson_free_all(v, n);
    ck_assert_ptr_nonnull(strstr(e.msg, "04-broken.lesson:2: unknown directive '@frob'"));
    ck_assert_ptr_nonnull(strstr(e.msg, "; 1 more lesson files left out"));
    unlink(cut);

    ck_assert_int_eq(lesson_load_all("/nonexistent", &v, &n, &e), ERR_INVAL); /* exit 2 */
}
END_TEST

/* Every shipped lesson parses, with every quantity it names (they are evaluated when read). */
/* Whether hay holds needle, in any case. */
static bool has_ci(const char *hay, const char *needle)
{
    for (size_t n = strlen(needle); *hay; hay++)
        if (!strncasecmp(hay, needle, n))
            return true;
    return false;
}

/* ------------------------------------------------------------------ figures */

static const char *render(const char *in)
{
    static char out[1024];
    struct error e = {0};
    ck_assert_msg(figure_render(in, out, sizeof out, &e) == 0, "%s: %s", in, e.msg);
    return out;
}

static const char *render_fails(const char *in)
{
    static char out[1024];
    static struct error e;
    memset(&e, 0, sizeof e);
    ck_assert_msg(figure_render(in, out, sizeof out, &e) == ERR_INVAL, "%s: rendered", in);
    return e.msg;
}

START_TEST(figures_rendered)
{
    /* units: a plain number in the unit's base; a quantity's unit converted */
    ck_assert_str_eq(render("{1e9 GB}"), "1 GB");
    ck_assert_str_eq(render("{2^30 GiB .2}"), "1.00 GiB");
    ck_assert_str_eq(render("{2^29 GiB}"), "0.5 GiB");
    ck_assert_str_eq(render("{0.375 %} of it"), "37.5% of it");
    ck_assert_str_eq(render("{1.5 ×}"), "1.5×");
    ck_assert_str_eq(render("{fp16.bytes bytes}"), "2 bytes");
    ck_assert_str_eq(render("{2e-6 us}"), "2 us");
    /* formats */
    ck_assert_str_eq(render("{7289966592}"), "7,289,966,592");
    ck_assert_str_eq(render("{4096}"), "4096");
    ck_assert_str_eq(render("{12544}"), "12,544");
    ck_assert_str_eq(render("{2.5 ,}"), "3");
    ck_assert_str_eq(render("{24616224817152 e}"), "2.46 × 10^13");
    ck_assert_str_eq(render("{9.999e15}"), "1 × 10^16");
    ck_assert_str_eq(render("{fp16.min_subnormal}"), "5.96e-8");
    ck_assert_str_eq(render("{1/3 .3}"), "0.333");
    ck_assert_str_eq(render("{1/3}"), "0.33");
    ck_assert_str_eq(render("{fp16.max + 16 .1}"), "65520.0");
    /* a width, for a table's rows: right-aligned in characters */
    ck_assert_str_eq(render("|{1.5 .2 >6}|{2e-6 µs >5}|"), "|  1.50| 2 µs|");
    ck_assert_str_eq(render("{123456 >3}"), "123,456");
    /* a quantity: the engine's figure, whatever it is today */
    double v;
    char want[64];
    ck_assert_int_eq(quantity_eval("synthetic_7b.states", &v, NULL, NULL), 0);
    snprintf(want, sizeof want, "%.2f GiB", v / 1073741824);
    ck_assert_str_eq(render("{synthetic_7b.states GiB .2}"), want);
    /* citations keep their text; braces doubled are braces */
    ck_assert_str_eq(render("an A100 does {cited 312 TFLOP/s | NVIDIA A100 datasheet} in bf16"),
                     "an A100 does 312 TFLOP/s in bf16");
    ck_assert_str_eq(render("{{x}} and {{"), "{x} and {");
    ck_assert_str_eq(render("no figure"), "no figure");
    /* errors say where and what */
    ck_assert_ptr_nonnull(strstr(render_fails("a {nope} b"), "column 3: {nope}: unknown quantity"));
    ck_assert_ptr_nonnull(strstr(render_fails("{fp16.bytes ms}"), "cannot be shown in ms"));
    ck_assert_ptr_nonnull(strstr(render_fails("{cited 1 GB}"), "{cited TEXT | SOURCE}"));
    ck_assert_ptr_nonnull(strstr(render_fails("{cited 1 GB | }"), "{cited TEXT | SOURCE}"));
    ck_assert_ptr_nonnull(strstr(render_fails("a {1 GB"), "not closed"));
    ck_assert_ptr_nonnull(strstr(render_fails("a } b"), "without its '{'"));
    ck_assert_ptr_nonnull(strstr(render_fails("{}"), "expected a figure"));
    ck_assert_ptr_nonnull(strstr(render_fails("{fp16.overflows(1)}"), "yes/no"));
    /* in a lesson: rendered when read, an error names the line */
    struct lesson *l;
    struct error e = {0};
    const char *ok = "@title T\n@duration 1 min\n@outcome o\n@step S {fp16.bytes bytes}\n"
                     "{fp16.max} is the largest\n@question Q {fp32.bytes bytes}?\n@option "
                     "{1e9 GB}\n@option b\n@answer a\n@explain {2 ×} as much\n@end\n";
    ck_assert_int_eq(lesson_parse_string("t.lesson", ok, strlen(ok), &l, &e), 0);
    ck_assert_str_eq(l->steps[0].title, "S 2 bytes");
    ck_assert_str_eq(l->steps[0].text[0], "65,504 is the largest");
    ck_assert_str_eq(l->steps[0].questions[0].text, "Q 4 bytes?");
    ck_assert_str_eq(l->steps[0].questions[0].options[0], "1 GB");
    ck_assert_str_eq(l->steps[0].questions[0].explain, "2× as much");
    lesson_free(l);
    const char *bad = "@title T\n@duration 1 min\n@outcome o\n@step S\nsee {nope GiB}\n@end\n";
    ck_assert_int_eq(lesson_parse_string("t.lesson", bad, strlen(bad), &l, &e), ERR_INVAL);
    ck_assert_ptr_nonnull(strstr(e.msg, "t.lesson:5: column 5: {nope GiB}: unknown quantity"));
}
END_TEST

START_TEST(figures_typed_by_hand_are_found)
{
    size_t len;
    const char *hits[][2] = {
        {"weights alone take 27.16 GiB in fp32", "27.16 GiB"},
        {"16 bytes per parameter", "16 bytes"},
        {"{synthetic_7b.states GiB} and 3% more", "3%"},
        {"1.5× DDP", "1.5×"},
        {"956,301,312 bytes", "956,301,312 bytes"},
        {"a step of 4 s.", "4 s"},
        {"6.0e-8 B", "6.0e-8 B"},
        {"2 µs on NVLink", "2 µs"},
        {"450 GB/s within a node", "450 GB/s"},
        {"it takes 12ms", "12ms"},
    };
    for (size_t i = 0; i < sizeof hits / sizeof hits[0]; i++) {
        const char *at = figure_literal(hits[i][0], &len);
        ck_assert_msg(at && len == strlen(hits[i][1]) && !strncmp(at, hits[i][1], len),
                      "%s: found %.*s", hits[i][0], at ? (int)len : 4, at ? at : "none");
    }
    const char *misses[] = {"fp16 and 2^-24 ≈ 6.0e-8",
                            "2 × 7/8 = 1.75",
                            "a 2048-token sequence",
                            "4 sequences of 64 tokens",
                            "10^16 FLOPs",
                            "{cited 312 TFLOP/s | A100 datasheet} and {x GiB}",
                            "layer 2 grad",
                            "{{not a figure}} 3 GPUs",
                            "fp8 e4m3 has 3 mantissa bits"};
    for (size_t i = 0; i < sizeof misses / sizeof misses[0]; i++)
        ck_assert_msg(!figure_literal(misses[i], &len), "%s: found %.*s", misses[i], (int)len,
                      figure_literal(misses[i], &len));
}
END_TEST

/* The text a learner reads in a lesson file: text lines and the arguments of @title, @short,
 * @outcome, @step, @question, @option and @explain (comments, @run, @expect, @panel and
 * @answer are not shown as written). */
static const char *shown(const char *line)
{
    static const char *const dirs[] = {"@title ",    "@short ",  "@outcome ", "@step ",
                                       "@question ", "@option ", "@explain "};
    if (line[0] == '#')
        return NULL;
    if (line[0] != '@')
        return line[0] == '\\' ? line + 1 : line;
    for (size_t i = 0; i < sizeof dirs / sizeof dirs[0]; i++)
        if (!strncmp(line, dirs[i], strlen(dirs[i])))
            return line + strlen(dirs[i]);
    return NULL;
}

/* Every figure a lesson shows with a unit is computed ({QUANTITY UNIT}) or cited ({cited TEXT |
 * SOURCE}): none is typed by hand (lessons/README.md, "Figures"). */
START_TEST(figures_computed_or_cited)
{
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/lessons", getenv("srcdir") ? getenv("srcdir") : ".");
    DIR *d = opendir(dir);
    ck_assert_ptr_nonnull(d);
    int files = 0, bad = 0;
    static char report[65536];
    report[0] = '\0';
    for (struct dirent *de; (de = readdir(d));) {
        size_t nl = strlen(de->d_name);
        if (nl < 8 || strcmp(de->d_name + nl - 7, ".lesson"))
            continue;
        char path[8192];
        snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
        FILE *f = fopen(path, "r");
        ck_assert_ptr_nonnull(f);
        files++;
        char line[2048];
        for (int no = 1; fgets(line, sizeof line, f); no++) {
            line[strcspn(line, "\r\n")] = '\0';
            const char *text = shown(line), *at;
            size_t len;
            for (; text && (at = figure_literal(text, &len)); text = at + len, bad++) {
                size_t used = strlen(report);
                snprintf(report + used, sizeof report - used, "\n  %s:%d: %.*s", de->d_name, no,
                         (int)len, at);
            }
        }
        fclose(f);
    }
    closedir(d);
    ck_assert_int_ge(files, 6);
    if (bad)
        fprintf(stderr, "figures typed by hand:%s\n", report);
    report[1500] = '\0'; /* Check's messages are short; standard error has them all */
    ck_assert_msg(bad == 0,
                  "%d figures typed by hand: write {QUANTITY UNIT} or {cited TEXT | SOURCE}:%s",
                  bad, report);
}
END_TEST

/* The first number in text at or after *at, with its unit ("" when none the answer checks
 * know follows it), its value in that unit's base, its significant digits and half a unit of
 * its last digit (in the base: how far the figure may be from what it shows); false at the
 * end. */
static bool next_figure(const char **at, double *base, const char **kind, int *digits, double *half)
{
    const unsigned char *s = (const unsigned char *)*at;
    for (; *s; s++) {
        if (!isdigit(*s) ||
            (s > (const unsigned char *)*at - 0 && s != (const unsigned char *)*at &&
             (isalnum(s[-1]) || s[-1] == '_' || s[-1] == '.' || s[-1] == '^')))
            continue;
        char num[64];
        size_t n = 0;
        *digits = 0;
        bool lead = true;
        const unsigned char *c = s;
        for (; n + 1 < sizeof num && (isdigit(*c) || ((*c == ',' || *c == '.') && isdigit(c[1])));
             c++) {
            if (*c == ',')
                continue;
            if (isdigit(*c) && !(lead && *c == '0'))
                lead = false, ++*digits;
            num[n++] = (char)*c;
        }
        num[n] = '\0';
        double v = strtod(num, NULL);
        const unsigned char *u = *c == ' ' ? c + 1 : c;
        char unit[16];
        size_t k = 0;
        while (k + 1 < sizeof unit && u[k] &&
               (isalpha(u[k]) || u[k] == '/' || u[k] == '%' || u[k] >= 0x80))
            unit[k] = (char)u[k], k++;
        unit[k] = '\0';
        *kind = "number";
        double f = k ? lesson_unit_factor(unit, kind) : 1;
        if (!f)
            f = 1, *kind = "number";
        *base = v * f;
        const char *dot = strchr(num, '.');
        *half = 0.5 * pow(10, dot ? -(double)strlen(dot + 1) : 0) * f;
        *at = (const char *)c;
        return true;
    }
    *at = (const char *)s;
    return false;
}

/* A number question never asks for a figure the learner has just read: its answer (within its
 * tolerance, or half a unit of the figure's last digit) is not among the figures of its kind
 * in its step's text, in the explanations of the questions before it, or in its own text; a
 * plain number counts with 3 or more significant digits (lessons/README.md, "Answering"). */
START_TEST(questions_ask_for_what_is_not_shown)
{
    struct lesson **v;
    size_t n;
    struct error e = {0};
    ck_assert_int_eq(lesson_load_all(NULL, &v, &n, &e), 0);
    int bad = 0;
    static char report[16384];
    report[0] = '\0';
    for (size_t i = 0; i < n; i++)
        for (size_t st = 0; st < v[i]->nsteps; st++) {
            const struct lesson_step *step = &v[i]->steps[st];
            for (size_t k = 0; k < step->nquestions; k++) {
                const struct lesson_question *q = &step->questions[k];
                if (q->kind != LESSON_Q_NUMBER)
                    continue;
                const char *qkind = "number";
                double qf = lesson_unit_factor(q->unit, &qkind);
                double want = q->answer.value * (qf ? qf : 1);
                double tol = q->tol.relative ? q->tol.amount * fabs(want) : q->tol.amount * qf;
                /* the texts read before answering */
                const char *texts[LESSON_MAX_QUESTIONS + 256];
                size_t nt = 0;
                for (size_t t = 0; t < step->ntext && nt < 256; t++)
                    texts[nt++] = step->text[t];
                for (size_t j = 0; j < k; j++)
                    texts[nt++] = step->questions[j].explain;
                texts[nt++] = q->text;
                for (size_t t = 0; t < nt; t++) {
                    const char *at = texts[t];
                    double x, half;
                    const char *kind;
                    int digits;
                    while (next_figure(&at, &x, &kind, &digits, &half)) {
                        bool plain = !strcmp(kind, "number") && !strcmp(qkind, "number");
                        if (strcmp(kind, qkind) || (plain && digits < 3) ||
                            fabs(x - want) > fmax(tol, half))
                            continue;
                        bad++;
                        size_t used = strlen(report);
                        snprintf(report + used, sizeof report - used,
                                 "\n  %s:%d: \"%.60s\" answers %g, shown above: \"%.40s\"",
                                 v[i]->file, q->line, q->text, q->answer.value, texts[t]);
                    }
                }
            }
        }
    lesson_free_all(v, n);
    if (bad)
        fprintf(stderr, "questions that ask for a figure shown above them:%s\n", report);
    report[1500] = '\0';
    ck_assert_msg(bad == 0, "%d questions ask for a figure shown above them:%s", bad, report);
}
END_TEST

/* A question that asks "how many ms" (or "..., in GiB?") takes a bare number in that unit: its
 * answer's unit is the one the question names, or the same by another spelling (us for µs, B
 * for bytes): lesson 2 asked for ms and took a bare 1200 as 1200 s, "the answer is 1.2 s". */
START_TEST(questions_take_the_unit_they_ask_for)
{
    struct lesson **v;
    size_t n;
    struct error e = {0};
    ck_assert_int_eq(lesson_load_all(NULL, &v, &n, &e), 0);
    int bad = 0, asked = 0;
    static char report[8192];
    report[0] = '\0';
    for (size_t i = 0; i < n; i++)
        for (size_t st = 0; st < v[i]->nsteps; st++)
            for (size_t k = 0; k < v[i]->steps[st].nquestions; k++) {
                const struct lesson_question *q = &v[i]->steps[st].questions[k];
                if (q->kind != LESSON_Q_NUMBER)
                    continue;
                /* the words after "how many " and after the last " in " before a '?' */
                const char *at[2] = {strstr(q->text, "how many "), NULL};
                for (const char *p = strstr(q->text, " in "); p; p = strstr(p + 1, " in "))
                    at[1] = p;
                for (int w = 0; w < 2; w++) {
                    if (!at[w])
                        continue;
                    const char *word = at[w] + (w ? 4 : 9);
                    char unit[16];
                    size_t len = strcspn(word, " ,?");
                    if (len == 0 || len >= sizeof unit || (w && word[len] != '?'))
                        continue;
                    memcpy(unit, word, len);
                    unit[len] = '\0';
                    const char *kind = "";
                    if (!lesson_unit_factor(unit, &kind) || !strcmp(kind, "number"))
                        continue;
                    asked++;
                    /* the answer, typed as a bare number in the unit asked for */
                    char typed[40];
                    snprintf(typed, sizeof typed, "%.17g", q->answer.value);
                    struct lesson_result r;
                    const char *ukind = "";
                    double uf = lesson_unit_factor(q->unit, &ukind),
                           af = lesson_unit_factor(unit, &kind);
                    bool right = uf == af && !strcmp(ukind, kind) &&
                                 lesson_check_answer(q, typed, &r, &e) == 0 && r.correct;
                    if (!right) {
                        bad++;
                        size_t used = strlen(report);
                        snprintf(report + used, sizeof report - used,
                                 "\n  %s:%d: asks for %s, takes %s", v[i]->file, q->line, unit,
                                 q->unit[0] ? q->unit : "a plain number");
                    }
                }
            }
    lesson_free_all(v, n);
    ck_assert_int_ge(asked, 10);
    ck_assert_msg(bad == 0, "%d questions take another unit than they ask for:%s", bad, report);
}
END_TEST

START_TEST(shipped_lessons)
{
    struct lesson **v;
    size_t n;
    struct error e = {0};
    int rc = lesson_load_all(NULL, &v, &n, &e);
    ck_assert_msg(rc == 0, "%s", e.msg);
    /* every file of the folder loaded: as many lessons as lesson_paths finds */
    char **paths;
    size_t files;
    ck_assert_int_eq(lesson_paths(NULL, &paths, &files, &e), 0);
    lesson_free_strings(paths, files);
    ck_assert_uint_eq(n, files);
    static const char *const titles[] = {"Gradient clipping and mixed precision",
                                         "Gradient checkpointing",
                                         "Collective operations from scratch",
                                         "Scaling and distributed training",
                                         "ZeRO and FSDP",
                                         "Long sequences: context parallelism",
                                         "Mixtures of experts: expert parallelism",
                                         "Data parallelism and ZeRO memory"};
    static const int minutes[] = {40, 35, 45, 45, 40, 35, 35, 0};
    ck_assert_uint_eq(n, sizeof titles / sizeof titles[0]);
    for (size_t i = 0; i < n; i++) {
        /* lessons 1 to 5, the Lab last (90: new lessons are numbered before it) */
        ck_assert_int_eq(v[i]->number, i + 1 < n ? (int)i + 1 : 90);
        ck_assert((i + 1 == n) == !strcmp(v[i]->name, LESSON_LAB));
        ck_assert_str_eq(v[i]->title, titles[i]);
        ck_assert_int_eq(v[i]->minutes, minutes[i]);
        ck_assert_uint_ge(v[i]->noutcomes, 2);
        for (size_t s = 0; s < v[i]->nsteps; s++) {
            const struct lesson_step *st = &v[i]->steps[s];
            for (size_t k = 0; k < st->ntext; k++) {
                size_t chars = 0;
                for (const char *c = st->text[k]; *c; c++)
                    chars += ((unsigned char)*c & 0xc0) != 0x80;
                ck_assert_msg(chars <= 96,
                              "%s: step %d: text lines stay readable in an editor "
                              "(at most 96 characters): %s",
                              v[i]->file, st->line, st->text[k]);
            }
            /* each question's right answer is accepted as typed from its formatted form */
            for (size_t k = 0; k < st->nquestions; k++) {
                const struct lesson_question *q = &st->questions[k];
                char buf[256];
                struct lesson_result r;
                lesson_format_answer(q, buf, sizeof buf);
                if (q->kind == LESSON_Q_CHOICE)
                    buf[1] = '\0';
                else if (strchr(buf, '('))
                    strchr(buf, '(')[-1] = '\0';
                ck_assert_msg(lesson_check_answer(q, buf, &r, &e) == 0 && r.correct,
                              "%s: '%s' for '%s': %s", v[i]->file, buf, q->text, e.msg);
                /* a question about bytes takes any byte unit: its answer in KiB is right */
                if (!has_ci(q->text, "how many bytes") && !has_ci(q->text, "bytes. how many"))
                    continue;
                const char *kind = NULL;
                double f = lesson_unit_factor(q->unit, &kind);
                ck_assert_msg(kind && !strcmp(kind, "bytes"),
                              "%s: '%s' asks for bytes: unit=B (or another byte unit)", v[i]->file,
                              q->text);
                snprintf(buf, sizeof buf, "%.17g KiB", q->answer.value * f / 1024);
                ck_assert_msg(lesson_check_answer(q, buf, &r, &e) == 0 && r.correct,
                              "%s: '%s' for '%s': %s", v[i]->file, buf, q->text, e.msg);
            }
        }
    }
    /* lesson 1's formats part: the explorer's panel in every step up to the training part
     * (whose steps show the training panel) */
    for (size_t s = 0; s < v[0]->nsteps; s++) {
        const struct lesson_panel *p = lesson_step_panel(v[0], s);
        ck_assert_ptr_nonnull(p);
        if (!strcmp(p->name, "training"))
            break;
        ck_assert_str_eq(p->name, "formats");
        ck_assert_ptr_nonnull(lesson_panel_get(p, "value"));
        ck_assert_ptr_nonnull(lesson_panel_get(p, "format"));
    }
    lesson_free_all(v, n);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("lesson");
    TCase *t = tcase_create("parse");
    tcase_add_test(t, good_file_structure);
    tcase_add_test(t, good_file_variants);
    tcase_add_test(t, broken_files);
    tcase_add_test(t, broken_binary_and_long);
    tcase_add_test(t, broken_sample_files);
    tcase_add_test(t, expectations);
    tcase_add_test(t, quantities);
    tcase_add_test(t, quantities_documented);
    tcase_add_test(t, ascii_fallback);
    tcase_add_test(t, shipped_lessons);
    tcase_add_test(t, figures_rendered);
    tcase_add_test(t, figures_typed_by_hand_are_found);
    tcase_add_test(t, figures_computed_or_cited);
    tcase_add_test(t, questions_ask_for_what_is_not_shown);
    tcase_add_test(t, questions_take_the_unit_they_ask_for);
    suite_add_tcase(s, t);
    t = tcase_create("answers");
    tcase_add_checked_fixture(t, setup_questions, teardown_questions);
    tcase_add_test(t, answers_numbers);
    tcase_add_test(t, answers_choices);
    tcase_add_test(t, answers_formatted);
    tcase_add_test(t, tolerances);
    suite_add_tcase(s, t);
    t = tcase_create("files");
    /* each save syncs its file to the disk, which a busy machine's disk may hold for seconds
     * (Check's 4 s ran out there, beside two other suites) */
    tcase_set_timeout(t, 30);
    tcase_add_checked_fixture(t, setup_tmp, teardown_tmp);
    tcase_add_test(t, cut_lesson_is_an_error);
    tcase_add_test(t, progress_round_trip);
    tcase_add_test(t, progress_two_windows_merge);
    tcase_add_test(t, progress_saves_at_once_lose_nothing);
    tcase_add_test(t, progress_migrates_numbers_to_names);
    tcase_add_test(t, progress_replaces_by_rename);
    tcase_add_test(t, progress_corrupt_is_fresh);
    tcase_add_test(t, progress_keeps_valid_lines);
    tcase_add_test(t, progress_path_from_environment);
    tcase_add_test(t, load_all_sorted_and_find);
    suite_add_tcase(s, t);
    return s;
}

int main(void)
{
    return harness_run(suite());
}
