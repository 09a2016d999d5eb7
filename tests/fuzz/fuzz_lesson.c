/* libFuzzer target for the lesson parser: any bytes must give a lesson or a FILE:LINE error,
 * never a crash, a leak or undefined behaviour. A parsed lesson is also walked the way the
 * window walks it: every question gets answers cut from the input, every line its ASCII
 * rendering. The same bytes are also read as a saved-progress file. Build and run: make fuzz-lesson
 * (see tests/fuzz/README.md). */
#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "base/error.h"
#include "lesson/ascii.h"
#include "lesson/lesson.h"
#include "lesson/progress.h"
#include "lesson/quantity.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void use(const struct lesson *l, const char *text)
{
    char buf[4 * LESSON_LINE_MAX];
    struct error e;
    for (size_t s = 0; s < l->nsteps; s++) {
        const struct lesson_step *st = &l->steps[s];
        lesson_step_panel(l, s);
        for (size_t i = 0; i < st->ntext; i++)
            ascii_line(buf, sizeof buf, st->text[i]);
        for (size_t q = 0; q < st->nquestions; q++) {
            struct lesson_result r;
            lesson_format_answer(&st->questions[q], buf, sizeof buf);
            lesson_check_answer(&st->questions[q], buf, &r, &e);
            lesson_check_answer(&st->questions[q], text, &r, &e);
        }
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct lesson *l;
    struct error e;
    char *text = malloc(size + 1);
    if (!text)
        return 0;
    memcpy(text, data, size);
    text[size] = '\0';
    if (lesson_parse_string("fuzz.lesson", text, size, &l, &e) == 0) {
        use(l, text);
        lesson_free(l);
    } else if (strncmp(e.msg, "fuzz.lesson:", 12) != 0) {
        abort(); /* every refusal names the file and the line */
    }
    /* the input as one line: the ASCII fallback and a quantity expression */
    if (size < 2 * LESSON_LINE_MAX) {
        char buf[8 * LESSON_LINE_MAX];
        double v;
        ascii_line(buf, sizeof buf, text);
        quantity_eval(text, &v, NULL, &e);
    }
    /* the input as a progress file, through a memory file */
    int fd = memfd_create("progress", 0);
    if (fd >= 0) {
        char path[64];
        static struct progress p;
        if (write(fd, data, size) == (ssize_t)size) {
            snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
            int rc = progress_load(&p, path, &e);
            if (rc == PROGRESS_FRESH && p.current[0] != '\0')
                abort(); /* a refused file must leave fresh progress */
            if (rc != 0 && (!p.unreadable && e.code != ERR_INVAL))
                abort(); /* a skipped line must be reported and the file kept */
        }
        close(fd);
    }
    free(text);
    return 0;
}
