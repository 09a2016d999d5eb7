/* The memory ledger of one simulated GPU: allocations and charges by category against a
 * capacity, with a hook that sees every change (sim/ledger.h). */
#include "config.h"
#include "sim/ledger.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "base/error.h"
#include "base/units.h"

/* Each allocation starts with a header (one cache line, so the data stays 64-byte aligned). */
struct header {
    uint64_t bytes;
    int cat;
    uint32_t magic;
    uint64_t mapped; /* the length of its own mapping, or 0: from malloc */
    char pad[40];
};

/* From this size on a buffer is a mapping of its own, which the kernel fills with zero pages
 * in one call (MADV_POPULATE_WRITE, Linux 5.14) instead of one page fault per 4 KiB page as a
 * memset meets them: on the development hosts (virtual machines) that is half the cost, about
 * 0.6 s per GiB instead of 1.2. Huge pages (MADV_HUGEPAGE) would be cheaper still when the
 * kernel has them free, but where it must compact memory first (transparent_hugepage/defrag
 * "madvise") the same GiB took from 0.2 to 20 s: not used. */
#if defined(__SANITIZE_ADDRESS__)
#define MAP_MIN SIZE_MAX /* AddressSanitizer guards what malloc gives, not a mapping */
#else
#define MAP_MIN ((size_t)2 << 20)
#endif
_Static_assert(sizeof(struct header) == 64, "a header is one cache line");

#define LEDGER_MAGIC 0x5ca1ab1eu

static const char *const names[MEM_CAT_COUNT] = {"weights",         "gradients",   "master weights",
                                                 "optimizer state", "activations", "communication",
                                                 "workspace",       "reserved"};

const char *ledger_cat_name(enum ledger_cat cat)
{
    return cat < MEM_CAT_COUNT ? names[cat] : "?";
}

void ledger_init(struct ledger *l, int device, uint64_t capacity)
{
    memset(l, 0, sizeof *l);
    l->device = device;
    l->capacity = capacity;
}

bool ledger_fits(const struct ledger *l, uint64_t bytes)
{
    return bytes <= l->capacity && l->total <= l->capacity - bytes;
}

static int refuse(struct ledger *l, enum ledger_cat cat, uint64_t bytes, struct error *e)
{
    char want[32], have[32], cap[32];
    units_format_bytes(want, sizeof want, (double)bytes, UNITS_BINARY);
    units_format_bytes(have, sizeof have, (double)l->total, UNITS_BINARY);
    units_format_bytes(cap, sizeof cap, (double)l->capacity, UNITS_BINARY);
    if (l->hook)
        l->hook(l->ctx, cat, (int64_t)bytes, true);
    return error_set(e, ERR_RUN,
                     "GPU %d: out of memory: %s more of %s on top of %s in use exceeds "
                     "the capacity of %s",
                     l->device, want, names[cat], have, cap);
}

static void add(struct ledger *l, enum ledger_cat cat, uint64_t bytes)
{
    l->current[cat] += bytes;
    l->total += bytes;
    if (l->current[cat] > l->peak_cat[cat])
        l->peak_cat[cat] = l->current[cat];
    if (l->total > l->peak)
        l->peak = l->total;
    if (l->hook)
        l->hook(l->ctx, cat, (int64_t)bytes, false);
}

static void sub(struct ledger *l, enum ledger_cat cat, uint64_t bytes)
{
    l->current[cat] -= bytes;
    l->total -= bytes;
    if (l->hook)
        l->hook(l->ctx, cat, -(int64_t)bytes, false);
}

int ledger_charge(struct ledger *l, enum ledger_cat cat, uint64_t bytes, struct error *e)
{
    if (cat >= MEM_CAT_COUNT)
        return error_set(e, ERR_INVAL, "no memory category %d", (int)cat);
    if (!ledger_fits(l, bytes))
        return refuse(l, cat, bytes, e);
    add(l, cat, bytes);
    return 0;
}

void ledger_release(struct ledger *l, enum ledger_cat cat, uint64_t bytes)
{
    if (cat < MEM_CAT_COUNT && bytes <= l->current[cat])
        sub(l, cat, bytes);
}

int ledger_move(struct ledger *l, enum ledger_cat from, enum ledger_cat to, uint64_t bytes,
                struct error *e)
{
    if (from >= MEM_CAT_COUNT || to >= MEM_CAT_COUNT)
        return error_set(e, ERR_INVAL, "no memory category %d",
                         (int)(from >= MEM_CAT_COUNT ? from : to));
    if (bytes > l->current[from])
        return error_set(e, ERR_INVAL, "GPU %d: %llu bytes of %s moved to %s, but it holds %llu",
                         l->device, (unsigned long long)bytes, names[from], names[to],
                         (unsigned long long)l->current[from]);
    sub(l, from, bytes);
    add(l, to, bytes);
    return 0;
}

/* bytes of zeroed memory, every page in place, as a mapping of its own; NULL when the host has
 * none. */
static void *map_touched(size_t bytes)
{
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return NULL;
#ifdef MADV_POPULATE_WRITE
    if (madvise(p, bytes, MADV_POPULATE_WRITE) == 0)
        return p;
    if (errno != EINVAL) { /* no memory behind it: refused here rather than killed later */
        munmap(p, bytes);
        return NULL;
    }
#endif
    memset(p, 0, bytes); /* an older kernel: touched once, here */
    return p;
}

void *ledger_alloc(struct ledger *l, enum ledger_cat cat, size_t bytes, struct error *e)
{
    if (cat >= MEM_CAT_COUNT) {
        error_set(e, ERR_INVAL, "no memory category %d", (int)cat);
        return NULL;
    }
    if (!ledger_fits(l, bytes)) {
        refuse(l, cat, bytes, e);
        return NULL;
    }
    void *p = NULL;
    size_t total = sizeof(struct header) + bytes, mapped = 0;
    if (bytes > SIZE_MAX - sizeof(struct header))
        p = NULL;
    else if (bytes >= MAP_MIN)
        p = map_touched(total), mapped = total;
    else if (posix_memalign(&p, 64, total) == 0)
        memset(p, 0, total); /* touched once, here */
    else
        p = NULL;
    if (!p) {
        error_set(e, ERR_NOMEM, "GPU %d: the host has no memory for %zu bytes of %s", l->device,
                  bytes, names[cat]);
        return NULL;
    }
    struct header *h = p;
    h->mapped = mapped;
    h->bytes = bytes;
    h->cat = cat;
    h->magic = LEDGER_MAGIC;
    add(l, cat, bytes);
    return h + 1;
}

void ledger_free(struct ledger *l, void *p)
{
    if (!p)
        return;
    struct header *h = (struct header *)p - 1;
    if (h->magic != LEDGER_MAGIC)
        abort(); /* not from ledger_alloc: a bug, not bad input */
    h->magic = 0;
    sub(l, (enum ledger_cat)h->cat, h->bytes);
    if (h->mapped)
        munmap(h, h->mapped);
    else
        free(h);
}
