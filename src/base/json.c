/* The JSON writer every command uses (base/json.h): jansson's trees and dump, with scalelab's
 * policy for non-finite numbers and precision in one place. */
#include "config.h"
#include "base/json.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

const char *json_nonfinite(double v)
{
    if (isnan(v))
        return "nan";
    if (isinf(v))
        return v > 0 ? "inf" : "-inf";
    return NULL;
}

json_t *json_num(double v)
{
    const char *word = json_nonfinite(v);
    return word ? json_string(word) : json_real(v);
}

json_t *json_whole(double v)
{
    return fabs(v) < 9007199254740992.0 ? json_integer((json_int_t)llround(v)) : json_num(v);
}

int json_write(FILE *f, json_t *doc, int digits)
{
    int rc = json_dumpf(doc, f, JSON_INDENT(2) | JSON_REAL_PRECISION(digits));
    fputc('\n', f);
    json_decref(doc);
    return rc;
}

int json_write_line(FILE *f, json_t *doc, int digits)
{
    /* the line and its newline in one piece, written and flushed at once: a reader (or a run
     * killed by a signal) never sees half of it */
    char *s = json_dumps(doc, JSON_COMPACT | JSON_REAL_PRECISION(digits));
    json_decref(doc);
    if (!s)
        return -1;
    size_t n = strlen(s);
    char *line = realloc(s, n + 2);
    if (!line) {
        free(s);
        return -1;
    }
    line[n] = '\n', line[n + 1] = '\0';
    fflush(f);
    int rc = fwrite(line, 1, n + 1, f) == n + 1 && fflush(f) == 0 ? 0 : -1;
    free(line);
    return rc;
}

void json_put_num(FILE *f, double v, int digits)
{
    const char *word = json_nonfinite(v);
    if (word)
        fprintf(f, "\"%s\"", word);
    else
        fprintf(f, "%.*g", digits, v);
}

void json_put_str(FILE *f, const char *s)
{
    json_t *j = json_string(s ? s : "");
    if (!j) { /* not UTF-8: its ASCII */
        char buf[256];
        size_t k = 0;
        for (; *s && k + 1 < sizeof buf; s++)
            if (!((unsigned char)*s & 0x80))
                buf[k++] = *s;
        buf[k] = 0;
        j = json_string(buf);
    }
    json_dumpf(j, f, JSON_ENCODE_ANY);
    json_decref(j);
}

char *json_num_text(char *buf, size_t n, double v, int digits)
{
    const char *word = json_nonfinite(v);
    if (word)
        snprintf(buf, n, "%s", word);
    else
        snprintf(buf, n, "%.*g", digits, v);
    return buf;
}
