/* Small helpers the lesson parser, the lessons folder and the answer checks share
 * (internal to src/lesson/). */
#ifndef SCALELAB_LESSON_TEXT_H
#define SCALELAB_LESSON_TEXT_H

#include <stddef.h>

/* A tolerance "exact" means, relative: forgiving decimal printing. */
#define LESSON_DEFAULT_TOL 1e-9

/* Appends one zeroed element to *arrayp (n elements of size bytes), whose capacity is the next
 * power of two of its count, so no capacity field is needed. The new element, or NULL when out
 * of memory. */
void *lesson_push(void *arrayp, size_t *n, size_t size);

/* A copy of s (of its first n bytes), or NULL when out of memory. */
char *lesson_strdup(const char *s);
char *lesson_strndup(const char *s, size_t n);

/* Frees the n strings of v, and v. */
void lesson_free_strings(char **v, size_t n);

/* The number a lesson file's name starts with ("lessons/03-collectives.lesson": 3), or -1. */
int lesson_number_of(const char *name);
/* A lesson file's name without its folder, its number and ".lesson" ("collectives"); a new
 * string, or NULL when out of memory. */
char *lesson_name_of(const char *name);

/* s after its spaces and tabs. */
const char *lesson_skip_space(const char *s);

/* The option of q a letter names ("b" or "B": 1), or -1. */
struct lesson_question;
int lesson_option_letter(const struct lesson_question *q, const char *s);

#endif
