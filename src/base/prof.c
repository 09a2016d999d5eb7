/* Per-phase timers of one thread (base/prof.h): exclusive time, so nested phases add up to
 * the time spent inside the outermost. */
#include "config.h"
#include "base/prof.h"

#include "base/clock.h"

static _Thread_local struct prof *current;

void prof_attach(struct prof *p)
{
    current = p;
}

/* Deeper nesting than the stack holds counts for the deepest phase it holds. */
#define DEPTH ((int)(sizeof current->stack / sizeof *current->stack))

void prof_enter(enum prof_phase ph)
{
    struct prof *p = current;
    if (!p)
        return;
    double t = clock_now();
    if (p->depth > 0)
        p->seconds[p->stack[(p->depth < DEPTH ? p->depth : DEPTH) - 1]] += t - p->since;
    if (p->depth < DEPTH)
        p->stack[p->depth] = ph;
    p->depth++;
    p->since = t;
}

void prof_leave(void)
{
    struct prof *p = current;
    if (!p || p->depth == 0)
        return;
    double t = clock_now();
    p->seconds[p->stack[(p->depth < DEPTH ? p->depth : DEPTH) - 1]] += t - p->since;
    p->depth--;
    p->since = t;
}

const char *prof_name(enum prof_phase ph)
{
    static const char *const names[PROF_PHASES] = {
        "matmuls", "attention", "norms",    "RoPE",         "SwiGLU",
        "loss",    "optimizer", "rounding", "kept tensors", "fp8 quantisation"};
    return ph < PROF_PHASES ? names[ph] : "?";
}
