/* Option values shared by the calculator commands (memory, plan): whole numbers in a range,
 * sizes, and the model and cluster presets, each failing with "--NAME: what is allowed". */
#ifndef SCALELAB_CLI_CALCARGS_H
#define SCALELAB_CLI_CALCARGS_H

#include <stdbool.h>

#include "base/units.h"
#include "calc/preset.h"
#include "sim/spec.h"

struct error;
struct opt_entry;

/* A whole number for --name in [min, max]. */
int calcargs_int(const char *name, const char *arg, long long min, long long max, int *out,
                 struct error *e);

/* A size for --name above 0, at most 1 PB. */
int calcargs_bytes(const char *name, const char *arg, double *out, struct error *e);

/* --model and --cluster (with --nodes, a whole number from 1, when not NULL). */
int calcargs_model(const char *arg, struct model_shape *m, struct error *e);
/* --capacity-factor (NULL: the model's) onto model m, which must have experts. */
int calcargs_capacity(const char *arg, struct model_shape *m, struct error *e);
int calcargs_cluster(const char *arg, const char *nodes, struct cluster_spec *c, struct error *e);

/* Table parsers (cli/opts.h) for the choices calc/ reads, its message behind the option's
 * name ("--precision: 'fp8' is not a precision ..."): a precision, an optimizer, a checkpoint
 * policy, a unit system, an attention kernel (calc/activ.h). */
int calcargs_precision(const struct opt_entry *o, const char *arg, void *field, struct error *e);
int calcargs_optimizer(const struct opt_entry *o, const char *arg, void *field, struct error *e);
int calcargs_policy(const struct opt_entry *o, const char *arg, void *field, struct error *e);
int calcargs_units(const struct opt_entry *o, const char *arg, void *field, struct error *e);
int calcargs_attention(const struct opt_entry *o, const char *arg, void *field, struct error *e);
/* The help line of --attention, the same in every command. */
#define CALCARGS_ATTENTION_HELP                                                                    \
    "the attention kernel: flash (default; keeps each row's log-sum-exp,\n"                        \
    "no probabilities: FlashAttention, ring attention, Megatron-LM's\n"                            \
    "estimator) or eager (keeps the a s^2 b probabilities; cp 1 only)"

/* A number of bytes in the chosen units, labelled: "108.63 GiB"; with UNITS_AUTO in the binary
 * unit that suits it ("2.31 MiB"). */
char *calcargs_size(char *buf, unsigned long n, double bytes, enum units_system sys);

#endif
