/* A mixture of experts' capacity: the one rule for how many tokens an expert takes, and the one
 * reader of a capacity factor with its bound. The router (model/moe.h), the calculator (calc/),
 * the settings of a run (par/settings.h), the calculator commands and the panels all use these,
 * as they share base/ckpt.h's checkpoint policies.
 *
 * An expert takes at most cap = ceil(C k n / E) of n tokens each routed to k of E experts, and
 * never more than n (Switch Transformer's expert capacity, tokens / experts x capacity factor,
 * Fedus et al. 2021 eq. 3, with the k choices of each token counted, as Megatron-LM's
 * get_capacity is called with n k); C = 0 sets no limit. The experts' buffer then holds the
 * static [E, cap] rows (GShard's dispatch), or without a limit the k n choices packed. */
#ifndef SCALELAB_BASE_EXPERTS_H
#define SCALELAB_BASE_EXPERTS_H

struct error;

/* The largest capacity factor a command, a preset or a panel takes (an expert then takes
 * every token long before). */
#define EXPERTS_MAX_CAPACITY 64

/* cap for n tokens (n for capacity_factor 0). */
double experts_capacity(double n, int experts, int k, double capacity_factor);
/* The rows of the experts' buffer: E cap with a capacity factor, k n without. */
double experts_rows(double n, int experts, int k, double capacity_factor);
/* The most rows a GPU's experts run on when ep GPUs share the E experts (ep 1: every expert
 * here): the static E cap with a capacity (GShard's shape: P blocks of E / P experts' cap rows
 * each, whatever the routing); without one, expert parallelism is dropless and a GPU receives
 * what the routing sends it, at most every token's choices of its E / ep experts from every GPU
 * of its group, ep n min(k, E / ep) (all of them routed to it: the worst case), k n on one GPU.
 * The buffers that hold them are sized by this, as Megatron-Core's dropless dispatcher's would
 * be at its worst. */
double experts_rows_held(double n, int experts, int k, double capacity_factor, int ep);
/* Whether c is a capacity factor: from 0 (none) to EXPERTS_MAX_CAPACITY. */
int experts_capacity_ok(double c);
/* The reader of a capacity factor as `said` names it ("--capacity-factor", "capacity_factor"):
 * a number, nothing around it, from 0 to EXPERTS_MAX_CAPACITY. 0, or ERR_INVAL "SAID 'S': a
 * number from 0 to 64". */
int experts_parse_capacity(const char *said, const char *s, double *out, struct error *e);

#endif
