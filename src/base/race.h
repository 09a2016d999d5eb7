/* What an uninstrumented loop touched, told to the sanitizer.
 *
 * In the sanitizer builds the element-wise loops over one GPU's own tensors (Makefile.am's
 * libloops: the model's operations, number formats, AdamW, clipping) and the pure cost model
 * (libpure) are compiled without the sanitizer's instrumentation. Instrumented, each element's
 * load and store was a call into the sanitizer's runtime, or a check of its shadow memory:
 * four fifths of a TSan training step, 43% of an ASan one. Instead an operation says
 * once, on entry, which ranges it reads and writes, RACE_READ(p, bytes) and
 * RACE_WRITE(p, bytes), and the sanitizer checks those:
 *
 * - ThreadSanitizer (RACE_RANGES=1) records, on this thread at this point of its history,
 *   an access to one byte in every RACE_LINE bytes of the range and to its last byte. Any access
 *   by another thread to RACE_LINE or more contiguous bytes of the range (a collective's copy
 *   of a chunk, another operation's pass) covers one of those bytes, so a race between them is
 *   reported, naming the operation; only an access shorter than a line, falling between two of
 *   them, could pass unseen. Recording every byte (the runtime's __tsan_read_range) took twice
 *   the CPU of these samples over a TSan step.
 * - AddressSanitizer (RACE_RANGES=2) checks that every byte of the range is addressable (not
 *   freed, not past an allocation's end) at once, as an instrumented memcpy does, and reports
 *   the operation otherwise (tests/unit/test_race plants an overrun and a use after free).
 *   What it no longer sees is a loop going past the ranges it names (n elements from p, as its
 *   arguments say). UndefinedBehaviorSanitizer's arithmetic checks still instrument the loops;
 *   its address checks (pointer-overflow, alignment), which stopped their vectorizing, do not.
 *
 * Elsewhere (the normal build, every instrumented file) RACE_READ and RACE_WRITE are nothing. */
#ifndef SCALELAB_BASE_RACE_H
#define SCALELAB_BASE_RACE_H

#include <stddef.h>

#define RACE_THREAD  1
#define RACE_ADDRESS 2
#if defined(RACE_RANGES) && RACE_RANGES == RACE_THREAD
#define RACE_LINE 64

/* ThreadSanitizer's runtime interface (compiler-rt's tsan_interface.h) */
void __tsan_read1(void *addr);
void __tsan_write1(void *addr);

static inline void race_read(const void *p, size_t bytes)
{
    char *c = (char *)(size_t)p;
    for (size_t i = 0; i < bytes; i += RACE_LINE)
        __tsan_read1(c + i);
    if (bytes)
        __tsan_read1(c + bytes - 1);
}

static inline void race_write(void *p, size_t bytes)
{
    char *c = p;
    for (size_t i = 0; i < bytes; i += RACE_LINE)
        __tsan_write1(c + i);
    if (bytes)
        __tsan_write1(c + bytes - 1);
}
#define RACE_READ(p, bytes)  race_read((p), (bytes))
#define RACE_WRITE(p, bytes) race_write((p), (bytes))
#elif defined(RACE_RANGES) && RACE_RANGES == RACE_ADDRESS
/* AddressSanitizer's runtime interface (compiler-rt's asan_interface_internal.h, in GCC's
 * libasan too): checks [addr, addr + size) as one access of that size, and reports it. */
void __asan_loadN(void *addr, size_t size);
void __asan_storeN(void *addr, size_t size);
#define RACE_READ(p, bytes)  __asan_loadN((void *)(size_t)(p), (bytes))
#define RACE_WRITE(p, bytes) __asan_storeN((void *)(p), (bytes))
#else
#define RACE_READ(p, bytes)  ((void)(p), (void)(bytes))
#define RACE_WRITE(p, bytes) ((void)(p), (void)(bytes))
#endif

#endif
