/* The memory ledger of one simulated GPU: bytes by category, current and peak, against a
 * capacity.
 *
 * Real buffers are allocated through it (ledger_alloc), so what a run measures is what it
 * accounts; ledger_charge accounts bytes that are not backed by host memory (a lesson's
 * 7B-parameter model on a simulated 80 GiB GPU). Going over the capacity is an error
 * (ERR_RUN, "out of memory"), never a crash: nothing is allocated or charged, the hook
 * sees it (the device turns it into an out-of-memory event).
 *
 * ledger_alloc returns zeroed memory aligned to 64 bytes, touched once so the page faults
 * happen there and not in the first step; allocate large buffers once per run. A ledger is
 * used by one thread at a time (its device's, or the main thread before and after a run). */
#ifndef SCALELAB_SIM_LEDGER_H
#define SCALELAB_SIM_LEDGER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct error;

enum ledger_cat {
    MEM_WEIGHTS,
    MEM_GRADIENTS,
    MEM_MASTER,    /* fp32 master weights */
    MEM_OPTIMIZER, /* optimizer state (Adam moments) */
    MEM_ACTIVATIONS,
    MEM_COMM,      /* communication buffers */
    MEM_WORKSPACE, /* scratch for computing (cuBLAS workspace, the CPU emulation's fp32 buffers) */
    MEM_RESERVED,  /* allocated, holding nothing yet: the free part of an arena (PyTorch's
                      caching allocator: reserved but not allocated) */
    MEM_CAT_COUNT
};

struct ledger {
    uint64_t capacity;
    uint64_t current[MEM_CAT_COUNT], peak_cat[MEM_CAT_COUNT];
    uint64_t total, peak;
    int device; /* for messages */
    /* Called after every change (delta > 0 allocation, < 0 release) and on a refusal
     * (oom true, delta the bytes asked for, nothing changed). */
    void (*hook)(void *ctx, enum ledger_cat cat, int64_t delta, bool oom);
    void *ctx;
};

/* "weights", "gradients", "master weights", "optimizer state", "activations",
 * "communication", "workspace", "reserved" */
const char *ledger_cat_name(enum ledger_cat cat);

void ledger_init(struct ledger *l, int device, uint64_t capacity);

/* bytes of zeroed memory, or NULL: ERR_RUN "GPU d: out of memory: ..." if it does not fit,
 * ERR_NOMEM if the host has none. Free with ledger_free on the same ledger. */
void *ledger_alloc(struct ledger *l, enum ledger_cat cat, size_t bytes, struct error *e);
void ledger_free(struct ledger *l, void *p);

/* Accounting without memory: 0 or ERR_RUN (out of memory); ledger_release gives it back. */
int ledger_charge(struct ledger *l, enum ledger_cat cat, uint64_t bytes, struct error *e);
void ledger_release(struct ledger *l, enum ledger_cat cat, uint64_t bytes);

/* Bytes already held change category, the total stays (an arena's reserved bytes become
 * activations as tensors come to life in it, and back): never out of memory. 0, or ERR_INVAL
 * if `from` holds fewer bytes (nothing changes). The hook sees -bytes of from, then +bytes
 * of to. */
int ledger_move(struct ledger *l, enum ledger_cat from, enum ledger_cat to, uint64_t bytes,
                struct error *e);

/* Whether bytes more would fit. */
bool ledger_fits(const struct ledger *l, uint64_t bytes);

#endif
