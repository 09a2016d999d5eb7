/* What an uninstrumented loop touched, told to ThreadSanitizer.
 *
 * In the TSan build the element-wise loops over one GPU's own tensors (Makefile.am's
 * libloops: the model's operations, number formats, AdamW, clipping) are compiled without the
 * sanitizer's instrumentation, and with RACE_RANGES defined. Instrumented, each element's load
 * and store was a call into the sanitizer's runtime: four fifths of a TSan training step.
 * Instead an operation says once, on entry, which ranges it reads and writes:
 * RACE_READ(p, bytes) and RACE_WRITE(p, bytes) record, on this thread at this point of its
 * history, an access to one byte in every RACE_LINE bytes of the range and to its last byte.
 * Any access by another thread to RACE_LINE or more contiguous bytes of the range (a
 * collective's copy of a chunk, another operation's pass) covers one of those bytes, so a race
 * between them is reported, naming the operation; only an access shorter than a line, falling
 * between two of them, could pass unseen. Recording every byte (the runtime's
 * __tsan_read_range) took twice the CPU of these samples over a TSan step. Elsewhere (the
 * normal and ASan builds, every instrumented file) RACE_READ and RACE_WRITE are nothing. */
#ifndef SCALELAB_BASE_RACE_H
#define SCALELAB_BASE_RACE_H

#include <stddef.h>

#if defined(RACE_RANGES)
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
#else
#define RACE_READ(p, bytes)  ((void)(p), (void)(bytes))
#define RACE_WRITE(p, bytes) ((void)(p), (void)(bytes))
#endif

#endif
