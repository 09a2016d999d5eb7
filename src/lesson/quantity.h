/* Named quantities the engine computes, for lesson answers and expectations.
 *
 * A lesson writes "fp16.max" or "bf16.round(0.1)" where it needs a number, so the number comes
 * from the engine and not from the teacher's arithmetic. The registry is one table in
 * quantity.c; adding a quantity is adding one line there:
 *
 *     Q1("bf16.round", "", "x held in fp32, then rounded to bf16", q_bf16_round),
 *
 * Q0..Q3 take a function of 0..3 doubles returning a double. The unit is that of the value:
 * "" for a plain number, "bool" for a yes/no (1 or 0; choice questions use these), "B" for
 * bytes, "s" for seconds, or any unit lesson_unit_factor knows. */
#ifndef SCALELAB_LESSON_QUANTITY_H
#define SCALELAB_LESSON_QUANTITY_H

#include <stddef.h>

struct error;

#define QUANTITY_MAX_ARGS 3

struct quantity {
    const char *name; /* "fp16.max": lower case, digits, '_' and '.' */
    const char *unit;
    const char *what; /* one line, for lists */
    int nargs;
    union {
        double (*f0)(void);
        double (*f1)(double);
        double (*f2)(double, double);
        double (*f3)(double, double, double);
    } fn;
};

/* The registry, in the order it is listed; quantity_count() entries. */
size_t quantity_count(void);
const struct quantity *quantity_at(size_t i);
const struct quantity *quantity_find(const char *name);

/* Evaluates "NAME" or "NAME(ARG, ...)" (ARGs are decimal numbers, inf or nan). Returns 0 with
 * *value and *q (may be NULL), or ERR_INVAL: unknown name, wrong number of arguments, bad
 * syntax; e says what was expected. */
int quantity_eval(const char *expr, double *value, const struct quantity **q, struct error *e);

#endif
