/* What this CPU and its OS can run, asked once (base/cpu.h). */
#include "config.h"
#include "base/cpu.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

#if defined(__x86_64__) && defined(__GNUC__)
#include <cpuid.h>

static unsigned ask(void)
{
    unsigned a, b, c, d, f = 0;
    if (!__get_cpuid(1, &a, &b, &c, &d))
        return 0;
    bool avx = c >> 28 & 1, osxsave = c >> 27 & 1;
    if (!avx || !osxsave)
        return 0;
    unsigned xcr0_lo, xcr0_hi;
    __asm__("xgetbv" : "=a"(xcr0_lo), "=d"(xcr0_hi) : "c"(0));
    if ((xcr0_lo & 6) != 6) /* XMM and YMM state */
        return 0;
    f |= (c >> 29 & 1 ? CPU_F16C : 0) | (c >> 12 & 1 ? CPU_FMA : 0);
    if (__get_cpuid_max(0, NULL) < 7)
        return f;
    __cpuid_count(7, 0, a, b, c, d);
    f |= b >> 5 & 1 ? CPU_AVX2 : 0;
    if (b >> 16 & 1 && (xcr0_lo & 0xe0) == 0xe0) /* opmask, ZMM upper halves, ZMM16-31 */
        f |= CPU_AVX512F;
    return f;
}
#else
static unsigned ask(void)
{
    return 0;
}
#endif

unsigned cpu_features(void)
{
    static atomic_int has = -1; /* -1: not yet asked */
    int h = atomic_load_explicit(&has, memory_order_relaxed);
    if (h < 0) {
        h = (int)ask();
        atomic_store_explicit(&has, h, memory_order_relaxed);
    }
    return (unsigned)h;
}
