/* Small text helpers of the lesson module: a growing array, copies of strings, skipping
 * blanks, a choice's letter (lesson/text.h). */
#include "config.h"
#include "lesson/text.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "lesson/lesson.h"

void *lesson_push(void *arrayp, size_t *n, size_t size)
{
    void **array = arrayp;
    if (*n == 0 || (*n & (*n - 1)) == 0) {
        size_t cap = *n ? 2 * *n : 1;
        void *p = realloc(*array, cap * size);
        if (!p)
            return NULL;
        *array = p;
    }
    void *el = (char *)*array + *n * size;
    memset(el, 0, size);
    (*n)++;
    return el;
}

char *lesson_strndup(const char *s, size_t n)
{
    char *d = malloc(n + 1);
    if (d) {
        memcpy(d, s, n);
        d[n] = '\0';
    }
    return d;
}

char *lesson_strdup(const char *s)
{
    return lesson_strndup(s, strlen(s));
}

const char *lesson_skip_space(const char *s)
{
    while (*s == ' ' || *s == '\t')
        s++;
    return s;
}

int lesson_option_letter(const struct lesson_question *q, const char *s)
{
    if (strlen(s) != 1)
        return -1;
    int c = tolower((unsigned char)s[0]) - 'a';
    return c >= 0 && (size_t)c < q->noptions ? c : -1;
}

void lesson_free_strings(char **v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(v[i]);
    free(v);
}

char *lesson_name_of(const char *name)
{
    const char *base = strrchr(name, '/');
    base = base ? base + 1 : name;
    if (lesson_number_of(base) >= 0 && base[2] == '-')
        base += 3;
    size_t n = strlen(base);
    if (n > 7 && !strcmp(base + n - 7, ".lesson"))
        n -= 7;
    return lesson_strndup(base, n);
}

int lesson_number_of(const char *name)
{
    const char *base = strrchr(name, '/');
    base = base ? base + 1 : name;
    if (!isdigit((unsigned char)base[0]) || !isdigit((unsigned char)base[1]))
        return -1;
    return (base[0] - '0') * 10 + (base[1] - '0');
}
