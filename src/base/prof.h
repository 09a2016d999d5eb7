/* Where a thread's time goes, by phase of a training step (the bench's per-phase table).
 *
 * A phase is entered and left around the code that does it (prof_enter / prof_leave, which
 * nest: time inside an inner phase counts for the inner one only). Wall time (clock_now: a
 * CPU-time clock costs a system call, too much for this many reads). Off unless the thread
 * has attached a struct prof, and then a clock read per enter and leave; the results never
 * depend on it. Work fused into a loop (a block rounded where it is produced) counts as that
 * loop's phase. */
#ifndef SCALELAB_BASE_PROF_H
#define SCALELAB_BASE_PROF_H

enum prof_phase {
    PROF_MATMUL,    /* the projections and the head: sgemm */
    PROF_ATTENTION, /* the attention core per head: QK^T, softmax, P V and their backward */
    PROF_NORM,      /* RMSNorm forward and backward */
    PROF_ROPE,      /* the rotary embedding and its inverse */
    PROF_SWIGLU,    /* silu(gate) * up and its backward */
    PROF_LOSS,      /* softmax cross-entropy of the logits and its gradient */
    PROF_OPTIMIZER, /* AdamW */
    PROF_ROUNDING,  /* rounding to the format, non-finite checks, underflow counts */
    PROF_KEEP,      /* storing kept tensors for the backward pass and loading them back */
    PROF_FP8,       /* fp8 training: each GEMM input's amax, scales, rounding and read-back */
    PROF_PHASES
};

struct prof {
    double seconds[PROF_PHASES];
    /* internal: the phases entered, innermost last, and when the last one began counting */
    int stack[8], depth;
    double since;
};

/* This thread's timers from now on (NULL: off). The caller zeroes them. */
void prof_attach(struct prof *p);
void prof_enter(enum prof_phase ph);
void prof_leave(void);
/* "matmuls", "attention", ... */
const char *prof_name(enum prof_phase ph);

#endif
