/* Named quantities the engine computes, for lesson answers, expectations and figures.
 *
 * A lesson writes "fp16.max", "bf16.round(0.1)" or "synthetic_7b.states / 8" where it needs a
 * number, so the number comes from the engine and not from the teacher's arithmetic. The
 * registry is one table in two parts, quantity.c's and quantity_comm.c's (the collectives',
 * lesson/quantity_table.h; quantity_expr.c evaluates expressions); adding a quantity is adding
 * one line there:
 *
 *     Q1("bf16.round", "", "x held in fp32, then rounded to bf16", q_bf16_round),
 *
 * Q0..Q4 take a function of 0..4 doubles returning a double. A family of quantities has one
 * line for every preset: "MODEL.params" is synthetic_7b.params, tiny.params, llama2_70b.params
 * (the preset's name with '_' for '-', read from datadir()/assets/models when evaluated, so a
 * changed preset changes it), M0..M4 taking the model's shape first; "CLUSTER.gpu_mem" is
 * h100_80gb.gpu_mem, ... (C0, the cluster preset's description). The unit is that of the
 * value: "" for a plain number, "bool" for a yes/no (1 or 0; choice questions use these), "B"
 * for bytes, "s" for seconds, "B/s", or any unit lesson_unit_factor knows.
 *
 * An expression combines numbers and quantities with + - * / ^ and parentheses
 * ("2 * (fp16.max + 1)", "80 * 2^30 / 18"); its unit follows (bytes over seconds are B/s,
 * bytes over bytes a plain number), and adding two different units is an error. */
#ifndef SCALELAB_LESSON_QUANTITY_H
#define SCALELAB_LESSON_QUANTITY_H

#include <stdbool.h>
#include <stddef.h>

struct error;
struct model_shape;
struct cluster_spec;

#define QUANTITY_MAX_ARGS 4

enum quantity_kind {
    QUANTITY_PLAIN,
    QUANTITY_MODEL,   /* "MODEL.name": one for each model preset */
    QUANTITY_CLUSTER, /* "CLUSTER.name": one for each cluster preset */
};

struct quantity {
    const char *name; /* "fp16.max", "MODEL.params": lower case, digits, '_' and '.' */
    const char *unit;
    const char *what; /* one line, for lists */
    int nargs;
    enum quantity_kind kind;
    union {
        double (*f0)(void);
        double (*f1)(double);
        double (*f2)(double, double);
        double (*f3)(double, double, double);
        double (*f4)(double, double, double, double);
        double (*m0)(const struct model_shape *);
        double (*m1)(const struct model_shape *, double);
        double (*m2)(const struct model_shape *, double, double);
        double (*m3)(const struct model_shape *, double, double, double);
        double (*m4)(const struct model_shape *, double, double, double, double);
        double (*c0)(const struct cluster_spec *);
    } fn;
};

/* The registry, in the order it is listed; quantity_count() entries (a family is one). */
size_t quantity_count(void);
const struct quantity *quantity_at(size_t i);
/* A quantity by its name; a family's for any preset's ("llama2_70b.params" gives
 * "MODEL.params"), whether or not that preset can be read; NULL if none. */
const struct quantity *quantity_find(const char *name);
/* The same, with a family member's preset name in preset (n bytes; '_' read as '-', "" for a
 * quantity of no family). */
const struct quantity *quantity_lookup(const char *name, char *preset, size_t n);

/* Evaluates an expression: "NAME", "NAME(ARG, ...)" (ARGs are expressions), numbers (decimal,
 * inf, nan), + - * / ^ and parentheses. Returns 0 with *value, *q (may be NULL: the quantity
 * when the expression is one alone, else NULL) and *unit (may be NULL: the expression's unit,
 * "", "bool", "B", "s", "B/s" or "?" for another combination), or ERR_INVAL: unknown name, a
 * preset that cannot be read, wrong number of arguments, bad syntax, units that cannot be
 * added; e says what was expected. */
int quantity_expr(const char *expr, double *value, const struct quantity **q, const char **unit,
                  struct error *e);
int quantity_eval(const char *expr, double *value, const struct quantity **q, struct error *e);

#endif
